"""Head read-outs: the count (within tol, or by the held-out criterion), fixed
counts, the paper's SVD read-out, what ``head_search_`` reports, the
held-out folds against explicit refits, and the read-out as a function of the
data (no clock, the same heads from every entry point).

References are built here from the definitions: naive lifted features, explicit
least-squares refits of each fold, held-out errors written out.
"""

import dataclasses
import pickle
import sys
import time
import warnings

import numpy as np
import pytest
from conftest import (
    classes_with_positions_and_a_constant,
    few_sequences_three_classes,
    fifteen_diabetes_sequences,
    hidden_head_outputs,
    n_lifted,
    naive_fold_layout,
    naive_lifted_features,
    naive_relative_distance,
    noiseless_far_from_zero,
    one_head_problem,
    random_attention,
    random_sequences,
    relative_error,
    seventeen_sequences_three_labels,
)
from numpy.testing import assert_allclose, assert_array_equal
from scipy.linalg import LinAlgWarning
from sklearn.base import clone
from sklearn.datasets import (
    load_diabetes,
    load_digits,
    load_iris,
    load_linnerud,
    load_wine,
    make_classification,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_linattn import (
    LiftedAttentionFeatures,
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
    MultiHeadLinearAttention,
    certify,
)
from sklearn_linattn._data import lifted_data
from sklearn_linattn._designs import LiftedDesign, SequenceDesign, design_loss
from sklearn_linattn._folds import _misclassified
from sklearn_linattn._heads import (
    DRIFT,
    HeadReadout,
    _Search,
    paper_heads,
    read_out_heads,
    token_exponents,
)
from sklearn_linattn._low_rank import Budget, fit_heads, head_coef
from sklearn_linattn._solvers import SOLVERS
from sklearn_linattn.datasets import make_automaton_lookups, make_random_mhla
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
)


def relative_distance(model, truth):
    return model.distance(truth) / np.linalg.norm(truth.lifted_coef())


def noisy_sequences(
    seed, token_dim, n_heads, n_outputs, noise, n_samples=None, input_dependent=False
):
    """A random MHLA, Gaussian sequences (3p of them by default), and targets with
    noise relative to each target's spread (growing with the query's norm squared,
    as a layer's error on in-context prompts does, with ``input_dependent``)."""
    rng = np.random.default_rng(seed)
    truth = random_attention(rng, token_dim, n_heads, n_outputs)
    X = random_sequences(rng, n_samples or 3 * n_lifted(token_dim), 16, token_dim)
    y = truth.predict(X)
    scale = np.ones(len(X))
    if input_dependent:
        scale = np.linalg.norm(X[:, -1], axis=1) ** 2
        scale = scale / scale.mean()
    noise = noise * y.std(axis=0) * scale[:, None] * rng.normal(size=y.shape)
    return truth, X, y + noise


def near_interpolation_two_outputs():
    """20 sequences of d = 3 (p = 18) and two outputs of a 3-head model plus
    noise of 30% of each output's spread: near interpolation, where counts are
    failed by generalized cross-validation."""
    seed = 170651018
    X, y, _ = make_random_mhla(220, 4, 3, n_heads=3, n_outputs=2, random_state=seed)
    y = np.asarray(y, float)
    y = y + 0.3 * y.std(axis=0) * np.random.default_rng(seed).normal(size=y.shape)
    return X[:20], y[:20]


def training_objective(model, X, y, alpha=0.0):
    residual = np.reshape(y, (len(X), -1)) - np.reshape(model.predict(X), (len(X), -1))
    return float(np.sum(residual**2) + alpha * np.sum(np.asarray(model.coef_) ** 2))


# --- exact data: the fewest heads within tol ------------------------------------------


@pytest.mark.parametrize(
    "token_dim, n_heads, n_outputs",
    [
        (3, 1, 1),
        (3, 2, 2),
        (3, 3, 2),
        (4, 2, 1),
        (4, 3, 3),
        (4, 4, 2),
        (5, 3, 2),
        (5, 5, 2),
        (6, 3, 1),
        (6, 4, 2),
    ],
)
def test_noiseless_fits_recover_the_generating_count(token_dim, n_heads, n_outputs):
    """The fewest heads on exact data, with one head fewer failing (the cases the
    previous search over-counted: d=3 H=2 and d=3 H=3 with 2 outputs, d=4 H=3 with
    3, d=4 H=4 and d=5 H=5 with 2)."""
    rng = np.random.default_rng(10 * token_dim + n_heads + 100 * n_outputs)
    truth = random_attention(rng, token_dim, n_heads, n_outputs)
    X = rng.normal(size=(2 * n_lifted(token_dim) + 50, 8, token_dim))
    y = truth.predict(X)
    model = LinearAttentionRegressor().fit(X, y)
    search = model.head_search_
    assert model.n_heads_ == n_heads
    assert search.criterion == "tol" and search.passes and search.complete
    assert relative_distance(model.attention_, truth) < 1e-8
    if n_heads > 1:  # the count below fails, with the fit n_heads=k runs
        fewer = LinearAttentionRegressor(n_heads=n_heads - 1).fit(X, y).head_search_
        assert not fewer.passes and fewer.relative_distance > 1e-4


