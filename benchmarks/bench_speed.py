"""Fit speed against a plain numpy reference, quiet and with the machine busy.

Run: ``python benchmarks/bench_speed.py [--quick] [--json FILE]``

Uses only the public API and numpy, so the same script measures an older version of
the package too (``PYTHONPATH=/path/to/old/checkout``). Sections (medians of repeats;
every ratio is measured in one run against a baseline timed in the same run):

1. ``fit`` (``n_heads=None``) against the numpy reference (einsum lift,
   ``P.T @ P``, ``np.linalg.solve``) at d = 8, 12, 16, 32 tokens, 20000 sequences,
   default threads.
2. The streamed Gram accumulation (``LinearAttentionRegressor`` with
   ``n_heads=None`` minus its solve is not separable from outside, so the statistics
   are timed through the data source when it is importable) against one GEMM
   ``A.T @ A`` over the same lifted features already in memory; both counted as
   ``2 n p^2`` flops. Three times as many repeats as the other sections.
3. The certificate's share of the fit: its spectrum (under the solver's thread
   limits), in all and beyond the Cholesky factor the solve needs anyway, timed on
   its own and, when the internals are importable, inside ``fit`` itself (the
   solver's spectrum call minus the factorization within it); and ``certify`` on
   the same data (which accumulates the same Gram).
4. No collapse under load: fit time at d = 4, 8, 12 (and the digits-sized
   classifier) with one CPU-bound busy-loop process started by this script, against
   the quiet time in the same run.
5. ``certify`` with fewer sequences than lifted features (d = 16, 500 sequences):
   time and peak memory against ``fit`` with ``solver="auto"``.
6. The dual solver (fewer rows than features): fit time, with and without an
   intercept (``--only-dual`` runs this section alone).
"""

import multiprocessing
import os
import time

import numpy as np
import scipy.linalg
from _common import (
    compile_kernels,
    make_parser,
    markdown_table,
    median_seconds,
    peak_bytes,
    reference_lifted_features,
    write_json,
)

from sklearn_linattn import LinearAttentionClassifier, LinearAttentionRegressor, certify

# OpenBLAS's worker threads keep spinning for 0.1-0.3 s after a multi-threaded call
# (measured: the accumulation at d = 8 took 55 ms right after a GEMM, 33 ms after a
# 0.3 s pause), which would slow whichever call comes next; every timed call here is
# followed by this pause, so each starts on an idle machine.
SETTLE_SECONDS = 0.3


def timed(function):
    """Seconds of one call of ``function``, then a pause for BLAS threads to idle."""
    seconds = median_seconds(function, 1)
    time.sleep(SETTLE_SECONDS)
    return seconds


def _busy_loop():  # pragma: no cover - runs in the child process
    while True:
        pass


class BusyMachine:
    """Context manager: one CPU-bound process spinning while the block runs."""

    def __enter__(self):
        context = multiprocessing.get_context("spawn")
        self.process = context.Process(target=_busy_loop, daemon=True)
        self.process.start()
        time.sleep(0.5)  # let it start spinning
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.join()


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not Unix
        return float("nan")


def reference_fit(X, y):
    """The plain numpy reference: einsum lift, ``P.T @ P``, ``np.linalg.solve``."""
    P = reference_lifted_features(X)
    return np.linalg.solve(P.T @ P, P.T @ y)


def certificate_functions(X):
    """The certificate's own cost: the spectrum of the accumulated Gram, and the
    Cholesky factorization within it that the solve needs anyway (both under the
    thread limits the solver uses), when the internals are importable."""
    try:
        import contextlib

        from sklearn_linattn import _data, _solvers
        from sklearn_linattn._certificate import default_rank_tol, gram_spectrum
        from sklearn_linattn._data import InMemoryLiftedData
    except ImportError:
        return None
    gram = InMemoryLiftedData(X).statistics().normal_equations(False)[0]
    tol = default_rank_tol(gram.shape[0])
    # the thread limits the solvers use (older versions kept them in _solvers)
    limits = getattr(
        _data,
        "dense_threads",
        getattr(_solvers, "_dense_threads", lambda order: contextlib.nullcontext()),
    )

    def spectrum():
        with limits(gram.shape[0]):
            return gram_spectrum(gram, tol)

    def cholesky():
        with limits(gram.shape[0]):
            return scipy.linalg.cholesky(gram, check_finite=False)

    return spectrum, cholesky


