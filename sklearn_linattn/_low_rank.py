"""Fitting ``k`` attention heads: the engine of the head read-out.

A model with ``k`` heads has lifted coefficients ``theta = unfold(W)`` of the folded
matrix ``W[(a, b), (c, e)] = sum_h V_h[a, b] Q_h[c, e]``. For fixed query matrices
the model is linear in the value matrices, and every output uses the same ``k d``
*head features* ``X(Q)``: a training objective is ``||V X(Q) - T||^2``, with ``V``
of shape ``(n_outputs, k d)`` and targets ``T``, given by a *design*
(:mod:`sklearn_linattn._designs`).

:func:`fit_heads` eliminates the values (least squares, the *variable projection*
of Golub and Pereyra) and minimizes over ``Q`` by Levenberg-Marquardt
(:func:`levenberg_marquardt`) with Kaufman's Jacobian; :func:`isotropic_queries`
gives one-output starts from common isotropic subspaces. Every loop stops after a
number of iterations fixed by its arguments and the problem's size, never by a
clock, and charges its flops to a :class:`Budget`.
"""

import functools
import math

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from ._attention import _unfold, fold_lifted_coef

__all__ = [
    "Budget",
    "completion_queries",
    "fit_heads",
    "head_coef",
    "isotropic_queries",
    "levenberg_marquardt",
    "linearized_refit",
    "matmul",
    "svd",
]


# LAPACK's routines called directly, without scipy.linalg's and numpy's wrappers
# (most of the cost of the small SVDs, QR factorizations and solves here): the
# same routines, the same bits.
_EPS, _TINY = np.finfo(float).eps, np.finfo(float).tiny
_GESDD, _GESDD_LWORK, _POTRF, _POTRS, _GEQRF, _GEQRF_LWORK, _ORGQR = (
    scipy.linalg.get_lapack_funcs(
        ("gesdd", "gesdd_lwork", "potrf", "potrs", "geqrf", "geqrf_lwork", "orgqr"),
        dtype=np.float64,
    )
)


def matmul(a, b):
    """``a @ b`` of 1-D or 2-D arrays: by ``ndarray.dot`` where both are
    contiguous in C or Fortran order (the same BLAS call and bits, without the
    ufunc's dispatch), else by ``@`` (``dot`` copies other strides differently
    from ``@``: other bits)."""
    if a.flags.forc and b.flags.forc:
        return a.dot(b)
    return a @ b


def svd(matrix):
    """Thin SVD, ``scipy.linalg.svd``'s bits (LAPACK's ``gesdd``, called directly
    for float64); by ``gesvd`` where ``gesdd`` does not converge."""
    if matrix.dtype == np.float64 and matrix.size:
        left, singular, right_t, info = _GESDD(
            matrix, compute_uv=True, lwork=_gesdd_workspace(*matrix.shape),
            full_matrices=False,
        )
        if info == 0:
            return left, singular, right_t
    # scipy's errors (NaN: ValueError) and fallback; other types, empty matrices
    return _with_fallback(scipy.linalg.svd, "gesvd", matrix, full_matrices=False)


@functools.lru_cache(maxsize=64)
def _gesdd_workspace(n_rows, n_columns):
    """The workspace scipy.linalg.svd asks ``gesdd`` for (the same bits): a
    function of the shape alone, hence cached."""
    work, info = _GESDD_LWORK(n_rows, n_columns, compute_uv=True, full_matrices=False)
    if info != 0:  # scipy.linalg.svd raises here too
        raise ValueError(f"gesdd's workspace query failed (info {info})")
    return int(work)


def orthonormal_factor(matrix):
    """``Q`` of the thin QR factorization, ``np.linalg.qr(matrix)[0]``'s bits and
    memory order: LAPACK's ``geqrf`` and ``orgqr``, the routines numpy calls,
    called directly for float64 (numpy's wrapper also forms ``R``: most of the
    cost of the small factorizations here)."""
    if matrix.dtype != np.float64 or matrix.ndim != 2 or not matrix.size:
        return np.linalg.qr(matrix)[0]
    n_rows, n_columns = matrix.shape
    factor_lwork, basis_lwork = _qr_workspace(n_rows, n_columns)
    factors, tau, _, info = _GEQRF(matrix, lwork=factor_lwork)
    if info == 0:
        basis, _, info = _ORGQR(
            factors[:, : min(n_rows, n_columns)], tau, lwork=basis_lwork,
            overwrite_a=True,
        )
    if info != 0:  # only for illegal arguments; numpy's error
        return np.linalg.qr(matrix)[0]
    # numpy's layout too (C order): later BLAS products of either order differ
    return np.ascontiguousarray(basis)


