import numpy as np
import pytest

from sklearn_linattn import MultiHeadLinearAttention
from sklearn_linattn.datasets import make_random_mhla


def random_attention(rng, token_dim, n_heads, n_outputs=1):
    """A generic random MHLA with parameters N(0, 1/d), as in the paper."""
    scale = 1.0 / np.sqrt(token_dim)
    return MultiHeadLinearAttention(
        rng.normal(scale=scale, size=(n_heads, n_outputs, token_dim)),
        rng.normal(scale=scale, size=(n_heads, token_dim, token_dim)),
    )


def random_sequences(rng, n_samples, n_tokens, token_dim):
    """Gaussian tokens with entries N(0, 1/n_tokens), as in the paper."""
    return rng.normal(
        scale=1.0 / np.sqrt(n_tokens), size=(n_samples, n_tokens, token_dim)
    )


def n_lifted(token_dim):
    return token_dim * token_dim * (token_dim + 1) // 2


def naive_lifted_features(sequences):
    """phi(Z) from the definition: full d^3 map S[b,c] q[e], then the entries with
    b <= c, off-diagonal ones times sqrt(2), in triu order with e fastest."""
    d = sequences.shape[2]
    S = np.einsum("nti,ntj->nij", sequences, sequences)
    q = sequences[:, -1, :]
    full = np.einsum("nbc,ne->nbce", S, q)
    columns = []
    for b in range(d):
        for c in range(b, d):
            weight = 1.0 if b == c else np.sqrt(2.0)
            for e in range(d):
                columns.append(weight * full[:, b, c, e])
    return np.stack(columns, axis=1)


def assert_within_lifted_rounding(actual, expected, magnitude, n_tokens):
    """Two computations of lifted features (or pair statistics) agree to rounding:
    each entry w S_bc q_e sums ``n_tokens`` products, so each computation errs by
    at most about (n_tokens + 3) u times ``magnitude``, the same entries of the
    absolute values |Z| (u = eps / 2); entrywise, not relative to the entry, which
    cancellation can make arbitrarily small. Checked with a factor 2 of slack."""
    bound = 2 * (n_tokens + 3) * np.finfo(np.float64).eps * magnitude
    excess = np.abs(np.asarray(actual) - expected) - bound
    assert np.all(excess <= 0), f"beyond the rounding bound by {excess.max():.3g}"


def naive_position_features(X, causal):
    """phi at every position, from prefix sums written out here: rows sample-major."""
    n, T, d = X.shape
    rows = []
    for i in range(n):
        for t in range(T):
            context = X[i, : t + 1] if causal else X[i]
            S = context.T @ context
            q = X[i, t]
            full = np.einsum("bc,e->bce", S, q)
            row = []
            for b in range(d):
                for c in range(b, d):
                    weight = 1.0 if b == c else np.sqrt(2.0)
                    row.extend(weight * full[b, c])
            rows.append(row)
    return np.array(rows)


def naive_weighted_solution(features, targets, weights, alpha, fit_intercept):
    """Weighted ridge / minimum-norm least squares by an explicit pseudo-inverse."""
    w = np.sqrt(weights)[:, None]
    if fit_intercept:
        mean = weights @ features / weights.sum()
        target_mean = weights @ targets / weights.sum()
    else:
        mean, target_mean = np.zeros(features.shape[1]), np.zeros(targets.shape[1])
    A = w * (features - mean)
    b = w * (targets - target_mean)
    if alpha > 0:  # least squares of [A; sqrt(alpha) I]: no squared condition
        augmented = np.vstack([A, np.sqrt(alpha) * np.eye(A.shape[1])])
        padded = np.vstack([b, np.zeros((A.shape[1], b.shape[1]))])
        coef = np.linalg.lstsq(augmented, padded, rcond=None)[0].T
    else:
        coef = (np.linalg.pinv(A, rcond=1e-12) @ b).T
    residual = b - A @ coef.T
    return coef, target_mean - coef @ mean, np.sum(residual**2, axis=0), A.T @ A


