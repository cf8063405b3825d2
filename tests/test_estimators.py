"""LinearAttentionRegressor: recovery, minimum norm, sklearn use, errors."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import n_lifted, one_head_problem, random_attention, random_sequences
from sklearn.base import clone
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
    parametrize_with_checks,
)

from sklearn_linattn import (
    LiftedAttentionFeatures,
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
)
from sklearn_linattn._lift import lifted_features

# Checks that fail by design, with the reason (scikit-learn marks them xfail).
WEIGHTS_ARE_NOT_REPEATS = (
    "the head count is chosen by cross-validation over 5 folds of the sequences "
    "(those of positive weight dealt in turn, one by one, then in runs of "
    "consecutive sequences): a sequence repeated "
    "k times lies in several folds, in training and held-out data at once, one of "
    "weight k in one fold, so the held-out errors and the count can differ (zero "
    "weights are as good as removed); the lifted fit itself "
    "(n_heads=None) passes the check (test_sklearn_compatible_paper_read_out)"
)
EXPECTED_FAILED_CHECKS = {
    "LinearAttentionRegressor": {
        "check_sample_weight_equivalence_on_dense_data": WEIGHTS_ARE_NOT_REPEATS,
    },
    "LinearAttentionClassifier": {
        "check_sample_weight_equivalence_on_dense_data": WEIGHTS_ARE_NOT_REPEATS,
        "check_class_weight_classifiers": (
            "MHLA is a homogeneous cubic: without an intercept each score is an odd "
            "function of the input, f(-Z) = -f(Z), so even with all the weight on "
            "one class it cannot predict that class on both sides of the origin, "
            "where the check's blobs lie"
        ),
    },
}


ESTIMATORS = [
    LinearAttentionRegressor(),
    LinearAttentionClassifier(),
    LiftedAttentionFeatures(),
]


@parametrize_with_checks(
    ESTIMATORS,
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS.get(
        type(estimator).__name__, {}
    ),
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "estimator",
    [LinearAttentionRegressor(n_heads=None), LinearAttentionClassifier(n_heads=None)],
    ids=lambda estimator: type(estimator).__name__,
)
def test_sklearn_compatible_paper_read_out(estimator):
    """The lifted fit itself treats integer weights as repeated sequences."""
    check_sample_weight_equivalence_on_dense_data(type(estimator).__name__, estimator)


def relative_distance(model, truth):
    return model.distance(truth) / np.linalg.norm(truth.lifted_coef())


@pytest.mark.parametrize("token_dim", [4, 5, 6])
@pytest.mark.parametrize("n_heads", [1, 2, 3])
def test_exact_recovery_of_a_generating_model(rng, token_dim, n_heads):
    truth = random_attention(rng, token_dim, n_heads)
    X = random_sequences(rng, 3 * n_lifted(token_dim), 20, token_dim)
    y = truth.predict(X)[:, 0]
    model = LinearAttentionRegressor().fit(X, y)

    assert model.certificate_.identifiable
    assert relative_distance(model.attention_, truth) < 1e-8
    for n_tokens in (1, 7, 50):  # other sequence lengths than in training
        X_new = random_sequences(rng, 30, n_tokens, token_dim)
        expected = truth.predict(X_new)[:, 0]
        np.testing.assert_allclose(
            model.predict(X_new),
            expected,
            rtol=1e-8,
            atol=1e-8 * np.abs(expected).max(),
        )
    assert model.coef_.shape == (n_lifted(token_dim),)
    assert model.intercept_ == 0.0
    assert model.token_dim_ == token_dim
    assert model.value_matrices_.shape == (model.n_heads_, 1, token_dim)
    assert model.query_matrices_.shape == (model.n_heads_, token_dim, token_dim)


def test_multi_output_recovery_with_intercept(rng):
    truth = random_attention(rng, 4, n_heads=2, n_outputs=3)
    X = random_sequences(rng, 3 * n_lifted(4), 12, 4)
    offset = np.array([1.0, -2.0, 0.5])
    model = LinearAttentionRegressor(fit_intercept=True).fit(
        X, truth.predict(X) + offset
    )
    assert model.coef_.shape == (3, n_lifted(4))
    np.testing.assert_allclose(model.intercept_, offset, rtol=1e-9)
    assert relative_distance(model.attention_, truth) < 1e-8
    assert model.certificate_.identifiable


MEAN_LEFT_OUT = "leaves the targets' mean out"


def _mean_warnings(record):
    return [str(w.message) for w in record if MEAN_LEFT_OUT in str(w.message)]


def test_a_fit_that_leaves_the_targets_mean_out_warns_and_names_the_intercept():
    """Real targets far from zero (sklearn's diabetes: mean 152, standard deviation
    77), tokens without a constant: the homogeneous cubic cannot fit the mean, and
    the warning names fit_intercept=True, with the training R^2 that adding the
    mean residual to the predictions gains, recomputed here from the predictions."""
    from sklearn.datasets import load_diabetes
    from sklearn.metrics import r2_score

    from sklearn_linattn import LinearAttentionRegressorCV

    X, y = load_diabetes(return_X_y=True)
    X = X.reshape(len(X), 2, 5) / np.abs(X).max()  # two tokens of five features
    train, test = slice(0, 300), slice(300, None)
    with pytest.warns(UserWarning, match=MEAN_LEFT_OUT) as record:
        model = LinearAttentionRegressorCV(n_heads=None).fit(X[train], y[train])
    (message,) = _mean_warnings(record)
    assert "fit_intercept=True" in message
    fitted = model.predict(X[train])
    shifted = fitted + np.mean(y[train] - fitted)
    gain = r2_score(y[train], shifted) - r2_score(y[train], fitted)
    assert f"by {gain:.3g}" in message
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        centered = LinearAttentionRegressorCV(n_heads=None, fit_intercept=True)
        centered.fit(X[train], y[train])
    assert not _mean_warnings(record)
    # the fix the warning names helps on held-out data as well
    assert centered.score(X[test], y[test]) > model.score(X[test], y[test]) + 1.0


def test_a_nearly_constant_target_left_out_quotes_its_gain_in_three_digits(rng):
    """Targets 3 plus noise of 1e-4: adding the mean residual raises the
    training R^2 by about 1e9, which the warning quotes in three significant
    digits (it printed every digit: "by 565391286.80"), recomputed here from
    the predictions."""
    from sklearn.metrics import r2_score

    X = random_sequences(rng, 60, 5, 3)
    y = 3.0 + 1e-4 * rng.normal(size=60)
    with pytest.warns(UserWarning, match=MEAN_LEFT_OUT) as record:
        model = LinearAttentionRegressor(n_heads=None).fit(X, y)
    (message,) = _mean_warnings(record)
    fitted = model.predict(X)
    gain = r2_score(y, fitted + np.mean(y - fitted)) - r2_score(y, fitted)
    assert gain > 1e6 and f"by {gain:.3g}" in message


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_a_constant_target_left_out_is_named_without_an_r2(rng, n_outputs):
    """A constant target (a stuck sensor) has no R^2: the warning says the
    targets are constant and that adding the mean residual fits them exactly,
    not that it raises R^2 "by inf" (helper-91)."""
    X = random_sequences(rng, 60, 5, 3)
    y = np.full((60, n_outputs), 3.0)
    if n_outputs > 1:
        y[:, 0] = random_attention(rng, 3, 1).predict(X)[:, 0]  # centered, varied
    with pytest.warns(UserWarning, match=MEAN_LEFT_OUT) as record:
        LinearAttentionRegressor(n_heads=None).fit(X, y.squeeze())
    (message,) = _mean_warnings(record)
    which = " (output 1)" if n_outputs > 1 else ""
    assert f"the targets{which} are constant" in message
    assert "fit them exactly" in message and "inf" not in message


@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
def test_every_solver_and_partial_fit_warn_about_a_mean_left_out(rng, solver):
    truth = random_attention(rng, 3, 1)
    X = random_sequences(rng, 40, 5, 3)
    y = truth.predict(X)[:, 0] + 5.0
    with pytest.warns(UserWarning, match=MEAN_LEFT_OUT):
        LinearAttentionRegressor(solver=solver, n_heads=None).fit(X, y)
    if solver == "normal":
        model = LinearAttentionRegressor(n_heads=None)
        model.partial_fit(X[:20], y[:20]).partial_fit(X[20:], y[20:])
        with pytest.warns(UserWarning, match=MEAN_LEFT_OUT):
            coef = model.coef_  # partial_fit solves when the model is first read
        assert coef.shape == (n_lifted(3),)


CLASSES_UNBALANCED = "The classes are unbalanced"


def fit_warning_of_unbalanced_classes(X, y):
    """The classifier's fit without intercept and its one warning of unbalanced
    classes, which names fit_intercept=True."""
    with pytest.warns(UserWarning, match=CLASSES_UNBALANCED) as record:
        model = LinearAttentionClassifier(n_heads=None).fit(X, y)
    messages = [str(w.message) for w in record]
    (message,) = [text for text in messages if CLASSES_UNBALANCED in text]
    assert "fit_intercept=True" in message
    return model, message


def test_a_two_class_fit_without_intercept_warns_of_unbalanced_classes():
    """85/15 labels of a random attention layer's scores on Gaussian tokens:
    without an intercept the scores are odd in the tokens, f(-Z) = -f(Z), and
    cannot lean to the frequent class, so the test accuracy is below always
    predicting it. The warning names fit_intercept=True, which fixes it, and
    the training R^2 of the +1/-1 scores that adding their mean residual gains
    (recomputed here). Balanced labels, an intercept or a constant token
    feature: no such warning."""
    from sklearn.metrics import r2_score

    from sklearn_linattn.datasets import make_random_mhla
    from sklearn_linattn.preprocessing import PositionalEncoding

    X, scores, _ = make_random_mhla(2000, 4, 3, n_heads=1, noise=0.1, random_state=0)
    y = (scores.ravel() > np.quantile(scores, 0.85)).astype(int)
    train, test = slice(0, 1000), slice(1000, None)
    majority = max(np.mean(y[test]), 1 - np.mean(y[test]))
    model, message = fit_warning_of_unbalanced_classes(X[train], y[train])
    fitted = model.decision_function(X[train])
    codes = np.where(y[train] == 1, 1.0, -1.0)
    gain = r2_score(codes, fitted + np.mean(codes - fitted)) - r2_score(codes, fitted)
    assert f"by {gain:.2f}" in message
    assert model.score(X[test], y[test]) < majority
    balanced = (scores.ravel() > np.median(scores)).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "alpha=0 and the model", UserWarning)
        centered = LinearAttentionClassifier(n_heads=None, fit_intercept=True)
        assert centered.fit(X[train], y[train]).score(X[test], y[test]) > majority
        LinearAttentionClassifier(n_heads=None).fit(X[train], balanced[train])
        make_pipeline(
            PositionalEncoding(constant=True, padding=None),
            LinearAttentionClassifier(n_heads=None),
        ).fit(X[train], y[train])


def test_a_multiclass_fit_without_intercept_warns_of_unbalanced_classes():
    """Three classes, 78/11/11, the argmax of a random attention layer's three
    scores with the first raised: without an intercept each one-vs-rest score is
    odd in the tokens and the test accuracy falls below always predicting the
    frequent class. The warning quotes how much more a score's training R^2
    gains from its own mean residual than from one shift shared by every score
    (recomputed here; a shared shift changes no predicted class). Balanced
    classes, whose scores' means differ by one shared shift, also with a class
    of no training weight: no warning."""
    from sklearn.metrics import r2_score

    from sklearn_linattn.datasets import make_random_mhla

    X, scores, _ = make_random_mhla(2000, 6, 4, n_heads=2, n_outputs=3, random_state=0)
    y = np.argmax(scores + [1.2 * scores.std(), 0.0, 0.0], axis=1)
    train, test = slice(0, 1000), slice(1000, None)
    majority = np.max(np.bincount(y[test])) / len(y[test])
    assert majority > 0.7
    model, message = fit_warning_of_unbalanced_classes(X[train], y[train])
    fitted = model.decision_function(X[train])
    codes = np.where(y[train, None] == np.arange(3), 1.0, -1.0)
    means = np.mean(codes - fitted, axis=0)
    gains = [
        r2_score(codes[:, c], fitted[:, c] + means[c])
        - r2_score(codes[:, c], fitted[:, c] + np.mean(means))
        for c in range(3)
    ]
    assert f"by {max(gains):.2f} more than one shift" in message
    assert model.score(X[test], y[test]) < majority
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "alpha=0 and the model", UserWarning)
        centered = LinearAttentionClassifier(n_heads=None, fit_intercept=True)
        assert centered.fit(X[train], y[train]).score(X[test], y[test]) > majority
        balanced = np.argmax(scores, axis=1)
        assert np.max(np.bincount(balanced[train])) < 0.4 * 1000
        LinearAttentionClassifier(n_heads=None).fit(X[train], balanced[train])
        # a class without training weight (its codes constant) is left out:
        # it made the gain inf
        LinearAttentionClassifier(
            n_heads=None, class_weight={0: 1.0, 1: 1.0, 2: 0.0}
        ).fit(X[train], balanced[train])
        unseen = LinearAttentionClassifier(n_heads=None)
        unseen.partial_fit(X[train], balanced[train], classes=[0, 1, 2, 3])
        unseen.predict(X[test])


def test_fits_of_attention_data_do_not_warn_about_the_mean(rng):
    """MHLA's own data: exact fits leave no residual mean, noisy and ridge fits a
    mean of the noise's size; the automaton's one-hot targets are far from
    centered (mean 0.72 standard deviations) and fitted exactly. Classifiers
    do not warn about targets' means (their scores are class codes; a fit on
    unbalanced classes warns of them instead, above)."""
    from sklearn_linattn.datasets import make_automaton_lookups, make_random_mhla

    X, y, _ = make_random_mhla(150, 20, 4, n_heads=2, random_state=0)
    noisy = y + 0.3 * y.std() * rng.normal(size=y.shape)
    lookups, next_states = make_automaton_lookups(600, 3, 2, random_state=0)[:2]
    assert np.all(np.abs(next_states.mean(0)) > 0.5 * next_states.std(0))
    fits = [
        (LinearAttentionRegressor(n_heads=None), X, y),
        (LinearAttentionRegressor(n_heads=None, alpha=1.0), X, noisy),
        (LinearAttentionRegressor(n_heads=None), lookups, next_states),
        (LinearAttentionClassifier(n_heads=None), X, y > np.quantile(y, 0.8)),
    ]
    for model, data, targets in fits:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            model.fit(data, targets)
        assert not _mean_warnings(record), type(model).__name__


def test_underdetermined_fit_is_minimum_norm(rng):
    d = 4
    p = n_lifted(d)
    truth = random_attention(rng, d, 2)
    X = random_sequences(rng, p // 2, 10, d)
    y = truth.predict(X)[:, 0]
    with pytest.warns(UserWarning, match="interpolates"):
        model = LinearAttentionRegressor(n_heads=None).fit(X, y)  # the lifted fit

    minimum_norm = np.linalg.pinv(lifted_features(X)) @ y  # independent reference
    np.testing.assert_allclose(model.coef_, minimum_norm, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(model.predict(X), y, rtol=1e-8, atol=1e-10)
    certificate = model.certificate_
    assert not certificate.identifiable
    assert certificate.rank == p // 2 and certificate.n_samples == p // 2
    assert certificate.covers(X).all()
    assert not certificate.covers(random_sequences(rng, 5, 10, d)).any()


def noisy_mhla_data(rng, n_samples, token_dim=5, noise=0.5):
    """Sequences and targets of a random 2-head layer plus noise of ``noise``
    times the targets' spread."""
    truth = random_attention(rng, token_dim, 2)
    X = random_sequences(rng, n_samples, 6, token_dim)
    y = truth.predict(X)[:, 0]
    return X, y + noise * y.std() * rng.normal(size=n_samples), truth


