"""Hostile review of two features: CV estimators on Dask arrays, and streamed
statistics that find the token scale on their way.

Every reference here is naive and written in the test: ridge by ``numpy.linalg.lstsq``
on explicitly built lifted features, leave-one-out by explicit refits, K-fold by
``sklearn.model_selection.cross_val_score`` / ``GridSearchCV`` over the plain
estimators. Defects found are ``xfail(strict=True)`` with the defect in the reason.
"""

import pickle

import numpy as np
import pytest
from conftest import naive_lifted_features, random_attention, random_sequences
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    StratifiedKFold,
    cross_val_score,
)

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
    certify,
)
from sklearn_linattn._data import lifted_data

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

ALPHAS = (1e-3, 1e-1, 10.0)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    d, T, n = 2, 5, 48
    X = random_sequences(rng, n, T, d)
    y = random_attention(rng, d, 1, 2).predict(X) + 0.1 * rng.normal(size=(n, 2))
    weights = rng.uniform(0.5, 2.0, n)
    weights[[3, 17, 40]] = 0.0
    return X, y, weights


# --- naive references --------------------------------------------------------------


def naive_ridge(F, y, w, alpha, intercept):
    """Weighted ridge on explicit features by lstsq: ``(coef (p, o), offset)``."""
    sw = np.sqrt(w)
    if intercept:
        feature_mean, target_mean = w @ F / w.sum(), w @ y / w.sum()
    else:
        feature_mean, target_mean = np.zeros(F.shape[1]), np.zeros(y.shape[1])
    A = np.vstack(
        [sw[:, None] * (F - feature_mean), np.sqrt(alpha) * np.eye(F.shape[1])]
    )
    b = np.vstack([sw[:, None] * (y - target_mean), np.zeros((F.shape[1], y.shape[1]))])
    coef = np.linalg.lstsq(A, b, rcond=None)[0]
    return coef, target_mean - feature_mean @ coef


def naive_cv_predictions(F, y, w, alpha, intercept, splits):
    """Held-out predictions of explicit refits, row order of the data."""
    out = np.empty_like(y)
    for train, test in splits:
        coef, offset = naive_ridge(F[train], y[train], w[train], alpha, intercept)
        out[test] = F[test] @ coef + offset
    return out


def loo_splits(n):
    return [(np.delete(np.arange(n), i), np.array([i])) for i in range(n)]


def naive_scores(F, y, w, alphas, intercept, splits, loo):
    """Negative weighted MSE: pooled for leave-one-out, mean over folds else."""
    scores = []
    for alpha in alphas:
        predictions = naive_cv_predictions(F, y, w, alpha, intercept, splits)
        errors = ((predictions - y) ** 2).mean(axis=1)
        if loo:
            scores.append(-np.average(errors, weights=w))
        else:
            scores.append(
                np.mean([-np.average(errors[t], weights=w[t]) for _, t in splits])
            )
    return np.array(scores)


def assert_same_cv(local, remote, rtol=1e-7):
    assert remote.alpha_ == local.alpha_
    np.testing.assert_allclose(remote.cv_scores_, local.cv_scores_, rtol=rtol)
    scale = np.abs(local.coef_).max()
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=rtol, atol=1e-9 * scale)
    np.testing.assert_allclose(remote.intercept_, local.intercept_, atol=1e-9)
    if hasattr(local, "cv_results_"):
        np.testing.assert_allclose(
            remote.cv_results_, local.cv_results_, rtol=rtol, atol=1e-12
        )


UNEVEN = (7, 1, 25, 15)


# --- CV on Dask against naive refits -----------------------------------------------


