"""The k-head fitting engine and its designs against naive references: each
design's loss is the
training objective written out from the naive lifted features, Jacobian products
are the derivatives (central differences) and each other's adjoints, the
structured normal equations equal J^T J built column by column, and
Levenberg-Marquardt recovers an exact model."""

import warnings

import numpy as np
import pytest
import scipy.linalg
from conftest import n_lifted, naive_lifted_features, random_attention, random_sequences

from sklearn_linattn import _low_rank as low_rank
from sklearn_linattn._attention import (
    _fold,
    _unfold,
    fold_lifted_coef,
    unfold_lifted_coef,
)
from sklearn_linattn._designs import (
    LiftedDesign,
    PenalizedDesign,
    RowCost,
    SequenceDesign,
    design_loss,
)
from sklearn_linattn._folds import moments_of_pairs
from sklearn_linattn._lift import pair_statistics
from sklearn_linattn._low_rank import (
    Budget,
    _frobenius_norm,
    _orthonormal_columns,
    _step,
    _Values,
    completion_queries,
    fit_heads,
    head_coef,
    isotropic_queries,
    linearized_refit,
    orthonormal_factor,
    svd,
)


def random_heads(rng, k, m, d):
    return rng.normal(size=(k, m * d)), rng.normal(size=(k, d * d))


def naive_objective(X, y, weights, alpha, fit_intercept, theta):
    """Weighted least squares plus ridge of lifted coefficients ``theta``, the best
    intercept eliminated, from the naive features."""
    features = naive_lifted_features(X)
    if fit_intercept:
        features = features - weights @ features / weights.sum()
        y = y - weights @ y / weights.sum()
    residual = y - features @ theta.T
    return weights @ np.sum(residual**2, axis=1) + alpha * np.sum(theta**2)


def sequence_design(X, y, weights, alpha, fit_intercept):
    pairs, queries = pair_statistics(X)
    scale = np.sqrt(weights)
    moments = moments_of_pairs(pairs * scale[:, None], X.shape[2])
    return SequenceDesign(
        moments, queries, y * scale[:, None], scale, alpha, fit_intercept
    )


@pytest.mark.parametrize("alpha", [0.0, 0.3])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_sequence_design_loss_is_the_training_objective(rng, alpha, fit_intercept):
    d, m, k = 3, 2, 2
    X = random_sequences(rng, 40, 6, d)
    y = rng.normal(size=(40, m))
    weights = rng.uniform(0.5, 1.5, size=40)
    design = sequence_design(X, y, weights, alpha, fit_intercept)
    value_rows, query_rows = random_heads(rng, k, m, d)
    theta = head_coef(value_rows, query_rows, d)
    expected = naive_objective(X, y, weights, alpha, fit_intercept, theta)
    assert design_loss(design, value_rows, query_rows) == pytest.approx(
        expected, rel=1e-12
    )


@pytest.mark.parametrize("alpha", [0.0, 0.3])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize(("d", "n_rows"), [(3, 40), (4, 20)])
def test_sequence_design_toward_the_lifted_fit_measures_the_excess(
    rng, alpha, fit_intercept, d, n_rows
):
    """Toward the lifted fit (its own predictions as targets) a rows design's loss
    is the training objective's excess over the lifted fit's, written out from
    the naive features (with more rows than lifted features, and fewer: the
    minimum-norm fit at alpha=0); at the lifted fit's own heads it is zero to
    rounding, where the objective less the lifted fit's leaves eps of it."""
    m, k = 2, 2
    X = random_sequences(rng, n_rows, 6, d)
    y = rng.normal(size=(n_rows, m))
    weights = rng.uniform(0.5, 1.5, size=n_rows)
    features, targets = naive_lifted_features(X), y
    if fit_intercept:
        features = features - weights @ features / weights.sum()
        targets = y - weights @ y / weights.sum()
    scale = np.sqrt(weights)[:, None]
    stacked = np.vstack([scale * features, np.sqrt(alpha) * np.eye(n_lifted(d))])
    padded = np.vstack([scale * targets, np.zeros((n_lifted(d), m))])
    theta = scipy.linalg.lstsq(stacked, padded)[0].T
    design = sequence_design(X, y, weights, alpha, fit_intercept).toward(theta)
    assert design.baseline == 0.0
    value_rows, query_rows = random_heads(rng, k, m, d)
    theta_k = head_coef(value_rows, query_rows, d)
    expected = naive_objective(X, y, weights, alpha, fit_intercept, theta_k) - (
        naive_objective(X, y, weights, alpha, fit_intercept, theta)
    )
    assert design_loss(design, value_rows, query_rows) == pytest.approx(
        expected, rel=1e-9
    )
    folded = fold_lifted_coef(theta, d)  # the lifted fit as d^2 heads
    energy = float(np.vdot(design.targets, design.targets))
    assert design_loss(design, folded.T, np.eye(d * d)) <= 1e-20 * energy


