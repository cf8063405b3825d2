"""The paper's tasks: shapes, generating models, known certificates, execution."""

import numpy as np
import pytest
from conftest import n_lifted, naive_lifted_features
from scipy import stats

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    LinearAttentionRegressorCV,
    MultiHeadLinearAttention,
    certify,
)
from sklearn_linattn._lift import lifted_position_features
from sklearn_linattn.datasets import (
    associative_recall_attention,
    automaton_lookup_attention,
    encode_automaton_lookup,
    execute_automaton,
    incontext_preconditioner,
    make_associative_recall,
    make_automaton,
    make_automaton_lookups,
    make_automaton_rollout,
    make_automaton_traces,
    make_automaton_transitions,
    make_incontext_regression,
    make_random_mhla,
)


def test_random_mhla_targets_are_the_model_output():
    X, y, model = make_random_mhla(50, 7, 3, n_heads=2, n_outputs=2, random_state=0)
    assert X.shape == (50, 7, 3) and y.shape == (50, 2) and model.n_heads == 2
    np.testing.assert_allclose(y, model.predict(X))
    # entries N(0, 1/T): a sample standard deviation has standard error
    # sigma / sqrt(2 N); within 8 of them (measured 0.6)
    sigma = 1 / np.sqrt(7)
    assert abs(X.std() - sigma) < 8 * sigma / np.sqrt(2 * X.size)
    X2, y2, _ = make_random_mhla(50, 7, 3, n_heads=2, n_outputs=2, random_state=0)
    np.testing.assert_array_equal(X, X2)
    _, noisy, _ = make_random_mhla(2000, 7, 3, noise=0.5, random_state=1)
    _, clean, _ = make_random_mhla(2000, 7, 3, random_state=1)
    assert noisy.shape == (2000,)
    assert abs(np.std(noisy - clean) - 0.5) < 0.05


def mhla_by_hand(model, X, positions="last", causal=True):
    """sum_h V_h S Q_h z_t (PAPER.md) with numpy alone: at the last token, or at
    every position t with S the prefix's (causal) or the whole sequence's."""
    V, Q = model.value_matrices, model.query_matrices
    if positions == "last":
        S = np.einsum("ntb,ntc->nbc", X, X)
        return np.einsum("hab,nbc,hce,ne->na", V, S, Q, X[:, -1])
    out = np.empty((X.shape[0], X.shape[1], V.shape[1]))
    for t in range(X.shape[1]):
        seen = X[:, : t + 1] if causal else X
        S = np.einsum("ntb,ntc->nbc", seen, seen)
        out[:, t] = np.einsum("hab,nbc,hce,ne->na", V, S, Q, X[:, t])
    return out


@pytest.mark.parametrize(
    "shape, n_heads, n_outputs, positions, causal",
    [
        ((1, 5, 3), 1, 1, "last", True),  # one sample
        ((4, 1, 3), 2, 1, "last", True),  # one token
        ((4, 5, 2), 7, 3, "last", True),  # more heads than the token dimension
        ((4, 5, 3), 2, 1, "all", True),
        ((4, 5, 3), 2, 2, "all", False),
    ],
)
def test_random_mhla_targets_are_the_formula(
    shape, n_heads, n_outputs, positions, causal
):
    X, y, model = make_random_mhla(
        *shape,
        n_heads=n_heads,
        n_outputs=n_outputs,
        random_state=0,
        positions=positions,
        causal=causal,
    )
    assert X.shape == shape and X.dtype == y.dtype == np.float64
    assert model.value_matrices.shape == (n_heads, n_outputs, shape[2])
    assert model.query_matrices.shape == (n_heads, shape[2], shape[2])
    expected = mhla_by_hand(model, X, positions, causal)
    if n_outputs == 1:
        expected = expected[..., 0]
    assert y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-15)


def test_random_mhla_parameters_are_normal_with_variance_one_over_d():
    # entries N(0, 1/d): the sample variance of m entries has standard error
    # sqrt(2/m)/d; within 8 of them
    _, _, model = make_random_mhla(2, 3, 8, n_heads=40, n_outputs=10, random_state=0)
    for matrices in (model.value_matrices, model.query_matrices):
        assert abs(matrices.var() - 1 / 8) < 8 * np.sqrt(2 / matrices.size) / 8


GENERATORS = {
    "random_mhla": lambda rs: make_random_mhla(5, 3, 2, random_state=rs),
    "associative_recall": lambda rs: make_associative_recall(5, 2, 2, random_state=rs),
    "paper_recall": lambda rs: make_associative_recall(
        5, 2, 2, "paper", random_state=rs, p_orth=0.5
    ),
    "automaton": lambda rs: make_automaton(3, 2, random_state=rs),
    "automaton_lookups": lambda rs: make_automaton_lookups(
        5, 2, 2, token_noise=0.1, random_state=rs
    ),
    "automaton_traces": lambda rs: make_automaton_traces(5, 3, 2, 2, random_state=rs),
    "automaton_transitions": lambda rs: make_automaton_transitions(
        5, 2, 2, history=2, random_state=rs
    ),
    "automaton_rollout": lambda rs: make_automaton_rollout(5, 3, 2, 2, random_state=rs),
    "incontext": lambda rs: make_incontext_regression(
        5, 3, 2, noise=0.1, random_state=rs, return_tasks=True
    ),
}


def _arrays(result):
    result = result if isinstance(result, tuple) else (result,)
    return [value for value in result if isinstance(value, np.ndarray)]


def _same(first, second):
    return all(
        np.array_equal(a, b)
        for a, b in zip(_arrays(first), _arrays(second), strict=True)
    )


@pytest.mark.parametrize("generate", GENERATORS.values(), ids=GENERATORS)
def test_generators_are_reproducible_for_every_kind_of_random_state(generate):
    for seed in (
        lambda: 3,
        lambda: np.int64(3),
        lambda: np.random.default_rng(3),
        lambda: np.random.RandomState(3),
    ):
        assert _same(generate(seed()), generate(seed()))
    # a shared Generator or RandomState moves on between calls, as does None
    for shared in (np.random.default_rng(3), np.random.RandomState(3), None):
        assert not _same(generate(shared), generate(shared))


def recall_by_hand(X, key_dim):
    """sum_j <q, k_j> v_j over every token (the query's own value is zeta)."""
    keys, values = X[:, :, :key_dim], X[:, :, key_dim:]
    weights = np.einsum("ntk,nk->nt", keys, X[:, -1, :key_dim])
    return np.einsum("nt,ntv->nv", weights, values)


@pytest.mark.parametrize("distribution, n_pairs", [("gaussian", 3), ("orthogonal", 6)])
def test_associative_recall_targets(distribution, n_pairs):
    X, y, model = make_associative_recall(40, 3, n_pairs, distribution, random_state=0)
    assert X.shape == (40, n_pairs + 1, 6) and y.shape == (40, 3)
    np.testing.assert_allclose(y, recall_by_hand(X, 3), atol=1e-12)
    query_key = X[:, -1, :3]
    stored = X[:, :-1, :3]
    assert all(
        any(np.allclose(q, k) for k in ks)
        for q, ks in zip(query_key, stored, strict=True)
    )
    if distribution == "orthogonal":
        gram = np.einsum("ntd,nsd->nts", X[:, :-1], X[:, :-1])
        np.testing.assert_allclose(
            gram, np.broadcast_to(np.eye(n_pairs), gram.shape), atol=1e-12
        )
    assert model.distance(associative_recall_attention(3)) == 0.0