def fit_with_certificate_time(model, X, y):
    """Seconds of ``model.fit(X, y)`` and of the certificate inside it beyond the
    Cholesky factorization (the solver's ``gram_spectrum`` call minus the
    ``_cholesky`` call within it), or None for the latter when the internals are
    not importable."""
    try:
        from sklearn_linattn import _certificate, _solvers

        spectrum_function = _solvers.gram_spectrum
        cholesky_function = _certificate._cholesky
    except (ImportError, AttributeError):
        return timed(lambda: model.fit(X, y)), None
    spent = {"spectrum": 0.0, "cholesky": 0.0}

    def timing(key, function):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start

        return wrapper

    _solvers.gram_spectrum = timing("spectrum", spectrum_function)
    _certificate._cholesky = timing("cholesky", cholesky_function)
    try:
        seconds = timed(lambda: model.fit(X, y))
    finally:
        _solvers.gram_spectrum = spectrum_function
        _certificate._cholesky = cholesky_function
    return seconds, spent["spectrum"] - spent["cholesky"]


def statistics_function(X, y):
    """The package's streamed accumulation alone, when the data source exists."""
    try:
        from sklearn_linattn._data import InMemoryLiftedData
    except ImportError:
        return None
    return lambda: InMemoryLiftedData(X, y[:, None]).statistics()


def fit_section(sizes, n_samples, repeats):
    rows = []
    for d in sizes:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n_samples, 32, d))
        y = rng.normal(size=n_samples)
        model = LinearAttentionRegressor(n_heads=None)
        model.fit(X, y)  # warm up
        np.testing.assert_allclose(
            model.coef_,
            reference_fit(X, y),
            rtol=1e-6,
            atol=1e-9 * abs(model.coef_).max(),
        )
        reference, fit, accumulate, certificate, spectrum = [], [], [], [], []
        factorization, inside = [], []
        statistics = statistics_function(X, y)
        functions = certificate_functions(X)
        for _ in range(repeats):  # interleaved, so that load changes hit both alike
            reference.append(timed(lambda: reference_fit(X, y)))
            fit_seconds, certificate_seconds = fit_with_certificate_time(model, X, y)
            fit.append(fit_seconds)
            if certificate_seconds is not None:
                inside.append(certificate_seconds / fit_seconds)
            if statistics is not None:
                accumulate.append(timed(statistics))
            certificate.append(timed(lambda: certify(X)))
            if functions is not None:
                spectrum.append(timed(functions[0]))
                factorization.append(timed(functions[1]))
        row = {
            "d": d,
            "p": model.coef_.size,
            "n": n_samples,
            "reference_s": float(np.median(reference)),
            "fit_s": float(np.median(fit)),
            "speedup": float(np.median(np.array(reference) / np.array(fit))),
            "certify_s": float(np.median(certificate)),
        }
        if accumulate:
            row["accumulate_s"] = float(np.median(accumulate))
        if spectrum:
            row["spectrum_s"] = float(np.median(spectrum))
            row["cholesky_s"] = float(np.median(factorization))
            row["certificate_share"] = float(
                np.median(np.array(spectrum) / np.array(fit))
            )
            # Beyond the Cholesky factor, which the solve needs without a certificate
            # too (only the p <= 300 path, a full eigvalsh, does not reuse it).
            extra = np.array(spectrum) - np.array(factorization)
            row["certificate_extra_share"] = float(np.median(extra / np.array(fit)))
        if inside:
            row["certificate_in_fit_share"] = float(np.median(inside))
        rows.append(row)
        print(row, flush=True)
    return rows


