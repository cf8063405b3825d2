"""The lifted least-squares problem (Algorithm 1 of PAPER.md) and its three solvers.

- ``"normal"``: the normal equations need only ``Phi^T Phi``, ``Phi^T y``, the column
  sums and the sample count, which add up over chunks of samples; the data is streamed
  chunk by chunk and memory stays at one chunk of features plus ``O(p^2)``.
- ``"dual"``: the kernel form, ``n_samples x n_samples``, for fewer samples than
  lifted features.
- ``"cg"``: LSQR with structured products, never forming ``Phi`` or a Gram matrix,
  for token dimensions where ``p x p`` does not fit in memory.
"""

import os
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
from scipy.linalg.blas import dsyrk
from sklearn.exceptions import ConvergenceWarning

from ._lift import (
    lifted_features,
    lifted_kernel,
    lifted_matvec,
    lifted_rmatvec,
    n_lifted_features,
)

__all__ = [
    "CenteredLiftedOperator",
    "GramSpectrum",
    "KernelSolution",
    "LiftedStatistics",
    "accumulate_statistics",
    "available_memory",
    "choose_solver",
    "default_batch_size",
    "default_rank_tol",
    "estimate_extreme_eigenvalues",
    "gram_spectrum",
    "lifted_chunks",
    "lifted_predict",
    "solve_dual",
    "solve_iterative",
    "solve_normal_equations",
    "operator_weight",
]

# Memory for one chunk of lifted features when batch_size=None: at least 32 MiB, at
# most 256 MiB, and within that 2 p rows, which the symmetric rank-k update needs to
# run near BLAS speed (measured in benchmarks/bench_solvers.py, section 2).
_CHUNK_BYTES = (32 * 2**20, 256 * 2**20)


