"""Every real data set that loads offline: our recipes against the time-series
toolkits' standards, on the sets' own splits (issues 27 and 33).

Run: ``python benchmarks/bench_real_sequences.py [--json FILE] [--sets NAME ...]``
(needs aeon and statsmodels beside the package: ``pip install . aeon statsmodels``;
nothing is downloaded, and a set whose package is missing is skipped). The
documentation's table and figure ("Real data") are drawn from the recorded run,
``--json benchmarks/recorded/bench_real_sequences.json``; ``--print [FILE]``
re-prints the tables of a recorded run (that one by default) without fitting.

The data sets, each with its own train/test split:

- aeon's bundled classification sets, official splits: BasicMotions,
  JapaneseVowels (different lengths), GunPoint, ArrowHead, ItalyPowerDemand,
  OSULeaf, PickupGestureWiimoteZ (different lengths); aeon's bundled regression
  sets Covid3Month and CardanoSentiment;
- scikit-learn's digits, each image 8 rows of 8 pixels (no official split: a
  stratified ``train_test_split``, a quarter held out, ``random_state=0``);
- statsmodels' series as one-step-ahead forecasting: yearly sunspots (16 lags,
  trained to 1920: the gallery example's set-up), the monthly El Nino sea surface
  temperatures and monthly Mauna Loa CO2 (weekly values averaged, gaps
  interpolated; 12 lags, the first 70% of the windows for training, as 1920 is
  for the sunspots), and the US macro series of the forecasting example (4
  quarters of 4 changes, next quarter's 3 changes, the first 75% for training).

Our models, each the documentation's recipe for its kind of data (the functions
``default``, ``documented``, ``one_token`` below):

- "default": the documented preprocessing and the CV estimator with every
  parameter at its default (``LinearAttentionClassifierCV()``,
  ``LinearAttentionRegressorCV()``): what a first try gives;
- "documented": the documented recipe as the pages write it: for aeon's sets
  ``SeriesToTokens`` (a token per time step, 8 values per token of a univariate
  series), ``TokenwiseTransformer(StandardScaler())``,
  ``PositionalEncoding(constant=True)`` and the CV estimator over
  ``np.logspace(-2, 8, 21)`` with ``n_heads=None``; for the digits
  four sinusoidal positions and ``alpha=1``; for the lags tokens of two values,
  positions and a constant with ``padding=None`` (the sunspots example: windows of
  one length, whose zeros are values); for the macro series quantile
  tokens, positions chosen by ``GridSearchCV`` with ``TimeSeriesSplit`` (the
  forecasting example). Regressors fit an intercept (``fit_intercept=True``);
- "one token": the whole series (all channels) flattened into one token, so that
  the model is a cubic polynomial kernel machine solved in dual form, with the CV
  estimator (``n_heads=None``); skipped where its cost, predicted from the sizes,
  is beyond ``WORK_LIMIT`` flops or ``MEMORY_LIMIT`` bytes (the package's own
  estimate, ``sklearn_linattn._data.fit_cost``, as the real-data page's one-token
  table: the kernel, ``p = d^2 (d + 1) / 2`` coefficients per output and the
  read-out's SVDs of a ``(n_outputs d) x d^2`` matrix for ``d`` the flattened
  length; plus the kernel's formation and factorization);
- diagnostics in the JSON (and the second printed table): "documented" with
  ``fit_intercept=False`` (the regressors' default) and "default" with
  ``n_heads=None`` (the paper's read-out instead of the head search).

Against, on the same series (ragged sets left-padded with zeros): aeon's
``MiniRocketClassifier`` / ``MiniRocketRegressor`` and ``RocketClassifier`` /
``RocketRegressor`` (``random_state=0``; series shorter than 9 time points padded
with zeros to 9, as MiniRocket's error message asks), 1-nearest-neighbour DTW
(``KNeighborsTimeSeriesClassifier()`` / ``KNeighborsTimeSeriesRegressor()``,
their defaults), and ridge on the flattened, standardized series
(``RidgeClassifierCV`` / ``RidgeCV`` over ``np.logspace(-3, 3, 13)``). aeon's
regressors take one target: one per target on the macro series.

Test accuracy or R^2 (averaged over targets), and the time of fit and predict
(recorded apart; 1-NN does its work in predict). Every model is fitted once on a
few training rows first (not timed), so the times are of warm Numba caches; BLAS
runs on one thread (a shared 2-core machine).
"""