@functools.lru_cache(maxsize=64)
def _qr_workspace(n_rows, n_columns):
    """The workspaces numpy asks ``geqrf`` and ``orgqr`` for (their optimal
    ones): functions of the shape alone, hence cached."""
    rank = min(n_rows, n_columns)
    work, info = _GEQRF_LWORK(n_rows, n_columns)
    query = _ORGQR(np.zeros((n_rows, rank), order="F"), np.zeros(rank), lwork=-1)
    if info != 0 or query[2] != 0:
        raise ValueError("the QR factorization's workspace query failed")
    return max(int(work), n_columns, 1), max(int(query[1][0]), rank, 1)


def _with_fallback(solver, driver, *args, **kwargs):
    """``solver(*args, **kwargs)`` of scipy.linalg (``svd``, ``lstsq``), again by
    the LAPACK ``driver`` given where its default one does not converge."""
    try:
        return solver(*args, check_finite=False, **kwargs)
    except np.linalg.LinAlgError:
        return solver(*args, check_finite=False, lapack_driver=driver, **kwargs)


def head_coef(value_rows, query_rows, token_dim):
    """Lifted coefficients of heads given as stacked rows: ``value_rows`` (k,
    n_outputs * d) and ``query_rows`` (k, d * d), ``W = value_rows.T @ query_rows``."""
    return _unfold(value_rows.T @ query_rows, token_dim)


