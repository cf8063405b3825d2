"""Adversarial checks of the dual solver (Cholesky of the kernel,
deflated along the row weights with an intercept), block-Lanczos certificate
estimates, the precision floor of the head read-out, threaded Gram accumulation.

Every expectation comes from a naive numpy reference written here (explicit lifted
features, ``lstsq`` on explicitly weighted and centered rows, ``eigvalsh``), or
from an exact invariance (integer weights = repeated rows, an affine combination of
training features is in their span), never from the code under test.
"""

import warnings

import numpy as np
import pytest
from conftest import naive_lifted_features, random_attention, random_sequences
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    certify,
)

# --- naive references ----------------------------------------------------------


def naive_solution(features, targets, weights=None, intercept=True):
    """Minimum-norm weighted least squares on explicitly centered features:
    ``(coef, feature_mean, target_mean, centered weighted design)``."""
    n = len(features)
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if intercept:
        mean = weights @ features / weights.sum()
        target_mean = weights @ targets / weights.sum()
    else:
        mean = np.zeros(features.shape[1])
        target_mean = np.zeros(targets.shape[1:])
    root = np.sqrt(weights)
    design = root[:, None] * (features - mean)
    rhs = (targets - target_mean) * (root if targets.ndim == 1 else root[:, None])
    coef = np.linalg.lstsq(design, rhs, rcond=None)[0]
    return coef, mean, target_mean, design


def naive_position_features(sequences, causal=True):
    """phi at every position t: S_t the prefix second moment, q = z_t."""
    n, T, d = sequences.shape
    rows, cols = np.triu_indices(d)
    scale = np.where(rows == cols, 1.0, np.sqrt(2.0))
    out = []
    for t in range(T):
        part = sequences[:, : t + 1] if causal else sequences
        S = np.einsum("nti,ntj->nij", part, part)[:, rows, cols] * scale
        out.append(np.einsum("nk,ne->nke", S, sequences[:, t]).reshape(n, -1))
    return np.stack(out, axis=1)


def naive_outside_fraction(features, design, mean):
    """Relative norm of ``features - mean`` outside the row space of ``design``."""
    basis = np.linalg.svd(design, full_matrices=False)
    s, vt = basis[1], basis[2]
    vt = vt[s > s[0] * 1e-10]
    centered = features - mean
    outside = centered - centered @ vt.T @ vt
    return np.linalg.norm(outside, axis=-1) / np.linalg.norm(centered, axis=-1)


