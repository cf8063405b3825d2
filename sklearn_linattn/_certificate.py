"""The identifiability certificate (Yau et al. 2025; the docs' theory page).

``Lambda = (1/N) sum_i w_i phi_i phi_i^T``, the (weighted) uncentered second moment of
the lifted training rows. If its smallest eigenvalue is positive, every minimizer of
the lifted least-squares problem (any number of heads) computes the same function on
all inputs. When it is singular, an input still gets the same prediction from every
minimizer iff its lifted features lie in the span of the training features
(``covers``).

The eigenvalues come from the solver's own factorization: the Gram matrix
(``"normal"``), the kernel matrix (``"dual"``) or Lanczos estimates (``"cg"``).

What is exact and what is estimated, for a Gram matrix (:func:`gram_spectrum`): up to
``p = 300`` lifted features the whole spectrum is computed (``eigvalsh``). Above, when
the Cholesky factorization succeeds, the largest eigenvalue comes from Lanczos on the
Gram and the smallest from Lanczos on its inverse (through the Cholesky factor), each
stopped when its Ritz residual puts the extreme eigenvalue within about ``1e-2``
relative (measured within 6.2e-3 on lifted Grams); the rank is then ``p`` and the
verdict identifiable, provided the smallest eigenvalue exceeds the rank threshold by
a factor 1000. Otherwise (Cholesky fails, or the estimate comes near the
threshold) the whole spectrum is computed, with eigenvectors when the Gram is
singular (``covers`` and the minimum-norm solve need them).
"""

import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
from sklearn.exceptions import ConvergenceWarning

from ._data import (
    _COPIES,
    _RowLayout,
    _size,
    available_memory,
    choose_solver,
    dense_threads,
    is_dask_array,
    lifted_data,
    to_unit,
)
from ._lift import lifted_kernel, n_lifted_features
from ._validation import check_sequence_values, validate_sequences

__all__ = [
    "GramSpectrum",
    "IdentifiabilityCertificate",
    "certify",
    "centering_floor",
    "default_rank_tol",
    "estimate_extreme_eigenvalues",
    "gram_spectrum",
    "kernel_spectrum",
]

# Relative size of the component outside the training span below which `covers`
# says True. The test's own rounding is about sqrt(eps) ~ 1.5e-8 of the input's
# norm by the kernel (a difference of squared norms, k(x, x) - k_x^T K^-1 k_x) and
# ~1e-13 by an eigenbasis; measured at most 1.7e-7 on the training sequences of
# ill-conditioned kernels (condition 1e11, d = 3..6), so 1e-6 keeps them covered,
# while an input a relative 1e-6 away from the span is not.
_COVERS_RTOL = 1e-6
# Up to this many lifted features, solver="cg" forms the Gram from p products and
# decomposes it exactly instead of estimating its extreme eigenvalues by Lanczos.
_DENSE_CERTIFICATE_FEATURES = 64
# Up to this many lifted features gram_spectrum computes every eigenvalue (eigvalsh
# costs about as much as the Lanczos estimates there); above, the extreme ones are
# estimated from the Cholesky factor (measured in benchmarks/bench_speed.py).
_EXACT_SPECTRUM_FEATURES = 300
# ARPACK's relative residual for the "cg" solver's estimates, and the factor by
# which an estimated smallest eigenvalue must exceed the rank threshold to be trusted.
_ESTIMATE_TOL = 1e-4
_RANK_MARGIN = 1e3
# Block Lanczos for the estimates from the Cholesky factor: BLOCK vectors per
# product (a triangular solve with 4 right-hand sides reads the factor once, as one
# with a single vector does), stopped when the top Ritz pair's residual r and
# r^2 / gap are both at most RTOL times its value (_settled), or after
# _BLOCK_MAX_STEPS steps. Measured on 60 lifted Grams (Gaussian, |Gaussian| and
# uniform tokens, d = 7..16, with and without centering) against eigvalsh: the
# smallest within 6e-4 in the median and 6.2e-3 at most, the largest within 6.3e-4,
# with 15 products at d = 12 (benchmarks/bench_speed.py). The earlier rule (stop
# when the estimate moves by less than 1e-3 in a step) took 18 there and erred by
# up to 5.5e-3 and 8.8e-3, where an estimate stalled for a step.
_BLOCK = 4
_GRAM_RTOL = 1e-2
_INVERSE_RTOL = 1.5e-2
_BLOCK_MAX_STEPS = 30
# A new Lanczos direction this small relative to the estimate is numerically inside
# the basis already.
_EXHAUSTED_RTOL = 1e-10

class GramSpectrum:
    """Eigenvalues of a Gram or kernel matrix, with eigenvectors or a Cholesky factor
    when they are known.

    Parameters
    ----------
    eigenvalues : ndarray, ascending
        All of them, or only estimates of the smallest and the largest (then
        ``size`` is the matrix's order and the matrix has full rank).
    eigenvectors : ndarray or None
    tol : float
        Relative tolerance: eigenvalues at most ``tol`` times the largest (or times
        ``scale``, if larger) count as zero.
    size : int, optional
        Order of the matrix; default ``eigenvalues.size``.
    factor : ndarray or None
        Upper Cholesky factor ``U`` of the matrix (``U^T U``), when it was computed
        and the matrix has full rank.
    scale : float, default=0
        The magnitude the matrix's rounding errors are relative to, when larger
        than its largest eigenvalue: for a matrix centered by subtracting ``n mu
        mu^T`` from an uncentered one, the uncentered matrix's largest diagonal
        entry (the centering leaves errors of about ``eps`` times it, which would
        otherwise count as rank when the centered matrix is itself rounding).
    max_rank : int, optional
        The rank the matrix has at most whatever its entries (a kernel of ``n``
        rows of ``p < n`` features: ``p``); its smaller eigenvalues are zero, as
        rounding leaves them.
    """

    def __init__(
        self,
        eigenvalues,
        eigenvectors,
        tol,
        size=None,
        factor=None,
        scale=0.0,
        max_rank=None,
    ):
        self.eigenvalues = eigenvalues
        self.eigenvectors = eigenvectors
        self.tol = tol
        self.size = eigenvalues.size if size is None else int(size)
        self.factor = factor
        self.scale = float(scale)
        self.max_rank = max_rank

    @property
    def estimated(self):
        """Whether only the extreme eigenvalues are known (as estimates)."""
        return self.size != self.eigenvalues.size

    @property
    def structural_zeros(self):
        """How many of the smallest eigenvalues are zero by ``max_rank``."""
        if self.max_rank is None or self.estimated:
            return 0
        return max(self.size - self.max_rank, 0)

    @property
    def structural_floor(self):
        """The largest eigenvalue that is zero by ``max_rank`` (-inf if none)."""
        zeros = self.structural_zeros
        return self.eigenvalues[zeros - 1] if zeros else -np.inf

    @property
    def threshold(self):
        largest = self.eigenvalues[-1] if self.eigenvalues.size else 0.0
        return max(self.tol * max(largest, self.scale, 0.0), self.structural_floor)

    @property
    def rank(self):
        if self.estimated:
            return self.size
        return int(np.count_nonzero(self.eigenvalues > self.threshold))

    @property
    def full_rank(self):
        return self.rank == self.size


