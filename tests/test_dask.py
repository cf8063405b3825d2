"""Fitting on Dask arrays on a local cluster equals the in-memory fit; the CV
estimators on Dask equal naive refits (ridge by ``lstsq`` on explicitly lifted
features, leave-one-out and K-fold refits, ``cross_val_score`` and
``GridSearchCV`` over the plain estimators)."""

import copy
import logging
import pickle
import re
import warnings

import numpy as np
import pytest
from conftest import (
    fifteen_diabetes_sequences,
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
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    GroupKFold,
    KFold,
    StratifiedKFold,
    cross_val_score,
)

from sklearn_linattn import (  # noqa: E402
    LiftedAttentionFeatures,
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
    lifted = LinearAttentionRegressor(n_heads=None, **params)
    lifted_remote = clone(lifted).fit(X_dask, y_dask)
    lifted.fit(X, y)
    scale = np.linalg.norm(lifted.coef_)
    assert np.linalg.norm(lifted_remote.coef_ - lifted.coef_) < 1e-10 * scale
    np.testing.assert_allclose(lifted_remote.intercept_, lifted.intercept_, atol=1e-10)
    # the heads: the statistics' summation order's rounding travels along the
    # head fit's Levenberg-Marquardt steps (3.8e-10 measured; 1e-8, as
    # test_heads.py's SUMMATION_ORDER)
    local = LinearAttentionRegressor(**params).fit(X, y)
    remote = LinearAttentionRegressor(**params).fit(X_dask, y_dask)
    scale = np.linalg.norm(local.coef_)
    assert np.linalg.norm(remote.coef_ - local.coef_) < 1e-8 * scale
    np.testing.assert_allclose(remote.intercept_, local.intercept_, atol=1e-10)
    # the outputs' effective number, from the statistics' target cross products
    assert remote.head_search_.effective_outputs == pytest.approx(
        local.head_search_.effective_outputs, rel=1e-9
    )
    assert remote.n_heads_ == local.n_heads_ and remote.n_features_in_ == 24

    predictions = remote.predict(X_dask)
    assert isinstance(predictions, da.Array) and predictions.shape == (900, 2)
    expected = local.predict(X)
    np.testing.assert_allclose(
        predictions.compute(), expected, atol=1e-8 * np.abs(expected).max()
    )

    certificate = certify(X_dask)
    exact = certify(X)
    assert certificate.identifiable == exact.identifiable
    assert certificate.rank == exact.rank
    assert certificate.min_eigenvalue == pytest.approx(exact.min_eigenvalue, rel=1e-10)


def test_lifted_features_of_a_dask_array_are_lazy_and_equal_in_memory(client, data):
    X, _ = data
    X_dask = da.from_array(X, chunks=(200, 3, 4))  # tokens chunked too: rechunked
    features = LiftedAttentionFeatures().fit(X_dask).transform(X_dask)
    assert isinstance(features, da.Array) and features.shape == (900, 40)
    np.testing.assert_array_equal(
        features.compute(), LiftedAttentionFeatures().fit_transform(X)
    )
    rows = da.from_array(X.reshape(900, -1), chunks=(250, 10))
    flat = LiftedAttentionFeatures(token_dim=4).fit(rows).transform(rows)
    np.testing.assert_array_equal(flat.compute(), features.compute())
    with_nan = X.copy()
    with_nan[5, 2, 1] = np.nan
    lazy = LiftedAttentionFeatures().fit(X).transform(da.from_array(with_nan))
    with pytest.raises(ValueError, match="NaN"):
        lazy.compute()


def test_dataframe_output_of_dask_features_is_checked_against_memory(
    data, monkeypatch
):
    """set_output(transform="pandas") computes a Dask array's features into a
    DataFrame in memory: the same ValueError as numpy input where they cannot
    fit (it computed them all, however large), and the numpy features where
    they can."""
    import pandas as pd

    from sklearn_linattn import _data

    X, _ = data
    X_dask = da.from_array(X, chunks=(200, 6, 4))
    features = LiftedAttentionFeatures().set_output(transform="pandas").fit(X_dask)
    with dask.config.set(scheduler="sync"):
        frame = features.transform(X_dask)
    assert isinstance(frame, pd.DataFrame)
    np.testing.assert_array_equal(
        frame.to_numpy(), LiftedAttentionFeatures().fit_transform(X)
    )
    assert frame.columns.tolist() == features.get_feature_names_out().tolist()
    monkeypatch.setattr(_data, "available_memory", lambda: 100_000)  # < 900 x 40
    message = "The lifted features of 900 sequences are a 900 x 40 array"
    with pytest.raises(ValueError, match=message):
        features.transform(X)
    computed = []
    watched = X_dask.map_blocks(lambda block: computed.append(block) or block)
    computed.clear()  # (dask's own calls on tiny arrays, inferring the type)
    with dask.config.set(scheduler="sync"):
        with pytest.raises(ValueError, match=message):
            features.transform(watched)
    assert computed == []  # refused before any block is computed
    lazy = LiftedAttentionFeatures().fit(X_dask).transform(X_dask)  # default: lazy
    assert isinstance(lazy, da.Array)


@pytest.mark.parametrize("make", ["positions", "tokenwise"])
def test_tokenwise_preprocessing_refuses_dask_arrays_clearly(data, make):
    from sklearn.preprocessing import StandardScaler

    from sklearn_linattn.preprocessing import PositionalEncoding, TokenwiseTransformer

    X, _ = data
    transformer = (
        PositionalEncoding()
        if make == "positions"
        else TokenwiseTransformer(StandardScaler())
    )
    with pytest.raises(TypeError, match="not a Dask array"):
        transformer.fit(da.from_array(X, chunks=(300, 6, 4)))
    transformer.fit(X)
    with pytest.raises(TypeError, match="not a Dask array"):
        transformer.transform(da.from_array(X, chunks=(300, 6, 4)))


def test_flat_rows_and_partial_fit(client, data):
    X, y = data
    rows = da.from_array(X.reshape(900, -1), chunks=(250, 24))
    flat = LinearAttentionRegressor(token_dim=4).fit(rows, y[:, 0])
    local = LinearAttentionRegressor(token_dim=4).fit(X.reshape(900, -1), y[:, 0])
    # the heads of the same statistics, summed in another order: a minimizer
    # found to the fits' stopping rule, to the loss's rounding, so to sqrt(eps)
    # of their norm as below (2.5e-15 apart with OpenBLAS's SkylakeX and
    # Sandybridge kernels, 1.0e-9 with Nehalem's at 2 threads, which failed the
    # earlier bound 1e-9: helper-118)
    scale = np.linalg.norm(local.coef_)
    distance = np.linalg.norm(flat.coef_ - local.coef_)
    assert distance < np.sqrt(np.finfo(float).eps) * scale
    assert flat.predict(rows).shape == (900,)

    streamed = LinearAttentionRegressor()
    X_dask = da.from_array(X, chunks=(100, 6, 4))
    for start in (0, 300, 600):
        streamed.partial_fit(X_dask[start : start + 300], y[start : start + 300])
    whole = LinearAttentionRegressor().fit(X, y)
    # the same count, its noisy fit stopped at a minimum to the loss's rounding
    # from statistics summed in another order: the heads agree to sqrt(eps) of
    # their norm (4.7e-10 measured)
    assert streamed.n_heads_ == whole.n_heads_
    scale = np.linalg.norm(whole.coef_)
    distance = np.linalg.norm(streamed.coef_ - whole.coef_)
    assert distance < np.sqrt(np.finfo(float).eps) * scale
    streamed.partial_fit(X[:50], y[:50])  # in-memory batches mix with Dask ones
    with pytest.raises(ValueError, match="same shape of targets"):
        streamed.partial_fit(X_dask[:100], y[:100, 0])


def test_a_classifiers_dask_batch_ends_its_kept_rows(client, data):
    """partial_fit keeps a classifier's rows to judge misclassified held-out
    rows as fit does; a Dask batch has none at hand, so from it on the count is
    judged on squared errors, with a warning, not on the later batches' rows
    alone."""
    X, y = data
    labels = (y[:, 0] > np.median(y[:, 0])).astype(int)
    model = LinearAttentionClassifier()
    with pytest.warns(UserWarning, match="no longer keeps the training rows"):
        model.partial_fit(
            da.from_array(X[:300], chunks=(100, 6, 4)), labels[:300], classes=[0, 1]
        )
    with pytest.warns(UserWarning, match="no longer keeps the training rows"):
        model.partial_fit(X[300:], labels[300:])
    assert np.isfinite(model.head_search_.counts[0].training_error)  # squared
    local = LinearAttentionClassifier()
    local.partial_fit(X[:300], labels[:300], classes=[0, 1])
    local.partial_fit(X[300:], labels[300:])
    assert np.isnan(local.head_search_.counts[0].training_error)  # misclassified


def test_bad_dask_input_is_a_clear_error(client, data):
    X, y = data
    X_dask = da.from_array(X, chunks=(300, 6, 4))
    with pytest.raises(ValueError, match="fitted blockwise"):
        LinearAttentionRegressor(solver="dual").fit(X_dask, y)
    with pytest.raises(AttributeError, match="partial_fit") as raised:
        LinearAttentionRegressor(solver="cg").partial_fit(X_dask, y)
    assert "normal equations" in str(raised.value.__cause__)
    with pytest.raises(ValueError, match="token dimension 4"):
        LinearAttentionRegressor(token_dim=3).fit(X_dask, y)
    bad = X.copy()
    bad[5, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LinearAttentionRegressor().fit(da.from_array(bad, chunks=(300, 6, 4)), y)


def test_dask_targets_and_weights_numpy_cannot_convert_are_named(data):
    """Strings in a Dask y or sample_weight failed in each block with numpy's
    "could not convert string to float" alone, as in-memory ones did."""
    X, y = data
    X_dask = da.from_array(X, chunks=(300, 6, 4))
    text = da.from_array(np.full(900, "a"), chunks=300)
    with pytest.raises(ValueError, match=r"y must be an array of shape .*could not"):
        LinearAttentionRegressor().fit(X_dask, text)
    with pytest.raises(
        ValueError, match=r"sample_weight must be an array of shape .*could not"
    ):
        LinearAttentionRegressor().fit(X_dask, y, sample_weight=text)


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
    solver or a zero model; a later partial_fit batch of zero weights adds
    nothing, from Dask as from numpy."""
    X, y = data
    if is_classifier(estimator):
        y = (y[:, 0] > np.median(y[:, 0])).astype(np.float64)
    y, weights = corrupted(case, y, np.ones(len(X)))
    fresh = clone(estimator)
    if method == "partial_fit":  # a later batch: no pass of its own for its scales
        fresh.partial_fit(X, np.ones_like(y))
        if case == "zero weights":
            for batch in (X, da.from_array(X, chunks=(200, 6, 4))):
                added = copy.deepcopy(fresh).partial_fit(batch, y, sample_weight=(
                    weights if batch is X else da.from_array(weights, chunks=250)
                ))
                np.testing.assert_allclose(added.coef_, fresh.coef_, rtol=1e-12)
            return
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


def test_cg_with_dask_weights_submits_each_key_once(client, data):
    """The weights' checked graph is computed once and read from the client
    afterwards: submitted again by the operator's persist, differently
    optimized, its keys made the scheduler warn of colliding keys ("different
    run_spec"), which it says can deadlock."""
    X, y = data
    weights = np.random.default_rng(0).uniform(0.2, 2.0, len(X))
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("distributed.scheduler")
    logger.addHandler(handler)
    try:
        model = LinearAttentionRegressor(solver="cg", n_heads=None).fit(
            da.from_array(X, chunks=(200, 6, 4)),
            da.from_array(y[:, 0], chunks=200),
            sample_weight=da.from_array(weights, chunks=200),
        )
    finally:
        logger.removeHandler(handler)
    assert not [r for r in records if "run_spec" in r.getMessage()]
    local = LinearAttentionRegressor(solver="cg", n_heads=None).fit(
        X, y[:, 0], sample_weight=weights
    )
    np.testing.assert_allclose(model.coef_, local.coef_, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("classify", [False, True])
def test_dask_weights_are_checked_and_computed_once_a_fit(data, monkeypatch, classify):
    import sklearn_linattn._validation as validation

    X, y = data
    checked = []
    check = validation._checked_weight_block

    def counted(weights):
        checked.append(len(weights))
        return check(weights)

    monkeypatch.setattr(validation, "_checked_weight_block", counted)
    weights = np.random.default_rng(1).uniform(0.2, 2.0, len(X))
    estimator = (
        LinearAttentionClassifier(n_heads=None)
        if classify
        else LinearAttentionRegressor(n_heads=None)
    )
    with dask.config.set(scheduler="synchronous"):
        estimator.fit(
            da.from_array(X, chunks=(300, 6, 4)),
            y[:, 0] > 0 if classify else y[:, 0],
            sample_weight=da.from_array(weights, chunks=300),
        )
    assert sorted(checked) == [300, 300, 300]


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
    # A given count: in memory the default count is judged by held-out
    # misclassification, on Dask (no rows at hand) by squared error.
    local = LinearAttentionClassifier(alpha=1e-3, n_heads=2).fit(X, labels)
    remote = LinearAttentionClassifier(alpha=1e-3, n_heads=2).fit(
        X_dask, da.from_array(labels)
    )
    # Heads minimize a loss that rounding resolves to about eps ||r|| ||T||, so
    # two fits from statistics equal to rounding agree to about sqrt(eps) (the
    # residual is of the targets' size here): measured 2.7e-6 of an entry.
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-4, atol=1e-7)
    predicted = remote.predict(X_dask)
    assert isinstance(predicted, da.Array)
    np.testing.assert_array_equal(predicted.compute(), local.predict(X))


@pytest.mark.parametrize(
    "kind, positions",
    [("regressor", "last"), ("regressor", "all"), ("classifier", "last")],
)
def test_dask_outputs_beyond_the_float_range_warn_as_in_memory(kind, positions):
    """Dask predictions beyond float64 were inf without the RuntimeWarning that
    in-memory predict gives (the lazy blocks skipped its check): each block
    computed says so and names the remedy; outputs within the range (near
    1e300) still come without a warning. Blocks of 3 rows and the 6 rows at
    once go through BLAS calls of other sizes, whose kernels may round
    differently: 1 ulp apart with OpenBLAS's Sandybridge kernels (helper-118),
    so the outputs are compared to 1e-13 of the largest, not bit for bit."""
    rng = np.random.default_rng(0)
    X = random_sequences(rng, 60, 4, 2)
    y = random_attention(rng, 2, 2).predict(X, positions=positions)[..., 0]
    if kind == "classifier":
        model = LinearAttentionClassifier(positions=positions).fit(X, y > 0)
        output = model.decision_function
    else:
        model = LinearAttentionRegressor(positions=positions).fit(X, y)
        output = model.predict
    with dask.config.set(scheduler="sync"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            within = output(da.from_array(1e100 * X[:6], chunks=3)).compute()
        expected = output(1e100 * X[:6])
        scale = np.abs(expected).max()
        np.testing.assert_allclose(within, expected, rtol=0, atol=1e-13 * scale)
        with pytest.warns(RuntimeWarning, match="beyond the float64 range") as ours:
            huge = output(da.from_array(1e200 * X[:6], chunks=3)).compute()
    with pytest.warns(RuntimeWarning, match="beyond the float64 range") as memory:
        expected = output(1e200 * X[:6])
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(huge), finite)
    np.testing.assert_array_equal(huge[~finite], expected[~finite])  # same infs
    scale = np.abs(expected[finite]).max(initial=0.0)
    np.testing.assert_allclose(
        huge[finite], expected[finite], rtol=0, atol=1e-13 * scale
    )
    assert np.isinf(huge).any()
    assert {str(w.message).split(",")[0] for w in ours} == {
        str(w.message).split(",")[0] for w in memory
    }
    assert all("Scale X down" in str(w.message) for w in ours)


def test_dask_lifted_features_beyond_the_float_range_warn_as_in_memory():
    """LiftedAttentionFeatures.transform of a Dask array returned inf features
    without the RuntimeWarning the in-memory transform gives: each block
    computed says so and names the remedy; features within the range still
    come without a warning."""
    rng = np.random.default_rng(0)
    X = random_sequences(rng, 6, 4, 2)
    lift = LiftedAttentionFeatures().fit(X)
    with dask.config.set(scheduler="sync"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            within = lift.transform(da.from_array(1e100 * X, chunks=3)).compute()
        np.testing.assert_array_equal(within, lift.transform(1e100 * X))
        with pytest.warns(RuntimeWarning, match="beyond the float64 range") as ours:
            huge = lift.transform(da.from_array(1e200 * X, chunks=3)).compute()
    with pytest.warns(RuntimeWarning, match="beyond the float64 range") as memory:
        np.testing.assert_array_equal(huge, lift.transform(1e200 * X))
    assert np.isinf(huge).any()
    def cause(caught):  # (each block names its own largest entry)
        return {str(w.message).split(", whose")[0] for w in caught}

    assert cause(ours) == cause(memory)
    assert all("Scale X down" in str(w.message) for w in ours)


def test_a_classifiers_count_judged_on_dask_is_said(data):
    """On Dask the default count of a classifier is judged on the squared errors
    of its class scores, not on misclassified held-out rows as in memory, and
    the counts differ (17 of 30 seeded three-class sets in a review): fit says
    so, as partial_fit does; not in memory."""
    X, y = data
    labels = np.where(y[:, 0] > np.median(y[:, 0]), "high", "low")
    X_dask, labels_dask = da.from_array(X, chunks=(300, 6, 4)), da.from_array(labels)
    message = "judged on the held-out squared errors of its class scores"
    with dask.config.set(scheduler="sync"):
        with pytest.warns(UserWarning, match=message) as caught:
            model = LinearAttentionClassifier(alpha=1e-3).fit(X_dask, labels_dask)
        assert caught[0].filename == __file__
        assert model.head_search_.criterion in ("cv", "lifted")
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*" + message)
            LinearAttentionClassifier(alpha=1e-3).fit(X, labels)
            LinearAttentionClassifier(alpha=1e-3, n_heads=2).fit(X, labels)


def test_a_fixed_counts_verdict_judged_on_dask_is_said():
    """A fixed ``n_heads=k`` classifier on Dask has its ``head_search_.passes``
    judged on the squared errors of its class scores, and that verdict can
    differ from the in-memory one (here it passes on Dask and fails in memory,
    with the same predictions): fit says so, as for ``n_heads="auto"``."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1003, 5, 3))
    score = X[:, -1, 0] * X[:, :, 1].sum(axis=1) + 0.1 * rng.normal(size=1003)
    labels = np.array(["cat", "dog", "emu"])[np.digitize(score, [-0.5, 0.5])]
    X_dask = da.from_array(X, chunks=((137, 400, 1, 465), 5, 3))
    labels_dask = da.from_array(labels, chunks=333)
    message = (
        r"verdict on n_heads=2 \(head_search_.passes\) was judged on the held-out "
        "squared errors of its class scores"
    )
    model = LinearAttentionClassifier(alpha=1e-3, n_heads=2)
    with dask.config.set(scheduler="sync"):
        with pytest.warns(UserWarning, match=message) as caught:
            on_dask = clone(model).fit(X_dask, labels_dask)
        assert caught[0].filename == __file__
        predictions = on_dask.predict(X_dask).compute()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*judged on the held-out")
        in_memory = clone(model).fit(X, labels)
    np.testing.assert_array_equal(predictions, in_memory.predict(X))
    assert on_dask.head_search_.loss == "squared"
    assert in_memory.head_search_.loss == "misclassified"
    assert on_dask.head_search_.passes != in_memory.head_search_.passes


def test_a_fixed_counts_verdict_after_a_dask_batch_is_said(data):
    """partial_fit with n_heads=k says that the verdict on k (not a head count:
    k is fixed) is judged on the class scores' squared errors after a Dask
    batch, without advising to set n_heads, which is set."""
    X, y = data
    labels = (y[:, 0] > np.median(y[:, 0])).astype(int)
    model = LinearAttentionClassifier(n_heads=2)
    message = (
        r"no longer keeps the training rows .*: the verdict on n_heads=2 "
        r"\(head_search_.passes\) is judged on the squared errors"
    )
    with dask.config.set(scheduler="sync"):
        with pytest.warns(UserWarning, match=message) as caught:
            model.partial_fit(
                da.from_array(X[:300], chunks=(100, 6, 4)), labels[:300], classes=[0, 1]
            )
    assert "Set n_heads" not in str(caught[0].message)
    assert model.head_search_.loss == "squared"


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
def test_heads_and_held_out_folds_equal_in_memory(client, positions):
    # The head count's held-out folds are by the count of sequences of positive
    # weight (zero weights as good as removed): any chunking of the Dask array
    # gives the in-memory folds, so the same verdicts and heads.
    rng = np.random.default_rng(11)
    truth = random_attention(rng, 4, 2, n_outputs=1)
    X = random_sequences(rng, 400, 6, 4)
    if positions == "all":
        from sklearn_linattn._data import lifted_predict

        y = lifted_predict(X, truth.lifted_coef(), np.zeros(1), "all", True)
        y = y.reshape(400, 6) * (1 + 0.05 * rng.normal(size=(400, 6)))
    else:
        y = truth.predict(X)[:, 0] * (1 + 0.05 * rng.normal(size=400))
    weights = np.where(rng.random(400) < 0.3, 0.0, 1.0 + rng.random(400))
    local = LinearAttentionRegressor(positions=positions).fit(
        X, y, sample_weight=weights
    )
    X_dask = da.from_array(X, chunks=(130, 6, 4))  # folds straddle the blocks
    y_dask = da.from_array(y, chunks=(170,) + y.shape[1:])
    remote = LinearAttentionRegressor(positions=positions).fit(
        X_dask, y_dask, sample_weight=da.from_array(weights, chunks=150)
    )
    assert local.head_search_.criterion == remote.head_search_.criterion == "cv"
    assert remote.n_heads_ == local.n_heads_
    for name in ("coef_", "value_matrices_", "query_matrices_"):
        a, b = getattr(local, name), getattr(remote, name)
        assert np.linalg.norm(a - b) <= 1e-9 * np.linalg.norm(a), name
    assert remote.head_search_.counts_tried == local.head_search_.counts_tried
    for ours, theirs in zip(
        remote.head_search_.counts, local.head_search_.counts, strict=True
    ):
        assert ours.passes == theirs.passes
        for error in ("cv_error", "training_error"):
            a, b = getattr(ours, error), getattr(theirs, error)
            assert np.isnan(a) == np.isnan(b), error
            if not np.isnan(a):
                assert a == pytest.approx(b, rel=1e-9), error
    assert remote.head_search_.cv_error == pytest.approx(
        local.head_search_.cv_error, rel=1e-9
    )


def test_dask_fits_the_same_counts_beyond_the_interpolating_count(client):
    """Fifteen diabetes samples as 5 tokens of 2 features with positions (d = 8,
    p = 288): in memory ``fit`` fits the heads beyond the interpolating count on
    the rows, Dask on a factor of their Gram; counting that work as ``fit`` in
    memory spends it, Dask fits the same counts (6, 5, 4) and returns the same
    heads (in flops it fitted none and returned the lifted fit's 7)."""
    X, y = fifteen_diabetes_sequences()
    params = dict(alpha=1e-6, fit_intercept=False)
    local = LinearAttentionRegressor(**params).fit(X, y)
    remote = LinearAttentionRegressor(**params).fit(
        da.from_array(X, chunks=(8, 5, 8)), da.from_array(y, chunks=8)
    )
    assert remote.head_search_.counts_tried == local.head_search_.counts_tried
    assert remote.n_heads_ == local.n_heads_ < 7
    assert remote.head_search_.criterion == local.head_search_.criterion == "tol"


def test_a_block_of_zero_weights_fits_as_in_memory(client):
    """Every sample weight of one Dask block zero (a day of rows masked out):
    each block's weights were checked as a whole, and the block raised
    "Sample weights must contain at least one non-zero number"; the weights
    as a whole need a positive one, not each block."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8, 3))
    y = X[:, -1, 0] * X[:, :, 1].mean(1) + 0.1 * rng.normal(size=300)
    weights = np.ones(300)
    weights[100:150] = 0.0
    local = LinearAttentionRegressor().fit(X, y, sample_weight=weights)
    chunks = (100, 50, 150)
    remote = LinearAttentionRegressor().fit(
        da.from_array(X, chunks=(chunks, 8, 3)),
        da.from_array(y, chunks=(chunks,)),
        sample_weight=da.from_array(weights, chunks=(chunks,)),
    )
    assert remote.head_search_.counts_tried == local.head_search_.counts_tried
    assert np.linalg.norm(remote.coef_ - local.coef_) <= 1e-9 * np.linalg.norm(
        local.coef_
    )


# --- the dual solver needs the data in memory -----------------------------------------


def test_dual_solver_on_dask_is_refused_and_auto_avoids_it():
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


# --- the CV estimators on Dask against naive refits -----------------------------------

ALPHAS = (1e-3, 1e-1, 10.0)


@pytest.fixture(scope="module")
def weighted_problem():
    rng = np.random.default_rng(0)
    d, T, n = 2, 5, 48
    X = random_sequences(rng, n, T, d)
    y = random_attention(rng, d, 1, 2).predict(X) + 0.1 * rng.normal(size=(n, 2))
    weights = rng.uniform(0.5, 2.0, n)
    weights[[3, 17, 40]] = 0.0
    return X, y, weights


def naive_cv_predictions(F, y, w, alpha, intercept, splits):
    """Held-out predictions of explicit ridge refits, row order of the data."""
    out = np.empty_like(y)
    for train, test in splits:
        coef, offset, _, _ = naive_weighted_solution(
            F[train], y[train], w[train], alpha, intercept
        )
        out[test] = F[test] @ coef.T + offset
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


@pytest.mark.parametrize(
    "chunks, cv, intercept",
    [
        (UNEVEN, None, True),
        ((1,) * 48, None, False),  # one-sample chunks
        (UNEVEN, 5, False),  # fold edges (10, 20, ...) not on chunk edges
        (UNEVEN, KFold(4, shuffle=True, random_state=1), True),
    ],
)
def test_dask_cv_equals_naive_refits(client, weighted_problem, chunks, cv, intercept):
    X, y, w = weighted_problem
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
    coef, offset, _, _ = naive_weighted_solution(F, y, w, remote.alpha_, intercept)
    np.testing.assert_allclose(remote.coef_, coef, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(remote.intercept_, offset, atol=1e-9)


def test_dask_group_kfold_equals_cross_val_score(client, weighted_problem):
    X, y, _ = weighted_problem
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


def test_dask_cv_stored_results_and_custom_scoring_equal_naive_refits(
    client, weighted_problem
):
    X, y, w = weighted_problem
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
def test_dask_classifier_cv_with_string_labels_equals_in_memory(
    client, weighted_problem, cv
):
    X, y, _ = weighted_problem
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


def test_dask_cv_every_position_with_padding_equals_in_memory(client):
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


def test_dask_cv_on_float32_read_only_flat_input_equals_in_memory(
    client, weighted_problem
):
    X, y, w = weighted_problem
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
def test_dask_cv_does_not_depend_on_n_jobs_or_batch_size(
    client, weighted_problem, kwargs
):
    X, y, _ = weighted_problem
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    for cv in (None, 3):
        assert_same_cv(
            LinearAttentionRegressorCV(n_heads=None, alphas=ALPHAS, cv=cv).fit(X, y),
            LinearAttentionRegressorCV(
                n_heads=None, alphas=ALPHAS, cv=cv, **kwargs
            ).fit(X_dask, y),
        )


def test_dask_fitted_cv_pickles_without_dask(client, weighted_problem):
    X, y, _ = weighted_problem
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


def test_dask_cv_with_dual_gcv_mode_is_a_clear_error(client, weighted_problem):
    X, y, _ = weighted_problem
    with pytest.raises(ValueError, match="gcv_mode='dual'.*in memory"):
        LinearAttentionRegressorCV(n_heads=None, gcv_mode="dual").fit(
            da.from_array(X, chunks=10), y
        )


def test_dask_cv_with_fewer_rows_than_lifted_features_equals_naive_refits(client):
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


@pytest.mark.parametrize("scale", [2.0**-166, 1e-8, 1e8, 2.0**166])
def test_dask_cv_invariant_under_token_scale(client, weighted_problem, scale):
    """Tokens times s, targets times s^3, alphas times s^6: same choice, scores
    times s^6, coefficients unchanged (s^6 within range for these s)."""
    X, y, w = weighted_problem
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
def test_cv_with_one_large_sequence_equals_naive_refits_on_dask_and_in_memory(
    client, weighted_problem, where
):
    """One sequence 1e7 times the others (|x| >= 2^20: the statistics abort and
    rescan), in the first or last chunk. Leave-one-out on Dask equals in memory
    (that row's leverage is within 1e-9 of one, so every alpha scores -inf by the
    documented rule); K-fold with training sets that are not the complements of
    their test sets (statistics of each training set, no subtraction) equals
    naive refits, in memory and on Dask."""
    X, y, w = weighted_problem
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


@pytest.mark.parametrize("factor", [1e2, 1e7])
@pytest.mark.parametrize("dask_input", [False, True])
def test_kfold_with_one_large_sequence_equals_refits(
    client, weighted_problem, factor, dask_input
):
    X, y, w = weighted_problem
    X = _one_large(X, factor, "last")
    alphas = np.array(ALPHAS) * 1e-6
    F = naive_lifted_features(X)
    expected = naive_scores(F, y, w, alphas, False, list(KFold(4).split(X)), False)
    data = da.from_array(X, chunks=(UNEVEN, 5, 2)) if dask_input else X
    model = LinearAttentionRegressorCV(n_heads=None, alphas=alphas, cv=4).fit(
        data, y, sample_weight=w
    )
    np.testing.assert_allclose(model.cv_scores_, expected, rtol=1e-7)


# --- Dask targets, weights and groups, empty chunks -----------------------------------


@pytest.mark.parametrize("dask_argument", ["sample_weight", "y"])
@pytest.mark.parametrize(
    "estimator", [LinearAttentionRegressor, LinearAttentionRegressorCV]
)
def test_numpy_X_with_dask_sample_weight_or_y_equals_numpy_fit(
    client, weighted_problem, estimator, dask_argument
):
    X, y, w = weighted_problem
    reference = estimator(n_heads=None).fit(X, y, sample_weight=w)
    if dask_argument == "y":
        y = da.from_array(y, chunks=(13, 2))
    else:
        w = da.from_array(w, chunks=13)
    model = estimator(n_heads=None).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-10)


def test_dask_cv_stored_results_with_dask_sample_weight_equal_in_memory(
    client, weighted_problem
):
    X, y, w = weighted_problem
    X_dask = da.from_array(X, chunks=(UNEVEN, 5, 2))
    params = dict(alphas=ALPHAS, store_cv_results=True)
    local = LinearAttentionRegressorCV(n_heads=None, **params).fit(
        X, y, sample_weight=w
    )
    remote = LinearAttentionRegressorCV(n_heads=None, **params).fit(
        X_dask, y, sample_weight=da.from_array(w, chunks=13)
    )
    assert_same_cv(local, remote)


def test_dask_cv_with_dask_targets_and_groups_equals_in_memory(
    client, weighted_problem
):
    X, y, w = weighted_problem
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


def test_dask_cv_scores_with_dask_sample_weight_equal_in_memory(
    client, weighted_problem
):
    X, y, w = weighted_problem
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
def test_dask_cv_with_an_empty_chunk_equals_in_memory(client, weighted_problem, cv):
    X, y, _ = weighted_problem
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
def test_dask_classifier_cv_invariant_under_token_scale(client, weighted_problem, cv):
    """Labels do not scale: tokens times 2^-40 with alphas times 2^-240 choose
    the same alpha with the same scores (+-1 targets, features times 2^-120)."""
    X, y, _ = weighted_problem
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


# --- a user's scaling-out pass: chunkings, dtypes, filtering, passes over X -------


@pytest.fixture(scope="module")
def small_problem():
    rng = np.random.default_rng(53)
    truth = random_attention(rng, 3, 2, n_outputs=2)
    X = random_sequences(rng, 240, 5, 3)
    y = truth.predict(X) + 0.01 * rng.normal(size=(240, 2))
    return X, y, rng.uniform(0.5, 2.0, size=240)


def summation_bound(local, n_rows):
    """How far a fit whose statistics are summed in another order may move.

    Each Gram entry is a sum of ``n_rows`` products; any order of summation is
    within ``n_rows * eps`` of the exact sum relative to the sum of magnitudes
    (Higham's gamma_n), so the Gram moves by at most ``n_rows * eps * ||G||``;
    to first order the solution then moves relatively by ``cond(G)`` times that,
    and so does every eigenvalue relative to the smallest (Weyl)."""
    certificate = local.certificate_
    condition = certificate.max_eigenvalue / certificate.min_eigenvalue
    return condition * n_rows * np.finfo(np.float64).eps


def assert_fit_agrees(remote, local, X_remote, X_local, n_rows):
    bound = summation_bound(local, n_rows)
    assert bound < 1e-8  # a well-posed problem: the comparison means something
    scale = np.max(np.abs(local.coef_))
    assert np.max(np.abs(remote.coef_ - local.coef_)) <= bound * scale
    predictions = remote.predict(X_remote)
    assert is_dask_array_like(predictions)
    expected = local.predict(X_local)
    np.testing.assert_allclose(
        predictions.compute(), expected, rtol=0, atol=bound * np.max(np.abs(expected))
    )
    mine, theirs = remote.certificate_, local.certificate_
    assert (mine.rank, mine.identifiable) == (theirs.rank, theirs.identifiable)
    assert abs(mine.min_eigenvalue - theirs.min_eigenvalue) <= (
        bound * theirs.min_eigenvalue
    )


def is_dask_array_like(array):
    return isinstance(array, da.Array)


CHUNKINGS = {
    "samples": (50, 5, 3),
    "splits tokens and features": (70, 2, 2),
    "one chunk": (240, 5, 3),
    "one sequence a chunk": (1, 5, 3),
}


@pytest.mark.parametrize("chunks", list(CHUNKINGS.values()), ids=list(CHUNKINGS))
@pytest.mark.parametrize(
    "params",
    [
        dict(),
        dict(fit_intercept=True, solver="normal"),
        dict(positions="all"),
        dict(solver="cg", fit_intercept=True),
    ],
    ids=["plain", "intercept", "all", "cg"],
)
def test_dask_fit_agrees_with_numpy_within_a_summation_bound(
    small_problem, chunks, params
):
    X, y, weights = small_problem
    if params.get("positions") == "all":
        y = np.cumsum(X[:, :, :2], axis=1)  # a target per position
    params = dict(n_heads=None, **params)
    local = LinearAttentionRegressor(**params).fit(X, y, sample_weight=weights)
    X_dask = da.from_array(X, chunks=chunks)
    with dask.config.set(scheduler="sync"):
        remote = LinearAttentionRegressor(**params).fit(
            X_dask,
            da.from_array(y, chunks=37),  # chunked unlike X
            sample_weight=da.from_array(weights, chunks=61),
        )
        assert_fit_agrees(remote, local, X_dask, X, y.size // y.shape[-1])


def test_float32_and_flat_dask_rows_agree_with_numpy(small_problem):
    X, y, _ = small_problem
    rows = X.astype(np.float32).reshape(len(X), -1)
    local = LinearAttentionRegressor(n_heads=None, token_dim=3).fit(rows, y)
    rows_dask = da.from_array(rows, chunks=(45, 4))  # splits the tokens
    with dask.config.set(scheduler="sync"):
        remote = LinearAttentionRegressor(n_heads=None, token_dim=3).fit(
            rows_dask, da.from_array(y, chunks=(100, 1))
        )
        assert_fit_agrees(remote, local, rows_dask, rows, len(X))
        assert remote.certificate_.tol == local.certificate_.tol
        assert certify(rows_dask, token_dim=3).rank == certify(rows, token_dim=3).rank


def test_filtered_dask_arrays_with_empty_chunks_fit_as_in_memory(small_problem):
    """``X[mask].compute_chunk_sizes()`` leaves chunks of 0 samples where a block
    had no selected one, in y and the weights as well; Dask's reduction over 2-D
    targets failed on them with a bare concatenate error."""
    X, y, weights = small_problem
    keep = np.zeros(len(X), dtype=bool)
    keep[:60] = keep[150:200] = True  # chunks 3, 4 and 8 emptied
    mask = da.from_array(keep, chunks=30)

    def filtered(array):
        chunks = (30,) + array.shape[1:]
        return da.from_array(array, chunks=chunks)[mask].compute_chunk_sizes()

    X_dask, y_dask, w_dask = filtered(X), filtered(y), filtered(weights)
    assert 0 in X_dask.chunks[0] and 0 in y_dask.chunks[0] and 0 in w_dask.chunks[0]
    with dask.config.set(scheduler="sync"):
        for solver in ("normal", "cg"):
            local = LinearAttentionRegressor(n_heads=None, solver=solver).fit(
                X[keep], y[keep], sample_weight=weights[keep]
            )
            remote = LinearAttentionRegressor(n_heads=None, solver=solver).fit(
                X_dask, y_dask, sample_weight=w_dask
            )
            assert_fit_agrees(remote, local, X_dask, X[keep], int(keep.sum()))
        assert remote.score(X_dask, y_dask) == pytest.approx(
            local.score(X[keep], y[keep]), rel=1e-12
        )
        labels = np.where(y[:, 0] > 0, "up", "down")
        classifier = LinearAttentionClassifier(n_heads=None).fit(
            X_dask, filtered(labels)
        )
        expected = LinearAttentionClassifier(n_heads=None).fit(X[keep], labels[keep])
        np.testing.assert_array_equal(
            classifier.predict(X_dask).compute(), expected.predict(X[keep])
        )


@pytest.mark.parametrize("dtype", [bool, np.int64, np.uint8])
def test_boolean_and_integer_dask_sequences_fit_as_in_memory(dtype):
    """Bool tokens are accepted (as in numpy); the largest magnitude of a Dask
    array of them was ``max(max, -min)``, and bool has no negative."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, 3, size=(200, 4, 2)).astype(dtype)
    y = rng.normal(size=200)
    local = LinearAttentionRegressor(n_heads=None).fit(X, y)
    X_dask = da.from_array(X, chunks=(60, 4, 2))
    with dask.config.set(scheduler="sync"):
        remote = LinearAttentionRegressor(n_heads=None).fit(
            X_dask, da.from_array(y, chunks=60)
        )
        assert_fit_agrees(remote, local, X_dask, X, len(X))
        assert certify(X_dask).rank == certify(X).rank


def block_reads():
    """``(reads, read)``: ``X.map_blocks(read)`` appends to ``reads`` the index
    of each block of ``X`` as it is read."""
    reads = []

    def read(block, block_info=None):
        if block_info is not None:  # not Dask's probe of the output's type
            reads.append(block_info[0]["chunk-location"][0])
        return block

    return reads, read


@pytest.mark.parametrize("positions", ["last", "all"])
def test_a_dask_fit_reads_each_block_of_X_twice(small_problem, positions):
    """One pass for the scales (largest magnitudes; with positions="all" the
    padding mask in the same pass) and one for the statistics: with
    positions="all" the padding mask was a third pass over X."""
    X, y, _ = small_problem
    if positions == "all":
        y = np.cumsum(X[:, :, :2], axis=1)
    reads, read = block_reads()
    X_dask = da.from_array(X, chunks=(60, 5, 3)).map_blocks(read, dtype=X.dtype)
    with dask.config.set(scheduler="sync"):
        model = LinearAttentionRegressor(n_heads=None, positions=positions)
        model.fit(X_dask, da.from_array(y, chunks=50))
        assert sorted(reads) == sorted(2 * list(range(4)))
        reads.clear()
        certify(X_dask)
        assert sorted(reads) == sorted(2 * list(range(4)))
        reads.clear()
        model.predict(X_dask).compute()
        assert sorted(reads) == list(range(4))


@pytest.mark.parametrize("n_heads", [None, "auto"])
def test_a_later_dask_batch_of_every_position_reads_x_as_documented(
    small_problem, n_heads
):
    """partial_fit's later batches take the first batch's scales: with
    positions="all" and n_heads=None the padding mask is read in the
    statistics' pass (it was a pass over X of its own before). With the held-out
    folds of the head read-out (n_heads="auto") it takes a pass of its own: a
    sequence's fold depends on the sequences of positive weight before it in
    the whole batch, runs of consecutive sequences after the 40th. Either way the
    fit equals the in-memory one."""
    X, _, _ = small_problem
    X = X.copy()
    X[::3, :2] = 0.0  # left padding
    y = np.cumsum(X[:, :, :2], axis=1)
    reads, read = block_reads()
    local = LinearAttentionRegressor(n_heads=n_heads, positions="all")
    remote = LinearAttentionRegressor(n_heads=n_heads, positions="all")
    with dask.config.set(scheduler="sync"):
        for batch in (slice(0, 110), slice(110, None)):
            X_dask = da.from_array(X[batch], chunks=(37, 5, 3)).map_blocks(
                read, dtype=X.dtype
            )
            reads.clear()
            remote.partial_fit(X_dask, da.from_array(y[batch], chunks=37))
            local.partial_fit(X[batch], y[batch])
        passes = 1 if n_heads is None else 2
        assert sorted(reads) == sorted(passes * list(range(len(X_dask.chunks[0]))))
        assert_fit_agrees(
            remote, local, da.from_array(X, chunks=60), X, X.shape[0] * X.shape[1]
        )


@pytest.mark.filterwarnings("ignore:The fit has no intercept")
@pytest.mark.parametrize("positions", ["last", "all"])
def test_a_dask_fit_with_an_intercept_reads_y_as_often_as_without(
    small_problem, positions
):
    """The targets' centered energy (targets far from zero) is taken from the
    rows only in memory: on Dask it is read from the statistics. Asking the
    Dask source for its rows' targets computed all of y on the client, a third
    pass over y with fit_intercept=True (and a client copy of n_rows values
    per output)."""
    X, y, _ = small_problem
    y = np.cumsum(X[:, :, 0], axis=1) + 5.0
    if positions == "last":
        y = y[:, -1]
    reads, read = block_reads()
    X_dask = da.from_array(X, chunks=(60, 5, 3))
    counts = []
    for fit_intercept in (False, True):
        reads.clear()
        y_dask = da.from_array(y, chunks=60).map_blocks(read, dtype=y.dtype)
        model = LinearAttentionRegressor(
            n_heads=2, positions=positions, fit_intercept=fit_intercept
        )
        with dask.config.set(scheduler="sync"):
            model.fit(X_dask, y_dask)
        counts.append(sorted(reads))
    assert counts[0] == counts[1] == sorted(2 * list(range(4)))


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionClassifier]
)
def test_a_dask_score_reads_each_block_once_and_equals_in_memory(
    small_problem, Estimator
):
    """scikit-learn's metrics looked at lazy predictions two or three times,
    each running the graph over X again; the score predicts once."""
    X, y, _ = small_problem
    if Estimator is LinearAttentionClassifier:
        y = (y[:, 0] > np.median(y[:, 0])).astype(int)
    reads = []

    def read(block, block_info=None):
        if block_info is not None:
            reads.append(block_info[0]["chunk-location"][0])
        return block

    model = Estimator(n_heads=None).fit(X, y)
    X_dask = da.from_array(X, chunks=(60, 5, 3)).map_blocks(read, dtype=X.dtype)
    weights = np.linspace(0.5, 2.0, len(X))
    with dask.config.set(scheduler="sync"):
        score = model.score(X_dask, da.from_array(y, chunks=50), weights)
    assert sorted(reads) == list(range(4))
    assert score == pytest.approx(model.score(X, y, weights), rel=1e-12)


def test_unknown_chunk_sizes_on_any_axis_are_named(small_problem):
    """Boolean indexing leaves NaN chunk sizes; along the samples of X this was
    named, along its tokens, or in y or the weights, the later checks named NaN
    sizes ("X has nan columns", "y has nan")."""
    X, y, _ = small_problem
    X_dask, y_dask = da.from_array(X, chunks=60), da.from_array(y[:, 0], chunks=60)
    weights = da.from_array(np.ones(len(X)), chunks=60)
    keep_token = da.from_array(np.array([True] * (X.shape[1] - 1) + [False]))
    keep_column = da.from_array(np.arange(X.shape[1] * X.shape[2]) >= X.shape[2])
    keep_all = da.from_array(np.ones(len(X), dtype=bool), chunks=60)
    model = LinearAttentionRegressor(n_heads=None)
    cases = [
        ("X", lambda: model.fit(X_dask[:, keep_token], y_dask)),
        ("X", lambda: model.fit(X_dask.reshape(len(X), -1)[:, keep_column], y_dask)),
        ("y", lambda: model.fit(X_dask, y_dask[keep_all])),
        ("sample_weight", lambda: model.fit(X_dask, y_dask, weights[keep_all])),
    ]
    for name, call in cases:
        with pytest.raises(ValueError, match=f"{name} is a Dask array with unknown"):
            call()


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionClassifier]
)
def test_a_dask_score_of_every_position_reads_X_once_and_equals_in_memory(
    small_problem, Estimator, monkeypatch
):
    """With positions="all" the score computed X on the client (all of it, in
    memory) before predicting; it predicts and masks the padding blockwise, in
    one pass, weights per sequence as in memory."""
    computed = []
    compute = da.Array.compute

    def recorded(array, **kwargs):
        computed.append(array.shape)
        return compute(array, **kwargs)

    monkeypatch.setattr(da.Array, "compute", recorded)
    X, _, _ = small_problem
    X = X.copy()
    X[:7, :2] = 0  # left padding, not scored
    y = np.cumsum(X[:, :, :2], axis=1)
    if Estimator is LinearAttentionClassifier:
        y = (y[:, :, 0] > 0).astype(int)
    reads = []

    def read(block, block_info=None):
        if block_info is not None:
            reads.append(block_info[0]["chunk-location"][0])
        return block

    model = Estimator(n_heads=None, positions="all").fit(X, y)
    X_dask = da.from_array(X, chunks=(60, 5, 3)).map_blocks(read, dtype=X.dtype)
    weights = np.linspace(0.5, 2.0, len(X))
    with dask.config.set(scheduler="sync"):
        score = model.score(X_dask, da.from_array(y, chunks=50), weights)
    assert sorted(reads) == list(range(4))
    assert X.shape not in computed  # only the targets and the predictions
    kept = np.any(X != 0, axis=2).cumsum(axis=1) > 0
    rows = np.broadcast_to(weights[:, None], kept.shape)[kept]
    truth, predicted = y[kept], model.predict(X)[kept]
    if Estimator is LinearAttentionClassifier:
        expected = np.average(truth == predicted, weights=rows)
    else:
        errors = np.average((truth - predicted) ** 2, weights=rows, axis=0)
        spread = np.average((truth - np.average(truth, weights=rows, axis=0)) ** 2,
                            weights=rows, axis=0)
        expected = np.mean(1 - errors / spread)
    assert score == pytest.approx(expected, rel=1e-12)
    assert score == pytest.approx(model.score(X, y, weights), rel=1e-12)


def test_one_sequence_as_a_2d_dask_array_is_refused_with_the_shape_to_pass():
    """A Dask array follows numpy's rules and messages: one sequence of shape
    (n_tokens, d) is refused with the shape to pass, ``Z[None]``."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5, 3))
    model = LinearAttentionRegressor().fit(X, rng.normal(size=40))
    with pytest.raises(ValueError, match=r"X has 3 features.*Z\[None\]"):
        model.predict(da.from_array(X[0]))
