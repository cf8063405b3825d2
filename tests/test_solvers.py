"""The three solvers agree; partial_fit equals fit; solver choice; concurrency;
the dual solver against centered, weighted least squares; degenerate data with an
intercept."""

import re
import sys
import tracemalloc
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg
from conftest import (
    n_lifted,
    naive_least_squares,
    naive_lifted_features,
    naive_outside_fraction,
    naive_position_features,
    naive_weighted_solution,
    random_attention,
    random_sequences,
    relative_error,
)
from joblib import Parallel, delayed, parallel_backend
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
    certify,
)
from sklearn_linattn._certificate import default_rank_tol, gram_spectrum
from sklearn_linattn._data import check_fit_cost, fit_cost
from sklearn_linattn._lift import (
    lifted_kernel,
    lifted_matvec,
    lifted_rmatvec,
    pair_statistics,
)
from sklearn_linattn._progress import ChunkProgress
from sklearn_linattn._solvers import (
    SOLVERS,
    _residual_rounding,
    _term_sizes,
    choose_solver,
    solve_gram,
)
from sklearn_linattn.datasets import make_random_mhla


def test_structured_products_match_the_feature_matrix(rng):
    X = random_sequences(rng, 30, 5, 4)
    Phi = naive_lifted_features(X)
    pairs, queries = pair_statistics(X)
    coef = rng.normal(size=(2, Phi.shape[1]))
    residuals = rng.normal(size=(30, 2))
    np.testing.assert_allclose(
        lifted_matvec(pairs, queries, coef), Phi @ coef.T, rtol=1e-11
    )
    np.testing.assert_allclose(
        lifted_rmatvec(pairs, queries, residuals), (Phi.T @ residuals).T, rtol=1e-11
    )
    other = random_sequences(rng, 7, 3, 4)
    np.testing.assert_allclose(
        lifted_kernel(pairs, queries, *pair_statistics(other)),
        Phi @ naive_lifted_features(other).T,
        rtol=1e-11,
    )


CASES = [
    # n_samples, fit_intercept, alpha: underdetermined, determined, ridge
    (20, False, 0.0),
    (20, True, 0.0),
    (200, False, 0.0),
    (200, True, 0.1),
    (35, True, 1e-3),
]


@pytest.mark.parametrize("n_samples, fit_intercept, alpha", CASES)
def test_dual_and_cg_equal_normal(rng, n_samples, fit_intercept, alpha):
    truth = random_attention(rng, 4, 2, n_outputs=2)
    X = random_sequences(rng, n_samples, 6, 4)
    y = truth.predict(X) + 0.01 * rng.normal(size=(n_samples, 2))
    params = dict(n_heads=None, tol=0.0, fit_intercept=fit_intercept, alpha=alpha)
    normal = LinearAttentionRegressor(solver="normal", **params).fit(X, y)
    dual = LinearAttentionRegressor(solver="dual", **params).fit(X, y)
    cg = LinearAttentionRegressor(solver="cg", solver_tol=1e-14, **params).fit(X, y)
    scale = np.linalg.norm(normal.coef_)
    assert np.linalg.norm(dual.coef_ - normal.coef_) < 1e-8 * scale
    assert np.linalg.norm(cg.coef_ - normal.coef_) < 1e-8 * scale
    np.testing.assert_allclose(dual.intercept_, normal.intercept_, atol=1e-8)
    np.testing.assert_allclose(cg.intercept_, normal.intercept_, atol=1e-8)
    assert (normal.solver_, dual.solver_, cg.solver_) == ("normal", "dual", "cg")

    exact, kernel, estimate = normal.certificate_, dual.certificate_, cg.certificate_
    assert exact.identifiable == kernel.identifiable == estimate.identifiable
    # p = 40 <= 64: cg decomposes the Gram formed from p products (exact too).
    assert kernel.rank == exact.rank and kernel.exact and estimate.exact
    assert kernel.max_eigenvalue == pytest.approx(exact.max_eigenvalue, rel=1e-10)
    assert estimate.max_eigenvalue == pytest.approx(exact.max_eigenvalue, rel=1e-6)
    if exact.identifiable:
        assert kernel.min_eigenvalue == pytest.approx(exact.min_eigenvalue, rel=1e-8)
        assert estimate.min_eigenvalue == pytest.approx(exact.min_eigenvalue, rel=1e-4)
    else:
        assert kernel.min_eigenvalue == estimate.min_eigenvalue == 0.0
        probe = np.concatenate([X[:4], random_sequences(rng, 4, 6, 4)])
        expected = [True] * 4 + [False] * 4
        assert exact.covers(probe).tolist() == expected
        assert kernel.covers(probe).tolist() == expected
        assert estimate.covers(probe).tolist() == expected


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("kind", ["estimated", "repeated rows"])
def test_dual_without_full_eigendecomposition_equals_normal(rng, fit_intercept, kind):
    """The dual solver factors the kernel (deflated along the row weights when it
    is centered) instead of decomposing it: the same coefficients, rank, largest
    eigenvalue and `covers` as the normal solver. At d = 9 with 350 sequences the
    kernel's extreme eigenvalues are estimated (more than 300 rows); with repeated
    rows the kernel is singular and its eigenvectors are used."""
    if kind == "estimated":
        d, X = 9, random_sequences(rng, 350, 6, 9)
    else:
        d, X = 4, random_sequences(rng, 12, 6, 4)
        X = np.concatenate([X, X[:6]])  # 18 rows of rank 12
    truth = random_attention(rng, d, 2)
    y = truth.predict(X)[:, 0] + 0.1 * rng.normal(size=len(X))
    params = dict(n_heads=None, tol=0.0, fit_intercept=fit_intercept)
    normal = LinearAttentionRegressor(solver="normal", **params).fit(X, y)
    dual = LinearAttentionRegressor(solver="dual", **params).fit(X, y)
    scale = np.linalg.norm(normal.coef_)
    assert np.linalg.norm(dual.coef_ - normal.coef_) < 1e-7 * scale
    np.testing.assert_allclose(dual.intercept_, normal.intercept_, atol=1e-7)
    exact, kernel = normal.certificate_, dual.certificate_
    distinct = len(np.unique(X.reshape(len(X), -1), axis=0))
    assert exact.rank == kernel.rank == distinct - fit_intercept
    assert not kernel.identifiable and kernel.min_eigenvalue == 0.0
    assert kernel.max_eigenvalue == pytest.approx(exact.max_eigenvalue, rel=1e-2)
    probe = np.concatenate([X[:4], random_sequences(rng, 4, 6, d)])
    expected = [True] * 4 + [False] * 4
    assert exact.covers(probe).tolist() == expected
    assert kernel.covers(probe).tolist() == expected


@pytest.mark.parametrize("token_dim, n_samples", [(1, 5), (1, 12), (1, 40), (2, 9)])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_dual_with_more_rows_than_features_is_minimum_norm(
    rng, token_dim, n_samples, fit_intercept, scale
):
    """The kernel of n rows has rank at most p: with n > p (token_dim=1 gives
    p = 1) its n - p smallest eigenvalues are zero whatever rounding makes of
    them. The dual solver's coefficients equal the pinv solution and its rank the
    features' rank, like the normal solver's."""
    for n_tokens in (1, 3, 8):
        X = scale * rng.normal(size=(n_samples, n_tokens, token_dim))
        y = rng.normal(size=n_samples)
        features = naive_lifted_features(X)
        expected, intercept, _, _ = naive_weighted_solution(
            features, y[:, None], np.ones(n_samples), 0.0, fit_intercept
        )
        centered = features - features.mean(axis=0) if fit_intercept else features
        for solver in ("dual", "normal"):
            model = LinearAttentionRegressor(
                solver=solver, n_heads=None, fit_intercept=fit_intercept
            ).fit(X, y)
            np.testing.assert_allclose(model.coef_, expected[0], rtol=1e-6)
            assert model.intercept_ == pytest.approx(intercept[0], rel=1e-6, abs=1e-9)
            assert model.certificate_.rank == np.linalg.matrix_rank(centered)


@pytest.mark.parametrize("n_samples", [10, 32, 100])
@pytest.mark.parametrize("token_dim", [1, 2])
@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
def test_identical_weighted_sequences_with_intercept_give_the_mean(
    rng, n_samples, token_dim, solver
):
    """Centered, identical sequences are rounding of zero, and summing n of them
    leaves up to about n eps of their uncentered size (beyond the p eps of the
    rank tolerance when p is small): every solver returns the weighted mean, rank
    0 (found by the hostile pass: d = 1, integer weights, coefficients fitted to
    rounding that moved predictions by 0.07)."""
    X = np.full((n_samples, 4, token_dim), 3.49116828)
    y = rng.normal(size=n_samples)
    weights = rng.integers(1, 4, size=n_samples)
    model = LinearAttentionRegressor(
        solver=solver, fit_intercept=True, n_heads=None
    ).fit(X, y, sample_weight=weights)
    assert model.certificate_.rank == 0
    assert np.all(model.coef_ == 0.0)
    np.testing.assert_allclose(
        model.predict(rng.normal(size=(3, 4, token_dim))),
        np.average(y, weights=weights),
        rtol=1e-12,
    )