class _Values:
    """The best values for fixed queries, ``V = T X^+``, and what the reduced
    (variable-projection) problem needs: its residual ``V X - T = -T P`` (``P``
    projecting out the row space of ``X``) and Kaufman's Jacobian,
    ``dQ -> V X(dQ) P``."""

    def __init__(self, design, query_rows):
        self.design, self.query_rows = design, query_rows
        self.x = query_rows.ravel()
        features = design.features(query_rows)
        left, singular, right_t = svd(features)
        rank = 0  # no rows of weight: V = 0
        if singular.size and singular[0] > 0:
            # the singular values above rounding: a leading block (they are sorted)
            relative = max(max(features.shape) * _EPS, FEATURE_RANK_FLOOR)
            rank = np.count_nonzero(singular > singular[0] * relative)
        self.row_space = np.ascontiguousarray(right_t[:rank])
        # X^+ = row_space^T inverse
        self._inverse = (left[:, :rank] / singular[:rank]).T
        fitted = matmul(design.targets, self.row_space.T)
        self.values = matmul(fitted, self._inverse)  # (m, k d)
        self.residual = (matmul(fitted, self.row_space) - design.targets).ravel()
        self.loss = float(matmul(self.residual, self.residual))
        self.product_flops, self.flops = self._flops(design)
        cost = cost_model(design)
        self.nominal_product_flops, self.nominal_flops = (
            (self.product_flops, self.flops) if cost is design else self._flops(cost)
        )

    def _flops(self, design):
        """A Jacobian product's flops and this evaluation's on ``design`` (or a
        design's :func:`cost_model`). A product is counted as forming the
        features ``X(dQ)`` even where ``design.applied`` avoids that: the count
        is kept so that the work limits cut the same searches
        (benchmarks/README.md)."""
        k, d = len(self.query_rows), self.design.token_dim
        product = (
            design.feature_flops(k)
            + 4.0 * self.design.n_outputs * design.n_columns * len(self.row_space)
            + CALL_FLOPS
        )
        small, large = sorted((k * d, design.n_columns))
        return product, product + 6.0 * small * small * large + 3 * CALL_FLOPS

    def _project(self, rows):
        return rows - matmul(matmul(rows, self.row_space.T), self.row_space)

    def jvp(self, step):
        d_query = step.reshape(self.query_rows.shape)
        return self._project(self.design.applied(self.values, d_query)).ravel()

    def vjp(self, residual):
        projected = self._project(residual.reshape(self.design.targets.shape))
        return self.design.applied_adjoint(self.values, projected).ravel()

    def jacobian(self):
        """Kaufman's Jacobian as a linear operator (for LSMR)."""
        return scipy.sparse.linalg.LinearOperator(
            (self.residual.size, self.x.size), matvec=self.jvp, rmatvec=self.vjp,
            dtype=np.float64,
        )

    def normal_equations(self):
        """``(J^T J, J^T r)`` of Kaufman's Jacobian, without forming ``J``.

        ``J[(a, i), (h, x)] = sum_b V[a, h, b] E[x, b, i]`` projected by ``P``
        along ``i`` (``E = X(e_x)``, :meth:`LiftedDesign.basis`). Unprojected,
        ``J^T J`` is ``sum_{b, c} (V^T V)[(h, b), (g, c)] (E E^T)[(x, b), (y,
        c)]``, with ``E E^T`` the unfolded training metric (once per design);
        ``P = I - U^T U`` (``U`` an orthonormal basis of the features' row
        space) takes away the same sum over ``(E U^T)(E U^T)^T``, or, for few
        heads and outputs, ``N^T N`` with ``N[(a, j), (h, x)] = sum_b V[a, h, b]
        (E U^T)[x, b, j]``."""
        d, k = self.design.token_dim, len(self.query_rows)
        values = self.values.reshape(-1, k, d)  # (a, h, b)
        outer = np.einsum("ahb,agc->hgbc", values, values).reshape(k * k, d * d)
        moved = self.design.basis().reshape(d * d, d, -1) @ self.row_space.T
        metric = self.design.metric()
        if not self._few_heads:
            moved = moved.transpose(1, 0, 2).reshape(d**3, -1)  # rows (b, x)
            kept = matmul(moved, moved.T).reshape(d, d * d, d, d * d)
            kept = kept.transpose(0, 2, 1, 3)
            metric = metric - kept.reshape(d * d, d**4)
        normal = matmul(outer, metric).reshape(k, k, d * d, d * d)
        normal = normal.transpose(0, 2, 1, 3).reshape(k * d * d, k * d * d)
        if self._few_heads:
            # (a, h, x, j): np.tensordot's product, without its wrapper
            r, m = len(self.row_space), values.shape[0]  # r = 0: no rows of weight
            kept = matmul(
                values.reshape(m * k, d), moved.transpose(1, 0, 2).reshape(d, d * d * r)
            )
            kept = kept.reshape(m, k, d * d, r)
            kept = kept.transpose(0, 3, 1, 2).reshape(-1, k * d * d)
            normal -= matmul(kept.T, kept)
        return normal, self.vjp(self.residual)

    @property
    def _few_heads(self):
        """Whether ``N^T N`` costs less than the projected metric (module
        constant ``FEW_HEADS``)."""
        k, m = len(self.query_rows), self.values.shape[0]
        return k * k * m <= FEW_HEADS * self.design.token_dim ** 2

    def normal_flops(self, nominal=False):
        d, k = self.design.token_dim, len(self.query_rows)
        r, m = len(self.row_space), self.values.shape[0]
        columns = (cost_model(self.design) if nominal else self.design).n_columns
        # N^T N is charged 2 m k d^4 r, k times less than its flops; the work
        # limits' constants were measured so (benchmarks/README.md, "Measured,
        # not kept: the normal equations' work counted in full")
        projected = m * k * d**4 if self._few_heads else d**6
        return 2.0 * d**3 * r * columns + 2.0 * d**6 * k * k + 2.0 * projected * r

    def value_rows(self, values=None):
        """The values (or other ``(m, k d)`` values) as stacked rows (k, m * d)."""
        values = self.values if values is None else values
        k, d = len(self.query_rows), self.design.token_dim
        return values.reshape(-1, k, d).transpose(1, 0, 2).reshape(k, -1)