def test_recall_certificates_match_the_paper():
    X, _, _ = make_associative_recall(4 * n_lifted(8), 4, 4, "gaussian", random_state=0)
    assert certify(X).identifiable
    X, y, model = make_associative_recall(2000, 4, 8, "orthogonal", random_state=0)
    cert = certify(X)
    assert not cert.identifiable and abs(cert.min_eigenvalue) < 1e-12
    # Some minimizer (here the minimum-norm one) computes another function.
    fitted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    assert fitted.attention_.distance(model) > 0.1 * np.linalg.norm(model.lifted_coef())
    # The fewest heads that fit the data as well: here the generating one.
    fewest = LinearAttentionRegressor().fit(X, y)
    assert fewest.n_heads_ == 1
    scale = np.linalg.norm(model.lifted_coef())
    assert fewest.attention_.distance(model) < 1e-4 * scale


def test_automaton_encoding_and_generating_model():
    table = make_automaton(3, 2, random_state=0)
    assert table.shape == (3, 2) and table.min() >= 0 and table.max() < 3
    sequence = encode_automaton_lookup(table, 2, 1, random_state=0)
    assert sequence.shape == (7, 9)
    assert sequence[-1].tolist() == [0, 0, 0, 0, 0, 1, 0, 0, 0]
    entries = {(int(np.argmax(t[:6])), int(np.argmax(t[6:]))) for t in sequence[:-1]}
    assert entries == {(s * 2 + a, table[s, a]) for s in range(3) for a in range(2)}
    output = automaton_lookup_attention(3, 2).predict(sequence[None])[0]
    np.testing.assert_array_equal(output, np.eye(3)[table[2, 1]])


def test_automaton_lookups():
    X, y, labels, model = make_automaton_lookups(30, 3, 2, random_state=0)
    assert X.shape == (30, 7, 9) and y.shape == (30, 3)
    np.testing.assert_array_equal(np.argmax(y, axis=1), labels)
    Xn, yn, labels_n, _ = make_automaton_lookups(
        30, 3, 2, token_noise=0.1, random_state=0
    )
    np.testing.assert_allclose(yn, model.predict(Xn))
    np.testing.assert_array_equal(labels_n, labels)
    assert 0.05 < np.std(Xn - X) < 0.15


def run_by_hand(table, word, start=0):
    states = [start]
    for symbol in word:
        states.append(int(table[states[-1], symbol]))
    return states


def test_execute_automaton_with_models_and_estimators():
    rng = np.random.default_rng(0)
    X, y, labels, model = make_automaton_lookups(
        600, 2, 2, token_noise=0.1, random_state=1
    )
    regressor = LinearAttentionRegressor().fit(X, y)
    classifier = LinearAttentionClassifier(alpha=1e-3).fit(X, labels)
    for _ in range(5):
        table = make_automaton(2, 2, rng)
        word = rng.integers(0, 2, size=30)
        expected = run_by_hand(table, word, start=1)
        for runner in (model, regressor, classifier):
            assert execute_automaton(runner, table, word, start=1).tolist() == expected


def test_execute_automaton_reads_the_last_token_whichever_positions_were_fitted():
    """An estimator fitted at every position (on traces) runs lookups, and one
    fitted at the last token (on lookups) runs traces: predict's output at the
    last token is the next state either way. Before, these crashed with
    unrelated errors ("state must lie in [0, 2)", "cannot reshape", "only
    length-1 arrays")."""
    X, y, labels, _ = make_automaton_traces(
        200, 6, 2, 2, token_noise=0.05, random_state=0
    )
    Xl, yl, labels_l, _ = make_automaton_lookups(
        200, 2, 2, token_noise=0.05, random_state=0
    )
    # (model, the positions it runs): a classifier of lookups is fitted to the
    # labels, not to the generating layer's outputs on noisy tokens, so it is
    # not that layer exactly and drifts on long traces; it runs lookups only
    fitted = [
        (LinearAttentionRegressor(n_heads=None, positions="all").fit(X, y), "both"),
        (
            LinearAttentionClassifier(n_heads=None, positions="all").fit(X, labels),
            "both",
        ),
        (LinearAttentionRegressor(n_heads=None).fit(Xl, yl), "both"),
        (LinearAttentionClassifier(n_heads=None).fit(Xl, labels_l), "last"),
    ]
    rng = np.random.default_rng(5)
    for _ in range(3):
        table = make_automaton(2, 2, rng)
        word = rng.integers(0, 2, size=12)
        expected = run_by_hand(table, word, start=1)
        for model, runs in fitted:
            for positions in ("last", "all") if runs == "both" else (runs,):
                states = execute_automaton(model, table, word, 1, positions)
                assert states.tolist() == expected


