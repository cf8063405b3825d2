"""The default ``n_heads="auto"`` against ``n_heads=None`` on 12 real data sets
bundled with aeon, statsmodels and scikit-learn (helper-105's review).

Run from the repository root: ``PYTHONPATH=. python
benchmarks/bench_default_real_sets.py [--sets NAME ...] [--seeds SEED ...]
[--json FILE]`` (without ``PYTHONPATH=.`` a script imports the installed copy of
the package; the one measured is printed first). Nothing is downloaded: every set
is bundled with its package, and a set whose package (aeon, statsmodels) is missing
is skipped with a note. The recorded run is
``benchmarks/recorded/bench_default_real_sets.json``.

Each set is fitted with the CV estimator a user would write,
``LinearAttentionClassifierCV()`` or ``LinearAttentionRegressorCV(fit_intercept=True)``
(the intercept the real-data page says to pass), behind the set's preprocessing
below, once with the default ``n_heads="auto"`` and once with ``n_heads=None`` (the
lifted fit's own heads). All fits run under ``threadpool_limits(1)``. Each estimator
is fitted once untimed first (Numba compiles there; its warnings are the ones
recorded), then timed fits of the two alternate: the median of 3, or 1 for a fit
over 2 s. Reported: the test score (accuracy; mean squared error for the
regressors) of both, their ``n_heads_``, ``head_search_.criterion`` (with
"fewer untried" where ``.fewer_untried``), ``.complete`` and ``.work`` (flops) of
the default, both fit times and their ratio;
whether the default's time is within ``20 x None + 1 s`` (the bound of the
real-data cases in ``bench_default_cases.py``); whether its score is worse than
``n_heads=None``'s by more than 0.02 accuracy or a 1.3 times larger error; and the
warnings of the default fit (category and first sentence).

The recipes:

- "series": ``SeriesToTokens(window=8)``, ``TokenwiseTransformer(StandardScaler())``,
  ``PositionalEncoding(constant=True)`` (the documented aeon recipe);
- "lags": one-step-ahead windows of a univariate series, divided by the standard
  deviation of the values the training windows and targets cover, the first 70% of
  the windows for training; ``SeriesToTokens(window=2)``,
  ``PositionalEncoding(constant=True, padding=None)`` (the sunspots example's);
- "channels": windows of a multichannel series (channels-first);
  ``SeriesToTokens()``, ``TokenwiseTransformer(StandardScaler())``,
  ``PositionalEncoding(constant=True, padding=None)``;
- "tokens": sequences of fixed tokens; ``TokenwiseTransformer(StandardScaler())``,
  ``PositionalEncoding(constant=True, padding=None)``;
- "tabular": rows standardized on the training rows, zero-padded to whole tokens
  and read as a sequence of them; ``PositionalEncoding(constant=True,
  padding=None)`` (as in ``bench_tabular_sets.py``).

The sets and their splits (``train_test_split`` stratified, ``random_state=0``):

- ``ACSF1`` (aeon, classification, 10 classes): univariate, length 1460, aeon's
  own split (100 / 100); "series";
- ``modechoice`` (statsmodels, 4 classes): each of 210 travellers a sequence of 4
  tokens (air, train, bus, car) of (ttme, invc, invt, gc), the class the chosen
  mode; 70/30; "tokens". A second table refits it on the splits of ``--seeds``
  (default 0 to 5; ``--seeds`` alone skips it): the test accuracy of both per seed
  and the mean difference;
- ``anes96`` (statsmodels, 2 classes): ``vote`` from the 9 other columns but
  ``popul``, as 3 tokens of 3; 75/25; "tabular";
- ``fair`` (statsmodels, 2 classes): ``affairs > 0`` from the 8 other columns, as 4
  tokens of 2; 75/25; "tabular";
- ``breast_cancer_triples`` (scikit-learn, 2 classes): 10 tokens, one per
  measurement, of its (mean, standard error, worst); 75/25; "tokens";
- ``Airline`` (aeon): monthly log changes of the passengers, 12 lags; "lags";
- ``Lynx`` (aeon): log10 of the yearly trappings, 10 lags; "lags";
- ``solar`` (aeon): 12 lags; "lags";
- ``Nile`` (statsmodels ``nile``): yearly volume, 8 lags; "lags";
- ``Uschange`` (aeon): 4 quarters of its 5 series, predicting the next quarter's
  consumption change; the first 75% of the windows for training; "channels";
- ``grunfeld`` (statsmodels): per firm, 3 years of log (invest, value, capital),
  predicting the next year's log invest; trained on the targets up to 1948;
  "channels";
- ``interest_inflation`` (statsmodels): 4 quarters of (Dp, R), predicting the next
  quarter's Dp divided by its standard deviation; the first 75% for training;
  "channels".

On the project's machine (2 cores, shared) the run takes under a minute.
"""

