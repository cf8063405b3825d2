"""The compiled kernels of the rank-r completion engine against naive numpy."""

import numpy as np
import pytest
from conftest import random_attention

from sklearn_linattn._attention import fold_lifted_coef, unfold_lifted_coef
from sklearn_linattn._low_rank import _isotropic_subspace, alternating_projections


def naive_alternating_projections(coef, d, rank, n_iter):
    """Truncated SVD, then swap the symmetric part for the fitted one; the best
    iterate and its relative error."""
    current = fold_lifted_coef(coef, d)
    best, best_error = None, np.inf
    for _ in range(n_iter):
        u, s, vt = np.linalg.svd(current, full_matrices=False)
        low_rank = (u[:, :rank] * s[:rank]) @ vt[:rank]
        gap = unfold_lifted_coef(low_rank, d) - coef
        error = np.linalg.norm(gap) / np.linalg.norm(coef)
        if error < best_error:
            best, best_error = low_rank, error
        current = low_rank - fold_lifted_coef(gap, d)
    return best, best_error


@pytest.mark.parametrize("d, rank, n_outputs", [(3, 2, 1), (4, 2, 2), (5, 3, 1)])
def test_alternating_projections_follow_the_naive_iteration(rng, d, rank, n_outputs):
    coef = random_attention(rng, d, d, n_outputs=n_outputs).lifted_coef()
    start = fold_lifted_coef(coef, d)
    # stall=inf: no early stop, exactly 50 iterations (two windows)
    folded, error = alternating_projections(coef, d, rank, start, 0.0, 50, stall=np.inf)
    expected, expected_error = naive_alternating_projections(coef, d, rank, 50)
    assert error == pytest.approx(expected_error, rel=1e-6)
    np.testing.assert_allclose(folded, expected, atol=1e-8 * np.abs(expected).max())
    assert np.linalg.matrix_rank(folded, tol=1e-8 * np.abs(folded).max()) <= rank


@pytest.mark.parametrize("d, n_heads", [(5, 3), (8, 6)])
def test_isotropic_subspace_of_a_low_rank_model(rng, d, n_heads):
    """One output with r heads: its slices vanish together on a (d - r)-dimensional
    subspace, which Levenberg-Marquardt finds from random starts; the returned
    value is the naive sum of the blocks' squares."""
    coef = random_attention(rng, d, n_heads).lifted_coef()
    slices = fold_lifted_coef(coef, d).reshape(d, d, d).transpose(2, 0, 1)
    k = d - n_heads
    values = []
    for seed in range(5):
        start = np.random.default_rng(seed).normal(size=(d, k))
        basis, value = _isotropic_subspace(slices, start)
        naive = sum(np.sum((basis.T @ slices[e] @ basis) ** 2) for e in range(d))
        assert value == pytest.approx(naive, rel=1e-8, abs=1e-28)
        np.testing.assert_allclose(basis.T @ basis, np.eye(k), atol=1e-12)
        values.append(value)
    assert min(values) <= 1e-20 * np.sum(coef**2)
    # a generic function has no such subspace
    generic = rng.normal(size=coef.shape)
    slices = fold_lifted_coef(generic, d).reshape(d, d, d).transpose(2, 0, 1)
    _, value = _isotropic_subspace(slices, rng.normal(size=(d, k)))
    assert value > 1e-6 * np.sum(generic**2)
