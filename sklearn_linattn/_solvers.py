"""Sufficient statistics of the lifted least-squares problem and its solvers.

Algorithm 1 of PAPER.md is ordinary least squares (or ridge) on the lifted features
``Phi``. The normal equations need only ``Phi^T Phi``, ``Phi^T y``, the column sums and
the sample count, which add up over chunks of samples; so the data is streamed chunk by
chunk and memory stays at one chunk of features plus ``O(p^2)``.
"""

import numpy as np
import scipy.linalg
from scipy.linalg.blas import dsyrk

from ._lift import lifted_features, n_lifted_features

__all__ = [
    "GramSpectrum",
    "LiftedStatistics",
    "accumulate_statistics",
    "default_batch_size",
    "default_rank_tol",
    "gram_spectrum",
    "lifted_predict",
    "solve_normal_equations",
]

# Memory for one chunk of lifted features when batch_size=None.
_CHUNK_BYTES = 32 * 2**20


def default_batch_size(n_lifted):
    """Samples per chunk so that one chunk of lifted features takes about 32 MiB."""
    return max(1, _CHUNK_BYTES // (8 * n_lifted))


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
        self.moment += features.T @ targets
        self.feature_sum += features.sum(axis=0)
        self.target_sum += targets.sum(axis=0)
        self.n_samples += features.shape[0]

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
    n_lifted = n_lifted_features(token_dim)
    if statistics is None:
        statistics = LiftedStatistics(n_lifted, targets.shape[1])
    if batch_size is None:
        batch_size = default_batch_size(n_lifted)
    batch_size = max(1, min(batch_size, n_samples))
    buffer = np.empty((batch_size, n_lifted))
    for start in range(0, n_samples, batch_size):
        stop = min(start + batch_size, n_samples)
        features = lifted_features(
            sequences[start:stop], out=buffer[: stop - start], n_threads=n_threads
        )
        statistics.add(features, targets[start:stop])
        if progress is not None:
            progress(stop, n_samples)
    return statistics


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
    n_samples = sequences.shape[0]
    n_lifted = coef.shape[1]
    if batch_size is None:
        batch_size = default_batch_size(n_lifted)
    batch_size = max(1, min(batch_size, n_samples))
    buffer = np.empty((batch_size, n_lifted))
    predictions = np.empty((n_samples, coef.shape[0]))
    for start in range(0, n_samples, batch_size):
        stop = min(start + batch_size, n_samples)
        features = lifted_features(
            sequences[start:stop], out=buffer[: stop - start], n_threads=n_threads
        )
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