def test_execute_automaton_refuses_models_that_do_not_predict_states():
    X, y, labels, _ = make_automaton_lookups(
        200, 2, 2, token_noise=0.05, random_state=0
    )
    table, word = [[1, 0], [0, 1]], [0, 1, 0]
    one_score = LinearAttentionRegressor(n_heads=None).fit(X, y[:, 1] - y[:, 0])
    with pytest.raises(ValueError, match=r"largest of the model's 2 outputs.*1 output"):
        execute_automaton(one_score, table, word)
    named = LinearAttentionClassifier(n_heads=None).fit(
        X, np.array(["even", "odd"])[labels]
    )
    with pytest.raises(ValueError, match=r"\[0, 2\).*predicted '(even|odd)'"):
        execute_automaton(named, table, word)
    shifted = LinearAttentionClassifier(n_heads=None).fit(X, labels + 5)
    with pytest.raises(ValueError, match=r"integer in \[0, 2\).*predicted [56]"):
        execute_automaton(shifted, table, word)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: make_random_mhla(0, 3, 2), "n_samples must be an integer >= 1"),
        (lambda: make_random_mhla(3, 3, 2, random_state="a"), "random_state must be"),
        # True was seed 1 and False seed 0 (np.True_ was refused)
        (
            lambda: make_random_mhla(3, 3, 2, random_state=True),
            r"random_state must be .* \(not a bool\), got True",
        ),
        (
            lambda: make_incontext_regression(3, 3, 2, random_state=False),
            r"\(not a bool\), got False",
        ),
        (lambda: make_random_mhla(5, 3, 2.5), "token_dim must be an integer"),
        (
            lambda: make_random_mhla(5, 3, 2, noise=-1),
            "noise must be a finite real number >= 0",
        ),
        (
            lambda: make_random_mhla(5, 3, 2, noise=np.inf),
            "noise must be a finite real number >= 0, got inf",
        ),
        (
            lambda: make_incontext_regression(5, 3, 2, noise=np.inf),
            "noise must be a finite real number >= 0, got inf",
        ),
        (
            lambda: make_incontext_regression(5, 3, 2, noise=np.nan),
            "noise must be a finite real number >= 0",
        ),
        (lambda: make_associative_recall(5, 2, 2, "uniform"), "distribution must be"),
        (
            lambda: make_associative_recall(5, 2, 5, "orthogonal"),
            "n_pairs <= 2 \\* key_dim",
        ),
        (lambda: make_automaton_lookups(5, 2, 2, token_noise=np.nan), "token_noise"),
        (lambda: encode_automaton_lookup([[0], [1]], 0, 2), "must lie in"),
        (lambda: encode_automaton_lookup([[0, 3]], 0, 0), "states in \\[0, 1\\)"),
        (lambda: encode_automaton_lookup([[0.5]], 0, 0), "integer array"),
        (
            lambda: execute_automaton(automaton_lookup_attention(1, 1), [[0]], [1]),
            "word symbols",
        ),
        (
            lambda: execute_automaton(
                automaton_lookup_attention(1, 1), [[0]], [0], start=2
            ),
            "start",
        ),
        # issue 15, item 4: no wrap-around, no truncation
        (
            lambda: encode_automaton_lookup([[1, 0], [0, 1]], 0, 0, rows=[[-1, 0]]),
            r"rows must hold \(state, symbol\) pairs in \[0, 2\) x \[0, 2\), "
            r"got \(-1, 0\)",
        ),
        (
            lambda: encode_automaton_lookup([[1, 0], [0, 1]], 0, 0, rows=[[0, 2]]),
            r"got \(0, 2\)",
        ),
        (
            lambda: encode_automaton_lookup([[1, 0], [0, 1]], 0, 0, rows=[[0.0, 1.0]]),
            "rows must hold integers, got float64",
        ),
        (
            lambda: encode_automaton_lookup([[1, 0], [0, 1]], 0, 0, rows=[0, 1, 1]),
            r"rows must have shape \(n_rows, 2\)",
        ),
        (
            lambda: encode_automaton_lookup([[1, 0], [0, 1]], 0.5, 0),
            r"state must lie in \[0, 2\) and be an integer, got 0.5",
        ),
        (
            lambda: execute_automaton(
                automaton_lookup_attention(2, 2), [[1, 0], [0, 1]], [0.9, 1.2]
            ),
            "word must hold integers, got float64 values such as 0.9",
        ),
        (
            lambda: execute_automaton(
                automaton_lookup_attention(2, 2), [[1, 0], [0, 1]], [[0, 1]]
            ),
            "word must be 1-D",
        ),
        (
            lambda: execute_automaton(
                automaton_lookup_attention(2, 2), [[1, 0], [0, 1]], [0], positions="x"
            ),
            'positions must be "last" or "all"',
        ),
        (
            lambda: execute_automaton(
                automaton_lookup_attention(3, 2), [[1, 0], [0, 1]], [0, 1]
            ),
            r"tokens of dimension 9, but an automaton of 2 states and 2 symbols is "
            r"encoded in tokens of n_states \* n_symbols \+ n_states = 6",
        ),
        (lambda: make_random_mhla(5, 3, 2, positions="every"), "positions must be"),
        (lambda: make_random_mhla(5, 3, 2, causal=None), "causal must be True"),
        (
            lambda: make_associative_recall(5, 2, 3, "paper"),
            "n_pairs <= key_dim",
        ),
        (
            lambda: make_associative_recall(5, 2, 2, "paper", p_orth=1.5),
            r"p_orth must be a real number in \[0, 1\]",
        ),
        (lambda: make_automaton_traces(5, 0, 2, 2), "word_length must be an integer"),
        (
            lambda: make_incontext_regression(5, 3, 2, covariance=np.eye(3)),
            r"covariance must have shape \(2, 2\) or \(5, 2, 2\)",
        ),
        (
            lambda: make_incontext_regression(5, 3, 2, covariance=[[1, 1], [0, 1]]),
            "covariance must be symmetric",
        ),
        (
            lambda: make_incontext_regression(5, 3, 2, covariance=[[1, 2], [2, 1]]),
            "covariance must be positive semi-definite",
        ),
        (
            lambda: make_incontext_regression(
                5, 3, 2, covariance=[[np.nan, 0], [0, 1]]
            ),
            "covariance must be finite",
        ),
        (lambda: make_incontext_regression(5, 3, 2, n_tasks=0), "n_tasks must be"),
        (lambda: make_incontext_regression(5, 0, 2), "n_context must be"),
        (
            lambda: make_incontext_regression(5, 3, 2, return_tasks=1),
            "return_tasks must be True or False",
        ),
        (
            lambda: incontext_preconditioner(associative_recall_attention(2), 3),
            "needs a layer with one output",
        ),
        # complex covariances lost their imaginary parts (numpy's ComplexWarning
        # only); a subnormal one gave a layer of infinite entries, refused by
        # MultiHeadLinearAttention as "query_matrices must be finite"
        (
            lambda: make_incontext_regression(5, 3, 2, covariance=(1 + 1j) * np.eye(2)),
            "covariance must be real",
        ),
        (
            lambda: make_incontext_regression(5, 3, 2, covariance=1e-320 * np.eye(2)),
            r"Gamma\* for this covariance overflows.*largest entry is 1e-320",
        ),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_execute_automaton_names_the_sizes_for_an_estimator_of_other_sizes():
    """The check of the token dimension read an estimator's token_dim
    parameter (None), not its token_dim_, and a fitted estimator of other sizes
    got predict's message about shapes instead."""
    X, y, _, _ = make_automaton_lookups(50, 3, 2, random_state=0)
    model = LinearAttentionRegressor(n_heads=None, alpha=1.0).fit(X, y)
    message = r"tokens of dimension 9, but an automaton of 2 states and 2 symbols"
    with pytest.raises(ValueError, match=message):
        execute_automaton(model, [[1, 0], [0, 1]], [0, 1])


def test_execute_automaton_refuses_a_model_without_predict():
    """None (or a class) failed with an AttributeError from inside."""
    with pytest.raises(TypeError, match="got NoneType"):
        execute_automaton(None, [[1, 0], [0, 1]], [0, 1])


@pytest.mark.parametrize(
    "call, shape",
    [
        (lambda: make_random_mhla(10**12, 4, 2), "X of shape (1000000000000, 4, 2)"),
        (lambda: make_random_mhla(10**400, 4, 2), "X of shape (~2**1328, 4, 2)"),
        (
            lambda: make_random_mhla(3, 4, 2, n_heads=10**12),
            "query matrices of shape (1000000000000, 2, 2)",
        ),
        (lambda: associative_recall_attention(10**7), "(20000000, 20000000)"),
        (
            lambda: make_associative_recall(10**12, 2, 2),
            "X of shape (1000000000000, 3, 4)",
        ),
        (lambda: make_automaton(10**7, 10**6), "transitions of shape (10000000,"),
        (lambda: automaton_lookup_attention(10**4, 10), "(110000, 110000)"),
        (lambda: make_automaton_lookups(10**11, 2, 2), "X of shape (100000000000,"),
        (lambda: make_automaton_traces(10**11, 4, 2, 2), "X of shape (100000000000,"),
        (
            lambda: make_automaton_transitions(10**11, 2, 2),
            "X of shape (100000000000,",
        ),
        (lambda: make_automaton_rollout(10**11, 4, 2, 2), "prompts of shape (1000"),
        (
            lambda: make_incontext_regression(5, 3, 10**12),
            "covariance of shape (1000000000000, 1000000000000)",
        ),
    ],
)
def test_sizes_beyond_memory_are_refused_naming_the_arrays(call, shape):
    with pytest.raises(ValueError, match="more than the .* of memory available") as e:
        call()
    assert shape in str(e.value)


def test_the_memory_check_counts_the_generators_peak(monkeypatch):
    """The generators' peak is up to 8 times the arrays they return: arrays of
    a sixth of the available memory are refused, a tenth of it are made."""
    memory = 10 * 2**20
    monkeypatch.setattr("sklearn_linattn._data.available_memory", lambda: memory)
    make_random_mhla(2**12, 16, 2)  # X and y: 2**20 + 2**15 bytes, 8 times: 8.3 MiB
    with pytest.raises(ValueError, match="about 8 times that at its peak"):
        make_random_mhla(2**13, 16, 2)  # 2**21 + 2**16 bytes, 8 times: 16.5 MiB


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda big: encode_automaton_lookup(
                [[1, 0], [0, 1]], 0, 0, rows=np.array([[big, 0]], dtype=np.uint64)
            ),
            "rows must hold state or symbol indices, got 9223372036854775813",
        ),
        (
            lambda big: execute_automaton(
                automaton_lookup_attention(2, 2),
                [[1, 0], [0, 1]],
                np.array([0, big], dtype=np.uint64),
            ),
            "word must hold state or symbol indices, got 9223372036854775813",
        ),
    ],
    ids=["rows", "word"],
)
def test_uint64_indices_beyond_int64_are_shown_as_given(call, match):
    """uint64 indices were cast to int64 before the range check, which showed
    2**63 + 5 as -9223372036854775803."""
    with pytest.raises(ValueError, match=match) as error:
        call(np.uint64(2**63 + 5))
    assert "-9223372036854775803" not in str(error.value)