@pytest.mark.parametrize("n_samples", [12, 40])  # fewer and more rows than p = 18
@pytest.mark.parametrize("relative_alpha", [1e-12, 1e-9])
def test_dual_on_rank_deficient_data_with_a_small_alpha(rng, n_samples, relative_alpha):
    """One-hot tokens (times a scale) leave the lifted features in a subspace: the
    kernel is singular. Its null directions add nothing to the coefficients
    (A^T u = 0), so the dual solver leaves them out for every alpha, as the
    normal one effectively does; with them, rounding divided by a small alpha
    moved the coefficients by 1e-4 (hostile pass)."""
    X = np.eye(3)[rng.integers(0, 3, size=(n_samples, 3))]
    X = X * rng.uniform(0.5, 2.0, size=(n_samples, 3, 1))
    y = rng.normal(size=n_samples)
    features = naive_lifted_features(X)
    alpha = relative_alpha * np.linalg.eigvalsh(features.T @ features)[-1]
    expected, _, _, _ = naive_weighted_solution(
        features, y[:, None], np.ones(n_samples), alpha, False
    )
    coef = {
        solver: LinearAttentionRegressor(
            alpha=alpha, solver=solver, n_heads=None, solver_tol=1e-14
        )
        .fit(X, y)
        .coef_
        for solver in ("dual", "normal", "cg")
    }
    scale = np.abs(expected).max()
    # the solvers' rounding: eps times the condition number of G + alpha I,
    # (lambda_max + alpha) / alpha with directions of eigenvalue about zero
    # (measured over 21 seeds up to 0.06 of it: 1.3e-5 relative at 1e-12)
    condition = 1 + 1 / relative_alpha
    atol = np.finfo(np.float64).eps * condition * scale
    for solver in coef:
        np.testing.assert_allclose(coef[solver], expected[0], rtol=0, atol=atol)
    # LSQR, matrix-free, agrees with the kernel form to rounding
    np.testing.assert_allclose(coef["dual"], coef["cg"], rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_large_alpha_gives_the_ridge_solution_or_an_error_naming_alpha(
    rng, solver, fit_intercept
):
    """X and y of order one, alpha far above the lifted Gram G: the ridge solution
    (G + alpha I)^-1 m = m / alpha - G m / alpha^2 + ... is m / alpha to float
    precision (||G|| / alpha < 1e-17 here). Where alpha shrinks it beyond what
    the head read-out resolves (lifted coefficients below 1e-154 with X and y of
    order one: alpha=1e165 gave 2 of 3 heads silently, 1e170 an error blaming the
    scale of X), the error names alpha."""
    X, y = random_sequences(rng, 60, 5, 3), rng.normal(size=60)
    if solver == "dual":  # fewer rows than p = 18: the kernel form
        X, y = X[:12], y[:12]
    features = naive_lifted_features(X)
    centered = y
    if fit_intercept:
        features, centered = features - features.mean(axis=0), y - y.mean()
    moment = features.T @ centered
    # rounding of the solve: eps times the condition number of G + alpha I (1
    # here) a term, p terms; measured up to 9.4 eps (4 seeds), bound 10 p eps
    bound = 10 * features.shape[1] * np.finfo(np.float64).eps
    for alpha in (1e20, 1e100, 1e140):
        model = LinearAttentionRegressor(
            alpha=alpha, solver=solver, n_heads=None, fit_intercept=fit_intercept
        ).fit(X, y)
        expected = moment / alpha
        error = np.linalg.norm(model.coef_ - expected)
        assert error <= bound * np.linalg.norm(expected), alpha
        if fit_intercept:
            assert model.intercept_ == pytest.approx(y.mean(), rel=bound)
    for alpha in (1e165, 1e170):
        named = re.escape(f"alpha={alpha:.3g} is ") + r".* times the mean diagonal"
        with pytest.raises(ValueError, match=named):
            LinearAttentionRegressor(
                alpha=alpha, solver=solver, fit_intercept=fit_intercept
            ).fit(X, y)


def test_lanczos_certificate_beyond_small_p(rng):
    """Above p = 64, cg estimates the extreme eigenvalues by Lanczos: the estimates
    match the exact spectrum, and `covers` needs a decomposition it does not have."""
    truth = random_attention(rng, 5, 2)
    for n_samples, identifiable in [(400, True), (60, False)]:
        X = random_sequences(rng, n_samples, 8, 5)
        y = truth.predict(X)[:, 0]
        params = dict(n_heads=None, solver_tol=1e-14, max_iter=2000)
        cg = LinearAttentionRegressor(solver="cg", **params).fit(X, y)
        exact = certify(X)
        estimate = cg.certificate_
        assert not estimate.exact and estimate.identifiable is identifiable
        assert exact.identifiable is identifiable
        assert estimate.max_eigenvalue == pytest.approx(exact.max_eigenvalue, rel=1e-6)
        if identifiable:
            assert estimate.min_eigenvalue == pytest.approx(
                exact.min_eigenvalue, rel=1e-4
            )
        else:
            with pytest.raises(ValueError, match="estimated certificate"):
                estimate.covers(X[:2])


@pytest.mark.parametrize("solver", ["dual", "cg"])
def test_k_heads_agree_across_solvers(rng, solver):
    truth = random_attention(rng, 3, 3)
    X = random_sequences(rng, 120, 6, 3)
    y = truth.predict(X)[:, 0] + 0.05 * rng.normal(size=120)
    normal = LinearAttentionRegressor(n_heads=1, solver="normal").fit(X, y)
    other = LinearAttentionRegressor(n_heads=1, solver=solver, solver_tol=1e-14).fit(
        X, y
    )
    loss = [np.sum((m.predict(X) - y) ** 2) for m in (normal, other)]
    assert loss[1] == pytest.approx(loss[0], rel=1e-6)


def test_cg_warns_when_it_stops_early(rng):
    X = random_sequences(rng, 100, 5, 4)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        model = LinearAttentionRegressor(solver="cg", max_iter=2).fit(
            X, rng.normal(size=100)
        )
    assert model.n_iter_ == 2
    # the data pin the function down, the unconverged fit claims nothing
    assert certify(X).identifiable
    certificate = model.certificate_
    assert not certificate.identifiable
    assert (certificate.rank, certificate.exact) == (None, False)


def test_partial_fit_equals_fit_on_all_batches(rng):
    """The lifted fit to rounding; the default's heads, fitted from the
    statistics instead of the rows, to 1e-8 of the largest coefficient (their
    fits stop by a stall rule, whose step rounding can move: 3.4e-10 measured
    over 6 data seeds), with the same count."""
    truth = random_attention(rng, 3, 2, n_outputs=2)
    X = random_sequences(rng, 150, 5, 3)
    y = truth.predict(X) + 0.01 * rng.normal(size=(150, 2))
    batches = [slice(0, 7), slice(7, 60), slice(60, 61), slice(61, 150)]
    for fit_intercept in (False, True):
        streamed = LinearAttentionRegressor(fit_intercept=fit_intercept, alpha=1e-3)
        for batch in batches:
            streamed.partial_fit(X[batch], y[batch])
        whole = LinearAttentionRegressor(
            fit_intercept=fit_intercept, alpha=1e-3, solver="normal"
        ).fit(X, y)
        heads_precision = 1e-8 * np.abs(whole.coef_).max()
        np.testing.assert_allclose(streamed.coef_, whole.coef_, atol=heads_precision)
        lifted = clone(streamed).set_params(n_heads=None, solver="normal").fit(X, y)
        streamed_lifted = clone(lifted)
        for batch in batches:
            streamed_lifted.partial_fit(X[batch], y[batch])
        np.testing.assert_allclose(
            streamed_lifted.coef_, lifted.coef_, rtol=1e-9, atol=1e-12
        )
        # intercept = mean(y) - coef . mean(phi): it moves with the heads' coef,
        # by at most heads_precision * |mean(phi)|_1 (the old atol=1e-10 was
        # 100x tighter than that; measured 4.2e-11 with OpenBLAS's Sandybridge
        # kernels, 1.2e-12 with SkylakeX's: helper-118)
        feature_mean = np.abs(naive_lifted_features(X).mean(axis=0)).sum()
        np.testing.assert_allclose(
            streamed.intercept_, whole.intercept_,
            rtol=0, atol=heads_precision * feature_mean + 1e-12,
        )
        for field in ("identifiable", "rank", "n_samples"):
            assert getattr(streamed.certificate_, field) == getattr(
                whole.certificate_, field
            )
        assert streamed.certificate_.min_eigenvalue == pytest.approx(
            whole.certificate_.min_eigenvalue, rel=1e-9
        )
        assert streamed.n_heads_ == whole.n_heads_
    flat = LinearAttentionRegressor(token_dim=3)
    for batch in batches:
        flat.partial_fit(X[batch].reshape(-1, 15), y[batch])
    whole = LinearAttentionRegressor(token_dim=3).fit(X.reshape(-1, 15), y)
    np.testing.assert_allclose(
        flat.coef_, whole.coef_, atol=1e-8 * np.abs(whole.coef_).max()
    )


@pytest.mark.parametrize("Estimator", [LinearAttentionRegressor, "classifier"])
def test_partial_fit_model_uses_the_parameters_of_the_last_call(rng, Estimator):
    """As after fit, set_params after partial_fit changes no fitted attribute,
    whether or not coef_ was read in between: the model is solved with the
    parameters in force at the last partial_fit call."""
    X = random_sequences(rng, 80, 5, 2)
    y = rng.normal(size=80)
    features = naive_lifted_features(X)
    if Estimator == "classifier":
        Estimator, y = LinearAttentionClassifier, np.where(y > 0, "b", "a")
        kwargs = dict(classes=["a", "b"])
        targets = np.where(y == "b", 1.0, -1.0)[:, None]
    else:
        kwargs, targets = {}, y[:, None]

    def expected(rows, alpha, fit_intercept):
        coef, intercept, _, _ = naive_weighted_solution(
            features[rows], targets[rows], np.ones(len(rows)), alpha, fit_intercept
        )
        return coef[0], intercept[0]

    first, everything = np.arange(40), np.arange(80)
    for read_before in (False, True):
        model = Estimator(alpha=0.5, n_heads=None, fit_intercept=True)
        model.partial_fit(X[:40], y[:40], **kwargs)
        if read_before:
            assert model.coef_.shape[-1] == features.shape[1]  # solves now
        model.set_params(alpha=50.0, fit_intercept=False)
        coef, intercept = expected(first, 0.5, True)
        np.testing.assert_allclose(np.ravel(model.coef_), coef, rtol=1e-8)
        np.testing.assert_allclose(model.intercept_, intercept, rtol=1e-8)
        # the next call uses the parameters in force then
        model.partial_fit(X[40:], y[40:])
        coef, intercept = expected(everything, 50.0, False)
        np.testing.assert_allclose(np.ravel(model.coef_), coef, rtol=1e-8)
        np.testing.assert_allclose(model.intercept_, 0.0)


def test_partial_fit_rejects_inconsistent_batches(rng):
    X = random_sequences(rng, 20, 4, 3)
    model = LinearAttentionRegressor().partial_fit(X, rng.normal(size=20))
    with pytest.raises(ValueError, match="token dimension 2"):
        model.partial_fit(random_sequences(rng, 5, 4, 2), np.ones(5))
    with pytest.raises(ValueError, match="same shape of targets"):
        model.partial_fit(X, np.ones((20, 2)))
    # one output as a column is another shape of targets: the message names both
    with pytest.raises(
        ValueError, match=r"shape \(n_samples, 1\) but earlier batches had shape "
        r"\(n_samples,\)"
    ):
        model.partial_fit(X, np.ones((20, 1)))
    every_position = LinearAttentionRegressor(positions="all")
    every_position.partial_fit(X, np.ones((20, 4)))
    with pytest.raises(
        ValueError, match=r"shape \(n_samples, n_tokens, 1\) but earlier batches "
        r"had shape \(n_samples, n_tokens\)"
    ):
        every_position.partial_fit(X, np.ones((20, 4, 1)))
    # only where it can run (as MLPClassifier's for its stochastic solvers):
    # scikit-learn's checks look for the method
    # (the AttributeError's cause says why)
    unavailable = [
        (LinearAttentionRegressor(solver="dual"), "accumulates the normal equations"),
        (LinearAttentionRegressor(solver="cg"), "accumulates the normal equations"),
        (LinearAttentionClassifier(class_weight="balanced"), "needs the class counts"),
    ]
    assert not hasattr(LinearAttentionRegressorCV(), "partial_fit")  # none at all
    for estimator, reason in unavailable:
        assert not hasattr(estimator, "partial_fit")
        with pytest.raises(AttributeError, match="partial_fit") as raised:
            estimator.partial_fit(X, np.ones(20) > 0)
        assert reason in str(raised.value.__cause__)
    # fit starts over, and partial_fit after it starts a new accumulation
    model.fit(X, np.ones(20))
    assert not hasattr(model, "_lifted_statistics")


@pytest.mark.parametrize(
    "first, changed, named",
    [
        ({"positions": "all"}, {"causal": False}, "causal=False (True)"),
        ({}, {"positions": "all"}, "positions='all' ('last')"),
        ({}, {"token_dim": 1}, "token_dim=1 (3)"),
    ],
)
def test_partial_fit_refuses_parameters_that_change_the_rows(
    rng, first, changed, named
):
    """The kept statistics are of the earlier batches' rows: a parameter that
    defines the rows (every position, causal, the token dimension) cannot
    change between batches (the statistics were silently mixed), and a
    refused call leaves the estimator as it was."""
    X = random_sequences(rng, 20, 4, 3)
    y = np.ones((20, 4)) if first.get("positions") == "all" else np.ones(20)
    model = LinearAttentionRegressor(n_heads=None, **first).partial_fit(X, y)
    coef = model.coef_.copy()
    model.set_params(**changed)
    with pytest.raises(ValueError, match=re.escape(named)):
        model.partial_fit(X, y)
    np.testing.assert_array_equal(model.coef_, coef)


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionClassifier]
)
@pytest.mark.parametrize(
    "bad",
    [{"tol": 2.0}, {"tol": np.nan}, {"alpha": -1.0}, {"head_work_limit": -1.0},
     {"n_heads": 0}, {"n_heads": "x"}, {"head_work_limit": "x"}],
)
def test_partial_fit_checks_parameters_set_between_batches(rng, Estimator, bad):
    """scikit-learn checks parameters on the first partial_fit only: tol=2 set
    between batches gave a model of 0 heads predicting 0, n_heads=0 an
    estimator whose next attribute read failed in a reshape. Every call is
    checked, and a refused one leaves the model as it was."""
    X = random_sequences(rng, 30, 4, 3)
    y = rng.normal(size=30)
    if Estimator is LinearAttentionClassifier:
        y = y > 0
    model = Estimator(n_heads=2).partial_fit(
        X, y, **({"classes": [False, True]} if y.dtype == bool else {})
    )
    coef = np.array(model.coef_)
    name = next(iter(bad))
    model.set_params(**bad)
    with pytest.raises(ValueError, match=f"The '{name}' parameter"):
        model.partial_fit(X, y)
    model.set_params(**{name: Estimator().get_params()[name]})
    np.testing.assert_array_equal(model.coef_, coef)


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionClassifier]
)
def test_partial_fit_takes_a_later_batch_of_zero_weight(rng, Estimator):
    """A later batch whose rows all weigh zero adds nothing (fit on all the
    batches with the same weights gives the same model); a first batch needs
    a positive weight, as fit does."""
    X = random_sequences(rng, 80, 5, 2)
    y = rng.normal(size=80)
    if Estimator is LinearAttentionClassifier:
        y = y > 0
    weights = np.r_[np.ones(40), np.zeros(40)]
    classes = {}
    if Estimator is LinearAttentionClassifier:
        classes = {"classes": [False, True]}
    full = Estimator(n_heads=None).fit(X, y, sample_weight=weights)
    streamed = Estimator(n_heads=None)
    streamed.partial_fit(X[:40], y[:40], sample_weight=weights[:40], **classes)
    streamed.partial_fit(X[40:], y[40:], sample_weight=weights[40:])
    np.testing.assert_allclose(streamed.coef_, full.coef_, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="at least one non-zero"):
        Estimator(n_heads=None).partial_fit(
            X[40:], y[40:], sample_weight=weights[40:], **classes
        )


