"""generate: the streaming rollout against recomputing predict on the growing prefix."""

import numpy as np
import pytest
from conftest import random_attention
from sklearn.exceptions import NotFittedError

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    MultiHeadLinearAttention,
)
from sklearn_linattn.datasets import make_random_mhla


def unit(outputs, step):
    """Next token: the output scaled to unit length (keeps the rollout bounded)."""
    return outputs / np.linalg.norm(outputs, axis=1, keepdims=True)


def naive_rollout(predict, prompts, n_steps, to_token=None, per_position=False):
    """From the definition: predict on the whole grown sequence at every step, read
    at its last token (the last position's output when ``per_position``), and
    append the next token."""
    sequences = np.asarray(prompts, dtype=float)
    tokens, outputs = [], []
    for step in range(n_steps):
        output = np.asarray(predict(sequences))
        if per_position:
            output = output[:, -1]
        token = output if to_token is None else to_token(output, step)
        token = np.asarray(token, dtype=float).reshape(len(sequences), -1)
        outputs.append(output)
        tokens.append(token)
        sequences = np.concatenate([sequences, token[:, None, :]], axis=1)
    return np.stack(tokens, axis=1), np.stack(outputs, axis=1)


def assert_close(actual, expected, rtol=1e-10):
    """Relative to the largest magnitude of each step (outputs grow with the
    length of the sequence)."""
    assert actual.shape == expected.shape
    axes = tuple(i for i in range(expected.ndim) if i != 1)
    scale = np.abs(expected).max(axis=axes, keepdims=True)
    assert np.all(np.abs(actual - expected) <= rtol * scale)


# --- the plain model ----------------------------------------------------------


@pytest.mark.parametrize("token_dim, n_heads", [(1, 1), (3, 2), (4, 3)])
def test_model_generate_is_the_naive_rollout(rng, token_dim, n_heads):
    model = random_attention(rng, token_dim, n_heads, n_outputs=token_dim)
    prompts = rng.normal(size=(4, 5, token_dim))
    tokens, outputs = model.generate(prompts, 30, to_token=unit)
    expected_tokens, expected_outputs = naive_rollout(model.predict, prompts, 30, unit)
    assert_close(tokens, expected_tokens)
    assert_close(outputs, expected_outputs)


def test_model_generate_without_to_token_appends_the_outputs(rng):
    model = random_attention(rng, 3, 2, n_outputs=3)
    prompts = 0.3 * rng.normal(size=(3, 4, 3))
    result = model.generate(prompts, 6)
    expected_tokens, expected_outputs = naive_rollout(model.predict, prompts, 6)
    assert_close(result.tokens, expected_tokens)
    assert_close(result.outputs, expected_outputs)
    np.testing.assert_array_equal(result.tokens, result.outputs)


def test_model_generate_maps_outputs_of_another_width(rng):
    # n_outputs=2, token_dim=3: to_token appends a constant coordinate
    model = random_attention(rng, 3, 2, n_outputs=2)

    def to_token(outputs, step):
        scaled = outputs / np.linalg.norm(outputs, axis=1, keepdims=True)
        return np.column_stack([scaled, np.full(len(outputs), 0.5 + step % 2)])

    prompts = rng.normal(size=(3, 4, 3))
    tokens, outputs = model.generate(prompts, 12, to_token=to_token)
    expected = naive_rollout(model.predict, prompts, 12, to_token)
    assert_close(tokens, expected[0])
    assert_close(outputs, expected[1])
    assert outputs.shape == (3, 12, 2)


def test_model_generate_accepts_flat_rows(rng):
    model = random_attention(rng, 2, 1, n_outputs=2)
    prompts = rng.normal(size=(3, 4, 2))
    flat = model.generate(prompts.reshape(3, -1), 5, to_token=unit)
    tokens, outputs = model.generate(prompts, 5, to_token=unit)
    np.testing.assert_array_equal(flat.tokens, tokens)
    np.testing.assert_array_equal(flat.outputs, outputs)


def test_left_padding_changes_nothing(rng):
    model = random_attention(rng, 3, 2, n_outputs=3)
    prompts = rng.normal(size=(3, 4, 3))
    padded = np.concatenate([np.zeros((3, 5, 3)), prompts], axis=1)
    tokens, outputs = model.generate(prompts, 10, to_token=unit)
    padded_tokens, padded_outputs = model.generate(padded, 10, to_token=unit)
    assert_close(padded_tokens, tokens, rtol=1e-13)
    assert_close(padded_outputs, outputs, rtol=1e-13)


