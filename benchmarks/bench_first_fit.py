"""The first fit of the documented pipelines: Numba compilation with an empty cache.

Run: ``python benchmarks/bench_first_fit.py [--repeats 5] [--cases NAME ...]
[--json FILE]`` (from the checkout's root; the GunPoint cases need aeon, whose wheel
bundles the data, and are skipped without it).

Each measurement is a fresh interpreter that imports numpy, scipy and scikit-learn,
then ``sklearn.base`` (scikit-learn's estimator machinery, which every estimator
imports; it is most of the package's import), then the package (timed apart:
"import" is what the package adds), then Numba
(timed apart: the package imports it when it first needs a kernel, older versions
on import), prepares the case's data (not timed), then runs the case twice: the
first run pays for compiling the Numba kernels it calls, or for loading them from
the cache; the second is the run itself. "start" is import + Numba + first run,
the wait of a new user's first fit beyond numpy, scipy and scikit-learn. "cold"
runs have ``NUMBA_CACHE_DIR`` a new empty directory; "warm" runs use the directory
the cold run before them filled. Wall and CPU time of the process (CPU counts
compilation on a busy machine more fairly than wall time); medians over
``--repeats`` pairs of cold and warm runs.

The cases are the documented pipelines, as the documentation writes them, each
also with the other head read-out (the default ``n_heads="auto"`` and the paper's
``n_heads=None``):

- ``quickstart``: the README's quickstart (fit a ``LinearAttentionRegressor`` on
  300 sequences of 16 tokens, d = 4; read the certificate, the heads' distance to
  the generating model, predict on longer sequences);
- ``digits``: sklearn's digits read row by row (a token per row of 8 pixels, as
  in ``examples/real_data/plot_7_digits_rows.py``), a
  ``LinearAttentionClassifierCV`` with its defaults, fitted on a stratified 75%
  and scored on the rest; ``digits_positions``: the same with the example's four
  sinusoidal positions (d = 12, p = 936: the fit itself takes seconds);
- ``gunpoint``: aeon's GunPoint through the pipeline of ``docs/real_data.rst``
  (``SeriesToTokens(window=8)``, ``TokenwiseTransformer(StandardScaler())``,
  ``PositionalEncoding(constant=True)``, ``LinearAttentionClassifierCV(alphas=
  np.logspace(-2, 8, 21))``; the page uses ``n_heads=None``), fitted on the
  official train split and scored on the test split.

The baseline, in the same run: a fresh interpreter that imports Numba and compiles
one trivial function with an empty cache (Numba's and LLVM's fixed cost of a first
compilation). The target (issue 33): a cold first run within twice the warm first
run plus that baseline. For every case the script lists the kernels the first run
compiled, with how many signatures each and the compile time Numba recorded for it
(a kernel's time includes the kernels it calls, compiled on its first call).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from _common import make_parser, markdown_table, write_json

_SETUP = {
    "quickstart": """
import numpy as np
from sklearn_linattn import LinearAttentionRegressor, MultiHeadLinearAttention

rng = np.random.default_rng(0)
truth = MultiHeadLinearAttention(rng.normal(size=(2, 1, 4)), rng.normal(size=(2, 4, 4)))
X = rng.normal(size=(300, 16, 4))
y = truth.predict(X)[:, 0]
X_long = rng.normal(size=(5, 64, 4))

def run():
    model = LinearAttentionRegressor(n_heads=N_HEADS).fit(X, y)
    model.certificate_.identifiable
    model.attention_.distance(truth)
    model.n_heads_
    np.abs(model.predict(X_long) - truth.predict(X_long)[:, 0]).max()
""",
    "digits": """
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn_linattn import LinearAttentionClassifierCV

pixels, labels = load_digits(return_X_y=True)
rows = (pixels / 16.0).reshape(-1, 8, 8)
X_train, X_test, y_train, y_test = train_test_split(
    rows, labels, test_size=0.25, stratify=labels, random_state=0
)

