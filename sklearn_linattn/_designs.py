"""The training objective of a ``k``-head fit, as a *design* for the engine of
:mod:`sklearn_linattn._low_rank`: head features ``X(Q)`` (linear in the query
matrices, one row per head ``h`` and value coordinate ``b``), their adjoint, and
targets ``T``, so that the objective is ``||V X(Q) - T||^2``.

- :class:`LiftedDesign`: the columns are those of a factor ``F`` of the training
  metric (``M = F F^T``, the weighted lifted Gram plus ``alpha I``), and ``T`` is
  the lifted fit times ``F``: the loss is the training objective less the lifted
  fit's. ``F = None`` is the Frobenius distance to the lifted coefficients.
- :class:`SequenceDesign`: the columns are the training rows themselves (weighted,
  centered with an intercept) and the ridge penalty's coordinates; ``T`` the
  targets, or (:meth:`SequenceDesign.toward`, as the read-out uses it) the lifted
  fit's own, so that the loss is again the training objective less the lifted
  fit's. Cheaper when there are fewer rows than lifted features.

Each design also gives the products with given values, ``V X(Q)`` and its
adjoint's (``applied``, ``applied_adjoint``: a Jacobian product's, without forming
``X(Q)`` where that is cheaper), ``X(e_x)`` for every query coordinate and the
training metric unfolded (:meth:`LiftedDesign.metric`), from which the engine
forms its normal equations.
"""

import copy
import functools

import numpy as np
import scipy.sparse

from ._attention import _fold, _fold_indices, _unfold, fold_lifted_coef
from ._lift import lifted_matvec
from ._low_rank import matmul

__all__ = [
    "LiftedDesign",
    "PenalizedDesign",
    "RowCost",
    "SequenceDesign",
    "design_loss",
    "predict_rows",
    "query_features",
    "rows_are_cheaper",
]


@functools.lru_cache(maxsize=16)
def _query_map(token_dim):
    """The sparse matrix of :func:`query_features`, from ``vec(Q_h)`` (``d * d``)
    to the head's rows ``(b, lifted feature)`` (``d * p``): two entries a
    feature."""
    d = token_dim
    first, _, scales = _fold_indices(d)
    gain = 0.5 / scales
    b, c, e = first // (d * d), (first // d) % d, first % d
    p = first.size
    columns = np.arange(p)
    rows = np.concatenate([b * p + columns, c * p + columns])
    sources = np.concatenate([c * d + e, b * d + e])
    return scipy.sparse.csr_matrix(
        (np.concatenate([gain, gain]), (rows, sources)), shape=(d * p, d * d)
    )


def query_features(query_rows, token_dim):
    """``B(Q)`` of shape (k, d, p): row ``(h, b)`` holds the lifted coefficients of
    the head with value ``e_b`` (one output) and query ``Q_h``, ``unfold(e_b
    vec(Q_h)^T)``. Linear in ``Q``."""
    k = query_rows.shape[0]
    features = _query_map(token_dim) @ query_rows.reshape(k, -1).T  # (d p, k)
    return np.ascontiguousarray(features.T).reshape(k, token_dim, -1)


@functools.lru_cache(maxsize=16)
def _query_map_adjoint(token_dim):
    """The transpose of :func:`_query_map`, built once (a read-out at d = 12 makes
    thousands of adjoint products, and building the transpose cost a sixth of
    each)."""
    return _query_map(token_dim).T


def query_features_adjoint(weights, token_dim):
    """The adjoint of :func:`query_features`: ``weights`` (k, d, p) to (k, d * d)."""
    k = weights.shape[0]
    return (_query_map_adjoint(token_dim) @ weights.reshape(k, -1).T).T


def _stacked(values, token_dim):
    """Values ``(m, k d)`` as the rows ``(output, b)`` of ``W = V^T Q``: (m d, k)."""
    m, d = values.shape[0], token_dim
    return values.reshape(m, -1, d).transpose(0, 2, 1).reshape(m * d, -1)


def heads_lifted(values, query_rows, token_dim):
    """``values @ B(Q)`` (:func:`query_features`), shape (m, p): the lifted
    coefficients of heads with values ``(m, k d)``, ``unfold(V^T Q)``, without
    forming ``B(Q)`` (``k d`` times larger)."""
    folded = matmul(_stacked(values, token_dim), query_rows)  # V^T Q
    return _unfold(folded, token_dim)


