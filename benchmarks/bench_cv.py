"""Choosing alpha: LinearAttentionRegressorCV against GridSearchCV.

Run: ``python benchmarks/bench_cv.py [--quick] [--repeats 3] [--json FILE]``

15 alphas x 5 folds (``KFold(5)``, the same splits and the same score, the mean
squared error, for both) on 20000 sequences of 16 tokens with d=8 (p=288), targets
from a random 2-head MHLA plus noise of half their standard deviation.
``GridSearchCV`` fits 75 models plus the refit; the CV estimator computes each fold's
statistics once (one pass), the training statistics as the sum of the other folds',
one eigendecomposition per fold for all alphas, and scores the held-out rows in one
more pass. Both with ``n_heads=None`` (the paper's read-out, no head search) and with
the default ``n_heads="auto"``; medians of ``--repeats`` runs (the default-heads
GridSearchCV once: it is slow), ratios against the baseline measured in the same run.
BLAS runs single-threaded (threadpoolctl) for both: on the shared 2-core machine,
multi-threaded OpenBLAS made one 288 x 288 Cholesky factorization take 0.57 s
instead of 0.8 ms, which swamped every timing. Also reports leave-one-out
(``cv=None``) on the same data, and checks that both choose the same alpha.
"""

import numpy as np
from _common import (
    compile_kernels,
    make_parser,
    markdown_table,
    median_seconds,
    write_json,
)
from sklearn.model_selection import GridSearchCV, KFold
from threadpoolctl import threadpool_limits

from sklearn_linattn import LinearAttentionRegressor, LinearAttentionRegressorCV
from sklearn_linattn.datasets import make_random_mhla


def main():
    parser = make_parser(__doc__, quick=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n_samples = 4000 if args.quick else 20000
    token_dim, n_tokens = 8, 16
    X, y, _ = make_random_mhla(
        n_samples, n_tokens, token_dim, n_heads=2, random_state=0
    )
    y = y + 0.5 * y.std() * np.random.default_rng(1).normal(size=y.shape)
    alphas = np.logspace(-3, 4, 15)
    cv = KFold(5)
    compile_kernels()
    print(f"n_samples={n_samples}, n_tokens={n_tokens}, token_dim={token_dim}, p=288")

    rows, results = [], {}
    for heads in (None, "auto"):
        search = GridSearchCV(
            LinearAttentionRegressor(n_heads=heads),
            {"alpha": alphas},
            cv=cv,
            scoring="neg_mean_squared_error",
        )
        model = LinearAttentionRegressorCV(alphas, cv=cv, n_heads=heads)
        grid_repeats = args.repeats if heads is None else 1
        grid_seconds = median_seconds(lambda: search.fit(X, y), grid_repeats)
        cv_seconds = median_seconds(lambda: model.fit(X, y), args.repeats)
        same = bool(model.alpha_ == search.best_params_["alpha"])
        scores_agree = bool(
            np.allclose(
                model.cv_scores_, search.cv_results_["mean_test_score"], rtol=1e-6
            )
        )
        row = {
            "n_heads": repr(heads),
            "grid_seconds": grid_seconds,
            "grid_repeats": grid_repeats,
            "cv_seconds": cv_seconds,
            "speedup": grid_seconds / cv_seconds,
            "same_alpha": same,
            "same_scores": scores_agree,
            "alpha": model.alpha_,
        }
        rows.append(row)
        results[f"kfold_n_heads_{heads}"] = row

    loo = LinearAttentionRegressorCV(alphas, n_heads=None)
    loo_seconds = median_seconds(lambda: loo.fit(X, y), args.repeats)
    plain = LinearAttentionRegressor(alpha=loo.alpha_, n_heads=None)
    fit_seconds = median_seconds(lambda: plain.fit(X, y), args.repeats)
    results["loo"] = {
        "seconds": loo_seconds,
        "plain_fit_seconds": fit_seconds,
        "ratio_to_one_fit": loo_seconds / fit_seconds,
        "alpha": loo.alpha_,
    }

    print(
        markdown_table(
            [
                ("n_heads", "{n_heads}"),
                (
                    "GridSearchCV",
                    lambda r: (
                        f"{r['grid_seconds']:.2f} s (median of {r['grid_repeats']})"
                    ),
                ),
                ("RegressorCV", "{cv_seconds:.3f} s"),
                ("speed-up", "{speedup:.0f}x"),
                ("same alpha", "{same_alpha}"),
                ("same scores (rtol 1e-6)", "{same_scores}"),
            ],
            rows,
        )
    )
    print(
        f"\nleave-one-out (cv=None) over the same 15 alphas: {loo_seconds:.3f} s, "
        f"{loo_seconds / fit_seconds:.1f}x one plain fit ({fit_seconds:.3f} s); "
        f"alpha_={loo.alpha_:.3g}"
    )
    write_json(args.json, results)


if __name__ == "__main__":
    with threadpool_limits(1):
        main()
