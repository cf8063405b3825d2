"""LinearAttentionClassifier and LiftedAttentionFeatures."""

import pickle
import warnings

import numpy as np
import pytest
from conftest import (
    assert_within_lifted_rounding,
    n_lifted,
    naive_least_squares,
    naive_lifted_features,
    naive_position_features,
    naive_weighted_solution,
    random_attention,
    random_sequences,
    relative_error,
)
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline

from sklearn_linattn import (
    LiftedAttentionFeatures,
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
)


def labelled_data(rng, n_classes, n_samples=300, d=3):
    """Labels from the argmax of a generating MHLA with one output per class."""
    truth = random_attention(rng, d, n_heads=2, n_outputs=n_classes)
    X = random_sequences(rng, n_samples, 6, d)
    return X, np.argmax(truth.predict(X), axis=1), truth


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("n_heads", [None, 2])
def test_classifier_is_regression_on_signed_one_hot_targets(rng, n_classes, n_heads):
    """The lifted fit, and the fit of a given count, are those of the regressor on
    +1/-1 targets (the default count differs: the classifier's is judged by
    held-out misclassification, the regressor's by squared error; and where the
    columns' scales differ, with unequal classes, the regressor weighs its
    outputs alike, head_search_.output_weights, while a classifier's +1/-1
    outputs are not weighted; the paper's read-out of either predicts as the
    lifted fit does)."""
    X, labels, _ = labelled_data(rng, n_classes)
    names = np.array(["ant", "bee", "cat", "dog", "eel"])[:n_classes]
    y = names[labels]
    params = dict(alpha=1e-3, fit_intercept=True, n_heads=n_heads)
    clf = LinearAttentionClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(clf.classes_, np.sort(names))

    # Independent reference: +1/-1 targets built by hand, fitted by the regressor.
    order = np.searchsorted(np.sort(names), y)
    targets = -np.ones((len(y), n_classes))
    targets[np.arange(len(y)), order] = 1.0
    if n_classes == 2:
        targets = targets[:, 1]
    reg = LinearAttentionRegressor(**params).fit(X, targets)
    scores = clf.decision_function(X)
    assert clf.head_search_.output_weights is None
    if reg.head_search_.output_weights is None or n_heads is None:
        # (the paper's read-out, weighted or not, predicts as the lifted fit)
        np.testing.assert_allclose(scores, reg.predict(X), rtol=1e-8, atol=1e-8)
    else:  # 5 classes: the regressor weighs its columns alike
        assert n_classes == 5
    expected = np.where(scores > 0, 1, 0) if n_classes == 2 else scores.argmax(axis=1)
    np.testing.assert_array_equal(clf.predict(X), np.sort(names)[expected])
    assert clf.coef_.shape == (1 if n_classes == 2 else n_classes, n_lifted(3))
    assert clf.value_matrices_.shape[1] == (1 if n_classes == 2 else n_classes)


def left_padded_position_labels(rng, n_samples=10, n_tokens=20, n_padding=8):
    """Sequences whose first ``n_padding`` tokens are left padding, one label per
    position: 20 real positions of class 0 and 100 of class 1, the padding
    positions labelled 0 (they are ignored)."""
    X = rng.normal(size=(n_samples, n_tokens, 2))
    X[:, :n_padding] = 0.0
    y = np.ones((n_samples, n_tokens), dtype=int)
    y[:, :n_padding] = 0
    y[0, n_padding:] = 0
    y[1, n_padding : n_padding + 8] = 0
    return X, y