def heads_lifted_adjoint(values, weights, token_dim):
    """The gradient in ``Q`` of ``<weights, heads_lifted(values, Q)>``, shape (k,
    d * d): the unfold's adjoint is the fold."""
    return _stacked(values, token_dim).T @ _fold(weights, token_dim)


def _queried(queries, query_rows):
    """``Q_h q_i`` for every row and head: shape (n_rows, k * d)."""
    d = queries.shape[1]
    return matmul(queries, query_rows.reshape(len(query_rows) * d, d).T)


def _contract(moments, queries, query_rows):
    """``S_i Q_h q_i`` for every row and head: shape (n_rows, k, d)."""
    k, d = query_rows.shape[0], queries.shape[1]
    mixed = _queried(queries, query_rows)
    return np.matmul(mixed.reshape(-1, k, d), moments)  # (S symmetric)


def predict_rows(moments, queries, value_rows, query_rows):
    """``sum_h V_h S_i Q_h q_i`` for every row (weights as in ``moments``)."""
    k, d = query_rows.shape[0], queries.shape[1]
    values = value_rows.reshape(k, -1, d).transpose(0, 2, 1).reshape(k * d, -1)
    contracted = _contract(moments, queries, query_rows)
    return contracted.reshape(len(queries), k * d) @ values


# The lifted design keeps X(e_x) for every query coordinate x (d^3 times the
# factor's rank floats) when that is at most this many: X(Q) is then one product.
# The rows' design keeps S_i V for a point's Jacobian products (n m k d floats)
# under the same cap (128 MB).
BASIS_FLOATS = 2**24