def test_generate_leaves_inputs_alone(rng):
    model = random_attention(rng, 2, 1, n_outputs=2)
    prompts = rng.normal(size=(3, 4, 2))
    before = prompts.copy()
    seen = []

    def to_token(outputs, step):
        outputs *= 0.0  # vandalise the array handed over
        seen.append(step)
        return np.ones((3, 2))

    _, outputs = model.generate(prompts, 3, to_token=to_token)
    np.testing.assert_array_equal(prompts, before)
    assert seen == [0, 1, 2]
    assert np.all(outputs != 0)  # the stored outputs are not the vandalised copy


# --- the estimators -----------------------------------------------------------


@pytest.mark.parametrize(
    "positions, causal", [("last", True), ("all", True), ("all", False)]
)
def test_regressor_generate_is_the_naive_rollout(positions, causal):
    X, y, _ = make_random_mhla(
        300,
        6,
        3,
        n_heads=2,
        n_outputs=3,
        random_state=0,
        positions=positions,
        causal=causal,
    )
    model = LinearAttentionRegressor(positions=positions, causal=causal).fit(X, y)
    prompts = X[:4]
    tokens, outputs = model.generate(prompts, 20, to_token=unit)
    expected_tokens, expected_outputs = naive_rollout(
        model.predict, prompts, 20, unit, per_position=positions == "all"
    )
    assert_close(tokens, expected_tokens)
    assert_close(outputs, expected_outputs)


def test_regressor_generate_includes_the_intercept(rng):
    X, y, _ = make_random_mhla(300, 5, 2, n_outputs=2, random_state=1)
    model = LinearAttentionRegressor(fit_intercept=True).fit(X, y + [3.0, -1.0])
    assert np.all(np.abs(model.intercept_) > 1)
    tokens, outputs = model.generate(X[:3].reshape(3, -1), 15, to_token=unit)
    expected = naive_rollout(model.predict, X[:3], 15, unit)
    assert_close(tokens, expected[0])
    assert_close(outputs, expected[1])


def test_single_output_regressor_outputs_are_one_column(rng):
    X, y, _ = make_random_mhla(100, 5, 1, random_state=2)
    model = LinearAttentionRegressor().fit(X, y)
    prompts = 0.5 * X[:3]
    tokens, outputs = model.generate(prompts, 8)  # the output is the next token
    assert outputs.shape == (3, 8) and tokens.shape == (3, 8, 1)
    expected_tokens, expected_outputs = naive_rollout(model.predict, prompts, 8)
    assert_close(tokens, expected_tokens)
    assert_close(outputs, expected_outputs)


def label_tokens(classes):
    """to_token for a classifier: the predicted label's one-hot token."""

    def to_token(scores, step):
        if scores.ndim == 1:
            labels = classes[(scores > 0).astype(int)]
        else:
            labels = classes[scores.argmax(axis=1)]
        return np.eye(len(classes))[np.searchsorted(classes, labels)]

    return to_token


def labels_to_tokens(classes):
    """The naive side: predicted labels (from predict) to one-hot tokens."""
    return lambda labels, step: np.eye(len(classes))[np.searchsorted(classes, labels)]


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_generate_is_the_naive_rollout(n_classes):
    X, y, _ = make_random_mhla(
        500, 5, n_classes, n_heads=2, n_outputs=n_classes, random_state=3
    )
    labels = y.argmax(axis=1)
    clf = LinearAttentionClassifier().fit(X, labels)
    prompts = X[:6]
    tokens, scores = clf.generate(prompts, 15, to_token=label_tokens(clf.classes_))
    expected_tokens, expected_labels = naive_rollout(
        clf.predict, prompts, 15, labels_to_tokens(clf.classes_)
    )
    np.testing.assert_array_equal(tokens, expected_tokens)
    predicted = label_tokens(clf.classes_)
    for step in range(15):
        np.testing.assert_array_equal(
            predicted(scores[:, step], step).argmax(axis=1), expected_labels[:, step]
        )
    # the scores are decision_function of the grown sequences
    grown = np.concatenate([prompts, tokens[:, :-1]], axis=1)
    assert_close(scores[:, -1:], clf.decision_function(grown)[:, None])


