"""The three solvers of the lifted least-squares problem, one contract, one result.

Every solver takes a data source (:mod:`sklearn_linattn._data`) and the same keyword
arguments, and returns a :class:`LiftedSolution`. The problem, in the data source's
rescaled units, is weighted least squares or ridge on the lifted features,

    minimize  sum_i w_i ||theta phi_i + b - y_i||^2 + alpha ||theta||^2,

with the bias ``b`` unpenalized (``fit_intercept``); ``alpha = 0`` gives the
minimum-norm solution (Algorithm 1 of Yau et al. 2025; see the theory page).

- ``"normal"``: the normal equations from the streamed statistics
  ``Phi^T W Phi``, ``Phi^T W y``; Cholesky, or an eigen-solve on singular data.
- ``"dual"``: the kernel form, ``n_rows x n_rows``, for fewer rows than lifted
  features.
- ``"cg"``: LSQR with structured products, never forming ``Phi`` or a Gram matrix.

``alpha`` is given in the data's units; ``rescaled_alpha``, when given, is the
penalty already in the rescaled units and replaces it (the cross-validation's
grid lives there: in the data's units it leaves float64 at ``|X|`` beyond about
``1e+-50``).

:data:`SOLVERS` maps the ``solver`` string to them; :func:`resolve_solver` decides
``"auto"`` once, for every caller.
"""

import functools
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
from sklearn.exceptions import ConvergenceWarning

from ._certificate import (
    GramSpectrum,
    IdentifiabilityCertificate,
    centering_floor,
    default_rank_tol,
    deflated_kernel,
    estimate_extreme_eigenvalues,
    gram_spectrum,
    kernel_spectrum,
    reflect,
)
from ._data import (
    CenteredOperator,
    KeptRows,
    choose_solver,
    sum_statistics,
)
from ._data import dense_threads as _dense_threads
from ._designs import (
    LiftedDesign,
    RowCost,
    SequenceDesign,
    rows_are_cheaper,
)
from ._folds import RowFolds, StatisticsFolds, metric_factor, moments_of_pairs
from ._lift import lifted_kernel, lifted_matvec, lifted_rmatvec
from ._validation import caller_stacklevel

__all__ = [
    "HELDOUT_FOLDS",
    "LiftedSolution",
    "SOLVERS",
    "resolve_solver",
    "solve_dual",
    "solve_lsqr",
    "solve_normal",
]

# Interleaved folds of the head read-out's held-out criterion (the i-th sequence of
# positive weight in fold i mod 5), as many as scikit-learn's default K-fold.
HELDOUT_FOLDS = 5
# LSQR stops at a backward error of about solver_tol, so its coefficients'
# relative error is about its estimate of cond(A) times that (forward error:
# at most 1.32 times that estimate over 90 fits, d = 3 to 6, noise 0 to 100%,
# solver_tol 1e-2 to 1e-10, benchmarks/README.md, "LSQR's precision"); the head
# read-out treats differences below LSQR_COEF_MARGIN times it as rounding. (A
# fixed 1e4 solver_tol claimed 100 times the coefficients' norm at
# solver_tol=1e-2, where they were within 0.14 of it: a zero model came back.)
LSQR_COEF_MARGIN = 20.0
# LSQR's bound on its estimate of cond(A) (scipy's default): beyond it the lifted
# rows are numerically rank-deficient (singular values below 1e-8 of the largest:
# Gram eigenvalues below 1e-16, under the direct solvers' rank threshold), and it
# stops (istop 3) with a normal-equations residual far above solver_tol (measured
# 1e-4 to 3e-2 relative at solver_tol=1e-10): a ConvergenceWarning names it.
_LSQR_CONLIM = 1e8
# Relative accuracy of the Lanczos eigenvalue estimates behind solver="cg"'s
# certificate.
LANCZOS_TOL = 1e-6
# The head read-out takes norms of the lifted coefficients (in the rescaled units,
# where tokens and targets are of order one): below this their squares are
# subnormal or zero, and heads are lost (the SVD read-out of ridge fits of data
# of order one, d = 2 and 3, lost heads from a largest coefficient of about 1e-162
# on, silently at first: 2 of 3 heads, 32% off; then none).
_SMALLEST_COEF = np.sqrt(np.finfo(np.float64).tiny)


@dataclass
class LiftedSolution:
    """What every solver returns (coefficients in the data source's rescaled units).

    Attributes
    ----------
    coef : ndarray of shape (n_outputs, p)
    feature_mean : ndarray of shape (p,)
        Weighted means of the lifted features; zero without an intercept.
    target_mean : ndarray of shape (n_outputs,)
    certificate : IdentifiabilityCertificate
        In the units of the data as given.
    residual_sum_of_squares : ndarray of shape (n_outputs,)
        Weighted training residual sum of squares (without the penalty).
    n_observations : int
        Training rows with a positive weight.
    n_iter : ndarray of int, shape (n_outputs,)
        LSQR iterations; ones for the direct solvers.
    converged : bool
    statistics : LiftedStatistics or None
        The accumulated statistics (solver ``"normal"``), kept for ``partial_fit``.
    fold_statistics : list of LiftedStatistics or None
        The held-out folds' statistics when they were accumulated in the fit's
        pass (they add up to ``statistics``).
    head_design : callable
        ``head_design(output_weights=None)`` returns the training objective of
        heads (:mod:`sklearn_linattn._low_rank`) for the head read-out, with
        output ``j``'s targets multiplied by ``output_weights[j]``.
    heldout_folds : callable or None
        ``heldout_folds(classify=False, output_weights=None, flops_limit=inf)``
        returns the
        held-out folds of the read-out's criterion (:mod:`sklearn_linattn._folds`),
        counting misclassified rows with ``classify`` where the rows are at hand
        (targets weighted as by ``head_design``); None when the fit kept none.
    coef_tol : float
        Relative accuracy of ``coef`` as a solution (0 for the direct solvers).
    flops : float
        The solve's arithmetic, estimated: Gram ``n p^2`` and Cholesky ``p^3 / 3``
        (``"normal"``), kernel ``n^2 d^2`` and its factorization ``n^3 / 3``
        (``"dual"``), two structured products ``n d^3`` per LSQR iteration
        (``"cg"``). The head read-out's work limit is tied to it.
    mean_gain : ndarray of shape (n_outputs,) or None
        What adding the weighted mean of the training residuals to every
        prediction would add to the training :math:`R^2` (:func:`mean_gains`):
        zero with an intercept, up to rounding.
    class_gain : ndarray of shape (n_outputs,) or None
        How much more that adds than adding one shift, the outputs' average
        mean residual, to every output (:func:`mean_gains`): what one-vs-rest
        class scores leave out, since a shared shift changes no predicted class.
    degrees_of_freedom : callable or None
        ``degrees_of_freedom()`` returns the trace of the fit's hat matrix
        (:func:`degrees_of_freedom`; the intercept not counted), computed when
        first asked for; None where the solver cannot tell (``"cg"``).
    residual_correlation : ndarray of shape (n_outputs, n_outputs) or None
        The correlations of the weighted training residuals across the outputs
        with noise, zero for outputs fitted to the rounding of the sums they
        come from (:func:`residual_correlation`); None with one output, where
        no output has noise, where they are not known to 1e-3 (targets far
        from zero), or for ``"cg"``.
    compact_rows : callable or None
        ``compact_rows()`` returns the ``(pairs, queries)`` of the data's rows
        (``compact_rows`` of the data source), computed on the first call and
        shared by the head read-out and the rows a classifier keeps (solver
        ``"normal"`` with the rows at hand; None otherwise).
    """

    coef: np.ndarray
    feature_mean: np.ndarray
    target_mean: np.ndarray
    certificate: IdentifiabilityCertificate
    residual_sum_of_squares: np.ndarray
    n_observations: int
    n_iter: np.ndarray
    converged: bool = True
    statistics: object = None
    fold_statistics: list = None
    head_design: Callable = None
    heldout_folds: Callable = None
    coef_tol: float = 0.0
    flops: float = 0.0
    mean_gain: np.ndarray = None
    class_gain: np.ndarray = None
    degrees_of_freedom: Callable = None
    residual_correlation: np.ndarray = None
    compact_rows: Callable = None