def naive_relative_distance(model, truth):
    """Relative model distance from the definition, without lifted coefficients.

    The function's coefficient tensor W[a,b,c,e] = sum_h V_h[a,b] Q_h[c,e] only
    matters through its part symmetric in (b, c) (S is symmetric); compare those
    parts in Frobenius norm, relative to the truth's. With the sqrt(2) weights of the
    lift this equals the distance of the non-redundant lifted coefficients.
    """

    def symmetric_tensor(attention):
        V, Q = attention.value_matrices, attention.query_matrices
        W = np.einsum("hab,hce->abce", V, Q)
        return (W + W.transpose(0, 2, 1, 3)) / 2

    difference = symmetric_tensor(model) - symmetric_tensor(truth)
    return np.linalg.norm(difference) / np.linalg.norm(symmetric_tensor(truth))


def naive_least_squares(features, targets, weights=None, intercept=True):
    """Minimum-norm weighted least squares (``lstsq``, its default cutoff) on
    explicitly centered features, targets 1-D or 2-D:
    ``(coef, feature_mean, target_mean, centered weighted design)``."""
    n = len(features)
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if intercept:
        mean = weights @ features / weights.sum()
        target_mean = weights @ targets / weights.sum()
    else:
        mean = np.zeros(features.shape[1])
        target_mean = np.zeros(targets.shape[1:])
    root = np.sqrt(weights)
    design = root[:, None] * (features - mean)
    rhs = (targets - target_mean) * (root if targets.ndim == 1 else root[:, None])
    coef = np.linalg.lstsq(design, rhs, rcond=None)[0]
    return coef, mean, target_mean, design


def naive_outside_fraction(features, design, mean):
    """Relative norm of ``features - mean`` outside the row space of ``design``."""
    basis = np.linalg.svd(design, full_matrices=False)
    s, vt = basis[1], basis[2]
    vt = vt[s > s[0] * 1e-10]
    centered = features - mean
    outside = centered - centered @ vt.T @ vt
    return np.linalg.norm(outside, axis=-1) / np.linalg.norm(centered, axis=-1)


def naive_fold_layout(n_sequences):
    """The held-out fold of each of ``n_sequences`` sequences of positive weight,
    dealt as the theory page says: to folds 0, 1, 2, 3, 4, 0, ... in turn, 40
    single sequences, then 20 runs each of 2, 4 and 8 consecutive sequences,
    then runs of 16."""
    folds, fold = [], 0
    for run, n_runs in [(1, 40), (2, 20), (4, 20), (8, 20), (16, n_sequences)]:
        for _ in range(n_runs):
            folds += [fold] * run
            fold = (fold + 1) % 5
    return np.array(folds[:n_sequences])


def relative_error(a, b):
    """Largest absolute difference, relative to the largest entry of ``b``."""
    return np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(b).max()


def one_head_problem(seed=0, d=3, n=200):
    """A random one-head, one-output MHLA, Gaussian sequences and its outputs."""
    rng = np.random.default_rng(seed)
    truth = random_attention(rng, d, 1)
    X = random_sequences(rng, n, 5, d)
    return truth, X, truth.predict(X)[:, 0]


@pytest.fixture
def rng():
    return np.random.default_rng(20251129)