def test_uint64_indices_in_range_are_read():
    table = [[1, 0], [0, 1]]
    word = np.array([0, 1, 0], dtype=np.uint64)
    model = automaton_lookup_attention(2, 2)
    assert (
        execute_automaton(model, table, word).tolist()
        == execute_automaton(model, table, [0, 1, 0]).tolist()
    )


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda m: encode_automaton_lookup(m([[1, 0], [0, 1]]), 0, 0), "transitions"),
        (
            lambda m: encode_automaton_lookup([[1, 0], [0, 1]], 0, 0, rows=m([[0, 0]])),
            "rows",
        ),
        (
            lambda m: execute_automaton(
                automaton_lookup_attention(2, 2), [[1, 0], [0, 1]], m([[0, 1]])
            ),
            "word",
        ),
    ],
    ids=["transitions", "rows", "word"],
)
def test_sparse_indices_are_a_type_error_naming_them(call, name):
    """A sparse matrix of rows or of a word failed with AttributeError ("'csr_matrix'
    object has no attribute 'item'"), a sparse table as an object array of
    shape ()."""
    import scipy.sparse as sp

    with pytest.raises(TypeError, match=f"{name} must be a dense integer array"):
        call(sp.csr_matrix)


@pytest.mark.parametrize(
    "word, match",
    [
        (None, "word must hold integers, got object values such as None"),
        ([0, None], "word must hold integers, got object values such as None"),
        ({0: 1}, r"word must hold integers, got object values such as \{0: 1\}"),
        ([[0, 1], [0]], "word must be a rectangular integer array"),
    ],
)
def test_words_numpy_reads_as_objects_are_named(word, match):
    """None, a dict or a list holding None failed with AttributeError ("'NoneType'
    object has no attribute 'item'") while the error was worded; a ragged
    list got numpy's "inhomogeneous shape" alone."""
    with pytest.raises(ValueError, match=match):
        execute_automaton(automaton_lookup_attention(2, 2), [[1, 0], [0, 1]], word)


def test_a_dated_covariance_is_refused():
    """A datetime64 covariance was read as days since 1970, silently."""
    with pytest.raises(ValueError, match="covariance .* dtype datetime64"):
        make_incontext_regression(
            5, 3, 2, covariance=np.zeros((2, 2), dtype="datetime64[D]")
        )


def test_a_negative_random_state_is_named():
    with pytest.raises(ValueError, match="a non-negative int.* got -1"):
        make_random_mhla(3, 3, 2, random_state=-1)


def test_rows_in_range_still_encode_and_empty_word_runs():
    table = [[1, 0], [0, 1]]
    sequence = encode_automaton_lookup(table, 1, 1, rows=[[1, 1], [0, 0]])
    assert sequence.shape == (3, 6)
    assert execute_automaton(automaton_lookup_attention(2, 2), table, []).tolist() == [
        0
    ]


# Every position


@pytest.mark.parametrize("causal", [True, False])
def test_random_mhla_every_position(causal):
    X, y, model = make_random_mhla(
        30, 6, 3, n_heads=2, positions="all", causal=causal, random_state=0
    )
    assert y.shape == (30, 6)
    # explicit (cumulative) sums of z_s z_s^T, written here
    outer = np.einsum("nti,ntj->ntij", X, X)
    S = np.cumsum(outer, axis=1) if causal else outer.sum(1, keepdims=True)
    expected = np.einsum(
        "hab,ntbc,hce,nte->nta", model.value_matrices, S, model.query_matrices, X
    )[..., 0]
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-13)
    _, y3, _ = make_random_mhla(
        30, 6, 3, n_outputs=3, positions="all", causal=causal, random_state=0
    )
    assert y3.shape == (30, 6, 3)


def test_one_layer_cannot_see_token_order():
    # Why make_automaton_traces puts the previous state in each token: the output at
    # a position depends on the tokens before it only through their sum of outer
    # products, so reordering them changes nothing.
    X, _, model = make_random_mhla(20, 8, 3, n_heads=3, n_outputs=2, random_state=1)
    permuted = X.copy()
    permuted[:, :-1] = X[:, np.random.default_rng(0).permutation(7)]
    np.testing.assert_allclose(
        model.predict(permuted, positions="all")[:, -1],
        model.predict(X, positions="all")[:, -1],
        rtol=1e-12,
    )


def test_automaton_traces_label_every_position():
    X, y, labels, model = make_automaton_traces(40, 7, 3, 2, random_state=0)
    n_keys = 6
    assert X.shape == (40, n_keys + 7, 9) and labels.shape == (40, n_keys + 7)
    assert y.shape == (40, n_keys + 7, 3)
    np.testing.assert_array_equal(y.argmax(axis=2), labels)
    np.testing.assert_array_equal(y.max(axis=2), 1.0)  # one-hot, exactly
    for i in range(40):
        # the table: token j is [onehot(state, symbol) ; onehot(next state)]
        table = np.full((3, 2), -1)
        for token in X[i, :n_keys]:
            key, value = np.flatnonzero(token[:n_keys]), np.flatnonzero(token[n_keys:])
            table[divmod(key[0], 2)] = value[0]
        assert (table >= 0).all()
        # the word tokens: (state before, symbol), the label is the state after
        for t in range(n_keys, n_keys + 7):
            state, symbol = divmod(np.flatnonzero(X[i, t])[0], 2)
            assert not X[i, t, n_keys:].any()
            assert labels[i, t] == table[state, symbol]
            if t + 1 < n_keys + 7:
                assert divmod(np.flatnonzero(X[i, t + 1])[0], 2)[0] == labels[i, t]


class _LiftedPositions:
    """A per-position model given by lifted coefficients (fit by least squares)."""

    def __init__(self, X, y):
        features = lifted_position_features(X)
        self.coef = np.linalg.lstsq(features, y.reshape(len(features), -1), rcond=None)[
            0
        ].T

    def predict(self, X):
        features = lifted_position_features(np.ascontiguousarray(X))
        return (features @ self.coef.T).reshape(X.shape[0], X.shape[1], -1)


@pytest.mark.parametrize("token_noise", [0.0, 0.1])
def test_trained_on_traces_of_length_10_runs_words_of_length_50(token_noise):
    X, y, _, truth = make_automaton_traces(
        200, 10, 3, 2, token_noise=token_noise, random_state=0
    )
    fitted = _LiftedPositions(X, y)
    rng = np.random.default_rng(1)
    for _ in range(10):
        table = make_automaton(3, 2, rng)
        word = rng.integers(0, 2, size=50)
        start = int(rng.integers(0, 3))
        expected = run_by_hand(table, word, start=start)
        assert execute_automaton(truth, table, word, start, "all").tolist() == expected
        assert execute_automaton(fitted, table, word, start, "all").tolist() == expected
    if token_noise:  # noisy tokens identify the generating head exactly
        distance = np.linalg.norm(fitted.coef - truth.lifted_coef())
        assert distance < 1e-8


# The authors' key-value distribution


def test_paper_distribution_construction():
    X, y, model = make_associative_recall(
        400, key_dim=3, n_pairs=3, distribution="paper", p_orth=1.0, random_state=0
    )
    keys, values = X[:, :3, :3], X[:, :3, 3:]
    eye = np.broadcast_to(np.eye(3), (400, 3, 3))
    np.testing.assert_allclose(keys @ keys.transpose(0, 2, 1), eye, atol=1e-12)
    np.testing.assert_allclose(values @ values.transpose(0, 2, 1), eye, atol=1e-12)
    query = X[:, -1, :3]
    assert np.all(np.abs(keys - query[:, None]).sum(axis=2).min(axis=1) < 1e-12)
    zeta = X[:, -1, 3:]  # N(0, 1): within 8 standard errors (measured 0.6)
    assert abs(zeta.std() - 1.0) < 8 / np.sqrt(2 * zeta.size)
    np.testing.assert_allclose(y, recall_by_hand(X, 3), rtol=1e-12, atol=1e-12)
    X, _, _ = make_associative_recall(
        400, key_dim=3, n_pairs=2, distribution="paper", p_orth=0.0, random_state=0
    )
    norms = np.linalg.norm(X[:, :2, :3], axis=2), np.linalg.norm(X[:, :2, 3:], axis=2)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    gram = np.einsum("nk,nk->n", X[:, 0, :3], X[:, 1, :3])
    assert np.abs(gram).max() > 0.5  # not orthogonal
    # about 70% of the sequences have orthonormal keys at p_orth = 0.7
    X, _, _ = make_associative_recall(
        2000, key_dim=2, n_pairs=2, distribution="paper", p_orth=0.7, random_state=0
    )
    orthogonal = np.abs(np.einsum("nk,nk->n", X[:, 0, :2], X[:, 1, :2])) < 1e-12
    assert abs(orthogonal.mean() - 0.7) < 0.04