def degrees_of_freedom(matrix, alpha, spectrum):
    """``tr(M (M + alpha I)^+)`` of a Gram or kernel ``M`` with its spectrum: the
    trace of the fit's hat matrix (the rank for ``alpha = 0``), its degrees of
    freedom for generalized cross-validation. Where only the extreme eigenvalues
    are known, ``p - alpha tr((M + alpha I)^-1)`` from a Cholesky factor."""
    if alpha == 0:
        return float(spectrum.rank)
    if spectrum.estimated:  # full rank: M + alpha I = U^T U
        upper = scipy.linalg.cholesky(
            matrix + alpha * np.eye(len(matrix)), check_finite=False
        )
        inverse = scipy.linalg.solve_triangular(
            upper, np.eye(len(matrix)), check_finite=False
        )
        return float(len(matrix) - alpha * np.vdot(inverse, inverse))
    values = spectrum.eigenvalues[spectrum.eigenvalues > spectrum.threshold]
    return float(np.sum(values / (values + alpha)))


# Below this fraction of sum_i w_i y_i^2, W rbar^2 is rounding of the sums it is
# computed from (about (p eps)^2 of it), not a mean the fit left out.
_MEAN_ROUNDING = 1e-8


def mean_gains(residual_sum, target_sum, target_square_sum, weight_sum):
    """Per output, the rise in training :math:`R^2` from adding the weighted mean
    residual ``rbar`` to every prediction: ``W rbar^2 / sum_i w_i (y_i - ybar)^2``,
    ``W`` the weight sum (the residual sum of squares falls by ``W rbar^2``);
    and how much more that is than adding their average over the outputs,
    ``b``, to every output: ``W (rbar - b)^2 / sum_i w_i (y_i - ybar)^2`` (the
    part one-vs-rest class scores leave out: a shared shift changes no class).

    The arguments are weighted sums over the training rows: ``sum_i w_i r_i``,
    ``sum_i w_i y_i``, ``sum_i w_i y_i^2`` (each of shape ``(n_outputs,)``) and
    ``W``. Zero where ``W rbar^2`` is within rounding of the sums; ``inf`` for
    constant targets whose mean the fit left out. Outputs with constant
    targets (a class without training weight: all its codes -1) are left out
    of ``b`` and have no ``class_gain``. Returns the keyword arguments
    ``mean_gain`` and ``class_gain`` of :class:`Solution`.
    """
    residual_sum = np.asarray(residual_sum, dtype=np.float64)
    if weight_sum <= 0:
        return dict(mean_gain=np.zeros_like(residual_sum),
                    class_gain=np.zeros_like(residual_sum))
    # weighted means (of r, y, y^2): sums of weights near 1e300 stay in range
    residual_mean = residual_sum / weight_sum
    mean, mean_square = target_sum / weight_sum, target_square_sum / weight_sum
    variance = np.maximum(mean_square - mean**2, 0.0)

    def gain(shift):
        explained = shift**2
        kept = explained > _MEAN_ROUNDING * mean_square
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(kept, explained / variance, 0.0)

    varied = variance > _MEAN_ROUNDING * mean_square
    shared = np.mean(residual_mean[varied]) if np.any(varied) else 0.0
    return dict(
        mean_gain=gain(residual_mean),
        class_gain=np.where(varied, gain(residual_mean - shared), 0.0),
    )


def _row_mean_gains(residual_rows, targets, row_scale):
    """:func:`mean_gains` from weighted rows (``sqrt(w) r``, ``sqrt(w) y``)."""
    return mean_gains(
        row_scale @ residual_rows,
        row_scale @ targets,
        np.einsum("no,no->o", targets, targets),
        float(row_scale @ row_scale),
    )


def _rescaled_penalty(data, alpha, rescaled_alpha):
    """The ridge penalty in the data source's rescaled units: ``alpha`` (the
    data's units) converted, or ``rescaled_alpha`` when given."""
    if rescaled_alpha is None:
        return data.rescaling.alpha(alpha)
    return float(rescaled_alpha)