@pytest.mark.parametrize("seed", [3, 5])
def test_a_coordinate_in_other_units_leaves_the_count_n_heads_k_reproduces(seed):
    """A token coordinate in units about 30 times larger (its values times 0.03,
    within the scales the estimators accept without a warning) spreads the
    lifted coefficients over 3e4, and the Frobenius metric's fit of the
    generating count stopped 3e-5 to 9e-5 from the lifted fit, beyond tol: the
    default returned 4 and 5 heads of 3-head data with 2 outputs where
    n_heads=3, refitted in the training metric, reproduces it to 1e-15. The
    search refits its counts as n_heads=k does (those within 1e-2): the
    generating count, as n_heads=k fits it, and one head fewer failing."""
    X, y, _ = make_random_mhla(130, 8, 4, n_heads=3, n_outputs=2, random_state=seed)
    X = X * np.array([0.03, 1.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no warning about the coordinates' scales)
        model = LinearAttentionRegressor().fit(X, y)
        asked = LinearAttentionRegressor(n_heads=3).fit(X, y)
    assert model.n_heads_ == 3 and model.head_search_.criterion == "tol"
    assert asked.head_search_.passes
    assert_allclose(model.predict(X), asked.predict(X), rtol=1e-9, atol=0)
    fewer = {count.n_heads: count for count in model.head_search_.counts}[2]
    assert not fewer.passes and fewer.relative_distance > 1e-4


@pytest.mark.parametrize("seed", [5, 8])
def test_exact_counts_are_fitted_in_coordinates_of_comparable_sizes(seed):
    """With a token coordinate 30 times smaller than the others, the Frobenius
    metric of the data's units weighs the coefficients that involve it up to
    3e4 times more, and the fits of the generating 3 heads stopped at local
    minima: the default returned 5 heads, and n_heads=3 failed. Fitted with
    the coordinates rescaled by powers of two to comparable sizes, both find
    the generating count, from the rows (fit) and from their statistics
    (partial_fit) alike; 2 heads still fail."""
    X, y, _ = make_random_mhla(60, 10, 4, n_heads=3, n_outputs=2, random_state=seed)
    X = X * np.array([0.03, 1.0, 1.0, 1.0])
    model = LinearAttentionRegressor().fit(X, y)
    asked = LinearAttentionRegressor(n_heads=3).fit(X, y)
    batches = LinearAttentionRegressor()
    for rows in np.array_split(np.arange(len(X)), 3):
        batches.partial_fit(X[rows], y[rows])
    assert model.n_heads_ == 3 and model.head_search_.criterion == "tol"
    assert batches.n_heads_ == 3 and batches.head_search_.criterion == "tol"
    assert asked.head_search_.passes
    assert_allclose(model.predict(X), y, rtol=0, atol=1e-9 * np.abs(y).max())
    fewer = LinearAttentionRegressor(n_heads=2).fit(X, y).head_search_
    assert not fewer.passes and fewer.relative_distance > 1e-4


@pytest.mark.parametrize("scale", [0.25, 0.01])
def test_exact_counts_in_other_units_pass_to_rounding(scale):
    """With tol=0 (rounding only, 3.6e-15) a count passes only at rounding in
    the data's units: the heads fitted in comparable units, at rounding there,
    were 6e-15 to 2e-12 away in the data's units, and the default returned 5 to
    8 heads of 2-head data (helper-95). Refined in the data's units they pass,
    as the data's own units' fits did."""
    X, y, _ = make_random_mhla(150, 10, 4, n_heads=2, n_outputs=2, random_state=3)
    X = X * np.array([scale, 1.0, 1.0, 1.0])
    model = LinearAttentionRegressor(tol=0.0).fit(X, y)
    asked = LinearAttentionRegressor(tol=0.0, n_heads=2).fit(X, y).head_search_
    assert model.n_heads_ == 2 and model.head_search_.criterion == "tol"
    assert asked.passes and asked.relative_distance <= asked.tol


@pytest.mark.parametrize("seed, factor", [(4, 16.0), (5, 1 / 32)])
def test_exact_counts_do_not_depend_on_a_coordinates_units(seed, factor):
    """A token coordinate multiplied by a power of two changes only the units of
    the model: the same counts are fitted, the same count returned and the same
    predictions made (to 1e-8, the lifted solve's rounding); fitted in the
    data's units 4 and 5 heads came back of 3-head data."""
    X, y, _ = make_random_mhla(80, 8, 4, n_heads=3, n_outputs=2, random_state=seed)
    given = LinearAttentionRegressor().fit(X, y)
    Z = X * np.array([factor, 1.0, 1.0, 1.0])
    other = LinearAttentionRegressor().fit(Z, y)
    assert given.n_heads_ == other.n_heads_ == 3
    assert given.head_search_.counts_tried == other.head_search_.counts_tried
    assert_allclose(
        other.predict(Z), given.predict(X), rtol=0, atol=1e-8 * np.abs(y).max()
    )


def test_token_exponents_follow_a_coordinates_units():
    """The powers of two of :func:`token_exponents` follow a coordinate's units
    (divided by 32: exponent -5, the others 0), the same from the rows and
    from their statistics (the design fit and partial_fit use), and none
    where the coordinates are of one size."""
    X, y, _ = make_random_mhla(200, 8, 4, n_heads=2, random_state=0)
    y = y.reshape(-1, 1)
    for scale, expected in ((1.0, None), (1 / 32, [-5, 0, 0, 0])):
        Z = X * np.array([scale, 1.0, 1.0, 1.0])
        moments = np.einsum("ntb,ntc->nbc", Z, Z)
        rows = SequenceDesign(moments, Z[:, -1], y, np.ones(len(Z)), 0.0, False)
        factor = naive_lifted_features(Z).T  # the Gram's factor
        statistics = LiftedDesign(np.zeros((1, n_lifted(4))), 4, factor)
        for design in (rows, statistics):
            exponents = token_exponents(design)
            if expected is None:
                assert exponents is None
            else:
                assert_array_equal(exponents, expected)


def test_a_generic_function_needs_the_papers_count():
    rng = np.random.default_rng(4)
    coef = rng.normal(size=(1, n_lifted(4)))
    readout = read_out_heads(coef, 4, "auto", 1e-8, design=LiftedDesign(coef, 4))
    assert readout.n_heads == 4 and readout.criterion == "lifted"
    assert readout.relative_distance < 1e-12
    assert all(not count.passes for count in readout.counts)


def test_tolerance_trades_heads_for_fidelity():
    rng = np.random.default_rng(5)
    strong = random_attention(rng, 4, 2).lifted_coef()
    weak = 1e-4 * random_attention(rng, 4, 1).lifted_coef()
    coef = strong + weak
    strict = read_out_heads(coef, 4, "auto", 1e-8, design=LiftedDesign(coef, 4))
    loose = read_out_heads(coef, 4, "auto", 1e-3, design=LiftedDesign(coef, 4))
    assert strict.n_heads == 3 and loose.n_heads == 2
    assert loose.relative_distance <= 1e-3


def test_zero_function_has_no_heads():
    coef = np.zeros((2, n_lifted(3)))
    readout = read_out_heads(coef, 3, "auto", 1e-8, design=LiftedDesign(coef, 3))
    assert readout.n_heads == 0 and readout.value_matrices.shape == (0, 2, 3)


# --- noisy data: the held-out criterion -----------------------------------------------


@pytest.mark.parametrize("token_dim", [4, 5])
@pytest.mark.parametrize("n_heads", [1, 2])
@pytest.mark.parametrize("noise", [0.01, 0.1])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_noisy_fits_return_the_generating_count(token_dim, n_heads, noise, n_outputs):
    seed = 100 * token_dim + 10 * n_heads + n_outputs + int(noise * 100)
    truth, X, y = noisy_sequences(seed, token_dim, n_heads, n_outputs, noise)
    model = LinearAttentionRegressor().fit(X, y)
    search = model.head_search_
    assert model.n_heads_ == n_heads
    assert search.criterion == "cv" and search.passes and search.complete


SIZE_MISS = pytest.mark.xfail(
    strict=True,
    reason="2 heads' cross-validated error is 3.3% below the lifted fit's, where "
    "the folds' size asks 3.75% (8 of 40 degrees of freedom fewer): the lifted "
    "fit's heads come back",
)


@pytest.mark.parametrize(
    "token_dim, n_heads, n_outputs",
    [
        (token_dim, n_heads, n_outputs)
        if (token_dim, n_heads, n_outputs) != (4, 2, 1)
        else pytest.param(4, 2, 1, marks=SIZE_MISS)
        for token_dim, n_heads in [(4, 1), (4, 2), (5, 2), (6, 3)]
        for n_outputs in [1, 3]
    ],
)
def test_input_dependent_noise_gives_the_generating_count(
    token_dim, n_heads, n_outputs
):
    seed = 20 * token_dim + n_heads + n_outputs
    truth, X, y = noisy_sequences(
        seed, token_dim, n_heads, n_outputs, 0.1, input_dependent=True
    )
    assert LinearAttentionRegressor().fit(X, y).n_heads_ == n_heads


@pytest.mark.parametrize("n_outputs, fit_intercept", [(1, False), (2, True)])
def test_a_counts_threshold_corrects_for_the_folds_size(n_outputs, fit_intercept):
    """A count's threshold is the lifted fit's cross-validated error times
    rho(D) / rho(D_k), rho(D) = (1 - D / E_f) / (1 - D / E): E equations (rows
    times outputs), E_f = 4/5 of them on each fold's fit, D the lifted fit's
    degrees of freedom (p per output, full rank, alpha = 0, plus the intercept)
    and D_k the k-head models' dimension (theory page), capped at D; the
    outputs counted as their effective number."""
    d, n_samples = 4, 150
    _, X, y = noisy_sequences(7, d, 2, n_outputs, 0.1, n_samples=n_samples)
    model = LinearAttentionRegressor(fit_intercept=fit_intercept).fit(X, y)
    search = model.head_search_
    p, m = n_lifted(d), search.effective_outputs
    assert 0.9 * n_outputs < m <= n_outputs  # independent noise
    equations, trained = n_samples * m, 0.8 * n_samples * m
    lifted_dof = (p + fit_intercept) * m

    def rho(dof):
        return (1 - dof / trained) / (1 - dof / equations)

    judged = [count for count in search.counts if np.isfinite(count.threshold)]
    assert judged
    for count in judged:
        k = count.n_heads
        if m == 1:
            dimension = p - d * (d - k) * (d - k + 1) // 2 + k * (d - k)
        else:
            dimension = min(k * (m * d + d * d) - k * k, m * p)
        head_dof = min(dimension + m * fit_intercept, lifted_dof)
        expected = search.cv_error * rho(lifted_dof) / rho(head_dof)
        assert count.threshold == pytest.approx(expected, rel=1e-12)
        assert (count.threshold < search.cv_error) == (head_dof < lifted_dof)


def head_dimension(k, n_outputs, token_rank, query_rank):
    """The k-head models' dimension on tokens of rank r and queries of rank q
    (theory page): k (m r + r q) - k^2 (at most m p, p = q r (r + 1) / 2), with
    one output p - q (r - k) (r - k + 1) / 2 + k (r - k)."""
    r, q, m = token_rank, query_rank, n_outputs
    p = q * r * (r + 1) // 2
    if m == 1:
        return p - q * (r - k) * (r - k + 1) // 2 + k * (r - k) if k < r else p
    return min(k * (m * r + r * q) - k * k, m * p)


def sequences_in_subspaces(rng, n_samples, kind):
    """Tokens of d = 4 in a 3-dimensional span ("tokens": the last feature is
    the sum of the first two), or queries in one ("queries": the query's third
    feature is 0)."""
    X = random_sequences(rng, n_samples, 6, 4)
    if kind == "tokens":
        X[..., 3] = X[..., 0] + X[..., 1]
    else:
        X[:, -1, 2] = 0.0
    return X


@pytest.mark.parametrize("kind", ["tokens", "queries"])
@pytest.mark.parametrize("n_outputs", [1, 2])
@pytest.mark.parametrize("n_heads", [1, 2, 3])
def test_head_dimension_is_the_rank_of_the_heads_jacobian(kind, n_outputs, n_heads):
    """The dimension of k-head models as functions on sequences whose tokens
    or queries lie in a subspace: the rank of the Jacobian of their predictions
    on many such sequences with respect to (V, Q), at random heads."""
    rng = np.random.default_rng(n_heads + 10 * n_outputs)
    X = sequences_in_subspaces(rng, 400, kind)
    features = LiftedAttentionFeatures().fit_transform(X)
    d, k, m = 4, n_heads, n_outputs
    values, queries = rng.normal(size=(k, m * d)), rng.normal(size=(k, d * d))
    columns = []
    for i in range(values.size):
        step = np.zeros(values.size)
        step[i] = 1.0  # the map is bilinear: its derivative is the map itself
        columns.append(features @ head_coef(step.reshape(values.shape), queries, d).T)
    for i in range(queries.size):
        step = np.zeros(queries.size)
        step[i] = 1.0
        columns.append(features @ head_coef(values, step.reshape(queries.shape), d).T)
    jacobian = np.stack([column.ravel() for column in columns], axis=1)
    singular = np.linalg.svd(jacobian, compute_uv=False)
    rank = int(np.sum(singular > 1e-9 * singular[0]))
    token_rank = np.linalg.matrix_rank(X.reshape(-1, d))
    query_rank = np.linalg.matrix_rank(X[:, -1])
    assert (token_rank, query_rank) == ((3, 3) if kind == "tokens" else (4, 3))
    assert rank == head_dimension(k, m, token_rank, query_rank)


@pytest.mark.parametrize("kind", ["tokens", "queries"])
@pytest.mark.parametrize("n_outputs", [1, 2])
def test_counts_are_charged_their_dimension_in_the_tokens_span(kind, n_outputs):
    """Where the tokens or the queries lie in a subspace (one-hot positions that
    sum to the constant feature, a query's fixed position), the lifted fit uses
    only their span, and so do k heads: the folds' size factor and generalized
    cross-validation charge a count its dimension there (test above), not
    k (m d + d^2) - k^2 (which left El Nino's lags to 9 heads where 2 pass)."""
    rng = np.random.default_rng(5)
    X = sequences_in_subspaces(rng, 200, kind)
    truth = random_attention(rng, 4, 2, n_outputs)
    y = truth.predict(X).reshape(len(X), -1)
    y = y + 0.1 * y.std(axis=0) * rng.normal(size=y.shape)
    search = LinearAttentionRegressor().fit(X, y).head_search_
    d, m = 4, search.effective_outputs
    token_rank = np.linalg.matrix_rank(X.reshape(-1, d))
    query_rank = np.linalg.matrix_rank(X[:, -1])
    lifted_dof = query_rank * token_rank * (token_rank + 1) // 2 * m  # alpha = 0
    equations, trained = len(X) * m, 0.8 * len(X) * m

    def rho(dof):
        return (1 - dof / trained) / (1 - dof / equations)

    judged = [count for count in search.counts if np.isfinite(count.threshold)]
    assert judged
    for count in judged:
        dimension = head_dimension(
            count.n_heads, 1 if n_outputs == 1 else m, token_rank, query_rank
        )
        head_dof = min(dimension, lifted_dof)
        expected = search.cv_error * rho(lifted_dof) / rho(head_dof)
        assert count.threshold == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("outputs", ["independent", "repeated", "near"])
def test_outputs_count_as_their_noises_effective_number(outputs, fit_intercept, solver):
    """head_search_.effective_outputs is m^2 / trace(R^2), R the correlations
    of n_heads=None's training residuals across the outputs (a naive
    reference from its predictions): about m for independent noise, 1 for
    outputs that repeat one another, a little more for outputs that share most
    of their noise (1.18 measured: 10% of their spread apart)."""
    _, X, y = noisy_sequences(3, 3, 2, 3, 0.3, n_samples=200)
    if outputs == "repeated":
        y = np.c_[y[:, 0], 2 * y[:, 0], y[:, 0]]
    elif outputs == "near":
        y = y[:, :1] + 0.1 * y[:, :1].std() * np.random.default_rng(0).normal(
            size=(len(y), 3)
        )
    params = dict(fit_intercept=fit_intercept, solver=solver)
    search = LinearAttentionRegressor(**params).fit(X, y).head_search_
    lifted = LinearAttentionRegressor(n_heads=None, **params).fit(X, y)
    residuals = y - lifted.predict(X)
    correlation = np.corrcoef(residuals, rowvar=False) if fit_intercept else (
        residuals.T @ residuals
        / np.sqrt(np.outer(np.sum(residuals**2, 0), np.sum(residuals**2, 0)))
    )
    expected = np.clip(9 / np.sum(correlation**2), 1, 3)
    assert search.effective_outputs == pytest.approx(expected, rel=1e-6)
    assert {"independent": 2.7 < expected, "repeated": expected < 1 + 1e-9,
            "near": 1.05 < expected < 1.5}[outputs]


def test_partial_fit_counts_the_outputs_as_fit_does():
    """The residuals' correlations come from the statistics' target cross
    products, which partial_fit batches add up."""
    _, X, y = noisy_sequences(3, 3, 2, 3, 0.3, n_samples=200)
    y = np.c_[y[:, :2], y[:, 0] + 0.1 * y[:, 0].std() * np.sign(y[:, 1])]
    fitted = LinearAttentionRegressor(fit_intercept=True).fit(X, y)
    batched = LinearAttentionRegressor(fit_intercept=True)
    for batch in np.array_split(np.arange(len(X)), 3):
        batched.partial_fit(X[batch], y[batch])
    assert batched.head_search_.effective_outputs == pytest.approx(
        fitted.head_search_.effective_outputs, rel=1e-9
    )
    assert 1.5 < fitted.head_search_.effective_outputs < 2.9
    assert batched.n_heads_ == fitted.n_heads_


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_repeated_outputs_get_the_heads_of_one(fit_intercept, solver):
    """Outputs that repeat one another (in other units) count as one output
    in the held-out tests' degrees of freedom, with one output's k-head
    dimension: counted as two, [y, 3 y] got 3 heads where y gets 2 (the same
    fits and errors, a stricter threshold)."""
    _, X, y = noisy_sequences(0, 3, 2, 1, 0.1)
    params = dict(fit_intercept=fit_intercept, solver=solver)
    one = LinearAttentionRegressor(**params).fit(X, y[:, 0])
    both = LinearAttentionRegressor(**params).fit(X, np.c_[y[:, 0], 3 * y[:, 0]])
    assert both.head_search_.effective_outputs == pytest.approx(1.0, abs=1e-9)
    assert both.n_heads_ == one.n_heads_
    assert both.head_search_.counts_tried == one.head_search_.counts_tried


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("fitted", ["exactly", "constant", "far from zero"])
def test_outputs_fitted_exactly_do_not_count_and_rounding_counts_as_m(
    fitted, solver
):
    """An output the lifted fit reproduces to rounding (a noiseless one, a
    constant with an intercept) has no noise: the outputs count as the others
    alone (a constant beside y took the lifted fit's 4 heads where y gets 2).
    Targets far from zero leave the correlations from the statistics to
    rounding: the outputs count as m, with either solver (both judge the
    residuals at the statistics' resolution)."""
    truth, X, y = noisy_sequences(2, 3, 2, 2, 0.3, n_samples=200)
    params = dict(fit_intercept=True, solver=solver)
    if fitted == "far from zero":
        y = np.c_[y, y[:, 0] + 0.3 * np.random.default_rng(1).normal(size=len(y))]
        y = y + 1e7
    else:
        exact = truth.predict(X)[:, 0] if fitted == "exactly" else np.full(len(y), 5.0)
        noisy = LinearAttentionRegressor(**params).fit(X, y).head_search_
        y = np.c_[y, exact]
    search = LinearAttentionRegressor(**params).fit(X, y).head_search_
    assert np.isfinite(search.effective_outputs)
    if fitted != "far from zero":
        assert search.effective_outputs == pytest.approx(
            noisy.effective_outputs, rel=1e-9
        )
        assert 1.5 < search.effective_outputs < 2.0
        # weighted centering leaves the constant its rounding, not noise (the
        # dual solver's bound was of the centered targets: the constant counted)
        weights = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
        weighted = LinearAttentionRegressor(**params).fit(X, y, sample_weight=weights)
        alone = LinearAttentionRegressor(**params).fit(
            X, y[:, :2], sample_weight=weights
        )
        assert weighted.head_search_.effective_outputs == pytest.approx(
            alone.head_search_.effective_outputs, rel=1e-6
        )
    else:
        assert search.effective_outputs == 3.0


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("coordinate_scale", [1e3, 1e-3])
def test_an_exact_output_counts_alike_with_both_solvers_on_badly_scaled_tokens(
    coordinate_scale, fit_intercept
):
    """A token coordinate 1e3 or 1e-3 times the others: the kernel solve's
    residual rows of the noiseless output are 4.9e4 to 1.2e5 times the rounding
    of its targets alone, and the dual solver had counted it as a third noisy
    output (2.92 to 2.99 where the normal solver has 1.95 to 1.996). Both now
    judge it at the statistics' resolution: it does not count, with either."""
    X, _, truth = make_random_mhla(200, 5, 3, n_heads=2, random_state=0)
    X = X * np.array([1.0, 1.0, coordinate_scale])
    exact = truth.predict(X).reshape(len(X), -1)[:, 0]
    noise = 0.3 * exact.std() * np.random.default_rng(0).normal(size=(len(X), 2))
    y = np.c_[exact[:, None] + noise, exact]

    def effective_outputs(solver, targets):
        model = LinearAttentionRegressor(solver=solver, fit_intercept=fit_intercept)
        return model.fit(X, targets).head_search_.effective_outputs

    alone = effective_outputs("dual", y[:, :2])
    assert 1.5 < alone < 2.0
    assert effective_outputs("dual", y) == pytest.approx(alone, rel=1e-9)
    # the two solvers' residuals differ by their rounding (7e-8 to 1.5e-7 measured)
    assert effective_outputs("normal", y) == pytest.approx(alone, rel=1e-4)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_an_exact_output_counts_alike_with_both_solvers_on_tokens_far_from_zero(
    fit_intercept,
):
    """Tokens offset by 30 (a Gram of condition 1e9 to 1e13): the normal
    equations' residual of the noiseless output erred by 10 to 17 times the
    bound it was judged by (the noisy outputs' by 4e4 to 3e5; the fitted
    values' products taken whole, not term by term), and the normal solver
    counted it as a third noisy output (3.0) where the dual solver did not
    (1.993). Both now judge it by the term-by-term bound: it does not count,
    with either."""
    X, exact = noiseless_far_from_zero(30.0, seed=2)
    noise = 0.3 * exact.std() * np.random.default_rng(2).normal(size=(len(X), 2))
    y = np.c_[exact[:, None] + noise, exact]

    def effective_outputs(solver):
        model = LinearAttentionRegressor(solver=solver, fit_intercept=fit_intercept)
        return model.fit(X, y).head_search_.effective_outputs

    dual = effective_outputs("dual")
    assert 1.5 < dual < 2.0
    assert effective_outputs("normal") == pytest.approx(dual, rel=1e-4)


def test_a_fixed_count_fails_on_its_training_error_as_the_search_fails_it():
    """Noiseless 2-head targets on tokens offset by 100: the Gram loses 6 of its
    18 directions to rounding, so the data look noisy and the errors computed
    from the statistics are rounding's (the 2 heads' training error from them
    is 1.4e-2 against a threshold of 6.25e-3, their rows' own mean squared
    error 8.2e-3; the folds' refits 5.9e-3, with OpenBLAS's SkylakeX kernels:
    rounding's, they differ with other kernels, 7 of which were tried).
    n_heads=2 fails on that training error, as the search fails the count, so
    the default's count does not contradict it."""
    X, y = noiseless_far_from_zero(100.0, seed=45)
    fewer = LinearAttentionRegressor(n_heads=2).fit(X, y).head_search_
    count = fewer.counts[0]
    assert count.training_error > count.threshold >= count.cv_error
    assert fewer.passes is False and count.failed_on == "training"
    assert LinearAttentionRegressor().fit(X, y).n_heads_ > 2


@pytest.mark.xfail(
    strict=True,
    reason="exact 2-head data on tokens offset by 30 (Gram condition 1e13): the "
    "lifted fit is determined only to 4.5e-4 to 8.5e-4 (normal equations) and the "
    "generating 2 heads lie 5e-6 to 7e-5 from it, beyond tol = 1e-8; the default "
    "returns the lifted fit's 3 heads. Two rules that passed them were measured "
    "and not kept (benchmarks/README.md, forty-third pass): too few heads, and "
    "fit and partial_fit disagreeing",
)
@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("seed", [0, 2])
def test_exact_heads_on_an_ill_conditioned_gram_are_the_generating_count(
    solver, seed
):
    """Noiseless targets of 2 heads on tokens offset by 30 identify the function
    (the certificate): the default should return the generating 2 heads."""
    X, y = noiseless_far_from_zero(30.0, seed)
    model = LinearAttentionRegressor(solver=solver).fit(X, y)
    assert model.certificate_.identifiable
    assert model.n_heads_ == 2


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("seed", [10, 17])
def test_exact_heads_of_too_few_do_not_pass_on_an_ill_conditioned_gram(solver, seed):
    """Noiseless targets of 3 heads on tokens offset by 30 (Gram condition 1e13):
    2 heads lie 1.7e-3 to 6.7e-3 from the lifted fit and their training
    objective exceeds the lifted fit's by 2e-17 to 3e-17 of the signal, within
    ``tol^2``, but by 190 to 3.7e4 times the lifted fit's own residual; a rule
    that passed exact identified heads within the Gram's precision on that tie
    (measured, not kept: benchmarks/README.md, forty-third pass) returned them,
    predicting new sequences 12 to 210 times worse than 3 heads."""
    X, y = noiseless_far_from_zero(30.0, seed, n_heads=3)
    model = LinearAttentionRegressor(solver=solver).fit(X, y)
    assert model.certificate_.identifiable
    assert model.n_heads_ == 3
    fewer = LinearAttentionRegressor(solver=solver, n_heads=2).fit(X, y)
    assert not fewer.head_search_.passes


def test_partial_fit_does_not_count_a_fit_with_a_resolved_residual_as_exact():
    """Tokens offset by 1e3 with an intercept (a Gram of condition 1e10): the
    lifted fit of noise 1e-4 of the output's deviation leaves a training residual
    of 3e-8 of the centered targets' squares, which the statistics resolve to 2%
    but which lies below their term-by-term rounding bound (1.8e-12 against
    5.9e-13). Without the rows partial_fit took it as zero, counted the data as
    exact and judged the heads by tol (2 heads, "tol") where fit, which has the
    rows, judged them on held-out folds (3 heads, "lifted"). Now partial_fit
    takes the residual as zero only within the rounding of the sums taken whole,
    and decides as fit does."""
    X, exact = noiseless_far_from_zero(1e3, seed=0)
    y = exact + 1e-4 * exact.std() * np.random.default_rng(100).normal(size=len(X))
    fitted = LinearAttentionRegressor(solver="normal", fit_intercept=True).fit(X, y)
    batches = LinearAttentionRegressor(solver="normal", fit_intercept=True)
    for rows in np.array_split(np.arange(len(X)), 3):
        batches.partial_fit(X[rows], y[rows])
    assert fitted.head_search_.criterion != "tol"
    assert batches.head_search_.criterion == fitted.head_search_.criterion
    assert batches.n_heads_ == fitted.n_heads_


@pytest.mark.parametrize(("offset", "seed"), [(3.0, 0), (100.0, 1), (1e4, 0)])
def test_partial_fit_counts_exact_targets_off_zero_as_exact_as_fit_does(offset, seed):
    """Noiseless targets offset from zero, with an intercept: the statistics
    center the targets' squares by subtracting ``W ybar^2`` from ``sum w y^2``,
    so their residual is known only to the rounding of the uncentered sum. The
    bound had taken the centered squares, and a residual of 3e-15 of the
    targets' squares read as noise from the sums (not from the rows, which
    fit has): partial_fit judged one head by held-out folds where fit judged
    it by tol, and fitted other heads (coef_ 9% apart at offset 3; helper-159)."""
    X, y, _ = make_random_mhla(150, 5, 3, n_heads=2, random_state=seed)
    y = y + offset
    fitted = LinearAttentionRegressor(n_heads=1, fit_intercept=True).fit(X, y)
    batches = LinearAttentionRegressor(n_heads=1, fit_intercept=True)
    for rows in np.array_split(np.arange(len(X)), 3):
        batches.partial_fit(X[rows], y[rows])
    assert fitted.head_search_.counts[0].criterion == "tol"
    assert batches.head_search_.counts[0].criterion == "tol"
    assert_allclose(batches.coef_, fitted.coef_, rtol=1e-8)


@pytest.mark.parametrize("solver", ["dual", "normal"])
def test_a_noisy_output_far_from_zero_is_not_counted_as_fitted_exactly(solver):
    """An output 3.5e6 deviations from zero with noise of 0.1 of its deviation,
    beside one near zero, with an intercept: its squared residual is 0.04 to 0.1
    of the statistics' rounding (_residual_rounding), and it had counted as
    fitted exactly with both solvers (1 effective output, which turns off the
    output-by-output test), though its spread about its mean is 10 times its
    own rounding, and that rounding 100 times 1e-3 of it: the statistics resolve
    that it varies, not that the lifted fit leaves no noise. Its residual is
    not known to be zero: the outputs count as m (helper-121)."""
    X, _, truth = make_random_mhla(200, 5, 3, n_heads=2, random_state=0)
    exact = truth.predict(X).reshape(len(X), -1)[:, 0]
    noise = 0.1 * exact.std() * np.random.default_rng(0).normal(size=(len(X), 2))
    y = exact[:, None] + noise
    y[:, 1] += 3.5e6 * exact.std()
    model = LinearAttentionRegressor(solver=solver, fit_intercept=True).fit(X, y)
    assert model.head_search_.effective_outputs == 2.0


_EXACT_OUTPUT_WITH_NEHALEM_KERNELS = """
import numpy as np
from test_heads import noisy_sequences
from sklearn_linattn import LinearAttentionRegressor
truth, X, y = noisy_sequences(2, 3, 2, 2, 0.3, n_samples=200)
params = dict(fit_intercept=True, solver="dual")
alone = LinearAttentionRegressor(**params).fit(X, y).head_search_
both = LinearAttentionRegressor(**params).fit(X, np.c_[y, truth.predict(X)[:, 0]])
print(repr((alone.effective_outputs, both.head_search_.effective_outputs)))
"""


def test_an_exact_output_beside_noisy_ones_does_not_count_with_nehalem_kernels():
    """The case above with OpenBLAS's kernels for Nehalem: the dual solver's
    residual rows of the noiseless output are rounding, 1.24 times the
    targets' own rounding (n_lifted eps ||y||) with Nehalem's kernels, which
    that bound alone counted as a third noisy output (3.0, not 1.99;
    SkylakeX's and Sandybridge's kernels pass either way). OPENBLAS_CORETYPE selects
    the kernels (a DYNAMIC_ARCH OpenBLAS, as numpy's wheels ship; another BLAS
    ignores it and the test is the case above)."""
    import ast
    import os
    import subprocess

    import sklearn_linattn

    package_root = os.path.dirname(os.path.dirname(sklearn_linattn.__file__))
    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(
        os.environ,
        OPENBLAS_CORETYPE="Nehalem",
        PYTHONPATH=os.pathsep.join([package_root, tests]),
    )
    result = subprocess.run(
        [sys.executable, "-c", _EXACT_OUTPUT_WITH_NEHALEM_KERNELS],
        env=env, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    alone, both = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    assert 1.5 < alone < 2.0
    assert both == pytest.approx(alone, rel=1e-9)


def test_misclassification_is_rescaled_for_the_folds_size_as_squared_errors():
    """A classifier is a least-squares fit of +-1 targets: its counts are held
    to the lifted fit's misclassification lowered by the ratio r_k that a
    regressor of those targets applies to its squared errors (the lifted fit
    gains more from the last fifth of the rows than k heads); without it,
    counts that classified worse than n_heads=None passed on its folds' error.
    Here one to three heads are judged, and the lifted fit's learning ratio
    (0.97, the heads' own fall credited) lowers none of their thresholds
    further."""
    _, X, y = noisy_sequences(26, 4, 2, 1, 0.3, n_samples=150)
    labels = y[:, 0] > 0
    classifier = LinearAttentionClassifier().fit(X, labels).head_search_
    regressor = LinearAttentionRegressor().fit(X, np.where(labels, 1.0, -1.0))
    ratios = {
        count.n_heads: count.threshold / regressor.head_search_.cv_error
        for count in regressor.head_search_.counts
        if np.isfinite(count.threshold)
    }
    judged = [
        count for count in classifier.counts
        if np.isfinite(count.threshold) and count.n_heads in ratios
    ]
    assert judged
    for count in judged:
        ratio = count.threshold / classifier.cv_error
        assert ratio < 1
        assert ratio == pytest.approx(ratios[count.n_heads], rel=1e-9)


def outputs_of_three_heads(seed=1):
    """Two outputs of a 3-head model (output 0 from head 0, output 1 from heads
    1 and 2), 10% noise, 400 sequences; and 2000 new ones, noiseless."""
    rng = np.random.default_rng(seed)
    d = 3
    values = rng.normal(size=(3, 2, d))
    values[0, 1] = 0
    values[1:, 0] = 0
    truth = MultiHeadLinearAttention(values, rng.normal(size=(3, d, d)))
    X, X_test = rng.normal(size=(400, 8, d)), rng.normal(size=(2000, 8, d))
    y = truth.predict(X)
    y = y + 0.1 * y.std(axis=0) * rng.normal(size=y.shape)
    return X, y, X_test, truth.predict(X_test)


@pytest.mark.parametrize("n_heads", ["auto", 3])
def test_outputs_in_other_units_give_the_same_heads(n_heads):
    """The heads of a multi-output regression weigh its outputs alike, whatever
    their units: output 0 in units 100 times smaller (and then 2^7 times)
    left the other to 1 head, R^2 0.31 on it against n_heads=None's 0.9996
    (and n_heads=3 fitted it to 0.97). Rescaling an output by a power of two
    rescales its predictions and leaves the other's. (Seed 0: on seed 1, where
    the defect was found, the 3-head fit in the units given and in 2^7 ends at
    a local minimum 5.5e-4 from the lifted fit, which 3 heads reproduce to
    4e-14 in units 100 apart, and its held-out error is 2e-5 above the
    threshold: 4 heads by tol.)"""
    X, y, X_test, y_test = outputs_of_three_heads(seed=0)
    plain = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
    lifted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    for scale in [100.0, 2.0**7]:
        units = np.array([scale, 1.0])
        model = LinearAttentionRegressor(n_heads=n_heads).fit(X, y * units)
        assert model.n_heads_ == 3
        scores = r2_score(
            y_test, model.predict(X_test) / units, multioutput="raw_values"
        )
        best = r2_score(y_test, lifted.predict(X_test), multioutput="raw_values")
        assert np.all(scores >= best - 1e-3)
        if scale == 2.0**7:  # the same problem, weighted: the same heads
            expected = plain.predict(X_test)  # to rounding (6e-14 of the largest)
            assert_allclose(
                model.predict(X_test) / units, expected,
                rtol=0, atol=1e-11 * np.max(np.abs(expected)),
            )
            weighted = [
                np.ones(2) if search.output_weights is None else search.output_weights
                for search in (model.head_search_, plain.head_search_)
            ]
            ratios = [w / w.max() for w in (weighted[0] * units, weighted[1])]
            assert_array_equal(*ratios)


@pytest.mark.parametrize("scale", [1e-9, 1e-12])
def test_the_papers_read_out_keeps_an_output_in_small_units(scale):
    """n_heads=None truncates the folded W at tol of its norm: an output in
    units 1e-9 of the other's lost every head and was predicted as zero
    (relative test error 0.91 against the lifted fit's 6e-30; helper-80). Its
    outputs are weighted as the search's are: both predicted as the lifted fit
    predicts them, to rounding."""
    rng = np.random.default_rng(0)
    d = 3
    truths = [
        MultiHeadLinearAttention(rng.normal(size=(1, 1, d)), rng.normal(size=(1, d, d)))
        for _ in range(2)
    ]
    X, X_test = rng.normal(size=(300, 8, d)), rng.normal(size=(1000, 8, d))
    y = np.column_stack(
        [truths[0].predict(X)[:, 0], scale * truths[1].predict(X)[:, 0]]
    )
    expected = truths[1].predict(X_test)[:, 0]
    model = LinearAttentionRegressor(n_heads=None).fit(X, y)
    small = model.predict(X_test)[:, 1] / scale
    assert np.mean((small - expected) ** 2) <= 1e-12 * np.mean(expected**2)


def test_a_count_asked_for_is_fitted_whatever_tol():
    """tol=0.5 makes the truncation of the split to 1 head within tol, and it
    was returned unfitted, also for n_heads=1 ("the best model with at most 1
    head"): held-out error 0.0106 against 0.0032 at the default tol, no count
    fitted, and HeadSearchDisplay refused to draw (helper-80). The count is
    fitted, as its own n_heads=1, and beats that truncation (the paper's
    read-out at the same tol)."""
    X, y, truth = make_random_mhla(2300, 8, 3, n_heads=2, noise=0.1, random_state=0)
    X_test, y_test = X[300:], truth.predict(X[300:])[:, 0]
    X, y = X[:300], y[:300]

    def error(model):
        return np.mean((model.predict(X_test) - y_test) ** 2)

    truncated = LinearAttentionRegressor(n_heads=None, tol=0.5).fit(X, y)
    assert truncated.n_heads_ == 1
    one = LinearAttentionRegressor(n_heads=1, tol=0.5).fit(X, y)
    for n_heads in ("auto", 1, 3):  # 3: the lifted fit's heads, 2 within tol
        model = LinearAttentionRegressor(n_heads=n_heads, tol=0.5).fit(X, y)
        assert model.n_heads_ == 1 and model.head_search_.counts_tried == (1,)
        assert error(model) < 0.75 * error(truncated)
        assert_allclose(model.predict(X_test), one.predict(X_test), rtol=1e-12)


def test_a_fixed_count_whose_heads_tol_drops_is_refitted():
    """n_heads=3 on noiseless 2-head data under tol=0.5: the third head of the
    3-head fit is within tol and was dropped by truncating that fit, 0.05
    relative test error where n_heads=2 is exact (helper-83). The count left
    is fitted: exact."""
    X, y, truth = make_random_mhla(300, 8, 4, n_heads=2, random_state=2)
    X_test = np.random.default_rng(2).normal(size=(200, 8, 4))
    model = LinearAttentionRegressor(n_heads=3, tol=0.5).fit(X, y)
    assert model.n_heads_ == 2 and model.head_search_.counts_tried[-1] == 2
    expected = truth.predict(X_test)[:, 0]
    assert relative_error(model.predict(X_test), expected) < 1e-8


def test_outputs_of_pure_noise_do_not_drown_the_predictable_ones():
    """Ten outputs of pure noise beside two of a 3-head model (10% noise):
    weighted by their scales alike they drowned the two, and the default
    returned 1 head, test R^2 0.83 and 0.94 on them against n_heads=None's
    0.9998 (hostile review). Weighted by their noise, the predictable outputs'
    errors count against their own small noise: 3 heads, n_heads=None's R^2."""
    X, y, X_test, y_test = outputs_of_three_heads()
    noise = np.random.default_rng(5).normal(size=(len(X), 10))
    model = LinearAttentionRegressor(fit_intercept=True).fit(X, np.hstack([y, noise]))
    lifted = LinearAttentionRegressor(fit_intercept=True, n_heads=None).fit(
        X, np.hstack([y, noise])
    )
    scores = r2_score(y_test, model.predict(X_test)[:, :2], multioutput="raw_values")
    best = r2_score(y_test, lifted.predict(X_test)[:, :2], multioutput="raw_values")
    assert model.n_heads_ == 3
    assert np.all(scores >= best - 1e-3)


@pytest.mark.parametrize("factor", [1.0, -3.0])
def test_outputs_that_repeat_one_another_give_the_heads_of_one(factor):
    """Two outputs, the second the first times a factor: the heads of the
    outputs are those of the one (the one-output subspace starts apply), where
    two heads stopped at 1.5 times its training error and the search returned
    three."""
    X, y, _ = make_random_mhla(54 + 2000, 8, 3, n_heads=2, random_state=1)
    y = y + 0.1 * y.std() * np.random.default_rng(1).normal(size=y.shape)
    X, X_test, y = X[:54], X[54:], y[:54]
    one = LinearAttentionRegressor().fit(X, y)
    both = LinearAttentionRegressor().fit(X, np.c_[y, factor * y])
    assert one.n_heads_ == both.n_heads_ == 2
    expected = one.predict(X_test)
    assert_allclose(both.predict(X_test), np.c_[expected, factor * expected],
                    rtol=1e-6, atol=1e-6 * np.abs(expected).max())


@pytest.mark.parametrize("constant", [5.0, 1e3 + 0.1, np.pi * 1e8])
def test_a_constant_output_leaves_the_others_heads(constant):
    """A constant output beside two of a 3-head model, with an intercept: its
    centered energy is rounding, which weighted it 2^19 and crashed the
    read-out (0 heads, then a reshape); and at 1e8 the precision of centering
    it dropped every head, n_heads=None's too. The others keep their fit."""
    X, y, X_test, y_test = outputs_of_three_heads()
    targets = np.column_stack([y, np.full(len(X), constant)])
    for n_heads in ["auto", None]:
        model = LinearAttentionRegressor(fit_intercept=True, n_heads=n_heads)
        model.fit(X, targets)
        predictions = model.predict(X_test)
        scores = r2_score(y_test, predictions[:, :2], multioutput="raw_values")
        assert np.all(scores > 0.999)
        assert_allclose(predictions[:, 2], constant, rtol=1e-9)


def test_incontext_regression_has_one_head():
    # The best single layer has one head (Zhang, Frei & Bartlett 2024), although
    # its error depends on the prompt.
    from sklearn_linattn.datasets import make_incontext_regression

    X, y, _ = make_incontext_regression(
        20000, 20, 4, covariance=np.diag([2.0, 1.0, 0.5, 0.25]), random_state=0
    )
    model = LinearAttentionRegressor().fit(X, y)
    assert model.n_heads_ == 1 and model.head_search_.criterion == "cv"


@pytest.mark.parametrize("n_samples", [30, 120])  # fewer rows than p = 75, and more
def test_heads_are_never_clearly_worse_held_out_than_the_lifted_fit(n_samples):
    """Whatever count is returned, its cross-validated error is at most the
    lifted fit's, also where the lifted fit interpolates (no residual degree of
    freedom), and every count below it fails."""
    truth, X, y = noisy_sequences(3, 5, 2, 1, 0.1, n_samples=n_samples)
    search = LinearAttentionRegressor().fit(X, y).head_search_
    assert search.passes and search.complete
    if search.criterion == "cv":
        returned = next(c for c in search.counts if c.n_heads == search.n_heads)
        assert returned.passes and returned.cv_error <= search.cv_error
    else:
        assert search.criterion == "lifted"
    for count in search.counts:
        if count.n_heads < search.n_heads:
            assert count.passes is False


@pytest.mark.parametrize("token_dim, n_samples, seed", [(4, 48, 101), (5, 90, 103)])
def test_few_rows_over_the_lifted_features_do_not_pass_too_few_heads(
    token_dim, n_samples, seed
):
    """1.2 p sequences, 2 generating heads, little noise: the folds' lifted fits
    (on 0.96 p rows) are at their interpolation point and predict far worse than
    the lifted fit on all the rows, so by the 5 folds alone one head looked
    better, at 20 to 25 times the lifted fit's test error. Generalized
    cross-validation of the fits to all the rows rejects it."""
    X, y, _ = make_random_mhla(
        n_samples + 4000, 10, token_dim, n_heads=2, noise=0.02, random_state=seed
    )
    train, test = slice(0, n_samples), slice(n_samples, None)
    model = LinearAttentionRegressor().fit(X[train], y[train])
    lifted = LinearAttentionRegressor(n_heads=None).fit(X[train], y[train])
    search = model.head_search_
    assert search.gcv_error < search.cv_error  # the folds' error is inflated
    one = next(c for c in search.counts if c.n_heads == 1)
    assert one.passes is False and one.gcv_error > search.gcv_error

    def test_error(estimator):
        return np.mean((estimator.predict(X[test]) - y[test]) ** 2)

    assert test_error(model) <= 1.25 * test_error(lifted)


@pytest.mark.parametrize(
    "token_dim, n_outputs, seed, n_samples",
    [(3, 1, 80, 36), (4, 3, 4, 80)],  # 2 p sequences: the folds' fits see 1.6 p
)
def test_near_interpolation_is_judged_at_the_folds_size(
    token_dim, n_outputs, seed, n_samples
):
    """Generalized cross-validation checks the counts where the folds' fits
    (on 80% of the rows) have fewer than two equations per degree of freedom.
    Judged on all the rows it stopped at exactly 2 p sequences, where the
    folds' lifted fits are still near interpolation and their cross-validated
    error is inflated (0.43 against a generalized cross-validated error of
    0.125): one head passed, at 2.2 and 1.7 times n_heads=None's test error."""
    X, y, _ = make_random_mhla(
        n_samples + 2000, 8, token_dim, n_heads=2, n_outputs=n_outputs,
        random_state=seed,
    )
    y = y + 0.3 * y.std(axis=0) * np.random.default_rng(seed).normal(size=y.shape)
    train, test = slice(0, n_samples), slice(n_samples, None)
    model = LinearAttentionRegressor().fit(X[train], y[train])
    lifted = LinearAttentionRegressor(n_heads=None).fit(X[train], y[train])

    def test_error(estimator):
        return np.mean((estimator.predict(X[test]) - y[test]) ** 2)

    assert test_error(model) <= 1.1 * test_error(lifted)
    search = model.head_search_
    assert search.counts
    for count in search.counts:  # the lower of the lifted fit's two errors
        assert count.threshold == min(search.cv_error, search.gcv_error)


def test_counts_with_as_many_dimensions_as_equations_are_not_fitted():
    """d = 10, 200 sequences, alpha = 0.01: two heads span 216 dimensions of
    lifted coefficients, more than the 200 equations; they interpolated the
    training rows and predicted new data 1.85 times worse than n_heads=None,
    while their refits on 80% of the rows looked fine."""
    X, y, _ = make_random_mhla(3200, 10, 10, n_heads=2, random_state=0)
    y = y + 0.3 * y.std() * np.random.default_rng(0).normal(size=y.shape)
    model = LinearAttentionRegressor(alpha=0.01).fit(X[:200], y[:200])
    search = model.head_search_
    assert search.counts_tried == (1,) and search.criterion == "lifted"
    assert search.complete


def seventeen_sequences_classifier(**params):
    """:func:`seventeen_sequences_three_labels` fitted by a classifier with
    ``alpha=0.1`` and an intercept (and ``params``), its warnings of few rows
    per lifted feature ignored."""
    X, y = seventeen_sequences_three_labels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LinearAttentionClassifier(
            alpha=0.1, fit_intercept=True, **params
        ).fit(X, y)


def test_counts_beyond_the_interpolating_one_are_fitted_down_from_the_papers():
    """17 sequences of d = 3, three classes, alpha = 0.1: from 3 heads on the
    models have as many dimensions as the equations, and only reproducing
    the lifted fit passes. Those counts were never tried, and the lifted
    fit's 6 heads came back where 3 reproduce it. Fitted down from the
    paper's count, as n_heads=k fits them: 3 heads, within tol of the lifted
    fit, and n_heads=2 fails."""
    model = seventeen_sequences_classifier()
    lifted = seventeen_sequences_classifier(n_heads=None)
    fewer = seventeen_sequences_classifier(n_heads=model.n_heads_ - 1)
    asked = {
        count.n_heads: seventeen_sequences_classifier(n_heads=count.n_heads)
        for count in model.head_search_.counts
    }
    search = model.head_search_
    assert search.criterion == "tol" and search.complete
    assert model.n_heads_ < lifted.n_heads_
    distance = np.linalg.norm(model.coef_ - lifted.coef_)
    assert distance <= search.tol * np.linalg.norm(lifted.coef_)
    assert not fewer.head_search_.passes
    for count in search.counts:  # each verdict that of n_heads=k
        assert count.passes == asked[count.n_heads].head_search_.passes


def test_each_count_completes_the_split_once(monkeypatch):
    """A count whose completion a verdict reads and that is then fitted from it
    (near interpolation, the 17-sequence classifier) completed the split twice,
    and was charged twice. Each (lifted fit, count) completes it once."""
    import sklearn_linattn._heads as heads

    calls = []
    original = heads.completion_queries

    def counted(lifted_coef, token_dim, n_heads, n_iter):
        calls.append((lifted_coef.tobytes(), n_heads))
        return original(lifted_coef, token_dim, n_heads, n_iter)

    monkeypatch.setattr(heads, "completion_queries", counted)
    seventeen_sequences_classifier()
    assert calls and len(set(calls)) == len(calls)


def test_the_work_limit_reached_beyond_the_interpolating_count_says_so(monkeypatch):
    """The 17 sequences above: the counts beyond the interpolating one are
    fitted within a share of the work spent before them, capped by the
    search's own limit. Where that limit (not the share) stopped them, the
    search said it was complete, without a ConvergenceWarning, and the counts
    below that a completion had failed were left unfitted: n_heads=k-1 passed.
    Limits in the middle of those fits: a complete search has n_heads=k-1
    failing, and complete is False exactly when the warning says so."""
    X, y = seventeen_sequences_three_labels()
    for floor in (1.9e8, 2.1e8, 2.2e8):
        monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", floor)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = LinearAttentionClassifier(
                alpha=0.1, fit_intercept=True, head_work_limit=0.0
            ).fit(X, y)
        warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        search = model.head_search_
        assert search.complete is not warned
        assert search.work <= 1.5 * search.work_limit
        if search.complete and model.n_heads_ >= 2:
            fewer = seventeen_sequences_classifier(n_heads=model.n_heads_ - 1)
            assert not fewer.head_search_.passes


def test_fits_beyond_the_interpolating_count_are_started_only_within_the_limit(
    monkeypatch,
):
    """Random labels on fewer sequences than lifted features: counts from the
    interpolating one on pass only by reproducing the lifted fit, and are
    fitted within a share of the work before them (at least BEYOND_FLOOR) and
    the search's own limit, stopping at a count whose first start would
    overrun. That start was estimated on the training rows' head features
    alone, but such a count is also refined in the Frobenius metric, an SVD of
    its k d x p head features, and each Levenberg-Marquardt step solves for
    k d^2 unknowns: 30 sequences of d = 12 and three labels spent 1.2e9 flops
    on 35 heads under limits of 1.9e8 and 5e8; 30 sequences of d = 10 and ten
    labels (the CV classifier, the default limit) 3.5e11 on 99 heads, 7 times
    its limit. Such counts are now not started: the search stays within its
    limit, and (the counts it leaves could only reproduce the lifted fit) is
    complete, as where the share stops them."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 6, 12)), rng.integers(0, 3, 30)
    for floor in (1.9e8, 5e8):
        monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", floor)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            search = LinearAttentionClassifier().fit(X, y).head_search_
        assert search.work <= search.work_limit
        assert search.complete and search.criterion == "lifted" and search.fewer_untried
    monkeypatch.undo()
    rng = np.random.default_rng(40)
    X, y = rng.normal(size=(30, 5, 10)), rng.permutation(np.arange(30) % 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        search = LinearAttentionClassifierCV().fit(X, y).head_search_
    assert search.work <= search.work_limit and search.complete


def test_no_work_limit_lifts_the_cap_on_counts_beyond_the_interpolating_one(
    monkeypatch,
):
    """head_work_limit=None is documented as no limit, but the fits beyond the
    interpolating count kept their cap (a share of the work spent before
    them). With that share and its floor at 0, the 17-sequence classifier's
    counts 4 and 5 are not fitted under a limit, and are without one. A huge
    finite limit is a limit: head_work_limit=1e308 times the lifted fit's
    flops overflowed to an infinite one, None's; inf is None."""
    monkeypatch.setattr("sklearn_linattn._heads.BEYOND_SHARE", 0.0)
    monkeypatch.setattr("sklearn_linattn._heads.BEYOND_FLOOR", 0.0)
    capped = seventeen_sequences_classifier(head_work_limit=20.0)
    unlimited = seventeen_sequences_classifier(head_work_limit=None)
    huge = seventeen_sequences_classifier(head_work_limit=1e308)
    infinite = seventeen_sequences_classifier(head_work_limit=np.inf)
    assert infinite.head_search_.counts == unlimited.head_search_.counts
    assert np.isfinite(huge.head_search_.work_limit)
    assert {4, 5}.isdisjoint(huge.head_search_.counts_tried)
    assert {4, 5}.isdisjoint(capped.head_search_.counts_tried)
    assert {4, 5} <= set(unlimited.head_search_.counts_tried)
    assert capped.head_search_.complete and unlimited.head_search_.complete
    assert unlimited.n_heads_ == capped.n_heads_ == 3  # the fewest either way


def test_once_a_count_beyond_the_interpolating_one_passes_fewer_are_fitted():
    """22 noisy sequences of d = 4 (p = 40) from 3 heads, two outputs, the CV
    regressor: from 4 heads on the models have as many dimensions as the
    equations and pass only by reproducing the lifted fit. The paper's count
    less one (7) passed, and the share of work that bounds these fits stopped
    the bisection below it: 7 heads came back where n_heads=4 reproduces the
    lifted fit. The share bounds that first fit (whether any such count
    reproduces the lifted fit); once one has, the fewest are sought under the
    search's own limit: 4 heads, n_heads=3 failing."""
    seed = 499311327
    X, y, _ = make_random_mhla(222, 7, 4, n_heads=3, n_outputs=2, random_state=seed)
    rng = np.random.default_rng(seed)
    X, y = X[:22], (y + 0.1 * np.std(y, axis=0) * rng.normal(size=y.shape))[:22]
    model = LinearAttentionRegressorCV().fit(X, y)
    lifted = LinearAttentionRegressorCV(n_heads=None).fit(X, y)
    fewer = LinearAttentionRegressorCV(n_heads=model.n_heads_ - 1).fit(X, y)
    search = model.head_search_
    assert search.criterion == "tol" and search.complete
    assert model.n_heads_ == 4 < lifted.n_heads_ - 1
    distance = np.linalg.norm(model.coef_ - lifted.coef_)
    assert distance <= search.tol * np.linalg.norm(lifted.coef_)
    assert not fewer.head_search_.passes
    assert not search.fewer_untried  # (a count passed: the fewest were sought)


def test_counts_left_unfitted_beyond_the_interpolating_one_are_reported():
    """20 sequences of d = 7, three outputs, alpha = 1: every count below the
    lifted fit's 21 is either hopeless or can pass only by reproducing the
    lifted fit, and the first of those fits would exceed the share of work the
    search gives them. The search returned the lifted fit's heads as complete
    with no count fitted and said "no fewer heads passed", while 10 reproduce
    it (helper-78). It now says those counts were not fitted
    (``fewer_untried``); without a work limit they are, and 10 heads come back
    with the lifted fit's coefficients within tol."""
    X, y, _ = make_random_mhla(
        20, 8, 7, n_heads=1, n_outputs=3, noise=0.01, random_state=0
    )
    capped = LinearAttentionRegressor(alpha=1.0).fit(X, y)
    unlimited = LinearAttentionRegressor(alpha=1.0, head_work_limit=None).fit(X, y)
    search = capped.head_search_
    assert search.criterion == "lifted" and search.complete and search.passes
    assert search.fewer_untried and capped.n_heads_ == 21
    assert unlimited.head_search_.criterion == "tol"
    assert not unlimited.head_search_.fewer_untried
    assert unlimited.n_heads_ == 10
    distance = np.linalg.norm(unlimited.coef_ - capped.coef_)
    assert distance <= search.tol * np.linalg.norm(capped.coef_)


def test_heads_that_reproduce_the_lifted_fit_are_refined_to_it_not_polished():
    """15 iris rows, two tokens of two features with positions and a constant (d
    = 5, p = 75), alpha = 0.1: every count from 3 on has as many dimensions as
    the equations and passes only by reproducing the lifted fit. Fits were
    polished in the training metric before their refinement toward the lifted
    fit, and the share of work for those counts ran out: 12 heads came back
    where 5 reproduce it. Heads that reproduce it once refined are refined to it
    to rounding instead (the training objective's minimum): 5 heads, n_heads=4
    failing, and the coefficients the lifted fit's to rounding, not to tol."""
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(874765119).permutation(len(X))[:15]
    X = StandardScaler().fit_transform(X[order]).reshape(15, 2, 2)
    X, y = PositionalEncoding(constant=True, padding=None).fit_transform(X), y[order]

    def fitted(**params):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return LinearAttentionClassifier(alpha=0.1, **params).fit(X, y)

    model, lifted = fitted(), fitted(n_heads=None)
    search = model.head_search_
    assert search.criterion == "tol" and search.complete
    assert model.n_heads_ == 5 < lifted.n_heads_
    distance = np.linalg.norm(model.coef_ - lifted.coef_)
    assert distance <= 1e3 * np.finfo(float).eps * np.linalg.norm(lifted.coef_)
    assert not fitted(n_heads=4).head_search_.passes


def fifteen_linnerud_rows():
    """15 of linnerud's 20 rows (a seeded draw), its 3 features as 3 tokens of
    one feature with positions and a constant (d = 5, p = 75), its 3 targets
    standardized."""
    X, y = load_linnerud(return_X_y=True)
    rows = np.random.default_rng(207678900).permutation(len(X))[:15]
    X = StandardScaler().fit_transform(X[rows]).reshape(15, 3, 1)
    X = PositionalEncoding(constant=True, padding=None).fit_transform(X)
    return X, StandardScaler().fit_transform(y[rows].astype(float))


def test_counts_beyond_the_interpolating_one_reproduce_as_fewer_heads_do():
    """15 rows, d = 5, alpha = 1: n_heads=4 to 6 reproduce the lifted fit,
    but n_heads=7 stopped 1.75e-3 away in the singular training metric and
    failed, so the default's galloping down from the paper's 8 heads stopped
    at 7 and returned the lifted fit. A count beyond the interpolating one
    passes only by reproducing the lifted fit: it is refined toward it
    whatever its distance, and every count from 4 on passes; the default
    returns fewer heads than the lifted fit, reproducing it."""
    X, y = fifteen_linnerud_rows()

    def fitted(**params):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return LinearAttentionRegressor(alpha=1.0, **params).fit(X, y)

    lifted = fitted(n_heads=None)
    for k in range(4, lifted.n_heads_):
        model = fitted(n_heads=k)
        assert model.head_search_.passes, k
        distance = np.linalg.norm(model.coef_ - lifted.coef_)
        assert distance <= 1e-8 * np.linalg.norm(lifted.coef_)
    model = fitted()
    assert model.head_search_.criterion == "tol"
    assert model.n_heads_ < lifted.n_heads_
    distance = np.linalg.norm(model.coef_ - lifted.coef_)
    assert distance <= 1e-8 * np.linalg.norm(lifted.coef_)


def test_near_interpolation_counts_that_cannot_pass_are_not_fitted(monkeypatch):
    """d = 5, 60 noisy sequences (p = 75), alpha = 1: two heads (47 dimensions)
    fail generalized cross-validation even at half the lifted fit's training
    error, and the slices keep them from reproducing the lifted fit within tol:
    they are not fitted. Fitted anyway (n_heads=2, or the search with
    TRAINING_FLOOR = 0, which then also fits counts beyond the interpolating
    one), they fail, and the search returns the same heads."""
    X, y, _ = make_random_mhla(60, 8, 5, n_heads=2, noise=0.5, random_state=1)
    model = LinearAttentionRegressor(alpha=1.0).fit(X, y)
    fixed = LinearAttentionRegressor(alpha=1.0, n_heads=2).fit(X, y)
    monkeypatch.setattr("sklearn_linattn._heads.TRAINING_FLOOR", 0.0)
    fitted = LinearAttentionRegressor(alpha=1.0).fit(X, y)
    search = model.head_search_
    assert search.criterion == "lifted"
    assert search.counts_tried[0] == 1 and {2, 3}.isdisjoint(search.counts_tried)
    two = fixed.head_search_.counts[0]
    assert not fixed.head_search_.passes
    assert two.gcv_error > search.gcv_error  # failed by generalized CV
    assert fitted.head_search_.counts_tried[:2] == (1, 2)
    assert not any(count.passes for count in fitted.head_search_.counts)
    assert fitted.n_heads_ == model.n_heads_
    np.testing.assert_array_equal(
        fitted.head_search_.value_matrices, search.value_matrices
    )


@pytest.mark.parametrize("seed", [2, 3])  # (split 0: 3 heads pass the folds)
def test_counts_only_tol_can_pass_are_judged_by_completing_the_split(seed):
    """sklearn's wine, 133 rows of d = 9 (positions and a constant), three
    classes, alpha 2 to 22 (the CV estimator): from 5 heads on, a count fails
    generalized cross-validation whatever its training error, and passes only
    by reproducing the lifted fit. Fitting counts 5 to 8 only to fail had cost
    1.5 times the rest of the read-out, and the work limit stopped the search
    before 9 heads reproduced the lifted fit. The split completed to rank k
    decides such counts; one below the count returned is fitted as
    n_heads=k - 1 fits it (seed 2: 8 heads reproduce the lifted fit, the
    completion of rank 8 does not), and fails as it does. Without a work limit:
    these searches spend 0.91 and 1.06 times the default limit's work, so the
    last digits of the fits' iterations would decide whether they finish."""
    X, y = load_wine(return_X_y=True)
    X_train, _, y_train, _ = train_test_split(
        X, y, test_size=0.25, random_state=seed, stratify=y
    )
    X_train = StandardScaler().fit_transform(X_train)
    X_train = np.pad(X_train, ((0, 0), (0, 2))).reshape(len(X_train), 5, 3)
    positions = PositionalEncoding(constant=True, padding=None)
    X_train = positions.fit_transform(X_train)
    model = LinearAttentionClassifierCV(head_work_limit=None).fit(X_train, y_train)
    search = model.head_search_
    assert search.complete and search.criterion == "tol"
    lifted = clone(model).set_params(n_heads=None).fit(X_train, y_train)
    distance = np.linalg.norm(model.coef_ - lifted.coef_)
    assert distance <= search.tol * np.linalg.norm(lifted.coef_)
    on_gcv = [c for c in search.counts if c.failed_on == "gcv"]
    assert len(on_gcv) >= 3 and all(c.gcv_error > c.threshold for c in on_gcv)
    fewer = clone(model).set_params(n_heads=model.n_heads_ - 1)
    assert not fewer.fit(X_train, y_train).head_search_.passes


def _noisy_classes(n_rows, n_tokens, token_dim, n_heads, noise, seed, positions):
    """Three classes by the terciles of a random two-output attention's first
    output plus noise (relative to its spread), from ``n_rows`` sequences."""
    X, y, _ = make_random_mhla(
        n_rows + 200, n_tokens, token_dim, n_heads=n_heads, n_outputs=2,
        random_state=seed,
    )
    rng = np.random.default_rng(seed)
    y = y + noise * np.std(y, axis=0) * rng.normal(size=y.shape)
    if positions:
        X = PositionalEncoding(constant=True, padding=None).fit_transform(X)
    labels = np.searchsorted(np.quantile(y[:, 0], [1 / 3, 2 / 3]), y[:, 0])
    return X[:n_rows], labels[:n_rows], rng


def test_a_count_the_completion_passes_is_passed_by_n_heads_k():
    """14 sequences of one-hot positions beside a constant (d = 4, p = 40),
    three classes, alpha = 0: the training Gram is singular. The split
    completed to rank 4 reproduced the lifted fit with its values fitted in
    the Frobenius metric, and the search returned 4 heads on tol; every fit
    of those query rows (n_heads=4's first start) solves the values on the
    training rows, which leave directions unseen: 0.09 from the lifted fit,
    and n_heads=4 failed. The completion is judged with the fit's values: a
    count the search passes, n_heads=k passes."""
    X, y, _ = _noisy_classes(14, 2, 1, 1, 0.05, 835435726, positions=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "alpha=0 and the model", UserWarning)
        model = LinearAttentionClassifier().fit(X, y)
        for count in model.head_search_.counts:
            if count.criterion == "tol" or count.failed_on == "gcv":
                fixed = clone(model).set_params(n_heads=count.n_heads).fit(X, y)
                assert fixed.head_search_.passes == count.passes, count
        fixed = clone(model).set_params(n_heads=model.n_heads_).fit(X, y)
        assert fixed.head_search_.passes


def test_counts_skipped_below_a_completion_that_missed_are_fitted():
    """25 sequences of d = 3, three classes, alpha = 10, an intercept and
    sample weights: 1 head fails, the completions of ranks 2, 4 and 5 fail
    (3 skipped by galloping), and the fits of 5 and 4 heads reproduce the
    lifted fit. 3 heads reproduce it too (the parent of the completion
    returned 3): the counts below a completion that a fit passes are fitted
    one at a time down, skipped ones included, so that n_heads=k - 1 fails."""
    X, y, rng = _noisy_classes(25, 5, 3, 3, 0.3, 55594764, positions=False)
    weights = rng.uniform(0.2, 3.0, size=25)
    model = LinearAttentionClassifier(alpha=10.0, fit_intercept=True)
    model.fit(X, y, sample_weight=weights)
    search = model.head_search_
    assert search.complete and search.criterion == "tol"
    lifted = clone(model).set_params(n_heads=None).fit(X, y, sample_weight=weights)
    distance = np.linalg.norm(model.coef_ - lifted.coef_)
    assert distance <= search.tol * np.linalg.norm(lifted.coef_)
    fewer = clone(model).set_params(n_heads=model.n_heads_ - 1)
    assert not fewer.fit(X, y, sample_weight=weights).head_search_.passes


@pytest.mark.parametrize(
    "n_samples, n_heads, alpha, failing",
    [
        # two heads have 140 parameters for 120 training rows a fold
        (150, 3, 0.01, 2),
        # three heads refitted from the full fit: cross-validated error 0.35
        # against the lifted fit's 0.41, new data predicted 2.3 times worse
        (200, 4, 1e-3, 3),
    ],
)
def test_heads_with_about_as_many_parameters_as_rows_predict_like_the_lifted_fit(
    n_samples, n_heads, alpha, failing
):
    """Noisy d = 8, few sequences: a count's refits that start from the full fit
    (which has seen the fold) make it look good held out, and so does the
    lifted fit's error on 80% of the rows, near its interpolation point; the
    count fails, and the heads returned predict new data about as well as
    n_heads=None."""
    X, y, _ = make_random_mhla(
        n_samples + 2000, 6, 8, n_heads=n_heads, noise=0.1, random_state=1
    )
    train, test = slice(0, n_samples), slice(n_samples, None)
    model = LinearAttentionRegressor(alpha=alpha).fit(X[train], y[train])
    lifted = LinearAttentionRegressor(alpha=alpha, n_heads=None).fit(X[train], y[train])
    search = model.head_search_
    count = next(c for c in search.counts if c.n_heads == failing)
    assert count.passes is False and model.n_heads_ > failing

    def test_error(estimator):
        return np.mean((estimator.predict(X[test]) - y[test]) ** 2)

    assert test_error(model) <= 1.25 * test_error(lifted)


# --- classification and real-like data ----------------------------------------------


def digits_split(split):
    digits = load_digits()
    X = digits.data.reshape(-1, 8, 8) / 16.0
    if split == "positions":
        X = PositionalEncoding().fit_transform(X)
        train, test = train_test_split(
            np.arange(len(X)), test_size=0.25, stratify=digits.target, random_state=0
        )
    elif split == "random":
        train, test = train_test_split(np.arange(len(X)), random_state=0)
    else:
        train, test = np.arange(1000), np.arange(1000, len(X))
    return X[train], digits.target[train], X[test], digits.target[test]


@pytest.mark.parametrize("split", ["first", "positions", "random"])
def test_digits_heads_classify_as_well_as_the_lifted_fit(split):
    """Plain defaults on digits rows (the first 1000 images; rows plus
    positions on a stratified split; rows on benchmarks/bench_default_cases.py's
    random split): the heads' held-out accuracy is within 0.02 of
    n_heads=None's (the F-test returned 1 head: 0.30 against 0.75)."""
    X, y, X_test, y_test = digits_split(split)
    lifted = LinearAttentionClassifier(n_heads=None).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = LinearAttentionClassifier().fit(X, y)
    search = model.head_search_
    cut_short = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(cut_short) == (not search.complete)  # a search cut short says so
    failed = [count.n_heads for count in search.counts if count.passes is False]
    if cut_short and failed:  # and how far it got
        message = str(cut_short[0].message)
        assert f"failed: {failed} heads" in message
    assert search.passes
    assert model.score(X_test, y_test) >= lifted.score(X_test, y_test) - 0.02


def test_heads_stay_bounded_where_the_training_gram_is_singular():
    """Digits rows have pixels that are zero in every image: the training Gram
    is singular, and 12 heads drifted along its null space to 2e8 times the
    lifted fit's norm (no change on the training rows, chance accuracy with
    noise of 1e-3 on the test pixels, and heads dropped as zero relative to the
    drifting norm: 1 of 12 here). Polished with a penalty on the distance to
    the lifted fit (DRIFT), they stay near its norm, and predict perturbed
    images as the unperturbed ones. Where the heads sit along the null space
    follows the BLAS kernel's bits: their norm was 3.0 times the lifted fit's
    with OpenBLAS's SkylakeX kernels and 5.5 with Sandybridge's, and the noise
    changed 0 and 0.67% of the test predictions (helper-118); the bounds are
    100 times and 0.1, far from the drift's 2e8 and chance accuracy."""
    X, y = load_digits(return_X_y=True)
    X_test, y_test = X[600:], y[600:]
    X, y = X[:600], y[:600]
    lifted = LinearAttentionClassifier(token_dim=8, n_heads=None).fit(X, y)
    model = LinearAttentionClassifier(token_dim=8, n_heads=12).fit(X, y)
    assert model.n_heads_ == 12
    assert np.linalg.norm(model.coef_) < 100 * np.linalg.norm(lifted.coef_)
    assert model.score(X, y) > 0.8
    noise = 1e-3 * np.random.default_rng(0).normal(size=X_test.shape)
    accuracy = model.score(X_test, y_test)
    assert abs(model.score(X_test + noise, y_test) - accuracy) < 0.1
    assert accuracy >= lifted.score(X_test, y_test) - 0.02


def test_counts_are_judged_on_heads_that_stay_near_the_lifted_fit():
    """Lag windows of a series far from zero (as statsmodels' monthly El Nino
    temperatures: 12 lags, tokens of 2 values, positions, alpha = 0): the
    training Gram is near singular, and k-head fits drift along its null space.
    The search judged 1 head at 1e6 times the lifted fit's norm, where its
    training, linearized and generalized cross-validated errors all came out 0
    (rounding; El Nino: 2 heads' training error 9.4 against the lifted fit's
    0.036, refits linearized at 1e7 times their folds' norm). A count is judged
    on heads held within DRIFT of the lifted fit, as n_heads=k returns them."""
    rng = np.random.default_rng(0)
    drift = np.zeros(620)
    for t in range(1, 620):
        drift[t] = 0.8 * drift[t - 1] + rng.normal()
    values = 15 + np.sin(2 * np.pi * np.arange(620) / 12) + 0.3 * drift
    X = np.stack([values[t - 12 : t] for t in range(12, 512)])
    y = values[12:512]
    tokens = [SeriesToTokens(window=2), PositionalEncoding(constant=True)]
    for n_heads in ["auto", 1]:
        model = make_pipeline(*tokens, LinearAttentionRegressor(n_heads=n_heads))
        model.fit(X, y)
        training_error = np.mean((model.predict(X) - y) ** 2)
        count = model[-1].head_search_.counts[0]
        assert count.n_heads == 1
        assert count.relative_distance < DRIFT + 1
        assert count.training_error == pytest.approx(training_error, rel=0.1)
        # refits linearized at bounded heads agree with the folds' own refits
        # (2.5% apart; before, 0 against 0.116): within half, 20 times that
        assert count.linearized_cv_error == pytest.approx(count.cv_error, rel=0.5)


@pytest.mark.parametrize(
    "seed, token_dim, n_samples, n_outputs, noise, alpha",
    [(7106, 3, 20, 1, 0.0, 0.1), (7126, 5, 37, 3, 0.2, 0.0)],
)
def test_small_classifications_classify_about_as_well_as_the_lifted_fit(
    seed, token_dim, n_samples, n_outputs, noise, alpha
):
    """With 20 to 40 sequences held-out misclassification takes few values, and a
    count tied with the lifted fit passed by the tie (1 head of the binary case:
    test accuracy 0.73 against 0.81); the heads classify new data about as well
    as n_heads=None."""
    X, scores, _ = make_random_mhla(
        n_samples + 4000, 10, token_dim, n_heads=2, n_outputs=n_outputs,
        random_state=seed,
    )
    scores = scores.reshape(len(X), -1)
    scores = scores + noise * scores.std() * np.random.default_rng(seed).normal(
        size=scores.shape
    )
    if n_outputs == 1:
        labels = (scores[:, 0] > np.median(scores[:n_samples, 0])).astype(int)
    else:
        labels = np.argmax(scores, axis=1)
    train, test = slice(0, n_samples), slice(n_samples, None)
    model = LinearAttentionClassifier(alpha=alpha).fit(X[train], labels[train])
    lifted = LinearAttentionClassifier(alpha=alpha, n_heads=None).fit(
        X[train], labels[train]
    )
    accuracy = model.score(X[test], labels[test])
    assert accuracy >= lifted.score(X[test], labels[test]) - 0.03


def test_a_count_tied_with_the_lifted_fit_in_misclassified_rows_fails(monkeypatch):
    """Five classes (the largest of 5 outputs of a d = 3 model, 10% of labels
    redrawn), 42 sequences: near interpolation, where a count is held to the
    lifted fit's misclassification itself, one head misclassifies as many
    held-out rows as the lifted fit, 27 of 42 (a tie, once passed on the
    refits' lower squared error: one head at 0.403 accuracy on new data against
    n_heads=None's 0.539; passed here, one head at 0.514 against 0.592). A tie
    is not shown to classify as well, and fails. (Without the noisy fits'
    random starts, as the tie was first found; here they change no count, and
    two heads pass, misclassifying 0.619 of the held-out rows against 0.643.)"""
    monkeypatch.setattr("sklearn_linattn._heads.NOISY_RANDOM_STARTS", 0)
    X, scores, _ = make_random_mhla(52 + 3000, 8, 3, n_heads=2, n_outputs=5,
                                    random_state=23)
    rng = np.random.default_rng(110)
    labels = np.argmax(scores / scores.std(axis=0), axis=1)
    noisy = labels.copy()
    redrawn = rng.random(len(labels)) < 0.1
    noisy[redrawn] = rng.integers(0, 5, redrawn.sum())
    model = LinearAttentionClassifier().fit(X[:42], noisy[:42])
    lifted = LinearAttentionClassifier(n_heads=None).fit(X[:42], noisy[:42])
    search = model.head_search_
    tied = [c for c in search.counts if c.cv_error == search.cv_error]
    assert tied and all(c.threshold == search.cv_error for c in tied)
    assert not any(c.passes for c in tied)
    accuracy = np.mean(model.predict(X[52:]) == labels[52:])
    assert accuracy >= np.mean(lifted.predict(X[52:]) == labels[52:]) - 0.02


def test_counts_of_a_classifier_without_held_out_errors_are_judged_on_the_scores():
    """Labels of a 2-head d = 3 model on rows far from its median (97 of 400):
    the lifted fit misclassifies no held-out row, so its bound is 0 and no
    misclassified share is below it; every count failed, and the lifted fit's
    3 heads came back. A count that misclassifies none ties at 0 and the class
    scores' test decides: 1 head fails on it, the generating 2 pass, and they
    classify new rows as n_heads=None does (0.9956 against 0.9971 of 683)."""
    X, y, _ = make_random_mhla(400 + 3000, 8, 3, n_heads=2, random_state=0)
    middle = np.median(y[:400])
    far = np.abs(y - middle) > y[:400].std()
    labels = (y > middle).astype(int)
    train, test = far & (np.arange(len(y)) < 400), far & (np.arange(len(y)) >= 400)
    model = LinearAttentionClassifier().fit(X[train], labels[train])
    lifted = LinearAttentionClassifier(n_heads=None).fit(X[train], labels[train])
    search = model.head_search_
    assert search.cv_error == 0 and lifted.n_heads_ == 3
    one, two = search.counts
    assert (one.n_heads, one.cv_error, one.failed_on) == (1, 0, "scores")
    assert one.score_cv_error > one.score_threshold
    assert two.passes and two.cv_error == two.threshold == 0
    assert two.score_cv_error <= two.score_threshold
    assert model.n_heads_ == 2 and search.criterion == "cv"
    accuracy = model.score(X[test], labels[test])
    assert accuracy >= lifted.score(X[test], labels[test]) - 0.02


def test_a_classifiers_count_that_is_the_lifted_fit_on_the_data_passes():
    """Positions and a constant (the documented recipe) leave the lifted
    coefficients unidentified: two heads fit the training rows as the lifted fit
    does (training objective within tol^2) and each fold's refit misclassifies
    the same held-out rows with the same class scores. That tie is one function,
    not heads shown no better than it: they pass, rather than every count up to
    the lifted fit's 6 failing (3 classes: a search cut short at the work limit
    with a ConvergenceWarning)."""
    Z, y = classes_with_positions_and_a_constant()
    model = LinearAttentionClassifier().fit(Z, y)
    lifted = LinearAttentionClassifier(n_heads=None).fit(Z, y)
    search = model.head_search_
    assert (model.n_heads_, search.criterion, search.complete) == (2, "cv", True)
    assert lifted.n_heads_ > 2
    passed = search.counts[-1]
    assert passed.training_loss <= model.tol**2
    assert passed.cv_error <= passed.threshold == search.cv_error
    np.testing.assert_allclose(
        model.decision_function(Z), lifted.decision_function(Z), atol=1e-10
    )
    fixed = LinearAttentionClassifier(n_heads=2).fit(Z, y).head_search_
    assert fixed.passes



def test_a_classifiers_count_that_is_the_lifted_fit_on_the_data_may_beat_it_on_a_fold():
    """Four classes, positions and a constant, integer sample weights: 4 heads
    fit the training rows as the lifted fit does, and their refits tie its
    misclassified weight on every fold; on one fold the refit, not quite that
    fold's lifted fit, predicts the held-out class scores better (by 1.7e-6,
    relative). No worse on every fold is the lifted fit on the data: they
    pass (a tie was asked on every fold, and the lifted fit's 18 heads came
    back), and 3 heads fail."""
    X, y = make_classification(
        600, n_features=8, n_informative=5, n_classes=4, flip_y=0.05, random_state=1
    )
    Z = StandardScaler().fit_transform(X[:300]).reshape(300, 4, 2)
    Z = PositionalEncoding(constant=True, padding=None).fit_transform(Z)
    y = y[:300]
    weights = np.random.default_rng(2).integers(1, 4, 300).astype(float)
    model = LinearAttentionClassifier().fit(Z, y, sample_weight=weights)
    lifted = LinearAttentionClassifier(n_heads=None).fit(Z, y, sample_weight=weights)
    search = model.head_search_
    passed = search.counts[-1]
    assert (model.n_heads_, passed.passes) == (4, True) and lifted.n_heads_ > 4
    assert passed.training_loss <= model.tol**2
    assert passed.cv_error == passed.threshold == search.cv_error
    assert passed.score_cv_error < passed.score_threshold
    scores = lifted.decision_function(Z)
    assert_allclose(
        model.decision_function(Z), scores, rtol=0, atol=1e-10 * np.abs(scores).max()
    )
    fewer = LinearAttentionClassifier(n_heads=3).fit(Z, y, sample_weight=weights)
    assert not fewer.head_search_.passes

def test_a_classifiers_count_must_predict_its_class_scores_as_well():
    """Nine sequences of a three-head d = 3 model, three classes (the largest of
    three outputs), alpha=0.1: one head's refits misclassified 4 of the 9
    held-out sequences against the lifted fit's 6, and it passed, classifying
    0.43 of new sequences against n_heads=None's 0.60. Its refits' held-out
    squared error of the class scores is 1.8 times the lifted fit's: it fails
    on them, here and as n_heads=1. The errors are those of explicit refits on
    the 5 interleaved folds (+1/-1 one-hot targets)."""
    X, labels = few_sequences_three_classes()
    train, test = slice(0, 9), slice(9, None)
    params = dict(alpha=0.1, fit_intercept=True)
    model = LinearAttentionClassifier(**params).fit(X[train], labels[train])
    one = model.head_search_.counts[0]
    assert one.n_heads == 1 and one.cv_error < one.threshold  # misclassification
    assert one.failed_on == "scores" and one.score_cv_error > one.score_threshold

    def explicit_score_error(n_heads):
        """Held-out squared error of the scores, refitted without each fold."""
        total = 0.0
        for fold in range(5):
            held = naive_fold_layout(9) == fold
            refit = LinearAttentionClassifier(n_heads=n_heads, **params).fit(
                X[train][~held], labels[train][~held]
            )
            targets = 2 * np.eye(3)[labels[train][held]] - 1
            total += np.sum((refit.decision_function(X[train][held]) - targets) ** 2)
        return total / (9 * 3)

    assert one.score_cv_error == pytest.approx(explicit_score_error(1), rel=1e-9)
    # near interpolation the threshold is not lowered: the lifted fit's error
    assert one.score_threshold == pytest.approx(explicit_score_error(None), rel=1e-9)
    asked = LinearAttentionClassifier(n_heads=1, **params).fit(X[train], labels[train])
    assert asked.head_search_.counts[0].failed_on == "scores"
    assert not asked.head_search_.passes
    lifted = LinearAttentionClassifier(n_heads=None, **params).fit(
        X[train], labels[train]
    )
    accuracy = model.score(X[test], labels[test])
    assert accuracy >= lifted.score(X[test], labels[test]) - 0.02


def test_a_tie_in_misclassified_rows_is_a_tie_to_rounding():
    """Three classes, 38 sequences (near interpolation: the threshold is the
    lifted fit's misclassification itself): one head and the lifted fit
    misclassify 23 held-out rows each, but their shares (means over the folds
    of each fold's mean) come out an ulp apart, the threshold below one head's
    share without weights and above it with weights of one (a tie so decided
    returned 1 head against 4). Both are ties, and fail."""
    rng = np.random.default_rng(236)
    n = int(rng.integers(30, 45))
    X, scores, _ = make_random_mhla(
        n, 6, 3, n_heads=1, n_outputs=3, noise=1.0, random_state=236
    )
    labels = np.argmax(scores, axis=1)
    plain = LinearAttentionClassifier(alpha=1e-3).fit(X, labels)
    weighted = LinearAttentionClassifier(alpha=1e-3).fit(
        X, labels, sample_weight=np.ones(n)
    )
    assert plain.n_heads_ == weighted.n_heads_
    for model in (plain, weighted):
        one = model.head_search_.counts[0]
        assert one.cv_error == pytest.approx(model.head_search_.cv_error, rel=1e-12)
        assert one.threshold <= model.head_search_.cv_error
        assert not one.passes


def test_short_bivariate_series_fit_with_every_default():
    """Fewer series than lifted features, 2 channels, the documented preprocessing
    (as aeon's CardanoSentiment: the default crashed in the previous search)."""
    rng = np.random.default_rng(0)
    series = np.cumsum(rng.normal(size=(74, 2, 24)), axis=2)
    y = series[:, 0, -4:].mean(axis=1) * series[:, 1, -1] + rng.normal(size=74)
    model = make_pipeline(
        SeriesToTokens(),
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(constant=True),
        LinearAttentionRegressor(),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinAlgWarning)
        warnings.simplefilter("error", RuntimeWarning)
        model.fit(series, y)
    search = model[-1].head_search_
    assert model[-1].solver_ == "dual" and search.complete
    assert np.all(np.isfinite(model.predict(series)))


def test_head_fits_run_clean_with_warnings_as_errors():
    cases = [
        noisy_sequences(1, 3, 2, 2, 0.05),
        noisy_sequences(2, 4, 2, 1, 0.0),
        noisy_sequences(3, 4, 2, 1, 0.1, n_samples=25),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # (the warning that an interpolating fit of noisy data predicts poorly is
        # the point of the third case, not the head fit's)
        warnings.filterwarnings("ignore", message="alpha=0 and the model has")
        for _, X, y in cases:
            for n_heads in ("auto", 1, 2):
                LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
        LinearAttentionClassifier().fit(cases[0][1], cases[0][2][:, 0] > 0)


# --- fixed counts ---------------------------------------------------------------------


def test_two_heads_of_two_outputs_reach_the_generating_models_loss():
    """n_heads=2 on d=3, H=2, 2 outputs with noise: the training loss of the
    generating model or better (the previous fit stopped at 5.15 against 0.81)."""
    truth, X, y = noisy_sequences(7, 3, 2, 2, 0.1, n_samples=200)
    model = LinearAttentionRegressor(n_heads=2).fit(X, y)
    generating = np.sum((y - truth.predict(X)) ** 2)
    assert model.n_heads_ == 2
    assert training_objective(model, X, y) <= generating * (1 + 1e-9)


@pytest.mark.parametrize(
    "seed, token_dim, n_heads, noise, n_samples",
    [(14, 3, 2, 0.1, 200), (31, 3, 2, 0.3, 200), (18, 4, 3, 0.1, 400),
     (28, 4, 3, 0.1, 400)],
)
def test_fixed_counts_of_two_outputs_reach_the_generating_models_loss(
    seed, token_dim, n_heads, noise, n_samples
):
    """The family of the test above: with two random starts screened by 5
    steps, n_heads=H stopped above the generating model's training loss on
    these seeds (up to 1.24 times; 11 of 300 seeds, bench_heads.py --only
    fixed). Four random starts screened by 10 steps reach it."""
    truth, X, y = noisy_sequences(seed, token_dim, n_heads, 2, noise, n_samples)
    model = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
    generating = np.sum((y - truth.predict(X)) ** 2)
    assert training_objective(model, X, y) <= generating * (1 + 1e-9)


def test_two_heads_of_three_outputs_near_interpolation_reach_the_generating_loss():
    """d = 5, 90 sequences (p = 75), 2 generating heads, 3 outputs, 10% noise,
    alpha = 1e-3: from the completion and the split's SVD alone, n_heads=2
    stopped at 4.5 times the generating model's training error, and the
    default returned those 2 heads with 1.8 times the lifted fit's test error.
    With the seeded random starts of several outputs' noisy fits, 2 heads fit
    the training rows at least as well as the generating model, and predict
    new sequences better than the lifted fit."""
    n = 90
    X, y, truth = make_random_mhla(n + 1000, 10, 5, n_heads=2, n_outputs=3,
                                   random_state=5000)
    clean = y.copy()
    y = y + 0.1 * y[:n].std() * np.random.default_rng(6000).normal(size=y.shape)
    fixed = LinearAttentionRegressor(n_heads=2, alpha=1e-3, fit_intercept=True)
    fixed.fit(X[:n], y[:n])
    assert np.mean((fixed.predict(X[:n]) - y[:n]) ** 2) <= np.mean(
        (clean[:n] - y[:n]) ** 2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few rows per lifted feature
        default = LinearAttentionRegressor(alpha=1e-3, fit_intercept=True)
        lifted = clone(default).set_params(n_heads=None)
        errors = [
            np.mean((model.fit(X[:n], y[:n]).predict(X[n:]) - y[n:]) ** 2)
            for model in (default, lifted)
        ]
    assert default.n_heads_ == 2 and errors[0] < errors[1]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_k_heads_beat_the_truncated_paper_read_out(k):
    truth, X, y = noisy_sequences(40 + k, 5, 4, 1, 0.01)
    model = LinearAttentionRegressor(n_heads=k).fit(X, y)
    search = model.head_search_
    assert model.n_heads_ == k and search.criterion == "fixed"
    lifted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    value, query = paper_heads(lifted.coef_[None], 5, tol=0.0)
    truncated = MultiHeadLinearAttention(value[:k], query[:k])
    assert training_objective(model, X, y) <= np.sum(
        (y[:, 0] - truncated.predict(X)[:, 0]) ** 2
    )


def test_k_heads_are_a_local_minimum_of_the_training_objective(rng):
    truth, X, y = noisy_sequences(8, 3, 3, 1, 0.05, n_samples=120)
    model = LinearAttentionRegressor(n_heads=2, alpha=0.1).fit(X, y[:, 0])
    features = naive_lifted_features(X)

    def objective(value, query):
        theta = MultiHeadLinearAttention(value, query).lifted_coef()[0]
        return np.sum((y[:, 0] - features @ theta) ** 2) + 0.1 * np.sum(theta**2)

    value, query = model.value_matrices_, model.query_matrices_
    best = objective(value, query)
    for _ in range(20):
        moved = objective(
            value + 1e-4 * rng.normal(size=value.shape),
            query + 1e-4 * rng.normal(size=query.shape),
        )
        assert moved >= best * (1 - 1e-9)


@pytest.mark.parametrize("heads", [0, 1])
def test_a_fixed_count_of_a_lifted_fit_of_at_most_one_head_is_fixed(heads):
    """n_heads=k where the lifted fit has at most one head (zero targets, or
    scalar tokens): the criterion is "fixed", as for any count asked for (it
    said "tol", the default's word)."""
    truth, X, y = noisy_sequences(12, 1, 1, 1, 0.0)
    y = y if heads else np.zeros_like(y)
    for k in (1, 2):
        search = LinearAttentionRegressor(n_heads=k).fit(X, y).head_search_
        assert search.n_heads == heads
        assert search.criterion == "fixed" and search.passes
    assert LinearAttentionRegressor().fit(X, y).head_search_.criterion == "tol"


def test_a_fixed_count_reports_its_verdict():
    truth, X, y = noisy_sequences(9, 4, 2, 1, 0.05)
    one = LinearAttentionRegressor(n_heads=1).fit(X, y).head_search_
    two = LinearAttentionRegressor(n_heads=2).fit(X, y).head_search_
    assert one.criterion == two.criterion == "fixed"
    assert one.passes is False and two.passes is True
    assert one.counts_tried == (1,) and two.counts_tried == (2,)
    # a count asked for is cross-validated even when its training error fails it
    fit = one.counts[0]
    assert fit.training_error > one.cv_error
    assert fit.linearized_cv_error >= fit.training_error



def test_a_linearized_refit_survives_lapacks_least_squares_not_converging(
    monkeypatch,
):
    """A singular normal matrix the Gauss-Newton step cannot factorize goes to
    least squares; LAPACK's gelsd failed on one (finite, entries below 3e-4:
    its SVD did not converge) and n_heads=4 of 16 noisy sequences at d = 4
    with 3 outputs raised LinAlgError ("SVD did not converge in Linear Least
    Squares") from the linearized refits. gelss (gesvd) solves it: the
    minimum-norm solution, and the fit returns its verdict (from the refits:
    generalized cross-validation, which fails the count without them, is
    turned off)."""
    import scipy.linalg

    from sklearn_linattn._low_rank import _lstsq

    rng = np.random.default_rng(0)
    factor = rng.normal(size=(12, 20))
    normal = factor.T @ factor  # singular, rank 12
    gradient = normal @ rng.normal(size=20)
    lstsq = scipy.linalg.lstsq

    def gelsd_fails(*args, lapack_driver="gelsd", **kwargs):
        if lapack_driver == "gelsd":
            raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")
        return lstsq(*args, lapack_driver=lapack_driver, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(scipy.linalg, "lstsq", gelsd_fails)
        solution = _lstsq(normal, gradient)
    assert_allclose(solution, np.linalg.pinv(normal) @ gradient, rtol=1e-8, atol=1e-10)
    # the data whose gelsd failed with this machine's OpenBLAS 0.3.30
    X, y, _ = make_random_mhla(16, 5, 4, n_heads=2, n_outputs=3, random_state=321813192)
    y = np.asarray(y)
    y = y + 0.1 * y.std(axis=0) * np.random.default_rng(321813192).normal(size=y.shape)
    monkeypatch.setattr("sklearn_linattn._heads.INTERPOLATION_MARGIN", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (p = 40 for 16 sequences)
        model = LinearAttentionRegressor(alpha=1e-3, n_heads=4).fit(X, y)
    assert model.n_heads_ <= 4 and np.all(np.isfinite(model.coef_))
    count = model.head_search_.counts[0]
    assert count.folds_refitted == 5 and count.linearized_cv_error >= 0
    assert count.cv_error >= 0

# --- what head_search_ says -----------------------------------------------------------


def test_head_search_lists_every_count_with_its_verdict(capsys):
    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    model = LinearAttentionRegressor(verbose=1).fit(X, 100 * y)
    search = model.head_search_
    out = capsys.readouterr().out
    for count in search.counts:  # verbose prints them as head_search_ has them
        heads = "1 head" if count.n_heads == 1 else f"{count.n_heads} heads"
        assert f"[heads] {heads}: {count}" in out
    assert isinstance(search, HeadReadout)
    assert search.counts_tried == (1, 2)
    one, two = search.counts
    assert one.passes is False and two.passes is True
    # one head fails on its training error alone; two are cross-validated
    assert np.isnan(one.cv_error) and one.training_error > search.cv_error
    assert two.training_error <= two.cv_error <= search.cv_error
    assert one.relative_distance > two.relative_distance
    assert 0 < search.work <= search.work_limit
    assert f"{search.n_heads} heads (cv)" in out


@pytest.mark.parametrize("seed, token_dim, n_heads, n_outputs", [
    (11, 4, 2, 1), (12, 5, 3, 1), (13, 4, 2, 3), (14, 6, 3, 2),
])
def test_counts_fail_on_a_training_error_above_the_threshold(
    seed, token_dim, n_heads, n_outputs
):
    """A count whose training error exceeds the lifted fit's cross-validated
    error fails without refitted folds; a cross-validated error is never below
    the training error (held-out residuals of least squares are at least the
    in-sample ones); every count cross-validated is at least the fewest the
    training error does not reject."""
    truth, X, y = noisy_sequences(seed, token_dim, n_heads, n_outputs, 0.05)
    search = LinearAttentionRegressor().fit(X, y).head_search_
    assert search.criterion == "cv" and search.n_heads == n_heads
    unrefitted = [c for c in search.counts if np.isnan(c.cv_error)]
    refitted = [c for c in search.counts if np.isfinite(c.cv_error)]
    assert unrefitted and refitted
    for count in unrefitted:
        if count.criterion == "cv":
            assert count.passes is False and count.training_error > search.cv_error
        else:  # within the threshold, above the count returned: left undecided
            assert count.criterion == "training" and count.passes is None
            assert count.training_error <= search.cv_error
            assert count.n_heads > search.n_heads
    fewest = min(
        c.n_heads for c in search.counts if c.training_error <= search.cv_error
    )
    for count in refitted:
        assert count.cv_error >= count.training_error
        assert count.n_heads >= fewest


def test_classifier_counts_are_all_cross_validated():
    """Misclassification has no training-error bound: every count the
    classifier fits on rows in memory is decided by held-out errors, of its
    folds' refits or of their linearization (3p sequences: no generalized
    cross-validation)."""
    truth, X, y = noisy_sequences(15, 4, 2, 1, 0.3)
    search = LinearAttentionClassifier().fit(X, y[:, 0] > 0).head_search_
    assert search.counts
    for count in search.counts:
        assert np.isnan(count.training_error)
        if count.criterion == "cv" and count.folds_refitted is None:
            assert count.linearized_cv_error > search.cv_error
        elif count.criterion == "cv" and count.folds_refitted < 5:  # failed early
            assert np.isnan(count.cv_error) and not count.passes
        else:
            assert count.criterion != "cv" or np.isfinite(count.cv_error)


@pytest.mark.parametrize("classify, seed", [(False, 6), (True, 37)])
def test_refits_stop_at_the_first_folds_that_fail_a_count(classify, seed, monkeypatch):
    """A count the first folds' refits already fail, whatever errors the
    others hold, is not refitted on those: the same counts, verdicts and heads
    as refitting every fold, for less work."""
    truth, X, y = noisy_sequences(seed, 4, 2, 1, 0.3)
    if classify:
        estimator, y = LinearAttentionClassifier(), y[:, 0] > 0
    else:
        estimator, y = LinearAttentionRegressor(), y[:, 0]
    stopping = clone(estimator).fit(X, y).head_search_
    monkeypatch.setattr(_Search, "fails_whatever_follows", lambda *_: False)
    every_fold = clone(estimator).fit(X, y).head_search_
    stopped = [c for c in stopping.counts if (c.folds_refitted or 5) < 5]
    assert stopped, "no count stopped early: the test exercises nothing"
    assert stopping.counts_tried == every_fold.counts_tried
    for early, full in zip(stopping.counts, every_fold.counts, strict=True):
        assert early.passes == full.passes
        if (early.folds_refitted or 5) < 5:
            assert full.folds_refitted == 5 and np.isfinite(full.cv_error)
    np.testing.assert_array_equal(
        stopping.value_matrices, every_fold.value_matrices
    )
    assert stopping.work < every_fold.work
    # a count asked for is refitted on every fold, and reports its errors
    monkeypatch.undo()
    for early in stopped:
        asked = clone(estimator).set_params(n_heads=early.n_heads).fit(X, y)
        count = asked.head_search_.counts[0]
        full = every_fold.counts[every_fold.counts_tried.index(early.n_heads)]
        assert count.folds_refitted == 5 and count.passes is False
        assert count.cv_error == full.cv_error
        assert count.folds_within == full.folds_within


def test_a_count_asked_for_that_generalized_cv_fails_is_not_refitted(monkeypatch):
    """Near interpolation (20 sequences, d = 3, 2 outputs, alpha = 10) n_heads=k
    whose generalized cross-validated error fails is failed without its folds'
    refits: their verdict tests the same gcv_error, so it fails whatever their
    errors (Uschange with 5 outputs, n_heads=10: 37 s of refits that could not
    pass it). Run all the same, the refits fail the same counts."""
    from sklearn_linattn import _heads

    X, y = near_interpolation_two_outputs()

    def asked(k):
        model = LinearAttentionRegressor(alpha=10.0, fit_intercept=True, n_heads=k)
        return model.fit(X, y).head_search_.counts[0]

    skipped = {k: asked(k) for k in (1, 2, 3)}
    for count in skipped.values():
        assert count.passes is False and count.failed_on == "gcv"
        assert count.folds_refitted is None and np.isnan(count.cv_error)
    # the same fits, refitted on the folds: no pre-check before them
    before_refits = _heads._Search.gcv_fails

    def after_the_refits_only(search, k, gcv_error):
        if sys._getframe(1).f_code.co_name == "_fit":
            return False
        return before_refits(search, k, gcv_error)

    monkeypatch.setattr(_heads._Search, "gcv_fails", after_the_refits_only)
    for k, count in skipped.items():
        refitted = asked(k)
        assert refitted.folds_refitted == 5 and refitted.passes is False
        assert refitted.gcv_error == count.gcv_error


@pytest.mark.parametrize("n_rows", [200, 1000])
def test_a_count_asked_for_is_refitted_on_every_fold(n_rows):
    """n_heads=k reports the held-out error of its folds' own refits on every
    fold, also where the search does not refit them all: here it fails 1 head
    on its training error, and 2 and 3 heads after the 3 or 4 folds their
    linearized refits found worst fail them on a majority. The verdict is the
    refits' and agrees with the search's. Only a pass of the linearized refits
    on every fold, with many rows, decides n_heads=k without them, as it
    decides the search (``test_the_search_judges_each_count_as_n_heads_k_does``);
    these data have none."""
    X, y, _ = make_random_mhla(n_rows, 8, 4, n_heads=2, random_state=20)
    y = y + 0.1 * y.std() * np.random.default_rng(20).normal(size=y.shape)
    searched = LinearAttentionRegressor().fit(X, y).head_search_
    for k in (1, 2, 3):
        count = LinearAttentionRegressor(n_heads=k).fit(X, y).head_search_.counts[0]
        assert count.folds_refitted == 5 and np.isfinite(count.cv_error)
        assert np.isfinite(count.linearized_cv_error)
        if k in searched.counts_tried and count.criterion == "cv":
            searched_count = searched.counts[searched.counts_tried.index(k)]
            if searched_count.passes is not None:
                assert count.passes == searched_count.passes


@pytest.mark.parametrize("n_classes", [2, 3])
def test_cv_classifiers_judge_heads_as_the_plain_classifier_does(n_classes):
    """The cross-validated classifiers keep the rows in memory, so their head
    counts are judged by held-out misclassification too: the same counts, errors
    and heads as the plain classifier at the alpha they chose."""
    truth, X, y = noisy_sequences(16, 4, 2, n_classes, 0.3)
    labels = np.argmax(y, axis=1) if n_classes > 2 else y[:, 0] > 0
    searched = LinearAttentionClassifierCV(alphas=[0.05]).fit(X, labels)
    plain = LinearAttentionClassifier(alpha=0.05).fit(X, labels)
    for model in (searched, plain):
        assert all(np.isnan(c.training_error) for c in model.head_search_.counts)
    assert searched.head_search_.counts_tried == plain.head_search_.counts_tried
    np.testing.assert_allclose(
        [c.cv_error for c in searched.head_search_.counts],
        [c.cv_error for c in plain.head_search_.counts],
    )
    assert searched.n_heads_ == plain.n_heads_
    np.testing.assert_allclose(
        searched.attention_.lifted_coef(), plain.attention_.lifted_coef(),
        rtol=1e-6, atol=1e-9 * np.abs(plain.attention_.lifted_coef()).max(),
    )


def test_the_work_limit_cuts_the_search_short_and_says_so(monkeypatch):
    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    full = LinearAttentionRegressor(head_work_limit=None).fit(X, y).head_search_
    assert full.complete and full.work_limit == np.inf
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 0.0)
    with pytest.warns(ConvergenceWarning, match="head_work_limit=1.0") as caught:
        cut = LinearAttentionRegressor(head_work_limit=1.0).fit(X, y)
    search = cut.head_search_
    assert not search.complete and search.work > search.work_limit
    returned = "the lifted fit's" if search.criterion == "lifted" else "the fewest"
    message = str(caught[0].message)
    assert f"it returns {returned}" in message
    failed = [count.n_heads for count in search.counts if count.passes is False]
    if failed:  # how far it got, for a user weighing a higher limit
        assert f"failed: {failed} heads" in message
    with warnings.catch_warnings():  # a search that finishes does not warn
        warnings.simplefilter("error")
        LinearAttentionRegressor(head_work_limit=None).fit(X, y)
    # the fewest passing count found before the limit, else the lifted fit's heads
    lifted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    if search.criterion == "lifted":
        assert cut.n_heads_ == lifted.n_heads_
        np.testing.assert_allclose(cut.coef_, lifted.coef_, rtol=1e-8, atol=1e-12)


def test_a_fit_beyond_the_interpolating_count_that_outruns_its_share_can_pass():
    """The counts beyond the interpolating one are fitted within a share of the
    search's work; a fit that outruns the share goes on (its other starts, its
    polish) and can still reproduce the lifted fit. Stopping such fits where
    the share ran out, as where the work limit does, returned the lifted fit's
    7 heads for 15 diabetes rows (bench_fewest_heads.py's case 49, one of three
    there) where 5 reproduce it and 4 fail."""
    X, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(365140365).permutation(len(X))[:15]
    X = StandardScaler().fit_transform(X[order]).reshape(15, 5, 2)
    X = PositionalEncoding(constant=True, padding=None).fit_transform(X)
    y = (y[order] - y[order].mean()) / y[order].std()
    model = LinearAttentionRegressor(alpha=0.1, fit_intercept=True).fit(X, y)
    search = model.head_search_
    assert (model.n_heads_, search.criterion, search.complete) == (5, "tol", True)
    assert not search.fewer_untried
    fewer = LinearAttentionRegressor(alpha=0.1, fit_intercept=True, n_heads=4)
    assert not fewer.fit(X, y).head_search_.passes


def test_a_search_cut_short_stops_within_one_charge_of_its_limit(monkeypatch):
    """Once the work ran out, a count's fit went on screening its other starts
    (each start's first evaluation charged) and was polished, to be left
    undecided anyway: 3 digits classes as 8 row tokens with positions spent
    1.26e11 flops under a limit of 5.1e10 (helper-113). A search cut short now
    stops there: beyond its limit by at most the last charge."""
    charges = []
    spend = Budget.spend

    def recorded(budget, flops, nominal=None):
        charges.append(flops)
        return spend(budget, flops, nominal)

    monkeypatch.setattr(Budget, "spend", recorded)
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 3e7)
    X, y, _ = make_random_mhla(150, 8, 5, n_heads=3, n_outputs=3, random_state=0)
    rng = np.random.default_rng(0)
    y = y + 0.3 * y.std(axis=0) * rng.normal(size=y.shape)
    with pytest.warns(ConvergenceWarning, match="work limit"):
        model = LinearAttentionRegressor(head_work_limit=0.0).fit(X, y)
    search = model.head_search_
    assert not search.complete and search.work_limit == 3e7
    assert search.work - search.work_limit <= max(charges)



def test_no_fit_of_a_search_cut_short_charges_work_once_the_limit_ran_out(
    monkeypatch,
):
    """On exact data a count fitted in the Frobenius metric that the work
    limit ran out in was refitted in the training metric all the same: the
    refit's first evaluation (1e6 flops, a third of this limit) charged past
    the limit, contrary to "past it by the last such charge"
    (HeadReadout.work). Fits started once the limit is spent charge nothing."""
    from sklearn_linattn import _heads

    started_spent = []

    def recorded(design, queries, max_iter, *args, budget=None, **kwargs):
        before = None if budget is None or not budget.exhausted else budget.spent
        result = fit_heads(design, queries, max_iter, *args, budget=budget, **kwargs)
        if before is not None:
            started_spent.append(budget.spent - before)
        return result

    monkeypatch.setattr(_heads, "fit_heads", recorded)
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 3e6)
    X, y, _ = make_random_mhla(150, 8, 5, n_heads=3, n_outputs=3, random_state=0)
    with pytest.warns(ConvergenceWarning, match="work limit"):
        model = LinearAttentionRegressor(head_work_limit=0.0).fit(X, y)
    assert not model.head_search_.complete
    assert started_spent == [0.0] * len(started_spent)


def test_folds_beyond_the_work_limit_are_not_built(monkeypatch):
    """partial_fit keeps the folds' statistics, and with fewer sequences than
    lifted features each fold's Gram is singular: its eigendecomposition (9 p^3
    flops) was computed for all 5 folds and only then charged, overrunning the
    work limit 3 to 5 times (d = 16 to 21, helper-59). A fold whose
    factorization would exceed the work left is not built: the search is cut
    short within its limit and says so; with the limit lifted it runs."""
    _, X, y = noisy_sequences(2, 6, 2, 1, 0.1, n_samples=60)  # p = 126
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 1e7)
    cut = LinearAttentionRegressor(head_work_limit=0.0).partial_fit(X, y)
    with pytest.warns(ConvergenceWarning, match="stopped at its work limit"):
        search = cut.head_search_  # (solved when the model is first read)
    assert not search.complete and search.criterion == "lifted"
    assert search.work <= search.work_limit == 1e7 < 9 * 126**3
    assert not search.counts
    lifted = LinearAttentionRegressor(n_heads=None).partial_fit(X, y)
    np.testing.assert_allclose(cut.coef_, lifted.coef_, rtol=1e-8, atol=1e-12)
    full = LinearAttentionRegressor(head_work_limit=None).partial_fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert full.head_search_.complete
    assert full.head_search_.work > 5 * 9 * 126**3


def test_folds_that_cannot_all_be_built_are_refused_before_the_first(monkeypatch):
    """The data above (p = 126, 60 sequences: each fold's Gram singular, 9 p^3
    flops to factorize), a limit of 3e7 flops: one fold fits in it, five do
    not. The folds were built until one did not fit, then all discarded (at
    d = 13, 300 sequences by partial_fit: 6.0e10 of 6.9e10 flops for no
    verdict). Refused before the first fold's eigendecomposition: the search
    is cut short as before, with less work than one of them."""
    _, X, y = noisy_sequences(2, 6, 2, 1, 0.1, n_samples=60)  # p = 126
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 3e7)
    assert 9 * 126**3 < 3e7 < 5 * 9 * 126**3
    cut = LinearAttentionRegressor(head_work_limit=0.0).partial_fit(X, y)
    with pytest.warns(ConvergenceWarning, match="stopped at its work limit") as record:
        search = cut.head_search_
    assert not search.complete and search.criterion == "lifted"
    assert not search.counts
    assert search.work < 9 * 126**3
    # below its limit: the message says why it stopped there (helper-91)
    (message,) = [str(w.message) for w in record if "work limit" in str(w.message)]
    assert "(the next fit would exceed it)" in message


def test_the_cut_short_warning_names_the_counts_below_the_last_fitted_without_a_row():
    """A search cut short after fitting 1, 3 and 6 heads: the warning listed the
    failed and the undecided counts, and 2, 4 and 5, ruled out without a fit or
    left unfitted, in neither (breast cancer data in triples, helper-105)."""
    from sklearn_linattn._estimators import _warn_search_cut_short

    X, y, _ = make_random_mhla(300, 8, 4, n_heads=2, noise=0.05, random_state=0)
    search = LinearAttentionRegressor().fit(X, y).head_search_
    count = search.counts[0]
    counts = (
        dataclasses.replace(count, n_heads=1, passes=False),
        dataclasses.replace(count, n_heads=3, passes=False),
        dataclasses.replace(count, n_heads=6, passes=None),
    )
    cut = dataclasses.replace(search, counts=counts, complete=False)
    with pytest.warns(ConvergenceWarning) as record:
        _warn_search_cut_short(cut, 20.0)
    message = str(record[0].message)
    assert "failed: [1, 3] heads" in message and "undecided: [6]" in message
    assert "not fitted, ruled out or left unfitted: [2, 4, 5]" in message
    fixed = dataclasses.replace(cut, criterion="fixed")  # n_heads=k: none listed
    with pytest.warns(ConvergenceWarning) as record:
        _warn_search_cut_short(fixed, 20.0)
    assert "not fitted" not in str(record[0].message)


def test_the_head_searchs_warnings_point_at_the_callers_line(monkeypatch):
    """The head search's warnings (cut short by the work limit, no folds kept,
    every weighted row in one sequence, a classifier's rows dropped) were
    attributed to lines inside the package (stacklevel=4): to scikit-learn's
    fit wrapper, or to the package's predict, never to the user's call, as the
    package's other warnings are."""
    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 0.0)
    monkeypatch.setattr("sklearn_linattn._estimators.KEPT_ROWS_FLOATS", 0)
    weights = np.zeros(len(X))
    weights[0] = 1.0
    calls = {
        "work limit": lambda: LinearAttentionRegressor(head_work_limit=1.0).fit(X, y),
        "did not keep": lambda: LinearAttentionRegressor(solver="cg").fit(X, y),
        # (no work limit: one sequence's folds have singular Grams, whose
        # factorizations exceed the patched limit)
        "lies in one sequence": lambda: LinearAttentionRegressor(
            head_work_limit=None
        ).fit(X, y, sample_weight=weights),
        "work limit ": lambda: LinearAttentionRegressor(head_work_limit=1.0)
        .partial_fit(X, y)
        .predict(X[:2]),  # (solved when predict reads the model)
        # (more rows than the statistics' size: not kept)
        "no longer keeps the training rows": lambda: LinearAttentionClassifier(
            n_heads=1
        ).partial_fit(
            np.tile(X, (5, 1, 1)), np.tile(y[:, 0] > 0, 5), classes=[False, True]
        ),
    }
    for message, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        found = [w for w in caught if message.strip() in str(w.message)]
        assert found, message
        assert {w.filename for w in found} == {__file__}, message


