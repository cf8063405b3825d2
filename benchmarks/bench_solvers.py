"""Speed, memory and accuracy of the lifted fit against its baselines, in one run.

Run: ``python benchmarks/bench_solvers.py [--quick] [--json FILE]``

Sections (each measures its baseline in the same run; medians of repeats):

1. Feature construction: the Numba kernel against a straightforward numpy ``einsum``
   implementation, and against the time to write the output array (memory bandwidth),
   for d in {4, 8, 16} and n_tokens in {16, 128}.
2. Fit throughput: GFLOP/s of the streamed Gram accumulation (lifting + ``dsyrk`` per
   chunk) against a plain ``A.T @ A`` of the same features (BLAS).
3. The generic scikit-learn route: ``PolynomialFeatures(degree=3) + Ridge`` on the
   flattened sequences, against ``LinearAttentionRegressor``: time, peak memory
   (tracemalloc) and test error, while it still runs.
4. Scaling: fit time and peak memory against n_samples at d=8 and against d with the
   solver ``"auto"`` picks, plus each solver forced where it is feasible, to show where
   each one wins.

Gradient training of MHLA (the paper's baseline) is in ``bench_gradient.py``.
"""

import time

import numpy as np
from _common import (
    compile_kernels,
    make_parser,
    markdown_table,
    median_seconds,
    peak_bytes,
    reference_lifted_features,
    relative_error,
    write_json,
)
from scipy.linalg.blas import dsyrk
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn._data import lifted_data
from sklearn_linattn._lift import lifted_features, n_lifted_features
from sklearn_linattn._solvers import choose_solver
from sklearn_linattn.datasets import make_random_mhla


def peak_megabytes(function):
    return peak_bytes(function) / 2**20


def features_section(quick, repeats):
    rng = np.random.default_rng(0)
    rows = []
    for d in (4, 8, 16):
        for n_tokens in (16, 128):
            n = 1000 if quick else 8000
            X = rng.normal(size=(n, n_tokens, d))
            out = np.empty((n, n_lifted_features(d)))
            lifted_features(X[:2])
            numba = median_seconds(lambda: lifted_features(X, out=out), repeats)
            numba_2 = median_seconds(
                lambda: lifted_features(X, out=out, n_threads=2), repeats
            )
            numpy = median_seconds(lambda: reference_lifted_features(X), repeats)
            write = median_seconds(lambda: out.fill(1.0), repeats)
            reference = reference_lifted_features(X)
            np.testing.assert_allclose(
                lifted_features(X),
                reference,
                rtol=1e-9,
                atol=1e-12 * np.abs(reference).max(),
            )
            rows.append(
                {
                    "d": d,
                    "n_tokens": n_tokens,
                    "n_samples": n,
                    "numba_ms": 1e3 * numba,
                    "numba_2_threads_ms": 1e3 * numba_2,
                    "einsum_ms": 1e3 * numpy,
                    "write_ms": 1e3 * write,
                    "speedup_vs_einsum": numpy / numba,
                    "vs_write": numba / write,
                }
            )
    print("\n## 1. Lifted features: Numba kernel vs numpy einsum\n")
    columns = [
        ("d", "{d}"),
        ("tokens", "{n_tokens}"),
        ("Numba (1 thread)", "{numba_ms:.1f} ms"),
        ("Numba (2 threads)", "{numba_2_threads_ms:.1f} ms"),
        ("einsum", "{einsum_ms:.1f} ms"),
        ("speed-up", "{speedup_vs_einsum:.1f}x"),
        ("write output", "{write_ms:.1f} ms"),
        ("Numba / write", "{vs_write:.1f}x"),
    ]
    print(markdown_table(columns, rows))
    return rows


def throughput_section(quick, repeats):
    rng = np.random.default_rng(1)
    rows = []
    for d in (8, 12, 16):
        p = n_lifted_features(d)
        n = 4000 if quick else 20000
        X = rng.normal(scale=0.25, size=(n, 16, d))
        y = rng.normal(size=(n, 1))
        features = lifted_features(X)
        flops = n * p * (p + 1)  # the upper triangle of Phi^T Phi, multiply-adds x 2
        accumulate = median_seconds(lambda: lifted_data(X, y).statistics(), repeats)
        gram_only = median_seconds(
            lambda: dsyrk(1.0, features.T, trans=0, lower=0), repeats
        )
        gemm = median_seconds(lambda: features.T @ features, repeats)
        rows.append(
            {
                "d": d,
                "p": p,
                "n_samples": n,
                "accumulate_seconds": accumulate,
                "syrk_seconds": gram_only,
                "gemm_seconds": gemm,
                "accumulate_gflops": flops / accumulate / 1e9,
                "gemm_speed_ratio": gemm / accumulate,
            }
        )
    print(
        "\n## 2. Fit throughput: streamed Gram accumulation vs BLAS on the same "
        "features\n"
    )
    columns = [
        ("d", "{d}"),
        ("p", "{p}"),
        ("n", "{n_samples}"),
        (
            "accumulate (structured, from sequences)",
            "{accumulate_seconds:.3f} s ({accumulate_gflops:.0f} GFLOP/s)",
        ),
        ("syrk alone (Phi in memory)", "{syrk_seconds:.3f} s"),
        ("A.T @ A (Phi in memory)", "{gemm_seconds:.3f} s"),
        ("A.T @ A time / accumulate time", "{gemm_speed_ratio:.0%}"),
    ]
    print(markdown_table(columns, rows))
    print(
        "\n(The accumulation also computes the lifted features and Phi^T y; the "
        "baselines start from Phi already in memory. GFLOP/s count n p (p + 1), the "
        "upper triangle.)"
    )
    return rows