@pytest.mark.parametrize("positions", ["last", "all"])
def test_partial_fit_batches_without_a_class_the_class_weight_names(rng, positions):
    """A class_weight dict naming some classes (the others weigh 1): a batch
    holding an unnamed class but not every named one raised scikit-learn's
    "The classes, ['dog'], are not in class_weight", though fit on all the
    batches takes the same data; now each batch's rows weigh as in that fit."""
    X = random_sequences(rng, 60, 4, 2)
    names = np.array(["cat", "dog", "emu"])
    y = names[np.arange(60) % 3]
    if positions == "all":
        y = np.repeat(y[:, None], 4, axis=1)
    weights = {"cat": 2.0, "emu": 0.5}
    kwargs = dict(n_heads=None, class_weight=weights, positions=positions)
    full = LinearAttentionClassifier(**kwargs).fit(X, y)
    streamed = LinearAttentionClassifier(**kwargs)
    for row in range(60):  # one sequence a batch: one class each
        streamed.partial_fit(X[row : row + 1], y[row : row + 1], classes=names)
    np.testing.assert_allclose(streamed.coef_, full.coef_, rtol=1e-9, atol=1e-12)


def test_partial_fit_keeps_the_folds_through_a_call_with_n_heads_none(rng):
    """The held-out folds of a stream whose first call searched the head count
    are kept through a later call with n_heads=None (set_params between
    batches): n_heads="auto" afterwards judges counts as fit does, where the
    folds were dropped and the lifted fit's heads came back with a warning."""
    X, y, _ = make_random_mhla(300, 8, 4, n_heads=2, noise=0.03, random_state=3)
    full = LinearAttentionRegressor().fit(X, y)
    streamed = LinearAttentionRegressor().partial_fit(X[:100], y[:100])
    streamed.set_params(n_heads=None).partial_fit(X[100:200], y[100:200])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        streamed.set_params(n_heads="auto").partial_fit(X[200:], y[200:])
        assert streamed.n_heads_ == full.n_heads_ == 2
    assert streamed.head_search_.criterion == full.head_search_.criterion == "cv"


def test_auto_picks_by_size_and_memory():
    gib = 2**30
    assert choose_solver(100, 288, memory=8 * gib) == "dual"
    assert choose_solver(10_000, 288, memory=8 * gib) == "normal"
    # d = 32, p = 16896: the 10000 x 10000 kernel (3 x 0.8 GB) fits in a quarter of
    # 24 GiB, not of 8 GiB; the p x p Gram (3 x 2.3 GB) never does.
    assert choose_solver(10_000, 16_896, memory=24 * gib) == "dual"
    assert choose_solver(10_000, 16_896, memory=8 * gib) == "cg"
    assert choose_solver(30_000, 16_896, memory=24 * gib) == "cg"
    assert choose_solver(30_000, 16_896, memory=64 * gib) == "normal"


