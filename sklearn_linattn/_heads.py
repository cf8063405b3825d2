"""Reading attention heads out of lifted coefficients (PAPER.md, Algorithm 1 step 3).

The lifted coefficients fix only the part of ``W[a,b,c,e]`` symmetric in ``(b, c)``;
heads are a factorization ``W[(a,b),(c,e)] = sum_h V_h[a,b] Q_h[c,e]`` of any ``W``
with that symmetric part, so the number of heads is the rank of the chosen ``W``.

- :func:`paper_heads`: the paper's read-out, the SVD of the symmetric split.
- :func:`minimal_heads`: the fewest heads, by choosing the free antisymmetric part
  (alternating projections; with one output also Gauss-Newton on the common isotropic
  subspace of the coefficient slices).
- :func:`fixed_heads`: the best model with at most ``k`` heads for a weighted
  least-squares objective (the training loss), refined in head space.

Heads come in one canonical form so that two fits of the same data give the same
arrays: sorted by strength (singular value of ``W``, largest first), scale balanced
(``||V_h||_F = ||Q_h||_F``), and signs fixed so that the entry of largest magnitude
in each ``V_h`` is positive.
"""

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

from ._attention import fold_lifted_coef, unfold_lifted_coef

__all__ = ["fixed_heads", "minimal_heads", "paper_heads"]


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
    folded = fold_lifted_coef(lifted_coef, token_dim)
    _, singular_values, _ = _svd(folded)
    return heads_of_folded(
        folded, n_heads_within(singular_values, tol), lifted_coef.shape[0], token_dim
    )


def _svd(matrix):
    try:
        return scipy.linalg.svd(matrix, full_matrices=False, check_finite=False)
    except np.linalg.LinAlgError:  # gesdd can fail to converge; gesvd is robust
        return scipy.linalg.svd(
            matrix, full_matrices=False, check_finite=False, lapack_driver="gesvd"
        )


def heads_of_folded(folded, n_heads, n_outputs, token_dim):
    """Canonical heads of the rank-``n_heads`` truncation of a folded matrix ``W``.

    Returns
    -------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    """
    d = token_dim
    left, singular_values, right_t = _svd(folded)
    root = np.sqrt(singular_values[:n_heads])
    left, right = _canonical_signs(left[:, :n_heads], right_t[:n_heads].T)
    value = (left * root).T.reshape(n_heads, n_outputs, d)
    query = (right * root).T.reshape(n_heads, d, d)
    return value, query


def _truncate(matrix, rank):
    """Best rank-``rank`` approximation (Eckart-Young)."""
    left, singular_values, right_t = _svd(matrix)
    return (left[:, :rank] * singular_values[:rank]) @ right_t[:rank]


def _project_rank(matrix, rank):
    """Best rank-``rank`` approximation from the eigenvectors of the smaller Gram
    matrix: three to four times faster than an SVD on the small, wide matrices
    of the head search. The projector is accurate to about
    ``eps * (s_1 / s_rank)^2``, ample unless heads differ in strength by orders
    of magnitude."""
    if matrix.shape[0] <= matrix.shape[1]:
        top = np.linalg.eigh(matrix @ matrix.T)[1][:, -rank:]
        return top @ (top.T @ matrix)
    top = np.linalg.eigh(matrix.T @ matrix)[1][:, -rank:]
    return (matrix @ top) @ top.T


# Alternating projections: iterations between progress checks; the relative
# progress per window above which the iteration counts as stalled (converged, or
# stuck at a point that is not a solution); the cap on iterations per start, and
# the iteration after which a start is abandoned when its current linear rate
# would not reach the tolerance within the cap (slow phases before that are
# common on the way to a solution); how many extra starts (seeded, antisymmetric
# perturbations) to try when one stalls.
_WINDOW = 25
_STALL = 1.0 - 1e-3
_MAX_ITER = 5000
_PATIENCE = 1000
# Within tol a start polishes on to POLISH[0] * tol in any case, and on to
# POLISH[1] * tol while each window still gains a factor POLISH_RATE: full
# accuracy where convergence is fast, without the long tail where it is slow.
_POLISH = (1e-3, 1e-6)
_POLISH_RATE = 0.5
_RESTARTS = 8
_RESTART_SEED = 20251129