def default_rank_tol(n_lifted):
    """Relative eigenvalue tolerance used when none is given: ``p * eps``.

    An eigenvalue of the lifted Gram at most ``tol * largest eigenvalue`` counts as
    zero, as in :func:`numpy.linalg.matrix_rank`: rounding in the Gram is of order
    ``eps * largest eigenvalue`` per entry.
    """
    return n_lifted * np.finfo(np.float64).eps


def centering_floor(scale, n_rows, n_lifted):
    """The rank threshold's floor ``scale`` (:class:`GramSpectrum`) for a matrix
    centered over ``n_rows`` rows: the centering sums them and subtracts, leaving
    rounding of up to about ``(n_rows + 4) eps`` times the uncentered diagonal
    where the tolerance ``p eps`` allows for ``p``; so ``scale * max(1, (n_rows +
    4) / p)``."""
    return float(scale) * max(1.0, (n_rows + 4) / max(n_lifted, 1))


def _cholesky(matrix):
    """Upper Cholesky factor, or None when the matrix is numerically not positive
    definite."""
    try:
        return scipy.linalg.cholesky(matrix, check_finite=False)
    except np.linalg.LinAlgError:
        return None


def _top_eigenvalue(matvec, size, tol=_ESTIMATE_TOL, maxiter=None):
    """Largest eigenvalue of a symmetric operator by Lanczos, or None when it does
    not converge."""
    operator = scipy.sparse.linalg.LinearOperator(
        (size, size), matvec=matvec, dtype=np.float64
    )
    try:
        return float(
            scipy.sparse.linalg.eigsh(
                operator,
                k=1,
                which="LA",
                tol=tol,
                maxiter=maxiter,
                v0=np.ones(size),
                return_eigenvectors=False,
            )[0]
        )
    except scipy.sparse.linalg.ArpackNoConvergence:
        return None


def _block_top_eigenvalue(apply, start, rtol):
    """Largest eigenvalue of a symmetric positive semi-definite operator by block
    Lanczos (``apply`` maps a ``(size, k)`` block to its image) from the
    ``(size, k)`` block ``start``, within about ``rtol`` relative (see
    :func:`_settled`), or None when it does not settle within ``_BLOCK_MAX_STEPS``
    steps. The estimate is a Ritz value: never above the true eigenvalue. The
    small factorizations call LAPACK directly: numpy's and scipy's wrappers cost
    2-3x as much on these blocks, about 1.5 ms per certificate at p = 936."""
    size, block = start.shape
    width = min(size, block * (_BLOCK_MAX_STEPS + 1))
    # basis and images filled in place, block by block (no copies as they grow)
    basis = np.empty((size, width), order="F")  # column blocks contiguous
    images = np.empty((size, width), order="F")
    basis[:, :block] = _orthonormal_columns(start)[0]
    images[:, :block] = apply(basis[:, :block])
    # upper triangle of the operator projected on the basis, a block column per step
    projected = np.empty((width, width), order="F")
    used = block
    for _ in range(_BLOCK_MAX_STEPS):
        new_columns = slice(used - block, used)
        coefficients = basis[:, :used].T @ images[:, new_columns]
        projected[:used, new_columns] = coefficients
        # the newest images' part outside the basis (Gram-Schmidt, twice for
        # stability); the older images lie inside it
        residual = images[:, new_columns] - basis[:, :used] @ coefficients
        residual -= basis[:, :used] @ (basis[:, :used].T @ residual)
        value, ritz = _top_eigenpair_of_upper(projected[:used, :used])
        # the Ritz vector's residual A y - value y is residual @ ritz[new_columns]
        residual_norm = np.linalg.norm(residual @ ritz[new_columns])
        if _settled(value, residual_norm, projected[:used, :used], rtol):
            return float(value)
        if used + block > width:
            break
        new_basis, pivots = _orthonormal_columns(residual)
        exhausted = np.abs(pivots) <= _EXHAUSTED_RTOL * value
        if np.any(exhausted):
            # directions whose Krylov sequence ended: continue with random ones
            residual[:, exhausted] = np.random.default_rng(used).normal(
                size=(size, np.count_nonzero(exhausted))
            )
            for _ in range(2):
                residual -= basis[:, :used] @ (basis[:, :used].T @ residual)
            new_basis = _orthonormal_columns(residual)[0]
        basis[:, used : used + block] = new_basis
        images[:, used : used + block] = apply(new_basis)
        used += block
    return None


def _settled(value, residual_norm, projected, rtol):
    """Whether the top Ritz value is within ``rtol`` relative of the top
    eigenvalue: an eigenvalue lies within the residual norm ``r`` of it, and the
    top one within ``r^2 / gap``, ``gap`` the distance to the next Ritz value
    farther than ``r`` below (0 in a flat cluster, where the top eigenvalue can
    still be missed: ``c I`` plus a small low-rank term)."""
    if residual_norm > rtol * value:
        return False
    ritz_values = scipy.linalg.eigvalsh(projected, lower=False, check_finite=False)
    below = ritz_values[ritz_values < value - residual_norm]
    return below.size > 0 and residual_norm**2 <= rtol * value * (value - below[-1])