# What each constant does; the measurements that set them are in
# benchmarks/README.md, "Constants of the head read-out".
#
# Each Jacobian product (a few numpy calls) is charged CALL_FLOPS more than its
# flops, an evaluation of the reduced problem (a dozen) four times that: their
# fixed cost.
CALL_FLOPS = 2e5
# The head features X(Q) count as rank-deficient below FEATURE_RANK_FLOOR times
# their largest singular value (as well as below max(shape) eps of it): the
# computed zero of linearly dependent token coordinates is about 100 eps.
FEATURE_RANK_FLOOR = 1e-10
# A linearized refit by LSMR stops at a relative residual (and normal residual)
# LINEARIZED_TOL, or after LINEARIZED_ITER iterations.
LINEARIZED_TOL = 1e-6
LINEARIZED_ITER = 100
# The normal equations take N^T N away where k^2 m <= FEW_HEADS d^2, else they
# project the metric.
FEW_HEADS = 4
# Levenberg-Marquardt. Steps are solved from the normal equations where the design
# is structured (design.structured), else by LSMR with at most LSMR_ITER
# iterations, or to a relative residual (and normal residual) LSMR_TOL.
# The damping starts at INITIAL_DAMPING times the mean squared column norm of the
# Jacobian (normal equations) or the loss per parameter (LSMR), follows Nielsen's
# rule, and a fit stops when it exceeds MAX_DAMPING times that scale (no descent).
LSMR_ITER = 25
LSMR_TOL = 1e-10
INITIAL_DAMPING = 1e-3
MAX_DAMPING = 1e14
# A fit has stalled when STALL_STEPS steps taken lowered the loss (in excess of
# the problem's baseline) by less than the fraction STALL_DROP: a local minimum,
# or a plateau that other starts are there for.
STALL_STEPS = 5
STALL_DROP = 1e-2
# Steps at rounding level that end a polishing fit (levenberg_marquardt), and the
# loss change counted as rounding, in multiples of eps ||targets||^2.
FLAT_STEPS = 3
ROUNDING = 1e3


class Budget:
    """A work limit in flops, charged as work is done (``limit=None``: none).

    Each charge also counts its nominal flops: its flops, but where the heads
    are fitted on the rows' statistics because the rows are not in memory
    (``partial_fit``, Dask), what the same work costs on the design ``fit`` in
    memory would use (a design's ``cost``, :func:`cost_model`), so that both
    count their work alike; ``nominal_limit`` bounds those."""

    def __init__(self, limit=None):
        self.limit = np.inf if limit is None else float(limit)
        self.spent = self.nominal_spent = 0.0
        self.nominal_limit = np.inf
        self.refused = False  # work refused as beyond the limit before it ran

    def spend(self, flops, nominal=None):
        """Charge ``flops`` (``nominal`` of them: the same unless given); whether
        the limits still hold."""
        self.spent += float(flops)
        self.nominal_spent += float(flops if nominal is None else nominal)
        return not (
            self.spent > self.limit
            or self.nominal_spent > self.nominal_limit
            or self.refused
        )

    @property
    def over_limit(self):
        """Whether the work limit itself ran out (not the share of it the
        search gives the counts beyond the interpolating one, ``nominal_limit``:
        a fit that outruns that goes on, and can still pass)."""
        return self.spent > self.limit

    @property
    def exhausted(self):
        return (
            self.spent > self.limit
            or self.nominal_spent > self.nominal_limit
            or self.refused
        )


def cost_model(design):
    """What a design's work is counted as in nominal flops (:class:`Budget`): its
    ``cost`` (``feature_flops`` and ``n_columns`` of the design ``fit`` would
    use), or the design itself."""
    cost = getattr(design, "cost", None)
    return design if cost is None else cost


def _step(point, damping, normal):
    """The step ``min ||J s + r||^2 + damping ||s||^2`` from the normal equations
    ``(J^T J, J^T r)`` (None when the damped system is numerically singular), or
    by LSMR from Jacobian products; and its flops and nominal flops."""
    if normal is not None:
        matrix, gradient = normal
        flops = len(matrix) ** 3 / 3 + 4.0 * len(matrix) ** 2  # Cholesky, solves
        # matrix + damping I, in the Fortran order LAPACK reads (the wrapper
        # would copy a C-ordered one again)
        system = np.array(matrix, order="F")
        system.T.reshape(-1)[:: len(matrix) + 1] += damping
        # scipy.linalg.cho_factor and cho_solve, without their wrappers
        factor, info = _POTRF(system, lower=False, overwrite_a=True, clean=False)
        if info != 0:
            return None, flops, flops
        return _POTRS(factor, -gradient, lower=False)[0], flops, flops
    result = scipy.sparse.linalg.lsmr(
        point.jacobian(), -point.residual, damp=np.sqrt(damping), atol=LSMR_TOL,
        btol=LSMR_TOL, maxiter=LSMR_ITER,
    )
    products = 2 * result[2] + 2  # two Jacobian products an iteration, and more
    nominal = products * point.nominal_product_flops
    return result[0], products * point.product_flops, nominal


