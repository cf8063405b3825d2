"""Fitting on Dask arrays on a local cluster equals the in-memory fit."""

import copy
import re

import numpy as np
import pytest
from conftest import (
    naive_lifted_features,
    naive_weighted_solution,
    random_attention,
    random_sequences,
)

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from joblib import parallel_backend  # noqa: E402
from sklearn.base import clone, is_classifier  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

from sklearn_linattn import (  # noqa: E402
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
    certify,
)


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    truth = random_attention(rng, 4, 2, n_outputs=2)
    X = random_sequences(rng, 900, 6, 4)
    y = truth.predict(X) + 0.01 * rng.normal(size=(900, 2))
    return X, y


def test_fit_predict_and_certify_equal_in_memory(client, data):
    X, y = data
    X_dask = da.from_array(X, chunks=(200, 6, 4))
    y_dask = da.from_array(y, chunks=(300, 2))  # other chunks than X: realigned
    params = dict(fit_intercept=True, alpha=1e-3)
    local = LinearAttentionRegressor(**params).fit(X, y)
    remote = LinearAttentionRegressor(**params).fit(X_dask, y_dask)
    scale = np.linalg.norm(local.coef_)
    assert np.linalg.norm(remote.coef_ - local.coef_) < 1e-10 * scale
    np.testing.assert_allclose(remote.intercept_, local.intercept_, atol=1e-10)
    assert remote.n_heads_ == local.n_heads_ and remote.n_features_in_ == 24

    predictions = remote.predict(X_dask)
    assert isinstance(predictions, da.Array) and predictions.shape == (900, 2)
    np.testing.assert_allclose(predictions.compute(), local.predict(X), rtol=1e-9)

    certificate = certify(X_dask)
    exact = certify(X)
    assert certificate.identifiable == exact.identifiable
    assert certificate.rank == exact.rank
    assert certificate.min_eigenvalue == pytest.approx(exact.min_eigenvalue, rel=1e-10)


def test_flat_rows_and_partial_fit(client, data):
    X, y = data
    rows = da.from_array(X.reshape(900, -1), chunks=(250, 24))
    flat = LinearAttentionRegressor(token_dim=4).fit(rows, y[:, 0])
    local = LinearAttentionRegressor(token_dim=4).fit(X.reshape(900, -1), y[:, 0])
    np.testing.assert_allclose(flat.coef_, local.coef_, rtol=1e-10, atol=1e-13)
    assert flat.predict(rows).shape == (900,)

    streamed = LinearAttentionRegressor()
    X_dask = da.from_array(X, chunks=(100, 6, 4))
    for start in (0, 300, 600):
        streamed.partial_fit(X_dask[start : start + 300], y[start : start + 300])
    whole = LinearAttentionRegressor().fit(X, y)
    np.testing.assert_allclose(streamed.coef_, whole.coef_, rtol=1e-10, atol=1e-13)
    streamed.partial_fit(X[:50], y[:50])  # in-memory batches mix with Dask ones
    with pytest.raises(ValueError, match="same shape of targets"):
        streamed.partial_fit(X_dask[:100], y[:100, 0])