def _interpolation_warnings(model, X, y):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.fit(X, y)
    return [str(w.message) for w in record if "interpolates" in str(w.message)]


def test_interpolating_fit_of_noisy_data_warns_and_names_the_cv_estimator(rng):
    """alpha=0 with fewer rows than lifted features (60 < p = 75) interpolates
    the noise and predicts worse than the mean out of sample: the warning names
    the route, LinearAttentionRegressorCV or alpha > 0. That route, and alpha=0
    with more rows than features, do not warn and predict well."""
    X, y, truth = noisy_mhla_data(rng, 360)
    X_test = random_sequences(rng, 300, 6, 5)
    y_test = truth.predict(X_test)[:, 0]
    few, few_y = X[:60], y[:60]
    interpolating = LinearAttentionRegressor(n_heads=None)
    messages = _interpolation_warnings(interpolating, few, few_y)
    assert len(messages) == 1
    assert "LinearAttentionRegressorCV" in messages[0] and "alpha > 0" in messages[0]
    assert "75 lifted features" in messages[0] and "60 training rows" in messages[0]
    # the bad case is bad: held-out R^2 below 0 (-1.8 to -4.4 over 5 seeds)
    assert interpolating.score(X_test, y_test) < 0
    assert not _interpolation_warnings(
        LinearAttentionRegressor(alpha=1e-3, n_heads=None), few, few_y
    )
    for model, rows in [
        (LinearAttentionRegressorCV(n_heads=None), 60),
        (LinearAttentionRegressor(n_heads=None), 360),  # more rows than p
    ]:
        assert not _interpolation_warnings(model, X[:rows], y[:rows])
        # held-out R^2 0.58 to 0.71 (CV, 60 rows), 0.83 to 0.95 (360), 5 seeds
        assert model.score(X_test, y_test) > 0.3


