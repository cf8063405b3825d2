"""The identifiability certificate on cases whose answer is known from the paper;
covers against the naive span of the training features; the block-Lanczos
estimates of the extreme eigenvalues against ``eigvalsh``, on spectra built as
``Q diag(l) Q^T`` with known ``l`` and on naively lifted Grams."""

import functools
import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg
from conftest import (
    n_lifted,
    naive_least_squares,
    naive_lifted_features,
    naive_outside_fraction,
    naive_position_features,
    random_sequences,
)

from sklearn_linattn import (
    IdentifiabilityCertificate,
    LinearAttentionRegressor,
    certify,
)
from sklearn_linattn._certificate import extreme_eigenvalues, gram_spectrum
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


def test_covers_without_a_span_says_why(rng):
    """A certificate constructed directly holds no span of training features:
    ``covers`` said it was an estimated one (solver='cg') even with
    ``exact=True`` (helper-112)."""
    found = certify(random_sequences(rng, 10, 5, 3))
    fields = {name: getattr(found, name) for name in (
        "identifiable", "min_eigenvalue", "max_eigenvalue", "rank",
        "n_lifted_features", "n_samples", "tol", "token_dim",
    )}
    built = IdentifiabilityCertificate(**fields)
    with pytest.raises(ValueError, match="constructed directly"):
        built.covers(np.ones((2, 5, 3)))
    estimated = IdentifiabilityCertificate(**fields, exact=False)
    with pytest.raises(ValueError, match="estimated certificate"):
        estimated.covers(np.ones((2, 5, 3)))


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


# --- covers: the span of the training features (the affine hull with an intercept) ----


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("solver", ["dual", "normal"])
def test_covers_affine_combination_of_training_features(fit_intercept, solver):
    """Z = c [A1; q; A2; q] has S = c^2 (S1 + S2), query c q: phi(Z) = c^3 (phi1 +
    phi2). With c^3 = 1/2 it is the average, in the (centered) span."""
    rng = np.random.default_rng(5)
    d, n = 4, 20
    X = random_sequences(rng, n, 5, d)
    X[1, -1] = X[0, -1]  # same query
    model = LinearAttentionRegressor(
        token_dim=d, fit_intercept=fit_intercept, solver=solver, n_heads=None
    ).fit(X, rng.normal(size=n))
    c = 0.5 ** (1 / 3)
    combined = c * np.concatenate([X[0], X[1]])[None]
    np.testing.assert_allclose(
        naive_lifted_features(combined)[0],
        (naive_lifted_features(X[:2]).sum(0)) / 2,
        rtol=1e-12,
        atol=1e-14,
    )
    generic = random_sequences(rng, 3, 10, d)
    assert model.certificate_.covers(combined).all()
    assert not model.certificate_.covers(generic).any()
    # the naive test agrees on both
    _, mean, _, design = naive_least_squares(
        naive_lifted_features(X), np.zeros(n), intercept=fit_intercept
    )
    both = np.concatenate(
        [naive_lifted_features(combined), naive_lifted_features(generic)]
    )
    np.testing.assert_array_equal(
        naive_outside_fraction(both, design, mean) < 1e-6, [True, False, False, False]
    )


def test_certify_above_300_rows_covers_span_without_intercept():
    rng = np.random.default_rng(16)
    X = rng.normal(size=(350, 5, 9))  # p = 405: kernel Cholesky + estimates
    X[1, -1] = X[0, -1]  # same query: concatenation adds the lifted features
    certificate = certify(X)
    features = naive_lifted_features(X)
    exact = np.linalg.eigvalsh(features @ features.T / 350)
    assert certificate.rank == 350 and not certificate.identifiable
    assert (
        exact[-1] * (1 - 3e-3) <= certificate.max_eigenvalue <= exact[-1] * (1 + 1e-9)
    )
    combined = 0.5 ** (1 / 3) * np.concatenate([X[0], X[1]])[None]
    np.testing.assert_allclose(
        naive_lifted_features(combined)[0], features[:2].sum(0) / 2, atol=1e-12
    )
    assert certificate.covers(X).all()
    assert certificate.covers(combined).all()
    assert certificate.covers(2.0 * X[:3]).all()  # phi(cZ) = c^3 phi(Z)
    assert not certificate.covers(rng.normal(size=(3, 5, 9))).any()


def test_covers_the_affine_hull_above_300_rows_and_after_pickling():
    rng = np.random.default_rng(21)
    d, n = 9, 350  # Cholesky of the deflated kernel, reflection in covers
    X = rng.normal(size=(n, 5, d))
    X[1, -1] = X[0, -1]
    y = rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, n)
    model = LinearAttentionRegressor(token_dim=d, fit_intercept=True).fit(
        X, y, sample_weight=w
    )
    combined = 0.5 ** (1 / 3) * np.concatenate([X[0], X[1]])[None]  # affine hull
    scaled = 2.0 * X[:2]  # in the span, not in the affine hull
    generic = rng.normal(size=(2, 5, d))
    _, mean, _, design = naive_least_squares(naive_lifted_features(X), y, w)
    features = np.concatenate(
        [naive_lifted_features(s) for s in (combined, scaled, generic)]
    )
    expected = naive_outside_fraction(features, design, mean) < 1e-6
    np.testing.assert_array_equal(expected, [True, False, False, False, False])
    restored = pickle.loads(pickle.dumps(model))
    for certificate in (model.certificate_, restored.certificate_):
        got = np.concatenate(
            [certificate.covers(s) for s in (combined, scaled, generic)]
        )
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(restored.predict(generic), model.predict(generic))


# --- estimates above p = 300 against eigvalsh of the naively lifted Gram --------------

EPS = np.finfo(np.float64).eps