def _alternating_projections(lifted_coef, token_dim, rank, start, tol, max_iter):
    """Alternate between rank-``rank`` matrices and the affine set of folded ``W``
    with the fitted symmetric part, from ``start``; return the best rank-``rank``
    iterate and its relative error on the lifted coefficients."""
    norm = np.linalg.norm(lifted_coef)
    current = start
    window_start = np.inf
    best, best_error = None, np.inf
    for iteration in range(max_iter):
        low_rank = _project_rank(current, rank)
        gap = unfold_lifted_coef(low_rank, token_dim) - lifted_coef
        error = np.linalg.norm(gap) / norm
        if error < best_error:
            best, best_error = low_rank, error
        if error <= _POLISH[1] * tol:
            break
        if iteration % _WINDOW == 0:
            progress = error / window_start
            if progress > (_POLISH_RATE if error <= _POLISH[0] * tol else _STALL):
                break
            window_start = error
            if iteration >= _PATIENCE and error > tol > 0:
                # Linear convergence at the current rate needs about this many
                # more iterations to reach tol.
                needed = _WINDOW * np.log(tol / error) / np.log(progress)
                if iteration + needed > max_iter:
                    break
        # Affine projection: swap the symmetric part of low_rank for the fitted one.
        current = low_rank - fold_lifted_coef(gap, token_dim)
    return best, best_error


# Gauss-Newton on isotropic subspaces (one output): iteration cap per start, the
# Levenberg-Marquardt damping beyond which a start is abandoned, extra random starts.
_GN_MAX_ITER = 60
_GN_MAX_DAMPING = 1e8
_GN_STARTS = 40


def _isotropy_residual(slices, null_basis):
    """``N^T S_e N`` for every slice, upper triangles in the Frobenius metric."""
    k = null_basis.shape[1]
    rows, cols = np.triu_indices(k)
    weights = np.where(rows == cols, 1.0, np.sqrt(2.0))
    products = np.einsum("bi,ebc,cj->eij", null_basis, slices, null_basis)
    return (products[:, rows, cols] * weights).ravel()


def _isotropy_jacobian(slices, null_basis, complement):
    """Derivative of the residual for ``N -> N + complement @ X``, columns over X."""
    k = null_basis.shape[1]
    rows, cols = np.triu_indices(k)
    weights = np.where(rows == cols, 1.0, np.sqrt(2.0))
    mixed = np.einsum("bi,ebc,cj->eij", complement, slices, null_basis)  # (e, r, k)
    identity = np.eye(k)
    # d(N^T S N)[a, b] / dX[i, j] = [a == j] T[i, b] + [b == j] T[i, a]
    change = np.einsum("aj,eib->ijeab", identity, mixed)
    change = change + np.einsum("bj,eia->ijeab", identity, mixed)
    change = change[..., rows, cols] * weights
    return change.reshape(complement.shape[1] * k, -1).T


def _isotropic_subspace(slices, start):
    """Levenberg-Marquardt for an orthonormal ``N`` with ``N^T S_e N = 0`` for all e.

    Returns the basis reached and ``sum_e ||N^T S_e N||_F^2``.
    """
    d, k = start.shape
    basis = np.linalg.qr(start)[0]
    value = float(np.sum(_isotropy_residual(slices, basis) ** 2))
    damping = 1e-3
    for _ in range(_GN_MAX_ITER):
        complement = np.linalg.qr(basis, mode="complete")[0][:, k:]
        jacobian = _isotropy_jacobian(slices, basis, complement)
        gradient = jacobian.T @ _isotropy_residual(slices, basis)
        curvature = jacobian.T @ jacobian
        while True:
            step = np.linalg.solve(
                curvature + damping * np.eye(len(gradient)), -gradient
            )
            trial = np.linalg.qr(basis + complement @ step.reshape(d - k, k))[0]
            trial_value = float(np.sum(_isotropy_residual(slices, trial) ** 2))
            if trial_value < value:
                basis, damping = trial, max(damping / 3, 1e-12)
                improvement, value = value - trial_value, trial_value
                break
            damping *= 4
            if damping > _GN_MAX_DAMPING:
                return basis, value
        if improvement <= 1e-30 + 1e-12 * value:
            break
    return basis, value


