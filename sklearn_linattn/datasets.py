"""Synthetic tasks: the paper's (random MHLA targets, associative recall, automata)
and in-context linear regression.

Every generator takes ``random_state`` and returns 3-D sequences ``X`` of shape
``(n_samples, n_tokens, token_dim)`` (tokens as rows, the query last), the targets,
and a :class:`~sklearn_linattn.MultiHeadLinearAttention` (the generating one; for
in-context regression the best one), so that recovery can be measured with
``fitted.attention_.distance(model)``.
"""

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ._attention import MultiHeadLinearAttention, fold_lifted_coef
from ._data import check_allocation
from ._validation import caller_stacklevel

# The generators' peak memory, in multiples of the arrays they return: 2.5 to 7.6
# (tracemalloc: associative recall's orthonormal keys 7.35, make_random_mhla's
# outputs at every position 7.6 on small inputs), from the noise, the keys and
# the products formed before the arrays are returned.
PEAK_COPIES = 8


def _check_memory(generator, shapes):
    """A ValueError naming the arrays before a generator whose peak would not
    fit in memory allocates them (:func:`check_allocation`)."""
    check_allocation(generator, shapes, peak=PEAK_COPIES)

__all__ = [
    "associative_recall_attention",
    "automaton_lookup_attention",
    "encode_automaton_lookup",
    "execute_automaton",
    "incontext_preconditioner",
    "make_associative_recall",
    "make_automaton",
    "make_automaton_lookups",
    "make_automaton_rollout",
    "make_automaton_traces",
    "make_automaton_transitions",
    "make_incontext_regression",
    "make_random_mhla",
]