@pytest.mark.parametrize(
    "p_orth, identifiable, rank", [(1.0, False, 36), (0.95, True, 40)]
)
def test_paper_distribution_certificate(p_orth, identifiable, rank):
    # The paper's setting: d = 4 (key dimension 2), 2 pairs, 2^14 sequences.
    X, _, _ = make_associative_recall(
        2**14,
        key_dim=2,
        n_pairs=2,
        distribution="paper",
        p_orth=p_orth,
        random_state=0,
    )
    certificate = certify(X)
    assert certificate.identifiable is identifiable
    assert certificate.n_lifted_features == 40 and certificate.rank == rank
    if identifiable:
        assert certificate.min_eigenvalue > 1e-3
    else:
        assert certificate.min_eigenvalue < 1e-12 * certificate.max_eigenvalue


# In-context linear regression


def incontext_prompts(rng, n_samples, n_context, root, noise, tasks=None):
    """Prompts from the definition, independently of the generator: inputs
    ``x = L z`` (one ``L`` or one per prompt), labels ``<w, x> + noise * eps``;
    returns the inputs and the labels of every token, the query's last."""
    x_dim = root.shape[-1]
    standard = rng.normal(size=(n_samples, n_context + 1, x_dim))
    roots = np.broadcast_to(root, (n_samples, x_dim, x_dim))
    inputs = np.einsum("nij,ntj->nti", roots, standard)
    if tasks is None:
        tasks = rng.normal(size=(n_samples, root.shape[-1]))
    labels = np.einsum("ntd,nd->nt", inputs, tasks)
    return inputs, labels + noise * rng.normal(size=labels.shape)


def gd_step_features(inputs, labels):
    """The features x_q[k] h[j] / N of one preconditioned GD step, h = sum y_i x_i,
    so that y_hat = features @ vec(Gamma) (row-major)."""
    n_context = inputs.shape[1] - 1
    h = np.einsum("nt,ntd->nd", labels[:, :-1], inputs[:, :-1]) / n_context
    return np.einsum("nk,nj->nkj", inputs[:, -1], h).reshape(len(inputs), -1)


def least_squares(features, target):
    """Least-squares coefficients by the normal equations (full column rank)."""
    return np.linalg.solve(features.T @ features, features.T @ target)


def sandwich_covariance(features, residual):
    """The (heteroscedasticity-robust) sampling covariance of least-squares
    coefficients on ``features`` with these residuals."""
    bread = np.linalg.inv(features.T @ features)
    return bread @ ((features * residual[:, None] ** 2).T @ features) @ bread


def wald_statistic(features, target, coef, reference):
    """Wald statistic of ``coef - reference`` for the least-squares estimate
    ``coef`` of ``target`` on ``features``: chi-squared with ``len(coef)`` degrees
    of freedom when the population coefficients are ``reference``."""
    covariance = sandwich_covariance(features, target - features @ coef)
    delta = coef - reference
    return float(delta @ np.linalg.solve(covariance, delta))


def chi2_bound(dof):
    return stats.chi2.ppf(0.9999, dof)


def optimal_gamma(cov, n_context, noise):
    """Zhang, Frei & Bartlett's Theorem 4.1 with label noise, written out here."""
    x_dim = len(cov)
    inverse = (1 + 1 / n_context) * cov + (np.trace(cov) + noise**2) / n_context * (
        np.eye(x_dim)
    )
    return np.linalg.inv(inverse)


INCONTEXT_CASES = [
    (np.diag([2.0, 1.0, 0.5]), 0.0, 5),
    (np.eye(3), 1.0, 3),
    (np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 0.5]]), 0.5, 8),
]


def test_incontext_prompts_layout():
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    original = cov.copy()
    X, y, model, tasks = make_incontext_regression(
        20000, 6, 2, covariance=cov, random_state=0, return_tasks=True
    )
    np.testing.assert_array_equal(cov, original)  # the input is not modified
    assert X.shape == (20000, 7, 3) and y.shape == (20000,)
    assert tasks.shape == (20000, 2)
    assert np.all(X[:, -1, -1] == 0.0)  # the query's label slot is empty
    context_labels = np.einsum("ntd,nd->nt", X[:, :-1, :2], tasks)
    np.testing.assert_allclose(X[:, :-1, -1], context_labels)
    np.testing.assert_allclose(y, np.einsum("nd,nd->n", X[:, -1, :2], tasks))
    # second moments within 8 standard errors, sqrt((S_ii S_jj + S_ij^2) / N)
    # for Gaussian samples (measured up to 1.4)
    inputs = X[:, :, :2].reshape(-1, 2)
    spread = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / len(inputs))
    error = np.abs(inputs.T @ inputs / len(inputs) - cov)
    assert np.all(error < 8 * spread)
    spread = np.sqrt((1 + np.eye(2)) / len(tasks))
    assert np.all(np.abs(tasks.T @ tasks / len(tasks) - np.eye(2)) < 8 * spread)
    again = make_incontext_regression(20000, 6, 2, covariance=cov, random_state=0)
    np.testing.assert_array_equal(X, again[0])
    # label noise on every label, the query's too
    _, noisy, _, same = make_incontext_regression(
        20000, 6, 2, noise=0.5, random_state=1, return_tasks=True
    )
    X1, _, _ = make_incontext_regression(20000, 6, 2, noise=0.5, random_state=1)
    noise = noisy - np.einsum("nd,nd->n", X1[:, -1, :2], same)
    assert abs(np.std(noise) - 0.5) < 8 * 0.5 / np.sqrt(2 * noise.size)
    # a covariance per prompt: prompt 0 varies along x_0 only, prompt 1 along x_1
    per_prompt = np.array([np.diag([1.0, 0.0]), np.diag([0.0, 1.0])])
    X, _, _ = make_incontext_regression(2, 4, 2, covariance=per_prompt, random_state=0)
    assert np.all(X[0, :, 1] == 0) and np.all(X[1, :, 0] == 0)
    assert np.all(X[0, :, 0] != 0) and np.all(X[1, :, 1] != 0)
    # a finite task pool
    _, _, pooled, tasks = make_incontext_regression(
        500, 4, 3, n_tasks=5, random_state=0, return_tasks=True
    )
    assert pooled is None and len(np.unique(tasks, axis=0)) == 5


@pytest.mark.parametrize("cov, noise, n_context", INCONTEXT_CASES)
def test_incontext_closed_form_is_the_monte_carlo_optimum(cov, noise, n_context):
    """The returned layer's preconditioner is the least-squares Gamma over many
    prompts drawn from the definition, within sampling error; the formulas one
    might confuse it with are rejected by the same test."""
    x_dim = len(cov)
    _, _, model = make_incontext_regression(2, n_context, x_dim, cov, noise)
    gamma = incontext_preconditioner(model, n_context)
    np.testing.assert_allclose(gamma, optimal_gamma(cov, n_context, noise), rtol=1e-12)
    rng = np.random.default_rng(7)
    inputs, labels = incontext_prompts(
        rng, 200_000, n_context, np.linalg.cholesky(cov), noise
    )
    features, target = gd_step_features(inputs, labels), labels[:, -1]
    fitted = least_squares(features, target)
    bound = chi2_bound(x_dim**2)
    assert wald_statistic(features, target, fitted, gamma.ravel()) < bound
    for wrong in (
        np.linalg.inv(cov),  # the infinite-context limit
        optimal_gamma(cov, n_context + 1, noise),  # the query counted as context
        optimal_gamma(cov, n_context, noise + 0.5),  # the wrong noise
    ):
        assert wald_statistic(features, target, fitted, wrong.ravel()) > bound