@pytest.mark.parametrize(
    "chunks, cv, intercept",
    [
        (UNEVEN, None, True),
        ((1,) * 48, None, False),  # one-sample chunks
        (UNEVEN, 5, False),  # fold edges (10, 20, ...) not on chunk edges
        (UNEVEN, KFold(4, shuffle=True, random_state=1), True),
    ],
)
def test_dask_cv_equals_naive_refits(client, problem, chunks, cv, intercept):
    X, y, w = problem
    n, T, d = X.shape
    X_dask = da.from_array(X, chunks=(chunks, T, d))
    params = dict(alphas=ALPHAS, cv=cv, fit_intercept=intercept)
    remote = LinearAttentionRegressorCV(n_heads=None, **params).fit(
        X_dask, y, sample_weight=w
    )
    local = LinearAttentionRegressorCV(n_heads=None, **params).fit(
        X, y, sample_weight=w
    )
    assert_same_cv(local, remote)
    F = naive_lifted_features(X)
    if cv is None:
        splits = loo_splits(n)
    else:
        splits = list((KFold(5) if cv == 5 else cv).split(X))
    expected = naive_scores(F, y, w, ALPHAS, intercept, splits, cv is None)
    np.testing.assert_allclose(remote.cv_scores_, expected, rtol=1e-6)
    coef, offset = naive_ridge(F, y, w, remote.alpha_, intercept)
    np.testing.assert_allclose(remote.coef_, coef.T, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(remote.intercept_, offset, atol=1e-9)


def test_dask_group_kfold_equals_cross_val_score(client, problem):
    X, y, _ = problem
    groups = np.arange(X.shape[0]) % 7
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    splitter = GroupKFold(3)
    remote = LinearAttentionRegressorCV(n_heads=None, alphas=ALPHAS, cv=splitter).fit(
        X_dask, y, groups=groups
    )
    expected = [
        cross_val_score(
            LinearAttentionRegressor(alpha=alpha, n_heads=None),
            X,
            y,
            groups=groups,
            cv=splitter,
            scoring="neg_mean_squared_error",
        ).mean()
        for alpha in ALPHAS
    ]
    np.testing.assert_allclose(remote.cv_scores_, expected, rtol=1e-7)


def test_dask_store_cv_results_and_custom_scoring(client, problem):
    X, y, w = problem
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    F = naive_lifted_features(X)
    loo = [naive_cv_predictions(F, y, w, a, False, loo_splits(48)) for a in ALPHAS]
    loo = np.stack(loo, axis=-1)  # (n, o, A)

    params = dict(alphas=ALPHAS, store_cv_results=True, scoring="r2")
    remote = LinearAttentionRegressorCV(n_heads=None, **params).fit(
        X_dask, y, sample_weight=w
    )
    assert_same_cv(
        LinearAttentionRegressorCV(n_heads=None, **params).fit(X, y, sample_weight=w),
        remote,
    )
    np.testing.assert_allclose(remote.cv_results_, loo, rtol=1e-6, atol=1e-10)

    def scorer(estimator, X, y):  # a callable: sees the LOO predictions
        return -np.abs(estimator.predict(X) - y).max()

    remote = LinearAttentionRegressorCV(
        n_heads=None, alphas=ALPHAS, scoring=scorer
    ).fit(X_dask, y)
    plain = [
        naive_cv_predictions(F, y, np.ones(48), a, False, loo_splits(48))
        for a in ALPHAS
    ]
    np.testing.assert_allclose(
        remote.cv_scores_, [-np.abs(p - y).max() for p in plain], rtol=1e-6
    )

    params = dict(alphas=ALPHAS, store_cv_results=True)  # squared errors * weights
    remote = LinearAttentionRegressorCV(n_heads=None, **params).fit(
        X_dask, y[:, 0], sample_weight=w
    )
    errors = (loo[:, 0] - y[:, :1]) ** 2 * w[:, None]
    np.testing.assert_allclose(remote.cv_results_, errors, rtol=1e-6, atol=1e-14)


@pytest.mark.parametrize("cv", [None, StratifiedKFold(3)])
def test_dask_classifier_string_labels(client, problem, cv):
    X, y, _ = problem
    labels = np.where(y[:, 0] > np.median(y[:, 0]), "high", "low")
    labels[:9] = "mid"
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    params = dict(alphas=ALPHAS, cv=cv, class_weight="balanced")
    local = LinearAttentionClassifierCV(n_heads=None, **params).fit(X, labels)
    remote = LinearAttentionClassifierCV(n_heads=None, **params).fit(X_dask, labels)
    assert_same_cv(local, remote)
    assert list(remote.classes_) == ["high", "low", "mid"]
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))
    if cv is not None:  # unweighted accuracy equals GridSearchCV's
        remote = LinearAttentionClassifierCV(n_heads=None, alphas=ALPHAS, cv=cv).fit(
            X_dask, labels
        )
        search = GridSearchCV(
            LinearAttentionClassifier(n_heads=None), {"alpha": list(ALPHAS)}, cv=cv
        ).fit(X, labels)
        np.testing.assert_allclose(
            remote.cv_scores_, search.cv_results_["mean_test_score"], rtol=1e-12
        )


