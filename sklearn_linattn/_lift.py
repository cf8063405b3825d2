"""Numba kernels for the lifted (cubic) feature map (the docs' theory page).

For a sequence ``Z`` of shape ``(n_tokens, d)`` let ``S = Z^T Z`` and ``q = Z[-1]``.
The non-redundant, isometric lifted features are

    phi(Z)[k * d + e] = w_bc * S[b, c] * q[e],   k = index of the pair (b, c), b <= c,

with ``w_bc = 1`` on the diagonal (b == c) and ``sqrt(2)`` off it, so that
``<phi(Z), phi(Z')> = <S, S'>_F <q, q'>``. Pairs are numbered row by row over the
upper triangle, the order of ``numpy.triu_indices(d)``; ``e`` runs fastest. There are
``p = d * d * (d + 1) / 2`` features. This ordering is used everywhere in the package
(``coef_``, ``lifted_coef``, feature names).

Since ``phi(Z)`` is the Kronecker product of the weighted pair statistics
``s[k] = w_bc S[b, c]`` (``m = d (d + 1) / 2`` of them) and ``q``, products with the
lifted feature matrix ``Phi`` never need ``Phi`` itself: ``Phi @ w`` is
``rowsum((s @ W) * q)`` with ``W = w.reshape(m, d)``, ``Phi.T @ r`` is
``(s * r).T @ q``, and the kernel is ``(s s'^T) * (q q'^T)``; all matrix products,
``O(n_samples d^3)`` work and ``O(n_samples d^2)`` memory.

All Numba code of the package lives in this module. The per-position variants
(``position_pair_statistics``, ``lifted_position_features``) describe the output at
every position ``t`` instead of the last: ``S_t`` is the prefix second moment
``sum_{s <= t} z_s z_s^T`` (causal) or the whole ``Z^T Z`` (bidirectional), and the
query is ``z_t``. Callers convert inputs to float64 C-ordered arrays first
(``_validation.py`` does); the kernels never check for NaN.
"""

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, types

__all__ = [
    "add_structured_gram",
    "largest_magnitude",
    "lifted_feature_pairs",
    "lifted_features",
    "lifted_kernel",
    "lifted_matvec",
    "lifted_position_features",
    "lifted_rmatvec",
    "n_lifted_features",
    "pair_statistics",
    "position_pair_statistics",
    "upper_outer_products",
]

_SQRT2 = math.sqrt(2.0)


_READONLY_1D = types.Array(types.float64, 1, "C", readonly=True)
_READONLY_2D = types.Array(types.float64, 2, "C", readonly=True)
_READONLY_3D = types.Array(types.float64, 3, "C", readonly=True)
_WRITABLE_2D = types.Array(types.float64, 2, "C")
_WRITABLE_3D = types.Array(types.float64, 3, "C")
_compile_lock = threading.Lock()


def _jit(function):
    """Numba dispatcher for ``function``, cached to disk where possible.

    Numba refuses to decorate a cached function when it finds no writable cache
    directory (a read-only install without a writable home); then we compile without
    the on-disk cache rather than fail at import.
    """
    # fastmath lets the dot products of S vectorize; inputs are validated finite
    # before any kernel runs.
    try:
        return njit(cache=True, nogil=True, fastmath=True)(function)
    except RuntimeError:  # pragma: no cover - depends on the file system
        return njit(cache=False, nogil=True, fastmath=True)(function)


def _compiled(dispatcher, signature):
    """``dispatcher`` compiled once, on first use, for ``signature`` only.

    Inputs are declared read-only: writable arrays convert to that type, so user
    arrays of either kind share one compiled version instead of two.
    """
    if not hasattr(dispatcher, "signatures"):  # NUMBA_DISABLE_JIT=1: plain Python
        return dispatcher
    if not dispatcher.signatures:
        with _compile_lock:
            if not dispatcher.signatures:
                dispatcher.compile(signature)
                dispatcher.disable_compile()
    return dispatcher


def n_lifted_features(token_dim):
    """Number of non-redundant lifted features, ``d * d * (d + 1) / 2``."""
    return token_dim * token_dim * (token_dim + 1) // 2


