"""The held-out criterion of the head count: how much slack over the lifted fit's
cross-validated error a count may have, and how many steps a fold's refit takes
(issue 31).

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_head_criterion.py
[--slacks 0 1] [--fold-iters 3 10 100] [--dims 4 8] [--sets NAME ...]
[--json FILE]`` (``--slacks`` with no value skips parts 1 and 2).

A count ``k`` passes when its cross-validated error over the 5 interleaved folds is
at most the lifted fit's plus ``SLACK`` standard errors (``sklearn_linattn._heads.
SLACK``, set here for each run: 0 is the package's rule, 1 glmnet's
one-standard-error rule). For each value:

1. the noisy grid of ``bench_heads.py`` (d in ``--dims``, H in {1, 2, d/2}, noise 1%
   and 10%, 1 and 3 outputs, constant and input-dependent noise, 5 seeds): the
   fits that return the generating count;
2. the real data sets of ``bench_real_sequences.py`` (aeon's, statsmodels' and
   sklearn's digits, on their own splits; needs aeon and statsmodels): the
   default recipe's test score and heads, against the same recipe with
   ``n_heads=None`` (the lifted fit's own heads), measured once.
3. the steps of a fold's refit (at most ``sklearn_linattn._heads.FOLD_ITER``,
   from the full fit, by the full fits' stall rule; the package's 100 runs them
   to convergence): on sklearn digits (``LinearAttentionClassifier(token_dim=8)``,
   the split of ``bench_default_cases.py``) and on noisy regression whose heads
   have about as many parameters as rows (``fold_step_cases``), each count's
   cross-validated error (and, for the regression, that of explicit refits of
   ``n_heads=k`` on the other folds), the heads returned, the test score (accuracy
   or R^2) and the fit's time.
"""

import argparse
import json
import time

import bench_heads
import bench_real_sequences as real
import numpy as np

import sklearn_linattn._heads as heads
from sklearn_linattn import LinearAttentionRegressor


