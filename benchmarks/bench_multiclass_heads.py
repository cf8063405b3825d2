"""The default head read-out of multi-class classifiers against ``n_heads=None``.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_multiclass_heads.py
[--fits 240] [--json FILE]`` (without ``PYTHONPATH=.`` a script imports the installed
copy of the package; the one measured is printed first). Run it on two versions
(``PYTHONPATH=/other/checkout``) for a before/after table: the draws depend only on
their seeds.

A seeded grid of small classifications of 3 to 5 classes (helper-69's stress grid of
issue 31, twenty-second pass), where a classifier's threshold, its folds' size factor
and its learning ratio matter most: d in {2, 3, 4}, 1 to 3 times the lifted features
per output of sequences of 3 or 6 tokens, labels from a random MHLA (the largest of
its outputs, 15% redrawn at random) or from ``make_classification``, alpha 0 or
1e-3, with and without an intercept, a quarter of the fits by
``LinearAttentionClassifierCV``; 2000 noiseless test sequences. Draws missing a
class are skipped. Reported: the fits whose default test accuracy is more than 0.02
below and above ``n_heads=None``'s, the mean difference, the heads returned, and the
worst fits. One BLAS thread.
"""

import warnings

import numpy as np
from _common import make_parser, markdown_table, write_json
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_limits

import sklearn_linattn
from sklearn_linattn import LinearAttentionClassifier, LinearAttentionClassifierCV
from sklearn_linattn.datasets import make_random_mhla

N_TEST = 2000


def draw(i):
    """The i-th problem's parameters (seeded by ``i`` alone)."""
    rng = np.random.default_rng(50_000 + i)
    d = int(rng.choice([2, 3, 4]))
    p = d * d * (d + 1) // 2
    share = float(rng.choice([1.0, 1.5, 2.0, 3.0]))
    n_classes = int(rng.choice([3, 4, 5]))
    n = max(4 * n_classes, int(share * p * (n_classes - 1) / 2 + share * p / 2))
    return dict(
        i=i, kind=str(rng.choice(["mhla", "mkclass"])), d=d, share=share, n=n,
        n_classes=n_classes, alpha=float(rng.choice([0.0, 1e-3])),
        fit_intercept=bool(rng.integers(2)), n_tokens=int(rng.choice([3, 6])),
        cv=bool(rng.random() < 0.25), seed=int(rng.integers(1e6)),
    )


def data(case):
    """``(X, y, X_test, y_test)`` of a problem."""
    n, d, n_tokens = case["n"], case["d"], case["n_tokens"]
    n_classes, seed, total = case["n_classes"], case["seed"], case["n"] + N_TEST
    if case["kind"] == "mhla":
        rng = np.random.default_rng(seed)
        X, scores, _ = make_random_mhla(
            total, n_tokens, d, n_heads=int(rng.integers(1, d + 1)),
            n_outputs=n_classes, random_state=seed,
        )
        labels = np.argmax(scores, axis=1)
        redrawn = rng.random(total) < 0.15
        noisy = np.where(redrawn, rng.integers(0, n_classes, total), labels)
        return X[:n], noisy[:n], X[n:], labels[n:]
    flat, labels = make_classification(
        total, n_features=n_tokens * d, n_informative=min(n_tokens * d, max(3, d)),
        n_redundant=0, n_classes=n_classes, n_clusters_per_class=1, flip_y=0.05,
        random_state=seed,
    )
    X = flat.reshape(total, n_tokens, d)
    return X[:n], labels[:n], X[n:], labels[n:]


def estimator(case, n_heads):
    if case["cv"]:
        return LinearAttentionClassifierCV(
            n_heads=n_heads, fit_intercept=case["fit_intercept"]
        )
    return LinearAttentionClassifier(
        n_heads=n_heads, alpha=case["alpha"], fit_intercept=case["fit_intercept"]
    )


def run_case(case):
    X, y, X_test, y_test = data(case)
    if len(np.unique(y)) < case["n_classes"]:
        return None
    row = dict(case)
    for name, n_heads in (("default", "auto"), ("none", None)):
        model = estimator(case, n_heads).fit(X, y)
        row[name + "_accuracy"] = float(np.mean(model.predict(X_test) == y_test))
        row[name + "_heads"] = int(model.n_heads_)
    row["difference"] = row["default_accuracy"] - row["none_accuracy"]
    return row


def main():
    parser = make_parser(__doc__)
    parser.add_argument("--fits", type=int, default=240, help="problems drawn")
    args = parser.parse_args()
    print(f"sklearn_linattn from {sklearn_linattn.__file__}", flush=True)
    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the documented warnings of small fits
        for i in range(args.fits):
            row = run_case(draw(i))
            if row is not None:
                rows.append(row)
    differences = np.array([row["difference"] for row in rows])
    summary = dict(
        fits=len(rows),
        below=int(np.sum(differences < -0.02)),
        above=int(np.sum(differences > 0.02)),
        mean_difference=float(np.mean(differences)),
        heads=sum(row["default_heads"] for row in rows),
        none_heads=sum(row["none_heads"] for row in rows),
    )
    print(markdown_table(
        [("fits", "{fits}"), ("0.02 below n_heads=None", "{below}"),
         ("0.02 above", "{above}"), ("mean difference", "{mean_difference:+.4f}"),
         ("heads (n_heads=None's)", "{heads} ({none_heads})")],
        [summary],
    ))
    worst = sorted(rows, key=lambda row: row["difference"])[:5]
    print("\nWorst fits:\n")
    print(markdown_table(
        [("i", "{i}"), ("seed", "{seed}"), ("d", "{d}"), ("n", "{n}"),
         ("classes", "{n_classes}"), ("heads", "{default_heads}"),
         ("accuracy / n_heads=None's", "{default_accuracy:.3f} / {none_accuracy:.3f}")],
        worst,
    ))
    write_json(args.json, dict(summary=summary, rows=rows))


if __name__ == "__main__":
    main()