def _ridge_residual_floor(gram, coef, alpha):
    """A lower bound on a ridge fit's residual sum of squares per output, free of
    the statistics form's cancellation: ``alpha^2 coef (gram + alpha I)^-1
    coef``. The normal equations give ``X^T r = alpha coef``, so the residual's
    part in the features' span has squared norm ``alpha^2 coef gram^+ coef``,
    at least this (zero for ``alpha = 0``). Without it, statistics read the
    residual of a ridge fit of noiseless targets as zero, where the rows show
    the penalty's shrinkage."""
    if alpha <= 0:
        return np.zeros(len(coef))
    try:
        factor = scipy.linalg.cho_factor(
            gram + alpha * np.eye(gram.shape[0]), check_finite=False
        )
    except np.linalg.LinAlgError:  # alpha below the Gram's rounding: no floor
        return np.zeros(len(coef))
    penalty = alpha * coef  # X^T r: bounded by the data, unlike alpha^2
    solved = scipy.linalg.cho_solve(factor, penalty.T, check_finite=False)
    return np.einsum("op,po->o", penalty, solved)


def _check_shrinkage(coef, alpha, rescaled_alpha, mean_diagonal):
    """A clear error naming ``alpha`` when it shrinks the lifted coefficients (in
    the rescaled units: tokens and targets of order one) below
    ``_SMALLEST_COEF``, where the head read-out cannot resolve them."""
    largest = float(np.max(np.abs(coef), initial=0.0))
    if not 0 < largest < _SMALLEST_COEF:
        return
    relative = rescaled_alpha / mean_diagonal if mean_diagonal > 0 else np.inf
    raise ValueError(
        f"alpha={alpha:.3g} is {relative:.1e} times the mean diagonal of the "
        "lifted Gram it is added to (trace(G) / p), so the ridge solution is about "
        f"that many times smaller than the least-squares one: {largest:.1e} with "
        f"tokens and targets scaled to order one, below the {_SMALLEST_COEF:.0e} "
        "the head read-out resolves (its squares leave the normal floats). A "
        "penalty beyond about 1e16 times trace(G) / p already shrinks the model "
        "to zero within float64 precision; use a smaller alpha."
    )


def _eigen_solve(eigenvalues, eigenvectors, threshold, right_hand_side, alpha):
    """``sum_k v_k v_k^T rhs / (lambda_k + alpha)`` over eigenvalues above
    ``threshold``: minimum-norm least squares for ``alpha = 0``, and ridge with the
    numerically-null directions dropped (they carry no signal in exact arithmetic,
    only rounding divided by a tiny ``alpha``)."""
    kept = eigenvalues > threshold
    basis = eigenvectors[:, kept]
    return basis @ ((basis.T @ right_hand_side) / (eigenvalues[kept] + alpha)[:, None])


def solve_gram(gram, moment, alpha, spectrum, kernel=False, moment_rounding=None):
    """Solve ``(gram + alpha I) coef = moment`` for the lifted coefficients.

    Cholesky when ``gram`` is numerically positive definite or ``alpha`` exceeds
    the rank threshold; else (or when Cholesky fails) the eigen-solve of
    :func:`_eigen_solve`: the minimum-norm solution for ``alpha = 0``. For a
    ``kernel`` (``A A^T``) of less than full rank the numerically-null directions
    are left out for every ``alpha``: ``A^T u = 0`` there, so they add nothing to
    the lifted coefficients in exact arithmetic, only rounding divided by
    ``alpha`` (so are the directions zero by the spectrum's ``max_rank``).

    ``moment_rounding`` (per output, for a Gram ``A^T A`` and ``moment = A^T
    y``): a bound on the rounding of ``moment``. A Gram of less than full rank
    whose output's moment has no more than that in its numerically-null
    directions (tokens in a subspace, one-hot tokens: null in exact arithmetic)
    has them left out for every ``alpha`` too, as for a kernel: kept, they add
    that rounding divided by ``alpha`` (relative errors up to 1e-3 at ``alpha``
    just above the rank threshold), and what they could carry is below it.

    Returns
    -------
    coef : ndarray of shape (n_outputs, p)
    """
    if (
        kernel
        or moment_rounding is None
        or spectrum.full_rank
        or alpha <= spectrum.threshold  # left out already
    ):
        return _solve_gram(gram, moment, alpha, spectrum, kernel)
    if spectrum.eigenvectors is None:  # not full rank: not an estimated spectrum
        eigenvalues, eigenvectors = scipy.linalg.eigh(gram, check_finite=False)
        spectrum = GramSpectrum(
            eigenvalues, eigenvectors, spectrum.tol, scale=spectrum.scale,
            max_rank=spectrum.max_rank,
        )
    null = spectrum.eigenvectors[:, spectrum.eigenvalues <= spectrum.threshold]
    in_null = np.linalg.norm(null.T @ moment, axis=0)
    rounding = in_null <= np.asarray(moment_rounding, dtype=np.float64)
    # each output solved once: the outputs of rounding alone in the null
    # directions without them, the others (if any) as any Gram
    left_out = _eigen_solve(
        spectrum.eigenvalues, spectrum.eigenvectors, spectrum.threshold,
        moment[:, rounding], alpha,
    ).T
    if rounding.all():
        return np.ascontiguousarray(left_out)
    coef = _solve_gram(gram, moment, alpha, spectrum, kernel)
    coef[rounding] = left_out
    return coef


def _solve_gram(gram, moment, alpha, spectrum, kernel):
    if spectrum.full_rank and alpha == 0 and spectrum.factor is not None:
        return scipy.linalg.cho_solve(
            (spectrum.factor, False), moment, check_finite=False
        ).T
    structural = spectrum.structural_zeros > 0
    regularizable = spectrum.full_rank or (alpha > spectrum.threshold and not kernel)
    if not structural and regularizable:
        # gram + alpha I on the diagonal of one copy (not np.eye, two more n x n
        # arrays), factored in place: the same numbers, 3 fewer matrices at peak
        regularized = np.array(gram, dtype=np.float64, order="F")
        if alpha > 0:
            regularized[np.diag_indices_from(regularized)] += alpha
        try:
            factor = scipy.linalg.cho_factor(
                regularized, check_finite=False, overwrite_a=True
            )
            return scipy.linalg.cho_solve(factor, moment, check_finite=False).T
        except np.linalg.LinAlgError:  # numerically not positive definite after all
            pass
    if spectrum.eigenvectors is None:
        eigenvalues, eigenvectors = scipy.linalg.eigh(gram, check_finite=False)
        spectrum = GramSpectrum(
            eigenvalues,
            eigenvectors,
            spectrum.tol,
            scale=spectrum.scale,
            max_rank=spectrum.max_rank,
        )
    cutoff = spectrum.threshold
    if structural and alpha > cutoff and not kernel:
        cutoff = spectrum.structural_floor  # only the structural zeros left out
    return _eigen_solve(
        spectrum.eigenvalues, spectrum.eigenvectors, cutoff, moment, alpha
    ).T


