"""Cross-validated ridge penalty in one pass over the data, like ``RidgeCV``.

The lifted least-squares problem (see the theory page and Yau et al. 2025) is
determined by additive sufficient statistics that do not depend on ``alpha``:
``G = Phi^T W Phi``, ``Phi^T W y``, sums and counts. So every ``alpha`` can be
scored from one eigendecomposition per training set:

- ``cv=None``: exact leave-one-out. With ``G = V diag(lambda) V^T`` (``n_rows >= p``,
  "normal") the leverage of row ``i`` is
  ``h_i = w_i sum_k ((phi_i - mean) . v_k)^2 / (lambda_k + alpha)`` (plus
  ``w_i / sum(w)`` with an intercept), from one more streamed pass computing
  ``(phi_i - mean)^T V`` chunk by chunk; its leave-one-out residual is
  ``r_i / (1 - h_i)``, ``r_i`` the training residual (for a row of leverage one,
  the limit of that ratio: the leave-one-out of the minimum-norm fit). With fewer
  rows than lifted features ("dual") the same leverages come from the
  eigenvectors of the weighted, centered kernel ``K_ij = <S_i, S_j>_F <q_i, q_j>``.
- ``cv=int`` or a splitter: K-fold from the statistics of each test fold (one pass
  over the data in total); the training statistics of fold ``k`` are the sum of
  the other folds' (not the total minus fold ``k``, which a fold holding a far
  larger sequence would cancel out); one eigendecomposition per fold serves every
  ``alpha``. With fewer rows than lifted features the folds are solved in kernel
  form. The held-out rows are then scored from their predictions (a second
  streamed pass over them, every ``alpha`` at once): exact, also when the
  residuals are small.

The final model for the chosen ``alpha_`` is solved from the total statistics (or,
on the dual path, the kernel) without another pass, and gets heads and certificate
exactly as :class:`~sklearn_linattn.LinearAttentionRegressor` would.
"""

import time
import warnings
from collections.abc import Iterable
from numbers import Real

import numpy as np
import scipy.linalg
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.metrics import (
    accuracy_score,
    check_scoring,
    get_scorer_names,
)
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import (
    InvalidParameterError,
    StrOptions,
)

from ._certificate import (
    GramSpectrum,
    centering_floor,
    default_rank_tol,
    deflated_kernel,
    reflect,
)
from ._data import (
    StatisticsSource,
    _RowLayout,
    check_fit_cost,
    dense_threads,
    is_dask_array,
    largest_exponent,
    lifted_data,
    padding_row_mask,
    sum_statistics,
    to_unit,
)
from ._estimators import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    _AtomicUpdate,
    _LinearAttentionBase,
)
from ._lift import lifted_kernel
from ._solvers import resolve_solver, solve_dual, solve_normal, uncentered_scale
from ._validation import (
    RealInterval,
    caller_stacklevel,
    check_sequence_values,
    validate_sample_weight,
)

__all__ = ["LinearAttentionClassifierCV", "LinearAttentionRegressorCV"]

# A leverage within this of one (at least; from the Gram, within its rounding,
# see _loo_normal) is taken for an exact one: a row whose lifted features no other
# row shares (every row, for alpha=0 with at most as many rows as lifted
# features). Its leave-one-out residual r_i / (1 - h_i) is then 0 / 0, and is
# computed as the limit of that ratio (see _loo_normal, _loo_dual) or is -inf.
_LEVERAGE_TOL = 1e-9
# That limit needs the directions of every row's features resolved by the
# eigendecomposition: a row whose weighted squared norm is within this factor of
# the rank threshold (sequences of far smaller scale than the largest) is below
# its rounding, and leverage-one rows then get no finite score.
_RESOLVED_MARGIN = 10.0
_LOST_FRACTION = 1e-3
_EPS = np.finfo(np.float64).eps
# In kernel form, directions dropped as numerically null are nulls of the data
# only when the smallest kept eigenvalue is this many times the rank threshold.
_CLEAR_MARGIN = 1e3
# From the Gram, that limit divides by squared eigenvalues: its error grew about as
# eps times the Gram's condition number (n = p = 18, one sequence 1-30x the others:
# 1e-11 at 4.5e5, 3.5e-6 at 3e9, 6e-4 at 2e12; benchmarks/bench_cv_numerics.py);
# beyond this condition number leverage-one rows get no finite score. The kernel
# form (gcv_mode "auto" for at most p sequences in memory) is exact there.
_LIMIT_CONDITION = 1e10
# alphas="auto": these times the mean diagonal of the weighted lifted Gram the
# penalty acts on (centered with an intercept), trace(G) / p over the features of
# the coordinates in use (_lifted_features_in_use). The best alpha of 50
# of 54 synthetic fits (d = 2..4, 40-1000 sequences, 4 or 20 tokens, noise 0.1-3x
# the signal) was 1e-5..10 times it, median 0.03; the other 4 needed no penalty
# or had no signal to find (benchmarks/bench_cv_numerics.py).
_RELATIVE_ALPHAS = np.concatenate([[0.0], np.logspace(-6, 2, 9)])