@pytest.mark.parametrize("metric", ["frobenius", "gram"])
def test_lifted_design_loss_is_the_metric_distance(rng, metric):
    d, m, k = 3, 2, 2
    target = rng.normal(size=(m, n_lifted(d)))
    if metric == "gram":
        features = naive_lifted_features(random_sequences(rng, 60, 5, d))
        gram = features.T @ features + 0.1 * np.eye(n_lifted(d))
        design = LiftedDesign(target, d, np.linalg.cholesky(gram))
    else:
        gram = np.eye(n_lifted(d))
        design = LiftedDesign(target, d)
    value_rows, query_rows = random_heads(rng, k, m, d)
    gap = head_coef(value_rows, query_rows, d) - target
    expected = np.trace(gap @ gram @ gap.T)
    assert design_loss(design, value_rows, query_rows) == pytest.approx(
        expected, rel=1e-12
    )


@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("metric", ["gram", "frobenius"])
def test_lifted_design_metric_is_the_gram_of_its_basis(rng, d, metric):
    """The unfolded metric the normal equations read is the Gram of the head
    features X(e_x) of every query coordinate: rows (b, c), columns (x, y)."""
    factor = None
    if metric == "gram":
        features = naive_lifted_features(random_sequences(rng, 3 * n_lifted(d), 5, d))
        factor = np.linalg.cholesky(features.T @ features)
    design = LiftedDesign(rng.normal(size=(2, n_lifted(d))), d, factor)
    basis = np.stack(  # X(e_x)[b, :] for every query coordinate x
        [design.features(np.eye(d * d)[[x]]) for x in range(d * d)]
    )
    naive = np.einsum("xbi,yci->bcxy", basis, basis).reshape(d * d, d**4)
    np.testing.assert_allclose(
        design.metric(), naive, rtol=0, atol=1e-13 * np.abs(naive).max()
    )


def test_penalized_design_loss_adds_the_distance_to_the_lifted_fit(rng):
    d, m, k = 3, 2, 2
    X = random_sequences(rng, 40, 6, d)
    y = rng.normal(size=(40, m))
    design = sequence_design(X, y, np.ones(40), 0.0, False)
    lifted = rng.normal(size=(m, n_lifted(d)))
    penalized = PenalizedDesign(design, lifted, 0.3)
    value_rows, query_rows = random_heads(rng, k, m, d)
    gap = head_coef(value_rows, query_rows, d) - lifted
    expected = design_loss(design, value_rows, query_rows) + 0.3 * np.sum(gap**2)
    assert design_loss(penalized, value_rows, query_rows) == pytest.approx(
        expected, rel=1e-12
    )


def designs(rng, d, m):
    """One design of each form, with weights, ridge and an intercept; the last
    with the penalty on the distance to a lifted fit."""
    X = random_sequences(rng, 30, 5, d)
    y = rng.normal(size=(30, m))
    features = naive_lifted_features(X)
    gram = features.T @ features + 0.2 * np.eye(n_lifted(d))
    target = rng.normal(size=(m, n_lifted(d)))
    return [
        LiftedDesign(target, d),
        LiftedDesign(target, d, np.linalg.cholesky(gram)),
        sequence_design(X, y, rng.uniform(0.5, 2, 30), 0.2, True),
        sequence_design(X, y, np.ones(30), 0.0, False),
        PenalizedDesign(sequence_design(X, y, np.ones(30), 0.0, False), target, 0.3),
    ]