import json
import os
import platform
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from _common import make_parser, markdown_table, write_json
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.linear_model import RidgeClassifierCV, RidgeCV
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import GridSearchCV, TimeSeriesSplit, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    QuantileTransformer,
    StandardScaler,
)

import sklearn_linattn
from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
)
from sklearn_linattn._data import fit_cost
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
)

RECORDED = Path(__file__).resolve().parent / "recorded" / "bench_real_sequences.json"
SERIES_ALPHAS = np.logspace(-2, 8, 21)  # the real-data page's grid
LAG_ALPHAS = np.logspace(-4, 6, 21)  # the sunspots example's grid
RIDGE_ALPHAS = np.logspace(-3, 3, 13)
# Fits whose cost, predicted from the sizes, is beyond these are skipped.
WORK_LIMIT = 1e12  # flops: about a minute at the read-out's 15 GFlop/s
MEMORY_LIMIT = 2**31  # bytes
MINIROCKET_MIN_LENGTH = 9

MODELS = {  # key: (label, what it is)
    "default": ("ours, default", "documented preprocessing, CV estimator's defaults"),
    "documented": ("ours, documented", "the documentation's recipe"),
    "one_token": ("ours, one token", "whole series as one token (cubic kernel)"),
    "minirocket": ("MiniRocket", "aeon, random_state=0"),
    "rocket": ("Rocket", "aeon, random_state=0"),
    "dtw": ("1-NN DTW", "aeon's KNeighborsTimeSeries*, defaults"),
    "ridge": ("ridge", "flattened, standardized, RidgeCV / RidgeClassifierCV"),
    "documented_no_intercept": (
        "documented, fit_intercept=False",
        "the documented recipe without an intercept (the default)",
    ),
    "default_paper_heads": (
        "default, n_heads=None",
        "the default recipe with the paper's read-out",
    ),
}
MAIN_MODELS = [
    "default", "documented", "one_token", "minirocket", "rocket", "dtw", "ridge",
]
DIAGNOSTIC_MODELS = [
    "default", "default_paper_heads", "documented_no_intercept", "documented",
]
TASKS = {  # task: (metric, what is predicted)
    "classification": ("accuracy", "the class of a series"),
    "regression": ("R^2", "a number per series"),
    "forecasting": ("R^2", "the next value(s) of a series, one step ahead"),
}


@dataclass
class DataSet:
    """One data set: our recipes' input (``X_train`` ...) and the toolkits' (the
    same series as ``(n_cases, n_channels, n_timepoints)`` arrays)."""

    name: str
    source: str
    task: str
    family: str  # which documented recipe: "series", "digits", "lags", "macro"
    X_train: object
    y_train: np.ndarray
    X_test: object
    y_test: np.ndarray
    series_train: np.ndarray
    series_test: np.ndarray
    split: str
    lengths: str = ""
    notes: list = field(default_factory=list)

    @property
    def n_outputs(self):
        if self.task == "classification":
            n_classes = len(np.unique(self.y_train))
            return 1 if n_classes == 2 else n_classes
        return 1 if np.ndim(self.y_train) == 1 else np.shape(self.y_train)[1]

    def describe(self):
        n_channels, length = self.series_train.shape[1:]
        return {
            "name": self.name,
            "source": self.source,
            "task": self.task,
            "n_train": len(self.y_train),
            "n_test": len(self.y_test),
            "n_channels": int(n_channels),
            "length": self.lengths or str(length),
            "n_outputs": self.n_outputs,
            "split": self.split,
            "notes": self.notes,
        }


# --- data sets ----------------------------------------------------------------------


def _left_padded(series, length):
    """Series (an array or a ragged list of ``(n_channels, n_i)``) as one array
    ``(n_cases, n_channels, length)``, left-padded with zeros."""
    tokens = SeriesToTokens(max_len=length).fit_transform(series)
    return tokens.transpose(0, 2, 1)


def aeon_set(name, task):
    from aeon.datasets import load_classification, load_regression

    load = load_classification if task == "classification" else load_regression
    X_train, y_train = load(name, split="train")
    X_test, y_test = load(name, split="test")
    lengths = [x.shape[-1] for x in list(X_train) + list(X_test)]
    length = max(lengths)
    ragged = min(lengths) != length
    return DataSet(
        name, "aeon", task, "series", X_train, np.asarray(y_train), X_test,
        np.asarray(y_test), _left_padded(X_train, length),
        _left_padded(X_test, length), "official train/test split",
        lengths=f"{min(lengths)}-{length}" if ragged else "",
        notes=["different lengths, left-padded with zeros"] if ragged else [],
    )


