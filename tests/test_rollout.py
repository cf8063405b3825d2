"""generate: the streaming rollout against recomputing predict on the growing prefix."""

import warnings

import numpy as np
import pytest
from conftest import random_attention
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionClassifierCV,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
    MultiHeadLinearAttention,
    generate_pipeline,
)
from sklearn_linattn.datasets import (
    make_automaton_rollout,
    make_automaton_transitions,
    make_random_mhla,
)
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
    pad_sequences,
)


def unit(outputs, step):
    """Next token: the output scaled to unit length (keeps the rollout bounded)."""
    return outputs / np.linalg.norm(outputs, axis=1, keepdims=True)


def append_token(sequences, token):
    """The sequences (n, n_tokens, d) followed by one more token (n, d)."""
    return np.concatenate([sequences, token[:, None, :]], axis=1)


def naive_rollout(
    predict, prompts, n_steps, to_token=None, per_position=False, append=append_token
):
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
        sequences = append(sequences, token)
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


def mhla_by_hand(model, sequences):
    """sum_h V_h (Z^T Z) Q_h q (PAPER.md), q the last token, with numpy alone."""
    moment = np.einsum("ntb,ntc->nbc", sequences, sequences)
    return np.einsum(
        "hab,nbc,hce,ne->na",
        model.value_matrices,
        moment,
        model.query_matrices,
        sequences[:, -1],
    )


@pytest.mark.parametrize(
    "n_samples, n_tokens, token_dim, n_heads, n_outputs, dtype",
    [
        (3, 1, 3, 2, 3, np.float64),  # a prompt of one token
        (1, 4, 2, 2, 2, np.float64),  # a single prompt
        (3, 4, 2, 7, 2, np.float64),  # more heads than the token dimension
        (3, 4, 3, 2, 3, np.float32),  # float32 prompts
        (2, 3, 3, 2, 4, np.float64),  # n_outputs > token_dim, mapped by to_token
    ],
)
def test_model_generate_is_the_formula_applied_to_the_grown_sequence(
    rng, n_samples, n_tokens, token_dim, n_heads, n_outputs, dtype
):
    model = random_attention(rng, token_dim, n_heads, n_outputs=n_outputs)
    prompts = rng.normal(size=(n_samples, n_tokens, token_dim)).astype(dtype)
    before = prompts.copy()

    def to_token(outputs, step):
        return np.tanh(outputs[:, :token_dim] + step)

    tokens, outputs = model.generate(prompts, 6, to_token=to_token)
    assert tokens.shape == (n_samples, 6, token_dim)
    assert outputs.shape == (n_samples, 6, n_outputs)
    assert tokens.dtype == outputs.dtype == np.float64
    sequences = prompts.astype(np.float64)
    for step in range(6):
        expected = mhla_by_hand(model, sequences)
        np.testing.assert_allclose(outputs[:, step], expected, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(
            tokens[:, step], to_token(expected, step), rtol=1e-12, atol=1e-14
        )
        sequences = append_token(sequences, tokens[:, step])
    np.testing.assert_array_equal(prompts, before)


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
    np.testing.assert_allclose(model.intercept_, [3.0, -1.0], atol=1e-8)
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
        (
            [np.ones(2), np.ones(3)],  # ragged: numpy's error named nothing
            r"to_token must return an array of shape \(n_samples, token_dim\) = "
            r"\(2, 2\); at step 0 numpy could not convert",
        ),
        (None, r"at step 0 it returned None \(a missing return statement\?\)"),
    ],
)
def test_to_token_return_is_checked(rng, returned, match):
    model = random_attention(rng, 2, 1, n_outputs=2)
    with pytest.raises(ValueError, match=match):
        model.generate(rng.normal(size=(2, 3, 2)), 3, to_token=lambda o, s: returned)


def test_to_token_may_return_a_sparse_matrix(rng):
    """A sparse matrix (e.g. a OneHotEncoder's output) is the same tokens as its
    dense array; it was refused as an array of shape ()."""
    import scipy.sparse as sp

    model = random_attention(rng, 3, 2, n_outputs=3)
    prompts = rng.normal(size=(4, 3, 3))

    def one_hot(outputs, step):
        return np.eye(3)[outputs.argmax(axis=1)]

    dense = model.generate(prompts, 5, to_token=one_hot)
    sparse = model.generate(
        prompts, 5, to_token=lambda o, s: sp.csr_matrix(one_hot(o, s))
    )
    np.testing.assert_array_equal(sparse.tokens, dense.tokens)
    np.testing.assert_array_equal(sparse.outputs, dense.outputs)


