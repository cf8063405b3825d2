"""Bad input, numerics and invariances across the public entry points."""

import os
import pickle
import subprocess
import sys
import threading

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import (
    n_lifted,
    naive_lifted_features,
    random_attention,
    random_sequences,
    relative_error,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_linattn import (
    LiftedAttentionFeatures,
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    certify,
)
from sklearn_linattn._lift import lifted_features

GOOD = np.random.default_rng(0).normal(size=(12, 4, 2))


def object_array(items):
    """A 1-D object array holding the items (one array per sequence)."""
    array = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        array[i] = item
    return array


BAD_X = {
    "NaN": (np.where(np.arange(96).reshape(12, 4, 2) == 5, np.nan, GOOD), "NaN"),
    "+inf": (np.where(np.arange(96).reshape(12, 4, 2) == 5, np.inf, GOOD), "infinity"),
    "-inf": (np.where(np.arange(96).reshape(12, 4, 2) == 5, -np.inf, GOOD), "infinity"),
    "empty": (np.empty((0, 4, 2)), "0 sample"),
    "0 tokens": (np.empty((12, 0, 2)), "at least one token"),
    "1-D": (np.ones(8), r"1 dimension\(s\)"),
    "4-D": (np.ones((12, 4, 2, 1)), r"4 dimension\(s\)"),
    "row not a multiple of token_dim": (
        np.ones((12, 7)),
        "not a multiple of token_dim=2|X has 7 features, but .* is expecting 8",
    ),
    "complex": (GOOD + 1j, "Complex data not supported"),
    "strings": (np.full((12, 4, 2), "a"), "could not convert|dtype='numeric'"),
    "objects": (np.full((12, 4, 2), None, dtype=object), "NaN"),
    "ragged object array": (
        object_array([np.ones((4, 2))] * 11 + [np.ones((3, 2))]),
        "list of sequences of different lengths",
    ),
}


def entry_points(X):
    """Every public function that takes sequences, called on X."""
    y = np.ones(X.shape[0] if hasattr(X, "shape") else len(X))
    fitted = LinearAttentionRegressor(token_dim=2).fit(GOOD, np.arange(12.0))
    classifier = LinearAttentionClassifier(token_dim=2).fit(GOOD, np.arange(12) % 2)
    features = LiftedAttentionFeatures(token_dim=2).fit(GOOD)
    model = random_attention(np.random.default_rng(1), 2, 1)
    return {
        "fit": lambda: LinearAttentionRegressor(token_dim=2).fit(X, y),
        "partial_fit": lambda: LinearAttentionRegressor(token_dim=2).partial_fit(X, y),
        "predict": lambda: fitted.predict(X),
        "score": lambda: fitted.score(X, y),
        "classifier fit": lambda: LinearAttentionClassifier(token_dim=2).fit(X, y % 2),
        "decision_function": lambda: classifier.decision_function(X),
        "transform": lambda: features.transform(X),
        "certify": lambda: certify(X, token_dim=2),
        "covers": lambda: certify(GOOD[:3]).covers(X),
        "MultiHeadLinearAttention.predict": lambda: model.predict(X),
    }


@pytest.mark.parametrize("case", sorted(BAD_X))
@pytest.mark.parametrize(
    "entry",
    [
        "fit",
        "partial_fit",
        "predict",
        "score",
        "classifier fit",
        "decision_function",
        "transform",
        "certify",
        "covers",
        "MultiHeadLinearAttention.predict",
    ],
)
def test_bad_sequences_get_a_clear_error(case, entry):
    X, match = BAD_X[case]
    copy = np.array(X, copy=True)
    with pytest.raises(ValueError, match=match):
        entry_points(X)[entry]()
    if copy.dtype.kind not in "OU":
        np.testing.assert_array_equal(X, copy)  # never modified


def test_an_object_array_of_sequences_is_read_as_their_list(rng):
    """One array per sequence in a 1-D object array (what a pandas Series of
    arrays holds) is the list of them: the same predictions as the 3-D array
    (it was refused as "1 dimension(s)", advising Z[None])."""
    X = rng.normal(size=(12, 4, 2))
    fitted = LinearAttentionRegressor().fit(X, rng.normal(size=12))
    held = object_array(list(X))
    np.testing.assert_array_equal(fitted.predict(held), fitted.predict(X))


def test_sparse_input_is_a_type_error():
    matrix = sp.csr_matrix(np.ones((12, 8)))
    for call in entry_points(matrix).values():
        with pytest.raises(TypeError, match="[Ss]parse"):
            call()


def test_token_dim_changed_between_fit_and_predict():
    fitted = LinearAttentionRegressor().fit(GOOD, np.arange(12.0))
    streamed = LinearAttentionRegressor().partial_fit(GOOD, np.arange(12.0))
    for call in (
        lambda: fitted.predict(np.ones((3, 4, 3))),
        lambda: fitted.certificate_.covers(np.ones((3, 4, 3))),
        lambda: streamed.partial_fit(np.ones((3, 4, 3)), np.ones(3)),
    ):
        with pytest.raises(ValueError, match="token dimension 3"):
            call()


LAYOUTS = {
    "float32": lambda X: X.astype(np.float32),
    "int64": lambda X: X.astype(np.int64),
    "F-order": np.asfortranarray,
    "strided": lambda X: np.repeat(X, 2, axis=2)[:, :, ::2],
    "lists": lambda X: X.tolist(),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_accepted_layouts_give_the_float64_answer(layout):
    X = np.round(GOOD * 3)  # exactly representable in every dtype tried
    y = np.arange(12.0)
    expected = LinearAttentionRegressor().fit(X, y)
    got = LinearAttentionRegressor().fit(LAYOUTS[layout](X), y)
    np.testing.assert_allclose(got.coef_, expected.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        got.predict(LAYOUTS[layout](X)), expected.predict(X), rtol=1e-10, atol=1e-10
    )


def test_boolean_tokens_are_zeros_and_ones():
    X = GOOD > 0
    y = np.arange(12.0)
    got = LinearAttentionRegressor().fit(X, y)
    expected = LinearAttentionRegressor().fit(X.astype(float), y)
    np.testing.assert_array_equal(got.coef_, expected.coef_)


def test_memory_mapped_read_only_input(tmp_path):
    path = tmp_path / "sequences.npy"
    np.save(path, GOOD)
    mapped = np.load(path, mmap_mode="r")
    model = LinearAttentionRegressor().fit(mapped, np.arange(12.0))
    np.testing.assert_allclose(model.predict(mapped), model.predict(GOOD))


@pytest.mark.parametrize(
    "params",
    [
        {"alpha": -1},
        {"alpha": "0"},
        {"token_dim": 1.5},
        {"token_dim": -2},
        {"n_heads": 2.5},
        {"n_heads": -1},
        {"solver": "qr"},
        {"tol": -0.1},
        {"max_iter": 0},
        {"batch_size": 1.5},
        {"solver_tol": 2.0},
        {"alpha": True},
        {"solver_tol": True},
        {"head_work_limit": True},
        {"head_work_limit": -1.0},
        {"n_heads": True},
    ],
)
def test_bad_hyperparameters(params):
    name = next(iter(params))
    with pytest.raises((ValueError, TypeError), match=f"'{name}' parameter"):
        LinearAttentionRegressor(**params).fit(GOOD, np.arange(12.0))


def test_all_zero_sample_weights_are_a_clear_error():
    rng = np.random.default_rng(2)
    X = random_sequences(rng, 10, 4, 3)
    with pytest.raises(ValueError, match="non-zero"):
        LinearAttentionRegressor(token_dim=3, fit_intercept=True).fit(
            X, rng.normal(size=10), sample_weight=np.zeros(10)
        )


# --- numerics ------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-8, 1e-3, 1e3, 1e8])
def test_badly_scaled_data(rng, scale):
    truth = random_attention(rng, 3, 2)
    X = random_sequences(rng, 4 * n_lifted(3), 6, 3)
    y = truth.predict(X)[:, 0]
    reference = LinearAttentionRegressor().fit(X, y)
    scaled = LinearAttentionRegressor().fit(X * scale, y * scale**3)  # y(cZ) = c^3 y(Z)
    assert np.all(np.isfinite(scaled.coef_))
    np.testing.assert_allclose(scaled.coef_, reference.coef_, rtol=1e-6, atol=1e-9)
    # The certificate does not flip with the scale of Z (its tolerance is relative).
    assert scaled.certificate_.identifiable == reference.certificate_.identifiable
    assert scaled.certificate_.rank == reference.certificate_.rank
    assert scaled.n_heads_ == reference.n_heads_ == 2


def test_near_duplicate_and_rank_deficient_samples(rng):
    X = random_sequences(rng, 20, 5, 4)  # p = 40
    X = np.concatenate([X, X + 1e-12 * rng.normal(size=X.shape)])
    y = rng.normal(size=20)
    y = np.concatenate([y, y])
    model = LinearAttentionRegressor(n_heads=None).fit(X, y)
    assert np.all(np.isfinite(model.coef_))
    np.testing.assert_allclose(model.predict(X[:20]), y[:20], rtol=1e-6, atol=1e-6)
    assert not model.certificate_.identifiable and model.certificate_.rank <= 40


def test_float32_input_matches_float64_reference(rng):
    X = random_sequences(rng, 100, 6, 3).astype(np.float32)
    y = rng.normal(size=100).astype(np.float32)
    ours = LinearAttentionRegressor(n_heads=None).fit(X, y)
    reference = LinearAttentionRegressor(n_heads=None).fit(
        X.astype(np.float64), y.astype(np.float64)
    )
    np.testing.assert_array_equal(ours.coef_, reference.coef_)  # computed in float64


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, bool])
def test_small_integer_dtypes_do_not_overflow(dtype):
    rng = np.random.default_rng(20)
    truth = random_attention(rng, 3, 1)
    if dtype is bool:
        X = rng.integers(0, 2, (60, 4, 3)).astype(bool)
    else:
        info = np.iinfo(dtype)
        X = rng.integers(info.min, info.max, (60, 4, 3)).astype(dtype)
    y = truth.predict(X.astype(np.float64))[:, 0]
    model = LinearAttentionRegressor(token_dim=3).fit(X, y)
    assert model.n_heads_ == 1
    assert relative_error(model.predict(X), y) < 1e-9