def test_a_count_row_equals_its_copy_and_a_refits():
    """CountFit rows hold NaN where an error was not computed, and NaN is not
    equal to itself: a row compared unequal to its pickled copy, and the
    counts of two fits of the same data differed."""
    import dataclasses

    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    counts = LinearAttentionRegressor().fit(X, y).head_search_.counts
    assert any(np.isnan(count.cv_error) for count in counts)  # (as the test needs)
    assert pickle.loads(pickle.dumps(counts)) == counts
    assert LinearAttentionRegressor().fit(X, y).head_search_.counts == counts
    assert len({*counts, *pickle.loads(pickle.dumps(counts))}) == len(counts)
    changed = dataclasses.replace(counts[0], cv_error=1.0)
    assert changed != counts[0] and changed != dataclasses.replace(
        counts[0], cv_error=2.0
    )


def test_a_readout_equals_its_copy_and_a_refits():
    """HeadReadout compared by identity (a frozen dataclass without equality, as
    its arrays need): head_search_ was unequal to its pickled copy and to a
    refit's of the same data, although its rows compare equal."""
    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    search = LinearAttentionRegressor().fit(X, y).head_search_
    assert np.isnan(search.counts[0].cv_error)  # (NaN fields, as the test needs)
    copy = pickle.loads(pickle.dumps(search))
    refit = LinearAttentionRegressor().fit(X, y).head_search_
    assert copy == search and refit == search and not (refit != search)
    assert len({search, copy, refit}) == 1
    changed = dataclasses.replace(
        search, value_matrices=search.value_matrices + 1e-12 * search.value_matrices
    )
    assert changed != search
    assert dataclasses.replace(search, complete=False) != search
    assert dataclasses.replace(search, counts=search.counts[1:]) != search
    fixed = LinearAttentionRegressor(n_heads=1).fit(X, y).head_search_
    assert fixed != search and search != search.counts[0]