@pytest.mark.skipif(
    np.finfo(np.longdouble).max <= np.finfo(np.float64).max,
    reason="long double is float64 here",
)
def test_tokens_beyond_the_float64_range_are_refused_at_the_last_step(rng):
    """A long double token finite as long double but beyond float64 was stored
    as inf without an error when it was the last one."""
    model = random_attention(rng, 2, 1, n_outputs=2)
    huge = np.full((2, 2), np.longdouble(10) ** 400)
    with pytest.raises(ValueError, match="next token at step 0 is not finite"):
        model.generate(rng.normal(size=(2, 3, 2)), 1, to_token=lambda o, s: huge)


def test_a_diverging_rollout_is_reported(rng):
    model = MultiHeadLinearAttention([[[1.0]]], [[[1.0]]])  # y = (sum z^2) q
    with pytest.raises(ValueError, match="not finite .*rollout diverged"):
        model.generate(np.full((1, 2, 1), 10.0), 50)


@pytest.mark.parametrize("which", ["estimator", "model"])
def test_rollouts_beyond_memory_are_refused_naming_the_sizes(which):
    X, y, truth = make_random_mhla(100, 4, 2, n_heads=1, random_state=0)
    model = LinearAttentionRegressor().fit(X, y) if which == "estimator" else truth
    with pytest.raises(ValueError, match=r"tokens of shape \(2, 1000000000000, 2\)"):
        model.generate(X[:2], 10**12, to_token=lambda outputs, step: X[:2, -1])
    with pytest.raises(ValueError, match=r"tokens of shape \(2, ~2\*\*1328, 2\)"):
        model.generate(X[:2], 10**400, to_token=lambda outputs, step: X[:2, -1])


def test_pipeline_rollouts_beyond_memory_are_refused_naming_the_sizes():
    """generate_pipeline allocated its raw tokens first: a numpy MemoryError."""
    X, y, _ = make_random_mhla(100, 4, 2, n_outputs=2, random_state=0)
    pipe = make_pipeline(
        TokenwiseTransformer(StandardScaler()), LinearAttentionRegressor(n_heads=None)
    ).fit(X, y)
    with pytest.raises(ValueError, match=r"raw tokens of shape \(2, 10+, 2\)"):
        generate_pipeline(pipe, X[:2], 10**12, to_token=unit)


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


# --- the shapes of predict, for every estimator --------------------------------


def _fitted(name, n_targets, positions):
    """A fitted estimator: ``n_targets`` outputs (regressors; 1 means 1-D ``y``)
    or classes (classifiers), on 3-d tokens."""
    X, y, _ = make_random_mhla(
        300, 5, 3, n_heads=2, n_outputs=3, random_state=4, positions=positions
    )
    kind = {
        "regressor": LinearAttentionRegressor,
        "regressor_cv": LinearAttentionRegressorCV,
        "classifier": LinearAttentionClassifier,
        "classifier_cv": LinearAttentionClassifierCV,
    }[name]
    if name.startswith("classifier"):
        # classes by the largest of the first n_targets outputs
        targets = y[..., :n_targets].argmax(axis=-1)
    else:
        targets = y[..., 0] if n_targets == 1 else y[..., :n_targets]
    cv = {"cv": 3} if name.endswith("cv") and positions == "all" else {}
    model = kind(positions=positions, **cv).fit(X, targets)
    classifier = name.startswith("classifier")
    return model, model.decision_function if classifier else model.predict, X[:4]


@pytest.mark.parametrize("positions", ["last", "all"])
@pytest.mark.parametrize(
    "name, n_targets",
    [(name, n) for name in ("regressor", "regressor_cv") for n in (1, 2, 3)]
    + [(name, n) for name in ("classifier", "classifier_cv") for n in (2, 3)],
)
def test_generate_outputs_have_the_shape_of_predict(name, n_targets, positions):
    model, outputs_of, prompts = _fitted(name, n_targets, positions)
    rng = np.random.default_rng(5)
    lookup = rng.normal(size=(6, 4, 3))  # fixed tokens: outputs only read
    seen = []

    def to_token(outputs, step):
        seen.append(outputs.shape)
        return lookup[step]

    tokens, outputs = model.generate(prompts, 6, to_token=to_token)
    # the reference: predict (decision_function) on the grown sequence, last token
    _, expected = naive_rollout(
        outputs_of, prompts, 6, to_token=lambda o, s: lookup[s],
        per_position=positions == "all",
    )
    one_step = expected.shape[:1] + expected.shape[2:]
    assert seen == [one_step] * 6
    assert outputs.shape == expected.shape
    assert_close(outputs, expected)
    np.testing.assert_array_equal(tokens, lookup.transpose(1, 0, 2))


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_model_generate_outputs_have_the_shape_of_predict(rng, n_outputs):
    model = random_attention(rng, 3, 2, n_outputs=n_outputs)
    prompts = rng.normal(size=(4, 5, 3))
    lookup = rng.normal(size=(6, 4, 3))
    tokens, outputs = model.generate(prompts, 6, to_token=lambda o, s: lookup[s])
    _, expected = naive_rollout(model.predict, prompts, 6, lambda o, s: lookup[s])
    assert outputs.shape == expected.shape == (4, 6, n_outputs)
    assert_close(outputs, expected)