@pytest.mark.parametrize("form", range(5))
# both routes of a metric factor (m p against k d^3) and of the rows (m <= d)
@pytest.mark.parametrize("m, k", [(1, 2), (2, 2), (2, 1), (4, 2)])
def test_products_with_values_equal_those_with_the_features_formed(rng, form, m, k):
    """``applied`` and ``applied_adjoint`` (Jacobian products that form the
    features only where that is cheaper) equal ``values @ X(Q)`` and
    ``features_adjoint(values.T @ R)`` with ``X(Q)`` formed."""
    d = 3
    design = designs(rng, d, m)[form]
    values = rng.normal(size=(m, k * d))
    query_rows = rng.normal(size=(k, d * d))
    residual = rng.normal(size=(m, design.n_columns))
    formed = values @ design.features(query_rows)
    np.testing.assert_allclose(
        design.applied(values, query_rows), formed,
        rtol=1e-12, atol=1e-12 * np.abs(formed).max(),
    )
    gradient = design.features_adjoint(values.T @ residual)
    np.testing.assert_allclose(
        design.applied_adjoint(values, residual), gradient,
        rtol=1e-12, atol=1e-12 * np.abs(gradient).max(),
    )


@pytest.mark.parametrize("form", range(5))
@pytest.mark.parametrize("few_heads", [0, 100])  # either projection of the metric
def test_reduced_jacobian_products_are_derivatives_and_adjoints(
    rng, monkeypatch, form, few_heads
):
    """Kaufman's Jacobian is the derivative of the reduced residual along the
    directions that keep the values fixed; its products are adjoint, and the
    structured normal equations equal J^T J and J^T r from its columns."""
    monkeypatch.setattr(low_rank, "FEW_HEADS", few_heads)
    d, m, k = 3, 2, 2
    design = designs(rng, d, m)[form]
    query_rows = rng.normal(size=(k, d * d))
    point = _Values(design, query_rows)
    direction = rng.normal(size=query_rows.size)
    # d/dt of V X(Q + t dQ) - T at fixed V, projected: central differences
    values = point.values
    step = 1e-6

    def residual(q):
        return values @ design.features(q) - design.targets

    change = (
        residual(query_rows + step * direction.reshape(k, -1))
        - residual(query_rows - step * direction.reshape(k, -1))
    ) / (2 * step)
    projected = change - (change @ point.row_space.T) @ point.row_space
    np.testing.assert_allclose(point.jvp(direction), projected.ravel(), atol=1e-7)
    other = rng.normal(size=point.residual.size)
    assert point.jvp(direction) @ other == pytest.approx(
        direction @ point.vjp(other), rel=1e-10
    )
    jacobian = np.stack([point.jvp(e) for e in np.eye(query_rows.size)], axis=1)
    normal, gradient = point.normal_equations()
    np.testing.assert_allclose(normal, jacobian.T @ jacobian, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gradient, jacobian.T @ point.residual, atol=1e-9)


@pytest.mark.parametrize("form", range(5))
def test_linearized_refit_is_least_squares_on_the_tangent(rng, form):
    """The linearized refit is the least-squares fit of the model linearized at
    the queries and their best values, ``A X(Q) + V X(B)`` over ``(A, B)``:
    the same lifted coefficients as lstsq on that linear map built column by
    column (unique: every design here has full rank in the coefficients)."""
    d, m, k = 3, 2, 2
    design = designs(rng, d, m)[form]
    query_rows = rng.normal(size=(k, d * d))
    features = design.features(query_rows)
    values = design.targets @ np.linalg.pinv(features)  # best values, (m, k d)
    value_rows = values.reshape(m, k, d).transpose(1, 0, 2).reshape(k, m * d)
    n_a, n_b = k * m * d, k * d * d

    def terms(unknowns):  # (A, B) as 2 k terms of heads: [A; V] and [Q; B]
        a, b = unknowns[:n_a].reshape(k, m * d), unknowns[n_a:].reshape(k, d * d)
        return np.concatenate([a, value_rows]), np.concatenate([query_rows, b])

    def predicted(unknowns):
        term_values, term_queries = terms(unknowns)
        rows = term_values.reshape(2 * k, m, d).transpose(1, 0, 2).reshape(m, -1)
        return (rows @ design.features(term_queries)).ravel()

    columns = np.stack([predicted(e) for e in np.eye(n_a + n_b)], axis=1)
    solution = np.linalg.lstsq(columns, design.targets.ravel(), rcond=None)[0]
    expected = head_coef(*terms(solution), d)
    got = head_coef(*linearized_refit(design, query_rows), d)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10 * scale)