def token_sample(kind, rng, shape):
    """Tokens of shape (n_samples, n_tokens, token_dim) from a named distribution."""
    d = shape[-1]
    if kind == "gaussian":
        return rng.normal(size=shape)
    if kind == "abs_gaussian":
        return np.abs(rng.normal(size=shape))
    if kind == "uniform":
        return rng.uniform(size=shape)
    if kind == "symmetric_uniform":
        return rng.uniform(-1, 1, shape)
    if kind == "onehot_ish":
        X = np.eye(d)[rng.integers(0, d, size=shape[:-1])]
        return X + 0.3 * rng.normal(size=shape)
    if kind == "student_t2":
        return rng.standard_t(2, size=shape)
    if kind == "student_t3":
        return rng.standard_t(3, shape)
    if kind == "lognormal":
        return rng.lognormal(0.0, 1.5, shape)
    if kind == "badly_scaled":  # far beyond 1/eps: Cholesky or the margin gives up
        return rng.normal(size=shape) * np.geomspace(1e-4, 1e4, d)
    if kind == "mildly_scaled":  # columns 0.5..2: the estimates still run
        return rng.normal(size=shape) * np.geomspace(0.5, 2.0, d)
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["symmetric_uniform", "abs_gaussian", "student_t3", "lognormal"]
)
@pytest.mark.parametrize("d", [9, 10, 12])
def test_certificate_estimates_bracket_eigvalsh(d, kind):
    rng = np.random.default_rng(d)
    p = d * d * (d + 1) // 2
    n = int(1.5 * p)
    X = token_sample(kind, rng, (n, 6, d))
    features = naive_lifted_features(X)
    exact = np.linalg.eigvalsh(features.T @ features / n)
    certificate = certify(X)
    assert certificate.identifiable and certificate.rank == p
    # claimed: within about 3e-3, smallest from above, largest from below
    assert exact[0] * (1 - 1e-9) <= certificate.min_eigenvalue <= exact[0] * (1 + 3e-3)
    assert (
        exact[-1] * (1 - 3e-3) <= certificate.max_eigenvalue <= exact[-1] * (1 + 1e-9)
    )


@pytest.mark.parametrize("d", [9, 10])
def test_one_hot_tokens_not_identifiable_rank_matches_naive(d):
    rng = np.random.default_rng(d)
    n = 600
    X = np.eye(d)[rng.integers(0, d, (n, 6))]
    certificate = certify(X)
    assert not certificate.identifiable
    assert certificate.rank == np.linalg.matrix_rank(naive_lifted_features(X)) == d * d


@functools.lru_cache(maxsize=8)
def random_orthogonal(n, seed):
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(n, n)))
    return q * np.sign(np.diag(r))


def gram_with_spectrum(eigenvalues, seed=1):
    """Symmetric matrix with exactly these eigenvalues in a random basis."""
    eigenvalues = np.sort(np.asarray(eigenvalues, dtype=float))
    q = random_orthogonal(eigenvalues.size, seed)
    gram = (q * eigenvalues) @ q.T
    return (gram + gram.T) / 2


def check_estimates(gram, factor=None, rtol_small=1e-2, rtol_large=1e-2):
    """The promise: smallest in [exact, exact (1 + rtol)], largest in
    [exact (1 - rtol), exact] (up to rounding), or None; inputs unchanged."""
    exact = np.linalg.eigvalsh(gram)
    factor = scipy.linalg.cholesky(gram) if factor is None else factor
    gram_copy, factor_copy = gram.copy(), factor.copy()
    result = extreme_eigenvalues(gram, factor)
    np.testing.assert_array_equal(gram, gram_copy)  # inputs unchanged
    np.testing.assert_array_equal(factor, factor_copy)
    if result is None:
        return exact, None
    smallest, largest = result
    assert np.isfinite(smallest) and np.isfinite(largest)
    assert exact[0] * (1 - 1e-9) <= smallest <= exact[0] * (1 + rtol_small), (
        smallest / exact[0] - 1
    )
    assert exact[-1] * (1 - rtol_large) <= largest <= exact[-1] * (1 + 1e-9), (
        largest / exact[-1] - 1
    )
    return exact, result


def naive_lambda(features, weights, intercept):
    """(1/sum w) sum_i w_i (phi_i - mu)(phi_i - mu)^T, mu the weighted mean (or 0)."""
    mean = weights @ features / weights.sum() if intercept else 0.0
    design = np.sqrt(weights)[:, None] * (features - mean)
    return design.T @ design / weights.sum()


def check_certificate(certificate, lam, p):
    """Identifiable flag and rank as eigvalsh says at tol = p eps largest (up to the
    eigenvalues within a factor 100 of the threshold, where rounding decides); min
    and max within 1e-2."""
    exact = np.linalg.eigvalsh(lam)
    threshold = p * EPS * exact[-1]
    assert certificate.max_eigenvalue == pytest.approx(exact[-1], rel=1e-2)
    near = np.abs(exact) / threshold
    ambiguous = int(np.count_nonzero((near > 1e-2) & (near < 1e2)))
    exact_rank = int(np.count_nonzero(exact > threshold))
    assert abs(certificate.rank - exact_rank) <= ambiguous
    if ambiguous == 0:
        assert certificate.identifiable == (exact_rank == p)
    if certificate.identifiable:
        assert certificate.rank == p
        # eigvalsh (and any Gram formed in floating point) is off by about
        # p eps largest in absolute terms
        slack = p * EPS * exact[-1]
        assert exact[0] * (1 - 1e-7) - slack <= certificate.min_eigenvalue
        assert certificate.min_eigenvalue == pytest.approx(
            exact[0], rel=1e-2, abs=slack
        )