def solve_normal(
    data, *, alpha, fit_intercept, solver_tol=None, max_iter=None, progress=None,
    heldout=False, rescaled_alpha=None,
):
    """Least squares / ridge from the streamed normal equations.

    With ``heldout`` the statistics are accumulated in ``HELDOUT_FOLDS`` folds
    (:func:`~sklearn_linattn._data.sequence_folds`; one pass all the same) for
    the head read-out's held-out criterion (with ``heldout="lazy"``, by another
    pass when it is needed).
    Memory: one chunk of lifted rows plus ``O(p^2)`` (``HELDOUT_FOLDS`` times that
    with folds).
    """
    folds = None
    if heldout == "lazy":
        statistics = data.statistics(progress=progress)

        def folds():
            return data.fold_statistics(HELDOUT_FOLDS)

    elif heldout:
        folds = data.fold_statistics(HELDOUT_FOLDS, progress=progress)
        statistics = sum_statistics(folds)
    else:
        statistics = data.statistics(progress=progress)
    with _dense_threads(data.n_lifted):
        return _solve_statistics(
            data, statistics, alpha, fit_intercept, folds, rescaled_alpha
        )


def residual_correlation(cross_products, rounding=None, spread=None):
    """Correlations from the residuals' cross products ``sum_i w_i r_i r_i^T``
    among the outputs with noise, zero rows and columns for the others (a
    residual within its ``rounding``, an upper bound of the same shape, or not
    positive: an output fitted exactly). None with one output, where no output
    has noise, or where ``rounding`` exceeds 1e-3 of ``sqrt(r_jj r_kk)`` for
    two outputs with noise (correlations not known to 1e-3).

    ``spread``: the outputs' sums of squares about their means and those sums'
    rounding, two arrays (:func:`_target_spread`). An output within its
    rounding whose rounding exceeds 1e-3 of a spread beyond the spread's own
    rounding is not known to be fitted exactly (an output far from zero, its
    noise below the sums' resolution; a constant is): None.

    Examples
    --------
    >>> import numpy as np
    >>> residual_correlation(np.array([[4.0, 2.0], [2.0, 4.0]]))
    array([[1. , 0.5],
           [0.5, 1. ]])
    >>> residual_correlation(np.array([[4.0, 0.0], [0.0, 0.0]]))  # one is exact
    array([[1., 0.],
           [0., 0.]])
    """
    squares = np.diag(cross_products)
    rounding = np.zeros_like(cross_products) if rounding is None else rounding
    noisy = squares > np.maximum(np.diag(rounding), 0.0)
    if len(squares) < 2 or not np.any(noisy):
        return None
    if spread is not None:
        sums, sums_rounding = spread
        unresolved = (sums > sums_rounding) & (np.diag(rounding) > 1e-3 * sums)
        if np.any(~noisy & unresolved):
            return None
    positive = np.where(noisy, squares, 0.0)  # a residual at rounding can be < 0
    scale = np.sqrt(np.outer(positive, positive))
    both = np.outer(noisy, noisy)
    if np.any(rounding[both] > 1e-3 * scale[both]):
        return None
    return np.where(both, cross_products / np.where(both, scale, 1.0), 0.0)


def _target_spread(n_lifted, products, target_sum, weight_sum):
    """The outputs' sums of squares about their (weighted) means as the
    statistics give them, ``diag(products) - sum^2 / weight_sum``, and their
    rounding (``n_lifted eps`` times the terms' sizes):
    :func:`residual_correlation`'s ``spread``. About the means whether or not
    the fit has an intercept: the lifted features can hold a constant."""
    squares = np.diag(products)
    mean_part = np.zeros_like(squares)
    if weight_sum > 0:
        mean_part = target_sum / weight_sum * target_sum  # (sum^2 can overflow)
    rounding = n_lifted * np.finfo(np.float64).eps * (np.abs(squares) + mean_part)
    return squares - mean_part, rounding


def _residual_rounding(
    n_lifted, products, centering, crossed_sizes, quadratic_sizes
):
    """A bound on the rounding of the residuals' cross products as the normal
    equations' statistics give them, ``products - centering - crossed -
    crossed^T + quadratics`` (the targets' products, the intercept's part,
    fitted values times targets ``theta^T b``, fitted values' products ``theta^T
    G theta``): ``n_lifted eps`` times the sum of the terms' sizes, the last two
    taken term by term (``crossed_sizes`` at least ``|theta|^T |b|``,
    ``quadratic_sizes`` at least ``|theta|^T |G| |theta|``, each with the
    centering's part): the componentwise bound of a sum of products (Higham,
    *Accuracy and Stability of Numerical Algorithms*, 2002, section 3.1), which
    holds where the Gram is ill-conditioned and ``theta^T G theta`` is a
    cancellation of much larger terms. Both solvers judge the residuals at this
    resolution (the kernel solve's residual rows resolve more, but an output
    then counted as fitted exactly, or its correlations as known, would
    depend on the solver and with it the head count)."""
    terms = np.abs(products) + np.abs(centering) + quadratic_sizes
    terms += crossed_sizes + crossed_sizes.T
    return n_lifted * np.finfo(np.float64).eps * terms


def _term_sizes(coef, gram, moment, feature_mean, target_mean, weight_sum):
    """``(|theta|^T |b|, |theta|^T |G| |theta|)`` of the normal equations ``G theta
    = b`` (``moment`` of shape (p, n_outputs)), with the intercept's parts
    ``W |mu|^T |theta|`` times ``|ybar|`` and itself where ``feature_mean``
    ``mu`` is not zero: :func:`_residual_rounding`'s sizes."""
    sizes = np.abs(coef)
    centered = weight_sum * (sizes @ np.abs(feature_mean))
    crossed = sizes @ np.abs(moment) + np.outer(centered, np.abs(target_mean))
    quadratic = sizes @ np.abs(gram) @ sizes.T
    quadratic += np.outer(centered, sizes @ np.abs(feature_mean))
    return crossed, quadratic