def _predicted_gain(step, normal):
    """``||r||^2 - ||r + J s||^2`` from the normal equations ``(J^T J, J^T r)``
    (inf where the step is None: not known)."""
    if step is None:
        return np.inf
    matrix, gradient = normal
    return -float(matmul(2 * step, gradient) + matmul(matmul(step, matrix), step))


def _gauss_newton_step(point, normal):
    """The Gauss-Newton step from the normal equations, damped at rounding level
    (the invariances, ``Q -> G Q``, are null directions of ``J^T J``, and
    ``J^T r`` has no component along them: the damping leaves them out); None
    when that system is numerically singular too."""
    matrix = normal[0]
    damping = len(matrix) * _EPS * max(np.max(np.diag(matrix)), 0.0)
    return _step(point, max(damping, _TINY), normal)[0]


def levenberg_marquardt(
    evaluate,
    x,
    max_iter,
    accept_below=-np.inf,
    baseline=0.0,
    budget=None,
    stall=(STALL_STEPS, STALL_DROP),
    rounding=0.0,
    structured=True,
    resolution=0.0,
    astray=None,
    target_norm=0.0,
    progress=None,
):
    """Minimize ``||r(x)||^2`` by Levenberg-Marquardt.

    ``evaluate(x)`` returns a point with ``x`` (normalized), ``residual``,
    ``loss``, ``flops``, and ``product_flops``, ``jvp`` and ``jacobian()`` or,
    with ``structured``, ``normal_equations()`` and ``normal_flops()``. Each
    step solves ``min ||J s + r||^2 + lambda ||s||^2`` and is taken when it
    lowers the loss; ``lambda`` follows Nielsen's rule. It stops after
    ``max_iter`` steps; at a loss at most ``accept_below``; when ``stall[0]``
    steps lowered the loss beyond ``baseline`` by less than a fraction
    ``stall[1]`` or less than ``resolution``; when no damping gives descent;
    (without ``rounding``, from the normal equations) when no step gains more
    than the loss's rounding (eps times the larger of the loss and
    ``target_norm`` times the residual's norm); when ``budget`` runs out; or at
    a point where ``astray(point)``. With ``rounding``, steps that gain no
    more than it are taken unless they raise the loss by more, and
    ``FLAT_STEPS`` of them end the fit. With ``progress`` (a
    :class:`Progress`) it resumes the fit that stopped there, if any, and
    records where it stops.

    Returns
    -------
    point
        The last point taken.
    n_steps : int
        Steps computed."""
    budget = Budget() if budget is None else budget
    if progress is not None and progress.state is not None:  # resumed
        point, damping, factor, normal, history, scale = progress.state
    else:
        point = evaluate(x)
        budget.spend(point.flops, point.nominal_flops)
        damping, factor, normal, scale = None, 2.0, None, None
        history = [point.loss - baseline]
    n_steps, flat_steps = 0, 0
    while (
        n_steps < max_iter
        and point.loss > max(accept_below, 0.0)
        and not budget.exhausted
    ):
        n_steps += 1
        if structured and normal is None:
            normal = point.normal_equations()
            budget.spend(point.normal_flops(), point.normal_flops(nominal=True))
        if damping is None:  # the scale of J^T J (module constants)
            scale = float(np.trace(normal[0])) if structured else point.loss
            scale = max(scale / len(point.x), _TINY)
            damping = INITIAL_DAMPING * scale
        step, flops, nominal = _step(point, damping, normal)
        budget.spend(flops, nominal)
        trial = None
        if step is not None:  # the gain the linear model predicts
            if normal is not None:
                predicted = _predicted_gain(step, normal)
            else:
                budget.spend(point.product_flops, point.nominal_product_flops)
                linear = point.residual + point.jvp(step)
                predicted = point.loss - float(matmul(linear, linear))
            # at a minimum: no step gains more than the loss's rounding (the
            # damping would otherwise grow through a dozen rejected steps)
            floor = _EPS * max(point.loss, target_norm * math.sqrt(point.loss))
            if (
                normal is not None
                and rounding == 0
                and predicted <= floor
                and budget.spend(len(point.x) ** 3 / 3)
                and _predicted_gain(_gauss_newton_step(point, normal), normal) <= floor
            ):
                break
            trial = evaluate(point.x + step.reshape(point.x.shape))
            budget.spend(trial.flops, trial.nominal_flops)
        if (
            trial is not None
            and rounding > 0
            and predicted <= rounding
            and trial.loss <= point.loss + rounding
        ):
            point, flat_steps = trial, flat_steps + 1
            damping, normal = damping / 3, None
            if flat_steps >= FLAT_STEPS:
                break
        elif trial is not None and trial.loss < point.loss:
            gain = (point.loss - trial.loss) / max(predicted, _TINY)
            point = trial
            damping *= max(1 / 3, 1 - (2 * min(gain, 1.0) - 1) ** 3)
            factor, normal = 2.0, None
            history.append(point.loss - baseline)
            if astray is not None and astray(point):
                break
            if len(history) > stall[0] and history[-1 - stall[0]] - history[-1] < max(
                stall[1] * history[-1 - stall[0]], resolution
            ):
                break
        else:
            damping *= factor
            factor *= 2
            if damping > MAX_DAMPING * scale:
                break
    if progress is not None:
        progress.state = (point, damping, factor, normal, history, scale)
    return point, n_steps