def test_a_search_is_complete_when_it_decided_the_count_within_its_work(monkeypatch):
    """Limits from 90% to 100% of the unlimited search's work: a search that
    decided its count (the last fit passes by tol as the budget runs out) is
    complete, returns the unlimited search's count and does not warn; one left
    undecided warns."""
    truth, X, y = noisy_sequences(39, 3, 2, 2, 0.1)
    full = LinearAttentionRegressor(head_work_limit=None).fit(X, y).head_search_
    assert full.complete and full.criterion == "tol"
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        per_unit = LinearAttentionRegressor(head_work_limit=1.0).fit(X, y)
    flops = per_unit.head_search_.work_limit  # of head_work_limit=1
    decided_at_the_limit = 0
    for fraction in np.linspace(0.9, 1.0, 41)[:-1]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model = LinearAttentionRegressor(
                head_work_limit=fraction * full.work / flops
            ).fit(X, y)
        search = model.head_search_
        assert search.work > search.work_limit
        warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        assert warned == (not search.complete)
        if search.complete:
            assert (search.n_heads, search.criterion) == (full.n_heads, "tol")
            decided_at_the_limit += 1
    assert decided_at_the_limit, "no limit ran out as the last count passed"


def test_counts_left_undecided_name_the_last_test_they_passed(monkeypatch):
    """A count whose next test the work limit stopped keeps the criterion of the
    last it passed: "training" (its training error within the threshold) or
    "linearized" (so are its linearized refits; its folds' refits unfinished);
    None only when its fit or its training test was stopped. The limits that
    stop a count between two tests are a narrow window (272 to 296 times the
    lifted fit's work stop 2 heads after their training test): they are
    scanned in steps of 8."""
    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 0.0)
    seen = set()
    for limit in np.arange(64.0, 520.0, 8.0):
        if {"training", "linearized"} <= seen:
            break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            search = LinearAttentionRegressor(head_work_limit=limit).fit(X, y)
        for count in search.head_search_.counts:
            if count.passes is not None:
                continue
            seen.add(count.criterion)
            if count.criterion == "training":
                assert count.training_error <= count.threshold
            elif count.criterion == "linearized":
                assert count.linearized_cv_error <= count.threshold * (1 + 1e-6)
                assert np.isnan(count.cv_error)
    assert {"training", "linearized"} <= seen, f"tests stopped: {seen}"


