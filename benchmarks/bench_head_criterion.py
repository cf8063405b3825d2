"""The held-out criterion of the head count: how much slack over the lifted fit's
cross-validated error a count may have, and how a fold's refit is made (issue 31).

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_head_criterion.py
[--slacks 0 1] [--rule RULE] [--refits] [--near-interpolation] [--low-signal]
[--many-rows] [--drift] [--folds-size] [--refits-stopped] [--repeated-outputs]
[--same-start] [--classifiers] [--outputs-counted] [--interpolation-peak]
[--output-spread] [--dims 4 8]
[--sets NAME ...] [--json FILE]``
(``--slacks`` with no value skips parts 1 and 2).

``--rule`` changes the rule beside the mean, for every part (``RULES``):
``package`` (as shipped: no worse on a majority of the folds too), ``mean`` (the
mean alone), ``four-folds`` (no worse on 4 of 5), ``mean-gcv`` (the mean, and every
count's generalized cross-validated error at most the lifted fit's, not only near
interpolation) and ``mean-threshold`` (the mean, against the lower of the lifted
fit's cross-validated and generalized cross-validated errors everywhere); and
``refit-all`` (the package's, but every count passing its linearized refits is
refitted on the folds from their own starts, however many rows there are: the
package leaves that out from ``REFIT_MARGIN`` rows per lifted feature on, when
the linearized refits are no worse than the lifted fit on every fold) and
``linearized-majority`` (from ``REFIT_MARGIN`` rows per lifted feature on, the
linearized refits decide by the mean and the majority alone).

A count ``k`` passes when its cross-validated error over the 5 interleaved folds is
at most the lifted fit's plus ``SLACK`` standard errors (``sklearn_linattn._heads.
SLACK``, set here for each run: 0 is the package's rule, 1 glmnet's
one-standard-error rule). For each value:

1. the noisy grid of ``bench_heads.py`` (d in ``--dims``, H in {1, 2, d/2}, noise 1%
   and 10%, 1 and 3 outputs, constant and input-dependent noise, 5 seeds): the
   fits that return the generating count;
2. the real data sets of ``bench_real_sequences.py`` (aeon's, statsmodels' and
   sklearn's digits, on their own splits; needs aeon and statsmodels): the
   default recipe's test score and heads, against the same recipe with
   ``n_heads=None`` (the lifted fit's own heads), measured once.

3. With ``--refits``: how a fold's refit is made. For every count the default
   search tests, its cross-validated error with each fold's refit linearized at
   the full fit (one Gauss-Newton step: the search's first test), refitted from
   the full fit's heads to convergence (the read-out's rule before this), and
   fitted from the fold's own starts (the verdict: the cross-validated error of
   ``n_heads=k`` itself), against the test score of ``n_heads=k`` fitted on all
   the training data; on sklearn digits and on noisy regressions whose counts
   have about as many parameters as rows (``refit_cases``).
4. With ``--near-interpolation``: noisy regressions with 1.05 p to 1.4 p sequences
   (``near_interpolation``), the default's test error against ``n_heads=None``'s.
5. With ``--low-signal``: a seeded random grid of small, noisy problems (``low_signal``:
   150 regressions with 1.5 p to 8 p sequences and noise of 10% to 100% of the
   targets' spread, 150 classification draws with 0.5 p to 5 p sequences, at least 6,
   of which those missing a class are skipped), the default's test error
   (accuracy) against ``n_heads=None``'s.
6. With ``--many-rows``: a seeded random grid with 10 p to 50 p sequences
   (``many_rows``: 80 regressions and 80 classifications, where the package
   decides on the linearized refits alone), the default's test error (accuracy)
   against ``n_heads=None``'s, its heads and its read-out's time.
7. With ``--drift``: heads that drift along the null space of a singular training
   metric (``drift``): 12 heads on 600 sklearn digits images and the default on
   aeon's JapaneseVowels (if installed), without the penalized polish
   (``DRIFT = inf``) and with it from 10 times the lifted norm on, and the
   default's norm over the lifted fit's on 60 small noisy problems; and the
   default recipe of ``bench_real_sequences.py`` on statsmodels' El Nino (if
   installed) with ``DRIFT = inf`` and as shipped: every count's distance to
   the lifted fit, training error (the lifted fit's beside it), linearized and
   own refits' cross-validated errors, threshold and verdict, the heads
   returned and their test R^2.
8. With ``--folds-size``: noisy regressions with 1.8 p to 3 p sequences
   (``folds_size``), the default against ``n_heads=None`` with near interpolation
   judged at the folds' size (as shipped) and on all the rows (before).
9. With ``--refits-stopped``: 80 seeded small noisy problems (``refits_stopped``,
   regressions and classifications), the default read-out with the folds' refits
   stopped at the first folds that fail a count (as shipped) and with every fold
   refitted: the same counts, verdicts and heads (checked), and the work of each.
10. With ``--repeated-outputs``: outputs that repeat one another, ``[y, y + eps
    noise]`` against ``y`` alone (``repeated_outputs``), with the outputs counted
    as their noise's effective number (as shipped) and as independent ones.
11. With ``--same-start``: 60 seeded default fits of noisy regressions
    (``same_start``; d 3 to 6, 1 to 3 outputs, 3 p to 20 p sequences, noise 10% to
    100%): for every pair of screened starts that were both refined, their
    distance after the screen (relative, in lifted coefficients) and whether the
    second ended at a lower loss (``SAME_START``: starts closer than it are not
    both refined).
12. With ``--classifiers``: classifications where the folds' size matters
    (``classifiers``): sklearn digits (rows of 8 pixels as tokens, plain
    defaults) on 6 random splits (``train_test_split(random_state=s)``), the first
    1000 images, and rows plus positions on a stratified split; 60 seeded
    five-class problems (the largest of 5 outputs of a d = 3 model, 10% of the
    labels redrawn, 45 sequences; those missing a class skipped) tested on 3000
    new sequences; aeon's ArrowHead (if installed; ``SeriesToTokens(window=2)``,
    one position, ``alpha=0.01``) on 14 stratified halves. The default's
    accuracy against ``n_heads=None``'s, its heads, whether the search finished.
13. With ``--outputs-counted``: how several outputs are counted
    (``outputs_counted``), on the models of part 10 (seeds 0 to 5, 3 p sequences,
    10% noise): ``[y, 3 y]`` and, with an intercept, ``[y, 5]`` (a constant
    output) against ``y`` alone, their heads with the outputs counted as their
    noise's effective number (as shipped) and as independent ones; and
    ``head_search_.effective_outputs`` of 10 outputs with independent noise
    (10%) of a d = 3, H = 2 model on 60 and on 600 sequences.
14. With ``--interpolation-peak``: a classifier whose folds sit at the lifted
    fit's interpolation peak (``interpolation_peak``: the case of
    ``tests/test_heads.py::test_a_classifier_near_its_interpolation_peak_keeps_the_lifted_fit``,
    28 training sequences of d = 3, three classes, ``alpha=0``): the lifted fit's
    held-out misclassification on the 5 interleaved folds from the other 4 (the
    search's ``cv_error`` and explicit refits) and from the ``K - 2`` folds other
    than each fold and the next (explicit refits), ``n_heads=1``'s
    cross-validated misclassification and threshold, and the test accuracies of
    the default, ``n_heads=1`` and ``n_heads=None``.
15. With ``--output-spread``: a head that only one of six outputs uses
    (``output_spread``: the data of ``tests/conftest.py::hidden_head_outputs``,
    d = 4, one head drives outputs 0 to 4 with noise a tenth of their spread,
    another output 5 alone with noise as large as its signal; 400 sequences,
    seeds 0 to 9): the default's heads and its test error on output 5 (against
    the noiseless targets of 4000 new sequences) over ``n_heads=None``'s, with
    the per-output test (``OUTPUT_SPREAD``, as shipped) and without it
    (``OUTPUT_SPREAD = inf``).
"""

