"""Next-value forecasts from overlapping windows of one stationary series: the
default against ``n_heads=None`` on a later stretch of the series and on
shuffled splits.

Run: ``python benchmarks/bench_window_forecasts.py [--json FILE]`` (needs aeon,
whose wheel bundles the series; one BLAS thread is set by the script; about 2
minutes). Run it on another checkout (``PYTHONPATH=/other/checkout``) for a
before/after table.

The series: aeon's ``load_ecg_diff_count_3`` (an ECG recording, 8000 values and
more), five stretches of 4000 values (helper-130's configurations, issue 31):
windows of ``L`` values every ``step`` values, the next value the target, read as
tokens of ``w`` values (``SeriesToTokens(window=w)``), then
``TokenwiseTransformer(StandardScaler())``, ``PositionalEncoding(constant=True,
padding=None)`` and ``LinearAttentionRegressorCV(fit_intercept=True)``.
Neighbouring windows share ``L - step`` values. Splits: ``time`` (the first 70%
of the windows for training, the rest for testing) and two shuffled 70/30 splits
(``train_test_split``, seeds 0 and 1). Reported: the test mean squared error of
the default over ``n_heads=None``'s, the default's heads and criterion, whether
its search finished, and how many fits are above 1.3 times.
"""

import warnings

import numpy as np
from _common import make_parser, markdown_table, write_json
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_linattn import LinearAttentionRegressorCV
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
)

# (first value, window length L, step, values per token w)
STRETCHES = [(0, 24, 4, 3), (4000, 24, 4, 3), (0, 24, 6, 3), (0, 16, 4, 2),
             (6000, 24, 4, 3)]
CLEARLY_WORSE = 1.3


def windows(values, length, step):
    """``(X, y)``: windows of ``length`` values every ``step`` (one channel), and
    the value after each."""
    starts = np.arange(0, len(values) - length, step)
    X = np.stack([values[i:i + length][None] for i in starts])
    return X, values[starts + length]


def pipeline(n_heads, token_values):
    return make_pipeline(
        SeriesToTokens(window=token_values),
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(constant=True, padding=None),
        LinearAttentionRegressorCV(fit_intercept=True, n_heads=n_heads),
    )


def run():
    from aeon.datasets import load_ecg_diff_count_3

    series = np.asarray(load_ecg_diff_count_3()[0], dtype=float)
    rows = []
    for first, length, step, token_values in STRETCHES:
        X, y = windows(series[first:first + 4000], length, step)
        n_train = int(0.7 * len(X))
        splits = {"time": (X[:n_train], X[n_train:], y[:n_train], y[n_train:])}
        for seed in (0, 1):
            splits[f"shuffled {seed}"] = train_test_split(
                X, y, test_size=0.3, random_state=seed
            )
        for split, (X_train, X_test, y_train, y_test) in splits.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the cut-short warning: in the row
                default, lifted = (
                    pipeline(n_heads, token_values).fit(X_train, y_train)
                    for n_heads in ("auto", None)
                )
            errors = [np.mean((model.predict(X_test) - y_test) ** 2)
                      for model in (default, lifted)]
            search = default[-1].head_search_
            row = dict(first=first, length=length, step=step, w=token_values,
                       split=split, heads=int(default[-1].n_heads_),
                       criterion=search.criterion, complete=bool(search.complete),
                       none_heads=int(lifted[-1].n_heads_),
                       ratio=float(errors[0] / errors[1]))
            rows.append(row)
            print(row, flush=True)
    return rows


COLUMNS = [
    ("stretch (first, L, step, w)", "{first}, {length}, {step}, {w}"),
    ("split", "{split}"),
    ("default: heads, criterion", "{heads} {criterion}"),
    ("search finished", "{complete}"),
    ("`n_heads=None`: heads", "{none_heads}"),
    ("test MSE ratio", "{ratio:.3g}"),
]


def main():
    parser = make_parser(__doc__)
    args = parser.parse_args()
    with threadpool_limits(1):
        rows = run()
    print(markdown_table(COLUMNS, rows))
    for split in ("time", "shuffled"):
        picked = [row for row in rows if row["split"].startswith(split)]
        ratios = [row["ratio"] for row in picked]
        worse = sum(ratio > CLEARLY_WORSE for ratio in ratios)
        cut_short = sum(not row["complete"] for row in picked)
        print(f"{split}: the default's test error above {CLEARLY_WORSE} times "
              f"n_heads=None's in {worse} of {len(ratios)} fits (largest "
              f"{max(ratios):.3g}); searches cut short: {cut_short}")
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