# --- properties (hypothesis) -------------------------------------------------------


finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@settings(max_examples=30, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 4)),
        elements=finite,
    )
)
def test_lifted_features_equal_the_definition(sequences):
    np.testing.assert_allclose(
        lifted_features(sequences),
        naive_lifted_features(sequences),
        rtol=1e-9,
        atol=1e-9 * max(1.0, np.abs(sequences).max() ** 3),
    )


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 7), st.integers(1, 3), st.floats(0.1, 10))
def test_attention_invariances(seed, n_tokens, n_heads, scale):
    rng = np.random.default_rng(seed)
    model = random_attention(rng, 3, n_heads, n_outputs=2)
    Z = rng.normal(size=(4, n_tokens, 3))
    out = model.predict(Z)
    permuted = np.concatenate(
        [Z[:, :-1][:, rng.permutation(n_tokens - 1)], Z[:, -1:]], 1
    )
    padded = np.concatenate([np.zeros((4, 3, 3)), Z], axis=1)
    tolerance = dict(rtol=1e-9, atol=1e-9 * np.abs(out).max())
    np.testing.assert_allclose(model.predict(permuted), out, **tolerance)
    np.testing.assert_allclose(model.predict(padded), out, **tolerance)
    np.testing.assert_allclose(
        model.predict(scale * Z),
        scale**3 * out,
        rtol=1e-9,
        atol=1e-9 * scale**3 * np.abs(out).max(),
    )


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from([None, "auto", 1]))
def test_predict_agrees_with_heads_and_fit_is_deterministic(seed, n_heads):
    rng = np.random.default_rng(seed)
    X = random_sequences(rng, 40, 4, 2)
    y = rng.normal(size=40)
    first = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
    second = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.value_matrices_, second.value_matrices_)
    np.testing.assert_allclose(
        first.predict(X), first.attention_.predict(X)[:, 0], rtol=1e-8, atol=1e-10
    )