class LiftedDesign:
    """Heads against lifted coefficients in the metric ``M = F F^T``.

    Parameters
    ----------
    target : ndarray of shape (n_outputs, n_lifted)
        The lifted fit.
    token_dim : int
    factor : ndarray of shape (n_lifted, rank), optional
        ``F``; None for the identity (Frobenius distance).
    cost : RowCost, optional
        What its work counts as in nominal flops
        (:class:`~sklearn_linattn._low_rank.Budget`): a design on the
        statistics of rows that are not in memory (``partial_fit``, Dask),
        where ``fit`` in memory would fit the heads on the rows; None: its own.
    """

    def __init__(self, target, token_dim, factor=None, cost=None):
        target = np.asarray(target, dtype=np.float64)
        self.token_dim = d = int(token_dim)
        self.factor = factor
        self.n_outputs, self.n_lifted = target.shape
        self.targets = target if factor is None else target @ factor
        self.n_columns = self.targets.shape[1]
        self.baseline = 0.0  # the loss of the lifted fit itself
        self.structured = d**6 <= METRIC_FLOATS  # steps from normal equations
        self.cost = cost
        self._basis = None
        if factor is not None and d**3 * self.n_columns <= BASIS_FLOATS:
            # X(e_x)[b] = unfold(e_b e_x^T) F: the fold of F^T, per coordinate x.
            folded = fold_lifted_coef(factor.T, d).reshape(-1, d, d * d)
            self._basis = np.ascontiguousarray(folded.transpose(2, 1, 0))

    def feature_flops(self, n_heads):
        d, k = self.token_dim, n_heads
        if self._basis is not None:
            return 2 * k * d**3 * self.n_columns
        return (
            2 * k * d * self.n_lifted * (1 if self.factor is None else self.n_columns)
        )

    def features(self, query_rows):
        """``X(Q)`` of shape (k d, n_columns)."""
        k, d = query_rows.shape[0], self.token_dim
        if self._basis is not None:
            return matmul(query_rows, self._basis.reshape(d * d, -1)).reshape(k * d, -1)
        lifted = query_features(query_rows, d).reshape(k * d, -1)
        return lifted if self.factor is None else lifted @ self.factor

    def features_adjoint(self, weights):
        """The gradient in ``Q`` of ``<weights, X(Q)>``, shape (k, d * d)."""
        d = self.token_dim
        k = weights.shape[0] // d
        if self._basis is not None:
            return matmul(weights.reshape(k, -1), self._basis.reshape(d * d, -1).T)
        if self.factor is not None:
            weights = weights @ self.factor.T
        return query_features_adjoint(weights.reshape(k, d, -1), d)

    def applied(self, values, query_rows):
        """``values @ X(Q)`` (m, n_columns): a Jacobian product's
        (:mod:`~sklearn_linattn._low_rank`), the features formed only where
        that is cheaper (:meth:`_values_first`)."""
        if not self._values_first(len(query_rows)):
            return matmul(values, self.features(query_rows))
        lifted = heads_lifted(values, query_rows, self.token_dim)
        return lifted if self.factor is None else matmul(lifted, self.factor)

    def applied_adjoint(self, values, residual):
        """``features_adjoint(values.T @ residual)``, the features formed only
        where that is cheaper (:meth:`_values_first`)."""
        if not self._values_first(values.shape[1] // self.token_dim):
            return self.features_adjoint(values.T @ residual)
        if self.factor is not None:
            residual = residual @ self.factor.T
        return heads_lifted_adjoint(values, residual, self.token_dim)

    def _values_first(self, n_heads):
        """Whether a product contracts the values first, ``2 m p r`` flops for a
        factor of ``r`` columns, rather than going through the cached basis,
        ``2 k d^3 r`` (with one head and 3 to 10 outputs the basis was 1.2 to 3
        times faster, benchmarks/README.md)."""
        if self.factor is None or self._basis is None:
            return True
        return self.n_outputs * self.n_lifted <= n_heads * self.token_dim**3

    def basis(self):
        """``X(e_x)`` for every query coordinate: shape (d * d, d, n_columns)."""
        if self._basis is None and self.factor is None:
            self._basis = _frobenius_basis(self.token_dim)
        elif self._basis is None:
            d = self.token_dim
            self._basis = self.features(np.eye(d * d)).reshape(d * d, d, -1)
        return self._basis

    def metric(self):
        """``E E^T`` for the basis ``E`` (:meth:`basis`): the training metric
        unfolded, ``(E E^T)[(x, b), (y, c)]`` stored with rows ``(b, c)`` and
        columns ``(x, y)``, shape (d^2, d^4)."""
        if self.factor is None:
            return _frobenius_metric(self.token_dim)
        return _metric(self)

    def direction_norms(self):
        """``||X(e_x)[b]||^2``, the training metric's diagonal, as an array of
        shape (d, d * d) (rows ``b``, columns ``x``); None for the Frobenius
        distance, which no data define."""
        if self.factor is None:
            return None
        norms = np.sqrt(np.einsum("fr,fr->f", self.factor, self.factor))
        return fold_lifted_coef(norms[None, :], self.token_dim) ** 2


class SequenceDesign:
    """Heads against the training rows themselves.

    The loss is ``||Pi (predictions - targets)||^2 + alpha ||theta||^2``, row ``i``
    weighted by ``c_i^2``, ``predictions[i] = c_i sum_h V_h S_i Q_h q_i`` (``S_i``
    the row's second moment, ``q_i`` its query), ``targets[i] = c_i y_i``; ``Pi``
    projects out the row scales ``c`` when an intercept is fitted (the best
    intercept, eliminated).

    Parameters
    ----------
    moments : ndarray of shape (n_rows, d, d)
        ``c_i S_i``.
    queries : ndarray of shape (n_rows, d)
    targets : ndarray of shape (n_rows, n_outputs)
        ``c_i y_i``.
    row_scale : ndarray of shape (n_rows,)
        ``c``.
    alpha : float
    fit_intercept : bool
    """

    def __init__(self, moments, queries, targets, row_scale, alpha, fit_intercept):
        self.moments, self.queries = moments, queries
        self.n_rows, d, _ = moments.shape
        self.token_dim = d
        self.n_outputs = targets.shape[1]
        self.n_lifted = d * d * (d + 1) // 2
        self.alpha = float(alpha)
        total = float(row_scale @ row_scale)
        self._center = row_scale / np.sqrt(total) if fit_intercept and total else None
        projected = self._project(np.asarray(targets, dtype=np.float64))
        ridge = np.zeros((self.n_outputs, self.n_lifted if self.alpha else 0))
        self.targets = np.concatenate([projected.T, ridge], axis=1)
        self.n_columns = self.targets.shape[1]
        self.baseline = 0.0  # set to the lifted fit's loss where known
        self.structured = d**6 <= METRIC_FLOATS  # steps from normal equations
        self.cost = None  # its work is its own
        self._basis = None
        self._moved = None  # (values, S_i V) of the last values (_moved_values)

    def feature_flops(self, n_heads):
        return RowCost(self.n_rows, self.token_dim, self.alpha).feature_flops(n_heads)

    def toward(self, coef):
        """This design with the lifted fit ``coef`` (n_outputs, n_lifted) as its
        targets: its predictions of the rows and, with ``alpha``, ``sqrt(alpha)
        coef``. Where ``coef`` minimizes the objective, the loss of heads is
        then their objective's excess over it, ``||Pi A (theta_k - theta)||^2 +
        alpha ||theta_k - theta||^2`` (baseline 0), as in a factor of the
        training metric (:class:`LiftedDesign`), not a difference of two sums of
        squares, whose rounding resolves heads near ``coef`` only to about
        ``sqrt(eps)`` of it. The basis and metric are this design's."""
        coef = np.asarray(coef, dtype=np.float64)
        toward = copy.copy(self)
        # the rows' compact pairs (moments_of_pairs undone), for lifted_matvec
        rows, cols = np.triu_indices(self.token_dim)
        pairs = self.moments[:, rows, cols] * np.where(rows == cols, 1.0, np.sqrt(2.0))
        predictions = self._project(lifted_matvec(pairs, self.queries, coef))
        ridge = np.sqrt(self.alpha) * coef if self.alpha else coef[:, :0]
        toward.targets = np.concatenate([predictions.T, ridge], axis=1)
        toward.baseline = 0.0
        return toward

    def _project(self, rows):
        """``Pi`` along the first axis."""
        if self._center is None:
            return rows
        return rows - np.multiply.outer(
            self._center, np.tensordot(self._center, rows, 1)
        )

    def features(self, query_rows):
        k, d = query_rows.shape[0], self.token_dim
        rows = _contract(self.moments, self.queries, query_rows)
        rows = self._project(rows.reshape(self.n_rows, k * d)).T
        if not self.alpha:
            return rows
        ridge = np.sqrt(self.alpha) * query_features(query_rows, d)
        return np.concatenate([rows, ridge.reshape(k * d, -1)], axis=1)

    def features_adjoint(self, weights):
        d, n = self.token_dim, self.n_rows
        k = weights.shape[0] // d
        gradient = self._rows_adjoint(self._project(weights[:, :n].T))
        if self.alpha:
            ridge = weights[:, n:].reshape(k, d, -1)
            gradient += np.sqrt(self.alpha) * query_features_adjoint(ridge, d)
        return gradient

    def _rows_adjoint(self, rows):
        """The rows' part of :meth:`features_adjoint`, its weights' rows
        projected: ``Pi weights[:, :n]^T``, shape (n, k d)."""
        d, n = self.token_dim, self.n_rows
        k = rows.shape[1] // d
        mixed = np.matmul(rows.reshape(n, k, d), self.moments)  # S_i w_ih
        # sum_i (S_i w_ih) q_i^T
        return matmul(mixed.reshape(n, k * d).T, self.queries).reshape(k, d * d)

    def _moved_values(self, values):
        """``S_i V_oh`` for every row, output and head, shape (n, m, k d), or None
        where the values are more than ``d`` outputs (the products then cost
        more than with ``S_i`` applied to the heads' queries) or that is more
        than ``BASIS_FLOATS`` floats: computed once for the values of a point,
        whose Jacobian products all share them (``values`` is never changed in
        place)."""
        n, d = self.n_rows, self.token_dim
        m = values.shape[0]
        if m > d or n * values.size > BASIS_FLOATS:
            return None
        if self._moved is None or self._moved[0] is not values:
            moved = matmul(self.moments.reshape(n * d, d), values.reshape(-1, d).T)
            moved = moved.reshape(n, d, -1).transpose(0, 2, 1).reshape(n, m, -1)
            self._moved = values, moved
        return self._moved[1]

    def applied(self, values, query_rows):
        """``values @ X(Q)`` (m, n_columns), the features never formed (a Jacobian
        product's: at d = 12 with a ridge, ``X(Q)`` has ``k d (n + p)`` entries)."""
        k, d, n = query_rows.shape[0], self.token_dim, self.n_rows
        moved = self._moved_values(values)
        if moved is None:
            contracted = _contract(self.moments, self.queries, query_rows)
            rows = matmul(contracted.reshape(n, k * d), values.T)
        else:  # sum_h <S_i V_oh, Q_h q_i> (S_i symmetric)
            mixed = _queried(self.queries, query_rows)
            rows = np.matmul(moved, mixed[:, :, None])[:, :, 0]
        rows = self._project(rows).T
        if not self.alpha:
            return rows
        ridge = np.sqrt(self.alpha) * heads_lifted(values, query_rows, d)
        return np.concatenate([rows, ridge], axis=1)

    def applied_adjoint(self, values, residual):
        """``features_adjoint(values.T @ residual)``, the features never formed."""
        d, n = self.token_dim, self.n_rows
        # (Pi commutes with the values: the residual's rows projected, not (k d, n))
        projected = self._project(residual[:, :n].T)
        moved = self._moved_values(values)
        if moved is None:
            gradient = self._rows_adjoint(projected @ values)
        else:  # sum_i (sum_o r_oi S_i V_oh) q_i^T
            weighted = np.matmul(projected[:, None, :], moved)[:, 0, :]
            k = weighted.shape[1] // d
            gradient = matmul(weighted.T, self.queries).reshape(k, d * d)
        if self.alpha:
            gradient += np.sqrt(self.alpha) * heads_lifted_adjoint(
                values, residual[:, n:], self.token_dim
            )
        return gradient

    def basis(self):
        if self._basis is not None:
            return self._basis
        d = self.token_dim
        rows = np.einsum("ibc,ie->ceib", self.moments, self.queries)
        rows = self._project(rows.reshape(d * d, self.n_rows, d).transpose(1, 0, 2))
        rows = rows.transpose(1, 2, 0)  # (x, b, i)
        if self.alpha:
            ridge = np.sqrt(self.alpha) * query_features(np.eye(d * d), d)
            rows = np.concatenate([rows, ridge], axis=2)
        self._basis = rows
        return rows

    def metric(self):
        return _metric(self)

    def direction_norms(self):
        """``||X(e_x)[b]||^2`` (:meth:`LiftedDesign.direction_norms`) without
        forming the basis: ``sum_i (Pi s)_i^2`` for ``s_i = S_i[b, c] q_i[e]``
        (``x = (c, e)``), plus ``alpha`` times the squared norm of the
        direction's lifted coefficients."""
        d = self.token_dim
        norms = np.einsum("ibc,ie->bce", self.moments**2, self.queries**2)
        if self._center is not None:
            centered = np.einsum(
                "i,ibc,ie->bce", self._center, self.moments, self.queries
            )
            norms = np.maximum(norms - centered**2, 0.0)
        norms = norms.reshape(d, d * d)
        if self.alpha:  # the Frobenius part: a factor of unit rows
            ridge = fold_lifted_coef(np.ones((1, self.n_lifted)), d) ** 2
            norms = norms + self.alpha * ridge
        return norms


class PenalizedDesign:
    """A design's objective plus ``weight ||theta_k - theta||^2``, the Frobenius
    distance of the heads' lifted coefficients to the lifted fit ``theta``: its
    columns followed by those of :class:`LiftedDesign` ``(theta, d)`` scaled by
    ``sqrt(weight)``. Where the design's metric is singular, this bounds the
    heads along its null space (where the minimum-norm ``theta`` is zero)."""

    def __init__(self, design, coef, weight):
        self.design, self.weight = design, float(weight)
        self.distance = LiftedDesign(coef, design.token_dim)
        self.token_dim, self.n_outputs = design.token_dim, design.n_outputs
        self._scale = np.sqrt(self.weight)
        self.targets = np.concatenate(
            [design.targets, self._scale * self.distance.targets], axis=1
        )
        self.n_columns = self.targets.shape[1]
        self.baseline = design.baseline  # theta adds nothing to the penalty
        self.structured = design.structured
        self.cost = None
        if design.cost is not None:
            self.cost = _SummedCost(design.cost, self.distance)
        self._basis = self._metric = None

    def feature_flops(self, n_heads):
        return self.design.feature_flops(n_heads) + self.distance.feature_flops(
            n_heads
        )

    def features(self, query_rows):
        return np.concatenate(
            [
                self.design.features(query_rows),
                self._scale * self.distance.features(query_rows),
            ],
            axis=1,
        )

    def features_adjoint(self, weights):
        split = self.design.n_columns
        return self.design.features_adjoint(
            weights[:, :split]
        ) + self._scale * self.distance.features_adjoint(weights[:, split:])

    def applied(self, values, query_rows):
        return np.concatenate(
            [
                self.design.applied(values, query_rows),
                self._scale * self.distance.applied(values, query_rows),
            ],
            axis=1,
        )

    def applied_adjoint(self, values, residual):
        split = self.design.n_columns
        return self.design.applied_adjoint(
            values, residual[:, :split]
        ) + self._scale * self.distance.applied_adjoint(values, residual[:, split:])

    def basis(self):
        if self._basis is None:
            self._basis = np.concatenate(
                [self.design.basis(), self._scale * self.distance.basis()], axis=2
            )
        return self._basis

    def metric(self):
        if self._metric is None:
            self._metric = self.design.metric() + self.weight * self.distance.metric()
        return self._metric


def design_loss(design, value_rows, query_rows):
    """``design``'s loss at given heads (not the best values for their queries)."""
    k, m = query_rows.shape[0], design.n_outputs
    values = value_rows.reshape(k, m, -1).transpose(1, 0, 2).reshape(m, -1)
    residual = values @ design.features(query_rows) - design.targets
    return float(np.vdot(residual, residual))


def _metric(design):
    """:meth:`LiftedDesign.metric` of a design (cached on it)."""
    if getattr(design, "_metric", None) is None:
        design._metric = _unfolded_metric(design.basis())
    return design._metric


def _unfolded_metric(basis):
    """``E E^T`` of a basis ``E`` (d * d, d, n_columns), with rows ``(b, c)``
    and columns ``(x, y)``: the layout the normal equations read."""
    d = basis.shape[1]
    flat = basis.reshape(d**3, -1)
    metric = (flat @ flat.T).reshape(d * d, d, d * d, d)
    return np.ascontiguousarray(metric.transpose(1, 3, 0, 2).reshape(d * d, d**4))


# The Frobenius designs' basis and metric depend on d alone: shared by every such
# design (the exact fits' metric, every drift penalty), read-only.
@functools.lru_cache(maxsize=8)
def _frobenius_basis(token_dim):
    d = token_dim
    basis = query_features(np.eye(d * d), d).reshape(d * d, d, -1)
    basis.flags.writeable = False
    return basis


@functools.lru_cache(maxsize=8)
def _frobenius_metric(token_dim):
    metric = _unfolded_metric(_frobenius_basis(token_dim))
    metric.flags.writeable = False
    return metric


# The structured normal equations of the engine keep the unfolded metric, a
# d^2 x d^4 matrix: for d <= 10 (8 MB); LSMR steps above. Up to d = 12 (2**22)
# three noisy CV regressions of d = 11 and 12 took the same time (2.8 to 4.2 s
# against 2.4 to 4.4 s) for 1.6 to 2.4 times the work, one then cut short
# (benchmarks/README.md, twenty-third pass).
METRIC_FLOATS = 2**20


class RowCost:
    """The work of a :class:`SequenceDesign` on ``n_rows`` rows (its
    ``feature_flops`` and ``n_columns``), counted for a design fitted on the
    rows' statistics where ``fit`` would fit the heads on the rows themselves
    (the ``cost`` of :class:`LiftedDesign`; nominal flops,
    :class:`~sklearn_linattn._low_rank.Budget`)."""

    def __init__(self, n_rows, token_dim, alpha):
        self.n_rows, self.token_dim, self.alpha = int(n_rows), int(token_dim), alpha
        self.n_lifted = token_dim * token_dim * (token_dim + 1) // 2
        self.n_columns = self.n_rows + (self.n_lifted if alpha else 0)

    def feature_flops(self, n_heads):
        n, d = self.n_rows, self.token_dim
        ridge = 4 * n_heads * d * self.n_lifted if self.alpha else 0  # (k, d, p)
        return 4 * n * n_heads * d * d + ridge


class _SummedCost:
    """The work of designs side by side (:class:`PenalizedDesign`)."""

    def __init__(self, *costs):
        self.costs = costs
        self.n_columns = sum(cost.n_columns for cost in costs)

    def feature_flops(self, n_heads):
        return sum(cost.feature_flops(n_heads) for cost in self.costs)


def rows_are_cheaper(n_rows, rank, token_dim, alpha=0.0):
    """Whether a :class:`SequenceDesign` on ``n_rows`` rows costs less per step than
    the :class:`LiftedDesign` of a metric factor of ``rank`` columns: with
    structured steps the normal equations cost in proportion to the columns
    (the rows, plus the ridge's ``p`` with ``alpha``), with LSMR steps a Jacobian
    product costs ``4 n k d^2 (+ 4 k p)`` on rows against ``2 k d^3 rank``."""
    d = token_dim
    ridge = d * d * (d + 1) // 2 if alpha else 0
    if d**6 <= METRIC_FLOATS:
        return n_rows + ridge < rank
    return 4 * n_rows * d * d + 4 * ridge < 2 * d**3 * rank
