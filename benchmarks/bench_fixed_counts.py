"""What a fixed head count ``n_heads=k`` costs on real data, against ``n_heads=None``
and the default ``n_heads="auto"``, and what it reports.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_fixed_counts.py
[--set uschange|digits] [--counts K ...] [--json FILE]`` (``uschange`` needs aeon,
whose wheel bundles the data).

The data: aeon's ``Uschange`` (5 quarterly US series, 187 quarters), windows of 4
quarters of all 5 series (channels first) predicting the next quarter of all 5,
the first 75% of the windows for training (137 sequences; near interpolation:
``d = 10`` with positions, 550 lifted features; the CV estimator's ``alpha_`` is
the largest of its grid, 2.6e5, and every model predicts about the targets' means:
the fits' cost, not their predictions, is the point). The estimator a user would write,
``LinearAttentionRegressorCV(fit_intercept=True)`` behind ``SeriesToTokens()``,
``TokenwiseTransformer(StandardScaler())``, ``PositionalEncoding(constant=True,
padding=None)``, fitted with ``n_heads=None``, the default, and each ``n_heads=k``
of ``--counts`` (default 5, 10, 15), under ``threadpool_limits(1)``, after one
untimed fit that compiles the kernels. ``n_heads=None`` and the default are timed
as the median of 3 fits, each fixed count once (they take seconds).

Reported per fit: its time and ratio to ``n_heads=None``'s, ``head_search_.passes``,
and the returned count's ``failed_on``, ``folds_refitted`` (None: the folds were not
refitted) and ``cv_error``, and the test mean squared error over the 5 outputs. A
fixed count that generalized cross-validation fails near interpolation is failed
without its folds' refits, since their verdict tests the same error; a count that
passes it is refitted on all 5 folds, each fit with the same starts as the fit on
all the rows. The recorded runs: ``benchmarks/recorded/bench_fixed_counts.json``
and, before that rule, ``bench_fixed_counts_before_gcv.json``.

``--set digits``: the ``digits`` case of ``bench_default_cases.py``,
``LinearAttentionClassifier(token_dim=8)`` on sklearn's digits rows (the 1347-image
train split of ``train_test_split(random_state=0)``, scored by accuracy on the
rest), each count of ``--counts`` (default 1, 2, 4, 6, 8): where its default search
stops (its work limit) and which test fails each count, the misclassification
(``cv_error`` against ``threshold``) or the class scores' squared error
(``score_cv_error`` against ``score_threshold``).
"""

import warnings

import numpy as np
from _common import (
    compile_kernels,
    make_parser,
    markdown_table,
    median_seconds,
    write_json,
)
from bench_default_cases import digits_split, final
from bench_default_real_sets import channel_windows, make_model, test_score
from threadpoolctl import threadpool_limits

import sklearn_linattn
from sklearn_linattn import LinearAttentionClassifier

REPEATS = 3
COUNTS = {"uschange": [5, 10, 15], "digits": [1, 2, 4, 6, 8]}
WINDOW = 4


def uschange_all_outputs():
    """``(X_train, Y_train, X_test, Y_test)``: windows of the 5 series, the next
    quarter of all 5 the targets, the first 75% for training."""
    from aeon.datasets import load_uschange

    series = np.asarray(load_uschange(), dtype=float)  # (5, 187)
    return channel_windows(series, WINDOW, series.T)[1:]


def make_estimator(data_set, n_heads):
    if data_set == "digits":
        return LinearAttentionClassifier(token_dim=8, n_heads=n_heads)
    return make_model("regression", "channels", n_heads=n_heads)


def timed_fit(data_set, n_heads, X, Y, repeats):
    """The last of ``repeats`` fits of ``n_heads`` and their median time."""
    fitted = []

    def fit():
        model = make_estimator(data_set, n_heads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted.append(model.fit(X, Y))

    seconds = median_seconds(fit, repeats)
    return fitted[-1], seconds


def main():
    parser = make_parser(__doc__)
    parser.add_argument("--set", choices=sorted(COUNTS), default="uschange")
    parser.add_argument("--counts", type=int, nargs="+")
    args = parser.parse_args()
    counts = args.counts or COUNTS[args.set]
    print(f"sklearn_linattn from {sklearn_linattn.__file__}")
    if args.set == "digits":
        X, Y, X_test, Y_test = digits_split()
    else:
        X, Y, X_test, Y_test = uschange_all_outputs()
    compile_kernels()
    rows = []
    with threadpool_limits(1):
        timed_fit(args.set, None, X, Y, 1)  # untimed: compiles what the fits call
        for n_heads in [None, "auto", *counts]:
            repeats = REPEATS if n_heads in (None, "auto") else 1
            model, seconds = timed_fit(args.set, n_heads, X, Y, repeats)
            search = final(model).head_search_
            returned = [c for c in search.counts if c.n_heads == search.n_heads]
            count = returned[-1] if returned else None
            rows.append(
                {
                    "n_heads": str(n_heads),
                    "heads": int(final(model).n_heads_),
                    "seconds": seconds,
                    "ratio": seconds / rows[0]["seconds"] if rows else 1.0,
                    "criterion": search.criterion,
                    "complete": search.complete,
                    "passes": search.passes,
                    "failed_on": count.failed_on if count else None,
                    "folds_refitted": count.folds_refitted if count else None,
                    "folds_within": count.folds_within if count else None,
                    "cv_error": count.cv_error if count else float("nan"),
                    "threshold": count.threshold if count else float("nan"),
                    "score_cv_error": count.score_cv_error if count else float("nan"),
                    "score_threshold": (
                        float(count.score_threshold) if count else float("nan")
                    ),
                    "test_score": (
                        float(model.score(X_test, Y_test))
                        if args.set == "digits"
                        else test_score("regression", model, X_test, Y_test)
                    ),
                }
            )
    print(
        markdown_table(
            [
                ("n_heads", "{n_heads}"),
                ("heads", "{heads}"),
                ("fit", "{seconds:.2f} s"),
                ("/ None", "{ratio:.1f}"),
                ("criterion", "{criterion}"),
                ("complete", "{complete}"),
                ("passes", "{passes}"),
                ("failed on", "{failed_on}"),
                ("folds refitted", "{folds_refitted}"),
                ("folds within", "{folds_within}"),
                ("cv error / threshold", "{cv_error:.4g} / {threshold:.4g}"),
                ("score cv error / threshold", (
                    "{score_cv_error:.4g} / {score_threshold:.4g}"
                )),
                ("test " + ("accuracy" if args.set == "digits" else "MSE"),
                 "{test_score:.4g}"),
            ],
            rows,
        )
    )
    write_json(args.json, {"set": args.set, "rows": rows})


if __name__ == "__main__":
    main()