import os
import re
import statistics
import time
import warnings

import numpy as np
from _common import compile_kernels, make_parser, markdown_table, write_json
from bench_real_sequences import environment as real_sequences_environment
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info, threadpool_limits

import sklearn_linattn
from sklearn_linattn import LinearAttentionClassifierCV, LinearAttentionRegressorCV
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
)

REPEATS = 3
LONG_FIT = 2.0  # seconds: a fit longer than this is timed once
TIME_FACTOR, TIME_SLACK = 20, 1.0  # the default within 20 x None + 1 s
ACCURACY_DROP = 0.02  # worse: accuracy lower by more than this
ERROR_RATIO = 1.3  # worse: mean squared error larger by more than this factor
SEEDS = list(range(6))  # modechoice's extra splits

# --- recipes ---------------------------------------------------------------------


def series_steps():
    return [
        SeriesToTokens(window=8),
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(constant=True),
    ]


def lag_steps():
    return [SeriesToTokens(window=2), PositionalEncoding(constant=True, padding=None)]


def channel_steps():
    return [
        SeriesToTokens(),
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(constant=True, padding=None),
    ]


def token_steps():
    return [
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(constant=True, padding=None),
    ]


def tabular_steps():
    return [PositionalEncoding(constant=True, padding=None)]


RECIPES = {
    "series": series_steps,
    "lags": lag_steps,
    "channels": channel_steps,
    "tokens": token_steps,
    "tabular": tabular_steps,
}

# --- data sets: each returns (task, X_train, y_train, X_test, y_test) ---------------


def lag_windows(values, lags, share=0.7):
    """One-step-ahead windows ``(n, 1, lags)``, divided by the standard deviation of
    the values the training windows and targets cover; the first ``share`` of the
    windows train."""
    values = np.asarray(values, dtype=float)
    windows = np.stack([values[t - lags : t] for t in range(lags, len(values))])
    target = values[lags:]
    n_train = int(share * len(windows))
    scale = values[: lags + n_train].std()
    windows, target = windows / scale, target / scale
    return (
        "regression",
        windows[:n_train, None, :],
        target[:n_train],
        windows[n_train:, None, :],
        target[n_train:],
    )


def channel_windows(series, window, target):
    """Windows ``(n, channels, window)`` of a channels-first ``series``; the target
    the value of ``target`` after each window; the first 75% train."""
    X = np.stack([series[:, t - window : t] for t in range(window, series.shape[1])])
    y = target[window:]
    n_train = int(0.75 * len(X))
    return "regression", X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def split(X, y, test_size, seed=0):
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y
    )
    return "classification", X_train, y_train, X_test, y_test