def test_partial_fit_warns_about_an_interpolating_fit_when_it_is_solved(rng):
    """partial_fit solves when the model is read: then, as fit does, it warns
    about alpha=0 with no more rows of positive weight, over all batches so far,
    than lifted features (60 <= p = 75), once per solve and at the user's line;
    batches that add up to more rows do not warn."""
    X, y, _ = noisy_mhla_data(rng, 360)
    model = LinearAttentionRegressor(n_heads=None)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.partial_fit(X[:30], y[:30]).partial_fit(X[30:60], y[30:60])
        model.partial_fit(X[60:70], y[60:70], sample_weight=np.zeros(10))
        assert not record  # nothing solved yet
        model.predict(X[:5])
        assert model.coef_.shape == (n_lifted(5),)  # (solved once)
    messages = [str(w.message) for w in record if "interpolates" in str(w.message)]
    assert len(messages) == 1 and "60 training rows" in messages[0]
    assert record[0].filename == __file__
    with pytest.warns(UserWarning, match="interpolates") as fitted:
        LinearAttentionRegressor(n_heads=None).fit(X[:60], y[:60])
    assert messages == [str(w.message) for w in fitted]
    for start in range(70, 360, 100):  # 350 rows of weight in all
        model.partial_fit(X[start : start + 100], y[start : start + 100])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert model.coef_.shape == (n_lifted(5),)
    assert not [w for w in record if "interpolates" in str(w.message)]


