"""Autoregressive rollout of one attention layer with a streaming state.

The output at the last token of a sequence depends on the prefix only through
``S = Z^T Z = sum_s z_s z_s^T`` and the last token ``q``. Appending a token ``z``
updates ``S <- S + z z^T`` in O(d^2), so each generated token costs the same,
however long the sequence has grown; nothing is recomputed over the prefix.

A pipeline rolls out the same way when its preprocessing steps act token by token
(:func:`generate_pipeline`): each generated token goes through those steps before it
is appended, as it would when the whole grown sequence is transformed again.
"""

import warnings
from numbers import Integral
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ._data import check_allocation, to_unit
from ._validation import is_dask_array, validate_sequences
from .preprocessing import (
    ALL_PADDING_WARNING,
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
    _padding_mask,
)

__all__ = [
    "GeneratedSequences",
    "generate_pipeline",
    "heads_readout",
    "lifted_readout",
    "rollout",
]


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


def unit_heads(value_matrices, query_matrices):
    """Each head's ``V_h`` and ``Q_h`` scaled by powers of two to entries below 1
    in absolute value, and the exponents ``e_h`` that scale ``V_h ... Q_h`` back
    (exact), so that heads of any magnitudes keep their digits."""
    value, value_exponents = to_unit(value_matrices, (1, 2))
    query, query_exponents = to_unit(query_matrices, (1, 2))
    return value, query, value_exponents + query_exponents


def sum_heads(per_head, head_exponents, exponents):
    """``2**exponents sum_h 2**e_h per_head[..., h, :]``, summed in the scale of
    the largest term (each output's own): heads that cancel do so before the
    sum is scaled up, and a head far smaller than another (or beside one that
    contributes nothing) keeps its digits. ``exponents`` broadcasts against
    ``per_head`` without its last two axes."""
    magnitude = np.abs(per_head).max(axis=-1, initial=0.0)
    none = -(2**20)  # below any exponent (float64: +-1100): a term that is 0
    terms = np.where(magnitude > 0, np.frexp(magnitude)[1] + head_exponents, none)
    common = terms.max(axis=-1, initial=none)
    common = np.where(common == none, 0, common)  # every term 0
    shifts = head_exponents - common[..., None]
    summed = np.ldexp(per_head, shifts[..., None]).sum(axis=-2)
    return np.ldexp(summed, (common + exponents)[..., None])


def heads_readout(value_matrices, query_matrices):
    """``(S, q, e) -> 2**e sum_h V_h S Q_h q`` for a batch: O(n_heads d^2) per
    sequence, each head computed at unit size (:func:`unit_heads`,
    :func:`sum_heads`)."""
    value, query, head_exponents = unit_heads(value_matrices, query_matrices)

    def readout(moment, query_tokens, exponents):
        # Q_h q for every head, then S (Q_h q), then V_h (S Q_h q), summed over h.
        keyed = np.einsum("hce,ne->nhc", query, query_tokens)  # Q_h q
        attended = np.einsum("nbc,nhc->nhb", moment, keyed)  # S Q_h q
        per_head = np.einsum("hab,nhb->nha", value, attended)
        return sum_heads(per_head, head_exponents, np.reshape(exponents, -1))

    return readout


def lifted_readout(coef, token_dim):
    """``(moment, query, exponents) -> ldexp(phi(S, q) @ coef.T, exponents)``
    for a batch, where ``moment`` holds the second moments ``S`` and ``query``
    the last tokens ``q`` at unit size, ``exponents`` their scales' powers of
    two, and ``phi(S, q)[(b, c), e] = w_bc S[b, c] q[e]`` are the lifted
    features (``w_bc = sqrt(2)`` off the diagonal): O(n_outputs d^3) per
    sequence."""
    rows, cols = np.triu_indices(token_dim)
    weights = np.where(rows == cols, 1.0, np.sqrt(2.0))

    def readout(moment, query, exponents):
        pairs = moment[:, rows, cols] * weights  # (n, n_pairs)
        features = (pairs[:, :, None] * query[:, None, :]).reshape(len(query), -1)
        return np.ldexp(features @ coef.T, np.reshape(exponents, (-1, 1)))

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
        tokens = to_token(outputs.copy(), step)
        if tokens is None:  # (numpy's shape () named nothing)
            raise ValueError(
                f"to_token must return an array of shape (n_samples, token_dim) = "
                f"({n_samples}, {token_dim}); at step {step} it returned None "
                "(a missing return statement?)."
            )
        if sp.issparse(tokens):  # e.g. a OneHotEncoder's output
            tokens = tokens.toarray()
        try:
            tokens = np.asarray(tokens)
        except (TypeError, ValueError) as error:  # ragged lists, say
            raise ValueError(
                f"to_token must return an array of shape (n_samples, token_dim) = "
                f"({n_samples}, {token_dim}); at step {step} numpy could not "
                f"convert what it returned to an array: {error}"
            ) from None
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
        with np.errstate(over="ignore"):  # beyond float64 (long double): checked
            tokens = tokens.astype(np.float64)
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


