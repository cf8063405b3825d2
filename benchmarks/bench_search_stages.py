"""Where the default head search's time goes on the real sets, stage by stage.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_search_stages.py
[--sets NAME ...] [--plain] [--head-dof {nominal,ridge-capped}] [--json FILE]``
(needs aeon and statsmodels, as ``bench_real_sequences.py``, whose data sets and
default recipe it fits: the documented preprocessing and the CV estimator with every
parameter at its default; ``--plain`` fits the plain estimator, ``alpha=0``,
instead).

For each set: the fit time of the default (``n_heads="auto"``) and of
``n_heads=None``, the read-out's time, counted work and its rate, the heads and the
criterion, the counts fitted with their verdicts, and the read-out's
Levenberg-Marquardt time split by stage:

- ``full``: the fits of each count on all the training rows (``_Search.fit``);
- ``folds``: the folds' own refits of a count (``_Search.refits``);
- within each, ``screen`` (the ``SCREEN_ITER`` steps every start runs), ``refine``
  (the kept starts run on) and ``polish`` (``_Search.polish`` and the
  refinement toward the lifted fit, ``_Search.reproduce``);
- ``starts``: the one-output searches for isotropic subspaces that give starts;
- ``other``: the rest of the read-out (folds and their lifted fits, linearized
  refits, completions, thresholds), the read-out's time less the stages above.

The stages are timed by wrapping ``levenberg_marquardt``, which adds a few
microseconds a run: shares, not absolute times, are what to read.

``--head-dof ridge-capped`` is an experiment, not the package's rule: the k-head
models' degrees of freedom are taken as at most the lifted fit's wherever
``alpha > 0`` (a ridge fit's effective degrees of freedom), in the generalized
cross-validation and the interpolation tests as in the size ratio. BLAS runs on one
thread.
"""

import collections
import sys
import time
import warnings

import bench_real_sequences as real
from _common import ReadOutClock, make_parser, markdown_table, write_json
from sklearn.pipeline import make_pipeline
from threadpoolctl import threadpool_limits

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    _heads,
    _low_rank,
)

STAGES = [
    "full screen", "full refine", "full polish",
    "folds screen", "folds refine", "folds polish", "starts",
]


class StageTimer:
    """Levenberg-Marquardt time by stage (wraps ``_low_rank.levenberg_marquardt``,
    which ``fit_heads`` and ``isotropic_queries`` call by its module name)."""

    def __init__(self):
        self.seconds = collections.Counter()
        self._original = _low_rank.levenberg_marquardt

    def __enter__(self):
        def timed(evaluate, x, max_iter, *args, **kwargs):
            start = time.perf_counter()
            result = self._original(evaluate, x, max_iter, *args, **kwargs)
            self.seconds[self._stage(max_iter)] += time.perf_counter() - start
            return result

        _low_rank.levenberg_marquardt = timed
        return self

    def __exit__(self, *exc):
        _low_rank.levenberg_marquardt = self._original

    @staticmethod
    def _stage(max_iter):
        frame, callers = sys._getframe(2), set()
        while frame is not None:
            callers.add(frame.f_code.co_name)
            frame = frame.f_back
        if "isotropic_queries" in callers:
            return "starts"
        where = "folds" if "refits" in callers else "full"
        if "polish" in callers or "reproduce" in callers:
            return f"{where} polish"
        if max_iter in (0, _heads.SCREEN_ITER):  # a start screened or evaluated
            return f"{where} screen"
        return f"{where} refine"


def ridge_capped_dof():
    """``_Search.head_dof`` at most the lifted fit's degrees of freedom where
    ``alpha > 0`` (the experiment of ``--head-dof ridge-capped``)."""
    nominal = _heads._Search.head_dof

    def head_dof(search, k):
        # (search.folds builds the folds where they are not yet: every noisy
        # search builds them, so only the order of the work changes)
        dof = nominal(search, k)
        if search.folds is not None and search.folds.alpha > 0:
            return min(dof, search.lifted_dof)
        return dof

    return head_dof