def lifted_feature_pairs(token_dim):
    """Index arrays ``(b, c, e)`` of every lifted feature, in the package's order.

    Feature ``j`` is ``w_bc * S[b[j], c[j]] * q[e[j]]``.
    """
    rows, cols = np.triu_indices(token_dim)
    b = np.repeat(rows, token_dim)
    c = np.repeat(cols, token_dim)
    e = np.tile(np.arange(token_dim), rows.size)
    return b, c, e


@_jit
def _weighted_pairs(sequence, transposed, pairs):  # pragma: no cover - Numba
    """``pairs[k] = w_bc S[b, c]`` for one sequence; ``transposed`` is scratch.
    Returns ``max |sequence|``, found on the way (the data's scale)."""
    n_tokens, d = sequence.shape
    largest = 0.0
    for t in range(n_tokens):  # tokens as columns, so each S[b, c] is a dot product
        for b in range(d):
            value = sequence[t, b]
            transposed[b, t] = value
            largest = max(largest, abs(value))
    k = 0
    for b in range(d):
        for c in range(b, d):
            total = 0.0
            for t in range(n_tokens):
                total += transposed[b, t] * transposed[c, t]
            pairs[k] = total if b == c else _SQRT2 * total
            k += 1
    return largest


@_jit
def _lift_into(sequences, out):  # pragma: no cover - compiled by Numba
    n_samples, n_tokens, d = sequences.shape
    transposed = np.empty((d, n_tokens))
    pairs = np.empty(d * (d + 1) // 2)
    for i in range(n_samples):
        _weighted_pairs(sequences[i], transposed, pairs)
        j = 0
        for k in range(pairs.size):  # phi = pairs (x) q, q running fastest
            for e in range(d):
                out[i, j] = pairs[k] * sequences[i, n_tokens - 1, e]
                j += 1


def _output_array(out, shape):
    """``out`` checked to be a C-contiguous float64 array of ``shape`` (a new one
    when None): the kernels write into it."""
    if out is None:
        return np.empty(shape)
    if out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous float64 array of shape {shape}, got "
            f"{out.dtype} array of shape {out.shape}."
        )
    return out


def lifted_features(sequences, out=None, n_threads=1):
    """Lifted features of a batch of sequences.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64, C-ordered
        Validated sequences; the query is the last token. Read-only arrays are fine.
    out : ndarray of shape (n_samples, n_lifted_features), float64, C-ordered, optional
        Where to write the features (e.g. a reused chunk buffer).
    n_threads : int, default=1
        Threads sharing the rows; the kernel releases the GIL.

    Returns
    -------
    features : ndarray of shape (n_samples, n_lifted_features)
        ``out`` if it was given.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._lift import lifted_features
    >>> Z = np.array([[[1.0, 2.0], [3.0, 4.0]]])  # one sequence, 2 tokens, d=2
    >>> lifted_features(Z).round(3)  # S = [[10, 14], [14, 20]], q = [3, 4]
    array([[30.   , 40.   , 59.397, 79.196, 60.   , 80.   ]])
    """
    n_samples, _, token_dim = sequences.shape
    shape = (n_samples, n_lifted_features(token_dim))
    out = _output_array(out, shape)
    kernel = _compiled(_lift_into, (_READONLY_3D, _WRITABLE_2D))
    _run_by_rows(kernel, n_threads, sequences, out)
    return out


@_jit
def _largest_magnitude(flat):  # pragma: no cover - compiled by Numba
    # Four running maxima, so that the loop vectorizes (one maximum would be a chain
    # of dependent comparisons).
    m0 = m1 = m2 = m3 = 0.0
    n = flat.size - flat.size % 4
    for i in range(0, n, 4):
        m0 = max(m0, abs(flat[i]))
        m1 = max(m1, abs(flat[i + 1]))
        m2 = max(m2, abs(flat[i + 2]))
        m3 = max(m3, abs(flat[i + 3]))
    for i in range(n, flat.size):
        m0 = max(m0, abs(flat[i]))
    return max(max(m0, m1), max(m2, m3))


def largest_magnitude(array):
    """``max |array|`` (0 for an empty array) in one pass over a validated array.

    It sets the power-of-two scale of the data; numpy's ``max`` and ``min`` would
    take two passes (twice the memory traffic, which is what a scan costs).

    Parameters
    ----------
    array : ndarray of float64, C-contiguous, finite

    Returns
    -------
    largest : float

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._lift import largest_magnitude
    >>> largest_magnitude(np.array([[1.0, -3.0], [2.0, 0.5]]))
    3.0
    """
    kernel = _compiled(_largest_magnitude, (_READONLY_1D,))
    return float(kernel(np.asarray(array, dtype=np.float64).reshape(-1)))