@pytest.fixture
def estimates(monkeypatch):
    """Records every (smallest, largest) extreme_eigenvalues returns, to check
    that a test went through the estimates."""
    import sklearn_linattn._certificate as module

    calls = []
    original = module.extreme_eigenvalues

    def spy(gram, factor):
        result = original(gram, factor)
        calls.append(result)
        return result

    monkeypatch.setattr(module, "extreme_eigenvalues", spy)
    return calls


# --- extreme_eigenvalues on synthetic spectra: within 1e-2, on the safe side ----------

PASSING_SPECTRA = {
    "uniform_1_2": lambda rng, n: rng.uniform(1, 2, n),
    "geometric_1e-6": lambda rng, n: np.geomspace(1, 1e-6, n),
    "geometric_1e-3": lambda rng, n: np.geomspace(1, 1e-3, n),
    "bottom_ladder_half_percent": lambda rng, n: np.concatenate(
        [1 + 0.005 * np.arange(20), rng.uniform(2, 10, n - 20)]
    ),
    "isolated_min_cluster_3pct_above": lambda rng, n: np.concatenate(
        [[1.0], 1.03 + 0.002 * np.arange(50), rng.uniform(2, 10, n - 51)]
    ),
    "isolated_min_band_2pct_above_outlier": lambda rng, n: np.concatenate(
        [[1.0], rng.uniform(1.02, 1.2, n - 2), [1e4]]
    ),
    "huge_outlier_on_top": lambda rng, n: np.concatenate(
        [rng.uniform(1, 100, n - 1), [1e8]]
    ),
    "repeated_min_x6": lambda rng, n: np.concatenate(
        [np.ones(6), rng.uniform(1.5, 3, n - 6)]
    ),
    "repeated_max_x6": lambda rng, n: np.concatenate(
        [rng.uniform(0.1, 0.98, n - 6), np.ones(6)]
    ),
    "isolated_max_gap_3pct": lambda rng, n: np.concatenate(
        [rng.uniform(0.1, 0.97, n - 1), [1.0]]
    ),
    "isolated_min_gap_2pct_linspace": lambda rng, n: np.concatenate(
        [[1.0], np.linspace(1.02, 2, n - 1)]
    ),
    "c_identity": lambda rng, n: np.full(n, 3.7),
    "two_values_block_repeats": lambda rng, n: np.resize([1.0, 50.0], n),
    "max_isolated_above_flat_by_20pct": lambda rng, n: np.concatenate(
        [np.ones(n - 1), [1.2]]
    ),
}


@pytest.mark.parametrize("n", [301, 1000])
@pytest.mark.parametrize("name", sorted(PASSING_SPECTRA))
def test_extreme_eigenvalues_bracket_eigvalsh_on_hard_spectra(name, n):
    gram = gram_with_spectrum(PASSING_SPECTRA[name](np.random.default_rng(n), n))
    exact, result = check_estimates(gram)
    assert result is not None


@pytest.mark.parametrize("order", ["C", "F"])
def test_extreme_eigenvalues_do_not_depend_on_memory_order(order):
    rng = np.random.default_rng(3)
    gram = gram_with_spectrum(rng.uniform(1, 5, 400))
    factor = np.asarray(scipy.linalg.cholesky(gram), order=order)
    gram_arg = np.asarray(gram, order=order)
    _, result = check_estimates(gram_arg, factor)
    reference = extreme_eigenvalues(
        np.ascontiguousarray(gram), np.asfortranarray(scipy.linalg.cholesky(gram))
    )
    np.testing.assert_allclose(result, reference, rtol=1e-12)


def test_extreme_eigenvalues_of_a_repeated_block_are_exact():
    """Block-diagonal Gram, one 3x3 block repeated: 3 distinct eigenvalues, Krylov
    directions run out after one product."""
    block = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    gram = np.kron(np.eye(110), block)  # 330 x 330
    exact, result = check_estimates(gram, rtol_small=1e-9, rtol_large=1e-9)
    assert result is not None


@pytest.mark.parametrize("condition", [1e8, 1e10, 1e12, 1e15])
def test_gram_spectrum_of_a_nearly_singular_gram_estimates_or_falls_back(condition):
    """cond 1e8..1e15, the estimate within 1e-2 or the full spectrum; rank
    and verdict as eigvalsh says at tol = p eps largest."""
    n = 600
    rng = np.random.default_rng(int(np.log10(condition)))
    lam = np.concatenate([[1.0 / condition], rng.uniform(1e-3, 1.0, n - 2), [1.0]])
    gram = gram_with_spectrum(lam, seed=5)
    exact = np.linalg.eigvalsh(gram)
    tol = n * EPS
    copy = gram.copy()
    spectrum = gram_spectrum(gram, tol)
    np.testing.assert_array_equal(gram, copy)
    exact_rank = int(np.count_nonzero(exact > tol * exact[-1]))
    if abs(np.log10(exact[0] / (tol * exact[-1]))) > 2:  # clear of the threshold
        assert spectrum.rank == exact_rank
        assert spectrum.full_rank == (exact_rank == n)
    if spectrum.estimated:
        # the Gram built from lam (and eigvalsh) are off by about n eps largest in
        # absolute terms: 1.3e-5 relative to the smallest at condition 1e8
        assert spectrum.eigenvalues[0] >= lam.min() - 4 * n * EPS * lam.max()
        assert spectrum.eigenvalues[0] == pytest.approx(exact[0], rel=1e-2)
        assert spectrum.eigenvalues[-1] == pytest.approx(exact[-1], rel=1e-2)


# --- certificates against the naively lifted Gram -------------------------------------

