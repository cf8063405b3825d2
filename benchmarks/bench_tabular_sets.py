"""The default head read-out on scikit-learn's small tabular data sets.

Run: ``python benchmarks/bench_tabular_sets.py [--json FILE]`` (from the
checkout's root; one BLAS thread is set by the script).

Each data set (wine, breast_cancer and iris: classification; diabetes:
regression) is split 75/25 (stratified for classes) with ``random_state`` 0 to
3 (breast_cancer 0 and 1), standardized on the training rows, padded with zero
columns to a multiple of ``token_dim`` (3, 3, 2, 2) and read as a sequence of
tokens of that many features, with one-hot positions and a constant feature
(``PositionalEncoding(constant=True, padding=None)``). The CV estimator and the
plain one (regressors with an intercept) are fitted with their defaults; each
row gives the heads, the criterion, whether the search was complete, its work
in flops, the fit's wall time and the test score (accuracy, or R^2).
"""

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, load_wine
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
)
from sklearn_linattn.preprocessing import PositionalEncoding

# (name, loader, token_dim, classification, seeds)
DATA_SETS = [
    ("wine", load_wine, 3, True, range(4)),
    ("breast_cancer", load_breast_cancer, 3, True, range(2)),
    ("iris", load_iris, 2, True, range(4)),
    ("diabetes", load_diabetes, 2, False, range(4)),
]


def tokens(X, scaler, token_dim):
    """Standardized rows, zero-padded to whole tokens, as sequences."""
    columns = -(-X.shape[1] // token_dim) * token_dim
    padded = np.pad(scaler.transform(X), ((0, 0), (0, columns - X.shape[1])))
    return padded.reshape(len(X), -1, token_dim)


def run():
    rows = []
    for name, loader, token_dim, classify, seeds in DATA_SETS:
        X, y = loader(return_X_y=True)
        for seed in seeds:
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.25, random_state=seed,
                stratify=y if classify else None,
            )
            scaler = StandardScaler().fit(X_train)
            train = tokens(X_train, scaler, token_dim)
            test = tokens(X_test, scaler, token_dim)
            if classify:
                estimators = [
                    LinearAttentionClassifierCV(), LinearAttentionClassifier()
                ]
            else:
                estimators = [
                    LinearAttentionRegressorCV(fit_intercept=True),
                    LinearAttentionRegressor(fit_intercept=True),
                ]
            for estimator in estimators:
                model = make_pipeline(
                    PositionalEncoding(constant=True, padding=None), estimator
                )
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the cut-short warning: 'complete'
                    model.fit(train, y_train)
                seconds = time.perf_counter() - start
                search = model[-1].head_search_
                rows.append(dict(
                    data=name, seed=seed, estimator=type(estimator).__name__,
                    heads=int(model[-1].n_heads_), criterion=search.criterion,
                    complete=bool(search.complete), work=float(search.work),
                    seconds=round(seconds, 3), score=float(model.score(test, y_test)),
                ))
                row = rows[-1]
                print(
                    f"| {name} | {seed} | {row['estimator']} | {row['heads']} "
                    f"{row['criterion']} | {row['complete']} | {row['work']:.2g} | "
                    f"{seconds:.2f} s | {row['score']:.4f} |",
                    flush=True,
                )
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    print("| data | seed | estimator | heads | complete | work (flops) | fit | score |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with threadpool_limits(1, user_api="blas"):
        results = run()
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"rows": results}, file, indent=1)