def gram_section(sizes, n_samples, repeats):
    rows = []
    for d in sizes:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n_samples, 32, d))
        y = rng.normal(size=n_samples)
        statistics = statistics_function(X, y)
        if statistics is None:
            return rows
        P = reference_lifted_features(X)
        statistics()
        gemm, accumulate = [], []
        for _ in range(repeats):
            gemm.append(timed(lambda: P.T @ P))
            accumulate.append(timed(statistics))
        p = P.shape[1]
        flops = 2.0 * n_samples * p * p
        row = {
            "d": d,
            "p": p,
            "n": n_samples,
            "gemm_s": float(np.median(gemm)),
            "accumulate_s": float(np.median(accumulate)),
            "ratio": float(np.median(np.array(gemm) / np.array(accumulate))),
        }
        row["gemm_gflops"] = flops / row["gemm_s"] / 1e9
        row["accumulate_gflops"] = flops / row["accumulate_s"] / 1e9
        rows.append(row)
        print(row, flush=True)
    return rows


def load_section(sizes, n_samples, repeats):
    cases = []
    for d in sizes:
        rng = np.random.default_rng(d)
        X = rng.normal(size=(n_samples, 32, d))
        y = rng.normal(size=n_samples)
        cases.append((f"regressor d={d}", LinearAttentionRegressor(n_heads=None), X, y))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1797, 8, 8))  # digits-sized: 8 rows of 8 pixels
    y = rng.integers(0, 10, size=1797)
    cases.append(
        ("classifier d=8, 10 classes", LinearAttentionClassifier(n_heads=None), X, y)
    )
    for _, model, X, y in cases:
        model.fit(X, y)
    quiet = {
        name: median_seconds(lambda: m.fit(X, y), repeats) for name, m, X, y in cases
    }
    quiet_load = load_average()
    with BusyMachine():
        busy = {
            name: median_seconds(lambda: m.fit(X, y), repeats)
            for name, m, X, y in cases
        }
        busy_load = load_average()
    rows = [
        {
            "case": name,
            "quiet_s": quiet[name],
            "busy_s": busy[name],
            "slowdown": busy[name] / quiet[name],
        }
        for name, *_ in cases
    ]
    for row in rows:
        print(row, flush=True)
    return rows, quiet_load, busy_load


def certify_section(repeats):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 32, 16))
    y = rng.normal(size=500)
    certify(X)
    model = LinearAttentionRegressor(n_heads=None)
    row = {
        "certify_s": median_seconds(lambda: certify(X), repeats),
        "fit_s": median_seconds(lambda: model.fit(X, y), repeats),
        "certify_peak_mib": peak_bytes(lambda: certify(X)) / 2**20,
        "fit_peak_mib": peak_bytes(lambda: model.fit(X, y)) / 2**20,
        "solver": model.solver_ if hasattr(model, "solver_") else "",
    }
    print(row, flush=True)
    return row


def dual_section(repeats):
    rows = []
    for n_samples, d in [(1000, 16), (2000, 16)]:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n_samples, 16, d))
        y = rng.normal(size=n_samples)
        for alpha, intercept in ((0.0, False), (1e-3, False), (0.0, True)):
            model = LinearAttentionRegressor(
                n_heads=None, solver="dual", alpha=alpha, fit_intercept=intercept
            )
            model.fit(X, y)
            rows.append(
                {
                    "n": n_samples,
                    "d": d,
                    "alpha": alpha,
                    "fit_intercept": intercept,
                    "fit_s": median_seconds(lambda: model.fit(X, y), repeats),
                }
            )
            print(rows[-1], flush=True)
    return rows