def _orthonormal_columns(block):
    """Q of the QR factorization of a tall block, and the diagonal of R."""
    factored, reflectors, _, info = scipy.linalg.lapack.dgeqrf(block)
    orthonormal, _, info_q = scipy.linalg.lapack.dorgqr(factored, reflectors)
    if info or info_q:
        raise np.linalg.LinAlgError("QR factorization failed")
    return orthonormal, np.diag(factored)


def _top_eigenpair_of_upper(matrix):
    """Largest eigenvalue and its unit eigenvector of a small symmetric matrix given
    by its upper triangle."""
    order = matrix.shape[0]
    values, vectors, _, _, info = scipy.linalg.lapack.dsyevr(
        matrix, compute_v=1, range="I", il=order, iu=order, lower=0
    )
    if info:
        raise np.linalg.LinAlgError("eigenvalue computation failed")
    return values[0], vectors[:, 0]


def extreme_eigenvalues(gram, factor):
    """Estimates of the smallest and largest eigenvalue of a positive definite
    ``gram`` from its upper Cholesky factor, by block Lanczos on ``gram`` and on
    its inverse (the smallest from above, the largest from below; stopped by
    residual and gap estimates of 1.5e-2 and 1e-2 relative, measured within about
    1e-2); None when they do not settle.

    Examples
    --------
    >>> import numpy as np, scipy.linalg
    >>> from sklearn_linattn._certificate import extreme_eigenvalues
    >>> A = np.random.default_rng(0).normal(size=(200, 50))
    >>> gram = A.T @ A
    >>> smallest, largest = extreme_eigenvalues(gram, scipy.linalg.cholesky(gram))
    >>> exact = np.linalg.eigvalsh(gram)
    >>> bool(np.isclose(smallest, exact[0], rtol=1e-2))
    True
    >>> bool(np.isclose(largest, exact[-1], rtol=1e-2))
    True
    """
    size = gram.shape[0]
    block = min(_BLOCK, size)
    random_start = np.random.default_rng(0).normal(size=(size, block))
    # sqrt(diag) starts close to the top eigenvector of Grams of nonnegative
    # features (1-2 steps fewer of ~5 on |Gaussian| and uniform tokens, none lost
    # on Gaussian ones)
    gram_start = random_start.copy()
    gram_start[:, 0] = np.sqrt(np.maximum(np.diag(gram), 0.0))
    largest = _block_top_eigenvalue(
        lambda vectors: gram @ vectors, gram_start, _GRAM_RTOL
    )

    def inverse_product(vectors):
        solution, info = scipy.linalg.lapack.dpotrs(factor, vectors, lower=0)
        if info:
            raise np.linalg.LinAlgError("triangular solve failed")
        return solution

    inverse_top = _block_top_eigenvalue(inverse_product, random_start, _INVERSE_RTOL)
    if largest is None or inverse_top is None or inverse_top <= 0:
        return None
    return 1.0 / inverse_top, largest


def gram_spectrum(gram, tol, scale=0.0):
    """Spectrum of a symmetric positive semi-definite Gram (or kernel) matrix.

    With more than 300 rows and a successful Cholesky factorization, only the
    extreme eigenvalues, estimated from the factor (see the module docstring);
    else every eigenvalue, and the eigenvectors when the matrix is singular or its
    Cholesky factorization failed (null space for ``covers``, minimum-norm solve).
    The Cholesky factor is kept for the solve when the matrix has full rank.
    ``scale``: see :class:`GramSpectrum`.
    """
    size = gram.shape[0]
    factor = _cholesky(gram)
    if factor is None:
        eigenvalues, eigenvectors = scipy.linalg.eigh(gram, check_finite=False)
        return GramSpectrum(eigenvalues, eigenvectors, tol, scale=scale)
    if size > _EXACT_SPECTRUM_FEATURES:
        extremes = extreme_eigenvalues(gram, factor)
        if extremes is not None and extremes[0] > _RANK_MARGIN * tol * max(
            extremes[1], scale
        ):
            return GramSpectrum(
                np.array(extremes), None, tol, size=size, factor=factor, scale=scale
            )
    eigenvalues = scipy.linalg.eigvalsh(gram, check_finite=False)
    spectrum = GramSpectrum(eigenvalues, None, tol, scale=scale)
    if spectrum.full_rank:
        spectrum.factor = factor
        return spectrum
    eigenvalues, eigenvectors = scipy.linalg.eigh(gram, check_finite=False)
    return GramSpectrum(eigenvalues, eigenvectors, tol, scale=scale)


def kernel_spectrum(kernel, tol, n_lifted, scale=0.0):
    """Spectrum of a kernel matrix ``A A^T`` (``n_lifted`` columns in ``A``).

    With fewer rows than lifted features the Gram ``A^T A`` is singular whatever
    the kernel is, and the certificate needs only the kernel's rank and largest
    eigenvalue: :func:`gram_spectrum` (a Cholesky factor, with estimated extreme
    eigenvalues above 300 rows). With at least as many rows, every eigenvalue:
    the ``n_lifted``-th largest is the Gram's smallest. ``scale``: see
    :class:`GramSpectrum`.
    """
    if len(kernel) < n_lifted:
        return gram_spectrum(kernel, tol, scale)
    eigenvalues = scipy.linalg.eigvalsh(kernel, check_finite=False)
    spectrum = GramSpectrum(eigenvalues, None, tol, scale=scale, max_rank=n_lifted)
    if spectrum.full_rank:
        spectrum.factor = _cholesky(kernel)
        if spectrum.factor is not None:
            return spectrum
    eigenvalues, vectors = scipy.linalg.eigh(kernel, check_finite=False)
    return GramSpectrum(eigenvalues, vectors, tol, scale=scale, max_rank=n_lifted)


def householder_vector(direction):
    """Unit ``v`` such that ``(I - 2 v v^T) direction`` is a multiple of ``e_0``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._certificate import householder_vector, reflect
    >>> v = householder_vector(np.array([3.0, 4.0]))
    >>> reflect(v, np.array([[3.0], [4.0]])).round(12).ravel()
    array([-5.,  0.])
    """
    v = np.array(direction, dtype=np.float64)
    v[0] += np.copysign(np.linalg.norm(v), v[0])
    return v / np.linalg.norm(v)


def reflect(v, rows):
    """``(I - 2 v v^T) rows`` for a unit ``v`` (``rows`` of shape ``(n, k)``)."""
    return rows - 2.0 * np.outer(v, v @ rows)


