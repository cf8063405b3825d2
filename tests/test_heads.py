"""Head read-outs: paper SVD, minimal heads, best k-head models."""

import numpy as np
import pytest
from conftest import n_lifted, random_attention, random_sequences

from sklearn_linattn import LinearAttentionRegressor, MultiHeadLinearAttention
from sklearn_linattn._heads import (

    fixed_heads,
    minimal_heads,
    paper_heads,
)
from sklearn_linattn._lift import lifted_features
from sklearn_linattn._low_rank import fewest_heads_bound


def relative_distance(model, truth):
    return model.distance(truth) / np.linalg.norm(truth.lifted_coef())


@pytest.mark.parametrize("token_dim", [3, 4, 6])
@pytest.mark.parametrize("n_heads", [1, 2, 3])
def test_auto_recovers_the_generating_number_of_heads(token_dim, n_heads):
    rng = np.random.default_rng(1000 * token_dim + n_heads)
    truth = random_attention(rng, token_dim, n_heads)
    X = random_sequences(rng, 3 * n_lifted(token_dim), 12, token_dim)
    model = LinearAttentionRegressor().fit(X, truth.predict(X)[:, 0])
    assert model.n_heads_ == n_heads
    assert relative_distance(model.attention_, truth) < 1e-8
    paper = LinearAttentionRegressor(n_heads=None).fit(X, truth.predict(X)[:, 0])
    assert paper.n_heads_ >= n_heads  # the SVD read-out of the symmetric split
    assert relative_distance(paper.attention_, truth) < 1e-8


@pytest.mark.parametrize("n_heads, n_outputs", [(1, 2), (2, 3), (3, 2)])
def test_auto_recovers_multi_output_models(n_heads, n_outputs):
    truth = random_attention(
        np.random.default_rng(7 * n_heads + n_outputs), 4, n_heads, n_outputs
    )
    value, query = minimal_heads(truth.lifted_coef(), 4, tol=1e-8)
    assert value.shape == (n_heads, n_outputs, 4) and query.shape == (n_heads, 4, 4)
    found = MultiHeadLinearAttention(value, query)
    assert relative_distance(found, truth) < 1e-8


@pytest.mark.parametrize("token_dim", [4, 8])
def test_a_generic_function_needs_all_heads(token_dim):
    # One output, generic coefficients: no antisymmetric part lowers the rank of W
    # below d (the slices would need a common isotropic subspace).
    rng = np.random.default_rng(token_dim)
    coef = rng.normal(size=(1, n_lifted(token_dim)))
    value, _ = minimal_heads(coef, token_dim, tol=1e-8)
    assert len(value) == token_dim
    assert fewest_heads_bound(coef, token_dim, 1e-8) == token_dim // 2


def test_tolerance_trades_heads_for_fidelity():
    rng = np.random.default_rng(5)
    d = 6
    truth = random_attention(rng, d, 2)
    coef = truth.lifted_coef()
    noisy = coef + 1e-4 * np.linalg.norm(coef) * rng.normal(size=coef.shape) / np.sqrt(
        coef.size
    )
    many, _ = minimal_heads(noisy, d, tol=1e-8)
    few_value, few_query = minimal_heads(noisy, d, tol=1e-3)
    assert len(few_value) == 2 < len(many)
    found = MultiHeadLinearAttention(few_value, few_query)
    assert np.linalg.norm(found.lifted_coef() - noisy) <= 1e-3 * np.linalg.norm(noisy)


def test_every_read_out_keeps_coef_and_heads_consistent(rng):
    X = random_sequences(rng, 150, 6, 3)
    y = rng.normal(size=(150, 2))
    for n_heads in (None, "auto", 1, 2):
        model = LinearAttentionRegressor(n_heads=n_heads, fit_intercept=True).fit(X, y)
        np.testing.assert_allclose(
            model.attention_.lifted_coef(), model.coef_, atol=1e-13
        )
        by_heads = model.attention_.predict(X) + model.intercept_
        np.testing.assert_allclose(model.predict(X), by_heads, rtol=1e-8, atol=1e-10)
        assert (
            model.n_heads_ == len(model.value_matrices_) == len(model.query_matrices_)
        )
        if isinstance(n_heads, int):
            assert model.n_heads_ <= n_heads