def uncentered_scale(gram, feature_mean, weight_sum):
    """Largest diagonal entry of the uncentered Gram ``gram + weight_sum mean
    mean^T``: centering leaves rounding of about ``eps`` times it, the floor of the
    rank threshold (see :class:`~sklearn_linattn._certificate.GramSpectrum`)."""
    return float(np.max(np.diag(gram) + weight_sum * feature_mean**2, initial=0.0))


def _solve_statistics(
    data, statistics, alpha, fit_intercept, folds=None, rescaled_alpha=None
):
    given, alpha = alpha, _rescaled_penalty(data, alpha, rescaled_alpha)
    gram, moment, squares, feature_mean, target_mean = statistics.normal_equations(
        fit_intercept
    )
    scale = uncentered_scale(gram, feature_mean, statistics.weight_sum)
    if fit_intercept:
        scale = centering_floor(scale, statistics.n_observations, data.n_lifted)
    spectrum = gram_spectrum(gram, default_rank_tol(data.n_lifted), scale)
    # sum_i w_i phi_i y_i errs by at most about eps sqrt(trace(G) sum_i w_i y_i^2)
    # (uncentered: the centering subtracts from those sums) per output; measured
    # below 0.5 times that in the null directions of tokens in a subspace or
    # one-hot, above 7e4 times it with any genuine signal there: p times it.
    uncentered_trace = np.trace(gram) + statistics.weight_sum * float(
        feature_mean @ feature_mean
    )
    moment_rounding = (  # square roots first: partial_fit's sums can be huge
        data.n_lifted * np.finfo(np.float64).eps * np.sqrt(uncentered_trace)
        * np.sqrt(np.maximum(statistics.target_square_sum, 0.0))
    )
    coef = solve_gram(gram, moment, alpha, spectrum, moment_rounding=moment_rounding)
    _check_shrinkage(coef, given, alpha, np.trace(gram) / data.n_lifted)
    cross = np.einsum("op,po->o", coef, moment)
    projected = coef @ gram
    quadratic = np.einsum("op,op->o", projected, coef)
    residual = squares - 2 * cross + quadratic
    # the same sums, across outputs
    products = statistics.target_products
    centering = np.zeros_like(products)
    if fit_intercept and statistics.weight_sum > 0:
        centering = statistics.weight_sum * np.outer(target_mean, target_mean)
    crossed, quadratics = coef @ moment, projected @ coef.T
    cross_rounding = _residual_rounding(
        data.n_lifted, products, centering,
        *_term_sizes(
            coef, gram, moment, feature_mean, target_mean, statistics.weight_sum
        ),
    )
    correlation = residual_correlation(
        products - centering - crossed - crossed.T + quadratics,
        cross_rounding,
        _target_spread(
            data.n_lifted, products, statistics.target_sum, statistics.weight_sum
        ),
    )
    # From the statistics the residual is a difference of large terms: below their
    # rounding error it is not resolved (noiseless data, or noise below it).
    rounding = np.diag(cross_rounding)
    if np.any(residual <= rounding):
        if hasattr(data, "residual_sum_of_squares"):  # in memory: one more pass
            residual = data.residual_sum_of_squares(coef, feature_mean, target_mean)
        else:  # indistinguishable from zero, but for the penalty's own part
            # taken as zero (exact data: tol judges the count) only within the
            # rounding of the sums taken whole: the term-by-term bound, a worst
            # case, exceeds residuals the statistics resolve where the Gram is
            # ill-conditioned (tokens offset by 1e3: 3e-8 of the targets'
            # squares, resolved to 2%), which fit judges on its folds
            # (with an intercept, the targets' squares before their centering,
            # which subtracts from them: targets far from zero had left exact
            # data read as noisy)
            weight_sum = statistics.weight_sum if fit_intercept else 0.0
            whole = data.n_lifted * np.finfo(np.float64).eps * (
                squares + weight_sum * target_mean**2
                + 2 * np.abs(cross) + np.abs(quadratic)
            )
            floor = _ridge_residual_floor(gram, coef, alpha)
            residual = np.where(residual > whole, residual, floor)
    certificate = IdentifiabilityCertificate._from_spectrum(
        spectrum,
        statistics.weight_sum,
        statistics.n_observations,
        data.token_dim,
        data.rescaling,
        feature_mean=feature_mean if fit_intercept else None,
        layout=data.layout,
    )

    # the rows, where they are at hand (fitted in memory, or the cross-validated
    # estimators' data), lifted to their compact form once, where first read
    in_memory = data if hasattr(data, "compact_rows") else getattr(data, "rows", None)
    compact_rows = None if in_memory is None else functools.cache(
        in_memory.compact_rows
    )

    # Where the rows are not in memory (partial_fit, which may keep some, and
    # Dask), the read-out works as fit in memory with solver="auto" would: with
    # the dual solver, where partial_fit kept the rows, on them and their
    # kernel's folds (_row_head_problem), within the kernel solve's work limit;
    # else on the statistics, with the heads' work counted as on the rows
    # (RowCost, for every row added), within the limit of the statistics'
    # solve, which their folds' lifted fits need. In memory (fit, the CV
    # estimators' normal mode), the designs and the work are their own (None).
    dual = None
    if in_memory is None or isinstance(in_memory, KeptRows):
        dual = choose_solver(statistics.n_rows, data.n_lifted) == "dual"
    flops = float(statistics.n_observations) * data.n_lifted**2 + data.n_lifted**3 / 3
    on_rows = None
    if dual and in_memory is not None:
        flops = _dual_flops(statistics.n_rows, data.token_dim)

        @functools.cache
        def on_rows():  # (design, folds), built when the read-out first asks
            pairs, queries = compact_rows()
            kernel = lifted_kernel(pairs, queries)
            return _row_head_problem(
                in_memory, pairs, queries, kernel, alpha, fit_intercept, coef, True
            )

    def head_design(output_weights=None):
        if on_rows is not None:
            return on_rows()[0](output_weights)
        if spectrum.factor is not None and alpha == 0:  # G = U^T U, computed
            factor = spectrum.factor.T
        else:
            # on the solve's threads: the factor of a singular Gram is not
            # unique, and heads fitted along its null space follow its bits
            with _dense_threads(data.n_lifted):
                factor = metric_factor(gram, alpha, spectrum.tol)[0]
        if in_memory is not None and rows_are_cheaper(
            in_memory.n_rows, factor.shape[1], data.token_dim, alpha
        ):
            pairs, queries = compact_rows()
            return _row_head_problem(
                in_memory, pairs, queries, None, alpha, fit_intercept, coef, False
            )[0](output_weights)
        weights = _weights_or_one(output_weights)
        n_rows, cost = statistics.n_rows, None
        if dual is not None and (
            dual or rows_are_cheaper(n_rows, factor.shape[1], data.token_dim, alpha)
        ):
            cost = RowCost(n_rows, data.token_dim, alpha)
        return LiftedDesign(
            coef * np.reshape(weights, (-1, 1)), data.token_dim, factor, cost
        )

    def heldout_folds(classify=False, output_weights=None, flops_limit=np.inf):
        if on_rows is not None:
            return on_rows()[1](classify, output_weights, flops_limit)
        parts = folds() if callable(folds) else folds
        weights = _weights_or_one(output_weights)
        if output_weights is not None:
            parts = [part.with_output_weights(weights) for part in parts]
        rows = None
        if in_memory is not None:  # the rows are at hand, read where needed

            def rows():
                return (
                    *compact_rows(), in_memory.targets * weights,
                    in_memory.row_scale, _row_folds(in_memory),
                )

        return StatisticsFolds(
            parts, alpha, fit_intercept, data.token_dim, spectrum.tol, rows, classify,
            flops_limit, dual,
        )

    return LiftedSolution(
        coef=coef,
        feature_mean=feature_mean,
        target_mean=target_mean,
        certificate=certificate,
        residual_sum_of_squares=residual,
        residual_correlation=correlation,
        n_observations=statistics.n_observations,
        n_iter=np.ones(coef.shape[0], dtype=int),
        statistics=statistics,
        fold_statistics=folds if isinstance(folds, list) else None,
        flops=flops,
        head_design=head_design,
        heldout_folds=None if folds is None else heldout_folds,
        compact_rows=compact_rows,
        # computed once, when first asked for (output weights, then the read-out)
        degrees_of_freedom=functools.cache(
            lambda: degrees_of_freedom(gram, alpha, spectrum)
        ),
        # sum_i w_i r_i = sum w y - coef . sum w phi - W b, b the intercept
        **mean_gains(
            statistics.target_sum
            - coef @ statistics.feature_sum
            - statistics.weight_sum * (target_mean - coef @ feature_mean),
            statistics.target_sum,
            statistics.target_square_sum,
            statistics.weight_sum,
        ),
    )