def test_missing_labels_at_padding_positions_are_ignored(rng):
    """Labels at left-padding positions are documented as ignored: None or NaN
    there fits as any label does; a missing label at a real position is still
    an error."""
    X, y = left_padded_position_labels(rng)
    names = np.where(y == 1, "b", "a").astype(object)
    expected = LinearAttentionClassifier(positions="all", n_heads=None).fit(X, names)
    names[:, :8] = None
    fitted = LinearAttentionClassifier(positions="all", n_heads=None).fit(X, names)
    np.testing.assert_array_equal(fitted.coef_, expected.coef_)
    names[0, 8] = None
    with pytest.raises(ValueError, match="y contains NaN"):
        LinearAttentionClassifier(positions="all", n_heads=None).fit(X, names)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_balanced_class_weight_per_position_counts_real_positions_only(
    rng, causal, weighted
):
    X, y = left_padded_position_labels(rng)
    real = (np.cumsum(np.any(X != 0, axis=2), axis=1) > 0).ravel()
    labels = y.ravel()
    assert np.bincount(labels[real]).tolist() == [20, 100]
    # "balanced": n_real / (n_classes * count) over the 120 real positions.
    balanced = {0: 120 / (2 * 20), 1: 120 / (2 * 100)}  # {0: 3.0, 1: 0.6}
    sample_weight = rng.uniform(0.5, 2.0, size=len(X)) if weighted else None
    row_weights = np.where(real, [balanced[label] for label in labels], 0.0)
    if weighted:
        row_weights = row_weights * np.repeat(sample_weight, y.shape[1])
    features = naive_position_features(X, causal)
    targets = np.where(labels == 1, 1.0, -1.0)[:, None]
    expected, _, _, _ = naive_weighted_solution(
        features, targets, row_weights, 0.1, False
    )
    kwargs = dict(positions="all", causal=causal, class_weight="balanced")
    clf = LinearAttentionClassifier(alpha=0.1, n_heads=None, **kwargs)
    clf.fit(X, y, sample_weight=sample_weight)
    np.testing.assert_allclose(clf.coef_, expected, rtol=1e-7, atol=1e-12)
    # The cross-validated classifier's final model weighs the classes alike.
    cv = LinearAttentionClassifierCV([0.1], cv=KFold(2), n_heads=None, **kwargs)
    cv.fit(X, y, sample_weight=sample_weight)
    np.testing.assert_allclose(cv.coef_, expected, rtol=1e-7, atol=1e-12)


def test_classifier_learns_an_attention_labelling(rng):
    X, labels, _ = labelled_data(rng, 3, n_samples=600)
    clf = LinearAttentionClassifier().fit(X[:400], labels[:400])
    assert clf.score(X[400:], labels[400:]) > 0.8
    assert clf.certificate_.identifiable
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict(X), clf.predict(X))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classes_without_weighted_rows_are_never_predicted(rng, n_classes):
    """A class declared to partial_fit but absent from its batches, or whose rows
    all weigh zero, has no evidence: its score (a fit to -1 targets, which the
    cubic model without an intercept does not reproduce) won on 8.5% of the
    training rows in a review's case. It is never predicted; once a batch holds
    it, it can be."""
    X, labels, _ = labelled_data(rng, n_classes + 1, n_samples=400)
    absent = labels == n_classes  # the last class
    classes = np.arange(n_classes + 1)
    model = LinearAttentionClassifier(n_heads=None, alpha=0.1)
    model.partial_fit(X[~absent], labels[~absent], classes=classes)
    scores = model.decision_function(X)
    assert np.any(scores.argmax(axis=1) == n_classes)  # the case exercised
    predicted = model.predict(X)
    assert n_classes not in predicted
    kept = np.delete(scores, n_classes, axis=1).argmax(axis=1)
    np.testing.assert_array_equal(predicted, classes[kept])
    model.partial_fit(X[absent], labels[absent])
    assert n_classes in model.predict(X)
    weighted = LinearAttentionClassifier(n_heads=None, alpha=0.1).fit(
        X, labels, sample_weight=np.where(absent, 0.0, 1.0)
    )
    assert n_classes not in weighted.predict(X)
    assert list(weighted.classes_) == list(classes)


def test_a_binary_classifier_with_one_class_seen_predicts_it(rng):
    X, labels, _ = labelled_data(rng, 2, n_samples=200)
    model = LinearAttentionClassifier(n_heads=None, alpha=0.1)
    model.partial_fit(X[labels == 1], labels[labels == 1], classes=[0, 1])
    assert np.all(model.predict(X) == 1)


def test_classifier_rejects_bad_targets(rng):
    X = random_sequences(rng, 10, 4, 2)
    with pytest.raises(ValueError, match="at least two classes"):
        LinearAttentionClassifier().fit(X, np.zeros(10))
    with pytest.raises(ValueError, match="Unknown label type"):
        LinearAttentionClassifier().fit(X, np.linspace(0, 1, 10))
    with pytest.raises(ValueError, match="requires y"):
        LinearAttentionClassifier().fit(X, None)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_classifier_many_classes_dual_matches_naive(fit_intercept):
    rng = np.random.default_rng(8)
    d, n, k = 4, 30, 12
    X = random_sequences(rng, n, 6, d)
    labels = np.array(list("abcdefghijkl"))[np.arange(n) % k]
    model = LinearAttentionClassifier(
        token_dim=d, fit_intercept=fit_intercept, n_heads=None
    ).fit(
        X, labels
    )
    assert model.solver_ == "dual"
    assert list(model.classes_) == sorted(set(labels))
    targets = np.where(labels[:, None] == model.classes_[None, :], 1.0, -1.0)
    coef, mean, target_mean, _ = naive_least_squares(
        naive_lifted_features(X), targets, intercept=fit_intercept
    )
    X_test = random_sequences(rng, 6, 6, d)
    expected = (naive_lifted_features(X_test) - mean) @ coef + target_mean
    assert relative_error(model.decision_function(X_test), expected) < 1e-8
    np.testing.assert_array_equal(model.predict(X), labels)  # interpolates