KINDS = [
    "gaussian",
    "abs_gaussian",
    "uniform",
    "onehot_ish",
    "student_t2",
    "badly_scaled",
    "mildly_scaled",
]


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_normal_certificate_matches_naive_lift(kind, fit_intercept, estimates):
    d, n, T = 9, 1200, 5  # p = 405 > 300: Cholesky + block Lanczos
    p = d * d * (d + 1) // 2
    rng = np.random.default_rng(KINDS.index(kind) + 10 * fit_intercept)
    X = token_sample(kind, rng, (n, T, d))
    y = rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, n)
    model = LinearAttentionRegressor(
        token_dim=d, solver="normal", fit_intercept=fit_intercept
    ).fit(X, y, sample_weight=w)
    lam = naive_lambda(naive_lifted_features(X), w, fit_intercept)
    check_certificate(model.certificate_, lam, p)
    if kind != "badly_scaled":
        assert estimates and estimates[-1] is not None  # the Lanczos path ran


@pytest.mark.parametrize("kind", KINDS)
def test_certify_matches_naive_lift(kind, estimates):
    d, n, T = 9, 1200, 5
    p = d * d * (d + 1) // 2
    rng = np.random.default_rng(100 + KINDS.index(kind))
    X = token_sample(kind, rng, (n, T, d))
    certificate = certify(X)
    lam = naive_lambda(naive_lifted_features(X), np.ones(n), False)
    check_certificate(certificate, lam, p)
    if kind != "badly_scaled":
        assert estimates and estimates[-1] is not None


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("kind", ["gaussian", "abs_gaussian"])
def test_positions_all_certificate_matches_naive_lift(kind, fit_intercept, estimates):
    d, n, T = 9, 300, 4  # 1200 rows
    p = d * d * (d + 1) // 2
    rng = np.random.default_rng(200 + fit_intercept)
    X = token_sample(kind, rng, (n, T, d))
    y = rng.normal(size=(n, T))
    w = rng.uniform(0.2, 3.0, n)
    model = LinearAttentionRegressor(
        token_dim=d, solver="normal", fit_intercept=fit_intercept, positions="all"
    ).fit(X, y, sample_weight=w)
    lam = naive_lambda(
        naive_position_features(X, causal=True), np.repeat(w, T), fit_intercept
    )
    check_certificate(model.certificate_, lam, p)
    if kind != "badly_scaled":
        assert estimates and estimates[-1] is not None  # the Lanczos path ran


def test_dual_kernel_estimates_match_naive_kernel(estimates):
    """Dual solver, 300 < n < p: the kernel's Cholesky factor and estimates; rank n
    and largest eigenvalue as eigvalsh of the naive kernel says."""
    rng = np.random.default_rng(31)
    d, n = 9, 380  # p = 405
    X = np.abs(rng.normal(size=(n, 5, d)))
    certificate = certify(X)
    features = naive_lifted_features(X)
    exact = np.linalg.eigvalsh(features @ features.T / n)
    assert estimates and estimates[-1] is not None
    assert certificate.rank == n and not certificate.identifiable
    assert exact[-1] * (1 - 1e-2) <= certificate.max_eigenvalue
    assert certificate.max_eigenvalue <= exact[-1] * (1 + 1e-9)


# --- spectra that fooled the residual rule (fixed in _certificate._settled) -----------
#
# The stopping rule (_block_top_eigenvalue: ``norm(residual @ ritz[new]) <= rtol *
# value``) only proves that SOME eigenvalue lies within rtol * value of the Ritz
# value, not the extreme one. On c I + (small) low rank the first block's Rayleigh
# quotient is c with a residual of about |gap| * |u^T y| ~ gap * 2 / sqrt(n): the rule
# fires at step 0 and returns c, missing the isolated extreme eigenvalue by the gap.


def test_extreme_eigenvalues_find_the_largest_above_a_flat_bulk():
    """Was a defect of 176e7be, fixed by the gap rule (_settled): I + 0.05 u u^T
    (n=301): largest returned as 1.0 instead of 1.05 (4.7% low); the residual rule
    stops at step 0 on the bulk eigenvalue."""
    n = 301
    u = np.random.default_rng(0).normal(size=n)
    u /= np.linalg.norm(u)
    gram = np.eye(n) + 0.05 * np.outer(u, u)  # eigenvalues 1 (x300) and 1.05
    check_estimates(gram)


def test_extreme_eigenvalues_find_the_smallest_below_a_flat_bulk():
    """Was a defect of 176e7be, fixed by the gap rule (_settled): 1.2 I - 0.2 u u^T
    (n=1000): smallest returned as 1.2 instead of 1.0 (20% high); the inverse's
    residual rule stops at step 0 on the bulk."""
    n = 1000
    u = np.random.default_rng(0).normal(size=n)
    u /= np.linalg.norm(u)
    gram = 1.2 * np.eye(n) - 0.2 * np.outer(u, u)  # eigenvalues 1.0 and 1.2 (x999)
    check_estimates(gram)


def test_extreme_eigenvalues_find_an_isolated_smallest_below_a_narrow_band():
    """Was a defect of 176e7be, fixed by the gap rule (_settled): isolated smallest 1.0
    below a band U[1.05, 1.1] (n=301): smallest returned about 7% high."""
    n = 301
    rng = np.random.default_rng(n)
    gram = gram_with_spectrum(np.concatenate([[1.0], rng.uniform(1.05, 1.1, n - 1)]))
    check_estimates(gram)


def test_extreme_eigenvalues_find_the_smallest_of_a_narrow_band():
    """Was a defect of 176e7be, fixed by the gap rule (_settled): eigenvalues 1.0, U[1,
    1.05] (x998), 1.05 (n=1000, condition 1.05): smallest returned 2.4% high (a Ritz
    value inside a narrow band passes the 1.5e-2 rule); 2.1-2.4% over seeds 1-3 at
    n=301 and 0-3 at n=1000."""
    n = 1000
    rng = np.random.default_rng(0)
    eigenvalues = np.concatenate([[1.0], rng.uniform(1.0, 1.05, n - 2), [1.05]])
    check_estimates(gram_with_spectrum(eigenvalues, seed=0))