def relative_error(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(b).max()


# --- dual solver with intercept and weights ---------------------------------------

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
    model = LinearAttentionRegressor(token_dim=d, fit_intercept=True).fit(
        X, y, sample_weight=w
    )
    assert model.solver_ == "dual"
    coef, mean, target_mean, design = naive_solution(naive_lifted_features(X), y, w)
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
    weighted = LinearAttentionRegressor(token_dim=d, fit_intercept=True).fit(
        X, y, sample_weight=w
    )
    repeated = LinearAttentionRegressor(
        token_dim=d, fit_intercept=True, solver="dual"
    ).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert weighted.solver_ == "dual"
    X_test = random_sequences(rng, 5, 6, d)
    assert relative_error(weighted.predict(X_test), repeated.predict(X_test)) < 1e-9
    a, b = weighted.certificate_, repeated.certificate_
    assert a.rank == b.rank == n - 1
    assert np.isclose(a.max_eigenvalue, b.max_eigenvalue, rtol=1e-9)
    assert a.covers(X).all() and b.covers(X).all()


def test_all_zero_weights_is_a_clear_error():
    rng = np.random.default_rng(2)
    X = random_sequences(rng, 10, 4, 3)
    with pytest.raises(ValueError, match="non-zero"):
        LinearAttentionRegressor(token_dim=3, fit_intercept=True).fit(
            X, rng.normal(size=10), sample_weight=np.zeros(10)
        )


def test_dual_duplicate_rows_without_intercept_min_norm():
    rng = np.random.default_rng(3)
    d = 4
    X = random_sequences(rng, 30, 6, d)
    X = np.concatenate([X, X[:5]])  # 35 rows < p = 40, kernel singular
    y = rng.normal(size=30)
    y = np.concatenate([y, y[:5] + 0.1])  # inconsistent duplicates
    model = LinearAttentionRegressor(token_dim=d).fit(X, y)
    assert model.solver_ == "dual"
    coef, _, _, design = naive_solution(naive_lifted_features(X), y, intercept=False)
    X_test = random_sequences(rng, 5, 6, d)
    assert (
        relative_error(model.predict(X_test), naive_lifted_features(X_test) @ coef)
        < 1e-9
    )
    assert model.certificate_.rank == np.linalg.matrix_rank(design) == 30


def test_dual_positions_all_intercept_padding_weights():
    rng = np.random.default_rng(4)
    d = 3  # p = 18
    X = random_sequences(rng, 4, 4, d)
    X[0, :2] = 0.0  # left padding: positions 0 and 1 of sequence 0 are not rows
    y = rng.normal(size=(4, 4))
    w = np.array([1.0, 2.0, 0.5, 3.0])
    model = LinearAttentionRegressor(
        token_dim=d, fit_intercept=True, positions="all"
    ).fit(X, y, sample_weight=w)
    assert model.solver_ == "dual"
    features = naive_position_features(X)
    kept = np.ones((4, 4), bool)
    kept[0, :2] = False
    row_weights = np.broadcast_to(w[:, None], kept.shape)[kept]
    coef, mean, target_mean, design = naive_solution(
        features[kept], y[kept], row_weights
    )
    assert model.certificate_.n_samples == kept.sum() == 14
    assert model.certificate_.rank == np.linalg.matrix_rank(design)
    X_test = random_sequences(rng, 3, 5, d)
    expected = (naive_position_features(X_test) - mean) @ coef + target_mean
    assert relative_error(model.predict(X_test), expected) < 1e-9
    covered = model.certificate_.covers(X)
    assert covered.shape == (4, 4)
    assert covered[kept].all()
    np.testing.assert_array_equal(
        covered, naive_outside_fraction(features, design, mean) < 1e-6
    )
    assert not model.certificate_.covers(X_test).any()


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("solver", ["dual", "normal"])
def test_covers_affine_combination_of_training_features(fit_intercept, solver):
    """Z = c [A1; q; A2; q] has S = c^2 (S1 + S2), query c q: phi(Z) = c^3 (phi1 +
    phi2). With c^3 = 1/2 it is the average, in the (centered) span."""
    rng = np.random.default_rng(5)
    d, n = 4, 20
    X = random_sequences(rng, n, 5, d)
    X[1, -1] = X[0, -1]  # same query
    model = LinearAttentionRegressor(
        token_dim=d, fit_intercept=fit_intercept, solver=solver, n_heads=None
    ).fit(X, rng.normal(size=n))
    c = 0.5 ** (1 / 3)
    combined = c * np.concatenate([X[0], X[1]])[None]
    np.testing.assert_allclose(
        naive_lifted_features(combined)[0],
        (naive_lifted_features(X[:2]).sum(0)) / 2,
        rtol=1e-12,
        atol=1e-14,
    )
    generic = random_sequences(rng, 3, 10, d)
    assert model.certificate_.covers(combined).all()
    assert not model.certificate_.covers(generic).any()
    # the naive test agrees on both
    _, mean, _, design = naive_solution(
        naive_lifted_features(X), np.zeros(n), intercept=fit_intercept
    )
    both = np.concatenate(
        [naive_lifted_features(combined), naive_lifted_features(generic)]
    )
    np.testing.assert_array_equal(
        naive_outside_fraction(both, design, mean) < 1e-6, [True, False, False, False]
    )


# --- certificate estimates above p = 300 -------------------------------------------


def _tokens(rng, kind, shape):
    if kind == "uniform":
        return rng.uniform(-1, 1, shape)
    if kind == "abs_normal":
        return np.abs(rng.normal(size=shape))
    if kind == "student_t3":
        return rng.standard_t(3, shape)
    if kind == "lognormal":
        return rng.lognormal(0.0, 1.5, shape)
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["uniform", "abs_normal", "student_t3", "lognormal"])
@pytest.mark.parametrize("d", [9, 10, 12])
def test_certificate_estimates_against_eigvalsh(d, kind):
    rng = np.random.default_rng(d)
    p = d * d * (d + 1) // 2
    n = int(1.5 * p)
    X = _tokens(rng, kind, (n, 6, d))
    features = naive_lifted_features(X)
    exact = np.linalg.eigvalsh(features.T @ features / n)
    certificate = certify(X)
    assert certificate.identifiable and certificate.rank == p
    # claimed: within about 3e-3, smallest from above, largest from below
    assert exact[0] * (1 - 1e-9) <= certificate.min_eigenvalue <= exact[0] * (1 + 3e-3)
    assert (
        exact[-1] * (1 - 3e-3) <= certificate.max_eigenvalue <= exact[-1] * (1 + 1e-9)
    )


