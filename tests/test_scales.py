"""Issue-15 robustness: every solver right at every scale, partial_fit batches at
different scales, and the defects found by hostile testing, each a test that
failed before the fix."""

import warnings

import numpy as np
import pytest
from conftest import (
    naive_lifted_features,
    naive_relative_distance,
    random_attention,
    random_sequences,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
    certify,
)

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


@pytest.mark.parametrize("scale", [1e-300, 1e-100, 1e100, 1e200, 1e300])
@pytest.mark.parametrize("positions", ["last", "all"])
def test_r2_score_does_not_depend_on_the_targets_scale(rng, scale, positions):
    """R^2 of targets scaled by ``scale`` equals the unscaled one: scikit-learn's
    r2_score squares in float64, NaN from about 1e154 on, though the fit and the
    predictions are right (the regressor and the CV estimator)."""
    truth = random_attention(rng, 3, 1)
    X = random_sequences(rng, 60, 4, 3)
    y = truth.predict(X, positions=positions)[..., 0]
    y = y + 0.3 * y.std() * rng.normal(size=y.shape)
    cv = {} if positions == "last" else {"cv": 3}  # (leave-one-out: "last" only)
    for Estimator, params in [
        (LinearAttentionRegressor, {}), (LinearAttentionRegressorCV, cv)
    ]:
        params.update(n_heads=None, positions=positions)
        model = Estimator(**params).fit(X, y)
        reference = model.score(X, y)
        scaled = Estimator(**params).fit(X, y * scale)
        assert 0 < reference < 1
        assert scaled.score(X, y * scale) == pytest.approx(reference, rel=1e-9)


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


@pytest.mark.parametrize("missing, message", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_missing_float_label_is_explained_without_a_cast_warning(
    rng, missing, message
):
    """NaN or inf in float labels: a ValueError, not numpy's cast warning first."""
    y = np.array([0.0, 1.0, missing, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"Input y contains {message}"):
            LinearAttentionClassifier().fit(rng.normal(size=(4, 2, 2)), y)


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


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionRegressorCV]
)
def test_a_boolean_n_heads_is_rejected_naming_its_choices(rng, Estimator):
    with pytest.raises(
        InvalidParameterError, match=r"'auto'.*, an int.* or None \(not a bool\)"
    ):
        Estimator(n_heads=True).fit(rng.normal(size=(5, 2, 2)), np.ones(5))


@pytest.mark.parametrize("kind", ["regressor", "classifier", "attention"])
def test_outputs_beyond_the_float_range_are_inf_with_a_warning_naming_them(kind):
    """Outputs beyond float64 came with numpy's "overflow encountered in
    ldexp" alone; they are +-inf (the float64 value of the output) with a
    RuntimeWarning that says so and names the remedy. Tiny inputs give the
    outputs' float64 values (0 below the range) without any warning."""
    rng = np.random.default_rng(0)
    X = random_sequences(rng, 60, 4, 2)
    truth = random_attention(rng, 2, 2)
    y = truth.predict(X)[:, 0]
    model = {
        "regressor": lambda: LinearAttentionRegressor().fit(X, y),
        "classifier": lambda: LinearAttentionClassifier().fit(X, y > 0),
        "attention": lambda: truth,
    }[kind]()
    output = model.decision_function if kind == "classifier" else model.predict
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tiny = output(1e-200 * X[:3])
        scaled = output(1e100 * X[:3])  # outputs near 1e300: in the range
    np.testing.assert_array_equal(tiny, 0.0)
    np.testing.assert_allclose(scaled, 1e300 * output(X[:3]), rtol=1e-12)
    with pytest.warns(RuntimeWarning, match="beyond the float64 range") as record:
        huge = output(1e200 * X[:3])
    assert len(record) == 1 and "Scale X down" in str(record[0].message)
    assert np.all(np.isinf(huge) | (output(X[:3]) == 0))


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


# --- partial_fit: batches at different scales -----------------------------------------


def _batches(seed=5, d=2, T=3, n=40):
    rng = np.random.default_rng(seed)
    truth = random_attention(rng, d, 1)
    X1 = random_sequences(rng, n, T, d)
    X2 = random_sequences(rng, n, T, d)
    return truth, X1, truth.predict(X1).ravel(), X2, truth.predict(X2).ravel()


def _concatenated_fit(X1, y1, X2, y2, w1=None, w2=None, **params):
    w = None
    if w1 is not None or w2 is not None:
        w = np.r_[
            np.ones(len(y1)) if w1 is None else w1,
            np.ones(len(y2)) if w2 is None else w2,
        ]
    return LinearAttentionRegressor(n_heads=None, **params).fit(
        np.concatenate([X1, X2]), np.r_[y1, y2], sample_weight=w
    )