@pytest.mark.parametrize("token_dim", [1, 3, 4])
def test_features_match_the_definition(rng, token_dim):
    X = random_sequences(rng, 20, 5, token_dim)
    features = LiftedAttentionFeatures().fit(X)
    expected, magnitude = naive_lifted_features(X), naive_lifted_features(np.abs(X))
    assert_within_lifted_rounding(features.transform(X), expected, magnitude, 5)
    flat = LiftedAttentionFeatures(token_dim=token_dim).fit(X.reshape(20, -1))
    assert_within_lifted_rounding(
        flat.transform(X.reshape(20, -1)), expected, magnitude, 5
    )
    assert features.get_feature_names_out().shape == (n_lifted(token_dim),)


def test_feature_names_describe_the_columns(rng):
    X = random_sequences(rng, 8, 4, 3)
    features = LiftedAttentionFeatures().fit(X)
    values = features.transform(X)
    S = np.einsum("nti,ntj->nij", X, X)
    q = X[:, -1]
    for column, name in enumerate(features.get_feature_names_out()):
        b, c, e = (
            int(ch)
            for ch in name.replace("S[", "")
            .replace("]*q[", ",")
            .replace("]", "")
            .split(",")
        )
        weight = 1.0 if b == c else np.sqrt(2.0)
        np.testing.assert_allclose(values[:, column], weight * S[:, b, c] * q[:, e])


def test_feature_names_check_the_input_names(rng):
    pd = pytest.importorskip("pandas")
    rows = random_sequences(rng, 6, 4, 2).reshape(6, -1)
    X = pd.DataFrame(rows, columns=list("abcdefgh"))
    features = LiftedAttentionFeatures(token_dim=2).fit(X)
    names = features.get_feature_names_out()
    assert list(features.get_feature_names_out(list("abcdefgh"))) == list(names)
    with pytest.raises(ValueError, match="input_features is not equal to"):
        features.get_feature_names_out(list("zzzzzzzz"))
    unnamed = LiftedAttentionFeatures(token_dim=2).fit(X.to_numpy())
    with pytest.raises(ValueError, match="input_features should have length equal"):
        unnamed.get_feature_names_out(["a", "b"])


def test_pandas_output(rng):
    pytest.importorskip("pandas")
    X = random_sequences(rng, 6, 3, 2).reshape(6, -1)
    frame = LiftedAttentionFeatures(token_dim=2).set_output(transform="pandas")
    out = frame.fit_transform(X)
    assert list(out.columns) == list(frame.get_feature_names_out())
    assert out.shape == (6, 6)


def test_features_in_a_linear_model_equal_the_regressor(rng):
    truth = random_attention(rng, 3, 2)
    X = random_sequences(rng, 200, 6, 3)
    y = truth.predict(X)[:, 0] + 0.01 * rng.normal(size=200)
    flat = X.reshape(200, -1)
    pipeline = make_pipeline(
        LiftedAttentionFeatures(token_dim=3), Ridge(alpha=0.1, fit_intercept=False)
    ).fit(flat, y)
    ours = LinearAttentionRegressor(alpha=0.1, n_heads=None, tol=0.0).fit(X, y)
    np.testing.assert_allclose(pipeline[-1].coef_, ours.coef_, rtol=1e-7, atol=1e-12)
    cv = make_pipeline(LiftedAttentionFeatures(token_dim=3), RidgeCV()).fit(flat, y)
    assert cv.score(flat, y) > 0.99


def test_features_reject_other_token_dims(rng):
    features = LiftedAttentionFeatures().fit(random_sequences(rng, 5, 3, 2))
    with pytest.raises(ValueError, match="token dimension 3"):
        features.transform(np.ones((2, 3, 3)))


