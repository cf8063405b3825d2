"""MultiHeadLinearAttention: the definition, the lifted coefficients, the distance."""

import numpy as np
import pytest
from conftest import random_attention

from sklearn_linattn import MultiHeadLinearAttention
from sklearn_linattn._attention import fold_lifted_coef, unfold_lifted_coef
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