def test_dask_positions_all_with_padding(client):
    rng = np.random.default_rng(3)
    X = random_sequences(rng, 40, 5, 2)
    X[::3, :2] = 0.0  # left padding
    y = rng.normal(size=(40, 5))
    X_dask = da.from_array(X, chunks=((9, 1, 17, 13), 5, 2))
    for cv in (3, KFold(4, shuffle=True, random_state=0)):
        params = dict(alphas=ALPHAS, cv=cv, positions="all", fit_intercept=True)
        assert_same_cv(
            LinearAttentionRegressorCV(n_heads=None, **params).fit(X, y),
            LinearAttentionRegressorCV(n_heads=None, **params).fit(X_dask, y),
        )


def test_dask_float32_read_only_flat_and_inputs_untouched(client, problem):
    X, y, w = problem
    X32 = X.astype(np.float32)
    y_copy, w_copy, X32_copy = y.copy(), w.copy(), X32.copy()
    for array in (X32, y, w):
        array.flags.writeable = False
    try:
        for cv in (None, 3):
            params = dict(alphas=ALPHAS, cv=cv, token_dim=2)
            local = LinearAttentionRegressorCV(n_heads=None, **params).fit(
                X32, y, sample_weight=w
            )
            remote = LinearAttentionRegressorCV(n_heads=None, **params).fit(
                da.from_array(X32, chunks=(UNEVEN, 5, 2)), y, sample_weight=w
            )
            assert_same_cv(local, remote)
            flat = da.from_array(X32.reshape(48, -1), chunks=(11, 3))  # column chunks
            assert_same_cv(
                local,
                LinearAttentionRegressorCV(n_heads=None, **params).fit(
                    flat, y, sample_weight=w
                ),
            )
    finally:
        for array in (X32, y, w):
            array.flags.writeable = True
    np.testing.assert_array_equal(X32, X32_copy)
    np.testing.assert_array_equal(y, y_copy)
    np.testing.assert_array_equal(w, w_copy)


@pytest.mark.parametrize(
    "kwargs", [dict(n_jobs=2), dict(batch_size=1), dict(batch_size=7, n_jobs=2)]
)
def test_dask_cv_n_jobs_and_batch_size(client, problem, kwargs):
    X, y, _ = problem
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    for cv in (None, 3):
        assert_same_cv(
            LinearAttentionRegressorCV(n_heads=None, alphas=ALPHAS, cv=cv).fit(X, y),
            LinearAttentionRegressorCV(
                n_heads=None, alphas=ALPHAS, cv=cv, **kwargs
            ).fit(X_dask, y),
        )


def test_dask_fitted_cv_pickles_without_dask(client, problem):
    X, y, _ = problem
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    for cv in (None, 3):
        model = LinearAttentionRegressorCV(n_heads=None, alphas=ALPHAS, cv=cv).fit(
            X_dask, y
        )
        assert not [
            key
            for key, v in vars(model).items()
            if type(v).__module__.startswith("dask")
        ]
        clone = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(clone.predict(X), model.predict(X))
        assert clone.alpha_ == model.alpha_


def test_dask_dual_mode_is_a_clear_error(client, problem):
    X, y, _ = problem
    with pytest.raises(ValueError, match="gcv_mode='dual'.*in memory"):
        LinearAttentionRegressorCV(n_heads=None, gcv_mode="dual").fit(
            da.from_array(X, chunks=10), y
        )


