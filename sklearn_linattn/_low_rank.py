"""The rank-``r`` completion engine behind the head read-outs.

A model with ``r`` heads has lifted coefficients ``unfold(W)`` for a folded matrix
``W[(a, b), (c, e)] = sum_h V_h[a, b] Q_h[c, e]`` of rank ``r``; only the part of
``W`` symmetric in ``(b, c)`` is fixed by the function (see the theory page of the
documentation). This module finds such ``W`` (or heads) for given coefficients:

- :func:`low_rank_fold`: a rank-``r`` ``W`` whose symmetric part equals the given
  coefficients within a relative tolerance (alternating projections; with one output
  also Gauss-Newton on a common isotropic subspace of the coefficient slices).
- :func:`weighted_head_fit`: the ``r``-head model closest to the given coefficients
  in a weighted metric ``tr(R M R^T)`` (the training loss), by Gauss-Newton in head
  space with conjugate-gradient inner solves and an exact line search.

Every iterative routine stops after a number of iterations fixed by its arguments
(never by a clock), so its result is a function of its inputs alone. Nothing here
imports the read-outs.
"""

import functools

import numpy as np
import scipy.linalg

from ._lift import isotropic_levenberg_marquardt, projection_window

__all__ = [
    "alternating_projections",
    "balanced_rows",
    "fewest_heads_bound",
    "fold_lifted_coef",
    "head_coef",
    "IDENTITY",
    "head_jacobian",
    "low_rank_fold",
    "nearest_isotropic_folds",
    "svd",
    "unfold_lifted_coef",
    "weighted_head_fit",
]


@functools.lru_cache(maxsize=16)
def _fold_indices(token_dim):
    """Flat positions of ``W[b, c, e]`` and ``W[c, b, e]`` (within one output's
    ``d^3`` block) for each lifted feature, and the feature's scale."""
    d = token_dim
    rows, cols = np.triu_indices(d)
    scales = np.where(rows == cols, 1.0, 1.0 / np.sqrt(2.0))
    e = np.arange(d)
    first = ((rows[:, None] * d + cols[:, None]) * d + e).ravel()
    second = ((cols[:, None] * d + rows[:, None]) * d + e).ravel()
    return first, second, np.repeat(scales, d)


def fold_lifted_coef(lifted_coef, token_dim):
    """The symmetric split ``W[(a, b), (c, e)]`` of lifted coefficients (same as
    :func:`sklearn_linattn._attention.fold_lifted_coef`, with cached indices)."""
    first, second, scales = _fold_indices(token_dim)
    n_outputs = lifted_coef.shape[0]
    folded = np.zeros((n_outputs, token_dim**3))
    values = lifted_coef * scales
    folded[:, first] = values
    folded[:, second] = values
    return folded.reshape(n_outputs * token_dim, token_dim * token_dim)


def unfold_lifted_coef(folded, token_dim):
    """Lifted coefficients of a folded ``W`` (same as
    :func:`sklearn_linattn._attention.unfold_lifted_coef`, with cached indices)."""
    first, second, scales = _fold_indices(token_dim)
    flat = folded.reshape(-1, token_dim**3)
    return (flat[:, first] + flat[:, second]) * (0.5 / scales)


def svd(matrix):
    """Thin SVD; falls back to ``gesvd`` when ``gesdd`` does not converge."""
    try:
        return scipy.linalg.svd(matrix, full_matrices=False, check_finite=False)
    except np.linalg.LinAlgError:
        return scipy.linalg.svd(
            matrix, full_matrices=False, check_finite=False, lapack_driver="gesvd"
        )


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


def _project_rank_warm(matrix, rank, basis):
    """Rank-``rank`` approximation from a step of subspace iteration on the
    right singular vectors, started from ``basis`` (the previous iterate's): cheap
    when ``rank`` is small, and as accurate as the search needs once the iterates
    change slowly. Without ``basis`` the iteration starts from a seeded Gaussian
    sketch (an eigendecomposition of the ``d^2 x d^2`` Gram matrix cost 0.17 s at
    ``d = 32``). Returns the approximation and the new basis."""
    if basis is None:
        sketch = np.random.default_rng(0).normal(size=(matrix.shape[1], rank))
        basis = np.linalg.qr(matrix.T @ (matrix @ sketch))[0]
    power = matrix.T @ (matrix @ basis)
    values, vectors = np.linalg.eigh(power.T @ power)
    basis = power @ (vectors / np.sqrt(np.maximum(values, np.finfo(float).tiny)))
    return (matrix @ basis) @ basis.T, basis