def test_bad_dask_input_is_a_clear_error(client, data):
    X, y = data
    X_dask = da.from_array(X, chunks=(300, 6, 4))
    with pytest.raises(ValueError, match="fitted blockwise"):
        LinearAttentionRegressor(solver="dual").fit(X_dask, y)
    with pytest.raises(ValueError, match="normal equations"):
        LinearAttentionRegressor(solver="cg").partial_fit(X_dask, y)
    with pytest.raises(ValueError, match="token dimension 4"):
        LinearAttentionRegressor(token_dim=3).fit(X_dask, y)
    bad = X.copy()
    bad[5, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LinearAttentionRegressor().fit(da.from_array(bad, chunks=(300, 6, 4)), y)


def corrupted(case, y, weights):
    """Copies of targets and weights with one defect of the kind named."""
    y, weights = y.astype(np.float64), weights.copy()
    if case == "NaN target":
        y[7] = np.nan
    elif case == "infinite target":
        y[7] = np.inf
    elif case == "negative weight":
        weights[3] = -1.0
    elif case == "NaN weight":
        weights[3] = np.nan
    else:  # "zero weights"
        weights[:] = 0.0
    return y, weights


DEFECTS = {
    "NaN target": "y contains NaN",
    "infinite target": "y contains infinity",
    "negative weight": "Negative values in data passed to `sample_weight`",
    "NaN weight": "sample_weight contains NaN",
    "zero weights": "at least one non-zero",
}


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # NaN labels
@pytest.mark.parametrize("case", list(DEFECTS))
@pytest.mark.parametrize(
    "estimator, method",
    [
        (LinearAttentionRegressor(), "fit"),
        (LinearAttentionRegressor(), "partial_fit"),
        (LinearAttentionClassifier(), "fit"),
        (LinearAttentionRegressorCV(alphas=[1e-3, 1.0]), "fit"),
        (LinearAttentionRegressorCV(alphas=[1e-3, 1.0], cv=3), "fit"),
        (LinearAttentionClassifierCV(alphas=[1e-3, 1.0], cv=3), "fit"),
    ],
    ids=["regressor", "partial_fit", "classifier", "loo", "kfold", "classifier-cv"],
)
def test_dask_targets_and_weights_are_checked_like_numpy(
    client, data, estimator, method, case
):
    """Dask y and sample_weight with a NaN, an infinity, a negative weight or only
    zero weights give the ValueError that numpy input gives, not a crash in a
    solver or a zero model."""
    X, y = data
    if is_classifier(estimator):
        y = (y[:, 0] > np.median(y[:, 0])).astype(np.float64)
    y, weights = corrupted(case, y, np.ones(len(X)))
    fresh = clone(estimator)
    if method == "partial_fit":  # a later batch: no pass of its own for its scales
        fresh.partial_fit(X, np.ones_like(y))
    with pytest.raises(ValueError, match=DEFECTS[case]) as in_memory:
        getattr(copy.deepcopy(fresh), method)(X, y, sample_weight=weights)
    with pytest.raises(ValueError, match=re.escape(str(in_memory.value))):
        getattr(copy.deepcopy(fresh), method)(
            da.from_array(X, chunks=(200, 6, 4)),
            da.from_array(y, chunks=(300,) + y.shape[1:]),  # other chunks than X
            sample_weight=da.from_array(weights, chunks=250),
        )


def test_dask_targets_and_weights_are_checked_in_the_passes_over_X(data):
    """The checks of Dask y and sample_weight add no pass over X: a fit reads
    each block of X as often with them as with numpy targets and no weights."""
    X, y = data
    reads = []

    def read(block):
        reads.append(len(block))
        return block

    X_dask = da.from_array(X, chunks=(300, 6, 4)).map_blocks(read, meta=np.empty(()))

    def blocks_read(estimator, *args, **kwargs):
        reads.clear()
        estimator.fit(X_dask, *args, **kwargs)
        return len(reads)

    y_dask = da.from_array(y, chunks=(200, 2))
    weights = da.from_array(np.ones(len(X)), chunks=250)
    with dask.config.set(scheduler="synchronous"):  # reads counted in this process
        for estimator in (
            LinearAttentionRegressor(n_heads=None),
            LinearAttentionRegressorCV(alphas=[0.0, 1.0], cv=3, n_heads=None),
        ):
            plain = blocks_read(clone(estimator), y)
            assert plain > 0
            assert blocks_read(clone(estimator), y_dask, sample_weight=weights) == plain


def test_cg_with_blockwise_products(client, data):
    X, y = data
    X_dask = da.from_array(X, chunks=(300, 6, 4))
    params = dict(solver="cg", solver_tol=1e-14, fit_intercept=True, n_heads=None)
    remote = LinearAttentionRegressor(**params).fit(X_dask, y)
    local = LinearAttentionRegressor(**params).fit(X, y)
    exact = LinearAttentionRegressor(solver="normal", fit_intercept=True, n_heads=None)
    exact.fit(X, y)
    scale = np.linalg.norm(exact.coef_)
    assert np.linalg.norm(remote.coef_ - local.coef_) < 1e-8 * scale
    assert np.linalg.norm(remote.coef_ - exact.coef_) < 1e-8 * scale
    # p = 40 <= 64: cg's certificate decomposes the Gram formed from p products.
    assert remote.solver_ == "cg" and remote.certificate_.exact
    assert remote.certificate_.identifiable == exact.certificate_.identifiable


def test_grid_search_on_the_dask_joblib_backend(client, data):
    X, y = data
    rows = X.reshape(900, -1)
    grid = {"alpha": [0.0, 1e-2]}
    with parallel_backend("dask"):
        remote = GridSearchCV(LinearAttentionRegressor(token_dim=4), grid, cv=3).fit(
            rows, y
        )
    local = GridSearchCV(LinearAttentionRegressor(token_dim=4), grid, cv=3).fit(rows, y)
    np.testing.assert_allclose(
        remote.cv_results_["mean_test_score"],
        local.cv_results_["mean_test_score"],
        rtol=1e-9,
    )


def test_missing_dask_is_explained(monkeypatch):
    import sys

    from sklearn_linattn import _data

    class FakeDaskArray:
        __module__ = "dask.array.core"
        chunks = ((1,),)
        ndim = 3
        shape = (1, 1, 1)

    monkeypatch.setitem(sys.modules, "dask", None)
    assert _data.is_dask_array(FakeDaskArray())
    with pytest.raises(ImportError, match=r"sklearn-linattn\[dask\]"):
        LinearAttentionRegressor().fit(FakeDaskArray(), np.ones(1))


def test_classifier_on_dask_arrays(client, data):
    X, y = data
    labels = np.where(y[:, 0] > np.median(y[:, 0]), "high", "low")
    X_dask = da.from_array(X, chunks=(300, 6, 4))
    local = LinearAttentionClassifier(alpha=1e-3).fit(X, labels)
    remote = LinearAttentionClassifier(alpha=1e-3).fit(X_dask, da.from_array(labels))
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-10, atol=1e-13)
    predicted = remote.predict(X_dask)
    assert isinstance(predicted, da.Array)
    np.testing.assert_array_equal(predicted.compute(), local.predict(X))