def test_rows_of_zero_weight_do_not_hide_an_interpolating_fit(rng):
    """Rows of zero weight do not enter the fit: 60 rows of weight and 300 of
    none give the 60-row fit, and its warning; weights on all 360 none."""
    X, y, _ = noisy_mhla_data(rng, 360)
    weights = np.r_[np.ones(60), np.zeros(300)]
    model = LinearAttentionRegressor(n_heads=None)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.fit(X, y, sample_weight=weights)
    messages = [str(w.message) for w in record if "interpolates" in str(w.message)]
    assert len(messages) == 1 and "60 training rows" in messages[0]
    with pytest.warns(UserWarning, match="interpolates"):
        alone = LinearAttentionRegressor(n_heads=None).fit(X[:60], y[:60])
    np.testing.assert_allclose(model.coef_, alone.coef_, rtol=1e-8, atol=1e-12)
    assert not _interpolation_warnings(
        LinearAttentionRegressor(n_heads=None), X, y
    )
    labels = np.where(y > 0, "up", "down")
    classifier = LinearAttentionClassifier(n_heads=None)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        classifier.fit(X, labels, sample_weight=weights)
    assert any("60 training rows" in str(w.message) for w in record)


def test_class_weights_per_position_count_rows_once_for_the_warning(rng):
    """positions="all" with class_weight weighs each row: 3 sequences of 5
    positions are 15 rows, fewer than p = 18, with or without class weights."""
    X = rng.normal(size=(3, 5, 3))
    labels = rng.integers(0, 2, size=(3, 5))
    labels[0, :2] = [0, 1]
    for class_weight in (None, "balanced"):
        model = LinearAttentionClassifier(
            n_heads=None, positions="all", class_weight=class_weight
        )
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            model.fit(X, labels)
        assert any("15 training rows" in str(w.message) for w in record)


