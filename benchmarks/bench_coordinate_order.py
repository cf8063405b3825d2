"""Heads against the order of the token coordinates, and fixed counts' objectives.

Run from the repository root: ``PYTHONPATH=. python
benchmarks/bench_coordinate_order.py [--draws 120] [--fixed-draws 200] [--parts units
...] [--json FILE]`` (without ``PYTHONPATH=.`` a script imports the installed copy of
the package; the one measured is printed first). Run it on two versions
(``PYTHONPATH=/other/checkout``) for a before/after table: the draws depend only on
their seeds. One BLAS thread; about 10 minutes.

Reordering the token coordinates, or appending one no token uses, relabels the data
without changing the model class, the lifted fit or its folds: a read-out that is a
function of the data returns the same heads. Measured (helper-88's review of issue 31):

- ``permutations``: the 24 orders of the coordinates of one noisy problem (a random
  2-head layer, d = 4, 2 outputs, noise 0.3, 200 sequences of 3 tokens, seed 7052):
  the default's counts, and how many of the 24 ``n_heads=2`` fits reach the
  best training error found (within 5%).
- ``relabelled``: ``--draws`` noisy 2-head problems (d 3 or 4, 1 or 2 outputs, 3 or 5
  times the lifted features in sequences, noise 0.1 or 0.3): how many default
  counts change with the coordinates reversed, and with a zero coordinate appended
  (which also changes the lifted features' count ``p``; the rules that count
  features count those of the spans), and the largest test-error ratio of a
  changed count.
- ``cv padded``: ``--cv-draws`` noisy problems (as ``relabelled``, half of them
  with an intercept) fitted by ``LinearAttentionRegressorCV()`` and, on their
  first output's median split, ``LinearAttentionClassifierCV()``, with and
  without a zero coordinate appended: how many ``alpha_`` (beyond 1e-9,
  relative) and how many counts change.
- ``fixed``: ``--fixed-draws`` noiseless problems of H heads (d 3 to 5, 2 or 3
  outputs, ``p + 40`` sequences of 6 tokens ``N(0, 1/6)``) fitted with
  ``alpha=1e-3``: how often ``n_heads=H+1`` ends with a training objective above
  ``n_heads=H``'s by more than 0.1% (any H-head model is an (H+1)-head model, but
  each count is fitted from its own starts), and the largest ratio.
- ``units``: ``--units-draws`` noiseless problems of H heads (d = 3 to 5, 2 or 3
  outputs, ``2 p + 50`` sequences of 8 tokens) with token coordinate 0 in other
  units (its values times 0.1, 0.03 and 0.01; the estimators warn from a factor
  of about 100): how many default counts are not H, and how many of those
  contradict ``n_heads=H``, which passes (the search judged H on another fit).
- ``loose_tol``: ``--loose-draws`` noiseless problems of 4 heads per cell (d = 4
  and 5, 2 and 3 outputs, ``2 p + 50`` sequences of 8 tokens) with token
  coordinate 0 times 0.02 (50 times smaller), fitted by the default at
  ``tol=1e-4``: its heads, their relative distance to the lifted fit, and the
  held-out relative squared error (squared residuals over the centered targets'
  squares, 2000 new sequences of the same law) of those heads and of
  ``n_heads=4``: what a loose ``tol`` passes in the data's units.
"""

import itertools
import warnings

import numpy as np
from _common import make_parser, markdown_table, random_attention, write_json
from sklearn.base import clone
from threadpoolctl import threadpool_limits

import sklearn_linattn
from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn.datasets import make_random_mhla


def _zero_coordinate(X):
    return np.concatenate([X, np.zeros(X.shape[:2] + (1,))], axis=-1)


def permutations():
    """The default count and ``n_heads=2``'s training error in every order."""
    X, y, _ = make_random_mhla(200, 3, 4, n_heads=2, n_outputs=2, noise=0.3,
                               random_state=7052)
    rows = []
    for order in itertools.permutations(range(4)):
        Xo = X[..., list(order)]
        default = LinearAttentionRegressor().fit(Xo, y)
        fixed = LinearAttentionRegressor(n_heads=2).fit(Xo, y)
        rows.append(dict(order=order, heads=int(default.n_heads_),
                         fixed_mse=float(np.mean((fixed.predict(Xo) - y) ** 2))))
    best = min(row["fixed_mse"] for row in rows)
    counts = sorted({row["heads"] for row in rows})
    return dict(
        counts={k: sum(row["heads"] == k for row in rows) for k in counts},
        fixed_at_best=sum(row["fixed_mse"] <= 1.05 * best for row in rows),
        orders=len(rows),
    )


