"""scikit-learn estimators for learning multi-head linear attention (Algorithm 1).

The estimators are thin: validate the input, make a data source, run the solver
chosen once, read out heads, set fitted attributes. Every path (in memory or Dask,
``fit`` or ``partial_fit``, last position or all) goes through :meth:`_fit_rows`.
"""

import dataclasses
import functools
import inspect
import sys
import time
import warnings
from numbers import Integral, Number, Real

import numpy as np
import scipy.sparse
from joblib import effective_n_jobs
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    TransformerMixin,
    _fit_context,
    is_classifier,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, r2_score
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.class_weight import compute_class_weight, compute_sample_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_is_fitted,
    column_or_1d,
)

from ._attention import MultiHeadLinearAttention
from ._data import (
    KeptRows,
    StatisticsSource,
    check_allocation,
    check_features_memory,
    check_fit_cost,
    effective_observations,
    features_dask,
    is_dask_array,
    largest_exponent,
    lifted_data,
    lifted_predict,
    padding_row_mask,
    positive_weight_sequences,
    predict_dask,
    sum_statistics,
    warn_if_features_beyond_float64,
    warn_if_outputs_beyond_float64,
)
from ._heads import (
    INTERPOLATION_MARGIN,
    WORK_FLOOR,
    heads_phrase,
    read_out_heads,
    unfitted_counts,
)
from ._lift import lifted_feature_pairs, lifted_features, n_lifted_features
from ._progress import ChunkProgress
from ._rollout import lifted_readout, rollout
from ._solvers import HELDOUT_FOLDS, SOLVERS, resolve_solver, solve_normal
from ._validation import (
    BooleanRefusingParamsMixin,
    RealInterval,
    caller_stacklevel,
    check_input_features,
    input_precision,
    reject_boolean_parameters,
    require_dask,
    validate_class_weight,
    validate_sample_weight,
    validate_sequences,
    validate_targets,
    warn_if_classes_unbalanced,
    warn_if_mean_left_out,
    warn_if_token_scales_differ,
    warn_if_underdetermined,
)

__all__ = [
    "LiftedAttentionFeatures",
    "LinearAttentionClassifier",
    "LinearAttentionRegressor",
]

# Attributes that partial_fit leaves to be computed when first read.
_MODEL_ATTRIBUTES = frozenset(
    {
        "coef_",
        "intercept_",
        "attention_",
        "value_matrices_",
        "query_matrices_",
        "n_heads_",
        "certificate_",
        "head_search_",
    }
)
# The numeric parameters a bool is refused for, with what each takes; every
# estimator checks those it has (again at each partial_fit, which scikit-learn's
# parameter check sees only on the first call).
_NUMERIC_PARAMETERS = (
    (("token_dim", "max_iter", "batch_size", "n_jobs"), "an int or None"),
    (("n_heads",), "'auto', an int or None"),
    (("alpha", "tol", "solver_tol"), "a float"),
    (("head_work_limit",), "a float or None"),
)
# The parameters the solve after partial_fit reads: their values at the last
# partial_fit call are kept for it, as fit uses those at its call.
_SOLVE_PARAMETERS = ("alpha", "fit_intercept", "n_heads", "tol", "head_work_limit")
# partial_fit keeps a classifier's rows (for misclassified held-out rows) up to
# KEPT_ROWS_FLOATS floats (8 MiB: 87000 rows of d = 3, two classes) or the
# size of the fold statistics it keeps (5 p^2 floats), whichever is larger.
KEPT_ROWS_FLOATS = 2**20


class _AtomicUpdate:
    """Restore the estimator's attributes if the block raises (even on Ctrl-C), so
    that a failed ``fit`` or ``partial_fit`` leaves it exactly as it was. Arrays are
    never modified in place, so a shallow copy of ``__dict__`` suffices."""

    def __init__(self, estimator):
        self.estimator = estimator

    def __enter__(self):
        self.saved = dict(self.estimator.__dict__)

    def __exit__(self, kind, error, traceback):
        if kind is not None:
            self.estimator.__dict__.clear()
            self.estimator.__dict__.update(self.saved)
        return False


def _partial_fit_available(estimator):
    """``partial_fit`` exists where it can run (as scikit-learn's MLPClassifier
    offers it for its stochastic solvers only): it accumulates the normal
    equations, and class weights must be known batch by batch. Else an
    AttributeError that says why."""
    if estimator.solver not in ("auto", "normal"):
        raise AttributeError(
            "partial_fit accumulates the normal equations; use solver='normal' or "
            f"'auto', got solver={estimator.solver!r}."
        )
    if isinstance(getattr(estimator, "class_weight", None), str):
        raise AttributeError(
            "class_weight='balanced' needs the class counts of all the data, which "
            "partial_fit does not see; pass a dict of class weights."
        )
    return True


def _warn_search_cut_short(readout, head_work_limit):
    """A ``ConvergenceWarning``: the work limit stopped the head search before it
    decided the count (as scikit-learn warns of an iterative solver at its
    ``max_iter``)."""
    undecided = [count.n_heads for count in readout.counts if count.passes is None]
    failed = [count.n_heads for count in readout.counts if count.passes is False]
    returned = (
        "the lifted fit's own heads"
        if readout.criterion == "lifted"
        else "the fewest heads that passed so far"
    )
    # how far it got: each further count costs more than the last (more heads,
    # and their folds' refits), which head_work_limit=None would all pay for
    progress = (
        f"failed: {failed} heads, in {readout.work:.2g} flops; " if failed else ""
    )
    unfitted = unfitted_counts(readout)  # (as HeadSearchDisplay marks them)
    if unfitted:
        progress += f"not fitted, ruled out or left unfitted: {unfitted}; "
    # a fit that would overrun the limit is not started: work can end below it
    below = readout.work < readout.work_limit
    before = " (the next fit would exceed it)" if below else ""
    warnings.warn(
        f"The head search stopped at its work limit (head_work_limit="
        f"{head_work_limit}: {readout.work_limit:.2g} flops){before} before it "
        f"decided the head count ({progress}undecided: "
        f"{undecided or 'the counts not yet fitted'}); "
        f"it returns {returned}, {heads_phrase(readout.n_heads)} "
        "(head_search_.complete is False). Set head_work_limit higher (None: no "
        "limit; the counts left up to the returned one each cost more than the "
        "last) to let the search finish, or set n_heads to a number of heads "
        "(None: the paper's read-out, no search).",
        ConvergenceWarning,
        stacklevel=caller_stacklevel(),
    )


def _scaled_r2_score(y_true, y_pred, sample_weight=None):
    """``r2_score`` with both in units of the largest target's power of two
    (exact, and R^2 does not change with the units): its squares overflowed to
    NaN for targets from about 1e154 on, whose predictions are right."""
    y_true, y_pred = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    exponent = largest_exponent(y_true)
    return r2_score(
        np.ldexp(y_true, -exponent), np.ldexp(y_pred, -exponent),
        sample_weight=sample_weight,
    )


def _positive_sequences(data):
    """The sequences of ``data`` with a row of positive weight."""
    per_sample = data.layout.rows_per_sample(data.sequences.shape[1])
    return int(np.count_nonzero(positive_weight_sequences(data.row_scale, per_sample)))


def _effective_observations(solution, data):
    """The rows the head search counts (equations per degree of freedom, the
    folds' size): Kish's effective number, ``(sum w)^2 / sum w^2``, so that rows
    of tiny weight, which leave the fit as it is, count as little (six rows of
    weight 1e-12 beside 44 of weight 1 counted as whole rows and let one head
    pass at 2.3 times the test error of n_heads=None); all rows of positive
    weight where the weights are equal. From the statistics where the solver
    kept them, else from the rows."""
    if solution.statistics is not None:
        return solution.statistics.effective_observations
    if data.is_distributed:
        return solution.n_observations
    weights = data.row_scale * data.row_scale
    return effective_observations(
        float(data.row_scale @ data.row_scale),
        float(weights @ weights),
        int(np.count_nonzero(data.row_scale)),
    )


def _target_sums(solution, data):
    """``(sum_i w_i y_i^2, sum_i w_i y_i, sum_i w_i)`` per output, from the
    statistics where the solver kept them, else from the rows (None where
    neither is at hand)."""
    statistics = solution.statistics
    if statistics is not None:
        return (
            statistics.target_square_sum, statistics.target_sum, statistics.weight_sum
        )
    if getattr(data, "targets", None) is not None and not data.is_distributed:
        squares = np.einsum("ij,ij->j", data.targets, data.targets)
        return (
            squares,
            data.row_scale @ data.targets,
            float(data.row_scale @ data.row_scale),
        )
    return None


# An output whose lifted fit leaves less than this share of its energy in its
# residual is weighted as if it left that much: outputs fitted exactly (noiseless,
# or interpolated) are weighted by their energy alone, and the weights span at
# most 2^10 more than the outputs' scales (the heads' fit stays well conditioned).
_NOISE_FLOOR = 1e-6


def _output_energies(solution, data, fit_intercept):
    """Per output: the energy the fit explains (``sum_i w_i (y_ij - mean_j)^2``
    with an intercept, else ``sum_i w_i y_ij^2``), whether it is more than the
    rounding of the sums it is taken from (a constant output's is not), and
    the sums ``sum_i w_i y_ij^2`` and ``sum_i w_i`` it is taken from; None where
    the targets' sums are not at hand.

    Centered, the energy is taken from the rows where they are at hand (in
    memory, or kept by ``partial_fit``; in two passes: mean, then deviations),
    else from the sums. From the sums it is a
    difference of terms of the size of ``sum_i w_i y_ij^2``, and an output
    whose mean is ``sqrt(1 / (n eps))`` or more of its deviations (4.8e6 at
    ``n = 200``) cannot be told from a constant one: y + 3e6 of unit deviations
    had been taken as constant, and fitted by no heads (R^2 0 on exact data)."""
    sums = _target_sums(solution, data)
    if sums is None:
        return None
    squares, sums, weight = sums
    eps = np.finfo(float).eps
    energies = squares
    rounding = solution.n_observations * eps * squares
    if fit_intercept and weight > 0:
        # in-memory rows, or the rows partial_fit kept (not a Dask array's:
        # its targets would be computed on the client, in another pass over y)
        kept = None
        if not data.is_distributed:
            kept = data if getattr(data, "targets", None) is not None else (
                getattr(data, "rows", None)
            )
        if kept is not None and len(kept.targets):
            deviations = kept.targets - np.outer(kept.row_scale, sums / weight)
            energies = np.einsum("ij,ij->j", deviations, deviations)
            # each row's deviation is off by the mean's rounding, at most
            # n eps |mean| (times its weight's root)
            rounding = (2 * solution.n_observations * eps) ** 2 * squares
        else:
            energies = squares - sums**2 / weight
            statistics = solution.statistics
            if statistics is not None and statistics.n_lifted:
                energies = _moment_energies(statistics, energies, rounding)
    return energies, (energies > rounding) & (energies > 0), squares, weight


def _moment_energies(statistics, energies, rounding):
    """Centered energies, from the sums only (Dask, partial_fit), of outputs
    whose sums leave them rounding but whose centered moments with the lifted
    features are above theirs: ``sum_i w_i phi_ij (y_i - mean)`` is taken from
    sums of terms ``|phi_ij| |y_i|``, at most ``n eps`` of ``sqrt(G_jj sum_i
    w_i y_i^2)``; above that the output varies (y + 3e6 of unit spread on Dask
    had fitted no heads), and its energy is at least ``max_j m_j^2 / G_jj``
    (Cauchy-Schwarz). Other outputs' energies are returned as they are."""
    eps = np.finfo(float).eps
    squares = statistics.target_square_sum
    mean = statistics.target_sum / statistics.weight_sum
    moment = statistics.moment - np.outer(statistics.feature_sum, mean)
    diagonal = np.maximum(np.diag(statistics.gram_upper), 0.0)
    bound = 4 * statistics.n_observations * eps * np.sqrt(np.outer(diagonal, squares))
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(diagonal[:, None] > 0, moment**2 / diagonal[:, None], 0.0)
    moves = np.any(np.abs(moment) > bound, axis=0) & ~(energies > rounding)
    return np.where(moves, np.maximum(lower.max(axis=0), 2 * rounding), energies)