@pytest.mark.parametrize("d, k, m", [(4, 2, 2), (6, 3, 2), (4, 3, 3)])
def test_the_completion_of_the_split_finds_the_query_span_of_exact_heads(d, k, m):
    """With several outputs, k heads' query span is determined by their lifted
    coefficients; alternating projections from the symmetric split approach it
    (the split's own truncation is far from it)."""
    truth = random_attention(np.random.default_rng(10 * d + k + m), d, k, n_outputs=m)
    generating = np.linalg.qr(truth.query_matrices.reshape(k, d * d).T)[0]

    def gap(n_iter):  # 1 - cosine of the largest principal angle
        found = completion_queries(truth.lifted_coef(), d, k, n_iter)
        cosines = np.linalg.svd(np.linalg.qr(found.T)[0].T @ generating)[1]
        return 1 - cosines.min()

    assert gap(0) > 0.1
    assert gap(300) < 1e-10


def test_best_values_minimize_the_loss_for_fixed_queries(rng):
    d, m, k = 3, 3, 2
    design = designs(rng, d, m)[1]
    query_rows = rng.normal(size=(k, d * d))
    point = _Values(design, query_rows)
    best = design_loss(design, point.value_rows(), query_rows)
    assert best == pytest.approx(point.loss, rel=1e-10)
    for _ in range(10):
        other = point.value_rows() + 1e-3 * rng.normal(size=(k, m * d))
        assert design_loss(design, other, query_rows) > best


@pytest.mark.parametrize("d, k, m", [(3, 2, 2), (4, 3, 1), (4, 2, 3)])
def test_levenberg_marquardt_recovers_an_exact_model(rng, d, k, m):
    truth = random_attention(rng, d, k, n_outputs=m)
    target = truth.lifted_coef()
    design = LiftedDesign(target, d)
    fitted = min(
        (fit_heads(design, rng.normal(size=(k, d * d)), 200) for _ in range(4)),
        key=lambda fit: fit[2],
    )
    value_rows, query_rows, loss, _ = fitted
    gap = head_coef(value_rows, query_rows, d) - target
    assert np.linalg.norm(gap) <= 1e-10 * np.linalg.norm(target)


def test_fewer_heads_stay_clearly_away(rng):
    """A model with one head fewer than the generating count cannot reproduce it:
    every start ends orders of magnitude above rounding."""
    d, k, m = 4, 3, 2
    target = random_attention(rng, d, k, n_outputs=m).lifted_coef()
    design = LiftedDesign(target, d)
    for _ in range(4):
        loss = fit_heads(design, rng.normal(size=(k - 1, d * d)), 200)[2]
        assert np.sqrt(loss) > 1e-3 * np.linalg.norm(target)


@pytest.mark.parametrize("d", [5, 6])
def test_isotropic_subspaces_give_d_minus_one_heads_of_one_output(rng, d):
    target = random_attention(rng, d, d - 1).lifted_coef()
    found = isotropic_queries(target, d, d - 1, 40, [0], 1e-8)
    distance, query_rows = found[0]
    assert distance <= 1e-8
    design = LiftedDesign(target, d)
    point = _Values(design, query_rows)
    assert np.sqrt(point.loss) <= 1e-8 * np.linalg.norm(target)


def test_a_budget_stops_the_fit(rng):
    d = 4
    target = random_attention(rng, d, 3).lifted_coef()
    design = LiftedDesign(target, d)
    budget = Budget(1.0)
    *_, n_steps = fit_heads(design, rng.normal(size=(3, d * d)), 100, budget=budget)
    assert budget.exhausted and n_steps <= 1
    unlimited = Budget()
    fit_heads(design, rng.normal(size=(3, d * d)), 5, budget=unlimited)
    assert 0 < unlimited.spent < np.inf and not unlimited.exhausted


