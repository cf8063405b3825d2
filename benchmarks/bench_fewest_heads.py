"""The default head search near interpolation, checked case by case against the
same estimator's fixed-count fits: is the count returned the fewest, and is every
verdict the search reports that of ``n_heads=k``?

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_fewest_heads.py
[--cases 600] [--shard I/N] [--json FILE] [--compare FILE ...]`` (one BLAS thread
is set below). ``--shard 0/2`` and ``--shard 1/2`` run halves of the grid (two
processes on two cores); ``--rows FILE ...`` reports runs already written (their
shards together) without fitting; ``--compare FILE ...`` reads another run (another
version of the package, ``PYTHONPATH=/other/checkout``) and counts the cases
whose head count differs.

The grid (``draw_cases``, seeded): small noisy problems with about as many
sequences as lifted features, where the search's held-out tests and generalized
cross-validation matter most: ``make_random_mhla`` models (d = 2 to 4, 1 to 3
outputs, 1 to d heads, noise of 1% to 100% of the targets' spread, 0.5 p to 3 p
sequences), the same with positions and a constant (d = 4 to 5), and sklearn's
iris, wine, linnerud and diabetes subsampled to 15 to 120 rows (features as tokens,
with positions); regressors and classifiers (2 to 4 classes), plain (alpha 0 to
100) and CV, with and without an intercept, sample_weight in 15% of the cases,
two partial_fit batches in 10% of the plain ones.

Each case fits the default (``n_heads="auto"``) and reports, with the default's
heads, criterion and test score (R^2 or accuracy on 200 held-out draws, or the
rest of the data set):

- ``fewer_passes``: ``n_heads=k - 1`` fitted on its own passes, where the default
  returned ``k >= 2`` heads from a complete search (the issue's "the default never
  returns k heads when n_heads=k-1 passes");
- ``disagree``: the counts whose verdict in ``head_search_.counts`` differs from
  ``n_heads=k``'s own (``head_search_.passes``), of the 4 fewest and 4 most heads
  decided;
- ``reproduces``: where the criterion is ``"tol"``, whether ``coef_`` is within
  ``tol`` of ``n_heads=None``'s (relative);
- the same fit twice gives the same ``coef_`` and count;
- ``fewer_untried``: the lifted fit's heads came back with counts that could
  reproduce it left unfitted (``head_search_.fewer_untried``);
- ``other_path``: for the plain estimators, the head count and criterion of the
  same data fitted the other way (``fit`` where the case uses two ``partial_fit``
  batches, and the reverse): the issue's "same data, same read-out".
"""

import argparse
import json
import os
import sys
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.datasets import (  # noqa: E402
    load_diabetes,
    load_iris,
    load_linnerud,
    load_wine,
)
from sklearn.preprocessing import StandardScaler  # noqa: E402

import sklearn_linattn  # noqa: E402
from sklearn_linattn import (  # noqa: E402
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
)
from sklearn_linattn.datasets import make_random_mhla  # noqa: E402
from sklearn_linattn.preprocessing import PositionalEncoding  # noqa: E402

N_TEST = 200


