"""The paper's tasks: shapes, generating models, known certificates, execution."""

import numpy as np
import pytest
from conftest import n_lifted

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    certify,
)
from sklearn_linattn._lift import lifted_position_features
from sklearn_linattn.datasets import (
    associative_recall_attention,
    automaton_lookup_attention,
    encode_automaton_lookup,
    execute_automaton,
    make_associative_recall,
    make_automaton,
    make_automaton_lookups,
    make_automaton_traces,
    make_random_mhla,
)


def test_random_mhla_targets_are_the_model_output():
    X, y, model = make_random_mhla(50, 7, 3, n_heads=2, n_outputs=2, random_state=0)
    assert X.shape == (50, 7, 3) and y.shape == (50, 2) and model.n_heads == 2
    np.testing.assert_allclose(y, model.predict(X))
    assert abs(X.std() - 1 / np.sqrt(7)) < 0.05  # entries N(0, 1/T)
    X2, y2, _ = make_random_mhla(50, 7, 3, n_heads=2, n_outputs=2, random_state=0)
    np.testing.assert_array_equal(X, X2)
    _, noisy, _ = make_random_mhla(2000, 7, 3, noise=0.5, random_state=1)
    _, clean, _ = make_random_mhla(2000, 7, 3, random_state=1)
    assert noisy.shape == (2000,)
    assert abs(np.std(noisy - clean) - 0.5) < 0.05


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
    fitted = LinearAttentionRegressor().fit(X, y)
    assert fitted.attention_.distance(model) > 0.1 * np.linalg.norm(model.lifted_coef())


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


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: make_random_mhla(0, 3, 2), "n_samples must be an integer >= 1"),
        (lambda: make_random_mhla(3, 3, 2, random_state="a"), "random_state must be"),
        (lambda: make_random_mhla(5, 3, 2.5), "token_dim must be an integer"),
        (
            lambda: make_random_mhla(5, 3, 2, noise=-1),
            "noise must be a real number >= 0",
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
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


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
    assert abs(X[:, -1, 3:].std() - 1.0) < 0.1  # zeta ~ N(0, 1)
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
        2**14, key_dim=2, n_pairs=2, distribution="paper", p_orth=p_orth,
        random_state=0,
    )
    certificate = certify(X)
    assert certificate.identifiable is identifiable
    assert certificate.n_lifted_features == 40 and certificate.rank == rank
    if identifiable:
        assert certificate.min_eigenvalue > 1e-3
    else:
        assert certificate.min_eigenvalue < 1e-12 * certificate.max_eigenvalue
