"""Reading attention heads out of lifted coefficients (PAPER.md, Algorithm 1 step 3).

Heads come in one canonical form so that two fits of the same data give the same
arrays: sorted by strength (singular value, largest first), scale balanced
(``||V_h||_F = ||Q_h||_F``), and signs fixed so that the entry of largest magnitude
in each ``V_h`` is positive.
"""

import numpy as np
import scipy.linalg

from ._attention import fold_lifted_coef

__all__ = ["paper_heads"]


def _canonical_signs(left, right):
    """Flip paired columns so that the largest-magnitude entry of each left column
    is positive."""
    rows = np.argmax(np.abs(left), axis=0)
    signs = np.sign(left[rows, np.arange(left.shape[1])])
    signs[signs == 0] = 1.0
    return left * signs, right * signs


def n_heads_within(singular_values, tol):
    """Fewest leading singular values whose dropped tail has relative Frobenius
    norm at most ``tol``."""
    total = np.linalg.norm(singular_values)
    if total == 0:
        return 0
    # tails[r] = norm of singular_values[r:]
    tails = np.sqrt(np.cumsum(singular_values[::-1] ** 2))[::-1]
    tails = np.append(tails, 0.0)
    return int(np.argmax(tails <= tol * total))


def paper_heads(lifted_coef, token_dim, tol):
    """The paper's head read-out: SVD of the folded coefficient matrix.

    ``W[(a, b), (c, e)] = sum_i s_i u_i v_i^T`` gives heads
    ``V_i = reshape(sqrt(s_i) u_i, (n_outputs, d))`` and
    ``Q_i = reshape(sqrt(s_i) v_i, (d, d))``; at most ``min(n_outputs, d) * d``
    heads. The smallest singular values are dropped while the dropped part stays
    within ``tol`` of ``||W||_F`` (relative Frobenius norm).

    Parameters
    ----------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
    token_dim : int
    tol : float

    Returns
    -------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    """
    d = token_dim
    n_outputs = lifted_coef.shape[0]
    folded = fold_lifted_coef(lifted_coef, d)
    left, singular_values, right_t = scipy.linalg.svd(
        folded, full_matrices=False, check_finite=False
    )
    n_heads = n_heads_within(singular_values, tol)
    root = np.sqrt(singular_values[:n_heads])
    left, right = _canonical_signs(left[:, :n_heads], right_t[:n_heads].T)
    value = (left * root).T.reshape(n_heads, n_outputs, d)
    query = (right * root).T.reshape(n_heads, d, d)
    return value, query