def test_gram_spectrum_gives_the_smallest_below_a_flat_bulk():
    """Was a defect of 176e7be, fixed by the gap rule (_settled): gram_spectrum reports
    the biased estimate too: min eigenvalue of 1.1 I - 0.1 u u^T (n=600) given as
    1.099, not 1.0."""
    n = 600
    u = np.random.default_rng(1).normal(size=n)
    u /= np.linalg.norm(u)
    gram = 1.1 * np.eye(n) - 0.1 * np.outer(u, u)
    spectrum = gram_spectrum(gram, n * EPS)
    assert spectrum.eigenvalues[0] == pytest.approx(1.0, rel=1e-2)


def _flat_gram_with_hidden_bottom(n, smallest):
    """I - (1 - smallest) u u^T with u orthogonal to the inverse's start block
    (default_rng(0).normal(size=(n, 4)), as extreme_eigenvalues draws it): the
    block's Krylov space is invariant at step 0."""
    start = np.random.default_rng(0).normal(size=(n, 4))
    q = np.linalg.qr(start)[0]
    u = np.random.default_rng(5).normal(size=n)
    u -= q @ (q.T @ u)
    u /= np.linalg.norm(u)
    return np.eye(n) - (1 - smallest) * np.outer(u, u)


def test_extreme_eigenvalues_find_a_smallest_orthogonal_to_the_start_block():
    """Was a defect of 176e7be, fixed by the gap rule (_settled): smallest eigenvalue
    1e-3 hidden from the fixed start block: estimate 1.0 (1000x high), returned at
    step 0 with a zero residual."""
    check_estimates(_flat_gram_with_hidden_bottom(301, 1e-3))


def test_gram_spectrum_counts_a_null_direction_hidden_from_the_start_block():
    """Was a defect of 176e7be, fixed by the gap rule (_settled): rank-deficient Gram
    (smallest 1e-14 < tol = n eps) whose Cholesky succeeds: the estimate 1.0 passes
    the 1e3 margin, gram_spectrum says full rank 301, eigvalsh rank 300."""
    n = 301
    gram = _flat_gram_with_hidden_bottom(n, 1e-14)
    tol = n * EPS
    exact = np.linalg.eigvalsh(gram)
    exact_rank = int(np.count_nonzero(exact > tol * exact[-1]))
    assert exact_rank == n - 1  # the reference: one eigenvalue below the threshold
    assert gram_spectrum(gram, tol).rank == exact_rank


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
def test_extreme_eigenvalues_at_extreme_scales_are_right_or_none(scale):
    """Overflow in the residual norm at 1e+-300 gives None (eigvalsh fallback),
    never a wrong estimate."""
    rng = np.random.default_rng(0)
    gram = gram_with_spectrum(rng.uniform(1, 10, 400) * scale)
    with np.errstate(over="ignore"):
        check_estimates(gram)


def test_extreme_eigenvalues_accept_read_only_inputs():
    """Read-only gram and factor (C and F order) are accepted."""
    rng = np.random.default_rng(4)
    gram = gram_with_spectrum(rng.uniform(1, 5, 350))
    for order in ["C", "F"]:
        g = np.array(gram, order=order)
        f = np.array(scipy.linalg.cholesky(gram), order=order)
        g.setflags(write=False)
        f.setflags(write=False)
        check_estimates(g, f)


@pytest.mark.parametrize("noise", [0.3, 0.1, 3e-2, 1e-2, 1e-3, 1e-6])
def test_nearly_degenerate_tokens_certificate_matches_naive_lift(noise):
    """On lifted Grams: tokens in an 8-dimensional subspace of R^9 plus
    noise (lifted condition about 1e5..1e20); verdict, rank and min eigenvalue as
    eigvalsh of the naive Gram says."""
    d, n, T = 9, 1200, 5
    p = d * d * (d + 1) // 2
    rng = np.random.default_rng(int(-10 * np.log10(noise)))
    basis = np.linalg.qr(rng.normal(size=(d, d - 1)))[0]
    X = rng.normal(size=(n, T, d - 1)) @ basis.T + noise * rng.normal(size=(n, T, d))
    lam = naive_lambda(naive_lifted_features(X), np.ones(n), False)
    check_certificate(certify(X), lam, p)
    model = LinearAttentionRegressor(token_dim=d, solver="normal").fit(
        X, rng.normal(size=n)
    )
    check_certificate(model.certificate_, lam, p)


# --- every solver against a naive reference on small, degenerate data sets -----------
#
# The reference: phi(Z) written out (conftest.naive_lifted_features), the weighted
# second moment's eigenvalues by numpy.linalg.eigvalsh with numpy's rank rule
# (p eps relative), and span membership by numpy.linalg.lstsq residuals.


def _naive_certificate(X, weights):
    features = naive_lifted_features(np.asarray(X, dtype=np.float64))
    kept = weights > 0
    features, weights = features[kept], weights[kept]
    moment = features.T @ (weights[:, None] * features) / weights.sum()
    eigenvalues = np.linalg.eigvalsh(moment)
    p = features.shape[1]
    rank = int(np.sum(eigenvalues > p * np.finfo(np.float64).eps * eigenvalues[-1]))
    return eigenvalues, rank, features, int(kept.sum())