class Progress:
    """Where a :func:`levenberg_marquardt` fit stopped: its point, damping and
    loss history, from which a fit given the same ``progress`` goes on as
    the first would have (its ``x`` ignored)."""

    state = None


def _orthonormal_columns(matrix):
    """An orthonormal basis of the columns' span (one column: normalized, without
    a QR factorization's fixed cost)."""
    if matrix.shape[1] == 1:
        # scaled against overflow and underflow (np.linalg.norm's bits)
        scale = float(np.maximum.reduce(np.abs(matrix), axis=None))
        if 0 < scale < np.inf:
            column = matrix / scale
            flat = column.ravel()
            return column / math.sqrt(matmul(flat, flat))
    return orthonormal_factor(matrix)


def fit_heads(
    design,
    query_rows,
    max_iter,
    accept_below=-np.inf,
    budget=None,
    polish=False,
    resolution=0.0,
    max_norm=np.inf,
    progress=None,
):
    """The best heads with these many query matrices, from a start.

    Variable projection: for fixed ``Q`` the values are the least-squares
    solution (:class:`_Values`), and the reduced loss is minimized over ``Q``
    (kept orthonormal) by :func:`levenberg_marquardt`. With ``polish`` no stall
    rule applies (a minimum to rounding); else it has also stalled when
    ``STALL_STEPS`` steps lowered the loss by less than ``resolution``. It stops
    at heads whose lifted coefficients exceed ``max_norm``. With a
    :class:`Progress` of an earlier fit of these heads (``query_rows``: the
    ones it returned) it goes on from where that one stopped.

    Returns
    -------
    value_rows, query_rows : ndarray of shape (k, n_outputs * d) and (k, d * d)
    loss : float
    n_steps : int"""
    k = len(query_rows)

    def evaluate(flat):
        # orthonormal rows of the same span: the head features' row space, hence
        # the fit, is the same
        return _Values(design, _orthonormal_columns(flat.reshape(k, -1).T).T)

    start = np.asarray(query_rows, dtype=np.float64).ravel()
    # The reduced residual's rounding: eps times the targets' size, in each of
    # its entries.
    size = float(np.linalg.norm(design.targets))
    point, n_steps = levenberg_marquardt(
        evaluate, start, max_iter, accept_below, design.baseline, budget,
        stall=(1, 0.0) if polish else (STALL_STEPS, STALL_DROP),
        rounding=ROUNDING * _EPS * size**2 if polish else 0.0,
        structured=design.structured, resolution=resolution, target_norm=size,
        astray=None if max_norm == np.inf else functools.partial(_beyond, max_norm),
        progress=progress,
    )
    return point.value_rows(), point.query_rows, point.loss, n_steps


