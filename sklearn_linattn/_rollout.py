"""Autoregressive rollout of one attention layer with a streaming state.

The output at the last token of a sequence depends on the prefix only through
``S = Z^T Z = sum_s z_s z_s^T`` and the last token ``q``. Appending a token ``z``
updates ``S <- S + z z^T`` in O(d^2), so each generated token costs the same,
however long the sequence has grown; nothing is recomputed over the prefix.
"""

from numbers import Integral
from typing import NamedTuple

import numpy as np

__all__ = ["GeneratedSequences", "heads_readout", "lifted_readout", "rollout"]


class GeneratedSequences(NamedTuple):
    """What ``generate`` returns: unpack it as ``tokens, outputs = ...``.

    Attributes
    ----------
    tokens : ndarray of shape (n_samples, n_steps, token_dim)
        The generated tokens, appended after the prompt in order.
    outputs : ndarray of shape (n_samples, n_steps, n_outputs)
        ``outputs[:, t]`` is the model's output at the last token of the prompt
        followed by ``tokens[:, :t]``; ``tokens[:, t]`` was made from it.
    """

    tokens: np.ndarray
    outputs: np.ndarray


def heads_readout(value_matrices, query_matrices):
    """``(S, q) -> sum_h V_h S Q_h q`` for a batch: O(n_heads d^2) per sequence."""

    def readout(moment, query):
        # Q_h q for every head, then S (Q_h q), then V_h (S Q_h q), summed over h.
        keyed = np.einsum("hce,ne->nhc", query_matrices, query)  # Q_h q
        attended = np.einsum("nbc,nhc->nhb", moment, keyed)  # S Q_h q
        return np.einsum("hab,nhb->na", value_matrices, attended)

    return readout


def lifted_readout(coef, token_dim):
    """``(S, q) -> phi(S, q) @ coef.T`` for a batch, where
    ``phi(S, q)[(b, c), e] = w_bc S[b, c] q[e]`` are the lifted features
    (``w_bc = sqrt(2)`` off the diagonal): O(n_outputs d^3) per sequence."""
    rows, cols = np.triu_indices(token_dim)
    weights = np.where(rows == cols, 1.0, np.sqrt(2.0))

    def readout(moment, query):
        pairs = moment[:, rows, cols] * weights  # (n, n_pairs)
        features = (pairs[:, :, None] * query[:, None, :]).reshape(len(query), -1)
        return features @ coef.T

    return readout


def _check_n_steps(n_steps):
    if isinstance(n_steps, (bool, np.bool_)) or not isinstance(n_steps, Integral):
        raise TypeError(f"n_steps must be a positive integer, got {n_steps!r}.")
    if n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}.")
    return int(n_steps)


def _check_to_token(to_token):
    if to_token is not None and not callable(to_token):
        raise TypeError(
            "to_token must be None or a callable to_token(outputs, step) returning "
            f"the next tokens, got {type(to_token).__name__}."
        )


def _next_tokens(to_token, outputs, step, n_samples, token_dim):
    """The tokens to append, checked: shape (n_samples, token_dim), finite."""
    if to_token is None:
        n_outputs = 1 if outputs.ndim == 1 else outputs.shape[1]
        if n_outputs != token_dim:
            raise ValueError(
                f"generate without to_token appends each output as the next token, "
                f"which needs n_outputs == token_dim; the model has n_outputs="
                f"{n_outputs} and token_dim={token_dim}. Pass to_token(outputs, "
                f"step) returning an array of shape (n_samples, {token_dim})."
            )
        tokens = outputs.reshape(n_samples, token_dim)
        source = "the model's output"
    else:
        tokens = np.asarray(to_token(outputs.copy(), step))
        if tokens.ndim == 1 and token_dim == 1 and tokens.shape[0] == n_samples:
            tokens = tokens[:, None]
        if tokens.shape != (n_samples, token_dim):
            raise ValueError(
                f"to_token must return an array of shape (n_samples, token_dim) = "
                f"({n_samples}, {token_dim}); at step {step} it returned shape "
                f"{tokens.shape}."
            )
        if tokens.dtype.kind not in "biuf":
            raise ValueError(
                f"to_token must return real numbers; at step {step} it returned "
                f"dtype {tokens.dtype}."
            )
        source = "to_token"
    if not np.all(np.isfinite(tokens)):
        raise ValueError(
            f"The next token at step {step} is not finite (from {source}): the "
            "rollout diverged or to_token produced NaN/infinity."
        )
    return tokens