def _residuals_estimate_noise(solution, fit_intercept):
    """Whether the lifted fit has ``INTERPOLATION_MARGIN`` rows (of positive
    weight) or more per degree of freedom, so that its residuals estimate the
    noise: every row counts, not Kish's effective number as in the head search,
    as the outputs share the rows, weights and hat matrix, and their residuals'
    ratios and correlations are what is used (Kish's count discarded them under
    exponential weights, benchmarks/README.md, eleventh pass)."""
    dof = solution.degrees_of_freedom
    return dof is not None and solution.n_observations >= INTERPOLATION_MARGIN * (
        dof() + fit_intercept
    )


def _output_weights(solution, data, fit_intercept):
    """Powers of two that weigh the outputs of a multi-output regression by
    their noise for the head read-out (None: all within a factor sqrt(2), or
    not known). Each output's noise is the root of the lifted fit's training
    residual, at least ``_NOISE_FLOOR`` of its energy, where the fit has at
    least ``INTERPOLATION_MARGIN`` rows per degree of freedom (else, near
    interpolation, where the residuals say little, the floor alone: the
    outputs' scales; theory page, "Several outputs"); an output is weighted by
    the power of two nearest the largest noise over its own (at most 2^256),
    so that the heads' fit and the held-out errors weigh each output's errors
    against its own noise, whatever its units, and outputs that no model
    predicts do not drown the others. Outputs constant to rounding keep weight
    1. Exact, as the global rescaling."""
    energies = _output_energies(solution, data, fit_intercept)
    if energies is None or len(energies[0]) < 2:
        return None
    energies, varying, _, _ = energies
    if not varying.any():
        return None
    residual = np.zeros(len(energies))
    if _residuals_estimate_noise(solution, fit_intercept):
        residual = np.asarray(solution.residual_sum_of_squares, dtype=float)
    noise = np.sqrt(np.maximum(residual, _NOISE_FLOOR * energies)[varying])
    exponents = np.zeros(len(energies))
    exponents[varying] = np.clip(np.round(np.log2(np.max(noise) / noise)), 0, 256)
    if not exponents.any():
        return None
    return np.ldexp(1.0, exponents.astype(int))


def _effective_outputs(solution, fit_intercept):
    """The outputs counted as independent ones for the head search's degrees of
    freedom: ``m^2 / trace(R^2)``, ``R`` the correlations of the lifted fit's
    training residuals across the outputs (1 for outputs that repeat one
    another, about ``m`` for independent noise, about ``c - 1`` for a
    classifier's ``c`` one-hot outputs with an intercept; outputs fitted
    exactly do not count; theory page, "Several outputs"). None (``m``) with
    one output, where the solver gives no
    correlations (not known to rounding, or ``"cg"``), or below
    ``INTERPOLATION_MARGIN`` rows of positive weight per degree of freedom,
    where the residuals' correlations say little, as for the outputs'
    weights."""
    correlation = solution.residual_correlation
    if correlation is None or not _residuals_estimate_noise(solution, fit_intercept):
        return None
    noisy = int(np.count_nonzero(np.diag(correlation)))  # outputs fitted exactly: 0
    return float(np.clip(noisy * noisy / np.sum(correlation**2), 1.0, noisy))


# Precisions the head read-out's tolerance is raised to are taken this many times
# their estimate: the data's (float32 input: eps32) and centering's (eps |mean| /
# deviation, _centering_precision). The lifted coefficients of exact targets y + c
# (n = 400 to 20000, mean over deviation 1e4 to 1e8, an intercept) were within 1.3
# times the latter of the generating model's; the generating count of exact
# float32 data was 1.09e-7 and 1.21e-7 from their lifted fit (one head at d = 6,
# the tokens times 1 and 3), against eps32 = 1.19e-7, which had decided 1 or 3
# heads by rounding. A margin of 12 over those measurements.
PRECISION_MARGIN = 16.0
# LSQR's coefficients resolved more coarsely than this (relative) are read with a
# warning: heads within 1% of the lifted fit are then taken to be the same.
COARSE_COEFFICIENTS = 1e-2


def _centering_precision(solution, data):
    """The relative precision of the lifted coefficients that centering the
    targets leaves: ``PRECISION_MARGIN`` times ``eps`` times the root of an
    output's energy over its centered energy (``sum_i w_i y_i^2`` against
    ``sum_i w_i (y_i - mean)^2``), i.e. ``eps |mean| / deviation``, the largest
    over the outputs
    that are not constant: the centered moments ``sum_i w_i phi_i (y_i -
    mean)`` are differences of sums of terms ``|phi_i| |y_i|``, linear in the
    targets (the energy's own ratio, squared, had put the tolerance at 3.5e-4
    for y + 1e6 of unit deviations, whose lifted fit is good to 1e-9, and
    dropped a head of 1e-3 of the other's size); at most 1, and 1 for targets
    all constant (to rounding, :func:`_output_energies`), which no heads fit.
    From the statistics where the solver kept them, else from the rows (0
    where neither is at hand).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn import LinearAttentionRegressor
    >>> X = np.random.default_rng(0).normal(size=(40, 4, 2))
    >>> model = LinearAttentionRegressor(fit_intercept=True).fit(X, np.full(40, 3.7))
    >>> model.n_heads_, bool(np.isclose(model.intercept_, 3.7))
    (0, True)
    """
    energies = _output_energies(solution, data, fit_intercept=True)
    if energies is None:
        return 0.0
    centered, varying, squares, weight = energies
    if weight <= 0 or not np.any(squares):
        return 0.0
    if not varying.any():
        return 1.0
    ratio = np.sqrt(squares[varying] / centered[varying])  # |mean| / deviation
    return min(1.0, float(np.max(PRECISION_MARGIN * np.finfo(float).eps * ratio)))