def test_two_state_automaton_rollout_executes_words_with_either_classifier():
    # Two states: one score per word, positive for state 1 (decision_function's
    # shape), which make_automaton_rollout's to_token reads. Walk histories of 5
    # tokens show the classifiers the tokens a rollout accumulates.
    X, _, labels, _ = make_automaton_transitions(
        1000, 2, 2, history=5, token_noise=0.1, random_state=0
    )
    prompts, to_token, states = make_automaton_rollout(20, 30, 2, 2, random_state=1)
    for clf in (LinearAttentionClassifier(), LinearAttentionClassifierCV()):
        clf.fit(X, labels)
        _, scores = clf.generate(prompts, 30, to_token=to_token)
        assert scores.shape == states.shape
        np.testing.assert_array_equal(clf.classes_[(scores > 0).astype(int)], states)


# --- every scale --------------------------------------------------------------


@pytest.mark.parametrize(
    "scale", [1e-150, 1e-110, 1e-60, 1.0, 1e60, 1e105, 1e150]
)
@pytest.mark.parametrize(
    "kind, positions",
    [
        (LinearAttentionRegressor, "last"),
        (LinearAttentionRegressor, "all"),
        (LinearAttentionRegressorCV, "last"),
    ],
)
def test_generate_is_the_rollout_by_predict_at_every_scale(kind, positions, scale):
    X, y, _ = make_random_mhla(
        300, 6, 3, n_heads=2, n_outputs=3, random_state=0, positions=positions
    )
    model = kind(positions=positions).fit(X * scale, y * scale)

    def to_token(outputs, step):  # tokens kept at the data's scale
        return scale * unit(outputs, step)

    prompts = X[:4] * scale
    tokens, outputs = model.generate(prompts, 20, to_token=to_token)
    expected_tokens, expected_outputs = naive_rollout(
        model.predict, prompts, 20, to_token, per_position=positions == "all"
    )
    assert np.all(np.abs(expected_outputs) > 0)  # no underflow in the reference
    assert_close(tokens, expected_tokens)
    assert_close(outputs, expected_outputs)


@pytest.mark.parametrize("scale", [1e-90, 1e-60, 1.0, 1e60, 1e102])
def test_model_generate_is_the_rollout_by_predict_at_every_scale(scale):
    _, _, truth = make_random_mhla(10, 6, 3, n_heads=2, n_outputs=3, random_state=0)
    prompts = make_random_mhla(4, 6, 3, random_state=1)[0] * scale

    def to_token(outputs, step):  # largest entry the prompts' scale (outputs: its cube)
        return outputs / np.abs(outputs).max(axis=1, keepdims=True) * scale

    tokens, outputs = truth.generate(prompts, 20, to_token=to_token)
    expected_tokens, expected_outputs = naive_rollout(
        truth.predict, prompts, 20, to_token
    )
    assert_close(tokens, expected_tokens)
    assert_close(outputs, expected_outputs)


@pytest.mark.parametrize("kind", [LinearAttentionRegressor, LinearAttentionClassifier])
def test_predict_of_a_batch_of_mixed_scales_is_that_of_each_sequence(kind):
    """Each sequence is lifted in its own power-of-two scale: a prompt 1e-25
    predicted beside one 1e100 (outputs 1e-75 and 1e300) gets its own output,
    as generate's first step does."""
    X, y, _ = make_random_mhla(300, 6, 3, n_heads=2, random_state=0)
    model = kind().fit(X, y if kind is LinearAttentionRegressor else y > 0)
    predict = getattr(model, "decision_function", model.predict)
    alone = predict(1e-25 * X[:1])
    batch = predict(np.concatenate([1e-25 * X[:1], 1e100 * X[1:2]]))
    np.testing.assert_allclose(batch[:1], alone, rtol=1e-12)
    assert np.all(np.abs(alone) > 1e-80)