def test_a_search_without_held_out_folds_warns_and_returns_the_lifted_heads():
    """Noisy data and no folds (solver="cg" keeps none; partial_fit keeps them
    only when its first call searches): the count cannot be decided, and the
    fit says so instead of failing every count by tol."""
    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    with pytest.warns(UserWarning, match="did not keep"):
        model = LinearAttentionRegressor(solver="cg").fit(X, y)
    lifted = LinearAttentionRegressor(solver="cg", n_heads=None).fit(X, y)
    assert model.head_search_.criterion == "lifted" and not model.head_search_.counts
    assert model.n_heads_ == lifted.n_heads_
    batches = LinearAttentionRegressor(n_heads=None).partial_fit(X[:100], y[:100])
    batches.set_params(n_heads="auto").partial_fit(X[100:], y[100:])
    with pytest.warns(UserWarning, match="did not keep"):
        assert batches.head_search_.criterion == "lifted"


def test_a_fixed_count_without_held_out_folds_is_not_judged():
    """n_heads=k on noisy data without folds reported failed_on="tol", a test of
    exact data that noisy heads never pass, where the same fit with folds
    passes (helper-94): with no held-out folds it is not judged, passes None;
    exact data are still judged by tol."""
    X, y, _ = make_random_mhla(400, 8, 4, n_heads=2, noise=0.1, random_state=0)
    judged = LinearAttentionRegressor(n_heads=2).fit(X, y).head_search_
    assert judged.passes is True
    unjudged = LinearAttentionRegressor(n_heads=2, solver="cg").fit(X, y)
    search = unjudged.head_search_
    assert search.passes is None and search.complete
    assert [(c.passes, c.criterion, c.failed_on) for c in search.counts] == [
        (None, None, None)
    ]
    batches = LinearAttentionRegressor(n_heads=None).partial_fit(X[:200], y[:200])
    batches.set_params(n_heads=2).partial_fit(X[200:], y[200:])
    assert batches.head_search_.passes is None
    exact_X, exact_y, _ = make_random_mhla(300, 8, 4, n_heads=2, random_state=0)
    fewer = LinearAttentionRegressor(n_heads=1, solver="cg").fit(exact_X, exact_y)
    assert fewer.head_search_.passes is False
    assert fewer.head_search_.counts[0].failed_on == "tol"


def test_heads_fit_the_data_where_lsqr_stopped_short():
    """With solver="cg" stopped at its iteration limit the lifted fit does not
    minimize the objective: a fixed count is fitted to the rows' targets, not
    toward that fit (which gave 2 heads of 2-head data a training R^2 of 0.88,
    the unconverged lifted fit's, against 0.99)."""
    X, y, _ = make_random_mhla(450, 5, 4, n_heads=2, random_state=0)
    y = y + 0.1 * np.std(y) * np.random.default_rng(0).normal(size=y.shape)
    train, test = slice(None, 150), slice(150, None)
    with pytest.warns(ConvergenceWarning, match="LSQR did not reach"):
        lifted = LinearAttentionRegressor(solver="cg", max_iter=3, n_heads=None)
        lifted.fit(X[train], y[train])
    with pytest.warns(ConvergenceWarning, match="LSQR did not reach"):
        heads = LinearAttentionRegressor(solver="cg", max_iter=3, n_heads=2)
        heads.fit(X[train], y[train])
    assert heads.score(X[train], y[train]) > lifted.score(X[train], y[train]) + 0.05
    assert heads.score(X[test], y[test]) > lifted.score(X[test], y[test]) + 0.05


def test_a_search_cut_short_returns_the_fewest_count_that_passed():
    """Twelve heads of four outputs with little noise: 16 heads reproduce the
    lifted fit (tol) early in the search; cut short after that by the default
    work limit, the search returns the fewest count that passed, not the
    lifted fit's 32 heads."""
    X, y, _ = make_random_mhla(
        3000, 8, 8, n_heads=12, n_outputs=4, noise=0.05, random_state=7
    )
    search = LinearAttentionRegressor().fit(X, y).head_search_
    passed = [count.n_heads for count in search.counts if count.passes]
    assert passed
    assert search.n_heads == min(passed) and search.passes
    if not search.complete:
        assert search.work > search.work_limit


def test_a_search_cut_short_leaves_the_completions_it_did_not_refit_undecided(
    monkeypatch,
):
    """Near interpolation counts 2, 4 and 5 were failed by their completions
    (generalized cross-validation of the split completed to rank k), which
    fits of those counts are to confirm, from the largest down. Cut short by
    the work limit after refitting 5 (which reproduced the lifted fit), the
    search reported 4 (and 2) as failed on "gcv", while n_heads=4 alone
    reproduces the lifted fit to 2e-15 and passes. The counts it did not
    refit are undecided: every verdict head_search_ reports is n_heads=k's."""
    X, y = near_interpolation_two_outputs()
    # a limit that cuts the search short just after its fit of 5 heads
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 2.5e7)
    with pytest.warns(ConvergenceWarning, match="stopped at its work limit"):
        search = LinearAttentionRegressor(
            alpha=10.0, fit_intercept=True, head_work_limit=1.0
        ).fit(X, y).head_search_
    assert not search.complete
    counts = {count.n_heads: count for count in search.counts}
    assert 4 in counts and counts[4].passes is None and counts[4].failed_on is None
    monkeypatch.undo()
    for k, count in counts.items():
        if count.passes is not None:
            alone = LinearAttentionRegressor(alpha=10.0, fit_intercept=True, n_heads=k)
            assert alone.fit(X, y).head_search_.passes == count.passes, k
    assert LinearAttentionRegressor(
        alpha=10.0, fit_intercept=True, n_heads=4
    ).fit(X, y).head_search_.passes

def test_the_papers_read_out_is_asked_for_only():
    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    paper = LinearAttentionRegressor(n_heads=None).fit(X, y).head_search_
    assert paper.criterion == "paper" and paper.counts == () and paper.work == 0


@pytest.mark.parametrize(
    "coef, token_dim, message",
    [
        (np.zeros(40), 4, "shape"),
        (np.zeros((1, 41)), 4, "token_dim=4 needs 40"),
    ],
)
def test_bad_coefficients_are_rejected(coef, token_dim, message):
    with pytest.raises(ValueError, match=message):
        read_out_heads(coef, token_dim, "auto", 1e-8, design=None)


@pytest.mark.parametrize("n_heads", ["auto", None, 2])
@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_heads_are_canonical(n_heads, noise):
    truth, X, y = noisy_sequences(9, 5, 3, 1, noise)
    model = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
    strengths = [np.linalg.norm(V) for V in model.value_matrices_]
    assert strengths == sorted(strengths, reverse=True)
    for V, Q in zip(model.value_matrices_, model.query_matrices_, strict=True):
        assert np.linalg.norm(V) == pytest.approx(np.linalg.norm(Q))
        assert V.flat[np.argmax(np.abs(V))] > 0
    np.testing.assert_allclose(
        model.attention_.lifted_coef()[0], np.ravel(model.coef_), rtol=1e-10, atol=1e-12
    )


# --- the held-out folds against explicit refits -------------------------------------


def naive_fold_errors(
    X, y, weights, alpha, fit_intercept, theta_of, classify=False, fewer=False
):
    """Per fold (the i-th sequence of positive weight in fold i mod 5): the
    lifted fit refitted by lstsq on the other folds (``fewer``: without the
    next fold too), and the held-out error of it and of ``theta_of(training
    fit)`` with the intercept refitted on the training folds."""
    features = naive_lifted_features(X)
    positive = weights > 0
    fold = naive_fold_layout(len(positive))[np.cumsum(positive) - positive]
    lifted, heads, fold_weights = [], [], []
    for j in range(5):
        train, held = fold != j, fold == j
        if fewer:
            train = train & (fold != (j + 1) % 5)
        w = weights[train]
        mean = w @ features[train] / w.sum() if fit_intercept else 0.0
        target_mean = w @ y[train] / w.sum() if fit_intercept else 0.0
        A = np.sqrt(w)[:, None] * (features[train] - mean)
        b = np.sqrt(w)[:, None] * (y[train] - target_mean)
        A_ridge = np.vstack([A, np.sqrt(alpha) * np.eye(A.shape[1])])
        b_ridge = np.vstack([b, np.zeros((A.shape[1], b.shape[1]))])
        coef = np.linalg.lstsq(A_ridge, b_ridge, rcond=None)[0].T
        for store, theta in ((lifted, coef), (heads, theta_of(coef))):
            intercept = (
                target_mean - theta @ np.atleast_1d(mean) if fit_intercept else 0
            )
            predictions = features[held] @ theta.T + intercept
            if classify:  # a tie within sqrt(eps) of the row's largest is wrong
                true = np.argmax(y[held], 1)
                wrong = [
                    row[true[i]]
                    <= max(np.delete(row, true[i]))
                    + np.sqrt(np.finfo(float).eps) * np.abs(row).max()
                    for i, row in enumerate(predictions)
                ]
                store.append(weights[held] @ np.asarray(wrong, dtype=float))
            else:
                store.append(weights[held] @ np.sum((y[held] - predictions) ** 2, 1))
        fold_weights.append(weights[held].sum() * (1 if classify else y.shape[1]))
    return np.array(lifted), np.array(heads), np.array(fold_weights)