def run():
    model = LinearAttentionClassifierCV(n_heads=N_HEADS).fit(X_train, y_train)
    model.score(X_test, y_test)
""",
    "digits_positions": """
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn_linattn import LinearAttentionClassifierCV
from sklearn_linattn.preprocessing import PositionalEncoding

pixels, labels = load_digits(return_X_y=True)
rows = (pixels / 16.0).reshape(-1, 8, 8)
X_train, X_test, y_train, y_test = train_test_split(
    rows, labels, test_size=0.25, stratify=labels, random_state=0
)

def run():
    model = make_pipeline(
        PositionalEncoding(kind="sinusoidal", n_positions=4, padding=None),
        LinearAttentionClassifierCV(n_heads=N_HEADS),
    ).fit(X_train, y_train)
    model.score(X_test, y_test)
""",
    "gunpoint": """
import numpy as np
from aeon.datasets import load_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn_linattn import LinearAttentionClassifierCV
from sklearn_linattn.preprocessing import (
    PositionalEncoding, SeriesToTokens, TokenwiseTransformer)

X_train, y_train = load_classification("GunPoint", split="train")
X_test, y_test = load_classification("GunPoint", split="test")

def run():
    model = make_pipeline(
        SeriesToTokens(window=8),
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(constant=True),
        LinearAttentionClassifierCV(alphas=np.logspace(-2, 8, 21), n_heads=N_HEADS),
    ).fit(X_train, y_train)
    model.score(X_test, y_test)
""",
}
_NEEDS = {"gunpoint": "aeon"}

_CASE = """
import json, sys, time

def clock():
    return time.perf_counter(), time.process_time()

def since(start):
    now = clock()
    return now[0] - start[0], now[1] - start[1]

start = clock()
import numpy, scipy, sklearn
times = {"dependencies": since(start)}
start = clock()
import sklearn.base  # what every scikit-learn estimator imports
times["sklearn.base"] = since(start)
start = clock()
import sklearn_linattn
times["import"] = since(start)
start = clock()
import numba  # imported by the package, or on its first kernel
times["numba"] = since(start)
N_HEADS = None if sys.argv[1] == "None" else sys.argv[1]
exec(sys.argv[2])
for name in ("first run", "second run"):
    start = clock()
    run()
    times[name] = since(start)

kernels = {}
for module_name, module in list(sys.modules.items()):
    if not module_name.startswith("sklearn_linattn"):
        continue
    for name, kernel in vars(module).items():
        dispatcher = getattr(kernel, "dispatcher", kernel)  # compiled on first use
        overloads = getattr(dispatcher, "overloads", None)
        if not overloads or not hasattr(overloads, "values"):
            continue
        seconds = sum(
            (result.metadata or {}).get("timers", {}).get("compiler_lock", 0.0)
            for result in overloads.values()
        )
        kernels[name] = {"signatures": len(overloads), "compile_seconds": seconds}
print(json.dumps({
    "times": times, "kernels": kernels, "from": sklearn_linattn.__file__,
}))
"""

_BASELINE = """
import time
wall, cpu = time.perf_counter(), time.process_time()
from numba import njit
@njit
def add(a, b):
    return a + b