@pytest.mark.parametrize("d", [9, 10])
def test_one_hot_tokens_not_identifiable_rank_matches_naive(d):
    rng = np.random.default_rng(d)
    n = 600
    X = np.eye(d)[rng.integers(0, d, (n, 6))]
    certificate = certify(X)
    assert not certificate.identifiable
    assert certificate.rank == np.linalg.matrix_rank(naive_lifted_features(X)) == d * d


@pytest.mark.parametrize("abs_tokens", [False, True])
def test_dual_above_300_rows_with_intercept(abs_tokens):
    rng = np.random.default_rng(6)
    d, n = 9, 350  # p = 405 > n > 300: Cholesky factor and block-Lanczos estimates
    X = rng.normal(size=(n, 5, d))
    X_test = rng.normal(size=(5, 5, d))
    if abs_tokens:
        X, X_test = np.abs(X), np.abs(X_test)
    y = rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, n)
    model = LinearAttentionRegressor(token_dim=d, fit_intercept=True).fit(
        X, y, sample_weight=w
    )
    assert model.solver_ == "dual"
    coef, mean, target_mean, design = naive_solution(naive_lifted_features(X), y, w)
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


def test_dask_input_to_dual_is_a_clear_error():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(7)
    X = random_sequences(rng, 10, 5, 3)
    model = LinearAttentionRegressor(token_dim=3, solver="dual", fit_intercept=True)
    with pytest.raises(ValueError, match="solver='dual'"):
        model.fit(
            da.from_array(X, chunks=(5, 5, 3)), da.from_array(np.ones(10), chunks=5)
        )
    assert not hasattr(model, "coef_")
    # "auto" on Dask avoids the dual solver even with fewer rows than features
    model = LinearAttentionRegressor(token_dim=3, fit_intercept=True)
    model.fit(
        da.from_array(X, chunks=(5, 5, 3)), da.from_array(rng.normal(size=10), chunks=5)
    )
    assert model.solver_ != "dual"


# --- classifier with many classes on the dual solver --------------------------------


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_classifier_many_classes_dual_matches_naive(fit_intercept):
    rng = np.random.default_rng(8)
    d, n, k = 4, 30, 12
    X = random_sequences(rng, n, 6, d)
    labels = np.array(list("abcdefghijkl"))[np.arange(n) % k]
    model = LinearAttentionClassifier(token_dim=d, fit_intercept=fit_intercept).fit(
        X, labels
    )
    assert model.solver_ == "dual"
    assert list(model.classes_) == sorted(set(labels))
    targets = np.where(labels[:, None] == model.classes_[None, :], 1.0, -1.0)
    coef, mean, target_mean, _ = naive_solution(
        naive_lifted_features(X), targets, intercept=fit_intercept
    )
    X_test = random_sequences(rng, 6, 6, d)
    expected = (naive_lifted_features(X_test) - mean) @ coef + target_mean
    assert relative_error(model.decision_function(X_test), expected) < 1e-8
    np.testing.assert_array_equal(model.predict(X), labels)  # interpolates


# --- input types and the precision floor -------------------------------------------