# Alternating projections: iterations between progress checks; the relative
# progress per window above which the iteration counts as stalled (converged, or
# stuck at a point that is not a solution); the cap on iterations per start, and
# the iteration after which a start is abandoned when its current linear rate
# would not reach the tolerance within the cap (slow phases before that are
# common on the way to a solution); how many extra starts (seeded, antisymmetric
# perturbations) to try when one stalls.
WINDOW = 25
STALL = 1.0 - 1e-3
MAX_ITER = 5000
PATIENCE = 1000
# Within tol a start polishes on to POLISH[0] * tol in any case, and on to
# POLISH[1] * tol while each window still gains a factor POLISH_RATE: full
# accuracy where convergence is fast, without the long tail where it is slow.
POLISH = (1e-3, 1e-6)
POLISH_RATE = 0.5
RESTARTS = 8
RESTART_SEED = 20251129
# Folded matrices with both sides at least this long (and rank at most a quarter
# of that) use warm-started subspace iteration for the rank projection.
WARM_MIN_SIZE = 256
# Iterations per compiled call: a window, or fewer on large folded matrices so that
# a call costs at most about this many flops (min(shape)^2 * max(shape) per
# iteration).
CHUNK_FLOPS = 2**22


def _warm_window(current, lifted_coef, token_dim, rank, n_iter, stop_error, basis):
    """:func:`~sklearn_linattn._lift.projection_window` with the rank projection by
    warm-started subspace iteration (:func:`_project_rank_warm`), in numpy, for
    large folded matrices. Returns ``(current, best iterate, best error, last
    error, iterations, basis)``."""
    norm = np.linalg.norm(lifted_coef)
    best, best_error, error = None, np.inf, np.inf
    done = 0
    for _ in range(n_iter):
        done += 1
        low_rank, basis = _project_rank_warm(current, rank, basis)
        gap = unfold_lifted_coef(low_rank, token_dim) - lifted_coef
        error = np.linalg.norm(gap) / norm
        if error < best_error:
            best, best_error = low_rank, error
        current = low_rank - fold_lifted_coef(gap, token_dim)
        if error <= stop_error:
            break
    return current, best, best_error, error, done, basis


def alternating_projections(
    lifted_coef,
    token_dim,
    rank,
    start,
    tol,
    max_iter,
    stall=STALL,
    warm=False,
):
    """Alternate between rank-``rank`` matrices and the affine set of folded ``W``
    with the fitted symmetric part, from ``start``; return the best rank-``rank``
    iterate and its relative error on the lifted coefficients. The iterations run
    in windows of ``WINDOW`` (compiled by Numba); the iteration stops when a window
    lowers the error by less than a factor ``stall``. With ``warm``, the rank
    projection is by warm-started subspace iteration (for screening many counts
    quickly)."""
    lifted_coef = np.ascontiguousarray(lifted_coef, dtype=np.float64)
    norm = np.linalg.norm(lifted_coef)
    current = np.ascontiguousarray(start, dtype=np.float64)
    window_start = np.inf
    best, best_error = None, np.inf
    basis = None
    # Large matrices: subspace iteration instead of an eigendecomposition per step
    # (which the compiled window does faster below WARM_MIN_SIZE / 4).
    warm = (warm and 4 * min(start.shape) >= WARM_MIN_SIZE) or (
        min(start.shape) >= WARM_MIN_SIZE and 4 * rank <= min(start.shape)
    )
    if not warm:
        first, second, scales = _fold_indices(token_dim)
        window_best = np.empty_like(current)
    chunk = int(np.clip(CHUNK_FLOPS // (min(start.shape) ** 2 * max(start.shape)),
                        1, WINDOW))
    iteration, finished = 0, False
    while iteration < max_iter and not finished:
        window_end = min(iteration + WINDOW, max_iter)
        while iteration < window_end:  # one window, in chunks
            n_iter = min(chunk, window_end - iteration)
            if warm:
                current, low_rank, error_best, error, done, basis = _warm_window(
                    current, lifted_coef, token_dim, rank, n_iter, POLISH[1] * tol,
                    basis,
                )
            else:
                current, error_best, error, done = projection_window(
                    current, lifted_coef, first, second, scales, rank, n_iter,
                    POLISH[1] * tol, norm, window_best,
                )
                low_rank = window_best
            iteration += done
            if error_best < best_error:
                best, best_error = low_rank.copy(), error_best
            if error <= POLISH[1] * tol:
                finished = True
                break
        if finished:
            break
        progress = error / window_start
        if progress > (POLISH_RATE if error <= POLISH[0] * tol else stall):
            break
        window_start = error
        if iteration >= PATIENCE and error > tol > 0:
            # Linear convergence at the current rate needs about this many more
            # iterations to reach tol.
            needed = WINDOW * np.log(tol / error) / np.log(progress)
            if iteration + needed > max_iter:
                break
    return best, best_error


