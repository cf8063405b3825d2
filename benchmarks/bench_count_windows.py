"""Lag windows of a count series: zeros read as padding, against zeros as values.

Run: ``python benchmarks/bench_count_windows.py [--json FILE]`` (needs aeon with
its ``load_PBS_dataset``, deprecated in aeon 1.6; one BLAS thread is set by the
script; about 15 s).

aeon's PBS series (204 monthly counts, small integers with runs of zeros) as
one-step-ahead forecasting from 8, 12 and 16 lags, split as the lag sets of
``bench_real_sequences.py`` (the first 70% of the windows for training, scaled by
the training values' standard deviation): ``SeriesToTokens(window=2)``,
``PositionalEncoding(constant=True, padding=...)`` and the plain or the CV
regressor with an intercept, default ``n_heads`` against ``n_heads=None``. With
``padding="left"`` (the default) a window whose first values are 0 loses their
tokens' position and constant features, and a window of zeros is read as an
empty sequence, predicted as the intercept alone; ``padding=None`` reads every
token as a value. Each row: the windows of zeros in the test set, and for the
default and ``n_heads=None`` the heads, the criterion and the test mean squared
error.
"""

import warnings

import numpy as np
from _common import make_parser, markdown_table, write_json
from bench_real_sequences import _first_share, lag_default_against_lifted, lag_set
from threadpoolctl import threadpool_limits

from sklearn_linattn import LinearAttentionRegressor, LinearAttentionRegressorCV

LAGS = (8, 12, 16)
ESTIMATORS = {"plain": LinearAttentionRegressor, "CV": LinearAttentionRegressorCV}


def pbs_values():
    from aeon.datasets import load_PBS_dataset

    with warnings.catch_warnings():  # deprecated in aeon 1.6
        warnings.simplefilter("ignore", FutureWarning)
        return np.asarray(load_PBS_dataset(), dtype=float)


def run():
    values = pbs_values()
    rows = []
    for lags in LAGS:
        ds = lag_set("PBS", values, lags, _first_share(len(values), lags), "")
        zero_windows = int(np.sum(~np.any(ds.series_test != 0, axis=(1, 2))))
        for name, Estimator in ESTIMATORS.items():
            for padding in ("left", None):
                row = dict(
                    lags=lags, estimator=name, padding=str(padding),
                    zero_windows=zero_windows,
                    **lag_default_against_lifted(ds, Estimator, padding=padding),
                )
                rows.append(row)
                print(row, flush=True)
    return rows


COLUMNS = [
    ("lags", "{lags}"),
    ("estimator", "{estimator}"),
    ("padding", "{padding}"),
    ("test windows of zeros", "{zero_windows}"),
    ("default: heads, criterion", "{heads} {criterion}"),
    ("default test MSE", "{mse:.4g}"),
    ("`n_heads=None`: heads", "{none_heads}"),
    ("`n_heads=None` test MSE", "{none_mse:.4g}"),
    ("ratio", "{ratio:.3g}"),
]


def main():
    args = make_parser(__doc__).parse_args()
    with threadpool_limits(1):
        rows = run()
    print(markdown_table(COLUMNS, rows))
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