def digits_set():
    from sklearn.datasets import load_digits

    pixels, labels = load_digits(return_X_y=True)
    rows = pixels.reshape(-1, 8, 8) / 16.0  # 8 tokens (rows) of 8 pixels
    X_train, X_test, y_train, y_test = train_test_split(
        rows, labels, test_size=0.25, random_state=0, stratify=labels
    )
    return DataSet(
        "digits", "scikit-learn", "classification", "digits", X_train, y_train,
        X_test, y_test, X_train.transpose(0, 2, 1), X_test.transpose(0, 2, 1),
        "train_test_split(test_size=0.25, stratify, random_state=0)",
        notes=["rows as time steps, pixel columns as channels for the toolkits"],
    )


def lag_set(name, values, lags, n_train, split, source="statsmodels"):
    """One-step-ahead forecasting from ``lags`` past values, scaled by the
    training values' standard deviation (the sunspots example's set-up)."""
    windows = np.stack([values[t - lags : t] for t in range(lags, len(values))])
    target = values[lags:]
    scale = values[: lags + n_train].std()
    windows, target = windows / scale, target / scale
    train, test = slice(0, n_train), slice(n_train, None)
    return DataSet(
        name, source, "forecasting", "lags", windows[train], target[train],
        windows[test], target[test], windows[train, None, :],
        windows[test, None, :], split,
    )