class _LinearAttentionBase(BooleanRefusingParamsMixin, BaseEstimator):
    """Shared machinery: data source, solver, head read-out, certificate."""

    _parameter_constraints = {
        "token_dim": [Interval(Integral, 1, None, closed="left"), None],
        "alpha": [RealInterval(Real, 0, None, closed="left")],
        "n_heads": [
            StrOptions({"auto"}),
            Interval(Integral, 1, None, closed="left"),
            None,
        ],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"auto", "normal", "dual", "cg"})],
        "tol": [RealInterval(Real, 0, 1, closed="left")],
        "head_work_limit": [RealInterval(Real, 0, None, closed="both"), None],
        "solver_tol": [RealInterval(Real, 0, 1, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "positions": [StrOptions({"last", "all"})],
        "causal": ["boolean"],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "n_jobs": [
            Interval(Integral, 1, None, closed="left"),
            Interval(Integral, None, -1, closed="right"),
            None,
        ],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        token_dim=None,
        alpha=0.0,
        n_heads="auto",
        fit_intercept=False,
        solver="auto",
        tol=1e-8,
        head_work_limit=20.0,
        solver_tol=1e-10,
        max_iter=None,
        positions="last",
        causal=True,
        batch_size=None,
        n_jobs=None,
        verbose=0,
    ):
        self.token_dim = token_dim
        self.alpha = alpha
        self.n_heads = n_heads
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.head_work_limit = head_work_limit
        self.solver_tol = solver_tol
        self.max_iter = max_iter
        self.positions = positions
        self.causal = causal
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags

    def __getattr__(self, name):
        # After partial_fit, the model is solved when an attribute of it is first
        # read (partial_fit itself only adds to the statistics).
        state = self.__dict__
        if name in _MODEL_ATTRIBUTES and state.get("_model_pending"):
            self._solve_pending()
            return state[name]
        if name == "partial_fit":  # offered only where it can run: say why not
            descriptor = inspect.getattr_static(type(self), name, None)
            if descriptor is not None:
                return descriptor.__get__(self, type(self))
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r}"
        )

    def _log(self, message):
        if self.verbose:
            print(f"[{type(self).__name__}] {message}")

    def _check_parameters(self):
        """Refuse a bool for any numeric parameter this estimator has."""
        params = self.get_params(deep=False)
        for names, kind in _NUMERIC_PARAMETERS:
            reject_boolean_parameters(
                self, [name for name in names if name in params], kind
            )

    # --- the one fitting path -------------------------------------------------

    def _sequences(self, X, reset):
        # The precision the data came in (float32 rounding is the head read-out's
        # noise floor); partial_fit keeps the coarsest over its batches.
        precision = input_precision(X)
        if not reset:
            precision = max(precision, getattr(self, "_input_precision", precision))
        self._input_precision = precision
        return validate_sequences(
            X,
            token_dim=self.token_dim if reset else self.token_dim_,
            estimator=self,
            reset=reset,
        )

    def _warn_about_fit_data(self, sequences, weights):
        """Warn where ``fit`` has no more training rows of positive weight than
        lifted features (rows of zero weight and, with ``positions="all"``,
        left-padding positions do not enter the fit), or token coordinates of
        very different scales (sequences in memory; ``partial_fit`` checks its
        first batch, and its rows when the model is solved)."""
        in_memory = isinstance(sequences, np.ndarray)
        if in_memory:
            warn_if_token_scales_differ(sequences)
        n_samples, n_tokens, token_dim = sequences.shape
        per_sample = n_tokens if self.positions == "all" else 1
        # the rows of each sequence: its positions after the left padding
        kept = np.full((n_samples, per_sample), True)
        if self.positions == "all" and in_memory:
            kept = ~padding_row_mask(sequences)
        n_rows = int(np.count_nonzero(kept))
        if isinstance(weights, np.ndarray):  # Dask weights: not computed for this
            # per sequence, or per row (class weights of positions="all")
            positive = np.reshape(weights > 0, (n_samples, -1))
            n_rows = int(np.count_nonzero(kept & positive))
        self._warn_if_underdetermined(n_rows, token_dim, n_tokens)

    def _warn_if_underdetermined(self, n_rows, token_dim, n_tokens):
        warn_if_underdetermined(
            n_rows,
            token_dim,
            # None for the CV estimators, which choose it
            alpha=self.get_params(deep=False).get("alpha"),
            n_tokens=n_tokens,
            cv_estimator="LinearAttentionClassifierCV"
            if is_classifier(self)
            else "LinearAttentionRegressorCV",
        )

    def _data_source(self, sequences, targets, sample_weight, rescaling=None):
        return lifted_data(
            sequences,
            targets,
            sample_weight,
            positions=self.positions,
            causal=self.causal,
            batch_size=self.batch_size,
            n_threads=effective_n_jobs(self.n_jobs),
            rescaling=rescaling,
        )

    def _check_rows(self, data):
        """Refuse data without a single training row: with ``positions="all"``,
        sequences that are left padding throughout (all-zero tokens)."""
        if self.positions == "all" and data.n_observations == 0:
            raise ValueError(
                'With positions="all", every token of every sequence is left '
                "padding (all-zero tokens), so there is no position to fit; expected "
                "at least one sequence with a non-zero token."
            )

    def _fit_rows(self, sequences, targets, sample_weight, single_output):
        """Fit on validated sequences and target rows; set every attribute."""
        data = self._data_source(sequences, targets, sample_weight)
        self._check_rows(data)
        solver = resolve_solver(self.solver, data)
        cost = check_fit_cost(data, solver)  # before any work
        self._log(
            f"solver {solver!r}: {data.n_rows} rows, p={data.n_lifted}"
            + (" (Dask)" if data.is_distributed else "")
            + f"; peak memory about {cost.memory / 1e6:.3g} MB, the paper's "
            f"read-out (SVDs of W) {cost.readout_flops:.2g} flops"
        )
        start = time.perf_counter()
        solution = SOLVERS[solver](
            data,
            # (a fractions.Fraction, which the constraints accept, as a float)
            alpha=float(self.alpha),
            fit_intercept=self.fit_intercept,
            solver_tol=float(self.solver_tol),
            max_iter=self.max_iter,
            progress=ChunkProgress("lifting") if self.verbose else None,
            # the head count's held-out folds, from the same pass
            heldout=self.n_heads is not None,
        )
        self._set_model(solution, data, single_output, time.perf_counter() - start)
        self._warn_if_judged_on_scores(data)
        self._log(f"fit done in {time.perf_counter() - start:.2f} s")
        self.solver_ = solver
        n_iter = solution.n_iter
        self.n_iter_ = int(n_iter[0]) if single_output else n_iter
        self.token_dim_ = data.token_dim
        # partial_fit continues from these (solver "normal" only), the folds
        # kept where the read-out uses them.
        self._statistics = solution.statistics
        self._fold_statistics = solution.fold_statistics
        self._kept_rows = self._rows_to_keep(
            data, 0, solution.fold_statistics, compact_rows=solution.compact_rows
        )
        # the sequences of positive weight so far: they take the folds in turn
        self._positive_sequences = _positive_sequences(data)
        self._rescaling = data.rescaling
        self._layout = data.layout
        self._single_output = single_output
        self._n_tokens = sequences.shape[1]
        self._model_pending = False
        return self

    def _partial_fit_rows(
        self, sequences, targets, sample_weight, single_output, first_call
    ):
        """Add a batch to the kept statistics; the model is solved when read."""
        if first_call and isinstance(sequences, np.ndarray):
            warn_if_token_scales_differ(sequences)  # as fit warns (first batch)
        if not first_call and (
            targets.shape[1] != self._statistics.n_outputs
            or single_output != self._single_output
        ):
            rows = ["n_samples"] + (["n_tokens"] if self.positions == "all" else [])

            def shape(n_outputs, single):
                dims = rows + ([] if single else [str(n_outputs)])
                return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"

            raise ValueError(
                f"y has shape {shape(targets.shape[1], single_output)} but earlier "
                "batches had shape "
                f"{shape(self._statistics.n_outputs, self._single_output)}; every "
                "batch needs the same shape of targets (the shape predict returns)."
            )
        data = self._data_source(
            sequences,
            targets,
            sample_weight,
            rescaling=None if first_call else self._rescaling,
        )
        if first_call:  # the p x p statistics, before any work
            check_fit_cost(data, "normal")
        # Folds by the sequence's count over all batches (of those of positive
        # weight), as fit would assign them (the head count's held-out
        # criterion), where the read-out uses them.
        first_sample = 0 if first_call else self._positive_sequences
        # (kept from the first call on: a later call with n_heads=None keeps
        # them, so that n_heads="auto" afterwards still has its folds)
        keep_folds = (
            self.n_heads is not None
            if first_call
            else self._fold_statistics is not None
        )
        # A later batch far larger than the first can overflow in the kept
        # scales: _check_batch_scale refuses it with a clear error, without
        # numpy's overflow warnings first.
        quiet = {} if first_call else {"over": "ignore", "invalid": "ignore"}
        with np.errstate(**quiet):
            if keep_folds:
                folds = data.fold_statistics(HELDOUT_FOLDS, first_sample=first_sample)
                batch = sum_statistics(folds)
            else:
                folds, batch = None, data.statistics()
        if first_call:
            self._check_rows(data)
            statistics = batch
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                statistics = self._statistics.copy().merge(batch)
                if folds is not None:
                    folds = [
                        kept.copy().merge(new)
                        for kept, new in zip(self._fold_statistics, folds, strict=True)
                    ]
            self._check_batch_scale(statistics)
        self._statistics = statistics
        self._fold_statistics = folds
        kept = None if first_call else self._kept_rows
        self._kept_rows = self._rows_to_keep(data, first_sample, folds, kept)
        if self._kept_rows is False:  # (shown once: the same message and line)
            self._warn_rows_dropped()
        self._positive_sequences = first_sample + _positive_sequences(data)
        if first_call:
            self._rescaling, self._layout = data.rescaling, data.layout
            self._single_output = single_output
            self.token_dim_ = data.token_dim
            self._n_tokens = sequences.shape[1]  # (one-token sequences or not)
        self.solver_ = "normal"
        self.n_iter_ = 1 if single_output else np.ones(targets.shape[1], dtype=int)
        for name in _MODEL_ATTRIBUTES:
            self.__dict__.pop(name, None)
        self._model_pending = True
        self._pending_parameters = {
            name: getattr(self, name) for name in _SOLVE_PARAMETERS
        }
        return self

    def _rows_to_keep(
        self, data, first_sample, fold_statistics, kept=None, compact_rows=None
    ):
        """The compact rows a classifier's head read-out judges counts on
        (misclassified held-out rows), kept for later ``partial_fit`` batches
        where the folds are kept: ``kept`` (those of earlier batches) followed by
        ``data``'s (from ``compact_rows()``, the fit's, where given); None where
        none are needed, False where the rows are beyond ``KEPT_ROWS_FLOATS``
        (or the kept folds' size) and were dropped."""
        if not is_classifier(self) or fold_statistics is None or kept is False:
            return False if kept is False else None
        n_rows = data.n_rows + (0 if kept is None else kept.n_rows)
        d, p = data.token_dim, data.n_lifted
        floats = n_rows * (p // d + d + data.n_outputs + 2)  # pairs, query, ...
        if floats <= max(KEPT_ROWS_FLOATS, HELDOUT_FOLDS * p * p):
            rows = KeptRows.of(data, HELDOUT_FOLDS, first_sample, compact_rows)
            if rows is None:  # a batch not in memory (Dask): no rows from now on
                return False
            return rows if kept is None else kept.merge(rows)
        return False

    def _warn_if_judged_on_scores(self, data):
        """A classifier fitted on Dask whose head count (``n_heads="auto"``) or
        whose ``head_search_.passes`` (``n_heads=k``) the held-out folds
        decided: judged on its class scores' squared errors, which ``fit`` in
        memory does not (partial_fit says so in :meth:`_warn_rows_dropped`)."""
        held_out = ("cv", "training", "linearized")
        distributed = is_classifier(self) and data.is_distributed
        if not distributed or self.n_heads is None:
            return
        if not any(count.criterion in held_out for count in self.head_search_.counts):
            return
        if self.n_heads == "auto":
            judged = "head count was"
            differs = (
                "n_heads_ can differ, and the heads can classify worse than "
                "n_heads=None's"
            )
            advice = (
                "Set n_heads=None for the lifted fit's heads, or a number of "
                "heads to fix the count."
            )
        else:
            judged = f"verdict on n_heads={self.n_heads} (head_search_.passes) was"
            differs = "the verdict can differ"
            advice = "The heads themselves are fitted as in memory."
        warnings.warn(
            f"On Dask the classifier's {judged} judged on the held-out "
            "squared errors of its class scores (the rows stay on the "
            "workers), not on misclassified held-out rows as a fit in memory "
            f"judges it: {differs} from an in-memory fit of the same data. "
            + advice,
            UserWarning,
            stacklevel=caller_stacklevel(),
        )

    def _warn_rows_dropped(self):
        if self.n_heads == "auto":
            judged = "the head count is"
            advice = (
                " The heads can then classify worse than n_heads=None's: set "
                "n_heads=None for the lifted fit's heads, or a number of heads "
                "to fix the count."
            )
        else:  # (the verdict head_search_ reports on a fixed count)
            judged = f"the verdict on n_heads={self.n_heads} (head_search_.passes) is"
            advice = ""
        warnings.warn(
            "partial_fit no longer keeps the training rows (beyond the size of "
            f"the statistics it keeps, or a batch not in memory): {judged} "
            "judged on the squared errors of the class scores from now on, not "
            "on misclassified held-out rows as fit judges it." + advice,
            UserWarning,
            stacklevel=caller_stacklevel(),
        )

    def _check_batch_scale(self, statistics):
        """A clear error when the statistics with a new batch overflow in the
        scales kept from the first batch (the batch's entries or targets are far
        larger, or the batches add up beyond the float range)."""
        sums = (statistics.gram_upper, statistics.moment, statistics.target_square_sum)
        if all(np.isfinite(array).all() for array in sums):
            return
        raise ValueError(
            "The lifted statistics overflow with this batch in the scales "
            "partial_fit keeps from the first batch (tokens times "
            f"{self._rescaling.token:.3g}, targets times {self._rescaling.target:.3g}, "
            "so that the batches add up): this batch's X (whose sixth powers "
            "enter), y (whose squares enter) or sample_weight is far larger than "
            "the first batch's, or the batches so far add up beyond the float "
            "range. Rescale the batches alike, or fit them together with fit."
        )

    def _check_partial_fit(self):
        """Whether this is the first batch; a clear error when the estimator was
        fitted by a solver that keeps no statistics, or when a parameter that
        defines the rows differs from the earlier batches'."""
        if "_statistics" not in self.__dict__:
            return True
        if self._statistics is None:
            chosen = ""
            if self.solver == "auto":
                chosen = " (solver='auto' chose it for that fit's size)"
            raise ValueError(
                f"This estimator was fitted with solver={self.solver_!r}{chosen}, "
                "which keeps no normal-equation statistics, so partial_fit cannot "
                "continue from that fit. Fit with solver='normal' (or start with "
                "partial_fit) to add batches later."
            )
        # the statistics are of earlier batches' rows: parameters that define
        # the rows cannot change between batches
        layout = self._layout
        changed = []
        if self.positions != layout.positions:
            changed.append(f"positions={self.positions!r} ({layout.positions!r})")
        if self.causal != layout.causal and "all" in (self.positions, layout.positions):
            changed.append(f"causal={self.causal!r} ({layout.causal!r})")
        if self.token_dim is not None and self.token_dim != layout.token_dim:
            changed.append(f"token_dim={self.token_dim!r} ({layout.token_dim!r})")
        if changed:
            raise ValueError(
                "partial_fit adds batches to the statistics of earlier ones, which "
                f"were fitted with other parameters: {', '.join(changed)} (earlier "
                "batches' values in parentheses). Set them back, or call fit to "
                "start over."
            )
        return False

    def _solve_pending(self):
        # Solve with the parameters of the last partial_fit call, whatever
        # set_params did since (put back afterwards).
        current = {name: getattr(self, name) for name in self._pending_parameters}
        self.__dict__.update(self._pending_parameters)
        try:
            # as fit warns: the rows of positive weight of all batches so far
            self._warn_if_underdetermined(
                self._statistics.n_observations, self.token_dim_,
                getattr(self, "_n_tokens", None),
            )
            source = StatisticsSource(
                self._statistics, self._layout, self._rescaling,
                folds=self._fold_statistics, rows=self._kept_rows or None,
            )
            start = time.perf_counter()
            solution = solve_normal(
                source, alpha=float(self.alpha), fit_intercept=self.fit_intercept,
                heldout=self._fold_statistics is not None and self.n_heads is not None,
            )
            self._set_model(
                solution, source, self._single_output, time.perf_counter() - start
            )
        finally:
            self.__dict__.update(current)
        self._model_pending = False

    def _set_model(self, solution, data, single_output, solve_seconds):
        """Read heads out of the lifted solution and set the model's attributes."""
        rescaling = data.rescaling
        start = time.perf_counter()
        searching = self.n_heads is not None
        rank = solution.certificate.rank  # None: LSQR's estimate, of unknown rank
        rank = data.n_lifted if rank is None else rank
        # the search's limit; a fixed count, asked for, is fitted without one
        limit = self.head_work_limit if self.n_heads == "auto" else None
        limit = None if limit is None else float(limit)  # (a Fraction too)
        limit = None if limit == np.inf else limit  # inf: None's no limit
        # a multi-output regression's heads weigh its outputs alike, whatever
        # their units (the paper's read-out too: its tol, relative to the whole
        # W, dropped the heads of an output in units 1e-9 of the others')
        weights = None
        if not is_classifier(self):
            weights = _output_weights(solution, data, self.fit_intercept)
        weight = 1.0 if weights is None else weights
        residual = float(np.sum(solution.residual_sum_of_squares * weight**2))
        # LSQR's precision bounds the heads a search can tell apart; the
        # paper's read-out (n_heads=None) keeps every head of the coefficients
        # returned, so that its heads predict as they do (truncated at that
        # precision, 2 of 3 heads predicted 10 times worse at solver_tol=1e-3
        # than all of them at 1e-2)
        coef_tol = solution.coef_tol if searching else 0.0
        if coef_tol > COARSE_COEFFICIENTS and np.any(solution.coef):
            # LSQR's coefficients resolve only coarse heads, or (at their norm)
            # none: then read as if exact, not as a zero model
            consequence = (
                "which tells no head from zero: the heads are read out as if the "
                "coefficients were exact"
                if coef_tol >= 1
                else "and heads within that of the lifted fit are taken to "
                "reproduce it"
            )
            warnings.warn(
                f"solver_tol={self.solver_tol} resolves LSQR's lifted coefficients "
                f"only to about {coef_tol:.2g} times their norm, {consequence}. "
                "Lower solver_tol for finer heads.",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )
            coef_tol = coef_tol if coef_tol < 1 else 0.0
        # float32 data pin the coefficients down to their precision only, and
        # so does centering targets far from zero
        resolution = max(
            coef_tol,
            PRECISION_MARGIN * getattr(self, "_input_precision", 0.0),
            _centering_precision(solution, data) if self.fit_intercept else 0.0,
        )
        readout = read_out_heads(
            solution.coef * np.reshape(weight, (-1, 1)),
            data.token_dim,
            self.n_heads,
            max(float(self.tol), resolution),
            design=solution.head_design(weights) if searching else None,
            folds=functools.partial(
                solution.heldout_folds,
                classify=is_classifier(self),
                output_weights=weights,
            ) if searching and solution.heldout_folds else None,
            identifiable=bool(solution.certificate.identifiable),
            # with residual degrees of freedom, the residual says whether the
            # data are exact
            residual=residual
            if solution.n_observations - self.fit_intercept > rank
            else None,
            # in flops: a multiple of the regression's, plus a floor (a finite
            # limit stays finite: head_work_limit=1e308 is not None's no limit)
            work_limit=None
            if limit is None
            else min(limit * solution.flops + WORK_FLOOR, sys.float_info.max),
            degrees_of_freedom=solution.degrees_of_freedom,
            n_observations=_effective_observations(solution, data),
            fit_intercept=self.fit_intercept,
            residual_sum_of_squares=residual,
            error_scale=float(rescaling.squared_error(1.0)),
            output_weights=weights,
            effective_outputs=_effective_outputs(solution, self.fit_intercept)
            if searching
            else None,
            resolution=resolution,
            verbose=self.verbose,
        )
        self._log(
            f"{heads_phrase(readout.value_matrices.shape[0])} read out in "
            f"{time.perf_counter() - start:.2f} s, {readout.work:.2g} flops "
            f"(solve {solve_seconds:.2f} s)"
        )
        if not readout.complete:
            _warn_search_cut_short(readout, self.head_work_limit)
        fitted = MultiHeadLinearAttention(
            readout.value_matrices, readout.query_matrices
        )
        # Intercept in rescaled units, then everything back to the data's units:
        # coefficients scale by c^3 / s, so each of V_h, Q_h by its square root.
        intercept = (
            solution.target_mean - fitted.lifted_coef() @ solution.feature_mean
        ) / rescaling.target
        attention = MultiHeadLinearAttention(
            rescaling.heads(readout.value_matrices),
            rescaling.heads(readout.query_matrices),
        )
        coef = attention.lifted_coef()
        if not np.all(np.isfinite(coef)) or (
            readout.n_heads and np.any(solution.coef) and not np.any(coef)
        ):
            raise ValueError(
                "The fitted lifted coefficients are not representable in float64: "
                "they scale as y / |Z|^3, and the scales of X and y here put them "
                "beyond the float range (for example |X| ~ 1e150). Rescale X (or y) "
                "by a constant first."
            )
        self.attention_ = attention
        self.value_matrices_ = attention.value_matrices
        self.query_matrices_ = attention.query_matrices
        self.n_heads_ = attention.n_heads
        self.head_search_ = dataclasses.replace(  # the heads in the data's units
            readout,
            value_matrices=attention.value_matrices,
            query_matrices=attention.query_matrices,
        )
        self.coef_ = coef[0] if single_output else coef
        self.intercept_ = float(intercept[0]) if single_output else intercept
        self.certificate_ = solution.certificate
        if not self.fit_intercept:
            if not is_classifier(self):
                warn_if_mean_left_out(solution.mean_gain)
            elif np.size(solution.mean_gain) == 1:  # two classes: one score
                warn_if_classes_unbalanced(solution.mean_gain)
            else:  # one-vs-rest scores: their shared mean changes no class
                warn_if_classes_unbalanced(solution.class_gain)

    # --- prediction -----------------------------------------------------------

    def _score_last(self, metric, X, y, sample_weight):
        """``metric`` of the predictions at the last token, as scikit-learn's
        ``score``; on Dask the predictions computed once (its metrics would
        run the lazy graph once per look at them)."""
        predictions = self.predict(X)
        if is_dask_array(predictions):
            predictions = predictions.compute()
        y, sample_weight = (
            value.compute() if is_dask_array(value) else value
            for value in (y, sample_weight)
        )
        if not is_classifier(self):  # fit's checks and messages (numpy's alone)
            validate_targets(y, len(predictions), type(self).__name__)
        else:
            self._check_score_labels(y, len(predictions))
        # fit's checks too (the metrics took negative weights)
        sample_weight = validate_sample_weight(sample_weight, predictions)
        return float(metric(y, predictions, sample_weight=sample_weight))

    def _score_positions(self, metric, X, y, sample_weight):
        """``metric`` over every position that is not left padding, each weighted
        by its sequence's weight (``positions="all"``); on Dask the predictions
        and the padding mask are computed blockwise, in one pass over ``X``."""
        sequences = validate_sequences(X, token_dim=self.token_dim_)
        n_samples, n_tokens, _ = sequences.shape
        targets = np.asarray(y.compute() if is_dask_array(y) else y)
        if targets.shape[:2] != (n_samples, n_tokens):
            raise ValueError(
                "With positions='all', y must hold a target per position, shape "
                f"(n_samples, n_tokens[, n_outputs]) = ({n_samples}, {n_tokens}"
                f"[, n_outputs]); got shape {targets.shape}."
            )
        if not is_classifier(self):  # fit's checks and messages (numpy's alone)
            validate_targets(targets, n_samples, type(self).__name__, n_tokens)
        # the weights in memory, checked against the targets' samples
        weights = validate_sample_weight(sample_weight, targets)
        predictions = self.predict(X)
        if is_dask_array(sequences):  # (the same graph of X as predict's)
            padding = sequences.map_blocks(padding_row_mask, drop_axis=2, dtype=bool)
            dask, _ = require_dask()
            predictions, padding = dask.compute(predictions, padding)
        else:
            padding = padding_row_mask(sequences)
        kept = ~padding
        if is_classifier(self):  # fit's checks, on the labels it reads
            self._check_score_labels(targets, n_samples, n_tokens, kept)
        if weights is not None:
            weights = np.broadcast_to(weights[:, None], kept.shape)[kept]
        return metric(targets[kept], predictions[kept], sample_weight=weights)

    def _lifted_output(self, X):
        """``X`` through the fitted lifted model: ``(n_samples, n_outputs)``, or
        ``(n_samples, n_tokens, n_outputs)`` with ``positions="all"``; lazy and
        blockwise for a Dask array."""
        check_is_fitted(self)
        self._validate_params_used_after_fit(
            ("positions", "causal", "batch_size", "n_jobs")
        )
        sequences = validate_sequences(
            X, token_dim=self.token_dim_, estimator=self, reset=False
        )
        rows = self._lifted_rows(
            sequences,
            np.atleast_2d(self.coef_),
            np.atleast_1d(self.intercept_),
            warn=True,
        )
        if self.positions == "all":
            return rows.reshape(sequences.shape[0], sequences.shape[1], -1)
        return rows

    def _lifted_rows(self, sequences, coef, intercept, warn=False):
        """Lifted model(s) ``coef``, ``intercept`` (data units) on validated
        sequences: ``(n_rows, n_outputs)``, lazy and blockwise for a Dask array.
        With ``warn``, outputs beyond float64 (inf) come with a warning naming
        the cause (on Dask, from each block as it is computed)."""
        if is_dask_array(sequences):
            return predict_dask(
                sequences, coef, intercept, self.positions, self.causal, warn=warn
            )
        rows = lifted_predict(
            sequences,
            coef,
            intercept,
            self.positions,
            self.causal,
            batch_size=self.batch_size,
            n_threads=effective_n_jobs(self.n_jobs),
        )
        if warn:
            warn_if_outputs_beyond_float64(rows, sequences, coef)
        return rows

    def _single_column(self):
        """Whether ``predict``/``decision_function`` return one value per row."""
        return np.ndim(self.coef_) == 1

    def generate(self, X, n_steps, to_token=None):
        """Run the fitted layer forward: append one token per step to each prompt.

        At each step the fitted function's output at the last token of the
        current sequence (what ``predict`` of the regressor, or
        ``decision_function`` of the classifier, returns for that sequence; with
        ``positions="all"`` its value at the last position, which is the same
        whether ``causal`` or not) becomes the next token (``to_token=None``) or
        is mapped to it by ``to_token``. The fitted lifted coefficients
        ``coef_`` and ``intercept_`` are evaluated (the heads compute the same
        function), each sequence's state kept in the power-of-two scale of its
        largest token entry so far, as ``predict`` lifts, so that the rollout
        is ``predict``'s at any scale of the tokens. The second moment is
        updated in place, ``S <- S + z z^T`` (O(d^2)), and a step costs
        O(n_outputs * d^3) whatever the length of the sequence: nothing is
        recomputed over the prefix. Left padding (zero tokens) in the prompt
        changes nothing. To roll out a :class:`~sklearn.pipeline.Pipeline` that
        ends in this estimator, see :func:`~sklearn_linattn.generate_pipeline`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            The prompts, as in ``predict`` (2-D rows as wide as at fit time; a
            Dask array is computed first: the rollout is sequential).
        n_steps : int
            Number of tokens to generate (>= 1).
        to_token : callable or None, default=None
            ``to_token(outputs, step)`` maps the outputs at step ``step``
            (0-based), shaped as ``predict`` (``decision_function``) returns them
            for n_samples sequences, to the next tokens, shape (n_samples,
            token_dim); for a classifier it typically maps the predicted labels
            (``classes_[outputs.argmax(axis=1)]``, or ``outputs > 0`` for two
            classes) to tokens. None appends the outputs themselves, which needs
            ``n_outputs == token_dim``.

        Returns
        -------
        tokens : ndarray of shape (n_samples, n_steps, token_dim)
            The generated tokens.
        outputs : ndarray of shape (n_samples, n_steps) or \
(n_samples, n_steps, n_outputs)
            ``outputs[:, t]`` is ``predict`` (``decision_function``) of the
            prompt followed by ``tokens[:, :t]``, read at its last token. Both
            come as a named tuple ``GeneratedSequences(tokens, outputs)``.

        Raises
        ------
        ValueError
            Naming the step, when the outputs or the next tokens at a step are
            not finite (the rollout diverged), or ``to_token`` returns tokens of
            the wrong shape.

        Examples
        --------
        A regressor learned from a 2-output layer on 2-d tokens rolls out as the
        layer does (here with tokens kept on the unit circle):

        >>> import numpy as np
        >>> from sklearn_linattn import LinearAttentionRegressor
        >>> from sklearn_linattn.datasets import make_random_mhla
        >>> X, y, truth = make_random_mhla(300, 6, 2, n_outputs=2, random_state=0)
        >>> model = LinearAttentionRegressor().fit(X, y)
        >>> def unit(out, step):
        ...     return out / np.linalg.norm(out, axis=1, keepdims=True)
        >>> tokens, outputs = model.generate(X[:3], 50, to_token=unit)
        >>> tokens.shape, outputs.shape
        ((3, 50, 2), (3, 50, 2))
        >>> rolled = truth.generate(X[:3], 50, to_token=unit)
        >>> bool(np.allclose(tokens, rolled.tokens))
        True

        A classifier's scores mapped to tokens by their label (one-hot):

        >>> from sklearn_linattn import LinearAttentionClassifier
        >>> X, y, truth = make_random_mhla(400, 5, 3, n_outputs=3, random_state=0)
        >>> clf = LinearAttentionClassifier(fit_intercept=True)  # unbalanced
        >>> clf = clf.fit(X, y.argmax(axis=1))
        >>> one_hot = lambda scores, step: np.eye(3)[clf.classes_[scores.argmax(1)]]
        >>> tokens, scores = clf.generate(X[:2], 4, to_token=one_hot)
        >>> scores.shape, bool(np.all(tokens.sum(axis=2) == 1))
        ((2, 4, 3), True)
        """
        check_is_fitted(self)
        if is_dask_array(X):
            X = X.compute()
        sequences = validate_sequences(
            X, token_dim=self.token_dim_, estimator=self, reset=False
        )
        # Each sequence in its own scale, as predict lifts it: the rollout is
        # predict's at every scale of the tokens.
        return rollout(
            sequences,
            n_steps,
            lifted_readout(np.atleast_2d(self.coef_), self.token_dim_),
            to_token,
            intercept=np.atleast_1d(self.intercept_),
            single_column=self._single_column(),
        )


class LinearAttentionRegressor(RegressorMixin, _LinearAttentionBase):
    r"""Multi-head linear attention learned by convex least squares (Algorithm 1).

    A single layer of multi-head linear attention
    :math:`y(Z) = \sum_h V_h (Z^\top Z) Q_h q` (:math:`q` the last token) is a
    linear model of the cubic lifted features :math:`S_{bc} q_e` of its input,
    :math:`S = Z^\top Z`. This estimator fits that linear model by least
    squares (minimum-norm when the problem is underdetermined) or ridge, reads
    attention heads out of the coefficients, and checks whether the data
    identifies the learned function on all inputs (``certificate_``).

    Parameters
    ----------
    token_dim : int, default=None
        Dimension ``d`` of a token. Needed for 2-D ``X`` (rows are sequences
        flattened token by token); with None a 2-D row is a single token. For 3-D
        ``X`` it is read from the data (and checked when given).
    alpha : float, default=0.0
        Ridge penalty on the lifted coefficients. ``0`` gives the minimum-norm
        least-squares solution, also when the lifted Gram matrix is singular: the
        paper's learner, right for exact targets. With no more training rows than
        lifted features it interpolates the targets, noise included, and on real
        data predicts poorly (a ``UserWarning`` says so): there, use
        :class:`LinearAttentionRegressorCV`, which chooses ``alpha`` by
        leave-one-out in one pass, or a positive ``alpha``. A penalty so large
        that the lifted coefficients, with ``X`` and ``y`` scaled to order one,
        fall below ``1e-154`` (about ``1e150`` times the mean diagonal of the
        lifted Gram) is a ValueError naming ``alpha``: the heads cannot be read
        out of them, and the model is zero to float64 precision from about
        ``1e16`` times that diagonal on.
    n_heads : "auto", int or None, default="auto"
        How heads are read out of the lifted solution.

        - ``"auto"``: the fewest heads the data supports. In short: on exact
          data, the fewest that reproduce the lifted fit within ``tol``; on noisy
          data, the fewest whose held-out error over 5 folds of the sequences is
          no worse than the lifted fit's, so that they predict new data about as
          well as ``n_heads=None`` (an estimate, not a guarantee). In detail:
          the lifted coefficients
          fix only the part of ``W[a,b,c,e] = sum_h V_h[a,b] Q_h[c,e]`` symmetric
          in ``(b, c)``; ``k`` heads are a rank-``k`` ``W``, fitted to the training
          objective from seeded starts (variable projection, Levenberg-Marquardt).
          On exact data: the fewest heads that reproduce the lifted solution
          within ``tol`` (in lifted coefficients; on exact data the certificate
          does not identify, on the training objective, so that
          ``head_search_.relative_distance`` can exceed ``tol``). Data are exact
          when the lifted fit's training residual is within ``tol`` of the
          targets with residual degrees of freedom left (more training rows
          than the rank of their lifted features); noiseless targets with
          fewer rows are judged as noisy ones. On noisy data:
          the fewest heads that pass held-out tests on 5 folds of the sequences
          (dealt in turn: one by one, after the 40th in runs of consecutive
          sequences), each fold refitted as ``n_heads=k`` fits it. Their
          cross-validated error must be at most the lifted fit's, lowered by
          how much more the lifted fit, with more degrees of freedom, gains
          from all the rows than from a fold's 80%; so must their error on a
          majority of the folds. The error is the squared error; for the
          classifier, the misclassified rows, strictly below the bound (or no
          worse on every fold for a count that is the lifted fit on the data,
          or none where the lifted fit misclassifies no held-out row),
          and its class scores must predict no worse either. With several
          outputs, no output may be clearly worse than the lifted fit's. For
          squared errors with ten rows per lifted feature or more, a count whose
          refits linearized at the full fit are no worse on every fold passes on
          them. Where a model fitted to a fold's 80% of the rows has fewer than
          two equations per degree of freedom, the count's generalized
          cross-validated error must be at most the lifted fit's too. The heads
          then predict held-out data about as well as ``n_heads=None`` (an
          estimate: on small, noisy problems they can predict worse, theory
          page). Each count is decided
          with the fit ``n_heads=k`` runs; counts are found by galloping,
          bisection and going up one at a time within ``head_work_limit``; no
          clock is read (theory page, :ref:`how-many-heads`).
        - int ``k``: the best model found with at most ``k`` heads for the
          training objective (least squares plus the ``alpha`` penalty) from
          seeded starts, the same fit the search runs for ``k`` (the objective
          is not convex in the heads: other starts can find a lower one);
          ``head_search_.passes`` says whether it passes the criterion above
          (None on noisy data without held-out folds: ``solver="cg"``,
          ``partial_fit`` whose first call, or the ``fit`` it continues, had
          ``n_heads=None``, or every row of positive weight in one sequence).
          Predictions then come from those heads. Heads zero within ``tol`` of
          the lifted coefficients' norm are dropped, and the model of the count
          left is then fitted (with a loose ``tol`` a larger ``k`` can return
          fewer heads).
        - None: the paper's read-out, the SVD of the symmetric split of ``W``; up
          to ``n_outputs * d`` heads (at most ``d * d``).
    fit_intercept : bool, default=False
        Fit an unpenalized bias. MHLA itself has none, and the default keeps the
        paper's model: ``p`` generic sequences identify it (with an intercept
        ``p + 1``: centering takes one), and fits of its data are exact.
        Real targets that are not centered need it (scikit-learn's linear models
        fit one by default): a fit without it that leaves much of the targets'
        mean in its residuals (adding their mean to every prediction would raise
        the training :math:`R^2` by more than 0.1) warns, naming this parameter.
    solver : {"auto", "normal", "dual", "cg"}, default="auto"
        With :math:`\Phi` the lifted features of the training sequences (one
        row each, never formed by the solvers) and :math:`n` rows (samples; with
        ``positions="all"``, samples times tokens):

        - ``"normal"``: streams the normal equations :math:`\Phi^\top \Phi`,
          :math:`\Phi^\top y` over chunks of samples (for :math:`d \le 22` only
          the Gram's distinct entries, one matrix product per block of rows;
          above, a BLAS symmetric rank-k update per chunk) and solves them by
          Cholesky, or from the eigendecomposition (minimum norm) when singular.
          Memory: one chunk plus :math:`O(p^2)`.
        - ``"dual"``: the kernel form :math:`(K + \alpha I) a = y` with
          :math:`K_{ij} = \langle S_i, S_j \rangle_F \langle q_i, q_j \rangle`,
          coefficients :math:`\Phi^\top a`; for fewer samples than lifted
          features. Memory :math:`O(n^2)`.
        - ``"cg"``: LSQR on the lifted problem with structured products, never
          forming :math:`\Phi` or a Gram matrix: :math:`O(n d^3)` work per
          iteration, :math:`O(n d^2)` memory; for large :math:`d`. Above
          64 lifted features (:math:`d \ge 5`) its certificate uses Lanczos
          estimates of the extreme eigenvalues (``certificate_.exact`` is
          False); up to 64 it decomposes the Gram formed from :math:`p`
          products, exactly.
        - ``"auto"``: ``"dual"`` when :math:`n < p` and three :math:`n \times n`
          matrices fit in 4 GiB (a quarter of 16 GiB, a fixed reference: the
          model does not depend on the machine's free memory), else
          ``"normal"`` when three :math:`p \times p` matrices do, else
          ``"cg"``. A machine that cannot hold them gets a ``ValueError``
          naming the sizes (set ``solver="cg"``).
    tol : float, default=1e-8
        Relative Frobenius tolerance of the head read-out: heads within
        ``tol * ||lifted solution||`` of the lifted solution in lifted coefficients
        (the paper's model distance) reproduce it; on exact data the certificate
        does not identify, so do heads whose training objective is within
        ``tol**2`` of the explained energy above the lifted fit's (other
        coefficients fit such data as well). Larger values trade fidelity
        for fewer heads. ``coef_`` is always the function the returned heads
        compute. (At least 16 times the precision the fit can resolve: the
        input's, float32's for float32 input; with ``fit_intercept=True``,
        float64's times the targets' root mean square over their standard
        deviation, which centering cannot resolve below: targets constant to
        rounding have no heads.)
    head_work_limit : float or None, default=20.0
        The work the head read-out may do, counted in floating-point operations
        as it is done: ``head_work_limit`` times the lifted fit's (``n p^2 +
        p^3 / 3``, ``n^2 d^2 + n^3 / 3`` in kernel form, ``2 n d^3`` per LSQR
        iteration for ``solver="cg"``) plus ``5e10``, 3 to 5 seconds of one
        core at the 11 to 16 GFlop/s the read-out reached on problems of that
        size on the project's machine (a count is fitted on all the data and
        again on each of the 5 folds' training data). A search cut short
        returns the fewest heads that passed so far, else the lifted fit's own
        heads, with ``head_search_.complete`` False and a
        ``ConvergenceWarning``. None (or ``inf``): no limit (near interpolation the
        search then also fits every count that could reproduce the lifted
        fit, which under a limit it tries only within four times the work
        it spent before them, or 2e8 flops where that is more;
        ``head_search_.fewer_untried`` says where that
        left counts unfitted). A fixed ``n_heads=k`` is fitted without a limit.
    solver_tol : float, default=1e-10
        Stopping tolerance of LSQR (``atol`` and ``btol``) for ``solver="cg"``.
    max_iter : int, default=None
        Iteration cap of LSQR for ``solver="cg"``, and of the Lanczos estimates
        of the certificate's eigenvalues (at least 1000 for those); None means
        ``2 * p``. A ``ConvergenceWarning`` is issued when LSQR stops at the cap.
    positions : {"last", "all"}, default="last"
        Where the model is read and trained. ``"last"``: one output per sequence,
        at its last token (the query). ``"all"``: an output at every position
        :math:`t`, :math:`\sum_h V_h S_t Q_h z_t`, trained on every position
        (targets per position). Leading all-zero tokens are left padding: their
        positions are left out of the loss, the certificate and ``score``
        (their targets are not used, but must be finite numbers like every
        target).
    causal : bool, default=True
        With ``positions="all"``: :math:`S_t = \sum_{s \le t} z_s z_s^\top`
        (causal attention, each position sees its prefix) if True,
        :math:`S = Z^\top Z` (each position sees the whole sequence) if False.
    batch_size : int, default=None
        Samples per chunk while streaming; None picks chunks of ``2 p`` rows,
        kept between 32 and 256 MiB of lifted features. Memory beyond the input
        is one chunk plus :math:`O(p^2)`.
    n_jobs : int, default=None
        Threads computing lifted features (None means 1, -1 all cores).
    verbose : int, default=0
        Print the solver and timings when positive, each head count the
        read-out fits with its verdict, and a progress bar (tqdm when
        installed) over chunks for fits longer than two seconds.

    Attributes
    ----------
    coef_ : ndarray of shape (n_lifted_features,) or (n_outputs, n_lifted_features)
        Lifted coefficients: feature ``k * d + e`` is :math:`w_{bc} S_{bc} q_e`
        for the ``k``-th pair :math:`b \le c` of ``numpy.triu_indices(d)``,
        :math:`w_{bc} = 1` if :math:`b = c` else :math:`\sqrt 2`. 1-D for 1-D
        ``y``.
    intercept_ : float or ndarray of shape (n_outputs,)
        0.0 when ``fit_intercept=False``.
    value_matrices_ : ndarray of shape (`n_heads_`, n_outputs, token_dim)
        Heads in canonical form: sorted by strength (largest first), scale balanced
        (``||V_h||_F = ||Q_h||_F``), the largest-magnitude entry of each ``V_h``
        positive; two fits of the same data give the same arrays.
    query_matrices_ : ndarray of shape (`n_heads_`, token_dim, token_dim)
        The fused key-query matrices ``Q_h`` of the same heads, in the same order.
    n_heads_ : int
        The number of heads read out (the length of ``value_matrices_``).
    attention_ : MultiHeadLinearAttention
        The fitted heads as a model (without the intercept).
    certificate_ : IdentifiabilityCertificate
        Computed from the same lifted Gram (or kernel) matrix as the solution.
    head_search_ : HeadReadout
        How the heads were read out (see ``n_heads``): every count fitted with its
        distance to the lifted fit, cross-validated error and verdict, the
        criterion that chose the count, whether the returned heads pass and
        whether the work limit cut the search short (drawn by
        :class:`~sklearn_linattn.HeadSearchDisplay`).
    solver_ : str
        The solver used (``"auto"`` resolved).
    n_iter_ : int or ndarray of shape (n_outputs,)
        LSQR iterations (per output for 2-D ``y``) with ``solver="cg"``; 1 for the
        direct solvers.
    token_dim_ : int
        The token dimension ``d`` of the training sequences.
    n_features_in_ : int
        Columns of 2-D ``X`` (``n_tokens * token_dim`` of the training sequences
        for 3-D ``X``; 3-D input of any length is accepted at predict time).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` had string column names.

    See Also
    --------
    LinearAttentionRegressorCV : The same model with ``alpha`` chosen by
        cross-validation, for real (noisy) data.
    certify : The certificate of a data set, without fitting.

    Notes
    -----
    There are :math:`p = d^2 (d + 1) / 2` lifted features; fitting :math:`n`
    sequences of :math:`T` tokens costs :math:`O(n (T d^2 + p^2) + p^3)`. The
    model is a homogeneous cubic in the tokens: it has no terms of lower degree,
    so a linear trend in the data is not captured (``fit_intercept`` adds only a
    constant). The paper's read-out (``n_heads=None``) folds the coefficients
    into a ``(n_outputs d) x d^2`` matrix and takes its SVD, ``O(n_outputs^2
    d^4)`` work: a fit whose memory would exceed the available memory, or whose
    read-out would exceed 1e12 flops (a whole series of hundreds of values as
    one token), is refused before it starts, by a ValueError naming the sizes.
    The default search fits ``k``-head models, each Levenberg-Marquardt step
    about ``k d^3 p`` flops, within ``head_work_limit``.

    The count is the fewest that passes among those fitted: a search from
    seeded starts, not a certified minimum. On exact data that identify the
    function it goes down from the paper's count; on other data up from the
    fewest count whose training error does not already fail it. In
    ``benchmarks/bench_heads.py`` (tables in ``benchmarks/README.md``) it
    returned the generating count in 193 of 200 noisy fits with ``d`` of 4
    and 8 (``H`` in {1, 2, d/2}, 1% and 10% noise, constant and
    input-dependent, 1 and 3 outputs), in every noisy fit with
    ``H <= 2`` at ``d = 12`` (one seed each), and in none of the 8 with ``H = 6``:
    the default work limit cut those short (the lifted fit's heads,
    ``head_search_.complete`` False). On noiseless data it returned the
    generating count in all 162 fits with 1 to 3 outputs (``d`` 3 to 6, every
    ``H <= d``) and in all 220 single-output fits with ``d`` up to 12 (``H``
    from 1 to ``d``). Where the data have about as many sequences as lifted
    features, or fewer, few heads rarely pass the generalized cross-validation
    check, and the lifted fit's heads are returned. Of the 15 real data sets of
    ``benchmarks/bench_real_sequences.py`` (the default recipe), El Nino
    returns 2 heads (of 9), sunspots, PBS and macrodata 8, 7 and 11 that
    reproduce the lifted fit (of its 10, 8 and 24) and the other 11 the lifted
    fit's own heads; on digits, co2 and macrodata the work limit cut the search
    short, with a ``ConvergenceWarning``.

    Reference: Yau, Akyürek, Mao, Tenenbaum, Jegelka, Andreas, "Learning Linear
    Attention in Polynomial Time", NeurIPS 2025 (arXiv:2410.10101).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn import (
    ...     LinearAttentionRegressor, MultiHeadLinearAttention)
    >>> rng = np.random.default_rng(0)
    >>> truth = MultiHeadLinearAttention(rng.normal(size=(1, 1, 3)),
    ...                                  rng.normal(size=(1, 3, 3)))
    >>> X = rng.normal(size=(200, 10, 3))
    >>> y = truth.predict(X)[:, 0]
    >>> model = LinearAttentionRegressor().fit(X, y)
    >>> bool(model.certificate_)
    True
    >>> model.attention_.distance(truth) < 1e-8
    True
    >>> X_long = rng.normal(size=(5, 40, 3))  # other sequence lengths work too
    >>> np.allclose(model.predict(X_long), truth.predict(X_long)[:, 0])
    True
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _targets(self, y, sequences):
        n_samples, n_tokens, _ = sequences.shape
        self._input_precision = max(self._input_precision, input_precision(y))
        if is_dask_array(y) and not is_dask_array(sequences):
            y = y.compute()  # targets are small; checked like in-memory ones
        return validate_targets(
            y,
            n_samples,
            type(self).__name__,
            n_tokens=n_tokens if self.positions == "all" else None,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the lifted least-squares model and read out heads and certificate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            Training sequences, tokens as rows, the query last. A Dask array chunked
            along samples is lifted blockwise on its workers (solvers ``"auto"``,
            ``"normal"``, ``"cg"``).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets (a Dask array too). With ``positions="all"``, one target per
            position: shape (n_samples, n_tokens) or (n_samples, n_tokens,
            n_outputs).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sequence in the least-squares objective
            (and in the certificate: a zero weight removes a sequence). As in
            scikit-learn's ``Ridge``, ``alpha`` is not scaled with the weights:
            multiplying every weight by ``c`` fits as ``alpha / c`` would.

        Returns
        -------
        self : LinearAttentionRegressor
        """
        self._check_parameters()
        with _AtomicUpdate(self):
            sequences = self._sequences(X, reset=True)
            targets, single_output = self._targets(y, sequences)
            weights = validate_sample_weight(sample_weight, sequences)
            self._warn_about_fit_data(sequences, weights)
            return self._fit_rows(sequences, targets, weights, single_output)

    @available_if(_partial_fit_available)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """Add a batch of sequences to the normal equations.

        The sufficient statistics (``Phi^T W Phi``, ``Phi^T W y``, sums, counts) add
        up over batches, so after any sequence of calls the lifted fit equals
        ``fit`` on all the batches together, to rounding (and so do the heads,
        but where a count has two near-equal minima rounding can choose between
        them, theory page); after ``fit`` (with solver ``"normal"``, which
        ``"auto"`` picks for at least ``p`` samples) the batches add to the fitted
        data. A call only updates the statistics: the solve, the heads and the
        certificate are computed when one of ``coef_``, ``intercept_``,
        ``attention_``, the head attributes or ``certificate_`` is first read (or at
        ``predict``), so that they always describe all batches so far, with the
        parameters (``alpha``, ``fit_intercept``, ``n_heads``, ``tol``,
        ``head_work_limit``) in force at the last call: as after ``fit``,
        ``set_params`` changes the model only at the next ``fit`` or
        ``partial_fit``; the parameters that define the rows
        (``positions``, ``token_dim``, and ``causal`` with ``positions="all"``)
        cannot change between batches. A later batch may have weights that are
        all zero (it adds nothing). The method exists only with solver
        ``"auto"`` or ``"normal"`` (the others keep no statistics). A call that
        raises leaves the estimator as it was.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            A batch of sequences; the token dimension (and for 2-D ``X`` the width)
            must match earlier batches.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets, with the same number of outputs as earlier batches (per
            position with ``positions="all"``).
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : LinearAttentionRegressor
        """
        # scikit-learn checks the parameters on the first call only; set_params
        # between batches is checked here
        self._validate_params()
        self._check_parameters()
        with _AtomicUpdate(self):
            first_call = self._check_partial_fit()
            sequences = self._sequences(X, reset=first_call)
            targets, single_output = self._targets(y, sequences)
            weights = validate_sample_weight(sample_weight, sequences, first_call)
            return self._partial_fit_rows(
                sequences, targets, weights, single_output, first_call
            )

    def predict(self, X):
        """Predict with the fitted model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            Sequences of any length (3-D); 2-D rows as wide as at fit time. A Dask
            array gives a lazy Dask array of predictions, computed blockwise.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            With ``positions="all"``: (n_samples, n_tokens) or (n_samples,
            n_tokens, n_outputs), one prediction per position.
        """
        predictions = self._lifted_output(X)
        return predictions[..., 0] if np.ndim(self.coef_) == 1 else predictions

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R^2 of the predictions.

        With ``positions="all"`` every position that is not left padding counts
        as one observation (weighted by its sequence's weight).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        y : array-like
            True targets, shaped as for :meth:`fit`.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        if self.positions == "last":
            return self._score_last(_scaled_r2_score, X, y, sample_weight)
        return self._score_positions(_scaled_r2_score, X, y, sample_weight)


class LinearAttentionClassifier(ClassifierMixin, _LinearAttentionBase):
    """Classify sequences with multi-head linear attention learned by least squares.

    Like :class:`~sklearn.linear_model.RidgeClassifier`: the labels are one-hot
    encoded as +1/-1 targets (one column for two classes), a
    :class:`LinearAttentionRegressor` model is fitted to them, and the predicted class
    is the largest output (the sign of the single output for two classes). The
    attention heads and the certificate are those of that regression.

    Parameters
    ----------
    token_dim : int, default=None
        Dimension ``d`` of a token; needed for 2-D ``X`` (see
        :class:`LinearAttentionRegressor`).
    alpha : float, default=0.0
        Ridge penalty on the lifted coefficients (0: minimum-norm least squares,
        which interpolates the labels when there are no more training rows than
        lifted features; on real data use :class:`LinearAttentionClassifierCV`,
        which chooses ``alpha`` by leave-one-out, or a positive ``alpha``).
    n_heads : "auto", int or None, default="auto"
        Head read-out. ``"auto"``: the fewest heads that pass: within ``tol``
        of the lifted fit on exact data; else with a cross-validated
        misclassification rate below the lifted fit's lowered by the smaller
        of two factors, the folds' size factor and the lifted fit's own
        learning curve from ``K - 2`` to ``K - 1`` folds' rows, extrapolated
        to all of them (:class:`CountFit` ``threshold``; a count that is the
        lifted fit on the data passes at the lifted fit's own rate, and where
        the lifted fit misclassifies no held-out row a count that misclassifies
        none passes this test; theory page, "How many heads"). Such a count
        must also be no worse than the lifted fit on a majority of the folds,
        and its refits must predict the class
        scores no worse (``score_cv_error`` at most ``score_threshold``, else
        ``failed_on="scores"``). An int ``k``: the best model with at most
        ``k`` heads. None: the paper's SVD read-out (see
        :class:`LinearAttentionRegressor`).
    fit_intercept : bool, default=False
        Fit an unpenalized bias per class.
    solver : {"auto", "normal", "dual", "cg"}, default="auto"
        See :class:`LinearAttentionRegressor`.
    tol : float, default=1e-8
        Relative Frobenius tolerance of the head read-out.
    head_work_limit : float or None, default=20.0
        Work limit of the head read-out (see :class:`LinearAttentionRegressor`).
    solver_tol : float, default=1e-10
        Stopping tolerance of LSQR for ``solver="cg"`` (see
        :class:`LinearAttentionRegressor`).
    max_iter : int, default=None
        Iteration cap of LSQR for ``solver="cg"`` and of the certificate's
        Lanczos estimates (see :class:`LinearAttentionRegressor`).
    positions : {"last", "all"}, default="last"
        Where the model is read and trained. ``"last"``: one output per sequence,
        at its last token (the query). ``"all"``: an output at every position t,
        ``sum_h V_h S_t Q_h z_t``, trained on every position (targets per
        position). Leading all-zero tokens are left padding: their positions are
        left out of the loss, the certificate and ``score``.
    causal : bool, default=True
        With ``positions="all"``: ``S_t = sum_{s <= t} z_s z_s^T`` (causal
        attention, each position sees its prefix) if True, ``S = Z^T Z`` (each
        position sees the whole sequence) if False.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes in the least-squares objective, multiplying
        ``sample_weight``, as in :class:`~sklearn.linear_model.RidgeClassifier`:
        ``"balanced"`` weighs each class by ``n_samples / (n_classes * count)``
        (with ``positions="all"``, counting the positions that are not left
        padding).
    batch_size : int, default=None
        Samples per chunk while streaming.
    n_jobs : int, default=None
        Threads computing lifted features.
    verbose : int, default=0
        Print progress and timings when positive, and each head count the
        read-out fits with its verdict.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted; output ``k`` of the regression is class ``k``
        (for two classes the one output is positive for ``classes_[1]``).
    coef_ : ndarray of shape (1, n_lifted_features) or (n_classes, n_lifted_features)
        Lifted coefficients of the +1/-1 regression, one row per output, laid out
        as the ``coef_`` of :class:`LinearAttentionRegressor`.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Zeros when ``fit_intercept=False``.
    value_matrices_ : ndarray of shape (`n_heads_`, n_outputs, token_dim)
        The value matrices ``V_h`` of the heads, in canonical form;
        ``n_outputs`` is 1 for two classes, else ``n_classes``.
    query_matrices_ : ndarray of shape (`n_heads_`, token_dim, token_dim)
        The fused key-query matrices ``Q_h`` of the same heads.
    n_heads_ : int
        The number of heads read out.
    attention_ : MultiHeadLinearAttention
        The heads as a model: its outputs are the decision values (without the
        intercept).
    certificate_ : IdentifiabilityCertificate
        Whether the training sequences determine the learned decision function on
        all inputs; computed from the same lifted Gram (or kernel) as the fit.
    head_search_ : HeadReadout
        How the heads were read out (see ``n_heads`` of
        :class:`LinearAttentionRegressor`).
    solver_ : str
        The solver used (``"auto"`` resolved).
    n_iter_ : ndarray of shape (n_outputs,)
        LSQR iterations per output with ``solver="cg"``; 1 for the direct solvers.
    token_dim_ : int
        The token dimension ``d`` of the training sequences.
    n_features_in_ : int
        Columns of 2-D ``X`` (``n_tokens * token_dim`` of the training sequences
        for 3-D ``X``).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` had string column names.

    See Also
    --------
    LinearAttentionClassifierCV : The same classifier with ``alpha`` chosen by
        cross-validation, for real (noisy) data.
    LinearAttentionRegressor : The regression this classifier is built on.

    Examples
    --------
    Associative recall: tokens ``[key; sign]`` store a +1/-1 value with each key,
    the query token repeats one key; which sign was stored with it?

    >>> import numpy as np
    >>> from sklearn_linattn import LinearAttentionClassifier
    >>> rng = np.random.default_rng(0)
    >>> n = 600
    >>> keys = rng.normal(size=(n, 3, 4))  # 3 stored keys per sequence
    >>> signs = rng.choice([-1.0, 1.0], size=(n, 3, 1))
    >>> asked = rng.integers(0, 3, size=n)  # which key the query repeats
    >>> query = np.concatenate(
    ...     [keys[np.arange(n), asked], np.zeros((n, 1))], axis=1)
    >>> context = np.concatenate([keys, signs], axis=2)  # tokens [key; sign]
    >>> X = np.concatenate([context, query[:, None]], axis=1)
    >>> y = np.where(signs[np.arange(n), asked, 0] > 0, "yes", "no")
    >>> clf = LinearAttentionClassifier().fit(X[:400], y[:400])
    >>> clf.classes_
    array(['no', 'yes'], dtype='<U3')
    >>> clf.score(X[400:], y[400:]) > 0.8
    True
    """

    _parameter_constraints = {
        **_LinearAttentionBase._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        token_dim=None,
        alpha=0.0,
        n_heads="auto",
        fit_intercept=False,
        solver="auto",
        tol=1e-8,
        head_work_limit=20.0,
        solver_tol=1e-10,
        max_iter=None,
        positions="last",
        causal=True,
        class_weight=None,
        batch_size=None,
        n_jobs=None,
        verbose=0,
    ):
        super().__init__(
            token_dim=token_dim,
            alpha=alpha,
            n_heads=n_heads,
            fit_intercept=fit_intercept,
            solver=solver,
            tol=tol,
            head_work_limit=head_work_limit,
            solver_tol=solver_tol,
            max_iter=max_iter,
            positions=positions,
            causal=causal,
            batch_size=batch_size,
            n_jobs=n_jobs,
            verbose=verbose,
        )
        self.class_weight = class_weight

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    def _labels(self, y, sequences):
        """Labels as a 1-D array, one per row (per position with ``"all"``);
        a Dask array of labels is computed (labels are small)."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        if scipy.sparse.issparse(y):
            raise TypeError(
                f"{type(self).__name__} takes labels as a 1-D array (one per "
                "sequence, or (n_samples, n_tokens) with positions='all'); y is a "
                "sparse matrix: pass y.toarray().ravel()."
            )
        n_samples, n_tokens, _ = sequences.shape
        labels = np.asarray(y.compute() if is_dask_array(y) else y)
        _refuse_complex_labels(labels)
        if self.positions == "all":
            if labels.shape[:2] != (n_samples, n_tokens) or labels.ndim != 2:
                raise ValueError(
                    "With positions='all', y must hold one label per position, shape "
                    f"(n_samples, n_tokens) = ({n_samples}, {n_tokens}); got shape "
                    f"{labels.shape}."
                )
            labels = labels.ravel()
            # Labels at left-padding positions are ignored (zero weight): they take
            # a real position's label, so that they add no class and need none
            kept = ~padding_row_mask(sequences).ravel()
            if kept.any() and not kept.all():
                labels = labels.copy()
                labels[~kept] = labels[kept][0]
        else:
            if labels.ndim != 1 and labels.shape[1:] != (1,):
                # (scikit-learn: "Found array with dim 3, while dim <= 2 is
                # required", or "with 0 feature(s)", naming neither y nor its shape)
                raise ValueError(
                    "y should be a 1d array of one label per sequence, shape "
                    f"({n_samples},); got an array of shape {labels.shape} instead."
                )
            labels = column_or_1d(labels, warn=True)
            if labels.shape[0] != n_samples:
                raise ValueError(
                    f"X has {n_samples} samples but y has {labels.shape[0]}; they "
                    "must match."
                )
        _check_labels(labels)
        return labels

    def _check_score_labels(self, y, n_samples, n_tokens=None, kept=None):
        """``score``'s labels checked as ``fit`` checks them (scikit-learn's
        metrics raised numpy's "'<' not supported between instances of 'int'
        and 'NoneType'" for a missing label, printed every complex label, and
        called 3-D labels "a mix of unknown and binary targets"). With
        ``positions="all"``, the labels at the positions ``kept`` (not left
        padding), which fit reads alone."""
        labels = np.asarray(y)
        _refuse_complex_labels(labels)
        if n_tokens is None:
            expected, what = (n_samples,), "one label per sequence"
            accepted = labels.shape in ((n_samples,), (n_samples, 1))
        else:
            expected, what = (n_samples, n_tokens), "one label per position"
            accepted = labels.shape == expected
        if not accepted:
            got = f"the scalar {y!r}" if labels.ndim == 0 else f"shape {labels.shape}"
            raise ValueError(f"y must hold {what}, shape {expected}; got {got}.")
        _check_labels(labels.ravel() if kept is None else labels[kept])

    def _encoded_labels(self, y, sequences):
        """Labels per row and their +1/-1 one-hot targets; sets ``classes_``."""
        labels = self._labels(y, sequences)
        if np.unique(labels).size < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least two classes; "
                f"got 1 class ({labels[0]!r})."
            )
        binarizer = LabelBinarizer(pos_label=1, neg_label=-1).fit(labels)
        self.classes_ = binarizer.classes_
        return labels, binarizer.transform(labels).astype(np.float64)

    def _row_weights(self, labels, sample_weight, sequences, require_positive=True):
        """Sample weights times class weights: per sample, or per row when class
        weights differ between the positions of a sequence (not all zero, with
        ``require_positive``)."""
        weights = validate_sample_weight(sample_weight, sequences, require_positive)
        if is_dask_array(weights):  # small: checked and computed once, read twice
            weights = np.asarray(weights.compute())
        if self.class_weight is None:
            return weights
        validate_class_weight(self.class_weight)
        if self.positions == "last":
            class_weights = self._class_weights(labels)
            row_weights = class_weights if weights is None else weights * class_weights
        else:
            # Per position: "balanced" counts the real positions only (left
            # padding has no label and weight zero).
            real = ~padding_row_mask(sequences).ravel()
            class_weights = np.zeros(labels.shape[0])
            if real.any():
                class_weights[real] = self._class_weights(labels[real])
            base = 1.0 if weights is None else np.repeat(weights, sequences.shape[1])
            row_weights = base * class_weights
        if require_positive and row_weights.size and not np.any(row_weights):
            raise ValueError(
                f"class_weight={self.class_weight!r} (times sample_weight) gives every "
                "training row weight zero: at least one must be positive."
            )
        return row_weights

    def _class_weights(self, labels):
        """Each label's class weight. A dict weighs each of ``classes_`` (every
        class the model knows, not only those in ``labels``): a ``partial_fit``
        batch without some of the classes the dict names gives its rows the
        weights ``fit`` on all the batches gives them (scikit-learn's
        ``compute_sample_weight`` refuses a dict naming a class absent from
        ``labels`` when another class present is not named)."""
        if not isinstance(self.class_weight, dict):  # "balanced": all the labels
            return compute_sample_weight(self.class_weight, labels)
        per_class = compute_class_weight(
            self.class_weight, classes=self.classes_, y=labels
        )
        return per_class[np.searchsorted(self.classes_, labels)]

    def _note_present_classes(self, labels, weights, first):
        """Record the classes with training rows of positive weight (a class
        declared to partial_fit, or weighted zero, has none: it is never
        predicted)."""
        if weights is not None:
            weights = np.asarray(weights)
            if weights.shape[0] != labels.shape[0]:  # per sequence, rows per position
                weights = np.repeat(weights, labels.shape[0] // weights.shape[0])
            labels = labels[weights > 0]
        present = np.isin(self.classes_, labels)
        self._present_classes = present if first else self._present_classes | present

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the lifted least-squares model to +1/-1 encoded labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            Training sequences, tokens as rows, the query last. A Dask array chunked
            along samples is lifted blockwise on its workers.
        y : array-like of shape (n_samples,)
            Class labels (numbers or strings); computed on the client when a Dask
            array. With ``positions="all"``, one label per position: shape
            (n_samples, n_tokens).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sequence (multiplied by ``class_weight``);
            as for the regressor, ``alpha`` is not scaled with the weights.

        Returns
        -------
        self : LinearAttentionClassifier
        """
        self._check_parameters()
        with _AtomicUpdate(self):
            sequences = self._sequences(X, reset=True)
            labels, targets = self._encoded_labels(y, sequences)
            weights = self._row_weights(labels, sample_weight, sequences)
            self._note_present_classes(labels, weights, first=True)
            self._warn_about_fit_data(sequences, weights)
            return self._fit_rows(sequences, targets, weights, single_output=False)

    @available_if(_partial_fit_available)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Add a batch of labelled sequences to the normal equations.

        As :meth:`LinearAttentionRegressor.partial_fit`, on the +1/-1 encoded
        labels: after any sequence of calls the lifted fit equals ``fit`` on all
        the batches together (and continues a ``fit`` made with solver
        ``"normal"``), and so do a fixed count's heads, to the precision at
        which their fit stops. With ``n_heads="auto"`` counts are judged, as
        ``fit`` judges them, by the misclassified held-out rows: ``fit`` and
        ``partial_fit`` keep the batches' compact rows (``d (d + 1) / 2 + d``
        floats each, plus the labels) up to 8 MiB or the size of the kept
        statistics (``5 p^2`` floats), whichever is larger; beyond that, and
        after a batch not in memory (Dask), they keep only the statistics and
        judge counts by the held-out squared error of the encoded labels, with
        a warning (the theory page, "How many heads"). It exists only where it
        can run: not with
        ``class_weight="balanced"``, which needs the class counts of all the
        data (pass a dict of class weights).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        y : array-like of shape (n_samples,)
            Labels of the batch, each one of ``classes``.
        classes : array-like of shape (n_classes,), default=None
            Every class of the problem; required on the first call (as in
            scikit-learn's ``partial_fit``), optional afterwards (then it must
            equal ``classes_``).
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : LinearAttentionClassifier
        """
        # scikit-learn checks the parameters on the first call only; set_params
        # between batches is checked here
        self._validate_params()
        self._check_parameters()
        with _AtomicUpdate(self):
            first_call = self._check_partial_fit()
            if first_call and classes is None:
                raise ValueError(
                    "classes must be passed on the first call to partial_fit: every "
                    "class the model will know."
                )
            if classes is not None:
                classes = _checked_classes(classes)
                if classes.size < 2:
                    raise ValueError(
                        f"classes must hold at least two classes, got {classes!r}."
                    )
                if not first_call and not np.array_equal(classes, self.classes_):
                    raise ValueError(
                        f"classes={classes!r} differs from the classes of the first "
                        f"call, {self.classes_!r}."
                    )
            sequences = self._sequences(X, reset=first_call)
            labels = self._labels(y, sequences)
            known = classes if first_call else self.classes_
            unknown = np.setdiff1d(labels, known)
            if unknown.size:
                raise ValueError(
                    f"y contains labels {unknown.tolist()!r} that are not in "
                    f"classes {known.tolist()!r}."
                )
            binarizer = LabelBinarizer(pos_label=1, neg_label=-1).fit(known)
            self.classes_ = binarizer.classes_
            targets = binarizer.transform(labels).astype(np.float64)
            weights = self._row_weights(labels, sample_weight, sequences, first_call)
            first = first_call or "_present_classes" not in vars(self)
            self._note_present_classes(labels, weights, first=first)
            return self._partial_fit_rows(
                sequences, targets, weights, False, first_call
            )

    def _single_column(self):
        return len(self.classes_) == 2

    def decision_function(self, X):
        """Lifted model outputs: one score per class (a single one for two).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive scores mean ``classes_[1]``. With
            ``positions="all"`` a score per position: (n_samples, n_tokens) or
            (n_samples, n_tokens, n_classes). A lazy Dask array for Dask input.
        """
        scores = self._lifted_output(X)
        return scores[..., 0] if scores.shape[-1] == 1 else scores

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            (n_samples, n_tokens) with ``positions="all"``. A lazy Dask array for
            Dask input. Classes without training rows of positive weight (declared
            to ``partial_fit`` but not in its batches so far, or weighted zero)
            are never predicted.
        """
        scores = self.decision_function(X)
        present = getattr(self, "_present_classes", np.ones(len(self.classes_), bool))
        if len(self.classes_) == 2:  # the score of classes_[1]
            threshold = 0.0 if present.all() else (np.inf if present[0] else -np.inf)
            indices = (scores > threshold).astype(int)
        else:
            indices = (scores + np.where(present, 0.0, -np.inf)).argmax(axis=-1)
        if is_dask_array(indices):
            return indices.map_blocks(self.classes_.take, dtype=self.classes_.dtype)
        return self.classes_[indices]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy; with ``positions="all"`` over every position that is not
        left padding.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        y : array-like of shape (n_samples,) or (n_samples, n_tokens)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        if self.positions == "last":
            return self._score_last(accuracy_score, X, y, sample_weight)
        return self._score_positions(accuracy_score, X, y, sample_weight)