@pytest.mark.parametrize(
    "name",
    [
        "y_1e150",
        "zeros_X",
        "zeros_X_and_y",
        "zero_weight_huge_row",
        "float32",
        "weights_1e300",
        "X_1e40",
    ],
)
def test_partial_fit_accepts_representable_batches(name):
    truth, X1, y1, X2, y2 = _batches()
    w2 = None
    if name == "y_1e150":
        y2 = y2 * 1e150
    elif name == "zeros_X":
        X2 = np.zeros_like(X2)
    elif name == "zeros_X_and_y":
        X2, y2 = np.zeros_like(X2), np.zeros_like(y2)
    elif name == "zero_weight_huge_row":
        X2 = np.concatenate([X2, X2[:1] * 1e60])
        y2, w2 = np.r_[y2, 1.0], np.r_[np.ones(len(y2)), 0.0]
    elif name == "float32":
        X2, y2 = X2.astype(np.float32) * np.float32(1e30), y2.astype(np.float32)
    elif name == "weights_1e300":
        w2 = np.full(len(y2), 1e300)
    elif name == "X_1e40":
        X2 = X2 * 1e40
        y2 = truth.predict(X2).ravel()
    est = LinearAttentionRegressor(n_heads=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.partial_fit(X1, y1).partial_fit(X2, y2, sample_weight=w2)
        coef = np.asarray(est.coef_)
    assert np.all(np.isfinite(coef))
    if name == "zero_weight_huge_row":
        reference = _concatenated_fit(X1, y1, X2[:-1], y2[:-1])
    else:
        reference = _concatenated_fit(X1, y1, X2, np.asarray(y2, float), w2=w2)
    np.testing.assert_allclose(
        est.predict(X1),
        reference.predict(X1),
        rtol=1e-6,
        atol=1e-6 * np.abs(reference.predict(X1)).max(),
    )
    if name in ("zeros_X", "zeros_X_and_y", "zero_weight_huge_row", "X_1e40"):
        np.testing.assert_allclose(est.predict(X1), y1, atol=1e-9)


def test_partial_fit_every_position_with_a_1e20_batch_recovers_the_truth():
    rng = np.random.default_rng(2)
    truth = random_attention(rng, 2, 1)
    X1, X2 = random_sequences(rng, 30, 4, 2), random_sequences(rng, 30, 4, 2) * 1e20

    def all_positions(X):  # y_t = truth(Z[:t+1]), causal prefixes
        return np.stack(
            [truth.predict(X[:, : t + 1]).ravel() for t in range(X.shape[1])], axis=1
        )

    est = LinearAttentionRegressor(n_heads=None, positions="all")
    est.partial_fit(X1, all_positions(X1)).partial_fit(X2, all_positions(X2))
    np.testing.assert_allclose(
        naive_relative_distance(est.attention_, truth), 0.0, atol=1e-8
    )


@pytest.mark.parametrize(
    "threads", [{}, {"n_jobs": 2, "batch_size": 10}], ids=["one thread", "lanes"]
)
def test_partial_fit_batch_that_overflows_is_refused(threads):
    truth, X1, y1, X2, y2 = _batches()
    est = LinearAttentionRegressor(n_heads=None, **threads).partial_fit(X1, y1)
    with warnings.catch_warnings():  # the clear error alone, no numpy overflow
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match="overflow with this batch in the scales"):
            est.partial_fit(X2 * 1e52, y2)
    # the estimator is unchanged by the refused batch
    np.testing.assert_allclose(est.predict(X1), y1, atol=1e-12)


def test_partial_fit_merged_overflow_is_refused_or_correct():
    truth, X1, y1, X2, y2 = _batches()
    Xb = X2 * 2.0**169.95
    yb = truth.predict(Xb).ravel()
    est = LinearAttentionRegressor(n_heads=None).partial_fit(X1, y1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            for _ in range(30):
                est.partial_fit(Xb, yb)
        except ValueError as error:
            assert "overflow" in str(error)
            return
        predictions = est.predict(X1)
    np.testing.assert_allclose(predictions, y1, atol=1e-8)


def test_partial_fit_targets_whose_squares_overflow_are_refused():
    """A second batch with y 1e160 times the first's: its Gram and moment are
    finite, but the sum of squared targets (the residual, hence the noise test
    of the head read-out) is not; refused with the clear error (a documented
    limit), and the estimator is unchanged."""
    truth, X1, y1, X2, y2 = _batches()
    est = LinearAttentionRegressor(n_heads=None).partial_fit(X1, y1)
    with warnings.catch_warnings():  # the clear error alone, no numpy overflow
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=r"y \(whose squares enter\)"):
            est.partial_fit(X2, y2 * 1e160)
    np.testing.assert_allclose(est.predict(X1), y1, atol=1e-12)