def _isotropic_fold(lifted_coef, token_dim, rank, tol, warm_start):
    """A rank-``rank`` folded ``W`` for one output, from an isotropic subspace.

    With one output, ``W`` has rank at most ``r`` exactly when the slices
    ``S_e = W_sym[:, :, e]`` all vanish on a common ``(d - r)``-dimensional subspace
    ``N`` (``N^T S_e N = 0``); then ``X_e = 2 P S_e - P S_e P`` with ``P`` the
    projector onto ``N``'s complement has the fitted symmetric part and rank ``<= r``,
    and the relative error is ``sqrt(sum_e ||N^T S_e N||^2) / ||lifted_coef||``.
    ``N`` is found by Levenberg-Marquardt from the null space of ``warm_start`` and
    from seeded random starts.
    """
    d = token_dim
    k = d - rank
    norm = np.linalg.norm(lifted_coef)
    slices = fold_lifted_coef(lifted_coef, d).reshape(d, d, d).transpose(2, 0, 1)
    random_state = np.random.default_rng(_RESTART_SEED)
    starts = [np.linalg.svd(warm_start)[0][:, rank:]] if warm_start is not None else []
    starts += [random_state.normal(size=(d, k)) for _ in range(_GN_STARTS)]
    for start in starts:
        basis, value = _isotropic_subspace(slices, start)
        if np.sqrt(value) <= tol * norm:
            complement = np.linalg.qr(basis, mode="complete")[0][:, k:]
            projector = complement @ complement.T
            slices_in = 2 * np.einsum("bc,ecf->ebf", projector, slices) - np.einsum(
                "bc,ecf,fg->ebg", projector, slices, projector
            )
            return slices_in.transpose(1, 2, 0).reshape(d, d * d)
    return None


def low_rank_fold(lifted_coef, token_dim, rank, tol, max_iter=_MAX_ITER, restarts=0):
    """A folded ``W`` of rank ``rank`` whose symmetric part is ``lifted_coef``.

    Alternating projections between the matrices of rank ``rank`` (SVD truncation)
    and the affine set of ``W`` with the fitted symmetric part (keep the
    antisymmetric part, replace the symmetric one), started from the symmetric
    split. The iteration runs until it stalls, so a solution is as accurate as the
    iteration allows, not just within ``tol``. When it stalls above ``tol`` and
    ``restarts`` are allowed, a single-output problem goes to
    :func:`_isotropic_fold` (Gauss-Newton, which succeeds where alternating
    projections stall past ``d / 2`` heads), then alternating projections restart from
    the symmetric split plus antisymmetric parts drawn from a fixed seed (so results
    never change between runs).

    Parameters
    ----------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
    token_dim, rank : int
    tol : float
        Relative Frobenius tolerance on the lifted coefficients.
    max_iter : int
        Cap on iterations per start.
    restarts : int
        Extra starts to try when the previous ones stalled above ``tol``.

    Returns
    -------
    folded : ndarray of shape (n_outputs * token_dim, token_dim ** 2) or None
        None when no start reached ``tol``.
    relative_error : float
        ``||unfold(folded) - lifted_coef|| / ||lifted_coef||``, of the best
        iterate seen.
    """
    split = fold_lifted_coef(lifted_coef, token_dim)
    if not np.any(split):
        return split, 0.0
    random_state = np.random.default_rng(_RESTART_SEED)
    best, best_error = None, np.inf
    for attempt in range(1 + restarts):
        start = split
        if attempt:
            shape = (lifted_coef.shape[0], token_dim, token_dim, token_dim)
            noise = random_state.normal(size=shape)
            antisymmetric = (noise - noise.transpose(0, 2, 1, 3)).reshape(split.shape)
            start = split + antisymmetric * (
                np.linalg.norm(split) / np.linalg.norm(antisymmetric)
            )
        folded, error = _alternating_projections(
            lifted_coef, token_dim, rank, start, tol, max_iter
        )
        if error < best_error:
            best, best_error = folded, error
        if best_error <= tol:
            return best, best_error
        if attempt == 0 and restarts and lifted_coef.shape[0] == 1:
            # One output: alternating projections often stall when more than half
            # of the d heads are needed; Gauss-Newton on the isotropic subspace
            # does not, and costs less than the restarts.
            folded = _isotropic_fold(lifted_coef, token_dim, rank, tol, best)
            if folded is not None:
                gap = unfold_lifted_coef(folded, token_dim) - lifted_coef
                return folded, np.linalg.norm(gap) / np.linalg.norm(lifted_coef)
    return None, best_error