def _leave_one_out_residual(residual, one_minus_leverage, floor=_LEVERAGE_TOL):
    """``residual / (1 - leverage)``; infinite where ``1 - leverage <= floor``.

    residual : (n_alphas, m, n_outputs); one_minus_leverage : (m, n_alphas);
    floor : float or (n_alphas,).
    """
    floor = np.reshape(floor, (-1, 1, 1))
    denominator = one_minus_leverage.T[:, :, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(denominator > floor, residual / denominator, np.inf)


def _unresolved(row_norms, threshold):
    """The weighted rows whose squared norm is not zero but within
    ``_RESOLVED_MARGIN`` of the rank threshold of the eigendecomposition: below
    its rounding. Where their features lie in directions dropped as numerically
    null (``_LOST_FRACTION`` of them or more), those directions are theirs, lost
    to rounding, and their leverage is no longer known."""
    return (row_norms > 0) & (row_norms <= _RESOLVED_MARGIN * threshold)


def _norm_spread(sequences):
    """The largest sequence norm (all tokens) over the smallest non-zero one, for
    a warning; None for a Dask array or where no two norms are non-zero."""
    if is_dask_array(sequences) or np.ndim(sequences) != 3:
        return None
    with np.errstate(over="ignore"):
        squares = np.einsum("ijk,ijk->i", sequences, sequences, dtype=np.float64)
    norms = np.sqrt(squares[(squares > 0) & np.isfinite(squares)])
    return float(norms.max() / norms.min()) if norms.size > 1 else None


# --- the spectral path: every alpha from one eigendecomposition ---------------------


def _spectral_filters(eigenvalues, alphas, tol, scale=0.0, max_rank=None):
    """``1 / (lambda_k + alpha)`` for each alpha (rows) and eigenvalue (columns).

    As :func:`~sklearn_linattn._solvers.solve_gram`: the full inverse when the
    matrix is numerically positive definite or ``alpha`` exceeds the rank threshold,
    else the numerically-null directions are dropped (minimum norm). ``scale``:
    the rank threshold's floor for centered matrices, as there. ``max_rank``: the
    rank of a kernel ``A A^T`` at most; given, the matrix is a kernel and its
    numerically-null directions are dropped for every alpha (``A^T u = 0``).
    """
    spectrum = GramSpectrum(eigenvalues, None, tol, scale=scale, max_rank=max_rank)
    threshold = spectrum.threshold
    kept = eigenvalues > threshold
    structural = np.arange(eigenvalues.size) < spectrum.structural_zeros
    full_rank = bool(np.all(kept))
    filters = np.zeros((len(alphas), eigenvalues.size))
    for index, alpha in enumerate(alphas):
        shifted = eigenvalues + alpha
        if full_rank or (alpha > threshold and max_rank is None):
            use = (shifted > 0) & ~structural
        else:
            use = kept
        filters[index, use] = 1.0 / shifted[use]
    return filters


def _eigh(matrix):
    """Eigendecomposition of a symmetric matrix (divide and conquer: about twice
    as fast as scipy's default driver for the matrices here). scipy < 1.14 rejects
    LAPACK's workspace size for a 1 x 1 matrix with that driver."""
    driver = "evd" if matrix.shape[0] > 1 else "ev"
    return scipy.linalg.eigh(matrix, check_finite=False, driver=driver)


def _floor(statistics, gram, feature_mean, fit_intercept):
    """The rank threshold's floor for the Gram of these statistics (see
    :func:`~sklearn_linattn._certificate.centering_floor`)."""
    scale = uncentered_scale(gram, feature_mean, statistics.weight_sum)
    if not fit_intercept:
        return scale
    return centering_floor(scale, statistics.n_observations, statistics.n_lifted)


def _kfold_coefs(statistics, alphas, fit_intercept):
    """Coefficients and intercepts (rescaled units) of every alpha for one set of
    training statistics: ``(n_alphas, n_outputs, p)`` and ``(n_alphas, n_outputs)``,
    from one eigendecomposition (single-threaded, one divide-and-conquer
    eigendecomposition of a 288 x 288 Gram took half as long as 15 Cholesky
    factorizations on the project's machine)."""
    gram, moment, _, feature_mean, target_mean = statistics.normal_equations(
        fit_intercept
    )
    eigenvalues, eigenvectors = _eigh(gram)
    filters = _spectral_filters(
        eigenvalues,
        alphas,
        default_rank_tol(statistics.n_lifted),
        _floor(statistics, gram, feature_mean, fit_intercept),
    )
    projected = eigenvectors.T @ moment  # (p, n_outputs)
    coefs = np.swapaxes(eigenvectors @ (filters[:, :, None] * projected), 1, 2)
    intercepts = target_mean - coefs @ feature_mean
    return coefs, intercepts


def _lifted_features_in_use(energy):
    """``p_used = r^2 (r + 1) / 2``, the lifted features of the ``r`` token
    coordinates that some token or query uses, from ``energy`` (n_pairs, d),
    each feature's weighted sum of squares (the uncentered Gram's diagonal, in
    the package's feature order): ``p`` unless a coordinate is zero in every
    token of positive weight. Such a coordinate adds only features that are
    zero, and leaves the grid as it was."""
    d = energy.shape[1]
    rows, cols = np.triu_indices(d)
    in_pairs = np.any(energy[rows == cols] > 0, axis=1)  # coordinate b, as S[b, b]
    in_queries = np.any(energy > 0, axis=0)
    r = np.count_nonzero(in_pairs | in_queries)
    return max(r * r * (r + 1) // 2, 1)


def _gram_mean_diagonal(statistics, fit_intercept, token_dim):
    """``trace(G) / p_used`` of the weighted lifted Gram (centered with an
    intercept), in the statistics' units (:func:`_lifted_features_in_use`)."""
    diagonal = np.diag(statistics.gram_upper).copy()
    used = _lifted_features_in_use(diagonal.reshape(-1, token_dim))
    if fit_intercept and statistics.weight_sum > 0:
        diagonal -= statistics.feature_sum**2 / statistics.weight_sum
    return max(float(np.sum(diagonal)) / used, 0.0)


def _kernel_trace(kernel, weights, fit_intercept):
    """``trace(G)`` from the unweighted kernel of the rows: ``sum_i w_i K_ii``
    (minus ``w^T K w / sum(w)`` centered)."""
    trace = float(weights @ np.diag(kernel))
    weight_sum = float(weights.sum())
    if fit_intercept and weight_sum > 0:
        trace -= float(weights @ kernel @ weights) / weight_sum
    return max(trace, 0.0)


def _loo_normal(data, statistics, targets, alphas, fit_intercept, equilibrate=False):
    """Leave-one-out predictions (rescaled units) from the eigendecomposition of the
    lifted Gram, and the total statistics. With ``equilibrate`` (for ``alphas =
    [0]`` only: a ridge penalty is not invariant to the features' scales) the
    features are scaled by powers of two to unit Gram diagonal first, which
    leaves the minimum-norm fit's leverages and predictions as they are and
    lowers the Gram's condition number (:func:`_equilibrated_zero_alpha`).

    A row of leverage one at ``alpha = 0`` (``r_i = 1 - h_i = 0``) gets the limit
    of ``r_i / (1 - h_i)``: with ``rho = (phi_i - mean)^T V``, ``c = V^T Phi^T W y``,
    ``f = 1 / (lambda + alpha)`` and ``f0 = 1 / lambda`` (the kept directions),
    ``r_i(alpha) = alpha sum_k rho_k c_k f_k f0_k`` and ``1 - h_i(alpha) = alpha w_i
    sum_k rho_k^2 f_k f0_k``, so their ratio is exact for every ``alpha``: the
    leave-one-out of the minimum-norm fit at ``alpha = 0``.

    Returns
    -------
    predictions : ndarray of shape (n_rows, n_alphas, n_outputs)
    floored : ndarray of shape (n_rows,)
        The rows whose ``1 - h_i`` at ``alpha = 0`` is above ``_LEVERAGE_TOL``
        but within the Gram's rounding (no number for them at ``alpha = 0``
        unless a limit is taken), where the Gram has full rank (none else).
    """
    gram, moment, _, feature_mean, target_mean = statistics.normal_equations(
        fit_intercept
    )
    column_scale = None
    if equilibrate:  # powers of two with column_scale^2 diag(G) in [1/4, 1)
        diagonal = np.maximum(np.diag(gram), 0.0)
        column_scale = np.ldexp(1.0, -to_unit(np.sqrt(diagonal), ())[1])
        gram = gram * column_scale[:, None] * column_scale
        moment = column_scale[:, None] * moment
        feature_mean = column_scale * feature_mean
    eigenvalues, eigenvectors = _eigh(gram)
    tol = default_rank_tol(data.n_lifted)
    scale = _floor(statistics, gram, feature_mean, fit_intercept)
    filters = _spectral_filters(eigenvalues, alphas, tol, scale)
    zero_filters = _spectral_filters(eigenvalues, [0.0], tol, scale)[0]
    spectral = (
        eigenvectors,
        feature_mean @ eigenvectors,
        eigenvectors.T @ moment,  # (p, o)
        filters,
        zero_filters,
        target_mean,
        column_scale,
    )
    weights = data.row_scale**2
    weight_sum = float(weights.sum())
    n_alphas, n_outputs = len(alphas), targets.shape[1]
    predictions = np.empty((data.n_rows, n_alphas, n_outputs))
    row_norms = np.empty(data.n_rows)
    floored = np.zeros(data.n_rows, dtype=bool)
    limits = []  # (rows, limit predictions) of leverage-one rows
    # 1 - h_i is a difference of terms up to one, each with a relative error of
    # about eps * lambda_max / lambda_k: its rounding was at most 0.27 eps times the
    # condition number (200 random Grams against a QR of [Phi; sqrt(alpha) I]);
    # below 100 times that it is taken for no number (above, within 0.3%).
    threshold = tol * max(eigenvalues[-1], scale, 0.0)
    kept = eigenvalues[eigenvalues > threshold]
    extremes = kept[[0, -1]] if kept.size else np.ones(2)
    shifted = np.append(alphas, 0.0)[:, None] + extremes  # the last: alpha = 0
    condition = shifted[:, 1] / shifted[:, 0]
    floors = np.maximum(_LEVERAGE_TOL, 100 * _EPS * condition)

    outside = np.empty(data.n_rows)  # the part of each row in dropped directions

    def add_predictions(start, stop, fitted, spread, slope, slope_spread, extra):
        spread0, norms = extra[:, 0], extra[:, 1]
        outside[start:stop] = extra[:, 2]
        row_weights = weights[start:stop, None]
        intercept_leverage = row_weights / weight_sum if fit_intercept else 0.0
        one_minus = 1.0 - spread * row_weights - intercept_leverage
        row_targets = targets[start:stop]
        loo_residual = _leave_one_out_residual(
            row_targets - fitted, one_minus, floors[:-1]
        )
        predictions[start:stop] = np.swapaxes(row_targets - loo_residual, 0, 1)
        row_norms[start:stop] = row_weights[:, 0] * norms
        one_minus0 = 1.0 - spread0[:, None] * row_weights - intercept_leverage
        leverage_one = (one_minus0[:, 0] <= floors[-1]) & (row_weights[:, 0] > 0)
        floored[start:stop] = leverage_one & (one_minus0[:, 0] > _LEVERAGE_TOL)
        rows = np.flatnonzero(leverage_one)
        if rows.size:
            residual = _leave_one_out_residual(
                slope[:, rows], slope_spread[rows] * row_weights[rows], 0.0
            )
            limits.append(
                (start + rows, np.swapaxes(row_targets[rows] - residual, 0, 1))
            )

    if data.is_distributed:  # one pass on the workers; 2 A (o + 1) + 3 numbers a row
        width = n_alphas * n_outputs
        packed = data.sequences.map_blocks(
            _block_spectral_fits,
            data.layout_args,
            data.rescaling.token,
            *spectral,
            dtype=np.float64,
            drop_axis=2,
            chunks=(data.sequences.chunks[0], (2 * n_alphas * (n_outputs + 1) + 3,)),
        ).compute()
        parts = np.split(packed, np.cumsum([width, n_alphas, width, n_alphas]), axis=1)
        fitted, slope = (
            part.reshape(-1, n_alphas, n_outputs).swapaxes(0, 1)
            for part in (parts[0], parts[2])
        )
        add_predictions(0, data.n_rows, fitted, parts[1], slope, parts[3], parts[4])
    else:
        for start, stop, chunk in data._chunks():
            features = data.layout.features(chunk, n_threads=data.n_threads)
            add_predictions(start, stop, *_spectral_fits(features, *spectral))
    # The limit holds where h_i = 1 exactly: when the distinct rows' features are
    # linearly independent (the fit interpolates them all) and resolved; a
    # computed leverage near one can otherwise be a near one, 1 - h_i tiny but
    # not zero.
    # rows that take part: of positive weight, and (uncentered) not all zero
    if fit_intercept:
        taking_part = np.count_nonzero(weights) - 1
    else:
        taking_part = np.count_nonzero(row_norms)
    independent = kept.size == taking_part
    repeated = set()
    if limits and not independent and not data.is_distributed:
        # repeated rows are one direction: a row no other repeats still has h_i
        # = 1 where the distinct rows are independent (a repeated one has not,
        # however small its copy's weight)
        flagged = set(np.concatenate([rows for rows, _ in limits]).tolist())
        distinct, repeated = _distinct_rows(
            data, weights, kept.size + fit_intercept, fit_intercept, flagged
        )
        independent = kept.size == distinct - fit_intercept
    conditioned = kept.size and kept[-1] <= _LIMIT_CONDITION * kept[0]
    unresolved = _unresolved(row_norms, threshold)
    # (the limit is the minimum-norm fit's, which depends on the features'
    # scales: not taken from an equilibrated Gram)
    if limits and independent and conditioned and not unresolved.any() and (
        not equilibrate
    ):
        for rows, values in limits:
            alone = ~np.isin(rows, list(repeated))
            predictions[rows[alone]] = values[alone]
    lost = unresolved & (outside > _LOST_FRACTION)
    predictions[np.ix_(lost, np.any(filters == 0, axis=1))] = -np.inf
    if equilibrate and kept.size < eigenvalues.size:
        # its rank threshold dropped a direction the Gram kept: the leave-one-out
        # of another model (with an intercept and coordinates offset by 30, rows
        # 0.7 from the exact one; helper-96)
        predictions[:] = -np.inf
    # (a Gram of numerically dropped directions: which are dropped depends on
    # the features' scales, and an equilibrated Gram poses another problem)
    return predictions, floored & (kept.size == eigenvalues.size)


def _equilibrated_zero_alpha(data, statistics, targets, alphas, fit_intercept, loo):
    """The predictions of ``loo`` (:func:`_loo_normal`'s predictions and floored
    rows) with those of ``alpha = 0`` that the Gram left without a finite value,
    for rows it floored, computed from the equilibrated Gram
    (:func:`_loo_normal`), for rows of leverage below one there (the limit at
    leverage one is the minimum-norm fit's, which depends on the features'
    scales). The Gram's rounding floor on ``1 - h_i`` is 100 eps times its
    condition number, which token coordinates in other units raise: one
    coordinate times 0.03 gave 1.4e12, a floor of 0.03 over rows of ``1 - h_i``
    down to 0.006, and no score for alpha = 0, which reproduces the noiseless
    targets (equilibrated: 2.2e4)."""
    loo, floored = loo
    zero = np.flatnonzero(np.asarray(alphas) == 0)
    if not zero.size or not floored.any():
        return loo
    equilibrated = _loo_normal(
        data, statistics, targets, [0.0], fit_intercept, equilibrate=True
    )[0]
    unknown = ~np.isfinite(loo[:, zero]).all(axis=(1, 2))
    filled = unknown & np.isfinite(equilibrated[:, 0]).all(axis=-1)
    loo[np.ix_(filled, zero)] = equilibrated[filled][:, [0]]
    return loo


def _distinct_rows(data, weights, most, fit_intercept, flagged):
    """``(number, repeated)``: the number of distinct lifted rows that take part
    (of positive weight; without an intercept not all zero), or more than
    ``most`` where there are more, and the rows of ``flagged`` (indices) that
    another such row repeats. A second pass over the rows, keeping at most
    ``most + 1`` of them; identical sequences give bit-identical rows (a copy
    that is parallel, or whose earlier tokens are permuted, counts as another
    row: its original gets no finite score, never a wrong one)."""
    counts, keys = {}, {}
    for start, stop, chunk in data._chunks():
        features = data.layout.features(chunk, n_threads=data.n_threads)
        taking = weights[start:stop] > 0
        if not fit_intercept:
            taking &= np.any(features != 0, axis=1)
        for index in start + np.flatnonzero(taking):
            key = (features[index - start] + 0.0).tobytes()  # (-0.0 as 0.0)
            counts[key] = counts.get(key, 0) + 1
            if len(counts) > most:
                return len(counts), set()
            if index in flagged:
                keys[index] = key
    return len(counts), {index for index, key in keys.items() if counts[key] > 1}


def _spectral_fits(
    features, eigenvectors, mean_projected, projected, filters, zero_filters, offset,
    column_scale=None,
):
    """From the Gram's eigendecomposition, for lifted rows (rescaled units), every
    alpha at once: fitted values ``(A, m, o)`` and leverages before the row weight
    ``(m, A)``; the same with the filters times those of ``alpha = 0`` (the
    limit of :func:`_loo_normal`); and ``(m, 3)``: the leverage factor at
    ``alpha = 0``, the squared norm of each row and the fraction of its centered
    features in the directions dropped at ``alpha = 0``. ``(phi_i - mean)^T V``
    is one ``p x p`` product. ``column_scale``: the features' scales of an
    equilibrated Gram (:func:`_loo_normal`), or None."""
    if column_scale is not None:
        features = features * column_scale
    rotated = features @ eigenvectors - mean_projected
    squared = rotated**2
    limit = filters * zero_filters
    total = squared.sum(axis=1)
    dropped = squared[:, zero_filters == 0].sum(axis=1)
    extra = np.column_stack(
        [
            squared @ zero_filters,
            np.einsum("ij,ij->i", features, features),
            np.divide(dropped, total, out=np.zeros_like(total), where=total > 0),
        ]
    )
    return (
        rotated @ (filters[:, :, None] * projected) + offset,
        squared @ filters.T,
        rotated @ (limit[:, :, None] * projected),
        squared @ limit.T,
        extra,
    )


def _block_spectral_fits(block, layout_args, token_scale, *spectral):
    """:func:`_spectral_fits` of a block of sequences (runs on a Dask worker),
    packed as rows ``[fitted (A x o), leverage factors (A), limit numerators
    (A x o), limit denominators (A), leverage factor at 0, squared norm, part in
    dropped directions]``."""
    sequences = check_sequence_values(block)
    if token_scale != 1.0:
        sequences = sequences * token_scale
    layout = _RowLayout(*layout_args, sequences.shape[2])
    fitted, spread, slope, slope_spread, extra = _spectral_fits(
        layout.features(sequences), *spectral
    )
    n_rows = len(spread)
    return np.hstack(
        [
            fitted.swapaxes(0, 1).reshape(n_rows, -1),
            spread,
            slope.swapaxes(0, 1).reshape(n_rows, -1),
            slope_spread,
            extra,
        ]
    )


def _unweighted_kernel(data):
    """``<phi_i, phi_j>`` of every row (rescaled tokens, without the weights), from
    the compact rows: ``O(n_rows d^2)`` memory besides the ``n_rows^2`` kernel;
    and each lifted feature's sum of squares weighted by ``data.row_scale**2``,
    shape (n_pairs, d) (:func:`_lifted_features_in_use`)."""
    pairs, queries = [], []
    for _, _, chunk in data._chunks():
        chunk_pairs, chunk_queries = data.layout.pairs(chunk, n_threads=data.n_threads)
        pairs.append(chunk_pairs)
        queries.append(chunk_queries)
    pairs, queries = np.concatenate(pairs), np.concatenate(queries)
    # feature (pair, e) is pairs[:, pair] * queries[:, e]
    energy = (data.row_scale[:, None] ** 2 * pairs**2).T @ queries**2
    return lifted_kernel(pairs, queries), energy


def _dual_fold_predictions(
    kernel, train, test, weights, targets, alphas, fit_intercept, n_lifted
):
    """Predictions (rescaled units) for the ``test`` rows of the models fitted on the
    ``train`` rows, every alpha from one eigendecomposition of the training kernel
    (of rank at most ``n_lifted``).

    Returns
    -------
    predictions : ndarray of shape (n_test_rows, n_alphas, n_outputs)
    """
    train_weights = weights[train]
    row_scale = np.sqrt(train_weights)
    weight_sum = float(train_weights.sum())
    columns = kernel[:, train]
    train_targets = targets[train]
    target_mean = np.zeros(targets.shape[1])
    rows = np.concatenate([train, test])
    block = columns[rows]  # (n_train + n_test, n_train)
    scale = np.max(train_weights * np.diag(kernel)[train], initial=0.0)
    if fit_intercept:
        scale = centering_floor(scale, np.count_nonzero(train_weights), n_lifted)
    if fit_intercept and weight_sum > 0:
        # <phi_i - mean, phi_j - mean>, the mean weighted over the training rows.
        means = columns[rows] @ train_weights / weight_sum
        grand = float(train_weights @ means[: train.size]) / weight_sum
        block = block - means[:, None] - means[None, : train.size] + grand
        target_mean = train_weights @ train_targets / weight_sum
    training = block[: train.size]
    weighted = row_scale[:, None] * training * row_scale[None, :]
    eigenvalues, eigenvectors = _eigh(weighted)
    filters = _spectral_filters(
        eigenvalues, alphas, default_rank_tol(n_lifted), scale, n_lifted
    )
    projected = eigenvectors.T @ (row_scale[:, None] * (train_targets - target_mean))
    dual_coef = eigenvectors @ (filters[:, :, None] * projected)  # (A, n_train, o)
    predictions = block[train.size :] @ (row_scale[:, None] * dual_coef) + target_mean
    return np.swapaxes(predictions, 0, 1)


def _loo_dual(data, kernel, targets, alphas, fit_intercept):
    """Leave-one-out predictions (rescaled units) from the eigendecomposition of the
    weighted, centered kernel (fewer rows than lifted features).

    On the rows of positive weight, with ``M = sqrt(W) K_c sqrt(W) = U diag(mu)
    U^T`` (deflated along ``sqrt(w)`` with an intercept, whose direction the
    centering removes), ``c = U^T sqrt(W) (y - mean)`` and ``f = 1 / (mu +
    alpha)``: ``I - H = U diag(alpha f) U^T`` (``1`` for directions dropped as
    numerically null), so the leave-one-out residual
    ``[U (alpha f c)]_i / (sqrt(w_i) [U^2 alpha f]_i)`` is, for a row outside the
    dropped directions, ``[U (f c)]_i / (sqrt(w_i) [U^2 f]_i)``: finite at
    ``alpha = 0`` (``[K^+ y]_i / [K^+]_ii``, the leave-one-out of the
    minimum-norm fit). Rows of zero weight take no part in the fit: their
    prediction is the full fit's.

    Returns
    -------
    predictions : ndarray of shape (n_rows, n_alphas, n_outputs)
    """
    weights = data.row_scale**2
    positive = np.flatnonzero(weights > 0)
    row_scale = data.row_scale[positive]
    weight_sum = float(weights.sum())
    columns = kernel[:, positive]  # every row against the fitted ones
    row_norms = weights[positive] * np.diag(kernel)[positive]
    scale = np.max(row_norms, initial=0.0)  # before centering
    if fit_intercept:
        scale = centering_floor(scale, len(positive), data.n_lifted)
    target_mean = np.zeros(targets.shape[1])
    if fit_intercept:
        # <phi_i - mean, phi_j - mean> with the weighted mean of the features.
        means = columns @ weights[positive] / weight_sum
        grand = float(weights[positive] @ means[positive]) / weight_sum
        columns = columns - means[:, None] - means[None, positive] + grand
        target_mean = weights @ targets / weight_sum
    weighted = row_scale[:, None] * columns[positive] * row_scale[None, :]
    if fit_intercept:
        block, reflection = deflated_kernel(weighted, row_scale)
        eigenvalues, vectors = _eigh(block) if block.size else (np.zeros(0), block)
        padded = np.vstack([np.zeros((1, len(block))), vectors])
        eigenvectors = reflect(reflection, padded)
    else:
        eigenvalues, eigenvectors = _eigh(weighted)
    tol = default_rank_tol(data.n_lifted)
    filters = _spectral_filters(eigenvalues, alphas, tol, scale, data.n_lifted)
    centered = targets[positive] - target_mean
    projected = eigenvectors.T @ (row_scale[:, None] * centered)  # (m, o)
    dual_coef = eigenvectors @ (filters[:, :, None] * projected)  # (A, n+, o)
    predictions = columns @ (row_scale[:, None] * dual_coef) + target_mean
    # Leave-one-out on the rows of positive weight: I - H = U diag(g) U^T.
    # g = alpha f where used, 1 where dropped (not 1 - mu f: rounding at alpha = 0)
    complement = np.where(filters == 0, 1.0, np.asarray(alphas)[:, None] * filters)
    squares = eigenvectors**2
    residual = eigenvectors @ (complement[:, :, None] * projected) / row_scale[:, None]
    one_minus = squares @ complement.T  # (n+, A)
    # 1 - h_i = sum_k u_ik^2 g_k has no cancellation; its rounding is the mixing of
    # directions whose g differ: a kept direction k mixes into the dropped ones
    # (g = 1) by about sqrt(n) eps mu_max / mu_k, which for row i matters as
    # (that u_ik)^2 (1 - g_k). Where 1 - h_i is clearly above its rounding it is
    # the ratio itself; a row near leverage one outside the dropped directions
    # (within the rounding; every row when nothing is dropped) has the same
    # ratio divided by alpha, exact for every alpha, 0 too; a row in between, or
    # whose leverage the rounding of far smaller rows may hide, no finite score.
    dropped = filters == 0
    outside = squares @ dropped.T  # (n+, A)
    largest = eigenvalues[-1] if eigenvalues.size else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.sqrt(len(eigenvalues)) * _EPS * largest / eigenvalues
    mixing = np.where(eigenvalues > 0, np.minimum(1.0, spread**2), 1.0)
    weight = ~dropped * mixing * (1 - complement)  # (A, m)
    weight[~dropped.any(axis=1)] = 0.0
    rounding = squares @ weight.T  # (n+, A)
    unresolved = _unresolved(row_norms, tol * max(largest, scale))
    # Directions dropped as numerically null beyond the kernel's rank (more rows
    # than features) are nulls of the data; others only when the kept spectrum
    # stays clear of the rank threshold (by _CLEAR_MARGIN), else they may be
    # directions the rounding of an ill-conditioned kernel lost: no finite score
    # at that alpha.
    zeros = GramSpectrum(eigenvalues, None, tol, scale=scale, max_rank=data.n_lifted)
    structural = np.arange(len(eigenvalues)) < zeros.structural_zeros
    # (a doubtful direction kept would have g = alpha / (mu + alpha), near 1 when
    # alpha is far above the rank threshold: then it does not matter)
    near = np.asarray(alphas) <= _CLEAR_MARGIN * zeros.threshold
    doubtful = np.any(dropped & ~structural, axis=1) & near
    kept = eigenvalues[eigenvalues > zeros.threshold]
    clear_gap = kept.size == 0 or kept[0] >= _CLEAR_MARGIN * zeros.threshold
    # rows below the rounding whose features lie in dropped directions: those
    # directions are theirs, lost, not nulls of the data
    lost = unresolved[:, None] & (outside > _LOST_FRACTION)  # (n+, A)
    trusted = ~doubtful | (clear_gap & ~lost.any(axis=0))
    whole = ~dropped.any(axis=1)  # nothing dropped: the ratio divided by alpha
    exact = ((outside <= 10 * rounding) | whole) & trusted
    clear = (one_minus > 1e3 * rounding) & (one_minus > 0) & trusted
    limit = _leave_one_out_residual(
        dual_coef / row_scale[:, None], squares @ filters.T, 0.0
    )
    standard = _leave_one_out_residual(residual, one_minus, 0.0)
    loo_residual = np.where(clear.T[:, :, None], standard, np.inf)
    # (exact rows take the limit whatever alpha: the standard ratio's residual
    # holds u_i c of the dropped directions, rounding of u_i times targets that
    # swamp alpha [U f c]_i at tiny alpha: -1270 for -27.3 at alpha = 1e-14)
    use_limit = exact
    loo_residual = np.where(use_limit.T[:, :, None], limit, loo_residual)
    loo_residual[lost.T] = np.inf
    predictions = np.swapaxes(predictions, 0, 1)
    predictions[positive] = targets[positive, None, :] - np.swapaxes(loo_residual, 0, 1)
    return predictions


# --- folds -------------------------------------------------------------------------


def _split_indices(indices, n_samples, number, name):
    """The sample indices of one side of a split, as ``GridSearchCV`` reads them
    (``X[indices]``): integers in ``[-n_samples, n_samples)``, negative ones
    counted from the end, or a boolean mask of length ``n_samples``. Anything
    else is an error naming the split: the folds index row blocks directly, where
    a negative, out-of-range or boolean index would select the wrong rows."""
    indices = np.asarray(indices)
    what = f"The {name} set of split {number} of cv"
    if indices.dtype.kind == "b":
        if indices.shape != (n_samples,):
            raise ValueError(
                f"{what} is a boolean mask of shape {indices.shape}; a mask needs "
                f"one entry per sample, shape ({n_samples},)."
            )
        return np.flatnonzero(indices)
    if indices.size == 0:
        return np.zeros(0, dtype=np.intp)
    if indices.ndim != 1 or indices.dtype.kind not in "iu":
        raise ValueError(
            f"{what} must be a 1-D array of integer sample indices (or a boolean "
            f"mask), got an array of dtype {indices.dtype} and shape "
            f"{indices.shape}."
        )
    outside = (indices < -n_samples) | (indices >= n_samples)
    if outside.any():
        raise ValueError(
            f"{what} holds the index {indices[outside][0]}, out of range for "
            f"n_samples={n_samples}."
        )
    return np.where(indices < 0, indices + n_samples, indices).astype(np.intp)


class _Folds:
    """The splits of the samples, whether the test folds partition them, and
    whether each training set is the complement of its test fold (each sample
    once: a bootstrap-style training set that repeats samples is not)."""

    def __init__(self, splits, n_samples):
        self.splits = []
        for number, split in enumerate(splits, start=1):
            try:
                train, test = split
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f"cv must yield (train, test) pairs of sample indices; split "
                    f"{number} is {type(split).__name__} {split!r:.80}."
                ) from error
            self.splits.append(
                (
                    np.sort(_split_indices(train, n_samples, number, "training")),
                    np.sort(_split_indices(test, n_samples, number, "test")),
                )
            )
        if not self.splits:
            raise ValueError("cv yielded no (train, test) split.")
        tests = np.concatenate([test for _, test in self.splits])
        self.partition = tests.size == n_samples and np.array_equal(
            np.sort(tests), np.arange(n_samples)
        )
        self.complement = []
        for train, test in self.splits:
            mask = np.zeros(n_samples, dtype=bool)
            mask[train] = True
            disjoint = not np.any(mask[test])
            mask[test] = True
            once = train.size + test.size == n_samples
            self.complement.append(disjoint and once and bool(mask.all()))


# --- scoring -----------------------------------------------------------------------


class _PredictionsRegressor(RegressorMixin, BaseEstimator):
    """Stands in for a fitted fold model in a scorer: its input is that model's
    predictions (as scikit-learn's RidgeCV does)."""

    def fit(self, X=None, y=None):
        return self

    def predict(self, X):
        return X


class _PredictionsClassifier(ClassifierMixin, BaseEstimator):
    """Stands in for a fitted fold classifier: its input is the decision values."""

    def __init__(self, classes):
        self.classes_ = classes

    def fit(self, X=None, y=None):
        return self

    def decision_function(self, X):
        return X

    def predict(self, X):
        if X.ndim == 1:
            return self.classes_[(X > 0).astype(int)]
        return self.classes_[X.argmax(axis=1)]


# --- the estimators ----------------------------------------------------------------


class _LinearAttentionCVBase(_LinearAttentionBase):
    """Alphas by cross-validation from additive statistics; the final model as the
    plain estimator's (heads, certificate) for the chosen alpha."""

    _parameter_constraints = {
        "alphas": [
            StrOptions({"auto"}),
            "array-like",
            RealInterval(Real, 0, None, closed="left"),
        ],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "gcv_mode": [StrOptions({"auto", "normal", "dual"})],
        "store_cv_results": ["boolean"],
        **{
            name: _LinearAttentionBase._parameter_constraints[name]
            for name in (
                "token_dim",
                "n_heads",
                "fit_intercept",
                "tol",
                "head_work_limit",
                "positions",
                "causal",
                "batch_size",
                "n_jobs",
                "verbose",
            )
        },
    }

    def __init__(
        self,
        alphas="auto",
        *,
        cv=None,
        scoring=None,
        token_dim=None,
        n_heads="auto",
        fit_intercept=False,
        tol=1e-8,
        head_work_limit=20.0,
        positions="last",
        causal=True,
        batch_size=None,
        n_jobs=None,
        verbose=0,
        gcv_mode="auto",
        store_cv_results=False,
    ):
        self.alphas = alphas
        self.cv = cv
        self.scoring = scoring
        self.token_dim = token_dim
        self.n_heads = n_heads
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.head_work_limit = head_work_limit
        self.positions = positions
        self.causal = causal
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.gcv_mode = gcv_mode
        self.store_cv_results = store_cv_results

    def _check_parameters(self):
        """The alphas to try (None for "auto"), after checking the parameters."""
        super()._check_parameters()
        if self.store_cv_results and self.cv is not None:
            raise ValueError(
                "cv!=None and store_cv_results=True are incompatible: cv_results_ "
                "holds the leave-one-out results of cv=None."
            )
        if isinstance(self.alphas, str):  # "auto", as the constraints checked
            return None
        given = self.alphas
        items = (
            given.ravel().tolist() if isinstance(given, np.ndarray)
            else list(given) if isinstance(given, (list, tuple)) else [given]
        )
        if any(isinstance(alpha, (bool, np.bool_)) for alpha in items):
            raise InvalidParameterError(
                "The 'alphas' parameter of "
                f"{type(self).__name__} must be 'auto', a float or an array of "
                f"floats (not bools). Got {self.alphas!r} instead."
            )
        # Real numbers only: numpy would read ["1", "2"] as floats, and a set, a
        # complex or a ragged list would fail inside numpy without naming alphas.
        message = (
            "alphas must be 'auto', a float or a 1-D array of real numbers, got "
            f"{self.alphas!r}"
        )
        try:
            raw = np.asarray(given)
        except (TypeError, ValueError) as error:
            raise TypeError(f"{message} ({error}).") from error
        if raw.dtype.kind == "O":
            real = all(isinstance(alpha, Real) for alpha in raw.ravel())
        else:
            real = raw.dtype.kind in "biuf"
        if not real:
            raise TypeError(f"{message}.")
        alphas = np.atleast_1d(raw.astype(np.float64))
        if alphas.ndim != 1 or alphas.size == 0:
            raise ValueError(
                "alphas must be a non-empty 1-D sequence of non-negative floats, "
                f"got shape {np.shape(self.alphas)}."
            )
        if not np.all(np.isfinite(alphas)) or np.any(alphas < 0):
            raise ValueError(
                f"alphas must be finite and non-negative, got {self.alphas!r}."
            )
        return alphas

    def _alpha_grid(self, data, alphas, statistics=None, kernel=None, energy=None):
        """The alphas in the data source's rescaled units, where the folds and the
        final model are solved; sets ``alphas_`` (the data's units, NaN where not
        a normal float there). For ``alphas="auto"``, ``trace(G) / p_used`` comes
        from the total ``statistics``, or the unweighted ``kernel`` of the rows and
        the features' ``energy`` (:func:`_unweighted_kernel`)."""
        if alphas is None:
            if kernel is None:
                mean = _gram_mean_diagonal(
                    statistics, self.fit_intercept, data.token_dim
                )
            else:
                weights = data.row_scale**2
                trace = _kernel_trace(kernel, weights, self.fit_intercept)
                mean = trace / _lifted_features_in_use(energy)
            scaled = _RELATIVE_ALPHAS * mean
            self.alphas_ = data.rescaling.unscaled_alpha(scaled)
            return scaled
        self.alphas_ = alphas.copy()
        return np.array([data.rescaling.alpha(alpha) for alpha in alphas])

    def _warn_at_an_edge(self, scores, scaled, rescaling):
        """A warning when ``alpha_`` is the largest (or the smallest positive) alpha
        and scores better than the next one inward: the best may lie beyond.
        Decided on the grid in the units of ``rescaling``, ``scaled`` (in the
        order of ``alphas_``, which may hold NaN)."""
        distinct = np.unique(scaled)
        if distinct.size < 2:
            return
        chosen = scaled[int(np.argmax(scores))]
        edges = (
            (distinct[-1], distinct[-2], "largest"),
            (distinct[0], distinct[1], "smallest"),
        )
        for edge, inward, name in edges:
            if edge == 0 or chosen != edge:
                continue
            if not scores[scaled == edge].max() > scores[scaled == inward].max():
                continue
            low, high = distinct[distinct > 0][0], 1e3 * edge
            if name == "smallest":
                low, high = 1e-3 * edge, distinct[-1]
            low, high = rescaling.unscaled_alpha([low, high])
            if np.isfinite([low, high]).all():
                wider = f"np.geomspace({low:.3g}, {high:.3g}, {distinct.size + 3})"
                if name == "smallest":
                    wider += " (or add 0, the minimum-norm fit)"
                wider = f"widen it, e.g. alphas={wider}"
            else:  # penalties of the data's units that float64 does not hold
                wider = (
                    "a wider grid is no float64 in the units of this X (its "
                    "penalties grow as |X|^6): rescale X, then widen it"
                )
            warnings.warn(
                f"alpha_={self.alpha_:.3g} is the {name} of the {scaled.size} alphas "
                "tried and scores better than its neighbour: the best alpha may lie "
                f"beyond the grid; {wider}.",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )

    # --- the cross-validation ---------------------------------------------------

    def _cross_validate(
        self,
        sequences,
        targets,
        fit_weights,
        score_weights,
        truth,
        split_y,
        groups,
        single_output,
        alphas,
        split_X=None,
    ):
        """Choose alpha, then set the model for it; returns ``self``. ``split_X``
        is the ``X`` a splitter sees (the input as given to ``fit``, as
        ``GridSearchCV`` passes it)."""
        if not self.store_cv_results:  # not a previous fit's
            self.__dict__.pop("cv_results_", None)
        distributed = is_dask_array(sequences)
        if distributed and self.gcv_mode == "dual":
            raise ValueError(
                f"{type(self).__name__} fits a Dask array from statistics "
                "(gcv_mode 'auto' or 'normal'); the kernel form (gcv_mode='dual') "
                "needs X in memory."
            )
        if distributed:  # targets, weights and labels are small: on the client
            targets, fit_weights, score_weights, truth, split_y = (
                np.asarray(array.compute()) if is_dask_array(array) else array
                for array in (targets, fit_weights, score_weights, truth, split_y)
            )
        start = time.perf_counter()
        data = self._data_source(sequences, targets, fit_weights)
        self._check_rows(data)
        n_samples = sequences.shape[0]
        per_sample = data.n_rows // max(n_samples, 1)
        kept_rows = np.ones(data.n_rows, dtype=bool)
        if self.positions == "all":
            mask = padding_row_mask(sequences)
            kept_rows = ~np.asarray(mask.compute() if distributed else mask).ravel()
        row_score_weights = score_weights
        if score_weights is not None and score_weights.shape[0] != data.n_rows:
            row_score_weights = np.repeat(score_weights, per_sample)
        scorer = self._scorer()
        # the default regression score in units of 2**exponent of the targets:
        # squared errors of targets beyond 1e154 would overflow, every alpha
        # scoring -inf (alpha_ then no choice at all)
        exponent = self._error_exponent(scorer, truth)
        mode = self.gcv_mode
        if mode == "auto":
            # the kernel also for as many rows as lifted features (+ 1 centered):
            # leave-one-out at leverage one is exact there, not from squared
            # eigenvalues of the Gram (see _LIMIT_CONDITION)
            small = data.n_rows <= data.n_lifted + int(self.fit_intercept)
            mode = "dual" if small and not distributed else "normal"
        check_fit_cost(data, mode)  # before any work
        # one BLAS thread up to _SINGLE_THREAD_ORDER, as the plain estimators'
        # solves: the scores, and alpha_, the same bits for any thread count
        order = data.n_lifted if mode == "normal" else data.n_rows
        with dense_threads(order):
            if self.cv is None:
                if groups is not None:
                    warnings.warn(
                        "groups is ignored with cv=None: leave-one-out leaves out "
                        "single sequences, not groups; pass cv=LeaveOneGroupOut() "
                        "or GroupKFold(n_splits) to keep the groups apart.",
                        UserWarning,
                        stacklevel=caller_stacklevel(),
                    )
                if self.positions == "all":
                    raise ValueError(
                        "cv=None (leave-one-out) is defined for positions='last'; "
                        "with positions='all' pass an integer cv or a splitter, "
                        "which splits whole sequences."
                    )
                if data.n_observations < 2:
                    raise ValueError(
                        "Leave-one-out (cv=None) needs at least two sequences with a "
                        f"positive weight, got {data.n_observations} (n_samples="
                        f"{n_samples}): the training set of the one left out would "
                        "weigh nothing."
                    )
                scaled_targets = targets * data.rescaling.target
                if mode == "normal":
                    statistics = data.statistics()
                    scaled = self._alpha_grid(data, alphas, statistics=statistics)
                    loo = _loo_normal(
                        data, statistics, scaled_targets, scaled, self.fit_intercept
                    )
                    loo = _equilibrated_zero_alpha(
                        data, statistics, scaled_targets, scaled, self.fit_intercept,
                        loo,
                    )
                else:
                    statistics = None
                    kernel, energy = _unweighted_kernel(data)
                    scaled = self._alpha_grid(
                        data, alphas, kernel=kernel, energy=energy
                    )
                    loo = _loo_dual(
                        data, kernel, scaled_targets, scaled, self.fit_intercept
                    )
                loo /= data.rescaling.target
                scores = np.array(
                    [
                        self._score(
                            scorer, loo[:, index], truth, row_score_weights,
                            kept_rows, exponent,
                        )
                        for index in range(len(scaled))
                    ]
                )
                if self.store_cv_results:
                    self.cv_results_ = self._cv_results(
                        loo, targets, row_score_weights, single_output, exponent
                    )
            else:
                statistics, scaled, scores = self._kfold(
                    data,
                    mode,
                    sequences,
                    targets,
                    fit_weights,
                    row_score_weights,
                    kept_rows,
                    truth,
                    split_y,
                    groups,
                    alphas,
                    scorer,
                    exponent,
                    split_X,
                )
        self._warn_about_scores(scores, sequences)
        scores = np.where(np.isfinite(scores), scores, -np.inf)
        best = int(np.argmax(scores))
        self.alpha_ = float(self.alphas_[best])
        with np.errstate(over="ignore"):  # (a mean squared error beyond float64)
            in_data_units = np.ldexp(scores, 2 * exponent)
        self.best_score_ = float(in_data_units[best])
        self.cv_scores_ = in_data_units
        self._log(
            f"alpha_={self.alpha_:g} (score {self.best_score_:.6g}) of "
            f"{len(scores)} alphas in {time.perf_counter() - start:.2f} s"
        )
        self._warn_at_an_edge(scores, scaled, data.rescaling)
        self._fit_final(data, statistics, mode, single_output, scaled[best])
        return self

    def _warn_about_scores(self, scores, sequences=None):
        """A ``UserWarning`` when a score is NaN (a scorer's undefined value, e.g.
        R^2 of a one-sample test set; taken as ``-inf``, as ``GridSearchCV`` warns
        of non-finite scores) or when no alpha scored a finite number: then the
        choice, the first alpha of the grid, says nothing. Leave-one-out
        (``cv=None``) is -inf at every alpha only where its residuals are no
        reliable number in float64, and the warning then says so (it sent the
        user to the test sets), with the spread of the ``sequences``' norms
        (:func:`_norm_spread`, computed only then)."""
        undefined = np.isnan(scores)
        if undefined.any():
            warnings.warn(
                f"The cross-validation score of {np.count_nonzero(undefined)} of the "
                f"{scores.size} alphas is NaN (scoring={self.scoring!r} returned NaN "
                "on a test set, e.g. R^2 of a single sample); they count as -inf.",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )
        if not np.isfinite(scores).any() and self.cv is None and not undefined.any():
            spread = None if sequences is None else _norm_spread(sequences)
            scale = (
                "" if spread is None else
                f" (here the largest sequence's norm is {spread:.3g} times the "
                "smallest's, and the lifted features grow as its cube)"
            )
            warnings.warn(
                "No alpha got a finite leave-one-out score: alpha_ is the first of "
                "the grid, not a choice by the data. Leave-one-out (cv=None) scores "
                "-inf where a sequence's residual is no reliable number in float64: "
                "sequences far smaller than the largest fall below its rounding"
                f"{scale}. Rescale the sequences to comparable sizes, or pass an "
                "integer cv (K-fold refits each fold); see "
                "LinearAttentionRegressorCV's Notes on -inf scores.",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )
        elif not np.isfinite(scores).any():
            warnings.warn(
                "No alpha got a finite cross-validation score: alpha_ is the first "
                "of the grid, not a choice by the data. Use test sets the scoring "
                "is defined on, or see LinearAttentionRegressorCV's Notes on -inf "
                "scores.",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )

    def _kfold(
        self,
        data,
        mode,
        sequences,
        targets,
        fit_weights,
        row_score_weights,
        kept_rows,
        truth,
        split_y,
        groups,
        alphas,
        scorer,
        exponent,
        split_X=None,
    ):
        """The total statistics (None in kernel form, ``mode="dual"``), the alphas
        in rescaled units and the mean score of each over the folds (the default
        regression score in units of ``2**exponent``, see ``_error_exponent``);
        sets ``alphas_``."""
        n_samples = sequences.shape[0]
        per_sample = data.n_rows // max(n_samples, 1)
        if isinstance(self.cv, Iterable) and not hasattr(self.cv, "split"):
            splits = self.cv  # (train, test) pairs, checked one by one in _Folds
        else:
            splitter = check_cv(self.cv, split_y, classifier=self._is_classifier)
            # the input as fit got it, as GridSearchCV passes it (a splitter may
            # read X); placeholders for a Dask array, not computed to split it
            if split_X is None or is_dask_array(split_X):
                split_X = np.zeros((n_samples, 1))
            splits = splitter.split(split_X, split_y, groups)
        folds = _Folds(splits, n_samples)

        def rows(array, samples):
            if array is None:
                return None
            if array.shape[0] == n_samples:
                return _select(array, samples, 1)
            return _select(array, samples, per_sample)

        def statistics_of(samples):
            return lifted_data(
                rows(sequences, samples),
                rows(targets, samples),
                rows(fit_weights, samples),
                positions=self.positions,
                causal=self.causal,
                batch_size=self.batch_size,
                n_threads=effective_n_jobs(self.n_jobs),
                rescaling=data.rescaling,
            ).statistics()

        if mode == "dual":
            kernel, energy = _unweighted_kernel(data)
            row_index = np.arange(data.n_rows)
            scaled_targets = targets * data.rescaling.target
            total = None
            scaled = self._alpha_grid(data, alphas, kernel=kernel, energy=energy)
        else:
            if folds.partition:  # one pass: the test folds' statistics add up
                test_statistics = [statistics_of(test) for _, test in folds.splits]
                total = sum_statistics(test_statistics)
            else:
                total = data.statistics()
            scaled = self._alpha_grid(data, alphas, statistics=total)
        fold_scores = np.empty((len(folds.splits), len(scaled)))
        scored = np.ones(len(folds.splits), dtype=bool)
        for fold, (train, test) in enumerate(folds.splits):
            test_kept = rows(kept_rows, test)
            test_weights = rows(row_score_weights, test)
            if scorer is None and test_weights is not None:
                test_kept = test_kept & (test_weights > 0)
            if mode == "dual":
                train_rows = rows(row_index, train)
                self._check_training_rows(fold, np.any(data.row_scale[train_rows]))
            else:
                if train.size == 0:
                    self._check_training_rows(fold, 0)
                # Training statistics as a sum, never as the total minus the test
                # fold: Gram entries grow as |x|^6, and a fold holding a much larger
                # sequence would leave the others below the rounding of the total.
                if folds.partition and folds.complement[fold]:
                    training = sum_statistics(
                        part for other, part in enumerate(test_statistics)
                        if other != fold
                    )
                else:
                    training = statistics_of(train)
                self._check_training_rows(fold, training.n_observations)
            if not test_kept.any():
                # Nothing to score: left padding only, or (default score) no weight.
                scored[fold] = False
                self._log(f"fold {fold + 1}/{len(folds.splits)}: nothing to score")
                continue
            if mode == "dual":
                predictions = (
                    _dual_fold_predictions(
                        kernel,
                        train_rows,
                        rows(row_index, test),
                        data.row_scale**2,
                        scaled_targets,
                        scaled,
                        self.fit_intercept,
                        data.n_lifted,
                    )
                    / data.rescaling.target
                )
            else:
                predictions = self._normal_fold_predictions(
                    data, training, rows(sequences, test), scaled
                )
            test_truth = rows(truth, test)
            for index in range(len(scaled)):
                fold_scores[fold, index] = self._score(
                    scorer, predictions[:, index], test_truth, test_weights,
                    test_kept, exponent,
                )
            if self.verbose:  # in the data's units, as cv_scores_ (not 2**exponent's)
                with np.errstate(over="ignore"):
                    shown = np.ldexp(fold_scores[fold], 2 * exponent)
                self._log(f"fold {fold + 1}/{len(folds.splits)}: {shown}")
        if not scored.any():
            raise ValueError(
                "No test set of cv holds a row to score: each holds left padding "
                "only or, for the default score, sample weights summing to zero."
            )
        return total, scaled, fold_scores[scored].mean(axis=0)

    def _check_training_rows(self, fold, n_positive):
        """A clear error for a split whose training set weighs nothing (the plain
        estimator refuses such data too)."""
        if n_positive:
            return
        padding = (
            " (left padding has weight zero)" if self.positions == "all" else ""
        )
        raise ValueError(
            f"The training set of split {fold + 1} of cv holds no row with a positive "
            f"weight{padding}: there is nothing to fit. Every training set needs "
            "a sequence with a positive sample_weight (times class_weight)."
        )

    def _normal_fold_predictions(self, data, training, test_sequences, scaled):
        """Held-out predictions (data units) of every alpha, from the training
        statistics."""
        coefs, intercepts = _kfold_coefs(training, scaled, self.fit_intercept)
        n_alphas, n_outputs, n_lifted = coefs.shape
        predictions = self._lifted_rows(
            test_sequences,
            data.rescaling.coef(coefs.reshape(-1, n_lifted)),
            intercepts.ravel() / data.rescaling.target,
        )
        if is_dask_array(predictions):  # computed blockwise; the predictions are small
            predictions = predictions.compute()
        return predictions.reshape(-1, n_alphas, n_outputs)

    def _scorer(self):
        if self.scoring is None:
            return None
        return check_scoring(self._stand_in(), scoring=self.scoring)

    def _call_scorer(self, scorer, stand_in, predictions, truth):
        """The scorer on cross-validated predictions; a clear error when it asks
        for a method the estimator does not have (``predict_proba``)."""
        try:
            score = scorer(stand_in, predictions, truth)
        except AttributeError as error:
            methods = (
                "decision_function and predict (like RidgeClassifierCV; a score of "
                "decision values such as 'roc_auc', or of labels such as "
                "'accuracy', works)"
                if self._is_classifier
                else "predict (like RidgeCV)"
            )
            wanted = " or ".join(
                name
                for name in ("predict_proba", "predict_log_proba", "decision_function")
                if name in str(error)
            )
            raise ValueError(
                f"scoring={self.scoring!r} needs {wanted or 'a method'} of the "
                f"cross-validated model, but {type(self).__name__} has only "
                f"{methods}."
            ) from error
        # as GridSearchCV checks it (a string failed in numpy's isnan)
        if isinstance(score, np.ndarray) and score.size == 1:
            score = score.item()
        if isinstance(score, (bool, np.bool_)) or not isinstance(score, Real):
            raise ValueError(
                f"scoring must return a real number, got {score!r} "
                f"({type(score).__name__}) instead (scoring={self.scoring!r})."
            )
        return score

    def _fit_final(self, data, statistics, mode, single_output, scaled_alpha):
        """The model for ``alpha_`` (``scaled_alpha`` in the rescaled units, exact
        also where ``alpha_`` is no float), from the statistics (or kernel) at
        hand."""
        start = time.perf_counter()
        chose_kernel = self.gcv_mode == "auto" and mode == "dual"
        if chose_kernel and resolve_solver("auto", data) == "normal":
            # As many rows as lifted features (one more with an intercept):
            # "auto" scored them from the kernel, exact there, but the plain
            # estimator solves them from the normal equations, and its head
            # read-out on their statistics resolves counts that the rows'
            # objective does not (a difference of two sums of squares, to about
            # sqrt(eps) in the coefficients): the same solve as it, for the
            # same heads (one pass over at most p + 1 rows).
            statistics, mode = data.statistics(), "normal"
        if mode == "normal":
            source = StatisticsSource(
                statistics, data.layout, data.rescaling, folds=data
            )
            solution = solve_normal(
                source, alpha=self.alpha_, rescaled_alpha=scaled_alpha,
                fit_intercept=self.fit_intercept,
                heldout="lazy",  # a pass over the data when the heads need it
            )
        else:
            source = data
            solution = solve_dual(
                data, alpha=self.alpha_, rescaled_alpha=scaled_alpha,
                fit_intercept=self.fit_intercept,
                heldout=self.n_heads is not None,
            )
        self._set_model(solution, source, single_output, time.perf_counter() - start)
        self.solver_ = mode
        self.n_iter_ = 1 if single_output else np.ones(solution.coef.shape[0], int)
        self.token_dim_ = data.token_dim


def _squared_errors(predictions, targets, exponent):
    """``(predictions - targets) ** 2`` in units of ``2 ** (2 * exponent)``
    (scaled by powers of two: exact), so that the errors of targets of about
    ``2 ** exponent`` neither overflow nor underflow; call it where numpy's
    overflow warning is silenced (an error beyond those units is inf)."""
    difference = np.ldexp(predictions, -exponent) - np.ldexp(targets, -exponent)
    return difference**2


def _select(array, samples, per_sample):
    """Rows of ``array`` for the given (sorted) samples, ``per_sample`` rows each,
    repeated as often as a sample is listed; a view when the samples are
    contiguous (``KFold`` without shuffling)."""
    contiguous = samples.size and samples[-1] - samples[0] + 1 == samples.size
    if contiguous and np.all(samples[1:] > samples[:-1]):
        return array[samples[0] * per_sample : (samples[-1] + 1) * per_sample]
    if per_sample == 1:
        return array[samples]
    return array[(samples[:, None] * per_sample + np.arange(per_sample)).ravel()]


class LinearAttentionRegressorCV(RegressorMixin, _LinearAttentionCVBase):
    """:class:`LinearAttentionRegressor` with ``alpha`` chosen by cross-validation,
    every ``alpha`` from one pass over the data.

    Like :class:`~sklearn.linear_model.RidgeCV`. The lifted least-squares problem
    is determined by sufficient statistics that add up over rows and do not depend
    on ``alpha``, so the whole grid is scored from one eigendecomposition per
    training set instead of one fit per ``alpha`` and fold:

    - ``cv=None``: efficient, exact leave-one-out. The leave-one-out residual of row
      ``i`` is ``r_i / (1 - h_i)`` with ``r_i`` the training residual and ``h_i`` the
      leverage, from the eigendecomposition of the lifted Gram matrix
      (``n_samples >= p``, one more streamed pass over the data) or of the kernel
      ``<S_i, S_j>_F <q_i, q_j>`` (``n_samples < p``).
    - an int or a splitter: K-fold; the statistics of each test fold are computed
      once (one pass over the data in total) and the training statistics of fold
      ``k`` are the sum of the other folds' (exact also when one fold holds a far
      larger sequence). The held-out rows are then scored from their predictions
      (one more pass, every ``alpha`` at once).

    The final model for ``alpha_`` is solved from the total statistics without
    another pass and has every attribute of :class:`LinearAttentionRegressor`
    (heads, certificate, ``coef_``, ...). Folds are scored with the lifted solution;
    the final predictions come from the heads (unless ``n_heads=None``, whose
    heads predict as the lifted solution does).

    Parameters
    ----------
    alphas : "auto" or array-like of shape (n_alphas,), default="auto"
        Ridge penalties to try, each ``>= 0`` (0: minimum-norm least squares).
        The objective is ``sum_i w_i ||theta phi_i + b - y_i||^2 + alpha
        ||theta||^2`` on the cubic lifted features, so ``alpha`` acts against the
        weighted lifted Gram ``G = sum_i w_i phi_i phi_i^T``, whose entries grow
        with the sum of the weights, the number of tokens ``S`` sums over and the
        sixth power of the token scale. ``"auto"``: 0 and ``np.logspace(-6, 2,
        9)`` times its mean diagonal ``trace(G) / p`` (centered with an
        intercept), from the statistics the cross-validation computes anyway
        (``alphas_``); ``p`` counts the lifted features of the token
        coordinates in use, ``d^2 (d + 1) / 2`` unless a coordinate is zero in
        every token, which then changes nothing. An array is absolute, as in
        ``RidgeCV``; to build one, ``trace(G) / p = sum_i w_i ||phi_i||^2 / p``
        with ``phi_i`` the rows of
        ``LiftedAttentionFeatures().fit_transform(X)``. Ties go to the first alpha
        of the grid; a ``UserWarning`` names a wider grid when ``alpha_`` is the
        largest alpha (or the smallest, if not 0) and beats its neighbour.
    cv : int, cross-validation generator, iterable or None, default=None
        None: efficient leave-one-out (``positions="last"`` only). An int: that many
        folds, ``KFold`` for the regressor (``StratifiedKFold`` for the classifier),
        as ``GridSearchCV``; or any splitter or iterable of ``(train, test)``
        sample indices (a training set may repeat samples, bootstrap-style: each
        counts as often as listed; negative indices and boolean masks select
        what ``X[indices]`` selects, as in ``GridSearchCV``). When the test sets
        are not a partition of the samples or a training set is not the
        complement of its test set, the missing statistics are computed by extra
        passes. A test set with nothing
        to score (left padding only, or, for the default score, weights summing
        to zero) is left out of the mean over the folds; a training set without
        a positive weight is an error.
    scoring : str, callable or None, default=None
        None: the negative mean squared error (weighted by ``sample_weight``);
        unlike ``RidgeCV``, also for K-fold (where ``RidgeCV`` uses R^2). A
        scorer name or a callable ``scorer(estimator, X, y)`` is called, as in
        ``RidgeCV``, with a stand-in estimator whose ``predict(X)`` returns ``X``
        and ``X`` the cross-validated predictions; without sample weights, as
        ``GridSearchCV`` does without metadata routing. Leave-one-out scores all
        rows at once; K-fold averages the fold scores. With ``positions="all"``
        the scorer sees one row per (non-padding) position, pooled, like
        :meth:`LinearAttentionRegressor.score`; ``GridSearchCV``'s ``"r2"`` on the
        ``(n_samples, n_tokens)`` targets averages R^2 over positions instead, so
        the two scores differ there (the chosen alpha usually agrees).
    token_dim : int, default=None
        Dimension ``d`` of a token; see :class:`LinearAttentionRegressor`.
    n_heads : "auto", int or None, default="auto"
        Head read-out of the final model; see :class:`LinearAttentionRegressor`.
    fit_intercept : bool, default=False
        Fit an unpenalized bias (MHLA has none). Leave-one-out then refits the
        intercept without the row left out: its leverage gains ``w_i / sum(w)``,
        as in ``RidgeCV``. Real targets that are not centered need it: without
        it, a penalty that shrinks the model also shrinks its predictions toward
        zero, away from the targets' mean (the alpha chosen then often lands at
        the top of the grid), and the regressor's final model warns, as
        :class:`LinearAttentionRegressor` does.
    tol : float, default=1e-8
        Relative tolerance of the head read-out.
    head_work_limit : float or None, default=20.0
        Work limit of the head read-out; see :class:`LinearAttentionRegressor`.
    positions : {"last", "all"}, default="last"
        See :class:`LinearAttentionRegressor`; with ``"all"`` folds split whole
        sequences and ``cv=None`` is not available.
    causal : bool, default=True
        With ``positions="all"``: causal attention (each position sees its
        prefix) if True; see :class:`LinearAttentionRegressor`.
    batch_size : int, default=None
        Samples per chunk while streaming.
    n_jobs : int, default=None
        Threads computing lifted features.
    verbose : int, default=0
        Print the chosen alpha, fold scores and timings when positive, and
        each head count the read-out fits with its verdict.
    gcv_mode : {"auto", "normal", "dual"}, default="auto"
        Leave-one-out from the Gram matrix (``"normal"``) or the kernel
        (``"dual"``); ``"auto"``: the kernel for at most as many rows in memory
        as lifted features (one more with an intercept), where the fit
        interpolates and the kernel gives the exact limit below.
    store_cv_results : bool, default=False
        Keep the leave-one-out results in ``cv_results_`` (``cv=None`` only).

    Attributes
    ----------
    alpha_ : float
        The chosen penalty, ``alphas_[np.argmax(cv_scores_)]``.
    alphas_ : ndarray of shape (n_alphas,)
        The penalties tried (the "auto" grid in the data's units). NaN where a
        penalty is not a normal float64 in the data's units: the "auto" grid is
        ``trace(G) / p`` times fixed factors, and ``trace(G)`` grows as
        ``|X|^6``, beyond ``1e+-300`` for ``|X|`` beyond about ``1e+-50``. The
        cross-validation and the final model work in rescaled units (tokens and
        targets scaled to order one by powers of two), where every alpha is
        exact at any scale: ``np.argmax(cv_scores_)`` is the chosen alpha's index
        in the grid, the same as for the data at any other scale.
    best_score_ : float
        Its cross-validation score (higher is better).
    cv_scores_ : ndarray of shape (n_alphas,)
        The cross-validation score of every alpha (mean over folds for K-fold).
    cv_results_ : ndarray of shape (n_samples, n_alphas) or \
(n_samples, n_outputs, n_alphas)
        With ``store_cv_results=True``: squared leave-one-out errors times the
        sample weights (``scoring=None``, as ``RidgeCV``) or leave-one-out
        predictions (otherwise).
    coef_, intercept_, value_matrices_, query_matrices_, n_heads_, attention_, \
certificate_, head_search_, token_dim_, n_features_in_, feature_names_in_
        As :class:`LinearAttentionRegressor` fitted with ``alpha=alpha_``.
    solver_ : str
        ``"normal"`` or ``"dual"``: how the final model was solved.
    n_iter_ : int or ndarray of shape (n_outputs,)

    See Also
    --------
    LinearAttentionRegressor : The estimator with a fixed alpha.
    LinearAttentionClassifierCV : The classifier counterpart.

    Notes
    -----
    A sequence whose lifted features no other sequence shares has leverage
    ``h_i = 1`` and training residual ``r_i = 0`` at ``alpha=0`` (every sequence,
    when there are at most as many as lifted features: the minimum-norm fit
    interpolates). Its leave-one-out residual is the limit of ``r_i / (1 - h_i)``,
    computed from the same eigendecomposition: the prediction of the
    minimum-norm fit of the other sequences, exactly, for ``alpha=0`` and tiny
    alphas alike. A score is ``-inf`` only where it is no reliable number in
    float64: where ``1 - h_i`` is below 100 times its rounding (``100 eps`` times
    the condition number of the Gram, at least ``1e-9``; e.g. one sequence 10
    times larger than the others: the Gram grows as the sixth power of the token
    scale), or, from the Gram
    (``gcv_mode="normal"``), where the limit would need the squared eigenvalues
    of a Gram of condition number above ``1e10``; such an alpha is never chosen
    unless every alpha is. Sequences whose scales differ by about ``1e3`` or
    more fall below the rounding of the largest ones altogether, in the fits
    too: rescale them first. Reference:
    Yau et al., "Learning Linear Attention in Polynomial Time", NeurIPS 2025.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn import (
    ...     LinearAttentionRegressorCV, MultiHeadLinearAttention)
    >>> rng = np.random.default_rng(0)
    >>> truth = MultiHeadLinearAttention(rng.normal(size=(1, 1, 3)),
    ...                                  rng.normal(size=(1, 3, 3)))
    >>> X = rng.normal(size=(300, 10, 3))
    >>> y = truth.predict(X)[:, 0] + rng.normal(scale=5.0, size=300)
    >>> # alphas relative to the Gram
    >>> model = LinearAttentionRegressorCV().fit(X, y)
    >>> model.alpha_ in model.alphas_, model.cv_scores_.shape
    (True, (10,))
    >>> model.n_heads_ >= 1 and model.certificate_.identifiable
    True
    """

    _is_classifier = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    _targets = LinearAttentionRegressor._targets
    predict = LinearAttentionRegressor.predict

    def score(self, X, y, sample_weight=None):
        return LinearAttentionRegressor.score(self, X, y, sample_weight=sample_weight)

    score.__doc__ = LinearAttentionRegressor.score.__doc__

    def _stand_in(self):
        return _PredictionsRegressor()

    def _error_exponent(self, scorer, truth):
        """The power of two of the largest target (0 for a scorer's own score):
        the default score's squared errors are formed in its units (exact), and
        the scores scaled back to the data's once alpha is chosen."""
        return 0 if scorer is not None else largest_exponent(truth)

    def _score(self, scorer, predictions, targets, weights, kept, exponent=0):
        predictions, targets = predictions[kept], targets[kept]
        if not np.all(np.isfinite(predictions)):  # a leverage of one
            return -np.inf
        if scorer is None:
            weights = None if weights is None else weights[kept]
            # mean_squared_error's definition, without its validation per alpha
            with np.errstate(over="ignore"):
                errors = _squared_errors(predictions, targets, exponent).mean(axis=1)
            return -float(np.average(errors, weights=weights))
        if targets.shape[1] == 1:
            predictions, targets = predictions[:, 0], targets[:, 0]
        return self._call_scorer(scorer, _PredictionsRegressor(), predictions, targets)

    def _cv_results(self, loo, targets, weights, single_output, exponent=0):
        if self.scoring is None:
            # in the data's units: inf (or 0) only where beyond float64
            with np.errstate(over="ignore"):
                errors = _squared_errors(loo, targets[:, None, :], exponent)
                if weights is not None:
                    errors *= weights[:, None, None]
                results = np.ldexp(errors, 2 * exponent)
        else:
            results = loo
        results = np.swapaxes(results, 1, 2)  # (n, o, A)
        return results[:, 0] if single_output else results

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Choose ``alpha`` by cross-validation and fit the model for it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            Training sequences, tokens as rows, the query last. A Dask array
            chunked along samples is lifted blockwise on its workers (not with
            ``gcv_mode="dual"``).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets (per position with ``positions="all"``).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sequence, in the fits and in the default
            score.
        groups : array-like of shape (n_samples,), default=None
            Group labels for a group splitter passed as ``cv`` (ignored, with a
            warning, by leave-one-out, ``cv=None``).

        Returns
        -------
        self : LinearAttentionRegressorCV
        """
        alphas = self._check_parameters()
        with _AtomicUpdate(self):
            sequences = self._sequences(X, reset=True)
            targets, single_output = self._targets(y, sequences)
            weights = validate_sample_weight(sample_weight, sequences)
            self._warn_about_fit_data(sequences, weights)
            split_y = targets.reshape(sequences.shape[0], -1)
            return self._cross_validate(
                sequences,
                targets,
                weights,
                weights,
                targets,
                split_y,
                groups,
                single_output,
                alphas,
                split_X=X,
            )


class LinearAttentionClassifierCV(ClassifierMixin, _LinearAttentionCVBase):
    """:class:`LinearAttentionClassifier` with ``alpha`` chosen by cross-validation,
    every ``alpha`` from one pass over the data.

    Like :class:`~sklearn.linear_model.RidgeClassifierCV`: labels are encoded as
    +1/-1 targets and the regression of :class:`LinearAttentionRegressorCV` is
    cross-validated on them (leave-one-out from one eigendecomposition for
    ``cv=None``, K-fold from additive statistics otherwise); the predicted class is
    the largest cross-validated output.

    Parameters
    ----------
    alphas : "auto" or array-like of shape (n_alphas,), default="auto"
        Ridge penalties to try, ``>= 0``: relative to the mean diagonal of the
        lifted Gram with ``"auto"``, absolute when given (see
        :class:`LinearAttentionRegressorCV`).
    cv : int, cross-validation generator, iterable or None, default=None
        None: efficient leave-one-out; an int: ``StratifiedKFold`` with that many
        folds (as ``GridSearchCV``); or any splitter. With ``positions="all"`` a
        splitter sees one label per sequence, that of its last position: an int
        (or a ``StratifiedKFold``) stratifies the sequences by it.
    scoring : str, callable or None, default=None
        None: accuracy, weighted by ``sample_weight`` times ``class_weight`` (as
        ``RidgeClassifierCV`` weighs its leave-one-out errors, which are the
        squared errors of the +1/-1 targets there). A scorer is
        called with a stand-in classifier whose ``decision_function(X)`` returns
        ``X``, the cross-validated decision values, without sample weights.
    token_dim, n_heads, fit_intercept, tol, head_work_limit, positions, causal, \
batch_size, n_jobs, verbose, gcv_mode, store_cv_results
        See :class:`LinearAttentionRegressorCV`.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes in the least-squares objective and in the default
        score, as in :class:`LinearAttentionClassifier`. ``"balanced"`` is
        computed once, from the class counts of all of ``y`` (as
        ``RidgeClassifierCV`` does), and every fold is fitted with those weights;
        ``GridSearchCV`` over ``LinearAttentionClassifier(class_weight="balanced")``
        recomputes them from each training fold's counts, so its fold models,
        scores and possibly its choice differ (with a dict both fit the same
        models).

    Attributes
    ----------
    alpha_ : float
        The chosen penalty, ``alphas_[np.argmax(cv_scores_)]``.
    alphas_ : ndarray of shape (n_alphas,)
        The penalties tried (the "auto" grid in the data's units; NaN where not a
        normal float64 there, see :class:`LinearAttentionRegressorCV`).
    best_score_ : float
        Its cross-validation score (the accuracy by default; higher is better).
    cv_scores_ : ndarray of shape (n_alphas,)
        The cross-validation score of every alpha (mean over folds for K-fold).
    cv_results_ : ndarray of shape (n_samples, n_outputs, n_alphas)
        With ``store_cv_results=True``: leave-one-out decision values (one output
        for two classes).
    classes_ : ndarray of shape (n_classes,)
    coef_, intercept_, value_matrices_, query_matrices_, n_heads_, attention_, \
certificate_, head_search_, solver_, n_iter_, token_dim_, n_features_in_, \
feature_names_in_
        As :class:`LinearAttentionClassifier` fitted with ``alpha=alpha_``.

    See Also
    --------
    LinearAttentionClassifier : The classifier with a fixed alpha.
    LinearAttentionRegressorCV : The regression it cross-validates.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn import LinearAttentionClassifierCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 6, 2))
    >>> score = X[:, -1, 0] * (X[:, :, 1] ** 2).sum(axis=1)
    >>> y = np.where(score > 0, "yes", "no")
    >>> clf = LinearAttentionClassifierCV(cv=5).fit(X, y)
    >>> clf.classes_.tolist(), clf.alpha_ in clf.alphas_
    (['no', 'yes'], True)
    >>> clf.best_score_ > 0.9
    True
    """

    _is_classifier = True

    _parameter_constraints = {
        **_LinearAttentionCVBase._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        alphas="auto",
        *,
        cv=None,
        scoring=None,
        token_dim=None,
        n_heads="auto",
        fit_intercept=False,
        tol=1e-8,
        head_work_limit=20.0,
        positions="last",
        causal=True,
        class_weight=None,
        batch_size=None,
        n_jobs=None,
        verbose=0,
        gcv_mode="auto",
        store_cv_results=False,
    ):
        super().__init__(
            alphas,
            cv=cv,
            scoring=scoring,
            token_dim=token_dim,
            n_heads=n_heads,
            fit_intercept=fit_intercept,
            tol=tol,
            head_work_limit=head_work_limit,
            positions=positions,
            causal=causal,
            batch_size=batch_size,
            n_jobs=n_jobs,
            verbose=verbose,
            gcv_mode=gcv_mode,
            store_cv_results=store_cv_results,
        )
        self.class_weight = class_weight

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    _labels = LinearAttentionClassifier._labels
    _check_score_labels = LinearAttentionClassifier._check_score_labels
    _encoded_labels = LinearAttentionClassifier._encoded_labels
    _row_weights = LinearAttentionClassifier._row_weights
    _class_weights = LinearAttentionClassifier._class_weights
    decision_function = LinearAttentionClassifier.decision_function
    predict = LinearAttentionClassifier.predict
    _single_column = LinearAttentionClassifier._single_column  # generate's shapes

    def score(self, X, y, sample_weight=None):
        return LinearAttentionClassifier.score(self, X, y, sample_weight=sample_weight)

    score.__doc__ = LinearAttentionClassifier.score.__doc__

    def _stand_in(self):
        return _PredictionsClassifier(np.array([0, 1]))

    def _decisions(self, scores):
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def _error_exponent(self, scorer, truth):
        return 0  # (accuracy, or a scorer's own score)

    def _score(self, scorer, predictions, labels, weights, kept, exponent=0):
        scores = self._decisions(predictions[kept])
        if not np.all(np.isfinite(scores)):  # a leverage of one
            return -np.inf
        labels = labels[kept]
        stand_in = _PredictionsClassifier(self.classes_)
        if scorer is None:
            weights = None if weights is None else weights[kept]
            return accuracy_score(
                labels, stand_in.predict(scores), sample_weight=weights
            )
        return self._call_scorer(scorer, stand_in, scores, labels)

    def _cv_results(self, loo, targets, weights, single_output, exponent=0):
        return np.swapaxes(loo, 1, 2)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Choose ``alpha`` by cross-validation and fit the classifier for it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            A Dask array chunked along samples is lifted blockwise on its workers
            (not with ``gcv_mode="dual"``).
        y : array-like of shape (n_samples,)
            Class labels (one per position with ``positions="all"``).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sequence (multiplied by ``class_weight``),
            in the fits and in the default score.
        groups : array-like of shape (n_samples,), default=None
            Group labels for a group splitter passed as ``cv`` (ignored, with a
            warning, by leave-one-out, ``cv=None``).

        Returns
        -------
        self : LinearAttentionClassifierCV
        """
        alphas = self._check_parameters()
        with _AtomicUpdate(self):
            sequences = self._sequences(X, reset=True)
            labels, targets = self._encoded_labels(y, sequences)
            fit_weights = self._row_weights(labels, sample_weight, sequences)
            self._warn_about_fit_data(sequences, fit_weights)
            # One label per sequence for the splitter: with positions="all", the
            # label of its last position (StratifiedKFold stratifies by it).
            split_y = labels.reshape(sequences.shape[0], -1)[:, -1]
            return self._cross_validate(
                sequences,
                targets,
                fit_weights,
                fit_weights,
                labels,
                split_y,
                groups,
                False,
                alphas,
                split_X=X,
            )