@pytest.mark.parametrize("n_rows", [12, 60])
def test_nominal_work_on_the_gram_is_the_work_on_the_rows(rng, n_rows):
    """The same fit on the training rows (fit) and on a factor of their Gram
    (partial_fit: the same training metric) costs different flops; counted as
    on the rows (RowCost, where fit fits the heads on them), the Gram's
    nominal flops are the rows' flops, which bound the work beyond the
    interpolating count (fewer rows than the 36 lifted features, and more);
    ``nominal_limit`` stops a fit as ``limit`` does."""
    d, m, k, alpha = 4, 2, 2, 0.1
    X = random_sequences(rng, n_rows, 5, d)
    y = rng.normal(size=(n_rows, m))
    features = naive_lifted_features(X)
    gram = features.T @ features + alpha * np.eye(n_lifted(d))
    theta = scipy.linalg.solve(gram, features.T @ y).T
    rows = sequence_design(X, y, np.ones(n_rows), alpha, False).toward(theta)
    statistics = LiftedDesign(
        theta, d, np.linalg.cholesky(gram), cost=RowCost(n_rows, d, alpha)
    )
    start = rng.normal(size=(k, d * d))
    budgets = [Budget(), Budget()]
    losses = [
        fit_heads(design, start, 4, budget=budget)[2]
        for design, budget in zip((rows, statistics), budgets, strict=True)
    ]
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)
    assert budgets[0].spent != budgets[1].spent
    assert budgets[0].nominal_spent == budgets[0].spent
    assert budgets[1].nominal_spent == pytest.approx(budgets[0].spent, rel=1e-12)
    capped = Budget()
    capped.nominal_limit = 1.0
    *_, n_steps = fit_heads(statistics, start, 100, budget=capped)
    assert capped.exhausted and n_steps <= 1 and capped.spent < budgets[1].spent


def test_a_fit_stalls_when_its_steps_gain_less_than_the_resolution(rng):
    """One head of d = 6 has more parameters (42) than the 40 rows: the fit
    creeps toward interpolation, and with a resolution it stops once 5 steps
    gain less than that, in fewer steps and below the resolution."""
    d = 6
    X = random_sequences(rng, 40, 5, d)
    design = sequence_design(X, rng.normal(size=(40, 1)), np.ones(40), 0.0, False)
    start = rng.normal(size=(1, d * d))
    resolution = 1e-6 * float(np.vdot(design.targets, design.targets))
    *_, full_steps = fit_heads(design, start, 100)
    *_, loss, steps = fit_heads(design, start, 100, resolution=resolution)
    assert steps < full_steps and loss <= resolution


def test_a_fit_started_at_its_minimum_stops_at_once(rng, monkeypatch):
    """At a minimum of a noisy fit no step gains more than the loss's rounding:
    a fit restarted there computes one step, evaluates none and returns the
    same heads (the damping used to grow through a dozen rejected steps)."""
    d, k = 3, 1
    X = random_sequences(rng, 300, 6, d)
    y = rng.normal(size=(300, 2))
    design = sequence_design(X, y, np.ones(300), 0.0, False)
    query_rows = rng.normal(size=(k, d * d))
    evaluations = []
    original = low_rank._Values

    def counted(*args):
        evaluations.append(1)
        return original(*args)

    monkeypatch.setattr(low_rank, "_Values", counted)
    for _ in range(20):  # the stall rule ends a fit near the minimum; restarts
        evaluations.clear()  # end at it
        previous = query_rows
        value_rows, query_rows, loss, n_steps = fit_heads(design, previous, 100)
    assert n_steps == 1 and len(evaluations) == 1
    np.testing.assert_array_equal(query_rows, previous)


def test_a_fit_near_its_targets_stops_at_its_minimum():
    """Against lifted coefficients in a Gram metric the loss of heads near them
    is far below the targets' energy, and its rounding is the targets': a fit
    restarted at its minimum stops at once (eps times the loss alone took 11
    rejected steps at every restart of this fit: 10% noise on one head's
    coefficients)."""
    rng = np.random.default_rng(2)
    d, k = 3, 1
    features = naive_lifted_features(random_sequences(rng, 300, 6, d))
    coef = random_attention(rng, d, k).lifted_coef()
    noise = 0.1 * np.linalg.norm(coef) / np.sqrt(coef.size)
    target = coef + noise * rng.normal(size=coef.shape)
    design = LiftedDesign(target, d, np.linalg.cholesky(features.T @ features))
    query_rows = rng.normal(size=(k, d * d))
    for _ in range(20):  # restarts end at the minimum
        previous = query_rows
        _, query_rows, loss, n_steps = fit_heads(design, previous, 100)
    assert n_steps == 1
    np.testing.assert_array_equal(query_rows, previous)
    assert loss < 1e-2 * float(np.vdot(design.targets, design.targets))