@pytest.mark.parametrize(
    ("Estimator", "params"),
    [
        (LinearAttentionRegressor, {}),
        (LinearAttentionClassifier, {}),
        (LinearAttentionClassifier, {"class_weight": "balanced"}),  # per position
    ],
)
def test_left_padding_does_not_hide_an_interpolating_fit(rng, Estimator, params):
    """positions="all": left-padding positions are not rows of the fit. 5
    sequences of 6 tokens, 4 of them padding, one of weight zero, are 8 rows
    (certificate_.n_samples) for p = 18: the fit interpolates, and fit warns
    about 8 rows (it counted 24 and did not warn), as partial_fit does."""
    X = rng.normal(size=(5, 6, 3))
    X[:, :4] = 0.0
    y = rng.normal(size=(5, 6))
    targets = y if Estimator is LinearAttentionRegressor else np.where(y > 0, 1, 0)
    weights = np.r_[0.0, np.ones(4)]
    model = Estimator(n_heads=None, positions="all", **params)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.fit(X, targets, sample_weight=weights)
    messages = [str(w.message) for w in record if "interpolates" in str(w.message)]
    assert len(messages) == 1 and "for 8 training rows" in messages[0]
    assert model.certificate_.n_samples == 8
    if Estimator is LinearAttentionRegressor:
        np.testing.assert_allclose(model.predict(X)[1:, 4:], y[1:, 4:], atol=1e-8)
        partial = Estimator(n_heads=None, positions="all").partial_fit(
            X, y, sample_weight=weights
        )
        with pytest.warns(UserWarning, match="for 8 training rows"):
            partial.predict(X)
    # without padding: 24 rows > 18, no warning
    assert not _interpolation_warnings(
        Estimator(n_heads=None, positions="all", **params),
        rng.normal(size=(4, 6, 3)), targets[1:],
    )


def test_interpolating_classifier_warns_and_names_the_classifier_cv(rng):
    X, y, _ = noisy_mhla_data(rng, 60)
    labels = np.where(y > 0, "up", "down")
    messages = _interpolation_warnings(LinearAttentionClassifier(), X, labels)
    assert len(messages) == 1 and "LinearAttentionClassifierCV" in messages[0]
    assert not _interpolation_warnings(LinearAttentionClassifierCV(), X, labels)
    assert not _interpolation_warnings(LinearAttentionClassifier(alpha=1.0), X, labels)