def test_prompts_of_different_scales_roll_out_each_at_its_own_scale():
    # One call, prompts 1e-110, 1e-60 and 1e-10 (outputs 1e-110 to 1e190 from a
    # model fitted at 1e-110): each rolls out as predict on it alone
    X, y, _ = make_random_mhla(300, 6, 3, n_heads=2, n_outputs=3, random_state=0)
    model = LinearAttentionRegressor().fit(X * 1e-110, y * 1e-110)
    scales = np.array([1e-110, 1e-60, 1e-10])

    def at_scales(scales):  # next tokens: largest entry the prompt's scale
        def to_token(outputs, step):
            largest = np.abs(outputs).max(axis=1, keepdims=True)
            return scales[:, None] * (outputs / largest)

        return to_token

    prompts = X[:3] * scales[:, None, None]
    tokens, outputs = model.generate(prompts, 20, at_scales(scales))
    for i in range(3):
        expected_tokens, expected_outputs = naive_rollout(
            model.predict, prompts[i : i + 1], 20, at_scales(scales[i : i + 1])
        )
        assert_close(tokens[i : i + 1], expected_tokens)
        assert_close(outputs[i : i + 1], expected_outputs)


@pytest.mark.parametrize("which", ["estimator", "model"])
@pytest.mark.parametrize("zero", ["prompt", "token"])
def test_zero_tokens_keep_the_scale_of_a_tiny_rollout(which, zero):
    """An all-zero prompt (padding) or a zero next token has no scale: the
    state stays in that of the tokens (1e-160, outputs 1e-175), not moved to
    units of 1 where its entries (1e-320) would lose their digits to
    underflow."""
    scale = 1e-160
    X, y, truth = make_random_mhla(300, 6, 3, n_heads=2, n_outputs=3, random_state=0)
    if which == "estimator":
        model = LinearAttentionRegressor().fit(X * scale, y * 1e-175)
    else:  # heads large enough for outputs of 1e-175 at that scale
        model = MultiHeadLinearAttention(
            truth.value_matrices * 1e150, truth.query_matrices * 1e150
        )
    prompts = X[:3] * scale
    if zero == "prompt":
        prompts[0] = 0.0

    def to_token(outputs, step):  # a zero token at step 0, then tokens at scale
        if step == 0 and zero == "token":
            return np.zeros((3, 3))
        return np.random.default_rng(step).normal(size=(3, 3)) * scale

    tokens, outputs = model.generate(prompts, 4, to_token=to_token)
    expected_tokens, expected_outputs = naive_rollout(
        model.predict, prompts, 4, to_token
    )
    assert np.all(np.abs(expected_outputs[:, 2:]) > 1e-200)
    assert_close(tokens, expected_tokens)
    assert_close(outputs, expected_outputs)


# --- overflow -----------------------------------------------------------------


def growing_tokens(n_samples, token_dim):
    """A to_token that ignores the outputs: tokens 10, 100, 1000, ..."""
    return lambda outputs, step: np.full((n_samples, token_dim), 10.0 ** (step + 1))


def first_overflow(predict, prompts, to_token, n_steps):
    """The first step whose output, predicted on the grown sequence, is not finite."""
    sequences = prompts
    for step in range(n_steps):
        with np.errstate(over="ignore", invalid="ignore"):
            output = np.asarray(predict(sequences))
        if not np.all(np.isfinite(output)):
            return step
        token = to_token(output, step)
        sequences = np.concatenate([sequences, token[:, None, :]], axis=1)
    raise AssertionError("the reference rollout did not overflow")


@pytest.mark.parametrize("which", ["estimator", "model"])
def test_outputs_that_overflow_raise_an_error_naming_the_step(which):
    X, y, truth = make_random_mhla(300, 6, 3, n_heads=2, n_outputs=3, random_state=0)
    model = LinearAttentionRegressor().fit(X, y) if which == "estimator" else truth
    to_token = growing_tokens(4, 3)
    step = first_overflow(model.predict, X[:4], to_token, 200)
    assert step > 50  # the tokens themselves stay finite throughout
    with pytest.raises(ValueError, match=f"output at step {step} is not finite"):
        model.generate(X[:4], 200, to_token=to_token)
    # up to that step the rollout runs
    tokens, outputs = model.generate(X[:4], step, to_token=to_token)
    assert np.all(np.isfinite(outputs))


