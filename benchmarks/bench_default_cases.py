"""The default head read-out (``n_heads="auto"``) against ``n_heads=None``, case by
case: time, heads, criterion, held-out score where there is a test split.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_default_cases.py
[--quick] [--json FILE]`` (without ``PYTHONPATH=.`` a script imports the installed
copy of the package; the one measured is printed first). The script runs on other
versions of the package too (``PYTHONPATH=/other/checkout``), for before/after
tables: fields a version lacks are shown as "-".

Each row fits the estimator a user would write with the default ``n_heads="auto"``,
and the same with ``n_heads=None`` (the paper's SVD read-out, no search), on the same
data in the same run: ``repeats`` fits of each, interleaved, wall-clock medians. The
bounds (issue 31): every case within ``3 x None + 0.1 s``; the many-output and
real-data cases (digits, 50 outputs, the aeon sets) within ``20 x None + 1 s``.
Both are checked on the medians, in wall and in process CPU time (all threads; less
sensitive to other processes on a shared machine). Also reported: the read-out's
own time and work (timed around the estimators' ``read_out_heads``,
``head_search_.work`` in flops, and
their ratio: the counted work should predict the time within a small factor), the
heads, ``head_search_.complete`` and ``head_search_.criterion``.

The cases:

- ``digits``: ``LinearAttentionClassifier(token_dim=8)`` on ``load_digits`` rows
  (64 raw pixels = 8 tokens of 8), the 1347-sample train split of
  ``train_test_split(random_state=0)``, scored on the rest; 10 classes.
- ``automaton``: ``LinearAttentionRegressor()`` on ``make_automaton_lookups(1000, 3,
  2)`` (d=9, 3 outputs, clean one-hot tokens).
- ``random d=32``: ``make_random_mhla(300, 16, 32, n_heads=2)``: 300 samples, far
  fewer than the 16896 lifted features (the dual solver; the fit interpolates).
- ``d=8, 50 noisy outputs``: ``make_random_mhla(864, 16, 8, n_heads=2,
  n_outputs=50)`` (864 = 3p) plus noise of 10% of each output's standard deviation.
- ``(200, 2, 50)``: random walks of 101 steps, the first 100 read as 2 tokens of
  dimension 50, the target the last step (63750 lifted features, 200 samples).
- ``d=8, 3000 samples``: ``make_random_mhla(3000, 16, 8, n_heads=2)`` plus 10% noise.
- ``heads``: ``LinearAttentionRegressorCV()`` on ``make_random_mhla(1400, 8, 12,
  n_heads=4, noise=0.1, random_state=6)``, the first 700 samples, scored on the
  rest: a search that decides a few heads far better than the lifted fit
  (helper-73's case against a lower work floor), held to ``20 x None + 1 s``.
- ``GridSearchCV``: 15 alphas (``logspace(-6, 2)``) x 5 folds (plus the refit) of
  ``LinearAttentionRegressor()`` on ``make_random_mhla(1000, 16, 3, n_heads=1)`` plus
  10% noise; heads of ``best_estimator_``.
- ``partial_fit``: 30 batches of 100 samples (d=3, 1 head, 10% noise), then
  ``coef_`` read once (the solve and the heads happen at that read).
- ``float32 1 head``: ``make_random_mhla(864, 16, 8, n_heads=1)`` with ``X`` and ``y``
  cast to float32 (rounding is the only noise). The heads of 4 more data seeds
  (untimed) are listed too.
- With aeon installed (its wheel bundles the data; nothing is downloaded), two real
  sets through the documented pipeline (``SeriesToTokens()``,
  ``TokenwiseTransformer(StandardScaler())``, ``PositionalEncoding(constant=True)``,
  then the estimator with its defaults), on their own train/test splits:
  ``JapaneseVowels`` (classifier, 9 classes, 12 channels) and ``CardanoSentiment``
  (regressor, 2 channels, 74 series: fewer than the lifted features).

``--quick`` keeps the cases but shrinks the slowest inputs (d=16 instead of 32 for
the random interpolating case, 500 automaton lookups, 20 partial_fit batches) and
times 1 fit of each.

BLAS runs on 1 thread by default (``--blas-threads 0`` leaves the environment's
setting): on a machine shared with other busy processes, OpenBLAS's 2 threads
made the same ``n_heads=None`` fit take 0.03 to 8 s, so that the times measured the
contention. The read-out itself always runs on one thread. The machine's load
average is printed before and after: the numbers of a shared machine are only
comparable within one run.
"""

import os
import statistics
import time
import warnings
from contextlib import nullcontext

import numpy as np
from _common import (
    ReadOutClock,
    compile_kernels,
    make_parser,
    markdown_table,
    write_json,
)
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info, threadpool_limits

