"""A whole series as one token: the cubic-kernel recipe, its accuracy and its cost.

Run: ``python benchmarks/bench_one_token.py [--json FILE]``. The digits come with
scikit-learn; aeon's bundled GunPoint, ArrowHead, OSULeaf and BasicMotions (their
official splits, nothing downloaded) are run when aeon is installed.

Each series (an image: its 64 pixels) is one 2-D row with ``token_dim=None``, so one
token ``z``: the model is a cubic polynomial of the row, kernel ridge with the
kernel ``(z . z')^3``, fitted by ``LinearAttentionClassifierCV(n_heads=None)``
(leave-one-out over ``alphas="auto"``, ``solver`` auto). For every set: the solver
chosen, the estimated peak memory and head read-out work
(``sklearn_linattn._data.fit_cost``), test accuracy, fit time and the read-out's
share of it (timed around ``read_out_heads``), predict time; a fit refused before it
starts (memory beyond the available, or a read-out beyond 1e12 flops) is recorded
with the time to refuse and the reason, and the set is run again with its series
reduced (``PCA(n_components=k)`` before the estimator, and every 4th value).
Baselines on the same rows, in the same run: 1-nearest-neighbour (Euclidean) and
scikit-learn's ``SVC`` with the same kernel (``kernel="poly", degree=3, gamma=1,
coef0=0``, its default ``C=1``).
"""

import time
import warnings

import numpy as np
from _common import ReadOutClock, make_parser, markdown_table, write_json
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC

from sklearn_linattn import LinearAttentionClassifierCV
from sklearn_linattn._data import available_memory, fit_cost

AEON_SETS = ["GunPoint", "ArrowHead", "OSULeaf", "BasicMotions"]


def digits():
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X / 16, y, random_state=0, stratify=y
    )
    return X_train, y_train, X_test, y_test


def aeon_set(name):
    from aeon.datasets import load_classification

    X_train, y_train = load_classification(name, split="train")
    X_test, y_test = load_classification(name, split="test")
    return X_train, y_train, X_test, y_test


def flat(series):
    return series.reshape(len(series), -1)


def baselines(row, X_train, y_train, X_test, y_test):
    for label, model in [
        ("1-NN", KNeighborsClassifier(n_neighbors=1)),
        ("SVC", SVC(kernel="poly", degree=3, gamma=1.0, coef0=0.0)),
    ]:
        start = time.perf_counter()
        row[label] = float(model.fit(X_train, y_train).score(X_test, y_test))
        row[f"{label} seconds"] = time.perf_counter() - start
    return row


def run(name, variant, X_train, y_train, X_test, y_test, reduce=None):
    n_classes = len(np.unique(y_train))
    n_outputs = 1 if n_classes == 2 else n_classes
    estimator = LinearAttentionClassifierCV(n_heads=None)
    model = estimator if reduce is None else make_pipeline(reduce, estimator)
    token_dim = X_train.shape[1] if reduce is None else reduce.n_components
    cost = fit_cost(len(X_train), token_dim, n_outputs, "dual")
    row = {
        "data": name,
        "variant": variant,
        "train/test": f"{len(X_train)}/{len(X_test)}",
        "d": token_dim,
        "n_outputs": n_outputs,
        "p": cost.n_lifted,
        "memory GB": cost.memory / 1e9,
        "read-out flops": cost.readout_flops,
        "available GB": available_memory() / 1e9,
    }
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), ReadOutClock() as clock:
            warnings.simplefilter("ignore")  # the one-token layout warning
            model.fit(X_train, y_train)
    except ValueError as error:
        row["refused"] = str(error)
        row["seconds to refuse"] = time.perf_counter() - start
        return row
    row["fit seconds"] = time.perf_counter() - start
    row["read-out seconds"] = clock.seconds[-1]
    row["solver"] = estimator.solver_
    row["alpha"] = estimator.alpha_
    start = time.perf_counter()
    row["accuracy"] = float(model.score(X_test, y_test))
    row["predict seconds"] = time.perf_counter() - start
    return row


def main():
    parser = make_parser(__doc__)
    args = parser.parse_args()
    LinearAttentionClassifierCV().fit(np.eye(4)[:, :3] + 1, [0, 0, 1, 1])  # compile
    rows = [baselines(run("digits", "pixels / 16", *digits()), *digits())]
    try:
        import aeon
    except ImportError:
        print("aeon is not installed (pip install aeon): the digits only.")
    else:
        print(f"aeon {aeon.__version__}")
        for name in AEON_SETS:
            X_train, y_train, X_test, y_test = aeon_set(name)
            split = (flat(X_train), y_train, flat(X_test), y_test)
            row = baselines(run(name, "series", *split), *split)
            rows.append(row)
            if "refused" not in row:
                continue
            k = min(64, len(X_train))
            rows.append(run(name, f"PCA({k})", *split, reduce=PCA(n_components=k)))
            every = (flat(X_train[:, :, ::4]), y_train, flat(X_test[:, :, ::4]),
                     y_test)
            rows.append(run(name, "every 4th value", *every))

    def outcome(row):
        if "refused" in row:
            reasons = row["refused"].split(" The model has")[0]
            why = " and ".join(
                name
                for name, part in [("memory", "available"), ("work", "operations")]
                if part in reasons
            )
            return f"refused ({why}) in {row['seconds to refuse']:.3f} s"
        return (
            f"{row['accuracy']:.3f}; fit {row['fit seconds']:.1f} s (read-out "
            f"{row['read-out seconds']:.1f} s), predict {row['predict seconds']:.1f} s"
        )

    columns = [
        ("data", "{data}"),
        ("input", "{variant}"),
        ("train/test", "{train/test}"),
        ("d", "{d}"),
        ("outputs", "{n_outputs}"),
        ("p", "{p:,}"),
        ("memory (est.)", "{memory GB:.2g} GB"),
        ("read-out (est.)", "{read-out flops:.1e} flops"),
        ("accuracy; time", outcome),
        ("1-NN", lambda row: f"{row['1-NN']:.3f}" if "1-NN" in row else ""),
        ("SVC, same kernel", lambda row: f"{row['SVC']:.3f}" if "SVC" in row else ""),
    ]
    print(markdown_table(columns, rows))
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
