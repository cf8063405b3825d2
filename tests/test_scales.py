"""Issue-15 robustness: every solver right at every scale, and the defects found by
hostile testing, each a test that failed before the fix."""

import warnings

import numpy as np
import pytest
from conftest import random_attention, random_sequences
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_linattn import LinearAttentionClassifier, LinearAttentionRegressor, certify

SCALES = [1e-100, 1e-8, 1.0, 1e8, 1e100]


def fit(solver, X, y, **params):
    params = dict(n_heads=None, solver=solver, solver_tol=1e-14, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # cg must converge
        return LinearAttentionRegressor(**params).fit(X, y)


@pytest.fixture
def problem(rng):
    truth = random_attention(rng, 3, 2, n_outputs=2)
    X = random_sequences(rng, 60, 5, 3)
    noise = 0.01 * rng.normal(size=(60, 2))
    return X, truth.predict(X) + noise, truth


@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
@pytest.mark.parametrize("token_scale", SCALES)
@pytest.mark.parametrize("target_scale", [1e-100, 1.0, 1e100])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_fit_heads_and_certificate_do_not_depend_on_scale(
    problem, solver, token_scale, target_scale, fit_intercept
):
    """MHLA is homogeneous of degree 3: scaling Z by c and y by s scales the lifted
    coefficients by s / c^3, the heads by their square root, the intercept by s;
    the certificate's verdict and rank do not change."""
    X, y, _ = problem
    log_factor = np.log10(target_scale) - 3 * np.log10(token_scale)
    if abs(log_factor) > 300:
        pytest.skip("the coefficients s / c^3 of this model are not floats")
    if solver == "dual":  # fewer rows than p = 18: the kernel form
        X, y = X[:12], y[:12]
    reference = fit(solver, X, y, fit_intercept=fit_intercept)
    scaled = fit(solver, X * token_scale, y * target_scale, fit_intercept=fit_intercept)
    assert scaled.n_heads_ == reference.n_heads_
    if abs(log_factor) < 250:  # else the coefficients themselves are not floats
        factor = 10.0**log_factor
        expected = reference.coef_ * factor
        error = np.linalg.norm(scaled.coef_ - expected)
        assert error <= 1e-8 * np.linalg.norm(expected)
        root = np.sqrt(factor)
        np.testing.assert_allclose(
            scaled.value_matrices_,
            reference.value_matrices_ * root,
            rtol=1e-6,
            atol=1e-8 * root * np.abs(reference.value_matrices_).max(),
        )
    np.testing.assert_allclose(
        scaled.intercept_,
        reference.intercept_ * target_scale,
        rtol=1e-6,
        atol=1e-9 * target_scale * np.abs(y).max(),
    )
    certificate, expected_certificate = scaled.certificate_, reference.certificate_
    assert certificate.identifiable == expected_certificate.identifiable
    assert certificate.rank == expected_certificate.rank
    predictions = scaled.predict(X * token_scale)
    np.testing.assert_allclose(
        predictions / target_scale, reference.predict(X), rtol=1e-6, atol=1e-9
    )


@pytest.mark.parametrize("scale", SCALES)
def test_certify_does_not_depend_on_scale(rng, scale):
    X = random_sequences(rng, 40, 5, 3)
    reference = certify(X)
    scaled = certify(X * scale)
    assert (
        scaled.identifiable == reference.identifiable and scaled.rank == reference.rank
    )
    few = certify(X[:10] * scale)  # kernel form
    assert few.rank == certify(X[:10]).rank == 10


@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
def test_float32_input_agrees(problem, solver):
    X, y, _ = problem
    if solver == "dual":
        X, y = X[:12], y[:12]
    X32 = X.astype(np.float32)
    reference = fit(solver, X32.astype(np.float64), y)
    np.testing.assert_allclose(fit(solver, X32, y).coef_, reference.coef_, rtol=1e-10)


def test_cg_on_small_data_converges(rng):
    """Defect 1: tokens at 1e-6, noiseless targets: cg stopped after one iteration
    with 42% training error and claimed identifiability."""
    truth = random_attention(rng, 3, 1)
    X = 1e-6 * random_sequences(rng, 80, 5, 3)
    y = truth.predict(X)[:, 0]
    model = fit("cg", X, y)
    assert model.n_iter_ > 1
    assert np.linalg.norm(model.predict(X) - y) < 1e-8 * np.linalg.norm(y)
    assert model.certificate_.identifiable


@pytest.mark.parametrize("alpha", [1e-20, 1e-16, 1e-14, 1e-12])
@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
def test_tiny_alpha_on_rank_deficient_data(rng, alpha, solver):
    """Defects 2 and 8: dual with alpha=1e-20 gave 135x the training error; normal
    with alpha=1e-14 raised LinAlgError. Tokens in a 2-D subspace of R^3."""
    X = random_sequences(rng, 20, 4, 2) @ rng.normal(size=(2, 3))
    y = rng.normal(size=20)
    reference = fit("normal", X, y)  # minimum-norm least squares
    model = fit(solver, X, y, alpha=alpha)
    best = np.mean((reference.predict(X) - y) ** 2)
    assert np.mean((model.predict(X) - y) ** 2) == pytest.approx(best, rel=1e-6)


@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
def test_all_zero_input_gives_a_zero_model(solver):
    """Defect 5: cg raised ArpackError on all-zero input."""
    model = LinearAttentionRegressor(solver=solver).fit(
        np.zeros((30, 3, 2)), np.ones(30)
    )
    assert not np.any(model.coef_) and model.certificate_.rank == 0
    assert not model.certificate_.identifiable and model.n_heads_ == 0
    np.testing.assert_array_equal(model.predict(np.ones((2, 3, 2))), 0.0)


def test_cg_with_one_dimensional_tokens(rng):
    """Defect 6: cg with token_dim=1 raised a TypeError from eigsh."""
    X = rng.normal(size=(30, 3, 1))
    y = 2.0 * X[:, :, 0].__pow__(2).sum(axis=1) * X[:, -1, 0]  # 2 S q
    model = fit("cg", X, y)
    np.testing.assert_allclose(model.coef_, [2.0])
    assert model.certificate_.identifiable and model.certificate_.rank == 1


def test_cg_claims_nothing_when_it_did_not_converge(rng):
    X = random_sequences(rng, 200, 5, 3)
    y = rng.normal(size=200)
    with pytest.warns(ConvergenceWarning, match="claims no identifiability"):
        model = LinearAttentionRegressor(solver="cg", max_iter=2).fit(X, y)
    assert not model.certificate_.identifiable


def test_partial_fit_without_targets_is_explained(rng):
    """Defect 9: IndexError after the first batch."""
    model = LinearAttentionRegressor().partial_fit(
        rng.normal(size=(5, 2, 2)), np.ones(5)
    )
    with pytest.raises(ValueError, match="requires y to be passed"):
        model.partial_fit(rng.normal(size=(5, 2, 2)), None)


def test_missing_string_label_is_explained(rng):
    """Defect 10: TypeError '<' not supported."""
    y = np.array(["a", "b", np.nan, "a"], dtype=object)
    with pytest.raises(ValueError, match="Input y contains NaN"):
        LinearAttentionClassifier().fit(rng.normal(size=(4, 2, 2)), y)


@pytest.mark.parametrize(
    "token_dim, error, message",
    [
        (0, ValueError, "positive int"),
        (-2, ValueError, "positive int"),
        (2.0, TypeError, "must be a positive int"),
        ("2", TypeError, "must be a positive int"),
        (True, TypeError, "must be a positive int"),
    ],
)
def test_certify_validates_token_dim(rng, token_dim, error, message):
    """Defect 11: ZeroDivisionError, a reshape message, TypeErrors."""
    with pytest.raises(error, match=message):
        certify(rng.normal(size=(5, 4)), token_dim=token_dim)


@pytest.mark.parametrize(
    "params",
    [{"n_heads": True}, {"token_dim": True}, {"n_jobs": 0}, {"batch_size": False}],
)
def test_bad_integer_parameters(rng, params):
    """Defect 14: n_heads=True and token_dim=True passed validation; n_jobs=0 failed
    in joblib."""
    with pytest.raises(InvalidParameterError):
        LinearAttentionRegressor(**params).fit(rng.normal(size=(5, 2, 2)), np.ones(5))


def test_dask_unknown_chunk_sizes_are_explained(rng):
    """Defect 12: 'y must have shape ... n_samples=nan'."""
    da = pytest.importorskip("dask.array")
    X = da.from_array(rng.normal(size=(20, 2, 2)), chunks=10)
    y = rng.normal(size=20)
    selected = X[X[:, 0, 0] > -10]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        LinearAttentionRegressor().fit(selected, y)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_unrepresentable_coefficients_are_an_error(problem, scale):
    """|X| ~ 1e150 puts y / |Z|^3 beyond the float range: a clear error, not a
    model that predicts NaN or zeros."""
    X, y, _ = problem
    with pytest.raises(ValueError, match="not representable in float64"):
        LinearAttentionRegressor().fit(X * scale, y)


def test_subnormal_inputs_and_weights_are_an_error(problem):
    X, y, _ = problem
    with pytest.raises(ValueError, match="largest entry of X"):
        LinearAttentionRegressor().fit(X * 1e-310, y)
    with pytest.raises(ValueError, match="largest entry of sample_weight"):
        LinearAttentionRegressor().fit(X, y, sample_weight=np.full(len(X), 1e-320))