@pytest.fixture(scope="module")
def client():
    """A two-process Dask cluster for the tests of one module (skipped without
    distributed)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def hidden_head_outputs(seed, n_samples=400, n_test=0):
    """Six outputs of d = 4: one head drives outputs 0 to 4 (noise a tenth of
    their spread), another only output 5 (noise as large as its signal)."""
    rng = np.random.default_rng(seed)
    d, n_outputs = 4, 6
    values = np.zeros((2, n_outputs, d))
    values[0, :-1] = rng.normal(size=(n_outputs - 1, d))
    values[1, -1] = rng.normal(size=d)
    truth = MultiHeadLinearAttention(values, rng.normal(size=(2, d, d)))
    X = rng.normal(scale=1 / np.sqrt(8), size=(n_samples + n_test, 8, d))
    clean = truth.predict(X)
    spread = clean[:n_samples].std(axis=0) / 10
    spread[-1] = clean[:n_samples, -1].std()
    return X, clean + rng.normal(size=clean.shape) * spread, clean


def seventeen_sequences_three_labels():
    """17 sequences of 6 Gaussian tokens of d = 3 labelled "a", "b", "c" by the
    largest of three outputs of a random two-head layer, with noise of 0.3 times
    their spread: near interpolation, the counts are decided three ways."""
    rng = np.random.default_rng(6)
    truth = random_attention(rng, 3, 2, 3)
    X = random_sequences(rng, 17, 6, 3)
    scores = truth.predict(X)
    scores = scores + 0.3 * scores.std() * rng.normal(size=scores.shape)
    return X, np.asarray(["a", "b", "c"])[scores.argmax(axis=1)]


def few_sequences_three_classes(n_test=2000):
    """Nine sequences of 8 Gaussian tokens of d = 3, labelled by the largest of
    three outputs of a random three-head layer (noise a tenth of their spread),
    then ``n_test`` (at most 2000) noiseless ones: with ``alpha=0.1`` and an
    intercept one head misclassifies fewer held-out sequences than the lifted
    fit, with worse class scores."""
    rng = np.random.default_rng(793755)
    truth = MultiHeadLinearAttention(
        rng.normal(size=(3, 3, 3)), rng.normal(size=(3, 3, 3))
    )
    X = rng.normal(size=(9 + 2000, 8, 3))
    scores = truth.predict(X)
    scores[:9] += 0.1 * scores[:9].std() * rng.normal(size=(9, 3))
    return X[: 9 + n_test], np.argmax(scores[: 9 + n_test], axis=1)



def classes_with_positions_and_a_constant():
    """``(Z, y)``: 210 rows of ``make_classification`` (8 features, 2 classes,
    a stratified 70% of 300), standardized, as 4 tokens of 2 features with
    positions and a constant (``PositionalEncoding(constant=True)``, d = 7):
    the lifted coefficients are not identified, and 2 heads are the lifted
    fit on the data."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from sklearn_linattn.preprocessing import PositionalEncoding

    X, y = make_classification(
        300, n_features=8, n_informative=5, n_classes=2, flip_y=0.05, random_state=0
    )
    X, _, y, _ = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    Z = StandardScaler().fit_transform(X).reshape(len(X), 4, 2)
    return PositionalEncoding(constant=True, padding=None).fit_transform(Z), y

def fifteen_diabetes_sequences(n_extra=0):
    """Fifteen samples of sklearn's diabetes (a seeded draw), standardized on
    them, as 5 tokens of 2 features with positions and a constant (d = 8, p =
    288), then ``n_extra`` more of the draw transformed alike: with
    ``alpha=1e-6`` and no intercept, counts from the interpolating one on are
    fitted, and 5 heads reproduce the lifted fit's 7."""
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import StandardScaler

    from sklearn_linattn.preprocessing import PositionalEncoding

    X, y = load_diabetes(return_X_y=True)
    n = 15 + n_extra
    order = np.random.default_rng(386384724).permutation(len(X))
    X, y = X[order][:n], y[order][:n]
    y = (y - y[:15].mean()) / y[:15].std()
    X = StandardScaler().fit(X[:15]).transform(X).reshape(n, 5, 2)
    return PositionalEncoding(constant=True, padding=None).fit_transform(X), y


def noiseless_far_from_zero(offset, seed, n_heads=2):
    """``(X, y)``: 200 sequences of 5 tokens of d = 3 from ``make_random_mhla``
    offset by ``offset`` (a lifted Gram of condition about 1e13 at 30, which
    loses directions to rounding from 100 on), and the generating model's output
    on them, without noise."""
    X, _, truth = make_random_mhla(200, 5, 3, n_heads=n_heads, random_state=seed)
    X = X + offset
    return X, truth.predict(X).reshape(len(X), -1)[:, 0]