# --- pipelines ----------------------------------------------------------------


def shifted_data(n_samples=400, positions="last"):
    """Sequences of raw tokens ``3 z + 1`` with targets of a layer on ``z``, so
    that a centering scaler and a constant feature are what the model needs."""
    X, y, _ = make_random_mhla(
        n_samples, 6, 2, n_heads=2, n_outputs=2, random_state=6, positions=positions
    )
    return 3.0 * X + 1.0, y


def bounded(outputs, step):
    """Raw next token from outputs: on the unit circle around the raw mean 1."""
    return 1.0 + 3.0 * unit(outputs, step)


@pytest.mark.parametrize("positions", ["last", "all"])
def test_pipeline_rollout_is_the_rollout_by_pipeline_predict(positions):
    X, y = shifted_data(positions=positions)
    pipe = make_pipeline(
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(n_positions=0, constant=True),
        LinearAttentionRegressor(positions=positions),
    ).fit(X, y)
    prompts = X[:5]
    tokens, outputs = generate_pipeline(pipe, prompts, 15, to_token=bounded)
    expected = naive_rollout(
        pipe.predict, prompts, 15, bounded, per_position=positions == "all"
    )
    assert tokens.shape == (5, 15, 2) and outputs.shape == (5, 15, 2)
    assert_close(tokens, expected[0])
    assert_close(outputs, expected[1])


def test_pipeline_rollout_keeps_left_padding_as_predict_does():
    # Ragged prompts, left-padded; one prompt all padding whose first generated
    # token is zero too (still padding) and then not: the scaler maps real zero
    # tokens to -mean/std and leaves padding zero, token by token as predict.
    X, y = shifted_data()
    pipe = make_pipeline(
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(n_positions=0, constant=True),
        LinearAttentionRegressor(),
    ).fit(X, y)
    prompts = pad_sequences([X[0, 3:], X[1], X[2, 5:], np.zeros((0, 2))])
    rng = np.random.default_rng(7)
    lookup = rng.normal(size=(8, 4, 2))
    lookup[0, 3] = 0.0  # a zero token after the all-padding prompt: padding
    lookup[0, 1] = 0.0  # a zero token right after a real prompt: real

    def to_token(outputs, step):
        return lookup[step]

    tokens, outputs = generate_pipeline(pipe, prompts, 8, to_token=to_token)
    expected = naive_rollout(pipe.predict, prompts, 8, to_token)
    np.testing.assert_array_equal(tokens, expected[0])
    assert_close(outputs, expected[1])


@pytest.mark.parametrize("kind", ["onehot", "sinusoidal"])
def test_pipeline_rollout_with_positions_counted_from_the_start(kind):
    """Positions counted from the start do not move when a token is appended, so
    the pipeline rolls out; prompts of different lengths (left-padded) count from
    their own first token, beyond n_positions too, as predict on the grown raw
    sequence does."""
    X, y = shifted_data(positions="all")
    pipe = make_pipeline(
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(kind=kind, n_positions=4, origin="start"),
        LinearAttentionRegressor(positions="all", alpha=1e-6, n_heads=None),
    ).fit(X, y)
    prompts = X[:4].copy()
    prompts[0, :5] = 0.0  # left padding: one real token, then the rollout
    prompts[1, :2] = 0.0
    tokens, outputs = generate_pipeline(pipe, prompts, 8, to_token=bounded)
    expected = naive_rollout(pipe.predict, prompts, 8, bounded, per_position=True)
    assert_close(tokens, expected[0])
    assert_close(outputs, expected[1])


def test_pipeline_rollout_of_a_prompt_that_is_all_padding_so_far():
    """A zero raw token appended to an all-zero prompt is still padding (as in
    transform): it gets no position, and the first non-zero token is position 0."""
    X, y = shifted_data()
    pipe = make_pipeline(
        PositionalEncoding(n_positions=3, origin="start"),
        LinearAttentionRegressor(alpha=1e-6, n_heads=None),
    ).fit(X, y)
    prompts = np.zeros((1, 3, 2))
    raw = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 2.0], [0.5, -1.0], [0.0, 0.0]])

    def to_token(outputs, step):
        return raw[step][None]

    with warnings.catch_warnings():  # an empty prompt is a rollout's start
        warnings.simplefilter("error")
        tokens, outputs = generate_pipeline(pipe, prompts, 5, to_token=to_token)
    with pytest.warns(UserWarning, match="as left padding throughout"):
        expected = naive_rollout(pipe.predict, prompts, 5, to_token)
    np.testing.assert_array_equal(tokens, expected[0])
    assert_close(outputs, expected[1])


