"""Synthetic tasks from the paper: random MHLA targets, associative recall, automata.

Every generator takes ``random_state`` and returns 3-D sequences ``X`` of shape
``(n_samples, n_tokens, token_dim)`` (tokens as rows, the query last), the targets,
and the generating :class:`~sklearn_linattn.MultiHeadLinearAttention`, so that
recovery can be measured with ``fitted.attention_.distance(model)``.
"""

from numbers import Integral, Real

import numpy as np

from ._attention import MultiHeadLinearAttention

__all__ = [
    "associative_recall_attention",
    "automaton_lookup_attention",
    "encode_automaton_lookup",
    "execute_automaton",
    "make_associative_recall",
    "make_automaton",
    "make_automaton_lookups",
    "make_automaton_traces",
    "make_random_mhla",
]


def _generator(random_state):
    """A numpy Generator from an int, None, a Generator or a RandomState."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as error:
        raise ValueError(
            "random_state must be None, an int, a numpy Generator or a RandomState, "
            f"got {random_state!r}."
        ) from error


def _check_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _check_nonnegative(name, value):
    if isinstance(value, bool) or not isinstance(value, Real) or not value >= 0:
        raise ValueError(f"{name} must be a real number >= 0, got {value!r}.")
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
    >>> X, y, model = make_random_mhla(100, 10, 3, positions="all", random_state=0)
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
    """
    key_dim = _check_int("key_dim", key_dim)
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
    >>> X, y, model = make_associative_recall(50, key_dim=3, n_pairs=4, random_state=0)
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
    """
    n_states = _check_int("n_states", n_states)
    n_symbols = _check_int("n_symbols", n_symbols)
    rng = _generator(random_state)
    return rng.integers(0, n_states, size=(n_states, n_symbols))


def _check_transitions(transitions):
    table = np.asarray(transitions)
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
    array = np.asarray(value)
    if array.size == 0:
        return array.astype(int)
    if array.dtype.kind not in "iu":
        raise ValueError(
            f"{name} must hold integers, got {array.dtype} values such as "
            f"{array.ravel()[0].item()!r}."
        )
    return array.astype(int)


def _check_index(name, value, upper):
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, Integral)
        or not 0 <= value < upper
    ):
        raise ValueError(
            f"{name} must lie in [0, {upper}) and be an integer, got {value!r}."
        )
    return int(value)


def automaton_lookup_attention(n_states, n_symbols):
    """The one-head MHLA that looks up a transition table given in its context.

    Tokens are ``[onehot(state, symbol) ; onehot(next_state)]`` and the query
    ``[onehot(state, symbol) ; 0]``; the head matches the query's (state, symbol)
    against each token's and returns that token's next state, one-hot.

    Returns
    -------
    model : MultiHeadLinearAttention
        ``token_dim = n_states * n_symbols + n_states``, ``n_outputs = n_states``.
    """
    n_states = _check_int("n_states", n_states)
    n_symbols = _check_int("n_symbols", n_symbols)
    n_keys = n_states * n_symbols
    d = n_keys + n_states
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
    rng = _generator(random_state)
    n_keys = n_states * n_symbols
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
    >>> X, y, labels, model = make_automaton_traces(20, 10, 3, 2, random_state=0)
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
    rng = _generator(random_state)
    n_keys = n_states * n_symbols
    X = np.empty((n_samples, n_keys + word_length, n_keys + n_states))
    labels = np.empty((n_samples, n_keys + word_length), dtype=int)
    every = np.indices((n_states, n_symbols)).reshape(2, -1).T
    for i in range(n_samples):
        table = make_automaton(n_states, n_symbols, rng)
        rows = rng.permutation(every)
        word = rng.integers(0, n_symbols, size=word_length)
        states = np.empty(word_length + 1, dtype=int)
        states[0] = rng.integers(0, n_states)
        for t, symbol in enumerate(word):
            states[t + 1] = table[states[t], symbol]
        X[i] = _encode_trace(table, rows, states[:-1], word)
        labels[i, :n_keys] = table[rows[:, 0], rows[:, 1]]
        labels[i, n_keys:] = states[1:]
    if token_noise:
        X += rng.normal(scale=token_noise, size=X.shape)
    model = automaton_lookup_attention(n_states, n_symbols)
    return X, model.predict(X, positions="all"), labels, model


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
    :class:`~sklearn_linattn.MultiHeadLinearAttention` (read with the same
    ``positions``; an estimator must have been fitted with it).

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
    ...     automaton_lookup_attention(2, 2), table, [0, 1, 0, 0], positions="all")
    array([0, 1, 1, 0, 1])
    """
    table = _check_transitions(transitions)
    n_states, n_symbols = table.shape
    symbols = _check_word(word, n_symbols)
    start = _check_index("start", start, n_states)
    positions, _ = _check_positions(positions, True)
    rows = np.indices(table.shape).reshape(2, -1).T
    states = [int(start)]
    if positions == "all":
        for t in range(len(symbols)):
            trace = _encode_trace(table, rows, states, symbols[: t + 1])
            states.append(_state_at_last_position(model, trace[None]))
        return np.asarray(states)
    for symbol in symbols:
        sequence = encode_automaton_lookup(table, states[-1], symbol, rows=rows)
        states.append(_next_state(model, sequence[None]))
    return np.asarray(states)


def _state_at_last_position(model, sequence):
    if isinstance(model, MultiHeadLinearAttention):
        output = model.predict(sequence, positions="all")
    else:
        output = np.asarray(model.predict(sequence))
    if hasattr(model, "classes_"):  # labels per position
        return int(output.reshape(-1)[-1])
    return int(np.argmax(output.reshape(sequence.shape[1], -1)[-1]))


def _next_state(model, sequence):
    if hasattr(model, "classes_"):
        return int(model.predict(sequence)[0])
    output = np.asarray(model.predict(sequence)).reshape(-1)
    return int(np.argmax(output))