# Gauss-Newton on isotropic subspaces (one output): iteration cap per start, the
# Levenberg-Marquardt damping beyond which a start is abandoned, extra random starts.
GN_MAX_ITER = 60
GN_MAX_DAMPING = 1e8
GN_STARTS = 40
GN_CHUNK = 10


def _keep_complement(slices, projector):
    """``2 P S_e - P S_e P`` for every slice: the symmetric part is ``S_e`` minus
    its block on the complement of ``P``'s range, and the rank is at most
    ``rank(P)``."""
    projected = np.matmul(projector, slices)
    return 2 * projected - np.matmul(projected, projector)


def _isotropic_subspace(slices, start):
    """Levenberg-Marquardt for an orthonormal ``N`` with ``N^T S_e N = 0`` for all e
    (:func:`~sklearn_linattn._lift.isotropic_levenberg_marquardt`, compiled), at
    most ``GN_MAX_ITER`` steps, ``GN_CHUNK`` per compiled call.

    Returns the basis reached and ``sum_e ||N^T S_e N||_F^2``.
    """
    slices = np.ascontiguousarray(slices, dtype=np.float64)
    basis = np.ascontiguousarray(start, dtype=np.float64)
    damping, steps = 1e-3, 0
    while True:
        basis, value, damping, stopped = isotropic_levenberg_marquardt(
            slices, basis, GN_CHUNK, GN_MAX_DAMPING, damping
        )
        steps += GN_CHUNK
        if stopped or steps >= GN_MAX_ITER:
            return basis, value


def _isotropic_fold(
    lifted_coef, token_dim, rank, tol, warm_start, n_random=GN_STARTS
):
    """A rank-``rank`` folded ``W`` for one output, from an isotropic subspace.

    With one output, ``W`` has rank at most ``r`` exactly when the slices
    ``S_e = W_sym[:, :, e]`` all vanish on a common ``(d - r)``-dimensional subspace
    ``N`` (``N^T S_e N = 0``); then ``X_e = 2 P S_e - P S_e P`` with ``P`` the
    projector onto ``N``'s complement has the fitted symmetric part and rank ``<= r``,
    and the relative error is ``sqrt(sum_e ||N^T S_e N||^2) / ||lifted_coef||``.
    ``N`` is found by Levenberg-Marquardt from the null space of ``warm_start`` (if
    given) and from ``n_random`` seeded random starts.
    """
    d = token_dim
    k = d - rank
    norm = np.linalg.norm(lifted_coef)
    slices = fold_lifted_coef(lifted_coef, d).reshape(d, d, d).transpose(2, 0, 1)
    random_state = np.random.default_rng(RESTART_SEED)
    starts = [svd(warm_start)[0][:, rank:]] if warm_start is not None else []
    starts += [random_state.normal(size=(d, k)) for _ in range(n_random)]
    for start in starts:
        basis, value = _isotropic_subspace(slices, start)
        if np.sqrt(value) <= tol * norm:
            complement = np.linalg.qr(basis, mode="complete")[0][:, k:]
            projector = complement @ complement.T
            slices_in = _keep_complement(slices, projector)
            return slices_in.transpose(1, 2, 0).reshape(d, d * d)
    return None