def estimator(ds, plain, **params):
    """The default recipe's pipeline, with the plain estimator if ``plain``."""
    if not plain:
        return real.default(ds, **params)
    final = LinearAttentionClassifier if ds.task == "classification" else (
        LinearAttentionRegressor
    )
    intercept = {} if ds.task == "classification" else {"fit_intercept": True}
    return make_pipeline(*real.preprocessing(ds), final(**intercept, **params))


def measure(ds, plain):
    """One set's row: fits of the default and of ``n_heads=None`` (each fitted
    once untimed first), the default's read-out by stage."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for params in ({}, {"n_heads": None}):
            estimator(ds, plain, **params).fit(ds.X_train, ds.y_train)
        start = time.perf_counter()
        estimator(ds, plain, n_heads=None).fit(ds.X_train, ds.y_train)
        none_seconds = time.perf_counter() - start
        model = estimator(ds, plain)
        with StageTimer() as timer, ReadOutClock() as clock:
            start = time.perf_counter()
            model.fit(ds.X_train, ds.y_train)
            seconds = time.perf_counter() - start
    search = model[-1].head_search_
    readout_seconds = clock.seconds[-1]
    stages = {stage: timer.seconds[stage] for stage in STAGES}
    stages["other"] = max(readout_seconds - sum(stages.values()), 0.0)
    return {
        "name": ds.name,
        "seconds": seconds,
        "none_seconds": none_seconds,
        "readout_seconds": readout_seconds,
        "work": search.work,
        "heads": int(model[-1].n_heads_),
        "criterion": search.criterion,
        "complete": bool(search.complete),
        "counts": [
            [c.n_heads, c.passes, c.failed_on, c.folds_refitted] for c in search.counts
        ],
        "stages": stages,
    }


def _share(stage):
    def cell(row):
        return f"{row['stages'][stage] / max(row['readout_seconds'], 1e-12):.0%}"

    return cell


def table(rows):
    columns = [
        ("set", "{name}"),
        ("default", "{seconds:.3f} s"),
        ("None", "{none_seconds:.3f} s"),
        ("read-out", "{readout_seconds:.3f} s"),
        ("GFlop/s", lambda row: f"{row['work'] / row['readout_seconds'] / 1e9:.1f}"),
        ("heads", "{heads}"),
        ("criterion", lambda row: row["criterion"] + (
            "" if row["complete"] else " (cut short)"
        )),
        *[(stage, _share(stage)) for stage in [*STAGES, "other"]],
    ]
    return markdown_table(columns, rows)


def main():
    parser = make_parser(__doc__)
    parser.add_argument(
        "--sets", nargs="+", choices=list(real.DATA_SETS),
        default=list(real.DATA_SETS), metavar="NAME", help="only these data sets",
    )
    parser.add_argument(
        "--plain", action="store_true",
        help="the plain estimator (alpha=0) instead of the CV estimator",
    )
    parser.add_argument(
        "--head-dof", choices=["nominal", "ridge-capped"], default="nominal",
        help="the heads' degrees of freedom: the package's (nominal) or the "
        "experiment's",
    )
    args = parser.parse_args()
    if args.head_dof == "ridge-capped":
        _heads._Search.head_dof = ridge_capped_dof()
    rows = []
    with threadpool_limits(1, user_api="blas"):
        for name in args.sets:
            ds = real.DATA_SETS[name]()
            rows.append(measure(ds, args.plain))
            print(rows[-1]["name"], f"{rows[-1]['seconds']:.2f} s", flush=True)
    recipe = "plain estimator" if args.plain else "CV estimator"
    print(f"\n### Stages ({recipe}, head dof {args.head_dof}; shares of the read-out)")
    print()
    print(table(rows))
    print("\nCounts fitted (count, passes, failed on, folds refitted):")
    for row in rows:
        print(f"- {row['name']}: {row['counts']}")
    record = {"plain": args.plain, "head_dof": args.head_dof, "rows": rows}
    write_json(args.json, record)


if __name__ == "__main__":
    sys.exit(main())