def main():
    parser = make_parser(__doc__, quick=True)
    parser.add_argument("--repeats", type=int, default=3, help="timings per median")
    parser.add_argument(
        "--only-dual", action="store_true", help="run section 6 (the dual solver) only"
    )
    args = parser.parse_args()
    compile_kernels()
    n_samples = 4000 if args.quick else 20000
    repeats = args.repeats
    print(f"load average before: {load_average():.2f}", flush=True)
    results = {"load_average_start": load_average()}

    if not args.only_dual:
        fit_rows = fit_section((8, 12, 16), n_samples, repeats)
        results["fit"] = fit_rows
        print(
            "\n### 1. fit (n_heads=None) vs numpy reference, 32 tokens, "
            f"n={n_samples}\n"
        )
        print(
            markdown_table(
                [
                    ("d", "{d}"),
                    ("p", "{p}"),
                    ("numpy reference", "{reference_s:.3f} s"),
                    ("fit", "{fit_s:.3f} s"),
                    ("speed-up", "{speedup:.2f}x"),
                    ("certify", "{certify_s:.3f} s"),
                    (
                        "certificate / fit",
                        lambda r: (
                            f"{100 * r['certificate_share']:.0f}%"
                            if "certificate_share" in r
                            else ""
                        ),
                    ),
                    (
                        "certificate beyond the Cholesky / fit",
                        lambda r: (
                            f"{100 * r['certificate_extra_share']:.0f}%"
                            if "certificate_extra_share" in r
                            else ""
                        ),
                    ),
                    (
                        "the same, inside fit",
                        lambda r: (
                            f"{100 * r['certificate_in_fit_share']:.1f}%"
                            if "certificate_in_fit_share" in r
                            else ""
                        ),
                    ),
                ],
                fit_rows,
            )
        )

        # three times the repeats: at d = 8 both timings are 20-30 ms, where this
        # machine's run-to-run noise (+-10%) is the size of the margins measured
        gram_rows = gram_section((8, 12, 16), n_samples, 3 * repeats)
        results["gram"] = gram_rows
        if gram_rows:
            print("\n### 2. streamed Gram accumulation vs one GEMM on Phi in memory\n")
            print(
                markdown_table(
                    [
                        ("d", "{d}"),
                        ("p", "{p}"),
                        ("A.T @ A", "{gemm_s:.3f} s ({gemm_gflops:.0f} GFLOP/s)"),
                        (
                            "accumulate (from sequences)",
                            "{accumulate_s:.3f} s ({accumulate_gflops:.0f} GFLOP/s)",
                        ),
                        ("GEMM time / accumulate time", "{ratio:.0%}"),
                    ],
                    gram_rows,
                )
            )
            print("(both counted as 2 n p^2 flops)")

        load_rows, quiet_load, busy_load = load_section((4, 8, 12), n_samples, repeats)
        results["load"] = {
            "rows": load_rows,
            "quiet_load": quiet_load,
            "busy_load": busy_load,
        }
        print(
            "\n### 4. one busy-loop process on the machine (load average "
            f"{quiet_load:.1f} quiet, {busy_load:.1f} busy)\n"
        )
        print(
            markdown_table(
                [
                    ("case", "{case}"),
                    ("quiet", "{quiet_s:.3f} s"),
                    ("busy", "{busy_s:.3f} s"),
                    ("busy / quiet", "{slowdown:.2f}"),
                ],
                load_rows,
            )
        )

        certify_row = certify_section(repeats)
        results["certify"] = certify_row
        print(
            "\n### 5. certify with fewer sequences than features "
            "(d=16, 500 sequences)\n"
        )
        print(
            markdown_table(
                [
                    ("certify", "{certify_s:.3f} s"),
                    ("certify peak", "{certify_peak_mib:.0f} MiB"),
                    ("fit (auto)", "{fit_s:.3f} s"),
                    ("fit peak", "{fit_peak_mib:.0f} MiB"),
                ],
                [certify_row],
            )
        )

    dual_rows = dual_section(repeats)
    results["dual"] = dual_rows
    print("\n### 6. dual solver (16 tokens)\n")
    print(
        markdown_table(
            [
                ("n", "{n}"),
                ("d", "{d}"),
                ("alpha", "{alpha:g}"),
                ("fit_intercept", "{fit_intercept}"),
                ("fit", "{fit_s:.3f} s"),
            ],
            dual_rows,
        )
    )
    results["load_average_end"] = load_average()
    print(f"\nload average after: {load_average():.2f}")
    write_json(args.json, results)


if __name__ == "__main__":
    main()