#: The exponent of a state or token that is all zero: below any float's (+-1100),
#: so that the first non-zero token sets the state's scale.
_NO_SCALE = -(2**20)


def _scale_of(array, exponents, axes):
    """``exponents`` (of :func:`to_unit`), ``_NO_SCALE`` where ``array`` is all
    zero over ``axes``."""
    return np.where(np.any(array != 0, axis=axes), exponents, _NO_SCALE)


def rollout(
    sequences,
    n_steps,
    readout,
    to_token=None,
    intercept=0.0,
    single_column=False,
):
    """Append ``n_steps`` tokens to each sequence, one per step.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), validated
        The prompts (left zero padding changes nothing).
    n_steps : int
    readout : callable
        ``readout(S, q, e)`` with ``S`` of shape (n_samples, d, d), ``q`` of shape
        (n_samples, d) and ``e`` integer exponents (n_samples,): the homogeneous
        cubic part of the model's output at the last token times ``2**e``,
        (n_samples, n_outputs).
    to_token : callable or None
        ``to_token(outputs, step)`` -> (n_samples, token_dim); None appends the
        outputs themselves.
    intercept : float or ndarray of shape (n_outputs,), default=0.0
        Added to the readout.
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
    check_allocation("generate", {"tokens": (n_samples, n_steps, token_dim)})
    # The state in units of powers of two (exact), as
    # MultiHeadLinearAttention.predict scales it: S in those where the largest
    # token entry so far is in [1/2, 1), the query in its own (far smaller than
    # the context, it would underflow in the context's), so that neither
    # overflows nor underflows at any scale of the tokens.
    query, query_exponent = to_unit(sequences[:, -1], 1)
    sequences, exponent = to_unit(sequences, (1, 2))
    # an all-zero prompt (padding) has no scale: its first non-zero token sets it
    exponent = _scale_of(sequences, exponent, (1, 2))
    moment = np.matmul(sequences.transpose(0, 2, 1), sequences)  # S = Z^T Z
    tokens = np.empty((n_samples, n_steps, token_dim))
    outputs = None
    quiet = {"over": "ignore", "invalid": "ignore"}  # checked after each step
    for step in range(n_steps):
        with np.errstate(**quiet):
            # back to the data's units: S by 2**(2 exponent), q by its own
            output = readout(moment, query, 2 * exponent + query_exponent)
            output = output + intercept
        if single_column:
            output = output[:, 0]
        _check_outputs(output, step)
        if outputs is None:
            shape = (n_samples, n_steps, *output.shape[1:])
            check_allocation("generate", {"tokens": tokens.shape, "outputs": shape})
            outputs = np.empty(shape)
        outputs[:, step] = output
        token = _next_tokens(to_token, output, step, n_samples, token_dim)
        tokens[:, step] = token
        query, query_exponent = to_unit(token, 1)
        # a larger token moves the state to coarser units; a zero token (whose
        # frexp exponent is 0) moves nothing: it would push a tiny state below
        # the float range
        grown = np.maximum(exponent, _scale_of(token, query_exponent, 1))
        moment = np.ldexp(moment, -2 * (grown - exponent)[:, None, None])
        exponent = grown
        scaled = np.ldexp(token, -exponent[:, None])
        with np.errstate(**quiet):
            moment += scaled[:, :, None] * scaled[:, None, :]  # S + z z^T
    return GeneratedSequences(tokens, outputs)


# --- pipelines ---------------------------------------------------------------------


class _TokenStep:
    """A fitted preprocessing step applied to one new token per sequence, exactly
    as its ``transform`` treats that token at the end of the grown sequence.

    ``map_tokens`` transforms real tokens, (m, token_dim_in) -> (m, token_dim_out).
    With ``padding="left"`` a new token is left padding, kept all zero, while every
    token of its sequence so far (the step's input) is all zero and so is it;
    ``token_dim_out`` is then the width of a padding token when every new token is
    padding (``map_tokens`` is not called with no tokens, as ``transform`` does
    not call it).
    """

    def __init__(self, map_tokens, token_dim_in, padding=None, token_dim_out=None):
        self.map_tokens = map_tokens
        self.token_dim_in = token_dim_in
        self.padding = padding
        self.token_dim_out = token_dim_out

    def start(self, step_input):
        """Record which prompts, as the step sees them, have a non-zero entry."""
        if self.padding == "left":
            values = np.asarray(step_input)
            self.started = np.any(values.reshape(len(values), -1) != 0, axis=1)

    def __call__(self, tokens):
        real = np.ones(len(tokens), dtype=bool)
        if self.padding == "left":
            real = self.started | np.any(tokens != 0, axis=1)
            self.started = real
            if not real.any():  # (scikit-learn's transformers refuse 0 samples)
                return np.zeros((len(tokens), self.token_dim_out))
        mapped = self.map_tokens(tokens[real])
        if sp.issparse(mapped):
            mapped = mapped.toarray()
        mapped = np.asarray(mapped, dtype=np.float64)
        out = np.zeros((len(tokens), mapped.shape[1]))
        out[real] = mapped
        return out


class _CountedPositionStep(_TokenStep):
    """``PositionalEncoding(origin="start")`` applied to one new token per
    sequence: its position is the number of real tokens before it, which the
    step counts from the prompt on."""

    def __init__(self, encoder):
        super().__init__(None, encoder.token_dim_, encoder.padding)
        self.encoder = encoder

    def start(self, step_input):
        super().start(step_input)
        values = np.asarray(step_input)
        tokens = values.reshape(len(values), -1, self.encoder.token_dim_)
        self.counts = _padding_mask(tokens, self.padding).sum(axis=1)

    def __call__(self, tokens):
        real = np.ones(len(tokens), dtype=bool)
        if self.padding == "left":
            real = self.started | np.any(tokens != 0, axis=1)
            self.started = real
        extra = self.encoder._extra_features(self.counts)
        out = np.where(real[:, None], np.column_stack([tokens, extra]), 0.0)
        self.counts = self.counts + real
        return out


def _identity(tokens):
    return tokens


def _static_reason(step):
    """Why a step cannot act token by token, read from its class and parameters
    alone (fitted or not), or None when that needs its fitted attributes or it
    can."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return None
    if isinstance(step, TokenwiseTransformer):
        return None
    if isinstance(step, PositionalEncoding):
        n_positions = step.n_positions
        if (
            step.origin != "start"
            and isinstance(n_positions, Integral)
            and n_positions > 0
        ):
            return _positions_reason(n_positions)
        return None  # (n_positions=None: counted at fit time)
    if isinstance(step, SeriesToTokens):
        if step.window != 1:
            return (
                f"with window={step.window} a new time step shifts every window "
                "of the series (each generated token would be one time step)"
            )
        if step.max_len is not None:
            return (
                f"max_len={step.max_len} drops the first token of a series that "
                "grows beyond it"
            )
        return None
    return (
        f"{type(step).__name__} is not a token-wise step of "
        "sklearn_linattn.preprocessing; wrap a transformer of single tokens in "
        "TokenwiseTransformer"
    )


def _positions_reason(n_positions):
    return (
        f"its {n_positions} position feature(s) count from the query, "
        "so each appended token moves every earlier token one position "
        "back and changes its features (count them from the start, "
        "PositionalEncoding(origin='start'), or append the constant "
        "alone, n_positions=0)"
    )


def _token_step(step):
    """``(token_step, None)`` for a fitted step that acts token by token,
    ``(None, reason)`` for one that does not."""
    reason = _static_reason(step)
    if reason is not None:
        return None, reason
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return _TokenStep(_identity, None), None
    if isinstance(step, TokenwiseTransformer):
        return (
            _TokenStep(
                step.transformer_.transform,
                step.token_dim_,
                step.padding,
                step.token_dim_out_,
            ),
            None,
        )
    if isinstance(step, PositionalEncoding):
        if step.origin == "start" and step.n_positions_ > 0:
            return _CountedPositionStep(step), None
        if step.n_positions_ > 0:
            return None, _positions_reason(step.n_positions_)
        if not step.constant:
            return _TokenStep(_identity, step.token_dim_), None

        def with_constant(tokens):
            return np.column_stack([tokens, np.ones(len(tokens))])

        token_step = _TokenStep(
            with_constant, step.token_dim_, step.padding, step.token_dim_out_
        )
        return token_step, None
    # SeriesToTokens(window=1) without max_len: a generated token is one time
    # step, its channels as features
    return _TokenStep(_identity, step.n_channels_), None


def _token_steps(steps, prefix="", fitted=True):
    """The token steps of ``(name, step)`` pairs (nested pipelines flattened),
    each paired with its fitted step, and the reasons for the steps that do not
    act token by token; with ``fitted=False``, only the reasons that the
    steps' classes and parameters give (no step is read as fitted)."""
    maps, reasons = [], []
    for name, step in steps:
        if isinstance(step, Pipeline):
            inner_maps, inner_reasons = _token_steps(
                step.steps, f"{prefix}{name}__", fitted
            )
            maps += inner_maps
            reasons += inner_reasons
            continue
        if fitted:
            token_step, reason = _token_step(step)
        else:
            token_step, reason = None, _static_reason(step)
        if reason is None:
            maps.append((token_step, step))
        else:
            reasons.append(f"{prefix}{name!r}: {reason}")
    return maps, reasons


def _refuse_steps(reasons):
    if reasons:
        raise ValueError(
            "generate_pipeline preprocesses each generated token on its own, which "
            "needs every step before the final estimator to act token by token; "
            "these steps do not: " + "; ".join(reasons) + ". Roll out with "
            "pipeline.predict on the grown sequence instead (each step then "
            "transforms the whole sequence at every step)."
        )


def generate_pipeline(pipeline, X, n_steps, to_token=None):
    """Run a fitted pipeline forward: each generated token is preprocessed too.

    ``pipeline[-1].generate(pipeline[:-1].transform(X), ...)`` would append the
    generated tokens as they come out of ``to_token``, skipping the preprocessing
    that ``pipeline.predict`` applies to every token. Here each token ``to_token``
    returns is in the pipeline's input space (a raw token) and goes through the
    same steps before the final estimator appends it: the rollout is the one by
    ``pipeline.predict`` (``decision_function`` for a classifier) recomputed on the
    raw prompt followed by the raw tokens so far, in O(1) per step.

    That needs every step before the final estimator to act token by token, so
    that transforming the grown sequence again changes nothing but the new token:
    :class:`~sklearn_linattn.preprocessing.TokenwiseTransformer` (padding kept
    zero), :class:`~sklearn_linattn.preprocessing.PositionalEncoding` with
    ``origin="start"`` (a new token's position is the count of real tokens
    before it) or with ``n_positions=0`` (the constant alone),
    ``SeriesToTokens(window=1)`` without ``max_len`` (a raw token is then one
    time step, its channels), ``"passthrough"`` and pipelines of those.
    Positions counted from the query are not token-wise (each new token moves
    every earlier one a position back), nor are transformers of whole flattened
    rows.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        Fitted; its final estimator (that of a pipeline nested last) has
        ``generate``.
    X : array-like
        The raw prompts, as ``pipeline.predict`` takes them (a Dask array is
        computed first: the rollout is sequential).
    n_steps : int
        Number of tokens to generate (>= 1).
    to_token : callable or None, default=None
        ``to_token(outputs, step)`` maps the final estimator's outputs at step
        ``step`` (0-based; shaped as its ``predict`` or ``decision_function``
        returns them) to the next raw tokens, shape (n_samples, raw_token_dim),
        with ``raw_token_dim`` the token dimension of the pipeline's input (the
        channels for ``SeriesToTokens``). None appends the outputs themselves.

    Returns
    -------
    tokens : ndarray of shape (n_samples, n_steps, raw_token_dim)
        The generated raw tokens.
    outputs : ndarray of shape (n_samples, n_steps) or \
(n_samples, n_steps, n_outputs)
        ``outputs[:, t]`` is ``pipeline.predict`` (``decision_function``) of the
        prompt followed by ``tokens[:, :t]``, read at its last token. Both come
        as a named tuple ``GeneratedSequences(tokens, outputs)``.

    Raises
    ------
    ValueError
        Naming every step that does not act token by token, and why; or, naming
        the step, when the rollout diverges.
    TypeError
        When ``pipeline`` is not a ``Pipeline`` or its final estimator has no
        ``generate``.

    Examples
    --------
    Tokens scaled by a ``StandardScaler`` fitted on the raw tokens; the raw
    tokens generated are kept on the unit circle:

    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_linattn import LinearAttentionRegressor, generate_pipeline
    >>> from sklearn_linattn.datasets import make_random_mhla
    >>> from sklearn_linattn.preprocessing import TokenwiseTransformer
    >>> X, y, _ = make_random_mhla(300, 6, 2, n_outputs=2, random_state=0)
    >>> pipe = make_pipeline(
    ...     TokenwiseTransformer(StandardScaler(with_mean=False)),
    ...     LinearAttentionRegressor(),
    ... ).fit(3.0 * X, y)
    >>> def unit(out, step):
    ...     return out / np.linalg.norm(out, axis=1, keepdims=True)
    >>> tokens, outputs = generate_pipeline(pipe, 3.0 * X[:2], 5, to_token=unit)
    >>> tokens.shape, outputs.shape
    ((2, 5, 2), (2, 5, 2))
    >>> grown = np.concatenate([3.0 * X[:2], tokens[:, :4]], axis=1)
    >>> bool(np.allclose(outputs[:, 4], pipe.predict(grown)))
    True
    """
    if not isinstance(pipeline, Pipeline):
        raise TypeError(
            "generate_pipeline expects a fitted sklearn.pipeline.Pipeline, got "
            f"{type(pipeline).__name__}; call generate on an estimator directly."
        )
    all_steps = list(pipeline.steps)
    while isinstance(all_steps[-1][1], Pipeline):  # a final pipeline: its steps
        name, inner = all_steps.pop()
        all_steps += [(f"{name}__{inner}", step) for inner, step in inner.steps]
    final = all_steps[-1][1]
    if not hasattr(final, "generate"):
        raise TypeError(
            f"The final step of the pipeline, {type(final).__name__}, has no "
            "generate method; it must be an attention estimator of sklearn_linattn."
        )
    try:
        for _, step in all_steps:  # (the steps' checks read fitted attributes)
            if not (step is None or (isinstance(step, str) and step == "passthrough")):
                check_is_fitted(step)
    except NotFittedError:
        # Steps that cannot act token by token whatever their fit come first:
        # fitting the pipeline, as NotFittedError asks, would not help.
        _refuse_steps(_token_steps(all_steps[:-1], fitted=False)[1])
        raise
    steps, reasons = _token_steps(all_steps[:-1])
    _refuse_steps(reasons)
    n_steps = _check_n_steps(n_steps)
    _check_to_token(to_token)
    if is_dask_array(X):  # a rollout reads every prompt at each step, as generate
        X = X.compute()
    sequences = X
    for step, fitted in steps:  # the prompts through the steps, one at a time
        step_input = sequences
        if fitted not in (None, "passthrough"):
            # transform checks its input (naming what is wrong) before start
            # reads it; an empty prompt is where a rollout may start
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", ALL_PADDING_WARNING, UserWarning)
                sequences = fitted.transform(sequences)
        step.start(step_input)
    if sequences is X:  # no step transformed X: check it as generate will
        sequences = validate_sequences(
            X, token_dim=getattr(final, "token_dim_", None), estimator=final
        )
    raw_token_dim = next(
        (step.token_dim_in for step, _ in steps if step.token_dim_in),
        getattr(final, "token_dim_", None),
    )
    n_samples = len(sequences)
    check_allocation(
        "generate_pipeline", {"raw tokens": (n_samples, n_steps, raw_token_dim)}
    )
    raw_tokens = np.empty((n_samples, n_steps, raw_token_dim))

    def preprocessed_token(outputs, step):
        token = _next_tokens(to_token, outputs, step, n_samples, raw_token_dim)
        raw_tokens[:, step] = token
        for token_step, _ in steps:
            token = token_step(token)
        return token

    _, outputs = final.generate(sequences, n_steps, to_token=preprocessed_token)
    return GeneratedSequences(raw_tokens, outputs)
