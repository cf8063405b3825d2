"""Multi-head linear attention as a plain model, and the lifted-coefficient folding.

``y(Z) = sum_h V_h (Z^T Z) Q_h q`` (Yau et al. 2025; the docs' theory page).
Coordinate ``a`` of the output is ``sum_{b,c,e} W[a,b,c,e] S[b,c] q[e]`` with
``W[a,b,c,e] = sum_h V_h[a,b] Q_h[c,e]``. The lifted coefficients ``theta`` pair with
the lifted features of ``_lift.py``: for ``b < c`` only ``W[a,b,c,e] + W[a,c,b,e]`` is
determined by the function, and ``theta = (W[a,b,c,e] + W[a,c,b,e]) / sqrt(2)``
(``theta = W[a,b,b,e]`` on the diagonal).
"""

import functools
import warnings

import numpy as np
import scipy.sparse as sp

from ._data import check_allocation, to_unit
from ._rollout import heads_readout, rollout, sum_heads, unit_heads
from ._validation import (
    caller_stacklevel,
    check_sequence_values,
    is_dask_array,
    validate_sequences,
)

__all__ = ["MultiHeadLinearAttention", "fold_lifted_coef", "unfold_lifted_coef"]


@functools.lru_cache(maxsize=16)
def _fold_indices(token_dim):
    """Flat positions of ``W[b, c, e]`` and ``W[c, b, e]`` (within one output's
    ``d^3`` block) for each lifted feature, and the feature's ``1 / w_bc``."""
    d = token_dim
    rows, cols = np.triu_indices(d)
    scales = np.where(rows == cols, 1.0, 1.0 / np.sqrt(2.0))
    e = np.arange(d)
    first = ((rows[:, None] * d + cols[:, None]) * d + e).ravel()
    second = ((cols[:, None] * d + rows[:, None]) * d + e).ravel()
    return first, second, np.repeat(scales, d)


def fold_lifted_coef(lifted_coef, token_dim):
    """Fold lifted coefficients into the matrix ``W[(a, b), (c, e)]`` of Algorithm 1.

    Each off-diagonal coefficient is split evenly between ``W[a,b,c,e]`` and
    ``W[a,c,b,e]`` (the symmetric split of Algorithm 1, step 3, on the theory page).

    Parameters
    ----------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
    token_dim : int

    Returns
    -------
    folded : ndarray of shape (n_outputs * token_dim, token_dim * token_dim)
    """
    first, second, scales = _fold_indices(token_dim)
    lifted_coef = np.asarray(lifted_coef)
    if lifted_coef.ndim > 2 and lifted_coef.size == lifted_coef.shape[0] * scales.size:
        # (n_outputs, 1, ..., n_lifted_features), as broadcasting always read it
        lifted_coef = lifted_coef.reshape(lifted_coef.shape[0], scales.size)
    if lifted_coef.ndim != 2 or lifted_coef.shape[1] != scales.size:
        raise ValueError(
            "lifted_coef must have shape (n_outputs, n_lifted_features) = "
            f"(n_outputs, {scales.size}) for token_dim={token_dim}, got shape "
            f"{lifted_coef.shape}."
        )
    return _fold(lifted_coef, token_dim)


def _fold(lifted_coef, token_dim):
    """:func:`fold_lifted_coef` of an array of the right shape, without its
    checks (the head read-out folds at every step)."""
    first, second, scales = _fold_indices(token_dim)
    n_outputs = lifted_coef.shape[0]
    folded = np.zeros((n_outputs, token_dim**3))
    values = lifted_coef * scales
    folded[:, first] = values
    folded[:, second] = values
    return folded.reshape(n_outputs * token_dim, token_dim * token_dim)


def unfold_lifted_coef(folded, token_dim):
    """Lifted coefficients of a folded ``W[(a, b), (c, e)]``; inverse of the fold on
    the symmetric part, and zero on the part antisymmetric in ``(b, c)``.

    Parameters
    ----------
    folded : ndarray of shape (n_outputs * token_dim, token_dim * token_dim)
    token_dim : int

    Returns
    -------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
    """
    first, second, scales = _fold_indices(token_dim)
    d = token_dim
    folded = np.asarray(folded)
    rows, width = folded.shape if folded.ndim == 2 else (0, 0)
    if not (width == d**3 or (width == d * d and rows % d == 0)):
        raise ValueError(
            "folded must have shape (n_outputs * token_dim, token_dim * token_dim) "
            f"(or (n_outputs, token_dim**3)) for token_dim={d}, got shape "
            f"{folded.shape}."
        )
    return _unfold(folded, d)