def grid(dims):
    rows = []
    for d in dims:
        for n_heads in sorted({1, 2, d // 2}):
            for noise in (0.01, 0.1):
                for n_outputs in (1, 3):
                    for scaled in (False, True):
                        for seed in range(5):
                            _, X, y = bench_heads.synthetic(
                                1000 + seed, d, n_heads, n_outputs, noise, scaled
                            )
                            found = LinearAttentionRegressor().fit(X, y).n_heads_
                            rows.append(dict(
                                d=d, H=n_heads, noise=noise, n_outputs=n_outputs,
                                scaled=scaled, seed=seed, found=int(found),
                            ))
    return rows


def real_sets(names):
    rows = []
    for name in names:
        data = real.DATA_SETS[name]()
        ours = real.fit_and_score("default", data)
        rows.append(dict(
            name=name, score=ours.get("score"), n_heads=ours.get("n_heads"),
            criterion=ours.get("head_criterion"),
        ))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def fold_step_cases():
    """sklearn digits (the split of bench_default_cases.py), and noisy regression
    whose heads have about as many parameters as there are rows (d = 8, 150
    sequences of 6 tokens, 3 generating heads, 10% noise, alpha = 0.01), each with
    its estimator, train and test split, and the held-out score."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from sklearn_linattn import LinearAttentionClassifier
    from sklearn_linattn.datasets import make_random_mhla

    X, y = load_digits(return_X_y=True)
    digits = train_test_split(X, y, random_state=0)
    yield "digits", lambda **k: LinearAttentionClassifier(token_dim=8, **k), digits
    X, y, _ = make_random_mhla(2150, 6, 8, n_heads=3, noise=0.1, random_state=1)
    split = X[:150], X[150:], y[:150], y[150:]
    yield "d=8, 150 rows", lambda **k: LinearAttentionRegressor(alpha=0.01, **k), split


def explicit_cv(make, X, y, n_heads):
    """The 5 interleaved folds' squared error of ``n_heads`` heads refitted on the
    other folds by the estimator itself, per sample and output."""
    errors = 0.0
    for fold in range(5):
        held = np.arange(len(X)) % 5 == fold
        model = make(n_heads=n_heads).fit(X[~held], y[~held])
        errors += float(np.sum((model.predict(X[held]) - y[held]) ** 2))
    return errors / y.size


def fold_steps(fold_iters):
    rows, default = [], heads.FOLD_ITER
    for name, make, (X_train, X_test, y_train, y_test) in fold_step_cases():
        reference = None
        for n_steps in fold_iters:
            heads.FOLD_ITER = n_steps
            start = time.perf_counter()
            model = make().fit(X_train, y_train)
            seconds = time.perf_counter() - start
            search = model.head_search_
            if name != "digits" and reference is None:  # explicit refits
                reference = {
                    int(c.n_heads): explicit_cv(make, X_train, y_train, c.n_heads)
                    for c in search.counts
                }
            rows.append(dict(
                data=name, fold_iter=n_steps, seconds=seconds,
                n_heads=int(model.n_heads_), score=model.score(X_test, y_test),
                lifted_cv=search.cv_error,
                cv={int(c.n_heads): c.cv_error for c in search.counts},
                explicit=reference,
            ))
            print(json.dumps(rows[-1]), flush=True)
    heads.FOLD_ITER = default
    for name in dict.fromkeys(row["data"] for row in rows):
        part = [row for row in rows if row["data"] == name]
        counts = sorted({k for row in part for k in row["cv"]})
        print(f"\n{name}: cross-validated error of each count (explicit refits of "
              "n_heads=k without each fold in the last row, where measured)\n")
        print("| fold refit steps | " + " | ".join(f"{k} heads" for k in counts)
              + " | lifted fit | heads | test score | fit |")
        print("| --- |" + " --- |" * (len(counts) + 4))
        for row in part:
            cells = [f"{row['cv'][k]:.4f}" if k in row["cv"] else "-" for k in counts]
            print(f"| {row['fold_iter']} | " + " | ".join(cells)
                  + f" | {row['lifted_cv']:.4f} | {row['n_heads']} | "
                  f"{row['score']:.3f} | {row['seconds']:.2f} s |")
        if part[0]["explicit"]:
            explicit = part[0]["explicit"]
            cells = [f"{explicit[k]:.4f}" if k in explicit else "-" for k in counts]
            print("| explicit refits | " + " | ".join(cells) + " | | | | |")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slacks", type=float, nargs="*", default=[0.0, 1.0])
    parser.add_argument(
        "--fold-iters", type=int, nargs="*", default=[3, 10, 100]
    )
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--sets", nargs="*", default=list(real.DATA_SETS))
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    results = {}
    lifted = {}
    for name in args.sets if args.slacks else []:  # the criterion's reference:
        data = real.DATA_SETS[name]()  # the lifted fit's own heads
        lifted[name] = real.fit_and_score("default_paper_heads", data).get("score")
    for slack in args.slacks:
        heads.SLACK = slack
        fits = grid(args.dims)
        hits = sum(row["found"] == row["H"] for row in fits)
        print(f"\nSLACK = {slack:g}: generating count in {hits} of {len(fits)}")
        for row in fits:
            if row["found"] != row["H"]:
                print(f"  missed: {row}")
        results[slack] = dict(grid=fits, hits=hits, real=real_sets(args.sets))
    steps = fold_steps(args.fold_iters) if args.fold_iters else []
    if args.slacks:
        print("\n| data | n_heads=None | " + " | ".join(
            f"SLACK = {s:g} (heads)" for s in args.slacks) + " |")
        print("| --- | --- | " + " | ".join("---" for _ in args.slacks) + " |")
    for i, name in enumerate(args.sets if args.slacks else []):
        cells = []
        for slack in args.slacks:
            row = results[slack]["real"][i]
            cells.append(f"{row['score']:.3f} ({row['n_heads']})")
        print(f"| {name} | {lifted[name]:.3f} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                dict(lifted=lifted, results=results, fold_steps=steps), handle,
                indent=1,
            )


if __name__ == "__main__":
    main()
