"""Input handling: 3-D sequences or 2-D flattened rows, targets, clear errors.

Everything downstream receives sequences as a float64, C-ordered array of shape
``(n_samples, n_tokens, token_dim)`` (a view of the caller's data when it already is
one; never written to).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array, validate_data

__all__ = ["validate_sequences", "validate_targets"]

_LAYOUT = (
    "Expected sequences of shape (n_samples, n_tokens, token_dim), or rows of shape "
    "(n_samples, n_tokens * token_dim) with token_dim given"
)


def validate_sequences(X, *, token_dim=None, estimator=None, reset=False):
    """Check sequences and return them as a 3-D float64 C-ordered array.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        Sequences, tokens as rows, the query last. A 2-D row is one sequence
        flattened token by token; with ``token_dim=None`` it is a single token.
    token_dim : int or None
        The token dimension the caller expects; None accepts any (at fit time).
    estimator : estimator instance, optional
        When given, 2-D input goes through
        :func:`sklearn.utils.validation.validate_data` so that ``n_features_in_``
        and ``feature_names_in_`` are set (``reset=True``) or checked
        (``reset=False``). 3-D input sets ``n_features_in_`` to
        ``n_tokens * token_dim`` on reset and accepts any ``n_tokens`` afterwards.
    reset : bool
        Whether this call fits the estimator.

    Returns
    -------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64
    """
    if sp.issparse(X):
        raise TypeError(
            "Sparse input is not supported: sequences are dense token matrices. "
            f"{_LAYOUT}; convert with X.toarray()."
        )
    if not hasattr(X, "ndim"):  # lists, or objects that only offer __array__
        X = np.asarray(X)
    ndim = X.ndim
    if ndim == 3:
        sequences = check_array(
            X,
            allow_nd=True,
            dtype=np.float64,
            order="C",
            input_name="X",
            estimator=estimator,
        )
        n_samples, n_tokens, found_dim = sequences.shape
        if n_tokens == 0 or found_dim == 0:
            raise ValueError(
                f"X has shape {sequences.shape}: every sequence needs at least one "
                "token of dimension at least 1."
            )
        if token_dim is not None and found_dim != token_dim:
            raise ValueError(
                f"X has token dimension {found_dim} (shape {sequences.shape}) but "
                f"token_dim={token_dim} was expected: shape (n_samples, n_tokens, "
                f"{token_dim})."
            )
        if estimator is not None and reset:
            warn_if_transposed(n_tokens, found_dim)
            estimator.n_features_in_ = n_tokens * found_dim
            if hasattr(estimator, "feature_names_in_"):
                del estimator.feature_names_in_
        return sequences
    if ndim != 2:
        raise ValueError(
            f"{_LAYOUT}; got an array with {ndim} dimension(s) and shape "
            f"{X.shape}. Reshape your data: a single sequence Z of shape "
            "(n_tokens, token_dim) is Z[None]."
        )
    if estimator is None:
        rows = check_array(X, dtype=np.float64, order="C", input_name="X")
    else:
        rows = validate_data(estimator, X, reset=reset, dtype=np.float64, order="C")
    n_samples, n_features = rows.shape
    if token_dim is None:
        token_dim = n_features
    if n_features % token_dim:
        raise ValueError(
            f"X has {n_features} columns, which is not a multiple of "
            f"token_dim={token_dim}; rows must be sequences flattened token by token, "
            f"shape (n_samples, n_tokens * {token_dim})."
        )
    return rows.reshape(n_samples, n_features // token_dim, token_dim)


def validate_targets(y, n_samples, estimator_name="estimator"):
    """Check regression targets and return them as a 2-D float64 array.

    Returns
    -------
    targets : ndarray of shape (n_samples, n_outputs)
    was_1d : bool
        Whether ``y`` was one-dimensional (then predictions are 1-D too).
    """
    if y is None:
        raise ValueError(
            f"{estimator_name} requires y to be passed, but the target y is None."
        )
    if sp.issparse(y):
        raise TypeError("Sparse targets are not supported; pass a dense array y.")
    targets = check_array(
        y, ensure_2d=False, allow_nd=True, dtype=np.float64, input_name="y"
    )
    if targets.ndim not in (1, 2):
        raise ValueError(
            "y must have shape (n_samples,) or (n_samples, n_outputs), got shape "
            f"{targets.shape}."
        )
    if targets.shape[0] != n_samples:
        raise ValueError(
            f"X has {n_samples} samples but y has {targets.shape[0]}; they must match."
        )
    was_1d = targets.ndim == 1
    return targets.reshape(n_samples, -1), was_1d


def warn_if_transposed(n_tokens, token_dim):
    """Warn when 3-D sequences look transposed: far more features per token than
    tokens, with a lifted dimension ``p = d^2 (d + 1) / 2`` too large to be intended.

    The common time-series layout ``(n_samples, n_channels, n_timepoints)`` read as
    tokens-as-rows gives few tokens of a huge dimension (``(200, 2, 50)``: 2 tokens,
    ``p = 63,750``); its transpose ``(200, 50, 2)`` has ``p = 6``.
    """
    import warnings

    n_lifted = token_dim * token_dim * (token_dim + 1) // 2
    if token_dim > 2 * n_tokens and n_lifted > 10_000:
        warnings.warn(
            f"X has {n_tokens} token(s) of dimension {token_dim} per sequence, so "
            f"the model lifts each sequence to p = {n_lifted:,} features "
            "(d^2 (d + 1) / 2 with d = token_dim): fitting will be slow and need "
            "many samples. Sequences are read as (n_samples, n_tokens, token_dim), "
            "tokens as rows. If X is laid out as (n_samples, n_channels, "
            "n_timepoints), pass X.transpose(0, 2, 1) (shape (n_samples, "
            f"{token_dim}, {n_tokens})). If the tokens really have {token_dim} "
            "features, reduce them first, e.g. with sklearn_linattn.preprocessing."
            "TokenwiseTransformer(PCA(n_components=8)).",
            UserWarning,
            stacklevel=5,
        )