def lag_default_against_lifted(ds, Estimator, window=2, padding=None):
    """A lag set's forecasts by the lag recipe (``SeriesToTokens(window)``,
    ``PositionalEncoding(constant=True, padding)``, ``Estimator`` with an
    intercept), the default ``n_heads`` against ``n_heads=None``: the heads,
    criterion and test mean squared error of the default, the heads and error of
    ``n_heads=None``, and the ratio of the errors (warnings silenced)."""

    def forecast(n_heads):
        model = make_pipeline(
            SeriesToTokens(window=window),
            PositionalEncoding(constant=True, padding=padding),
            Estimator(n_heads=n_heads, fit_intercept=True),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(ds.series_train, ds.y_train)
            error = np.mean((model.predict(ds.series_test) - ds.y_test) ** 2)
        return model[-1], float(error)

    default, error = forecast("auto")
    lifted, lifted_error = forecast(None)
    return dict(
        heads=int(default.n_heads_), criterion=default.head_search_.criterion,
        mse=error, none_heads=int(lifted.n_heads_), none_mse=lifted_error,
        ratio=error / lifted_error,
    )


def sunspots_set():
    import statsmodels.api as sm

    data = sm.datasets.sunspots.load_pandas().data
    years = data["YEAR"].to_numpy().astype(int)
    lags = 16
    n_train = int(np.sum(years[lags:] <= 1920))
    return lag_set(
        "sunspots", data["SUNACTIVITY"].to_numpy(), lags, n_train,
        "yearly; 16 lags; trained on the years to 1920",
    )


def _first_share(n_values, lags, share=0.7):
    return int(share * (n_values - lags))


def elnino_set():
    import statsmodels.api as sm

    data = sm.datasets.elnino.load_pandas().data
    values = data.drop(columns="YEAR").to_numpy().ravel()  # monthly, 1950-2010
    return lag_set(
        "elnino", values, 12, _first_share(len(values), 12),
        "monthly; 12 lags; the first 70% of the windows for training",
    )


def co2_set():
    import statsmodels.api as sm

    weekly = sm.datasets.co2.load_pandas().data["co2"]
    values = weekly.resample("MS").mean().interpolate().to_numpy()
    return lag_set(
        "co2", values, 12, _first_share(len(values), 12),
        "weekly values averaged by month, gaps interpolated; 12 lags; the first "
        "70% of the windows for training",
    )


def pbs_set():
    """aeon's PBS: monthly counts of a pharmaceutical benefit (small integers,
    runs of zeros), the count series of aeon's forecasting data."""
    import warnings

    from aeon.datasets import load_PBS_dataset

    with warnings.catch_warnings():  # deprecated in aeon 1.6, removed in 1.7
        warnings.simplefilter("ignore", FutureWarning)
        values = np.asarray(load_PBS_dataset(), dtype=float)
    return lag_set(
        "PBS", values, 12, _first_share(len(values), 12),
        "monthly counts; 12 lags; the first 70% of the windows for training",
        source="aeon",
    )


def macrodata_set():
    import statsmodels.api as sm

    data = sm.datasets.macrodata.load_pandas().data
    levels = data[["unemp", "infl", "tbilrate"]].to_numpy()
    gdp_growth = 100 * np.diff(np.log(data["realgdp"].to_numpy()))
    series = np.column_stack([np.diff(levels, axis=0), gdp_growth])  # (202, 4)
    window = 4
    X = np.stack([series[t - window : t] for t in range(window, len(series))])
    Y = series[window:, :3]  # next quarter's changes
    n_train = int(0.75 * len(X))
    train, test = slice(0, n_train), slice(n_train, None)
    return DataSet(
        "macrodata", "statsmodels", "forecasting", "macro", X[train], Y[train],
        X[test], Y[test], X[train].transpose(0, 2, 1), X[test].transpose(0, 2, 1),
        "quarterly; 4 quarters of 4 changes, next quarter's 3; the first 75% for "
        "training",
    )


DATA_SETS = {
    "BasicMotions": lambda: aeon_set("BasicMotions", "classification"),
    "JapaneseVowels": lambda: aeon_set("JapaneseVowels", "classification"),
    "GunPoint": lambda: aeon_set("GunPoint", "classification"),
    "ArrowHead": lambda: aeon_set("ArrowHead", "classification"),
    "ItalyPowerDemand": lambda: aeon_set("ItalyPowerDemand", "classification"),
    "OSULeaf": lambda: aeon_set("OSULeaf", "classification"),
    "PickupGestureWiimoteZ": lambda: aeon_set(
        "PickupGestureWiimoteZ", "classification"
    ),
    "digits": digits_set,
    "Covid3Month": lambda: aeon_set("Covid3Month", "regression"),
    "CardanoSentiment": lambda: aeon_set("CardanoSentiment", "regression"),
    "sunspots": sunspots_set,
    "PBS": pbs_set,
    "elnino": elnino_set,
    "co2": co2_set,
    "macrodata": macrodata_set,
}


# --- our recipes ---------------------------------------------------------------------


def preprocessing(ds):
    """The documented preprocessing of the data set's kind (a list of steps)."""
    if ds.family == "series":
        window = 8 if ds.series_train.shape[1] == 1 else 1
        return [
            SeriesToTokens(window=window),
            TokenwiseTransformer(StandardScaler()),
            PositionalEncoding(constant=True),
        ]
    if ds.family == "digits":
        return [PositionalEncoding(kind="sinusoidal", n_positions=4, padding=None)]
    if ds.family == "lags":
        # windows of one length: a zero token is a value, not padding
        return [
            SeriesToTokens(window=2), PositionalEncoding(constant=True, padding=None)
        ]
    quantiles = QuantileTransformer(n_quantiles=100, output_distribution="uniform")
    return [TokenwiseTransformer(quantiles), PositionalEncoding(constant=True)]


def _cv_estimator(ds, **params):
    if ds.task == "classification":
        return LinearAttentionClassifierCV(**params)
    return LinearAttentionRegressorCV(**params)


def default(ds, **params):
    return make_pipeline(*preprocessing(ds), _cv_estimator(ds, **params))


def documented(ds, fit_intercept=True):
    intercept = {} if ds.task == "classification" else {"fit_intercept": fit_intercept}
    if ds.family == "digits":
        estimator = LinearAttentionClassifier(n_heads=None, alpha=1.0)
    elif ds.family == "macro":
        pipeline = make_pipeline(
            *preprocessing(ds), LinearAttentionRegressor(n_heads=None, **intercept)
        )
        return GridSearchCV(
            pipeline,
            {
                "positionalencoding__n_positions": [0, None],
                "linearattentionregressor__alpha": [1.0, 10.0, 100.0],
            },
            cv=TimeSeriesSplit(n_splits=4),
        )
    else:
        alphas = LAG_ALPHAS if ds.family == "lags" else SERIES_ALPHAS
        estimator = _cv_estimator(ds, alphas=alphas, n_heads=None, **intercept)
    return make_pipeline(*preprocessing(ds), estimator)


def _as_one_token(series):
    series = np.asarray(series)
    return series.reshape(len(series), 1, -1)


def one_token(ds):
    intercept = {} if ds.task == "classification" else {"fit_intercept": True}
    return make_pipeline(
        FunctionTransformer(_as_one_token), _cv_estimator(ds, n_heads=None, **intercept)
    )


def one_token_cost(ds):
    """Predicted work (flops) and memory (bytes) of the one-token recipe: the
    package's estimate of the fit (``fit_cost``, the dual solver's), and the
    kernel's formation and factorization."""
    n_channels, length = ds.series_train.shape[1:]
    d, n = n_channels * length, len(ds.y_train)
    cost = fit_cost(n, d, ds.n_outputs, "dual")
    kernel = n * n * d * d / 2 + n**3
    return cost.readout_flops + kernel, cost.memory


# --- the toolkits ---------------------------------------------------------------------


class PerOutput(RegressorMixin, BaseEstimator):
    """One clone of a single-target regressor per column of ``y``."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y):
        y = np.asarray(y)
        columns = y.reshape(len(y), -1).T
        self.estimators_ = [clone(self.estimator).fit(X, c) for c in columns]
        self.single_ = y.ndim == 1
        return self

    def predict(self, X):
        predictions = np.column_stack([e.predict(X) for e in self.estimators_])
        return predictions[:, 0] if self.single_ else predictions


def _flat(series):
    series = np.asarray(series)
    return series.reshape(len(series), -1)


def _at_least(series, length):
    short = length - series.shape[2]
    return np.pad(series, ((0, 0), (0, 0), (0, short))) if short > 0 else series


def toolkit(key, ds):
    """The toolkit model ``key`` for the data set: (estimator, input transform)."""
    classify = ds.task == "classification"
    if key == "ridge":
        ridge = RidgeClassifierCV if classify else RidgeCV
        return make_pipeline(StandardScaler(), ridge(alphas=RIDGE_ALPHAS)), _flat
    if key == "dtw":
        from aeon.classification.distance_based import KNeighborsTimeSeriesClassifier
        from aeon.regression.distance_based import KNeighborsTimeSeriesRegressor

        model = KNeighborsTimeSeriesClassifier() if classify else PerOutput(
            KNeighborsTimeSeriesRegressor()
        )
        return model, None
    from aeon.classification.convolution_based import (
        MiniRocketClassifier,
        RocketClassifier,
    )
    from aeon.regression.convolution_based import MiniRocketRegressor, RocketRegressor

    if key == "minirocket":
        model = MiniRocketClassifier if classify else MiniRocketRegressor
        model = model(random_state=0)
        return (model if classify else PerOutput(model)), (
            lambda series: _at_least(series, MINIROCKET_MIN_LENGTH)
        )
    model = RocketClassifier if classify else RocketRegressor
    model = model(random_state=0)
    return (model if classify else PerOutput(model)), None


# --- running -------------------------------------------------------------------------


def applies(key, task):
    """Whether model ``key`` is part of the comparison on a data set of ``task``
    (the intercept is the regressors')."""
    return key != "documented_no_intercept" or task != "classification"


def skip_reason(key, ds):
    """Why the model is not fitted on ``ds`` (predicted from the sizes), or None."""
    if key == "one_token":
        work, memory = one_token_cost(ds)
        if work > WORK_LIMIT or memory > MEMORY_LIMIT:
            d = int(np.prod(ds.series_train.shape[1:]))
            return (
                f"one token of d = {d}: about {work:.0e} flops and "
                f"{memory / 2**30:.1f} GiB predicted"
            )
    if key == "dtw":
        n_channels, length = ds.series_train.shape[1:]
        work = len(ds.y_train) * len(ds.y_test) * length**2 * n_channels
        if work > WORK_LIMIT:
            return f"about {work:.0e} flops predicted"
    return None


def build(key, ds):
    """(estimator, input transform or None, whether it takes our recipes' input
    rather than the toolkits' series) for model ``key``."""
    if key == "default":
        return default(ds), None, True
    if key == "default_paper_heads":
        return default(ds, n_heads=None), None, True
    if key == "documented":
        return documented(ds), None, True
    if key == "documented_no_intercept":
        return documented(ds, fit_intercept=False), None, True
    if key == "one_token":
        return one_token(ds), None, False
    return (*toolkit(key, ds), False)


def _final_step(estimator):
    if isinstance(estimator, GridSearchCV):
        estimator = estimator.best_estimator_
    return estimator[-1] if hasattr(estimator, "steps") else estimator


def _describe_ours(estimator):
    """What our fitted model chose (empty for the toolkits' models)."""
    last = _final_step(estimator)
    if not hasattr(last, "certificate_"):
        return {}
    alpha = getattr(last, "alpha_", None)
    described = {
        "alpha": float(last.alpha if alpha is None else alpha),
        "token_dim": int(last.token_dim_),
        "n_heads": int(last.n_heads_),
        "solver": last.solver_,
        "fit_intercept": bool(last.fit_intercept),
    }
    search = getattr(last, "head_search_", None)
    if search is not None and hasattr(search, "criterion"):
        described["head_criterion"] = str(search.criterion)
    return described


def _first_sentence(message):
    text = str(message)
    return text.split(". ")[0][:160]


def fit_and_score(key, ds, train=None):
    """Fit model ``key`` on the training set (or the rows ``train`` of it, for the
    warm-up) and score it on the test set."""
    estimator, transform, ours = build(key, ds)
    X_train, X_test = (
        (ds.X_train, ds.X_test) if ours else (ds.series_train, ds.series_test)
    )
    y_train = ds.y_train
    if train is not None:
        X_train = [X_train[i] for i in train] if isinstance(X_train, list) else (
            X_train[train]
        )
        y_train = y_train[train]
    if transform is not None:
        X_train, X_test = transform(X_train), transform(X_test)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        estimator.fit(X_train, y_train)
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        predictions = estimator.predict(X_test)
        predict_seconds = time.perf_counter() - start
    if ds.task == "classification":
        score = accuracy_score(ds.y_test, predictions)
    else:
        score = r2_score(ds.y_test, predictions)
    messages = sorted(
        {f"{w.category.__name__}: {_first_sentence(w.message)}" for w in caught}
    )
    return {
        "score": float(score),
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
        "warnings": messages,
        **_describe_ours(estimator),
    }


def _few_rows(ds):
    """A few training rows: six of every class, or every fourth of the first 96."""
    if ds.task != "classification":
        return np.arange(0, min(96, len(ds.y_train)), 4)
    return np.sort(
        np.concatenate(
            [np.flatnonzero(ds.y_train == c)[:6] for c in np.unique(ds.y_train)]
        )
    )


def warm_up(data_sets, keys):
    """Fit every model once on a few training rows of the first set of each task
    it runs on, so that Numba's compilation (of both packages) is not timed."""
    for key in keys:
        seen = set()
        for ds in data_sets:
            if ds.task in seen or not applies(key, ds.task) or skip_reason(key, ds):
                continue
            seen.add(ds.task)
            try:
                fit_and_score(key, ds, train=_few_rows(ds))
            except Exception:  # noqa: BLE001 - only compiling here
                pass


def run(names, keys):
    data_sets, missing = [], {}
    for name in names:
        try:
            data_sets.append(DATA_SETS[name]())
        except ImportError as error:
            missing[name] = f"not loaded: {error}"
            print(f"{name}: skipped ({missing[name]})")
    warm_up(data_sets, keys)
    results = []
    for ds in data_sets:
        row = {**ds.describe(), "results": {}}
        for key in keys:
            if not applies(key, ds.task):
                continue
            reason = skip_reason(key, ds)
            if reason is not None:
                row["results"][key] = {"skipped": reason}
            else:
                row["results"][key] = fit_and_score(key, ds)
            print(f"{ds.name:22s} {key:24s} {_cell(row['results'][key])}", flush=True)
        results.append(row)
    return results, missing


def environment():
    import numba
    import numpy
    import sklearn

    versions = {
        "sklearn_linattn": sklearn_linattn.__version__,
        "numpy": numpy.__version__,
        "scikit-learn": sklearn.__version__,
        "numba": numba.__version__,
    }
    for name in ("aeon", "statsmodels"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=Path(__file__).resolve().parent, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "versions": versions,
        "commit": commit,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "blas_threads": 1,
    }


# --- tables (also drawn by the documentation build from the recorded JSON) -----------


def _cell(result):
    if result is None:
        return "-"
    if "skipped" in result:
        return "skipped"
    seconds = result["fit_seconds"] + result["predict_seconds"]
    return f"{result['score']:.3f} ({_seconds(seconds)})"


def _seconds(seconds):
    return f"{seconds:.2f} s" if seconds < 0.995 else f"{seconds:.1f} s"


def _shape(row):
    return f"{row['n_train']}/{row['n_test']}, {row['n_channels']}, {row['length']}"


def table_rows(record, models, tasks=None):
    """The cells of a table of ``record`` (the JSON of a run): one row per data set
    of ``tasks`` (all when None), a column per model of ``models``. The best
    score of a row is marked ``best``. Returns (header, rows)."""
    header = ["data (train/test, channels, length)", "metric"]
    header += [MODELS[key][0] for key in models]
    rows = []
    for row in record["results"]:
        if tasks is not None and row["task"] not in tasks:
            continue
        results = [row["results"].get(key) for key in models]
        scores = [r["score"] for r in results if r and "score" in r]
        best = max(scores) if scores else None
        cells = [
            (_cell(r), r is not None and "score" in r and r["score"] == best)
            for r in results
        ]
        rows.append(
            [(f"{row['name']} ({_shape(row)})", False),
             (TASKS[row["task"]][0], False)] + cells
        )
    return header, rows


def markdown(record, models, tasks=None):
    header, rows = table_rows(record, models, tasks)
    columns = [
        (name, lambda row, i=i: f"**{row[i][0]}**" if row[i][1] else row[i][0])
        for i, name in enumerate(header)
    ]
    return markdown_table(columns, rows)


def rst_table(record, models=MAIN_MODELS, tasks=None):
    """The table as an RST list-table (what the documentation page shows)."""
    header, rows = table_rows(record, models, tasks)
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for cells in [[(name, False) for name in header], *rows]:
        for i, (text, best) in enumerate(cells):
            text = text.replace("*", r"\*")
            lines.append(("   * - " if i == 0 else "     - ") + (
                f"**{text}**" if best else text
            ))
    return "\n".join(lines)


def summary(record):
    """One sentence on the recorded run: versions, commit, total time."""
    meta = record["environment"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items() if v)
    load = meta.get("load_average")
    shared = f", load average {load[0]:.1f} to {load[1]:.1f}" if load else ""
    return (
        f"One run of {record['seconds'] / 60:.0f} minutes on {meta['cpus']} cores "
        f"(BLAS on {meta['blas_threads']} thread{shared}), commit {meta['commit']}: "
        f"{versions}."
    )


def rst_summary(record):
    return summary(record)


def skipped(record):
    """One line per fit the run skipped, with the predicted cost."""
    return [
        f"{row['name']}, {MODELS[key][0]}: {result['skipped']}"
        for row in record["results"]
        for key, result in row["results"].items()
        if "skipped" in result
    ]


def rst_skipped(record):
    return "\n".join(f"- {line}" for line in skipped(record)) or "Nothing skipped."


def print_tables(record):
    print(f"\n{summary(record)}\n")
    print("Test score (fit and predict time):\n")
    print(markdown(record, MAIN_MODELS))
    print("\nThe defaults and the intercept:\n")
    print(markdown(record, DIAGNOSTIC_MODELS))
    if skipped(record):
        print("\nSkipped (cost predicted from the sizes):\n")
        print(rst_skipped(record))


def main():
    parser = make_parser(__doc__)
    parser.add_argument(
        "--sets", nargs="+", choices=list(DATA_SETS), default=list(DATA_SETS),
        metavar="NAME", help="only these data sets",
    )
    parser.add_argument(
        "--print", dest="replay", metavar="FILE", nargs="?", const=str(RECORDED),
        help="re-print the tables of a recorded run, without fitting (default: "
        "the documentation's, benchmarks/recorded/bench_real_sequences.json)",
    )
    args = parser.parse_args()
    if args.replay is not None:
        print_tables(json.loads(Path(args.replay).read_text()))
        return
    from threadpoolctl import threadpool_limits

    start, load = time.perf_counter(), os.getloadavg()[0]
    with threadpool_limits(1, user_api="blas"):
        results, missing = run(args.sets, list(MODELS))
    record = {
        "environment": {
            **environment(),
            "load_average": [load, os.getloadavg()[0]],  # 1 minute, start and end
        },
        "seconds": time.perf_counter() - start,
        "limits": {"work_flops": WORK_LIMIT, "memory_bytes": MEMORY_LIMIT},
        "models": {k: {"label": n, "what": w} for k, (n, w) in MODELS.items()},
        "tasks": {k: {"metric": m, "what": w} for k, (m, w) in TASKS.items()},
        "missing": missing,
        "results": results,
    }
    print_tables(record)
    write_json(args.json, record)


if __name__ == "__main__":
    sys.exit(main())