@pytest.mark.parametrize("cv", [None, 3, "shuffled"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_cv_estimators_on_dask_equal_in_memory(client, data, cv, fit_intercept):
    """Leave-one-out (one more blockwise pass) and K-fold (statistics per fold,
    blockwise held-out predictions) on a Dask array choose the same alpha with the
    same scores, residuals and model as in memory; tokens far from 1 exercise the
    rescaling, sample weights the weighted residuals."""
    from sklearn.model_selection import KFold

    X, y = data
    X = X * 40.0
    weights = np.random.default_rng(3).uniform(0.5, 2.0, size=len(X))
    if cv == "shuffled":
        cv = KFold(4, shuffle=True, random_state=0)
    params = dict(
        alphas=[1e-6, 1e-2, 1e2], cv=cv, fit_intercept=fit_intercept, n_heads=None
    )
    params["store_cv_results"] = cv is None
    local = LinearAttentionRegressorCV(**params).fit(X, y, sample_weight=weights)
    remote = LinearAttentionRegressorCV(**params).fit(
        da.from_array(X, chunks=(200, 6, 4)),
        da.from_array(y, chunks=(300, 2)),
        sample_weight=da.from_array(weights, chunks=250),
    )
    assert remote.alpha_ == local.alpha_
    np.testing.assert_allclose(remote.cv_scores_, local.cv_scores_, rtol=1e-9)
    if cv is None:
        np.testing.assert_allclose(
            remote.cv_results_, local.cv_results_, rtol=1e-8, atol=1e-12
        )
    scale = np.linalg.norm(local.coef_)
    assert np.linalg.norm(remote.coef_ - local.coef_) < 1e-9 * scale


@pytest.mark.parametrize("cv", [None, 3])
def test_classifier_cv_on_dask_equals_in_memory(client, data, cv):
    X, y = data
    labels = np.digitize(y[:, 0], np.quantile(y[:, 0], [1 / 3, 2 / 3]))
    params = dict(alphas=[1e-3, 1.0, 1e3], cv=cv, n_heads=None)
    local = LinearAttentionClassifierCV(**params).fit(X, labels)
    remote = LinearAttentionClassifierCV(**params).fit(
        da.from_array(X, chunks=(200, 6, 4)), labels
    )
    assert remote.alpha_ == local.alpha_
    np.testing.assert_allclose(remote.cv_scores_, local.cv_scores_, rtol=1e-9)
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))