def _one_head_data(seed=0, d=3, n=200):
    rng = np.random.default_rng(seed)
    truth = random_attention(rng, d, 1)
    X = random_sequences(rng, n, 5, d)
    return truth, X, truth.predict(X)[:, 0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_one_head_target_in_low_precision_gives_one_head(dtype):
    truth, X, y = _one_head_data()
    Xc = X.astype(dtype)
    yc = truth.predict(Xc.astype(np.float64))[:, 0].astype(dtype)
    model = LinearAttentionRegressor(token_dim=3).fit(Xc, yc)
    assert model.n_heads_ == 1
    eps = np.finfo(dtype).eps
    assert relative_error(model.predict(Xc), yc.astype(np.float64)) < 100 * eps


def test_integer_input_exact_one_head():
    rng = np.random.default_rng(9)
    truth = random_attention(rng, 3, 1)
    X = rng.integers(-3, 4, (200, 5, 3))
    y = truth.predict(X.astype(np.float64))[:, 0]
    model = LinearAttentionRegressor(token_dim=3).fit(X, y)
    assert model.n_heads_ == 1
    assert relative_error(model.predict(X), y) < 1e-10
    assert relative_error(model.coef_, truth.lifted_coef()[0]) < 1e-10


def test_pandas_float64_dataframe_matches_numpy():
    pd = pytest.importorskip("pandas")
    truth, X, y = _one_head_data()
    flat = X.reshape(len(X), -1)
    frame = pd.DataFrame(flat, columns=[f"x{i}" for i in range(flat.shape[1])])
    a = LinearAttentionRegressor(token_dim=3).fit(frame, pd.Series(y))
    b = LinearAttentionRegressor(token_dim=3).fit(flat, y)
    assert list(a.feature_names_in_) == list(frame.columns)
    np.testing.assert_allclose(a.predict(frame), b.predict(flat), rtol=1e-12)
    assert a.n_heads_ == b.n_heads_ == 1


def test_pandas_float32_dataframe_gets_precision_floor():
    pd = pytest.importorskip("pandas")
    truth, X, y = _one_head_data()
    flat = X.reshape(len(X), -1).astype(np.float32)
    frame = pd.DataFrame(flat, columns=[f"x{i}" for i in range(flat.shape[1])])
    y = y.astype(np.float32).astype(np.float64)  # float32-rounded, stored as float64
    numpy_fit = LinearAttentionRegressor(token_dim=3).fit(flat, y)
    frame_fit = LinearAttentionRegressor(token_dim=3).fit(frame, y)
    assert numpy_fit.n_heads_ == 1
    assert frame_fit.n_heads_ == numpy_fit.n_heads_


def test_partial_fit_keeps_the_coarsest_precision():
    truth, X, y = _one_head_data()
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


def test_float32_two_head_target_gives_two_heads():
    rng = np.random.default_rng(0)
    truth = random_attention(rng, 3, 2)
    X = random_sequences(rng, 400, 6, 3).astype(np.float32)
    y = truth.predict(X.astype(np.float64))[:, 0].astype(np.float32)
    model = LinearAttentionRegressor(token_dim=3).fit(X, y)
    assert model.n_heads_ == 2


def test_float32_two_head_target_with_fixed_heads():
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


@pytest.mark.parametrize("scale", [1e-30, 1e-12, 1e12, 1e30])
def test_float32_tiny_and_huge_scales(scale):
    truth, X, _ = _one_head_data(seed=11)
    Xs = (X * scale).astype(np.float32)
    y = truth.predict(Xs.astype(np.float64))[:, 0]
    model = LinearAttentionRegressor(token_dim=3).fit(Xs, y)
    assert model.n_heads_ == 1
    assert model.certificate_.identifiable and certify(Xs).identifiable
    assert relative_error(model.predict(Xs), y) < 1e-6
    np.testing.assert_allclose(
        model.coef_, truth.lifted_coef()[0], rtol=1e-6, atol=1e-8
    )


# --- threaded Gram accumulation and parallel fits ----------------------------------


@pytest.mark.parametrize("positions", ["last", "all"])
def test_threaded_gram_accumulation_matches_naive(positions):
    rng = np.random.default_rng(12)
    d, n, T = 4, 150, 5
    X = random_sequences(rng, n, T, d)
    w = rng.integers(0, 4, n).astype(float)
    if positions == "last":
        features, y, row_w = naive_lifted_features(X), rng.normal(size=n), w
    else:
        features = naive_position_features(X).reshape(n * T, -1)
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
    coef, mean, target_mean, design = naive_solution(features, y.reshape(-1), row_w)
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


def test_grid_search_n_jobs_2_equals_n_jobs_1():
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


# --- degenerate data: every centered feature is zero ----------------------------------


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


def test_certify_above_300_rows_covers_span_without_intercept():
    rng = np.random.default_rng(16)
    X = rng.normal(size=(350, 5, 9))  # p = 405: kernel Cholesky + estimates
    X[1, -1] = X[0, -1]  # same query: concatenation adds the lifted features
    certificate = certify(X)
    features = naive_lifted_features(X)
    exact = np.linalg.eigvalsh(features @ features.T / 350)
    assert certificate.rank == 350 and not certificate.identifiable
    assert (
        exact[-1] * (1 - 3e-3) <= certificate.max_eigenvalue <= exact[-1] * (1 + 1e-9)
    )
    combined = 0.5 ** (1 / 3) * np.concatenate([X[0], X[1]])[None]
    np.testing.assert_allclose(
        naive_lifted_features(combined)[0], features[:2].sum(0) / 2, atol=1e-12
    )
    assert certificate.covers(X).all()
    assert certificate.covers(combined).all()
    assert certificate.covers(2.0 * X[:3]).all()  # phi(cZ) = c^3 phi(Z)
    assert not certificate.covers(rng.normal(size=(3, 5, 9))).any()


# --- more dual paths ------------------------------------------------------------------


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
    _, _, _, design = naive_solution(naive_lifted_features(X), y, w)
    exact = np.linalg.eigvalsh(design.T @ design / w.sum())
    certificate = model.certificate_
    assert certificate.identifiable and certificate.rank == 40
    assert np.isclose(certificate.min_eigenvalue, exact[0], rtol=1e-8)
    assert np.isclose(certificate.max_eigenvalue, exact[-1], rtol=1e-8)


def test_dual_positions_all_acausal_with_intercept():
    rng = np.random.default_rng(19)
    d = 3
    X = random_sequences(rng, 4, 4, d)
    y = rng.normal(size=(4, 4))
    model = LinearAttentionRegressor(
        token_dim=d, positions="all", causal=False, fit_intercept=True
    ).fit(X, y)
    assert model.solver_ == "dual"
    features = naive_position_features(X, causal=False).reshape(16, -1)
    coef, mean, target_mean, design = naive_solution(features, y.reshape(-1))
    X_test = random_sequences(rng, 2, 5, d)
    expected = (naive_position_features(X_test, causal=False) - mean) @ coef
    assert relative_error(model.predict(X_test), expected + target_mean) < 1e-9
    assert model.certificate_.rank == np.linalg.matrix_rank(design)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, bool])