@pytest.mark.parametrize("alpha", [1e-3, 1.0])
def test_rows_as_one_token_are_kernel_ridge_with_the_cubic_kernel(rng, alpha):
    """A 2-D row with token_dim=None is one token z (S = z z^T, q = z): the model
    is kernel ridge with the kernel (z . z')^3, scikit-learn's KernelRidge with
    the polynomial kernel of degree 3; with a constant column appended, the
    kernel (1 + z . z')^3."""
    X = rng.normal(size=(40, 30)) / np.sqrt(30)
    y = rng.normal(size=40)
    X_test = rng.normal(size=(10, 30)) / np.sqrt(30)

    def with_constant(rows):
        return np.column_stack([rows, np.ones(len(rows))])

    for rows, coef0 in [(lambda rows: rows, 0.0), (with_constant, 1.0)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the one-token layout warning
            ours = LinearAttentionRegressor(alpha=alpha, n_heads=None).fit(rows(X), y)
        reference = KernelRidge(
            alpha=alpha, kernel="poly", degree=3, gamma=1.0, coef0=coef0
        ).fit(X, y)
        expected = reference.predict(X_test)
        # measured: 1.7e-15 of the largest prediction
        np.testing.assert_allclose(
            ours.predict(rows(X_test)), expected, rtol=0,
            atol=1e-12 * np.abs(expected).max(),
        )
        assert ours.solver_ == "dual"


@pytest.mark.parametrize("solver", ["auto", "normal", "dual", "cg"])
@pytest.mark.parametrize("n_outputs", [1, 2])
def test_one_sequence_with_intercept_is_the_constant_model(rng, solver, n_outputs):
    """Centered, a single sequence has no features left: every solver returns
    the intercept-only model (the least-squares fit of one point)."""
    X = random_sequences(rng, 1, 5, 3)
    y = rng.normal(size=(1, n_outputs))
    if n_outputs == 1:
        y = y[:, 0]
    model = LinearAttentionRegressor(solver=solver, fit_intercept=True).fit(X, y)
    assert np.all(model.coef_ == 0.0)
    np.testing.assert_allclose(model.intercept_, y[0], rtol=1e-12)
    other = random_sequences(rng, 4, 7, 3)
    np.testing.assert_allclose(
        model.predict(other), np.repeat(y, 4, axis=0), rtol=1e-12
    )
    assert model.certificate_.rank == 0 and not model.certificate_.identifiable


@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
@pytest.mark.parametrize("positions", ["last", "all"])
def test_one_weighted_row_with_intercept_is_the_constant_model(rng, solver, positions):
    """Two copies of a one-token sequence (p = 1), one of weight zero: a single
    row to fit, which centers to rounding of zero (found by the hostile pass: the
    normal solver fitted that rounding, coef -8192)."""
    X = np.full((2, 1, 1), 0.04974348317728668)
    y = rng.normal(size=(2, 1) if positions == "all" else 2)
    model = LinearAttentionRegressor(
        solver=solver, fit_intercept=True, n_heads=None, positions=positions
    ).fit(X, y, sample_weight=[0.0, 0.9254256461924331])
    assert np.all(model.coef_ == 0.0)
    assert model.intercept_ == pytest.approx(y[1].item(), rel=1e-12)


def test_ridge_matches_closed_form(rng):
    X = random_sequences(rng, 60, 8, 3)
    y = rng.normal(size=60)
    Phi = lifted_features(X)
    expected = np.linalg.solve(Phi.T @ Phi + 0.3 * np.eye(Phi.shape[1]), Phi.T @ y)
    # n_heads=None: coef_ is the lifted ridge solution itself (the default reads
    # out fewer heads on this pure-noise target, and coef_ is their function).
    model = LinearAttentionRegressor(alpha=0.3, n_heads=None).fit(X, y)
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-7)
    # The lifted features in any sklearn linear model give the same fit.
    sklearn_ridge = Ridge(alpha=0.3, fit_intercept=True).fit(Phi, y)
    ours = LinearAttentionRegressor(alpha=0.3, fit_intercept=True, n_heads=None)
    ours.fit(X, y)
    np.testing.assert_allclose(ours.coef_, sklearn_ridge.coef_, rtol=1e-6)
    assert ours.intercept_ == pytest.approx(sklearn_ridge.intercept_, rel=1e-6)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_predict_attention_and_lifted_coefficients_agree(rng, fit_intercept):
    X = random_sequences(rng, 80, 6, 3)
    y = rng.normal(size=(80, 2))
    model = LinearAttentionRegressor(fit_intercept=fit_intercept, alpha=1e-3).fit(X, y)
    X_new = random_sequences(rng, 10, 9, 3)
    by_lift = lifted_features(X_new) @ model.coef_.T + model.intercept_
    by_heads = model.attention_.predict(X_new) + model.intercept_
    np.testing.assert_allclose(model.predict(X_new), by_lift, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(by_heads, by_lift, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(model.attention_.lifted_coef(), model.coef_, atol=1e-14)


def test_two_dimensional_input_equals_three_dimensional(rng):
    X = random_sequences(rng, 70, 5, 3)
    y = rng.normal(size=70)
    from_3d = LinearAttentionRegressor().fit(X, y)
    from_2d = LinearAttentionRegressor(token_dim=3).fit(X.reshape(70, -1), y)
    np.testing.assert_allclose(from_2d.coef_, from_3d.coef_, rtol=1e-10)
    assert from_2d.n_features_in_ == from_3d.n_features_in_ == 15
    np.testing.assert_allclose(from_2d.predict(X), from_3d.predict(X.reshape(70, -1)))


def test_chunking_and_threads_do_not_change_the_fit(rng):
    X = random_sequences(rng, 103, 5, 3)
    y = rng.normal(size=103)
    reference = LinearAttentionRegressor(n_heads=None).fit(X, y)
    chunked = LinearAttentionRegressor(batch_size=7, n_jobs=2, n_heads=None).fit(X, y)
    np.testing.assert_allclose(chunked.coef_, reference.coef_, rtol=1e-9)
    np.testing.assert_allclose(chunked.predict(X), reference.predict(X), rtol=1e-9)


def test_input_is_not_modified_and_read_only_works(rng):
    X = random_sequences(rng, 50, 5, 3)
    y = rng.normal(size=50)
    X_copy, y_copy = X.copy(), y.copy()
    X.setflags(write=False)
    y.setflags(write=False)
    LinearAttentionRegressor(fit_intercept=True).fit(X, y).predict(X)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(y, y_copy)


def test_sklearn_tools(rng):
    truth = random_attention(rng, 3, 1)
    X = random_sequences(rng, 120, 6, 3)
    y = truth.predict(X)[:, 0] + 0.001 * rng.normal(size=120)
    flat = X.reshape(120, -1)

    pipeline = make_pipeline(
        FunctionTransformer(lambda rows: 2.0 * rows),
        LinearAttentionRegressor(token_dim=3),
    )
    pipeline.fit(flat, y)
    assert pipeline.score(flat, y) > 0.99

    search = GridSearchCV(
        LinearAttentionRegressor(token_dim=3), {"alpha": [0.0, 1e-4, 100.0]}, cv=3
    ).fit(flat, y)
    assert search.best_params_["alpha"] < 100.0

    scores = cross_val_score(LinearAttentionRegressor(), X, y, cv=3)
    assert scores.min() > 0.99

    fitted = LinearAttentionRegressor(alpha=1e-6).fit(X, y)
    unfitted = clone(fitted)
    assert not hasattr(unfitted, "coef_") and unfitted.alpha == 1e-6
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))
    assert restored.certificate_ == fitted.certificate_
    assert restored.attention_.distance(fitted.attention_) == 0.0