def _centered_kernel(kernel, row_scale):
    """The kernel of the weighted, centered rows ``sqrt(w) (phi - mean)``, with the
    terms :class:`~sklearn_linattn._certificate.IdentifiabilityCertificate` needs
    to center new inputs the same way."""
    total = row_scale @ row_scale
    if total == 0:
        return kernel, np.zeros(len(kernel)), 0.0
    row_terms = kernel @ row_scale / total  # u = K r / s
    grand = float(row_scale @ row_terms) / total  # g = r^T K r / s^2
    # the same sums in the same order, with one n x n temporary at a time
    centered = kernel - np.outer(row_terms, row_scale)
    centered -= np.outer(row_scale, row_terms)
    outer = np.outer(row_scale, row_scale)
    outer *= grand
    centered += outer
    return centered, row_terms, grand


def solve_dual(
    data, *, alpha, fit_intercept, solver_tol=None, max_iter=None, progress=None,
    heldout=False, rescaled_alpha=None,
):
    """Least squares / ridge in kernel form, for fewer rows than lifted features.

    With ``K = A_c A_c^T`` (``A_c`` the weighted, centered lifted rows) the
    coefficients are ``A_c^T a``, ``a = (K + alpha I)^{-1} y_c`` (``pinv(K) y_c``
    for ``alpha = 0``: the minimum-norm solution). Memory ``O(n_rows^2)``. With
    ``heldout`` the head read-out's folds refit from the same kernel.
    """
    with _dense_threads(data.n_rows):
        return _solve_kernel(data, alpha, fit_intercept, heldout, rescaled_alpha)


def _dual_flops(n_rows, token_dim):
    """The kernel solve's flops: the kernel of ``n_rows`` rows (``n^2 d^2``) and
    its factorization."""
    return float(n_rows) ** 2 * token_dim**2 + n_rows**3 / 3


def _row_folds(data):
    """The held-out fold of each row of an in-memory data source (its
    sequence's, :func:`~sklearn_linattn._data.sequence_folds`), or of rows kept
    by ``partial_fit`` (:class:`~sklearn_linattn._data.KeptRows`)."""
    if hasattr(data, "row_folds"):
        return data.row_folds
    return data.folds_of_rows(HELDOUT_FOLDS)


def _weights_or_one(output_weights):
    """Output weights to multiply targets by (1.0: none)."""
    return 1.0 if output_weights is None else np.asarray(output_weights, float)


def _row_head_problem(data, pairs, queries, kernel, alpha, fit_intercept, coef,
                      heldout, residual=None):
    """The head design on the training rows and, with ``heldout``, its folds;
    each takes ``output_weights`` (output ``j``'s targets multiplied by
    ``output_weights[j]``; None: by 1). The design measures heads toward the
    lifted fit ``coef`` (:meth:`SequenceDesign.toward`: it minimizes the
    objective), or, given the ``residual`` sums of squares of a ``coef`` that
    does not (LSQR stopped short), on the targets above that fit's objective."""
    # S of every row (n_rows d^2): formed when the head read-out first asks, not
    # by every fit (n_heads=None never does; it would double solver "cg"'s memory)
    moments = functools.cache(lambda: moments_of_pairs(pairs, data.token_dim))
    targets, row_scale = data.targets, data.row_scale

    def head_design(output_weights=None):
        weights = _weights_or_one(output_weights)
        design = SequenceDesign(
            moments(), queries, targets * weights, row_scale, alpha, fit_intercept
        )
        weighted_coef = coef * np.reshape(weights, (-1, 1))
        if residual is None:
            return design.toward(weighted_coef)
        design.baseline = float(np.sum(residual * weights**2)) + alpha * float(
            np.vdot(weighted_coef, weighted_coef)
        )
        return design

    def heldout_folds(classify=False, output_weights=None, flops_limit=np.inf):
        # (the kernel's folds cost n^3 / 3 each, as the fit itself: not limited)
        weights = _weights_or_one(output_weights)
        return RowFolds(
            moments(), queries, targets * weights, row_scale, _row_folds(data), alpha,
            fit_intercept, kernel,
            lambda block, rhs, scales: _kernel_weights(
                block, rhs, scales, alpha, fit_intercept,
                int(np.count_nonzero(scales)), data.n_lifted,
            )[:2],
            HELDOUT_FOLDS, classify,
        )

    return head_design, heldout_folds if heldout else None