def test_a_fit_stops_at_the_first_step_beyond_its_norm_bound(rng):
    """``max_norm`` ends a fit at the first step taken to heads whose lifted
    coefficients exceed it (heads drifting along a singular metric's null
    space are polished with a penalty instead): the same steps as the unbounded
    fit up to there, then no more."""
    d, k = 3, 1
    X = random_sequences(rng, 300, 6, d)
    y = rng.normal(size=(300, 1))
    design = sequence_design(X, y, np.ones(300), 0.0, False)
    start = rng.normal(size=(k, d * d))
    free = fit_heads(design, start, 100)
    assert free[3] > 2
    norms = [
        np.linalg.norm(head_coef(*fit_heads(design, start, n)[:2], d))
        for n in range(1, free[3] + 1)
    ]
    bound = 0.5 * (norms[0] + norms[1]) if norms[1] > norms[0] else norms[0] / 2
    value_rows, query_rows, _, n_steps = fit_heads(design, start, 100, max_norm=bound)
    first_beyond = next(n for n, norm in enumerate(norms, 1) if norm > bound)
    assert n_steps == first_beyond
    np.testing.assert_array_equal(
        query_rows, fit_heads(design, start, first_beyond)[1]
    )


@pytest.mark.parametrize("shape", [(3, 18), (18, 3), (1, 1), (0, 4), (50, 7)])
def test_svd_is_scipys(rng, shape):
    """The engine's SVD calls LAPACK's gesdd directly: scipy.linalg.svd's bits,
    its error on NaN, and float32 and empty matrices as scipy takes them."""
    matrix = rng.normal(size=shape)
    expected = scipy.linalg.svd(matrix, full_matrices=False)
    for ours, theirs in zip(svd(matrix), expected, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(
        svd(matrix.astype(np.float32))[1],
        scipy.linalg.svd(matrix.astype(np.float32), full_matrices=False)[1],
    )
    if matrix.size:
        matrix[0, 0] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            svd(matrix)


@pytest.mark.parametrize(
    "shape", [(9, 1), (9, 2), (3, 2), (4, 4), (2, 5), (300, 140), (0, 3), (3, 0)]
)
@pytest.mark.parametrize("order", ["C", "F"])
def test_orthonormal_factor_is_numpys_qr(rng, shape, order):
    """The engine's QR calls LAPACK's geqrf and orgqr directly (scipy's build of
    the routines numpy calls): np.linalg.qr's Q to rounding (the same bits where
    numpy and scipy link the same LAPACK, as measured in benchmarks/README.md;
    here a bound of 100 eps, as two builds may differ in the last digits), its
    memory order (C), blocked (140 columns) or not, NaN where it has NaN, and
    the input left as it was."""
    matrix = np.asarray(rng.normal(size=shape), order=order)
    if matrix.size:
        matrix[-1, 0] = np.nan if shape == (4, 4) else matrix[-1, 0]
    given = matrix.copy()
    ours, theirs = orthonormal_factor(matrix), np.linalg.qr(matrix)[0]
    assert ours.shape == theirs.shape
    eps = np.finfo(float).eps
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=100 * eps)
    assert ours.flags.c_contiguous == theirs.flags.c_contiguous
    np.testing.assert_array_equal(matrix, given)
    np.testing.assert_array_equal(
        orthonormal_factor(matrix.astype(np.float32)),
        np.linalg.qr(matrix.astype(np.float32))[0],
    )


@pytest.mark.parametrize("damping", [1e-3, 0.0])
def test_a_damped_step_is_scipys_cholesky_solve(rng, damping):
    """A Levenberg-Marquardt step from the normal equations: the bits of
    scipy.linalg.cho_factor and cho_solve of ``J^T J + damping I``, the normal
    equations left as they were; None where that is singular."""
    jacobian = rng.normal(size=(20, 6))
    matrix, gradient = jacobian.T @ jacobian, jacobian.T @ rng.normal(size=20)
    given = matrix.copy()
    step = _step(None, damping, (matrix, gradient))[0]
    factor = scipy.linalg.cho_factor(matrix + damping * np.eye(6))
    np.testing.assert_array_equal(step, scipy.linalg.cho_solve(factor, -gradient))
    np.testing.assert_array_equal(matrix, given)
    singular = -damping * np.eye(6)  # J^T J + damping I = 0
    assert _step(None, damping, (singular, gradient))[0] is None


