"""Forecasts of trending series beyond their training range: levels against changes.

Run: ``python benchmarks/bench_trending_series.py [--json FILE]`` (needs statsmodels,
and aeon for the airline series; one BLAS thread is set by the script; a few
minutes).

The default head search judges counts on 5 interleaved folds of the training
sequences. Windows of a trending series forecast past the end of their training
period lie beyond every training window's range, which no interleaved fold tests:
counts that tie the lifted fit inside the range can extrapolate differently.
Series: statsmodels' macrodata (quarterly real GDP, consumption, investment and the
CPI), monthly CO2 (weekly means averaged, gaps interpolated) and aeon's airline
passengers, each as one-step-ahead forecasting from 12 lags (the first 70% of the
windows for training, scaled by the training values' standard deviation, as the lag
sets of ``bench_real_sequences.py``), in levels and in first differences (the
next change from the last 12 changes). Tokens of 1 or 2 values
(``SeriesToTokens(window=...)``), ``PositionalEncoding(constant=True,
padding=None)``, the plain or the CV regressor with an intercept: the default
against ``n_heads=None``, test mean squared error, heads and criterion.
"""


import numpy as np
from _common import make_parser, markdown_table, write_json
from bench_real_sequences import _first_share, lag_default_against_lifted, lag_set
from threadpoolctl import threadpool_limits

from sklearn_linattn import LinearAttentionRegressor, LinearAttentionRegressorCV

LAGS = 12
WINDOWS = (1, 2)
ESTIMATORS = {"plain": LinearAttentionRegressor, "CV": LinearAttentionRegressorCV}
CLEARLY_WORSE = 1.3  # test error ratio counted as clearly worse


def series():
    """``{name: values}`` of the series that load."""
    import statsmodels.api as sm

    macro = sm.datasets.macrodata.load_pandas().data
    found = {name: macro[name].to_numpy(float) for name in
             ("realgdp", "realcons", "realinv", "cpi")}
    weekly = sm.datasets.co2.load_pandas().data["co2"]
    found["co2"] = weekly.resample("MS").mean().interpolate().to_numpy()
    try:
        from aeon.datasets import load_airline

        found["airline"] = np.asarray(load_airline(), dtype=float)
    except ImportError:
        print("aeon is not installed: the airline series is skipped")
    return found


def run():
    rows = []
    for name, values in series().items():
        for form, data in (("levels", values), ("changes", np.diff(values))):
            ds = lag_set(name, data, LAGS, _first_share(len(data), LAGS), "")
            for window in WINDOWS:
                for label, Estimator in ESTIMATORS.items():
                    row = dict(
                        series=name, form=form, window=window, estimator=label,
                        **lag_default_against_lifted(ds, Estimator, window=window),
                    )
                    rows.append(row)
                    print(row, flush=True)
    return rows


COLUMNS = [
    ("series", "{series}"),
    ("form", "{form}"),
    ("window", "{window}"),
    ("estimator", "{estimator}"),
    ("default: heads, criterion", "{heads} {criterion}"),
    ("`n_heads=None`: heads", "{none_heads}"),
    ("test MSE ratio", "{ratio:.3g}"),
]


def summary(rows):
    lines = []
    for form in ("levels", "changes"):
        ratios = [row["ratio"] for row in rows if row["form"] == form]
        worse = sum(ratio > CLEARLY_WORSE for ratio in ratios)
        lines.append(
            f"{form}: the default's test error above {CLEARLY_WORSE} times "
            f"n_heads=None's in {worse} of {len(ratios)} fits (largest "
            f"{max(ratios):.3g}, median {np.median(ratios):.3g})"
        )
    return "\n".join(lines)


def main():
    args = make_parser(__doc__).parse_args()
    with threadpool_limits(1):
        rows = run()
    print(markdown_table(COLUMNS, rows))
    print(summary(rows))
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