def _beyond(max_norm, point):
    """Whether a point's heads have lifted coefficients of norm above
    ``max_norm``. With orthonormal query rows ``||theta|| <= ||W||_F =
    ||V||_F`` (the fold averages ``W``'s two halves), so only values near the
    bound are unfolded."""
    if _frobenius_norm(point.values) <= 0.5 * max_norm:
        return False
    theta = head_coef(point.value_rows(), point.query_rows, point.design.token_dim)
    return bool(_frobenius_norm(theta) > max_norm)


def _frobenius_norm(array):
    """``np.linalg.norm(array)`` of a float64 array, by the same operations
    without its wrapper: the square root of the flattened array's dot product
    with itself."""
    flat = array.ravel(order="K")
    return math.sqrt(flat.dot(flat))


def _lstsq(matrix, rhs):
    """Minimum-norm least squares (``scipy.linalg.lstsq``, ``gelsd``); by
    ``gelss`` where ``gelsd``'s SVD does not converge."""
    return _with_fallback(scipy.linalg.lstsq, "gelss", matrix, rhs)[0]


def linearized_refit(design, query_rows, budget=None):
    """Heads refitted on ``design`` to first order: ``V' X(Q) + V X(dQ)`` fitted by
    least squares in ``(V', dQ)``, one undamped Gauss-Newton step of the reduced
    problem (from the normal equations, else by LSMR).

    Returns
    -------
    value_rows, query_rows : ndarray of shape (2 k, n_outputs * d) and (2 k, d * d)
        The linear model as ``2 k`` terms of heads: values ``[V'; V]``, queries
        ``[Q; dQ]``."""
    budget = Budget() if budget is None else budget
    query_rows = np.asarray(query_rows, dtype=np.float64)
    point = _Values(design, _orthonormal_columns(query_rows.T).T)
    budget.spend(point.flops, point.nominal_flops)
    if design.structured:
        normal, gradient = point.normal_equations()
        step = _gauss_newton_step(point, (normal, gradient))
        if step is None:
            step = -_lstsq(normal, gradient)
        budget.spend(
            point.normal_flops() + len(normal) ** 3 / 3,
            point.normal_flops(nominal=True) + len(normal) ** 3 / 3,
        )
    else:
        step, _, n_iter = scipy.sparse.linalg.lsmr(
            point.jacobian(), -point.residual, atol=LINEARIZED_TOL, btol=LINEARIZED_TOL,
            maxiter=min(point.x.size, LINEARIZED_ITER),
        )[:3]
        budget.spend(
            (2 * n_iter + 2) * point.product_flops,
            (2 * n_iter + 2) * point.nominal_product_flops,
        )
    step = step.reshape(point.query_rows.shape)
    moved = design.targets - design.applied(point.values, step)
    values = (moved @ point.row_space.T) @ point._inverse
    budget.spend(point.product_flops, point.nominal_product_flops)
    return (
        np.concatenate([point.value_rows(values), point.value_rows()]),
        np.concatenate([point.query_rows, step]),
    )


def completion_queries(lifted_coef, token_dim, n_heads, n_iter):
    """Query rows of a rank-``n_heads`` completion of the symmetric split:
    ``n_iter`` rounds of alternating projections between the rank-``k``
    matrices (one step of subspace iteration a round) and the ``W`` with the
    fitted symmetric part."""
    d, n_outputs = token_dim, lifted_coef.shape[0]
    split = folded = fold_lifted_coef(lifted_coef, d)
    basis = svd(folded)[0][:, :n_heads]
    for _ in range(n_iter):
        basis = _orthonormal_columns(matmul(folded, matmul(folded.T, basis)))
        low_rank = matmul(basis, matmul(basis.T, folded))
        # the split plus the low-rank W's part antisymmetric in (b, c): the W
        # nearest it with the fitted symmetric part (fold(unfold(W)) is W's
        # symmetric part)
        cube = low_rank.reshape(n_outputs, d, d, d)
        antisymmetric = cube - cube.transpose(0, 2, 1, 3)
        folded = split + 0.5 * antisymmetric.reshape(n_outputs * d, d * d)
    return svd(basis.T @ folded)[2][:n_heads]