def test_pipeline_rollout_where_every_prompt_is_still_padding():
    """A step in which every new token is padding maps none (transform does not
    call the transformer with no tokens; StandardScaler refuses 0 samples)."""
    X, y = shifted_data()
    pipe = make_pipeline(
        TokenwiseTransformer(StandardScaler(), padding="left"),
        PositionalEncoding(n_positions=2, origin="start"),
        LinearAttentionRegressor(alpha=1e-6, n_heads=None),
    ).fit(X, y)
    prompts = np.zeros((2, 3, 2))
    raw = np.array([[0.0, 0.0], [1.0, 2.0], [0.5, -1.0]])

    def to_token(outputs, step):
        return np.repeat(raw[step][None], 2, axis=0)

    tokens, outputs = generate_pipeline(pipe, prompts, 3, to_token=to_token)
    with warnings.catch_warnings():  # (all padding at the first steps)
        warnings.simplefilter("ignore", UserWarning)
        expected = naive_rollout(pipe.predict, prompts, 3, to_token)
    np.testing.assert_array_equal(tokens, expected[0])
    assert_close(outputs, expected[1])


def test_pipeline_rollout_of_dask_prompts_is_that_of_the_computed_prompts():
    """As generate, generate_pipeline computes Dask prompts first (its token-wise
    steps take sequences in memory)."""
    da = pytest.importorskip("dask.array")
    X, y, _ = make_random_mhla(300, 6, 2, n_outputs=2, random_state=0)
    pipe = make_pipeline(
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(n_positions=2, origin="start"),
        LinearAttentionRegressor(),
    ).fit(X, y)
    tokens, outputs = generate_pipeline(
        pipe, da.from_array(X[:4], chunks=2), 5, to_token=unit
    )
    expected = generate_pipeline(pipe, X[:4], 5, to_token=unit)
    assert isinstance(tokens, np.ndarray)
    np.testing.assert_array_equal(tokens, expected.tokens)
    np.testing.assert_array_equal(outputs, expected.outputs)


def test_pipeline_rollout_of_series_appends_time_steps():
    # channels-first series (n_cases, n_channels, n_timepoints): a raw token is
    # one time step, appended along the time axis of the series
    X, y = shifted_data()
    series = X.transpose(0, 2, 1)
    pipe = make_pipeline(
        SeriesToTokens(),
        make_pipeline(  # nested pipelines are flattened
            TokenwiseTransformer(StandardScaler()),
            PositionalEncoding(n_positions=0, constant=True),
        ),
        LinearAttentionRegressor(),
    ).fit(series, y)

    def append_time_step(series, token):
        return np.concatenate([series, token[:, :, None]], axis=2)

    tokens, outputs = generate_pipeline(pipe, series[:4], 10, to_token=bounded)
    expected = naive_rollout(
        pipe.predict, series[:4], 10, bounded, append=append_time_step
    )
    assert_close(tokens, expected[0])
    assert_close(outputs, expected[1])


def test_pipeline_rollout_of_ragged_series_appends_time_steps():
    # a list of series of different lengths, left-padded by SeriesToTokens
    rng = np.random.default_rng(9)
    series = [1.0 + rng.normal(size=(2, n)) for n in rng.integers(4, 9, size=300)]
    y = np.array([s[0] @ s[1] * s[1, -1] for s in series])
    pipe = make_pipeline(
        SeriesToTokens(),
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(n_positions=0, constant=True),
        LinearAttentionRegressor(),
    ).fit(series, y)
    prompts = series[:4]
    tokens, outputs = generate_pipeline(pipe, prompts, 6, to_token=bounded2d)
    grown = list(prompts)
    for step in range(6):  # outputs[:, t]: predict on the prompt and tokens[:, :t]
        expected = pipe.predict(grown)
        assert_close(outputs[:, step : step + 1], expected[:, None])
        assert_close(tokens[:, step : step + 1], bounded2d(expected, step)[:, None])
        grown = [
            np.concatenate([s, token[:, None]], axis=1)
            for s, token in zip(grown, tokens[:, step], strict=True)
        ]


def bounded2d(outputs, step):
    """A raw time step of two channels from one output per series."""
    return 1.0 + np.column_stack([np.cos(outputs), np.sin(outputs)])


