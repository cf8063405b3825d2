"""Fitting on Dask arrays: per-block sufficient statistics, reduced as a tree.

The lifted normal equations (``Phi^T Phi``, ``Phi^T y``, sums, count) add up over
samples, so each block of a Dask array chunked along samples is lifted where it lives,
with the same Numba kernels, and only ``O(p^2)`` statistics travel. Dask is imported
lazily: the core package never needs it.
"""

import numpy as np
import scipy.sparse.linalg

from ._lift import lifted_matvec, lifted_rmatvec, pair_statistics
from ._solvers import accumulate_statistics
from ._validation import validate_sequences, validate_targets

__all__ = [
    "DaskLiftedOperator",
    "block_statistics",
    "is_dask_array",
    "predict_blocks",
    "require_dask",
    "sample_chunked",
]


def is_dask_array(X):
    """Whether ``X`` is a Dask array, without importing Dask."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks")


def require_dask():
    """The ``dask`` and ``dask.array`` modules, or a clear error."""
    try:
        import dask
        import dask.array
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "A Dask array was passed but Dask is not installed: "
            "python -m pip install 'sklearn-linattn[dask]'"
        ) from error
    return dask, dask.array


def sample_chunked(X, token_dim):
    """A Dask array of sequences chunked along samples only, and its token dimension.

    Checks the shape (not the values, which each block checks with
    ``validate_sequences``) and merges every other axis into one chunk, so that no
    sequence is split between blocks.
    """
    token_dim = _token_dim_of_shape(X, token_dim)
    return X.rechunk({axis: -1 for axis in range(1, X.ndim)}), token_dim


def _token_dim_of_shape(X, token_dim):
    if X.ndim == 3:
        if token_dim is not None and X.shape[2] != token_dim:
            raise ValueError(
                f"X has token dimension {X.shape[2]} (shape {X.shape}) but "
                f"token_dim={token_dim} was expected."
            )
        return X.shape[2]
    if X.ndim != 2:
        raise ValueError(
            "Expected a Dask array of shape (n_samples, n_tokens, token_dim) or "
            f"(n_samples, n_tokens * token_dim), got shape {X.shape}."
        )
    token_dim = X.shape[1] if token_dim is None else token_dim
    if X.shape[1] % token_dim:
        raise ValueError(
            f"X has {X.shape[1]} columns, which is not a multiple of "
            f"token_dim={token_dim}."
        )
    return token_dim


def _one_block(X_block, y_block, token_dim, batch_size):
    sequences = validate_sequences(X_block, token_dim=token_dim)
    if y_block is None:  # certify: no targets
        targets = np.zeros((sequences.shape[0], 0))
    else:
        targets, _ = validate_targets(y_block, sequences.shape[0])
    return accumulate_statistics(sequences, targets, batch_size=batch_size)


def _merge(*parts):
    total = parts[0]
    for part in parts[1:]:
        total.merge(part)
    return total


def block_statistics(X, y, token_dim, batch_size=None, statistics=None):
    """Lifted statistics of a Dask array, computed blockwise and tree-reduced.

    Parameters
    ----------
    X : dask array of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        Chunked along samples (other axes are merged into single chunks).
    y : array-like, dask array or None
        Shape (n_samples,) or (n_samples, n_outputs); None for statistics of ``X``
        alone (the certificate).
    token_dim : int or None
    batch_size : int, optional
        Chunk size of the lifting inside each block.
    statistics : LiftedStatistics, optional
        Statistics to add to (``partial_fit``).

    Returns
    -------
    statistics : LiftedStatistics
    token_dim : int
    was_1d : bool
    """
    dask, da = require_dask()
    X, token_dim = sample_chunked(X, token_dim)
    X_blocks = X.to_delayed().ravel()
    if y is None:
        y_blocks, was_1d = [None] * len(X_blocks), False
    else:
        y = da.asarray(y)
        if y.ndim not in (1, 2) or y.shape[0] != X.shape[0]:
            raise ValueError(
                f"y must have shape (n_samples,) or (n_samples, n_outputs) with "
                f"n_samples={X.shape[0]}, got shape {y.shape}."
            )
        y = y.rechunk((X.chunks[0],) + ((-1,) if y.ndim == 2 else ()))
        y_blocks, was_1d = y.to_delayed().ravel(), y.ndim == 1
    parts = [
        dask.delayed(_one_block)(X_block, y_block, token_dim, batch_size)
        for X_block, y_block in zip(X_blocks, y_blocks, strict=True)
    ]
    while len(parts) > 1:  # a tree of pairwise sums: only p x p matrices travel
        pairs = range(0, len(parts), 2)
        parts = [dask.delayed(_merge)(*parts[i : i + 2]) for i in pairs]
    (total,) = dask.compute(parts[0])
    if statistics is not None:
        total = statistics.merge(total)
    return total, token_dim, was_1d


def predict_blocks(X, token_dim, n_outputs, predict_sequences):
    """Lazy predictions of a Dask array, one block at a time.

    ``predict_sequences`` maps validated 3-D sequences to an array of shape
    ``(n, n_outputs)``; the result has shape ``(n_samples, n_outputs)``.
    """
    X, token_dim = sample_chunked(X, token_dim)

    def one_block(block):
        return predict_sequences(validate_sequences(block, token_dim=token_dim))

    return X.map_blocks(
        one_block,
        dtype=np.float64,
        drop_axis=list(range(1, X.ndim)),
        new_axis=1,
        chunks=(X.chunks[0], (n_outputs,)),
    )


def _stacked_statistics(block, token_dim):
    pairs, queries = pair_statistics(validate_sequences(block, token_dim=token_dim))
    return np.hstack([pairs, queries])


class DaskLiftedOperator(scipy.sparse.linalg.LinearOperator):
    """``Phi - 1 mean^T`` of a Dask array for LSQR, never forming ``Phi``.

    The compact statistics (``S`` pairs and ``q``, ``O(n_samples d^2)``) are computed
    once and kept on the workers (``persist``); each product runs blockwise there, and
    only ``n_samples``- or ``p``-vectors travel.
    """

    def __init__(self, X, token_dim=None):
        X, token_dim = sample_chunked(X, token_dim)
        self.token_dim = token_dim
        m = token_dim * (token_dim + 1) // 2
        self.statistics = X.map_blocks(
            _stacked_statistics,
            token_dim,
            dtype=np.float64,
            drop_axis=list(range(1, X.ndim)),
            new_axis=1,
            chunks=(X.chunks[0], (m + token_dim,)),
        ).persist()
        self.n_pairs = m
        self.feature_mean = np.zeros(m * token_dim)
        super().__init__(np.float64, (X.shape[0], m * token_dim))

    def _split(self, block):
        return block[:, : self.n_pairs], block[:, self.n_pairs :]

    def _matvec(self, vector):
        vector = np.ravel(vector)

        def products(block):
            return lifted_matvec(*self._split(block), vector[None])[:, 0]

        out = self.statistics.map_blocks(products, drop_axis=1, dtype=np.float64)
        return out.compute() - self.feature_mean @ vector

    def _rmatvec(self, vector):
        _, da = require_dask()
        vector = np.ravel(vector)
        weights = da.from_array(vector, chunks=(self.statistics.chunks[0],))

        def products(block, weight):  # weight: this block's (n_block, 1) slice
            return lifted_rmatvec(*self._split(block), weight)

        partial = da.map_blocks(
            products,
            self.statistics,
            weights[:, None],
            dtype=np.float64,
            chunks=((1,) * len(self.statistics.chunks[0]), (self.shape[1],)),
        )
        return partial.sum(axis=0).compute() - self.feature_mean * vector.sum()