def nearest_isotropic_folds(lifted_coef, token_dim, rank, warm_start, n_random):
    """Rank-``rank`` folded ``W`` near one output's coefficients, one per start.

    With one output the ``r``-head coefficients are those whose slices vanish on
    a common ``(d - r)``-dimensional subspace ``N``, and for a given ``N`` the
    nearest such coefficients zero the blocks ``N^T S_e N``; so the Frobenius
    distance is ``min_N sum_e ||N^T S_e N||^2``, minimized here by
    Levenberg-Marquardt from the null space of ``warm_start`` and from ``n_random``
    seeded random starts (alternating projections can stop far from it, and the
    local minima reached from different starts lie in different basins of the
    training loss).

    Returns
    -------
    folds : list of ndarray of shape (token_dim, token_dim ** 2)
        One per start tried, nearest first.
    """
    d = token_dim
    k = d - rank
    slices = fold_lifted_coef(lifted_coef, d).reshape(d, d, d).transpose(2, 0, 1)
    random_state = np.random.default_rng(RESTART_SEED)
    starts = [svd(warm_start)[0][:, rank:]]
    starts += [random_state.normal(size=(d, k)) for _ in range(n_random)]
    found = []
    for start in starts:
        basis, value = _isotropic_subspace(slices, start)
        complement = np.linalg.qr(basis, mode="complete")[0][:, k:]
        projector = complement @ complement.T
        slices_in = _keep_complement(slices, projector)
        found.append((value, slices_in.transpose(1, 2, 0).reshape(d, d * d)))
    found.sort(key=lambda pair: pair[0])
    return [folded for _, folded in found]


def low_rank_fold(
    lifted_coef,
    token_dim,
    rank,
    tol,
    max_iter=MAX_ITER,
    restarts=0,
):
    """A folded ``W`` of rank ``rank`` whose symmetric part is ``lifted_coef``.

    Alternating projections between the matrices of rank ``rank`` (SVD truncation)
    and the affine set of ``W`` with the fitted symmetric part (keep the
    antisymmetric part, replace the symmetric one), started from the symmetric
    split. The iteration runs until it stalls, so a solution is as accurate as the
    iteration allows, not just within ``tol``. When it stalls above ``tol`` and
    ``restarts`` are allowed, a single-output problem goes to Gauss-Newton on a
    common isotropic subspace (which succeeds where alternating projections stall
    past ``d / 2`` heads), then alternating projections restart from the symmetric
    split plus antisymmetric parts drawn from a fixed seed (so results never change
    between runs).

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
    folded : ndarray of shape (n_outputs * token_dim, token_dim ** 2)
        The best iterate seen; a solution when ``relative_error <= tol``.
    relative_error : float
        ``||unfold(folded) - lifted_coef|| / ||lifted_coef||``.
    """
    split = fold_lifted_coef(lifted_coef, token_dim)
    if not np.any(split):
        return split, 0.0
    norm = np.linalg.norm(lifted_coef)
    one_output = lifted_coef.shape[0] == 1
    if restarts and one_output and rank < token_dim:
        # One output: Gauss-Newton on a common isotropic subspace of the slices
        # from random starts (a millisecond each) finds a rank-`rank` W wherever
        # one exists in our experiments, where alternating projections crawl
        # (more than half of the d heads) or need restarts.
        folded = _isotropic_fold(lifted_coef, token_dim, rank, tol, None)
        if folded is not None:
            gap = unfold_lifted_coef(folded, token_dim) - lifted_coef
            return folded, np.linalg.norm(gap) / norm
    random_state = np.random.default_rng(RESTART_SEED)
    # Until an iterate is found: the split's rank-`rank` truncation.
    best = _project_rank(split, rank)
    gap = unfold_lifted_coef(best, token_dim) - lifted_coef
    best_error = np.linalg.norm(gap) / norm
    for attempt in range(1 + restarts):
        start = split
        if attempt:
            shape = (lifted_coef.shape[0], token_dim, token_dim, token_dim)
            noise = random_state.normal(size=shape)
            antisymmetric = (noise - noise.transpose(0, 2, 1, 3)).reshape(split.shape)
            start = split + antisymmetric * (
                np.linalg.norm(split) / np.linalg.norm(antisymmetric)
            )
        folded, error = alternating_projections(
            lifted_coef, token_dim, rank, start, tol, max_iter
        )
        if error < best_error:
            best, best_error = folded, error
        if best_error <= tol:
            return best, best_error
        if attempt == 0 and restarts and one_output and rank < token_dim:
            # ... and from the null space of the stalled iterate.
            folded = _isotropic_fold(
                lifted_coef, token_dim, rank, tol, best, n_random=0
            )
            if folded is not None:
                gap = unfold_lifted_coef(folded, token_dim) - lifted_coef
                return folded, np.linalg.norm(gap) / norm
    return best, best_error