def test_cv_estimator_on_dask_every_position(client, data):
    X, _ = data
    targets = np.random.default_rng(5).normal(size=(len(X), X.shape[1]))
    params = dict(alphas=[1e-3, 1.0, 1e3], cv=3, positions="all", n_heads=None)
    local = LinearAttentionRegressorCV(**params).fit(X, targets)
    remote = LinearAttentionRegressorCV(**params).fit(
        da.from_array(X, chunks=(200, 6, 4)), targets
    )
    assert remote.alpha_ == local.alpha_
    np.testing.assert_allclose(remote.cv_scores_, local.cv_scores_, rtol=1e-9)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_dask_leave_one_out_of_the_minimum_norm_fit(client, fit_intercept):
    """Fewer sequences than lifted features on Dask (the Gram path, blockwise):
    every leverage is one at alpha = 0, and the limit of r_i / (1 - h_i) the
    workers return equals the in-memory one and explicit pinv refits; the
    default grid is the in-memory grid."""
    rng = np.random.default_rng(11)
    X = random_sequences(rng, 30, 5, 4)  # p = 40
    y = rng.normal(size=30)
    params = dict(
        alphas=[0.0, 1e-8],
        n_heads=None,
        fit_intercept=fit_intercept,
        scoring="neg_mean_absolute_error",
        store_cv_results=True,
    )
    remote = LinearAttentionRegressorCV(**params).fit(
        da.from_array(X, chunks=(7, 5, 4)), y
    )
    local = LinearAttentionRegressorCV(**params).fit(X, y)
    np.testing.assert_allclose(remote.cv_results_, local.cv_results_, rtol=1e-7)
    features = naive_lifted_features(X)
    for i in range(30):
        kept = np.arange(30) != i
        coef, intercept, _, _ = naive_weighted_solution(
            features[kept], y[kept, None], np.ones(29), 0.0, fit_intercept
        )
        expected = features[i] @ coef[0] + intercept[0]
        assert remote.cv_results_[i, 0] == pytest.approx(expected, rel=1e-6, abs=1e-9)
    auto = dict(n_heads=None, fit_intercept=fit_intercept)
    remote = LinearAttentionRegressorCV(**auto).fit(
        da.from_array(X, chunks=(7, 5, 4)), y
    )
    local = LinearAttentionRegressorCV(gcv_mode="normal", **auto).fit(X, y)
    np.testing.assert_allclose(remote.alphas_, local.alphas_, rtol=1e-12)
    np.testing.assert_allclose(remote.cv_scores_, local.cv_scores_, rtol=1e-7)


def test_cg_on_identical_rows_fits_the_mean(client):
    """The floor of the rank threshold (the uncentered diagonal, summed over the
    blocks) makes the centered rounding noise rank 0 on Dask too."""
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(1, 6, 4)), 30, axis=0)
    y = rng.normal(size=30)
    model = LinearAttentionRegressor(solver="cg", fit_intercept=True).fit(
        da.from_array(X, chunks=(7, 6, 4)), y
    )
    assert model.certificate_.rank == 0 and np.abs(model.coef_).max() == 0
    np.testing.assert_allclose(model.intercept_, y.mean(), rtol=1e-12)
    operator = LinearAttentionRegressor()._data_source(
        da.from_array(X, chunks=(7, 6, 4)), None, None
    ).operator()
    features = naive_lifted_features(X * operator_scale(X))
    np.testing.assert_allclose(
        operator.squared_column_norms(), (features**2).sum(0), rtol=1e-12
    )


def operator_scale(X):
    """The power of two the data source scales tokens by (max |x| in [1/2, 1))."""
    return 2.0 ** -np.frexp(np.abs(X).max())[1]


@pytest.mark.parametrize("positions", ["last", "all"])
def test_heads_and_noise_model_equal_in_memory(client, positions):
    # The head count's noise model comes from folds by the sequence's index: any
    # chunking of the Dask array gives the in-memory folds, so the same heads.
    rng = np.random.default_rng(11)
    truth = random_attention(rng, 4, 2, n_outputs=1)
    X = random_sequences(rng, 400, 6, 4)
    if positions == "all":
        from sklearn_linattn._data import lifted_predict

        y = lifted_predict(X, truth.lifted_coef(), np.zeros(1), "all", True)
        y = y.reshape(400, 6) * (1 + 0.05 * rng.normal(size=(400, 6)))
    else:
        y = truth.predict(X)[:, 0] * (1 + 0.05 * rng.normal(size=400))
    local = LinearAttentionRegressor(positions=positions).fit(X, y)
    X_dask = da.from_array(X, chunks=(130, 6, 4))  # folds straddle the blocks
    y_dask = da.from_array(y, chunks=(170,) + y.shape[1:])
    remote = LinearAttentionRegressor(positions=positions).fit(X_dask, y_dask)
    assert local.head_search_.criterion == remote.head_search_.criterion == "f-test"
    assert remote.n_heads_ == local.n_heads_
    for name in ("coef_", "value_matrices_", "query_matrices_"):
        a, b = getattr(local, name), getattr(remote, name)
        assert np.linalg.norm(a - b) <= 1e-9 * np.linalg.norm(a), name
    assert remote.head_search_.f_statistic == pytest.approx(
        local.head_search_.f_statistic, rel=1e-9
    )