add(1.0, 2.0)
print(time.perf_counter() - wall, time.process_time() - cpu)
"""


def _run(code, cache_dir, *args):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode:
        raise RuntimeError(result.stderr)
    return result.stdout


def case_run(case, n_heads, cache_dir):
    """One fresh interpreter: times of the imports and of both runs; kernels."""
    return json.loads(_run(_CASE, cache_dir, str(n_heads), _SETUP[case]))


def baseline_run():
    with tempfile.TemporaryDirectory() as cache_dir:
        wall, cpu = map(float, _run(_BASELINE, cache_dir).split())
    return wall, cpu


_START = ("import", "numba", "first run")
_STEPS = [("first run", "first"), ("import", "import"), ("numba", "numba")]
_STEPS.append(("start", "start"))


def _median(runs, step, index):
    return statistics.median(run["times"][step][index] for run in runs)


def _kernels(run):
    """``name (signatures, compile seconds)``, slowest first."""
    kernels = sorted(run["kernels"].items(), key=lambda kv: -kv[1]["compile_seconds"])
    return ", ".join(
        f"{name} ({k['signatures']}, {k['compile_seconds']:.2f} s)"
        for name, k in kernels
    )


def _available(case):
    module = _NEEDS.get(case)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main():
    parser = make_parser(__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--cases", nargs="+", choices=sorted(_SETUP), default=list(_SETUP)
    )
    args = parser.parse_args()

    baseline = [baseline_run() for _ in range(args.repeats)]
    base_wall = statistics.median(b[0] for b in baseline)
    base_cpu = statistics.median(b[1] for b in baseline)
    results = {"repeats": args.repeats, "baseline_wall_cpu": [base_wall, base_cpu]}
    rows, where = [], None
    for case in args.cases:
        if not _available(case):
            print(f"{case}: skipped ({_NEEDS[case]} is not installed)")
            continue
        for n_heads in ("auto", None):
            cold, warm = [], []
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory() as cache_dir:
                    cold.append(case_run(case, n_heads, cache_dir))
                    warm.append(case_run(case, n_heads, cache_dir))
            where = cold[0]["from"]
            row = {"case": case, "n_heads": repr(n_heads)}
            for cache, runs in (("cold", cold), ("warm", warm)):
                for run in runs:
                    run["times"]["start"] = [
                        sum(run["times"][step][index] for step in _START)
                        for index in (0, 1)
                    ]
                for step, key in _STEPS:
                    row[f"{cache}_{key}_wall"] = _median(runs, step, 0)
                    row[f"{cache}_{key}_cpu"] = _median(runs, step, 1)
            row["second"] = _median(cold + warm, "second run", 0)
            row["dependencies"] = _median(cold + warm, "dependencies", 1)
            row["sklearn_base"] = _median(cold + warm, "sklearn.base", 1)
            row["kernels"] = _kernels(cold[0])
            for clock in ("wall", "cpu"):
                bound = 2 * row[f"warm_first_{clock}"] + (
                    base_wall if clock == "wall" else base_cpu
                )
                row[f"bound_{clock}"] = bound
                row[f"ratio_{clock}"] = row[f"cold_first_{clock}"] / bound
            rows.append(row)
            results[f"{case}, n_heads={n_heads!r}"] = {"cold": cold, "warm": warm}
    results["rows"] = rows
    print(f"sklearn_linattn from {os.path.dirname(where or '?')}")
    print(
        "Numba baseline (one trivial function, empty cache, fresh interpreter): "
        f"{base_wall:.2f} s wall, {base_cpu:.2f} s CPU; medians of {args.repeats}\n"
    )
    columns = [
        ("case", "{case}"),
        ("n_heads", "{n_heads}"),
        (
            "numpy, scipy, sklearn / sklearn.base: CPU",
            "{dependencies:.2f} / {sklearn_base:.2f} s",
        ),
        ("import, CPU", "{cold_import_cpu:.2f} s"),
        ("Numba import, CPU", "{cold_numba_cpu:.2f} s"),
        ("first run, cold: wall / CPU", "{cold_first_wall:.2f} / {cold_first_cpu:.2f}"),
        ("warm: wall / CPU", "{warm_first_wall:.2f} / {warm_first_cpu:.2f} s"),
        ("second run", "{second:.3f} s"),
        ("cold / (2 warm + baseline): wall, CPU", "{ratio_wall:.2f}, {ratio_cpu:.2f}"),
        ("start, cold / warm: CPU", "{cold_start_cpu:.2f} / {warm_start_cpu:.2f} s"),
    ]
    print(markdown_table(columns, rows))
    print("\nKernels compiled by the cold first run (signatures, compile time):\n")
    print(
        markdown_table(
            [("case", "{case}"), ("n_heads", "{n_heads}"), ("kernels", "{kernels}")],
            rows,
        )
    )
    write_json(args.json, results)


if __name__ == "__main__":
    main()
