"""Two checkouts of the package, timed on one case, interleaved in fresh processes.

Run: ``python benchmarks/bench_ab.py BEFORE AFTER --case partial [--rounds 4]``

``BEFORE`` and ``AFTER`` are folders that hold ``sklearn_linattn`` (a checkout, or
``git worktree add /tmp/before REV``). Each round starts one process per checkout,
in turn, with that folder first on ``PYTHONPATH`` and one BLAS thread; each process
fits once to compile and warm up, then reports the median of ``--repeats`` timed
runs of the default and of ``n_heads=None``. Alternating the checkouts round by
round spreads the machine's drift over both. Cases:

- ``partial``: 30 ``partial_fit`` calls of 100 sequences (d = 3, one noisy head),
  then ``coef_``, as ``bench_default_cases.py``'s ``partial`` case;
- ``threads``: ``fit`` of 20,000 sequences of 32 tokens, d = 8, ``n_jobs=2``;
- ``grid``: ``GridSearchCV`` of 15 alphas x 5 folds on ``make_random_mhla(1000, 16,
  3, n_heads=1)`` plus 10% noise, as ``bench_default_cases.py``'s ``grid`` case;
- ``vowels``: aeon's JapaneseVowels through the documented pipeline (classifier,
  d = 21), as ``bench_default_cases.py``'s case (needs aeon).

Reported: the medians over the rounds, and the default's ratio to ``n_heads=None``,
in wall time and in process CPU time (less sensitive to other processes on a
shared machine: their contention made whole rounds 40% slower in wall time).
"""

import json
import os
import subprocess
import sys

import numpy as np
from _common import make_parser, write_json

CASES = {
    "partial": """
from bench_default_cases import noisy_mhla
X, y = noisy_mhla(3000, 3, 1)

def run(n_heads):
    model = LinearAttentionRegressor(n_heads=n_heads)
    for batch_X, batch_y in zip(np.array_split(X, 30), np.array_split(y, 30)):
        model.partial_fit(batch_X, batch_y)
    model.coef_
""",
    "threads": """
rng = np.random.default_rng(0)
X, y = rng.normal(size=(20000, 32, 8)), rng.normal(size=20000)

def run(n_heads):
    LinearAttentionRegressor(n_heads=n_heads, n_jobs=2).fit(X, y)
""",
    "grid": """
from bench_default_cases import grid_search, noisy_mhla
X, y = noisy_mhla(1000, 3, 1)

def run(n_heads):
    grid_search(LinearAttentionRegressor(n_heads=n_heads), X, y)
""",
    "vowels": """
import warnings
from bench_default_cases import real_cases
_, _, pipeline, _, X, y, _ = next(real_cases())
warnings.simplefilter("ignore")  # the interpolation warning

def run(n_heads):
    estimator = pipeline.set_params(**{pipeline.steps[-1][0] + "__n_heads": n_heads})
    estimator.fit(X, y)
""",
}

TIMING = """
import json, sys, time
import numpy as np
import sklearn_linattn
from sklearn_linattn import LinearAttentionRegressor
{case}
seconds, cpu = {{}}, {{}}
for n_heads in ("auto", None):
    run(n_heads)
    times, cpu_times = [], []
    for _ in range({repeats}):
        start, cpu_start = time.perf_counter(), time.process_time()
        run(n_heads)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    seconds[str(n_heads)] = float(np.median(times))
    cpu[str(n_heads)] = float(np.median(cpu_times))
print(json.dumps(dict(seconds=seconds, cpu=cpu, package=sklearn_linattn.__file__)))
"""


def time_checkout(folder, case, repeats):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([os.path.abspath(folder), here]),
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    code = TIMING.format(case=CASES[case], repeats=repeats)
    done = subprocess.run(  # in the checkout: "-c" puts the working folder first
        [sys.executable, "-c", code], env=env, capture_output=True, text=True,
        check=True, cwd=os.path.abspath(folder),
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = os.path.join(os.path.abspath(folder), "sklearn_linattn")
    if not result["package"].startswith(expected):
        raise SystemExit(f"{folder}: imported {result['package']} instead")
    return result


def main():
    parser = make_parser(__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--case", choices=sorted(CASES), required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    runs = {"before": [], "after": []}
    for _ in range(args.rounds):
        for name in runs:
            folder = getattr(args, name)
            runs[name].append(time_checkout(folder, args.case, args.repeats))
    summary = {}
    for name, rounds in runs.items():
        summary[name] = {}
        for clock in ("seconds", "cpu"):
            default = float(np.median([r[clock]["auto"] for r in rounds]))
            lifted = float(np.median([r[clock]["None"] for r in rounds]))
            summary[name][clock] = dict(
                default=default, none=lifted, ratio=default / lifted
            )
            print(f"{name} ({'wall' if clock == 'seconds' else 'CPU'}): default "
                  f"{default:.4f} s, n_heads=None {lifted:.4f} s, ratio "
                  f"{default / lifted:.2f}")
    for clock in ("seconds", "cpu"):
        after, before = summary["after"][clock], summary["before"][clock]
        print(f"after / before ({'wall' if clock == 'seconds' else 'CPU'}): "
              f"default {after['default'] / before['default']:.3f}")
    write_json(args.json, dict(case=args.case, runs=runs, summary=summary))


if __name__ == "__main__":
    main()