def draw_cases(n_cases, seed=0):
    """The seeded grid: one dict of parameters per case."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        kind = rng.choice(["mhla", "mhla", "mhla_pos", "tab"], p=[0.35, 0.15, 0.3, 0.2])
        case = dict(id=i, seed=int(rng.integers(1 << 30)), kind=str(kind))
        if kind in ("mhla", "mhla_pos"):
            if kind == "mhla":
                d0 = int(rng.choice([2, 3, 3, 4]))
                length = int(rng.integers(3, 8))
                d = d0
            else:
                d0 = int(rng.choice([1, 2]))
                length = int(rng.choice([2, 3])) if d0 == 1 else 2
                d = d0 + length + 1
            p = d * d * (d + 1) // 2
            heads = int(rng.integers(1, max(2, d0) + 1))
            case.update(d0=d0, T=length, d=d, p=p, H=heads)
            case["m"] = int(rng.choice([1, 1, 2, 3]))
            case["noise"] = float(rng.choice([0.01, 0.05, 0.1, 0.3, 1.0]))
            ratio = rng.choice([0.5, 0.8, 1.0, 1.1, 1.3, 1.6, 2.0, 3.0])
            case["n"] = max(6, int(p * ratio / max(1, case["m"] ** 0.5)))
        else:
            sets = ["iris", "wine", "linnerud", "diabetes", "linnerud3", "iris1"]
            case["set"] = str(rng.choice(sets))
            case["n"] = int(rng.choice([15, 20, 30, 40, 60, 90, 120]))
        estimator = rng.choice(["reg", "clf", "regcv", "clfcv"])
        if kind == "tab" and case["set"] in ("linnerud", "linnerud3", "diabetes"):
            estimator = rng.choice(["reg", "regcv"])
        if kind == "tab" and case["set"] in ("iris", "wine", "iris1"):
            estimator = rng.choice(["clf", "clfcv"])
        case["est"] = str(estimator)
        case["alpha"] = float(rng.choice([0.0, 1e-6, 1e-3, 1e-1, 1.0, 10.0, 100.0]))
        case["fit_intercept"] = bool(rng.random() < 0.4)
        case["classes"] = int(rng.choice([2, 3, 3, 4]))
        case["sample_weight"] = bool(rng.random() < 0.15)
        case["partial_fit"] = bool(rng.random() < 0.1) and estimator in ("reg", "clf")
        cases.append(case)
    return cases


def tabular(case, rng):
    """A subsampled sklearn data set as sequences: (X, y, n training rows)."""
    name = case["set"]
    load, token_dim = {
        "iris": (load_iris, 2), "iris1": (load_iris, 2), "wine": (load_wine, 3),
        "diabetes": (load_diabetes, 2), "linnerud": (load_linnerud, 1),
        "linnerud3": (load_linnerud, 3),
    }[name]
    X, y = load(return_X_y=True)
    order = rng.permutation(len(X))
    X, y = X[order], np.asarray(y)[order]
    n = min(case["n"], len(X) - 5)
    if name in ("diabetes", "linnerud", "linnerud3"):
        y = y.astype(float)
        y = (y - y[:n].mean(0)) / y[:n].std(0)
    X = StandardScaler().fit(X[:n]).transform(X)
    columns = -(-X.shape[1] // token_dim) * token_dim
    X = np.pad(X, ((0, 0), (0, columns - X.shape[1]))).reshape(len(X), -1, token_dim)
    if name == "wine":
        X = X[:, :3]  # d stays small: 3 tokens of 3 features
    if name not in ("iris1", "linnerud3"):
        X = PositionalEncoding(constant=True, padding=None).fit_transform(X)
    return X, y, n


def make_data(case):
    """``(X, y, X_test, y_test, sample_weight)`` of a case."""
    rng = np.random.default_rng(case["seed"])
    if case["kind"] == "tab":
        X, y, n = tabular(case, rng)
    else:
        n = case["n"]
        X, y, _ = make_random_mhla(
            n + N_TEST, case["T"], case["d0"], n_heads=case["H"],
            n_outputs=case["m"], random_state=case["seed"],
        )
        y = np.asarray(y, float)
        y = y + case["noise"] * np.std(y, axis=0) * rng.normal(size=y.shape)
        if case["kind"] == "mhla_pos":
            X = PositionalEncoding(constant=True, padding=None).fit_transform(X)
        if case["est"] in ("clf", "clfcv"):
            scores = y if y.ndim == 1 else y[:, 0]
            edges = np.quantile(scores, np.linspace(0, 1, case["classes"] + 1)[1:-1])
            y = np.searchsorted(edges, scores)
    weights = rng.uniform(0.2, 3.0, size=n) if case["sample_weight"] else None
    return X[:n], y[:n], X[n:], y[n:], weights


def make_estimator(case, **params):
    alpha, intercept = case["alpha"], case["fit_intercept"]
    estimator = {
        "reg": lambda: LinearAttentionRegressor(alpha=alpha, fit_intercept=intercept),
        "clf": lambda: LinearAttentionClassifier(alpha=alpha, fit_intercept=intercept),
        "regcv": lambda: LinearAttentionRegressorCV(fit_intercept=intercept),
        "clfcv": lambda: LinearAttentionClassifierCV(fit_intercept=intercept),
    }[case["est"]]()
    return estimator.set_params(**params)


def fitted(case, X, y, weights, partial_fit=None, **params):
    estimator = make_estimator(case, **params)
    if not (case["partial_fit"] if partial_fit is None else partial_fit):
        return estimator.fit(X, y, sample_weight=weights)
    half = len(X) // 2
    first = {"classes": np.unique(y)} if case["est"] == "clf" else {}
    for rows, more in ((slice(None, half), first), (slice(half, None), {})):
        estimator.partial_fit(
            X[rows], y[rows], sample_weight=None if weights is None else weights[rows],
            **more,
        )
    return estimator


def run_case(case):
    X, y, X_test, y_test, weights = make_data(case)
    model = fitted(case, X, y, weights)
    search = model.head_search_
    k = int(model.n_heads_)
    again = fitted(case, X, y, weights)
    lifted = fitted(case, X, y, weights, n_heads=None)
    row = dict(
        id=case["id"], d=int(X.shape[2]), est=case["est"], heads=k,
        criterion=search.criterion, complete=bool(search.complete),
        score=float(model.score(X_test, y_test)),
        lifted_heads=int(lifted.n_heads_),
        lifted_score=float(lifted.score(X_test, y_test)),
        work=float(search.work),
        fewer_untried=bool(search.fewer_untried),
        counts=[(int(c.n_heads), c.passes, c.failed_on) for c in search.counts],
        same_twice=bool(
            np.array_equal(model.coef_, again.coef_) and again.n_heads_ == k
        ),
    )
    if search.criterion == "tol":
        reference = np.linalg.norm(lifted.coef_)
        distance = np.linalg.norm(model.coef_ - lifted.coef_)
        row["reproduces"] = bool(distance <= search.tol * reference)
    if k >= 2 and search.complete:
        row["fewer_passes"] = bool(
            fitted(case, X, y, weights, n_heads=k - 1).head_search_.passes
        )
    decided = sorted({c.n_heads: c.passes for c in search.counts
                      if c.passes is not None}.items())
    row["disagree"] = [
        count for count, passes in decided[:4] + decided[4:][-4:]
        if fitted(case, X, y, weights, n_heads=count).head_search_.passes != passes
    ]
    row["checked"] = len(decided[:4] + decided[4:][-4:])
    if case["est"] in ("reg", "clf"):
        other = fitted(case, X, y, weights, partial_fit=not case["partial_fit"])
        row["other_path"] = [int(other.n_heads_), other.head_search_.criterion]
    return row


def summary(rows):
    total = dict(cases=len(rows))
    total["heads"] = sum(r["heads"] for r in rows)
    total["lifted_heads"] = sum(r["lifted_heads"] for r in rows)
    total["fewer_passes"] = sum(bool(r.get("fewer_passes")) for r in rows)
    total["fewer_checked"] = sum("fewer_passes" in r for r in rows)
    total["disagree"] = sum(len(r["disagree"]) for r in rows)
    total["verdicts_checked"] = sum(r["checked"] for r in rows)
    total["tol_not_reproducing"] = sum(r.get("reproduces") is False for r in rows)
    total["tol"] = sum("reproduces" in r for r in rows)
    total["not_same_twice"] = sum(not r["same_twice"] for r in rows)
    total["incomplete"] = sum(not r["complete"] for r in rows)
    total["fewer_untried"] = sum(bool(r.get("fewer_untried")) for r in rows)
    paths = [r for r in rows if "other_path" in r]
    total["other_path_checked"] = len(paths)
    total["other_path_differs"] = sum(r["other_path"][0] != r["heads"] for r in paths)
    total["work"] = float(f"{sum(r['work'] for r in rows):.3g}")  # flops
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=600)
    parser.add_argument("--shard", default="0/1", help="I/N: every N-th case from I")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--compare", nargs="*", default=[], help="another run's JSON")
    parser.add_argument(
        "--rows", nargs="*", default=[], help="report these runs' JSON (no fits)"
    )
    args = parser.parse_args()
    shard, n_shards = (int(part) for part in args.shard.split("/"))
    rows = []
    for path in args.rows:
        with open(path) as file:
            rows += json.load(file)["rows"]
    if not args.rows:
        print(f"sklearn_linattn from {sklearn_linattn.__file__}", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the documented warnings of small fits
            for case in draw_cases(args.cases):
                if case["id"] % n_shards == shard:
                    rows.append(run_case(case))
    print(json.dumps(summary(rows)))
    for row in rows:
        other_path = row.get("other_path", [row["heads"]])
        if (row.get("fewer_passes") or row["disagree"]
                or row.get("reproduces") is False or other_path[0] != row["heads"]):
            print("case", row["id"], {key: row[key] for key in (
                "d", "est", "heads", "criterion", "counts", "disagree")},
                "n_heads=k-1 passes" if row.get("fewer_passes") else "",
                "" if other_path[0] == row["heads"]
                else f"the other path (fit/partial_fit): {other_path}")
    if args.compare:
        other = {}
        for path in args.compare:
            with open(path) as file:
                other.update({r["id"]: r for r in json.load(file)["rows"]})
        changed = [(r, other[r["id"]]) for r in rows if r["id"] in other
                   and r["heads"] != other[r["id"]]["heads"]]
        fewer = sum(r["heads"] < o["heads"] for r, o in changed)
        print(f"{len(changed)} of {len(rows)} cases changed count ({fewer} fewer); "
              f"heads {sum(o['heads'] for _, o in changed)} -> "
              f"{sum(r['heads'] for r, _ in changed)}; largest score drop "
              f"{max([o['score'] - r['score'] for r, o in changed], default=0):.3g}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(dict(summary=summary(rows), rows=rows), file, indent=1)


if __name__ == "__main__":
    sys.exit(main())