def _is_missing(label):
    """None, a float NaN or pandas' NA."""
    pandas = sys.modules.get("pandas")  # imported where its NA can occur
    return (
        label is None
        or (isinstance(label, (float, np.floating)) and np.isnan(label))
        or (pandas is not None and label is pandas.NA)
    )


def _refuse_complex_labels(labels):
    """Complex labels named by their dtype (scikit-learn's message prints all
    of y)."""
    if labels.dtype.kind == "c":
        raise ValueError(
            f"Complex data not supported: y has dtype {labels.dtype}; labels "
            "are classes (ints, strings, bools or real numbers)."
        )


def _check_labels(labels):
    """A 1-D array of labels checked for values as classes: no missing label,
    no infinity, no mix of strings and numbers, no object array of numbers;
    then scikit-learn's check of the label type."""
    _refuse_complex_labels(labels)
    if labels.dtype.kind == "O":
        _check_label_values(labels, "Input y")
        _refuse_object_numbers(labels, "y")
    elif labels.dtype.kind == "f":  # before check_classification_targets,
        # which casts them to integers (numpy's cast warning, then an error)
        if np.isnan(labels).any():
            raise ValueError("Input y contains NaN (a missing label).")
        if np.isinf(labels).any():
            raise ValueError("Input y contains infinity.")
    check_classification_targets(labels)