def _fewest_heads_bound(lifted_coef, token_dim, tol):
    """A lower bound on the heads needed to reproduce ``lifted_coef`` within tol.

    For any ``r``-head model the slices ``S_{a,e}[b, c] = W_sym[a, b, c, e]`` are
    ``sym(sum_h V_h[a, b] Q_h[c, e])``, of rank at most ``2 r``; so the part of the
    slices beyond their ``2 r`` largest eigenvalues is within the model's distance
    to ``lifted_coef``.
    """
    d = token_dim
    slices = fold_lifted_coef(lifted_coef, d).reshape(-1, d, d, d)
    slices = slices.transpose(0, 3, 1, 2).reshape(-1, d, d)  # one per (a, e)
    squared = np.sort(np.linalg.eigvalsh(slices) ** 2, axis=1)  # ascending
    # tails[j]: squared Frobenius norm left after keeping the j largest eigenvalues
    tails = np.concatenate(
        [np.cumsum(squared, axis=1)[:, ::-1], np.zeros((len(squared), 1))], axis=1
    ).sum(axis=0)
    allowed = (tol * np.linalg.norm(lifted_coef)) ** 2
    kept = int(np.argmax(tails <= allowed))
    return max(1, -(-kept // 2))


def minimal_heads(lifted_coef, token_dim, tol, max_iter=_MAX_ITER):
    """The fewest heads that reproduce ``lifted_coef`` within ``tol``.

    No model with fewer than :func:`_fewest_heads_bound` heads can work, and the
    paper's read-out (the SVD of the symmetric split, truncated within ``tol``)
    always does. Counts from the bound upwards get one start of
    :func:`low_rank_fold` each, until one succeeds; counts below that one are then
    retried with restarts, one at a time, until one fails.

    The search goes upwards because alternating projections converge quickly to a
    solution of exactly the probed rank but slowly to one of lower rank, so a
    probe above the minimal count is no reliable test of feasibility.

    Returns
    -------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    """
    n_outputs = lifted_coef.shape[0]
    best = fold_lifted_coef(lifted_coef, token_dim)
    _, singular_values, _ = _svd(best)
    n_heads = n_heads_within(singular_values, tol)  # always enough
    lower_bound = min(_fewest_heads_bound(lifted_coef, token_dim, tol), n_heads)
    for candidate in range(lower_bound, n_heads):
        folded, _ = low_rank_fold(lifted_coef, token_dim, candidate, tol, max_iter)
        if folded is not None:
            best, n_heads = folded, candidate
            break
    while n_heads > lower_bound:
        folded, _ = low_rank_fold(
            lifted_coef, token_dim, n_heads - 1, tol, max_iter, restarts=_RESTARTS
        )
        if folded is None:
            break
        best, n_heads = folded, n_heads - 1
    return heads_of_folded(best, n_heads, n_outputs, token_dim)


# L-BFGS refinement of k heads: cap on iterations and the relative tolerances.
_REFINE_MAX_ITER = 3000
_REFINE_FTOL = 1e-15
_REFINE_GTOL = 1e-12


def _weighted_loss(lifted_coef, target, apply_weight):
    """``sum_a (theta_a - target_a)^T weight (theta_a - target_a)`` and its
    gradient in ``theta``."""
    residual = lifted_coef - target
    weighted = apply_weight(residual)
    return float(np.sum(weighted * residual)), 2.0 * weighted


def fixed_heads(lifted_coef, token_dim, n_heads, apply_weight, tol, max_iter=_MAX_ITER):
    """The best model with at most ``n_heads`` heads for a weighted objective.

    Minimizes ``sum_a (theta_a - lifted_coef_a)^T weight (theta_a - lifted_coef_a)``
    over the lifted coefficients ``theta`` of ``n_heads``-head models. With
    ``weight = Phi^T Phi + alpha I`` (centered when fitting an intercept) and
    ``lifted_coef`` the lifted minimizer this is the training objective, up to a
    constant. When at most ``n_heads`` heads reproduce ``lifted_coef`` within
    ``tol`` (:func:`minimal_heads`) those heads are returned; otherwise the better
    of the alternating-projection iterate of rank ``n_heads`` and the paper's
    read-out truncated to ``n_heads`` heads is refined by L-BFGS over the heads,
    which never increases the objective.

    Parameters
    ----------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
    token_dim, n_heads : int
    apply_weight : callable
        ``apply_weight(R)`` is ``R @ weight`` for ``R`` of shape
        ``(n_outputs, n_lifted_features)``, ``weight`` symmetric positive
        semi-definite (a matrix product, or structured products that never form
        ``weight``).
    tol : float

    Returns
    -------
    value_matrices : ndarray of shape (h, n_outputs, token_dim), ``h <= n_heads``
    query_matrices : ndarray of shape (h, token_dim, token_dim)
    """
    d = token_dim
    n_outputs = lifted_coef.shape[0]
    value, query = minimal_heads(lifted_coef, d, tol, max_iter)
    if len(value) <= n_heads:
        return value, query

    split = fold_lifted_coef(lifted_coef, d)
    candidates = [
        _alternating_projections(lifted_coef, d, n_heads, split, 0.0, max_iter)[0],
        _truncate(split, n_heads),
    ]
    scale = max(
        _weighted_loss(np.zeros_like(lifted_coef), lifted_coef, apply_weight)[0],
        np.finfo(float).tiny,
    )
    losses = [
        _weighted_loss(unfold_lifted_coef(c, d), lifted_coef, apply_weight)[0]
        for c in candidates
    ]
    start = candidates[int(np.argmin(losses))]
    left, values, right_t = _svd(start)
    root = np.sqrt(values[:n_heads])
    value_rows = (left[:, :n_heads] * root).T  # (n_heads, n_outputs * d)
    query_rows = right_t[:n_heads] * root[:, None]  # (n_heads, d * d)
    split_at = value_rows.size

    def objective(parameters):
        value = parameters[:split_at].reshape(value_rows.shape)
        query = parameters[split_at:].reshape(query_rows.shape)
        folded = value.T @ query  # W[(a,b),(c,e)] = sum_h V_h[a,b] Q_h[c,e]
        loss, gradient = _weighted_loss(
            unfold_lifted_coef(folded, d), lifted_coef, apply_weight
        )
        # fold is the adjoint of unfold, so this is the gradient in W.
        gradient_folded = fold_lifted_coef(gradient, d) / scale
        return loss / scale, np.concatenate(
            [(query @ gradient_folded.T).ravel(), (value @ gradient_folded).ravel()]
        )

    result = scipy.optimize.minimize(
        objective,
        np.concatenate([value_rows.ravel(), query_rows.ravel()]),
        jac=True,
        method="L-BFGS-B",
        options={
            "maxiter": _REFINE_MAX_ITER,
            "ftol": _REFINE_FTOL,
            "gtol": _REFINE_GTOL,
        },
    )
    value = result.x[:split_at].reshape(value_rows.shape)
    query = result.x[split_at:].reshape(query_rows.shape)
    return heads_of_folded(value.T @ query, n_heads, n_outputs, d)


@dataclass(frozen=True)
class HeadReadout:
    """Heads read out of a lifted solution, and how the read-out went."""

    value_matrices: np.ndarray
    query_matrices: np.ndarray
    complete: bool = True


def read_out_heads(
    lifted_coef,
    token_dim,
    n_heads,
    tol,
    *,
    apply_weight,
    residual_sum_of_squares,
    n_observations,
    budget_seconds,
    verbose=0,
):
    """Heads for a lifted solution, as the estimators' ``n_heads`` asks.

    ``None``: :func:`paper_heads`; ``"auto"``: :func:`minimal_heads`; an int:
    :func:`fixed_heads` for the training objective ``apply_weight`` describes.

    Returns
    -------
    readout : HeadReadout
    """
    if n_heads is None:
        value, query = paper_heads(lifted_coef, token_dim, tol)
    elif n_heads == "auto":
        value, query = minimal_heads(lifted_coef, token_dim, tol)
    else:
        value, query = fixed_heads(lifted_coef, token_dim, n_heads, apply_weight, tol)
    return HeadReadout(value, query)
