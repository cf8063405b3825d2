"""MultiHeadLinearAttention: the definition, the lifted coefficients, the distance."""

import warnings

import numpy as np
import pytest
from conftest import random_attention

from sklearn_linattn import MultiHeadLinearAttention
from sklearn_linattn._attention import (
    _fold_indices,
    fold_lifted_coef,
    unfold_lifted_coef,
)
from sklearn_linattn._lift import lifted_features


def naive_predict(model, sequences):
    """sum_h V_h (Z^T Z) Q_h q, one sequence and one head at a time."""
    out = np.zeros((len(sequences), model.n_outputs))
    for i, Z in enumerate(sequences):
        for V, Q in zip(model.value_matrices, model.query_matrices, strict=True):
            out[i] += V @ (Z.T @ Z) @ Q @ Z[-1]
    return out


@pytest.mark.parametrize(
    "token_dim, n_heads, n_outputs", [(1, 1, 1), (3, 2, 1), (4, 3, 2)]
)
def test_predict_is_the_definition(rng, token_dim, n_heads, n_outputs):
    model = random_attention(rng, token_dim, n_heads, n_outputs)
    Z = rng.normal(size=(9, 6, token_dim))
    expected = naive_predict(model, Z)
    np.testing.assert_allclose(model.predict(Z), expected, rtol=1e-12)
    np.testing.assert_allclose(model.predict(Z.reshape(9, -1)), expected, rtol=1e-12)


@pytest.mark.parametrize("token_dim", [1, 2, 5])
def test_lifted_coef_reproduces_predictions(rng, token_dim):
    model = random_attention(rng, token_dim, n_heads=3, n_outputs=2)
    Z = rng.normal(size=(8, 4, token_dim))
    np.testing.assert_allclose(
        lifted_features(Z) @ model.lifted_coef().T, model.predict(Z), rtol=1e-11
    )


def test_distance_ignores_trivial_symmetries(rng):
    d = 4
    model = random_attention(rng, d, n_heads=2, n_outputs=2)
    V, Q = model.value_matrices, model.query_matrices
    # rescaling V_h -> c V_h, Q_h -> Q_h / c, and reordering heads
    rescaled = MultiHeadLinearAttention(
        V[::-1] * [[[3.0]], [[-0.5]]], Q[::-1] / [[[3.0]], [[-0.5]]]
    )
    # splitting a head into two halves
    split = MultiHeadLinearAttention(
        np.concatenate([V, V[:1]]) * 1.0, np.concatenate([Q[:1] / 2, Q[1:], Q[:1] / 2])
    )
    # adding two heads whose W is antisymmetric in (b, c)
    u, r = rng.normal(size=2), rng.normal(size=d)
    V_anti = np.zeros((2, 2, d))
    Q_anti = np.zeros((2, d, d))
    V_anti[0, :, 0], Q_anti[0, 1, :] = u, r  # W[a,0,1,e] = u_a r_e
    V_anti[1, :, 1], Q_anti[1, 0, :] = -u, r  # W[a,1,0,e] = -u_a r_e
    antisymmetric = MultiHeadLinearAttention(
        np.concatenate([V, V_anti]), np.concatenate([Q, Q_anti])
    )
    Z = rng.normal(size=(5, 7, d))
    scale = np.linalg.norm(model.lifted_coef())
    for same in (rescaled, split, antisymmetric):
        assert model.distance(same) < 1e-13 * scale
        np.testing.assert_allclose(same.predict(Z), model.predict(Z), rtol=1e-10)
    other = random_attention(rng, d, n_heads=2, n_outputs=2)
    assert model.distance(other) > 0.1 * scale
    assert model.distance(other) == pytest.approx(other.distance(model))