def test_small_integer_dtypes_do_not_overflow(dtype):
    rng = np.random.default_rng(20)
    truth = random_attention(rng, 3, 1)
    if dtype is bool:
        X = rng.integers(0, 2, (60, 4, 3)).astype(bool)
    else:
        info = np.iinfo(dtype)
        X = rng.integers(info.min, info.max, (60, 4, 3)).astype(dtype)
    y = truth.predict(X.astype(np.float64))[:, 0]
    model = LinearAttentionRegressor(token_dim=3).fit(X, y)
    assert model.n_heads_ == 1
    assert relative_error(model.predict(X), y) < 1e-9


# --- minimal heads on noiseless, identifiable data -----------------------------------


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
def test_auto_heads_three_heads_two_outputs(d):
    truth, X, y = _identifiable_mhla_data(d, 3, 2)
    model = LinearAttentionRegressor(token_dim=d).fit(X, y)
    assert model.n_heads_ == 3


def test_two_heads_two_outputs_d3():
    """A fixed count is searched to convergence: from alternating projections and
    from the paper's heads cut to 2, Gauss-Newton stalls at 6e-2 after a few steps
    and then crosses a plateau to the generating heads (28 steps)."""
    truth, X, y = _identifiable_mhla_data(3, 2, 2)
    fixed = LinearAttentionRegressor(token_dim=3, n_heads=2).fit(X, y)
    assert relative_error(fixed.coef_, truth.lifted_coef()) < 1e-8


def test_auto_two_heads_two_outputs_d3():
    truth, X, y = _identifiable_mhla_data(3, 2, 2)
    assert LinearAttentionRegressor(token_dim=3).fit(X, y).n_heads_ == 2


def test_dual_above_300_rows_intercept_covers_affine_hull_and_pickles():
    import pickle

    rng = np.random.default_rng(21)
    d, n = 9, 350  # Cholesky of the deflated kernel, reflection in covers
    X = rng.normal(size=(n, 5, d))
    X[1, -1] = X[0, -1]
    y = rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, n)
    model = LinearAttentionRegressor(token_dim=d, fit_intercept=True).fit(
        X, y, sample_weight=w
    )
    combined = 0.5 ** (1 / 3) * np.concatenate([X[0], X[1]])[None]  # affine hull
    scaled = 2.0 * X[:2]  # in the span, not in the affine hull
    generic = rng.normal(size=(2, 5, d))
    _, mean, _, design = naive_solution(naive_lifted_features(X), y, w)
    features = np.concatenate(
        [naive_lifted_features(s) for s in (combined, scaled, generic)]
    )
    expected = naive_outside_fraction(features, design, mean) < 1e-6
    np.testing.assert_array_equal(expected, [True, False, False, False, False])
    restored = pickle.loads(pickle.dumps(model))
    for certificate in (model.certificate_, restored.certificate_):
        got = np.concatenate(
            [certificate.covers(s) for s in (combined, scaled, generic)]
        )
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(restored.predict(generic), model.predict(generic))


def test_noisy_two_head_target_gives_two_heads():
    rng = np.random.default_rng(7)
    truth = random_attention(rng, 4, 2)
    X = random_sequences(rng, 280, 6, 4)
    y = truth.predict(X)
    y = y + 1e-3 * np.std(y) * rng.normal(size=y.shape)
    model = LinearAttentionRegressor(token_dim=4).fit(X, y[:, 0])
    assert model.n_heads_ == 2