@pytest.mark.parametrize("cov, noise, n_context", INCONTEXT_CASES[:2])
def test_incontext_layer_is_the_best_with_any_number_of_heads(cov, noise, n_context):
    """Least squares on all lifted features (from the definition), i.e. over every
    attention layer with any number of heads, converges to the returned one-head
    layer: the S[x, x] q and S[label, label] q coefficients vanish, the query's own
    x_q x_q^T included."""
    x_dim = len(cov)
    _, _, model = make_incontext_regression(2, n_context, x_dim, cov, noise)
    rng = np.random.default_rng(8)
    inputs, labels = incontext_prompts(
        rng, 100_000, n_context, np.linalg.cholesky(cov), noise
    )
    X = np.concatenate([inputs, labels[:, :, None]], axis=2)
    X[:, -1, -1] = 0.0
    raw = naive_lifted_features(X)
    used = np.abs(raw).max(axis=0) > 0  # q[label] = 0 leaves d(d+1)/2 features out
    assert used.sum() == n_lifted(x_dim + 1) - (x_dim + 1) * (x_dim + 2) // 2
    scale = raw[:, used].std(axis=0)  # standardized columns, for conditioning
    features = raw[:, used] / scale
    fitted = least_squares(features, labels[:, -1])
    bound = chi2_bound(used.sum())
    reference = model.lifted_coef()[0, used] * scale
    assert wald_statistic(features, labels[:, -1], fitted, reference) < bound
    # the test sees a layer that counts the query as an (N+1)-th context pair
    gamma = optimal_gamma(cov, n_context + 1, noise)
    value = model.value_matrices
    query = model.query_matrices.copy()
    query[0, :x_dim, :x_dim] = gamma.T / n_context
    other = MultiHeadLinearAttention(value, query).lifted_coef()[0, used] * scale
    assert wald_statistic(features, labels[:, -1], fitted, other) > bound