class _Isotropy:
    """A point of the one-output search for the value subspace: ``N`` (d, j)
    orthonormal, residual ``N^T S_e N`` for every slice ``S_e``."""

    def __init__(self, slices, flat):
        self.basis = orthonormal_factor(flat.reshape(slices.shape[1], -1))
        self.x = self.basis.ravel()
        self.moved = slices @ self.basis  # S_e N
        self.residual = np.einsum("bj,ebk->ejk", self.basis, self.moved).ravel()
        self.loss = float(self.residual @ self.residual)
        d, j = self.basis.shape
        self.flops = self.nominal_flops = 2.0 * d**3 * j + 2.0 * d * d * j * j

    def normal_equations(self):
        """``(J^T J, J^T r)`` of ``J = d(N^T S_e N)[t, u] / dN[r, s] = [t = s]
        (S_e N)[r, u] + [u = s] (S_e N)[r, t]``."""
        d, j = self.basis.shape
        moved = self.moved.transpose(0, 2, 1)  # [e, u, r] = (S_e N)[r, u]
        jacobian = np.zeros((len(moved), j, j, d, j))
        for s in range(j):
            jacobian[:, s, :, :, s] += moved  # [t = s]
            jacobian[:, :, s, :, s] += moved  # [u = s]
        jacobian = jacobian.reshape(-1, d * j)
        return jacobian.T @ jacobian, jacobian.T @ self.residual

    def normal_flops(self, nominal=False):
        return 2.0 * self.residual.size * self.x.size * (self.x.size + 1)


def isotropic_queries(
    lifted_coef, token_dim, n_heads, n_starts, seed, tol, budget=None, basis=None
):
    """Query rows of one-output ``n_heads``-head models nearest in the Frobenius
    metric, one per start, nearest first.

    With one output, ``k`` heads compute exactly the coefficients whose slices
    ``S_e`` vanish on a common ``(d - k)``-dimensional subspace ``N``; for a
    given ``N`` the nearest such model is ``W_e = 2 P S_e - P S_e P``, ``P = I -
    N N^T``, at distance ``sum_e ||N^T S_e N||^2``, minimized over ``N`` from
    seeded random starts, stopping at the first within ``tol`` (relative).
    With ``basis`` ``(U, r)`` (an orthonormal ``d x d`` ``U``, the tokens' span
    its first ``r`` columns; None: the coordinates, ``r = d``) a start is ``r -
    k`` random directions of that span and the ``d - r`` others: the same
    starts in any order of the token coordinates.

    Returns
    -------
    list of (relative distance, query_rows)"""
    d, k = token_dim, n_heads
    slices = fold_lifted_coef(lifted_coef, d).reshape(d, d, d).transpose(2, 0, 1)
    norm = np.linalg.norm(lifted_coef)
    tokens, r = (np.eye(d), d) if basis is None else basis
    random_state = np.random.default_rng(seed)
    found = []
    for _ in range(n_starts):
        drawn = tokens[:, :r] @ random_state.normal(size=(r, r - k))
        start = np.concatenate([drawn, tokens[:, r:]], axis=1).ravel()
        point = levenberg_marquardt(
            functools.partial(_Isotropy, slices), start, ISOTROPIC_ITER,
            accept_below=(ACCURACY * tol * norm) ** 2, budget=budget,
        )[0]
        projector = np.eye(d) - point.basis @ point.basis.T
        kept = projector @ slices
        folded = (2 * kept - kept @ projector).transpose(1, 2, 0).reshape(d, d * d)
        # zero coefficients (a fold's refit where its training rows have no
        # weight) are their own nearest model: distance 0, not 0 / 0
        distance = np.sqrt(point.loss) / norm if norm else 0.0
        found.append((distance, svd(folded)[2][:k]))
        if distance <= tol:
            break
    found.sort(key=lambda pair: pair[0])
    return found


# Levenberg-Marquardt steps per isotropic start (the problem has d (d - k) unknowns).
ISOTROPIC_ITER = 100
# A fit that is to pass a relative tolerance tol runs on to ACCURACY * tol, so that
# rounding of later steps (a refit in another metric, the canonical form) keeps it
# within tol.
ACCURACY = 1e-2
