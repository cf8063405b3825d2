"""The Numba lifted features against a naive reference written from the definition."""

import ast
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import assert_within_lifted_rounding, naive_lifted_features

from sklearn_linattn._lift import (
    _SCAN_BLOCK,
    lifted_feature_pairs,
    lifted_features,
    lifted_position_features,
    pair_statistics,
    position_pair_statistics,
)
from sklearn_linattn._validation import validate_sequences


@pytest.mark.parametrize("token_dim", range(1, 9))
@pytest.mark.parametrize("n_tokens", [1, 2, 17])
def test_matches_naive_reference_3d_and_2d(rng, token_dim, n_tokens):
    Z = rng.normal(size=(11, n_tokens, token_dim))
    expected = naive_lifted_features(Z)
    assert expected.shape == (11, token_dim * token_dim * (token_dim + 1) // 2)
    np.testing.assert_allclose(lifted_features(Z), expected, rtol=1e-12, atol=1e-12)
    flat = Z.reshape(11, -1)
    from_rows = lifted_features(validate_sequences(flat, token_dim=token_dim))
    np.testing.assert_allclose(from_rows, expected, rtol=1e-12, atol=1e-12)


def test_isometry_is_the_paper_kernel(rng):
    # <phi(Z), phi(Z')> = <S, S'>_F <q, q'>
    Z = rng.normal(size=(6, 5, 4))
    W = rng.normal(size=(7, 3, 4))
    kernel = lifted_features(Z) @ lifted_features(W).T
    S_Z = np.einsum("nti,ntj->nij", Z, Z)
    S_W = np.einsum("nti,ntj->nij", W, W)
    expected = np.einsum("nij,mij->nm", S_Z, S_W) * (Z[:, -1] @ W[:, -1].T)
    np.testing.assert_allclose(kernel, expected, rtol=1e-12)


def test_feature_pairs_describe_each_column(rng):
    Z = rng.normal(size=(3, 4, 3))
    b, c, e = lifted_feature_pairs(3)
    S = np.einsum("nti,ntj->nij", Z, Z)
    weight = np.where(b == c, 1.0, np.sqrt(2.0))
    expected = weight * S[:, b, c] * Z[:, -1, e]
    np.testing.assert_allclose(lifted_features(Z), expected, rtol=1e-12)


def test_zero_padding_changes_nothing(rng):
    Z = rng.normal(size=(4, 6, 3))
    padded = np.concatenate([np.zeros((4, 5, 3)), Z], axis=1)
    assert_within_lifted_rounding(
        lifted_features(padded), lifted_features(Z), naive_lifted_features(abs(Z)), 11
    )


def test_read_only_input_and_threads_agree(rng):
    Z = rng.normal(size=(101, 7, 5))
    expected = naive_lifted_features(Z)
    Z.setflags(write=False)
    magnitude = naive_lifted_features(np.abs(Z))
    assert_within_lifted_rounding(lifted_features(Z), expected, magnitude, 7)
    assert_within_lifted_rounding(
        lifted_features(Z, n_threads=3), expected, magnitude, 7
    )


def test_writes_into_given_buffer(rng):
    Z = rng.normal(size=(5, 3, 2))
    buffer = np.full((5, 6), np.nan)
    result = lifted_features(Z, out=buffer)
    assert result is buffer
    np.testing.assert_allclose(buffer, naive_lifted_features(Z), rtol=1e-12)


def test_wrong_buffer_is_rejected(rng):
    Z = rng.normal(size=(5, 3, 2))
    with pytest.raises(ValueError, match=r"shape \(5, 6\)"):
        lifted_features(Z, out=np.empty((5, 7)))
    with pytest.raises(ValueError, match="C-contiguous float64"):
        lifted_features(Z, out=np.empty((5, 6), dtype=np.float32))


def test_no_samples():
    assert lifted_features(np.empty((0, 3, 2))).shape == (0, 6)


# Per-position kernels, against explicit prefix sums written here.


def naive_position_statistics(sequences, causal):
    """(pairs, queries) per position from explicit (cumulative) sums of z_s z_s^T."""
    n_samples, n_tokens, d = sequences.shape
    outer = np.einsum("nti,ntj->ntij", sequences, sequences)
    if causal:
        S = np.cumsum(outer, axis=1)
    else:
        S = np.broadcast_to(outer.sum(axis=1, keepdims=True), outer.shape)
    rows, cols = np.triu_indices(d)
    weight = np.where(rows == cols, 1.0, np.sqrt(2.0))
    pairs = weight * S[:, :, rows, cols]
    return pairs.reshape(n_samples * n_tokens, -1), sequences.reshape(-1, d)


def naive_position_features(sequences, causal):
    pairs, queries = naive_position_statistics(sequences, causal)
    return np.einsum("rk,re->rke", pairs, queries).reshape(pairs.shape[0], -1)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("token_dim", [1, 2, 3, 5])
@pytest.mark.parametrize("n_tokens", [1, 2, 9])
def test_position_kernels_match_prefix_sums(rng, causal, token_dim, n_tokens):
    Z = rng.normal(size=(6, n_tokens, token_dim))
    pairs, queries = position_pair_statistics(Z, causal=causal)
    expected_pairs, expected_queries = naive_position_statistics(Z, causal)
    np.testing.assert_allclose(pairs, expected_pairs, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(queries, expected_queries)
    features = lifted_position_features(Z, causal=causal)
    expected = naive_position_features(Z, causal)
    assert features.shape == (6 * n_tokens, token_dim**2 * (token_dim + 1) // 2)
    np.testing.assert_allclose(features, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("token_dim", [1, 2, 4])
def test_position_rows_are_the_lifted_features_of_prefixes(rng, token_dim):
    # Causal row t of sequence i = lifted_features of the prefix Z[i, :t+1]; the last
    # position (causal or not) is the last-token map.
    Z = rng.normal(size=(5, 7, token_dim))
    rows = lifted_position_features(Z).reshape(5, 7, -1)
    for t in range(7):
        prefix = np.ascontiguousarray(Z[:, : t + 1])
        np.testing.assert_allclose(rows[:, t], lifted_features(prefix), rtol=1e-12)
    whole = lifted_position_features(Z, causal=False).reshape(5, 7, -1)
    np.testing.assert_allclose(whole[:, -1], lifted_features(Z), rtol=1e-12)
    pairs, queries = position_pair_statistics(Z)
    last_pairs, last_queries = pair_statistics(Z)
    np.testing.assert_allclose(pairs.reshape(5, 7, -1)[:, -1], last_pairs, rtol=1e-12)
    np.testing.assert_array_equal(queries.reshape(5, 7, -1)[:, -1], last_queries)


def test_bidirectional_row_depends_on_later_tokens_causal_does_not(rng):
    Z = rng.normal(size=(2, 5, 3))
    changed = Z.copy()
    changed[:, 3:] = rng.normal(size=(2, 2, 3))
    causal, causal_changed = (
        lifted_position_features(A).reshape(2, 5, -1) for A in (Z, changed)
    )
    np.testing.assert_array_equal(causal[:, :3], causal_changed[:, :3])
    whole, whole_changed = (
        lifted_position_features(A, causal=False).reshape(2, 5, -1)
        for A in (Z, changed)
    )
    assert not np.allclose(whole[:, 0], whole_changed[:, 0])


def test_position_kernels_threads_read_only_and_buffer(rng):
    Z = rng.normal(size=(37, 6, 3))
    expected = naive_position_features(Z, True)
    Z.setflags(write=False)
    buffer = np.full((37 * 6, 18), np.nan)
    result = lifted_position_features(Z, out=buffer, n_threads=3)
    assert result is buffer
    absolute = np.abs(Z)
    magnitude = naive_position_features(absolute, True)
    assert_within_lifted_rounding(buffer, expected, magnitude, 6)
    pairs, _ = position_pair_statistics(Z, causal=False, n_threads=4)
    assert_within_lifted_rounding(
        pairs,
        naive_position_statistics(Z, False)[0],
        naive_position_statistics(absolute, False)[0],
        6,
    )


def test_position_kernels_reject_bad_arguments(rng):
    Z = rng.normal(size=(4, 3, 2))
    with pytest.raises(ValueError, match=r"shape \(12, 6\)"):
        lifted_position_features(Z, out=np.empty((4, 6)))
    with pytest.raises(ValueError, match="causal must be True or False"):
        lifted_position_features(Z, causal="yes")
    with pytest.raises(ValueError, match="causal must be True or False"):
        position_pair_statistics(Z, causal=1)


def test_position_kernels_no_samples():
    assert lifted_position_features(np.empty((0, 3, 2))).shape == (0, 6)
    pairs, queries = position_pair_statistics(np.empty((0, 3, 2)))
    assert pairs.shape == (0, 3) and queries.shape == (0, 2)


@pytest.mark.parametrize("width", [1, 2, 7])
def test_upper_outer_products_match_triu_indices(rng, width):
    from sklearn_linattn._lift import upper_outer_products

    rows = rng.normal(size=(9, width))
    first, second = np.triu_indices(width)
    expected = rows[:, first] * rows[:, second]  # naive: every a <= b, triu order
    np.testing.assert_array_equal(upper_outer_products(rows), expected)
    out = np.empty(expected.shape)
    assert upper_outer_products(rows, out=out) is out
    with pytest.raises(ValueError, match="C-contiguous float64 array of shape"):
        upper_outer_products(rows, out=np.empty((9, expected.shape[1] + 1)))


@pytest.mark.parametrize("token_dim", [1, 2, 3, 5])
def test_structured_gram_equals_the_gram_of_the_naive_features(rng, token_dim):
    """The distinct entries sum_i s_ia s_ib q_ie q_if (a <= b, e <= f), folded into
    p x p, equal Phi^T Phi of the features written from the definition."""
    from sklearn_linattn._lift import add_structured_gram, upper_outer_products

    Z = rng.normal(size=(40, 4, token_dim))
    Phi = naive_lifted_features(Z)
    pairs, queries = pair_statistics(Z)
    products = np.asfortranarray(
        upper_outer_products(pairs).T @ upper_outer_products(queries)
    )
    p = Phi.shape[1]
    start = rng.normal(size=(p, p))
    expected = start + Phi.T @ Phi
    gram = add_structured_gram(products, token_dim, np.array(start, order="F"))
    np.testing.assert_allclose(gram, expected, rtol=1e-12, atol=1e-10)
    with pytest.raises(ValueError, match="Fortran-ordered array of shape"):
        add_structured_gram(products, token_dim, np.zeros((p + 1, p + 1), order="F"))
    with pytest.raises(ValueError, match="products must be"):
        add_structured_gram(products[:-1], token_dim, np.zeros((p, p), order="F"))


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("n_samples", [0, 1, 7])
def test_pair_statistics_returns_the_largest_magnitude(rng, n_threads, n_samples):
    """The scale found in the same pass as the pairs is max |X| (largest entry
    negative here), and the pairs are those without it."""
    Z = rng.normal(size=(n_samples, 5, 3))
    if n_samples:
        Z[-1, 2, 1] = -7.5
    pairs, queries, largest = pair_statistics(
        Z, n_threads=n_threads, return_largest=True
    )
    assert largest == (np.abs(Z).max() if n_samples else 0.0)
    expected_pairs, expected_queries = pair_statistics(Z)
    np.testing.assert_array_equal(pairs, expected_pairs)
    np.testing.assert_array_equal(queries, expected_queries)


@pytest.mark.parametrize("n_threads", [1, 3])
@pytest.mark.parametrize("token_dim", [1, 2, 5])
def test_features_are_exactly_the_products_of_the_statistics(rng, n_threads, token_dim):
    """phi = s (x) q, entry by entry, to the last bit: the features and the compact
    statistics come from the same sums (last token, every position, either
    causality), so a model fitted from one predicts from the other unchanged."""
    Z = rng.normal(size=(23, 6, token_dim))
    pairs, queries = pair_statistics(Z)
    products = np.einsum("nk,ne->nke", pairs, queries).reshape(len(Z), -1)
    np.testing.assert_array_equal(lifted_features(Z, n_threads=n_threads), products)
    for causal in (True, False):
        pairs, queries = position_pair_statistics(Z, causal=causal)
        products = np.einsum("rk,re->rke", pairs, queries).reshape(len(pairs), -1)
        np.testing.assert_array_equal(
            lifted_position_features(Z, causal=causal, n_threads=n_threads), products
        )


@pytest.mark.parametrize("size", [0, 1, 7, 2 * _SCAN_BLOCK + 5])
def test_largest_magnitude_is_the_largest_absolute_entry(rng, size):
    """max |x| over every entry (0 for none), wherever the largest lies: in any
    block of the scan, negative or positive, in any layout of the array."""
    from sklearn_linattn._lift import largest_magnitude

    x = rng.normal(size=size)
    for position in {0, size // 2, size - 1} if size else ():
        for sign in (-1.0, 1.0):
            y = x.copy()
            y[position] = sign * 40.0
            assert largest_magnitude(y) == 40.0
            assert largest_magnitude(y.reshape(-1, 1)[::-1]) == 40.0
    assert largest_magnitude(x) == (np.abs(x).max() if size else 0.0)
    if size > 2:
        strided = x[::3]  # not contiguous
        assert largest_magnitude(strided) == np.abs(strided).max()


# A fresh interpreter fits and predicts, then lists the kernels compiled (or loaded
# from the cache) and the signatures of each: any Numba dispatcher of _lift.
_COMPILED_BY_A_FIT = """
import numpy as np
from sklearn_linattn import LinearAttentionClassifierCV, LinearAttentionRegressor
from sklearn_linattn import _lift
rng = np.random.default_rng(0)
if CASE == "normal":  # n > p: the streamed Gram from compact rows
    X = rng.normal(size=(200, 10, 4))
    y = X[:, -1, 0] * X[:, 0, 1] ** 2  # noiseless: the residual gets its own pass
    model = LinearAttentionRegressor().fit(X, y)
else:  # n < p: the kernel (dual) form, alpha by leave-one-out
    X = rng.normal(size=(30, 6, 5))
    model = LinearAttentionClassifierCV().fit(X, np.arange(30) % 2)
model.predict(rng.normal(size=(7, 25, X.shape[2])))
kernels = [getattr(kernel, "dispatcher", kernel) for kernel in vars(_lift).values()]
print(sorted(
    (kernel.py_func.__name__, len(kernel.signatures)) for kernel in kernels
    if not isinstance(kernel, type) and getattr(kernel, "signatures", None)
))
"""


@pytest.mark.skipif(
    os.environ.get("NUMBA_DISABLE_JIT", "0") != "0",
    reason="NUMBA_DISABLE_JIT: the kernels run as Python, nothing is compiled",
)
@pytest.mark.parametrize(
    "case, kernels",
    [
        ("normal", ["_pair_statistics_into", "_upper_outer_into"]),
        ("dual", ["_pair_statistics_into"]),
    ],
)
def test_a_fit_and_predict_compile_only_the_kernels_the_fit_calls(case, kernels):
    """Numba compiles (or loads from its cache) a kernel when it is first called,
    for one signature: a fresh interpreter's default fit at d = 4 from the streamed
    normal equations has two kernels, a CV classifier's fit from the kernel form
    one, one signature each; the head search and ``predict`` compile none of their
    own (predictions lift with the statistics kernel).
    benchmarks/bench_first_fit.py times the documented pipelines."""
    import sklearn_linattn

    package_root = os.path.dirname(os.path.dirname(sklearn_linattn.__file__))
    env = dict(os.environ, PYTHONPATH=package_root)
    result = subprocess.run(
        [sys.executable, "-c", f"CASE = {case!r}\n" + _COMPILED_BY_A_FIT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    compiled = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    assert compiled == [(name, 1) for name in kernels]


_IMPORT_ONLY = """
import sys
import sklearn_linattn
from sklearn_linattn import datasets, preprocessing
print(sorted(set(sys.modules) & OPTIONAL))
"""


def test_importing_the_package_loads_neither_numba_nor_optional_dependencies():
    """``import sklearn_linattn`` (and its datasets and preprocessing) does not
    import Numba, which the first kernel call imports, nor the optional Dask,
    matplotlib or tqdm: a process that does not lift does not pay for them."""
    import sklearn_linattn

    optional = {"numba", "llvmlite", "dask", "distributed", "matplotlib", "tqdm"}
    package_root = os.path.dirname(os.path.dirname(sklearn_linattn.__file__))
    env = dict(os.environ, PYTHONPATH=package_root)
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_ONLY.replace("OPTIONAL", repr(optional))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]"]


def test_kernels_take_any_real_layout_and_name_a_wrong_one(rng):
    """Strided, Fortran-ordered, float32 and read-only sequences: the features
    of their float64 C-ordered copy, bit for bit (a C-ordered float64 array is
    passed as is); a wrong number of dimensions or complex values are a
    ValueError / TypeError naming the expected input, not Numba's "No matching
    definition"."""
    from sklearn_linattn._lift import upper_outer_products

    base = rng.normal(size=(5, 8, 6))
    for X in (
        base[:, ::2, ::2],
        np.asfortranarray(base[:, :4, :3]),
        base[:, :4, :3].astype(np.float32),
    ):
        before = X.copy()
        copy = np.ascontiguousarray(X, dtype=np.float64)
        np.testing.assert_array_equal(lifted_features(X), lifted_features(copy))
        statistics = zip(pair_statistics(X), pair_statistics(copy), strict=True)
        for got, expected in statistics:
            np.testing.assert_array_equal(got, expected)
        for causal in (True, False):
            np.testing.assert_array_equal(
                lifted_position_features(X, causal=causal),
                lifted_position_features(copy, causal=causal),
            )
            for got, expected in zip(
                position_pair_statistics(X, causal=causal),
                position_pair_statistics(copy, causal=causal),
                strict=True,
            ):
                np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(
            upper_outer_products(X[:, 0]), upper_outer_products(copy[:, 0])
        )
        np.testing.assert_array_equal(X, before)
    read_only = np.ascontiguousarray(base[:, :4, :3])
    read_only.setflags(write=False)
    assert_within_lifted_rounding(
        lifted_features(read_only),
        naive_lifted_features(read_only),
        naive_lifted_features(np.abs(read_only)),
        4,
    )
    for function in (lifted_features, pair_statistics, lifted_position_features,
                     position_pair_statistics):
        with pytest.raises(ValueError, match=r"sequences must be a 3-D array of shape "
                           r"\(n_samples, n_tokens, token_dim\), got shape \(4, 3\)"):
            function(base[0, :4, :3])
        with pytest.raises(TypeError, match="must hold real numbers.*complex"):
            function(base[:, :4, :3] * 1j)
    with pytest.raises(ValueError, match=r"rows must be a 2-D array"):
        upper_outer_products(base)


def test_features_that_cannot_fit_are_refused_before_x_is_copied(monkeypatch):
    """LiftedAttentionFeatures.transform refuses features beyond the available
    memory before validation converts X (float32 here) to a float64 copy as
    large as X itself: the refusal allocates almost nothing."""
    import tracemalloc

    from sklearn_linattn import LiftedAttentionFeatures, _data

    X = np.ones((100_000, 6, 4), dtype=np.float32)  # 9.6 MB, 19.2 MB as float64
    monkeypatch.setattr(_data, "available_memory", lambda: 1_000_000)
    message = "The lifted features of 100,000 sequences are a 100,000 x 40 array"
    for rows in (X, X.reshape(100_000, -1)):
        flat = rows.ndim == 2
        features = LiftedAttentionFeatures(token_dim=4 if flat else None).fit(rows[:2])
        tracemalloc.start()
        try:
            with pytest.raises(ValueError, match=message):
                features.transform(rows)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1_000_000