def _naive_outside_fraction(features, new_features, mean=None):
    if mean is not None:
        features, new_features = features - mean, new_features - mean
    coef = np.linalg.lstsq(features.T, new_features.T, rcond=None)[0]
    outside = np.linalg.norm(new_features.T - features.T @ coef, axis=0)
    norm = np.linalg.norm(new_features, axis=1)
    return np.divide(outside, norm, out=np.zeros_like(norm), where=norm > 0)


def _degenerate_case(name, rng):
    """(X, sample_weight, inputs inside the span that are not training ones)."""
    d = 3
    p = n_lifted(d)
    if name.startswith("gaussian"):
        n = {"gaussian_n<p": p // 2, "gaussian_n=p": p, "gaussian_n>p": 4 * p}[name]
        return rng.normal(size=(n, 4, d)), None, rng.normal(size=(2, 4, d))[:0]
    if name == "duplicates":
        X = rng.normal(size=(p - 4, 4, d))
        return np.concatenate([X, X, X]), None, 2.0 * X[:2]
    if name == "zero_coordinate":
        X, new = rng.normal(size=(4 * p, 4, d)), rng.normal(size=(2, 5, d))
        X[:, :, 1] = new[:, :, 1] = 0.0
        return X, None, new
    if name == "subspace":
        basis = rng.normal(size=(2, d))
        return (
            rng.normal(size=(4 * p, 4, 2)) @ basis,
            None,
            rng.normal(size=(2, 6, 2)) @ basis,
        )
    if name == "one_hot":
        return np.eye(d)[rng.integers(0, d, (4 * p, 4))], None, np.eye(d)[[[0, 2, 1]]]
    if name == "one_token":
        return rng.normal(size=(4 * p, 1, d)), None, rng.normal(size=(2, 1, d))
    if name == "zero_weights":  # 12 of 36 sequences kept: not identifiable
        weights = np.r_[np.zeros(24), rng.uniform(0.5, 2.0, 12)]
        return rng.normal(size=(36, 4, d)), weights, np.empty((0, 4, d))
    if name == "weights_some_zero":  # 30 of 40 kept, unequal: identifiable
        weights = np.r_[np.zeros(10), rng.uniform(0.1, 5.0, 30)]
        return rng.normal(size=(40, 4, d)), weights, np.empty((0, 4, d))
    if name == "float32":
        return rng.normal(size=(10, 4, d)).astype(np.float32), None, np.empty((0, 4, d))
    raise ValueError(name)


DEGENERATE = [
    "gaussian_n<p",
    "gaussian_n=p",
    "gaussian_n>p",
    "duplicates",
    "zero_coordinate",
    "subspace",
    "one_hot",
    "one_token",
    "zero_weights",
    "weights_some_zero",
    "float32",
]


@pytest.mark.parametrize("name", DEGENERATE)
def test_every_solver_matches_the_naive_certificate(name):
    rng = np.random.default_rng(DEGENERATE.index(name))
    X, weights, inside = _degenerate_case(name, rng)
    n, d = len(X), X.shape[2]
    p = n_lifted(d)
    w = np.ones(n) if weights is None else weights
    eigenvalues, rank, features, n_kept = _naive_certificate(X, w)
    generic = rng.normal(size=(3, 5, d))
    # training sequences (positive weight), dropped (zero-weight) ones, generic ones
    probes = [X[w > 0][:3], X[w == 0][:2], generic]
    expected = [
        _naive_outside_fraction(features, naive_lifted_features(group)) <= 1e-6
        for group in probes
    ]
    assert expected[0].all()
    X_before = X.copy()
    certificates = {} if weights is not None else {"certify": certify(X)}
    for solver in ("normal", "dual", "cg"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # alpha=0 with n <= p
            model = LinearAttentionRegressor(n_heads=None, solver=solver)
            model.fit(X, rng.normal(size=n), sample_weight=weights)
        certificates[solver] = model.certificate_
    np.testing.assert_array_equal(X, X_before)
    for source, cert in certificates.items():
        assert cert.exact and cert.n_lifted_features == p, source
        assert cert.rank == rank, source
        assert cert.identifiable == (rank == p) == bool(cert), source
        assert cert.n_samples == n_kept, source
        assert cert.max_eigenvalue == pytest.approx(eigenvalues[-1], rel=1e-9), source
        floor = 1e-12 * eigenvalues[-1]
        assert cert.min_eigenvalue == pytest.approx(max(eigenvalues[0], 0), abs=floor)
        # covers as lstsq says; other inputs inside the span: covered
        for group, covered in zip(probes, expected, strict=True):
            if len(group):
                np.testing.assert_array_equal(cert.covers(group), covered)
        if len(inside):
            np.testing.assert_array_equal(
                _naive_outside_fraction(features, naive_lifted_features(inside))
                <= 1e-6,
                True,
            )
            assert cert.covers(inside).all(), source
        if rank < p:
            assert not cert.covers(generic).any(), source


# --- certify(convention="paper"): the centered covariance, its affine hull ------------


def _unscaled(features, d):
    rows, cols = np.triu_indices(d)
    return features / np.repeat(np.where(rows == cols, 1.0, np.sqrt(2.0)), d)


@pytest.mark.parametrize("name", ["gaussian_n<p", "one_hot", "subspace", "one_token"])
def test_paper_convention_covers_the_affine_hull(name):
    """The paper's covariance is centered: its null space is that of the affine
    hull of the training features, and so is covers' test (it used to project
    the uncentered isometric features on the covariance's eigenvectors, and said
    the training sequences themselves were not covered)."""
    rng = np.random.default_rng(40 + DEGENERATE.index(name))
    X, _, inside = _degenerate_case(name, rng)
    d = X.shape[2]
    features = naive_lifted_features(X)
    covariance = np.cov(_unscaled(features, d).T)
    eigenvalues = np.linalg.eigvalsh(covariance)
    cert = certify(X, convention="paper")
    assert cert.rank == np.sum(eigenvalues > cert.tol * eigenvalues[-1])
    mean = features.mean(axis=0)
    probes = [X[:3], 2.0 * X[:2], inside, rng.normal(size=(2, X.shape[1], d))]
    for group in probes:
        if len(group):
            fraction = _naive_outside_fraction(
                features, naive_lifted_features(group), mean
            )
            np.testing.assert_array_equal(cert.covers(group), fraction <= 1e-6)
    assert cert.covers(X).all()  # the training sequences are in their affine hull


@pytest.mark.parametrize("n_copies", [1, 2, 50])
def test_paper_convention_of_identical_sequences_has_rank_zero(n_copies):
    """The covariance of identical sequences is zero: rank 0, whatever rounding the
    centering leaves (it used to count that rounding as rank 9 of 18)."""
    X = np.repeat(np.random.default_rng(7).normal(size=(1, 4, 3)), n_copies, axis=0)
    cert = certify(X, convention="paper")
    assert cert.rank == 0 and not cert.identifiable
    assert cert.covers(X[:1]).all()
    assert not cert.covers(2.0 * X[:1]).any()


# --- input handling -------------------------------------------------------------------


def test_certify_and_covers_do_not_modify_or_need_writable_input(rng):
    X = random_sequences(rng, 12, 4, 3)
    X.setflags(write=False)
    before = X.copy()
    for convention in ("isometric", "paper"):
        cert = certify(X, convention=convention)
        cert.covers(X)
    np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.ones(5), r"shape \(n_samples, n_tokens, token_dim\)"),
        (np.ones((2, 3, 4, 5)), r"shape \(n_samples, n_tokens, token_dim\)"),
        (np.ones((0, 4, 3)), "0 sample"),
        (np.ones((5, 0, 3)), "at least one token"),
        (np.full((2, 4, 3), np.nan), "NaN"),
        (np.full((2, 4, 3), np.inf), "infinity"),
    ],
)
def test_bad_input_is_a_clear_value_error(rng, bad, match):
    cert = certify(random_sequences(rng, 10, 4, 3))
    with pytest.raises(ValueError, match=match):
        certify(bad)
    with pytest.raises(ValueError, match=match):
        cert.covers(bad)