def test_pipeline_rollout_of_a_classifier_reads_its_scores():
    X, y = shifted_data()
    labels = (y[:, 0] > 0).astype(int)
    pipe = make_pipeline(
        TokenwiseTransformer(PCA(n_components=2)),
        PositionalEncoding(n_positions=0, constant=True),
        LinearAttentionClassifierCV(),
    ).fit(X, labels)
    rng = np.random.default_rng(8)
    lookup = 1.0 + rng.normal(size=(2, 6, 4, 2))  # a raw token per label

    def to_token(scores, step):
        return lookup[(scores > 0).astype(int), step, np.arange(4)]

    tokens, scores = generate_pipeline(pipe, X[:4], 6, to_token=to_token)
    expected = naive_rollout(pipe.decision_function, X[:4], 6, to_token)
    assert scores.shape == (4, 6)
    np.testing.assert_array_equal(tokens, expected[0])
    assert_close(scores, expected[1])


def test_pipeline_rollout_without_to_token_appends_the_raw_outputs():
    X, y = shifted_data()
    pipe = make_pipeline(
        TokenwiseTransformer(StandardScaler(with_mean=False)),
        LinearAttentionRegressor(),
    ).fit(X, y)
    prompts = 0.3 * X[:3]
    tokens, outputs = generate_pipeline(pipe, prompts, 5)
    expected = naive_rollout(pipe.predict, prompts, 5)
    np.testing.assert_array_equal(tokens, outputs)
    assert_close(outputs, expected[1])


@pytest.mark.parametrize(
    "steps, named",
    [
        (
            [PositionalEncoding(n_positions=2)],
            ["'positionalencoding'", "query", "origin='start'"],
        ),
        (
            [PositionalEncoding(kind="sinusoidal", n_positions=4, constant=True)],
            ["'positionalencoding'", "count from the query"],
        ),
        (
            [
                TokenwiseTransformer(StandardScaler()),
                FunctionTransformer(),
                PositionalEncoding(),
            ],
            ["'functiontransformer'", "'positionalencoding'"],
        ),
    ],
)
def test_pipeline_steps_that_are_not_tokenwise_are_named(steps, named):
    X, y = shifted_data(100)
    pipe = make_pipeline(*steps, LinearAttentionRegressor()).fit(X, y[:, 0])
    with pytest.raises(ValueError, match="do not") as error:
        generate_pipeline(pipe, X[:2], 3, to_token=lambda o, s: np.ones((2, 2)))
    for name in named:
        assert name in str(error.value)
    assert "'tokenwisetransformer'" not in str(error.value)


def test_a_scaler_of_flattened_rows_is_not_tokenwise():
    # StandardScaler on rows (n, n_tokens * d) scales each position separately
    X, y = shifted_data(100)
    rows = X.reshape(100, -1)
    pipe = make_pipeline(StandardScaler(), LinearAttentionRegressor(token_dim=2))
    pipe.fit(rows, y[:, 0])
    with pytest.raises(ValueError, match="'standardscaler': StandardScaler is not"):
        generate_pipeline(pipe, rows[:2], 3, to_token=lambda o, s: np.ones((2, 2)))


@pytest.mark.parametrize(
    "step, match",
    [(SeriesToTokens(window=2), "window=2"), (SeriesToTokens(max_len=4), "max_len=4")],
)
def test_series_steps_that_regroup_or_truncate_are_not_tokenwise(step, match):
    X, y = shifted_data(100)
    series = X.transpose(0, 2, 1)
    pipe = make_pipeline(step, LinearAttentionRegressor()).fit(series, y[:, 0])
    with pytest.raises(ValueError, match=f"'seriestotokens': with {match}|{match}"):
        generate_pipeline(pipe, series[:2], 3, to_token=lambda o, s: np.ones((2, 2)))


def test_generate_pipeline_needs_a_pipeline_ending_in_generate():
    X, y = shifted_data(100)
    model = LinearAttentionRegressor().fit(X, y)
    with pytest.raises(TypeError, match="expects a fitted sklearn.pipeline.Pipeline"):
        generate_pipeline(model, X[:2], 3)
    ridge = make_pipeline(StandardScaler(), Ridge()).fit(X.reshape(100, -1), y)
    with pytest.raises(TypeError, match="Ridge, has no generate"):
        generate_pipeline(ridge, X[:2].reshape(2, -1), 3)
    pipe = make_pipeline(TokenwiseTransformer(StandardScaler()), model)
    with pytest.raises(NotFittedError):
        generate_pipeline(make_pipeline(LinearAttentionRegressor()), X[:2], 3)
    pipe.fit(X, y)
    with pytest.raises(ValueError, match=r"shape \(n_samples, token_dim\) = \(2, 2\)"):
        generate_pipeline(pipe, X[:2], 3, to_token=lambda o, s: np.ones((2, 3)))
    with pytest.raises(TypeError, match="to_token must be None or a callable"):
        generate_pipeline(pipe, X[:2], 3, to_token=np.eye(2))