def test_held_out_rows_tied_to_rounding_are_misclassified_whichever_way_it_goes():
    """Classes absent from a training set get equal scores up to rounding, which
    the BLAS in use decides: a held-out row whose class ties another within
    sqrt(eps) of the row's largest score counts as misclassified on either side
    of the tie; a clear lead counts as right, in a sequence however much smaller
    than the fold's others (scores are cubic in its size)."""
    ulp = np.spacing(0.8)
    for tied in (-0.8, -0.8 + ulp, -0.8 - ulp):
        for scale in (1.0, 1e-9):
            predictions = np.array([[-1.2, -0.8, tied], [0.9e9, -1e9, -1.1e9]])
            predictions[0] *= scale
            for true in (1, 2):
                targets = -np.ones((2, 3))
                targets[0, true] = targets[1, 0] = 1.0
                weight = _misclassified(predictions, targets, np.array([1.0, 2.0]))
                assert weight == 1.0  # the first row (weight 1^2), not the second
    small_lead = np.array([[2e9, 1e9, 0.0], [2.0, 1.0, 0.0]])
    first = np.array([[1.0, -1.0, -1.0]] * 2)
    assert _misclassified(small_lead, first, np.ones(2)) == 0.0
    # two classes: the score's sign
    predictions = np.array([[1e9], [1e-3], [-0.4]])
    assert _misclassified(predictions, np.ones((3, 1)), np.ones(3)) == 1.0
    assert _misclassified(predictions, -np.ones((3, 1)), np.ones(3)) == 2.0


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("classify", [False, True])
def test_held_out_errors_equal_explicit_refits(rng, solver, fit_intercept, classify):
    d, m = 3, 2
    n = 60 if solver == "normal" else 15  # p = 18
    X = random_sequences(rng, n, 5, d)
    y = rng.normal(size=(n, m))
    if classify:
        y = np.where(np.eye(m)[rng.integers(0, m, n)] > 0, 1.0, -1.0)
    weights = rng.uniform(0.5, 2.0, n)
    weights[::4] = 0.0  # as if removed: the folds interleave the others
    alpha = 0.05
    data = lifted_data(X, y, weights)
    solution = SOLVERS[solver](
        data, alpha=alpha, fit_intercept=fit_intercept, heldout=True
    )
    folds = solution.heldout_folds(classify=classify)
    value_rows = rng.normal(size=(2, m * d))
    query_rows = rng.normal(size=(2, d * d))
    heads_theta = data.rescaling.coef(head_coef(value_rows, query_rows, d))
    lifted, heads, fold_weights = naive_fold_errors(
        X, y, weights, alpha, fit_intercept, lambda coef: heads_theta, classify
    )
    weight_scale = data.rescaling.weight
    scale = weight_scale * (1.0 if classify else data.rescaling.target**2)
    np.testing.assert_allclose(
        folds.lifted_errors, lifted * scale, rtol=1e-6, atol=1e-9
    )
    ours = [folds.error(j, value_rows, query_rows) for j in range(5)]
    np.testing.assert_allclose(ours, heads * scale, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(folds.weights, fold_weights * weight_scale, rtol=1e-12)
    # glmnet's summary: the weighted mean of the folds' mean errors, and the
    # square root of their weighted variance over K - 1
    means = lifted / fold_weights
    share = fold_weights / fold_weights.sum()
    mean = share @ means
    spread = np.sqrt(share @ (means - mean) ** 2 / 4)
    cv, se = folds.lifted
    unit = 1.0 if classify else data.rescaling.target**2
    assert cv == pytest.approx(mean * unit, rel=1e-6)
    assert se == pytest.approx(spread * unit, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_a_classifiers_learning_ratio_is_its_lifted_fits_on_fewer_rows(
    rng, solver, fit_intercept
):
    """The classifier's threshold follows the lifted fit's learning curve: its
    misclassification on each fold trained on K - 2 folds equals explicit
    refits, and the ratio is ``1 - (K - 2) / K (e' - e) / e``, or ``e' / e``
    where the error rises with the rows."""
    d, m = 3, 3
    n = 90 if solver == "normal" else 16  # p = 18
    X = random_sequences(rng, n, 5, d)
    y = np.where(np.eye(m)[rng.integers(0, m, n)] > 0, 1.0, -1.0)
    weights = rng.uniform(0.5, 2.0, n)
    alpha = 0.05
    data = lifted_data(X, y, weights)
    solution = SOLVERS[solver](
        data, alpha=alpha, fit_intercept=fit_intercept, heldout=True
    )
    folds = solution.heldout_folds(classify=True)
    fewer, _, fold_weights = naive_fold_errors(
        X, y, weights, alpha, fit_intercept, lambda coef: coef, True, fewer=True
    )
    lifted = naive_fold_errors(
        X, y, weights, alpha, fit_intercept, lambda coef: coef, True
    )[0]
    scale = data.rescaling.weight
    np.testing.assert_allclose(
        folds.lifted_errors_on_fewer_rows(), fewer * scale, rtol=1e-6, atol=1e-9
    )
    share = fold_weights / fold_weights.sum()
    now, before = share @ (lifted / fold_weights), share @ (fewer / fold_weights)
    fall = 0.6 * (before - now) if before >= now else now - before
    expected = max(1 - fall / now, 0.0)
    budget = Budget()
    assert folds.learning_ratio(budget) == pytest.approx(expected, rel=1e-9)
    assert budget.spent > 0  # the fits are charged, once
    spent = budget.spent
    folds.learning_ratio(budget)
    assert budget.spent == spent


@pytest.mark.parametrize("solver", ["normal", "dual"])
def test_a_classifiers_learning_ratio_beyond_the_work_limit_is_not_computed(
    rng, solver
):
    """The learning ratio's K more lifted fits were charged after they ran:
    under a limit smaller than their work, all ran, and the search overran
    its limit by as much. Refused before the fit that would exceed what is
    left: the budget is marked refused (the search is cut short), the work
    spent stays within the limit, and the ratio is 1."""
    d, m = 3, 3
    n = 90 if solver == "normal" else 16  # p = 18
    X = random_sequences(rng, n, 5, d)
    y = np.where(np.eye(m)[rng.integers(0, m, n)] > 0, 1.0, -1.0)
    solution = SOLVERS[solver](
        lifted_data(X, y), alpha=0.05, fit_intercept=False, heldout=True
    )
    full = Budget()
    solution.heldout_folds(classify=True).learning_ratio(full)
    for share in (0.0, 0.5, 0.99):  # (the last: just under the work)
        budget = Budget(share * full.spent)
        ratio = solution.heldout_folds(classify=True).learning_ratio(budget)
        assert ratio == 1.0 and budget.refused and budget.exhausted
        assert budget.spent <= budget.limit
    enough = Budget(full.spent)
    solution.heldout_folds(classify=True).learning_ratio(enough)
    assert not enough.refused and enough.spent == full.spent


def test_a_classifier_near_its_interpolation_peak_keeps_the_lifted_fit():
    """28 sequences of d = 3 (p = 18), three classes: the folds' 22 rows sit at
    the lifted fit's interpolation peak (it misclassifies 0.75 of their held-out
    rows, 0.54 from 3 folds' 17 rows), and one head at 0.57 passed that, to
    classify 0.42 of the test sequences against the lifted fit's 0.83 (a
    reviewer's case). An error that rises with the rows is taken at its value
    on fewer rows: no count passes."""
    n = 40
    X, y, _ = make_random_mhla(n, 8, 3, n_heads=2, noise=0.0, random_state=516)
    rng = np.random.default_rng(1016)
    scores = y + 0.5 * np.std(y) * rng.normal(size=n)
    labels = np.digitize(scores, np.quantile(scores, [1 / 3, 2 / 3]))
    train, test = train_test_split(
        np.arange(n), test_size=0.3, random_state=16, stratify=labels
    )
    model = LinearAttentionClassifier(alpha=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # alpha = 0 interpolates
        model.fit(X[train], labels[train])
        lifted = LinearAttentionClassifier(n_heads=None).fit(X[train], labels[train])
    search = model.head_search_
    # the lifted fit's misclassified held-out rows, refitted naively on the 5
    # folds (fewer than 40 sequences: the i-th in fold i mod 5): 21 of 28
    X_train, y_train = X[train], labels[train]
    fold = naive_fold_layout(len(train))
    misclassified = 0
    for j in range(5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            refit = LinearAttentionClassifier(alpha=0.0, n_heads=None).fit(
                X_train[fold != j], y_train[fold != j]
            )
        held_out = refit.predict(X_train[fold == j])
        misclassified += np.sum(held_out != y_train[fold == j])
    assert misclassified == 21
    assert search.cv_error == pytest.approx(misclassified / len(train))
    assert all(count.threshold < 0.6 for count in search.counts if count.cv_error > 0)
    assert model.score(X[test], labels[test]) >= (
        lifted.score(X[test], labels[test]) - 0.02
    )


def low_signal_data(seed, n, d, n_heads, n_outputs, n_tokens, noise):
    """``(X, y, X_test, y_test)`` as ``bench_head_criterion.py --low-signal`` draws
    them: Gaussian tokens, a random MHLA (V, Q entries N(0, 1)), noise of
    ``noise`` times the targets' spread, 2000 noiseless test sequences."""
    rng = np.random.default_rng(seed)
    truth = MultiHeadLinearAttention(
        rng.normal(size=(n_heads, n_outputs, d)), rng.normal(size=(n_heads, d, d))
    )
    X = rng.normal(size=(n, n_tokens, d))
    X_test = rng.normal(size=(2000, n_tokens, d))
    y, y_test = truth.predict(X), truth.predict(X_test)
    return X, y + noise * y.std() * rng.normal(size=y.shape), X_test, y_test


def test_a_classifiers_heads_are_credited_with_their_own_learning():
    """36 sequences of d = 3 labelled by the largest of three outputs of a
    two-head model (10% noise), alpha = 1e-3 with an intercept. The lifted
    fit's misclassification falls with the rows, and the threshold was that
    fall's extrapolation alone: the heads' own fall was not credited, no count
    passed, and the lifted fit came back (test accuracy 0.53). With the heads'
    fall credited as least squares' estimation error falls with their degrees
    of freedom, fewer heads pass and classify new sequences better (from
    bench_head_criterion.py --low-signal)."""
    X, y, X_test, y_test = low_signal_data(937343, 36, 3, 2, 3, 8, 0.1)
    labels, test_labels = np.argmax(y, 1), np.argmax(y_test, 1)
    model = LinearAttentionClassifier(alpha=1e-3, fit_intercept=True)
    model.fit(X, labels)
    lifted = LinearAttentionClassifier(alpha=1e-3, fit_intercept=True, n_heads=None)
    lifted.fit(X, labels)
    search = model.head_search_
    assert search.criterion == "cv" and search.complete
    assert model.n_heads_ < lifted.n_heads_
    assert model.score(X_test, test_labels) >= lifted.score(X_test, test_labels)


def test_a_count_must_be_no_worse_than_the_lifted_fit_on_most_folds():
    """Cubic features of Gaussian tokens are heavy-tailed, and a mean of
    held-out errors can rest on one fold: here one head has a cross-validated
    error below the lifted fit's but is worse on most folds, and predicts new
    sequences 1.8 times worse than n_heads=None; it fails, and the generating
    two heads are returned (45 sequences of 2 tokens, d = 3, 30% noise; from
    bench_head_criterion.py --low-signal)."""
    X, y, X_test, y_test = low_signal_data(541141, 45, 3, 2, 2, 2, 0.3)
    model = LinearAttentionRegressor().fit(X, y)
    search = model.head_search_
    one = next(count for count in search.counts if count.n_heads == 1)
    assert one.failed_on == "majority" and not one.passes
    # all five folds refitted, as n_heads=1 is judged: the mean below, most worse
    asked = LinearAttentionRegressor(n_heads=1).fit(X, y).head_search_.counts[-1]
    assert asked.cv_error <= search.cv_error
    assert 2 * asked.folds_within < 5 and not asked.passes
    assert model.n_heads_ == 2
    lifted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    test_error = np.mean((model.predict(X_test) - y_test) ** 2)
    assert test_error < np.mean((lifted.predict(X_test) - y_test) ** 2)


@pytest.mark.parametrize("seed", [1006, 1017])
def test_folds_within_count_as_explicit_weighted_refits(seed):
    """Every fifth sequence of weight zero (it emptied fold 0, when folds
    interleaved every sequence): the folds interleave the sequences of positive
    weight, and a count's folds within are those of explicit weighted refits
    of n_heads=k and n_heads=None on them."""
    rng = np.random.default_rng(seed)
    truth = MultiHeadLinearAttention(
        rng.normal(size=(2, 1, 3)), rng.normal(size=(2, 3, 3))
    )
    X = rng.normal(size=(60, 2, 3))  # 48 of positive weight: 2.7 p
    y = truth.predict(X)[:, 0]
    y = y + y.std() * rng.normal(size=y.shape)
    weights = np.ones(60)
    weights[::5] = 0.0
    search = LinearAttentionRegressor().fit(X, y, sample_weight=weights).head_search_
    # the counts refitted, each on every fold as n_heads=k is judged
    refitted = [
        LinearAttentionRegressor(n_heads=count.n_heads)
        .fit(X, y, sample_weight=weights)
        .head_search_.counts[-1]
        for count in search.counts
        if count.folds_refitted is not None
    ]
    assert refitted and all(count.folds_refitted == 5 for count in refitted)
    positive = weights > 0
    fold = naive_fold_layout(len(positive))[np.cumsum(positive) - positive]

    def fold_errors(n_heads):
        errors = []
        for j in range(5):
            train, held = fold != j, fold == j
            model = LinearAttentionRegressor(n_heads=n_heads).fit(
                X[train], y[train], sample_weight=weights[train]
            )
            residual = model.predict(X[held]) - y[held]
            errors.append(np.sum(weights[held] * residual**2))
        return np.array(errors)

    lifted = fold_errors(None)
    for count in refitted:
        errors = fold_errors(count.n_heads)
        # no worse than the lifted fit, corrected for the folds' size
        ratio = count.threshold / search.cv_error
        surely = np.sum(errors < ratio * lifted * (1 - 1e-6))
        assert surely <= count.folds_within
        assert count.folds_within <= np.sum(errors <= ratio * lifted * (1 + 1e-6))
        assert not count.passes or 2 * count.folds_within > 5


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("weight", [1e-12, 1e-6])
def test_rows_of_tiny_weight_count_as_next_to_nothing(solver, weight):
    """44 sequences (2.4 p, d = 3) and 6 more of weight 1e-12: the lifted fit
    moves by 1e-12, but the 6 counted as whole rows took the fit past near
    interpolation, and one head passed at 2.3 times n_heads=None's error on
    noiseless test targets. The search counts Kish's effective number of rows,
    (sum w)^2 / sum w^2: the heads of the 44 alone."""
    X, y, _ = make_random_mhla(50, 8, 3, n_heads=2, random_state=24)
    y = y + 0.3 * y.std() * np.random.default_rng(1024).normal(size=y.shape)
    weights = np.r_[np.ones(44), np.full(6, weight)]
    alone = LinearAttentionRegressor(solver=solver).fit(X[:44], y[:44])
    model = LinearAttentionRegressor(solver=solver).fit(X, y, sample_weight=weights)
    assert model.n_heads_ == alone.n_heads_
    assert model.head_search_.criterion == alone.head_search_.criterion
    assert [c.n_heads for c in model.head_search_.counts] == [
        c.n_heads for c in alone.head_search_.counts
    ]


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionClassifier]
)
def test_zero_weights_are_as_good_as_removed(solver, Estimator):
    """scikit-learn's convention: rows of zero sample_weight are removed. The
    folds interleave the sequences of positive weight; they had interleaved
    all of them, and 0/1 weights gave 3 heads where the same rows removed gave
    2 (coefficients 0.0085 apart against 0.33)."""
    n = 300 if solver == "normal" else 30
    X, y, _ = make_random_mhla(n, 8, 3, n_heads=2, random_state=0)
    y = y + 0.3 * y.std() * np.random.default_rng(100).normal(size=y.shape)
    if Estimator is LinearAttentionClassifier:
        y = y > np.median(y)
    weights = (np.random.default_rng(1).random(n) > 0.5).astype(float)
    kept = weights > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the dual fit interpolates
        weighted = Estimator(solver=solver).fit(X, y, sample_weight=weights)
        removed = Estimator(solver=solver).fit(X[kept], y[kept])
    assert weighted.head_search_.counts_tried == removed.head_search_.counts_tried
    assert_same_model(weighted, removed)


def test_zero_weights_in_partial_fit_batches_are_as_good_as_removed():
    """The folds count the sequences of positive weight across partial_fit
    batches too (measured 2e-13 apart over 4 seeds)."""
    X, y, _ = make_random_mhla(300, 8, 3, n_heads=2, random_state=1)
    y = y + 0.3 * y.std() * np.random.default_rng(101).normal(size=y.shape)
    weights = (np.random.default_rng(1).random(len(X)) > 0.5).astype(float)
    kept = weights > 0
    weighted, removed = LinearAttentionRegressor(), LinearAttentionRegressor()
    for batch in np.array_split(np.arange(len(X)), 5):
        weighted.partial_fit(X[batch], y[batch], sample_weight=weights[batch])
        removed.partial_fit(X[batch][kept[batch]], y[batch][kept[batch]])
    assert weighted.n_heads_ == 2
    assert_same_model(weighted, removed)


def test_weight_on_one_sequence_is_said_before_the_folds_work(monkeypatch):
    """Positive weight on one sequence, folds beyond the work limit (their
    training Grams singular): the search was cut short with a
    ConvergenceWarning telling the user to raise head_work_limit, which would
    only have built folds of no use. It says instead that the weight lies in
    one sequence, and the search is complete."""
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", 0.0)
    truth, X, y = noisy_sequences(2, 4, 2, 1, 0.05)
    weights = np.zeros(len(X))
    weights[0] = 1.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = LinearAttentionRegressor(head_work_limit=1.0).fit(
            X, y, sample_weight=weights
        )
    messages = [str(w.message) for w in caught]
    assert any("lies in one sequence" in message for message in messages)
    assert not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert model.head_search_.complete
    assert model.head_search_.criterion == "lifted"


@pytest.mark.parametrize("n_sequences", [2, 3])
def test_folds_that_hold_no_rows_are_not_refitted(monkeypatch, n_sequences):
    """Two or three sequences of 12 positions (positions="all") fill as many of
    the 5 folds: the empty folds are neither refitted nor refitted linearized
    (their designs are never built), and the search reports what refitting
    them as well gives: the same cross-validated errors, refitted and
    linearized (heads and lifted fit both err by zero there)."""
    from sklearn_linattn import _folds

    X, Y, _ = make_random_mhla(
        n_sequences, 12, 2, n_heads=1, noise=0.2, positions="all",
        random_state=n_sequences,
    )
    built = []
    for kind in (_folds.StatisticsFolds, _folds.RowFolds):
        original = kind.design

        def design(self, fold, original=original):
            built.append(float(np.asarray(self.weights)[fold]))
            return original(self, fold)

        monkeypatch.setattr(kind, "design", design)
    params = dict(positions="all", alpha=1e-3)
    search = LinearAttentionRegressor(**params).fit(X, Y).head_search_
    assert search.counts and search.counts[0].folds_refitted == 5
    assert built and min(built) > 0
    monkeypatch.setattr(_Search, "held_folds", np.ones(5, dtype=bool))
    every_fold = LinearAttentionRegressor(**params).fit(X, Y).head_search_
    assert 0.0 in built  # the empty folds refitted this time
    for count, reference in zip(search.counts, every_fold.counts, strict=True):
        assert count.cv_error == pytest.approx(reference.cv_error, rel=1e-9)
        assert count.linearized_cv_error == pytest.approx(
            reference.linearized_cv_error, rel=1e-9
        )


@pytest.mark.parametrize("n_heads", [1, 2])
def test_weight_on_one_sequence_leaves_a_fixed_count_unjudged(n_heads):
    """Positive weight on one sequence: the search says no fold can be predicted
    and judges no count, but n_heads=k reported a verdict (False, failed on
    "gcv"), with a finite threshold beside head_search_.cv_error NaN: a
    verdict against held-out errors that no fold has. Not judged (None), as
    with solver="cg"."""
    X, y, _ = make_random_mhla(200, 8, 3, n_heads=1, random_state=3)
    y = y + 0.5 * y.std() * np.random.default_rng(0).normal(size=y.shape)
    weights = np.zeros(len(X))
    weights[7] = 1.0
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "alpha=0 and the model", UserWarning)
        search = LinearAttentionRegressor(n_heads=n_heads).fit(
            X, y, sample_weight=weights
        ).head_search_
    assert search.criterion == "fixed" and search.loss is None
    assert np.isnan(search.cv_error)
    assert search.passes is None
    (row,) = [count for count in search.counts if count.n_heads == n_heads]
    assert row.passes is None and row.failed_on is None and row.criterion is None
    assert np.isnan(row.threshold) and np.isnan(row.cv_error)


@pytest.mark.parametrize("solver", ["normal", "dual"])
def test_weight_on_one_sequence_leaves_nothing_to_cross_validate(solver):
    """Positive weight on one sequence only: no fold can be predicted from the
    others. The default says so and returns the lifted fit's heads (with all
    the weight in one fold it raised IndexError); a fixed count and the
    classifier fit, with no other warning than the interpolation's (n_heads=2
    at d = 3, whose starts include the isotropic ones, divided 0 by 0 on the
    folds whose training rows have no weight: a RuntimeWarning)."""
    X, y, _ = make_random_mhla(200, 8, 3, n_heads=1, random_state=3)
    y = y + 0.5 * y.std() * np.random.default_rng(0).normal(size=y.shape)
    weights = np.zeros(len(X))
    weights[7] = 1.0
    with pytest.warns(UserWarning, match="every row of positive weight lies in one"):
        model = LinearAttentionRegressor(solver=solver).fit(X, y, sample_weight=weights)
    lifted = LinearAttentionRegressor(solver=solver, n_heads=None).fit(
        X, y, sample_weight=weights
    )
    assert model.head_search_.criterion == "lifted"
    # no fold predicts rows: no cross-validated error is reported
    assert np.isnan(model.head_search_.cv_error)
    assert np.isnan(model.head_search_.cv_standard_error)
    assert np.isnan(model.head_search_.gcv_error)
    assert model.head_search_.loss is None
    np.testing.assert_allclose(model.coef_, lifted.coef_, rtol=1e-10, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "alpha=0 and the model", UserWarning)
        for n_heads in (1, 2):
            fixed = LinearAttentionRegressor(solver=solver, n_heads=n_heads)
            fixed.fit(X, y, sample_weight=weights)
            assert fixed.n_heads_ == n_heads
            assert np.all(np.isfinite(fixed.coef_))
            LinearAttentionClassifier(solver=solver, n_heads=n_heads).fit(
                X, y > np.median(y), sample_weight=weights
            )


@pytest.mark.parametrize(
    "n_samples, alpha, fit_intercept",
    [(None, 0.0, False), (None, 0.05, True), (30, 0.01, False), (30, 0.01, True)],
)
def test_a_counts_cv_error_is_that_of_n_heads_k_refitted_without_each_fold(
    monkeypatch, n_samples, alpha, fit_intercept
):
    """head_search_ reports, for each count refitted on the folds, the 5-fold
    interleaved cross-validated error of LinearAttentionRegressor(n_heads=k)
    itself: the statistics folds (3p sequences) and the kernel folds (30
    sequences, fewer than p = 40) refit the same model from the same starts.
    (With 30 sequences the lifted fit is near interpolation, and its generalized
    cross-validated error would reject every count before its refits: that
    check is left out here, and so is stopping the refits at the first folds
    that fail a count.)"""
    monkeypatch.setattr("sklearn_linattn._heads.INTERPOLATION_MARGIN", 0.0)
    monkeypatch.setattr(_Search, "fails_whatever_follows", lambda *_: False)
    truth, X, y = noisy_sequences(5, 4, 2, 2, 0.1, n_samples=n_samples)
    params = dict(alpha=alpha, fit_intercept=fit_intercept)
    search = LinearAttentionRegressor(**params).fit(X, y).head_search_
    refitted = [count for count in search.counts if np.isfinite(count.cv_error)]
    assert refitted
    fold = naive_fold_layout(len(X))
    # the outputs' squared errors as the search weighs them
    weights = np.ones(y.shape[1]) if search.output_weights is None else (
        search.output_weights
    )

    def fold_errors(n_heads):
        errors = []
        for j in range(5):
            model = LinearAttentionRegressor(n_heads=n_heads, **params)
            model.fit(X[fold != j], y[fold != j])
            if n_heads is not None:  # the same weights, hence the same fit
                assert np.array_equal(
                    model.head_search_.output_weights, search.output_weights
                )
            residual = (model.predict(X[fold == j]) - y[fold == j]) * weights
            errors.append(np.sum(residual**2))
        return np.array(errors)

    lifted = fold_errors(None)
    equations = np.sum(fold != 0) * y.shape[1]  # a fold's training targets
    for count in refitted:
        errors = fold_errors(count.n_heads)
        # heads of more parameters than a fold has equations minimize along a
        # valley, where the two designs' rounding moves the end point (1.6e-5
        # relative measured, 30 sequences and 4 heads); elsewhere 1e-5
        d = X.shape[2]
        n_parameters = count.n_heads * (y.shape[1] * d + d * d)
        rel = 1e-3 if n_parameters > equations else 1e-5
        assert count.cv_error == pytest.approx(errors.sum() / y.size, rel=rel)
        # the folds on which k heads are no worse than n_heads=None, corrected
        # for the folds' size (a fold within rounding of a tie may go either way)
        ratio = count.threshold / search.cv_error
        surely = np.sum(errors < ratio * lifted * (1 - 1e-6))
        assert surely <= count.folds_within
        assert count.folds_within <= np.sum(errors <= ratio * lifted * (1 + 1e-6))
        if count.passes:
            assert 2 * count.folds_within > 5


@pytest.mark.parametrize("seed, n_outputs", [(23, 1), (27, 2)])
def test_with_many_rows_linearized_refits_passing_on_every_fold_decide(
    monkeypatch, seed, n_outputs
):
    """With at least REFIT_MARGIN (10) rows per lifted feature, a count whose
    refits linearized at the full fit pass, their squared error no worse than
    the lifted fit's on every fold, passes on them: its cv_error is theirs, and
    the folds' own refits (those of n_heads=k, fitted explicitly here) agree on
    every fold. The same data searched with the folds' own refits everywhere return the
    same heads."""
    from sklearn_linattn import _heads

    d = 3
    _, X, y = noisy_sequences(
        seed, d, 1, n_outputs, 0.1, n_samples=12 * n_lifted(d)
    )
    search = LinearAttentionRegressor().fit(X, y).head_search_
    assert search.n_heads == 1
    count = search.counts[-1]
    assert count.passes and count.folds_within == 5
    assert count.cv_error == count.linearized_cv_error
    fold = naive_fold_layout(len(X))
    for j in range(5):
        train, held = fold != j, fold == j
        errors = [
            np.sum((model.fit(X[train], y[train]).predict(X[held]) - y[held]) ** 2)
            for model in (
                LinearAttentionRegressor(n_heads=1),
                LinearAttentionRegressor(n_heads=None),
            )
        ]
        assert errors[0] <= errors[1]
    monkeypatch.setattr(_heads, "REFIT_MARGIN", np.inf)
    refitted = LinearAttentionRegressor().fit(X, y).head_search_
    assert refitted.counts[-1].cv_error != refitted.counts[-1].linearized_cv_error
    np.testing.assert_array_equal(refitted.query_matrices, search.query_matrices)


def test_with_many_rows_a_fold_slightly_worse_sends_the_count_to_its_refits():
    """800 sequences of d = 3 (44 per lifted feature), one head, 10% noise:
    one fold's linearized refit is 0.04% worse than the lifted fit, so the
    count is refitted on every fold, and its verdict is the one n_heads=1
    reports (a 1% allowance passed counts on linearized refits that the
    folds' own refits failed: the search and n_heads=k disagreed)."""
    from sklearn.model_selection import KFold

    X, y, _ = make_random_mhla(1000, 16, 3, n_heads=1, random_state=0)
    y = y + 0.1 * y.std() * np.random.default_rng(1).normal(size=y.shape)
    train = next(iter(KFold(5).split(X)))[0]
    model = LinearAttentionRegressor(alpha=1e-3).fit(X[train], y[train])
    one = model.head_search_.counts[0]
    assert model.n_heads_ == 1 and one.passes
    assert one.folds_refitted == 5 and one.folds_within == 4
    asked = LinearAttentionRegressor(alpha=1e-3, n_heads=1).fit(X[train], y[train])
    assert asked.head_search_.passes
    assert asked.head_search_.counts[0].cv_error == pytest.approx(one.cv_error)


def test_with_many_rows_a_classifiers_counts_are_still_refitted(monkeypatch):
    """Misclassification never lets the linearized refits decide: held-out
    counts of a few rows tie, and ties counted as no worse passed one head here
    (d = 3, 12 p sequences, 10% of the labels flipped) that predicted worse than
    the 3 heads the folds' own refits return. With many rows a classifier gives
    the heads of refitting every count's folds."""
    from sklearn_linattn import _heads

    d = 3
    rng = np.random.default_rng(10)
    truth = random_attention(rng, d, int(rng.integers(1, d + 1)), 1)
    X = rng.normal(scale=0.25, size=(12 * n_lifted(d), 16, d))
    X_test = rng.normal(scale=0.25, size=(5000, 16, d))
    scores = truth.predict(X)[:, 0]
    labels = (scores > np.median(scores)).astype(int)
    test_labels = (truth.predict(X_test)[:, 0] > np.median(scores)).astype(int)
    flipped = rng.random(len(X)) < 0.1
    labels = np.where(flipped, rng.integers(0, 2, len(X)), labels)
    model = LinearAttentionClassifier().fit(X, labels)
    search = model.head_search_
    monkeypatch.setattr(_heads, "REFIT_MARGIN", np.inf)
    refitted = LinearAttentionClassifier().fit(X, labels).head_search_
    assert search.n_heads == refitted.n_heads == 3
    one_head = LinearAttentionClassifier(n_heads=1).fit(X, labels)
    assert one_head.score(X_test, test_labels) < model.score(X_test, test_labels)
    assert search.counts_tried == refitted.counts_tried
    for count, other in zip(search.counts, refitted.counts, strict=True):
        assert count.cv_error == other.cv_error or np.isnan(other.cv_error)


@pytest.mark.parametrize("alpha", [0.0, 0.05])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_fold_refits_on_rows_equal_refits_in_the_lifted_metric(
    monkeypatch, alpha, fit_intercept
):
    """A fold's heads are refitted on its training rows or in its lifted
    metric, whichever costs less: the two objectives differ by a constant, so
    the same steps give the same heads and held-out errors."""
    import sklearn_linattn._folds as folds_module

    rng = np.random.default_rng(7)
    d, m = 3, 2
    X = random_sequences(rng, 80, 5, d)
    y = rng.normal(size=(80, m))
    data = lifted_data(X, y, rng.uniform(0.5, 2.0, 80))
    solution = SOLVERS["normal"](
        data, alpha=alpha, fit_intercept=fit_intercept, heldout=True
    )
    start = rng.normal(size=(2, d * d))
    refits = {}
    for on_rows in (True, False):
        monkeypatch.setattr(
            folds_module, "rows_are_cheaper", lambda *args, on_rows=on_rows: on_rows
        )
        folds = solution.heldout_folds()
        designs = [folds.design(j) for j in range(folds.n_folds)]
        assert all(
            isinstance(design, SequenceDesign if on_rows else LiftedDesign)
            for design in designs
        )
        refits[on_rows] = [
            folds.error(j, *fit_heads(designs[j], start, 5)[:2])
            for j in range(folds.n_folds)
        ]
    np.testing.assert_allclose(refits[True], refits[False], rtol=1e-6)
    # a rows design's baseline is its training objective at the fold's lifted
    # fit, which the paper's read-out of that fit reproduces exactly
    monkeypatch.setattr(folds_module, "rows_are_cheaper", lambda *args: True)
    folds = solution.heldout_folds()
    for j in range(folds.n_folds):
        value, query = paper_heads(folds._parts[j][0], d, tol=0.0)
        rows = (value.reshape(len(value), -1), query.reshape(len(query), -1))
        design = folds.design(j)
        assert design_loss(design, *rows) == pytest.approx(design.baseline, rel=1e-8)


@pytest.mark.parametrize("target_scale", [1.0, 3.0, 1e-40])
def test_reported_errors_are_in_the_targets_units(target_scale):
    """head_search_.cv_error is the 5-fold interleaved cross-validated squared
    error of n_heads=None refitted by the estimator itself, in the data's units
    (the solvers' internal rescaling by powers of two taken out), each output
    weighted by head_search_.output_weights."""
    truth, X, y = noisy_sequences(16, 3, 1, 2, 0.1, n_samples=80)
    y = y * target_scale
    search = LinearAttentionRegressor().fit(X, y).head_search_
    assert search.output_weights is not None  # outputs of other scales
    fold = naive_fold_layout(len(X))
    total = 0.0
    for j in range(5):
        lifted = LinearAttentionRegressor(n_heads=None).fit(X[fold != j], y[fold != j])
        residual = y[fold == j] - lifted.predict(X[fold == j])
        total += np.sum((residual * search.output_weights) ** 2)
    assert search.cv_error == pytest.approx(total / y.size, rel=1e-6)
    returned = next(c for c in search.counts if c.n_heads == search.n_heads)
    fixed = LinearAttentionRegressor(n_heads=search.n_heads).fit(X, y)
    training = np.sum(((y - fixed.predict(X)) * search.output_weights) ** 2) / y.size
    assert returned.training_error == pytest.approx(training, rel=1e-6)


@pytest.mark.parametrize("solver", ["normal", "dual"])
@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_training_error_with_an_intercept_is_the_heads_training_error(solver, alpha):
    """CountFit.training_error is the heads' weighted squared error on the
    training rows with their best intercept (the full fit's), written out here
    from the heads' definition; before, with fit_intercept=True it was the sum
    of the folds' errors with each fold's intercept from the other folds (up
    to 13% above, on which counts were failed as "training")."""
    truth, X, y = noisy_sequences(3, 3, 2, 1, 0.3, n_samples=45)
    y = y[:, 0] + 2.0
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=len(X))
    params = dict(fit_intercept=True, alpha=alpha, solver=solver)
    search = LinearAttentionRegressor(**params).fit(X, y, weights).head_search_
    counts = [c for c in search.counts if np.isfinite(c.training_error)]
    assert counts
    for count in counts:
        fixed = LinearAttentionRegressor(n_heads=count.n_heads, **params)
        fixed.fit(X, y, weights)
        moments = np.einsum("ntb,ntc->nbc", X, X)
        heads = np.einsum(
            "hb,nbc,hce,ne->n", fixed.value_matrices_[:, 0], moments,
            fixed.query_matrices_, X[:, -1],
        )
        residual = y - heads
        residual -= np.average(residual, weights=weights)  # the best intercept
        training = np.sum(weights * residual**2) / np.sum(weights)
        assert count.training_error == pytest.approx(training, rel=1e-6)


@pytest.mark.parametrize("seed", [0, 5])
def test_the_returned_counts_row_describes_the_returned_heads(seed):
    """A noisy count is judged on its heads polished as n_heads=k returns them:
    the returned count's row in head_search_.counts has the returned heads'
    distance and training error (its row was of the fit before the polish:
    0.74376 against 0.74409 for seed 5)."""
    rng = np.random.default_rng(seed)
    truth = random_attention(rng, 4, 1)
    X = random_sequences(rng, 125, 2, 4)
    y = truth.predict(X)[:, 0]
    y = y + y.std() * rng.normal(size=y.shape)
    model = LinearAttentionRegressor().fit(X, y)
    search = model.head_search_
    assert search.criterion == "cv"
    row = next(count for count in search.counts if count.n_heads == model.n_heads_)
    assert row.relative_distance == pytest.approx(search.relative_distance, rel=1e-10)
    training_error = np.mean((model.predict(X) - y) ** 2)
    assert row.training_error == pytest.approx(training_error, rel=1e-10)


# --- the read-out is a function of the data -----------------------------------------


# Heads read out of statistics summed in another order (fit, partial_fit, the CV
# estimators): test_partial_fit_and_cv_give_the_heads_of_fit. The rounding is
# amplified along the head fit's steps by amounts that vary with the data: over
# noisy_sequences seeds 1 to 5 and 9 (its three worst cases) from 5e-15 to 5.0e-9
# (seed 1), so 1e-8 had 2x margin; 1e-7 has 20x (helper-118).
SUMMATION_ORDER = 1e-7


def assert_same_model(first, second, rtol=1e-9):
    assert first.n_heads_ == second.n_heads_
    assert first.head_search_.criterion == second.head_search_.criterion
    for name in ("coef_", "value_matrices_", "query_matrices_"):
        a, b = getattr(first, name), getattr(second, name)
        assert np.linalg.norm(a - b) <= rtol * np.linalg.norm(a), name


class _FakeClock:
    """Every clock of the time module, frozen or running ``rate`` times fast."""

    def __init__(self, rate):
        self.real = time.perf_counter
        self.rate, self.start = rate, self.real()

    def __call__(self):
        return self.start + self.rate * (self.real() - self.start)


@pytest.mark.parametrize("rate", [0.0, 1e3])
@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_no_clock_changes_the_model(monkeypatch, rate, noise):
    # The read-out with every clock frozen, or running as on a 1000x slower
    # machine, gives the same model as with the real clocks: nothing is timed.
    _, X, y = noisy_sequences(5, 4, 2, 2, noise)
    reference = LinearAttentionRegressor().fit(X, y)
    real = time.perf_counter
    clock = _FakeClock(rate)
    for name in ("perf_counter", "thread_time", "process_time", "monotonic", "time"):
        monkeypatch.setattr(time, name, clock)
    try:
        model = LinearAttentionRegressor().fit(X, y)
    finally:
        monkeypatch.setattr(time, "perf_counter", real)
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    np.testing.assert_array_equal(model.value_matrices_, reference.value_matrices_)
    np.testing.assert_array_equal(model.query_matrices_, reference.query_matrices_)
    assert model.head_search_.counts_tried == reference.head_search_.counts_tried
    # and no fitted attribute holds a clock reading (head_search_.seconds did)
    for field in dataclasses.fields(model.head_search_):
        ours = getattr(model.head_search_, field.name)
        theirs = getattr(reference.head_search_, field.name)
        if field.name not in ("value_matrices", "query_matrices", "counts"):
            np.testing.assert_array_equal(ours, theirs, err_msg=field.name)


@pytest.mark.parametrize("n_heads", ["auto", 2])
@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_refits_give_identical_models(n_heads, noise):
    _, X, y = noisy_sequences(6, 5, 3, 1, noise)
    first = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
    second = LinearAttentionRegressor(n_heads=n_heads).fit(X.copy(), y.copy())
    assert_same_model(first, second, rtol=0.0)


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_thread_counts_do_not_change_the_heads(noise):
    # Two threads sum in another order: the lifted fit moves by rounding, and
    # the heads must follow it by no more than that.
    _, X, y = noisy_sequences(8, 6, 2, 1, noise)
    with threadpool_limits(1):
        single = LinearAttentionRegressor(n_jobs=1).fit(X, y)
    with threadpool_limits(2):
        double = LinearAttentionRegressor(n_jobs=2).fit(X, y)
    assert_same_model(single, double)


def test_thread_counts_do_not_change_heads_on_a_singular_gram():
    """Token coordinates no sequence uses (sklearn digits' blank pixels) make
    the Gram singular, its factor not unique, and the heads free along its null
    space: fitted there, heads follow the factor's bits (on digits, 5 heads
    100% apart in coef_ between 1 and 2 BLAS threads). The factor is computed on
    the solve's threads, one for p below 4096: the same model to the bit."""
    X, y, _ = make_random_mhla(300, 6, 8, n_heads=2, noise=0.1, random_state=0)
    X[:, :, 6:] = 0.0
    with threadpool_limits(1):
        single = LinearAttentionRegressor().fit(X, y)
    with threadpool_limits(2):
        double = LinearAttentionRegressor().fit(X, y)
    assert_same_model(single, double, rtol=0.0)


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressorCV, LinearAttentionClassifierCV]
)
def test_thread_counts_do_not_change_the_cv_estimators(Estimator):
    """The CV estimators choose alpha on one BLAS thread where the plain
    estimators solve on one (p and n below 4096): on two, alpha_ moved by its
    last bit. The heads follow the statistics, accumulated on the threads BLAS
    has, by no more than their rounding (as the plain estimators')."""
    X, y, _ = make_random_mhla(400, 8, 4, n_heads=2, noise=0.05, random_state=3)
    if Estimator is LinearAttentionClassifierCV:
        y = (y > 0).astype(int)
    with threadpool_limits(1):
        single = Estimator().fit(X, y)
    with threadpool_limits(2):
        double = Estimator().fit(X, y)
    assert single.alpha_ == double.alpha_
    assert_same_model(single, double)