# --- concurrency and environment ------------------------------------------------------


def test_estimators_fitted_concurrently_in_threads(rng):
    data = [(random_sequences(rng, 60, 5, 3), rng.normal(size=60)) for _ in range(4)]
    expected = [LinearAttentionRegressor().fit(X, y).coef_ for X, y in data]
    results = [None] * 4

    def work(index):
        X, y = data[index]
        results[index] = LinearAttentionRegressor(n_jobs=2).fit(X, y).coef_

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_joblib_pickling(tmp_path, rng):
    model = LinearAttentionRegressor().fit(GOOD, np.arange(12.0))
    joblib.dump(model, tmp_path / "model.joblib")
    restored = joblib.load(tmp_path / "model.joblib")
    np.testing.assert_array_equal(restored.predict(GOOD), model.predict(GOOD))
    assert pickle.loads(pickle.dumps(model.attention_)).distance(model.attention_) == 0


def test_kernels_compile_where_numba_cannot_cache():
    """Where Numba finds no cache location it refuses ``cache=True`` at decoration
    (as on a read-only install without a writable home); ``_jit`` falls back to an
    uncached compile instead of failing at import."""
    from numba import njit

    from sklearn_linattn._lift import _jit

    namespace = {}
    exec("def add_one(x):\n    return x + 1.0\n", namespace)  # no source file
    with pytest.raises(RuntimeError, match="cannot cache"):
        njit(cache=True)(namespace["add_one"])
    assert _jit(namespace["add_one"])(1.0) == 2.0