def _generator(random_state):
    """A numpy Generator from an int, None, a Generator or a RandomState."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, (bool, np.bool_)):  # numpy reads True as seed 1
        raise ValueError(
            "random_state must be None, an int, a numpy Generator or a RandomState "
            f"(not a bool), got {random_state!r}."
        )
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as error:
        raise ValueError(
            "random_state must be None, a non-negative int, a numpy Generator or a "
            f"RandomState, got {random_state!r}."
        ) from error


def _check_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _check_nonnegative(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not 0 <= value < np.inf
    ):
        raise ValueError(f"{name} must be a finite real number >= 0, got {value!r}.")
    return float(value)


def _check_positions(positions, causal):
    if not isinstance(positions, str) or positions not in ("last", "all"):
        raise ValueError(f'positions must be "last" or "all", got {positions!r}.')
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal must be True or False, got {causal!r}.")
    return positions, bool(causal)


def make_random_mhla(
    n_samples,
    n_tokens,
    token_dim,
    n_heads=1,
    n_outputs=1,
    noise=0.0,
    random_state=None,
    positions="last",
    causal=True,
):
    """Sequences labelled by a random multi-head linear attention layer.

    The paper's first experiment: token entries ``N(0, 1 / n_tokens)``, value and
    query matrices with entries ``N(0, 1 / token_dim)``. With ``positions="all"``
    every position is labelled (the authors train causal attention this way).

    Parameters
    ----------
    n_samples, n_tokens, token_dim : int
    n_heads : int, default=1
        Heads of the generating model.
    n_outputs : int, default=1
        With 1, ``y`` is 1-D.
    noise : float, default=0.0
        Standard deviation of Gaussian noise added to the targets.
    random_state : int, numpy Generator, RandomState or None, default=None
    positions : {"last", "all"}, default="last"
        Label the output at the last token, or at every position.
    causal : bool, default=True
        With ``positions="all"``: position ``t`` sees tokens ``0..t`` (True) or the
        whole sequence (False); see
        :meth:`~sklearn_linattn.MultiHeadLinearAttention.predict`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_tokens, token_dim)
    y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        The generating model's output plus noise. With ``positions="all"``,
        ``(n_samples, n_tokens)`` or ``(n_samples, n_tokens, n_outputs)``.
    model : MultiHeadLinearAttention
        The generating model.

    Examples
    --------
    >>> from sklearn_linattn.datasets import make_random_mhla
    >>> X, y, model = make_random_mhla(100, 10, 3, n_heads=2, random_state=0)
    >>> X.shape, y.shape, model.n_heads
    ((100, 10, 3), (100,), 2)
    >>> X, y, model = make_random_mhla(
    ...     100, 10, 3, positions="all", random_state=0)
    >>> y.shape
    (100, 10)
    """
    n_samples = _check_int("n_samples", n_samples)
    n_tokens = _check_int("n_tokens", n_tokens)
    token_dim = _check_int("token_dim", token_dim)
    n_heads = _check_int("n_heads", n_heads)
    n_outputs = _check_int("n_outputs", n_outputs)
    noise = _check_nonnegative("noise", noise)
    positions, causal = _check_positions(positions, causal)
    per_sample = (n_tokens,) if positions == "all" else ()
    _check_memory(
        "make_random_mhla",
        {
            "X": (n_samples, n_tokens, token_dim),
            "y": (n_samples, *per_sample, n_outputs),
            "value matrices": (n_heads, n_outputs, token_dim),
            "query matrices": (n_heads, token_dim, token_dim),
        },
    )
    rng = _generator(random_state)
    scale = 1.0 / np.sqrt(token_dim)
    model = MultiHeadLinearAttention(
        rng.normal(scale=scale, size=(n_heads, n_outputs, token_dim)),
        rng.normal(scale=scale, size=(n_heads, token_dim, token_dim)),
    )
    X = rng.normal(scale=1.0 / np.sqrt(n_tokens), size=(n_samples, n_tokens, token_dim))
    y = model.predict(X, positions=positions, causal=causal)
    if noise:
        y = y + rng.normal(scale=noise, size=y.shape)
    return X, (y[..., 0] if n_outputs == 1 else y), model


def associative_recall_attention(key_dim):
    """The one-head MHLA that reads the value stored under the query's key.

    For tokens ``[k_j ; v_j]`` and query ``[q ; zeta]`` it returns
    ``sum_j <q, k_j> v_j + ||q||^2 zeta`` (the query token is part of the context):
    ``V = [0, I]``, ``Q = [[I, 0], [0, 0]]``.

    Parameters
    ----------
    key_dim : int

    Returns
    -------
    model : MultiHeadLinearAttention
        ``token_dim = 2 * key_dim``, ``n_outputs = key_dim``.

    Examples
    --------
    Two stored pairs with orthonormal keys; the query asks for the second key,
    with a zero value slot:

    >>> import numpy as np
    >>> from sklearn_linattn.datasets import associative_recall_attention
    >>> model = associative_recall_attention(2)
    >>> Z = np.array([[1.0, 0.0, 5.0, 6.0],    # key e1, value (5, 6)
    ...               [0.0, 1.0, 7.0, 8.0],    # key e2, value (7, 8)
    ...               [0.0, 1.0, 0.0, 0.0]])   # query: key e2
    >>> model.predict(Z[None])
    array([[7., 8.]])
    """
    key_dim = _check_int("key_dim", key_dim)
    _check_memory(
        "associative_recall_attention",
        {"value matrix": (key_dim, 2 * key_dim), "query matrix": (2 * key_dim,) * 2},
    )
    identity = np.eye(key_dim)
    zeros = np.zeros((key_dim, key_dim))
    value = np.hstack([zeros, identity])[None]
    query = np.block([[identity, zeros], [zeros, zeros]])[None]
    return MultiHeadLinearAttention(value, query)


def _random_orthogonal(rng, n_matrices, dim):
    """Haar-distributed orthogonal matrices (QR of Gaussian ones, signs fixed)."""
    q, r = np.linalg.qr(rng.normal(size=(n_matrices, dim, dim)))
    return q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]


def _unit_gaussian_columns(rng, n_matrices, dim, n_columns):
    """Gaussian matrices whose columns are scaled to unit norm."""
    columns = rng.normal(size=(n_matrices, dim, n_columns))
    return columns / np.linalg.norm(columns, axis=1, keepdims=True)


def make_associative_recall(
    n_samples,
    key_dim,
    n_pairs,
    distribution="gaussian",
    random_state=None,
    p_orth=1.0,
):
    """Key-value recall: return the value stored under the query's key.

    Each sequence holds ``n_pairs`` tokens ``[k_j ; v_j]`` and ends with the query
    ``[k_i ; zeta]`` for a stored key ``k_i`` chosen at random; ``zeta`` is noise in
    the query's value slot. Targets are the output of
    :func:`associative_recall_attention`, ``sum_j <k_i, k_j> v_j + ||k_i||^2 zeta``.

    Parameters
    ----------
    n_samples, key_dim, n_pairs : int
    distribution : {"gaussian", "orthogonal", "paper"}, default="gaussian"
        ``"gaussian"``: keys, values and ``zeta`` with entries ``N(0, 1/key_dim)``,
        the paper's identifiable distribution. ``"orthogonal"``: the tokens
        ``[k_j ; v_j]`` are rows of a random orthogonal matrix of size
        ``2 * key_dim`` drawn per sample (needs ``n_pairs <= 2 * key_dim``), ``zeta``
        as before. With ``n_pairs = 2 * key_dim`` the context is a whole orthonormal
        basis, so ``S = I + q q^T`` for every sequence and the certificate fails
        (``lambda_min = 0``). ``"paper"``: the distribution of the authors'
        key-value experiment (Yau et al. 2025), see ``p_orth``; needs
        ``n_pairs <= key_dim``.
    random_state : int, numpy Generator, RandomState or None, default=None
    p_orth : float in [0, 1], default=1.0
        Used with ``distribution="paper"``. For each sequence, with probability
        ``p_orth`` the keys are orthonormal (columns of a random orthogonal
        ``key_dim x key_dim`` matrix) and the values too, drawn independently;
        otherwise the keys and the values are independent Gaussian vectors scaled to
        unit norm. ``zeta`` has entries ``N(0, 1)``. As in the authors' code the
        choice is made once per sequence, for all its keys and values together. At
        ``p_orth=1`` with ``n_pairs = key_dim`` the data are not identifiable
        (``lambda_min = 0``); any ``p_orth < 1`` makes them identifiable, with
        ``lambda_min`` growing as ``p_orth`` falls: the paper's sweep.

    Returns
    -------
    X : ndarray of shape (n_samples, n_pairs + 1, 2 * key_dim)
    y : ndarray of shape (n_samples, key_dim)
    model : MultiHeadLinearAttention
        :func:`associative_recall_attention` of ``key_dim``.

    Examples
    --------
    >>> from sklearn_linattn import certify
    >>> from sklearn_linattn.datasets import make_associative_recall
    >>> X, y, model = make_associative_recall(
    ...     50, key_dim=3, n_pairs=4, random_state=0)
    >>> X.shape, y.shape
    ((50, 5, 6), (50, 3))
    >>> X, y, model = make_associative_recall(
    ...     2000, key_dim=2, n_pairs=2, distribution="paper", p_orth=1.0,
    ...     random_state=0)
    >>> certify(X).identifiable
    False
    """
    n_samples = _check_int("n_samples", n_samples)
    key_dim = _check_int("key_dim", key_dim)
    n_pairs = _check_int("n_pairs", n_pairs)
    if not isinstance(distribution, str) or distribution not in (
        "gaussian",
        "orthogonal",
        "paper",
    ):
        raise ValueError(
            "distribution must be 'gaussian', 'orthogonal' or 'paper', got "
            f"{distribution!r}."
        )
    if distribution == "orthogonal" and n_pairs > 2 * key_dim:
        raise ValueError(
            f"distribution='orthogonal' needs n_pairs <= 2 * key_dim, got n_pairs="
            f"{n_pairs} and key_dim={key_dim}."
        )
    if distribution == "paper" and n_pairs > key_dim:
        raise ValueError(
            f"distribution='paper' needs n_pairs <= key_dim (orthonormal keys), got "
            f"n_pairs={n_pairs} and key_dim={key_dim}."
        )
    if (
        isinstance(p_orth, bool)
        or not isinstance(p_orth, Real)
        or not 0 <= p_orth <= 1
    ):
        raise ValueError(f"p_orth must be a real number in [0, 1], got {p_orth!r}.")
    _check_memory(
        "make_associative_recall",
        {"X": (n_samples, n_pairs + 1, 2 * key_dim), "y": (n_samples, key_dim)},
    )
    rng = _generator(random_state)
    scale = 1.0 / np.sqrt(key_dim)
    if distribution == "paper":
        # Keys and values as columns (the authors' layout), then tokens as rows.
        orthonormal = rng.random(n_samples) < p_orth
        keys = np.empty((n_samples, key_dim, n_pairs))
        values = np.empty((n_samples, key_dim, n_pairs))
        n_orth = int(orthonormal.sum())
        keys[orthonormal] = _random_orthogonal(rng, n_orth, key_dim)[:, :, :n_pairs]
        values[orthonormal] = _random_orthogonal(rng, n_orth, key_dim)[:, :, :n_pairs]
        n_other = n_samples - n_orth
        keys[~orthonormal] = _unit_gaussian_columns(rng, n_other, key_dim, n_pairs)
        values[~orthonormal] = _unit_gaussian_columns(rng, n_other, key_dim, n_pairs)
        context = np.concatenate(
            [keys.transpose(0, 2, 1), values.transpose(0, 2, 1)], axis=2
        )
        zeta_scale = 1.0
    elif distribution == "gaussian":
        context = rng.normal(scale=scale, size=(n_samples, n_pairs, 2 * key_dim))
        zeta_scale = scale
    else:
        context = _random_orthogonal(rng, n_samples, 2 * key_dim)[:, :n_pairs]
        zeta_scale = scale
    keys = context[:, :, :key_dim]
    asked = rng.integers(0, n_pairs, size=n_samples)
    zeta = rng.normal(scale=zeta_scale, size=(n_samples, key_dim))
    query = np.concatenate([keys[np.arange(n_samples), asked], zeta], axis=1)
    X = np.concatenate([context, query[:, None, :]], axis=1)
    model = associative_recall_attention(key_dim)
    return X, model.predict(X), model


def make_automaton(n_states, n_symbols, random_state=None):
    """A random deterministic finite automaton.

    Parameters
    ----------
    n_states, n_symbols : int
    random_state : int, numpy Generator, RandomState or None, default=None

    Returns
    -------
    transitions : ndarray of int, shape (n_states, n_symbols)
        ``transitions[state, symbol]`` is the next state.

    See Also
    --------
    execute_automaton : Run an automaton by attention lookups.

    Examples
    --------
    >>> from sklearn_linattn.datasets import make_automaton
    >>> table = make_automaton(3, 2, random_state=0)
    >>> table.shape
    (3, 2)
    >>> bool(((table >= 0) & (table < 3)).all())  # next states in [0, 3)
    True
    """
    n_states = _check_int("n_states", n_states)
    n_symbols = _check_int("n_symbols", n_symbols)
    _check_memory("make_automaton", {"transitions": (n_states, n_symbols)})
    rng = _generator(random_state)
    return rng.integers(0, n_states, size=(n_states, n_symbols))


def _as_array(name, value):
    """``numpy.asarray(value)``, refusing what numpy cannot make a rectangular
    array of by name (a ragged list failed with "setting an array element with
    a sequence", a sparse matrix became a 0-d object array)."""
    _refuse_sparse(name, value)
    try:
        return np.asarray(value)
    except ValueError as error:
        raise ValueError(
            f"{name} must be a rectangular integer array; numpy could not make one "
            f"of it: {error}"
        ) from None


def _refuse_sparse(name, value):
    """A sparse matrix became a 0-d object array in numpy (an AttributeError
    or a shape of () further on)."""
    if sp.issparse(value):
        raise TypeError(
            f"{name} must be a dense integer array, got a sparse matrix; convert "
            "it with .toarray()."
        )


def _check_transitions(transitions):
    table = _as_array("transitions", transitions)
    if table.ndim != 2 or table.size == 0 or table.dtype.kind not in "iu":
        raise ValueError(
            "transitions must be a non-empty integer array of shape "
            f"(n_states, n_symbols), got {table.dtype} array of shape {table.shape}."
        )
    if table.min() < 0 or table.max() >= table.shape[0]:
        raise ValueError(
            f"transitions must hold states in [0, {table.shape[0]}), got values in "
            f"[{table.min()}, {table.max()}]."
        )
    return table


def _integer_array(name, value):
    """``value`` as an int array; floats (even 1.0), bools and strings are refused
    rather than truncated."""
    array = _as_array(name, value)
    if array.size == 0:
        return array.astype(int)
    if array.dtype.kind not in "iu":
        items = array.ravel()
        # the first item that is no integer (of an object array, whose items
        # have no .item())
        bad = next(
            (
                item
                for item in items
                if isinstance(item, (bool, np.bool_)) or not isinstance(item, Integral)
            ),
            items[0],
        )
        bad = bad.item() if isinstance(bad, np.generic) else bad
        raise ValueError(
            f"{name} must hold integers, got {array.dtype} values such as {bad!r}."
        )
    largest = np.iinfo(np.int64).max
    if array.dtype.kind == "u" and array.max() > largest:
        # (the int64 cast would show it negative: 2**63 + 5 as -2**63 + 5)
        raise ValueError(
            f"{name} must hold state or symbol indices, got "
            f"{array.max().item()}, beyond the int64 range of any index."
        )
    return array.astype(np.int64)


def _check_index(name, value, upper, upper_name=None):
    """``value`` as an int in ``[0, upper)``, else a ValueError naming ``name``
    (and the parameter ``upper_name`` that sets ``upper``, if given)."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, Integral)
        or not 0 <= value < upper
    ):
        bound = f" ({upper_name})" if upper_name else ""
        raise ValueError(
            f"{name} must lie in [0, {upper}){bound} and be an integer, got "
            f"{value!r}."
        )
    return int(value)


def automaton_lookup_attention(n_states, n_symbols):
    """The one-head MHLA that looks up a transition table given in its context.

    Tokens are ``[onehot(state, symbol) ; onehot(next_state)]`` and the query
    ``[onehot(state, symbol) ; 0]``; the head matches the query's (state, symbol)
    against each token's and returns that token's next state, one-hot.

    Parameters
    ----------
    n_states, n_symbols : int
        The automaton's numbers of states and of symbols.

    Returns
    -------
    model : MultiHeadLinearAttention
        ``token_dim = n_states * n_symbols + n_states``, ``n_outputs = n_states``.

    Examples
    --------
    The parity automaton (state 1 after an odd number of symbols 0): from state
    1, symbol 0 leads to state 0, read out as a one-hot vector:

    >>> from sklearn_linattn.datasets import (
    ...     automaton_lookup_attention, encode_automaton_lookup)
    >>> table = [[1, 0], [0, 1]]
    >>> model = automaton_lookup_attention(2, 2)
    >>> model.predict(encode_automaton_lookup(table, 1, 0)[None])
    array([[1., 0.]])
    """
    n_states = _check_int("n_states", n_states)
    n_symbols = _check_int("n_symbols", n_symbols)
    n_keys = n_states * n_symbols
    d = n_keys + n_states
    _check_memory(
        "automaton_lookup_attention",
        {"value matrix": (n_states, d), "query matrix": (d, d)},
    )
    value = np.zeros((1, n_states, d))
    value[0, :, n_keys:] = np.eye(n_states)
    query = np.zeros((1, d, d))
    query[0, :n_keys, :n_keys] = np.eye(n_keys)
    return MultiHeadLinearAttention(value, query)


def _check_rows(rows, n_states, n_symbols):
    rows = _integer_array("rows", rows)
    if rows.ndim != 2 or rows.shape[1] != 2:
        raise ValueError(
            "rows must have shape (n_rows, 2), one (state, symbol) pair per row, got "
            f"shape {rows.shape}."
        )
    if rows.size and not (
        rows[:, 0].min() >= 0
        and rows[:, 0].max() < n_states
        and rows[:, 1].min() >= 0
        and rows[:, 1].max() < n_symbols
    ):
        bad = rows[
            (rows[:, 0] < 0)
            | (rows[:, 0] >= n_states)
            | (rows[:, 1] < 0)
            | (rows[:, 1] >= n_symbols)
        ][0]
        raise ValueError(
            f"rows must hold (state, symbol) pairs in [0, {n_states}) x "
            f"[0, {n_symbols}), got ({bad[0]}, {bad[1]})."
        )
    return rows


def encode_automaton_lookup(transitions, state, symbol, rows=None, random_state=None):
    """One lookup as a sequence: the transition table, then the query.

    Parameters
    ----------
    transitions : array-like of int, shape (n_states, n_symbols)
    state, symbol : int
        The query.
    rows : array-like of int, shape (n_rows, 2), optional
        The (state, symbol) entries of the table to put in the context, in order;
        repeats and omissions make out-of-distribution contexts. Default: every
        entry once, shuffled.
    random_state : int, numpy Generator, RandomState or None, default=None
        Shuffles the default rows.

    Returns
    -------
    sequence : ndarray of shape (n_rows + 1, n_states * n_symbols + n_states)
        One token per table entry, ``[onehot(state, symbol) ; onehot(next)]``,
        then the query ``[onehot(state, symbol) ; 0]``.

    Examples
    --------
    >>> from sklearn_linattn.datasets import encode_automaton_lookup
    >>> table = [[1, 0], [0, 1]]  # 2 states, 2 symbols
    >>> encode_automaton_lookup(table, 0, 1, rows=[[0, 0], [0, 1]])
    array([[1., 0., 0., 0., 0., 1.],
           [0., 1., 0., 0., 1., 0.],
           [0., 1., 0., 0., 0., 0.]])
    """
    table = _check_transitions(transitions)
    n_states, n_symbols = table.shape
    state = _check_index("state", state, n_states)
    symbol = _check_index("symbol", symbol, n_symbols)
    if rows is None:
        every = np.indices(table.shape).reshape(2, -1).T
        rows = _generator(random_state).permutation(every)
    rows = _check_rows(rows, n_states, n_symbols)
    n_keys = n_states * n_symbols
    sequence = np.zeros((len(rows) + 1, n_keys + n_states))
    positions = np.arange(len(rows))
    sequence[positions, rows[:, 0] * n_symbols + rows[:, 1]] = 1.0
    sequence[positions, n_keys + table[rows[:, 0], rows[:, 1]]] = 1.0
    sequence[-1, state * n_symbols + symbol] = 1.0
    return sequence


def make_automaton_lookups(
    n_samples, n_states, n_symbols, token_noise=0.0, random_state=None
):
    """Transition lookups on random automata, one fresh automaton per sample.

    Each sequence is :func:`encode_automaton_lookup` of a new random automaton and
    a random (state, symbol) query, plus optional Gaussian noise on every token.
    Noise is what makes the data identifiable: clean one-hot tokens leave most
    lifted directions unseen.

    Parameters
    ----------
    n_samples, n_states, n_symbols : int
    token_noise : float, default=0.0
        Standard deviation of Gaussian noise added to every token entry.
    random_state : int, numpy Generator, RandomState or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_states * n_symbols + 1, token_dim)
        ``token_dim = n_states * n_symbols + n_states``.
    y : ndarray of shape (n_samples, n_states)
        The generating model's output on the (noisy) tokens.
    labels : ndarray of int, shape (n_samples,)
        The true next state.
    model : MultiHeadLinearAttention
        :func:`automaton_lookup_attention`.

    Examples
    --------
    >>> from sklearn_linattn.datasets import make_automaton_lookups
    >>> X, y, labels, model = make_automaton_lookups(20, 3, 2, random_state=0)
    >>> X.shape, y.shape, bool((y.argmax(axis=1) == labels).all())
    ((20, 7, 9), (20, 3), True)
    """
    n_samples = _check_int("n_samples", n_samples)
    n_states = _check_int("n_states", n_states)
    n_symbols = _check_int("n_symbols", n_symbols)
    token_noise = _check_nonnegative("token_noise", token_noise)
    n_keys = n_states * n_symbols
    _check_memory(
        "make_automaton_lookups",
        {"X": (n_samples, n_keys + 1, n_keys + n_states), "y": (n_samples, n_states)},
    )
    rng = _generator(random_state)
    X = np.empty((n_samples, n_keys + 1, n_keys + n_states))
    labels = np.empty(n_samples, dtype=int)
    for i in range(n_samples):
        table = make_automaton(n_states, n_symbols, rng)
        state, symbol = rng.integers(0, n_states), rng.integers(0, n_symbols)
        X[i] = encode_automaton_lookup(table, state, symbol, random_state=rng)
        labels[i] = table[state, symbol]
    if token_noise:
        X += rng.normal(scale=token_noise, size=X.shape)
    model = automaton_lookup_attention(n_states, n_symbols)
    return X, model.predict(X), labels, model


def _check_word(word, n_symbols):
    symbols = _integer_array("word", word)
    if symbols.ndim > 1:
        raise ValueError(f"word must be 1-D, got shape {symbols.shape}.")
    symbols = symbols.ravel()
    if symbols.size and (symbols.min() < 0 or symbols.max() >= n_symbols):
        raise ValueError(
            f"word symbols must lie in [0, {n_symbols}), got values in "
            f"[{symbols.min()}, {symbols.max()}]."
        )
    return symbols


def _encode_trace(table, rows, states, word):
    """The table rows, then one token ``[onehot(state_{t-1}, symbol_t) ; 0]`` per
    symbol of the word (``states`` holds the state before each symbol)."""
    n_states, n_symbols = table.shape
    n_keys = n_states * n_symbols
    context = encode_automaton_lookup(table, 0, 0, rows=rows)[:-1]
    tokens = np.zeros((len(word), n_keys + n_states))
    tokens[np.arange(len(word)), np.asarray(states) * n_symbols + word] = 1.0
    return np.concatenate([context, tokens])


def make_automaton_traces(
    n_samples,
    word_length,
    n_states,
    n_symbols,
    token_noise=0.0,
    random_state=None,
):
    """Automaton execution as sequence labelling, one label per position.

    Each sequence holds the transition table of a fresh random automaton (its
    ``n_states * n_symbols`` entries as tokens ``[onehot(state, symbol) ;
    onehot(next_state)]``, shuffled, as in :func:`encode_automaton_lookup`), then
    one token per symbol of a random word, ``[onehot(state_{t-1}, symbol_t) ; 0]``:
    the symbol read at step ``t`` together with the state before it (a trace,
    teacher-forced). The label of every position is the next state of its
    (state, symbol) pair: the table entry's own next state on the table tokens, and
    the state after symbol ``t`` on the word tokens. With causal attention at every
    position, one head computes it exactly (:func:`automaton_lookup_attention`,
    read with ``positions="all"``), so a model fitted on short traces runs words of
    any length through ``execute_automaton(..., positions="all")``, which feeds each
    predicted state back as the next token's state.

    Why the previous state is in the token: one layer reads the prefix only through
    ``S_t = sum_{s <= t} z_s z_s^T``, a sum that does not depend on the order of the
    tokens. The state after ``t`` symbols does (for "the last symbol read", the
    words ``ab`` and ``ba`` end in different states), so no single layer computes it
    from symbol tokens alone; what one layer does compute is one transition lookup
    per position, the form in which the paper expresses automata (Yau et al. 2025).

    Parameters
    ----------
    n_samples, word_length, n_states, n_symbols : int
    token_noise : float, default=0.0
        Standard deviation of Gaussian noise added to every token entry.
    random_state : int, numpy Generator, RandomState or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_states * n_symbols + word_length, token_dim)
        ``token_dim = n_states * n_symbols + n_states``.
    y : ndarray of shape (n_samples, n_states * n_symbols + word_length, n_states)
        The generating model's output at every position (causal), on the (noisy)
        tokens: one-hot next states for clean tokens.
    labels : ndarray of int, shape (n_samples, n_states * n_symbols + word_length)
        The next state of every position's (state, symbol); its last
        ``word_length`` columns are the states visited while reading the word.
    model : MultiHeadLinearAttention
        :func:`automaton_lookup_attention`.

    Examples
    --------
    >>> from sklearn_linattn.datasets import make_automaton_traces
    >>> X, y, labels, model = make_automaton_traces(
    ...     20, 10, 3, 2, random_state=0)
    >>> X.shape, y.shape, labels.shape  # 6 table tokens, then 10 symbols
    ((20, 16, 9), (20, 16, 3), (20, 16))
    >>> bool((y.argmax(axis=2) == labels).all())
    True
    """
    n_samples = _check_int("n_samples", n_samples)
    word_length = _check_int("word_length", word_length)
    n_states = _check_int("n_states", n_states)
    n_symbols = _check_int("n_symbols", n_symbols)
    token_noise = _check_nonnegative("token_noise", token_noise)
    n_keys = n_states * n_symbols
    n_tokens = n_keys + word_length
    _check_memory(
        "make_automaton_traces",
        {
            "X": (n_samples, n_tokens, n_keys + n_states),
            "y": (n_samples, n_tokens, n_states),
        },
    )
    rng = _generator(random_state)
    X = np.empty((n_samples, n_keys + word_length, n_keys + n_states))
    labels = np.empty((n_samples, n_keys + word_length), dtype=int)
    every = np.indices((n_states, n_symbols)).reshape(2, -1).T
    for i in range(n_samples):
        table = make_automaton(n_states, n_symbols, rng)
        rows = rng.permutation(every)
        word, states = _random_walks(rng, table, word_length)
        X[i] = _encode_trace(table, rows, states[:-1], word)
        labels[i, :n_keys] = table[rows[:, 0], rows[:, 1]]
        labels[i, n_keys:] = states[1:]
    if token_noise:
        X += rng.normal(scale=token_noise, size=X.shape)
    model = automaton_lookup_attention(n_states, n_symbols)
    return X, model.predict(X, positions="all"), labels, model


def _random_walks(rng, table, n_steps):
    """A random word of ``n_steps`` symbols from a random start: (word, states),
    ``states[t]`` the state before symbol ``t`` (``n_steps + 1`` of them)."""
    n_states, n_symbols = table.shape
    word = rng.integers(0, n_symbols, size=n_steps)
    states = np.empty(n_steps + 1, dtype=int)
    states[0] = rng.integers(0, n_states)
    for t, symbol in enumerate(word):
        states[t + 1] = table[states[t], symbol]
    return word, states


def make_automaton_transitions(
    n_samples, n_states, n_symbols, history=1, token_noise=0.0, random_state=None
):
    """One-step transitions with the state carried in the token, for rollout.

    Each sequence holds the transition table of a fresh random automaton (tokens
    ``[onehot(state, symbol) ; onehot(next_state)]``, shuffled, as in
    :func:`encode_automaton_lookup`), then ``history`` tokens ``[onehot(state_{t-1},
    symbol_t) ; 0]`` of a random walk (the state before each symbol, with the
    symbol read). The target is the next state after the last token, one-hot: a
    model fitted with ``positions="last"`` learns one transition, and run forward
    with :meth:`~sklearn_linattn.LinearAttentionRegressor.generate` it executes
    whole words, each predicted state combined with the next symbol into the next
    token (:func:`make_automaton_rollout` makes the prompts and that
    ``to_token``). The generating layer (:func:`automaton_lookup_attention`) is
    exact at every length, since the walk's tokens carry no next-state entries.
    With ``history=1`` the sequences are those of :func:`make_automaton_lookups`
    (a random query); a longer history shows the layer the extra walk tokens that
    a rollout accumulates.

    Parameters
    ----------
    n_samples, n_states, n_symbols : int
    history : int, default=1
        Walk tokens per sequence; the last one is the query.
    token_noise : float, default=0.0
        Standard deviation of Gaussian noise added to every token entry (it makes
        the data identifiable, ``certify(X)``; clean one-hot tokens do not).
    random_state : int, numpy Generator, RandomState or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_states * n_symbols + history, token_dim)
        ``token_dim = n_states * n_symbols + n_states``.
    y : ndarray of shape (n_samples, n_states)
        The generating layer's output on the (noisy) tokens.
    labels : ndarray of int, shape (n_samples,)
        The true next state.
    model : MultiHeadLinearAttention
        :func:`automaton_lookup_attention`.

    Examples
    --------
    >>> from sklearn_linattn.datasets import make_automaton_transitions
    >>> X, y, labels, model = make_automaton_transitions(20, 3, 2, history=4,
    ...                                                  random_state=0)
    >>> X.shape, y.shape, bool((y.argmax(axis=1) == labels).all())
    ((20, 10, 9), (20, 3), True)
    """
    n_samples = _check_int("n_samples", n_samples)
    n_states = _check_int("n_states", n_states)
    n_symbols = _check_int("n_symbols", n_symbols)
    history = _check_int("history", history)
    token_noise = _check_nonnegative("token_noise", token_noise)
    n_keys = n_states * n_symbols
    _check_memory(
        "make_automaton_transitions",
        {
            "X": (n_samples, n_keys + history, n_keys + n_states),
            "y": (n_samples, n_states),
        },
    )
    rng = _generator(random_state)
    X = np.empty((n_samples, n_keys + history, n_keys + n_states))
    labels = np.empty(n_samples, dtype=int)
    every = np.indices((n_states, n_symbols)).reshape(2, -1).T
    for i in range(n_samples):
        table = make_automaton(n_states, n_symbols, rng)
        word, states = _random_walks(rng, table, history)
        X[i] = _encode_trace(table, rng.permutation(every), states[:-1], word)
        labels[i] = states[-1]
    if token_noise:
        X += rng.normal(scale=token_noise, size=X.shape)
    model = automaton_lookup_attention(n_states, n_symbols)
    return X, model.predict(X), labels, model


def make_automaton_rollout(
    n_words, word_length, n_states, n_symbols, random_state=None
):
    """Prompts and a ``to_token`` that execute random words by rollout.

    Word ``i`` comes with a fresh random automaton and start state. Its prompt
    is the automaton's table (shuffled tokens, as in
    :func:`make_automaton_transitions`) and the token of its first symbol,
    ``[onehot(start, symbol_0) ; 0]``. At step ``t`` of ``generate(prompts,
    word_length, to_token=to_token)`` the model's output is read as the state
    after symbol ``t`` (the largest output; the sign of a single output for two
    states, as a two-class ``decision_function``), and ``to_token`` appends the
    token of that state with symbol ``t + 1`` (a zero token after the last
    symbol). So the outputs of the rollout are the predicted states, each fed
    back: one wrong state derails the rest of the word.

    Parameters
    ----------
    n_words, word_length, n_states, n_symbols : int
    random_state : int, numpy Generator, RandomState or None, default=None

    Returns
    -------
    prompts : ndarray of shape (n_words, n_states * n_symbols + 1, token_dim)
    to_token : callable
        ``to_token(outputs, step)``, outputs of shape (n_words, n_states) (or
        (n_words,) for two states), finite, and ``step`` in ``[0, word_length)``,
        returning (n_words, token_dim); other outputs or steps are a ValueError.
    states : ndarray of int, shape (n_words, word_length)
        The true state after each symbol.

    Examples
    --------
    The generating layer executes every word exactly:

    >>> from sklearn_linattn.datasets import (
    ...     automaton_lookup_attention, make_automaton_rollout)
    >>> prompts, to_token, states = make_automaton_rollout(5, 40, 3, 2,
    ...                                                    random_state=0)
    >>> model = automaton_lookup_attention(3, 2)
    >>> _, outputs = model.generate(prompts, 40, to_token)
    >>> bool((outputs.argmax(axis=2) == states).all())
    True
    """
    n_words = _check_int("n_words", n_words)
    word_length = _check_int("word_length", word_length)
    n_states = _check_int("n_states", n_states)
    n_symbols = _check_int("n_symbols", n_symbols)
    n_keys = n_states * n_symbols
    _check_memory(
        "make_automaton_rollout",
        {
            "prompts": (n_words, n_keys + 1, n_keys + n_states),
            "words and states": (2, n_words, word_length),
        },
    )
    rng = _generator(random_state)
    prompts = np.empty((n_words, n_keys + 1, n_keys + n_states))
    words = np.empty((n_words, word_length), dtype=int)
    states = np.empty((n_words, word_length), dtype=int)
    every = np.indices((n_states, n_symbols)).reshape(2, -1).T
    for i in range(n_words):
        table = make_automaton(n_states, n_symbols, rng)
        word, visited = _random_walks(rng, table, word_length)
        prompts[i] = _encode_trace(table, rng.permutation(every), visited[:1], word[:1])
        words[i], states[i] = word, visited[1:]

    def to_token(outputs, step):
        outputs = np.asarray(outputs)
        if outputs.dtype.kind not in "biuf":
            raise ValueError(
                "to_token reads real scores, one per state; got outputs of dtype "
                f"{outputs.dtype}."
            )
        shapes = [(n_words, n_states)] + [(n_words,)] * (n_states == 2)
        if outputs.shape not in shapes:
            raise ValueError(
                f"to_token reads the outputs of the {n_words} words at a step, "
                f"one score per state: shape ({n_words}, {n_states})"
                + (f" (or ({n_words},), one score for two states)" * (n_states == 2))
                + f"; got shape {outputs.shape}."
            )
        if not np.all(np.isfinite(outputs)):
            raise ValueError("to_token got outputs that are not finite (NaN or inf).")
        step = _check_index("step", step, word_length, "word_length")
        if outputs.ndim == 1:  # one score for two states
            predicted = (outputs > 0).astype(int)
        else:
            predicted = outputs.argmax(axis=1)
        tokens = np.zeros((n_words, n_keys + n_states))
        if step + 1 < word_length:
            tokens[np.arange(n_words), predicted * n_symbols + words[:, step + 1]] = 1.0
        return tokens

    return prompts, to_token, states


def execute_automaton(model, transitions, word, start=0, positions="last"):
    """Run an automaton over a word by repeated attention lookups.

    With ``positions="last"``, at each symbol the current state and the symbol form
    a query, the transition table the context (:func:`encode_automaton_lookup`,
    rows in table order), and the model's answer at the last token becomes the next
    state. With ``positions="all"`` the word is one growing trace (the form of
    :func:`make_automaton_traces`): the table, then one token per symbol read so
    far, each carrying the state the model predicted at the position before; the
    model's output at the newest position is the next state. The answer is the
    predicted label of a classifier, else the largest output of a regressor or a
    :class:`~sklearn_linattn.MultiHeadLinearAttention`, read at the last token
    (an estimator fitted with ``positions="all"``, on traces, reads lookups too,
    and one fitted with ``positions="last"``, on lookups, reads traces).

    Parameters
    ----------
    model : fitted estimator or MultiHeadLinearAttention
        Trained on lookups of automata with the same numbers of states and symbols.
    transitions : array-like of int, shape (n_states, n_symbols)
    word : array-like of int
        Symbols to read.
    start : int, default=0
        Initial state.
    positions : {"last", "all"}, default="last"
        One lookup sequence per symbol, or one trace read at every position (causal).

    Returns
    -------
    states : ndarray of int, shape (len(word) + 1,)
        The visited states, ``start`` first.

    Examples
    --------
    >>> from sklearn_linattn.datasets import (
    ...     automaton_lookup_attention, execute_automaton)
    >>> table = [[1, 0], [0, 1]]  # parity of the number of 0 symbols
    >>> execute_automaton(automaton_lookup_attention(2, 2), table, [0, 1, 0, 0])
    array([0, 1, 1, 0, 1])
    >>> execute_automaton(
    ...     automaton_lookup_attention(2, 2), table, [0, 1, 0, 0],
    ...     positions="all")
    array([0, 1, 1, 0, 1])
    """
    if not hasattr(model, "predict"):
        raise TypeError(
            "execute_automaton takes a fitted estimator or a "
            f"MultiHeadLinearAttention (anything with predict), got "
            f"{type(model).__name__}."
        )
    table = _check_transitions(transitions)
    n_states, n_symbols = table.shape
    symbols = _check_word(word, n_symbols)
    start = _check_index("start", start, n_states)
    positions, _ = _check_positions(positions, True)
    encoded = n_states * n_symbols + n_states
    # a fitted estimator's token_dim_ (its token_dim parameter may be None)
    token_dim = getattr(model, "token_dim_", getattr(model, "token_dim", None))
    if isinstance(token_dim, Integral) and token_dim != encoded:
        raise ValueError(
            f"The model reads tokens of dimension {token_dim}, but an automaton of "
            f"{n_states} states and {n_symbols} symbols is encoded in tokens of "
            f"n_states * n_symbols + n_states = {encoded}: use a model of its "
            f"lookups (automaton_lookup_attention({n_states}, {n_symbols}), or one "
            "fitted to make_automaton_lookups of these sizes)."
        )
    rows = np.indices(table.shape).reshape(2, -1).T
    states = [int(start)]
    if positions == "all":
        for t in range(len(symbols)):
            trace = _encode_trace(table, rows, states, symbols[: t + 1])
            states.append(_state_at_last_token(model, trace[None], n_states))
        return np.asarray(states)
    for symbol in symbols:
        sequence = encode_automaton_lookup(table, states[-1], symbol, rows=rows)
        states.append(_state_at_last_token(model, sequence[None], n_states))
    return np.asarray(states)


def _state_at_last_token(model, sequence, n_states):
    """The state a model predicts at the last token of one sequence, whichever
    ``positions`` an estimator was fitted with (its ``predict`` returns the
    output at every position, ``(1, n_tokens, ...)``, or at the last token).

    A classifier's label is the state; otherwise the largest of the
    ``n_states`` outputs at the last token."""
    output = np.asarray(model.predict(sequence))
    if hasattr(model, "classes_"):  # a label per sequence, or per position
        label = output.reshape(-1)[-1]
        is_state = (
            isinstance(label, Real)
            and not isinstance(label, (bool, np.bool_))
            and float(label).is_integer()
            and 0 <= label < n_states
        )
        if not is_state:
            shown = label.item() if isinstance(label, np.generic) else label
            raise ValueError(
                f"execute_automaton reads a classifier's predicted label as the next "
                f"state, an integer in [0, {n_states}); the model predicted "
                f"{shown!r}. Fit it on the next states' indices."
            )
        return int(label)
    last = output[0, -1] if output.ndim == 3 else output[0]
    if np.size(last) != n_states:
        raise ValueError(
            f"execute_automaton reads the next state as the largest of the model's "
            f"{n_states} outputs at the last token (one per state, as "
            f"automaton_lookup_attention({n_states}, ...) has), but the model "
            f"returned {np.size(last)} output(s) there (predict returned shape "
            f"{output.shape}). Fit it on one-hot next states (y of "
            "make_automaton_lookups or make_automaton_traces), or use a classifier."
        )
    return int(np.argmax(last))


def _check_covariance(covariance, x_dim, n_samples):
    """The covariance as a float array of shape (x_dim, x_dim) or
    (n_samples, x_dim, x_dim), checked symmetric positive semi-definite."""
    if covariance is None:
        return np.eye(x_dim)
    try:
        is_complex = np.iscomplexobj(covariance)
    except ValueError as error:  # (a ragged list: numpy's "inhomogeneous shape")
        raise ValueError(
            f"covariance must be a rectangular array of shape ({x_dim}, {x_dim}) or "
            f"({n_samples}, {x_dim}, {x_dim}); numpy could not make one of it: "
            f"{error}"
        ) from None
    if is_complex:
        raise ValueError(
            "covariance must be real (a covariance of real inputs), got complex "
            "values."
        )
    dtype = getattr(covariance, "dtype", None)
    if getattr(dtype, "kind", None) in ("M", "m"):  # (numpy casts them silently)
        raise ValueError(
            f"covariance must be an array of real numbers, got dtype {dtype} "
            "(dates or durations)."
        )
    try:
        cov = np.array(covariance, dtype=np.float64)  # a copy: never the user's array
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"covariance must be an array of numbers, got {covariance!r}."
        ) from error
    if cov.shape not in ((x_dim, x_dim), (n_samples, x_dim, x_dim)):
        raise ValueError(
            f"covariance must have shape ({x_dim}, {x_dim}) or ({n_samples}, {x_dim}, "
            f"{x_dim}) (one per prompt) for x_dim={x_dim} and n_samples={n_samples}, "
            f"got shape {cov.shape}."
        )
    if not np.all(np.isfinite(cov)):
        raise ValueError("covariance must be finite.")
    scale = max(np.abs(cov).max(), np.finfo(float).tiny)
    if np.abs(cov - np.swapaxes(cov, -1, -2)).max() > 1e-10 * scale:
        raise ValueError("covariance must be symmetric.")
    cov = (cov + np.swapaxes(cov, -1, -2)) / 2
    if np.linalg.eigvalsh(cov).min() < -1e-10 * scale:
        raise ValueError("covariance must be positive semi-definite.")
    return cov


def _square_root(cov):
    """``L`` with ``L @ L.T == cov``, for one covariance or a stack of them."""
    values, vectors = np.linalg.eigh(cov)
    return vectors * np.sqrt(np.clip(values, 0.0, None))[..., None, :]


# Largest x_dim solved as one dense (x_dim^2, x_dim^2) system for covariances per
# prompt (O(x_dim^6) time, O(x_dim^4) memory: 22 s and 50 MB at x_dim = 50, killed
# for memory at 200); above, conjugate gradients, O(x_dim^3) per covariance and step.
DENSE_PRECONDITIONER_DIM = 16


def _conjugate_gradients(apply, rhs, rtol=1e-12):
    """The minimum-norm solution of ``apply(X) = rhs`` for a symmetric positive
    semi-definite linear map on matrices (Frobenius inner product) and ``rhs`` in
    its range: conjugate gradients from zero stay in that range. (Not
    scipy.sparse.linalg.cg: its relative tolerance is ``tol`` before scipy 1.12
    and ``rtol`` after, and the package supports both.)"""
    solution = np.zeros_like(rhs)
    residual = rhs.copy()
    direction = residual.copy()
    squared = np.vdot(residual, residual)
    stop = (rtol * np.linalg.norm(rhs)) ** 2
    for _ in range(10 * rhs.size):
        if squared <= stop:
            return solution
        image = apply(direction)
        step = squared / np.vdot(direction, image)
        solution += step * direction
        residual -= step * image
        squared, previous = np.vdot(residual, residual), squared
        direction = residual + (squared / previous) * direction
    warnings.warn(
        "Gamma* for the covariances per prompt converged to a relative residual "
        f"of {np.sqrt(squared) / np.linalg.norm(rhs):.1e} only (ill-conditioned "
        "covariances).",
        RuntimeWarning,
        stacklevel=caller_stacklevel(),
    )
    return solution


def _optimal_preconditioner(cov, n_context, noise):
    """Gamma* of the best layer (the theory page's in-context regression section),
    the minimum-norm minimizer of the risk.

    For one covariance, ``B^-1 = ((1 + 1/N) Sigma + (tr Sigma + noise^2) / N I)^-1``
    on the range of ``Sigma`` and zero on its null space, the directions the
    inputs never take, where ``Gamma`` does not change the risk (``B^-1`` itself
    when ``Sigma`` is invertible; 0 when ``Sigma`` is). For one covariance per
    prompt, the minimizer of the risk averaged over them: the minimum-norm
    solution of ``mean_n Sigma_n Gamma C_n = mean_n Sigma_n^2`` with
    ``C_n = (1 + 1/N) Sigma_n^2 + (tr Sigma_n + noise^2) / N Sigma_n``, each
    distinct covariance once, weighted by its number of prompts.
    """
    x_dim = cov.shape[-1]
    # in float64 (a Python float's noise**2 raises OverflowError past ~1.3e154)
    noise_variance = np.float64(noise) ** 2
    if not np.isfinite(noise_variance):
        # Gamma* ~ N / noise^2 (the labels are noise): zero in float64
        return np.zeros((x_dim, x_dim))
    if cov.ndim == 3:
        cov, counts = np.unique(cov, axis=0, return_counts=True)
        if len(cov) == 1:  # one covariance for every prompt: the closed form
            cov = cov[0]
    if cov.ndim == 2:
        variances, axes = np.linalg.eigh(cov)
        # eigenvalues within rounding of zero (numpy.linalg.matrix_rank's rule)
        kept = variances > x_dim * np.finfo(np.float64).eps * variances.max()
        gains = np.zeros(x_dim)
        gains[kept] = 1 / (
            (1 + 1 / n_context) * variances[kept]
            + (np.trace(cov) + noise_variance) / n_context
        )
        return (axes * gains) @ axes.T
    weights = counts / counts.sum()
    traces = np.trace(cov, axis1=1, axis2=2)
    squares = cov @ cov
    second = (1 + 1 / n_context) * squares + (
        (traces + noise_variance) / n_context
    )[:, None, None] * cov
    rhs = np.einsum("n,nij->ij", weights, squares)
    if x_dim > DENSE_PRECONDITIONER_DIM:
        weighted = weights[:, None, None] * cov
        return _conjugate_gradients(
            lambda gamma: (weighted @ gamma @ second).sum(axis=0), rhs
        )
    # vec(Sigma Gamma C) = (C^T kron Sigma) vec(Gamma), vec stacking columns.
    system = np.einsum("n,nij,nkl->jkil", weights, second, cov)
    system = system.reshape(x_dim**2, x_dim**2)
    solution = np.linalg.lstsq(system, rhs.reshape(-1, order="F"), rcond=None)[0]
    return solution.reshape(x_dim, x_dim, order="F")


def _preconditioner_attention(gamma, n_context):
    """The one-head layer ``y = x_q^T Gamma (1/N) sum_i y_i x_i`` on tokens
    ``[x ; y]``: the value reads the label row of ``S``, the query matrix holds
    ``Gamma^T / N`` on the x block."""
    x_dim = gamma.shape[0]
    value = np.zeros((1, 1, x_dim + 1))
    value[0, 0, x_dim] = 1.0
    query = np.zeros((1, x_dim + 1, x_dim + 1))
    query[0, :x_dim, :x_dim] = gamma.T / n_context
    return MultiHeadLinearAttention(value, query)


def make_incontext_regression(
    n_samples,
    n_context,
    x_dim,
    covariance=None,
    noise=0.0,
    random_state=None,
    n_tasks=None,
    return_tasks=False,
):
    """In-context linear regression prompts and the best attention layer for them.

    Each prompt holds ``n_context`` tokens ``[x_i ; y_i]`` and ends with the query
    ``[x_q ; 0]`` (its label slot empty). The inputs are ``x ~ N(0, Sigma)``, the
    task ``w ~ N(0, I)`` is drawn per prompt, and every label, the query's too, is
    ``y = <w, x> + noise * eps`` with ``eps ~ N(0, 1)``. This is the model studied
    by Garg et al. (2022), von Oswald et al. (2023), Ahn et al. (2023) and Zhang,
    Frei & Bartlett (JMLR 2024), who train one linear attention layer on it by
    gradient descent.

    The best layer, with any number of heads, is one head computing one step of
    preconditioned gradient descent from zero,
    ``y_hat = x_q^T Gamma* (1/N) sum_i y_i x_i`` (``N = n_context``), with

    ``Gamma* = ((1 + 1/N) Sigma + (tr(Sigma) + noise^2) / N I)^-1``

    (Zhang, Frei & Bartlett, Theorem 4.1, with label noise). For a singular
    ``Sigma``, ``Gamma`` does not change the risk along the null space of
    ``Sigma`` (directions the inputs never take), and ``Gamma*`` is the
    minimum-norm minimizer: the matrix above on the range of ``Sigma``, zero on
    its null space (0 for ``Sigma = 0``). Derivation, for this
    package's layer (no ``1/n`` inside attention, the query token part of ``S``),
    on the theory page: flipping the sign of every label leaves the prompts'
    distribution unchanged, so the best layer uses only the features
    ``S[label, x_j] q[x_k]``, in which the query takes no part (its label is 0);
    ``Gamma*`` minimizes the expected squared error over those. Its risk is
    ``noise^2 + tr(Sigma - Sigma^2 Gamma*)``.

    Parameters
    ----------
    n_samples : int
        Number of prompts.
    n_context : int
        Labelled pairs per prompt, ``N``.
    x_dim : int
        Dimension of the inputs ``x``; tokens have ``x_dim + 1`` entries, the label
        last.
    covariance : array-like of shape (x_dim, x_dim) or (n_samples, x_dim, x_dim), \
default=None
        The covariance ``Sigma`` of the inputs (symmetric positive semi-definite),
        the identity if None. A 3-D array gives each prompt its own covariance
        (e.g. drawn at random); the returned layer is then the best one for
        prompts whose covariance is one of these, each equally likely: still one
        head (the sign argument holds), with ``Gamma*`` the solution of the linear
        equation ``mean_n Sigma_n Gamma C_n = mean_n Sigma_n^2``,
        ``C_n = (1 + 1/N) Sigma_n^2 + (tr(Sigma_n) + noise^2) / N Sigma_n``, which
        has no closed form in general (the minimum-norm one when several solve
        it); it reduces to the formula above when the covariances are equal.
    noise : float, default=0.0
        Standard deviation of the label noise, context and query alike (so the
        risk of any predictor is at least ``noise^2``); finite.
    random_state : int, numpy Generator, RandomState or None, default=None
    n_tasks : int or None, default=None
        None: a fresh task ``w ~ N(0, I)`` for every prompt. An int: a finite pool
        of ``n_tasks`` tasks drawn once from ``N(0, I)``, each prompt using one of
        them at random (task diversity, Raventós et al. 2023). A finite pool is not
        symmetric under ``w -> -w``, so the best layer also uses the features of
        ``S[x, x]`` (where the query's own ``x_q x_q^T`` enters) and ``S[label,
        label]``, and depends on the pool; it has no closed form and ``model`` is
        None (fit one on many prompts instead).
    return_tasks : bool, default=False
        Also return the task ``w`` of every prompt.

    Returns
    -------
    X : ndarray of shape (n_samples, n_context + 1, x_dim + 1)
        The prompts, tokens as rows, the query last with its label slot 0.
    y : ndarray of shape (n_samples,)
        The query's label.
    model : MultiHeadLinearAttention or None
        The best layer (one head: the value reads the label row, the query matrix
        holds ``Gamma*^T / N`` on the ``x`` block, zeros elsewhere), or None with
        ``n_tasks``. :func:`incontext_preconditioner` reads ``Gamma*`` back.
    tasks : ndarray of shape (n_samples, x_dim)
        Only with ``return_tasks=True``.

    See Also
    --------
    incontext_preconditioner : the preconditioner of a fitted layer.

    Notes
    -----
    The layer has no ``1/n`` normalization: applied to prompts with ``N'``
    pairs it acts as the preconditioner ``(N' / N) Gamma*``, which is not the best
    one for ``N'``. Fit on prompts of the length you will query.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn.datasets import (
    ...     incontext_preconditioner, make_incontext_regression)
    >>> X, y, model = make_incontext_regression(
    ...     500, n_context=10, x_dim=2, covariance=np.diag([2.0, 1.0]),
    ...     random_state=0)
    >>> X.shape, y.shape, model.n_heads
    ((500, 11, 3), (500,), 1)
    >>> incontext_preconditioner(model, n_context=10).round(3)  # Gamma*
    array([[0.4  , 0.   ],
           [0.   , 0.714]])
    """
    n_samples = _check_int("n_samples", n_samples)
    n_context = _check_int("n_context", n_context)
    x_dim = _check_int("x_dim", x_dim)
    noise = _check_nonnegative("noise", noise)
    if n_tasks is not None:
        n_tasks = _check_int("n_tasks", n_tasks)
    if not isinstance(return_tasks, (bool, np.bool_)):
        raise ValueError(f"return_tasks must be True or False, got {return_tasks!r}.")
    _check_memory(
        "make_incontext_regression",
        {
            "X": (n_samples, n_context + 1, x_dim + 1),
            "tasks": (n_samples if n_tasks is None else n_tasks, x_dim),
            "covariance": (x_dim, x_dim),
        },
    )
    cov = _check_covariance(covariance, x_dim, n_samples)
    rng = _generator(random_state)
    if n_tasks is None:
        tasks = rng.normal(size=(n_samples, x_dim))
    else:
        pool = rng.normal(size=(n_tasks, x_dim))
        tasks = pool[rng.integers(0, n_tasks, size=n_samples)]
    root = _square_root(cov)  # (x_dim, x_dim) or (n_samples, x_dim, x_dim)
    standard = rng.normal(size=(n_samples, n_context + 1, x_dim))
    inputs = standard @ np.swapaxes(root, -1, -2)  # rows x = L z
    labels = np.einsum("ntd,nd->nt", inputs, tasks)
    if noise:
        labels += rng.normal(scale=noise, size=labels.shape)
    X = np.concatenate([inputs, labels[:, :, None]], axis=2)
    X[:, -1, -1] = 0.0  # the query's label slot is empty
    y = labels[:, -1]
    model = None
    if n_tasks is None:
        with np.errstate(over="ignore", invalid="ignore"):  # checked below
            gamma = _optimal_preconditioner(cov, n_context, noise)
        if not np.all(np.isfinite(gamma)):
            raise ValueError(
                "The best preconditioner Gamma* for this covariance overflows (its "
                "entries grow as 1 / covariance, beyond the float range): the "
                f"covariance's largest entry is {np.abs(cov).max():.3g}. Scale the "
                "covariance up (the inputs with it), or pass noise > 0."
            )
        model = _preconditioner_attention(gamma, n_context)
    return (X, y, model, tasks) if return_tasks else (X, y, model)


def incontext_preconditioner(model, n_context):
    """The preconditioner ``Gamma`` that a layer applies to in-context regression.

    On prompts of :func:`make_incontext_regression` (tokens ``[x ; y]``, the label
    last, the query ``[x_q ; 0]``) the part of a layer that reads the labels is
    ``y_hat = x_q^T Gamma (1/N) sum_i y_i x_i``: one step of preconditioned
    gradient descent from zero. ``Gamma[k, j]`` is ``N`` times the coefficient of
    the feature ``S[label, x_j] q[x_k]``, read from the lifted coefficients, so the
    answer does not depend on how the function is split into heads.

    When one head is the right answer: whenever the prompts' distribution does not
    change when every label changes sign (tasks drawn from a distribution
    symmetric about zero, such as ``N(0, I)``, with symmetric noise; any input
    covariance, fixed or per prompt), the best layer with any number of heads has
    zero coefficients on every other feature, and a function of the form above is
    one head (the value reads the label row of ``S``, the query matrix holds
    ``Gamma^T / N``). Then ``Gamma`` describes the fitted layer completely, up to
    sampling error. Otherwise (a finite pool of tasks, tasks with a nonzero mean)
    the best layer also uses ``S[x, x] q`` and ``S[label, label] q``, which
    ``Gamma`` leaves out.

    Parameters
    ----------
    model : MultiHeadLinearAttention or fitted estimator
        A layer with one output and ``token_dim = x_dim + 1``, or a fitted
        estimator with ``coef_`` and ``token_dim_`` such as
        :class:`~sklearn_linattn.LinearAttentionRegressor` (its ``coef_`` is used;
        an intercept is not part of ``Gamma``).
    n_context : int
        The number of context pairs ``N`` of the prompts. The layer has no ``1/n``
        normalization, so the preconditioner it applies grows with ``N``.

    Returns
    -------
    gamma : ndarray of shape (x_dim, x_dim)

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``model`` is an estimator that is not fitted yet.

    Examples
    --------
    >>> from sklearn_linattn import LinearAttentionRegressor
    >>> from sklearn_linattn.datasets import (
    ...     incontext_preconditioner, make_incontext_regression)
    >>> X, y, best = make_incontext_regression(
    ...     20000, n_context=10, x_dim=2, random_state=0)
    >>> fitted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    >>> gamma_hat = incontext_preconditioner(fitted, n_context=10)
    >>> gamma = incontext_preconditioner(best, n_context=10)
    >>> bool(np.linalg.norm(gamma_hat - gamma) < 0.2 * np.linalg.norm(gamma))
    True
    """
    n_context = _check_int("n_context", n_context)
    if isinstance(model, MultiHeadLinearAttention):
        coef, token_dim = model.lifted_coef(), model.token_dim
    elif hasattr(model, "coef_") and hasattr(model, "token_dim_"):
        coef, token_dim = np.atleast_2d(model.coef_), model.token_dim_
    else:
        if hasattr(model, "fit"):  # an estimator not fitted: sklearn's error
            check_is_fitted(model)
        raise TypeError(
            "incontext_preconditioner expects a MultiHeadLinearAttention or a fitted "
            f"estimator with coef_ and token_dim_, got {type(model).__name__}."
        )
    if coef.shape[0] != 1 or token_dim < 2:
        raise ValueError(
            "incontext_preconditioner needs a layer with one output and token_dim >= "
            f"2 (x_dim + 1), got {coef.shape[0]} output(s) and token_dim={token_dim}."
        )
    x_dim = token_dim - 1
    w = fold_lifted_coef(coef, token_dim).reshape(token_dim, token_dim, token_dim)
    # coefficient of S[label, x_j] q[x_k]: W[label, j, k] + W[j, label, k]
    label_block = w[x_dim, :x_dim, :x_dim] + w[:x_dim, x_dim, :x_dim]
    return n_context * label_block.T
