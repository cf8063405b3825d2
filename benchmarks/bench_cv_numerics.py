"""The numbers behind the CV estimators' numerical rules (not timings).

Run: ``python benchmarks/bench_cv_numerics.py [--quick] [--json FILE]``

1. Rounding of the leave-one-out denominator ``1 - h_i`` computed from the
   eigendecomposition of the lifted Gram (as ``LinearAttentionRegressorCV`` does)
   against a QR factorization of ``[Phi; sqrt(alpha) I]``, relative to ``eps``
   times the condition number ``(lambda_max + alpha) / (lambda_min + alpha)``, on
   random Grams (Gaussian, one-hot, repeated and one 30x larger sequence, alpha
   from 1e-8 to 1e-2 of the largest eigenvalue). The estimators take ``1 - h_i``
   below 100 times that for no number.
2. Leave-one-out at leverage one, ``n = p = 18`` sequences (d = 3), one of them
   ``factor`` times the others: the largest relative error of the finite
   leave-one-out predictions at ``alpha = 0`` against explicit refits (pinv), and
   how many are ``-inf``, from the Gram (``gcv_mode="normal"``) and the kernel;
   with the limit from the Gram always taken, and as the estimators take it (only
   up to a condition number of 1e10).
3. Where the best alpha lies relative to the mean diagonal ``trace(G) / p`` of the
   lifted Gram (the scale of ``alphas="auto"``): leave-one-out over a wide grid on
   54 synthetic problems (d = 2..4, 40 to 1000 sequences, 4 or 20 tokens, noise
   0.1 to 3 times the signal).
"""

import warnings

import numpy as np
import scipy.linalg
from _common import make_parser, markdown_table, reference_lifted_features, write_json

import sklearn_linattn._model_selection as model_selection
from sklearn_linattn import LinearAttentionRegressorCV
from sklearn_linattn.datasets import make_random_mhla

EPS = np.finfo(np.float64).eps