def test_pandas_column_names(rng):
    pd = pytest.importorskip("pandas")
    X = random_sequences(rng, 40, 2, 2).reshape(40, -1)
    frame = pd.DataFrame(X, columns=["k0", "v0", "k1", "v1"])
    model = LinearAttentionRegressor(token_dim=2).fit(frame, rng.normal(size=40))
    assert list(model.feature_names_in_) == ["k0", "v0", "k1", "v1"]
    model.fit(X.reshape(40, 2, 2), rng.normal(size=40))
    assert not hasattr(model, "feature_names_in_")


def test_pandas_float64_frame_fits_like_its_array():
    pd = pytest.importorskip("pandas")
    truth, X, y = one_head_problem()
    flat = X.reshape(len(X), -1)
    frame = pd.DataFrame(flat, columns=[f"x{i}" for i in range(flat.shape[1])])
    a = LinearAttentionRegressor(token_dim=3).fit(frame, pd.Series(y))
    b = LinearAttentionRegressor(token_dim=3).fit(flat, y)
    assert list(a.feature_names_in_) == list(frame.columns)
    np.testing.assert_allclose(a.predict(frame), b.predict(flat), rtol=1e-12)
    assert a.n_heads_ == b.n_heads_ == 1


@pytest.mark.parametrize(
    "X, error, match",
    [
        (np.full((5, 3, 2), np.nan), ValueError, "NaN"),
        (np.full((5, 3, 2), np.inf), ValueError, "infinity"),
        (np.ones(6), ValueError, r"got an array with 1 dimension\(s\)"),
        (np.ones((5, 3, 2, 1)), ValueError, r"got an array with 4 dimension\(s\)"),
        (
            np.ones((5, 7)),
            ValueError,
            "7 columns, which is not a multiple of token_dim=2",
        ),
        (np.ones((5, 3, 3)), ValueError, "token dimension 3"),
        (np.ones((0, 3, 2)), ValueError, "0 sample"),
        (np.ones((5, 0, 2)), ValueError, "at least one token"),
        (np.ones((5, 3, 2)) * 1j, ValueError, "Complex data not supported"),
        (np.array([[["a", "b"]]] * 5, dtype=object), ValueError, "could not convert"),
        (sp.random(5, 6, format="csr"), TypeError, "Sparse input is not supported"),
    ],
)
def test_bad_training_input(X, error, match):
    with pytest.raises(error, match=match):
        LinearAttentionRegressor(token_dim=2).fit(X, np.ones(X.shape[0]))


@pytest.mark.parametrize(
    "y, match",
    [
        (np.ones(4), "X has 5 samples but y has 4"),
        (np.ones((5, 2, 2)), r"y must have shape \(n_samples,\)"),
        (None, "requires y to be passed"),
        (np.array([1, 2, np.nan, 4, 5]), "Input y contains NaN"),
    ],
)
def test_bad_targets(y, match):
    with pytest.raises(ValueError, match=match):
        LinearAttentionRegressor().fit(np.ones((5, 3, 2)), y)


def test_bad_predict_input(rng):
    X = random_sequences(rng, 30, 4, 3)
    model = LinearAttentionRegressor().fit(X, rng.normal(size=30))
    with pytest.raises(ValueError, match="token dimension 2"):
        model.predict(np.ones((4, 4, 2)))
    with pytest.raises(
        ValueError,
        match="X has 9 features, but LinearAttentionRegressor is expecting 12",
    ):
        model.predict(np.ones((4, 9)))
    assert model.predict(np.ones((4, 9, 3))).shape == (4,)  # any sequence length