import sklearn_linattn
from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
)
from sklearn_linattn.datasets import make_automaton_lookups, make_random_mhla
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
)

N_TOKENS = 16


def relative_noise(y, fraction, rng):
    """``y`` plus Gaussian noise of ``fraction`` of each output's standard deviation."""
    return y + fraction * y.std(axis=0) * rng.normal(size=y.shape)


def noisy_mhla(n_samples, token_dim, n_heads, n_outputs=1, noise=0.1, seed=0):
    X, y, _ = make_random_mhla(
        n_samples,
        N_TOKENS,
        token_dim,
        n_heads=n_heads,
        n_outputs=n_outputs,
        random_state=seed,
    )
    return X, relative_noise(y, noise, np.random.default_rng(seed + 1))


def fit_plain(estimator, X, y):
    """``estimator.fit(X, y)``; returns the fitted estimator to read heads from."""
    return estimator.fit(X, y)


def grid_search(estimator, X, y):
    search = GridSearchCV(estimator, {"alpha": np.logspace(-6, 2, 15)}, cv=5)
    return search.fit(X, y).best_estimator_


def partial_fits(n_batches):
    def run(estimator, X, y):
        start = time.perf_counter()
        for batch_X, batch_y in zip(
            np.array_split(X, n_batches), np.array_split(y, n_batches), strict=True
        ):
            estimator.partial_fit(batch_X, batch_y)
        estimator.calls_seconds = time.perf_counter() - start  # read by the row
        _ = estimator.coef_  # the solve and the head read-out happen here
        return estimator

    return run


def random_walk_windows(n_samples, n_tokens, token_dim, seed=0):
    """Random walks; the first ``n_tokens * token_dim`` steps are the sequence and the
    next step the target."""
    steps = np.random.default_rng(seed).normal(
        size=(n_samples, n_tokens * token_dim + 1)
    )
    walks = np.cumsum(steps, axis=1)
    return walks[:, :-1].reshape(n_samples, n_tokens, token_dim), walks[:, -1]


def float32_data(seed):
    X, y, _ = make_random_mhla(864, N_TOKENS, 8, n_heads=1, random_state=seed)
    return X.astype(np.float32), y.astype(np.float32)


def digits_split():
    """``(X_train, y_train, X_test, y_test)``: sklearn's digits rows, the
    1347-image train split of ``train_test_split(random_state=0)``."""
    digits = load_digits()
    X, X_test, y, y_test = train_test_split(digits.data, digits.target, random_state=0)
    return X, y, X_test, y_test


def cases(quick):
    """(key, label, estimator, run, X, y) for each row."""
    X_digits, y_digits, X_digits_test, y_digits_test = digits_split()
    X_auto, y_auto, _, _ = make_automaton_lookups(
        500 if quick else 1000, 3, 2, random_state=0
    )
    random_dim = 16 if quick else 32
    X_random, y_random, _ = make_random_mhla(
        300, N_TOKENS, random_dim, n_heads=2, random_state=0
    )
    n_batches = 20 if quick else 30
    regressor = LinearAttentionRegressor()
    yield (
        "digits",
        f"`LinearAttentionClassifier(token_dim=8)`, load_digits, "
        f"{len(y_digits)} samples",
        LinearAttentionClassifier(token_dim=8),
        fit_plain,
        X_digits,
        y_digits,
        (X_digits_test, y_digits_test),
    )
    yield (
        "automaton",
        f"`make_automaton_lookups({len(y_auto)}, 3, 2)`",
        regressor,
        fit_plain,
        X_auto,
        y_auto,
    )
    yield (
        "random",
        f"random MHLA, d={random_dim}, 300 samples",
        regressor,
        fit_plain,
        X_random,
        y_random,
    )
    yield (
        "outputs",
        "d=8, 50 noisy outputs, 864 samples",
        regressor,
        fit_plain,
        *noisy_mhla(864, 8, 2, n_outputs=50),
    )
    yield (
        "series",
        "(200, 2, 50) input (random walks)",
        regressor,
        fit_plain,
        *random_walk_windows(200, 2, 50),
    )
    yield (
        "samples",
        "d=8, 3000 samples, noisy target",
        regressor,
        fit_plain,
        *noisy_mhla(3000, 8, 2),
    )
    X_heads, y_heads, _ = make_random_mhla(
        1400, 8, 12, n_heads=4, noise=0.1, random_state=6
    )
    yield (
        "heads",
        "`LinearAttentionRegressorCV()`, d=12, 4 heads, 10% noise, 700 samples",
        LinearAttentionRegressorCV(),
        fit_plain,
        X_heads[:700],
        y_heads[:700],
        (X_heads[700:], y_heads[700:]),
    )
    yield (
        "grid",
        "`GridSearchCV`, 15 alphas x 5 folds, d=3, 1000 samples",
        regressor,
        grid_search,
        *noisy_mhla(1000, 3, 1),
    )
    yield (
        "partial",
        f"{n_batches} `partial_fit` calls of 100, d=3, then `coef_`",
        regressor,
        partial_fits(n_batches),
        *noisy_mhla(100 * n_batches, 3, 1),
    )
    yield (
        "float32",
        "1-head float32 target, d=8, 864 samples",
        regressor,
        fit_plain,
        *float32_data(0),
    )
    yield from real_cases()