def fewest_heads_bound(lifted_coef, token_dim, tol):
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


# ---------------------------------------------------------------------------
# Weighted fit of r heads: Gauss-Newton in head space.

# Outer iterations; conjugate-gradient iterations per inner solve and their
# relative residual target; the relative decrease below which the outer loop
# stops.
WEIGHTED_MAX_ITER = 30
CG_MAX_ITER = 60
CG_TOL = 1e-3
WEIGHTED_STALL = 1e-6
# ... and stops only once a step moves the heads by less than this (relative).
STEP_TOL = 1e-11


def balanced_rows(folded, rank):
    """Heads of the rank-``rank`` truncation of ``folded`` as stacked rows:
    ``value_rows`` (rank, n_outputs * d) and ``query_rows`` (rank, d * d) with
    ``folded ~ value_rows.T @ query_rows`` and equal norms per head."""
    left, values, right_t = svd(folded)
    root = np.sqrt(values[:rank])
    return (left[:, :rank] * root).T, right_t[:rank] * root[:, None]


def head_coef(value_rows, query_rows, token_dim):
    """Lifted coefficients of the heads given as stacked rows."""
    return unfold_lifted_coef(value_rows.T @ query_rows, token_dim)


def head_jacobian(value_rows, query_rows, token_dim):
    """The Jacobian of ``(V, Q) -> unfold(V^T Q)`` as a dense matrix.

    Rows run over the lifted coefficients (output-major, shape ``(n_outputs, p)``
    flattened), columns over ``value_rows.ravel()`` then ``query_rows.ravel()``.
    With ``theta[a, f] = g_f (W[(a, b_f), (c_f, e_f)] + W[(a, c_f), (b_f, e_f)])``
    (``g_f`` = 1 on the diagonal pairs, ``1/sqrt(2)`` off it) and
    ``W = sum_h v_h q_h^T``, the derivatives are read off directly.
    """
    d = token_dim
    rank = value_rows.shape[0]
    n_outputs = value_rows.shape[1] // d
    first, second, scales = _fold_indices(d)
    gain = 0.5 / scales
    flat = np.arange(first.size)
    b_f, c_f, e_f = first // (d * d), (first // d) % d, first % d
    n_lifted = first.size
    # d theta[a, f] / d v_h[a, b]
    #     = g_f ([b_f == b] q_h[c_f, e_f] + [c_f == b] q_h[b_f, e_f])
    core = np.zeros((rank, d, n_lifted))
    core[:, b_f, flat] += gain * query_rows[:, c_f * d + e_f]
    core[:, c_f, flat] += gain * query_rows[:, b_f * d + e_f]
    value_part = np.zeros((n_outputs, n_lifted, rank, n_outputs, d))
    for a in range(n_outputs):
        value_part[a, :, :, a, :] = core.transpose(2, 0, 1)
    # d theta[a, f] / d q_h[c, e] = g_f (v_h[a, b_f] [(c, e) == (c_f, e_f)]
    #                                    + v_h[a, c_f] [(c, e) == (b_f, e_f)])
    value = value_rows.reshape(rank, n_outputs, d)
    query_part = np.zeros((n_lifted, d * d, n_outputs, rank))
    query_part[flat, c_f * d + e_f] += (gain * value[:, :, b_f]).transpose(2, 1, 0)
    query_part[flat, b_f * d + e_f] += (gain * value[:, :, c_f]).transpose(2, 1, 0)
    query_part = query_part.transpose(2, 0, 3, 1)  # (a, f, h, (c, e))
    return np.concatenate(
        [
            value_part.reshape(n_outputs * n_lifted, -1),
            query_part.reshape(n_outputs * n_lifted, -1),
        ],
        axis=1,
    )