def _noisy_problem(seed):
    """A seeded noisy 2-head problem (d 3 or 4, 1 or 2 outputs, 3 or 5 times the
    lifted features in sequences of 3 tokens, noise 0.1 or 0.3): ``(rng, X, y,
    truth)``, ``rng`` to draw more from."""
    rng = np.random.default_rng(seed)
    d, n_outputs = int(rng.choice([3, 4])), int(rng.choice([1, 2]))
    n = int(rng.choice([3, 5])) * d * d * (d + 1) // 2
    noise = float(rng.choice([0.1, 0.3]))
    X, y, truth = make_random_mhla(n, 3, d, n_heads=2, n_outputs=n_outputs,
                                   noise=noise, random_state=seed)
    return rng, X, (y if n_outputs > 1 else y.ravel()), truth


def relabelled(draws):
    """Default counts with the coordinates as given, reversed, and padded."""
    changed = {"reversed": 0, "zero coordinate": 0}
    worst = {"reversed": 1.0, "zero coordinate": 1.0}
    for i in range(draws):
        rng, X, y, truth = _noisy_problem(70_000 + i)
        X_test = rng.normal(size=(2000,) + X.shape[1:])
        clean = truth.predict(X_test).reshape(2000, -1)

        def fitted(transform):
            model = LinearAttentionRegressor().fit(transform(X), y)
            predicted = model.predict(transform(X_test)).reshape(2000, -1)
            return model.n_heads_, float(np.mean((predicted - clean) ** 2))

        base = fitted(lambda A: A)
        for name, transform in (("reversed", lambda A: A[..., ::-1]),
                                ("zero coordinate", _zero_coordinate)):
            heads, error = fitted(transform)
            if heads != base[0]:
                changed[name] += 1
                worst[name] = max(worst[name], error / base[1])
    return dict(draws=draws, changed=changed, worst_ratio=worst)


def cv_padded(draws):
    """The CV estimators' ``alpha_`` and counts with a zero coordinate appended."""
    from sklearn_linattn import LinearAttentionClassifierCV, LinearAttentionRegressorCV

    alphas_changed = {"regressor": 0, "classifier": 0}
    counts_changed = {"regressor": 0, "classifier": 0}
    for i in range(draws):
        _, X, y, _ = _noisy_problem(90_000 + i)
        first = y.reshape(len(X), -1)[:, 0]
        labels = (first > np.median(first)).astype(int)
        intercept = bool(i % 2)
        for name, estimator, target in (
            ("regressor", LinearAttentionRegressorCV(fit_intercept=intercept), y),
            ("classifier", LinearAttentionClassifierCV(fit_intercept=intercept),
             labels),
        ):
            base = clone(estimator).fit(X, target)
            padded = clone(estimator).fit(_zero_coordinate(X), target)
            if not np.isclose(padded.alpha_, base.alpha_, rtol=1e-9, atol=0):
                alphas_changed[name] += 1
            counts_changed[name] += padded.n_heads_ != base.n_heads_
    return dict(draws=draws, alphas_changed=alphas_changed,
                counts_changed=counts_changed)