def test_a_tie_of_linearized_refits_goes_to_the_folds_own_refits(monkeypatch):
    """d = 3, two outputs, 1% noise: four heads reproduce the lifted fit, and
    three heads' refits linearized at the full fit reproduce the folds' lifted
    fits, so their error ties with the threshold (3e-9 apart, relative); by
    rounding partial_fit failed three heads and returned four, fit refitted
    the folds and returned three. Ties within the linearized errors' precision
    go to the folds' own refits in both. (Without the noisy fits' random
    starts: with them two heads, the generating count, pass first.)"""
    monkeypatch.setattr("sklearn_linattn._heads.NOISY_RANDOM_STARTS", 0)
    rng = np.random.default_rng(2)
    truth = random_attention(rng, 3, 2, n_outputs=2)
    X = random_sequences(rng, 150, 5, 3)
    y = truth.predict(X) + 0.01 * rng.normal(size=(150, 2))
    streamed = LinearAttentionRegressor(alpha=1e-3)
    for batch in (slice(0, 7), slice(7, 60), slice(60, 61), slice(61, 150)):
        streamed.partial_fit(X[batch], y[batch])
    whole = LinearAttentionRegressor(alpha=1e-3, solver="normal").fit(X, y)
    three = [c for c in whole.head_search_.counts if c.n_heads == 3][0]
    assert three.linearized_cv_error == pytest.approx(three.threshold, rel=1e-6)
    assert three.criterion == "cv" and three.passes  # the folds' own refits
    assert streamed.n_heads_ == whole.n_heads_ == 3
    assert_allclose(streamed.coef_, whole.coef_, atol=1e-8 * np.abs(whole.coef_).max())


@pytest.mark.parametrize("noise", [0.0, 0.05])
@pytest.mark.parametrize("n_outputs", [1, 2])
@pytest.mark.parametrize("input_dependent", [False, True])
def test_partial_fit_and_cv_give_the_heads_of_fit(noise, n_outputs, input_dependent):
    """The same heads from fit, partial_fit and the CV estimators: their
    statistics are summed in other orders, and that rounding travels along about
    a hundred Levenberg-Marquardt steps (largest relative difference measured
    over these 8 cases 2.5e-9 with OpenBLAS's SkylakeX, Sandybridge and Nehalem
    kernels alike, 5.0e-9 on seed 1: SUMMATION_ORDER is 20 times that)."""
    _, X, y = noisy_sequences(
        9, 4, 2, n_outputs, noise, n_samples=240, input_dependent=input_dependent
    )
    fitted = LinearAttentionRegressor(alpha=0.1).fit(X, y)
    batches = LinearAttentionRegressor(alpha=0.1)
    for start in range(0, len(X), 70):
        batches.partial_fit(X[start : start + 70], y[start : start + 70])
    assert_same_model(fitted, batches, rtol=SUMMATION_ORDER)
    continued = LinearAttentionRegressor(alpha=0.1, solver="normal").fit(
        X[:100], y[:100]
    )
    continued.partial_fit(X[100:], y[100:])
    assert_same_model(fitted, continued, rtol=SUMMATION_ORDER)
    for cv in (None, 3):
        searched = LinearAttentionRegressorCV(alphas=[0.1], cv=cv).fit(X, y)
        assert_same_model(fitted, searched, rtol=SUMMATION_ORDER)


def test_partial_fit_after_a_fit_without_folds_names_that_fit():
    """partial_fit continuing a fit with n_heads=None has no held-out folds
    (that fit kept none, as the pickle's size requires): n_heads="auto" then
    returns the lifted fit's heads, and the warning names the fit as the cause
    (it had named only partial_fit's first call, which here had "auto"; the
    user is told to fit with solver="normal", which they did; helper-159). A
    fit with n_heads="auto" keeps them, and partial_fit then decides as fit."""
    X, y, _ = make_random_mhla(150, 5, 3, n_heads=2, noise=0.1, random_state=1)
    full = LinearAttentionRegressor(alpha=0.01).fit(X, y)
    assert (full.n_heads_, full.head_search_.criterion) == (2, "cv")
    model = LinearAttentionRegressor(alpha=0.01, n_heads=None, solver="normal")
    model.fit(X[:50], y[:50]).set_params(n_heads="auto")
    model.partial_fit(X[50:], y[50:])
    with pytest.warns(UserWarning, match="or the fit it continues, had n_heads "):
        assert model.head_search_.criterion == "lifted"
    continued = LinearAttentionRegressor(alpha=0.01, solver="normal")
    continued.fit(X[:50], y[:50]).partial_fit(X[50:], y[50:])
    assert (continued.n_heads_, continued.head_search_.criterion) == (2, "cv")


def test_partial_fit_ties_the_lifted_fit_as_fit_does():
    """Three heads of a two-output model at d = 3 have as many dimensions as the
    lifted fit, and their refits' held-out errors tie its errors to the rounding
    of the statistics' summation order: fit and three partial_fit batches
    reported 3 and 4 folds no worse (the order decided); a tie is no worse, on
    every path. The whole report is the same (helper-53's case). With the noisy
    fits' longer screen of starts the 3 heads reproduce the lifted fit on all
    the rows, and pass so on both paths, before any refit. (Data seed 5: 2
    heads fail on their 5 folds' refits on both paths; on seed 2, the case
    found, the folds in runs of consecutive sequences pass 2 heads on 3 of 5
    folds.)"""
    rng = np.random.default_rng(5)
    truth = random_attention(rng, 3, 2, 2)
    X = random_sequences(rng, 200, 6, 3)
    clean = truth.predict(X)
    y = clean + 0.1 * clean.std() * rng.normal(size=clean.shape)
    fitted = LinearAttentionRegressor(alpha=0.05, solver="normal").fit(X, y)
    batches = LinearAttentionRegressor(alpha=0.05)
    for part in np.array_split(np.arange(len(X)), 3):
        batches.partial_fit(X[part], y[part])

    def report(model):
        return [
            (c.n_heads, c.passes, c.failed_on, c.folds_within, c.folds_refitted)
            for c in model.head_search_.counts
        ]

    assert report(batches) == report(fitted)
    assert (3, True, None, None, None) in report(fitted)
    assert fitted.head_search_.relative_distance <= fitted.head_search_.tol


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_partial_fit_judges_a_classifiers_counts_as_fit_does(seed):
    """A classifier's counts are judged on misclassified held-out rows, which
    partial_fit keeps: fit, fit then partial_fit and partial_fit alone give
    the same counts, thresholds and heads (they were judged on squared errors
    of the class scores after partial_fit: thresholds 0.61 against 0.18, and
    other counts, on these seeds)."""
    X, y = median_split_of_three_heads(seed, 400)
    fitted = LinearAttentionClassifier().fit(X, y)
    continued = LinearAttentionClassifier().fit(X[:200], y[:200])
    continued.partial_fit(X[200:], y[200:])
    batches = LinearAttentionClassifier()
    batches.partial_fit(X[:130], y[:130], classes=[0, 1])
    batches = pickle.loads(pickle.dumps(batches))  # the kept rows travel
    batches.partial_fit(X[130:], y[130:])
    for other in (continued, batches):
        assert_same_model(fitted, other, rtol=SUMMATION_ORDER)
        assert [c.threshold for c in other.head_search_.counts] == pytest.approx(
            [c.threshold for c in fitted.head_search_.counts], rel=1e-9
        )


def test_partial_fit_stops_keeping_a_classifiers_rows_beyond_its_limit(monkeypatch):
    """Beyond the limit partial_fit drops the rows, says so, and judges counts
    on the class scores' squared errors."""
    monkeypatch.setattr("sklearn_linattn._estimators.KEPT_ROWS_FLOATS", 0)
    X, y = median_split_of_three_heads(2, 2000)  # p = 40: 5 p^2 = 8000 floats
    model = LinearAttentionClassifier()
    model.partial_fit(X[:400], y[:400], classes=[0, 1])  # 400 rows of 17 floats
    # misclassified rows (no training squared error is reported)
    assert np.isnan(model.head_search_.counts[0].training_error)
    with pytest.warns(UserWarning, match="no longer keeps the training rows"):
        model.partial_fit(X[400:], y[400:])
    assert np.isfinite(model.head_search_.counts[0].training_error)


@pytest.mark.parametrize("alpha", [1e-4, 1e-8])
def test_partial_fit_reads_noiseless_ridge_fits_as_fit_does(alpha):
    """Noiseless targets of one head fitted with a small alpha: fit measures the
    ridge residual on the rows; partial_fit has only the statistics, where the
    residual is below their rounding and the penalty's part of it stands in
    (alpha = 1e-4: noisy, the held-out criterion; 1e-8: exact, tol)."""
    rng = np.random.default_rng(893633)
    truth = MultiHeadLinearAttention(
        rng.normal(size=(1, 3, 4)), rng.normal(size=(1, 4, 4))
    )
    X = rng.normal(size=(200, 6, 4))
    y = truth.predict(X)
    fitted = LinearAttentionRegressor(alpha=alpha).fit(X, y)
    batches = LinearAttentionRegressor(alpha=alpha)
    batches.partial_fit(X[:71], y[:71]).partial_fit(X[71:], y[71:])
    assert fitted.n_heads_ == 1
    assert batches.n_heads_ == fitted.n_heads_
    assert batches.head_search_.criterion == fitted.head_search_.criterion


def test_exact_data_build_no_folds(monkeypatch):
    """Exact data are judged by tol alone: the read-out of automaton lookups
    (exact, not identifiable) never builds its held-out folds."""
    built = []
    folds = _Search.folds

    def recording(search):
        built.append(callable(search._folds))
        return folds.fget(search)

    monkeypatch.setattr(_Search, "folds", property(recording))
    X, y, _, _ = make_automaton_lookups(500, 3, 2, random_state=0)
    model = LinearAttentionRegressor().fit(X, y)
    assert model.head_search_.criterion == "tol" and model.n_heads_ == 1
    assert not any(built)


def test_rows_are_built_only_where_a_fold_reads_them():
    """For d <= 10 a fold's heads are always refitted in its lifted metric
    (fewer columns than rows), so a regressor's folds never build the rows'
    moments; a classifier's held-out misclassification reads them."""
    _, X, y = noisy_sequences(9, 4, 2, 1, 0.05, n_samples=400)
    for classify, targets in ((False, y), (True, np.where(y > 0, 1.0, -1.0))):
        solution = SOLVERS["normal"](
            lifted_data(X, targets), alpha=0.0, fit_intercept=False, heldout=True
        )
        folds = solution.heldout_folds(classify=classify)
        assert all(
            isinstance(folds.design(j), LiftedDesign) for j in range(folds.n_folds)
        )
        assert (folds._all is not None) == classify


def test_fold_statistics_are_kept_only_where_the_read_out_uses_them():
    import pickle

    _, X, y = noisy_sequences(9, 5, 2, 1, 0.05, n_samples=300)
    for n_heads in (None, "auto"):
        fitted = LinearAttentionRegressor(n_heads=n_heads, solver="normal").fit(X, y)
        streamed = LinearAttentionRegressor(n_heads=n_heads)
        streamed.partial_fit(X[:150], y[:150]).partial_fit(X[150:], y[150:])
        assert streamed.coef_ is not None  # the model is solved when first read
        assert (fitted._fold_statistics is None) == (n_heads is None)
        assert (streamed._fold_statistics is None) == (n_heads is None)
        assert len(pickle.dumps(streamed)) <= 2 * len(pickle.dumps(fitted))


@pytest.mark.parametrize("token_dim, n_heads", [(3, 2), (4, 2), (5, 3)])
def test_cg_and_normal_agree_on_the_count(token_dim, n_heads):
    # cg's coefficients are accurate to about its solver_tol, not to rounding:
    # read with that tolerance, they give the generating count like "normal".
    truth, X, y = noisy_sequences(10 + token_dim, token_dim, n_heads, 1, 0.0)
    for solver in ("cg", "normal"):
        model = LinearAttentionRegressor(solver=solver).fit(X, y)
        assert model.n_heads_ == n_heads, solver
        assert relative_distance(model.attention_, truth) < 1e-6


# --- exact and low-precision data: counts and fixed counts ---------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_one_head_target_in_low_precision_gives_one_head(dtype):
    truth, X, y = one_head_problem()
    Xc = X.astype(dtype)
    yc = truth.predict(Xc.astype(np.float64))[:, 0].astype(dtype)
    model = LinearAttentionRegressor(token_dim=3).fit(Xc, yc)
    assert model.n_heads_ == 1
    eps = np.finfo(dtype).eps
    assert relative_error(model.predict(Xc), yc.astype(np.float64)) < 100 * eps


def test_integer_tokens_give_one_exact_head():
    rng = np.random.default_rng(9)
    truth = random_attention(rng, 3, 1)
    X = rng.integers(-3, 4, (200, 5, 3))
    y = truth.predict(X.astype(np.float64))[:, 0]
    model = LinearAttentionRegressor(token_dim=3).fit(X, y)
    assert model.n_heads_ == 1
    assert relative_error(model.predict(X), y) < 1e-10
    assert relative_error(model.coef_, truth.lifted_coef()[0]) < 1e-10


def test_pandas_float32_frame_gives_the_head_count_of_its_array():
    pd = pytest.importorskip("pandas")
    truth, X, y = one_head_problem()
    flat = X.reshape(len(X), -1).astype(np.float32)
    frame = pd.DataFrame(flat, columns=[f"x{i}" for i in range(flat.shape[1])])
    y = y.astype(np.float32).astype(np.float64)  # float32-rounded, stored as float64
    numpy_fit = LinearAttentionRegressor(token_dim=3).fit(flat, y)
    frame_fit = LinearAttentionRegressor(token_dim=3).fit(frame, y)
    assert numpy_fit.n_heads_ == 1
    assert frame_fit.n_heads_ == numpy_fit.n_heads_


def test_partial_fit_keeps_the_coarsest_precision():
    truth, X, y = one_head_problem()
    model = LinearAttentionRegressor(token_dim=3)
    model.partial_fit(X[:100].astype(np.float32), y[:100].astype(np.float32))
    model.partial_fit(X[100:], y[100:])
    assert model._input_precision == np.finfo(np.float32).eps
    model = LinearAttentionRegressor(token_dim=3)
    model.partial_fit(X[:100], y[:100])
    model.partial_fit(X[100:], y[100:].astype(np.float32))
    assert model._input_precision == np.finfo(np.float32).eps
    model.fit(X, y)  # a new fit forgets it
    assert model._input_precision == np.finfo(np.float64).eps


def test_partial_fit_float32_head_count_equals_fit():
    counts = []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        truth = random_attention(rng, 3, 1)
        X = random_sequences(rng, 200, 5, 3).astype(np.float32)
        y = truth.predict(X.astype(np.float64))[:, 0].astype(np.float32)
        incremental = LinearAttentionRegressor(token_dim=3)
        incremental.partial_fit(X[:100], y[:100]).partial_fit(X[100:], y[100:])
        whole = LinearAttentionRegressor(token_dim=3).fit(X, y)
        counts.append((incremental.n_heads_, whole.n_heads_))
    assert all(a == b == 1 for a, b in counts), counts


def test_head_search_reports_the_tolerance_it_used():
    """float32 data pin the coefficients down to float32's precision, and the
    read-out judges counts at that tolerance, not the estimator's 1e-8: the
    record says which, and the returned heads are within it."""
    X, y, _ = make_random_mhla(300, 8, 4, n_heads=2, random_state=0)
    exact = LinearAttentionRegressor().fit(X, y).head_search_
    assert exact.tol == 1e-8
    search = LinearAttentionRegressor().fit(
        X.astype(np.float32), y.astype(np.float32)
    ).head_search_
    assert search.tol >= np.finfo(np.float32).eps
    assert search.n_heads == 2 and search.relative_distance <= search.tol


def test_float32_two_head_target_gives_two_heads():
    rng = np.random.default_rng(0)
    truth = random_attention(rng, 3, 2)
    X = random_sequences(rng, 400, 6, 3).astype(np.float32)
    y = truth.predict(X.astype(np.float64))[:, 0].astype(np.float32)
    model = LinearAttentionRegressor(token_dim=3).fit(X, y)
    assert model.n_heads_ == 2


def test_float32_fixed_two_heads_are_within_rounding_of_the_truth():
    """n_heads=int with float32: the 2-head fit is within float32 rounding of the
    truth, the 1-head fit is not."""
    rng = np.random.default_rng(10)
    d = 4
    truth = random_attention(rng, d, 2)
    X = random_sequences(rng, 300, 6, d).astype(np.float32)
    y = truth.predict(X.astype(np.float64))[:, 0].astype(np.float32)
    two = LinearAttentionRegressor(token_dim=d, n_heads=2).fit(X, y)
    one = LinearAttentionRegressor(token_dim=d, n_heads=1).fit(X, y)
    assert two.n_heads_ == 2 and one.n_heads_ == 1
    reference = truth.lifted_coef()[0]
    assert relative_error(two.coef_, reference) < 1e-5
    assert relative_error(one.coef_, reference) > 1e-2
    assert relative_error(two.predict(X), y.astype(np.float64)) < 1e-6


@pytest.mark.parametrize("token_dim", [3, 4])
def test_float32_fixed_count_above_the_generating_one_drops_rounding_heads(token_dim):
    """n_heads=3 on float32 data of two heads and two outputs: the third head of
    the fit is at float32 rounding (1e-8 of the first), within the read-out's tol
    (float32's epsilon), and is dropped, as it is on float64 data."""
    X, y = make_random_mhla(
        600, 8, token_dim, n_heads=2, n_outputs=2, random_state=0
    )[:2]
    for dtype in (np.float64, np.float32):
        lifted = LinearAttentionRegressor(n_heads=None).fit(
            X.astype(dtype), y.astype(dtype)
        )
        model = LinearAttentionRegressor(n_heads=3)
        model.fit(X.astype(dtype), y.astype(dtype))
        assert model.n_heads_ == 2
        assert relative_error(model.coef_, lifted.coef_) < 1e-5


@pytest.mark.parametrize("solver", ["normal", "dual", "partial_fit"])
@pytest.mark.parametrize("level", [3.7, -1e6])
def test_constant_targets_with_an_intercept_have_no_heads(solver, level):
    """Centered, constant targets are rounding (1e-16 of their level): no
    heads fit them, and the intercept is their level (3 heads of 1e-15
    coefficients came back)."""
    X = np.random.default_rng(0).normal(size=(60, 5, 3))
    y = np.full(60, level)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=60)
    for n_heads in ("auto", None):
        model = LinearAttentionRegressor(fit_intercept=True, n_heads=n_heads)
        if solver == "partial_fit":
            for batch in np.array_split(np.arange(60), 3):
                model.partial_fit(X[batch], y[batch], sample_weight=weights[batch])
        else:
            model.set_params(solver=solver).fit(X, y, sample_weight=weights)
        assert model.n_heads_ == 0
        assert not np.any(model.coef_)
        np.testing.assert_allclose(model.predict(X), level, rtol=1e-14)


@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_targets_far_from_zero_give_the_count_of_their_centered_part(offset):
    """An offset of 1e3 times the targets' spread, taken out by the
    intercept, leaves the generating count and the heads within tol."""
    rng = np.random.default_rng(4)
    truth = random_attention(rng, 3, 2)
    X = random_sequences(rng, 100, 6, 3)
    y = truth.predict(X)[:, 0]
    model = LinearAttentionRegressor(fit_intercept=True).fit(X, y + offset * y.std())
    assert model.n_heads_ == 2
    assert relative_error(model.coef_, truth.lifted_coef()[0]) < 1e-6


def test_a_tolerance_of_one_keeps_no_heads():
    """tol=1 (the precision of targets taken as constant) drops everything: the
    whole tail is within the norm of them all, however the two are summed (a
    norm summed in another order came out below the tail by rounding, and a
    head of such targets was kept through partial_fit)."""
    from sklearn_linattn._heads import n_heads_within

    rng = np.random.default_rng(0)
    for size in range(1, 30):
        for _ in range(40):
            values = np.sort(rng.lognormal(sigma=3.0, size=size))[::-1]
            assert n_heads_within(values, 1.0) == 0
            assert n_heads_within(values, 0.0) == size


@pytest.mark.parametrize("solver", ["normal", "dual", "partial_fit", "dask"])
@pytest.mark.parametrize("offset", [1e6, 4e6, 1e8])
def test_targets_of_small_spread_far_from_zero_keep_their_heads(solver, offset):
    """Targets of unit spread at 1e6 to 1e8 with an intercept: the lifted fit
    is good to about eps times the offset over the spread, but from the sums
    the centered energy had been taken as rounding (no heads, R^2 0 on exact
    data, from about 4e6 at n = 400), and the tolerance below that had been
    eps times the offset over the spread squared (3.5e-4 at 1e6: a head of
    1e-3 of the other's size dropped). Also with n_heads=None, and from the
    sums alone (partial_fit, Dask), where the centered moments tell."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6, 3)) / np.sqrt(6)
    value, query = rng.normal(size=(2, 1, 3)), rng.normal(size=(2, 3, 3))
    value[1] *= 3e-2  # a weak second head: 1e-3 of the first
    query[1] *= 3e-2
    truth = MultiHeadLinearAttention(value, query)
    y = truth.predict(X)[:, 0]
    spread = y.std()
    targets = y + offset * spread
    for n_heads in ("auto", None):
        model = LinearAttentionRegressor(fit_intercept=True, n_heads=n_heads)
        if solver == "partial_fit":
            for batch in np.array_split(np.arange(len(X)), 3):
                model.partial_fit(X[batch], targets[batch])
        elif solver == "dask":
            da = pytest.importorskip("dask.array")
            model.fit(
                da.from_array(X, chunks=(100, 6, 3)), da.from_array(targets, chunks=100)
            )
        else:
            model.set_params(solver=solver).fit(X, targets)
        if n_heads == "auto":
            assert model.n_heads_ == 2
        # the heads' predictions are those of the truth, to the precision
        # that the offset leaves (about 1e-16 * offset * sqrt(n))
        residual = model.predict(X) - targets
        assert np.sqrt(np.mean(residual**2)) < 1e-13 * offset * spread


@pytest.mark.parametrize("seed", [2, 7])
def test_float32_tokens_of_a_one_head_model_give_one_head(seed):
    """Tokens rounded to float32, exact float64 targets of one head (d = 6), an
    intercept: the lifted fit is within about eps32 of the one-head model, and a
    tolerance of eps32 itself let rounding decide (2 heads for the tokens times
    3 in 11 of 40 seeds, none at scale 1 or d = 5); with its margin, one head."""
    X, y, _ = make_random_mhla(200, 7, 6, n_heads=1, random_state=seed)
    for scale in (1.0, 3.0):
        tokens = X.astype(np.float32) * np.float32(scale)
        model = LinearAttentionRegressor(fit_intercept=True).fit(tokens, y * scale**3)
        assert model.n_heads_ == 1
        assert model.head_search_.tol >= 16 * np.finfo(np.float32).eps


@pytest.mark.parametrize("scale", [1e-30, 1e-12, 1e12, 1e30])
def test_float32_one_head_target_gives_one_head_at_every_scale(scale):
    truth, X, _ = one_head_problem(seed=11)
    Xs = (X * scale).astype(np.float32)
    y = truth.predict(Xs.astype(np.float64))[:, 0]
    model = LinearAttentionRegressor(token_dim=3).fit(Xs, y)
    assert model.n_heads_ == 1
    assert model.certificate_.identifiable and certify(Xs).identifiable
    assert relative_error(model.predict(Xs), y) < 1e-6
    np.testing.assert_allclose(
        model.coef_, truth.lifted_coef()[0], rtol=1e-6, atol=1e-8
    )


def _identifiable_mhla_data(d, n_heads, n_outputs):
    rng = np.random.default_rng(100 * d + n_heads)
    truth = random_attention(rng, d, n_heads, n_outputs=n_outputs)
    X = random_sequences(rng, d * d * (d + 1) // 2 + 50, 6, d)
    return truth, X, truth.predict(X)


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4])
def test_auto_heads_recover_generating_count_one_output(n_heads):
    truth, X, y = _identifiable_mhla_data(4, n_heads, 1)
    model = LinearAttentionRegressor(token_dim=4).fit(X, y)
    assert model.certificate_.identifiable
    assert model.n_heads_ == n_heads
    assert relative_error(model.coef_, truth.lifted_coef()[0]) < 1e-8


@pytest.mark.parametrize("n_heads", [1, 2])
def test_auto_heads_recover_generating_count_two_outputs(n_heads):
    truth, X, y = _identifiable_mhla_data(4, n_heads, 2)
    model = LinearAttentionRegressor(token_dim=4).fit(X, y)
    assert model.n_heads_ == n_heads


@pytest.mark.parametrize("d", [4, 5])
def test_fixed_three_heads_two_outputs_recover_truth(d):
    truth, X, y = _identifiable_mhla_data(d, 3, 2)
    model = LinearAttentionRegressor(token_dim=d, n_heads=3).fit(X, y)
    assert relative_error(model.coef_, truth.lifted_coef()) < 1e-8


@pytest.mark.parametrize("d", [4, 5])
def test_auto_heads_recover_three_heads_with_two_outputs(d):
    truth, X, y = _identifiable_mhla_data(d, 3, 2)
    model = LinearAttentionRegressor(token_dim=d).fit(X, y)
    assert model.n_heads_ == 3


def test_fixed_two_heads_two_outputs_d3_recover_truth():
    """A fixed count is searched to convergence: from alternating projections and
    from the paper's heads cut to 2, Gauss-Newton stalls at 6e-2 after a few steps
    and then crosses a plateau to the generating heads (28 steps)."""
    truth, X, y = _identifiable_mhla_data(3, 2, 2)
    fixed = LinearAttentionRegressor(token_dim=3, n_heads=2).fit(X, y)
    assert relative_error(fixed.coef_, truth.lifted_coef()) < 1e-8


def test_auto_heads_recover_two_heads_two_outputs_d3():
    truth, X, y = _identifiable_mhla_data(3, 2, 2)
    assert LinearAttentionRegressor(token_dim=3).fit(X, y).n_heads_ == 2


def test_noisy_two_head_target_gives_two_heads():
    rng = np.random.default_rng(7)
    truth = random_attention(rng, 4, 2)
    X = random_sequences(rng, 280, 6, 4)
    y = truth.predict(X)
    y = y + 1e-3 * np.std(y) * rng.normal(size=y.shape)
    model = LinearAttentionRegressor(token_dim=4).fit(X, y[:, 0])
    assert model.n_heads_ == 2


def _head_problem(d, H, m, fit_intercept=False, weighted=False, seed=0):
    """Noiseless data from a random H-head model (paper's scales)."""
    rng = np.random.default_rng(1000 * seed + 10 * d + H)
    truth = random_attention(rng, d, H, m)
    n = d * d * (d + 1) // 2 + 40
    X = random_sequences(rng, n, 6, d)
    y = truth.predict(X)
    if fit_intercept:
        y = y + 0.7
    if m == 1:
        y = y.ravel()
    w = rng.uniform(0.5, 2.0, n) if weighted else None
    return truth, X, y, w


def _objective(est, X, y, w, alpha):
    """Training objective written out:
    sum_i w_i ||y_i - f(X_i)||^2 + alpha ||coef||^2."""
    residual = (y - est.predict(X)).reshape(len(y), -1)
    weights = np.ones(len(y)) if w is None else w
    return float(
        np.sum(weights[:, None] * residual**2)
        + alpha * np.sum(np.asarray(est.coef_) ** 2)
    )


def _coef_distance(est, reference):
    a, b = np.asarray(est.coef_), np.asarray(reference.coef_)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


EXACT_CASES = [
    # (d, H, n_outputs, fit_intercept, weighted)
    (2, 1, 1, False, False),
    (3, 2, 2, False, False),
    (4, 2, 1, True, False),
    (5, 3, 1, False, True),
    (6, 2, 2, True, False),
    (8, 2, 1, False, False),
    (8, 3, 2, False, True),
]


@pytest.mark.parametrize("d, H, m, fit_intercept, weighted", EXACT_CASES)
@pytest.mark.parametrize("extra", [0, 1])
def test_fixed_count_at_or_above_generating_count_is_exact(
    d, H, m, fit_intercept, weighted, extra
):
    truth, X, y, w = _head_problem(d, H, m, fit_intercept, weighted)
    k = H + extra
    lifted = LinearAttentionRegressor(n_heads=None, fit_intercept=fit_intercept).fit(
        X, y, sample_weight=w
    )
    est = LinearAttentionRegressor(n_heads=k, fit_intercept=fit_intercept).fit(
        X, y, sample_weight=w
    )
    assert est.n_heads_ <= k
    assert len(est.value_matrices_) == est.n_heads_ <= k
    assert _coef_distance(est, lifted) < 1e-8
    assert naive_relative_distance(est.attention_, truth) < 1e-8
    if fit_intercept:
        np.testing.assert_allclose(est.intercept_, 0.7, atol=1e-8)


@pytest.mark.parametrize(
    "d, H, m, fit_intercept, weighted",
    [(3, 2, 2, False, False), (4, 3, 1, True, False), (6, 3, 2, False, True)],
)
def test_fixed_count_below_generating_count_never_more_heads(
    d, H, m, fit_intercept, weighted
):
    """k = H - 1 cannot reproduce the fit: at most k heads, a loss no better than
    the lifted fit's (it is the minimum over any number of heads) and finite."""
    truth, X, y, w = _head_problem(d, H, m, fit_intercept, weighted)
    lifted = LinearAttentionRegressor(n_heads=None, fit_intercept=fit_intercept).fit(
        X, y, sample_weight=w
    )
    est = LinearAttentionRegressor(n_heads=H - 1, fit_intercept=fit_intercept).fit(
        X, y, sample_weight=w
    )
    assert est.n_heads_ <= H - 1
    loss, lifted_loss = _objective(est, X, y, w, 0.0), _objective(lifted, X, y, w, 0.0)
    assert np.isfinite(loss)
    assert loss >= lifted_loss - 1e-9 * np.sum(y**2)
    # heads and coef_ describe the same function
    np.testing.assert_allclose(
        est.attention_.predict(X).reshape(len(y), -1) + np.atleast_1d(est.intercept_),
        est.predict(X).reshape(len(y), -1),
        atol=1e-9,
    )


@pytest.mark.parametrize("d, H, m", [(2, 1, 1), (4, 2, 2)])
def test_fixed_count_with_ridge_never_more_heads_and_near_lifted_loss(d, H, m):
    """alpha > 0: the lifted ridge fit is not a k-head model, but with k >= H the
    returned model's objective is within 0.1% of it."""
    truth, X, y, w = _head_problem(d, H, m)
    alpha = 1e-3
    lifted = LinearAttentionRegressor(n_heads=None, alpha=alpha).fit(X, y)
    est = LinearAttentionRegressor(n_heads=H, alpha=alpha).fit(X, y)
    assert est.n_heads_ <= H
    lifted_loss = _objective(lifted, X, y, None, alpha)
    loss = _objective(est, X, y, None, alpha)
    assert lifted_loss * (1 - 1e-9) <= loss <= lifted_loss * 1.001


def test_fixed_count_finds_what_auto_finds():
    """A fixed count at the generating count finds the exact heads that
    n_heads='auto' finds (d=4, 1 output, seed 3: 1.6e-2 away once)."""
    truth, X, y, w = _head_problem(4, 3, 1, seed=3)
    auto = LinearAttentionRegressor(n_heads="auto").fit(X, y)
    assert auto.n_heads_ == 3  # the search can find exact 3-head models here
    assert naive_relative_distance(auto.attention_, truth) < 1e-8
    fixed = LinearAttentionRegressor(n_heads=3).fit(X, y)
    assert naive_relative_distance(fixed.attention_, truth) < 1e-8


@pytest.mark.parametrize("seed", [0, 3])
def test_fixed_count_equal_to_generating_count_recovers_truth_d3_two_outputs(seed):
    """The 3 generating heads of a 2-output model at d=3 (1.2e-2 and 3.7e-2 away
    under the old time budget)."""
    truth, X, y, w = _head_problem(3, 3, 2, seed=seed)
    est = LinearAttentionRegressor(n_heads=3).fit(X, y)
    assert naive_relative_distance(est.attention_, truth) < 1e-8


def test_fixed_count_of_one_output_reaches_the_generating_training_loss():
    """One output, 2 heads of d = 5 (fewer than d / 2), 10% noise, 750
    sequences: the completion and the paper's heads both start n_heads=2 in a
    minimum above the generating model's training loss (hostile review: 1.36
    times on another draw), where the default returned 3 heads; the nearest
    common isotropic subspace, refined beside them, reaches it."""
    X, y, truth = make_random_mhla(750, 8, 5, n_heads=2, random_state=37)
    y = y + 0.1 * np.std(y) * np.random.default_rng(1037).normal(size=y.shape)
    fixed = LinearAttentionRegressor(n_heads=2).fit(X, y)
    generating = np.mean((truth.predict(X)[:, 0] - y) ** 2)
    assert np.mean((fixed.predict(X) - y) ** 2) <= generating
    assert LinearAttentionRegressor().fit(X, y).n_heads_ == 2


@pytest.mark.parametrize(
    "n_outputs, seed, n_samples",
    [(2, 7052, 200), (1, 2048, 240), (2, 7052, 500)],
)
def test_heads_do_not_depend_on_the_order_of_the_token_coordinates(
    n_outputs, seed, n_samples
):
    """Reordering the token coordinates only relabels the data: the default
    returns the same count and predictions, and ``n_heads=2`` the same fit. The
    random starts are drawn in bases of the tokens' and queries' spans, not of
    the coordinates (helper-88: drawn in the coordinates, these noisy 2-head
    problems returned 2 heads as given, 5 or 4 reversed or padded, at 3 times
    the test error, and ``n_heads=2`` ended at 1.8 times the training error).
    A coordinate no token uses leaves the starts' draws as they were, and the
    linearized refits' rule (with 10 rows per lifted feature, 500 sequences
    here) counts the features of the spans, not ``p``: counting ``p``, the
    padded 500-sequence problem returned 3 heads (helper-89)."""
    X, y, _ = make_random_mhla(
        n_samples, 3, 4, n_heads=2, n_outputs=n_outputs, noise=0.3,
        random_state=seed,
    )
    X_test = np.random.default_rng(seed).normal(size=(500, 3, 4))

    def zero_coordinate(A):
        return np.concatenate([A, np.zeros(A.shape[:2] + (1,))], axis=-1)

    relabellings = [
        lambda A: A, lambda A: A[..., ::-1], lambda A: A[..., [0, 2, 1, 3]],
        zero_coordinate,
    ]
    for n_heads in ("auto", 2):
        models = [
            LinearAttentionRegressor(n_heads=n_heads).fit(relabel(X), y)
            for relabel in relabellings
        ]
        predictions = [
            model.predict(relabel(X_test))
            for model, relabel in zip(models, relabellings, strict=True)
        ]
        for model, predicted in zip(models[1:], predictions[1:], strict=True):
            assert model.n_heads_ == models[0].n_heads_ == 2
            assert_allclose(
                predicted, predictions[0], rtol=0,
                atol=1e-6 * np.max(np.abs(predictions[0])),
            )


def modechoice_tokens():
    """statsmodels' modechoice (the chosen mode of travel, 4 classes), 6
    standardized features as 3 tokens of 2, one-hot positions and a constant
    coordinate (linearly dependent: the positions sum to it); split seed 2."""
    sm = pytest.importorskip("statsmodels.api")
    data = sm.datasets.modechoice.load_pandas().data
    data = data[data.choice == 1]
    X = data[["ttme", "invc", "invt", "gc", "hinc", "psize"]].to_numpy(float)
    y = data["mode"].to_numpy().astype(int)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=2, stratify=y
    )
    scaler = StandardScaler().fit(X_train)
    positions = PositionalEncoding(constant=True, padding=None)
    Z_train = positions.fit_transform(scaler.transform(X_train).reshape(-1, 3, 2))
    Z_test = positions.transform(scaler.transform(X_test).reshape(-1, 3, 2))
    return Z_train, y_train, Z_test, y_test