def test_dask_fewer_rows_than_lifted_features(client):
    rng = np.random.default_rng(5)
    X = random_sequences(rng, 12, 4, 3)  # p = 18 > 12 rows: in memory "dual"
    y = rng.normal(size=12)
    F = naive_lifted_features(X)
    for cv in (None, 3):
        remote = LinearAttentionRegressorCV(
            n_heads=None, alphas=[1e-3, 1.0], cv=cv
        ).fit(da.from_array(X, chunks=5), y)
        splits = loo_splits(12) if cv is None else list(KFold(3).split(X))
        expected = naive_scores(
            F, y[:, None], np.ones(12), [1e-3, 1.0], False, splits, cv is None
        )
        np.testing.assert_allclose(remote.cv_scores_, expected, rtol=1e-6)


# --- scales -------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [2.0**-166, 1e-8, 1e8, 2.0**166])
def test_dask_cv_invariant_under_token_scale(client, problem, scale):
    """Tokens times s, targets times s^3, alphas times s^6: same choice, scores
    times s^6, coefficients unchanged (s^6 within range for these s)."""
    X, y, w = problem
    s6 = scale**6
    X_dask = da.from_array(X * scale, chunks=(UNEVEN, 5, 2))
    for cv in (None, 3):
        base = LinearAttentionRegressorCV(n_heads=None, alphas=ALPHAS, cv=cv).fit(
            X, y, sample_weight=w
        )
        params = dict(alphas=np.array(ALPHAS) * s6, cv=cv)
        for data in (X * scale, X_dask):
            model = LinearAttentionRegressorCV(n_heads=None, **params).fit(
                data, y * scale**3, sample_weight=w
            )
            assert model.alpha_ == pytest.approx(base.alpha_ * s6, rel=1e-12)
            np.testing.assert_allclose(
                model.cv_scores_ / s6, base.cv_scores_, rtol=1e-9
            )
            np.testing.assert_allclose(model.coef_, base.coef_, rtol=1e-9, atol=1e-12)


def _one_large(X, factor, where):
    X = X.copy()
    X[0 if where == "first" else -1] *= factor
    return X


@pytest.mark.parametrize("where", ["first", "last"])
def test_one_large_sequence_cv_dask_and_memory(client, problem, where):
    """One sequence 1e7 times the others (|x| >= 2^20: the statistics abort and
    rescan), in the first or last chunk. Leave-one-out on Dask equals in memory
    (that row's leverage is within 1e-9 of one, so every alpha scores -inf by the
    documented rule); K-fold with training sets that are not the complements of
    their test sets (statistics of each training set, no subtraction) equals
    naive refits, in memory and on Dask."""
    X, y, w = problem
    X = _one_large(X, 1e7, where)
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    params = dict(n_heads=None, alphas=np.array(ALPHAS) * 1e-6, store_cv_results=True)
    local = LinearAttentionRegressorCV(**params).fit(X, y, sample_weight=w)
    assert_same_cv(
        local, LinearAttentionRegressorCV(**params).fit(X_dask, y, sample_weight=w)
    )
    assert np.all(local.cv_scores_ == -np.inf)

    zeros = np.flatnonzero(w == 0)  # leaving them out of training changes no fit
    splits = [(np.setdiff1d(train, zeros), test) for train, test in KFold(4).split(X)]
    F = naive_lifted_features(X)
    alphas = np.array(ALPHAS) * 1e-6
    expected = naive_scores(F, y, w, alphas, False, splits, False)
    for data in (X, X_dask):
        model = LinearAttentionRegressorCV(n_heads=None, alphas=alphas, cv=splits).fit(
            data, y, sample_weight=w
        )
        np.testing.assert_allclose(model.cv_scores_, expected, rtol=1e-7)


def naive_gram(X, w):
    F = naive_lifted_features(X)
    return (F * w[:, None]).T @ F


def _mixed(X, factor, index):
    X = X.copy()
    X[index] *= factor
    return X


