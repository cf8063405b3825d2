"""The identifiability certificate on cases whose answer is known from the paper."""

import pickle

import numpy as np
import pytest
from conftest import n_lifted, random_sequences

from sklearn_linattn import IdentifiabilityCertificate, certify
from sklearn_linattn._lift import lifted_features


@pytest.mark.parametrize("token_dim", [2, 3, 5])
def test_gaussian_tokens_with_enough_samples_are_identifiable(rng, token_dim):
    p = n_lifted(token_dim)
    cert = certify(random_sequences(rng, 4 * p, 10, token_dim))
    assert isinstance(cert, IdentifiabilityCertificate)
    assert cert.identifiable and bool(cert)
    assert cert.rank == cert.n_lifted_features == p
    assert cert.n_samples == 4 * p and cert.token_dim == token_dim
    assert 0 < cert.min_eigenvalue <= cert.max_eigenvalue


def test_eigenvalues_are_those_of_the_second_moment(rng):
    X = random_sequences(rng, 100, 6, 3)
    Phi = lifted_features(X)
    eigenvalues = np.linalg.eigvalsh(Phi.T @ Phi / len(X))  # independent reference
    cert = certify(X)
    assert cert.min_eigenvalue == pytest.approx(eigenvalues[0], rel=1e-8)
    assert cert.max_eigenvalue == pytest.approx(eigenvalues[-1], rel=1e-10)


def test_fewer_samples_than_features_is_not_identifiable(rng):
    p = n_lifted(4)
    cert = certify(random_sequences(rng, p - 1, 10, 4))
    assert not cert.identifiable and not bool(cert)
    assert cert.rank == p - 1


def test_tokens_in_a_subspace_are_not_identifiable(rng):
    d, r = 4, 3
    basis = np.linalg.qr(rng.normal(size=(d, r)))[0]
    X = random_sequences(rng, 10 * n_lifted(d), 8, r) @ basis.T
    cert = certify(X)
    assert not cert.identifiable
    # The features only see S and q inside the subspace: r(r+1)/2 * r directions.
    assert cert.rank == r * r * (r + 1) // 2


def test_one_hot_tokens_are_not_identifiable(rng):
    d = 4
    X = np.eye(d)[rng.integers(0, d, size=(10 * n_lifted(d), 12))]
    cert = certify(X)
    assert not cert.identifiable
    # S is diagonal, so only the d * d features S[b, b] q[e] can be non-zero.
    assert cert.rank <= d * d


def test_covers_training_inputs_and_not_generic_ones(rng):
    X = random_sequences(rng, 30, 6, 4)  # p = 40
    cert = certify(X)
    assert cert.covers(X).all()
    assert cert.covers(X[:5] * 2.0).all()
    combination = np.concatenate([X[:1], X[1:2]], axis=1)  # not a feature combination
    assert not cert.covers(random_sequences(rng, 6, 5, 4)).any()
    assert not cert.covers(combination).any()
    # Identifiable data covers everything.
    assert certify(random_sequences(rng, 200, 6, 4)).covers(combination).all()


def test_covers_with_a_small_null_space(rng):
    # A rank deficiency of a few directions (basis stored as a null space) and of
    # most directions (stored as a range) both give the right answer.
    for n_samples in (37, 5):
        X = random_sequences(rng, n_samples, 6, 4)
        cert = certify(X)
        assert cert.covers(X).all()
        assert not cert.covers(random_sequences(rng, 3, 6, 4)).any()


def test_two_dimensional_input_and_tolerance(rng):
    X = random_sequences(rng, 100, 5, 3)
    flat = certify(X.reshape(100, -1), token_dim=3)
    assert flat == certify(X)
    # token_dim=None: each row is one token z, and the features z_b z_c z_e only
    # span the symmetric cubic tensors, C(d + 2, 3) = 10 of the 18 directions.
    one_token_rows = certify(X[:, -1, :])
    assert one_token_rows.token_dim == 3 and one_token_rows.rank == 10
    assert not certify(X, tol=0.5).identifiable
    assert certify(X, tol=0.5).tol == 0.5


def test_certificate_is_frozen_and_pickles(rng):
    cert = certify(random_sequences(rng, 10, 5, 3))
    with pytest.raises(AttributeError):
        cert.identifiable = True
    restored = pickle.loads(pickle.dumps(cert))
    assert restored == cert
    X = random_sequences(rng, 4, 5, 3)
    np.testing.assert_array_equal(restored.covers(X), cert.covers(X))


@pytest.mark.parametrize("tol", [-1.0, 1.0, "small"])
def test_bad_tolerance(rng, tol):
    with pytest.raises(ValueError, match=r"tol must be a real number in \[0, 1\)"):
        certify(random_sequences(rng, 10, 5, 3), tol=tol)


def test_covers_rejects_other_token_dims(rng):
    cert = certify(random_sequences(rng, 10, 5, 3))
    with pytest.raises(ValueError, match="token_dim=3"):
        cert.covers(np.ones((2, 5, 4)))


def test_paper_convention_is_the_covariance_of_unscaled_features(rng):
    """certify(convention="paper") is the number the paper plots: the smallest
    eigenvalue of numpy's covariance of the features without the sqrt(2)."""
    from conftest import naive_lifted_features

    X = rng.normal(size=(300, 5, 3))
    d = 3
    rows, cols = np.triu_indices(d)
    weights = np.repeat(np.where(rows == cols, 1.0, np.sqrt(2.0)), d)
    covariance = np.cov((naive_lifted_features(X) / weights).T)
    eigenvalues = np.linalg.eigvalsh(covariance)
    paper = certify(X, convention="paper")
    assert paper.min_eigenvalue == pytest.approx(eigenvalues[0], rel=1e-8)
    assert paper.max_eigenvalue == pytest.approx(eigenvalues[-1], rel=1e-8)
    assert paper.identifiable and paper.min_eigenvalue < certify(X).min_eigenvalue
    with pytest.raises(ValueError, match="convention must be"):
        certify(X, convention="torch")