def traced_fit(estimator, X, y):
    """``(fitted, peak)``: ``estimator.fit(X, y)`` and the peak of its traced
    allocations in bytes."""
    tracemalloc.start()
    try:
        fitted = estimator.fit(X, y)
        return fitted, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "token_dim, n_samples, n_outputs", [(60, 30, 1), (90, 120, 1), (60, 40, 4)]
)
def test_fit_cost_bounds_the_traced_peak_memory(rng, token_dim, n_samples, n_outputs):
    """A whole series as one token (solver "dual", heads by SVD): the estimate
    of :func:`fit_cost` is at least the peak of the fit's traced allocations
    (measured 1.15 to 1.8 times it) and not far above it."""
    X = rng.normal(size=(n_samples, token_dim)) / np.sqrt(token_dim)
    y = rng.normal(size=(n_samples, n_outputs))
    LinearAttentionRegressor(n_heads=None).fit(X[:4], y[:4])  # compiled first
    model, peak = traced_fit(LinearAttentionRegressor(n_heads=None), X, y)
    cost = fit_cost(n_samples, token_dim, n_outputs, model.solver_)
    assert cost.folded_shape == (n_outputs * token_dim, token_dim**2)
    assert peak <= cost.memory <= 3 * peak


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_fit_cost_bounds_the_dual_solvers_traced_peak(fit_intercept, alpha):
    """Sequences of d = 16 (p = 2176), 1500 of them: the kernel solve. The
    refusal's estimate (fit_cost, three n x n matrices) was below the traced
    peak with an intercept or a penalty: 4.3, 4.1 and 6.1 times n^2 floats, so
    fits up to twice the memory it names were let through."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 8, 16)) / np.sqrt(8)
    y = rng.normal(size=1500)
    params = dict(n_heads=None, fit_intercept=fit_intercept, alpha=alpha)
    LinearAttentionRegressor(**params).fit(X[:40], y[:40])  # compiled first
    model, peak = traced_fit(LinearAttentionRegressor(**params), X, y)
    assert model.solver_ == "dual"
    assert peak <= fit_cost(1500, 16, 1, "dual").memory <= 3 * peak



@pytest.mark.parametrize("token_dim, n_samples", [(12, 3000), (16, 1500)])
def test_fit_cost_bounds_the_cg_solvers_traced_peak(token_dim, n_samples):
    """LSQR on the compact rows: the refusal's estimate (fit_cost) counted the
    rows once, against traced peaks of 2.9 to 3.3 times them (LSQR's products
    are temporaries of their size)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_samples, 8, token_dim)) / np.sqrt(8)
    y = rng.normal(size=n_samples)
    params = dict(n_heads=None, solver="cg", max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        LinearAttentionRegressor(**params).fit(X[:40], y[:40])  # compiled first
        peak = traced_fit(LinearAttentionRegressor(**params), X, y)[1]
    cost = fit_cost(n_samples, token_dim, 1, "cg").memory
    assert peak <= cost <= 3 * peak

def _one_token_data(rng, n_samples, token_dim, n_outputs):
    X = rng.normal(size=(n_samples, token_dim)) / np.sqrt(token_dim)
    return X, rng.normal(size=(n_samples, n_outputs))


def _no_solver(*args, **kwargs):
    raise AssertionError("the solver ran")


def test_auto_does_not_depend_on_the_machines_free_memory(monkeypatch):
    """solver='auto' read the free memory: with 150 kB free the same data were
    fitted by 'cg' (no held-out folds: the lifted fit's heads, coef_ 8% away)
    instead of 'normal'. It decides for a fixed 16 GiB; a machine that cannot
    hold that solver's matrices gets a ValueError (which names solver='cg'
    where that fits: test_solver_cg_is_suggested_only_where_its_memory_fits)."""
    X, y, _ = make_random_mhla(400, 8, 4, n_heads=2, noise=0.1, random_state=0)
    reference = LinearAttentionRegressor().fit(X, y)
    monkeypatch.setattr("sklearn_linattn._data.available_memory", lambda: 2**30)
    assert choose_solver(10_000, 16_896) == "dual"  # fits in a quarter of 16 GiB
    assert choose_solver(30_000, 16_896) == "cg"
    small = LinearAttentionRegressor().fit(X, y)
    assert small.solver_ == reference.solver_ == "normal"
    np.testing.assert_array_equal(small.coef_, reference.coef_)
    assert small.n_heads_ == reference.n_heads_
    monkeypatch.setattr("sklearn_linattn._data.available_memory", lambda: 150_000)
    with pytest.raises(ValueError, match="of memory, more than the 150 kB"):
        LinearAttentionRegressor().fit(X, y)


def test_solver_cg_is_suggested_only_where_its_memory_fits():
    """The memory error names solver='cg' (its O(n d^2) memory): but where the
    lifted coefficients and W, which every solver keeps, are what does not fit,
    'cg' is refused too, and was suggested all the same (d = 100, 8 outputs)."""
    data = SimpleNamespace(n_rows=5000, token_dim=100, n_outputs=8)
    cg, dual = (fit_cost(5000, 100, 8, solver).memory for solver in ("cg", "dual"))
    assert dual > cg
    with pytest.raises(ValueError, match="memory") as refused:
        check_fit_cost(data, "dual", memory=0.95 * cg)
    assert "solver='cg'" not in str(refused.value)
    with pytest.raises(ValueError, match="memory"):
        check_fit_cost(data, "cg", memory=0.95 * cg)
    with pytest.raises(ValueError, match="Or set solver='cg'"):
        check_fit_cost(data, "dual", memory=0.5 * (cg + dual))


@pytest.mark.parametrize("estimator", ["plain", "cv", "partial_fit"])
def test_fits_beyond_the_memory_are_refused_before_any_work(
    rng, monkeypatch, estimator
):
    """With 50 MB available, one token of d = 120 and 2 outputs (W of 240 x
    14,400) is refused before the solver runs, by a ValueError naming the sizes
    and the fix, and the estimator is left as it was; d = 8 fits."""
    monkeypatch.setattr("sklearn_linattn._data.available_memory", lambda: 50e6)
    for name in ("normal", "dual", "cg"):
        monkeypatch.setitem(SOLVERS, name, _no_solver)
    X, y = _one_token_data(rng, 30, 120, 2)
    model = {
        "plain": LinearAttentionRegressor(alpha=1.0),
        "cv": LinearAttentionRegressorCV(),
        "partial_fit": LinearAttentionRegressor(alpha=1.0),
    }[estimator]
    fit = model.partial_fit if estimator == "partial_fit" else model.fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the layout warning
        with pytest.raises(ValueError, match="more than the 50 MB available") as error:
            fit(X, y)
    message = str(error.value)
    for part in ("871,200 lifted features", "d = 120", "2 output(s)",
                 "240 x 14,400", "PCA(n_components=64)"):
        assert part in message, part
    assert not hasattr(model, "coef_") and not hasattr(model, "n_features_in_")
    monkeypatch.undo()
    small, small_y = _one_token_data(rng, 30, 8, 2)
    monkeypatch.setattr("sklearn_linattn._data.available_memory", lambda: 50e6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(small, small_y)
    assert model.coef_.shape == (2, n_lifted(8))


def test_head_read_out_beyond_its_work_limit_is_refused(rng, monkeypatch):
    """Ample memory: 100 outputs of one token of d = 100 make W 10,000 x 10,000,
    whose SVDs need about 5e13 flops, and the fit is refused naming them; one
    output (W of 100 x 10,000, 8e8 flops) fits."""
    monkeypatch.setattr("sklearn_linattn._data.available_memory", lambda: 1e15)
    monkeypatch.setitem(SOLVERS, "dual", _no_solver)
    X, y = _one_token_data(rng, 10, 100, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="floating-point operations") as error:
            LinearAttentionRegressor(alpha=1.0).fit(X, y)
        assert "10,000 x 10,000" in str(error.value)
        monkeypatch.undo()
        model = LinearAttentionRegressor(alpha=1.0, n_heads=None).fit(X, y[:, 0])
    assert model.solver_ == "dual"


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_grid_search_in_parallel(rng, backend):
    truth = random_attention(rng, 3, 1)
    X = random_sequences(rng, 90, 5, 3).reshape(90, -1)
    y = truth.predict(X.reshape(90, 5, 3))[:, 0]
    grid = {"alpha": [0.0, 1e-3], "solver": ["normal", "dual", "cg"]}
    with parallel_backend(backend, n_jobs=2):
        search = GridSearchCV(LinearAttentionRegressor(token_dim=3), grid, cv=3).fit(
            X, y
        )
    serial = GridSearchCV(
        LinearAttentionRegressor(token_dim=3), grid, cv=3, n_jobs=1
    ).fit(X, y)
    np.testing.assert_allclose(
        search.cv_results_["mean_test_score"],
        serial.cv_results_["mean_test_score"],
        rtol=1e-8,
    )


def test_progress_lines_without_tqdm(monkeypatch, capsys):
    monkeypatch.setattr("sklearn_linattn._progress._DELAY", 0.0)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails
    progress = ChunkProgress("lifting")
    progress(50, 100)
    progress(100, 100)
    out = capsys.readouterr().out
    assert "lifting: 100/100 sequences" in out


def test_no_progress_for_short_fits(capsys):
    progress = ChunkProgress("lifting")
    progress(100, 100)
    assert capsys.readouterr().out == ""


def test_fits_agree_for_every_solver_on_warning_free_data(rng):
    X = random_sequences(rng, n_lifted(3) * 3, 5, 3)
    y = random_attention(rng, 3, 1).predict(X)[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for solver in ("normal", "dual", "cg"):
            LinearAttentionRegressor(solver=solver).fit(X, y)


def test_available_memory_is_plausible():
    from sklearn_linattn._data import available_memory

    assert 2**20 < available_memory() < 2**50


@pytest.mark.parametrize("positions", ["last", "all"])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_structured_statistics_equal_the_naive_weighted_sums(rng, positions, n_threads):
    """The Gram accumulated from its distinct entries (compact rows, worker threads)
    equals Phi^T W Phi of the naive features; moments and sums too."""
    from sklearn_linattn._data import InMemoryLiftedData, uses_structured_gram
    from sklearn_linattn._lift import lifted_position_features

    X = random_sequences(rng, 60, 5, 3)
    X[:4, :2] = 0.0  # left padding: zero weight at those positions
    weights = rng.uniform(0.0, 3.0, size=60)
    weights[:3] = 0.0
    rows = 60 if positions == "last" else 300
    y = rng.normal(size=(rows, 2))
    data = InMemoryLiftedData(
        X, y, weights, positions=positions, batch_size=7, n_threads=n_threads
    )
    assert uses_structured_gram(3)
    statistics = data.statistics()
    scaled = X * data.rescaling.token
    if positions == "last":
        Phi = naive_lifted_features(scaled)
    else:
        Phi = lifted_position_features(scaled)
        # the per-position rows checked against the naive map of each prefix
        for t in (0, 2, 4):
            np.testing.assert_allclose(
                Phi.reshape(60, 5, -1)[:, t],
                naive_lifted_features(np.ascontiguousarray(scaled[:, : t + 1])),
                rtol=1e-12,
                atol=1e-14,
            )
    w = data.row_scale**2  # zero at the padding positions and zero-weight samples
    y_scaled = data.targets / np.where(data.row_scale > 0, data.row_scale, 1)[:, None]
    gram = (Phi * w[:, None]).T @ Phi
    np.testing.assert_allclose(
        statistics.gram_upper, gram, rtol=1e-11, atol=1e-13 * abs(gram).max()
    )
    np.testing.assert_allclose(
        statistics.moment, Phi.T @ (w[:, None] * y_scaled), rtol=1e-11, atol=1e-13
    )
    np.testing.assert_allclose(
        statistics.feature_sum, Phi.T @ w, rtol=1e-11, atol=1e-13
    )
    assert statistics.weight_sum == pytest.approx(w.sum(), rel=1e-12)
    assert statistics.n_observations == np.count_nonzero(w)


def test_estimated_spectrum_above_300_features_matches_eigvalsh(rng):
    """Above p = 300 a positive definite Gram gets Lanczos estimates of its extreme
    eigenvalues from the Cholesky factor; a singular one the exact spectrum."""
    from sklearn_linattn._certificate import default_rank_tol, gram_spectrum

    A = rng.normal(size=(900, 320))
    gram = A.T @ A
    exact = np.linalg.eigvalsh(gram)  # independent reference
    spectrum = gram_spectrum(gram, default_rank_tol(320))
    assert spectrum.estimated and spectrum.full_rank and spectrum.rank == 320
    # Block Lanczos estimates, stopped on residuals of 1.5e-2 and 1e-2 relative.
    assert spectrum.eigenvalues[0] == pytest.approx(exact[0], rel=1e-2)
    assert spectrum.eigenvalues[-1] == pytest.approx(exact[-1], rel=1e-2)
    # Cholesky's backward error, entrywise: |R^T R - G| <= gamma_{p+1} |R|^T |R|,
    # and as much again for forming R^T R here (measured 2.7 eps |R|^T |R|)
    factor = spectrum.factor
    magnitude = np.abs(factor).T @ np.abs(factor)
    bound = 2 * (320 + 1) * np.finfo(np.float64).eps * magnitude
    assert np.all(np.abs(factor.T @ factor - gram) <= bound)

    singular = A[:, :300].T @ A[:, :300]
    basis = np.linalg.qr(rng.normal(size=(320, 300)))[0]
    singular = basis @ singular @ basis.T  # rank 300 of 320
    spectrum = gram_spectrum(singular, default_rank_tol(320))
    assert not spectrum.estimated and spectrum.rank == 300
    assert spectrum.eigenvectors is not None


@pytest.mark.parametrize("tokens", ["gaussian", "abs_gaussian", "uniform"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_lifted_gram_extreme_eigenvalue_estimates_bound_eigvalsh(
    rng, tokens, fit_intercept
):
    """On lifted Grams (d = 10, p = 550, clustered small eigenvalues) the smallest
    estimate lies above the smallest eigenvalue and the largest below the largest,
    each within the bound of the stopping rule: the Ritz value r^2 / gap of the top
    eigenvalue of the inverse within 1.5e-2 of it (so the smallest estimate within
    1.5e-2 / (1 - 1.5e-2)), that of the Gram within 1e-2 (measured over 18 Grams:
    3.5e-3 and 1.2e-4)."""
    from sklearn_linattn._certificate import extreme_eigenvalues
    from sklearn_linattn._data import InMemoryLiftedData

    X = {
        "gaussian": lambda: rng.normal(size=(6000, 8, 10)),
        "abs_gaussian": lambda: np.abs(rng.normal(size=(6000, 8, 10))),
        "uniform": lambda: rng.uniform(size=(6000, 8, 10)),
    }[tokens]()
    gram = InMemoryLiftedData(X).statistics().normal_equations(fit_intercept)[0]
    exact = np.linalg.eigvalsh(gram)  # independent reference
    smallest, largest = extreme_eigenvalues(gram, scipy.linalg.cholesky(gram))
    inverse_rtol = 1.5e-2
    assert exact[0] * (1 - 1e-12) <= smallest
    assert smallest <= exact[0] * (1 + inverse_rtol / (1 - inverse_rtol))
    assert exact[-1] * (1 - 1e-2) <= largest <= exact[-1] * (1 + 1e-12)


@pytest.mark.parametrize(
    "spectrum",
    [[2.0], [1.0, 5.0, 40.0], "identity_plus_rank_2", "identity_plus_rank_6"],
    ids=str,
)
def test_extreme_eigenvalues_when_krylov_directions_run_out(rng, spectrum):
    """Grams with few distinct eigenvalues: the Lanczos blocks lose directions
    (a multiple of the identity after one product); the estimates still match."""
    from sklearn_linattn._certificate import extreme_eigenvalues

    size = 400
    if isinstance(spectrum, str):
        A = rng.normal(size=(size, int(spectrum[-1])))
        gram = np.eye(size) + A @ A.T
    else:
        gram = np.diag(np.resize(spectrum, size))
    exact = np.linalg.eigvalsh(gram)
    smallest, largest = extreme_eigenvalues(gram, scipy.linalg.cholesky(gram))
    assert smallest == pytest.approx(exact[0], rel=1e-9)
    assert largest == pytest.approx(exact[-1], rel=1e-9)


def test_normal_fit_above_300_features_agrees_with_cg_and_certify(rng):
    """d = 9 (p = 405): the estimated certificate agrees with the exact spectrum and
    the coefficients with LSQR."""
    truth = random_attention(rng, 9, 2)
    X = random_sequences(rng, 1500, 12, 9)
    y = truth.predict(X)[:, 0]
    normal = LinearAttentionRegressor(n_heads=None, solver="normal").fit(X, y)
    Phi = naive_lifted_features(X)
    exact = np.linalg.eigvalsh(Phi.T @ Phi / len(X))
    certificate = normal.certificate_
    assert certificate.identifiable and certificate.rank == 405
    assert certificate.min_eigenvalue == pytest.approx(exact[0], rel=1e-2)
    assert certificate.max_eigenvalue == pytest.approx(exact[-1], rel=1e-2)
    expected = np.linalg.lstsq(Phi, y, rcond=None)[0]
    np.testing.assert_allclose(normal.coef_, expected, rtol=1e-7, atol=1e-9)


# --- the dual solver against centered, weighted least squares -------------------------


def position_features(X, causal=True):
    """conftest's naive features of every position, (n_samples, n_tokens, p)."""
    return naive_position_features(X, causal).reshape(*X.shape[:2], -1)


WEIGHTS = {
    "none": lambda rng, n: None,
    "uniform": lambda rng, n: rng.uniform(0.5, 2.0, n),
    "some_zero": lambda rng, n: np.r_[np.zeros(5), np.ones(n - 5)],
    "integers_with_zeros": lambda rng, n: rng.integers(0, 3, n).astype(float),
}


@pytest.mark.parametrize("weights", WEIGHTS)
def test_dual_intercept_matches_naive_centered_lstsq(weights):
    rng = np.random.default_rng(0)
    d, n = 4, 25  # p = 40 > n: "auto" takes the dual solver
    X = random_sequences(rng, n, 6, d)
    y = rng.normal(size=n)
    w = WEIGHTS[weights](rng, n)
    model = LinearAttentionRegressor(n_heads=None, token_dim=d, fit_intercept=True).fit(
        X, y, sample_weight=w
    )
    assert model.solver_ == "dual"
    coef, mean, target_mean, design = naive_least_squares(
        naive_lifted_features(X), y, w
    )
    X_test = random_sequences(rng, 10, 6, d)
    expected = (naive_lifted_features(X_test) - mean) @ coef + target_mean
    assert relative_error(model.predict(X_test), expected) < 1e-10
    assert relative_error(model.coef_, coef) < 1e-10
    assert model.certificate_.rank == np.linalg.matrix_rank(design)
    eigenvalues = np.linalg.eigvalsh(
        design.T @ design / (np.sum(w) if w is not None else n)
    )
    assert np.isclose(model.certificate_.max_eigenvalue, eigenvalues[-1], rtol=1e-8)
    # training inputs with positive weight are in the span of the training features
    kept = np.ones(n, bool) if w is None else w > 0
    assert model.certificate_.covers(X[kept]).all()
    assert not model.certificate_.covers(X_test).any()


def test_dual_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(1)
    d, n = 4, 20
    X = random_sequences(rng, n, 6, d)
    y = rng.normal(size=n)
    w = rng.integers(1, 4, n)
    # the lifted fit (the default count is cross-validated by sequence: a repeated
    # sequence falls in several folds)
    weighted = LinearAttentionRegressor(
        token_dim=d, fit_intercept=True, n_heads=None
    ).fit(X, y, sample_weight=w)
    repeated = LinearAttentionRegressor(
        token_dim=d, fit_intercept=True, solver="dual", n_heads=None
    ).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert weighted.solver_ == "dual"
    X_test = random_sequences(rng, 5, 6, d)
    assert relative_error(weighted.predict(X_test), repeated.predict(X_test)) < 1e-9
    a, b = weighted.certificate_, repeated.certificate_
    assert a.rank == b.rank == n - 1
    assert np.isclose(a.max_eigenvalue, b.max_eigenvalue, rtol=1e-9)
    assert a.covers(X).all() and b.covers(X).all()


def test_dual_on_inconsistent_duplicate_rows_is_minimum_norm():
    rng = np.random.default_rng(3)
    d = 4
    X = random_sequences(rng, 30, 6, d)
    X = np.concatenate([X, X[:5]])  # 35 rows < p = 40, kernel singular
    y = rng.normal(size=30)
    y = np.concatenate([y, y[:5] + 0.1])  # inconsistent duplicates
    model = LinearAttentionRegressor(n_heads=None, token_dim=d).fit(X, y)
    assert model.solver_ == "dual"
    coef, _, _, design = naive_least_squares(
        naive_lifted_features(X), y, intercept=False
    )
    X_test = random_sequences(rng, 5, 6, d)
    assert (
        relative_error(model.predict(X_test), naive_lifted_features(X_test) @ coef)
        < 1e-9
    )
    assert model.certificate_.rank == np.linalg.matrix_rank(design) == 30


def test_dual_every_position_with_padding_and_weights_equals_lstsq():
    rng = np.random.default_rng(4)
    d = 3  # p = 18
    X = random_sequences(rng, 4, 4, d)
    X[0, :2] = 0.0  # left padding: positions 0 and 1 of sequence 0 are not rows
    y = rng.normal(size=(4, 4))
    w = np.array([1.0, 2.0, 0.5, 3.0])
    model = LinearAttentionRegressor(
        n_heads=None,
        token_dim=d, fit_intercept=True, positions="all"
    ).fit(X, y, sample_weight=w)
    assert model.solver_ == "dual"
    features = position_features(X)
    kept = np.ones((4, 4), bool)
    kept[0, :2] = False
    row_weights = np.broadcast_to(w[:, None], kept.shape)[kept]
    coef, mean, target_mean, design = naive_least_squares(
        features[kept], y[kept], row_weights
    )
    assert model.certificate_.n_samples == kept.sum() == 14
    assert model.certificate_.rank == np.linalg.matrix_rank(design)
    X_test = random_sequences(rng, 3, 5, d)
    expected = (position_features(X_test) - mean) @ coef + target_mean
    assert relative_error(model.predict(X_test), expected) < 1e-9
    covered = model.certificate_.covers(X)
    assert covered.shape == (4, 4)
    assert covered[kept].all()
    np.testing.assert_array_equal(
        covered, naive_outside_fraction(features, design, mean) < 1e-6
    )
    assert not model.certificate_.covers(X_test).any()


@pytest.mark.parametrize("abs_tokens", [False, True])
def test_dual_above_300_rows_with_intercept_equals_lstsq(abs_tokens):
    rng = np.random.default_rng(6)
    d, n = 9, 350  # p = 405 > n > 300: Cholesky factor and block-Lanczos estimates
    X = rng.normal(size=(n, 5, d))
    X_test = rng.normal(size=(5, 5, d))
    if abs_tokens:
        X, X_test = np.abs(X), np.abs(X_test)
    y = rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, n)
    model = LinearAttentionRegressor(n_heads=None, token_dim=d, fit_intercept=True).fit(
        X, y, sample_weight=w
    )
    assert model.solver_ == "dual"
    coef, mean, target_mean, design = naive_least_squares(
        naive_lifted_features(X), y, w
    )
    expected = (naive_lifted_features(X_test) - mean) @ coef + target_mean
    assert relative_error(model.predict(X_test), expected) < 1e-8
    np.testing.assert_allclose(model.predict(X), y, atol=1e-8)  # interpolates
    exact = np.linalg.eigvalsh(design.T @ design / w.sum())
    certificate = model.certificate_
    assert certificate.rank == n - 1 and not certificate.identifiable
    assert (
        exact[-1] * (1 - 3e-3) <= certificate.max_eigenvalue <= exact[-1] * (1 + 1e-9)
    )
    assert certificate.covers(X).all()
    assert not certificate.covers(X_test).any()


@pytest.mark.parametrize("alpha", [1e-3, 1.0])
def test_dual_ridge_with_intercept_and_weights_matches_naive(alpha):
    rng = np.random.default_rng(17)
    d, n = 4, 25
    X = random_sequences(rng, n, 6, d)
    y = rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, n)
    model = LinearAttentionRegressor(
        token_dim=d, fit_intercept=True, alpha=alpha, n_heads=None
    ).fit(X, y, sample_weight=w)
    assert model.solver_ == "dual"
    features = naive_lifted_features(X)
    mean, target_mean = w @ features / w.sum(), w @ y / w.sum()
    design = np.sqrt(w)[:, None] * (features - mean)
    coef = np.linalg.solve(
        design.T @ design + alpha * np.eye(design.shape[1]),
        design.T @ (np.sqrt(w) * (y - target_mean)),
    )
    assert relative_error(model.coef_, coef) < 1e-9
    assert np.isclose(
        model.intercept_, target_mean - mean @ coef, rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("solver", ["dual", "normal", "cg"])
def test_forced_solvers_with_more_rows_than_features_agree_on_eigenvalues(solver):
    rng = np.random.default_rng(18)
    d, n = 4, 80  # p = 40 <= n: the dual certificate reads the p-th largest
    X = random_sequences(rng, n, 6, d)
    y = rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, n)
    model = LinearAttentionRegressor(
        token_dim=d, fit_intercept=True, solver=solver
    ).fit(X, y, sample_weight=w)
    _, _, _, design = naive_least_squares(naive_lifted_features(X), y, w)
    exact = np.linalg.eigvalsh(design.T @ design / w.sum())
    certificate = model.certificate_
    assert certificate.identifiable and certificate.rank == 40
    assert np.isclose(certificate.min_eigenvalue, exact[0], rtol=1e-8)
    assert np.isclose(certificate.max_eigenvalue, exact[-1], rtol=1e-8)


def test_dual_every_position_acausal_with_intercept_equals_lstsq():
    rng = np.random.default_rng(19)
    d = 3
    X = random_sequences(rng, 4, 4, d)
    y = rng.normal(size=(4, 4))
    model = LinearAttentionRegressor(
        n_heads=None,
        token_dim=d, positions="all", causal=False, fit_intercept=True
    ).fit(X, y)
    assert model.solver_ == "dual"
    features = naive_position_features(X, causal=False).reshape(16, -1)
    coef, mean, target_mean, design = naive_least_squares(features, y.reshape(-1))
    X_test = random_sequences(rng, 2, 5, d)
    expected = (position_features(X_test, causal=False) - mean) @ coef
    assert relative_error(model.predict(X_test), expected + target_mean) < 1e-9
    assert model.certificate_.rank == np.linalg.matrix_rank(design)


# --- threads and parallel fits --------------------------------------------------------


@pytest.mark.parametrize("positions", ["last", "all"])
def test_threaded_gram_accumulation_matches_naive(positions):
    rng = np.random.default_rng(12)
    d, n, T = 4, 150, 5
    X = random_sequences(rng, n, T, d)
    w = rng.integers(0, 4, n).astype(float)
    if positions == "last":
        features, y, row_w = naive_lifted_features(X), rng.normal(size=n), w
    else:
        features = naive_position_features(X, causal=True).reshape(n * T, -1)
        y = rng.normal(size=(n, T))
        row_w = np.repeat(w, T)
    model = LinearAttentionRegressor(
        token_dim=d,
        solver="normal",
        fit_intercept=True,
        positions=positions,
        n_jobs=2,
        batch_size=17,
        n_heads=None,
    ).fit(X, y, sample_weight=w)
    coef, mean, target_mean, design = naive_least_squares(
        features, y.reshape(-1), row_w
    )
    assert relative_error(model.coef_, coef) < 1e-9
    exact = np.linalg.eigvalsh(design.T @ design / row_w.sum())
    assert np.isclose(model.certificate_.min_eigenvalue, exact[0], rtol=1e-7)
    assert np.isclose(model.certificate_.max_eigenvalue, exact[-1], rtol=1e-9)


def _fit_summary(X, y, params):
    model = LinearAttentionRegressor(token_dim=4, **params).fit(X, y)
    return model.coef_, model.n_heads_, model.solver_, model.certificate_.rank


def test_parallel_thread_fits_agree_with_serial():
    rng = np.random.default_rng(13)
    truth = random_attention(rng, 4, 2)
    jobs = []
    for k, n in enumerate([20, 35, 200, 600]):
        X = random_sequences(rng, n, 6, 4)
        y = truth.predict(X)[:, 0] + (0.01 * rng.normal(size=n) if k % 2 else 0.0)
        for params in ({}, {"fit_intercept": True}, {"n_heads": None}):
            jobs.append((X, y, params))
    serial = [_fit_summary(*job) for job in jobs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel = Parallel(n_jobs=4, backend="threading")(
            delayed(_fit_summary)(*job) for job in jobs * 2
        )
    for one, other in zip(serial * 2, parallel, strict=True):
        assert one[1:] == other[1:]
        # the head search is budgeted: equal up to its tol (1e-8), not bitwise
        assert relative_error(other[0], one[0]) < 1e-8


def test_grid_search_scores_do_not_depend_on_n_jobs():
    rng = np.random.default_rng(14)
    truth = random_attention(rng, 4, 2)
    X = random_sequences(rng, 300, 6, 4)
    y = truth.predict(X)[:, 0] + 0.01 * rng.normal(size=300)
    grid = {"alpha": [0.0, 1e-3], "fit_intercept": [False, True]}
    scores = []
    for n_jobs in (1, 2):
        search = GridSearchCV(
            LinearAttentionRegressor(token_dim=4), grid, cv=3, n_jobs=n_jobs
        ).fit(X, y)
        scores.append(search.cv_results_["mean_test_score"])
    # The head read-out's budget is CPU time, so its last Gauss-Newton polish can
    # stop a step earlier in another process: scores agree to about 1e-11 (1e-12
    # failed about one run in six).
    np.testing.assert_allclose(scores[0], scores[1], rtol=0, atol=1e-9)
    assert np.all(scores[0] > 0.99)


# --- degenerate data with an intercept: every centered feature is (near) zero ---------


def test_single_nonzero_weight_with_intercept_predicts_its_target():
    rng = np.random.default_rng(15)
    X = random_sequences(rng, 20, 6, 4)
    y = rng.normal(size=20)
    w = np.zeros(20)
    w[3] = 1.0
    model = LinearAttentionRegressor(token_dim=4, fit_intercept=True).fit(
        X, y, sample_weight=w
    )
    assert model.certificate_.rank == 0 and model.n_heads_ == 0
    np.testing.assert_allclose(model.predict(X), y[3], rtol=1e-12)


@pytest.mark.parametrize("solver", ["dual", "normal", "cg"])
@pytest.mark.parametrize("token_dim", [4, 9])  # cg: dense and Lanczos certificates
def test_identical_rows_with_intercept_fit_the_mean(solver, token_dim):
    """The centered features are rounding noise: every solver returns the constant
    model and rank 0 (LSQR used to fit the noise, intercept ~1e16), without a
    convergence warning."""
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(1, 6, token_dim)), 10, axis=0)
    y = rng.normal(size=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = LinearAttentionRegressor(
            token_dim=token_dim, fit_intercept=True, solver=solver
        ).fit(X, y)
    # minimum-norm solution: coef 0, intercept the mean, as with one weighted row
    np.testing.assert_allclose(model.predict(X[:1]), y.mean(), rtol=1e-9)
    assert model.certificate_.rank == 0
    assert np.abs(model.coef_).max() < 1e-9


def _near_identical(eps, n_diff, seed=3, d=3, T=4, N=30):
    rng = np.random.default_rng(seed)
    truth = random_attention(rng, d, 2)
    Z0 = rng.normal(size=(T, d))
    X = np.repeat(Z0[None], N, axis=0)
    for j in range(n_diff):
        X[-1 - j] += eps * rng.normal(size=(T, d))
    return X, truth.predict(X).ravel()


@pytest.mark.parametrize("rounding", [False, True])
@pytest.mark.parametrize("solver", ["cg", "normal", "dual"])
def test_identical_rows_up_to_rounding_with_intercept_give_the_weighted_mean(
    rounding, solver
):
    X, y = _near_identical(0.0, 1)
    if rounding:  # identical up to one unit in the last place
        rng = np.random.default_rng(1)
        X = X * (1 + rng.integers(-1, 2, size=X.shape) * np.finfo(float).eps)
        y = y * (1 + rng.integers(-1, 2, size=y.shape) * np.finfo(float).eps)
    w = np.linspace(1.0, 2.0, len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = LinearAttentionRegressor(
            solver=solver, fit_intercept=True, n_heads=None
        ).fit(X, y, sample_weight=w)
    assert est.certificate_.rank == 0
    np.testing.assert_allclose(est.predict(X), w @ y / w.sum(), rtol=1e-12)
    assert np.all(np.asarray(est.coef_) == 0)


@pytest.mark.parametrize("eps", [1e-6, 1e-4, 1e-3])
@pytest.mark.parametrize("n_diff", [1, 3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scale", [1.0, 1e-5, 1e20])
def test_small_genuine_centered_spread_is_not_flattened(eps, n_diff, weighted, scale):
    """Identical rows plus 1 or 3 rows off by eps (relative): cg, normal and dual
    agree with numpy lstsq on the lifted centered features relative to the targets'
    spread, at any token scale (not a power of two). Flattening the spread
    (predicting the mean) errs by at least half of it; the normal equations'
    rounding, in the square of the rows' condition, reached 2.1e-3 with
    OpenBLAS's SkylakeX kernels and 3.3e-3 with Sandybridge's (helper-118):
    their bound 5e-2 is 15 times that and 10 times below flattening."""
    X, y = _near_identical(eps, n_diff)
    X, y = X * scale, y * scale**3
    w = np.linspace(0.5, 2.0, len(y)) if weighted else None
    features = naive_lifted_features(X)
    coef, mean, target_mean, _ = naive_least_squares(features, y, w)
    reference = (features - mean) @ coef + target_mean
    assert np.abs(reference - y).max() < 1e-6 * np.ptp(y)  # lstsq interpolates
    for solver, accuracy in (("cg", 1e-6), ("normal", 5e-2), ("dual", 1e-3)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est = LinearAttentionRegressor(
                solver=solver, fit_intercept=True, n_heads=None
            ).fit(X, y, sample_weight=w)
        assert est.certificate_.rank == n_diff, solver
        error = np.abs(est.predict(X) - reference).max() / np.ptp(y)
        assert error < accuracy, (solver, error)



@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_mean_gain_is_the_r2_that_adding_the_mean_residual_adds(
    rng, solver, fit_intercept
):
    """Every solver reports what adding the weighted mean of the training residuals
    to every prediction would add to the training R^2 (zero with an intercept),
    and how much more than one shift shared by the outputs, against the weighted
    ridge solution by an explicit pseudo-inverse."""
    from sklearn_linattn._data import lifted_data
    from sklearn_linattn._solvers import SOLVERS

    truth = random_attention(rng, 3, 2, n_outputs=2)
    X = random_sequences(rng, 40, 5, 3)  # fewer sequences than p = 18 features
    y = truth.predict(X) + np.array([3.0, -0.5]) + 0.1 * rng.normal(size=(40, 2))
    weights = rng.uniform(0.5, 2.0, size=40)
    solution = SOLVERS[solver](
        lifted_data(X, y, weights), alpha=1.0, fit_intercept=fit_intercept,
        solver_tol=1e-14, max_iter=2000,
    )
    features = naive_lifted_features(X)
    coef, intercept, _, _ = naive_weighted_solution(
        features, y, weights, 1.0, fit_intercept
    )
    residual = y - features @ coef.T - intercept
    mean = weights @ residual / weights.sum()
    spread = weights @ (y - weights @ y / weights.sum()) ** 2
    expected = weights.sum() * mean**2 / spread
    # beyond one shift shared by both outputs (one-vs-rest scores' class_gain)
    beyond_shared = weights.sum() * (mean - np.mean(mean)) ** 2 / spread
    if fit_intercept:
        np.testing.assert_allclose(expected, 0.0, atol=1e-20)
        np.testing.assert_allclose(solution.mean_gain, 0.0, atol=1e-12)
        np.testing.assert_allclose(solution.class_gain, 0.0, atol=1e-12)
    else:
        assert np.all(expected > 0.05)  # the offsets are out of a cubic's reach
        np.testing.assert_allclose(solution.mean_gain, expected, rtol=1e-8)
        np.testing.assert_allclose(solution.class_gain, beyond_shared, rtol=1e-8)


@pytest.mark.parametrize("alpha", [0.0, 1e-6, 1e-3, 1e-1])
def test_ridge_residual_floor_bounds_the_residual_on_the_rows(alpha):
    """The ridge residual's lower bound from the statistics, alpha^2 theta (G +
    alpha I)^-1 theta, against the residual measured on the rows: at most it,
    and on noiseless targets (in the features' span) within a factor (1 +
    alpha / lambda_min)^-2 of it, where lambda_min is G's smallest eigenvalue
    (less the rows' own rounding, (1e-10 ||y||)^2)."""
    from sklearn_linattn._solvers import _ridge_residual_floor

    rng = np.random.default_rng(3)
    features = rng.normal(size=(200, 12))
    targets = features @ rng.normal(size=(12, 2))
    gram = features.T @ features
    coef = np.linalg.solve(gram + alpha * np.eye(12), features.T @ targets).T
    residual = np.sum((targets - features @ coef.T) ** 2, axis=0)
    floor = _ridge_residual_floor(gram, coef, alpha)
    rounding = (1e-10 * np.linalg.norm(targets, axis=0)) ** 2
    assert np.all(floor <= residual * (1 + 1e-8) + rounding)
    smallest = np.linalg.eigvalsh(gram)[0]
    assert np.all(floor >= residual / (1 + alpha / smallest) ** 2 - rounding)
    if alpha == 0:
        np.testing.assert_array_equal(floor, 0.0)


@pytest.mark.parametrize("scale", [1.0, 1e-30])
def test_partial_fit_of_zero_targets_with_a_penalty_at_any_scale(scale):
    """Zero targets, alpha=1, tokens scaled down to 1e-30: the penalty in the
    statistics' units is above 1e154, and its residual floor (alpha^2 theta
    (G + alpha I)^-1 theta) is formed as (alpha theta) (G + alpha I)^-1 (alpha
    theta), which cannot overflow; partial_fit reads zero heads, as fit does."""
    X, _, _ = make_random_mhla(200, 6, 3, random_state=0)
    y = np.zeros(200)
    fitted = LinearAttentionRegressor(alpha=1.0).fit(X * scale, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        streamed = LinearAttentionRegressor(alpha=1.0).partial_fit(X * scale, y)
    assert streamed.n_heads_ == fitted.n_heads_ == 0
    np.testing.assert_array_equal(streamed.predict(X * scale), 0.0)


# --- every solver against a reference written from the definition (review 53) ------

_EPS = np.finfo(np.float64).eps


def _definition_features(X):
    """phi(Z): w_bc S[b, c] q[e] for b <= c in numpy.triu_indices order, e fastest,
    w_bc = sqrt(2) off the diagonal (PAPER.md)."""
    d = X.shape[2]
    b, c = np.triu_indices(d)
    S = np.einsum("ntb,ntc->nbc", X, X)
    pairs = S[:, b, c] * np.where(b == c, 1.0, np.sqrt(2.0))
    return (pairs[:, :, None] * X[:, -1, None, :]).reshape(len(X), -1)


def _svd_ridge(Phi, y, w, alpha, fit_intercept):
    """Weighted ridge (minimum-norm least squares at alpha=0) from the SVD of the
    weighted, centered features, singular values below p eps sigma_1 (in squares)
    left out as zero. Returns (coef, intercept, kappa): kappa is the condition
    number (lambda_1 + alpha) / (lambda_r + alpha) of the regularized Gram on the
    features' span, which the rounding of every solver here is proportional to
    (the solution lies in that span)."""
    y = y.reshape(len(y), -1)
    w = np.ones(len(Phi)) if w is None else w
    mean = w @ Phi / w.sum() if fit_intercept else np.zeros(Phi.shape[1])
    ymean = w @ y / w.sum() if fit_intercept else np.zeros(y.shape[1])
    root = np.sqrt(w)[:, None]
    U, s, Vt = np.linalg.svd(root * (Phi - mean), full_matrices=False)
    kept = s**2 > Phi.shape[1] * _EPS * s[0] ** 2
    U, s, Vt = U[:, kept], s[kept], Vt[kept]
    coef = Vt.T @ ((s / (s**2 + alpha))[:, None] * (U.T @ (root * (y - ymean))))
    kappa = (s[0] ** 2 + alpha) / (s[-1] ** 2 + alpha)
    return coef.T, ymean - mean @ coef, kappa


def _review_data(kind, n, d=3, n_outputs=1, seed=0):
    """Dyadic entries, so rank deficiencies are exact in float64."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 5, d)) * 256) / 256 / 2
    if kind == "duplicates":
        X[n // 2:] = X[: n - n // 2]
    elif kind == "subspace":  # tokens in the span of two integer vectors
        basis = np.array([[1.0, 2.0, -1.0], [0.0, 1.0, 1.0]])[:, :d]
        X = np.round(rng.normal(size=(n, 5, 2)) * 64) / 64 @ basis
    elif kind == "one_hot":
        X = np.eye(d)[rng.integers(0, d, size=(n, 5))]
    y = rng.normal(size=(n, n_outputs) if n_outputs > 1 else n)
    return X, y


@pytest.mark.parametrize("solver_tol", [1e-2, 1e-4, 1e-6, 1e-8, 1e-10])
@pytest.mark.parametrize(
    ("token_dim", "noise"), [(3, 0.0), (4, 0.0), (4, 0.1), (6, 0.0)]
)
def test_lsqr_coefficients_are_within_their_stated_precision(
    solver_tol, token_dim, noise
):
    """solver="cg" states its coefficients' relative precision for the head
    read-out (``coef_tol``, 20 times LSQR's estimate of cond(A) times
    solver_tol): against the normal solver's they are within it at every
    solver_tol, and it stays below the coefficients' norm from 1e-4 on (a fixed
    1e4 solver_tol claimed 100 times their norm at 1e-2)."""
    from sklearn_linattn._data import lifted_data

    X, y, _ = make_random_mhla(200, 5, token_dim, n_heads=2, random_state=1)
    y = y + noise * np.std(y) * np.random.default_rng(1).normal(size=y.shape)
    data = lifted_data(X, y.reshape(-1, 1), None)
    exact = SOLVERS["normal"](data, alpha=0.0, fit_intercept=True).coef
    solution = SOLVERS["cg"](
        data, alpha=0.0, fit_intercept=True, solver_tol=solver_tol
    )
    error = np.linalg.norm(solution.coef - exact) / np.linalg.norm(exact)
    assert error <= solution.coef_tol
    assert solution.coef_tol < (1.0 if solver_tol <= 1e-4 else np.inf)


def test_coefficients_too_coarse_for_any_head_are_read_as_exact():
    """At solver_tol=1e-2 LSQR's coefficients are resolved to about their own
    norm: the search tells no head from zero, and reads the heads as if exact,
    with a warning, instead of as a zero model (which predicted the mean); at
    1e-3, coarsely, with a warning that says so."""
    X, y, _ = make_random_mhla(500, 5, 4, n_heads=2, random_state=1)
    y = y + 0.1 * np.std(y) * np.random.default_rng(1).normal(size=y.shape)
    train, test = slice(None, 200), slice(200, None)
    exact = LinearAttentionRegressor(n_heads=None).fit(X[train], y[train])
    with pytest.warns(UserWarning, match="tells no head from zero"):
        coarse = LinearAttentionRegressor(solver="cg", solver_tol=1e-2)
        coarse.fit(X[train], y[train])
    assert coarse.n_heads_ > 0
    assert coarse.score(X[test], y[test]) > exact.score(X[test], y[test]) - 0.01
    with pytest.warns(UserWarning, match="taken to reproduce it"):  # coarse heads
        LinearAttentionRegressor(solver="cg", solver_tol=1e-3).fit(X[train], y[train])


@pytest.mark.parametrize("solver_tol", [1e-2, 1e-3])
def test_paper_read_out_keeps_every_head_of_coarse_coefficients(solver_tol):
    """n_heads=None's heads compute the lifted coefficients LSQR returned,
    however coarse: at solver_tol=1e-3 (resolved to about 0.35 of their norm,
    LSQR's bound) the paper's read-out dropped the heads below that, 2 of 3,
    and predicted worse than at 1e-2 (helper-101's case)."""
    X, y, _ = make_random_mhla(200, 6, 3, noise=0.1, n_heads=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing about heads to warn of
        model = LinearAttentionRegressor(
            solver="cg", solver_tol=solver_tol, n_heads=None
        ).fit(X, y)
    assert model.head_search_.relative_distance <= model.tol
    # as near the exact fit as LSQR's coefficients are: measured 2.1e-2 and
    # 1.0e-3 of the predictions' norm (the truncated read-out: 0.17 at 1e-3)
    exact = LinearAttentionRegressor(n_heads=None).fit(X, y).predict(X)
    error = np.linalg.norm(model.predict(X) - exact) / np.linalg.norm(exact)
    assert error <= 10 * solver_tol


@pytest.mark.parametrize("kind", ["gaussian", "duplicates", "subspace", "one_hot"])
@pytest.mark.parametrize("n_samples", [10, 18, 40])  # p = 18
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("alpha", [0.0, 1e-8, 1.0])
def test_every_solver_matches_the_definition_within_rounding(
    kind, n_samples, fit_intercept, alpha
):
    """Coefficients and intercept of every solver (and "auto") against the SVD
    reference, weights with zeros, two outputs for n > p. Bounds: ``10 p eps
    kappa`` for the direct solvers (backward-stable solves of a system of
    condition kappa; measured at most 0.01 of it), with kappa of the Gram on the
    features' span, since rounding in its null directions is left out; LSQR at
    solver_tol=1e-12: 1e4 solver_tol or that bound (measured below 0.01 of
    it)."""
    X, y = _review_data(kind, n_samples, n_outputs=2 if n_samples > 18 else 1)
    w = np.r_[np.zeros(3), np.linspace(0.5, 2.0, n_samples - 3)]
    coef, intercept, kappa = _svd_ridge(
        _definition_features(X), y, w, alpha, fit_intercept
    )
    direct = 10 * coef.shape[1] * _EPS * kappa
    for solver in ["normal", "dual", "cg", "auto"]:
        model = LinearAttentionRegressor(
            n_heads=None, alpha=alpha, fit_intercept=fit_intercept, solver=solver,
            solver_tol=1e-12,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model.fit(X, y, sample_weight=w)
        bound = max(direct, 1e4 * 1e-12) if model.solver_ == "cg" else direct
        scale = np.linalg.norm(coef)
        assert np.linalg.norm(np.atleast_2d(model.coef_) - coef) <= bound * scale
        size = max(np.linalg.norm(intercept), np.sqrt(np.mean(y**2)))
        assert np.linalg.norm(model.intercept_ - intercept) <= bound * max(size, 1)


def _uncentered_condition(Phi, w):
    """The largest eigenvalue of the weighted Gram before centering over the
    smallest (above p eps of the largest) after: the condition number the user
    guide states the direct solvers' precision with an intercept in."""
    mean = w @ Phi / w.sum()
    centered = np.linalg.eigvalsh((Phi - mean).T @ (w[:, None] * (Phi - mean)))
    largest = np.linalg.eigvalsh(Phi.T @ (w[:, None] * Phi))[-1]
    return largest / centered[centered > Phi.shape[1] * _EPS * largest][0]


@pytest.mark.parametrize(
    "case",
    ["offset10", "offset30", "offset100", "heavy1e8", "heavy1e12", "far_targets"],
)
def test_direct_solvers_with_an_intercept_are_within_the_stated_bound(case):
    """The user guide's bound with fit_intercept=True: 10 p eps (kappa + the
    targets' root mean square over their standard deviation), kappa the
    weighted Gram's largest eigenvalue before centering over its smallest after
    (measured at most 2e-3 of it; targets 1e6 plus a signal: 0.025). The
    centered Gram's own condition number does not bound the errors: 57 times
    10 p eps of it for tokens offset by 100, 5e7 for one sequence of weight
    1e12, 9e4 for targets far from zero."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 5, 3))
    y = rng.normal(size=60)
    w = np.ones(60)
    if case.startswith("offset"):
        X = X + float(case[len("offset"):])
    elif case.startswith("heavy"):
        w[0] = float(case[len("heavy"):])
    else:
        y = 1e6 + 1e-3 * _definition_features(X) @ rng.normal(size=18)
    Phi = _definition_features(X)
    coef, _, _ = _svd_ridge(Phi, y, w, 0.0, True)
    spread = np.sqrt(np.mean(y**2)) / np.sqrt(np.cov(y, aweights=w, bias=True))
    bound = 10 * Phi.shape[1] * _EPS * (_uncentered_condition(Phi, w) + spread)
    for solver in ["normal", "dual"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # n < p for "dual"
            model = LinearAttentionRegressor(
                n_heads=None, fit_intercept=True, solver=solver
            ).fit(X, y, sample_weight=w)
        error = np.linalg.norm(model.coef_ - coef) / np.linalg.norm(coef)
        assert error <= bound, (solver, error, bound)


@pytest.mark.parametrize("kind", ["subspace", "one_hot"])
@pytest.mark.parametrize("alpha", [1e-10, 1e-8, 1e-6])
def test_normal_ridge_leaves_out_null_directions_of_exactly_singular_data(
    kind, alpha
):
    """Tokens in a subspace or one-hot make the lifted Gram exactly singular; a
    penalty just above its rank threshold used to divide the rounding of the
    moment's null part by alpha (relative errors 1e-4 to 1e-3, against 1e-15
    from "dual" and "cg"). The bound is ``10 p eps kappa`` on the span."""
    X, y = _review_data(kind, 40)
    coef, intercept, kappa = _svd_ridge(_definition_features(X), y, None, alpha, True)
    bound = 10 * coef.shape[1] * _EPS * kappa
    assert bound < 1e-9  # the old error was far above it
    model = LinearAttentionRegressor(
        n_heads=None, alpha=alpha, fit_intercept=True, solver="normal"
    ).fit(X, y)
    assert relative_error(model.coef_, coef[0]) <= bound
    assert abs(model.intercept_ - intercept[0]) <= bound * max(abs(intercept[0]), 1)


def test_normal_ridge_keeps_near_null_directions_that_carry_signal():
    """Tokens near a subspace (noise 1e-6): the Gram is numerically singular,
    but the noisy targets' moment has 1e5 times its rounding in the near-null
    directions, so the ridge solve keeps them: exactly the Cholesky solve."""
    rng = np.random.default_rng(1)
    basis = rng.normal(size=(2, 4))
    X = rng.normal(size=(200, 5, 2)) @ basis + 1e-6 * rng.normal(size=(200, 5, 4))
    y = rng.normal(size=(200, 1))
    Phi = _definition_features(X)
    gram, moment = Phi.T @ Phi, Phi.T @ y
    spectrum = gram_spectrum(gram, default_rank_tol(len(gram)))
    assert not spectrum.full_rank
    alpha = 1e3 * spectrum.threshold
    rounding = len(gram) * _EPS * np.sqrt(np.trace(gram) * np.sum(y**2, axis=0))
    kept = solve_gram(gram, moment, alpha, spectrum, moment_rounding=rounding)
    np.testing.assert_array_equal(kept, solve_gram(gram, moment, alpha, spectrum))


def test_cg_warns_when_lsqr_stops_on_its_condition_estimate():
    """Numerically rank-deficient rows: LSQR stops at its condition limit (istop
    3) far from solver_tol; this was silent, with predictions 160% away from
    the direct solvers'."""
    rng = np.random.default_rng(0)
    basis = rng.normal(size=(2, 4))
    X = rng.normal(size=(200, 5, 2)) @ basis + 1e-6 * rng.normal(size=(200, 5, 4))
    y = rng.normal(size=200)
    with pytest.warns(ConvergenceWarning, match="numerically rank-deficient"):
        model = LinearAttentionRegressor(n_heads=None, solver="cg").fit(X, y)
    assert not model.certificate_.identifiable
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        LinearAttentionRegressor(n_heads=None, solver="cg").fit(
            rng.normal(size=(200, 5, 4)), y
        )


def test_cg_memory_is_the_compact_rows_not_the_lifted_matrix():
    """solver="cg" keeps the compact rows (n (d (d+1)/2 + d) floats), never the
    n x p lifted matrix (documented: O(n d^2) memory); the per-row d x d
    moments of the head search are formed only when it asks for them (with
    n_heads=None never: they were 1.3 compact rows more, at n = 60000, d = 6
    the peak fell from X + 2.2 to X + 1.1 compact rows)."""
    rng = np.random.default_rng(0)
    n, d = 10000, 8
    X = rng.normal(size=(n, 5, d)) / np.sqrt(5)
    y = rng.normal(size=n)
    params = dict(n_heads=None, solver="cg", max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LinearAttentionRegressor(**params).fit(X[:50], y[:50])
        peak = traced_fit(LinearAttentionRegressor(**params), X, y)[1]
    compact = n * (d * (d + 1) // 2 + d) * 8
    lifted = n * n_lifted(d) * 8  # 6.5 times the compact rows
    assert peak <= X.nbytes + 3 * compact
    assert peak - X.nbytes < lifted / 2


def test_streamed_fit_does_not_copy_the_input():
    """The normal equations stream chunks of the sequences: memory beyond the
    input is one chunk plus O(p^2) (user guide, "Scaling and memory"). The
    check of the coordinates' scales took max(abs(X)), a temporary as large as
    X: at d = 8, 1e5 sequences of 16 tokens (98 MiB) peaked at 98 MiB beyond
    the input, against 15 MiB recorded before that check."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 40, 4))  # 25.6 MB; one chunk of rows 6.4 MB
    y = rng.normal(size=len(X))
    params = dict(n_heads=None, solver="normal")
    LinearAttentionRegressor(**params).fit(X[:50], y[:50])
    peak = traced_fit(LinearAttentionRegressor(**params), X, y)[1]
    assert peak < X.nbytes / 2


def test_lsqr_warnings_name_the_callers_line(rng):
    """The ConvergenceWarning of solver="cg" points at the user's fit, not into
    scikit-learn's fit wrapper."""
    X = rng.normal(size=(200, 3, 4))
    with pytest.warns(ConvergenceWarning, match="max_iter=3") as record:
        LinearAttentionRegressor(n_heads=None, solver="cg", max_iter=3).fit(
            X, rng.normal(size=200)
        )
    assert {warning.filename for warning in record} == {__file__}


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("offset", [30.0, 1e3])
def test_residual_products_from_the_statistics_are_within_their_rounding_bound(
    offset, fit_intercept
):
    """Tokens far from zero make the Gram ill-conditioned (1e9 to 1e18) and
    ``theta^T G theta`` a cancellation of much larger terms: the residuals'
    cross products from the normal equations, ``Y^T Y - 2 theta^T b + theta^T G
    theta``, then differ from the rows' ``R^T R`` by 4e5 to 2e7 times a bound
    on the terms' own sizes, and by at most 0.021 of the bound on their
    term-by-term sizes (``_residual_rounding`` with ``_term_sizes``), measured
    on these tokens."""
    X, _, truth = make_random_mhla(200, 5, 3, n_heads=2, random_state=1)
    X = X + offset
    exact = truth.predict(X).reshape(len(X), -1)[:, 0]
    noise = 0.3 * exact.std() * np.random.default_rng(1).normal(size=(len(X), 2))
    targets = np.c_[exact[:, None] + noise, exact]
    features = naive_lifted_features(X)
    weight = float(len(X)) if fit_intercept else 0.0  # (no centering without)
    feature_mean = features.mean(axis=0) * (weight > 0)
    target_mean = targets.mean(axis=0) * (weight > 0)
    gram = features.T @ features - weight * np.outer(feature_mean, feature_mean)
    moment = features.T @ targets - weight * np.outer(feature_mean, target_mean)
    products = targets.T @ targets
    centering = weight * np.outer(target_mean, target_mean)
    coef = scipy.linalg.lstsq(gram, moment)[0].T
    from_statistics = (
        products - centering - coef @ moment - (coef @ moment).T + coef @ gram @ coef.T
    )
    residual = targets - target_mean - (features - feature_mean) @ coef.T
    from_rows = residual.T @ residual
    bound = _residual_rounding(
        features.shape[1], products, centering,
        *_term_sizes(coef, gram, moment, feature_mean, target_mean, weight),
    )
    assert np.all(np.abs(from_statistics - from_rows) <= bound)
