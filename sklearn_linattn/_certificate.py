"""The identifiability certificate of PAPER.md.

``Lambda = (1/N) sum_i phi(Z_i) phi(Z_i)^T``, the uncentered second moment of the
lifted features. If its smallest eigenvalue is positive, every minimizer of the lifted
least-squares problem (any number of heads) computes the same function on all inputs.
When it is singular, an input still gets the same prediction from every minimizer iff
its lifted features lie in the span of the training features (``covers``).
"""

from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from ._lift import lifted_features, n_lifted_features
from ._solvers import accumulate_statistics, default_rank_tol, gram_spectrum
from ._validation import validate_sequences

__all__ = ["IdentifiabilityCertificate", "certify"]

# Relative size of the null-space component below which `covers` says True.
_COVERS_RTOL = 1e-6


@dataclass(frozen=True)
class IdentifiabilityCertificate:
    """Whether data pins down the function of every best-fitting model.

    Made by :func:`certify` or by fitting an estimator (its ``certificate_``).
    Truthy exactly when ``identifiable``.

    Attributes
    ----------
    identifiable : bool
        ``min_eigenvalue > tol * max_eigenvalue``: the lifted second moment is
        positive definite, so every empirical risk minimizer computes the same
        function on all inputs.
    min_eigenvalue, max_eigenvalue : float
        Extreme eigenvalues of ``Lambda = Phi^T Phi / n_samples`` (centered when
        the estimator fits an intercept).
    rank : int
        Number of eigenvalues above ``tol * max_eigenvalue``.
    n_lifted_features : int
        ``p = d * d * (d + 1) / 2``, the rank needed for identifiability.
    n_samples : int
    tol : float
        Relative eigenvalue tolerance used.
    token_dim : int
    """

    identifiable: bool
    min_eigenvalue: float
    max_eigenvalue: float
    rank: int
    n_lifted_features: int
    n_samples: int
    tol: float
    token_dim: int
    # Orthonormal basis of the null space of Lambda (shape (p, p - rank)), or of its
    # range when that is smaller (``basis_spans_range``), and the feature mean that
    # was subtracted (zero unless an intercept was fitted).
    _basis: np.ndarray = field(repr=False, compare=False)
    _basis_spans_range: bool = field(repr=False, compare=False)
    _feature_mean: np.ndarray = field(repr=False, compare=False)

    def __bool__(self):
        return bool(self.identifiable)

    @classmethod
    def from_spectrum(cls, spectrum, n_samples, token_dim, feature_mean=None):
        """Certificate of a lifted Gram matrix ``N * Lambda`` from its spectrum."""
        p = spectrum.eigenvalues.size
        rank = spectrum.rank
        if feature_mean is None:
            feature_mean = np.zeros(p)
        if rank == p:
            basis, spans_range = np.empty((p, 0)), False
        else:
            kept = spectrum.eigenvalues > spectrum.threshold
            spans_range = rank < p - rank
            columns = kept if spans_range else ~kept
            basis = np.ascontiguousarray(spectrum.eigenvectors[:, columns])
        scale = 1.0 / max(n_samples, 1)
        return cls(
            identifiable=rank == p,
            min_eigenvalue=float(spectrum.eigenvalues[0] * scale),
            max_eigenvalue=float(spectrum.eigenvalues[-1] * scale),
            rank=rank,
            n_lifted_features=p,
            n_samples=int(n_samples),
            tol=float(spectrum.tol),
            token_dim=int(token_dim),
            _basis=basis,
            _basis_spans_range=spans_range,
            _feature_mean=feature_mean,
        )

    def covers(self, X):
        """Which inputs get the same prediction from every minimizer.

        An input is covered when its lifted features lie in the span of the training
        features (after subtracting their mean when an intercept was fitted): the
        component outside it is at most ``1e-6`` of their norm. On identifiable data
        every input is covered.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)

        Returns
        -------
        covered : ndarray of shape (n_samples,), bool
        """
        sequences = validate_sequences(X, token_dim=self.token_dim)
        if self.identifiable:
            return np.ones(sequences.shape[0], dtype=bool)
        features = lifted_features(sequences) - self._feature_mean
        projection = features @ self._basis
        if self._basis_spans_range:
            outside = features - projection @ self._basis.T
        else:
            outside = projection
        outside_norm = np.linalg.norm(outside, axis=1)
        return outside_norm <= _COVERS_RTOL * np.linalg.norm(features, axis=1)


def certify(X, token_dim=None, tol=None):
    """Identifiability certificate of a data set, without fitting.

    Computes ``Lambda = (1/N) sum_i phi(Z_i) phi(Z_i)^T`` over the lifted features
    (streamed in chunks) and its eigenvalues.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        Sequences, tokens as rows, the query last.
    token_dim : int, optional
        Needed for 2-D ``X``; without it a 2-D row is one token.
    tol : float, optional
        Relative tolerance: eigenvalues at most ``tol * max_eigenvalue`` count as
        zero. Default ``p * eps`` (``numpy.linalg.matrix_rank``'s rule for a Gram
        matrix), about ``1e-13`` for ``d = 8``.

    Returns
    -------
    certificate : IdentifiabilityCertificate

    Notes
    -----
    One-hot tokens are never identifiable: with ``z_t`` one-hot, ``S`` is diagonal
    (so every feature with ``b < c`` is zero) and the query's features ``S[b, b] q[e]``
    span at most the diagonal part, far fewer than ``p`` directions. Tokens confined to
    a subspace of dimension ``r < d``, or fewer samples than ``p``, are not identifiable
    either.

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
    sequences = validate_sequences(X, token_dim=token_dim)
    n_samples, _, d = sequences.shape
    if tol is None:
        tol = default_rank_tol(n_lifted_features(d))
    elif not (isinstance(tol, Real) and 0 <= tol < 1):
        raise ValueError(f"tol must be a real number in [0, 1), got {tol!r}.")
    statistics = accumulate_statistics(sequences, np.zeros((n_samples, 0)))
    gram, _, _, _ = statistics.normal_equations(fit_intercept=False)
    return IdentifiabilityCertificate.from_spectrum(
        gram_spectrum(gram, tol), n_samples, d
    )