def fixed_counts(draws):
    """``n_heads=H+1``'s training objective against ``n_heads=H``'s."""
    above, ratios = 0, []
    cells = [(4, 3, 2), (3, 2, 2), (4, 2, 3), (5, 3, 2)]
    for i in range(draws):
        d, n_heads, n_outputs = cells[i % len(cells)]
        truth = random_attention(d, n_heads, n_outputs, random_state=80_000 + i)
        # tokens N(0, 1/6), as tests/test_heads.py's fixed-count problems: small
        # lifted features, on which alpha = 1e-3 is a strong penalty
        rng = np.random.default_rng(80_000 + i)
        X = rng.normal(scale=1 / np.sqrt(6), size=(d * d * (d + 1) // 2 + 40, 6, d))
        y = truth.predict(X)
        alpha = 1e-3

        def objective(k):
            model = LinearAttentionRegressor(n_heads=k, alpha=alpha).fit(X, y)
            residual = y - model.predict(X)
            return float(np.sum(residual**2) + alpha * np.sum(model.coef_**2))

        ratio = objective(n_heads + 1) / objective(n_heads)
        ratios.append(ratio)
        above += ratio > 1 + 1e-3
    return dict(draws=draws, above=above, largest_ratio=float(max(ratios)))


def units(draws):
    """Default counts of exact data with one coordinate in other units."""
    cells = [(4, 3, 2), (5, 3, 2), (3, 2, 2), (5, 4, 3)]
    rows = {}
    for scale in (0.1, 0.03, 0.01):
        wrong = contradicted = 0
        for i in range(draws):
            d, n_heads, n_outputs = cells[i % len(cells)]
            p = d * d * (d + 1) // 2
            X, y, _ = make_random_mhla(2 * p + 50, 8, d, n_heads=n_heads,
                                       n_outputs=n_outputs, random_state=i)
            X = X * np.r_[scale, np.ones(d - 1)]
            if LinearAttentionRegressor().fit(X, y).n_heads_ != n_heads:
                wrong += 1
                asked = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
                contradicted += bool(asked.head_search_.passes)
        rows[str(scale)] = dict(wrong=wrong, contradicted=contradicted)
    return dict(draws=draws, scales=rows)


def loose_tol(draws):
    """Default heads at tol=1e-4 of exact 4-head data, coordinate 0 times 0.02."""
    rows = []
    for d, n_outputs in ((4, 2), (4, 3), (5, 2), (5, 3)):
        p = d * d * (d + 1) // 2
        n = 2 * p + 50
        for seed in range(draws):
            X, y, _ = make_random_mhla(n + 2000, 8, d, n_heads=4,
                                       n_outputs=n_outputs, random_state=seed)
            X = X * np.r_[0.02, np.ones(d - 1)]
            centered = np.sum((y[n:] - y[n:].mean(axis=0)) ** 2)

            def error(model):
                return float(np.sum((model.predict(X[n:]) - y[n:]) ** 2) / centered)

            loose = LinearAttentionRegressor(tol=1e-4).fit(X[:n], y[:n])
            four = LinearAttentionRegressor(n_heads=4).fit(X[:n], y[:n])
            rows.append(dict(
                d=d, n_outputs=n_outputs, seed=seed, heads=int(loose.n_heads_),
                distance=float(loose.head_search_.relative_distance),
                error=error(loose), four_error=error(four),
            ))
    return dict(draws=draws, rows=rows)


PARTS = ("permutations", "relabelled", "fixed", "cv_padded", "units", "loose_tol")


def main():
    parser = make_parser(__doc__)
    parser.add_argument("--draws", type=int, default=120)
    parser.add_argument("--fixed-draws", type=int, default=200)
    parser.add_argument("--cv-draws", type=int, default=40)
    parser.add_argument("--units-draws", type=int, default=16)
    parser.add_argument("--loose-draws", type=int, default=4)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    print(f"sklearn_linattn from {sklearn_linattn.__file__}")
    warnings.simplefilter("ignore")
    runs = dict(
        permutations=permutations,
        relabelled=lambda: relabelled(args.draws),
        fixed=lambda: fixed_counts(args.fixed_draws),
        cv_padded=lambda: cv_padded(args.cv_draws),
        units=lambda: units(args.units_draws),
        loose_tol=lambda: loose_tol(args.loose_draws),
    )
    with threadpool_limits(1):
        results = {part: runs[part]() for part in PARTS if part in args.parts}
    print(markdown_table(
        [("measure", "{measure}"), ("result", "{result}")],
        [row for part in PARTS if part in results
         for row in ROWS[part](results[part])],
    ))
    write_json(args.json, results)


def _permutation_rows(orders):
    return [
        dict(measure="24 orders: default counts",
                 result=", ".join(f"{k} heads in {n}" for k, n in
                                  orders["counts"].items())),
        dict(measure="24 orders: n_heads=2 within 5% of the best training error",
             result=f"{orders['fixed_at_best']} of {orders['orders']}"),
    ]


def _relabelled_rows(relabel):
    return [
        dict(measure=f"{relabel['draws']} draws, {name}: count changed",
             result=f"{relabel['changed'][name]} (largest test-error ratio "
                    f"{relabel['worst_ratio'][name]:.2f})")
        for name in ("reversed", "zero coordinate")
    ]


def _fixed_rows(fixed):
    return [
        dict(measure=f"{fixed['draws']} draws: n_heads=H+1 above n_heads=H by > 0.1%",
             result=f"{fixed['above']} (largest ratio {fixed['largest_ratio']:.4f})"),
    ]


def _padded_rows(padded):
    return [
        dict(measure=f"{padded['draws']} draws, {name}CV, zero coordinate: "
                     "alpha_ / count changed",
             result=f"{padded['alphas_changed'][name]} / "
                    f"{padded['counts_changed'][name]}")
        for name in ("regressor", "classifier")
    ]


def _units_rows(units):
    return [
        dict(measure=f"{units['draws']} noiseless draws, coordinate 0 times {scale}: "
                     "count not H / of them, n_heads=H passes",
             result=f"{row['wrong']} / {row['contradicted']}")
        for scale, row in units["scales"].items()
    ]


def _loose_rows(loose):
    rows = [
        dict(measure=f"tol=1e-4, coordinate 0 times 0.02, d = {r['d']}, "
                     f"{r['n_outputs']} outputs, seed {r['seed']}: heads of 4",
             result=f"{r['heads']} at {r['distance']:.2g} (held-out relative "
                    f"squared error {r['error']:.2g}; n_heads=4 "
                    f"{r['four_error']:.2g})")
        for r in loose["rows"]
    ]
    fewer = [r for r in loose["rows"] if r["heads"] < 4]
    rows.append(dict(
        measure=f"tol=1e-4: fewer than 4 heads (of {len(loose['rows'])})",
        result=f"{len(fewer)}" + (
            f", held-out relative squared error {min(r['error'] for r in fewer):.2g}"
            f" to {max(r['error'] for r in fewer):.2g}" if fewer else ""),
    ))
    return rows


ROWS = dict(permutations=_permutation_rows, relabelled=_relabelled_rows,
            fixed=_fixed_rows, cv_padded=_padded_rows, units=_units_rows,
            loose_tol=_loose_rows)


if __name__ == "__main__":
    main()