def test_fold_unfold_round_trip(rng):
    coef = rng.normal(size=(3, 4 * 4 * 5 // 2))
    folded = fold_lifted_coef(coef, 4)
    assert folded.shape == (12, 16)
    W = folded.reshape(3, 4, 4, 4)
    np.testing.assert_array_equal(W, W.transpose(0, 2, 1, 3))  # symmetric split
    np.testing.assert_allclose(unfold_lifted_coef(folded, 4), coef, rtol=1e-14)


def test_zero_heads_predict_zero(rng):
    model = MultiHeadLinearAttention(np.zeros((0, 2, 3)), np.zeros((0, 3, 3)))
    np.testing.assert_array_equal(model.predict(rng.normal(size=(4, 5, 3))), 0.0)
    assert model.lifted_coef().shape == (2, 18)


@pytest.mark.parametrize(
    "value_shape, query_shape, match",
    [
        (
            (2, 3),
            (1, 3, 3),
            r"value_matrices must have shape \(n_heads, n_outputs, token_dim\)",
        ),
        (
            (1, 1, 3),
            (1, 3, 2),
            r"query_matrices must have shape \(n_heads, token_dim, token_dim\)",
        ),
        ((2, 1, 3), (1, 3, 3), "2 heads but query_matrices has 1"),
        ((1, 1, 4), (1, 3, 3), "token_dim 4 but query_matrices has token_dim 3"),
    ],
)
def test_bad_shapes(value_shape, query_shape, match):
    with pytest.raises(ValueError, match=match):
        MultiHeadLinearAttention(np.ones(value_shape), np.ones(query_shape))


def test_complex_matrices_are_refused_and_inputs_copied(rng):
    value, query = rng.normal(size=(1, 1, 3)), rng.normal(size=(1, 3, 3))
    with pytest.raises(ValueError, match="value_matrices must be real"):
        MultiHeadLinearAttention(value + 1j * value, query)
    with pytest.raises(ValueError, match="query_matrices must be real"):
        MultiHeadLinearAttention(value, query.astype(complex))
    model = MultiHeadLinearAttention(value, query)
    X = rng.normal(size=(4, 5, 3))
    before = model.predict(X)
    value[:] = 0.0  # the caller's arrays change; the model does not
    query[:] = 0.0
    np.testing.assert_array_equal(model.predict(X), before)


def test_dated_and_sparse_matrices_are_refused_by_name():
    """datetime64 matrices were cast to days since 1970 without a word; a
    sparse matrix failed in numpy ("setting an array element with a
    sequence")."""
    import scipy.sparse as sp

    query = np.ones((1, 2, 2))
    with pytest.raises(ValueError, match="value_matrices .* dtype datetime64"):
        MultiHeadLinearAttention(np.zeros((1, 2, 2), dtype="datetime64[D]"), query)
    with pytest.raises(ValueError, match="query_matrices .* dtype timedelta64"):
        MultiHeadLinearAttention(query, np.zeros((1, 2, 2), dtype="timedelta64[s]"))
    with pytest.raises(TypeError, match="value_matrices must be a dense .* sparse"):
        MultiHeadLinearAttention(sp.csr_matrix(np.ones((2, 2))), query)


def test_bad_predict_input_and_distance_arguments(rng):
    model = random_attention(rng, 3, 1)
    with pytest.raises(ValueError, match="token dimension 4"):
        model.predict(np.ones((2, 5, 4)))
    with pytest.raises(ValueError, match="not a multiple of token_dim=3"):
        model.predict(np.ones((2, 7)))
    with pytest.raises(TypeError, match="MultiHeadLinearAttention"):
        model.distance(np.ones(3))
    with pytest.raises(ValueError, match="same token_dim and n_outputs"):
        model.distance(random_attention(rng, 4, 1))
    with pytest.raises(ValueError, match="finite"):
        MultiHeadLinearAttention(np.full((1, 1, 2), np.nan), np.ones((1, 2, 2)))


# Outputs at every position.


def masked_reference(model, sequences, causal):
    """y_t = sum_h V_h sum_{s in window(t)} z_s (z_s^T Q_h z_t), from attention scores
    with an explicit mask (no prefix sums)."""
    n_tokens = sequences.shape[1]
    scores = np.einsum("nsb,hbc,ntc->nhts", sequences, model.query_matrices, sequences)
    if causal:
        scores = scores * np.tril(np.ones((n_tokens, n_tokens)))
    values = np.einsum("hab,nsb->nhsa", model.value_matrices, sequences)
    return np.einsum("nhts,nhsa->nta", scores, values)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize(
    "token_dim, n_heads, n_outputs", [(1, 1, 1), (3, 2, 1), (4, 3, 2)]
)
def test_every_position_matches_masked_scores(
    rng, causal, token_dim, n_heads, n_outputs
):
    model = random_attention(rng, token_dim, n_heads, n_outputs)
    Z = rng.normal(size=(7, 5, token_dim))
    expected = masked_reference(model, Z, causal)
    result = model.predict(Z, positions="all", causal=causal)
    assert result.shape == (7, 5, n_outputs)
    np.testing.assert_allclose(result, expected, rtol=1e-11, atol=1e-12)
    flat = model.predict(Z.reshape(7, -1), positions="all", causal=causal)
    np.testing.assert_allclose(flat, expected, rtol=1e-11, atol=1e-12)


def test_causal_position_is_the_last_token_output_of_its_prefix(rng):
    model = random_attention(rng, 3, n_heads=2, n_outputs=2)
    Z = rng.normal(size=(4, 6, 3))
    every = model.predict(Z, positions="all")
    for t in range(6):
        np.testing.assert_allclose(
            every[:, t], naive_predict(model, Z[:, : t + 1]), rtol=1e-11
        )
    whole = model.predict(Z, positions="all", causal=False)
    np.testing.assert_allclose(whole[:, -1], model.predict(Z), rtol=1e-12)
    # every position's output is linear in its lifted row, with the same coefficients
    from sklearn_linattn._lift import lifted_position_features

    for causal in (True, False):
        rows = lifted_position_features(Z, causal=causal)
        np.testing.assert_allclose(
            rows @ model.lifted_coef().T,
            model.predict(Z, positions="all", causal=causal).reshape(-1, 2),
            rtol=1e-10,
        )


def test_every_position_in_chunks_of_samples(rng):
    # 2000 sequences of 300 tokens run in two chunks of samples inside predict.
    model = random_attention(rng, 2, n_heads=1)
    Z = rng.normal(size=(2000, 300, 2))
    result = model.predict(Z, positions="all")
    for start in range(0, 2000, 250):
        block = slice(start, start + 250)
        np.testing.assert_allclose(
            result[block], masked_reference(model, Z[block], True), atol=1e-10
        )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"positions": "first"}, 'positions must be "last" or "all"'),
        ({"positions": None}, 'positions must be "last" or "all"'),
        ({"positions": "all", "causal": "yes"}, "causal must be True or False"),
        ({"positions": "all", "causal": 1}, "causal must be True or False"),
    ],
)
def test_positions_and_causal_are_validated(rng, kwargs, message):
    model = random_attention(rng, 2, n_heads=1)
    with pytest.raises(ValueError, match=message):
        model.predict(rng.normal(size=(2, 3, 2)), **kwargs)


