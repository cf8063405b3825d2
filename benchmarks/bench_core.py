"""Core costs of LinearAttentionRegressor: compile time, fit time, peak memory.

Run: ``python benchmarks/bench_core.py [--n-samples 20000 --n-tokens 32 --token-dim 8]
[--repeats 5] [--json FILE]``

Reports, in one run:
- first-call Numba compile time, cold (empty cache) and warm (cache on disk), each
  in a fresh interpreter;
- fit time (median of repeats) of the streamed normal-equations fit with the paper's
  head read-out (``n_heads=None``: the regression itself), next to the baseline
  "materialize all lifted features, then Phi.T @ Phi and solve", measured in the
  same run; and the time of the default minimal-head read-out on top (these targets
  are random, so all d heads are needed and the search is at its most expensive);
- peak memory allocated during each (tracemalloc, which sees numpy buffers) relative to
  the size of X.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.linalg
from _common import make_parser, markdown_table, median_seconds, peak_bytes, write_json

from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn._lift import lifted_features

_FIRST_CALL = """
import time, numpy as np
start = time.perf_counter()
from sklearn_linattn import LinearAttentionRegressor
imported = time.perf_counter()
X = np.random.default_rng(0).normal(size=(50, 4, 3))
LinearAttentionRegressor().fit(X, X[:, 0, 0])
print(imported - start, time.perf_counter() - imported)
"""


def first_call_seconds(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(out[0]), float(out[1])


def naive_fit(X, y):
    """Materialize Phi, then solve the normal equations: the baseline."""
    Phi = lifted_features(X)
    factor = scipy.linalg.cho_factor(Phi.T @ Phi)
    return scipy.linalg.cho_solve(factor, Phi.T @ y)


def main():
    parser = make_parser(__doc__)
    parser.add_argument("--n-samples", type=int, default=20000)
    parser.add_argument("--n-tokens", type=int, default=32)
    parser.add_argument("--token-dim", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache_dir:
        cold_import, cold_call = first_call_seconds(cache_dir)
        warm_import, warm_call = first_call_seconds(cache_dir)

    rng = np.random.default_rng(0)
    n, t, d = args.n_samples, args.n_tokens, args.token_dim
    X = rng.normal(scale=1 / np.sqrt(t), size=(n, t, d))
    y = rng.normal(size=n)
    model = LinearAttentionRegressor(n_heads=None, solver="normal")
    model.fit(X[:10], y[:10])  # compile outside the timings

    fit_seconds = median_seconds(lambda: model.fit(X, y), args.repeats)
    auto_seconds = median_seconds(
        lambda: LinearAttentionRegressor(solver="normal").fit(X, y), args.repeats
    )
    naive_seconds = median_seconds(lambda: naive_fit(X, y), args.repeats)
    fit_peak = peak_bytes(lambda: model.fit(X, y))
    naive_peak = peak_bytes(lambda: naive_fit(X, y))
    np.testing.assert_allclose(model.coef_, naive_fit(X, y), rtol=1e-6)

    results = {
        "n_samples": n,
        "n_tokens": t,
        "token_dim": d,
        "n_lifted_features": d * d * (d + 1) // 2,
        "import_seconds_cold": cold_import,
        "first_fit_seconds_cold": cold_call,
        "import_seconds_warm": warm_import,
        "first_fit_seconds_warm": warm_call,
        "fit_seconds_median": fit_seconds,
        "naive_fit_seconds_median": naive_seconds,
        "fit_with_minimal_heads_seconds_median": auto_seconds,
        "x_megabytes": X.nbytes / 2**20,
        "fit_peak_megabytes": fit_peak / 2**20,
        "naive_peak_megabytes": naive_peak / 2**20,
    }
    x_mib = X.nbytes / 2**20
    rows = [
        {
            "measure": f"fit time, median of {args.repeats}",
            "ours": f"{fit_seconds:.3f} s",
            "baseline": f"{naive_seconds:.3f} s",
            "ratio": f"{fit_seconds / naive_seconds:.2f}",
        },
        {
            "measure": "fit with the default minimal-head read-out",
            "ours": f"{auto_seconds:.3f} s",
            "baseline": "",
            "ratio": "",
        },
        {
            "measure": f"peak memory beyond X ({x_mib:.0f} MiB)",
            "ours": f"{fit_peak / 2**20:.1f} MiB ({fit_peak / X.nbytes:.2f} x X)",
            "baseline": (
                f"{naive_peak / 2**20:.1f} MiB ({naive_peak / X.nbytes:.2f} x X)"
            ),
            "ratio": f"{fit_peak / naive_peak:.2f}",
        },
    ]
    print(
        f"n_samples={n}, n_tokens={t}, token_dim={d}, p={results['n_lifted_features']}"
    )
    columns = [
        ("measure", "{measure}"),
        ("sklearn-linattn", "{ours}"),
        ("baseline (materialize Phi)", "{baseline}"),
        ("ratio", "{ratio}"),
    ]
    print(markdown_table(columns, rows))
    print(
        f"\nfirst call in a fresh interpreter: import {cold_import:.2f} s, first fit "
        f"{cold_call:.2f} s with an empty Numba cache; import {warm_import:.2f} s, "
        f"first fit {warm_call:.2f} s with the cache on disk"
    )
    write_json(args.json, results)


if __name__ == "__main__":
    main()