def test_unchecked_fold_and_norm_are_the_public_ones(rng):
    """The read-out's fold, unfold and norm without their wrappers' checks give
    the public functions' bits."""
    d, m = 4, 3
    lifted = rng.normal(size=(m, n_lifted(d)))
    folded = rng.normal(size=(m * d, d * d))
    np.testing.assert_array_equal(_fold(lifted, d), fold_lifted_coef(lifted, d))
    np.testing.assert_array_equal(_unfold(folded, d), unfold_lifted_coef(folded, d))
    for array in (folded, folded.T, lifted[0]):
        assert _frobenius_norm(array) == np.linalg.norm(array)


def test_large_token_dimensions_take_lsmr_steps(rng):
    d = 11  # the unfolded metric would have d^6 > 2^20 entries
    target = random_attention(rng, d, 1).lifted_coef()
    design = LiftedDesign(target, d)
    assert not design.structured
    value_rows, query_rows, loss, _ = fit_heads(design, rng.normal(size=(1, d * d)), 50)
    gap = head_coef(value_rows, query_rows, d) - target
    assert np.linalg.norm(gap) <= 1e-6 * np.linalg.norm(target)


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1.0, 1e154, 1e300])
@pytest.mark.parametrize("n_columns", [1, 2])
def test_orthonormal_columns_span_the_columns_at_every_scale(scale, n_columns):
    rng = np.random.default_rng(n_columns)
    matrix = rng.normal(size=(6, n_columns))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        basis = _orthonormal_columns(matrix * scale)
    np.testing.assert_allclose(basis.T @ basis, np.eye(n_columns), atol=1e-14)
    # the same span: the columns are their projection on the basis
    np.testing.assert_allclose(basis @ (basis.T @ matrix), matrix, atol=1e-13)


def test_svd_falls_back_to_gesvd_where_gesdd_does_not_converge(rng, monkeypatch):
    """gesdd's failure (info > 0, direct or by scipy: LinAlgError) gives gesvd's
    SVD, as scipy.linalg.svd(lapack_driver="gesvd") computes it."""
    matrix = rng.normal(size=(5, 12))
    expected = scipy.linalg.svd(matrix, full_matrices=False, lapack_driver="gesvd")
    scipy_svd = scipy.linalg.svd

    def gesdd_fails(*args, lapack_driver="gesdd", **kwargs):
        if lapack_driver == "gesdd":
            raise np.linalg.LinAlgError("SVD did not converge")
        return scipy_svd(*args, lapack_driver=lapack_driver, **kwargs)

    monkeypatch.setattr(low_rank, "_GESDD", lambda *args, **kwargs: (None,) * 3 + (1,))
    monkeypatch.setattr(scipy.linalg, "svd", gesdd_fails)
    for ours, theirs in zip(svd(matrix), expected, strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("structured", [True, False])
def test_a_fit_resumed_goes_on_as_one_fit(rng, structured):
    """A fit stopped after 4 steps and resumed from its Progress takes the
    steps one fit of 4 + 6 steps takes: the same heads, loss and steps, to the
    bit (the damping and the stall rule's history carry over)."""
    d, k = 4, 2
    X = random_sequences(rng, 60, 5, d)
    design = sequence_design(X, rng.normal(size=(60, 2)), np.ones(60), 0.0, False)
    design.structured = structured
    start = rng.normal(size=(k, d * d))
    whole = fit_heads(design, start, 10)
    progress = low_rank.Progress()
    first = fit_heads(design, start, 4, progress=progress)
    resumed = fit_heads(design, first[1], 6, progress=progress)
    assert first[3] == 4 and first[3] + resumed[3] == whole[3]
    np.testing.assert_array_equal(resumed[0], whole[0])
    np.testing.assert_array_equal(resumed[1], whole[1])
    assert resumed[2] == whole[2]
    restarted = fit_heads(design, first[1], 6)
    assert restarted[2] != whole[2]  # a restart is another fit