def default_batch_size(n_lifted):
    """Samples per chunk: ``2 p`` rows, kept between 32 and 256 MiB of features."""
    row_bytes = 8 * n_lifted
    low, high = (bound // row_bytes for bound in _CHUNK_BYTES)
    return max(1, min(max(2 * n_lifted, low), high))


class LiftedStatistics:
    """Running sums that determine the lifted least-squares problem.

    Parameters
    ----------
    n_lifted : int
        Number of lifted features ``p``.
    n_outputs : int

    Attributes
    ----------
    gram_upper : ndarray of shape (p, p), Fortran-ordered
        Upper triangle of ``Phi^T Phi`` (the lower triangle is not maintained).
    moment : ndarray of shape (p, n_outputs)
        ``Phi^T y``.
    feature_sum : ndarray of shape (p,)
    target_sum : ndarray of shape (n_outputs,)
    n_samples : int
    """

    def __init__(self, n_lifted, n_outputs):
        self.gram_upper = np.zeros((n_lifted, n_lifted), order="F")
        self.moment = np.zeros((n_lifted, n_outputs))
        self.feature_sum = np.zeros(n_lifted)
        self.target_sum = np.zeros(n_outputs)
        self.n_samples = 0

    def add(self, features, targets):
        """Add a chunk: ``features`` (m, p) C-ordered, ``targets`` (m, n_outputs)."""
        # Symmetric rank-m update of the upper triangle; features.T is Fortran-ordered,
        # so BLAS reads it in place.
        self.gram_upper = dsyrk(
            1.0,
            features.T,
            beta=1.0,
            c=self.gram_upper,
            trans=0,
            lower=0,
            overwrite_c=1,
        )
        # Phi^T y and the column sums in one pass: Phi^T [y, 1].
        augmented = np.ones((targets.shape[0], targets.shape[1] + 1))
        augmented[:, :-1] = targets
        products = features.T @ augmented
        self.moment += products[:, :-1]
        self.feature_sum += products[:, -1]
        self.target_sum += targets.sum(axis=0)
        self.n_samples += features.shape[0]

    def merge(self, other):
        """Add the statistics of other samples (sums add up): returns ``self``."""
        self.gram_upper += other.gram_upper
        self.moment += other.moment
        self.feature_sum += other.feature_sum
        self.target_sum += other.target_sum
        self.n_samples += other.n_samples
        return self

    def normal_equations(self, fit_intercept):
        """The (centered, when fitting an intercept) normal equations.

        Returns
        -------
        gram : ndarray of shape (p, p)
            ``Phi^T Phi``, or ``(Phi - mean)^T (Phi - mean)`` with an intercept.
        moment : ndarray of shape (p, n_outputs)
        feature_mean : ndarray of shape (p,)
            Zero without an intercept.
        target_mean : ndarray of shape (n_outputs,)
            Zero without an intercept.
        """
        upper = np.triu(self.gram_upper)
        gram = upper + np.triu(upper, 1).T
        moment = self.moment.copy()
        if not fit_intercept:
            return gram, moment, np.zeros(gram.shape[0]), np.zeros(moment.shape[1])
        n = self.n_samples
        feature_mean = self.feature_sum / n
        target_mean = self.target_sum / n
        gram -= n * np.outer(feature_mean, feature_mean)
        moment -= n * np.outer(feature_mean, target_mean)
        return gram, moment, feature_mean, target_mean


def accumulate_statistics(
    sequences, targets, batch_size=None, statistics=None, n_threads=1, progress=None
):
    """Stream the lifted features of ``sequences`` into sufficient statistics.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64, C-ordered
    targets : ndarray of shape (n_samples, n_outputs), float64
    batch_size : int, optional
        Samples per chunk; default :func:`default_batch_size`.
    statistics : LiftedStatistics, optional
        Statistics to add to; new ones by default.
    n_threads : int, default=1
        Threads computing the lifted features of a chunk.
    progress : callable, optional
        Called as ``progress(n_done, n_samples)`` after each chunk.

    Returns
    -------
    statistics : LiftedStatistics
    """
    n_samples, _, token_dim = sequences.shape
    if statistics is None:
        statistics = LiftedStatistics(n_lifted_features(token_dim), targets.shape[1])
    for start, stop, features in lifted_chunks(sequences, batch_size, n_threads):
        statistics.add(features, targets[start:stop])
        if progress is not None:
            progress(stop, n_samples)
    return statistics


def lifted_chunks(sequences, batch_size=None, n_threads=1):
    """Yield ``(start, stop, lifted features of sequences[start:stop])`` by chunks.

    One buffer of ``batch_size`` rows (default :func:`default_batch_size`) is reused,
    so each yielded array is overwritten by the next.
    """
    n_samples, _, token_dim = sequences.shape
    n_lifted = n_lifted_features(token_dim)
    if batch_size is None:
        batch_size = default_batch_size(n_lifted)
    batch_size = max(1, min(batch_size, n_samples))
    buffer = np.empty((batch_size, n_lifted))
    for start in range(0, n_samples, batch_size):
        stop = min(start + batch_size, n_samples)
        features = lifted_features(
            sequences[start:stop], out=buffer[: stop - start], n_threads=n_threads
        )
        yield start, stop, features


def lifted_predict(sequences, coef, intercept, batch_size=None, n_threads=1):
    """``lifted_features(sequences) @ coef.T + intercept``, chunk by chunk.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64, C-ordered
    coef : ndarray of shape (n_outputs, p)
    intercept : ndarray of shape (n_outputs,)

    Returns
    -------
    predictions : ndarray of shape (n_samples, n_outputs)
    """
    predictions = np.empty((sequences.shape[0], coef.shape[0]))
    for start, stop, features in lifted_chunks(sequences, batch_size, n_threads):
        np.matmul(features, coef.T, out=predictions[start:stop])
    return predictions + intercept


class GramSpectrum:
    """Eigenvalues of a lifted Gram matrix, with eigenvectors when it is singular.

    Parameters
    ----------
    eigenvalues : ndarray of shape (p,), ascending
    eigenvectors : ndarray of shape (p, p) or None
        Present only when some eigenvalue is at most ``threshold``.
    tol : float
        Relative tolerance: eigenvalues at most ``tol`` times the largest count as
        zero.
    """

    def __init__(self, eigenvalues, eigenvectors, tol):
        self.eigenvalues = eigenvalues
        self.eigenvectors = eigenvectors
        self.tol = tol

    @property
    def threshold(self):
        return self.tol * max(self.eigenvalues[-1], 0.0)

    @property
    def rank(self):
        return int(np.count_nonzero(self.eigenvalues > self.threshold))

    @property
    def full_rank(self):
        return self.rank == self.eigenvalues.size


def default_rank_tol(n_lifted):
    """Relative eigenvalue tolerance used when none is given: ``p * eps``.

    An eigenvalue of the lifted Gram at most ``tol * largest eigenvalue`` counts as
    zero, as in :func:`numpy.linalg.matrix_rank`: rounding in the Gram is of order
    ``eps * largest eigenvalue`` per entry.
    """
    return n_lifted * np.finfo(np.float64).eps


def gram_spectrum(gram, tol):
    """Spectrum of a symmetric positive semi-definite Gram matrix.

    Parameters
    ----------
    gram : ndarray of shape (p, p)
    tol : float
        Relative tolerance (see :class:`GramSpectrum`).

    Returns
    -------
    spectrum : GramSpectrum
    """
    # Eigenvalues alone cost about a third of a full decomposition; eigenvectors are
    # needed only on singular data (null space for `covers`, minimum-norm solve).
    spectrum = GramSpectrum(scipy.linalg.eigvalsh(gram, check_finite=False), None, tol)
    if spectrum.full_rank:
        return spectrum
    eigenvalues, eigenvectors = scipy.linalg.eigh(gram, check_finite=False)
    return GramSpectrum(eigenvalues, eigenvectors, tol)


def solve_normal_equations(gram, moment, alpha, spectrum):
    """Solve ``(gram + alpha I) coef = moment`` for the lifted coefficients.

    Cholesky when ``gram + alpha I`` is positive definite; with ``alpha = 0`` and a
    singular Gram, the minimum-norm least-squares solution
    ``pinv(Phi) y = pinv(Phi^T Phi) Phi^T y`` from the eigen-decomposition.

    Parameters
    ----------
    gram : ndarray of shape (p, p)
    moment : ndarray of shape (p, n_outputs)
    alpha : float
    spectrum : GramSpectrum
        Spectrum of ``gram``.

    Returns
    -------
    coef : ndarray of shape (n_outputs, p)
    """
    if alpha > 0 or spectrum.full_rank:
        regularized = gram + alpha * np.eye(gram.shape[0]) if alpha > 0 else gram
        try:
            factor = scipy.linalg.cho_factor(regularized, check_finite=False)
            return scipy.linalg.cho_solve(factor, moment, check_finite=False).T
        except np.linalg.LinAlgError:  # numerically not positive definite after all
            if alpha > 0:
                raise
            eigenvalues, eigenvectors = scipy.linalg.eigh(gram, check_finite=False)
            spectrum = GramSpectrum(eigenvalues, eigenvectors, spectrum.tol)
    kept = spectrum.eigenvalues > spectrum.threshold
    basis = spectrum.eigenvectors[:, kept]
    return ((basis / spectrum.eigenvalues[kept]) @ (basis.T @ moment)).T


# --- solver choice -----------------------------------------------------------------

# Share of the available memory the p x p (normal) or n x n (dual) matrices and their
# decomposition may take (three copies: the matrix, its factor, workspace).
_MEMORY_SHARE = 0.25
_COPIES = 3
_FALLBACK_MEMORY = 4 * 2**30


def available_memory():
    """Memory available to a new allocation, in bytes.

    Linux's ``MemAvailable`` (free memory plus reclaimable page cache), else the
    free physical pages, else 4 GiB.
    """
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return _FALLBACK_MEMORY


def choose_solver(n_samples, n_lifted, memory=None):
    """The solver ``solver="auto"`` uses.

    ``"dual"`` when there are fewer samples than lifted features and the
    ``n_samples x n_samples`` kernel fits; else ``"normal"`` when the ``p x p`` Gram
    matrix fits; else ``"cg"``. "Fits" means three such float64 matrices take at
    most a quarter of :func:`available_memory`.
    """
    budget = _MEMORY_SHARE * (available_memory() if memory is None else memory)
    if n_samples < n_lifted and _COPIES * 8 * n_samples**2 <= budget:
        return "dual"
    if _COPIES * 8 * n_lifted**2 <= budget:
        return "normal"
    return "cg"


# --- dual (kernel) solver ------------------------------------------------------------


@dataclass
class KernelSolution:
    """Lifted coefficients from the kernel form, with what the certificate needs.

    ``eigenvalues`` and ``eigenvectors`` are the spectrum of the (centered) kernel
    matrix; ``kernel_row_means`` and ``kernel_mean`` its centering terms (zero
    without an intercept).
    """

    coef: np.ndarray
    feature_mean: np.ndarray
    target_mean: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    kernel_row_means: np.ndarray
    kernel_mean: float


def solve_dual(pairs, queries, targets, alpha, fit_intercept, tol):
    """Least squares / ridge on the lifted features in kernel form.

    With ``K = Phi_c Phi_c^T`` (centered when fitting an intercept), the coefficients
    are ``Phi_c^T a`` with ``a = (K + alpha I)^{-1} y_c``, or ``a = pinv(K) y_c`` for
    ``alpha = 0``, which gives the minimum-norm least-squares solution.

    Parameters
    ----------
    pairs, queries : ndarrays from :func:`~sklearn_linattn._lift.pair_statistics`
    targets : ndarray of shape (n_samples, n_outputs)
    alpha : float
    fit_intercept : bool
    tol : float
        Relative eigenvalue tolerance of the minimum-norm solve.

    Returns
    -------
    solution : KernelSolution
    """
    n_samples = pairs.shape[0]
    kernel = lifted_kernel(pairs, queries)
    if fit_intercept:
        row_means = kernel.mean(axis=0)
        grand_mean = row_means.mean()
        kernel = kernel - row_means[:, None] - row_means[None, :] + grand_mean
        target_mean = targets.mean(axis=0)
        feature_mean = lifted_rmatvec(pairs, queries, np.ones((n_samples, 1)))[0]
        feature_mean /= n_samples
    else:
        row_means, grand_mean = np.zeros(n_samples), 0.0
        target_mean = np.zeros(targets.shape[1])
        feature_mean = np.zeros(pairs.shape[1] * queries.shape[1])
    centered_targets = targets - target_mean
    eigenvalues, eigenvectors = scipy.linalg.eigh(kernel, check_finite=False)
    if alpha > 0:
        weights = eigenvectors @ (
            (eigenvectors.T @ centered_targets) / (eigenvalues + alpha)[:, None]
        )
    else:
        kept = eigenvalues > tol * max(eigenvalues[-1], 0.0)
        basis = eigenvectors[:, kept]
        weights = basis @ ((basis.T @ centered_targets) / eigenvalues[kept][:, None])
    # Phi_c^T a = Phi^T a - mean * sum(a)
    coef = lifted_rmatvec(pairs, queries, weights) - np.outer(
        weights.sum(axis=0), feature_mean
    )
    return KernelSolution(
        coef,
        feature_mean,
        target_mean,
        eigenvalues,
        eigenvectors,
        row_means,
        float(grand_mean),
    )


# --- matrix-free (LSQR) solver -------------------------------------------------------


class CenteredLiftedOperator(scipy.sparse.linalg.LinearOperator):
    """``Phi - 1 mean^T`` as a linear operator, from the compact statistics.

    ``feature_mean`` starts at zero (plain ``Phi``); :func:`solve_iterative` sets it
    when an intercept is fitted.
    """

    def __init__(self, pairs, queries, feature_mean=None):
        n_lifted = pairs.shape[1] * queries.shape[1]
        self.pairs, self.queries = pairs, queries
        self.feature_mean = np.zeros(n_lifted) if feature_mean is None else feature_mean
        super().__init__(np.float64, (pairs.shape[0], n_lifted))

    def _matvec(self, vector):
        vector = np.ravel(vector)
        products = lifted_matvec(self.pairs, self.queries, vector[None])[:, 0]
        return products - self.feature_mean @ vector

    def _rmatvec(self, vector):
        vector = np.ravel(vector)
        products = lifted_rmatvec(self.pairs, self.queries, vector[:, None])[0]
        return products - self.feature_mean * vector.sum()


def solve_iterative(operator, targets, alpha, fit_intercept, solver_tol, max_iter):
    """Least squares / ridge by LSQR on the lifted problem, never forming ``Phi``.

    Each iteration costs two structured products, ``O(n_samples d^3)``; memory is the
    compact statistics, ``O(n_samples d^2)``. Started from zero, LSQR converges to the
    minimum-norm solution when ``alpha = 0``.

    Parameters
    ----------
    operator : CenteredLiftedOperator or DaskLiftedOperator
        ``Phi`` with ``feature_mean`` zero; set to the column means with an intercept.
    targets : ndarray of shape (n_samples, n_outputs)
    alpha, solver_tol : float
    fit_intercept : bool
    max_iter : int

    Returns
    -------
    coef : ndarray of shape (n_outputs, p)
    feature_mean, target_mean : ndarrays (zero without an intercept)
    converged : bool
        False when some output stopped at ``max_iter``.
    n_iter : ndarray of int, shape (n_outputs,)
        LSQR iterations per output.
    """
    n_samples, n_lifted = operator.shape
    if fit_intercept:
        operator.feature_mean = operator.rmatvec(np.ones(n_samples)) / n_samples
        target_mean = targets.mean(axis=0)
    else:
        target_mean = np.zeros(targets.shape[1])
    coef = np.empty((targets.shape[1], n_lifted))
    n_iter = np.zeros(targets.shape[1], dtype=int)
    converged = True
    for output, column in enumerate((targets - target_mean).T):
        result = scipy.sparse.linalg.lsqr(
            operator,
            column,
            damp=np.sqrt(alpha),
            atol=solver_tol,
            btol=solver_tol,
            iter_lim=max_iter,
        )
        coef[output], n_iter[output] = result[0], result[2]
        converged &= result[1] != 7  # 7: the iteration limit was reached
    return coef, operator.feature_mean, target_mean, converged, n_iter


def estimate_extreme_eigenvalues(operator, n_samples, tol, max_iter):
    """Smallest and largest eigenvalue of ``Phi_c^T Phi_c / n_samples`` by Lanczos.

    The largest comes directly; the smallest as ``largest - top eigenvalue of
    (largest I - Lambda)``, which converges far faster than asking Lanczos for the
    bottom of the spectrum. With fewer samples than features the smallest is 0.
    At least 1000 Lanczos iterations are allowed; when that is not enough a
    ``ConvergenceWarning`` is issued and the smallest eigenvalue is reported as 0
    (no claim of identifiability).

    Returns
    -------
    smallest, largest : float
    """
    n_lifted = operator.shape[1]

    def second_moment(vector):
        return operator.rmatvec(operator.matvec(vector)) / n_samples

    def top_eigenvalue(matvec):
        linear = scipy.sparse.linalg.LinearOperator(
            (n_lifted, n_lifted), matvec=matvec, dtype=np.float64
        )
        try:
            return float(
                scipy.sparse.linalg.eigsh(
                    linear,
                    k=1,
                    which="LA",
                    tol=tol,
                    maxiter=max(max_iter, 1000),
                    return_eigenvectors=False,
                )[0]
            )
        except scipy.sparse.linalg.ArpackNoConvergence:
            warnings.warn(
                "The Lanczos estimate of the certificate's eigenvalues did not "
                "converge; the certificate claims no identifiability.",
                ConvergenceWarning,
                stacklevel=5,
            )
            return None

    largest = top_eigenvalue(second_moment)
    if largest is None:
        return 0.0, float("nan")
    if n_samples < n_lifted:
        return 0.0, largest
    top = top_eigenvalue(
        lambda vector: largest * np.ravel(vector) - second_moment(vector)
    )
    if top is None:
        return 0.0, largest
    return max(largest - top, 0.0), largest


def operator_weight(operator, alpha):
    """``R -> R @ (Phi_c^T Phi_c + alpha I)`` through a lifted linear operator.

    The training objective's weight for :func:`~sklearn_linattn._heads.fixed_heads`
    when the Gram matrix is not formed (solvers ``"dual"`` and ``"cg"``).
    """

    def apply_weight(residual):
        return np.stack(
            [operator.rmatvec(operator.matvec(row)) + alpha * row for row in residual]
        )

    return apply_weight