def test_incontext_covariance_per_prompt():
    """With a covariance per prompt the returned layer is the least-squares Gamma
    over prompts drawn with those covariances; equal covariances give the closed
    form."""
    rng = np.random.default_rng(9)
    factors = rng.normal(size=(4, 3, 3))
    covariances = factors @ factors.transpose(0, 2, 1) / 3  # Wishart draws
    n_samples, n_context, noise = 200_000, 4, 0.5
    per_prompt = np.tile(covariances, (n_samples // 4, 1, 1))
    _, _, model = make_incontext_regression(
        n_samples, n_context, 3, per_prompt, noise, random_state=0
    )
    assert model.n_heads == 1
    gamma = incontext_preconditioner(model, n_context)
    inputs, labels = incontext_prompts(
        rng, n_samples, n_context, np.linalg.cholesky(per_prompt), noise
    )
    features, target = gd_step_features(inputs, labels), labels[:, -1]
    fitted = least_squares(features, target)
    bound = chi2_bound(9)
    assert wald_statistic(features, target, fitted, gamma.ravel()) < bound
    average = optimal_gamma(covariances.mean(axis=0), n_context, noise)
    assert wald_statistic(features, target, fitted, average.ravel()) > bound
    same = np.broadcast_to(covariances[0], (5, 3, 3))
    _, _, model = make_incontext_regression(5, n_context, 3, same, noise)
    np.testing.assert_allclose(
        incontext_preconditioner(model, n_context),
        optimal_gamma(covariances[0], n_context, noise),
        rtol=1e-10,
    )


def minimum_norm_gamma(factor, n_context, noise):
    """Gamma* for the covariance ``factor @ factor.T`` (``factor`` of full column
    rank r, r = 0 for a zero covariance), from the derivation on the theory page:
    every minimizer solves Sigma Gamma C = Sigma^2, which fixes Gamma on the range
    of Sigma only, to B^-1 there; the minimum-norm one is P B^-1 P, P the
    projector on the range (the span of the factor's columns)."""
    x_dim, rank = factor.shape
    if rank == 0:
        return np.zeros((x_dim, x_dim))
    cov = factor @ factor.T
    B = (1 + 1 / n_context) * cov + (np.trace(cov) + noise**2) / n_context * np.eye(
        x_dim
    )
    projector = factor @ np.linalg.solve(factor.T @ factor, factor.T)
    return projector @ np.linalg.inv(B) @ projector


SINGULAR_FACTORS = {
    "zero": np.zeros((3, 0)),
    "axis-aligned": np.array([[1.5, 0.0], [0.0, 0.0], [0.0, 0.7]]),
    "rotated": np.random.default_rng(12).normal(size=(3, 2)),
    "rank one": np.random.default_rng(13).normal(size=(3, 1)),
}


@pytest.mark.parametrize("noise", [0.0, 0.5])
@pytest.mark.parametrize("factor", SINGULAR_FACTORS.values(), ids=SINGULAR_FACTORS)
def test_incontext_singular_covariance_gives_the_minimum_norm_optimum(factor, noise):
    """A singular (positive semi-definite) covariance, zero included, gives the
    minimum-norm Gamma*, the same from the covariance and from that covariance
    given for every prompt; it minimizes the risk (zero gradient)."""
    n_context, x_dim = 4, len(factor)
    cov = factor @ factor.T
    expected = minimum_norm_gamma(factor, n_context, noise)
    scale = max(np.linalg.norm(expected), 1.0)
    _, _, model = make_incontext_regression(5, n_context, x_dim, cov, noise)
    gamma = incontext_preconditioner(model, n_context)
    # bounds >= 1000x the errors measured here (up to 8e-16 of the scale)
    np.testing.assert_allclose(gamma, expected, rtol=0, atol=1e-12 * scale)
    per_prompt = np.broadcast_to(cov, (5, x_dim, x_dim))
    _, _, model = make_incontext_regression(5, n_context, x_dim, per_prompt, noise)
    np.testing.assert_allclose(
        incontext_preconditioner(model, n_context), gamma, rtol=0, atol=1e-10 * scale
    )
    # the risk's gradient, 2 (Sigma Gamma C - Sigma^2) (theory page), vanishes
    C = (1 + 1 / n_context) * cov @ cov + (np.trace(cov) + noise**2) / n_context * cov
    gradient = cov @ gamma @ C - cov @ cov
    assert np.linalg.norm(gradient) <= 1e-12 * max(np.linalg.norm(cov) ** 2, 1.0)


def test_incontext_task_pool_needs_more_than_the_label_head():
    """A finite pool of tasks breaks the sign symmetry: the best layer (lifted
    least squares) predicts fresh prompts of the same pool better than the best
    label-reading head, so there is no one-head closed form (model is None)."""
    n_context = 4
    X, y, model, tasks = make_incontext_regression(
        40_000, n_context, 2, n_tasks=2, random_state=0, return_tasks=True
    )
    assert model is None
    # fresh prompts with the same two tasks
    pool = np.unique(tasks, axis=0)
    rng = np.random.default_rng(10)
    test_tasks = pool[rng.integers(0, 2, size=20_000)]
    inputs, labels = incontext_prompts(
        rng, 20_000, n_context, np.eye(2), 0.0, test_tasks
    )
    X_test = np.concatenate([inputs, labels[:, :, None]], axis=2)
    X_test[:, -1, -1] = 0.0
    lifted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    train_labels = np.concatenate([X[:, :-1, 2], y[:, None]], axis=1)
    head = least_squares(gd_step_features(X[:, :, :2], train_labels), y)
    lifted_error = (lifted.predict(X_test) - labels[:, -1]) ** 2
    head_error = (gd_step_features(inputs, labels) @ head - labels[:, -1]) ** 2
    difference = head_error - lifted_error
    # paired: the label head is worse by many standard errors
    assert difference.mean() > 10 * difference.std() / np.sqrt(len(difference))


@pytest.mark.parametrize(
    "cov, noise",
    [(np.diag([2.0, 1.0, 0.5]), 0.0), (np.eye(3), 0.5), (INCONTEXT_CASES[2][0], 1.0)],
)
def test_incontext_fitted_preconditioner_within_sampling_error(cov, noise):
    """The lifted fit's preconditioner (read from coef_, whatever the heads) is
    the closed form within its sampling error (sandwich covariance of the Gamma
    block of the lifted least-squares estimate)."""
    n_context = 6
    X, y, model = make_incontext_regression(
        60_000, n_context, 3, cov, noise, random_state=1
    )
    fitted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    gamma_hat = incontext_preconditioner(fitted, n_context)
    np.testing.assert_allclose(
        gamma_hat, incontext_preconditioner(fitted.attention_, n_context), atol=1e-10
    )
    gamma = incontext_preconditioner(model, n_context)
    # coarse (measured up to 2.5%); the test of the sampling error follows
    assert np.linalg.norm(gamma_hat - gamma) < 0.3 * np.linalg.norm(gamma)
    # sampling covariance of the fitted Gamma entries: the block of the sandwich
    # covariance of all used lifted coefficients, mapped to Gamma
    raw = naive_lifted_features(X)
    used = np.flatnonzero(np.abs(raw).max(axis=0) > 0)
    covariance = sandwich_covariance(raw[:, used], y - fitted.predict(X))
    # Gamma[k, j] = N * sqrt(2) * theta of the pair (j, label), query coordinate k
    d, x_dim = 4, 3
    pairs = [(b, c) for b in range(d) for c in range(b, d)]
    column = {
        (j, k): pairs.index((j, x_dim)) * d + k
        for j in range(x_dim)
        for k in range(x_dim)
    }
    rows = [
        int(np.flatnonzero(used == column[j, k])[0])
        for k in range(x_dim)
        for j in range(x_dim)
    ]
    block = 2 * n_context**2 * covariance[np.ix_(rows, rows)]
    delta = (gamma_hat - gamma).ravel()
    assert delta @ np.linalg.solve(block, delta) < chi2_bound(x_dim**2)


def test_incontext_preconditioner_from_any_head_split():
    """Gamma is read from the function: a layer built from the definition
    y = x_q^T Gamma h / N, spread over three heads and with extra heads on
    S[x, x] q, gives Gamma back; a fitted estimator and its heads agree."""
    rng = np.random.default_rng(11)
    x_dim, n_context = 3, 5
    d = x_dim + 1
    gamma = rng.normal(size=(x_dim, x_dim))
    value = np.zeros((4, 1, d))
    query = np.zeros((4, d, d))
    parts = rng.dirichlet(np.ones(3))
    for h in range(3):  # three label-reading heads summing to Gamma^T / N
        value[h, 0, x_dim] = 1.0 / parts[h]
        query[h, :x_dim, :x_dim] = parts[h] ** 2 * gamma.T / n_context
    value[3, 0, :x_dim] = rng.normal(size=x_dim)  # a head on S[x, x] q
    query[3, :x_dim, :x_dim] = rng.normal(size=(x_dim, x_dim))
    layer = MultiHeadLinearAttention(value, query)
    np.testing.assert_allclose(
        incontext_preconditioner(layer, n_context), gamma, atol=1e-12
    )
    # and the definition: the label part of the layer is x_q^T Gamma h / N
    inputs, labels = incontext_prompts(rng, 50, n_context, np.eye(x_dim), 0.0)
    X = np.concatenate([inputs, labels[:, :, None]], axis=2)
    X[:, -1, -1] = 0.0
    label_part = MultiHeadLinearAttention(value[:3], query[:3]).predict(X)[:, 0]
    np.testing.assert_allclose(
        label_part, gd_step_features(inputs, labels) @ gamma.ravel(), atol=1e-10
    )
    with pytest.raises(TypeError, match="MultiHeadLinearAttention or a fitted"):
        incontext_preconditioner(np.zeros(3), n_context)


@pytest.mark.parametrize(
    "estimator", [LinearAttentionRegressor(), LinearAttentionRegressorCV()]
)
def test_incontext_preconditioner_of_an_unfitted_estimator_is_not_fitted_error(
    estimator,
):
    """An unfitted estimator was refused with a TypeError ("expects a
    MultiHeadLinearAttention or a fitted estimator"), not scikit-learn's
    NotFittedError; an estimator of another kind, fitted, keeps the TypeError."""
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import Ridge

    with pytest.raises(NotFittedError, match=type(estimator).__name__):
        incontext_preconditioner(estimator, 5)
    fitted_other = Ridge().fit(np.ones((3, 2)), np.ones(3))
    with pytest.raises(TypeError, match="got Ridge"):
        incontext_preconditioner(fitted_other, 5)


def test_incontext_certificate_and_covers():
    """Not identifiable (the query's label slot is always empty: rank 60 of 75 at
    x_dim 4), yet every fresh prompt is covered, with twice the context too, and
    no prompt with a label in the query slot is."""
    cov = np.diag([2.0, 1.0, 0.5, 0.25])
    X, y, _ = make_incontext_regression(4000, 20, 4, cov, random_state=0)
    certificate = LinearAttentionRegressor(n_heads=None).fit(X, y).certificate_
    assert not certificate.identifiable
    assert (certificate.rank, certificate.n_lifted_features) == (60, 75)
    fresh, _, _ = make_incontext_regression(200, 20, 4, cov, random_state=1)
    longer, _, _ = make_incontext_regression(200, 40, 4, cov, random_state=2)
    assert certificate.covers(fresh).all() and certificate.covers(longer).all()
    filled = fresh.copy()
    filled[:, -1, -1] = np.random.default_rng(3).normal(size=200)
    assert not certificate.covers(filled).any()


def test_incontext_default_fit_returns_one_head():
    X, y, _ = make_incontext_regression(
        40_000, 20, 4, np.diag([2.0, 1.0, 0.5, 0.25]), random_state=0
    )
    assert LinearAttentionRegressor().fit(X, y).n_heads_ == 1


# --- automaton execution by rollout -------------------------------------------


def test_automaton_transitions_label_the_next_state():
    X, y, labels, model = make_automaton_transitions(
        50, 3, 2, history=5, random_state=0
    )
    assert X.shape == (50, 6 + 5, 9) and y.shape == (50, 3)
    np.testing.assert_array_equal(y.argmax(axis=1), labels)
    # the walk tokens are consecutive: each token's state is the previous label
    walk = X[:, 6:, :6].argmax(axis=2)  # (state, symbol) index of each walk token
    table = X[:, :6]
    for i in range(5):
        for t in range(1, 5):
            entry = table[i, table[i, :, :6].argmax(axis=1) == walk[i, t - 1]][0]
            assert walk[i, t] // 2 == entry[6:].argmax()


@pytest.mark.parametrize("word_length", [10, 500])
def test_rollout_of_a_layer_learned_from_transitions_executes_unseen_words(
    word_length,
):
    X, y, _, truth = make_automaton_transitions(
        1000, 3, 2, token_noise=0.1, random_state=0
    )
    model = LinearAttentionRegressor().fit(X, y)
    assert model.certificate_
    prompts, to_token, states = make_automaton_rollout(
        20, word_length, 3, 2, random_state=1
    )
    _, outputs = model.generate(prompts, word_length, to_token=to_token)
    np.testing.assert_array_equal(outputs.argmax(axis=2), states)
    _, generating = truth.generate(prompts, word_length, to_token=to_token)
    np.testing.assert_array_equal(generating.argmax(axis=2), states)
    assert np.abs(outputs - generating).max() < 1e-8


def test_automaton_rollout_matches_execute_automaton():
    prompts, to_token, states = make_automaton_rollout(4, 12, 3, 2, random_state=2)
    model = automaton_lookup_attention(3, 2)
    tokens, _ = model.generate(prompts, 12, to_token=to_token)
    for i in range(4):
        table = np.empty((3, 2), dtype=int)
        for token in prompts[i, :6]:
            key = token[:6].argmax()
            table[key // 2, key % 2] = token[6:].argmax()
        first = prompts[i, -1, :6].argmax()
        word = [first % 2] + [t[:6].argmax() % 2 for t in tokens[i, :-1]]
        executed = execute_automaton(model, table, word, start=first // 2)
        np.testing.assert_array_equal(executed[1:], states[i])


def test_automaton_rollout_to_token_refuses_outputs_it_cannot_read():
    """Outputs of another shape failed in numpy's broadcasting, or, with more
    outputs than states, wrote the token of a state that does not exist (or
    failed with an IndexError); one score for three states was read as two
    states; a step outside the word reused another symbol silently (refused
    by the datasets' index check, its message naming step and word_length)."""
    _, to_token, _ = make_automaton_rollout(3, 4, 3, 2, random_state=0)
    with pytest.raises(ValueError, match=r"shape \(3, 3\); got shape \(3, 5\)"):
        to_token(np.eye(3, 5), 0)
    with pytest.raises(ValueError, match=r"got shape \(3,\)"):
        to_token(np.ones(3), 0)
    with pytest.raises(ValueError, match="not finite"):
        to_token(np.full((3, 3), np.nan), 0)
    for step in (-1, 4, 1.0, True):
        with pytest.raises(
            ValueError,
            match=r"step must lie in \[0, 4\) \(word_length\) and be an integer, got",
        ):
            to_token(np.eye(3), step)
    assert to_token(np.eye(3), np.int64(3)).shape == (3, 9)


def test_automaton_rollout_reads_one_score_for_two_states():
    prompts, to_token, states = make_automaton_rollout(6, 30, 2, 2, random_state=3)
    model = automaton_lookup_attention(2, 2)
    # a single score per word, positive for state 1 (as a two-class classifier's)
    single = MultiHeadLinearAttention(
        model.value_matrices[:, 1:] - model.value_matrices[:, :1],
        model.query_matrices,
    )
    _, outputs = single.generate(
        prompts, 30, to_token=lambda o, s: to_token(o[:, 0], s)
    )
    np.testing.assert_array_equal((outputs[:, :, 0] > 0).astype(int), states)


@pytest.mark.parametrize("per_prompt", [False, True], ids=["one", "per-prompt"])
def test_incontext_noise_beyond_the_square_root_of_the_float_range(per_prompt):
    """noise**2 of a Python float raised OverflowError (not a ValueError) for
    noise above about 1.3e154; the best layer is then zero in float64
    (Gamma* ~ N / noise^2), and the prompts are finite."""
    cov = np.stack([np.eye(2)] * 4) if per_prompt else None
    X, y, model = make_incontext_regression(
        4, 3, 2, covariance=cov, noise=1e160, random_state=0
    )
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))
    np.testing.assert_array_equal(model.query_matrices, 0.0)


def test_a_ragged_covariance_is_named():
    """numpy's "inhomogeneous shape" alone, from np.iscomplexobj."""
    with pytest.raises(ValueError, match=r"covariance must be a rectangular array"):
        make_incontext_regression(3, 2, 2, covariance=[[1.0, 0.0], [0.0]])


@pytest.mark.parametrize(
    "outputs",
    [
        np.array([[None, 1.0], [1.0, 1.0]], dtype=object),
        np.array([["a", "b"], ["c", "d"]]),
        np.ones((2, 2)) + 1j,
    ],
    ids=["object", "str", "complex"],
)
def test_automaton_rollout_to_token_refuses_scores_that_are_not_real(outputs):
    """Object and string scores failed in numpy's isfinite (a TypeError naming
    no argument); complex ones were argmax-ed silently."""
    _, to_token, _ = make_automaton_rollout(2, 3, 2, 2, random_state=0)
    with pytest.raises(ValueError, match="to_token reads real scores"):
        to_token(outputs, 0)


def dense_minimum_norm_gamma(covariances, weights, n_context, noise):
    """Gamma* for covariances per prompt from the dense (x_dim^2, x_dim^2) system
    ``sum_n w_n (C_n kron Sigma_n) vec(Gamma) = sum_n w_n vec(Sigma_n^2)``."""
    x_dim = covariances.shape[-1]
    system, rhs = np.zeros((x_dim**2, x_dim**2)), np.zeros(x_dim**2)
    for weight, cov in zip(weights, covariances, strict=True):
        second = (1 + 1 / n_context) * cov @ cov + (
            np.trace(cov) + noise**2
        ) / n_context * cov
        system += weight * np.kron(second, cov)
        rhs += weight * (cov @ cov).ravel(order="F")
    solution = np.linalg.lstsq(system, rhs, rcond=None)[0]
    return solution.reshape(x_dim, x_dim, order="F")


def test_incontext_covariance_per_prompt_in_high_dimension(monkeypatch):
    """Gamma* for covariances per prompt was the solution of a dense (x_dim^2,
    x_dim^2) system: O(x_dim^6) time and O(x_dim^4) memory, 22 s for 3 prompts
    at x_dim = 50, killed for memory at 200. It is now solved without that system
    (conjugate gradients above x_dim = 16), each distinct covariance weighted by
    its number of prompts, and agrees with the dense minimum-norm solution, a
    null space shared by the covariances included."""
    rng = np.random.default_rng(3)
    x_dim, n_context, noise = 20, 5, 0.3
    factors = rng.normal(size=(3, x_dim, x_dim - 2))  # rank x_dim - 2 each
    factors[:, -1] = 0.0  # one direction no prompt's inputs take
    covariances = factors @ factors.transpose(0, 2, 1) / x_dim
    per_prompt = covariances[[0, 0, 0, 1, 2]]  # the first for three prompts
    expected = dense_minimum_norm_gamma(
        covariances, np.array([3, 1, 1]) / 5, n_context, noise
    )
    dense_lstsq = np.linalg.lstsq

    def small_lstsq(a, b, rcond=None):
        assert a.shape[0] <= 16**2, f"a dense system of shape {a.shape}"
        return dense_lstsq(a, b, rcond=rcond)

    monkeypatch.setattr(np.linalg, "lstsq", small_lstsq)
    _, _, model = make_incontext_regression(
        5, n_context, x_dim, per_prompt, noise, random_state=0
    )
    gamma = incontext_preconditioner(model, n_context)
    np.testing.assert_allclose(gamma, expected, atol=1e-9 * np.abs(expected).max())
    assert np.abs(gamma[-1]).max() == 0 and np.abs(gamma[:, -1]).max() == 0
    # x_dim = 60: the dense system would be 3600 x 3600 (minutes)
    factors = rng.normal(size=(3, 60, 60))
    covariances = factors @ factors.transpose(0, 2, 1) / 60
    _, _, model = make_incontext_regression(3, n_context, 60, covariances, noise)
    gamma = incontext_preconditioner(model, n_context)
    traces = np.trace(covariances, axis1=1, axis2=2)[:, None, None]
    second = (1 + 1 / n_context) * covariances @ covariances + (
        traces + noise**2
    ) / n_context * covariances
    lhs = (covariances @ gamma @ second).mean(axis=0)
    rhs = (covariances @ covariances).mean(axis=0)
    assert np.linalg.norm(lhs - rhs) < 1e-10 * np.linalg.norm(rhs)