def paper_coefficients(model):
    """The authors' fold_params, written out: for b < c the coefficient of
    S[b,c] q[e] is W[a,b,c,e] + W[a,c,b,e]; on the diagonal W[a,b,b,e]."""
    W = np.einsum("hab,hce->abce", model.value_matrices, model.query_matrices)
    d = model.token_dim
    rows = []
    for b in range(d):
        for c in range(b, d):
            for e in range(d):
                rows.append(W[:, b, c, e] + (W[:, c, b, e] if b < c else 0.0))
    return np.stack(rows, axis=1)


def test_distance_in_the_papers_basis(rng):
    first = random_attention(rng, 3, n_heads=2, n_outputs=2)
    second = random_attention(rng, 3, n_heads=4, n_outputs=2)
    expected = np.linalg.norm(paper_coefficients(first) - paper_coefficients(second))
    assert first.distance(second, convention="paper") == pytest.approx(expected)
    ours = first.distance(second)
    assert ours < expected < np.sqrt(2) * ours
    assert first.distance(first, convention="paper") == 0.0
    with pytest.raises(ValueError, match='convention must be "isometric" or "paper"'):
        first.distance(second, convention="unscaled")


@pytest.mark.parametrize("positions", ["last", "all"])
def test_outputs_near_the_float_range_are_exact_cubes(rng, positions):
    # y(c Z) = c^3 y(Z): tokens scaled by a power of two give the outputs scaled by
    # its cube, bit for bit, up to outputs near the largest float. The second head
    # cancels 90% of the first, whose output alone would overflow there.
    first = random_attention(rng, 3, n_heads=1, n_outputs=2)
    model = MultiHeadLinearAttention(
        np.concatenate([first.value_matrices, -first.value_matrices]),
        np.concatenate([first.query_matrices, 0.9 * first.query_matrices]),
    )
    Z = rng.normal(size=(5, 6, 3))
    outputs = model.predict(Z, positions=positions)
    exponent = (1023 - int(np.frexp(np.abs(outputs).max())[1])) // 3
    large = model.predict(np.ldexp(Z, exponent), positions=positions)
    np.testing.assert_array_equal(large, np.ldexp(outputs, 3 * exponent))
    assert np.abs(large).max() > np.finfo(np.float64).max / 16
    small = model.predict(np.ldexp(Z, -100), positions=positions)
    np.testing.assert_array_equal(small, np.ldexp(outputs, -300))