def _unfold(folded, token_dim):
    """:func:`unfold_lifted_coef` of an array of a right shape, without its
    checks."""
    first, second, scales = _fold_indices(token_dim)
    flat = folded.reshape(-1, token_dim**3)
    # theta = (W[a,b,c,e] + W[a,c,b,e]) * w_bc / 2, i.e. W[a,b,b,e] on the diagonal.
    return (flat[:, first] + flat[:, second]) * (0.5 / scales)


def _outputs_at_every_position(tokens, queries, exponents, value, query, causal):
    """``y_t = 2**e_t sum_h V_h S_t Q_h q_t`` for every position, ``S_t`` the
    second moment of ``tokens`` (prefix or whole), ``q_t`` the row of
    ``queries``, ``e_t`` of ``exponents``, each head at unit size
    (:func:`unit_heads`); in chunks of samples so that the prefix moments
    (``n_tokens * d^2`` per sample) stay small."""
    value, query, head_exponents = unit_heads(value, query)
    n_samples, n_tokens, d = tokens.shape
    n_heads, n_outputs = value.shape[:2]
    out = np.empty((n_samples, n_tokens, n_outputs))
    per_sample = max(1, n_tokens * (d * d + 2 * n_heads * d + n_heads * n_outputs))
    chunk = max(1, (1 << 22) // per_sample)
    for start in range(0, n_samples, chunk):
        Z = tokens[start : start + chunk]
        outer = np.einsum("ntb,ntc->ntbc", Z, Z)
        if causal:
            moments = np.cumsum(outer, axis=1)  # S_t, prefix by prefix
        else:  # one S for every position
            moments = np.broadcast_to(outer.sum(axis=1, keepdims=True), outer.shape)
        keyed = np.einsum("hce,nte->nthc", query, queries[start : start + chunk])
        attended = np.einsum("ntbc,nthc->nthb", moments, keyed)  # S_t Q_h q_t
        per_head = np.einsum("hab,nthb->ntha", value, attended)
        out[start : start + chunk] = sum_heads(
            per_head, head_exponents, exponents[start : start + chunk]
        )
    return out


def _real_matrices(name, matrices, shape):
    """``matrices`` as a new float64 array; what numpy cannot convert (text,
    nested lists of different lengths, integers beyond the float range) is an
    error naming the parameter and its expected shape; so are sparse matrices
    and dates (which numpy would cast to counts since 1970, silently)."""
    if sp.issparse(matrices):
        raise TypeError(
            f"{name} must be a dense array of real numbers of shape {shape}, got "
            f"a sparse matrix; convert it with .toarray()."
        )
    kind = getattr(getattr(matrices, "dtype", None), "kind", None)
    if kind in ("M", "m"):
        raise ValueError(
            f"{name} must be an array of real numbers of shape {shape}, got dtype "
            f"{matrices.dtype} (dates or durations)."
        )
    try:
        is_complex = np.iscomplexobj(matrices)
        array = None if is_complex else np.array(matrices, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(
            f"{name} must be an array of real numbers of shape {shape}; numpy "
            f"could not convert it to float64: {error}"
        ) from None
    if is_complex:
        raise ValueError(
            f"{name} must be real; got complex values (a real model has real "
            "matrices: pass their real part explicitly if it is meant)."
        )
    return array


#: Bits by which a prefix's largest entry may lie below its sequence's before
#: the causal outputs of that prefix are computed at the prefix's own scale:
#: at the sequence's, its outer products would lie below 2**-128 and those of
#: its smaller entries could fall below the float range (to 0).
_PREFIX_SCALE_GAP = 64


def _every_position(sequences, value, query, causal):
    """The outputs at every position (:func:`_outputs_at_every_position`), each
    token scaled by a power of two with its sequence (for ``S_t``) and alone (as
    the query ``z_t``). With ``causal``, the positions of a prefix far smaller
    than its sequence (more than ``_PREFIX_SCALE_GAP`` bits below its largest
    entry) are computed again from that prefix alone, at its own scale, so that
    an output within the float range does not underflow on the way to it. The
    same numbers where nothing underflows (the scaling is exact)."""
    tokens, token_exponents = to_unit(sequences, (1, 2))
    queries, query_exponents = to_unit(sequences, 2)
    exponents = 2 * token_exponents[:, None] + query_exponents
    out = _outputs_at_every_position(
        tokens, queries, exponents, value, query, causal
    )
    if not causal:
        return out
    # the prefixes' largest entries; a zero prefix (left padding) outputs 0
    prefix_largest = np.maximum.accumulate(np.abs(sequences).max(axis=2), axis=1)
    small = (prefix_largest > 0) & (
        np.frexp(prefix_largest)[1] < token_exponents[:, None] - _PREFIX_SCALE_GAP
    )
    # prefix_largest grows, so the small positions of a sequence are those of a
    # prefix, after any zero tokens: the prefix up to the last of them
    rows = np.flatnonzero(small.any(axis=1))
    if rows.size:
        length = small.shape[1] - int(np.argmax(small[rows, ::-1], axis=1).min())
        small = small[rows, :length, None]
        # those prefixes, the tokens after their small positions set to zero
        # (which changes no earlier output and no scale), in one batch; each is
        # smaller than its sequence, so this ends after at most
        # 2100 / _PREFIX_SCALE_GAP rounds
        redone = _every_position(
            sequences[rows, :length] * small, value, query, causal
        )
        out[rows, :length] = np.where(small, redone, out[rows, :length])
    return out


def _warn_if_one_sequence_as_rows(X, sequences):
    """Warn when a 2-D ``X`` has ``token_dim`` columns and several rows (its
    validated ``sequences`` one token long): one sequence ``Z`` of shape
    (n_tokens, token_dim), which the 2-D layout reads as that many one-token
    sequences (an output each, silently otherwise)."""
    n_samples, n_tokens, token_dim = sequences.shape
    if n_tokens != 1 or n_samples < 2:
        return
    if (X.ndim if hasattr(X, "ndim") else np.ndim(X)) != 2:
        return
    shape = (n_samples, token_dim)
    warnings.warn(
        f"X of shape {shape} is read as {n_samples} sequences of one token "
        "each: a 2-D X holds one sequence per row, flattened token by token, "
        f"shape (n_samples, n_tokens * token_dim), and token_dim={token_dim}. For "
        "one sequence Z of shape (n_tokens, token_dim) pass Z[None], of shape "
        "(1, n_tokens, token_dim); for one-token sequences pass X[:, None], "
        "which does not warn.",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )


class MultiHeadLinearAttention:
    """A single layer of multi-head linear attention.

    ``y(Z) = sum_h V_h (Z^T Z) Q_h q`` with ``q = Z[-1]``: no softmax, no scaling,
    no mask. Tokens are rows of ``Z``. ``predict(X, positions="all")`` gives the
    output at every position ``t``, ``y_t = sum_h V_h S_t Q_h z_t``, with ``S_t``
    the prefix second moment (causal) or the whole sequence's.

    Parameters
    ----------
    value_matrices : array-like of shape (n_heads, n_outputs, token_dim)
        The value matrices ``V_h``.
    query_matrices : array-like of shape (n_heads, token_dim, token_dim)
        The fused key-query matrices ``Q_h``.

    Attributes
    ----------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
        The value matrices ``V_h``: a float64 copy of the input.
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
        The fused key-query matrices ``Q_h``: a float64 copy of the input.
    n_heads : int
        The number of heads ``H``.
    n_outputs : int
        The length of the output ``y(Z)``.
    token_dim : int
        The token dimension ``d`` the model reads.

    Examples
    --------
    One head that returns ``sum_j <q, k_j> v_j`` for tokens ``[k_j ; v_j]``, ``d=2``:

    >>> import numpy as np
    >>> from sklearn_linattn import MultiHeadLinearAttention
    >>> V = np.array([[[0.0, 1.0]]])                # read the value coordinate
    >>> # match on the key coordinate
    >>> Q = np.array([[[1.0, 0.0], [0.0, 0.0]]])
    >>> model = MultiHeadLinearAttention(V, Q)
    >>> # the query: key 3, no value
    >>> Z = np.array([[[2.0, 5.0], [3.0, 7.0], [3.0, 0.0]]])
    >>> model.predict(Z)  # 2*3*5 + 3*3*7 + 3*3*0
    array([[93.]])
    >>> np.allclose(model.predict(Z), model.predict(Z.reshape(1, -1)))
    True
    """

    def __init__(self, value_matrices, query_matrices):
        # copies: a model does not change with the caller's arrays
        value = _real_matrices(
            "value_matrices", value_matrices, "(n_heads, n_outputs, token_dim)"
        )
        query = _real_matrices(
            "query_matrices", query_matrices, "(n_heads, token_dim, token_dim)"
        )
        if value.ndim != 3:
            raise ValueError(
                "value_matrices must have shape (n_heads, n_outputs, token_dim), got "
                f"an array with {value.ndim} dimension(s) and shape {value.shape}."
            )
        if query.ndim != 3 or query.shape[1] != query.shape[2]:
            raise ValueError(
                "query_matrices must have shape (n_heads, token_dim, token_dim), got "
                f"shape {query.shape}."
            )
        if value.shape[0] != query.shape[0]:
            raise ValueError(
                f"value_matrices has {value.shape[0]} heads but query_matrices has "
                f"{query.shape[0]}; both need shape (n_heads, ...)."
            )
        if value.shape[2] != query.shape[1]:
            raise ValueError(
                f"value_matrices has token_dim {value.shape[2]} but query_matrices has "
                f"token_dim {query.shape[1]}; expected (n_heads, n_outputs, token_dim) "
                "and (n_heads, token_dim, token_dim)."
            )
        if query.shape[1] == 0 or value.shape[1] == 0:
            raise ValueError("token_dim and n_outputs must be at least 1.")
        for name, matrices in (("value_matrices", value), ("query_matrices", query)):
            if not np.all(np.isfinite(matrices)):
                head = int(np.flatnonzero(~np.isfinite(matrices).all(axis=(1, 2)))[0])
                raise ValueError(
                    f"{name} must be finite; head {head} has NaN or infinite "
                    "entries (None in a list is read as NaN)."
                )
        self.value_matrices = value
        self.query_matrices = query

    @property
    def n_heads(self):
        return self.value_matrices.shape[0]

    @property
    def n_outputs(self):
        return self.value_matrices.shape[1]

    @property
    def token_dim(self):
        return self.query_matrices.shape[1]

    def __repr__(self):
        return (
            f"MultiHeadLinearAttention(n_heads={self.n_heads}, "
            f"n_outputs={self.n_outputs}, token_dim={self.token_dim})"
        )

    def predict(self, X, positions="last", causal=True):
        """Output of the attention layer, computed by its definition.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            Sequences, tokens as rows, the query last. 2-D rows are sequences
            flattened token by token, so one sequence ``Z`` of shape (n_tokens,
            token_dim) would be ``n_tokens`` one-token sequences (which warns):
            pass it as ``Z[None]``. A Dask array gives a lazy Dask array of
            outputs, computed block by block of samples.
        positions : {"last", "all"}, default="last"
            ``"last"``: the output at the last token, ``sum_h V_h (Z^T Z) Q_h q``.
            ``"all"``: the output at every position ``t``,
            ``y_t = sum_h V_h S_t Q_h z_t``.
        causal : bool, default=True
            With ``positions="all"``: ``S_t = sum_{s <= t} z_s z_s^T`` (each position
            sees itself and the tokens before it) if True, ``S_t = Z^T Z`` (every
            position sees the whole sequence) if False. Ignored with
            ``positions="last"``, where both coincide.

        Returns
        -------
        y : ndarray of shape (n_samples, n_outputs), or \
(n_samples, n_tokens, n_outputs) with ``positions="all"``

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_linattn import MultiHeadLinearAttention
        >>> # y = (sum z^2) z
        >>> model = MultiHeadLinearAttention([[[1.0]]], [[[1.0]]])
        >>> Z = np.array([[[1.0], [2.0]]])
        >>> model.predict(Z, positions="all")[0, :, 0]  # 1*1, (1 + 4)*2
        array([ 1., 10.])
        >>> model.predict(Z, positions="all", causal=False)[0, :, 0]  # 5*1, 5*2
        array([ 5., 10.])
        """
        if not isinstance(positions, str) or positions not in ("last", "all"):
            raise ValueError(f'positions must be "last" or "all", got {positions!r}.')
        if not isinstance(causal, (bool, np.bool_)):
            raise ValueError(f"causal must be True or False, got {causal!r}.")
        sequences = validate_sequences(X, token_dim=self.token_dim)
        _warn_if_one_sequence_as_rows(X, sequences)
        if is_dask_array(sequences):  # lazily, block by block of samples
            return self._predict_dask(sequences, positions, causal)
        # Every factor of V_h S Q_h z_t at unit size, scaled by powers of two
        # (exact): each head, each sequence (for S) and each query token, so that
        # large or tiny numbers overflow or underflow only in an output beyond
        # the float range (+-inf and a warning that says so), not on the way.
        with np.errstate(over="ignore"):
            if positions == "last":
                tokens, token_exponents = to_unit(sequences, (1, 2))
                gram = np.matmul(tokens.transpose(0, 2, 1), tokens)  # S = Z^T Z
                query, query_exponent = to_unit(sequences[:, -1], 1)
                readout = heads_readout(self.value_matrices, self.query_matrices)
                outputs = readout(gram, query, 2 * token_exponents + query_exponent)
            else:
                outputs = _every_position(
                    sequences, self.value_matrices, self.query_matrices, causal
                )
        if not np.isfinite(outputs).all():
            # (was numpy's "overflow encountered in ldexp", which names nothing)
            warnings.warn(
                "Some outputs of the model are beyond the float64 range (inf): "
                "sum_h V_h S Q_h q is cubic in the tokens, whose largest entry "
                f"here is {float(np.max(np.abs(sequences), initial=0.0)):.3g}. "
                "Scale X down: a factor c multiplies every output by c^3.",
                RuntimeWarning,
                stacklevel=caller_stacklevel(),
            )
        return outputs

    def _predict_dask(self, sequences, positions, causal):
        """:meth:`predict` of each block of a validated Dask array (chunked
        along samples only), its values checked as numpy input's."""
        last = positions == "last"

        def predict_block(block):
            return self.predict(check_sequence_values(block), positions, causal)

        return sequences.map_blocks(
            predict_block,
            dtype=np.float64,
            chunks=(*sequences.chunks[: 1 if last else 2], (self.n_outputs,)),
            drop_axis=2 if last else None,
            meta=np.empty((0,) * (2 if last else 3)),
        )

    def generate(self, X, n_steps, to_token=None):
        """Run the layer forward: append one token per step to each prompt.

        At each step the output at the last token of the current sequence,
        ``y = sum_h V_h S Q_h q`` (as :meth:`predict` with ``positions="last"``),
        becomes the next token (``to_token=None``) or is mapped to it by
        ``to_token``. The second moment ``S`` is updated in place,
        ``S <- S + z z^T``, so a step costs O(n_heads * d^2) whatever the length
        of the sequence. Left padding (zero tokens) in the prompt changes nothing.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            The prompts, tokens as rows, as in :meth:`predict` (one prompt ``Z``
            as ``Z[None]``; a Dask array is computed first: the rollout is
            sequential).
        n_steps : int
            Number of tokens to generate (>= 1).
        to_token : callable or None, default=None
            ``to_token(outputs, step)`` maps the outputs at step ``step`` (0-based),
            shape (n_samples, n_outputs), to the next tokens, shape (n_samples,
            token_dim) (a copy of the outputs is passed). None appends the outputs
            themselves, which needs ``n_outputs == token_dim``.

        Returns
        -------
        tokens : ndarray of shape (n_samples, n_steps, token_dim)
            The generated tokens.
        outputs : ndarray of shape (n_samples, n_steps, n_outputs)
            ``outputs[:, t]`` is ``predict`` of the prompt followed by
            ``tokens[:, :t]``. Both come as a named tuple
            ``GeneratedSequences(tokens, outputs)``.

        Raises
        ------
        ValueError
            Naming the step, when the outputs or the next tokens at a step are
            not finite (the rollout diverged), or ``to_token`` returns tokens of
            the wrong shape.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_linattn import MultiHeadLinearAttention
        >>> # y = (sum z^2) q
        >>> model = MultiHeadLinearAttention([[[1.0]]], [[[1.0]]])
        >>> prompt = np.array([[[1.0], [0.5]]])
        >>> tokens, outputs = model.generate(prompt, 2)
        >>> tokens[0, :, 0]  # 1.25 * 0.5, then (1.25 + 0.625^2) * 0.625
        array([0.625     , 1.02539062])
        >>> grown = np.concatenate([prompt, tokens[:, :1]], axis=1)
        >>> bool(np.allclose(outputs[:, 1], model.predict(grown)))
        True

        A ``to_token`` that keeps the tokens on the unit circle:

        >>> rotate = MultiHeadLinearAttention(
        ...     [[[0.0, -1.0], [1.0, 0.0]]], [np.eye(2)])
        >>> unit = lambda outputs, step: outputs / np.linalg.norm(
        ...     outputs, axis=1, keepdims=True)
        >>> tokens, _ = rotate.generate(np.array([[[1.0, 0.0]]]), 3, to_token=unit)
        >>> tokens[0].round(3)
        array([[ 0.,  1.],
               [-1.,  0.],
               [ 0., -1.]])
        """
        if is_dask_array(X):  # a rollout reads every prompt at each step
            X = X.compute()
        sequences = validate_sequences(X, token_dim=self.token_dim)
        _warn_if_one_sequence_as_rows(X, sequences)
        readout = heads_readout(self.value_matrices, self.query_matrices)
        return rollout(sequences, n_steps, readout, to_token)

    def lifted_coef(self):
        """Non-redundant lifted coefficients of the function this model computes.

        Returns
        -------
        lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
            Ordered as the lifted features, so that
            ``predict(X)`` equals
            ``LiftedAttentionFeatures(token_dim=d).fit_transform(X) @ lifted_coef().T``
            to rounding (``d`` the token dimension).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_linattn import (
        ...     LiftedAttentionFeatures, MultiHeadLinearAttention
        ... )
        >>> rng = np.random.default_rng(0)
        >>> model = MultiHeadLinearAttention(
        ...     rng.normal(size=(2, 1, 3)), rng.normal(size=(2, 3, 3))
        ... )
        >>> X = rng.normal(size=(4, 5, 3))
        >>> features = LiftedAttentionFeatures(token_dim=3).fit_transform(X)
        >>> np.allclose(features @ model.lifted_coef().T, model.predict(X))
        True
        """
        d = self.token_dim
        # the full W and the lifted coefficients (half its size) at once
        check_allocation(
            "lifted_coef",
            {"the coefficients W[a, b, c, e]": (self.n_outputs, d, d, d)},
            peak=2,
        )
        # W[(a,b),(c,e)] = sum_h V_h[a,b] Q_h[c,e]
        folded = np.einsum(
            "hab,hce->abce", self.value_matrices, self.query_matrices
        ).reshape(self.n_outputs * d, d * d)
        with np.errstate(over="ignore", invalid="ignore"):
            lifted = unfold_lifted_coef(folded, d)
        if np.all(np.isfinite(lifted)):
            return lifted
        return self._lifted_coef_at_unit_scale()

    def _lifted_coef_at_unit_scale(self):
        """:meth:`lifted_coef` with each head's ``V_h (x) Q_h`` at unit size and
        the heads summed entry by entry in the scale of the largest term
        (:func:`sum_heads`): where a head's products, or the sum of a pair's two
        entries, lie beyond the float range while the coefficient does not (heads
        that cancel), the coefficient comes out finite; a coefficient beyond the
        range is +-inf, with numpy's overflow warning."""
        d, n_outputs = self.token_dim, self.n_outputs
        value, query, head_exponents = unit_heads(
            self.value_matrices, self.query_matrices
        )
        per_head = np.stack(
            [
                unfold_lifted_coef(np.einsum("ab,ce->abce", v, q).reshape(-1, d * d), d)
                for v, q in zip(value, query, strict=True)
            ],
            axis=-1,
        )  # (n_outputs, n_lifted_features, n_heads), entries below 2 in size
        summed = sum_heads(per_head[..., None], head_exponents, 0)
        return summed.reshape(n_outputs, -1)

    def distance(self, other, convention="isometric"):
        """Frobenius distance between the lifted coefficients of two models.

        Zero exactly when both compute the same function on every input (the
        paper's model distance).

        Parameters
        ----------
        other : MultiHeadLinearAttention
            A model with the same ``token_dim`` and ``n_outputs``.
        convention : {"isometric", "paper"}, default="isometric"
            The basis of the coefficients. ``"isometric"``: the package's lifted
            coefficients, which pair with the isometric features (off-diagonal
            ``S[b, c]`` entries weighted by ``sqrt(2)``, see the theory page).
            ``"paper"``: the authors' unscaled basis (Yau et al. 2025, their
            code's ``fold_params``), where the coefficient of ``S[b, c] q[e]``
            for ``b < c`` is ``W[a,b,c,e] + W[a,c,b,e]``, ``sqrt(2)`` times
            ours; use it to compare with the paper's figures. Both are zero
            together, and the paper's lies between ours and ``sqrt(2)`` times ours.

        Returns
        -------
        distance : float

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_linattn import MultiHeadLinearAttention
        >>> Q = np.zeros((1, 2, 2))
        >>> Q[0, 0, 1] = 1.0  # W[0, 0, 0, 1] = 1: only the pair (b, c) = (0, 0)
        >>> a = MultiHeadLinearAttention(np.array([[[1.0, 0.0]]]), Q)
        >>> b = MultiHeadLinearAttention(np.array([[[0.0, 1.0]]]), Q)  # pair (1, 0)
        >>> zero = MultiHeadLinearAttention(np.zeros((1, 1, 2)), Q)
        >>> a.distance(zero), a.distance(zero, convention="paper")  # diagonal pair
        (1.0, 1.0)
        >>> paper = b.distance(zero, convention="paper")
        >>> round(b.distance(zero), 4), round(paper, 4)
        (0.7071, 1.0)
        """
        if not isinstance(other, MultiHeadLinearAttention):
            raise TypeError(
                "distance expects a MultiHeadLinearAttention, got "
                f"{type(other).__name__}."
            )
        if not isinstance(convention, str) or convention not in ("isometric", "paper"):
            raise ValueError(
                f'convention must be "isometric" or "paper", got {convention!r}.'
            )
        if (other.token_dim, other.n_outputs) != (self.token_dim, self.n_outputs):
            raise ValueError(
                "Both models need the same token_dim and n_outputs, got "
                f"(token_dim={self.token_dim}, n_outputs={self.n_outputs}) and "
                f"(token_dim={other.token_dim}, n_outputs={other.n_outputs})."
            )
        mine, theirs = self.lifted_coef(), other.lifted_coef()
        # The norm of the difference at unit size, scaled back by a power of two
        # (exact): coefficients near the ends of the float range neither
        # overflow in the difference or its squares (a finite distance that
        # read inf) nor underflow to a distance of 0 between different models.
        largest = max(
            np.abs(mine).max(initial=0.0), np.abs(theirs).max(initial=0.0)
        )
        if not np.isfinite(largest):  # coefficients beyond the float range
            same = np.array_equal(mine, theirs)
            return 0.0 if same and not np.isnan(largest) else float("inf")
        exponent = int(np.frexp(largest)[1])
        difference = np.ldexp(mine, -exponent) - np.ldexp(theirs, -exponent)
        if convention == "paper":
            _, _, scales = _fold_indices(self.token_dim)  # 1 / w_bc
            difference = difference / scales
        return float(np.ldexp(np.linalg.norm(difference), exponent))
