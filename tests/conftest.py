import numpy as np
import pytest

from sklearn_linattn import MultiHeadLinearAttention


def random_attention(rng, token_dim, n_heads, n_outputs=1):
    """A generic random MHLA with parameters N(0, 1/d), as in the paper."""
    scale = 1.0 / np.sqrt(token_dim)
    return MultiHeadLinearAttention(
        rng.normal(scale=scale, size=(n_heads, n_outputs, token_dim)),
        rng.normal(scale=scale, size=(n_heads, token_dim, token_dim)),
    )


def random_sequences(rng, n_samples, n_tokens, token_dim):
    """Gaussian tokens with entries N(0, 1/n_tokens), as in the paper."""
    return rng.normal(
        scale=1.0 / np.sqrt(n_tokens), size=(n_samples, n_tokens, token_dim)
    )


def n_lifted(token_dim):
    return token_dim * token_dim * (token_dim + 1) // 2


@pytest.fixture
def rng():
    return np.random.default_rng(20251129)
