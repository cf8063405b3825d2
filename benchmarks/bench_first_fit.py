"""The first fit after installing: Numba compilation with an empty cache (issue 27).

Run: ``python benchmarks/bench_first_fit.py [--repeats 3] [--json FILE]``

Each measurement is a fresh interpreter (``NUMBA_CACHE_DIR`` a new empty directory
for "cold", one filled by a previous run for "warm") that imports the package and
fits a default ``LinearAttentionRegressor`` (and one with ``n_heads=None``, the
paper's read-out, whose cost does not depend on the head search) on 200 sequences
of 10 tokens of dimension 4 (``p = 40``), then fits again: the second fit is the
fit itself, so first minus second is what compilation (or loading the cache) cost.
Wall and CPU time of the process (CPU counts compilation on a busy machine more
fairly than wall time). Medians of ``--repeats`` runs.

The baseline, in the same run: a fresh interpreter that compiles one trivial Numba
function with an empty cache (Numba's and LLVM's fixed cost of a first compilation).
The script also lists which kernels of ``sklearn_linattn._lift`` each fit compiled:
a fit compiles the kernels it calls, for the one signature it calls them with.

The fresh interpreters import the package from the current directory first (run
from the checkout's root); to measure another version, put its checkout first on
``PYTHONPATH``.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from _common import make_parser, markdown_table, write_json

_FIT = """
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
import numpy as np
from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn import _lift
times = {"import": (time.perf_counter() - wall, time.process_time() - cpu)}
rng = np.random.default_rng(0)
V, Q = rng.normal(size=(2, 1, 4)), rng.normal(size=(2, 4, 4))
X = rng.normal(size=(200, 10, 4))
y = np.einsum("hab,nsb,nsc,hce,ne->na", V, X, X, Q, X[:, -1])[:, 0]
n_heads = None if sys.argv[1] == "None" else sys.argv[1]
for name in ("first fit", "second fit"):
    wall, cpu = time.perf_counter(), time.process_time()
    LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
    times[name] = (time.perf_counter() - wall, time.process_time() - cpu)
compiled = sorted(
    name for name, kernel in vars(_lift).items()
    if getattr(kernel, "signatures", None)
)
import sklearn_linattn
where = sklearn_linattn.__file__
print(json.dumps({"times": times, "compiled": compiled, "from": where}))
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
        check=True,
    )
    return result.stdout


def fit_run(n_heads, cache_dir):
    """One fresh interpreter: times of import, first and second fit; kernels."""
    return json.loads(_run(_FIT, cache_dir, str(n_heads)))


def baseline_run():
    with tempfile.TemporaryDirectory() as cache_dir:
        wall, cpu = map(float, _run(_BASELINE, cache_dir).split())
    return wall, cpu


def _median(runs, step, index):
    return statistics.median(run["times"][step][index] for run in runs)


def main():
    parser = make_parser(__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    baseline = [baseline_run() for _ in range(args.repeats)]
    rows, results = [], {"repeats": args.repeats}
    results["baseline_wall_cpu"] = [
        statistics.median(b[0] for b in baseline),
        statistics.median(b[1] for b in baseline),
    ]
    for n_heads in ("auto", None):
        cold = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache_dir:
                cold.append(fit_run(n_heads, cache_dir))
                warm = fit_run(n_heads, cache_dir)  # the cache filled just now
        for cache, runs in (("cold", cold), ("warm", [warm])):
            row = {
                "n_heads": repr(n_heads),
                "cache": cache,
                "runs": len(runs),
                "import": _median(runs, "import", 0),
                "first_wall": _median(runs, "first fit", 0),
                "first_cpu": _median(runs, "first fit", 1),
                "second_wall": _median(runs, "second fit", 0),
                "compiled": ", ".join(runs[0]["compiled"]),
            }
            rows.append(row)
        results[f"n_heads={n_heads!r}"] = {"cold": cold, "warm": warm}
    print(f"sklearn_linattn from {os.path.dirname(warm['from'])}")
    print(
        "Numba baseline (one trivial function, empty cache, fresh interpreter): "
        f"{results['baseline_wall_cpu'][0]:.2f} s wall, "
        f"{results['baseline_wall_cpu'][1]:.2f} s CPU\n"
    )
    columns = [
        ("n_heads", "{n_heads}"),
        ("Numba cache", "{cache}"),
        ("runs", "{runs}"),
        ("import", "{import:.2f} s"),
        ("first fit, wall", "{first_wall:.2f} s"),
        ("first fit, CPU", "{first_cpu:.2f} s"),
        ("second fit", "{second_wall:.3f} s"),
        ("kernels compiled (or loaded)", "{compiled}"),
    ]
    print(markdown_table(columns, rows))
    write_json(args.json, results)


if __name__ == "__main__":
    main()
