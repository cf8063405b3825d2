"""The default head count of classifiers whose labels the lifted fit separates:
heads and held-out accuracy against ``n_heads=None``.

Run from the repository root: ``PYTHONPATH=. python
benchmarks/bench_separable_classes.py [--json FILE]`` (about a minute on one core;
one BLAS thread is set below). Run it on another checkout
(``PYTHONPATH=/other/checkout``) for a before/after table.

Labels of ``make_random_mhla`` models (d = 3 to 5, 1 or 2 generating heads, 10
seeds each): the sign of the target about its median, on the sequences whose
target is more than half a standard deviation from the median (a margin, so that
the lifted fit often misclassifies no held-out row). ``LinearAttentionClassifier()``
is fitted on the first 60 or 150 such sequences, with the default and with
``n_heads=None``, and scored on the other separated sequences of 3000 drawn.
Reported: the cases where the lifted fit's cross-validated misclassification is
0, the heads of both, and how many defaults are more than 0.02 below
``n_heads=None``'s accuracy.
"""

import warnings

import numpy as np
from _common import make_parser, markdown_table, write_json
from threadpoolctl import threadpool_limits

import sklearn_linattn
from sklearn_linattn import LinearAttentionClassifier
from sklearn_linattn.datasets import make_random_mhla

GRID = [(3, 2), (4, 2), (4, 1), (5, 2)]  # (token dimension, generating heads)
SEEDS = range(10)
TRAINING_SIZES = (60, 150)
DRAWN = 3000
MARGIN = 0.5  # labels kept only this many standard deviations from the median
CLEARLY_WORSE = 0.02


def separable_labels(token_dim, n_heads, seed):
    """Sequences and 0/1 labels of the target's sign about its median, kept where
    the target is beyond ``MARGIN`` standard deviations of it."""
    X, y, _ = make_random_mhla(DRAWN, 8, token_dim, n_heads=n_heads, random_state=seed)
    middle = np.median(y)
    kept = np.abs(y - middle) > MARGIN * y.std()
    return X[kept], (y[kept] > middle).astype(int)


def run():
    rows = []
    for token_dim, n_heads in GRID:
        for seed in SEEDS:
            X, labels = separable_labels(token_dim, n_heads, seed)
            for n_train in TRAINING_SIZES:
                train, test = slice(None, n_train), slice(n_train, None)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    default, lifted = (
                        LinearAttentionClassifier(n_heads=heads).fit(
                            X[train], labels[train]
                        )
                        for heads in ("auto", None)
                    )
                search = default.head_search_
                rows.append(dict(
                    d=token_dim, H=n_heads, seed=seed, n=n_train,
                    heads=int(default.n_heads_), none_heads=int(lifted.n_heads_),
                    criterion=search.criterion, lifted_cv=float(search.cv_error),
                    accuracy=float(default.score(X[test], labels[test])),
                    none_accuracy=float(lifted.score(X[test], labels[test])),
                ))
    return rows


COLUMNS = [
    ("d, H, seed, n", "{d}, {H}, {seed}, {n}"),
    ("heads default / None", "{heads} / {none_heads}"),
    ("criterion", "{criterion}"),
    ("accuracy default / None", "{accuracy:.4f} / {none_accuracy:.4f}"),
]


def main():
    args = make_parser(__doc__).parse_args()
    print(f"sklearn_linattn from {sklearn_linattn.__file__}")
    with threadpool_limits(1):
        rows = run()
    separated = [row for row in rows if row["lifted_cv"] == 0]
    print(markdown_table(COLUMNS, separated))
    worse = sum(row["accuracy"] < row["none_accuracy"] - CLEARLY_WORSE for row in rows)
    fewer = sum(row["heads"] < row["none_heads"] for row in separated)
    print(
        f"{len(rows)} fits; the lifted fit misclassifies no held-out row in "
        f"{len(separated)}, where the default returns fewer heads in {fewer}; "
        f"mean heads {np.mean([row['heads'] for row in rows]):.3f}; default more "
        f"than {CLEARLY_WORSE} below n_heads=None's accuracy in {worse}"
    )
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