@pytest.mark.parametrize(
    "heads, tokens, positions, expected",
    [
        # a query far smaller than the context: y = (1e400 + 1e-400) 1e-200
        (1.0, [1e200, 1e-200], "last", [1e200]),
        # a position far smaller than a later token: (1e-20) 1e-10, (1e200) 1e100
        (1.0, [1e-10, 1e100], "all", [1e-30, 1e300]),
        # heads and tokens at opposite ends of the float range
        (1e160, [1e-110, 1e-110], "last", [2e-10]),
        (1e-200, [1e200, 1e200], "last", [2e200]),
    ],
)
def test_outputs_in_the_float_range_whatever_the_factors(
    heads, tokens, positions, expected
):
    """y = V (sum_s z_s^2) Q z for one head of d = 1: every factor is scaled to
    unit size on its own, so an output within the float range comes out right
    whatever the magnitudes of the heads, the context and the query."""
    model = MultiHeadLinearAttention([[[heads]]], [[[heads]]])
    Z = np.array(tokens)[None, :, None]
    outputs = model.predict(Z, positions=positions).ravel()
    np.testing.assert_allclose(outputs, expected, rtol=1e-14)
    if positions == "last":
        generated = model.generate(Z, 1, to_token=lambda outputs, step: Z[:, 0])
        np.testing.assert_allclose(generated.outputs.ravel(), expected, rtol=1e-14)


def test_heads_of_opposite_magnitudes_keep_their_digits():
    """Each head is scaled to unit size on its own: heads whose V_h and Q_h are
    1e150 and 1e-150 (either way round) give an output of 1e300 exactly, in
    predict and generate, where S Q_h q alone is 1e450; and a head of 1e-150
    survives beside two of 1e150 that cancel."""
    model = MultiHeadLinearAttention(
        [[[1e150, 0.0]], [[0.0, 1e-150]]],
        [np.diag([1e-150, 0.0]), np.diag([0.0, 1e150])],
    )
    Z = np.array([[[0.0, 1e100]]])  # only the second head sees it: 1e300 * 1
    np.testing.assert_allclose(model.predict(Z).ravel(), [1e300], rtol=1e-14)
    generated = model.generate(Z, 1, to_token=lambda outputs, step: Z[:, 0])
    np.testing.assert_allclose(generated.outputs.ravel(), [1e300], rtol=1e-14)
    cancel = MultiHeadLinearAttention(
        [[[1e150]], [[-1e150]], [[1e-150]]], np.ones((3, 1, 1))
    )
    np.testing.assert_allclose(cancel.predict([[[1.0]]]).ravel(), [1e-150], rtol=1e-14)


# A fresh review's edge cases, against the definition written out per position.


def naive_every_position(model, sequences, causal):
    """y_t = sum_h V_h S_t Q_h z_t with S_t summed here token by token (a prefix
    when causal), together with the same expression in absolute values, the
    scale of its rounding error."""
    n, T, _ = sequences.shape
    out = np.zeros((n, T, model.n_outputs))
    scale = np.zeros_like(out)
    for i, Z in enumerate(sequences):
        for t in range(T):
            context = Z[: t + 1] if causal else Z
            S, S_abs = context.T @ context, np.abs(context).T @ np.abs(context)
            for V, Q in zip(model.value_matrices, model.query_matrices, strict=True):
                out[i, t] += V @ S @ Q @ Z[t]
                scale[i, t] += np.abs(V) @ S_abs @ np.abs(Q) @ np.abs(Z[t])
    return out, scale