def _refuse_object_numbers(labels, name):
    """An object array of numbers (a pandas column of dtype object, a list
    converted with ``dtype=object``): scikit-learn's label check calls its type
    "unknown" and suggests a regression target with continuous values (its
    words "Unknown label type" are kept, which its estimator checks expect)."""
    if labels.size and all(
        isinstance(label, (Number, np.bool_)) for label in labels
    ):
        raise ValueError(
            f"Unknown label type: {name} is an object array of numbers (the "
            f"first is {labels[0]!r}, "
            f"of type {type(labels[0]).__name__}): classes in an object array "
            f"must be strings. Pass the numbers as a numeric array, e.g. "
            f"{name}.astype(int) or pandas.to_numeric({name})."
        )


def _check_label_values(labels, name):
    """A clear error for a missing label, or labels that mix strings and numbers
    (numpy cannot sort them, and would silently make a list of them strings)."""
    if any(_is_missing(label) for label in labels):
        raise ValueError(f"{name} contains NaN (a missing label).")
    if len({isinstance(label, str) for label in labels}) > 1:
        raise ValueError(
            f"{name} mixes strings and numbers (Mix of label input types): labels "
            "of one type are needed."
        )


def _checked_classes(classes):
    """The sorted distinct classes passed to ``partial_fit``, checked as labels."""
    # a set, a dict, a string or a generator became one object "class"
    if isinstance(classes, (str, set, frozenset, dict)) or np.ndim(classes) != 1:
        shape = f" of shape {np.shape(classes)}" if np.ndim(classes) > 1 else ""
        raise ValueError(
            "classes must be a 1-D array-like of labels (a list or an array), got "
            f"{type(classes).__name__}{shape}."
        )
    _check_label_values(np.ravel(np.asarray(classes, dtype=object)), "classes")
    classes = np.asarray(classes)
    if classes.dtype.kind == "O":
        _refuse_object_numbers(classes, "classes")
    return np.unique(classes)