def _kernel_weights(kernel, targets, row_scale, alpha, fit_intercept, n_observations,
                    n_lifted):
    """The kernel-form solution ``a`` (coefficients ``A_c^T a``) and what the
    solver keeps of it: ``(a, target_mean, centered kernel, spectrum, reflection,
    (scale, row_terms, grand))``."""
    scale = np.max(np.diag(kernel), initial=0.0)  # before centering: see GramSpectrum
    total = float(row_scale @ row_scale)
    if fit_intercept and total > 0:
        scale = centering_floor(scale, n_observations, n_lifted)
        kernel, row_terms, grand = _centered_kernel(kernel, row_scale)
        target_mean = row_scale @ targets / total
    else:
        row_terms, grand = np.zeros(len(kernel)), 0.0
        target_mean = np.zeros(targets.shape[1])
    centered_targets = targets - np.outer(row_scale, target_mean)
    tol = default_rank_tol(n_lifted)
    reflection = None
    if fit_intercept and total > 0 and len(kernel) > 1:
        # The centered kernel is singular along the row weights (K r = 0) and the
        # centered targets are orthogonal to them: solve on the other directions,
        # where the kernel has full rank on generic data (Cholesky, no eigh). (One
        # row centers to zero: no direction is left, the model is the constant.)
        block, reflection = deflated_kernel(kernel, row_scale)
        spectrum = kernel_spectrum(block, tol, n_lifted, scale)
        rotated = reflect(reflection, centered_targets)[1:]
        solution = solve_gram(block, rotated, alpha, spectrum, kernel=True).T
        weights = reflect(
            reflection, np.vstack([np.zeros((1, targets.shape[1])), solution])
        )
    else:
        spectrum = kernel_spectrum(kernel, tol, n_lifted, scale)
        weights = solve_gram(kernel, centered_targets, alpha, spectrum, kernel=True).T
    return weights, target_mean, kernel, spectrum, reflection, (scale, row_terms, grand)


def _solve_kernel(data, alpha, fit_intercept, heldout=False, rescaled_alpha=None):
    pairs, queries = data.compact_rows()
    row_scale, targets = data.row_scale, data.targets
    given, alpha = alpha, _rescaled_penalty(data, alpha, rescaled_alpha)
    kernel_uncentered = lifted_kernel(pairs, queries)
    total = float(row_scale @ row_scale)
    weights, target_mean, kernel, spectrum, reflection, centering = _kernel_weights(
        kernel_uncentered, targets, row_scale, alpha, fit_intercept,
        data.n_observations, data.n_lifted,
    )
    scale, row_terms, grand = centering
    if fit_intercept and total > 0:
        feature_mean = lifted_rmatvec(pairs, queries, row_scale[:, None])[0] / total
    else:
        feature_mean = np.zeros(data.n_lifted)
    centered_targets = targets - np.outer(row_scale, target_mean)
    residual = centered_targets - kernel @ weights
    # A_c^T a = A^T a - mean (r . a)
    coef = lifted_rmatvec(pairs, queries, weights) - np.outer(
        row_scale @ weights, feature_mean
    )
    # trace(G) of the weighted, centered rows: that of their kernel
    _check_shrinkage(coef, given, alpha, np.trace(kernel) / data.n_lifted)
    certificate = IdentifiabilityCertificate._from_kernel(
        spectrum,
        pairs,
        queries,
        data.rescaling,
        total,
        data.n_observations,
        centering=(row_scale, row_terms, grand) if fit_intercept else None,
        layout=data.layout,
        reflection=reflection,
    )
    rss = np.einsum("no,no->o", residual, residual)
    centering = total * np.outer(target_mean, target_mean)  # (0 without intercept)
    products = targets.T @ targets
    # the normal solver's term sizes (_term_sizes) bounded by the rows':
    # |G| <= sum_i |phi_i| |phi_i|^T and |b| <= sum_i |phi_i| |y_i| (uncentered;
    # the features' sizes are those of pairs and queries, products of the two)
    sizes = lifted_matvec(np.abs(pairs), np.abs(queries), np.abs(coef))
    crossed_sizes, quadratic_sizes = sizes.T @ np.abs(targets), sizes.T @ sizes
    head_design, heldout_folds = _row_head_problem(
        data, pairs, queries, kernel_uncentered, alpha, fit_intercept, coef, heldout
    )
    return LiftedSolution(
        coef=coef,
        feature_mean=feature_mean,
        target_mean=target_mean,
        certificate=certificate,
        residual_sum_of_squares=rss,
        # an output the kernel fits to rounding has no noise to correlate
        residual_correlation=residual_correlation(
            residual.T @ residual,
            _residual_rounding(
                data.n_lifted, products, centering, crossed_sizes, quadratic_sizes
            ),
            _target_spread(data.n_lifted, products, row_scale @ targets, total),
        ),
        n_observations=data.n_observations,
        n_iter=np.ones(targets.shape[1], dtype=int),
        flops=_dual_flops(len(kernel), data.token_dim),
        head_design=head_design,
        heldout_folds=heldout_folds,
        **_row_mean_gains(residual, targets, row_scale),
        degrees_of_freedom=functools.cache(
            lambda: degrees_of_freedom(kernel, alpha, spectrum)
        ),
    )