import argparse
import contextlib
import json
import time
import warnings

import bench_heads
import bench_real_sequences as real
import numpy as np
from _common import ReadOutClock
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklearn_linattn._estimators as estimators
import sklearn_linattn._heads as heads
import sklearn_linattn._low_rank as low_rank
from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    MultiHeadLinearAttention,
)
from sklearn_linattn.datasets import make_random_mhla
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
)

_GCV_FAILS = heads._Search.gcv_fails


def _gcv_everywhere(search, k, gcv_error):
    """Every count's generalized cross-validated error at most the lifted fit's
    (near interpolation, the package's stricter check)."""
    return _GCV_FAILS(search, k, gcv_error) or gcv_error > search.lifted_gcv


def set_rule(rule):
    """Set the rule beside the cross-validated mean (module docstring)."""
    if rule in ("mean", "mean-gcv", "mean-threshold"):
        heads.FOLDS_MAJORITY = -1.0  # any number of folds
    elif rule == "four-folds":
        heads.FOLDS_MAJORITY = 0.7
    if rule == "mean-gcv":
        heads._Search.gcv_fails = _gcv_everywhere
    if rule == "mean-threshold":
        heads.INTERPOLATION_MARGIN = np.inf
    if rule == "refit-all":
        heads.REFIT_MARGIN = np.inf
    if rule == "linearized-majority":
        heads._Search.linearized_verdict = _linearized_majority


def _linearized_majority(search, k, count, errors, output_errors=None):
    """From REFIT_MARGIN rows per lifted feature on, the linearized refits'
    verdict by the mean and the majority of the folds, every fold or not, and
    for misclassification too (``_Search.linearized_verdict``'s signature)."""
    p = search.d * search.d * (search.d + 1) // 2
    if search.n_observations >= heads.REFIT_MARGIN * p:
        margin = 1 + heads.LINEARIZED_TOL
        return search.verdict(k, count, errors, margin, output_errors)
    return None


RULES = (
    "package", "mean", "four-folds", "mean-gcv", "mean-threshold", "refit-all",
    "linearized-majority",
)