@pytest.mark.parametrize(
    "token_dim, n_heads, n_outputs, n_tokens",
    [(1, 1, 1, 1), (1, 5, 2, 4), (3, 1, 2, 1), (2, 9, 3, 5), (3, 12, 1, 7)],
)
def test_every_mode_within_rounding_of_the_definition(
    rng, token_dim, n_heads, n_outputs, n_tokens
):
    """One token, one head, more heads than d (up to d^2 and beyond), d = 1,
    several outputs: each output is a sum of n_heads terms, each a d-term
    product chain over S entries summed over n_tokens, so it errs by at most
    about (n_tokens + 3 d + n_heads) u times the same sum in absolute values
    (u = eps / 2; checked with eps, a factor 2 of slack)."""
    model = random_attention(rng, token_dim, n_heads, n_outputs)
    Z = rng.normal(size=(6, n_tokens, token_dim))
    bound_factor = (n_tokens + 3 * token_dim + n_heads) * np.finfo(float).eps
    for causal in (True, False):
        expected, scale = naive_every_position(model, Z, causal)
        every = model.predict(Z, positions="all", causal=causal)
        assert every.shape == (6, n_tokens, n_outputs) and every.dtype == np.float64
        assert np.all(np.abs(every - expected) <= bound_factor * scale)
        last = model.predict(Z)
        assert last.shape == (6, n_outputs)
        assert np.all(np.abs(last - expected[:, -1]) <= bound_factor * scale[:, -1])
    # <theta, lift(Z)> = the output, with theta from the heads' W
    lifted = lifted_features(Z) @ model.lifted_coef().T
    assert np.all(np.abs(lifted - model.predict(Z)) <= 4 * bound_factor * scale[:, -1])


def test_input_layouts_give_the_same_numbers_and_are_left_alone(rng):
    """float32, strided, Fortran-ordered and read-only inputs: float64 outputs,
    bit for bit those of the float64 C-ordered copy; the inputs unchanged."""
    model = random_attention(rng, 3, n_heads=2, n_outputs=2)
    base = rng.normal(size=(4, 10, 6))
    cases = {
        "float32": base[:, :5, :3].astype(np.float32),
        "strided": base[:, ::2, ::2],
        "fortran": np.asfortranarray(base[:, :5, :3]),
        "read-only": np.array(base[:, :5, 3:]),
    }
    cases["read-only"].setflags(write=False)
    for name, X in cases.items():
        before = X.copy()
        reference = np.ascontiguousarray(X, dtype=np.float64)
        for kwargs in ({}, {"positions": "all"}, {"positions": "all", "causal": False}):
            result = model.predict(X, **kwargs)
            assert result.dtype == np.float64, name
            np.testing.assert_array_equal(result, model.predict(reference, **kwargs))
        np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize("method", ["predict", "generate"])
