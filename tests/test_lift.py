"""The Numba lifted features against a naive reference written from PAPER.md."""

import numpy as np
import pytest
from conftest import naive_lifted_features

from sklearn_linattn._lift import lifted_feature_pairs, lifted_features
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
    np.testing.assert_allclose(lifted_features(padded), lifted_features(Z), rtol=1e-13)


def test_read_only_input_and_threads_agree(rng):
    Z = rng.normal(size=(101, 7, 5))
    expected = naive_lifted_features(Z)
    Z.setflags(write=False)
    np.testing.assert_allclose(lifted_features(Z), expected, rtol=1e-12)
    np.testing.assert_allclose(lifted_features(Z, n_threads=3), expected, rtol=1e-12)


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