def training_loss(model, X, y):
    return float(np.sum((model.predict(X) - y) ** 2))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_k_heads_beat_the_truncated_paper_read_out(rng, k):
    d = 5
    truth = random_attention(rng, d, 4)
    X = random_sequences(rng, 400, 10, d)
    y = truth.predict(X)[:, 0] + 0.01 * rng.normal(size=400)
    fitted = LinearAttentionRegressor(n_heads=k).fit(X, y)
    assert fitted.n_heads_ == k
    value, query = paper_heads(
        LinearAttentionRegressor(n_heads=None).fit(X, y).coef_[None], d, tol=0.0
    )
    truncated = MultiHeadLinearAttention(value[:k], query[:k])
    assert training_loss(fitted, X, y) <= np.sum((truncated.predict(X)[:, 0] - y) ** 2)
    lifted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    assert training_loss(fitted, X, y) >= training_loss(lifted, X, y) * (1 - 1e-9)


def test_k_heads_match_the_lifted_solution_when_enough(rng):
    d = 4
    truth = random_attention(rng, d, 2)
    X = random_sequences(rng, 3 * n_lifted(d), 10, d)
    y = truth.predict(X)[:, 0]
    for k in (2, 3, 10):
        model = LinearAttentionRegressor(n_heads=k).fit(X, y)
        assert model.n_heads_ == (2 if k == 2 else model.n_heads_)
        assert model.n_heads_ <= k
        assert relative_distance(model.attention_, truth) < 1e-8


def test_k_heads_minimize_the_weighted_objective(rng):
    # Against an independent check: no small perturbation of the returned heads
    # lowers the weighted objective (a local minimum).
    d = 3
    coef = rng.normal(size=(1, n_lifted(d)))
    features = lifted_features(random_sequences(rng, 60, 5, d))
    weight = features.T @ features + 0.1 * np.eye(n_lifted(d))
    value, query = fixed_heads(coef, d, 2, lambda residual: residual @ weight, tol=1e-8)

    def objective(v, q):
        residual = MultiHeadLinearAttention(v, q).lifted_coef() - coef
        return float((residual @ weight @ residual.T)[0, 0])

    best = objective(value, query)
    for _ in range(20):
        dv = 1e-4 * rng.normal(size=value.shape)
        dq = 1e-4 * rng.normal(size=query.shape)
        assert objective(value + dv, query + dq) >= best * (1 - 1e-9)


@pytest.mark.parametrize("n_heads", ["auto", None, 2])
def test_heads_are_canonical_and_deterministic(rng, n_heads):
    truth = random_attention(rng, 5, 3)
    X = random_sequences(rng, 300, 8, 5)
    y = truth.predict(X)[:, 0] + 0.01 * rng.normal(size=300)
    first = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
    second = LinearAttentionRegressor(n_heads=n_heads).fit(X.copy(), y.copy())
    np.testing.assert_array_equal(first.value_matrices_, second.value_matrices_)
    np.testing.assert_array_equal(first.query_matrices_, second.query_matrices_)
    strengths = [np.linalg.norm(V) for V in first.value_matrices_]
    assert strengths == sorted(strengths, reverse=True)
    for V, Q in zip(first.value_matrices_, first.query_matrices_, strict=True):
        assert np.linalg.norm(V) == pytest.approx(np.linalg.norm(Q))
        assert V.flat[np.argmax(np.abs(V))] > 0


def test_zero_function_has_no_heads():
    X = np.random.default_rng(0).normal(size=(50, 4, 2))
    model = LinearAttentionRegressor().fit(X, np.zeros(50))
    assert model.n_heads_ == 0
    np.testing.assert_array_equal(model.predict(X), 0.0)


@pytest.mark.parametrize("token_dim, n_heads", [(4, 3), (6, 4), (6, 5), (8, 6)])
def test_more_than_half_of_the_heads(token_dim, n_heads):
    # Past d/2 heads alternating projections stall; the isotropic-subspace
    # Gauss-Newton fallback (one output) still finds the generating count.
    truth = random_attention(
        np.random.default_rng(31 * token_dim + n_heads), token_dim, n_heads
    )
    value, query = minimal_heads(truth.lifted_coef(), token_dim, tol=1e-8)
    assert len(value) == n_heads
    assert relative_distance(MultiHeadLinearAttention(value, query), truth) < 1e-8