def deflated_kernel(kernel, direction):
    """The kernel in a basis whose first vector is ``direction``, without that
    vector's row and column: ``(Q K Q)[1:, 1:]`` with ``Q`` the reflection of
    :func:`householder_vector`. When ``K direction = 0`` (a kernel centered with
    these row weights) the two hold the same non-zero eigenvalues, and the
    deflated one has full rank when the rest of ``K`` does. Returns ``(block, v)``.
    """
    v = householder_vector(direction)
    image = kernel @ v
    # Q K Q = K - 2 v w^T - 2 w v^T with w = K v - (v^T K v) v
    image -= float(v @ image) * v
    # (2 v) w^T is 2 (v w^T) exactly: one n x n temporary at a time, not two
    rotated = kernel - np.outer(2.0 * v, image)
    rotated -= np.outer(image, 2.0 * v)
    return rotated[1:, 1:], v


class _FeatureSpan:
    """The span of the training features, by an orthonormal basis of the null space
    of the lifted Gram matrix or of its range (whichever is smaller)."""

    def __init__(self, basis, spans_range, feature_mean, layout, token_scale):
        self.basis, self.spans_range = basis, spans_range
        self.feature_mean, self.layout, self.token_scale = (
            feature_mean,
            layout,
            token_scale,
        )
        # (only used when centered: see _span_scaled)
        self.origin_inside = _origin_inside(
            np.linalg.norm(self._outside(feature_mean[None, :])),
            np.linalg.norm(feature_mean),
        )

    def _outside(self, features):
        projection = features @ self.basis
        if self.spans_range:
            return features - projection @ self.basis.T
        return projection

    def outside_fraction(self, sequences):
        scaled, mean_factors = _span_scaled(sequences, self)
        features = self.layout.features(scaled)
        uncentered = np.linalg.norm(features, axis=1)
        if np.any(mean_factors):
            features -= np.outer(
                _per_row(mean_factors, len(features)), self.feature_mean
            )
        outside = self._outside(features)
        total = np.maximum(np.linalg.norm(features, axis=1), uncentered)
        return _ratio(np.linalg.norm(outside, axis=1), total)


class _KernelSpan:
    """The span of the training features through the kernel (dual solver): the
    squared distance of ``phi(x)`` to the span is ``k(x, x) - k_x^T pinv(K) k_x``,
    the kernel centered (with the row weights) when an intercept was fitted."""

    def __init__(
        self, pairs, queries, weights, centering, layout, token_scale, factor=None,
        reflection=None,
    ):
        self.pairs, self.queries, self.weights = pairs, queries, weights
        self.centering, self.layout, self.token_scale = centering, layout, token_scale
        # Upper Cholesky factor U of a full-rank kernel (U^T U): then
        # k_x^T K^{-1} k_x = ||U^{-T} k_x||^2, and `weights` is None. With
        # `reflection`, U factors the deflated centered kernel (deflated_kernel),
        # and k_x is rotated the same way first (its first coordinate is zero: the
        # centered k_x is orthogonal to the row weights).
        self.factor = factor
        self.reflection = reflection
        self.origin_inside = True
        if centering is not None:
            # the mean m against the centered rows: <m, r_i phi_i - r_i m>
            row_scale, row_terms, grand = centering
            inside = self._inside((row_terms - grand * row_scale)[None, :])[0]
            self.origin_inside = _origin_inside(
                np.sqrt(max(grand - inside, 0.0)), np.sqrt(max(grand, 0.0))
            )

    @property
    def centered(self):
        return self.centering is not None

    def _inside(self, cross):
        """``k_x^T pinv(K) k_x`` for the rows ``k_x`` of ``cross``."""
        if self.factor is not None:
            cross = cross.T
            if self.reflection is not None:
                cross = reflect(self.reflection, cross)[1:]
            coordinates = scipy.linalg.solve_triangular(
                self.factor, cross, trans="T", check_finite=False
            )
            return np.einsum("rn,rn->n", coordinates, coordinates)
        return np.einsum("nr,nr->n", *(2 * [cross @ self.weights]))

    def outside_fraction(self, sequences):
        scaled, mean_factors = _span_scaled(sequences, self)
        pairs, queries = self.layout.pairs(scaled)
        cross = lifted_kernel(pairs, queries, self.pairs, self.queries)
        own = np.einsum("nk,nk->n", pairs, pairs) * np.einsum(
            "ne,ne->n", queries, queries
        )
        uncentered = own
        if self.centering is not None:
            row_scale, row_terms, grand = self.centering
            total = row_scale @ row_scale
            # the mean in each input's units (see _span_scaled)
            factors = _per_row(mean_factors, len(queries))
            mean_products = cross @ row_scale / total  # mean^T phi_x
            own = own - 2 * factors * mean_products + factors**2 * grand
            cross = (
                cross
                - np.outer(mean_products, row_scale)
                - np.outer(factors, row_terms - grand * row_scale)
            )
        inside = self._inside(cross)
        return _ratio(
            np.sqrt(np.maximum(own - inside, 0.0)),
            np.sqrt(np.maximum(np.maximum(own, uncentered), 0.0)),
        )


def _origin_inside(outside, norm):
    """Whether the origin lies in the affine hull of the training features: the
    mean's component outside the hull's directions, ``outside``, is at most the
    covers tolerance of its norm (a zero input is covered)."""
    return bool(outside <= _COVERS_RTOL * norm)


def _span_scaled(sequences, span):
    """Inputs scaled for a span test, and for each the factor ``c`` the training
    mean is multiplied by in its units (the test is of ``phi(x) - c mu`` against
    the span of the training features, centered when ``span.centered``).

    The fraction outside the span does not depend on the scale of the input, so
    each sequence is brought near 1 by its own power of two (exact), ``c = 0``:
    one scale for the whole batch would leave the features of its smaller
    sequences zero by underflow, and those covered. So also with centered
    features when the origin lies in their affine hull: its directions then hold
    ``mu``, and ``phi(x) - mu`` lies in them iff ``phi(x)`` does, which is tested
    instead (for an input far smaller than the mean, ``phi(x) - mu`` is ``-mu``
    to rounding, inside whatever ``phi(x)``). Else the centered features are in
    the training scale: a sequence larger than it is brought down to it by a
    power of two ``s``, ``c = s^3``, so that its features and their norms do not
    overflow (``phi(s x) - s^3 mu = s^3 (phi(x) - mu)``); smaller ones are not
    scaled up, where the mean would overflow."""
    if not span.centered or span.origin_inside:
        return to_unit(sequences, (1, 2))[0], np.zeros(len(sequences))
    sequences = sequences * span.token_scale
    exponents = np.maximum(np.frexp(np.abs(sequences).max(axis=(1, 2)))[1], 0)
    return np.ldexp(sequences, -exponents[:, None, None]), np.ldexp(1.0, -3 * exponents)