def test_one_sequence_as_2d_input_is_refused_with_the_shape_to_pass(rng):
    """One sequence ``Z`` of shape (n_tokens, d) is, as 2-D input, n_tokens rows
    of d features: predict said only "X has 3 features, but ... is expecting
    12", with no word of ``Z[None]``. Estimators and the lifted features'
    transformer say it; ``Z[None]`` predicts that sequence."""
    X = random_sequences(rng, 30, 4, 3)
    model = LinearAttentionRegressor().fit(X, rng.normal(size=30))
    features = LiftedAttentionFeatures().fit(X)
    for method in (model.predict, features.transform):
        with pytest.raises(ValueError, match=r"X has 3 features.*Z\[None\]"):
            method(X[0])
    np.testing.assert_allclose(
        model.predict(X[0][None]), model.predict(X)[:1], rtol=1e-14
    )


@pytest.mark.parametrize(
    "params, match",
    [
        ({"alpha": -1.0}, "alpha"),
        ({"token_dim": 0}, "token_dim"),
        ({"solver": "svd"}, "solver"),
        ({"n_heads": 0}, "n_heads"),
        ({"n_heads": "many"}, "n_heads"),
        ({"tol": 1.5}, "tol"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_parameters(rng, params, match):
    with pytest.raises(ValueError, match=match):
        LinearAttentionRegressor(**params).fit(
            random_sequences(rng, 10, 3, 2), np.ones(10)
        )


@pytest.mark.parametrize(
    "estimator, name",
    [
        (LinearAttentionRegressor(n_heads=False), "n_heads"),
        (LinearAttentionRegressor(n_heads=np.False_), "n_heads"),
        (LinearAttentionRegressor(batch_size=False), "batch_size"),
        (LinearAttentionRegressor(max_iter=False), "max_iter"),
        (LinearAttentionRegressor(n_jobs=False), "n_jobs"),
        (LinearAttentionClassifier(token_dim=False), "token_dim"),
        (LiftedAttentionFeatures(token_dim=False), "token_dim"),
    ],
)
def test_false_for_a_number_is_refused_as_a_bool(rng, estimator, name):
    """scikit-learn's check reads False as 0: where 0 is out of range it said
    only "must be a str among {'auto'}, an int in the range [1, inf) or None.
    Got False instead" (True, read as 1, got the bool message after it)."""
    from sklearn.utils._param_validation import InvalidParameterError

    X = random_sequences(rng, 10, 3, 2)
    message = f"'{name}' parameter .* or None \\(not a bool\\). Got (np.)?False"
    with pytest.raises(InvalidParameterError, match=message):
        if isinstance(estimator, LiftedAttentionFeatures):
            estimator.fit(X)
        else:
            estimator.fit(X, np.arange(10) % 2)


@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
def test_fractions_are_real_parameters(rng, solver):
    """alpha=Fraction(1, 2) (a numbers.Real) failed inside scikit-learn's
    Interval check with numpy's "ufunc 'isnan' not supported"; it is the float
    it converts to, in every solver, for alpha, tol, head_work_limit and
    solver_tol alike."""
    from fractions import Fraction

    X = random_sequences(rng, 30, 4, 2)
    y = rng.normal(size=30)
    params = {
        "alpha": Fraction(1, 2),
        "tol": Fraction(1, 10**6),
        "head_work_limit": Fraction(5),
        "solver_tol": Fraction(1, 10**10),
    }
    fraction = LinearAttentionRegressor(solver=solver, **params).fit(X, y)
    floats = {name: float(value) for name, value in params.items()}
    plain = LinearAttentionRegressor(solver=solver, **floats).fit(X, y)
    np.testing.assert_array_equal(fraction.coef_, plain.coef_)
    assert fraction.n_heads_ == plain.n_heads_
    assert fraction.alpha == Fraction(1, 2)  # the parameter itself is kept
    with pytest.raises(ValueError, match=r"'alpha' parameter .*range \[0.0, inf\)"):
        LinearAttentionRegressor(alpha=Fraction(-1, 2)).fit(X, y)


@pytest.mark.parametrize(
    "params, name",
    [
        ({"positions": "x"}, "positions"),
        ({"causal": "yes"}, "causal"),
        ({"n_jobs": "x"}, "n_jobs"),
        ({"batch_size": -3}, "batch_size"),
    ],
)
def test_parameters_set_after_fit_are_checked_where_predict_reads_them(
    rng, params, name
):
    """set_params after fit takes any value: positions="x" was predicted as
    "all" (another shape, silently), n_jobs="x" failed in joblib ("'<' not
    supported between instances of 'str' and 'int'"), batch_size=-3 ran."""
    from sklearn.utils._param_validation import InvalidParameterError

    X = random_sequences(rng, 20, 3, 2)
    model = LinearAttentionRegressor().fit(X, rng.normal(size=20))
    model.set_params(**params)
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        model.predict(X)
    if name == "n_jobs":
        features = LiftedAttentionFeatures().fit(X).set_params(**params)
        with pytest.raises(InvalidParameterError, match="'n_jobs' parameter"):
            features.transform(X)


def test_verbose_reports_solver_and_time(rng, capsys):
    LinearAttentionRegressor(verbose=1, batch_size=10).fit(
        random_sequences(rng, 25, 3, 2), np.ones(25)
    )
    out = capsys.readouterr().out
    assert "solver 'normal'" in out and "fit done" in out