def _run_by_rows(kernel, n_threads, *arrays):
    """``kernel(*arrays)``, the rows (first axis) shared among ``n_threads`` threads;
    the list of the kernel's return values, one per thread.

    The kernels release the GIL and write disjoint rows, so threads need no lock.
    """
    n_samples = arrays[0].shape[0]
    n_threads = max(1, min(n_threads, n_samples))
    if n_threads == 1:
        return [kernel(*arrays)] if n_samples else []
    bounds = np.linspace(0, n_samples, n_threads + 1).astype(int)
    with ThreadPoolExecutor(n_threads) as pool:
        return list(
            pool.map(
                lambda start, stop: kernel(*(a[start:stop] for a in arrays)),
                bounds[:-1],
                bounds[1:],
            )
        )


@_jit
def _pair_statistics_into(sequences, pairs, queries):  # pragma: no cover - Numba
    n_samples, n_tokens, d = sequences.shape
    transposed = np.empty((d, n_tokens))
    largest = 0.0
    for i in range(n_samples):
        largest = max(largest, _weighted_pairs(sequences[i], transposed, pairs[i]))
        for e in range(d):
            queries[i, e] = sequences[i, n_tokens - 1, e]
    return largest


def pair_statistics(sequences, n_threads=1, return_largest=False):
    """The compact form of the lifted features: weighted ``S`` entries and ``q``.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64, C-ordered
    n_threads : int, default=1
    return_largest : bool, default=False
        Also return ``max |sequences|``, found in the same pass (a separate scan
        costs 7-10% of the streamed Gram at d = 8, benchmarks/bench_speed.py).

    Returns
    -------
    pairs : ndarray of shape (n_samples, token_dim * (token_dim + 1) // 2)
        ``w_bc S[b, c]`` for ``b <= c`` in ``numpy.triu_indices`` order.
    queries : ndarray of shape (n_samples, token_dim)
        The last token of each sequence.
    largest : float
        Only with ``return_largest``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._lift import lifted_features, pair_statistics
    >>> Z = np.random.default_rng(0).normal(size=(4, 3, 2))
    >>> pairs, queries = pair_statistics(Z)
    >>> kron = np.einsum("nk,ne->nke", pairs, queries).reshape(4, -1)
    >>> np.allclose(kron, lifted_features(Z))
    True
    """
    n_samples, _, d = sequences.shape
    pairs = np.empty((n_samples, d * (d + 1) // 2))
    queries = np.empty((n_samples, d))
    kernel = _compiled(
        _pair_statistics_into, (_READONLY_3D, _WRITABLE_2D, _WRITABLE_2D)
    )
    largests = _run_by_rows(kernel, n_threads, sequences, pairs, queries)
    if return_largest:
        return pairs, queries, float(max(largests, default=0.0))
    return pairs, queries


def lifted_matvec(pairs, queries, coef):
    """``Phi @ coef.T`` without forming ``Phi``.

    Parameters
    ----------
    pairs, queries : ndarrays from :func:`pair_statistics`
    coef : ndarray of shape (n_outputs, n_lifted_features)

    Returns
    -------
    products : ndarray of shape (n_samples, n_outputs)
    """
    m, d = pairs.shape[1], queries.shape[1]
    out = np.empty((pairs.shape[0], coef.shape[0]))
    for output, row in enumerate(coef):
        out[:, output] = np.einsum("ne,ne->n", pairs @ row.reshape(m, d), queries)
    return out


def lifted_rmatvec(pairs, queries, residuals):
    """``Phi.T @ residuals`` without forming ``Phi``, one row per output.

    Parameters
    ----------
    pairs, queries : ndarrays from :func:`pair_statistics`
    residuals : ndarray of shape (n_samples, n_outputs)

    Returns
    -------
    products : ndarray of shape (n_outputs, n_lifted_features)
    """
    return np.stack(
        [((pairs * column[:, None]).T @ queries).ravel() for column in residuals.T]
    )


def lifted_kernel(pairs, queries, other_pairs=None, other_queries=None):
    """The kernel ``<phi(Z_i), phi(Z'_j)> = <S_i, S'_j>_F <q_i, q'_j>``.

    Returns
    -------
    kernel : ndarray of shape (n_samples, n_other_samples)
    """
    if other_pairs is None:
        other_pairs, other_queries = pairs, queries
    return (pairs @ other_pairs.T) * (queries @ other_queries.T)


@_jit
def _position_pairs_into(sequences, causal, pairs, queries):  # pragma: no cover
    """``pairs[i, t] = w_bc S_t[b, c]`` and ``queries[i, t] = z_t`` for every position.

    ``S_t`` is kept as running prefix sums over the upper triangle, updated token by
    token; with ``causal=False`` every position gets the whole sequence's ``S``.
    """
    n_samples, n_tokens, d = sequences.shape
    m = d * (d + 1) // 2
    running = np.empty(m)
    weights = np.empty(m)
    k = 0
    for b in range(d):
        for c in range(b, d):
            weights[k] = 1.0 if b == c else _SQRT2
            k += 1
    for i in range(n_samples):
        running[:] = 0.0
        for t in range(n_tokens):
            k = 0
            for b in range(d):
                zb = sequences[i, t, b]
                for c in range(b, d):
                    running[k] += zb * sequences[i, t, c]
                    k += 1
            if causal:
                for k in range(m):
                    pairs[i, t, k] = weights[k] * running[k]
            for e in range(d):
                queries[i, t, e] = sequences[i, t, e]
        if not causal:
            for t in range(n_tokens):
                for k in range(m):
                    pairs[i, t, k] = weights[k] * running[k]


def _check_causal(causal):
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal must be True or False, got {causal!r}.")
    return bool(causal)


def position_pair_statistics(sequences, causal=True, n_threads=1):
    """Compact lifted features of every position: weighted ``S_t`` entries and ``z_t``.

    Row ``i * n_tokens + t`` describes the output at position ``t`` of sequence ``i``:
    its pair statistics are ``w_bc S_t[b, c]`` (``b <= c``, the order of
    :func:`pair_statistics`) with ``S_t = sum_{s <= t} z_s z_s^T`` when ``causal``
    and ``S_t = Z^T Z`` otherwise, and its query is the token ``z_t`` itself. The
    prefix sums are updated token by token (no prefix is copied).

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64, C-ordered
        Validated sequences; read-only arrays are fine.
    causal : bool, default=True
        Prefix second moments (causal attention) or the whole sequence's.
    n_threads : int, default=1
        Threads sharing the sequences; the kernel releases the GIL.

    Returns
    -------
    pairs : ndarray of shape (n_samples * n_tokens, token_dim * (token_dim + 1) // 2)
    queries : ndarray of shape (n_samples * n_tokens, token_dim)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._lift import pair_statistics, position_pair_statistics
    >>> Z = np.array([[[1.0, 2.0], [3.0, 4.0]]])  # one sequence, 2 tokens, d=2
    >>> pairs, queries = position_pair_statistics(Z)
    >>> pairs.round(3)  # S_0 = z_0 z_0^T, S_1 = S_0 + z_1 z_1^T
    array([[ 1.   ,  2.828,  4.   ],
           [10.   , 19.799, 20.   ]])
    >>> queries
    array([[1., 2.],
           [3., 4.]])
    >>> np.allclose(pairs[-1], pair_statistics(Z)[0][0])  # last position = last token
    True
    """
    causal = _check_causal(causal)
    n_samples, n_tokens, d = sequences.shape
    pairs = np.empty((n_samples * n_tokens, d * (d + 1) // 2))
    queries = np.empty((n_samples * n_tokens, d))
    kernel = _compiled(
        _position_pairs_into,
        (_READONLY_3D, types.boolean, _WRITABLE_3D, _WRITABLE_3D),
    )
    _run_by_rows(
        lambda seqs, prs, qrs: kernel(seqs, causal, prs, qrs),
        n_threads,
        sequences,
        pairs.reshape(n_samples, n_tokens, pairs.shape[1]),
        queries.reshape(n_samples, n_tokens, d),
    )
    return pairs, queries


@_jit
def _lift_positions_into(sequences, causal, out):  # pragma: no cover - Numba
    n_samples, n_tokens, d = sequences.shape
    m = d * (d + 1) // 2
    running = np.empty(m)
    weighted = np.empty(m)
    for i in range(n_samples):
        running[:] = 0.0
        if not causal:
            for t in range(n_tokens):
                k = 0
                for b in range(d):
                    zb = sequences[i, t, b]
                    for c in range(b, d):
                        running[k] += zb * sequences[i, t, c]
                        k += 1
        for t in range(n_tokens):
            if causal:
                k = 0
                for b in range(d):
                    zb = sequences[i, t, b]
                    for c in range(b, d):
                        running[k] += zb * sequences[i, t, c]
                        k += 1
            k = 0
            for b in range(d):
                for c in range(b, d):
                    weighted[k] = running[k] if b == c else _SQRT2 * running[k]
                    k += 1
            j = 0
            for k in range(m):  # pairs (x) z_t, z_t running fastest
                for e in range(d):
                    out[i, t, j] = weighted[k] * sequences[i, t, e]
                    j += 1


def lifted_position_features(sequences, causal=True, out=None, n_threads=1):
    """Lifted features of the output at every position of every sequence.

    Row ``i * n_tokens + t`` is ``pairs (x) z_t`` for position ``t`` of sequence
    ``i``, with the pairs of :func:`position_pair_statistics`; the feature order is
    that of :func:`lifted_features`, and with ``causal=True`` the row of the last
    position equals the last-token features.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64, C-ordered
        Validated sequences; read-only arrays are fine.
    causal : bool, default=True
        Prefix second moments ``S_t = sum_{s <= t} z_s z_s^T`` (causal attention) or
        the whole sequence's ``Z^T Z`` at every position.
    out : ndarray of shape (n_samples * n_tokens, n_lifted_features), optional
        C-contiguous float64 buffer to write into.
    n_threads : int, default=1
        Threads sharing the sequences; the kernel releases the GIL.

    Returns
    -------
    features : ndarray of shape (n_samples * n_tokens, n_lifted_features)
        ``out`` if it was given.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._lift import lifted_features, lifted_position_features
    >>> Z = np.random.default_rng(0).normal(size=(3, 4, 2))
    >>> rows = lifted_position_features(Z)
    >>> rows.shape  # 3 sequences x 4 positions, 6 lifted features
    (12, 6)
    >>> np.allclose(rows.reshape(3, 4, 6)[:, -1], lifted_features(Z))
    True
    >>> prefix = np.ascontiguousarray(Z[:, :2])  # the first two tokens
    >>> np.allclose(rows.reshape(3, 4, 6)[:, 1], lifted_features(prefix))
    True
    """
    causal = _check_causal(causal)
    n_samples, n_tokens, token_dim = sequences.shape
    p = n_lifted_features(token_dim)
    shape = (n_samples * n_tokens, p)
    out = _output_array(out, shape)
    kernel = _compiled(
        _lift_positions_into, (_READONLY_3D, types.boolean, _WRITABLE_3D)
    )
    _run_by_rows(
        lambda seqs, rows: kernel(seqs, causal, rows),
        n_threads,
        sequences,
        out.reshape(n_samples, n_tokens, p),
    )
    return out


# --- the lifted Gram from its distinct entries ----------------------------------------
#
# G[(a, e), (b, f)] = sum_i s_ia s_ib q_ie q_if is symmetric in a <-> b and in e <-> f
# separately, so only the products for a <= b and e <= f are distinct: the matrix
# H = U^T V with U[i, (a, b)] = s_ia s_ib and V[i, (e, f)] = q_ie q_if (pairs of
# pairs in numpy.triu_indices order). H has about p^2 / 4 entries and costs about
# half the flops of a symmetric rank-k update of G, as one GEMM.


@_jit
def _upper_outer_into(rows, out):  # pragma: no cover - compiled by Numba
    n, m = rows.shape
    row = np.empty(m)
    for i in range(n):
        # A private copy of the row and slice views: without possible aliasing
        # between them, the inner loop vectorizes (2.3x faster, bench_speed.py).
        # Element by element: a slice assignment compiles Numba's broadcast-error
        # formatting, 1.5 s of the first call.
        for a in range(m):
            row[a] = rows[i, a]
        products = out[i]
        k = 0
        for a in range(m):
            value = row[a]
            width = m - a
            block = products[k : k + width]
            tail = row[a:]
            for j in range(width):
                block[j] = value * tail[j]
            k += width


def upper_outer_products(rows, out=None):
    """The distinct products of each row with itself: ``rows[:, a] * rows[:, b]``
    for ``a <= b``, in ``numpy.triu_indices`` order.

    Parameters
    ----------
    rows : ndarray of shape (n, m), float64, C-ordered
    out : ndarray of shape (n, m * (m + 1) // 2), float64, C-ordered, optional

    Returns
    -------
    products : ndarray of shape (n, m * (m + 1) // 2)
        ``out`` if it was given.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._lift import upper_outer_products
    >>> upper_outer_products(np.array([[1.0, 2.0, 3.0]]))
    array([[1., 2., 3., 4., 6., 9.]])
    """
    n, m = rows.shape
    shape = (n, m * (m + 1) // 2)
    out = _output_array(out, shape)
    if n:
        _compiled(_upper_outer_into, (_READONLY_2D, _WRITABLE_2D))(rows, out)
    return out


@_jit
def _add_structured_into(products_t, d, gram):  # pragma: no cover - Numba
    """``gram += G`` from ``products_t = products.T`` (C-ordered views of the
    Fortran-ordered arrays; ``G`` is symmetric, so its transpose is itself)."""
    m = gram.shape[0] // d
    # index of the pair (e, f), e <= f, in triu order, for every e and f
    query_index = np.empty((d, d), dtype=np.int64)
    k = 0
    for e in range(d):
        for f in range(e, d):
            query_index[e, f] = k
            query_index[f, e] = k
            k += 1
    r = 0
    for a in range(m):
        for b in range(a, m):
            for e in range(d):
                row = a * d + e
                for f in range(d):
                    value = products_t[query_index[e, f], r]
                    gram[row, b * d + f] += value
                    if a != b:
                        gram[b * d + f, row] += value
            r += 1


def add_structured_gram(products, token_dim, gram):
    """Add the lifted Gram matrix whose distinct entries are ``products`` to ``gram``.

    ``products[(a, b), (e, f)] = sum_i s_ia s_ib q_ie q_if`` for pairs ``a <= b`` of
    the weighted pair statistics and ``e <= f`` of the queries (both in
    ``numpy.triu_indices`` order), i.e. ``upper_outer_products(s).T @
    upper_outer_products(q)``. Since the lifted features are ``s (x) q``, the Gram
    entry of features ``(a, e)`` and ``(b, f)`` is ``products[(min(a, b), max(a, b)),
    (min(e, f), max(e, f))]``; both triangles of ``gram`` are written.

    Parameters
    ----------
    products : ndarray of shape (m * (m + 1) // 2, d * (d + 1) // 2), Fortran-ordered
        ``m = d * (d + 1) // 2``.
    token_dim : int
        ``d``.
    gram : ndarray of shape (p, p), float64, Fortran-ordered
        Updated in place.

    Returns
    -------
    gram : ndarray of shape (p, p)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._lift import (add_structured_gram, pair_statistics,
    ...     lifted_features, upper_outer_products)
    >>> Z = np.random.default_rng(0).normal(size=(50, 4, 2))
    >>> pairs, queries = pair_statistics(Z)
    >>> products = upper_outer_products(pairs).T @ upper_outer_products(queries)
    >>> gram = add_structured_gram(np.asfortranarray(products), 2,
    ...                            np.zeros((6, 6), order="F"))
    >>> features = lifted_features(Z)
    >>> np.allclose(gram, features.T @ features)
    True
    """
    d = int(token_dim)
    m = d * (d + 1) // 2
    p = m * d
    expected = (m * (m + 1) // 2, d * (d + 1) // 2)
    if products.shape != expected or not products.flags.f_contiguous:
        raise ValueError(
            f"products must be a Fortran-ordered array of shape {expected}, got "
            f"shape {products.shape}."
        )
    if gram.shape != (p, p) or not gram.flags.f_contiguous:
        raise ValueError(
            f"gram must be a Fortran-ordered array of shape {(p, p)}, got shape "
            f"{gram.shape}."
        )
    kernel = _compiled(_add_structured_into, (_READONLY_2D, types.int64, _WRITABLE_2D))
    kernel(products.T, d, gram.T)
    return gram