def _per_row(values, n_rows):
    """Per-sequence ``values`` repeated for each of a sequence's rows (one per
    position with ``positions="all"``, rows ``i * n_tokens + t``)."""
    return np.repeat(values, n_rows // len(values))


def _ratio(outside, total):
    """``outside / total``, 0 where ``total`` is 0. ``total`` is the larger of the
    input's features' norm and, when the span is centered, of their centered norm:
    the centering leaves rounding of ``eps`` times the former, which relative to
    the latter alone (an input at the training mean, as every training sequence
    is when they are identical) would count as a component outside the span."""
    return np.divide(outside, total, out=np.zeros_like(outside), where=total > 0)


@dataclass(frozen=True)
class IdentifiabilityCertificate:
    r"""Whether data pins down the function of every best-fitting model.

    Made by :func:`certify` or by fitting an estimator (its ``certificate_``).
    Truthy exactly when ``identifiable``.

    Attributes
    ----------
    identifiable : bool
        ``min_eigenvalue > tol * max_eigenvalue`` (``rank == n_lifted_features``):
        the lifted second moment is positive definite, so every empirical risk
        minimizer computes the same function on all inputs. With an intercept
        (or ``convention="paper"``) the threshold is at least the centering's
        rounding, ``tol`` times the uncentered features' scale times
        ``max(1, (n + 4) / p)`` for ``n`` rows, so nearly identical sequences
        are rank 0.
    min_eigenvalue, max_eigenvalue : float
        Extreme eigenvalues of
        :math:`\Lambda = \Phi^\top W \Phi / \sum_i w_i`, the second moment of
        the lifted features :math:`\Phi` (centered when the estimator fits an
        intercept; :math:`W` the diagonal of sample weights, all ones by
        default), in the data's units: they scale as :math:`|X|^6`, and beyond
        about :math:`|X| \sim 10^{51}` (below :math:`10^{-51}`) they overflow to
        inf (underflow to 0), while ``identifiable``, ``rank`` and ``covers``,
        computed on the data rescaled by a power of two, stay right.
    rank : int or None
        Number of eigenvalues above ``tol * max_eigenvalue``; None when only
        estimates of the extreme eigenvalues are known (``exact=False``) and they
        do not show full rank.
    n_lifted_features : int
        :math:`p = d^2 (d + 1) / 2`, the rank needed for identifiability.
    n_samples : int
        Training rows with a positive weight: sequences, or positions (without
        left padding) for a fit with ``positions="all"``.
    tol : float
        Relative eigenvalue tolerance used.
    token_dim : int
        The token dimension ``d`` of the data.
    exact : bool
        True when the rank comes from a decomposition (``certify``, solvers
        ``"normal"`` and ``"dual"``, and ``"cg"`` for ``p <= 64``); False for the
        Lanczos estimates of solver ``"cg"``, accurate to about ``tol`` of
        ``max_eigenvalue``, and for a ``"cg"`` fit whose LSQR stopped at
        ``max_iter`` (a ``ConvergenceWarning``): its certificate claims no
        identifiability (``identifiable=False``, ``rank=None`` unless the
        spectrum shows a deficient rank), since the fitted model is not a
        minimizer; ``certify(X)`` gives the data's. With ``certify`` and
        ``"normal"`` above ``p = 300`` (and ``"dual"`` above 300 rows, fewer than
        ``p``), a matrix whose Cholesky factorization succeeds has its extreme
        eigenvalues estimated by block Lanczos from the factor, within about
        ``1e-2`` relative (``min_eigenvalue`` from above), and full rank
        established by the factorization and those estimates; every other case
        computes the whole spectrum.

    See Also
    --------
    certify : The certificate of a data set, without fitting.

    Examples
    --------
    Gaussian sequences certify once there are as many as lifted features
    (``p = 40`` for ``d = 4``); then every input is covered:

    >>> import numpy as np
    >>> from sklearn_linattn import certify
    >>> X = np.random.default_rng(0).normal(size=(60, 8, 4))
    >>> certificate = certify(X)
    >>> bool(certificate), certificate.rank, certificate.n_lifted_features
    (True, 40, 40)
    >>> certificate.covers(np.ones((2, 20, 4))).tolist()
    [True, True]

    With fewer, other minimizers compute other functions; ``covers`` tells
    which inputs they still agree on (here the training sequences themselves):

    >>> few = certify(X[:30])
    >>> bool(few), few.rank
    (False, 30)
    >>> few.covers(X[:2]).tolist(), few.covers(np.ones((1, 20, 4))).tolist()
    ([True, True], [False])
    """

    identifiable: bool
    min_eigenvalue: float
    max_eigenvalue: float
    rank: int | None
    n_lifted_features: int
    n_samples: int
    tol: float
    token_dim: int
    exact: bool = True
    # How `covers` tests membership in the span of the training features; None when
    # every input is covered (identifiable) or the span is unknown (estimates).
    _span: object = field(default=None, repr=False, compare=False)
    _positions: str = field(default="last", repr=False, compare=False)

    def __bool__(self):
        return bool(self.identifiable)

    @classmethod
    def _from_spectrum(
        cls,
        spectrum,
        weight_sum,
        n_observations,
        token_dim,
        rescaling,
        feature_mean=None,
        layout=None,
    ):
        """Certificate of a lifted Gram matrix ``sum(w) * Lambda`` (rescaled units)
        from its spectrum."""
        p = spectrum.size
        rank = spectrum.rank
        layout = layout or _RowLayout("last", True, token_dim)
        span = None
        if rank < p:
            kept = spectrum.eigenvalues > spectrum.threshold
            spans_range = rank < p - rank
            columns = kept if spans_range else ~kept
            basis = np.ascontiguousarray(spectrum.eigenvectors[:, columns])
            mean = np.zeros(p) if feature_mean is None else feature_mean
            span = _FeatureSpan(basis, spans_range, mean, layout, rescaling.token)
            span.centered = feature_mean is not None
        weight_sum = weight_sum if weight_sum > 0 else np.inf
        return cls(
            identifiable=rank == p,
            min_eigenvalue=rescaling.eigenvalue(
                max(spectrum.eigenvalues[0], 0.0) / weight_sum
            ),
            max_eigenvalue=rescaling.eigenvalue(
                max(spectrum.eigenvalues[-1], 0.0) / weight_sum
            ),
            rank=rank,
            n_lifted_features=p,
            n_samples=int(n_observations),
            tol=float(spectrum.tol),
            token_dim=int(token_dim),
            _span=span,
            _positions=layout.positions,
        )

    @classmethod
    def _from_kernel(
        cls,
        spectrum,
        pairs,
        queries,
        rescaling,
        weight_sum,
        n_observations,
        centering=None,
        layout=None,
        reflection=None,
    ):
        """Certificate from the spectrum of the kernel matrix (dual solver).

        The non-zero eigenvalues of ``A A^T`` and ``A^T A`` coincide, so the ``p``
        eigenvalues of ``Lambda`` are the ``p`` largest of the kernel's (padded
        with zeros when there are fewer rows than features). With ``reflection``
        the spectrum is that of the deflated centered kernel
        (:func:`deflated_kernel`), which lacks only the centered kernel's zero.
        """
        n_rows, d = queries.shape
        p = n_lifted_features(d)
        layout = layout or _RowLayout("last", True, d)
        eigenvalues = spectrum.eigenvalues  # ascending; estimates only when n_rows < p
        rank = spectrum.rank
        if n_rows >= p:
            every = eigenvalues
            if reflection is not None:  # the deflated direction's zero
                every = np.sort(np.append(eigenvalues, 0.0))
            smallest = every[n_rows - p]
        else:
            smallest = 0.0
        span = None
        if rank < p and spectrum.eigenvectors is None:  # full-rank kernel
            span = _KernelSpan(
                pairs,
                queries,
                None,
                centering,
                layout,
                rescaling.token,
                factor=spectrum.factor,
                reflection=reflection,
            )
        elif rank < p:
            kept = eigenvalues > spectrum.threshold
            weights = spectrum.eigenvectors[:, kept] / np.sqrt(eigenvalues[kept])
            if reflection is not None:
                weights = reflect(
                    reflection, np.vstack([np.zeros((1, rank)), weights])
                )
            span = _KernelSpan(
                pairs, queries, weights, centering, layout, rescaling.token
            )
        weight_sum = weight_sum if weight_sum > 0 else np.inf
        return cls(
            identifiable=rank == p,
            min_eigenvalue=rescaling.eigenvalue(max(smallest, 0.0) / weight_sum),
            max_eigenvalue=rescaling.eigenvalue(max(eigenvalues[-1], 0.0) / weight_sum),
            rank=rank,
            n_lifted_features=p,
            n_samples=int(n_observations),
            tol=float(spectrum.tol),
            token_dim=int(d),
            _span=span,
            _positions=layout.positions,
        )

    def covers(self, X):
        """Which inputs get the same prediction from every minimizer.

        An input is covered when its lifted features lie in the span of the training
        features (after subtracting their mean when an intercept was fitted): the
        component outside it is at most ``1e-6`` of their norm (with an intercept,
        of the larger of their norm and their centered norm; when the origin lies
        in the affine hull of the training features, ``phi(x) - mean`` is in the
        hull's directions iff ``phi(x)`` is, which is tested instead, relative to
        its own norm: an input far smaller than the mean is not covered for being
        close to ``-mean``). Each input is rescaled by its own power of two
        first, so the answer for one does not depend on the others in ``X``, and
        large ones do not overflow. On identifiable data
        every input is covered. The span is the numerical one of the rank: the
        eigenvectors whose eigenvalues exceed ``tol * max_eigenvalue``. Along
        each of the others a training sequence of weight ``w_i`` has a component
        of at most ``sqrt(tol * max_eigenvalue * sum(w) / w_i)``, about
        ``sqrt(tol)`` times the largest training features; so it is covered
        unless its features are far smaller than those and the spectrum runs
        down into the tolerance (token coordinates of very different scales).
        For a certificate of ``certify(X, convention="paper")`` the span is the
        affine hull of the training features (the covariance is centered).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)

        Returns
        -------
        covered : ndarray of shape (n_samples,) or (n_samples, n_tokens), bool
            One entry per sequence, or per position for a certificate of a fit with
            ``positions="all"``.

        Raises
        ------
        ValueError
            For a certificate of estimated eigenvalues (``exact=False``) that does
            not show identifiability: the span of the training features is unknown.
        """
        sequences = validate_sequences(X, token_dim=self.token_dim)
        if is_dask_array(sequences):  # a bool per input: computed here
            sequences = check_sequence_values(sequences.compute())
        n_samples, n_tokens, _ = sequences.shape
        shape = (n_samples,) if self._positions == "last" else (n_samples, n_tokens)
        if self.identifiable:
            return np.ones(shape, dtype=bool)
        if self._span is None:
            lacking = (
                "a certificate constructed directly (not by certify or a fit) does "
                "not hold" if self.exact else "an estimated certificate "
                "(solver='cg', exact=False) does not have"
            )
            raise ValueError(
                f"covers needs the span of the training features, which {lacking}; "
                "use certify(X) or fit with solver='normal' or 'dual'."
            )
        fraction = self._span.outside_fraction(sequences)
        return (fraction <= _COVERS_RTOL).reshape(shape)


def estimate_extreme_eigenvalues(
    operator,
    weight_sum,
    n_observations,
    token_dim,
    rescaling,
    tol,
    max_iter,
    trusted,
    feature_mean=None,
    layout=None,
    scale=0.0,
):
    """Certificate of ``A^T A`` for a lifted operator ``A`` (solver ``"cg"``).

    For ``p <= 64`` the Gram is formed from ``p`` products and decomposed
    (``exact=True``). Otherwise the largest eigenvalue comes from Lanczos directly,
    the smallest as ``largest - top eigenvalue of (largest I - A^T A)``, which
    converges far faster than asking Lanczos for the bottom of the spectrum. When
    Lanczos does not converge, or ``trusted`` is False (LSQR did not converge), the
    certificate claims no identifiability. ``scale`` floors the rank threshold
    (see :class:`GramSpectrum`): a centered ``A`` whose largest eigenvalue is at
    most ``tol * scale`` is rounding of identical rows, rank 0.
    """
    n_lifted = operator.shape[1]
    p_tol = default_rank_tol(n_lifted)

    def estimated(smallest, largest, tol, trusted):
        return _estimated(
            smallest, largest, weight_sum, n_observations, token_dim, rescaling, tol,
            trusted, scale,
        )

    if n_lifted <= _DENSE_CERTIFICATE_FEATURES:
        gram = np.stack(
            [operator.rmatvec(operator.matvec(row)) for row in np.eye(n_lifted)]
        )
        spectrum = gram_spectrum((gram + gram.T) / 2, p_tol, scale=scale)
        if trusted or not spectrum.full_rank:
            return IdentifiabilityCertificate._from_spectrum(
                spectrum,
                weight_sum,
                n_observations,
                token_dim,
                rescaling,
                feature_mean=feature_mean,
                layout=layout,
            )
        eigenvalues = spectrum.eigenvalues
        return estimated(eigenvalues[0], eigenvalues[-1], p_tol, trusted=False)

    def gram_product(vector):
        return operator.rmatvec(operator.matvec(vector))

    def top_eigenvalue(matvec):
        value = _top_eigenvalue(matvec, n_lifted, tol, max(max_iter, 1000))
        if value is None:
            warnings.warn(
                "The Lanczos estimate of the certificate's eigenvalues did not "
                "converge; the certificate claims no identifiability.",
                ConvergenceWarning,
                stacklevel=5,
            )
        return value

    certificate_tol = max(p_tol, tol)
    largest = top_eigenvalue(gram_product)
    if largest is None or largest <= 0:
        return estimated(0.0, largest or 0.0, certificate_tol, trusted=False)
    if n_observations < n_lifted:
        return estimated(0.0, largest, certificate_tol, trusted)
    top = top_eigenvalue(
        lambda vector: largest * np.ravel(vector) - gram_product(vector)
    )
    smallest = 0.0 if top is None else max(largest - top, 0.0)
    return estimated(smallest, largest, certificate_tol, trusted and top is not None)


def _estimated(
    smallest,
    largest,
    weight_sum,
    n_observations,
    token_dim,
    rescaling,
    tol,
    trusted,
    scale=0.0,
):
    """Certificate from estimates of the extreme eigenvalues of ``A^T A``
    (``scale``: the floor of the rank threshold, see :class:`GramSpectrum`)."""
    p = n_lifted_features(token_dim)
    threshold = tol * max(largest, scale)
    identifiable = trusted and n_observations >= p and smallest > threshold
    rank = p if identifiable else None
    if largest <= threshold:  # every eigenvalue at most the largest: all zero
        rank = 0
    weight_sum = weight_sum if weight_sum > 0 else np.inf
    return IdentifiabilityCertificate(
        identifiable=bool(identifiable),
        min_eigenvalue=rescaling.eigenvalue(smallest / weight_sum),
        max_eigenvalue=rescaling.eigenvalue(largest / weight_sum),
        rank=rank,
        n_lifted_features=p,
        n_samples=int(n_observations),
        tol=float(tol),
        token_dim=int(token_dim),
        exact=False,
    )


def _check_tol(tol):
    if tol is None:
        return None
    if isinstance(tol, bool) or not isinstance(tol, Real) or not 0 <= tol < 1:
        raise ValueError(f"tol must be a real number in [0, 1), got {tol!r}.")
    return float(tol)


def _check_token_dim(token_dim):
    if token_dim is None:
        return None
    if isinstance(token_dim, bool) or not isinstance(token_dim, Integral):
        raise TypeError(
            f"token_dim must be a positive int or None, got {token_dim!r} "
            f"({type(token_dim).__name__})."
        )
    if token_dim < 1:
        raise ValueError(f"token_dim must be a positive int or None, got {token_dim}.")
    return int(token_dim)


def certify(X, token_dim=None, tol=None, convention="isometric"):
    """Identifiability certificate of a data set, without fitting.

    Computes the eigenvalues of ``Lambda = (1/N) sum_i phi(Z_i) phi(Z_i)^T`` over
    the lifted features, the way ``solver="auto"`` would: from the ``p x p`` Gram
    (streamed in chunks) when there are at least ``p`` sequences, else from the
    ``N x N`` kernel, without forming the Gram (where ``"auto"`` would choose
    ``"cg"``, from the smaller of the two: the certificate is always exact).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        Sequences, tokens as rows, the query last. A Dask array chunked along samples
        is processed blockwise on its workers.
    token_dim : int, optional
        Needed for 2-D ``X``; without it a 2-D row is one token.
    tol : float, optional
        Relative tolerance: eigenvalues at most ``tol * max_eigenvalue`` count as
        zero. Default ``p * eps`` (``numpy.linalg.matrix_rank``'s rule for a Gram
        matrix), about ``1e-13`` for ``d = 8``. A smaller ``tol`` (0 included)
        counts the eigenvalues' rounding, about ``eps * max_eigenvalue``, as
        rank: rank-deficient data can then look identifiable.
    convention : {"isometric", "paper"}, default="isometric"
        ``"isometric"``: the package's ``Lambda``, uncentered, of the isometric
        features (off-diagonal ``S[b, c]`` times ``sqrt(2)``), the matrix of the
        identifiability theorem. ``"paper"``: the number the paper's figures plot,
        the covariance (centered, ``N / (N - 1)``) of the unscaled features
        ``S[b, c] q[e]``; its eigenvalues are at most ``N / (N - 1)`` times
        those (in practice smaller), with the same zeros on the paper's data
        (see the theory page, "The authors' conventions"). Being
        centered, its rank is that of the affine hull of the training features
        (one less than the span's on generic data, 0 for identical sequences) and
        its ``covers`` tests membership in that hull.

    Returns
    -------
    certificate : IdentifiabilityCertificate

    Raises
    ------
    ValueError
        When that matrix, with the copies its eigendecomposition needs, would
        not fit in the available memory (named in the message, with what to
        reduce).

    Notes
    -----
    One-hot tokens are never identifiable for ``d >= 2``: with ``z_t`` one-hot,
    ``S`` is diagonal (so every feature with ``b < c`` is zero) and the query's
    features ``S[b, b] q[e]`` span at most the diagonal part, far fewer than ``p``
    directions. Tokens confined to a subspace of dimension ``r < d``, or fewer
    samples than ``p``, are not identifiable either. The verdict does not depend on
    the scale of ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn import certify
    >>> rng = np.random.default_rng(0)
    >>> certify(rng.normal(size=(200, 5, 3))).identifiable  # p = 18
    True
    >>> certify(rng.normal(size=(10, 5, 3))).rank  # fewer samples than p
    10
    """
    token_dim = _check_token_dim(token_dim)
    tol = _check_tol(tol)
    if convention not in ("isometric", "paper"):
        raise ValueError(
            f'convention must be "isometric" or "paper", got {convention!r}.'
        )
    data = lifted_data(validate_sequences(X, token_dim=token_dim))
    if tol is None:
        tol = default_rank_tol(data.n_lifted)
    solver = choose_solver(data.n_rows, data.n_lifted, distributed=data.is_distributed)
    if solver == "cg":  # beyond the fits' reference budget: the smaller exact form
        small = data.n_rows < data.n_lifted and not data.is_distributed
        solver = "dual" if small else "normal"
    _check_certify_memory(data, "normal" if convention == "paper" else solver)
    if convention == "paper":
        return _paper_certificate(data, tol)
    if solver == "dual":
        pairs, queries = data.compact_rows()
        with dense_threads(data.n_rows):
            spectrum = kernel_spectrum(
                lifted_kernel(pairs, queries), tol, data.n_lifted
            )
        return IdentifiabilityCertificate._from_kernel(
            spectrum, pairs, queries, data.rescaling, float(data.n_rows), data.n_rows
        )
    statistics = data.statistics()
    gram = statistics.normal_equations(fit_intercept=False)[0]
    with dense_threads(data.n_lifted):
        spectrum = gram_spectrum(gram, tol)
    return IdentifiabilityCertificate._from_spectrum(
        spectrum,
        statistics.weight_sum,
        statistics.n_observations,
        data.token_dim,
        data.rescaling,
    )


def _check_certify_memory(data, solver):
    """A ValueError before ``certify`` decomposes a matrix (with its working
    copies) larger than the available memory."""
    size = data.n_rows if solver == "dual" else data.n_lifted
    needed = _COPIES * 8.0 * size**2
    available = available_memory()
    if needed <= available:
        return
    matrix = "kernel" if solver == "dual" else "Gram matrix"
    raise ValueError(
        f"certify would need about {_size(needed)} of memory for the {size:,} x "
        f"{size:,} {matrix} and its eigendecomposition, more than the "
        f"{_size(available)} available ({data.n_rows:,} rows, p = "
        f"{data.n_lifted:,} lifted features for token dimension d = "
        f"{data.token_dim}; the kernel is n x n, the Gram p x p). Certify fewer "
        "sequences, or reduce the token dimension first, e.g. "
        "TokenwiseTransformer(PCA(n_components=k)); a fit with solver='cg' "
        "estimates the certificate's extreme eigenvalues without either matrix."
    )


def _paper_certificate(data, tol):
    """The authors' number: eigenvalues of the covariance of the unscaled lifted
    features, ``D^-1 (G - N mu mu^T) D^-1 / (N - 1)``, ``D`` the isometric weights.

    The covariance is centered, so its null space is that of the affine hull of
    the training features: ``covers`` tests membership in that hull (as for a fit
    with an intercept), and the rank threshold has the centering's rounding floor
    (``max(1, (n + 4) / p)`` times the uncentered scale for ``n`` rows), as the
    solvers' centered Grams do: identical
    sequences have rank 0, not the rank of the rounding left by the centering.
    """
    statistics = data.statistics()
    n = statistics.weight_sum
    gram, _, _, mean, _ = statistics.normal_equations(fit_intercept=True)
    d = data.token_dim
    rows, cols = np.triu_indices(d)
    unscale = np.repeat(np.where(rows == cols, 1.0, np.sqrt(0.5)), d)
    divisor = max(n - 1, 1)
    covariance = gram * np.outer(unscale, unscale) / divisor
    # the uncentered diagonal, in the covariance's units: centering leaves rounding
    # of about eps times it
    uncentered = (np.diag(gram) + n * mean**2) * unscale**2 / divisor
    scale = centering_floor(
        np.max(uncentered, initial=0.0), statistics.n_observations, data.n_lifted
    )
    with dense_threads(data.n_lifted):
        spectrum = gram_spectrum(covariance, tol, scale=scale)
    if spectrum.eigenvectors is not None:
        spectrum.eigenvectors = _isometric_eigenbases(spectrum, unscale)
    return IdentifiabilityCertificate._from_spectrum(
        spectrum,
        1.0,
        statistics.n_observations,
        d,
        data.rescaling,
        feature_mean=mean,
    )


def _isometric_eigenbases(spectrum, unscale):
    """Orthonormal bases of the range and the null space of ``D C D`` (the
    isometric features' centered Gram, up to a factor), in the columns where
    ``spectrum`` (of the covariance ``C`` of the unscaled features ``D^-1 phi``,
    ``D^-1 = diag(unscale)``) holds its kept and its zero eigenvectors: ``C v = 0``
    iff ``(D C D) D^-1 v = 0``, so the null space is ``D^-1 N`` and the range,
    its orthogonal complement, ``D R``. ``covers`` measures the isometric features
    against them."""
    vectors = spectrum.eigenvectors
    kept = spectrum.eigenvalues > spectrum.threshold
    bases = np.empty_like(vectors)
    for columns, rows_scale in ((kept, 1.0 / unscale), (~kept, unscale)):
        if np.any(columns):
            scaled = vectors[:, columns] * rows_scale[:, None]
            bases[:, columns] = np.linalg.qr(scaled)[0]
    return bases