def grid(dims):
    rows = []
    for d in dims:
        for n_heads in sorted({1, 2, d // 2}):
            for noise in (0.01, 0.1):
                for n_outputs in (1, 3):
                    for scaled in (False, True):
                        for seed in range(5):
                            _, X, y = bench_heads.synthetic(
                                1000 + seed, d, n_heads, n_outputs, noise, scaled
                            )
                            found = LinearAttentionRegressor().fit(X, y).n_heads_
                            rows.append(dict(
                                d=d, H=n_heads, noise=noise, n_outputs=n_outputs,
                                scaled=scaled, seed=seed, found=int(found),
                            ))
    return rows


def real_sets(names):
    rows = []
    for name in names:
        data = real.DATA_SETS[name]()
        ours = real.fit_and_score("default", data)
        rows.append(dict(
            name=name, score=ours.get("score"), n_heads=ours.get("n_heads"),
            criterion=ours.get("head_criterion"),
        ))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def refit_cases():
    """sklearn digits (the split of bench_default_cases.py) and noisy regressions
    whose counts have about as many parameters as rows, each with its estimator,
    train and test split. The regressions are d = 8, 6 tokens, 10% noise: 150
    sequences of 3 heads with alpha = 0.01, 200 of 4 with alpha = 1e-3, and 300 of 3
    with alpha = 0.01 (a one-head fit has 71 parameters: about 4 rows each)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from sklearn_linattn import LinearAttentionClassifier
    from sklearn_linattn.datasets import make_random_mhla

    X, y = load_digits(return_X_y=True)
    digits = train_test_split(X, y, random_state=0)
    yield "digits", lambda **k: LinearAttentionClassifier(token_dim=8, **k), digits
    for n, n_heads, alpha in ((150, 3, 0.01), (200, 4, 1e-3), (300, 3, 0.01)):
        X, y, _ = make_random_mhla(
            n + 2000, 6, 8, n_heads=n_heads, noise=0.1, random_state=1
        )

        def make(alpha=alpha, **k):
            return LinearAttentionRegressor(alpha=alpha, **k)

        split = X[:n], X[n:], y[:n], y[n:]
        yield f"d=8, {n} rows, {n_heads} heads, alpha={alpha:g}", make, split


def refits_from_the_full_fit(search, query_rows):
    """The held-out error of each fold's refit from the full fit's heads, run by
    the full fits' rule (what the read-out did before it refitted each fold from
    its own starts)."""
    folds, errors = search.folds, []
    for fold in range(folds.n_folds):
        design = folds.design(fold)
        accept, resolution = search.stop_rules(design)
        refit = low_rank.fit_heads(
            design, query_rows, heads.FIT_ITER, accept, resolution=resolution
        )
        errors.append(folds.error(fold, *refit[:2]))
    return folds.summary(errors)[0]


def fold_refits():
    """Each count's cross-validated error by the three refits of a fold: linearized
    at the full fit, refitted from the full fit, and from the fold's own starts
    (the package's verdict: the cross-validated error of n_heads=k itself), with
    the test score of n_heads=k fitted on all the training data."""
    rows, original = [], heads._Search.linearized_refits
    for name, make, (X_train, X_test, y_train, y_test) in refit_cases():
        from_full, raw_lifted = {}, []

        def linearized_refits(self, k, value_rows, query_rows, count):
            from_full[k] = refits_from_the_full_fit(self, query_rows)
            raw_lifted.append(self.lifted_cv[0])  # in the folds' own units
            return original(self, k, value_rows, query_rows, count)

        heads._Search.linearized_refits = linearized_refits
        try:
            start = time.perf_counter()
            model = make().fit(X_train, y_train)
            seconds = time.perf_counter() - start
        finally:
            heads._Search.linearized_refits = original
        search = model.head_search_
        scale = search.cv_error / raw_lifted[0]  # to the reported units
        counts = sorted(from_full)
        test = {
            k: make(n_heads=k).fit(X_train, y_train).score(X_test, y_test)
            for k in counts
        }
        by_count = {int(c.n_heads): c for c in search.counts}
        rows.append(dict(
            data=name, seconds=seconds, n_heads=int(model.n_heads_),
            score=model.score(X_test, y_test),
            lifted_score=make(n_heads=None).fit(X_train, y_train).score(X_test, y_test),
            lifted_cv=search.cv_error,
            counts={
                k: dict(
                    linearized=by_count[k].linearized_cv_error,
                    from_full=from_full[k] * scale,
                    own_starts=by_count[k].cv_error,
                    passes=by_count[k].passes,
                    test_score=test[k],
                )
                for k in counts
            },
        ))
        print(json.dumps(rows[-1]), flush=True)
    for row in rows:
        print(f"\n{row['data']}: cross-validated error of each count, by the kind of "
              f"fold refit (lifted fit: {row['lifted_cv']:.4g}; returned "
              f"{row['n_heads']} heads, test score {row['score']:.3f} against "
              f"{row['lifted_score']:.3f} for n_heads=None, fit {row['seconds']:.2f} s)"
              "\n")
        print("| heads | linearized | from the full fit | own starts (verdict) | "
              "test score of n_heads=k |")
        print("| --- | --- | --- | --- | --- |")
        for k, cells in row["counts"].items():
            verdict = {True: "passes", False: "fails", None: "-"}[cells["passes"]]
            own = cells["own_starts"]
            own = "-" if np.isnan(own) else f"{own:.4g}"
            print(f"| {k} | {cells['linearized']:.4g} | {cells['from_full']:.4g} | "
                  f"{own} ({verdict}) | {cells['test_score']:.3f} |")
    return rows


def near_interpolation():
    """Part 4: noisy regressions with 1.05 p to 1.4 p sequences (the folds' fits,
    on 80% of them, at or below the lifted fit's interpolation point): d in {3, 4,
    5}, 2 and 3 generating heads, 1 and 3 outputs, alpha 0 and 1e-3, an intercept,
    noise of 10% of the targets' spread, 2 seeds; 10 tokens a sequence, 4000 new
    sequences to test on. Reported: the default's test error over n_heads=None's."""
    from sklearn_linattn.datasets import make_random_mhla

    rows = []
    for d in (3, 4, 5):
        p = d * d * (d + 1) // 2
        for share in (1.05, 1.2, 1.4):
            n = int(share * p)
            for n_heads in (2, 3):
                for n_outputs in (1, 3):
                    for alpha in (0.0, 1e-3):
                        for seed in (5000, 5001):
                            X, y, _ = make_random_mhla(
                                n + 4000, 10, d, n_heads=n_heads,
                                n_outputs=n_outputs, random_state=seed,
                            )
                            rng = np.random.default_rng(seed + 1000)
                            y = y + 0.1 * y[:n].std() * rng.normal(size=y.shape)
                            errors = {}
                            for name in ("auto", None):
                                model = LinearAttentionRegressor(
                                    n_heads=name, alpha=alpha, fit_intercept=True
                                ).fit(X[:n], y[:n])
                                errors[name] = float(
                                    np.mean((model.predict(X[n:]) - y[n:]) ** 2)
                                )
                                if name == "auto":
                                    heads = int(model.n_heads_)
                            rows.append(dict(
                                d=d, n=n, share=share, H=n_heads, n_outputs=n_outputs,
                                alpha=alpha, seed=seed, heads=heads,
                                ratio=errors["auto"] / errors[None],
                            ))
                            print(json.dumps(rows[-1]), flush=True)
    ratios = np.array([row["ratio"] for row in rows])
    print(f"\nnear interpolation: {len(rows)} fits; the default's test error above "
          f"1.3 times n_heads=None's in {int(np.sum(ratios > 1.3))}, above 2 times "
          f"in {int(np.sum(ratios > 2))}; largest {ratios.max():.2f}, median "
          f"{np.median(ratios):.2f}")
    return rows


FOLDS_SIZE_SHARES = (1.8, 2.0, 2.1, 2.25, 2.4, 2.5, 2.6, 2.75, 3.0)


def folds_size(n_seeds=60):
    """Part 8: where generalized cross-validation stops checking. Noisy
    regressions of 2 generating heads (d = 3 with one output, d = 4 with three;
    noise of 30% of each output's spread, 8 tokens, 2000 new sequences to test
    on) with 1.8 p to 3 p sequences, ``n_seeds`` seeds a size; the default's test
    error (noisy targets) against n_heads=None's, with near interpolation judged
    at the folds' size (as shipped: fewer than ``INTERPOLATION_MARGIN`` equations
    per degree of freedom in fits to 80% of the rows) and on all the rows (the
    margin times 0.8, the rule before)."""
    from sklearn_linattn.datasets import make_random_mhla

    shipped = heads.INTERPOLATION_MARGIN
    rows = []
    for d, n_outputs in ((3, 1), (4, 3)):
        p = d * d * (d + 1) // 2
        for share in FOLDS_SIZE_SHARES:
            n = int(round(share * p))
            for seed in range(n_seeds):
                X, y, _ = make_random_mhla(
                    n + 2000, 8, d, n_heads=2, n_outputs=n_outputs, random_state=seed
                )
                rng = np.random.default_rng(seed)
                y = y + 0.3 * y.std(axis=0) * rng.normal(size=y.shape)

                def test_error(n_heads):
                    model = LinearAttentionRegressor(n_heads=n_heads).fit(X[:n], y[:n])
                    return float(np.mean((model.predict(X[n:]) - y[n:]) ** 2))

                lifted = test_error(None)
                row = dict(d=d, n_outputs=n_outputs, share=share, n=n, seed=seed)
                for rule, margin in (("folds", shipped), ("all rows", 0.8 * shipped)):
                    heads.INTERPOLATION_MARGIN = margin
                    row[rule] = test_error("auto") / lifted
                heads.INTERPOLATION_MARGIN = shipped
                rows.append(row)
                print(json.dumps(rows[-1]), flush=True)
    print("\n| d, outputs | sequences / p | above 1.3 times, folds' size | largest "
          "| above 1.3 times, all rows | largest |")
    print("| --- | --- | --- | --- | --- | --- |")
    for d, n_outputs in ((3, 1), (4, 3)):
        for share in FOLDS_SIZE_SHARES:
            cell = [r for r in rows if (r["d"], r["share"]) == (d, share)]
            folds = np.array([r["folds"] for r in cell])
            every = np.array([r["all rows"] for r in cell])
            print(f"| {d}, {n_outputs} | {share:g} | {np.sum(folds > 1.3)} of "
                  f"{len(cell)} | {folds.max():.2f} | {np.sum(every > 1.3)} | "
                  f"{every.max():.2f} |")
    return rows


def _random_attention_data(seed, n, d, n_heads, n_outputs, n_tokens, noise):
    """Sequences of Gaussian tokens labelled by a random MHLA (V, Q entries
    N(0, 1)) plus noise of ``noise`` times the targets' spread; 2000 new
    sequences to test on (noiseless targets)."""
    rng = np.random.default_rng(seed)
    truth = MultiHeadLinearAttention(
        rng.normal(size=(n_heads, n_outputs, d)), rng.normal(size=(n_heads, d, d))
    )
    X = rng.normal(size=(n, n_tokens, d))
    X_test = rng.normal(size=(2000, n_tokens, d))
    y, y_test = truth.predict(X), truth.predict(X_test)
    y = y + noise * y.std() * rng.normal(size=y.shape)
    if n_outputs == 1:
        y, y_test = y[:, 0], y_test[:, 0]
    return X, y, X_test, y_test


def low_signal(n_fits=150):
    """Part 5: a seeded random grid of small noisy problems, the default against
    n_heads=None. Regressions: d in {3, 4}, 1.5 p to 8 p sequences of 2 or 8
    tokens, H in {1, 2, d}, 1 to 3 outputs, alpha 0 or 0.01, noise 10%, 30% or
    100% of the targets' spread; the ratio of test errors. Classifications: d in
    {2, 3, 4}, 0.5 p to 5 p sequences, 2 classes (the target above its median) or
    3 (the largest of three outputs), alpha 0, 1e-3 or 0.1, with and without an
    intercept; the difference of test accuracies (n_heads=None's less the
    default's)."""
    rows = []
    rng = np.random.default_rng(1)
    for _ in range(n_fits):
        d = int(rng.choice([3, 4]))
        share = float(rng.choice([1.5, 2.0, 2.5, 3.0, 4.0, 8.0]))
        n_heads, n_outputs = int(rng.choice([1, 2, d])), int(rng.choice([1, 2, 3]))
        alpha, n_tokens = float(rng.choice([0.0, 1e-2])), int(rng.choice([2, 8]))
        noise, seed = float(rng.choice([0.1, 0.3, 1.0])), int(rng.integers(1e6))
        n = int(share * d * d * (d + 1) // 2)
        X, y, X_test, y_test = _random_attention_data(
            seed, n, d, n_heads, n_outputs, n_tokens, noise
        )
        errors = {}
        for name in ("auto", None):
            model = LinearAttentionRegressor(n_heads=name, alpha=alpha).fit(X, y)
            errors[name] = float(np.mean((model.predict(X_test) - y_test) ** 2))
            if name == "auto":
                found = int(model.n_heads_)
        rows.append(dict(
            task="regression", d=d, share=share, H=n_heads, n_outputs=n_outputs,
            alpha=alpha, n_tokens=n_tokens, noise=noise, seed=seed, heads=found,
            ratio=errors["auto"] / errors[None],
        ))
        print(json.dumps(rows[-1]), flush=True)
    rng = np.random.default_rng(2)
    for _ in range(n_fits):
        d = int(rng.choice([2, 3, 4]))
        share = float(rng.choice([0.5, 1.0, 1.5, 2.0, 3.0, 5.0]))
        n_heads, n_classes = int(rng.choice([1, 2, d])), int(rng.choice([2, 3]))
        alpha = float(rng.choice([0.0, 1e-3, 1e-1]))
        fit_intercept = bool(rng.integers(2))
        n_tokens, noise = int(rng.choice([2, 8])), float(rng.choice([0.1, 0.5]))
        seed = int(rng.integers(1e6))
        n = max(6, int(share * d * d * (d + 1) // 2))
        X, y, X_test, y_test = _random_attention_data(
            seed, n, d, n_heads, n_classes if n_classes > 2 else 1, n_tokens, noise
        )
        if n_classes == 2:
            labels, test_labels = y > np.median(y), y_test > np.median(y)
        else:
            labels, test_labels = np.argmax(y, 1), np.argmax(y_test, 1)
        if len(np.unique(labels)) < n_classes:
            continue
        accuracy = {}
        for name in ("auto", None):
            model = LinearAttentionClassifier(
                n_heads=name, alpha=alpha, fit_intercept=fit_intercept
            ).fit(X, labels)
            accuracy[name] = float(np.mean(model.predict(X_test) == test_labels))
            if name == "auto":
                found = int(model.n_heads_)
        rows.append(dict(
            task="classification", d=d, share=share, H=n_heads, n_classes=n_classes,
            alpha=alpha, fit_intercept=fit_intercept, n_tokens=n_tokens, noise=noise,
            seed=seed, heads=found, accuracy=accuracy["auto"],
            lifted_accuracy=accuracy[None],
        ))
        print(json.dumps(rows[-1]), flush=True)
    _print_against_lifted("low signal", rows, (1.3, 2.0))
    return rows


def refits_stopped(n_fits=80):
    """Part 9: the read-out's work with the folds' refits stopped at the first
    folds that fail a count (``_Search.fails_whatever_follows``, as shipped) and
    with every fold refitted, on seeded small noisy problems (d in {3, 4}, 1.5 p
    to 8 p sequences of 8 tokens, H in {1, 2, d}, 1 or 2 outputs, noise 30% or
    100% of the targets' spread; classifications of the first output's sign).
    The counts tried, their verdicts and the heads must be the same."""
    stopping = heads._Search.fails_whatever_follows
    rows = []
    rng = np.random.default_rng(9)
    for _ in range(n_fits):
        d = int(rng.choice([3, 4]))
        share = float(rng.choice([1.5, 2.0, 3.0, 4.0, 8.0]))
        n_heads, n_outputs = int(rng.choice([1, 2, d])), int(rng.choice([1, 2]))
        noise, seed = float(rng.choice([0.3, 1.0])), int(rng.integers(1e6))
        classify = bool(rng.integers(2))
        n = int(share * d * d * (d + 1) // 2)
        X, y, _, _ = _random_attention_data(seed, n, d, n_heads, n_outputs, 8, noise)
        if classify:
            estimator, y = LinearAttentionClassifier(), np.reshape(y, (n, -1))[:, 0] > 0
        else:
            estimator = LinearAttentionRegressor()
        searches = {}
        for label, rule in (("stopped", stopping), ("every fold", lambda *_: False)):
            heads._Search.fails_whatever_follows = rule
            try:
                searches[label] = clone(estimator).fit(X, y).head_search_
            finally:
                heads._Search.fails_whatever_follows = stopping
        stopped, every = searches["stopped"], searches["every fold"]
        same = (
            stopped.counts_tried == every.counts_tried
            and [c.passes for c in stopped.counts] == [c.passes for c in every.counts]
            and np.array_equal(stopped.value_matrices, every.value_matrices)
        )
        rows.append(dict(
            task="classification" if classify else "regression", d=d, share=share,
            H=n_heads, n_outputs=n_outputs, noise=noise, seed=seed,
            heads=int(stopped.n_heads), same=bool(same),
            stopped_counts=sum((c.folds_refitted or 5) < 5 for c in stopped.counts),
            work=float(stopped.work), every_fold_work=float(every.work),
        ))
        print(json.dumps(rows[-1]), flush=True)
    ratios = np.array([r["work"] / r["every_fold_work"] for r in rows])
    total = sum(r["work"] for r in rows) / sum(r["every_fold_work"] for r in rows)
    print(f"\nrefits stopped early: {len(rows)} fits, the same counts, verdicts and "
          f"heads in {sum(r['same'] for r in rows)}; counts stopped early in "
          f"{sum(r['stopped_counts'] > 0 for r in rows)} fits; work over every "
          f"fold refitted: total {total:.3f}, median {np.median(ratios):.3f}, "
          f"smallest {ratios.min():.3f}")
    return rows


def _one_output_model(seed, d, n_heads, n_test=0):
    """Parts 10 and 13's data: a random MHLA of one output (V, Q entries N(0,
    1/d)), 3 p sequences of 16 tokens (and ``n_test`` more, drawn next), targets
    with noise of 10% of their spread. Returns ``(rng, truth, X, X_test, clean,
    y)``, ``rng`` to draw more from."""
    rng = np.random.default_rng(seed)
    scale = 1 / np.sqrt(d)
    truth = MultiHeadLinearAttention(
        rng.normal(scale=scale, size=(n_heads, 1, d)),
        rng.normal(scale=scale, size=(n_heads, d, d)),
    )
    n = 3 * d * d * (d + 1) // 2
    X = rng.normal(scale=0.25, size=(n, 16, d))
    X_test = rng.normal(scale=0.25, size=(n_test, 16, d)) if n_test else None
    clean = truth.predict(X)[:, 0]
    y = clean + 0.1 * clean.std() * rng.normal(size=n)
    return rng, truth, X, X_test, clean, y


@contextlib.contextmanager
def _outputs_counted_by(rule):
    """The estimators' count of effective outputs replaced by ``rule`` (None
    from it: the outputs as independent ones)."""
    shipped = estimators._effective_outputs
    estimators._effective_outputs = rule
    try:
        yield
    finally:
        estimators._effective_outputs = shipped


def repeated_outputs():
    """Part 10: two outputs that repeat one another, ``[y, y + eps s noise]``
    (``s`` the spread of ``y``, eps 0, 1e-3 and 1e-2), against ``y`` alone:
    seeds 0 to 5 of a random MHLA ((d, H) in (3, 2), (4, 3), (4, 2), (5, 3);
    V, Q entries N(0, 1/d)), 3 p sequences of 16 tokens, noise 10% of ``y``'s
    spread; heads and relative test errors against the noiseless targets of
    2000 new sequences, with the outputs counted as their effective number (as
    shipped) and as independent ones (``_effective_outputs`` returning None)."""
    shipped = estimators._effective_outputs
    rows = []
    for eps in (0.0, 1e-3, 1e-2):
        for seed in range(6):
            for d, n_heads in ((3, 2), (4, 3), (4, 2), (5, 3)):
                rng, truth, X, X_test, _, y = _one_output_model(seed, d, n_heads, 2000)
                clean_test = truth.predict(X_test)[:, 0]
                Y = np.c_[y, y + eps * y.std() * rng.normal(size=len(y))]

                def error(model, Z, target):
                    predicted = np.reshape(model.predict(Z), (len(Z), -1))[:, 0]
                    return float(np.mean((predicted - target) ** 2) / np.var(target))

                alone = LinearAttentionRegressor().fit(X, y)
                row = dict(eps=eps, seed=seed, d=d, H=n_heads,
                           heads_alone=int(alone.n_heads_),
                           error_alone=error(alone, X_test, clean_test))
                for label, rule in (("effective", shipped),
                                    ("independent", lambda *_: None)):
                    with _outputs_counted_by(rule):
                        both = LinearAttentionRegressor().fit(X, Y)
                    row[f"heads_{label}"] = int(both.n_heads_)
                    row[f"error_{label}"] = error(both, X_test, clean_test)
                rows.append(row)
                print(json.dumps(row), flush=True)
    for eps in (0.0, 1e-3, 1e-2):
        part = [r for r in rows if r["eps"] == eps]
        cells = []
        for label in ("independent", "effective"):
            more = sum(r[f"heads_{label}"] > r["heads_alone"] for r in part)
            ratio = np.exp(np.mean([np.log(r[f"error_{label}"] / r["error_alone"])
                                    for r in part]))
            cells.append(f"{label}: more heads than y in {more}, error over y's "
                         f"{ratio:.3f} (geometric mean)")
        print(f"eps {eps:g}, {len(part)} fits: " + "; ".join(cells))
    return rows


def outputs_counted():
    """Part 13: ``[y, 3 y]`` and ``[y, 5]`` against ``y``, the outputs counted as
    their effective number and as independent ones; the effective number of 10
    independent outputs on few and many rows."""
    shipped = estimators._effective_outputs
    rows = []
    for seed in range(6):
        for d, n_heads in ((3, 2), (4, 3), (4, 2), (5, 3)):
            _, _, X, _, _, y = _one_output_model(seed, d, n_heads)
            n = len(y)
            for kind, Y, intercept in (("3y", np.c_[y, 3 * y], False),
                                       ("constant", np.c_[y, np.full(n, 5.0)], True)):
                alone = LinearAttentionRegressor(fit_intercept=intercept).fit(X, y)
                row = dict(kind=kind, seed=seed, d=d, H=n_heads,
                           heads_alone=int(alone.n_heads_))
                for label, rule in (("effective", shipped),
                                    ("independent", lambda *_: None)):
                    with _outputs_counted_by(rule):
                        both = LinearAttentionRegressor(fit_intercept=intercept)
                        both.fit(X, Y)
                    row[f"heads_{label}"] = int(both.n_heads_)
                    row[f"criterion_{label}"] = both.head_search_.criterion
                rows.append(row)
                print(json.dumps(row), flush=True)
    for kind in ("3y", "constant"):
        part = [r for r in rows if r["kind"] == kind]
        cells = []
        for label in ("effective", "independent"):
            same = sum(r[f"heads_{label}"] == r["heads_alone"] for r in part)
            more = sum(r[f"heads_{label}"] > r["heads_alone"] for r in part)
            lifted = sum(r[f"heads_{label}"] > r["heads_alone"]
                         and r[f"criterion_{label}"] == "lifted" for r in part)
            cells.append(f"{label}: the heads of y in {same}, more in {more} "
                         f"(the lifted fit's in {lifted})")
        print(f"[y, {kind}], {len(part)} fits: " + "; ".join(cells))
    effective = []
    for n in (60, 600):
        for seed in range(6):
            rng = np.random.default_rng(seed)
            truth = MultiHeadLinearAttention(
                rng.normal(scale=3 ** -0.5, size=(2, 10, 3)),
                rng.normal(scale=3 ** -0.5, size=(2, 3, 3)),
            )
            X = rng.normal(scale=0.25, size=(n, 16, 3))
            clean = truth.predict(X)
            Y = clean + 0.1 * clean.std(axis=0) * rng.normal(size=clean.shape)
            model = LinearAttentionRegressor().fit(X, Y)
            row = dict(kind="ten outputs", seed=seed, n=n,
                       effective_outputs=float(model.head_search_.effective_outputs))
            effective.append(row)
            print(json.dumps(row), flush=True)
        values = [r["effective_outputs"] for r in effective if r["n"] == n]
        print(f"10 independent outputs, {n} sequences of d = 3: effective number "
              f"{np.median(values):.1f} (median of {len(values)}; "
              f"{min(values):.1f} to {max(values):.1f})")
    return rows + effective


def interpolation_peak():
    """Part 14: the lifted fit's misclassification from 4 and from 3 folds, and
    one head's, on the test suite's interpolation-peak classification."""
    from sklearn.model_selection import train_test_split

    n = 40
    X, y, _ = make_random_mhla(n, 8, 3, n_heads=2, noise=0.0, random_state=516)
    rng = np.random.default_rng(1016)
    scores = y + 0.5 * np.std(y) * rng.normal(size=n)
    labels = np.digitize(scores, np.quantile(scores, [1 / 3, 2 / 3]))
    train, test = train_test_split(
        np.arange(n), test_size=0.3, random_state=16, stratify=labels
    )
    X_train, y_train = X[train], labels[train]
    folds = np.arange(len(train)) % 5  # the search's interleaved folds

    def lifted_misclassified(skip):
        wrong = 0
        for j in range(5):
            keep = ~np.isin(folds, [(j + s) % 5 for s in skip])
            model = LinearAttentionClassifier(alpha=0.0, n_heads=None)
            model.fit(X_train[keep], y_train[keep])
            wrong += np.sum(model.predict(X_train[folds == j]) != y_train[folds == j])
        return float(wrong / len(train))

    row = dict(n_train=len(train))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # alpha = 0 interpolates
        fits = {
            label: LinearAttentionClassifier(alpha=0.0, n_heads=k).fit(X_train, y_train)
            for label, k in (("default", "auto"), ("one_head", 1), ("lifted", None))
        }
        row.update(
            lifted_cv=float(fits["default"].head_search_.cv_error),
            lifted_from_four=lifted_misclassified([0]),
            lifted_from_three=lifted_misclassified([0, 1]),
        )
    one = fits["one_head"].head_search_.counts[0]
    row.update(
        one_head_cv=float(one.cv_error), one_head_threshold=float(one.threshold),
        one_head_passes=bool(one.passes), default_heads=int(fits["default"].n_heads_),
        **{f"{label}_accuracy": float(model.score(X[test], labels[test]))
           for label, model in fits.items()},
    )
    print(json.dumps(row), flush=True)
    print(f"{row['n_train']} training sequences: the lifted fit misclassifies "
          f"{row['lifted_cv']:.3f} of its folds' held-out rows (search; refitted "
          f"from 4 folds: {row['lifted_from_four']:.3f}), "
          f"{row['lifted_from_three']:.3f} from K - 2 = 3 folds; n_heads=1: "
          f"{row['one_head_cv']:.3f} against its "
          f"threshold {row['one_head_threshold']:.3f} (passes: "
          f"{row['one_head_passes']}); test accuracy: default ({row['default_heads']}"
          f" heads) {row['default_accuracy']:.3f}, n_heads=1 "
          f"{row['one_head_accuracy']:.3f}, n_heads=None {row['lifted_accuracy']:.3f}")
    return row


def hidden_head_outputs(seed, n_samples=400, n_test=0):
    """Six outputs of d = 4, as ``tests/conftest.py`` draws them: one head drives
    outputs 0 to 4 (noise a tenth of their spread), another only output 5 (noise
    as large as its signal)."""
    rng = np.random.default_rng(seed)
    d, n_outputs = 4, 6
    values = np.zeros((2, n_outputs, d))
    values[0, :-1] = rng.normal(size=(n_outputs - 1, d))
    values[1, -1] = rng.normal(size=d)
    truth = MultiHeadLinearAttention(values, rng.normal(size=(2, d, d)))
    X = rng.normal(scale=1 / np.sqrt(8), size=(n_samples + n_test, 8, d))
    clean = truth.predict(X)
    spread = clean[:n_samples].std(axis=0) / 10
    spread[-1] = clean[:n_samples, -1].std()
    return X, clean + rng.normal(size=clean.shape) * spread, clean


def output_spread():
    """Part 15: the default with and without the per-output test, on a head that
    only the last of six outputs uses."""
    shipped, n = heads.OUTPUT_SPREAD, 400
    rows = []
    for seed in range(10):
        X, y, clean = hidden_head_outputs(seed, n, 4000)

        def error(model):
            return float(np.mean((model.predict(X[n:])[:, -1] - clean[n:, -1]) ** 2))

        lifted = error(LinearAttentionRegressor(n_heads=None).fit(X[:n], y[:n]))
        row = dict(seed=seed)
        for label, spread in (("shipped", shipped), ("without", np.inf)):
            heads.OUTPUT_SPREAD = spread
            try:
                model = LinearAttentionRegressor().fit(X[:n], y[:n])
            finally:
                heads.OUTPUT_SPREAD = shipped
            row[f"heads_{label}"] = int(model.n_heads_)
            row[f"ratio_{label}"] = error(model) / lifted
        rows.append(row)
        print(json.dumps(row), flush=True)
    for label in ("shipped", "without"):
        one = [r[f"ratio_{label}"] for r in rows if r[f"heads_{label}"] == 1]
        print(f"OUTPUT_SPREAD {'as shipped' if label == 'shipped' else '= inf'}: "
              f"1 head in {len(one)} of {len(rows)}"
              + (f" (output 5's test error {min(one):.2f} to {max(one):.2f} times "
                 f"n_heads=None's)" if one else "")
              + "; largest ratio on output 5 "
              f"{max(r[f'ratio_{label}'] for r in rows):.2f}")
    return rows


def _print_against_lifted(label, rows, levels):
    """The regressions' test errors over n_heads=None's above each of the two
    ``levels`` and below 0.9, and the classifications more than 0.02 of
    accuracy below or above n_heads=None's."""
    ratios = np.array([r["ratio"] for r in rows if r["task"] == "regression"])
    drops = np.array(
        [r["lifted_accuracy"] - r["accuracy"] for r in rows if "accuracy" in r]
    )
    low, high = levels
    print(f"\n{label}, {len(ratios)} regressions: the default's test error above "
          f"{low:g} times n_heads=None's in {int(np.sum(ratios > low))}, above "
          f"{high:g} times in {int(np.sum(ratios > high))} (largest "
          f"{ratios.max():.2f}), below 0.9 times in {int(np.sum(ratios < 0.9))}; "
          f"median {np.median(ratios):.3f}")
    print(f"{label}, {len(drops)} classifications: the default's accuracy more "
          f"than 0.02 below n_heads=None's in {int(np.sum(drops > 0.02))} (largest "
          f"{drops.max():.3f}), more than 0.02 above in {int(np.sum(drops < -0.02))}")


def many_rows(n_fits=80):
    """Part 6: a seeded random grid with 10 p to 50 p sequences of 8 tokens. d in
    {3, 4, 6, 8}, H in {1, 2, d/2}, noise 10%, 30% or 100% of the targets'
    spread, alpha 0 or 0.01; regressions with 1 or 3 outputs (the ratio of test
    errors, the default's over n_heads=None's), classifications with 2 classes
    (the target above its median) or 3 (the largest of three outputs; the
    difference of test accuracies, n_heads=None's less the default's)."""
    rows = []
    rng = np.random.default_rng(6)
    for i in range(2 * n_fits):
        task = "regression" if i < n_fits else "classification"
        d = int(rng.choice([3, 4, 6, 8]))
        share = float(rng.choice([10.0, 15.0, 25.0, 50.0]))
        n_heads, n_outputs = int(rng.choice([1, 2, d // 2])), int(rng.choice([1, 3]))
        alpha = float(rng.choice([0.0, 1e-2]))
        noise = float(rng.choice([0.1, 0.3, 1.0]))
        seed = int(rng.integers(1e6))
        n = int(share * d * d * (d + 1) // 2)
        X, y, X_test, y_test = _random_attention_data(
            seed, n, d, n_heads, n_outputs, 8, noise
        )
        row = dict(
            task=task, d=d, share=share, H=n_heads, n_outputs=n_outputs, alpha=alpha,
            noise=noise, seed=seed,
        )
        if task == "classification":
            if n_outputs == 1:
                y, y_test = y > np.median(y), y_test > np.median(y)
            else:
                y, y_test = np.argmax(y, 1), np.argmax(y_test, 1)
        scores = {}
        for name in ("auto", None):
            Estimator = (
                LinearAttentionRegressor
                if task == "regression"
                else LinearAttentionClassifier
            )
            with ReadOutClock() as clock:
                model = Estimator(n_heads=name, alpha=alpha).fit(X, y)
            if task == "regression":
                scores[name] = float(np.mean((model.predict(X_test) - y_test) ** 2))
            else:
                scores[name] = float(np.mean(model.predict(X_test) == y_test))
            if name == "auto":
                row.update(heads=int(model.n_heads_), seconds=clock.seconds[-1])
        if task == "regression":
            row.update(ratio=scores["auto"] / scores[None])
        else:
            row.update(accuracy=scores["auto"], lifted_accuracy=scores[None])
        rows.append(row)
        print(json.dumps(row), flush=True)
    _print_against_lifted("many rows", rows, (1.1, 1.3))
    seconds = np.array([r["seconds"] for r in rows])
    print(f"many rows: read-out seconds, median {np.median(seconds):.3f}, total "
          f"{seconds.sum():.1f}")
    return rows


def same_start(n_fits=60):
    """Part 11: pairs of screened starts both refined, their distance after the
    screen and their refined losses, over seeded default fits of noisy
    regressions (every start refined: ``SAME_START`` set to 0 here)."""
    pairs, screened, refined = [], [], []
    original = heads.fit_heads

    def recorded(design, query_rows, max_iter, *args, **kwargs):
        fit = original(design, query_rows, max_iter, *args, **kwargs)
        if max_iter == heads.SCREEN_ITER:
            if refined:
                screened.clear()
                refined.clear()
            screened.append(fit)
        elif max_iter == heads.FIT_ITER and len(screened) >= 2:
            refined.append(fit)
            if len(refined) == 2:  # the two best screened, in order
                best = sorted(screened, key=lambda f: f[2])[:2]
                theta = [heads.head_coef(v, q, design.token_dim) for v, q, *_ in best]
                distance = np.linalg.norm(theta[0] - theta[1]) / np.linalg.norm(
                    theta[1]
                )
                losses = [f[2] - design.baseline for f in refined]
                pairs.append(dict(distance=float(distance), first=float(losses[0]),
                                  second=float(losses[1])))
                screened.clear()
                refined.clear()
        else:
            screened.clear()
            refined.clear()
        return fit

    heads.fit_heads, shipped, heads.SAME_START = recorded, heads.SAME_START, 0.0
    rng = np.random.default_rng(0)
    try:
        for _ in range(n_fits):
            d = int(rng.choice([3, 4, 5, 6]))
            n_heads, n_outputs = int(rng.integers(1, d + 1)), int(rng.choice([1, 2, 3]))
            share, noise = float(rng.choice([3, 5, 10, 20])), float(
                rng.choice([0.1, 0.3, 1.0])
            )
            X, y, _ = make_random_mhla(
                int(share * d * d * (d + 1) // 2), 8, d, n_heads=n_heads,
                n_outputs=n_outputs, random_state=int(rng.integers(1e6)),
            )
            y = y + noise * y.std(axis=0) * rng.normal(size=y.shape)
            LinearAttentionRegressor().fit(X, y)
    finally:
        heads.fit_heads, heads.SAME_START = original, shipped
    distance = np.array([pair["distance"] for pair in pairs])
    lower = np.array([pair["second"] < pair["first"] * (1 - 1e-6) for pair in pairs])
    print(f"\nsame start: {len(pairs)} pairs of screened starts refined")
    print("| distance after the screen | pairs | second lower by more than 1e-6 |")
    print("| --- | --- | --- |")
    for low, high in [(0, 1e-3), (1e-3, 4e-3), (4e-3, 1e-2), (1e-2, np.inf)]:
        inside = (distance >= low) & (distance < high)
        print(f"| [{low:g}, {high:g}) | {int(inside.sum())} | "
              f"{int(np.sum(inside & lower))} |")
    return pairs


def drift():
    """Part 7 (module docstring): the heads' norm over the lifted fit's, test
    accuracy, and accuracy with noise of 1e-3 on the inputs, without and with
    the penalized polish; and the read-out's work."""
    from sklearn.datasets import load_digits

    rows = []
    noise_rng = np.random.default_rng(0)
    package = heads.DRIFT

    def measure(name, make, X, y, X_test, y_test, thresholds):
        lifted = make(n_heads=None).fit(X, y)
        noisy = [x + 1e-3 * noise_rng.normal(size=np.shape(x)) for x in X_test]
        noisy = np.asarray(noisy) if isinstance(X_test, np.ndarray) else noisy
        for threshold in thresholds:
            heads.DRIFT = threshold
            model = make().fit(X, y)
            fitted, reference = model, lifted
            if hasattr(model, "steps"):  # a pipeline: its estimator
                fitted, reference = model[-1], lifted[-1]
            rows.append(dict(
                data=name, drift=threshold, heads=int(fitted.n_heads_),
                norm_ratio=float(np.linalg.norm(fitted.coef_) / np.linalg.norm(
                    reference.coef_)),
                accuracy=model.score(X_test, y_test),
                noisy_accuracy=model.score(noisy, y_test),
                lifted_accuracy=lifted.score(X_test, y_test),
                work=fitted.head_search_.work,
            ))
            print(json.dumps(rows[-1]), flush=True)
        heads.DRIFT = package

    X, y = load_digits(return_X_y=True)
    measure(
        "digits, first 600, n_heads=12",
        lambda n_heads=12: LinearAttentionClassifier(token_dim=8, n_heads=n_heads),
        X[:600], y[:600], X[600:], y[600:], (np.inf, package),
    )
    try:
        from aeon.datasets import load_classification
    except ImportError:
        load_classification = None
    if load_classification is not None:
        X, y = load_classification("JapaneseVowels", split="train")
        X_test, y_test = load_classification("JapaneseVowels", split="test")
        measure(
            "JapaneseVowels, default", lambda n_heads="auto": make_pipeline(
                SeriesToTokens(), TokenwiseTransformer(StandardScaler()),
                PositionalEncoding(constant=True),
                LinearAttentionClassifier(n_heads=n_heads),
            ), X, y, X_test, y_test, (np.inf, 10.0),
        )
    elnino = []
    try:
        data = real.DATA_SETS["elnino"]()
    except ImportError:
        data = None
    for threshold in (np.inf, package) if data is not None else ():
        heads.DRIFT = threshold
        try:
            model, _, _ = real.build("default", data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(data.X_train, data.y_train)
        finally:
            heads.DRIFT = package
        fitted = model[-1] if hasattr(model, "steps") else model
        lifted, _, _ = real.build("default_paper_heads", data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lifted.fit(data.X_train, data.y_train)
        residual = lifted.predict(data.X_train) - np.asarray(data.y_train)
        search = fitted.head_search_
        elnino.append(dict(
            drift=threshold, heads=int(fitted.n_heads_), criterion=search.criterion,
            r2=float(model.score(data.X_test, data.y_test)),
            lifted_r2=float(lifted.score(data.X_test, data.y_test)),
            lifted_training_error=float(np.mean(residual ** 2)),
            counts=[dict(
                k=int(c.n_heads), distance=float(c.relative_distance),
                training_error=float(c.training_error), cv_error=float(c.cv_error),
                linearized_cv_error=float(c.linearized_cv_error),
                threshold=float(c.threshold), passes=c.passes, failed_on=c.failed_on,
            ) for c in search.counts],
        ))
        print(json.dumps(elnino[-1]), flush=True)
    ratios = []
    rng = np.random.default_rng(7)
    for _ in range(60):
        d = int(rng.choice([3, 4, 5]))
        share = float(rng.choice([0.5, 0.8, 1.2, 2.0, 4.0, 8.0]))
        n_heads, n_outputs = int(rng.choice([1, 2])), int(rng.choice([1, 2]))
        alpha = float(rng.choice([0.0, 1e-2]))
        noise, seed = float(rng.choice([0.1, 0.3])), int(rng.integers(1e6))
        n = max(8, int(share * d * d * (d + 1) // 2))
        X, y, _, _ = _random_attention_data(seed, n, d, n_heads, n_outputs, 8, noise)
        auto = LinearAttentionRegressor(alpha=alpha).fit(X, y)
        lifted = LinearAttentionRegressor(alpha=alpha, n_heads=None).fit(X, y)
        ratios.append(np.linalg.norm(auto.coef_) / np.linalg.norm(lifted.coef_))
    print(f"\n60 small noisy problems: the default's norm over the lifted fit's at "
          f"most {max(ratios):.3g}")
    for row in rows:
        print(f"{row['data']}, DRIFT = {row['drift']:g}: {row['heads']} heads at "
              f"{row['norm_ratio']:.3g} times the lifted norm, accuracy "
              f"{row['accuracy']:.3f} ({row['noisy_accuracy']:.3f} with 1e-3 noise; "
              f"n_heads=None {row['lifted_accuracy']:.3f}), work {row['work']:.3g}")
    for row in elnino:
        print(f"elnino, DRIFT = {row['drift']:g}: {row['heads']} heads "
              f"({row['criterion']}), test R^2 {row['r2']:.5f} (n_heads=None "
              f"{row['lifted_r2']:.5f}); the lifted fit's training error "
              f"{row['lifted_training_error']:.4g}")
        for c in row["counts"]:
            print(f"  {c['k']} heads: distance {c['distance']:.3g}, training error "
                  f"{c['training_error']:.4g}, cv {c['cv_error']:.4g} (linearized "
                  f"{c['linearized_cv_error']:.4g}), threshold {c['threshold']:.4g}, "
                  f"passes {c['passes']} ({c['failed_on']})")
    return dict(rows=rows, small_problem_ratios=[float(r) for r in ratios],
                elnino=elnino)


def _classifier_row(kind, seed, X, y, X_test, y_test, make):
    """The default (``make("auto")``) against ``make(None)`` on one split."""
    scores = {}
    for n_heads in ("auto", None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make(n_heads).fit(X, y)
        scores[n_heads] = float(model.score(X_test, y_test))
        if n_heads == "auto":
            last = model[-1] if hasattr(model, "steps") else model
            search = last.head_search_
    row = dict(
        kind=kind, seed=seed, heads=int(search.n_heads),
        criterion=search.criterion, complete=bool(search.complete),
        accuracy=scores["auto"], lifted_accuracy=scores[None],
    )
    print(json.dumps(row), flush=True)
    return row


def classifiers():
    """Part 12: digits splits, five-class problems and ArrowHead halves, the
    default's accuracy against n_heads=None's (module docstring)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    rows = []
    digits = load_digits()
    images = digits.data.reshape(-1, 8, 8) / 16.0
    splits = [("digits random", s) for s in range(6)]
    splits += [("digits first 1000", 0), ("digits positions", 0)]
    for kind, seed in splits:
        X = images
        if kind == "digits positions":
            X = PositionalEncoding().fit_transform(images)
            train, test = train_test_split(
                np.arange(len(X)), test_size=0.25, stratify=digits.target,
                random_state=0,
            )
        elif kind == "digits random":
            train, test = train_test_split(np.arange(len(X)), random_state=seed)
        else:
            train, test = np.arange(1000), np.arange(1000, len(X))
        y = digits.target
        rows.append(_classifier_row(
            kind, seed, X[train], y[train], X[test], y[test],
            lambda n_heads: LinearAttentionClassifier(n_heads=n_heads),
        ))
    for seed in range(60):
        rng = np.random.default_rng(seed)
        X, scores, _ = make_random_mhla(
            45 + 3000, 8, 3, n_heads=int(rng.integers(1, 4)), n_outputs=5,
            random_state=seed,
        )
        labels = np.argmax(scores, axis=1)
        redrawn = rng.random(len(labels)) < 0.1
        noisy = np.where(redrawn, rng.integers(0, 5, len(labels)), labels)
        if len(np.unique(noisy[:45])) < 5:
            continue
        rows.append(_classifier_row(
            "five classes", seed, X[:45], noisy[:45], X[45:], labels[45:],
            lambda n_heads: LinearAttentionClassifier(n_heads=n_heads),
        ))
    try:
        from aeon.datasets import load_classification
    except ImportError:
        print("aeon is not installed: ArrowHead is left out")
    else:
        series, labels = load_classification("ArrowHead")
        series = series[:, 0, :]
        for seed in range(14):
            train, test = train_test_split(
                np.arange(len(labels)), test_size=0.5, stratify=labels,
                random_state=seed,
            )
            rows.append(_classifier_row(
                "ArrowHead", seed, series[train], labels[train], series[test],
                labels[test],
                lambda n_heads: make_pipeline(
                    SeriesToTokens(window=2), PositionalEncoding(n_positions=1),
                    LinearAttentionClassifier(alpha=0.01, n_heads=n_heads),
                ),
            ))
    print("\n| data | fits | 0.02 below n_heads=None | 0.02 above | mean "
          "difference | searches cut short |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in dict.fromkeys(row["kind"] for row in rows):
        group = [row for row in rows if row["kind"] == kind]
        differences = [r["lifted_accuracy"] - r["accuracy"] for r in group]
        print(
            f"| {kind} | {len(group)} | {sum(x > 0.02 for x in differences)} | "
            f"{sum(x < -0.02 for x in differences)} | "
            f"{np.mean(differences):+.4f} | "
            f"{sum(not r['complete'] for r in group)} |"
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slacks", type=float, nargs="*", default=[0.0, 1.0])
    parser.add_argument("--rule", choices=RULES, default="package")
    parser.add_argument(
        "--refits", action="store_true", help="part 3: the kinds of fold refit"
    )
    parser.add_argument(
        "--near-interpolation", action="store_true",
        help="part 4: 1.05 p to 1.4 p sequences, the default against n_heads=None",
    )
    parser.add_argument(
        "--low-signal", action="store_true",
        help="part 5: small noisy problems, the default against n_heads=None",
    )
    parser.add_argument(
        "--many-rows", action="store_true",
        help="part 6: 10 p to 50 p sequences, the default against n_heads=None",
    )
    parser.add_argument(
        "--drift", action="store_true",
        help="part 7: heads along a singular metric's null space, penalized or not",
    )
    parser.add_argument(
        "--folds-size", action="store_true",
        help="part 8: 1.8 p to 3 p sequences, near interpolation judged at the "
        "folds' size and on all the rows",
    )
    parser.add_argument(
        "--refits-stopped", action="store_true",
        help="part 9: the work with refits stopped at the first failing folds",
    )
    parser.add_argument(
        "--repeated-outputs", action="store_true",
        help="part 10: outputs that repeat one another against one output",
    )
    parser.add_argument(
        "--same-start", action="store_true",
        help="part 11: screened starts refined, their distance and losses",
    )
    parser.add_argument(
        "--classifiers", action="store_true",
        help="part 12: digits splits, five-class problems, ArrowHead halves",
    )
    parser.add_argument(
        "--outputs-counted", action="store_true",
        help="part 13: [y, 3y] and [y, 5] against y; ten outputs' effective number",
    )
    parser.add_argument(
        "--interpolation-peak", action="store_true",
        help="part 14: a classifier's folds at the lifted fit's interpolation peak",
    )
    parser.add_argument(
        "--output-spread", action="store_true",
        help="part 15: a head one of six outputs uses, with and without OUTPUT_SPREAD",
    )
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--sets", nargs="*", default=list(real.DATA_SETS))
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    set_rule(args.rule)
    results = {}
    lifted = {}
    for name in args.sets if args.slacks else []:  # the criterion's reference:
        data = real.DATA_SETS[name]()  # the lifted fit's own heads
        lifted[name] = real.fit_and_score("default_paper_heads", data).get("score")
    for slack in args.slacks:
        heads.SLACK = slack
        fits = grid(args.dims)
        hits = sum(row["found"] == row["H"] for row in fits)
        print(f"\nSLACK = {slack:g}: generating count in {hits} of {len(fits)}")
        for row in fits:
            if row["found"] != row["H"]:
                print(f"  missed: {row}")
        results[slack] = dict(grid=fits, hits=hits, real=real_sets(args.sets))
    refits = fold_refits() if args.refits else []
    near = near_interpolation() if args.near_interpolation else []
    low = low_signal() if args.low_signal else []
    many = many_rows() if args.many_rows else []
    drifted = drift() if args.drift else {}
    sizes = folds_size() if args.folds_size else []
    stopped = refits_stopped() if args.refits_stopped else []
    repeated = repeated_outputs() if args.repeated_outputs else []
    starts = same_start() if args.same_start else []
    classified = classifiers() if args.classifiers else []
    counted = outputs_counted() if args.outputs_counted else []
    peak = interpolation_peak() if args.interpolation_peak else {}
    spread = output_spread() if args.output_spread else []
    if args.slacks:
        print("\n| data | n_heads=None | " + " | ".join(
            f"SLACK = {s:g} (heads)" for s in args.slacks) + " |")
        print("| --- | --- | " + " | ".join("---" for _ in args.slacks) + " |")
    for i, name in enumerate(args.sets if args.slacks else []):
        cells = []
        for slack in args.slacks:
            row = results[slack]["real"][i]
            cells.append(f"{row['score']:.3f} ({row['n_heads']})")
        print(f"| {name} | {lifted[name]:.3f} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                dict(
                    rule=args.rule, lifted=lifted, results=results, fold_refits=refits,
                    near_interpolation=near,
                    low_signal=low,
                    many_rows=many,
                    drift=drifted,
                    folds_size=sizes,
                    refits_stopped=stopped,
                    repeated_outputs=repeated,
                    same_start=starts,
                    classifiers=classified,
                    outputs_counted=counted,
                    interpolation_peak=peak,
                    output_spread=spread,
                ),
                handle,
                indent=1,
            )


if __name__ == "__main__":
    main()