def _cg_step(jacobian, jacobian_t, weight, weighted, value_rows, query_rows,
             precondition, cg_max_iter):
    """Conjugate gradients on ``J^T M J step = -J^T M residual`` (head blocks
    preconditioned by their strength); returns the step and ``M J step``."""
    grad_v, grad_q = jacobian_t(weighted)
    rhs_v, rhs_q = -grad_v, -grad_q
    step_v = np.zeros_like(value_rows)
    step_q = np.zeros_like(query_rows)
    weighted_step = np.zeros_like(weighted)  # M J step, kept alongside
    res_v, res_q = rhs_v.copy(), rhs_q.copy()
    z_v, z_q = res_v * precondition[:, None], res_q * precondition[:, None]
    dir_v, dir_q = z_v.copy(), z_q.copy()
    rz = np.vdot(res_v, z_v) + np.vdot(res_q, z_q)
    rz0 = rz
    for _ in range(cg_max_iter):
        if rz <= CG_TOL**2 * rz0 or rz <= 0:
            break
        product = jacobian(dir_v, dir_q)
        weighted_product = weight(product)
        curvature = np.vdot(product, weighted_product)
        if curvature <= 0:
            break
        step_size = rz / curvature
        step_v += step_size * dir_v
        step_q += step_size * dir_q
        weighted_step += step_size * weighted_product
        hv, hq = jacobian_t(weighted_product)
        res_v -= step_size * hv
        res_q -= step_size * hq
        z_v, z_q = res_v * precondition[:, None], res_q * precondition[:, None]
        rz_new = np.vdot(res_v, z_v) + np.vdot(res_q, z_q)
        dir_v = z_v + (rz_new / rz) * dir_v
        dir_q = z_q + (rz_new / rz) * dir_q
        rz = rz_new
    return step_v, step_q, weighted_step


# ``weight_matrix=IDENTITY``: dense steps in the Frobenius metric (M = I).
IDENTITY = np.eye(0)


def _dense_step(value_rows, query_rows, token_dim, weight_matrix, weighted,
                precondition):
    """The exact Gauss-Newton step from the dense Jacobian (small problems), with
    a tiny Levenberg-Marquardt damping for the model's symmetries; returns the
    step and ``M J step``."""
    jacobian = head_jacobian(value_rows, query_rows, token_dim)
    n_outputs = weighted.shape[0]
    n_lifted = weighted.shape[1]
    if weight_matrix is IDENTITY:
        weighted_jacobian = jacobian
    else:
        blocks = jacobian.reshape(n_outputs, n_lifted, -1)
        weighted_jacobian = np.matmul(weight_matrix, blocks).reshape(jacobian.shape)
    curvature = jacobian.T @ weighted_jacobian
    gradient = jacobian.T @ weighted.ravel()
    scale = np.concatenate(
        [np.repeat(precondition, value_rows.shape[1]),
         np.repeat(precondition, query_rows.shape[1])]
    )
    damping = 1e-10 * np.max(np.diag(curvature) * scale) + np.finfo(float).tiny
    system = curvature + np.diag(damping / scale)
    try:
        step = -scipy.linalg.solve(system, gradient, assume_a="pos", check_finite=False)
    except np.linalg.LinAlgError:
        step = -np.linalg.lstsq(system, gradient, rcond=None)[0]
    split_at = value_rows.size
    weighted_step = weighted_jacobian @ step
    return (
        step[:split_at].reshape(value_rows.shape),
        step[split_at:].reshape(query_rows.shape),
        weighted_step.reshape(weighted.shape),
    )