@pytest.mark.parametrize("n_jobs", [0, True, 1.5, "two"])
def test_features_reject_bad_n_jobs_at_fit(rng, n_jobs):
    """As the estimators: n_jobs is a positive or negative int or None, checked by
    fit (not left to joblib in transform); a bool is not an int here."""
    with pytest.raises(
        ValueError, match="'n_jobs' parameter of LiftedAttentionFeatures"
    ):
        LiftedAttentionFeatures(n_jobs=n_jobs).fit(random_sequences(rng, 4, 3, 2))


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionClassifier, LinearAttentionClassifierCV]
)
@pytest.mark.parametrize(
    "class_weight, message",
    [
        ({0: -1.0, 1: 1.0}, r"class_weight\[0\] = -1.0"),
        ({0: np.nan, 1: 1.0}, r"class_weight\[0\] = nan"),
        ({0: np.inf, 1: 1.0}, r"class_weight\[0\] = inf"),
        ({0: "1", 1: 1.0}, r"class_weight\[0\] = '1'"),
        ({0: True, 1: 1.0}, r"class_weight\[0\] = True"),
        ({0: 0.0, 1: 0.0}, "every training row weight zero"),
    ],
)
def test_class_weights_must_be_finite_non_negative_and_not_all_zero(
    rng, Estimator, class_weight, message
):
    """Negative, NaN or infinite class weights crashed in LAPACK, and all-zero
    ones fitted a zero model silently (sample_weight=0 is refused)."""
    X = random_sequences(rng, 60, 5, 2)
    y = (X[:, :, 0].sum(axis=1) * X[:, -1, 1] > 0).astype(int)
    with pytest.raises(ValueError, match=message):
        Estimator(n_heads=None, class_weight=class_weight).fit(X, y)


def test_lifted_features_beyond_memory_are_refused_before_allocation(
    rng, monkeypatch
):
    """transform names the array's size and the memory available instead of
    numpy's MemoryError (or the system killing the process): here with 500 kB
    available, 300 sequences of d = 8 need 300 x 288 x 8 bytes; fit, which
    allocates none, takes them (to transform in chunks)."""
    import sklearn_linattn._data as data

    X = random_sequences(rng, 300, 4, 8)
    monkeypatch.setattr(data, "available_memory", lambda: 500_000)
    features = LiftedAttentionFeatures().fit(X)  # fit allocates none
    message = r"300 x 288 array \(691 kB\), more than the 500 kB"
    with pytest.raises(ValueError, match=message):
        features.transform(X)
    with pytest.raises(ValueError, match=message):
        LiftedAttentionFeatures().fit_transform(X)
    assert features.transform(X[:100]).shape == (100, 288)


def test_class_weights_take_any_real_number(rng):
    """Numbers numpy and the standard library hold (a 0-d array, a Fraction,
    float32, an int) are weights as compute_sample_weight takes them."""
    from fractions import Fraction

    X = random_sequences(rng, 60, 5, 2)
    y = (X[:, :, 0].sum(axis=1) * X[:, -1, 1] > 0).astype(int)
    reference = LinearAttentionClassifier(n_heads=None, class_weight={0: 1.5, 1: 2})
    reference.fit(X, y)
    for weight in (np.array(1.5), Fraction(3, 2), np.float32(1.5)):
        model = LinearAttentionClassifier(n_heads=None, class_weight={0: weight, 1: 2})
        np.testing.assert_allclose(model.fit(X, y).coef_, reference.coef_, rtol=1e-12)


def test_lifted_features_beyond_the_float_range_warn(rng):
    """The features are cubic in the tokens: near the top of the float range
    they are right, beyond it inf with a warning naming the fix."""
    X = rng.normal(size=(6, 3, 2))
    features = LiftedAttentionFeatures().fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaled = features.transform(X * 1e100)
    np.testing.assert_allclose(scaled, features.transform(X) * 1e300, rtol=1e-12)
    with pytest.warns(RuntimeWarning, match="Scale X down"):
        overflowing = features.transform(X * 1e103)
    assert np.isinf(overflowing).any()


def test_feature_names_beyond_memory_are_refused_before_allocation(rng, monkeypatch):
    """Names of d = 2000 (p = 4e9 lifted features) were numpy's MemoryError from
    the index arrays; here with 100 kB available, d = 8 (288 names) fits and
    d = 12 (936 names, about 120 kB) does not."""
    import sklearn_linattn._data as data

    monkeypatch.setattr(data, "available_memory", lambda: 100_000)
    small = LiftedAttentionFeatures().fit(rng.normal(size=(2, 3, 8)))
    assert small.get_feature_names_out().shape == (288,)
    features = LiftedAttentionFeatures().fit(rng.normal(size=(2, 3, 12)))
    with pytest.raises(ValueError, match="names of p = 936 lifted features"):
        features.get_feature_names_out()