def test_one_sequence_as_2d_rows_warns_and_is_one_token_sequences(rng, method):
    """A single sequence Z (n_tokens, token_dim) passed as it is: the 2-D layout
    reads it as n_tokens one-token sequences, which warns naming Z[None]; the
    numbers are those of X[:, None], which does not warn, and Z[None] is one
    sequence."""
    model = random_attention(rng, 3, n_heads=2, n_outputs=3)
    Z = rng.normal(size=(5, 3))

    def call(X):
        if method == "predict":
            return model.predict(X)
        return model.generate(X, 2).outputs

    with pytest.warns(UserWarning, match=r"X of shape \(5, 3\) is read as 5 seq"):
        as_rows = call(Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(as_rows, call(Z[:, None]))
        one = call(Z[None])
        call(Z[:1])  # one row: one token either way
        call(Z.reshape(1, -1))
    assert len(one) == 1
    np.testing.assert_allclose(one[0], call(Z.reshape(1, -1))[0])


def assert_within_rounding(model, actual, expected, Z, n_tokens=None, **kwargs):
    """``actual`` equals ``expected``, outputs of ``model`` on ``Z`` computed by
    BLAS calls of other sizes (a kernel may sum in another order), to the
    rounding of the chain ``V S Q q``: each within ``(T + 3 d + H) eps`` times
    the same chain on absolute values (``T`` the most tokens either summed,
    ``n_tokens``, by default ``Z``'s), so twice that apart."""
    absolute = MultiHeadLinearAttention(
        np.abs(model.value_matrices), np.abs(model.query_matrices)
    )
    token_dim = Z.shape[2]
    n_tokens = Z.shape[1] if n_tokens is None else n_tokens
    terms = n_tokens + 3 * token_dim + len(model.value_matrices)
    magnitude = absolute.predict(np.abs(Z), **kwargs)
    bound = 2 * terms * np.finfo(np.float64).eps * magnitude
    assert np.all(np.abs(actual - expected) <= bound)


def test_left_padding_changes_no_output(rng):
    # zero tokens add exactly 0 to every S, but S = Z^T Z is a BLAS product
    # whose inner dimension grows from 4 to 7 (1 ulp apart with OpenBLAS's
    # Nehalem kernels, helper-118). Padded positions are exactly 0.
    model = random_attention(rng, 3, n_heads=2, n_outputs=2)
    Z = rng.normal(size=(5, 4, 3))
    padded = np.concatenate([np.zeros((5, 3, 3)), Z], axis=1)
    assert_within_rounding(model, model.predict(padded), model.predict(Z), padded)
    for causal in (True, False):
        every = model.predict(padded, positions="all", causal=causal)
        np.testing.assert_array_equal(every[:, :3], 0.0)
        assert_within_rounding(
            model, every[:, 3:], model.predict(Z, positions="all", causal=causal),
            Z, n_tokens=padded.shape[1], positions="all", causal=causal,
        )


@pytest.mark.parametrize(
    "tokens, expected",
    [
        # y_0 = (1e-100)^3 lies in the float range though the prefix is 1e200
        # times smaller than the sequence (its S alone underflowed, to 0)
        ([1e-100, 1e100], [1e-300, 1e300]),
        # behind padding and a token whose own output is beyond the range
        ([0.0, 1e-300, 1e-200, 1e-100, 1e100], [0.0, 0.0, 0.0, 1e-300, 1e300]),
        ([1e-100, 1e-50, 1e100], [1e-300, 1e-150, 1e300]),
    ],
)
def test_causal_outputs_of_far_smaller_prefixes_do_not_underflow(tokens, expected):
    model = MultiHeadLinearAttention([[[1.0]]], [[[1.0]]])  # y_t = sum_{s<=t} z_s^2 z_t
    Z = np.array(tokens)[None, :, None]
    every = model.predict(Z, positions="all").ravel()
    np.testing.assert_allclose(every, expected, rtol=1e-14, atol=0)
    for t in range(len(tokens)):  # the output at t is that of the prefix up to t
        np.testing.assert_allclose(
            every[t], model.predict(Z[:, : t + 1]).ravel(), rtol=1e-14, atol=0
        )


def test_prefixes_far_smaller_than_their_sequence_in_a_batch(rng):
    """Sequences of d = 3 whose first tokens are 1e-30 to 1e-120 of the rest,
    next to ordinary ones: within rounding of the definition at each position."""
    model = random_attention(rng, 3, n_heads=2, n_outputs=2)
    Z = rng.normal(size=(6, 5, 3))
    for i, (length, power) in enumerate([(1, 30), (2, 60), (3, 120), (4, 120)]):
        Z[i, :length] *= 10.0**-power
    expected, scale = naive_every_position(model, Z, True)
    every = model.predict(Z, positions="all")
    assert np.all(np.abs(every - expected) <= 20 * np.finfo(float).eps * scale)


def test_lifted_coef_of_heads_whose_products_overflow(rng):
    # two heads of 1e310 that cancel, beside one of 1: W = 1, as predict says
    cancel = MultiHeadLinearAttention(
        [[[1e300]], [[-1e300]], [[1.0]]], [[[1e10]], [[1e10]], [[1.0]]]
    )
    np.testing.assert_array_equal(cancel.lifted_coef(), [[1.0]])
    np.testing.assert_array_equal(cancel.predict([[[1.0]]]), [[1.0]])
    # W[0,0,1,0] = W[0,1,0,0] = 1e308: their sum overflows, the coefficient
    # (1e308 + 1e308) / sqrt(2) does not
    value = np.zeros((2, 1, 2))
    query = np.zeros((2, 2, 2))
    value[0, 0, 0] = value[1, 0, 1] = 1e154
    query[0, 1, 0] = query[1, 0, 0] = 1e154
    model = MultiHeadLinearAttention(value, query)
    coef = model.lifted_coef()
    assert np.all(np.isfinite(coef))
    np.testing.assert_allclose(coef[0, 2], np.sqrt(2.0) * 1e308, rtol=1e-15)
    Z = np.full((1, 1, 2), 0.5)
    np.testing.assert_allclose(
        lifted_features(Z) @ coef.T, model.predict(Z), rtol=1e-15
    )
    # a coefficient beyond the range is inf, as the function's is
    with np.errstate(over="ignore"):
        huge = MultiHeadLinearAttention([[[1e200]]], [[[1e200]]]).lifted_coef()
    assert np.isposinf(huge).all()


def test_distance_is_the_norm_of_the_coefficients_difference(rng):
    """Bit for bit np.linalg.norm of the difference in the ordinary range (the
    power-of-two scaling is exact); near the ends of the float range neither
    inf for a finite distance nor 0 between different models."""
    for _ in range(5):
        first = random_attention(rng, 3, n_heads=2, n_outputs=2)
        second = random_attention(rng, 3, n_heads=3, n_outputs=2)
        difference = first.lifted_coef() - second.lifted_coef()
        assert first.distance(second) == float(np.linalg.norm(difference))
        _, _, inverse_weights = _fold_indices(3)
        assert first.distance(second, convention="paper") == float(
            np.linalg.norm(difference / inverse_weights)
        )
    zero = MultiHeadLinearAttention([[[0.0]]], [[[1.0]]])
    tiny = MultiHeadLinearAttention([[[1e-170]]], [[[1.0]]])
    assert tiny.distance(zero) == pytest.approx(1e-170, rel=1e-15)
    large = MultiHeadLinearAttention([[[1e300]]], [[[1.0]]])
    opposite = MultiHeadLinearAttention([[[-1e300]]], [[[1.0]]])
    assert large.distance(opposite) == pytest.approx(2e300, rel=1e-15)
    value = np.zeros((1, 1, 2))
    value[0, 0, 1] = 1e-170  # an off-diagonal pair, sqrt(2) larger in the paper's
    query = np.zeros((1, 2, 2))
    query[0, 0, 0] = 1.0
    off = MultiHeadLinearAttention(value, query)
    zero2 = MultiHeadLinearAttention(np.zeros((1, 1, 2)), query)
    assert off.distance(zero2) == pytest.approx(np.sqrt(0.5) * 1e-170, rel=1e-15)
    assert off.distance(zero2, convention="paper") == pytest.approx(1e-170, rel=1e-15)


def test_fold_unfold_of_any_W_is_its_symmetric_part(rng):
    # fold(unfold(W)) = (W[a,b,c,e] + W[a,c,b,e]) / 2: one addition and two
    # scalings by powers of two or sqrt(2) factors, a few ulps
    for d, n_outputs in [(1, 2), (2, 1), (4, 3)]:
        W = rng.normal(size=(n_outputs, d, d, d))
        symmetric = (W + W.transpose(0, 2, 1, 3)) / 2
        round_trip = fold_lifted_coef(
            unfold_lifted_coef(W.reshape(n_outputs * d, d * d), d), d
        )
        np.testing.assert_allclose(
            round_trip, symmetric.reshape(n_outputs * d, d * d), rtol=4e-16, atol=1e-15
        )


@pytest.mark.parametrize(
    "function, argument, match",
    [
        (fold_lifted_coef, np.ones(6), r"shape \(n_outputs, n_lifted_features\)"),
        (fold_lifted_coef, np.ones((1, 5)), r"\(n_outputs, 6\).*got shape \(1, 5\)"),
        (unfold_lifted_coef, np.ones((8, 1)), r"got shape \(8, 1\)"),
        (unfold_lifted_coef, np.ones((3, 4)), r"token_dim \* token_dim"),
    ],
)
def test_fold_and_unfold_refuse_wrong_shapes(function, argument, match):
    with pytest.raises(ValueError, match=match):
        function(argument, 2)


@pytest.mark.parametrize(
    "value, query, error, match",
    [
        ("abc", np.ones((1, 3, 3)), ValueError, r"value_matrices must be an array of "
         r"real numbers of shape \(n_heads, n_outputs, token_dim\)"),
        ([[[1.0]], [[1.0, 2.0]]], np.ones((2, 1, 1)), ValueError,
         "value_matrices must be an array of real numbers"),
        (np.ones((1, 1, 1)), np.array([[[10**400]]], dtype=object), ValueError,
         r"query_matrices .* \(n_heads, token_dim, token_dim\)"),
        (np.ones((1, 1, 1)), [[[{}]]], TypeError, "query_matrices must be an array"),
        ([[[1.0, None]]], np.ones((1, 2, 2)), ValueError,
         "value_matrices must be finite; head 0"),
        (np.ones((2, 1, 2)), [np.eye(2), [[1.0, np.inf], [0.0, 1.0]]], ValueError,
         "query_matrices must be finite; head 1"),
    ],
)
def test_unconvertible_or_non_finite_parameters_are_named(value, query, error, match):
    with pytest.raises(error, match=match):
        MultiHeadLinearAttention(value, query)


def test_dask_sequences_predict_lazily_block_by_block(rng):
    # was a TypeError from Dask's Array.max(initial=...)
    da = pytest.importorskip("dask.array")
    model = random_attention(rng, 3, n_heads=2, n_outputs=2)
    Z = rng.normal(size=(20, 5, 3))
    for X, chunks in ((Z, (7, 2, 3)), (Z.reshape(20, -1), (6, 4))):
        lazy = da.from_array(X, chunks=chunks)
        for kwargs in ({}, {"positions": "all"}, {"positions": "all", "causal": False}):
            result = model.predict(lazy, **kwargs)
            assert isinstance(result, da.Array)
            # blocks of 7 sequences against 20: BLAS calls of other sizes
            assert_within_rounding(
                model, result.compute(), model.predict(Z, **kwargs), Z, **kwargs
            )
    to_token = lambda outputs, step: np.full((len(outputs), 3), 0.5)  # noqa: E731
    np.testing.assert_array_equal(
        model.generate(da.from_array(Z), 2, to_token=to_token).outputs,
        model.generate(Z, 2, to_token=to_token).outputs,
    )
    bad = Z.copy()
    bad[3, 1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.predict(da.from_array(bad, chunks=(7, 5, 3))).compute()


def test_distance_of_coefficients_beyond_the_float_range():
    """Lifted coefficients that overflow: a model is at distance 0 from itself
    and inf from a finite one (it was NaN either way)."""
    rng = np.random.default_rng(3)
    V, Q = rng.normal(size=(1, 1, 2)), rng.normal(size=(1, 2, 2))
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        big = MultiHeadLinearAttention(V * 1e200, Q * 1e200)
        assert big.distance(big) == 0.0
        assert big.distance(MultiHeadLinearAttention(V, Q)) == np.inf


def test_lifted_coef_beyond_memory_is_refused_before_allocation(rng, monkeypatch):
    """lifted_coef (and distance) of d = 2000 was numpy's MemoryError for the
    full W of n_outputs d^3 entries; here with 50 kB available, d = 8 fits (W
    of 4 kB, twice at the peak) and d = 12 with 3 outputs (41 kB) does not."""
    import sklearn_linattn._data as data

    monkeypatch.setattr(data, "available_memory", lambda: 50_000)
    small = MultiHeadLinearAttention(
        rng.normal(size=(1, 1, 8)), rng.normal(size=(1, 8, 8))
    )
    assert small.lifted_coef().shape == (1, 288)
    large = MultiHeadLinearAttention(
        rng.normal(size=(2, 3, 12)), rng.normal(size=(2, 12, 12))
    )
    message = r"lifted_coef would allocate .* of shape \(3, 12, 12, 12\)"
    with pytest.raises(ValueError, match=message):
        large.distance(large)