def tabular_tokens(X, y, token_dim, test_size=0.25):
    """Rows standardized on the training rows, zero-padded to whole tokens."""
    task, X_train, y_train, X_test, y_test = split(X, y, test_size)
    scaler = StandardScaler().fit(X_train)
    columns = -(-X.shape[1] // token_dim) * token_dim

    def tokens(rows):
        padded = np.pad(scaler.transform(rows), ((0, 0), (0, columns - X.shape[1])))
        return padded.reshape(len(rows), -1, token_dim)

    return task, tokens(X_train), y_train, tokens(X_test), y_test


def acsf1():
    from aeon.datasets import load_classification

    X_train, y_train = load_classification("ACSF1", split="train")
    X_test, y_test = load_classification("ACSF1", split="test")
    return "classification", X_train, y_train, X_test, y_test


def modechoice_tokens():
    import statsmodels.api as sm

    data = sm.datasets.modechoice.load_pandas().data
    X = data[["ttme", "invc", "invt", "gc"]].to_numpy(float).reshape(-1, 4, 4)
    y = data["choice"].to_numpy().reshape(-1, 4).argmax(axis=1)  # the chosen mode
    return X, y


def modechoice(seed=0):
    return split(*modechoice_tokens(), test_size=0.3, seed=seed)


def anes96():
    import statsmodels.api as sm

    data = sm.datasets.anes96.load_pandas().data
    y = data["vote"].to_numpy().astype(int)
    X = data.drop(columns=["vote", "popul"]).to_numpy(float)
    return tabular_tokens(X, y, 3)


def fair():
    import statsmodels.api as sm

    data = sm.datasets.fair.load_pandas().data
    y = (data["affairs"].to_numpy() > 0).astype(int)
    X = data.drop(columns="affairs").to_numpy(float)
    return tabular_tokens(X, y, 2)


def breast_cancer_triples():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    tokens = X.reshape(len(X), 3, 10).transpose(0, 2, 1)  # (mean, se, worst) each
    return split(tokens, y, 0.25)


def airline():
    from aeon.datasets import load_airline

    return lag_windows(np.diff(np.log(np.asarray(load_airline(), dtype=float))), 12)


def lynx():
    from aeon.datasets import load_lynx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        values = np.log10(np.asarray(load_lynx(), dtype=float))
    return lag_windows(values, 10)


def solar():
    from aeon.datasets import load_solar

    return lag_windows(np.asarray(load_solar(), dtype=float), 12)


def nile():
    import statsmodels.api as sm

    return lag_windows(sm.datasets.nile.load_pandas().data["volume"].to_numpy(), 8)


def uschange():
    from aeon.datasets import load_uschange

    series = np.asarray(load_uschange(), dtype=float)  # (5, 187), consumption first
    return channel_windows(series, 4, series[0])


def grunfeld():
    import statsmodels.api as sm

    data = sm.datasets.grunfeld.load_pandas().data.sort_values(["firm", "year"])
    window, X, y, years = 3, [], [], []
    for _, firm in data.groupby("firm"):
        values = np.log(firm[["invest", "value", "capital"]].to_numpy(float))
        for t in range(window, len(values)):
            X.append(values[t - window : t].T)  # channels-first (3, window)
            y.append(values[t, 0])
            years.append(firm["year"].to_numpy()[t])
    X, y, train = np.array(X), np.array(y), np.array(years) <= 1948
    return "regression", X[train], y[train], X[~train], y[~train]


def interest_inflation():
    import statsmodels.api as sm

    data = sm.datasets.interest_inflation.load_pandas().data
    series = data[["Dp", "R"]].to_numpy(float).T  # (2, 107)
    return channel_windows(series, 4, series[0] / series[0].std())


# name: (loader, source, recipe, split)
DATA_SETS = {
    "ACSF1": (acsf1, "aeon", "series", "aeon's split"),
    "modechoice": (modechoice, "statsmodels", "tokens", "70/30, seed 0"),
    "anes96": (anes96, "statsmodels", "tabular", "75/25, seed 0; 3 tokens of 3"),
    "fair": (fair, "statsmodels", "tabular", "75/25, seed 0; 4 tokens of 2"),
    "breast_cancer_triples": (
        breast_cancer_triples, "scikit-learn", "tokens", "75/25, seed 0"
    ),
    "Airline": (airline, "aeon", "lags", "log changes, 12 lags, first 70%"),
    "Lynx": (lynx, "aeon", "lags", "log10, 10 lags, first 70%"),
    "solar": (solar, "aeon", "lags", "12 lags, first 70%"),
    "Nile": (nile, "statsmodels", "lags", "8 lags, first 70%"),
    "Uschange": (uschange, "aeon", "channels", "4 quarters x 5, first 75%"),
    "grunfeld": (grunfeld, "statsmodels", "channels", "3 years x 3, to 1948"),
    "interest_inflation": (
        interest_inflation, "statsmodels", "channels", "4 quarters x 2, first 75%"
    ),
}

# --- measuring -----------------------------------------------------------------------


def make_model(task, recipe, **params):
    if task == "classification":
        estimator = LinearAttentionClassifierCV(**params)
    else:
        estimator = LinearAttentionRegressorCV(fit_intercept=True, **params)
    return make_pipeline(*RECIPES[recipe](), estimator)


def test_score(task, model, X, y):
    """Accuracy, or mean squared error."""
    predictions = model.predict(X)
    if task == "classification":
        return float(np.mean(predictions == y))
    return float(np.mean((predictions - y) ** 2))


def first_sentence(message):
    match = re.match(r"(.+?[.!?])(\s|$)", str(message).strip(), flags=re.DOTALL)
    return " ".join((match.group(1) if match else str(message)).split())


def warning_notes(caught):
    """``Category: first sentence`` of each distinct warning, with a count."""
    notes = {}
    for warning in caught:
        note = f"{warning.category.__name__}: {first_sentence(warning.message)}"
        notes[note] = notes.get(note, 0) + 1
    return [note if n == 1 else f"{note} (x{n})" for note, n in notes.items()]


def fit_seconds(model, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # recorded on the untimed fit
        model.fit(X, y)
    return time.perf_counter() - start


def measure(name):
    loader, source, recipe, split_text = DATA_SETS[name]
    task, X_train, y_train, X_test, y_test = loader()
    kinds = {"default": {}, "none": {"n_heads": None}}
    row = dict(
        data=name, source=source, recipe=recipe, split=split_text, task=task,
        train_shape=list(np.shape(X_train)), n_test=len(y_test),
    )
    models, times = {}, {kind: [] for kind in kinds}
    for kind, params in kinds.items():  # untimed: compiles, records the warnings
        model = make_model(task, recipe, **params)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(X_train, y_train)
        models[kind] = model
        row[f"{kind}_warnings"] = warning_notes(caught)
    for repeat in range(REPEATS):  # timed, alternating
        for kind, params in kinds.items():
            if repeat and max(times[kind]) > LONG_FIT:
                continue
            model = make_model(task, recipe, **params)
            times[kind].append(fit_seconds(model, X_train, y_train))
            if int(model[-1].n_heads_) != int(models[kind][-1].n_heads_):
                row[f"{kind}_heads_differ"] = int(model[-1].n_heads_)
    for kind in kinds:
        estimator = models[kind][-1]
        row[f"{kind}_score"] = test_score(task, models[kind], X_test, y_test)
        row[f"{kind}_heads"] = int(estimator.n_heads_)
        row[f"{kind}_seconds"] = statistics.median(times[kind])
        row[f"{kind}_fits_timed"] = len(times[kind])
    search = models["default"][-1].head_search_
    row.update(
        criterion=search.criterion,
        complete=bool(search.complete),
        work=float(search.work),
        fewer_untried=bool(search.fewer_untried),
    )
    row["ratio"] = row["default_seconds"] / row["none_seconds"]
    row["time_bound"] = TIME_FACTOR * row["none_seconds"] + TIME_SLACK
    row["within_time"] = row["default_seconds"] <= row["time_bound"]
    if task == "classification":
        row["difference"] = row["default_score"] - row["none_score"]
        row["worse"] = row["difference"] < -ACCURACY_DROP
    else:
        row["difference"] = row["default_score"] / row["none_score"]
        row["worse"] = row["difference"] > ERROR_RATIO
    return row


def modechoice_seeds(seeds):
    """modechoice on the splits of ``seeds``: test accuracy of both, untimed."""
    rows = []
    for seed in seeds:
        _, X_train, y_train, X_test, y_test = modechoice(seed)
        row = dict(seed=seed)
        for kind, params in (("default", {}), ("none", {"n_heads": None})):
            model = make_model("classification", "tokens", **params)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model.fit(X_train, y_train)
            row[f"{kind}_score"] = float(model.score(X_test, y_test))
            row[f"{kind}_heads"] = int(model[-1].n_heads_)
            row[f"{kind}_warnings"] = warning_notes(caught)
            if kind == "default":
                search = model[-1].head_search_
                row.update(criterion=search.criterion, complete=bool(search.complete))
        row["difference"] = row["default_score"] - row["none_score"]
        rows.append(row)
    return rows


# --- reporting -----------------------------------------------------------------------


def _score(row, kind):
    value = row[f"{kind}_score"]
    return f"{value:.3f}" if row["task"] == "classification" else f"{value:.4f}"


def _difference(row):
    if row["task"] == "classification":
        return f"{row['difference']:+.3f}"
    return f"x{row['difference']:.2f}"


def _seconds(seconds):
    return f"{seconds:.3f}" if seconds < 0.995 else f"{seconds:.2f}"


COLUMNS = [
    ("data (source, recipe)", "{data} ({source}, {recipe})"),
    ("train shape, test", lambda r: f"{tuple(r['train_shape'])}, {r['n_test']}"),
    ("metric", lambda r: "acc" if r["task"] == "classification" else "MSE"),
    ("score default / None", lambda r: f"{_score(r, 'default')} / {_score(r, 'none')}"),
    ("diff", _difference),
    ("heads default / None", "{default_heads} / {none_heads}"),
    ("criterion", lambda r: r["criterion"] + (
        " (fewer untried)" if r["fewer_untried"] else ""
    )),
    ("complete", "{complete}"),
    ("work (flops)", "{work:.2g}"),
    ("fit s default / None", lambda r: " / ".join(
        _seconds(r[f"{kind}_seconds"])
        + ("" if r[f"{kind}_fits_timed"] == REPEATS else " (1 fit)")
        for kind in ("default", "none")
    )),
    ("ratio", "{ratio:.0f}x"),
    ("within 20x+1 s", lambda r: "yes" if r["within_time"] else
        f"**no** ({r['time_bound']:.2f} s)"),
    ("score worse", lambda r: "**yes**" if r["worse"] else "no"),
    ("warnings (default)", lambda r: "; ".join(r["default_warnings"]) or "none"),
]

SEED_COLUMNS = [
    ("seed", "{seed}"),
    ("accuracy default / None", "{default_score:.3f} / {none_score:.3f}"),
    ("diff", "{difference:+.3f}"),
    ("heads default / None", "{default_heads} / {none_heads}"),
    ("criterion", "{criterion}"),
    ("complete", "{complete}"),
    ("warnings (default)", lambda r: "; ".join(r["default_warnings"]) or "none"),
]


def environment():
    """bench_real_sequences.py's record of the machine and versions, with the
    package measured and the BLAS threads as set."""
    return {
        **real_sequences_environment(),
        "package": sklearn_linattn.__file__,
        "blas": [
            f"{info['internal_api']} x {info['num_threads']}"
            for info in threadpool_info()
        ],
    }


def main():
    parser = make_parser(__doc__)
    parser.add_argument(
        "--sets", nargs="+", choices=list(DATA_SETS), default=list(DATA_SETS),
        metavar="NAME", help="only these data sets (default: all 12)",
    )
    parser.add_argument(
        "--seeds", nargs="*", type=int, default=SEEDS, metavar="SEED",
        help="modechoice's extra splits (default 0 to 5; none: skip them)",
    )
    args = parser.parse_args()
    print(f"Measuring {sklearn_linattn.__file__}", flush=True)
    start, load = time.perf_counter(), os.getloadavg()[0]
    rows, skipped, seed_rows = [], {}, []
    with threadpool_limits(1):
        env = environment()  # the BLAS threads as measured
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its alpha=0 interpolation warning
            compile_kernels()
        for name in args.sets:
            try:
                row = measure(name)
            except ImportError as error:
                skipped[name] = f"{type(error).__name__}: {error}"
                print(f"{name}: skipped ({skipped[name]})", flush=True)
                continue
            rows.append(row)
            print(markdown_table(COLUMNS, [row]).splitlines()[-1], flush=True)
        if "modechoice" in args.sets and args.seeds and "modechoice" not in skipped:
            seed_rows = modechoice_seeds(args.seeds)
    total = time.perf_counter() - start
    env["load_average"] = [load, os.getloadavg()[0]]  # 1 minute, start and end
    print(
        f"\n### Default vs n_heads=None (one BLAS thread; median of {REPEATS} fits, "
        f"1 over {LONG_FIT:.0f} s)\n"
    )
    print(markdown_table(COLUMNS, rows))
    for name, reason in skipped.items():
        print(f"- {name}: skipped, {reason}")
    if seed_rows:
        mean = statistics.mean(row["difference"] for row in seed_rows)
        print("\n### modechoice, 70/30 splits of other seeds: test accuracy\n")
        print(markdown_table(SEED_COLUMNS, seed_rows))
        print(f"\nMean difference (default - None): {mean:+.4f}")
    print(
        f"\nLoad average (1 min) {env['load_average'][0]:.2f} at the start, "
        f"{env['load_average'][1]:.2f} at the end, on {os.cpu_count()} CPUs. "
        f"Total {total:.0f} s."
    )
    write_json(
        args.json,
        dict(
            environment=env,
            seconds=total,
            repeats=REPEATS,
            long_fit_seconds=LONG_FIT,
            bounds=dict(
                time_factor=TIME_FACTOR, time_slack_seconds=TIME_SLACK,
                accuracy_drop=ACCURACY_DROP, error_ratio=ERROR_RATIO,
            ),
            skipped=skipped,
            rows=rows,
            modechoice_seeds=seed_rows,
        ),
    )


if __name__ == "__main__":
    main()
