"""How the dual and the normal solver count several outputs
(``head_search_.effective_outputs``) and the heads they return, on the same data.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_solver_outputs.py
[--json FILE]`` (about 2 minutes; the package measured is printed first).

The data: ``make_random_mhla(200, 5, 3, n_heads=2)`` (seeds 0, 1, 2; 200 sequences
of 5 tokens, d = 3, 18 lifted features) with the tokens as generated, offset by 30
or by 1e3, or with their last coordinate times 1e3 or 1e-3; three outputs: the
generating model's output plus noise of 0.3 of its deviation (twice, independent
draws), and the same output with noise of 0.3, 1e-6 or 0 times its deviation (a
noisy, a nearly exact and an exact output). Each is fitted by
``LinearAttentionRegressor(solver=s, fit_intercept=f)`` with the default
``n_heads="auto"``, for both solvers and ``f`` False and True: 90 pairs of fits.

Reported per pair: each solver's ``effective_outputs`` (rounded to 3 digits) and
``n_heads_``, and a summary: in how many pairs the two solvers' effective outputs
agree within 0.02, and their head counts exactly. The outputs a solver counts are
those whose training residual exceeds the rounding of the sums it comes from
(``_solvers._residual_rounding``): two exact outputs beside one noisy one count
about 2, three noisy ones about 3 (less where their noise correlates), and 3.0
exactly where the correlations are not known to that rounding. Also per token
variant: how far the residuals' cross products from plain numpy normal equations
stray from the rows' (their largest error relative to that bound, and relative to
the bound with the fitted values' products taken whole, as before the forty-second
pass). Recorded runs:
``benchmarks/recorded/bench_solver_outputs.json``; before the term-by-term bound,
``bench_solver_outputs_41st.json``; before both solvers judged the residuals at the
statistics' resolution, ``bench_solver_outputs_before.json``.
"""

import warnings

import numpy as np
import scipy.linalg
from _common import make_parser, markdown_table, write_json

import sklearn_linattn
from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn._lift import lifted_features
from sklearn_linattn._solvers import _residual_rounding, _term_sizes
from sklearn_linattn.datasets import make_random_mhla

TOKENS = {
    "as generated": lambda X: X,
    "offset 30": lambda X: X + 30.0,
    "offset 1e3": lambda X: X + 1e3,
    "last coordinate x 1e3": lambda X: X * np.array([1.0, 1.0, 1e3]),
    "last coordinate x 1e-3": lambda X: X * np.array([1.0, 1.0, 1e-3]),
}
THIRD_OUTPUT_NOISE = [0.3, 1e-6, 0.0]
SEEDS = [0, 1, 2]
NOISE = 0.3
EPS = np.finfo(float).eps


def three_outputs(tokens, seed, third_noise):
    """``(X, y)``: two noisy outputs of the generating model and a third with
    ``third_noise`` times its deviation."""
    X, _, truth = make_random_mhla(200, 5, 3, n_heads=2, random_state=seed)
    X = TOKENS[tokens](X)
    exact = truth.predict(X).reshape(len(X), -1)[:, 0]
    rng = np.random.default_rng(seed)
    noisy = exact[:, None] + NOISE * exact.std() * rng.normal(size=(len(X), 2))
    third = exact + third_noise * exact.std() * rng.normal(size=len(X))
    return X, np.c_[noisy, third]


def rounding_check(X, y, fit_intercept):
    """The normal equations' residual products against the rows' residuals, for
    the least-squares coefficients of plain numpy normal equations: the largest
    error relative to the bound (``_residual_rounding`` with the fitted values'
    sizes term by term, ``_term_sizes``, and taken whole as before the
    forty-second pass)."""
    features = lifted_features(X)
    weight = float(len(X)) if fit_intercept else 0.0  # no centering without
    feature_mean = features.mean(axis=0) * (weight > 0)
    target_mean = y.mean(axis=0) * (weight > 0)
    gram = features.T @ features - weight * np.outer(feature_mean, feature_mean)
    moment = features.T @ y - weight * np.outer(feature_mean, target_mean)
    products = y.T @ y
    centering = weight * np.outer(target_mean, target_mean)
    p = features.shape[1]  # (singular values below p eps of the largest: zero)
    coef = scipy.linalg.lstsq(gram, moment, cond=p * EPS)[0].T
    crossed, quadratics = coef @ moment, coef @ gram @ coef.T
    residual = y - target_mean - (features - feature_mean) @ coef.T
    from_rows = residual.T @ residual
    error = np.abs(products - centering - crossed - crossed.T + quadratics - from_rows)
    bound = _residual_rounding(
        p, products, centering,
        *_term_sizes(coef, gram, moment, feature_mean, target_mean, weight),
    )
    whole = _residual_rounding(
        p, products, centering, np.abs(crossed), np.abs(quadratics)
    )
    return dict(
        error_over_bound=float(np.max(error / bound)),
        error_over_whole=float(np.max(error / whole)),
    )


def main():
    parser = make_parser(__doc__)
    args = parser.parse_args()
    print(f"sklearn_linattn from {sklearn_linattn.__file__}")
    rows = []
    for tokens in TOKENS:
        for seed in SEEDS:
            for third_noise in THIRD_OUTPUT_NOISE:
                X, y = three_outputs(tokens, seed, third_noise)
                for fit_intercept in (False, True):
                    row = dict(
                        tokens=tokens, seed=seed, third_noise=third_noise,
                        fit_intercept=fit_intercept,
                        **rounding_check(X, y, fit_intercept),
                    )
                    for solver in ("dual", "normal"):
                        model = LinearAttentionRegressor(
                            solver=solver, fit_intercept=fit_intercept
                        )
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            model.fit(X, y)
                        row[f"{solver}_outputs"] = round(
                            model.head_search_.effective_outputs, 3
                        )
                        row[f"{solver}_heads"] = int(model.n_heads_)
                    rows.append(row)
    print(
        markdown_table(
            [
                ("tokens", "{tokens}"),
                ("seed", "{seed}"),
                ("third output's noise", "{third_noise:g}"),
                ("intercept", "{fit_intercept}"),
                ("outputs dual / normal", "{dual_outputs} / {normal_outputs}"),
                ("heads dual / normal", "{dual_heads} / {normal_heads}"),
            ],
            rows,
        )
    )
    outputs_agree = sum(
        abs(row["dual_outputs"] - row["normal_outputs"]) < 0.02 for row in rows
    )
    heads_agree = sum(row["dual_heads"] == row["normal_heads"] for row in rows)
    print(
        f"\nEffective outputs within 0.02 of each other: {outputs_agree} of "
        f"{len(rows)} pairs; the same heads: {heads_agree} of {len(rows)}."
    )
    for tokens in TOKENS:
        some = [row for row in rows if row["tokens"] == tokens]
        print(
            f"{tokens}: the statistics' residual products err by at most "
            f"{max(r['error_over_bound'] for r in some):.2g} of their bound "
            f"(terms taken whole: "
            f"{max(r['error_over_whole'] for r in some):.2g} of that bound)."
        )
    write_json(
        args.json,
        {"rows": rows, "outputs_agree": outputs_agree, "heads_agree": heads_agree},
    )


if __name__ == "__main__":
    main()