class LiftedAttentionFeatures(
    TransformerMixin, BooleanRefusingParamsMixin, BaseEstimator
):
    """The lifted features of multi-head linear attention, for any linear model.

    Each sequence ``Z`` (tokens as rows, query ``q = Z[-1]``) becomes the
    ``p = d * d * (d + 1) / 2`` features ``w_bc S[b, c] q[e]`` of ``S = Z^T Z``,
    ``b <= c``, with ``w_bc = sqrt(2)`` off the diagonal (so the map is an isometry
    for the paper's kernel ``<S, S'>_F <q, q'>``). A linear model on them is exactly
    a multi-head linear attention layer with any number of heads; the same kernel
    as :class:`LinearAttentionRegressor`.

    Parameters
    ----------
    token_dim : int, default=None
        Dimension ``d`` of a token; needed for 2-D ``X`` (rows flattened token by
        token). With None a 2-D row is one token; 3-D input gives it itself.
    n_jobs : int, default=None
        Threads computing the features (None means 1, -1 all cores).

    Attributes
    ----------
    token_dim_ : int
        The token dimension ``d`` seen in ``fit``.
    n_features_in_ : int
        Columns of 2-D ``X`` (``n_tokens * token_dim`` for 3-D ``X``).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` had string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import RidgeCV
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_linattn import LiftedAttentionFeatures
    >>> features = LiftedAttentionFeatures(token_dim=2)
    >>> # 2 tokens of 2 values each
    >>> features.fit_transform(np.array([[1.0, 2.0, 3.0, 4.0]])).shape
    (1, 6)
    >>> features.get_feature_names_out()[:3].tolist()
    ['S[0,0]*q[0]', 'S[0,0]*q[1]', 'S[0,1]*q[0]']
    >>> model = make_pipeline(LiftedAttentionFeatures(token_dim=4), RidgeCV())
    """

    _parameter_constraints = {
        name: _LinearAttentionBase._parameter_constraints[name]
        for name in ("token_dim", "n_jobs")
    }

    def __init__(self, token_dim=None, n_jobs=None):
        self.token_dim = token_dim
        self.n_jobs = n_jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check ``X`` and remember its token dimension.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        y : None
            Ignored.

        Returns
        -------
        self : LiftedAttentionFeatures
        """
        reject_boolean_parameters(self, ("token_dim", "n_jobs"))
        sequences = validate_sequences(
            X, token_dim=self.token_dim, estimator=self, reset=True
        )
        self.token_dim_ = sequences.shape[2]
        return self

    def transform(self, X):
        """Lifted features of each sequence.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)

        Returns
        -------
        features : ndarray of shape (n_samples, n_lifted_features)
            A lazy Dask array (one block of features per block of sequences)
            for Dask input; with ``set_output(transform="pandas")`` a
            DataFrame in memory, so a Dask input is computed into it (refused
            with a ``ValueError``, as numpy input is, where the features cannot
            fit in the available memory). The features are cubic in the
            tokens: those of tokens below about 1e-103 in size underflow to
            zero in float64 (the estimators scale sequences first; a model
            fitted on these features should be given rescaled tokens).
        """
        check_is_fitted(self)
        self._validate_params_used_after_fit(("n_jobs",))
        shape = getattr(X, "shape", ())
        if len(shape) in (2, 3) and not (is_dask_array(X) or scipy.sparse.issparse(X)):
            # before validation, whose float64 copy of X can be as large
            check_features_memory(shape[0], self.token_dim_)
        sequences = validate_sequences(
            X, token_dim=self.token_dim_, estimator=self, reset=False
        )
        default_output = _get_output_config("transform", self)["dense"] == "default"
        if is_dask_array(sequences) and default_output:
            return features_dask(sequences)
        # (a DataFrame of set_output computes a Dask array into memory)
        check_features_memory(sequences.shape[0], self.token_dim_)
        if is_dask_array(sequences):
            return features_dask(sequences)
        features = lifted_features(sequences, n_threads=effective_n_jobs(self.n_jobs))
        warn_if_features_beyond_float64(features, sequences)
        return features

    def get_feature_names_out(self, input_features=None):
        """Names ``S[b,c]*q[e]`` of the lifted features, in their order.

        A name leaves the feature's weight out: a feature with ``b < c`` is
        ``sqrt(2) S[b,c] q[e]`` (the class docstring).

        Parameters
        ----------
        input_features : array-like of str, default=None
            Names of the ``n_features_in_`` input columns; only checked against
            ``feature_names_in_`` and ``n_features_in_`` (the names describe the
            attention features, not the columns).

        Returns
        -------
        names : ndarray of str, shape (n_lifted_features,)
        """
        check_is_fitted(self)
        check_input_features(self, input_features)
        # about 128 bytes per feature: three indices and its name "S[b,c]*q[e]"
        n_lifted = n_lifted_features(self.token_dim_)
        check_allocation(
            "get_feature_names_out",
            {f"the names of p = {n_lifted:,} lifted features": (n_lifted, 16)},
        )
        b, c, e = lifted_feature_pairs(self.token_dim_)
        return np.asarray(
            [f"S[{i},{j}]*q[{k}]" for i, j, k in zip(b, c, e, strict=True)],
            dtype=object,
        )