@pytest.mark.parametrize(
    "label, transform",
    [
        ("1e-200", lambda X: X * 1e-200),
        ("1e-8", lambda X: X * 1e-8),
        ("1e8", lambda X: X * 1e8),
        ("1e200", lambda X: X * 1e200),
        ("big first", lambda X: _mixed(X, 1e7, 0)),
        ("big last", lambda X: _mixed(X, 1e7, -1)),
        ("tiny but last", lambda X: _mixed(X * 1e-7, 1e7, -1)),
        ("max 2^20", lambda X: X / np.abs(X).max() * 2.0**20),
        ("max below 2^20", lambda X: X / np.abs(X).max() * (2.0**20 - 1)),
        ("max 2^-21", lambda X: X / np.abs(X).max() * 2.0**-21),
    ],
)
def test_streamed_statistics_at_every_scale(label, transform):
    rng = np.random.default_rng(1)
    X = transform(random_sequences(rng, 400, 4, 2))
    y = rng.normal(size=(400, 1))
    w = rng.uniform(0.0, 2.0, 400)
    for batch_size, n_threads in ((None, 1), (1, 2), (7, 2)):
        data = lifted_data(X, y, w, batch_size=batch_size, n_threads=n_threads)
        statistics = data.statistics()
        c = data.rescaling.token
        assert np.frexp(c)[0] == 0.5 and 0.5 <= c * np.abs(X).max() < 1.0
        gram, moment, *_ = statistics.normal_equations(False)
        expected = naive_gram(X * c, w * data.rescaling.weight)
        F = naive_lifted_features(X * c) * (w * data.rescaling.weight)[:, None]
        assert np.all(np.isfinite(gram))
        np.testing.assert_allclose(
            gram, expected, rtol=1e-12, atol=1e-14 * np.abs(expected).max()
        )
        np.testing.assert_allclose(
            moment, F.T @ (y * data.rescaling.target), rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize("exponent", [-500, -25, 19, 21, 500])
@pytest.mark.parametrize("causal", [True, False])
def test_all_positions_statistics_invariant_under_power_of_two_scale(exponent, causal):
    """With positions='all' (several rows per sequence, left padding), tokens
    times 2^k give the same statistics in rescaled units: the rescaled tokens
    are the same numbers (exponents either side of the 2^20 lift-as-given edge)."""
    rng = np.random.default_rng(6)
    X = random_sequences(rng, 300, 5, 2)
    X[::4, :2] = 0.0
    y = rng.normal(size=(1500, 1))
    w = rng.uniform(0.0, 2.0, 300)
    parts = []
    for tokens, n_threads in ((X, 1), (np.ldexp(X, exponent), 2)):
        data = lifted_data(
            tokens,
            y,
            w,
            positions="all",
            causal=causal,
            batch_size=7,
            n_threads=n_threads,
        )
        gram, moment, *_ = data.statistics().normal_equations(True)
        parts.append((gram, moment, data.rescaling.token))
    (gram, moment, c), (gram_s, moment_s, c_s) = parts
    assert c_s == np.ldexp(c, -exponent)
    np.testing.assert_allclose(
        gram_s, gram, rtol=1e-12, atol=1e-15 * np.abs(gram).max()
    )
    np.testing.assert_allclose(moment_s, moment, rtol=1e-12, atol=1e-15)


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


def test_partial_fit_batches_at_different_scales():
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


# --- defects ------------------------------------------------------------------------


@pytest.mark.parametrize("dask_argument", ["sample_weight", "y"])
@pytest.mark.parametrize(
    "estimator", [LinearAttentionRegressor, LinearAttentionRegressorCV]
)
def test_numpy_X_with_dask_sample_weight_or_y(
    client, problem, estimator, dask_argument
):
    X, y, w = problem
    reference = estimator(n_heads=None).fit(X, y, sample_weight=w)
    if dask_argument == "y":
        y = da.from_array(y, chunks=(13, 2))
    else:
        w = da.from_array(w, chunks=13)
    model = estimator(n_heads=None).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-10)


def test_dask_sample_weight_store_cv_results(client, problem):
    X, y, w = problem
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    params = dict(alphas=ALPHAS, store_cv_results=True)
    local = LinearAttentionRegressorCV(n_heads=None, **params).fit(
        X, y, sample_weight=w
    )
    remote = LinearAttentionRegressorCV(n_heads=None, **params).fit(
        X_dask, y, sample_weight=da.from_array(w, chunks=13)
    )
    assert_same_cv(local, remote)