def test_wrong_token_dim_names_the_expected_shape(rng):
    X = random_sequences(rng, 10, 4, 3)
    with pytest.raises(ValueError, match=r"not a multiple of token_dim=3"):
        certify(np.ones((5, 7)), token_dim=3)
    with pytest.raises(ValueError, match=r"\(n_samples, n_tokens, 2\)"):
        certify(X, token_dim=2)
    with pytest.raises(TypeError, match="token_dim must be a positive int"):
        certify(X, token_dim=2.0)
    with pytest.raises(ValueError, match="token_dim must be a positive int"):
        certify(X, token_dim=0)


def test_dask_input_gives_the_numpy_certificate(rng):
    da = pytest.importorskip("dask.array")
    for n in (10, 40):  # p = 18: kernel below, Gram above
        X = random_sequences(rng, n, 4, 3)
        lazy = da.from_array(X, chunks=(7, 4, 3))
        cert, reference = certify(lazy), certify(X)
        _, rank, features, _ = _naive_certificate(X, np.ones(n))
        assert cert.rank == reference.rank == rank
        assert cert.max_eigenvalue == pytest.approx(reference.max_eigenvalue, rel=1e-9)
        probes = np.concatenate([X[:2], random_sequences(rng, 2, 4, 3)])
        expected = _naive_outside_fraction(features, naive_lifted_features(probes))
        np.testing.assert_array_equal(cert.covers(probes), expected <= 1e-6)
        np.testing.assert_array_equal(
            reference.covers(da.from_array(probes, chunks=2)), expected <= 1e-6
        )