def real_cases():
    """The aeon sets, through the documented pipeline (needs aeon; else none)."""
    try:
        from aeon.datasets import load_classification, load_regression
    except ImportError:
        print("aeon is not installed: the real-data cases are left out")
        return
    for key, load, estimator in (
        ("vowels", load_classification, LinearAttentionClassifier()),
        ("cardano", load_regression, LinearAttentionRegressor()),
    ):
        name = {"vowels": "JapaneseVowels", "cardano": "CardanoSentiment"}[key]
        X_train, y_train = load(name, split="train")
        X_test, y_test = load(name, split="test")
        pipeline = make_pipeline(
            SeriesToTokens(),
            TokenwiseTransformer(StandardScaler()),
            PositionalEncoding(constant=True),
            estimator,
        )
        label = f"{name} (aeon), documented pipeline, {len(y_train)} series"
        yield key, label, pipeline, fit_plain, X_train, y_train, (X_test, y_test)


def timed(run, estimator, X, y):
    """One fit of a fresh clone: (wall seconds, process CPU seconds, fitted, the
    seconds of its last head read-out, the fitted model's)."""
    estimator = clone(estimator)
    with ReadOutClock() as clock:
        wall, cpu = time.perf_counter(), time.process_time()
        fitted = run(estimator, X, y)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, fitted, clock.seconds[-1] if clock.seconds else np.nan


def final(estimator):
    return estimator[-1] if hasattr(estimator, "steps") else estimator


def with_heads(estimator, n_heads):
    estimator = clone(estimator)
    final(estimator).set_params(n_heads=n_heads)
    return estimator


MANY_OUTPUTS = {"digits", "outputs", "heads", "vowels", "cardano"}


def measure(key, label, estimator, run, X, y, test=None, repeats=3):
    default_runs, none_runs = [], []
    none_estimator = with_heads(estimator, None)
    load_before = os.getloadavg()[0]
    for _ in range(repeats):
        try:
            default_runs.append(timed(run, estimator, X, y))
        except Exception as error:  # an older version's read-out may crash
            return dict(case=key, label=label, error=f"{type(error).__name__}: {error}")
        none_runs.append(timed(run, none_estimator, X, y))
    fitted, none_fitted = default_runs[-1][2], none_runs[-1][2]
    searches = [final(r[2]).head_search_ for r in default_runs]
    default = statistics.median(r[0] for r in default_runs)
    none = statistics.median(r[0] for r in none_runs)
    default_cpu = statistics.median(r[1] for r in default_runs)
    none_cpu = statistics.median(r[1] for r in none_runs)
    factor, extra = (20, 1.0) if key in MANY_OUTPUTS else (3, 0.1)
    work = [getattr(search, "work", None) for search in searches]
    row = dict(
        case=key,
        label=label,
        default_seconds=default,
        none_seconds=none,
        ratio=default / none,
        default_cpu_seconds=default_cpu,
        none_cpu_seconds=none_cpu,
        cpu_ratio=default_cpu / none_cpu,
        bound=f"{factor}x + {extra:g} s",
        within_bound=bool(default <= factor * none + extra),
        within_bound_cpu=bool(default_cpu <= factor * none_cpu + extra),
        heads=int(final(fitted).n_heads_),
        none_heads=int(final(none_fitted).n_heads_),
        heads_per_repeat=[int(final(r[2]).n_heads_) for r in default_runs],
        complete=[getattr(search, "complete", None) for search in searches],
        criterion=sorted({search.criterion for search in searches}),
        counts_tried=[list(search.counts_tried) for search in searches],
        search_seconds=statistics.median(r[3] for r in default_runs),
        work=statistics.median(work) if None not in work else None,
        load_during=(load_before + os.getloadavg()[0]) / 2,
    )
    if row["work"] is not None:
        row["gflops_per_second"] = row["work"] / 1e9 / max(row["search_seconds"], 1e-9)
    if test is not None:
        row["score"] = float(fitted.score(*test))
        row["none_score"] = float(none_fitted.score(*test))
    if key == "partial":
        row["calls_seconds"] = statistics.median(
            r[2].calls_seconds for r in default_runs
        )
    if key == "float32":
        row["heads_other_seeds"] = [
            int(clone(estimator).fit(*float32_data(seed)).n_heads_)
            for seed in range(1, 5)
        ]
    return row


