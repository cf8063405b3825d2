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

from ._distributed import block_statistics, is_dask_array
from ._lift import (
    lifted_features,
    lifted_kernel,
    n_lifted_features,
    pair_statistics,
)
from ._solvers import accumulate_statistics, default_rank_tol, gram_spectrum
from ._validation import validate_sequences

__all__ = ["IdentifiabilityCertificate", "certify"]

# Relative size of the component outside the training span below which `covers`
# says True.
_COVERS_RTOL = 1e-6


class _FeatureSpan:
    """The span of the training features, by an orthonormal basis of the null space
    of the lifted Gram matrix or of its range (whichever is smaller)."""

    def __init__(self, basis, spans_range, feature_mean):
        self.basis, self.spans_range, self.feature_mean = (
            basis,
            spans_range,
            feature_mean,
        )

    def outside_fraction(self, sequences):
        features = lifted_features(sequences) - self.feature_mean
        projection = features @ self.basis
        outside = (
            features - projection @ self.basis.T if self.spans_range else projection
        )
        return _ratio(np.linalg.norm(outside, axis=1), np.linalg.norm(features, axis=1))


class _KernelSpan:
    """The span of the training features through the kernel (dual solver): the
    squared distance of ``phi(x)`` to the span is ``k(x, x) - k_x^T pinv(K) k_x``,
    with the kernel centered when an intercept was fitted."""

    def __init__(self, pairs, queries, weights, row_means, grand_mean, centered):
        self.pairs, self.queries, self.weights = pairs, queries, weights
        self.row_means, self.grand_mean, self.centered = row_means, grand_mean, centered

    def outside_fraction(self, sequences):
        pairs, queries = pair_statistics(sequences)
        cross = lifted_kernel(pairs, queries, self.pairs, self.queries)
        own = np.einsum("nk,nk->n", pairs, pairs) * np.einsum(
            "ne,ne->n", queries, queries
        )
        if self.centered:
            cross_means = cross.mean(axis=1)
            own = own - 2 * cross_means + self.grand_mean
            cross = cross - cross_means[:, None] - self.row_means + self.grand_mean
        inside = np.einsum("nr,nr->n", *(2 * [cross @ self.weights]))
        return _ratio(
            np.sqrt(np.maximum(own - inside, 0.0)), np.sqrt(np.maximum(own, 0.0))
        )


def _ratio(outside, total):
    return np.divide(outside, total, out=np.zeros_like(outside), where=total > 0)


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
    rank : int or None
        Number of eigenvalues above ``tol * max_eigenvalue``; None when only
        estimates of the extreme eigenvalues are known (``exact=False``) and they
        do not show full rank.
    n_lifted_features : int
        ``p = d * d * (d + 1) / 2``, the rank needed for identifiability.
    n_samples : int
    tol : float
        Relative eigenvalue tolerance used.
    token_dim : int
    exact : bool
        True when the eigenvalues come from a decomposition (``certify``, solvers
        ``"normal"`` and ``"dual"``); False for the iterative (Lanczos) estimates
        of solver ``"cg"``, accurate to about ``tol`` of ``max_eigenvalue``.
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

    def __bool__(self):
        return bool(self.identifiable)

    @classmethod
    def from_spectrum(cls, spectrum, n_samples, token_dim, feature_mean=None):
        """Certificate of a lifted Gram matrix ``N * Lambda`` from its spectrum."""
        p = spectrum.eigenvalues.size
        rank = spectrum.rank
        span = None
        if rank < p:
            kept = spectrum.eigenvalues > spectrum.threshold
            spans_range = rank < p - rank
            columns = kept if spans_range else ~kept
            basis = np.ascontiguousarray(spectrum.eigenvectors[:, columns])
            mean = np.zeros(p) if feature_mean is None else feature_mean
            span = _FeatureSpan(basis, spans_range, mean)
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
            _span=span,
        )

    @classmethod
    def from_kernel(cls, solution, pairs, queries, tol, centered):
        """Certificate from the spectrum of the kernel matrix (dual solver).

        The non-zero eigenvalues of ``Phi Phi^T`` and ``Phi^T Phi`` coincide, so the
        ``p`` eigenvalues of ``Lambda`` are the ``p`` largest of the kernel's
        (padded with zeros when there are fewer samples than features).
        """
        n_samples, d = queries.shape
        p = n_lifted_features(d)
        eigenvalues = solution.eigenvalues  # ascending
        largest = max(eigenvalues[-1], 0.0)
        kept = eigenvalues > tol * largest
        rank = int(np.count_nonzero(kept))
        smallest = eigenvalues[n_samples - p] if n_samples >= p else 0.0
        span = None
        if rank < p:
            weights = solution.eigenvectors[:, kept] / np.sqrt(eigenvalues[kept])
            span = _KernelSpan(
                pairs,
                queries,
                weights,
                solution.kernel_row_means,
                solution.kernel_mean,
                centered,
            )
        return cls(
            identifiable=rank == p,
            min_eigenvalue=float(smallest / n_samples),
            max_eigenvalue=float(largest / n_samples),
            rank=rank,
            n_lifted_features=p,
            n_samples=int(n_samples),
            tol=float(tol),
            token_dim=int(d),
            _span=span,
        )

    @classmethod
    def from_estimates(cls, smallest, largest, n_samples, token_dim, tol):
        """Certificate from Lanczos estimates of the extreme eigenvalues of
        ``Lambda`` (solver ``"cg"``)."""
        p = n_lifted_features(token_dim)
        identifiable = n_samples >= p and smallest > tol * largest
        return cls(
            identifiable=bool(identifiable),
            min_eigenvalue=float(smallest),
            max_eigenvalue=float(largest),
            rank=p if identifiable else None,
            n_lifted_features=p,
            n_samples=int(n_samples),
            tol=float(tol),
            token_dim=int(token_dim),
            exact=False,
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

        Raises
        ------
        ValueError
            For a certificate of estimated eigenvalues (``exact=False``) that does
            not show identifiability: the span of the training features is unknown.
        """
        sequences = validate_sequences(X, token_dim=self.token_dim)
        if self.identifiable:
            return np.ones(sequences.shape[0], dtype=bool)
        if self._span is None:
            raise ValueError(
                "covers needs the span of the training features, which an estimated "
                "certificate (solver='cg', exact=False) does not have; use certify(X) "
                "or fit with solver='normal' or 'dual'."
            )
        return self._span.outside_fraction(sequences) <= _COVERS_RTOL


def certify(X, token_dim=None, tol=None):
    """Identifiability certificate of a data set, without fitting.

    Computes ``Lambda = (1/N) sum_i phi(Z_i) phi(Z_i)^T`` over the lifted features
    (streamed in chunks) and its eigenvalues.

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
    if is_dask_array(X):
        statistics, d, _ = block_statistics(X, None, token_dim)
    else:
        sequences = validate_sequences(X, token_dim=token_dim)
        d = sequences.shape[2]
        statistics = accumulate_statistics(sequences, np.zeros((len(sequences), 0)))
    n_samples = statistics.n_samples
    if tol is None:
        tol = default_rank_tol(n_lifted_features(d))
    elif not (isinstance(tol, Real) and 0 <= tol < 1):
        raise ValueError(f"tol must be a real number in [0, 1), got {tol!r}.")
    gram, _, _, _ = statistics.normal_equations(fit_intercept=False)
    return IdentifiabilityCertificate.from_spectrum(
        gram_spectrum(gram, tol), n_samples, d
    )