def test_pipeline_nested_last_rolls_out_as_its_flattened_pipeline():
    """A pipeline whose last step is a pipeline ending in the estimator (as
    scikit-learn allows) rolls out as the flat one; its steps are checked too
    (it was refused: "Pipeline, has no generate method")."""
    X, y, _ = make_random_mhla(300, 6, 2, n_outputs=2, random_state=0)
    nested = make_pipeline(
        TokenwiseTransformer(StandardScaler()),
        make_pipeline(
            PositionalEncoding(n_positions=2, origin="start"),
            LinearAttentionRegressor(),
        ),
    ).fit(X, y)
    tokens, outputs = generate_pipeline(nested, X[:3], 5, to_token=unit)
    expected = naive_rollout(nested.predict, X[:3], 5, unit)
    np.testing.assert_allclose(tokens, expected[0], rtol=1e-10)
    assert_close(outputs, expected[1])
    refused = make_pipeline(
        "passthrough",
        make_pipeline(PositionalEncoding(n_positions=2), LinearAttentionRegressor()),
    ).fit(X, y)
    with pytest.raises(ValueError, match="'pipeline__positionalencoding': its 2"):
        generate_pipeline(refused, X[:3], 5, to_token=unit)


@pytest.mark.parametrize(
    "step", [TokenwiseTransformer(StandardScaler()), PositionalEncoding(origin="start")]
)
def test_generate_pipeline_of_an_unfitted_pipeline_is_not_fitted_error(step):
    """The steps' token-by-token checks read fitted attributes: an unfitted
    pipeline raised AttributeError ('transformer_', 'n_positions_')."""
    pipe = make_pipeline(step, LinearAttentionRegressor())
    with pytest.raises(NotFittedError, match="not fitted yet"):
        generate_pipeline(pipe, np.ones((3, 6, 2)), 2)


@pytest.mark.parametrize(
    "steps, named",
    [
        ([StandardScaler()], "'standardscaler': StandardScaler is not a token-wise"),
        ([PositionalEncoding(n_positions=2)], "'positionalencoding': its 2 position"),
        ([SeriesToTokens(window=2)], "'seriestotokens': with window=2"),
        ([SeriesToTokens(max_len=4)], "'seriestotokens': max_len=4"),
        (
            [make_pipeline(TokenwiseTransformer(StandardScaler()), StandardScaler())],
            "pipeline__'standardscaler'",
        ),
    ],
    ids=["scaler", "positions", "window", "max_len", "nested"],
)
def test_generate_pipeline_names_steps_that_cannot_roll_out_before_fitting(
    steps, named
):
    """A step that cannot act token by token whatever its fit was reported
    after NotFittedError: the user fitted the pipeline only to learn that it can
    never roll out."""
    pipe = make_pipeline(*steps, LinearAttentionRegressor())
    with pytest.raises(ValueError, match="do not") as error:
        generate_pipeline(pipe, np.ones((3, 6, 2)), 2)
    assert named in str(error.value)


@pytest.mark.parametrize(
    "step",
    [
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(origin="start", n_positions=2),
        "passthrough",
    ],
    ids=["tokenwise", "positions", "passthrough"],
)
@pytest.mark.parametrize(
    "prompts, error, match",
    [
        (None, TypeError, "array of sequences; got None"),
        ([np.ones((5, 2)), np.ones((3, 2))], ValueError, "different lengths"),
        (np.ones((2, 5, 1)), ValueError, "token dimension 1"),
    ],
    ids=["None", "ragged", "token_dim"],
)
def test_generate_pipeline_checks_the_prompts_as_its_steps_do(
    step, prompts, error, match
):
    """The steps' token-by-token state read the raw prompts before the step's
    transform checked them: None was "len() of unsized object", a ragged list
    numpy's "inhomogeneous shape", and tokens of another dimension before
    PositionalEncoding "cannot reshape array of size 10"."""
    X, y = shifted_data(100)
    pipe = make_pipeline(step, LinearAttentionRegressor(n_heads=None)).fit(X, y)
    with pytest.raises(error, match=match):
        generate_pipeline(pipe, prompts, 2, to_token=lambda o, s: o)