@pytest.mark.parametrize("solver", ["normal", "dual", "cg"])
@pytest.mark.parametrize("n_copies", [3, 50])
def test_covers_identical_training_sequences_with_an_intercept(solver, n_copies):
    """With an intercept the span is the affine hull, here the one point phi(x):
    x is covered, 2x is not. The centered features of x are the rounding of the
    mean, so their own norm is no scale for a relative test (it said x was not
    covered with solvers "normal" and "cg" from 3 copies, "dual" from 50)."""
    x = np.random.default_rng(7).normal(size=(1, 4, 3))
    X = np.repeat(x, n_copies, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearAttentionRegressor(
            n_heads=None, solver=solver, fit_intercept=True
        )
        cert = model.fit(X, np.arange(n_copies, dtype=float)).certificate_
    assert cert.rank == 0
    assert cert.covers(x).all()
    assert not cert.covers(2.0 * x).any()



def _centered_certificate(fit, X, rng):
    """The certificate of X with a centered span: convention="paper", or a fit
    with an intercept by solver ``fit``."""
    if fit == "paper":
        return certify(X, convention="paper")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearAttentionRegressor(n_heads=None, solver=fit, fit_intercept=True)
        return model.fit(X, rng.normal(size=len(X))).certificate_


@pytest.mark.parametrize("fit", ["paper", "normal", "dual", "cg"])
def test_covers_large_inputs_against_a_centered_span(fit):
    """Identical training sequences x: the affine hull is the one point phi(x), so
    s x is not covered for any s != 1. The centered test lifted inputs in the
    training scale, where from s = 1e100 their features' squared norms overflow:
    RuntimeWarnings, and at 1e200 (1e110 for "dual") it said s x was covered."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1, 4, 3))
    cert = _centered_certificate(fit, np.repeat(x, 50, axis=0), rng)
    assert cert.rank == 0 and cert.covers(x).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for scale in (1e100, 1e110, 1e200, 1e300):
            assert not cert.covers(scale * x).any()


@pytest.mark.parametrize("scale", [1.0, 1e-2, 1e-3, 1e100, 1e200])
@pytest.mark.parametrize("fit", ["paper", "normal", "dual", "cg"])
def test_covers_small_and_large_inputs_when_the_hull_holds_the_origin(fit, scale):
    """Positive tokens in a plane (third coordinate 0), many of them: the affine
    hull of their features is their span (it holds the origin), so an input is
    covered iff its features lie in the span, at any scale; inputs leaving the
    plane are not. The centered test measured the component outside the hull
    against ||phi(x) - mean||, which for an input 100 times smaller than the
    training tokens is the mean's norm: it said those inputs were covered (and at
    1e100 it overflowed and said the inputs in the plane were not)."""
    rng = np.random.default_rng(13)
    X = np.abs(rng.normal(size=(200, 4, 3)))
    X[..., 2] = 0.0
    cert = _centered_certificate(fit, X, rng)
    features = naive_lifted_features(X)
    assert cert.rank == np.linalg.matrix_rank(features - features.mean(axis=0))
    in_plane = np.abs(rng.normal(size=(3, 4, 3)))
    in_plane[..., 2] = 0.0
    leaving = np.abs(rng.normal(size=(3, 4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for probes, inside in ((in_plane, True), (leaving, False)):
            fraction = _naive_outside_fraction(features, naive_lifted_features(probes))
            assert np.all((fraction <= 1e-6) == inside)
            assert np.all(cert.covers(scale * probes) == inside)


@pytest.mark.parametrize(
    "fit, positions",
    [("isometric", "last"), ("paper", "last")]
    + [
        (fit, positions)
        for fit in ("normal", "dual", "cg", "normal_intercept")
        for positions in ("last", "all")
    ],
)
def test_covers_each_input_as_if_it_came_alone(fit, positions):
    """covers answers for each input on its own: a batch that also holds a much
    larger input gives the others the answers they get alone. The inputs were
    brought near 1 by one power of two for the whole batch, so next to an input
    1e60 times larger the features of the others underflowed to zero, and
    inputs outside the span were said to be covered."""
    rng = np.random.default_rng(15)
    n = 3 if positions == "all" else 10  # rows: 12 or 10 of p = 18
    X = rng.normal(size=(n, 4, 3))
    if fit in ("isometric", "paper"):
        cert = certify(X, convention=fit)
    else:
        solver, _, intercept = fit.partition("_")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LinearAttentionRegressor(
                n_heads=None, solver=solver, fit_intercept=bool(intercept),
                positions=positions,
            )
            y = rng.normal(size=(n, 4) if positions == "all" else n)
            cert = model.fit(X, y).certificate_
    assert not cert.identifiable
    probes = np.concatenate([X[:2], rng.normal(size=(2, 4, 3))])
    alone = np.array([cert.covers(probe[None])[0] for probe in probes])
    assert alone[:2].all() and not alone[2:].any()
    for scale in (1e60, 1e120, 1e250):
        batch = np.concatenate([probes, scale * rng.normal(size=(1, 4, 3))])
        np.testing.assert_array_equal(cert.covers(batch)[:-1], alone)


@pytest.mark.parametrize("d", [1, 3])
def test_paper_convention_eigenvalues_are_at_most_n_over_n_minus_1_times_ours(d):
    """Centering and the unscaling (by 1 or 1/sqrt 2) shrink each eigenvalue
    (Weyl, Ostrowski); the covariance's 1 / (N - 1) can enlarge them by N / (N - 1),
    which for mean-zero data of d = 1 it does: the docs said they were smaller."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(10, 4, d))
    X = np.concatenate([X, -X])  # features odd in X: mean exactly zero
    n = len(X)
    ours, paper = certify(X), certify(X, convention="paper")
    for name in ("min_eigenvalue", "max_eigenvalue"):
        assert getattr(paper, name) <= n / (n - 1) * getattr(ours, name) * (1 + 1e-12)
    if d == 1:  # the bound is attained
        assert paper.min_eigenvalue == pytest.approx(n / (n - 1) * ours.min_eigenvalue)


@pytest.mark.parametrize("n", [10, 40])  # p = 18: the kernel, then the Gram
@pytest.mark.parametrize("convention", ["isometric", "paper"])
def test_certify_refuses_a_matrix_beyond_the_available_memory(
    monkeypatch, n, convention
):
    """certify decomposes an n x n kernel or a p x p Gram; one that does not fit in
    memory is a ValueError naming the sizes before any work (it used to try,
    e.g. a numpy MemoryError for the 505,000 x 505,000 Gram of d = 100), and
    where solver="auto" would fall back to "cg" it takes the smaller of the two
    (it took the Gram, however many lifted features)."""
    import sklearn_linattn._certificate as certificate_module
    import sklearn_linattn._data as data_module

    X = np.random.default_rng(0).normal(size=(n, 4, 3))
    expected = certify(X, convention=convention)
    # auto's reference budget too small for either: "cg"; still the exact answer
    monkeypatch.setattr(data_module, "_SOLVER_MEMORY", 1000)
    assert certify(X, convention=convention) == expected
    size = 18 if convention == "paper" or n > 18 else n
    needed = 3 * 8 * size**2
    monkeypatch.setattr(certificate_module, "available_memory", lambda: needed - 1)
    matrix = "kernel" if size == n else "Gram matrix"
    with pytest.raises(ValueError, match=rf"{size:,} x {size:,} {matrix}.*p = 18"):
        certify(X, convention=convention)
    monkeypatch.setattr(certificate_module, "available_memory", lambda: needed)
    assert certify(X, convention=convention) == expected