@pytest.mark.parametrize("n_heads", [1, "auto"])
def test_heads_do_not_depend_on_the_order_of_linearly_dependent_coordinates(n_heads):
    """With linearly dependent token coordinates the head features are exactly
    rank-deficient, and their computed zero singular value (about 100 eps of
    the largest) had decided their rank by the order of the coordinates
    (helper-91: ``n_heads=1`` ended at training losses 0.088 and 0.198 with the
    coordinates reversed, the default at 2 heads and 15, accuracy 0.774 and
    0.830). Below 1e-10 of the largest they count as zero."""
    Z, y, Z_test, _ = modechoice_tokens()
    orders = [slice(None), slice(None, None, -1), [5, 2, 0, 4, 1, 3]]
    models = [
        LinearAttentionClassifier(n_heads=n_heads).fit(Z[..., order], y)
        for order in orders
    ]
    scores = [
        model.decision_function(Z_test[..., order])
        for model, order in zip(models, orders, strict=True)
    ]
    for model, score in zip(models[1:], scores[1:], strict=True):
        assert model.n_heads_ == models[0].n_heads_
        assert_allclose(
            score, scores[0], rtol=0, atol=1e-6 * np.max(np.abs(scores[0]))
        )


def test_refits_that_reproduce_the_lifted_fit_tie_it_in_any_order_and_scale():
    """aeon's solar series as 12 lags (6 tokens of 2, one-hot positions and a
    constant), more lifted features than rows: 2 heads refitted on each fold
    reproduce the fold's lifted fit within ``tol``, and their held-out errors
    came within 1e-9 to 7e-9 of its, beside a tie rule of 1e-9 (helper-91:
    2 heads as given and at twice the scale, 8 reversed, permuted or at three
    times). Within 10 ``tol`` they tie. The windows are taken in a fixed
    random order: in time order the folds, in runs of consecutive windows,
    pass 1 head (no tie to test; it forecasts the last 30% with 0.65 times
    n_heads=None's squared error). Needs aeon (not a test dependency)."""
    datasets = pytest.importorskip("aeon.datasets")
    series = np.asarray(datasets.load_solar(), dtype=float)
    lags = 12
    windows = np.stack([series[t - lags : t] for t in range(lags, len(series))])
    windows, targets = windows / series.std(), series[lags:] / series.std()
    tokens = PositionalEncoding(constant=True, padding=None).fit_transform(
        SeriesToTokens(window=2).fit_transform(windows)
    )
    n_train = int(0.7 * len(tokens))
    order = np.random.default_rng(0).permutation(n_train)
    X, y = tokens[:n_train][order], targets[:n_train][order]
    counts = [
        LinearAttentionRegressor(fit_intercept=True).fit(relabel(X), y).n_heads_
        for relabel in (
            lambda A: A, lambda A: A[..., ::-1], lambda A: 3.0 * A, lambda A: 2.0 * A
        )
    ]
    assert counts == [2, 2, 2, 2]


@pytest.mark.parametrize("tol", [1e-2, 5e-2])
def test_a_loose_tol_does_not_make_worse_held_out_errors_a_tie(tol):
    """Held-out errors tie within 10 tol only up to 1e-6 (relative). A tie of
    10 tol had let a loose ``tol`` pass counts clearly worse than the lifted
    fit (helper-92, on a draw of this family, d = 4, 3 generating heads, 30%
    noise, 120 sequences, ``tol=5e-2``: 1 head at 34% above its threshold, 1.6
    times the lifted fit's test error); both tols fail here without the cap."""
    rng = np.random.default_rng(711)
    d, n = 4, 120
    X, y, _ = make_random_mhla(n + 3000, 5, d, n_heads=3, random_state=711)
    y = y / np.std(y)
    noisy = y + 0.3 * rng.normal(size=y.shape)
    lifted = LinearAttentionRegressor(n_heads=None).fit(X[:n], noisy[:n])
    default = LinearAttentionRegressor(tol=tol).fit(X[:n], noisy[:n])
    for count in default.head_search_.counts:
        if count.passes and count.criterion == "cv":
            assert count.cv_error <= count.threshold * (1 + 1e-6)

    def test_error(model):
        return np.mean((model.predict(X[n:]) - y[n:]) ** 2)

    assert test_error(default) <= 1.05 * test_error(lifted)


def test_fixed_count_objective_does_not_stall_above_fewer_heads():
    """alpha > 0 (the noisy path): n_heads=4 used to return a 4-head model whose
    objective was 8x that of n_heads=3's, although any 3-head model is a 4-head
    model (alternating projections stalled at 4 heads). Each count is fitted
    from its own starts, a non-convex fit, so one more head is not below by
    construction: this one ends 0.7% above (random starts drawn in the spans'
    bases; within 0.1% drawn in the coordinates), and of 200 draws of such
    problems (``benchmarks/bench_coordinate_order.py``, "fixed") 0 end above
    by more than 0.1% (1 drawn in the coordinates, by 0.24%). Bounded at twice
    the objective: a stall was 8 times."""
    truth, X, y, w = _head_problem(4, 3, 2)
    alpha = 1e-3
    three = LinearAttentionRegressor(n_heads=3, alpha=alpha).fit(X, y)
    four = LinearAttentionRegressor(n_heads=4, alpha=alpha).fit(X, y)
    assert _objective(four, X, y, None, alpha) <= 2 * _objective(
        three, X, y, None, alpha
    )


def median_split_of_three_heads(seed, n_samples):
    """Binary labels: a noisy three-head layer (d = 4, 8 tokens) above its
    median; one-hot tokens with a little noise for even seeds, Gaussian ones
    for odd seeds."""
    rng = np.random.default_rng(seed)
    truth = MultiHeadLinearAttention(
        rng.normal(size=(3, 1, 4)), rng.normal(size=(3, 4, 4)) / 4
    )
    if seed % 2:
        X = rng.normal(size=(n_samples, 8, 4))
    else:
        one_hot = np.eye(4)[rng.integers(0, 4, size=(n_samples, 8))]
        X = one_hot + 0.1 * rng.normal(size=(n_samples, 8, 4))
    scores = truth.predict(X)[:, 0]
    scores = scores + 0.5 * scores.std() * rng.normal(size=n_samples)
    return X, (scores > np.median(scores)).astype(int)


def many_rows_two_outputs():
    """400 sequences of d = 3 (22 p): linearized refits pass counts here (2
    heads, 0.8% below the threshold, which the folds' own refits fail, 0.6%
    above it)."""
    X, y, _ = make_random_mhla(400, 8, 3, n_heads=2, n_outputs=2, random_state=21)
    return X, y + y.std(axis=0) * np.random.default_rng(21).normal(size=y.shape)


@pytest.mark.parametrize(
    "estimator, data",
    [
        (LinearAttentionClassifier(), lambda: median_split_of_three_heads(0, 320)),
        (LinearAttentionClassifierCV(), lambda: median_split_of_three_heads(37, 120)),
        (LinearAttentionRegressor(alpha=10.0), many_rows_two_outputs),
    ],
)
def test_the_search_judges_each_count_as_n_heads_k_does(estimator, data):
    """A linearization of the folds' refits can err either way (it failed
    counts that the folds' own refits pass, by one held-out row here, by 0.05%
    to 17% of the threshold on lagged series): it passes counts only with many
    rows, for ``n_heads=k`` as in the search, and every other count goes to its
    folds' own refits, so that each verdict of the search is that of
    ``n_heads=k``."""
    X, y = data()
    search = clone(estimator).fit(X, y).head_search_
    shortcut = [c.passes and c.folds_refitted is None for c in search.counts]
    beyond = [c.passes and c.linearized_cv_error > c.threshold for c in search.counts]
    assert any(shortcut + beyond), "no shortcut and no linearized miss: nothing tested"
    for count in search.counts:
        if count.passes is None:
            continue
        asked = clone(estimator).set_params(n_heads=count.n_heads).fit(X, y)
        assert asked.head_search_.passes == count.passes, count.n_heads
        if not count.passes:
            assert count.failed_on in (
                "training", "gcv", "refits", "majority", "scores"
            )


def test_a_head_only_one_output_uses_is_kept():
    """The held-out error sums the outputs: dropping a head that only output 5
    uses lost that output's signal for about a sixth of the total, which the
    other outputs' gains from fewer parameters made up (1 head at 1.50 times
    n_heads=None's test error on output 5). Each output's refits are also held
    against the lifted fit's on it: one head fails on output 5."""
    n = 400
    X, y, clean = hidden_head_outputs(0, n, 4000)
    model = LinearAttentionRegressor().fit(X[:n], y[:n])
    one = model.head_search_.counts[0]
    assert one.n_heads == 1 and one.failed_on == "output"
    assert one.cv_error <= one.threshold and one.folds_within >= 3  # the sum passed
    assert model.n_heads_ == 2
    lifted = LinearAttentionRegressor(n_heads=None).fit(X[:n], y[:n])

    def errors(estimator):
        return np.mean((estimator.predict(X[n:]) - clean[n:]) ** 2, axis=0)

    assert np.all(errors(model) <= 1.1 * errors(lifted))


def test_a_count_failed_by_its_first_folds_names_the_test_they_fail_it_on():
    """Refits stopped at the first folds that fail a count report the test those
    folds fail it on, here the one n_heads=k reports after refitting every
    fold: one and two heads of d = 3 (72 sequences, noise as large as the
    signal, alpha 1e-3) are worse than the lifted fit on the first 3 folds
    refitted (no worse on the other 2) and within the threshold (a majority
    fails them; it had been named "refits")."""
    rng = np.random.default_rng(36)
    truth = random_attention(rng, 3, 2, 1)
    X = random_sequences(rng, 72, 16, 3)
    y = truth.predict(X)[:, 0]
    y = y + y.std() * rng.normal(size=y.shape)
    params = dict(alpha=1e-3, fit_intercept=True)
    search = LinearAttentionRegressor(**params).fit(X, y).head_search_
    stopped = [c for c in search.counts if (c.folds_refitted or 5) < 5]
    assert stopped, "no count stopped early: the test exercises nothing"
    for count in stopped:
        asked = LinearAttentionRegressor(n_heads=count.n_heads, **params).fit(X, y)
        every_fold = asked.head_search_.counts[0]
        assert every_fold.folds_refitted == 5 and every_fold.passes is False
        assert count.failed_on == every_fold.failed_on
    assert "majority" in {c.failed_on for c in stopped}


@pytest.mark.parametrize("seed, n_heads, n_lifted_times, alpha", [
    (2, 2, 1.3, 1e-3), (4, 2, 1.3, 1e-3), (17, 2, 3.0, 0.0),
])
def test_each_failing_count_names_the_test_it_failed(
    seed, n_heads, n_lifted_times, alpha
):
    """``failed_on`` is set exactly on the counts that fail, and says which of
    their numbers failed them: a training error above the threshold, a
    generalized cross-validated error near interpolation (training error
    within the threshold), its folds' refits above it, or a majority of folds
    worse than the lifted fit (cross-validated error within it)."""
    d = 4 if n_lifted_times < 2 else 3
    truth, X, y = noisy_sequences(
        seed, d, n_heads, 1, 0.1, n_samples=int(n_lifted_times * n_lifted(d))
    )
    search = LinearAttentionRegressor(alpha=alpha, fit_intercept=alpha > 0).fit(
        X, y[:, 0]
    ).head_search_
    failed_on = {count.failed_on for count in search.counts}
    assert failed_on & {"gcv", "majority"}, "the test exercises neither"
    for count in search.counts:
        assert (count.failed_on is None) == (count.passes is not False)
        if count.failed_on == "training":
            assert count.training_error > count.threshold
        elif count.failed_on == "gcv":
            assert not count.training_error > count.threshold
            lifted = min(search.cv_error, search.gcv_error)
            assert np.isfinite(count.gcv_error) and count.gcv_error > lifted
        elif count.failed_on == "majority" and count.folds_refitted == 5:
            assert count.cv_error <= count.threshold and count.folds_within <= 2
        elif count.failed_on == "refits" and count.folds_refitted == 5:
            assert count.cv_error > count.threshold


@pytest.mark.parametrize(
    "seed, n_samples, n_classes", [(1, 17, 3), (1, 30, 4)]  # p = 18
)
def test_a_count_that_reproduces_the_lifted_fit_passes_on_the_rows_too(
    seed, n_samples, n_classes
):
    """Classes with an intercept (d = 3): c heads reproduce the noisy lifted
    fit of c classes here (n_heads=c within 1e-10 of n_heads=None). Read on the
    training rows (solver "dual"), whose loss is the objective less the lifted
    fit's, a difference of two sums of squares resolved only to about sqrt(eps),
    the fit stopped at 1.2e-8 > tol and the count failed: six heads of three
    classes, five of four, where the normal equations' read-out returns c."""
    rng = np.random.default_rng(seed)
    truth = random_attention(rng, 3, 2, n_classes)
    X = random_sequences(rng, n_samples, 6, 3)
    scores = truth.predict(X)
    scores = scores + 0.3 * scores.std() * rng.normal(size=scores.shape)
    y = np.asarray(["a", "b", "c", "d"])[scores.argmax(axis=1)]
    kwargs = dict(alpha=0.1, fit_intercept=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few rows per lifted feature
        lifted = LinearAttentionClassifier(n_heads=None, **kwargs).fit(X, y)
        fixed = LinearAttentionClassifier(n_heads=n_classes, solver="normal", **kwargs)
        fixed.fit(X, y)
        models = {
            solver: LinearAttentionClassifier(solver=solver, **kwargs).fit(X, y)
            for solver in ("dual", "normal")
        }
    norm = np.linalg.norm(lifted.coef_)
    assert np.linalg.norm(fixed.coef_ - lifted.coef_) <= 1e-10 * norm
    for model in models.values():
        assert model.n_heads_ == n_classes
        assert model.head_search_.criterion == "tol"
        assert np.linalg.norm(model.coef_ - lifted.coef_) <= 1e-8 * norm


@pytest.mark.parametrize("seed", [603691843, 127])
def test_fit_and_partial_fit_share_the_work_beyond_the_interpolating_count(seed):
    """Twenty wine samples as 3 tokens of 3 features with positions (d = 7, p =
    196, fewer rows than features): counts from the interpolating one on are
    fitted within a share of the work the search's fits spent before them. The
    folds' own work is not in it (from the rows it is a few thousand flops, from
    partial_fit's statistics 3e7), so both paths fit the same counts and return
    the same heads."""
    X, y = load_wine(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(X))
    X, y = X[order][:20], y[order][:20]
    X = StandardScaler().fit_transform(X)
    X = np.pad(X, ((0, 0), (0, 2))).reshape(20, 5, 3)[:, :3]
    X = PositionalEncoding(constant=True, padding=None).fit_transform(X)
    fitted = LinearAttentionClassifier(alpha=10.0, fit_intercept=False).fit(X, y)
    batches = LinearAttentionClassifier(alpha=10.0, fit_intercept=False)
    batches.partial_fit(X[:10], y[:10], classes=np.unique(y))
    batches.partial_fit(X[10:], y[10:])
    assert X.shape[2] == 7
    assert batches.n_heads_ == fitted.n_heads_
    assert batches.head_search_.criterion == fitted.head_search_.criterion
    assert batches.head_search_.fewer_untried == fitted.head_search_.fewer_untried


@pytest.mark.parametrize("n_zero", [0, 100])
def test_fit_and_partial_fit_fit_the_same_counts_beyond_the_interpolating_count(
    n_zero,
):
    """Fifteen diabetes samples as 5 tokens of 2 features with positions (d = 8,
    p = 288, fewer rows than features), and ``n_zero`` more of weight zero:
    whether a count from the interpolating one on is fitted is decided in
    nominal flops (``Budget``), the work as ``fit`` spends it on its rows (those
    of weight zero too), also where ``partial_fit`` fits the heads on their
    statistics. In flops the first such count's first start was estimated below
    the floor of the share on the rows and above it on the statistics, so
    ``fit`` returned 5 heads that reproduce the lifted fit and ``partial_fit``
    the lifted fit's 7; counting only the rows of positive weight, ``partial_fit``
    returned 5 where ``fit`` on 115 rows returns 7."""
    X, y = fifteen_diabetes_sequences(n_zero)
    n = len(X)
    weights = np.zeros(n)
    weights[:15] = 1.0
    assert X.shape[2] == 8
    params = dict(alpha=1e-6, fit_intercept=False)
    fitted = LinearAttentionRegressor(**params).fit(X, y, sample_weight=weights)
    batches = LinearAttentionRegressor(**params)
    half = n // 2
    batches.partial_fit(X[:half], y[:half], sample_weight=weights[:half])
    batches.partial_fit(X[half:], y[half:], sample_weight=weights[half:])
    search, other = fitted.head_search_, batches.head_search_
    assert other.counts_tried == search.counts_tried
    assert other.n_heads == search.n_heads
    assert other.criterion == search.criterion
    if not n_zero:
        assert search.n_heads < 7 and search.criterion == "tol"
    assert np.linalg.norm(batches.coef_ - fitted.coef_) <= 1e-6 * np.linalg.norm(
        fitted.coef_
    )


@pytest.mark.parametrize("d, n, floor", [(5, 40, 1e7), (6, 60, 1e9), (7, 80, 1e8)])
def test_classifier_partial_fit_reads_out_as_fit_under_the_work_limit(
    monkeypatch, d, n, floor
):
    """A classifier's ``partial_fit`` keeps its rows; with fewer rows than lifted
    features it reads out heads as ``fit`` (the dual solver) does: on the rows,
    with the kernel's folds and the kernel solve's work limit. Where the limit
    binds (a lower floor) both try the same counts and stop alike: with the
    folds' lifted fits from the statistics and the normal solve's limit,
    ``partial_fit`` tried none (d = 5 and 7) or one count fewer (d = 6)."""
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", floor)
    X, y, _ = make_random_mhla(n, 4, d, n_heads=2, random_state=0)
    y = y + 0.1 * np.std(y) * np.random.default_rng(0).normal(size=y.shape)
    classes = np.searchsorted(np.quantile(y, [1 / 3, 2 / 3]), y)
    assert n < d * d * (d + 1) // 2
    fitted = LinearAttentionClassifier().fit(X, classes)
    batches = LinearAttentionClassifier()
    half = n // 2
    batches.partial_fit(X[:half], classes[:half], classes=np.unique(classes))
    batches.partial_fit(X[half:], classes[half:])
    search, other = fitted.head_search_, batches.head_search_
    assert search.counts_tried and not search.complete  # the limit binds
    assert other.counts_tried == search.counts_tried
    assert other.n_heads == search.n_heads
    assert other.complete == search.complete
    assert other.work_limit == pytest.approx(search.work_limit, rel=1e-12)
    assert_array_equal(batches.predict(X), fitted.predict(X))


def test_cv_estimator_in_memory_counts_its_own_work_beyond_the_interpolating_count():
    """The CV estimator's normal mode reads the statistics of rows in memory: its
    heads' work is its own, not counted as the dual solver's rows would cost
    (that is for partial_fit and Dask), so with one alpha it reads out the heads
    of the plain estimator with ``solver="normal"`` (case 96's data, n < p:
    counted as the rows would cost, it fitted 6, 5 and 4 heads and returned 5)."""
    X, y = fifteen_diabetes_sequences()
    cv = LinearAttentionRegressorCV(
        alphas=[1e-6], fit_intercept=False, gcv_mode="normal"
    ).fit(X, y)
    plain = LinearAttentionRegressor(
        alpha=1e-6, fit_intercept=False, solver="normal"
    ).fit(X, y)
    assert cv.head_search_.counts_tried == plain.head_search_.counts_tried
    assert cv.n_heads_ == plain.n_heads_
    assert cv.head_search_.criterion == plain.head_search_.criterion


def test_every_constant_of_the_read_out_is_quoted_with_its_value_in_the_benchmarks():
    """Each module constant of ``_heads.py`` and ``_low_rank.py`` is named, at its
    current value, in benchmarks/README.md's "Constants of the head read-out",
    where the measurements that set it are (a value changed in the code and not
    there leaves the measurements of another value standing)."""
    import ast
    import re
    from pathlib import Path

    from sklearn_linattn import _heads, _low_rank

    readme = Path(__file__).resolve().parent.parent / "benchmarks" / "README.md"
    text = readme.read_text(encoding="utf-8")
    start = text.index("## Constants of the head read-out")
    section = text[start : text.index("\n## ", start + 1)]
    quoted = {}
    for name, literal in re.findall(r"`([A-Z][A-Z0-9_]+) = ([^`]+)`", section):
        quoted.setdefault(name, []).append(ast.literal_eval(literal))
    missing = []
    for module in (_heads, _low_rank):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        names = [
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name) and target.id.isupper()
        ]
        assert len(names) >= 10  # the parse found the constants
        missing += [
            f"{name} = {getattr(module, name)!r}"
            for name in names
            if getattr(module, name) not in quoted.get(name, [])
        ]
    assert not missing, f"not quoted at their values: {missing}"
