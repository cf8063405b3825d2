"""The paper's tasks: shapes, generating models, known certificates, execution."""

import numpy as np
import pytest
from conftest import n_lifted

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    certify,
)
from sklearn_linattn.datasets import (
    associative_recall_attention,
    automaton_lookup_attention,
    encode_automaton_lookup,
    execute_automaton,
    make_associative_recall,
    make_automaton,
    make_automaton_lookups,
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
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