def random_sequences(rng, kind, n, n_tokens, d):
    X = rng.normal(size=(n, n_tokens, d)) / np.sqrt(n_tokens)
    if kind == "one-hot":
        X = np.eye(d)[rng.integers(0, d, size=(n, n_tokens))]
    elif kind == "repeated":
        X[n // 2 :] = X[: n - n // 2]
    elif kind == "one 30x larger":
        X[0] *= 30.0
    return X


def leverage_rounding(n_cases):
    rows = []
    for kind in ("Gaussian", "one-hot", "repeated", "one 30x larger"):
        ratios = []
        for seed in range(n_cases):
            rng = np.random.default_rng(seed)
            d, n = int(rng.integers(2, 4)), int(rng.integers(20, 60))
            X = random_sequences(rng, kind, n, int(rng.integers(1, 5)), d)
            features = reference_lifted_features(X)
            gram = features.T @ features
            eigenvalues, vectors = scipy.linalg.eigh(gram, driver="evd")
            alpha = 10 ** rng.uniform(-8, -2) * eigenvalues[-1]
            computed = 1 - ((features @ vectors) ** 2) @ (1 / (eigenvalues + alpha))
            stacked = np.vstack([features, np.sqrt(alpha) * np.eye(features.shape[1])])
            q = np.linalg.qr(stacked)[0][:n]
            exact = 1 - (q**2).sum(axis=1)
            condition = (eigenvalues[-1] + alpha) / (max(eigenvalues[0], 0) + alpha)
            ratios.append(np.abs(computed - exact).max() / (EPS * condition))
        ratios = np.array(ratios)
        rows.append(
            dict(
                kind=kind,
                cases=n_cases,
                median=float(np.median(ratios)),
                q95=float(np.quantile(ratios, 0.95)),
                largest=float(ratios.max()),
            )
        )
    return rows


def explicit_leave_one_out(features, y):
    predictions = np.empty(len(y))
    for i in range(len(y)):
        kept = np.arange(len(y)) != i
        predictions[i] = features[i] @ (np.linalg.pinv(features[kept], 1e-12) @ y[kept])
    return predictions


def leverage_one_limit(n_seeds):
    rows = []
    for factor in (1.0, 3.0, 10.0, 30.0):
        for mode, guard in (("normal", False), ("normal", True), ("dual", True)):
            errors, infinite, conditions = [], 0, []
            for seed in range(n_seeds):
                rng = np.random.default_rng(seed)
                X = rng.normal(size=(18, 4, 3)) / 2.0
                X[0] *= factor
                y = rng.normal(size=18)
                features = reference_lifted_features(X)
                eigenvalues = np.linalg.eigvalsh(features.T @ features)
                conditions.append(eigenvalues[-1] / eigenvalues[0])
                saved = model_selection._LIMIT_CONDITION
                model_selection._LIMIT_CONDITION = saved if guard else np.inf
                try:
                    model = LinearAttentionRegressorCV(
                        [0.0],
                        n_heads=None,
                        gcv_mode=mode,
                        scoring="neg_mean_absolute_error",
                        store_cv_results=True,
                    ).fit(X, y)
                finally:
                    model_selection._LIMIT_CONDITION = saved
                got = model.cv_results_[:, 0]
                expected = explicit_leave_one_out(features, y)
                finite = np.isfinite(got)
                infinite += int((~finite).sum())
                if finite.any():
                    errors.append(
                        np.max(np.abs(got[finite] - expected[finite]))
                        / np.abs(expected).max()
                    )
            rows.append(
                dict(
                    factor=factor,
                    form="kernel" if mode == "dual" else "Gram",
                    limit="as the estimators" if guard else "always",
                    condition=float(np.median(conditions)),
                    error=float(max(errors)) if errors else float("nan"),
                    infinite=infinite,
                    predictions=18 * n_seeds,
                )
            )
    return rows


def best_relative_alpha(quick):
    relative = np.logspace(-10, 4, 29)
    rng = np.random.default_rng(0)
    best = []
    for d in (2, 3, 4):
        for n in (40, 200) if quick else (40, 200, 1000):
            for noise in (0.1, 1.0, 3.0):
                for n_tokens in (4, 20):
                    X, y, _ = make_random_mhla(
                        n, n_tokens, d, n_heads=2, random_state=int(rng.integers(1e6))
                    )
                    y = y + noise * y.std() * rng.normal(size=y.shape)
                    features = reference_lifted_features(X)
                    scale = (features**2).sum() / features.shape[1]
                    model = LinearAttentionRegressorCV(relative * scale, n_heads=None)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X, y)
                    best.append(model.alpha_ / scale)
    best = np.array(best)
    edges = (best == relative[0]) | (best == relative[-1])
    inner = best[~edges]
    return dict(
        fits=len(best),
        at_the_edges=int(edges.sum()),
        low=float(inner.min()),
        median=float(np.median(inner)),
        high=float(inner.max()),
    )


def main():
    parser = make_parser(__doc__, quick=True)
    args = parser.parse_args()
    rounding = leverage_rounding(20 if args.quick else 50)
    print("## 1. Rounding of 1 - h_i, in units of eps * condition number\n")
    print(
        markdown_table(
            [
                ("data", "{kind}"),
                ("Grams", "{cases}"),
                ("median", "{median:.2g}"),
                ("95%", "{q95:.2g}"),
                ("largest", "{largest:.2g}"),
            ],
            rounding,
        )
    )
    limit = leverage_one_limit(2 if args.quick else 5)
    print("\n## 2. Leave-one-out at leverage one, n = p = 18, alpha = 0\n")
    print(
        markdown_table(
            [
                ("one sequence times", "{factor:g}"),
                ("from", "{form}"),
                ("limit", "{limit}"),
                ("Gram condition (median)", "{condition:.1e}"),
                ("largest relative error", "{error:.1e}"),
                ("-inf", "{infinite} of {predictions}"),
            ],
            limit,
        )
    )
    grid = best_relative_alpha(args.quick)
    print(
        f"\n## 3. Best alpha / (trace(G) / p) over {grid['fits']} fits\n\n"
        f"{grid['at_the_edges']} at an edge of 1e-10..1e4 (no regularization "
        f"needed, or no signal); the others from {grid['low']:.1g} to "
        f"{grid['high']:.1g}, median {grid['median']:.1g}."
    )
    write_json(args.json, dict(rounding=rounding, limit=limit, grid=grid))


if __name__ == "__main__":
    main()