def test_exact_model_follows_the_generating_rollout_for_1000_steps():
    # One head y = S Q q with Q symmetric positive definite: S_t Q has real positive
    # eigenvalues, so the normalised rollout is a power iteration that contracts
    # towards a direction and float errors do not compound; the outputs grow
    # linearly with the length (to ~1e3) while the tokens stay on the unit sphere.
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3))
    truth = MultiHeadLinearAttention(
        np.eye(3)[None], (A @ A.T / 3 + 0.1 * np.eye(3))[None]
    )
    X = rng.normal(size=(300, 6, 3))
    model = LinearAttentionRegressor().fit(X, truth.predict(X))
    assert model.certificate_
    prompts = rng.normal(size=(5, 4, 3))
    learned = model.generate(prompts, 1000, to_token=unit)
    generating = truth.generate(prompts, 1000, to_token=unit)
    assert_close(learned.tokens, generating.tokens)
    assert_close(learned.outputs, generating.outputs)
    # and the generating model's streaming state against its own definition
    naive_tokens, _ = naive_rollout(truth.predict, prompts, 1000, unit)
    assert_close(generating.tokens, naive_tokens)


# --- errors -------------------------------------------------------------------


@pytest.mark.parametrize("n_steps", [0, -3])
def test_n_steps_must_be_positive(rng, n_steps):
    model = random_attention(rng, 2, 1, n_outputs=2)
    with pytest.raises(ValueError, match="n_steps must be a positive integer"):
        model.generate(rng.normal(size=(2, 3, 2)), n_steps)


@pytest.mark.parametrize("n_steps", [2.0, True, "3", None])
def test_n_steps_must_be_an_integer(rng, n_steps):
    model = random_attention(rng, 2, 1, n_outputs=2)
    with pytest.raises(TypeError, match="n_steps must be a positive integer"):
        model.generate(rng.normal(size=(2, 3, 2)), n_steps)


def test_to_token_must_be_callable(rng):
    model = random_attention(rng, 2, 1, n_outputs=2)
    with pytest.raises(TypeError, match="to_token must be None or a callable"):
        model.generate(rng.normal(size=(2, 3, 2)), 2, to_token=np.eye(2))


def test_outputs_as_tokens_need_matching_widths(rng):
    model = random_attention(rng, 3, 1, n_outputs=2)
    with pytest.raises(ValueError, match="n_outputs=2 and token_dim=3"):
        model.generate(rng.normal(size=(2, 3, 3)), 2)


def test_classifier_without_to_token_needs_matching_widths():
    X, y, _ = make_random_mhla(200, 5, 3, n_outputs=3, random_state=0)
    clf = LinearAttentionClassifier().fit(X, y[:, 0] > 0)  # two classes: one score
    with pytest.raises(ValueError, match="n_outputs=1 and token_dim=3"):
        clf.generate(X[:2], 2)


@pytest.mark.parametrize(
    "returned, match",
    [
        (
            np.ones((2, 3)),
            r"shape \(n_samples, token_dim\) = \(2, 2\); at step 0 it "
            r"returned shape \(2, 3\)",
        ),
        (np.ones(2), r"returned shape \(2,\)"),
        (np.full((2, 2), "a"), "real numbers"),
        (np.full((2, 2), np.nan), "not finite"),
    ],
)
def test_to_token_return_is_checked(rng, returned, match):
    model = random_attention(rng, 2, 1, n_outputs=2)
    with pytest.raises(ValueError, match=match):
        model.generate(rng.normal(size=(2, 3, 2)), 3, to_token=lambda o, s: returned)


def test_a_diverging_rollout_is_reported(rng):
    model = MultiHeadLinearAttention([[[1.0]]], [[[1.0]]])  # y = (sum z^2) q
    with pytest.raises(ValueError, match="not finite .*rollout diverged"):
        model.generate(np.full((1, 2, 1), 10.0), 50)


def test_prompt_shapes_are_checked(rng):
    model = random_attention(rng, 3, 1, n_outputs=3)
    with pytest.raises(ValueError, match="token_dim=3 was expected"):
        model.generate(rng.normal(size=(2, 4, 2)), 2)
    X, y, _ = make_random_mhla(100, 4, 2, n_outputs=2, random_state=0)
    fitted = LinearAttentionRegressor(token_dim=2).fit(X.reshape(100, -1), y)
    with pytest.raises(ValueError, match="expecting 8 features"):
        fitted.generate(rng.normal(size=(2, 6)), 2)
    with pytest.raises(ValueError, match="token_dim=2 was expected"):
        fitted.generate(rng.normal(size=(2, 4, 3)), 2)


def test_generate_needs_a_fitted_estimator(rng):
    with pytest.raises(NotFittedError):
        LinearAttentionRegressor().generate(rng.normal(size=(2, 3, 2)), 2)