def heads_cell(row):
    counts = row["heads_per_repeat"]
    cell = "/".join(map(str, counts)) if len(set(counts)) > 1 else str(counts[0])
    cell += f" (None: {row['none_heads']})"
    if "heads_other_seeds" in row:
        cell += "; seeds 1-4: " + ", ".join(map(str, row["heads_other_seeds"]))
    return cell


def complete_cell(row):
    complete = row["complete"]
    if complete[0] is None:
        return "-"
    if all(complete) or not any(complete):
        return "yes" if complete[0] else "no"
    return f"{sum(complete)}/{len(complete)}"


def optional(name, form):
    def cell(row):
        return "-" if row.get(name) is None else form.format(row[name])

    return cell


COLUMNS = [
    ("case", "{label}"),
    ("None fit", "{none_seconds:.3f} s"),
    ("default fit", "{default_seconds:.3f} s"),
    ("default / None", "{ratio:.2f}"),
    ("CPU default / None", "{cpu_ratio:.2f}"),
    ("bound", "{bound}"),
    ("within", lambda r: "yes" if r["within_bound"] else "**no**"),
    ("within, CPU", lambda r: "yes" if r["within_bound_cpu"] else "**no**"),
    ("read-out", "{search_seconds:.3f} s"),
    ("work", optional("work", "{:.2g} flops")),
    ("GFlop/s", optional("gflops_per_second", "{:.1f}")),
    ("heads", heads_cell),
    ("complete", complete_cell),
    ("criterion", lambda r: ", ".join(r["criterion"])),
    ("score default / None", lambda r: (
        f"{r['score']:.3f} / {r['none_score']:.3f}" if "score" in r else "-"
    )),
]


def main():
    parser = make_parser(__doc__, quick=True)
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        metavar="N",
        help="BLAS threads during the fits (default 1; 0 leaves the environment's)",
    )
    args = parser.parse_args()
    if args.blas_threads < 0:
        parser.error(f"--blas-threads must be >= 0, got {args.blas_threads}")
    with (
        threadpool_limits(args.blas_threads, user_api="blas")
        if args.blas_threads
        else nullcontext()
    ):
        run(args)


def run(args):
    repeats = 1 if args.quick else 3
    blas = [
        f"{info['internal_api']} x {info['num_threads']}"
        for info in threadpool_info()
        if info["user_api"] == "blas"
    ]
    print(f"Measuring {sklearn_linattn.__file__}; BLAS: {', '.join(blas)}", flush=True)
    # the (200, 2, 50) case warns about its 63750 lifted features, as it should
    warnings.filterwarnings("ignore", message="X has 2 token", category=UserWarning)
    compile_kernels()
    load_before = os.getloadavg()
    start = time.perf_counter()
    rows = []
    for case in cases(args.quick):
        # an untimed n_heads=None fit first: Numba kernels of this case's path
        # (dual, kernel blocks, float32) compile outside the timings
        none = with_heads(case[2], None)
        case[3](none, case[4][:50], case[5][:50])
        row = measure(*case, repeats=repeats)
        rows.append(row)
        if "error" in row:
            print(f"{row['label']}: the default fit raised {row['error']}", flush=True)
        else:
            print(markdown_table(COLUMNS, [row]).splitlines()[-1], flush=True)
    load_after = os.getloadavg()
    total = time.perf_counter() - start
    print(
        f"\n### Default read-out vs n_heads=None "
        f"(median of {repeats}, interleaved)\n"
    )
    print(markdown_table(COLUMNS, [row for row in rows if "error" not in row]))
    for row in rows:
        if "error" in row:
            print(f"- {row['label']}: the default fit raised {row['error']}")
    before, after = (
        ", ".join(f"{x:.2f}" for x in load) for load in (load_before, load_after)
    )
    print(
        f"\nLoad average (1, 5, 15 min) before: {before}; after: {after}; on "
        f"{os.cpu_count()} CPUs shared with other processes. Total {total:.0f} s."
    )
    write_json(
        args.json,
        dict(
            quick=args.quick,
            repeats=repeats,
            load_before=load_before,
            load_after=load_after,
            cpu_count=os.cpu_count(),
            blas=blas,
            total_seconds=total,
            rows=rows,
        ),
    )


if __name__ == "__main__":
    main()