def solve_lsqr(
    data, *, alpha, fit_intercept, solver_tol=1e-10, max_iter=None, progress=None,
    heldout=False, rescaled_alpha=None,
):
    """Least squares / ridge by LSQR, never forming ``Phi`` or a Gram matrix.

    Each iteration costs two structured products, ``O(n_rows d^3)``; memory is the
    compact rows, ``O(n_rows d^2)``. Started from zero, LSQR converges to the
    minimum-norm solution when ``alpha = 0``. The certificate comes from Lanczos
    estimates of the extreme eigenvalues (exact for ``p <= 64``, where the Gram is
    formed from ``p`` products); it never claims identifiability when LSQR did not
    converge.
    """
    operator = data.operator()
    row_scale, targets = data.row_scale, data.targets
    given, alpha = alpha, _rescaled_penalty(data, alpha, rescaled_alpha)
    n_rows, n_lifted = operator.shape
    total = float(row_scale @ row_scale)
    scale = 0.0
    if fit_intercept and total > 0:
        feature_mean = operator.rmatvec(row_scale) / total
        target_mean = row_scale @ targets / total
        # the rank threshold's floor, as for the other solvers (uncentered_scale)
        scale = centering_floor(
            np.max(operator.squared_column_norms(), initial=0.0),
            data.n_observations,
            n_lifted,
        )
    else:
        feature_mean = np.zeros(n_lifted)
        target_mean = np.zeros(targets.shape[1])
    centered = CenteredOperator(operator, row_scale, feature_mean)
    centered_targets = targets - np.outer(row_scale, target_mean)
    max_iter = 2 * n_lifted if max_iter is None else max_iter
    coef = np.zeros((targets.shape[1], n_lifted))
    n_iter = np.zeros(targets.shape[1], dtype=int)
    residual = np.einsum("no,no->o", centered_targets, centered_targets)
    residual_rows = np.array(centered_targets, dtype=np.float64)
    at_limit, ill_conditioned = False, False
    condition = 1.0  # LSQR's largest estimate of cond(A) over the outputs
    for output, column in enumerate(centered_targets.T):
        if not np.any(column):
            continue
        result = scipy.sparse.linalg.lsqr(
            centered,
            column,
            damp=np.sqrt(alpha),
            atol=solver_tol,
            btol=solver_tol,
            conlim=_LSQR_CONLIM,
            iter_lim=max_iter,
        )
        coef[output], n_iter[output] = result[0], result[2]
        condition = max(condition, float(result[6]))
        at_limit |= result[1] == 7  # 7: the iteration limit was reached
        # 3, 6: its estimate of cond(A) passed conlim (or 1 / eps)
        ill_conditioned |= result[1] in (3, 6)
        difference = column - centered.matvec(coef[output])
        residual[output] = difference @ difference
        residual_rows[:, output] = difference
    converged = not (at_limit or ill_conditioned)
    uncentered_trace = np.sum(operator.squared_column_norms())
    _check_shrinkage(coef, given, alpha, uncentered_trace / n_lifted)
    certificate = estimate_extreme_eigenvalues(
        centered,
        total,
        data.n_observations,
        data.token_dim,
        data.rescaling,
        tol=LANCZOS_TOL,
        max_iter=max_iter,
        trusted=converged,
        feature_mean=feature_mean if fit_intercept else None,
        layout=data.layout,
        scale=scale,
    )
    if certificate.rank == 0:
        # Centered rows that are rounding of identical ones (at most tol times the
        # uncentered scale): LSQR fitted noise; the model is the constant one.
        coef[:] = 0.0
        residual = np.einsum("no,no->o", centered_targets, centered_targets)
        residual_rows = np.array(centered_targets, dtype=np.float64)
        at_limit = ill_conditioned = False
        converged = True
    if at_limit:
        warnings.warn(
            f"LSQR did not reach solver_tol={solver_tol} within max_iter={max_iter} "
            "iterations; increase max_iter, or alpha. The certificate claims no "
            "identifiability.",
            ConvergenceWarning,
            stacklevel=caller_stacklevel(),
        )
    if ill_conditioned:
        warnings.warn(
            f"LSQR stopped before reaching solver_tol={solver_tol}: the lifted "
            "problem is numerically rank-deficient (LSQR's estimate of its "
            f"condition number passed {_LSQR_CONLIM:.0e}), and its coefficients "
            "are an early-stopped solution, not the minimum-norm one that solvers "
            "'normal' and 'dual' return (predictions can differ from theirs by "
            "their own size). Use one of those, or alpha > 0. The certificate "
            "claims no identifiability.",
            ConvergenceWarning,
            stacklevel=caller_stacklevel(),
        )
    return LiftedSolution(
        coef=coef,
        feature_mean=feature_mean,
        target_mean=target_mean,
        certificate=certificate,
        residual_sum_of_squares=residual,
        n_observations=data.n_observations,
        n_iter=n_iter,
        converged=bool(converged),
        coef_tol=LSQR_COEF_MARGIN * condition * solver_tol,
        flops=2.0 * max(int(n_iter.sum()), 1) * n_rows * data.token_dim**3,
        # No held-out folds: refitting each would cost LSQR runs of its own.
        # Rows on Dask are not at hand: heads in the Frobenius metric then.
        head_design=_row_head_problem(
            data, operator.pairs, operator.queries, None, alpha, fit_intercept, coef,
            False, None if converged else residual,
        )[0] if hasattr(operator, "pairs") else (
            lambda output_weights=None: LiftedDesign(
                coef * np.reshape(_weights_or_one(output_weights), (-1, 1)),
                data.token_dim,
            )
        ),
        **_row_mean_gains(residual_rows, targets, row_scale),
    )


SOLVERS = {"normal": solve_normal, "dual": solve_dual, "cg": solve_lsqr}


# --- solver choice -----------------------------------------------------------------


def resolve_solver(solver, data):
    """The solver to run on ``data``: ``"auto"`` decided by :func:`choose_solver`,
    and a clear error for a solver the data source cannot serve."""
    if solver == "auto":
        return choose_solver(
            data.n_rows, data.n_lifted, distributed=data.is_distributed
        )
    if solver == "dual" and data.is_distributed:
        raise ValueError(
            "Dask arrays are fitted blockwise, with solver 'auto' or 'normal' "
            "(statistics) or 'cg' (products); solver='dual' needs the whole "
            "n_samples x n_samples kernel."
        )
    return solver