def _check_outputs(outputs, step):
    """A clear error when the model's outputs overflow, whatever ``to_token``
    does with them."""
    if not np.all(np.isfinite(outputs)):
        raise ValueError(
            f"The model's output at step {step} is not finite (inf or NaN): the "
            "rollout diverged, its outputs (or the tokens before them) grew beyond "
            "the float range. Keep the tokens bounded in to_token, e.g. normalise "
            "them."
        )


def rollout(
    sequences,
    n_steps,
    readout,
    to_token=None,
    intercept=0.0,
    rescale=False,
    single_column=False,
):
    """Append ``n_steps`` tokens to each sequence, one per step.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), validated
        The prompts (left zero padding changes nothing).
    n_steps : int
    readout : callable
        ``readout(S, q)`` with ``S`` of shape (n_samples, d, d) and ``q`` of shape
        (n_samples, d): the homogeneous cubic part of the model's output at the
        last token, (n_samples, n_outputs).
    to_token : callable or None
        ``to_token(outputs, step)`` -> (n_samples, token_dim); None appends the
        outputs themselves.
    intercept : float or ndarray of shape (n_outputs,), default=0.0
        Added to the readout.
    rescale : bool, default=False
        Keep the state of each sequence in units where its largest token entry so
        far is in [1/2, 1) (a power of two, so exact), as the estimators'
        ``predict`` lifts each chunk: then ``S`` and the cubic features neither
        overflow nor underflow at any scale of the tokens.
    single_column : bool, default=False
        Hand the outputs to ``to_token`` and return them without their single
        column, (n_samples,) per step, as ``predict`` of a model with 1-D
        targets (or ``decision_function`` of two classes) returns them.

    Returns
    -------
    result : GeneratedSequences
        Outputs of shape (n_samples, n_steps, n_outputs), or (n_samples, n_steps)
        with ``single_column``.
    """
    n_steps = _check_n_steps(n_steps)
    _check_to_token(to_token)
    n_samples, _, token_dim = sequences.shape
    # The state in scaled units: tokens times 2**-exponent (exponent 0 unscaled).
    exponent = np.zeros(n_samples, dtype=int)
    if rescale:
        exponent = np.frexp(np.abs(sequences).max(axis=(1, 2), initial=0.0))[1]
        sequences = np.ldexp(sequences, -exponent[:, None, None])
    moment = np.matmul(sequences.transpose(0, 2, 1), sequences)  # S = Z^T Z
    query = sequences[:, -1, :].copy()
    tokens = np.empty((n_samples, n_steps, token_dim))
    outputs = None
    quiet = {"over": "ignore", "invalid": "ignore"}  # checked after each step
    for step in range(n_steps):
        with np.errstate(**quiet):
            # the cubic scales by 2**(3 * exponent) back to the data's units
            output = np.ldexp(readout(moment, query), 3 * exponent[:, None])
            output = output + intercept
        if single_column:
            output = output[:, 0]
        _check_outputs(output, step)
        if outputs is None:
            outputs = np.empty((n_samples, n_steps) + output.shape[1:])
        outputs[:, step] = output
        token = _next_tokens(to_token, output, step, n_samples, token_dim)
        tokens[:, step] = token
        if rescale:  # a larger token moves the state to coarser units
            grown = np.maximum(exponent, np.frexp(np.abs(token).max(axis=1))[1])
            moment = np.ldexp(moment, -2 * (grown - exponent)[:, None, None])
            exponent = grown
        query = np.ldexp(token, -exponent[:, None])
        with np.errstate(**quiet):
            moment += query[:, :, None] * query[:, None, :]  # S + z z^T
    return GeneratedSequences(tokens, outputs)

