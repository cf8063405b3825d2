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
query is ``z_t``. Callers validate inputs first (``_validation.py`` does: finite
float64 C-ordered arrays, passed to the kernels as they are; the public functions
here convert other real layouts, as a copy); the kernels never check for NaN.

Three kernels, each compiled on its first call for one signature (Numba itself is
imported then, not with the package): the statistics and the features of the last
token in one (``_pair_statistics_into``), of every position in another
(``_position_pairs_into``), and the distinct products of the structured Gram
(``_upper_outer_into``). A fit from the streamed normal equations compiles two of
them, one from the kernel (dual) form one, ``predict`` none beyond those. What is a
gather or a scan is numpy, which is as fast or nearly (each kernel costs 0.15-0.4 s
to compile); ``benchmarks/bench_first_fit.py`` measures what each documented
pipeline compiles.
"""

import functools
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

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
_compile_lock = threading.Lock()


def _jit(function):
    """Numba dispatcher for ``function``, cached to disk where possible.

    Numba refuses to decorate a cached function when it finds no writable cache
    directory (a read-only install without a writable home); then we compile without
    the on-disk cache rather than fail.
    """
    from numba import njit

    # fastmath lets the dot products of S vectorize; inputs are validated finite
    # before any kernel runs.
    try:
        return njit(cache=True, nogil=True, fastmath=True)(function)
    except RuntimeError:  # pragma: no cover - depends on the file system
        return njit(cache=False, nogil=True, fastmath=True)(function)


def _numba_type(code):
    """The Numba type of a kernel argument: ``"r3"`` a read-only C-ordered float64
    array of 3 dimensions, ``"w2"`` a writable one of 2, ``"i2"`` a read-only int64
    one, ``"b"`` a boolean."""
    from numba import types

    if code == "b":
        return types.boolean
    dtype = types.int64 if code[0] == "i" else types.float64
    return types.Array(dtype, int(code[1]), "C", readonly=code[0] != "w")


class _Kernel:
    """A Numba kernel, compiled when first called, for one signature only.

    Numba itself is imported then, not when the package is: a process that never
    lifts a sequence never pays for it. Inputs are declared read-only: writable
    arrays convert to that type, so user arrays of either kind share one compiled
    version instead of two. With ``NUMBA_DISABLE_JIT=1`` the kernel runs as Python.

    ``dispatcher`` is the Numba dispatcher once compiled (None before).
    """

    def __init__(self, function, signature):
        self.function = function
        self.signature = signature
        self.dispatcher = None
        self.__doc__ = function.__doc__

    @property
    def signatures(self):
        """The signatures compiled (or loaded from the cache) so far."""
        return getattr(self.dispatcher, "signatures", [])

    def __call__(self, *arguments):
        if self.dispatcher is None:
            with _compile_lock:
                if self.dispatcher is None:
                    self.dispatcher = self._compile()
        return self.dispatcher(*arguments)

    def _compile(self):
        dispatcher = _jit(self.function)
        if hasattr(dispatcher, "compile"):  # not NUMBA_DISABLE_JIT=1
            dispatcher.compile(tuple(_numba_type(code) for code in self.signature))
            dispatcher.disable_compile()
        return dispatcher


def _kernel(*signature):
    """Decorator: ``function`` as a :class:`_Kernel` of ``signature`` (codes of
    :func:`_numba_type`)."""
    return lambda function: _Kernel(function, signature)


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


@_kernel("r3", "w2", "w1", "w2", "w2", "w2")
def _pair_statistics_into(
    sequences, transposed, pair_row, pairs, queries, features
):  # pragma: no cover - compiled by Numba
    """For each sequence ``i``: its weighted pairs ``w_bc S[b, c]`` and query into
    ``pairs[i]`` and ``queries[i]``, and its lifted features ``pairs (x) q`` into
    ``features[i]``, each unless that array has no rows. ``transposed`` (d,
    n_tokens) and ``pair_row`` (m,) are scratch. Returns ``max |sequences|``, found
    on the way (the data's scale).

    One kernel for the statistics and the features, with its scratch from the
    caller: each kernel compiled, and an array allocated inside one, adds about
    0.1 s to the first fit (benchmarks/bench_first_fit.py)."""
    n_samples, n_tokens, d = sequences.shape
    keep_statistics = pairs.shape[0] > 0
    lift = features.shape[0] > 0
    largest = 0.0
    for i in range(n_samples):
        for t in range(n_tokens):  # tokens as columns: each S[b, c] a dot product
            for b in range(d):
                value = sequences[i, t, b]
                transposed[b, t] = value
                largest = max(largest, abs(value))
        k = 0
        for b in range(d):
            for c in range(b, d):
                total = 0.0
                for t in range(n_tokens):
                    total += transposed[b, t] * transposed[c, t]
                pair_row[k] = total if b == c else _SQRT2 * total
                k += 1
        if keep_statistics:
            for k in range(pair_row.size):
                pairs[i, k] = pair_row[k]
            for e in range(d):
                queries[i, e] = sequences[i, n_tokens - 1, e]
        if lift:
            j = 0
            for k in range(pair_row.size):  # phi = pairs (x) q, q running fastest
                for e in range(d):
                    features[i, j] = pair_row[k] * sequences[i, n_tokens - 1, e]
                    j += 1
    return largest


def _last_token_pass(sequences, pairs, queries, features, n_threads):
    """:func:`_pair_statistics_into` over the rows, shared among ``n_threads``
    threads (each with its own scratch); ``max |sequences|``."""
    _, n_tokens, d = sequences.shape

    def kernel(sequences, pairs, queries, features):
        transposed, pair_row = np.empty((d, n_tokens)), np.empty(d * (d + 1) // 2)
        return _pair_statistics_into(
            sequences, transposed, pair_row, pairs, queries, features
        )

    largests = _run_by_rows(kernel, n_threads, sequences, pairs, queries, features)
    return float(max(largests, default=0.0))


def _kernel_input(array, ndim, name="sequences"):
    """``array`` as the C-ordered float64 array of ``ndim`` dimensions a kernel
    reads: already one (what validation returns) it is passed as is, read-only
    or not; a strided view or another real dtype is converted (a copy); another
    number of dimensions is an error naming the expected shape, not Numba's
    "No matching definition"."""
    array = np.asarray(array)
    if array.ndim != ndim:
        expected = (
            "(n_samples, n_tokens, token_dim)" if ndim == 3 else "(n_rows, width)"
        )
        raise ValueError(
            f"{name} must be a {ndim}-D array of shape {expected}, got shape "
            f"{array.shape}."
        )
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must hold real numbers, got an array of dtype {array.dtype}."
        )
    return np.ascontiguousarray(array, dtype=np.float64)


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
    sequences = _kernel_input(sequences, 3)
    n_samples, _, token_dim = sequences.shape
    shape = (n_samples, n_lifted_features(token_dim))
    out = _output_array(out, shape)
    no_rows = np.empty((0, token_dim * (token_dim + 1) // 2)), np.empty((0, token_dim))
    _last_token_pass(sequences, *no_rows, out, n_threads)
    return out


#: Elements per block of :func:`largest_magnitude`: 512 KiB, so that the second of
#: numpy's two reductions of a block reads it from the cache (the fastest of 64 KiB
#: to 2 MiB at 10^4 to 2 10^7 elements on the project's machine).
_SCAN_BLOCK = 1 << 16


def largest_magnitude(array):
    """``max |array|`` (0 for an empty array) of a validated array.

    It sets the power-of-two scale of the data. ``max`` and ``min`` by blocks of
    512 KiB: memory is read once, as by one pass of a compiled loop, which is at
    most 1.3x faster and would cost 0.1-0.2 s to compile (benchmarks/README.md,
    section of ``bench_first_fit.py``).

    Parameters
    ----------
    array : ndarray of float64, finite

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
    flat = np.asarray(array, dtype=np.float64).reshape(-1)
    largest = 0.0
    for start in range(0, flat.size, _SCAN_BLOCK):
        block = flat[start : start + _SCAN_BLOCK]
        largest = max(largest, float(block.max()), -float(block.min()))
    return largest


def _run_by_rows(kernel, n_threads, *arrays):
    """``kernel(*arrays)``, the rows (first axis) shared among ``n_threads`` threads;
    the list of the kernel's return values, one per thread.

    The kernels release the GIL and write disjoint rows, so threads need no lock.
    Arrays without rows (outputs not wanted) stay without rows.
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
    sequences = _kernel_input(sequences, 3)
    n_samples, _, d = sequences.shape
    pairs = np.empty((n_samples, d * (d + 1) // 2))
    queries = np.empty((n_samples, d))
    no_features = np.empty((0, n_lifted_features(d)))
    largest = _last_token_pass(sequences, pairs, queries, no_features, n_threads)
    if return_largest:
        return pairs, queries, largest
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


@_kernel("r3", "b", "w2", "w3", "w3", "w3")
def _position_pairs_into(
    sequences, causal, scratch, pairs, queries, features
):  # pragma: no cover - compiled by Numba
    """For each position ``t`` of sequence ``i``: ``w_bc S_t[b, c]`` and ``z_t``
    into ``pairs[i, t]`` and ``queries[i, t]``, and the lifted features ``pairs (x)
    z_t`` into ``features[i, t]``, each unless that array has no rows.

    ``S_t`` is kept as running prefix sums over the upper triangle, updated token by
    token; with ``causal=False`` every position gets the whole sequence's ``S``.
    ``scratch`` (3, m) holds the running sums, their weighted copy and the weights.
    """
    n_samples, n_tokens, d = sequences.shape
    m = d * (d + 1) // 2
    keep_statistics = pairs.shape[0] > 0
    lift = features.shape[0] > 0
    running, weighted, weights = scratch[0], scratch[1], scratch[2]
    k = 0
    for b in range(d):
        for c in range(b, d):
            weights[k] = 1.0 if b == c else _SQRT2
            k += 1
    for i in range(n_samples):
        for k in range(m):
            running[k] = 0.0
        for t in range(n_tokens):
            # the tokens S_t adds: token t if causal, all of them once otherwise
            first, stop = (t, t + 1) if causal else (0, n_tokens if t == 0 else 0)
            for s in range(first, stop):
                k = 0
                for b in range(d):
                    zb = sequences[i, s, b]
                    for c in range(b, d):
                        running[k] += zb * sequences[i, s, c]
                        k += 1
            if keep_statistics:
                for k in range(m):
                    pairs[i, t, k] = weights[k] * running[k]
                for e in range(d):
                    queries[i, t, e] = sequences[i, t, e]
            if lift:
                if causal or t == 0:
                    for k in range(m):
                        weighted[k] = weights[k] * running[k]
                j = 0
                for k in range(m):  # pairs (x) z_t, z_t running fastest
                    for e in range(d):
                        features[i, t, j] = weighted[k] * sequences[i, t, e]
                        j += 1


def _check_causal(causal):
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal must be True or False, got {causal!r}.")
    return bool(causal)


def _every_position_pass(sequences, causal, pairs, queries, features, n_threads):
    """:func:`_position_pairs_into` over the sequences, shared among ``n_threads``
    threads (each with its own scratch)."""
    d = sequences.shape[2]

    def kernel(sequences, pairs, queries, features):
        scratch = np.empty((3, d * (d + 1) // 2))
        _position_pairs_into(sequences, causal, scratch, pairs, queries, features)

    _run_by_rows(kernel, n_threads, sequences, pairs, queries, features)


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
    sequences = _kernel_input(sequences, 3)
    n_samples, n_tokens, d = sequences.shape
    m = d * (d + 1) // 2
    pairs = np.empty((n_samples * n_tokens, m))
    queries = np.empty((n_samples * n_tokens, d))
    _every_position_pass(
        sequences,
        causal,
        pairs.reshape(n_samples, n_tokens, m),
        queries.reshape(n_samples, n_tokens, d),
        np.empty((0, n_tokens, m * d)),
        n_threads,
    )
    return pairs, queries


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
    sequences = _kernel_input(sequences, 3)
    n_samples, n_tokens, token_dim = sequences.shape
    p = n_lifted_features(token_dim)
    m = p // token_dim
    out = _output_array(out, (n_samples * n_tokens, p))
    _every_position_pass(
        sequences,
        causal,
        np.empty((0, n_tokens, m)),
        np.empty((0, n_tokens, token_dim)),
        out.reshape(n_samples, n_tokens, p),
        n_threads,
    )
    return out


# --- the lifted Gram from its distinct entries ----------------------------------------
#
# G[(a, e), (b, f)] = sum_i s_ia s_ib q_ie q_if is symmetric in a <-> b and in e <-> f
# separately, so only the products for a <= b and e <= f are distinct: the matrix
# H = U^T V with U[i, (a, b)] = s_ia s_ib and V[i, (e, f)] = q_ie q_if (pairs of
# pairs in numpy.triu_indices order). H has about p^2 / 4 entries and costs about
# half the flops of a symmetric rank-k update of G, as one GEMM.


@_kernel("r2", "w1", "w2")
def _upper_outer_into(rows, row, out):  # pragma: no cover - compiled by Numba
    """``out[i]``: the products ``rows[i, a] * rows[i, b]``, ``a <= b``; ``row``
    (m,) is scratch."""
    n, m = rows.shape
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
    rows = _kernel_input(rows, 2, name="rows")
    n, m = rows.shape
    shape = (n, m * (m + 1) // 2)
    out = _output_array(out, shape)
    if n:
        _upper_outer_into(rows, np.empty(m), out)
    return out


@functools.lru_cache(maxsize=32)
def _pair_index(width):
    """``index[a, b]``: the position of the pair ``(min(a, b), max(a, b))`` among
    the pairs ``a <= b`` of ``width`` items, in ``numpy.triu_indices`` order
    (cached, read-only: each fold of each ``partial_fit`` batch folds its Gram,
    and building the index was a fifth of a small batch's statistics)."""
    index = np.empty((width, width), dtype=np.intp)
    first, second = np.triu_indices(width)
    index[first, second] = index[second, first] = np.arange(first.size)
    index.flags.writeable = False
    return index


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
    # gram.T and products.T are C-ordered views; G is symmetric, so adding it to
    # gram.T adds it to gram. Rows (a, e) of G, for each a:
    # G[(a, e), (b, f)] = products[pair (a, b), pair (e, f)]. A gather, so numpy:
    # a compiled loop is at most 1.3x faster (at d >= 16, where this is ~2% of the
    # fit) and would cost 0.16 s to compile (benchmarks/README.md).
    pair_index, query_index = _pair_index(m), _pair_index(d)
    products_t, gram_t = products.T, gram.T
    for a in range(m):
        columns = products_t[:, pair_index[a]]  # pairs (a, b) for every b
        rows = gram_t[a * d : (a + 1) * d].reshape(d, m, d)  # [e, b, f]
        rows += columns[query_index].transpose(0, 2, 1)
    return gram