def weighted_head_fit(
    target,
    token_dim,
    value_rows,
    query_rows,
    apply_weight,
    *,
    max_iter=WEIGHTED_MAX_ITER,
    accept_below=-np.inf,
    give_up_above=np.inf,
    stall=WEIGHTED_STALL,
    cg_max_iter=CG_MAX_ITER,
    weight_matrix=None,
    step_tol=STEP_TOL,
):
    """Heads minimizing ``loss = tr((theta - target) M (theta - target)^T)``.

    Gauss-Newton on the heads ``(V, Q)`` from the given ones: each step solves the
    linearized problem ``min ||J step + residual||_M^2`` by conjugate gradients (one
    ``apply_weight`` per iteration; head blocks are preconditioned by the head's
    strength), then moves along the step with an exact line search (the loss is a
    quartic polynomial along it, known from one more ``apply_weight``). Heads are
    rebalanced between steps.

    Parameters
    ----------
    target : ndarray of shape (n_outputs, n_lifted_features)
    token_dim : int
    value_rows, query_rows : ndarray of shape (r, n_outputs * d) and (r, d * d)
        The starting heads, ``W = value_rows.T @ query_rows``.
    apply_weight : callable
        ``apply_weight(R)`` is ``R @ M`` for ``R`` of shape (k, n_lifted_features).
    max_iter : int
        Gauss-Newton steps.
    accept_below : float
        Stop as soon as the loss is at most this.
    stall : float
        Stop when a step lowers the loss by less than this fraction and moves the
        heads by less than ``step_tol`` (relative).
    cg_max_iter : int
        Conjugate-gradient iterations per step.
    weight_matrix : ndarray of shape (p, p) or IDENTITY, optional
        ``M`` itself (``IDENTITY`` for ``M = I``), for small problems: each step
        then solves the linearized problem exactly from the dense Jacobian
        (:func:`head_jacobian`) instead of by conjugate gradients.
    give_up_above : float
        Stop when the linearized problem's minimum (what the current neighbourhood
        promises) stays above this.

    Returns
    -------
    value_rows, query_rows : ndarray
    loss : float
    n_iter : int
        Gauss-Newton steps taken.
    """
    d = token_dim
    rank = value_rows.shape[0]

    def weight(rows):
        return apply_weight(rows.reshape(-1, target.shape[1])).reshape(rows.shape)

    residual = head_coef(value_rows, query_rows, d) - target
    weighted = weight(residual)
    loss = float(np.vdot(residual, weighted))
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        if loss <= accept_below or rank == 0:
            n_iter -= 1
            break
        folded_v = value_rows.T @ query_rows
        value_rows, query_rows = balanced_rows(folded_v, rank)
        strength = np.einsum("ij,ij->i", value_rows, value_rows)  # = ||Q_h||^2
        precondition = 1.0 / np.maximum(strength, np.finfo(float).tiny)

        def jacobian(step_v, step_q, value_rows=value_rows, query_rows=query_rows):
            return unfold_lifted_coef(
                step_v.T @ query_rows + value_rows.T @ step_q, d
            )

        def jacobian_t(coef, value_rows=value_rows, query_rows=query_rows):
            folded = fold_lifted_coef(coef, d)
            return query_rows @ folded.T, value_rows @ folded

        if weight_matrix is not None:
            step_v, step_q, weighted_step = _dense_step(
                value_rows, query_rows, d, weight_matrix, weighted, precondition
            )
        else:
            step_v, step_q, weighted_step = _cg_step(
                jacobian, jacobian_t, weight, weighted, value_rows, query_rows,
                precondition, cg_max_iter,
            )
        linear = jacobian(step_v, step_q)
        # Linearized minimum: ||residual + linear||_M^2.
        predicted = (
            loss + 2 * np.vdot(linear, weighted) + np.vdot(linear, weighted_step)
        )
        # Exact line search: residual(t) = r + t a + t^2 b, b = unfold(dV^T dQ).
        second = unfold_lifted_coef(step_v.T @ step_q, d)
        weighted_second = weight(second)
        rr = loss
        ra = np.vdot(residual, weighted_step)
        rb = np.vdot(residual, weighted_second)
        aa, ab, bb = (
            np.vdot(linear, weighted_step),
            np.vdot(linear, weighted_second),
            np.vdot(second, weighted_second),
        )
        # loss(t) = rr + 2 ra t + (aa + 2 rb) t^2 + 2 ab t^3 + bb t^4
        coefficients = [bb, 2 * ab, aa + 2 * rb, 2 * ra, rr]
        critical = np.roots(np.polyder(coefficients))
        candidates = [1.0] + [
            float(t.real) for t in critical if abs(t.imag) < 1e-9 and 0 < t.real <= 4
        ]
        values = [np.polyval(coefficients, t) for t in candidates]
        best_t = candidates[int(np.argmin(values))]
        new_loss = float(min(values))
        if not new_loss < loss:
            break
        value_rows = value_rows + best_t * step_v
        query_rows = query_rows + best_t * step_q
        residual = residual + best_t * linear + best_t**2 * second
        weighted = weighted + best_t * weighted_step + best_t**2 * weighted_second
        previous, loss = loss, float(np.vdot(residual, weighted))
        if predicted > give_up_above and n_iter >= 1:
            break
        # Converged: the loss no longer falls and the step is at rounding level
        # (a loss flat to `stall` can still leave the heads ~sqrt(stall) off).
        moved = best_t * np.sqrt(np.vdot(step_v, step_v) + np.vdot(step_q, step_q))
        size = np.sqrt(
            np.vdot(value_rows, value_rows) + np.vdot(query_rows, query_rows)
        )
        if previous - loss <= stall * previous and moved <= step_tol * size:
            break
    folded = value_rows.T @ query_rows
    if rank:
        value_rows, query_rows = balanced_rows(folded, rank)
    return value_rows, query_rows, loss, n_iter