@pytest.mark.parametrize("factor", [1e2, 1e7])
@pytest.mark.parametrize("dask_input", [False, True])
def test_kfold_with_one_large_sequence_equals_refits(
    client, problem, factor, dask_input
):
    X, y, w = problem
    X = _one_large(X, factor, "last")
    alphas = np.array(ALPHAS) * 1e-6
    F = naive_lifted_features(X)
    expected = naive_scores(F, y, w, alphas, False, list(KFold(4).split(X)), False)
    data = da.from_array(X, chunks=(UNEVEN, 5, 2)) if dask_input else X
    model = LinearAttentionRegressorCV(n_heads=None, alphas=alphas, cv=4).fit(
        data, y, sample_weight=w
    )
    np.testing.assert_allclose(model.cv_scores_, expected, rtol=1e-7)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("first, second", [(1.0, 1e60), (1e-200, 1.0)])
def test_partial_fit_far_apart_scales_is_clear(first, second):
    rng = np.random.default_rng(0)
    X = random_sequences(rng, 400, 5, 2)
    y = rng.normal(size=400)
    model = LinearAttentionRegressor(n_heads=None).partial_fit(X[:200] * first, y[:200])
    with pytest.raises(ValueError, match="scale|overflow|range"):
        model.partial_fit(X[200:] * second, y[200:])


def test_dask_targets_and_groups(client, problem):
    X, y, w = problem
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    y_dask = da.from_array(y, chunks=(10, 2))
    groups = np.arange(48) % 6
    for params, group in (
        (dict(store_cv_results=True), None),
        (dict(cv=GroupKFold(3)), groups),
        (dict(cv=3, fit_intercept=True), None),
    ):
        params = dict(n_heads=None, alphas=ALPHAS, **params)
        remote_groups = None if group is None else da.from_array(group, chunks=7)
        assert_same_cv(
            LinearAttentionRegressorCV(**params).fit(
                X, y, sample_weight=w, groups=group
            ),
            LinearAttentionRegressorCV(**params).fit(
                X_dask, y_dask, sample_weight=w, groups=remote_groups
            ),
        )


def test_dask_sample_weight_scores(client, problem):
    X, y, w = problem
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    w_dask = da.from_array(w, chunks=13)
    for cv in (None, 3):
        assert_same_cv(
            LinearAttentionRegressorCV(n_heads=None, alphas=ALPHAS, cv=cv).fit(
                X, y, sample_weight=w
            ),
            LinearAttentionRegressorCV(n_heads=None, alphas=ALPHAS, cv=cv).fit(
                X_dask, y, sample_weight=w_dask
            ),
        )


@pytest.mark.parametrize("cv", [None, 3])
def test_dask_empty_chunk_after_boolean_mask(client, problem, cv):
    X, y, _ = problem
    X_dask = da.from_array(X, chunks=(12, 5, 2))
    mask = np.ones(48, dtype=bool)
    mask[12:24] = False  # the whole second chunk
    # a Dask mask leaves the emptied chunk (a numpy mask drops it)
    masked = X_dask[da.from_array(mask, chunks=12)].compute_chunk_sizes()
    assert 0 in masked.chunks[0]
    params = dict(n_heads=None, alphas=ALPHAS, cv=cv)
    assert_same_cv(
        LinearAttentionRegressorCV(**params).fit(X[mask], y[mask]),
        LinearAttentionRegressorCV(**params).fit(masked, y[mask]),
    )


@pytest.mark.parametrize("cv", [None, 3])
def test_dask_classifier_cv_invariant_under_token_scale(client, problem, cv):
    """Labels do not scale: tokens times 2^-40 with alphas times 2^-240 choose
    the same alpha with the same scores (+-1 targets, features times 2^-120)."""
    X, y, _ = problem
    labels = np.where(y[:, 0] > 0, "yes", "no")
    base = LinearAttentionClassifierCV(n_heads=None, alphas=ALPHAS, cv=cv).fit(
        X, labels
    )
    model = LinearAttentionClassifierCV(
        n_heads=None, alphas=np.ldexp(ALPHAS, -240), cv=cv
    ).fit(da.from_array(np.ldexp(X, -40), chunks=(UNEVEN, 5, 2)), labels)
    assert model.alpha_ == np.ldexp(base.alpha_, -240)
    np.testing.assert_allclose(model.cv_scores_, base.cv_scores_, rtol=1e-12)
    np.testing.assert_array_equal(model.predict(np.ldexp(X, -40)), base.predict(X))