def test_partial_fit_batches_at_different_scales_equal_fit_and_lstsq():
    rng = np.random.default_rng(4)
    X = random_sequences(rng, 600, 5, 2)
    X[:200] *= 1e-8  # first batch tiny (scale above 2^20)
    X[400:] *= 1e4  # last batch large
    y = rng.normal(size=600)
    whole = LinearAttentionRegressor(n_heads=None).fit(X, y)
    streamed = LinearAttentionRegressor(n_heads=None)
    for start in (0, 200, 400):
        streamed.partial_fit(X[start : start + 200], y[start : start + 200])
    F = naive_lifted_features(X)
    coef = np.linalg.lstsq(F, y, rcond=None)[0]
    np.testing.assert_allclose(whole.predict(X), F @ coef, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        streamed.predict(X), whole.predict(X), rtol=1e-6, atol=1e-6
    )


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("first, second", [(1.0, 1e60), (1e-200, 1.0)])
def test_partial_fit_batches_at_far_apart_scales_are_refused(first, second):
    rng = np.random.default_rng(0)
    X = random_sequences(rng, 400, 5, 2)
    y = rng.normal(size=400)
    model = LinearAttentionRegressor(n_heads=None).partial_fit(X[:200] * first, y[:200])
    with pytest.raises(ValueError, match="scale|overflow|range"):
        model.partial_fit(X[200:] * second, y[200:])


# --- powers of two: exactly scaled statistics -----------------------------------------


@pytest.mark.parametrize("exponent", [-300, -27, 27, 300])
def test_fit_and_certificate_unchanged_by_power_of_two_scale(exponent):
    """Tokens times 2^k, targets times 2^3k: the same coef_ (exactly scaled
    statistics), the same certificate rank, eigenvalues times 2^6k."""
    rng = np.random.default_rng(2)
    X = random_sequences(rng, 300, 5, 2)
    y = rng.normal(size=300)
    base = LinearAttentionRegressor(n_heads=None).fit(X, y)
    model = LinearAttentionRegressor(n_heads=None).fit(
        np.ldexp(X, exponent), np.ldexp(y, 3 * exponent)
    )
    np.testing.assert_allclose(model.coef_, base.coef_, rtol=1e-9)
    exact = certify(X)
    scaled = certify(np.ldexp(X, exponent))
    assert scaled.rank == exact.rank and scaled.identifiable == exact.identifiable
    if abs(exponent) < 100:
        assert np.ldexp(scaled.min_eigenvalue, -6 * exponent) == pytest.approx(
            exact.min_eigenvalue, rel=1e-9
        )


def test_token_coordinates_of_other_scales_are_warned_about():
    """One token coordinate in units 300 times the others': the lifted Gram's
    entries differ by 300^6, the fit's rank tolerance dropped 6 of its 18
    directions, and noiseless targets were fitted poorly, silently; at 100
    times none was dropped. Above a factor of 100 the fit warns, naming the
    remedy."""
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(300, 8, 3, n_heads=1, random_state=0)
    for ratio, rank in [(30.0, 18), (100.0, 18), (300.0, 12)]:
        scaled = X * np.array([ratio, 1.0, 1.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = LinearAttentionRegressor(n_heads=None).fit(scaled, y)
        assert model.certificate_.rank == rank
        messages = [
            str(w.message) for w in caught if "differ in scale" in str(w.message)
        ]
        if ratio == 300:
            assert len(messages) == 1
            assert "coordinate 0" in messages[0]
            assert "TokenwiseTransformer(MaxAbsScaler())" in messages[0]
        elif ratio == 30:
            assert not messages
    zero = X.copy()
    zero[..., 2] = 0.0  # an all-zero coordinate has no scale to compare
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LinearAttentionRegressor(n_heads=None).fit(zero, y)


def test_a_first_partial_fit_batch_in_other_units_is_warned_about():
    """partial_fit checks its first batch as fit checks its data (the later
    batches are in the scales the first sets)."""
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(200, 8, 3, n_heads=1, random_state=0)
    scaled = X * np.array([1e3, 1.0, 1.0])
    with pytest.warns(UserWarning, match="differ in scale by a factor"):
        LinearAttentionRegressor().partial_fit(scaled[:100], y[:100])
    model = LinearAttentionRegressor().partial_fit(X[:100], y[:100])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.partial_fit(scaled[100:], y[100:])  # not the first batch