def polynomial_section(quick):
    rows = []
    sizes = [(4, 8), (6, 8)] if quick else [(4, 8), (6, 8), (8, 8), (8, 16)]
    for d, n_tokens in sizes:
        p = n_lifted_features(d)
        X, y, _ = make_random_mhla(3 * p, n_tokens, d, n_heads=2, random_state=0)
        X_test, y_test, _ = make_random_mhla(
            500, n_tokens, d, n_heads=2, random_state=0
        )
        # same generating model: make_random_mhla draws it first from the seed
        flat, flat_test = X.reshape(len(X), -1), X_test.reshape(len(X_test), -1)
        ours = LinearAttentionRegressor(token_dim=d, n_heads=None)
        poly = make_pipeline(PolynomialFeatures(degree=3), Ridge(alpha=1e-8))
        row = {
            "d": d,
            "n_tokens": n_tokens,
            "n_samples": len(X),
            "poly_features": int(
                PolynomialFeatures(3).fit(flat[:1]).n_output_features_
            ),
        }
        for name, model in (("ours", ours), ("poly", poly)):
            start = time.perf_counter()
            peak = peak_megabytes(lambda model=model: model.fit(flat, y))
            row[f"{name}_seconds"] = time.perf_counter() - start
            row[f"{name}_peak_mb"] = peak
            row[f"{name}_test_error"] = relative_error(
                model.predict(flat_test), y_test
            )
        rows.append(row)
    print(
        "\n## 3. Versus PolynomialFeatures(degree=3) + Ridge on flattened sequences\n"
    )
    columns = [
        ("d", "{d}"),
        ("tokens", "{n_tokens}"),
        ("n", "{n_samples}"),
        ("poly features", "{poly_features}"),
        ("ours: time", "{ours_seconds:.2f} s"),
        ("poly: time", "{poly_seconds:.2f} s"),
        ("ours: peak MiB", "{ours_peak_mb:.0f}"),
        ("poly: peak MiB", "{poly_peak_mb:.0f}"),
        ("ours: test error", "{ours_test_error:.1e}"),
        ("poly: test error", "{poly_test_error:.1e}"),
    ]
    print(markdown_table(columns, rows))
    print(
        "\n(time includes tracemalloc's overhead for both; test sequences come from "
        "the same generating model)"
    )
    return rows


def timed_fit(model, X, y):
    start = time.perf_counter()
    peak = peak_megabytes(lambda: model.fit(X, y))
    return time.perf_counter() - start, peak


def scaling_row(axis, model, X, y, solver):
    """Fit ``model`` once and describe the fit: time, peak memory, solver used."""
    seconds, peak = timed_fit(model, X, y)
    n, _, d = X.shape
    return {
        "axis": axis,
        "d": d,
        "p": n_lifted_features(d),
        "n_samples": n,
        "solver": solver,
        "used": model.solver_,
        "seconds": seconds,
        "peak_mb": peak,
        "x_mb": X.nbytes / 2**20,
    }


def scaling_section(quick):
    rows = []
    rng = np.random.default_rng(2)
    d = 8
    counts = [10**3, 10**4, 10**5] if quick else [10**3, 10**4, 10**5, 10**6]
    for n in counts:
        X = rng.normal(scale=0.25, size=(n, 16, d))
        y = rng.normal(size=n)
        for solver in ("auto", "normal", "dual", "cg"):
            if solver == "dual" and n > 5000:
                continue  # n x n kernel
            if solver == "cg" and n > 10**5:
                continue  # minutes of LSQR iterations
            model = LinearAttentionRegressor(solver=solver, n_heads=None)
            rows.append(scaling_row("n_samples", model, X, y, solver))
    dims = [4, 8, 16, 24] if quick else [4, 8, 16, 24, 32, 48]
    for d in dims:
        p = n_lifted_features(d)
        n = 2000
        X = rng.normal(scale=0.25, size=(n, 16, d))
        y = rng.normal(size=n)
        for solver in ("auto", "normal", "dual", "cg"):
            if solver == "normal" and p > 6000:
                continue  # p x p Gram of > 300 MB and its O(p^3) solve
            model = LinearAttentionRegressor(solver=solver, n_heads=None, max_iter=200)
            rows.append(scaling_row("d", model, X, y, solver))
    print("\n## 4. Scaling (n_heads=None, so only the regression is timed)\n")
    columns = [
        ("axis", "{axis}"),
        ("d", "{d}"),
        ("n", "{n_samples}"),
        ("solver", "{solver}"),
        ("used", "{used}"),
        ("fit time", "{seconds:.2f} s"),
        ("peak MiB (tracemalloc)", "{peak_mb:.0f}"),
        ("X MiB", "{x_mb:.0f}"),
    ]
    print(markdown_table(columns, rows))
    print(
        f"\n(auto's choice on this machine for d=48, n=2000: "
        f"{choose_solver(2000, n_lifted_features(48))!r}; cg capped at 200 "
        "iterations in the d sweep)"
    )
    return rows


def main():
    parser = make_parser(__doc__, quick=True)
    parser.add_argument("--repeats", type=int, default=5)
    sections = ["1", "2", "3", "4"]
    parser.add_argument("--sections", nargs="+", choices=sections, default=sections)
    args = parser.parse_args()
    compile_kernels()
    results = {}
    if "1" in args.sections:
        results["features"] = features_section(args.quick, args.repeats)
    if "2" in args.sections:
        results["throughput"] = throughput_section(args.quick, args.repeats)
    if "3" in args.sections:
        results["polynomial"] = polynomial_section(args.quick)
    if "4" in args.sections:
        results["scaling"] = scaling_section(args.quick)
    write_json(args.json, results)


if __name__ == "__main__":
    main()