def test_read_only_install_location(tmp_path):
    """An install copied to a read-only directory imports and fits (as root the
    permissions do not bind; the test above covers Numba's refusal to cache). Its
    kernels compile in the process, and the first fit (compiling) finds the same
    3 heads, by the same probes, as the second."""
    import shutil

    import sklearn_linattn

    package = tmp_path / "site" / "sklearn_linattn"
    shutil.copytree(
        os.path.dirname(sklearn_linattn.__file__),
        package,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for root, dirs, files in os.walk(tmp_path / "site"):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o555 if name in dirs else 0o444)
    os.chmod(tmp_path / "site", 0o555)
    env = dict(
        os.environ,
        PYTHONPATH=str(tmp_path / "site"),
        NUMBA_CACHE_DIR="",
        HOME=str(tmp_path / "nohome"),
    )
    env.pop("NUMBA_CACHE_DIR")
    code = (
        "import numpy as np, sklearn_linattn as s; "
        "from sklearn_linattn.datasets import make_random_mhla; "
        "print(s.__file__); "
        "m = s.LinearAttentionRegressor().fit(np.ones((5, 3, 2)) + "
        "np.arange(30).reshape(5, 3, 2), np.arange(5.0)); print('ok', m.n_heads_); "
        "X, y, _ = make_random_mhla(200, 8, 4, n_heads=3, random_state=0); "
        "fits = [s.LinearAttentionRegressor().fit(X, y) for _ in range(2)]; "
        "print('heads', [(f.n_heads_, f.head_search_.counts_tried) for f in fits]); "
        "print('same', np.array_equal(fits[0].value_matrices_, "
        "fits[1].value_matrices_))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert str(package) in result.stdout and "ok" in result.stdout
    assert "heads [(3, " in result.stdout and "same True" in result.stdout, (
        result.stdout
    )


def test_pure_python_kernels_pass_the_kernel_tests():
    """With NUMBA_DISABLE_JIT=1 the kernels run as Python (for coverage tools)."""
    tests = os.path.dirname(__file__)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            os.path.join(tests, "test_lift.py"),
            os.path.join(tests, "test_attention.py"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=os.path.dirname(tests),
    )
    assert result.returncode == 0, result.stdout[-2000:]


def test_targets_without_outputs_are_a_clear_error(rng):
    """positions="all" with y of shape (n_samples, n_tokens, 0) raised numpy's
    "attempt to get argmax of an empty sequence"."""
    X = rng.normal(size=(20, 5, 2))
    message = r"at least one output, got shape \(20, 5, 0\)"
    with pytest.raises(ValueError, match=message):
        LinearAttentionRegressor(positions="all").fit(X, np.ones((20, 5, 0)))
