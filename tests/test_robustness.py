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


def _huge_int_at_5():
    """GOOD as an object array with one Python int beyond float64's range."""
    array = GOOD.astype(object)
    array.flat[5] = 2**1100
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
    # (numpy's "could not convert string to float" alone named neither X nor
    # what it must hold)
    "strings": (
        np.full((12, 4, 2), "a"),
        r"X must be an array of shape \(n_samples, n_tokens, token_dim\) of real "
        "numbers .*could not convert string to float",
    ),
    # datetime64 and timedelta64 were read as counts since 1970 (or of their
    # unit): a silent wrong answer
    "dates": (
        np.arange(96).astype("datetime64[D]").reshape(12, 4, 2),
        "X has dtype datetime64.D.: dates and durations are not numbers",
    ),
    "durations": (
        np.arange(96).astype("timedelta64[s]").reshape(12, 4, 2),
        "X has dtype timedelta64.s.: dates and durations are not numbers",
    ),
    "objects": (np.full((12, 4, 2), None, dtype=object), "NaN"),
    # numpy's OverflowError("int too large to convert to float"), naming neither
    # X nor the range
    "int beyond float64": (
        _huge_int_at_5(),
        r"X must be an array of shape .* within float64's range .*int too large",
    ),
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


@pytest.mark.parametrize("entry", ["fit", "predict", "transform", "certify"])
def test_complex_sequences_are_named_without_printing_them(entry):
    """scikit-learn's check_array prints the whole array after "Complex data not
    supported"; the error names the dtype alone."""
    with pytest.raises(ValueError, match="complex128") as error:
        entry_points(GOOD + 1j)[entry]()
    assert "j" not in str(error.value).replace("complex", "")


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
        {"tol": False},  # (was tol=0)
        {"head_work_limit": False},
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


# --- a user's inputs: pandas, scalars, copies, the naive reference ----------------


def _data(seed=3, n_samples=30, n_tokens=4, token_dim=2):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n_samples)
    return rng.normal(size=(n_samples, n_tokens, token_dim)), y - y.mean()


@pytest.mark.parametrize("dtype", ["Int64", "Float64", "Float32", "category"])
def test_pandas_extension_dtype_targets(dtype):
    """A pandas Series of a nullable or categorical dtype as ``y`` raised
    "'Int64Dtype' object is not iterable" from the input-precision probe, in
    ``fit`` and ``partial_fit``; it fits as its numbers do."""
    pd = pytest.importorskip("pandas")
    X, _ = _data()
    labels = np.arange(30) % 3
    y = pd.Series(labels, dtype=dtype)
    expected = LinearAttentionRegressor(n_heads=None).fit(X, labels.astype(float))
    for model in (
        LinearAttentionRegressor(n_heads=None).fit(X, y),
        LinearAttentionRegressor(n_heads=None).partial_fit(X, y),
    ):
        np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-12, atol=1e-14)
    if dtype == "Float32":  # its precision is float32's, as for numpy float32
        model = LinearAttentionRegressor(n_heads=None).fit(X, y)
        assert model._input_precision == np.finfo(np.float32).eps
    # 1-D X of such a dtype gets the layout error, not the TypeError
    with pytest.raises(ValueError, match=r"1 dimension\(s\)"):
        LinearAttentionRegressor().fit(y, labels)


def test_pandas_missing_targets_are_a_clear_error():
    pd = pytest.importorskip("pandas")
    X, _ = _data()
    y = pd.Series([pd.NA, 1, 2] * 10, dtype="Int64")
    with pytest.raises(ValueError, match="y contains NaN"):
        LinearAttentionRegressor(n_heads=None).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        LinearAttentionClassifier(n_heads=None).fit(X, y)


def test_pandas_missing_labels_are_a_clear_error():
    pd = pytest.importorskip("pandas")
    X, _ = _data()
    labels = pd.Series(["a", "b", pd.NA] * 10, dtype="string")
    with pytest.raises(ValueError, match="y contains NaN"):
        LinearAttentionClassifier(n_heads=None).fit(X, labels)


@pytest.mark.parametrize(
    "classes, message",
    [([0, 1, np.nan], "classes contains NaN"),
     (["a", "b", None], "classes contains NaN"),
     ([0, "a"], "classes mixes strings and numbers"),
     # one object "class" each: "must hold at least two classes, got
     # array([{0, 1}], dtype=object)"; a column was flattened silently
     ({0, 1}, "classes must be a 1-D array-like of labels .* got set"),
     ((c for c in (0, 1)), "got generator"),
     ("ab", "got str"),
     ([[0], [1]], r"got list of shape \(2, 1\)")],
)
def test_bad_partial_fit_classes_are_named(classes, message):
    X, _ = _data()
    model = LinearAttentionClassifier(n_heads=None)
    with pytest.raises(ValueError, match=message):
        model.partial_fit(X, np.arange(30) % 2, classes=classes)
    assert not hasattr(model, "classes_")


def test_a_pandas_series_of_sequences_is_read_as_their_list():
    """A Series holding one (n_tokens, token_dim) array per row (a DataFrame
    column of sequences) was refused as "1 dimension(s)"; it is the 3-D array."""
    pd = pytest.importorskip("pandas")
    X, y = _data()
    series = pd.Series(list(X))
    fitted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    from_series = LinearAttentionRegressor(n_heads=None).fit(series, y)
    np.testing.assert_array_equal(from_series.coef_, fitted.coef_)
    np.testing.assert_array_equal(fitted.predict(series), fitted.predict(X))
    features = LiftedAttentionFeatures().fit(X)
    np.testing.assert_array_equal(features.transform(series), features.transform(X))


def test_dataframe_rows_and_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    columns = [f"t{t}_{c}" for t in range(4) for c in range(2)]
    frame = pd.DataFrame(X.reshape(30, -1), columns=columns)
    model = LinearAttentionRegressor(n_heads=None, token_dim=2).fit(frame, pd.Series(y))
    assert list(model.feature_names_in_) == columns and model.n_features_in_ == 8
    reference = LinearAttentionRegressor(n_heads=None).fit(X, y)
    np.testing.assert_array_equal(model.predict(frame), reference.predict(X))
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(frame[columns[::-1]])
    # refitted on numpy: the names are gone
    assert not hasattr(model.fit(X, y), "feature_names_in_")


@pytest.mark.parametrize("weight", [np.nan, np.inf])
def test_non_finite_scalar_sample_weight(weight):
    """scikit-learn broadcasts a scalar weight unchecked: NaN gave
    LinAlgError("Internal Error") in fit, an overflow message in partial_fit."""
    X, y = _data()
    match = "sample_weight contains (NaN|infinity)"
    calls = [
        lambda: LinearAttentionRegressor(n_heads=None).fit(X, y, sample_weight=weight),
        lambda: LinearAttentionRegressor(n_heads=None)
        .partial_fit(X, y)
        .partial_fit(X, y, sample_weight=weight),
        lambda: LinearAttentionClassifier(n_heads=None).fit(
            X, np.arange(30) % 2, sample_weight=weight
        ),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=match):
            call()


BAD_FIT_ARGUMENTS = {
    # name: (estimator, y, fit keyword arguments, error, message)
    "y too short": ("r", np.ones(10), {}, ValueError, "30 samples but y has 10"),
    "y 3-D": ("r", np.ones((30, 2, 2)), {}, ValueError, r"\(n_samples, n_outputs\)"),
    # scikit-learn: "Found array with 0 feature(s) ...", naming neither y nor
    # its shape
    "y without outputs": ("r", np.ones((30, 0)), {}, ValueError,
                          r"y must have shape .* and at least one output, got "
                          r"shape \(30, 0\)"),
    "y NaN": ("r", np.r_[np.nan, np.ones(29)], {}, ValueError, "y contains NaN"),
    "y inf": ("r", np.r_[np.inf, np.ones(29)], {}, ValueError, "y contains infinity"),
    "y complex": ("r", np.ones(30) + 1j, {}, ValueError, "Complex data"),
    "y strings": ("r", np.array(["a"] * 30), {}, ValueError,
                  r"y must be an array of shape \(n_samples,\) .*real numbers "
                  ".*could not convert"),
    # numpy read dates as days since 1970, without a word
    "y dates": ("r", np.arange(30).astype("datetime64[D]"), {}, ValueError,
                "y has dtype datetime64.D.: dates and durations are not numbers"),
    # scikit-learn: "Input should have at least 1 dimension"
    "y scalar": ("r", 3.0, {}, ValueError, r"y must have shape .* got the scalar"),
    # (numpy's "could not convert string to float: 'abc'" named nothing)
    "weights a string": ("r", None, {"sample_weight": "abc"}, TypeError,
                         r"sample_weight must be None, a number or an array of "
                         r"shape \(30,\) of real numbers, got the string 'abc'"),
    "weights strings": ("r", None, {"sample_weight": np.array(["a"] * 30)},
                        ValueError, r"sample_weight must be .*an array of shape "
                        r"\(30,\) of real numbers.*could not convert"),
    "weights objects": ("r", None, {"sample_weight": np.full(30, object())},
                        TypeError, r"sample_weight must be .*real numbers.*not "
                        "'object'"),
    "weights dates": ("r", None, {"sample_weight": np.ones(30).astype("M8[D]")},
                      ValueError, "sample_weight has dtype datetime64.D.: dates"),
    "classifier weights a string": ("c", None, {"sample_weight": "abc"},
                                    TypeError, "got the string 'abc'"),
    "y sparse": ("r", sp.csr_matrix(np.ones((30, 1))), {}, TypeError, "[Ss]parse"),
    "weights negative": ("r", None, {"sample_weight": -np.ones(30)}, ValueError,
                         "Negative values"),
    "weights NaN": ("r", None, {"sample_weight": np.r_[np.nan, np.ones(29)]},
                    ValueError, "sample_weight contains NaN"),
    "weights short": ("r", None, {"sample_weight": np.ones(3)}, ValueError,
                      r"expected \(30,\)"),
    "weights 2-D": ("r", None, {"sample_weight": np.ones((30, 1))}, ValueError,
                    "1D array"),
    # scikit-learn: "Found array with 0 sample(s)", naming neither input
    "weights empty": ("r", None, {"sample_weight": np.ones(0)}, ValueError,
                      r"sample_weight has shape \(0,\), expected \(30,\)"),
    "y empty": ("r", np.ones(0), {}, ValueError, "30 samples but y has 0"),
    "weights all zero": ("r", None, {"sample_weight": np.zeros(30)}, ValueError,
                         "non-zero"),
    "one class": ("c", np.zeros(30), {}, ValueError, "at least two classes"),
    "multilabel": ("c", np.c_[np.arange(30) % 2, np.arange(30) // 15], {},
                   ValueError, "1d array"),
    "labels too short": ("c", np.arange(5) % 2, {}, ValueError,
                         "30 samples but y has 5"),
    "missing label": ("c", np.array([None, "a", "b"] * 10, dtype=object), {},
                      ValueError, "NaN"),
    "continuous labels": ("c", np.linspace(0, 1, 30), {}, ValueError,
                          "Unknown label type"),
    # scikit-learn's message printed every label after "Complex data"
    "complex labels": ("c", (np.arange(30) % 2) + 1j, {}, ValueError,
                       r"Complex data not supported: y has dtype complex128; "
                       r"labels are classes \(ints"),
    "sparse labels": ("c", sp.csr_matrix((np.arange(30) % 2)[:, None]), {},
                      TypeError, "sparse matrix"),
    "labels of strings and numbers": ("c", np.array(["a", 1] * 15, dtype=object),
                                      {}, ValueError, "Mix of label input types"),
    "classifier weights all zero": ("c", None, {"sample_weight": np.zeros(30)},
                                    ValueError, "non-zero"),
    # scikit-learn: "Found array with dim 3, while dim <= 2 is required" and
    # "Found array with 0 feature(s)", naming neither y nor its shape
    "labels 3-D": ("c", np.ones((30, 2, 2)), {}, ValueError,
                   r"y should be a 1d array of one label per sequence, shape "
                   r"\(30,\); got an array of shape \(30, 2, 2\)"),
    "labels without a column": ("c", np.ones((30, 0)), {}, ValueError,
                                r"one label per sequence, shape \(30,\); got an "
                                r"array of shape \(30, 0\)"),
    # scikit-learn's message printed every weight after "Complex data not
    # supported"
    "weights complex": ("r", None, {"sample_weight": np.ones(30) + 1j},
                        ValueError, r"Complex data not supported: sample_weight "
                        r"has dtype complex128; weights are real numbers\.$"),
    # numpy's OverflowError("int too large to convert to float")
    "y int beyond float64": ("r", np.array([2**1100] + [1] * 29, dtype=object), {},
                             ValueError, r"y must be an array .*within float64's "
                             "range"),
    "weights int beyond float64": ("r", None,
                                   {"sample_weight": np.array([2**1100] + [1] * 29,
                                                              dtype=object)},
                                   ValueError, r"sample_weight must be .*within "
                                   "float64's range"),
    "scalar weight beyond float64": ("r", None, {"sample_weight": 2**1100},
                                     ValueError, r"sample_weight must be .*within "
                                     "float64's range"),
    "classifier weights beyond float64": ("c", None, {"sample_weight": 2**1100},
                                          ValueError, "within float64's range"),
    "classifier weights complex": ("c", None, {"sample_weight": np.ones(30) + 1j},
                                   ValueError, "sample_weight has dtype complex128"),
}


@pytest.mark.parametrize("case", sorted(BAD_FIT_ARGUMENTS))
def test_bad_targets_and_weights_get_a_clear_error(case):
    kind, y, kwargs, error, match = BAD_FIT_ARGUMENTS[case]
    X, good_y = _data()
    if y is None:
        y = good_y if kind == "r" else np.arange(30) % 3
    estimator = (
        LinearAttentionRegressor(n_heads=None)
        if kind == "r"
        else LinearAttentionClassifier(n_heads=None)
    )
    copies = [np.array(X, copy=True)] + [
        np.array(value, copy=True) for value in kwargs.values()
    ]
    with pytest.raises(error, match=match):
        estimator.fit(X, y, **kwargs)
    if kind == "r":
        with pytest.raises(error, match=match):
            LinearAttentionRegressor(n_heads=None).partial_fit(X, y, **kwargs)
    for original, copy in zip([X, *kwargs.values()], copies, strict=True):
        np.testing.assert_array_equal(original, copy)


def test_a_table_of_arrays_is_named_as_x():
    """A DataFrame holding an array in each cell (sktime's nested layout) got
    numpy's "setting an array element with a sequence" alone."""
    pandas = pytest.importorskip("pandas")
    nested = pandas.DataFrame({"a": [pandas.Series(np.ones(3))] * 5})
    with pytest.raises(ValueError, match="X must be an array of shape .*sequence"):
        LinearAttentionRegressor().fit(nested, np.ones(5))


@pytest.mark.parametrize("positions", ["last", "all"])
@pytest.mark.parametrize("cv", [False, True])
@pytest.mark.parametrize(
    "y, match",
    [
        (np.array(["a"] * 30), "y must be an array of shape .*could not convert"),
        (np.zeros(30, dtype="datetime64[D]"), "y has dtype datetime64.D.: dates"),
    ],
    ids=["strings", "dates"],
)
def test_regressor_score_checks_y_as_fit_does(positions, cv, y, match):
    """score passed y to r2_score unchecked: numpy's "could not convert string
    to float" alone, and dates were scored as days since 1970."""
    from sklearn_linattn import LinearAttentionRegressorCV

    X, good = _data()
    if positions == "all":
        good = np.repeat(good[:, None], 4, axis=1)
        y = np.repeat(y[:, None], 4, axis=1)
    model = (
        LinearAttentionRegressorCV(cv=3, positions=positions)
        if cv
        else LinearAttentionRegressor(positions=positions)
    ).fit(X, good)
    with pytest.raises(ValueError, match=match):
        model.score(X, y)


@pytest.mark.parametrize(
    "alpha", [-1, np.nan, np.inf, "1", True, np.True_, None]
)
@pytest.mark.parametrize("cls", [LinearAttentionRegressor, LinearAttentionClassifier])
def test_bad_alpha_names_the_parameter(cls, alpha):
    X, _ = _data()
    with pytest.raises((ValueError, TypeError), match="'alpha' parameter"):
        cls(n_heads=None, alpha=alpha).fit(X, np.arange(30) % 2)


def test_set_params_then_refit_is_a_fresh_fit():
    X, y = _data()
    rows = X.reshape(30, -1)
    model = LinearAttentionRegressor(n_heads=None, token_dim=2).fit(rows, y)
    model.set_params(token_dim=4, alpha=0.5).fit(rows, y)
    fresh = LinearAttentionRegressor(n_heads=None, token_dim=4, alpha=0.5).fit(rows, y)
    assert model.token_dim_ == 4 and model.coef_.shape == (40,)
    np.testing.assert_array_equal(model.coef_, fresh.coef_)
    classifier = LinearAttentionClassifier(n_heads=None).fit(X, np.arange(30) % 3)
    classifier.fit(X, np.arange(30) % 2)
    np.testing.assert_array_equal(classifier.classes_, [0, 1])
    assert classifier.decision_function(X).shape == (30,)


def test_partial_fit_refuses_other_batches_and_keeps_its_state():
    X, y = _data()
    rows = X.reshape(30, -1)
    model = LinearAttentionRegressor(n_heads=None, token_dim=2).partial_fit(rows, y)
    before = model.predict(rows)
    for call, match in [
        (lambda: model.partial_fit(np.ones((3, 6)), np.ones(3)), "6 features.*8"),
        (lambda: model.partial_fit(np.ones((3, 4, 3)), np.ones(3)), "dimension 3"),
        (lambda: model.partial_fit(rows, np.c_[y, y]), "earlier batches"),
        (lambda: model.set_params(token_dim=4).partial_fit(rows, y), "token_dim=4"),
    ]:
        with pytest.raises(ValueError, match=match):
            call()
        model.set_params(token_dim=2)
        np.testing.assert_array_equal(model.predict(rows), before)
    classifier = LinearAttentionClassifier(n_heads=None)
    labels = np.arange(30) % 3
    with pytest.raises(ValueError, match="classes must be passed"):
        classifier.partial_fit(X, labels)
    with pytest.raises(ValueError, match=r"labels \[2\] that are not in classes"):
        classifier.partial_fit(X, labels, classes=[0, 1])
    classifier.partial_fit(X, labels, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="differs from the classes"):
        classifier.partial_fit(X, labels, classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match=r"labels \[3\]"):
        classifier.partial_fit(X, labels + 1)


def test_a_failed_refit_on_a_bad_width_leaves_the_transformer_as_it_was():
    """validate_data set ``n_features_in_`` to the bad width before the width was
    refused, so the fitted transformer then refused its own data."""
    X, _ = _data()
    features = LiftedAttentionFeatures(token_dim=2).fit(X.reshape(30, -1))
    with pytest.raises(ValueError, match="not a multiple of token_dim=2"):
        features.fit(np.ones((3, 7)))
    assert features.n_features_in_ == 8
    assert features.transform(X.reshape(30, -1)).shape == (30, 6)


def test_labels_keep_their_type_and_shape():
    X, _ = _data()
    for labels in (
        np.array(list("ab") * 15),
        np.array([-1, -5] * 15),
        np.arange(30) % 3 == 0,
        (np.arange(30) % 3).astype(float),
    ):
        model = LinearAttentionClassifier(n_heads=None).fit(X, labels)
        assert model.predict(X).dtype == labels.dtype
        assert set(model.predict(X)) <= set(labels)
    column = (np.arange(30) % 2)[:, None]
    with pytest.warns(Warning, match="column-vector y"):
        model = LinearAttentionClassifier(n_heads=None).fit(X, column)
    assert model.predict(X).shape == (30,)


INPUT_FORMS = {
    "3-D": lambda X: X,
    "F-order": np.asfortranarray,
    "float32": lambda X: X.astype(np.float32),
    "rows": lambda X: X.reshape(len(X), -1),
}


@pytest.mark.parametrize("form", sorted(INPUT_FORMS))
def test_inputs_are_never_modified(form):
    """X, y and sample_weight after every entry point equal their copies
    (left-padded sequences included: labels at padding are replaced, in a copy)."""
    X, y = _data()
    X[:5, :2] = 0.0  # left padding
    X = INPUT_FORMS[form](X)
    token_dim = 2 if X.ndim == 2 else None
    labels = np.arange(30) % 3
    weights = np.random.default_rng(4).uniform(0.5, 2.0, 30)
    per_position = np.repeat(labels[:, None], 4, axis=1)
    arrays = [X, y, labels, weights, per_position]
    copies = [np.array(array, copy=True) for array in arrays]
    kw = dict(n_heads=None, token_dim=token_dim)
    regressor = LinearAttentionRegressor(fit_intercept=True, **kw)
    regressor.fit(X, y, sample_weight=weights).score(X, y, sample_weight=weights)
    LinearAttentionRegressor(**kw).partial_fit(X, y, sample_weight=weights).predict(X)
    classifier = LinearAttentionClassifier(class_weight={0: 2.0, 1: 1.0, 2: 1.0}, **kw)
    classifier.fit(X, labels, sample_weight=weights).score(X, labels)
    LinearAttentionClassifier(**kw).partial_fit(
        X, labels, classes=[0, 1, 2], sample_weight=weights
    ).decision_function(X)
    if X.ndim == 3:
        LinearAttentionClassifier(n_heads=None, positions="all").fit(
            X, per_position, sample_weight=weights
        ).predict(X)
    LiftedAttentionFeatures(token_dim=token_dim).fit(X).transform(X)
    for array, copy in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(array, copy)
        assert array.dtype == copy.dtype


# Agreement with scikit-learn's Ridge on the lift written out (conftest's
# naive_lifted_features, from PAPER.md). Both solve the same p x p system
# (Phi^T W Phi + alpha I) c = Phi^T W y with backward-stable methods, so each
# solution's relative error is at most about kappa * p * eps (kappa the
# condition number of that matrix; p for the accumulated sums); their difference
# twice that. Asserted with 10 times the slack: kappa is about 40 here, the
# bound about 2e-12, the differences seen 1e-15 to 6e-15.


def _rounding_bound(features, weights, alpha, fit_intercept):
    if fit_intercept:
        features = features - weights @ features / weights.sum()
    gram = features.T @ (weights[:, None] * features)
    gram += alpha * np.eye(gram.shape[0])
    return 10 * 2 * np.linalg.cond(gram) * gram.shape[0] * np.finfo(float).eps


@pytest.mark.parametrize("alpha", [1e-3, 1.0, 100.0])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_regressor_equals_ridge_on_the_naive_lift(alpha, fit_intercept, weighted):
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(11)
    X, X_test = rng.normal(size=(120, 5, 3)), rng.normal(size=(15, 7, 3))
    y = rng.normal(size=120)
    weights = rng.uniform(0.1, 3.0, 120) if weighted else None
    features = naive_lifted_features(X)
    reference = Ridge(alpha=alpha, fit_intercept=fit_intercept, solver="cholesky")
    reference.fit(features, y, sample_weight=weights)
    ours = LinearAttentionRegressor(
        n_heads=None, alpha=alpha, fit_intercept=fit_intercept
    ).fit(X, y, sample_weight=weights)
    bound = _rounding_bound(
        features, np.ones(120) if weights is None else weights, alpha, fit_intercept
    )
    assert relative_error(ours.coef_, reference.coef_) < bound
    expected = reference.predict(naive_lifted_features(X_test))
    assert np.abs(ours.predict(X_test) - expected).max() < bound * np.abs(
        expected
    ).max()
    assert abs(ours.intercept_ - reference.intercept_) < bound * max(
        1.0, abs(reference.intercept_)
    )


def test_classifier_equals_ridge_classifier_on_the_naive_lift():
    from sklearn.linear_model import RidgeClassifier

    rng = np.random.default_rng(12)
    X, X_test = rng.normal(size=(120, 5, 3)), rng.normal(size=(15, 7, 3))
    features = naive_lifted_features(X)
    for labels, class_weight in [
        (rng.integers(0, 3, 120), None),
        (rng.integers(0, 2, 120), {0: 2.0, 1: 0.5}),
    ]:
        reference = RidgeClassifier(
            alpha=1.0, fit_intercept=False, class_weight=class_weight
        ).fit(features, labels)
        ours = LinearAttentionClassifier(
            n_heads=None, alpha=1.0, class_weight=class_weight
        ).fit(X, labels)
        weights = np.ones(120) if class_weight is None else np.vectorize(
            class_weight.get
        )(labels)
        bound = _rounding_bound(features, weights, 1.0, False)
        expected = reference.decision_function(naive_lifted_features(X_test))
        got = ours.decision_function(X_test)
        assert np.abs(got - expected).max() < bound * np.abs(expected).max()
        np.testing.assert_array_equal(
            ours.predict(X_test), reference.predict(naive_lifted_features(X_test))
        )


def test_minimum_norm_fit_equals_the_pseudo_inverse():
    """alpha=0 with fewer samples than lifted features: the minimum-norm solution
    (pinv of the naive lift); the relative bound is kappa of the nonzero
    spectrum times p eps, with slack 10."""
    rng = np.random.default_rng(13)
    X, y = rng.normal(size=(10, 5, 3)), rng.normal(size=10)
    features = naive_lifted_features(X)
    expected = np.linalg.pinv(features) @ y
    with pytest.warns(UserWarning, match="interpolates"):
        ours = LinearAttentionRegressor(n_heads=None).fit(X, y)
    singular = np.linalg.svd(features, compute_uv=False)
    bound = 10 * (singular[0] / singular[-1]) ** 2 * 18 * np.finfo(float).eps
    assert relative_error(ours.coef_, expected) < bound


def test_complex_frames_weights_and_numpy_nan_labels_are_named():
    """A complex DataFrame (no ``dtype`` of its own), a complex scalar weight
    (broadcast unchecked) and a numpy float NaN among object labels."""
    pd = pytest.importorskip("pandas")
    X, y = _data()
    rows = X.reshape(len(X), -1)
    with pytest.raises(ValueError, match="Complex data not supported: X has dtype"):
        LinearAttentionRegressor(token_dim=X.shape[2], n_heads=None).fit(
            pd.DataFrame(rows.astype(complex)), y
        )
    with pytest.raises(ValueError, match="sample_weight is complex"):
        LinearAttentionRegressor(n_heads=None).fit(X, y, sample_weight=1j)
    labels = np.array([np.float32("nan")] + [0, 1] * 14 + [1], dtype=object)
    with pytest.raises(ValueError, match="y contains NaN"):
        LinearAttentionClassifier(n_heads=None).fit(X, labels)


@pytest.mark.parametrize(
    "labels",
    [np.array([0, 1] * 15, dtype=object), np.array([1, 2.0] * 15, dtype=object),
     np.array([True, False] * 15, dtype=object)],
    ids=["ints", "ints and floats", "bools"],
)
def test_an_object_array_of_numeric_labels_is_named(labels):
    """Numbers in an object array (a pandas column of dtype object) got
    scikit-learn's "Unknown label type: unknown. Maybe you are trying to fit a
    classifier ... on a regression target with continuous values", in fit,
    partial_fit (and for partial_fit's classes: "Unknown label type: (array(
    [0, 1], dtype=object),)") and score ("a mix of unknown and binary
    targets"); the error names the object array and the conversion."""
    from sklearn_linattn import LinearAttentionClassifierCV

    X, _ = _data()
    message = r"y is an object array of numbers .*y\.astype\(int\)"
    for model in (LinearAttentionClassifier(n_heads=None),
                  LinearAttentionClassifierCV(cv=3)):
        with pytest.raises(ValueError, match=message):
            model.fit(X, labels)
        fitted = model.fit(X, labels.astype(type(labels[1])))
        with pytest.raises(ValueError, match=message):
            fitted.score(X, labels)
    with pytest.raises(ValueError, match=message):
        LinearAttentionClassifier(n_heads=None).partial_fit(X, labels, classes=[0, 1])
    with pytest.raises(ValueError, match=r"classes is an object array of numbers"):
        LinearAttentionClassifier(n_heads=None).partial_fit(
            X, np.arange(30) % 2, classes=np.array([0, 1], dtype=object)
        )


BAD_SCORE_LABELS = {
    # name: (labels, message); scikit-learn's accuracy_score said instead:
    # "'<' not supported between instances of 'int' and 'NoneType'"
    "missing among numbers": (np.array([None] + [0, 1] * 14 + [1], dtype=object),
                              r"y contains NaN \(a missing label\)"),
    "NaN": (np.r_[np.nan, np.arange(29) % 2], r"y contains NaN \(a missing label\)"),
    # "Found input variables with inconsistent numbers of samples: [20, 30]"
    "too short": (np.arange(20) % 2,
                  r"one label per sequence, shape \(30,\); got shape \(20,\)"),
    # "Classification metrics can't handle a mix of unknown and binary targets"
    "3-D": (np.ones((30, 2, 2)), r"shape \(30,\); got shape \(30, 2, 2\)"),
    # every label printed after "Complex data not supported"
    "complex": ((np.arange(30) % 2) + 0j,
                r"Complex data not supported: y has dtype complex128; labels"),
    # "The 'y_true' parameter of accuracy_score must be an array-like"
    "scalar": (1, r"shape \(30,\); got the scalar 1"),
}


@pytest.mark.parametrize("case", sorted(BAD_SCORE_LABELS))
@pytest.mark.parametrize("cv", [False, True])
def test_classifier_score_checks_labels_as_fit_does(case, cv):
    from sklearn.metrics import accuracy_score

    from sklearn_linattn import LinearAttentionClassifierCV

    X, _ = _data()
    labels = np.arange(30) % 2
    model = (LinearAttentionClassifierCV(cv=3) if cv
             else LinearAttentionClassifier(n_heads=None)).fit(X, labels)
    bad, message = BAD_SCORE_LABELS[case]
    with pytest.raises(ValueError, match=message):
        model.score(X, bad)
    # good labels score as before: accuracy, a column of labels included
    expected = accuracy_score(labels, model.predict(X))
    assert model.score(X, labels) == model.score(X, labels[:, None]) == expected


def test_classifier_score_per_position_checks_the_labels_fit_reads():
    """With positions="all", a missing label at a real position is named;
    labels at left padding are not read, by fit or by score."""
    X, _ = _data()
    X[:5, :2] = 0.0  # left padding
    labels = np.array(list("ab") * 60, dtype=object).reshape(30, 4)
    model = LinearAttentionClassifier(n_heads=None, positions="all").fit(X, labels)
    at_padding, at_token = labels.copy(), labels.copy()
    at_padding[0, 0] = None
    at_token[0, 3] = None
    assert model.score(X, at_padding) == model.score(X, labels)
    with pytest.raises(ValueError, match=r"y contains NaN \(a missing label\)"):
        model.score(X, at_token)
    with pytest.raises(ValueError, match=r"one label per position, shape \(30, 4\)"):
        model.score(X, labels[:, :, None])


BAD_SCORE_WEIGHTS = {
    # the metrics took it: a number (0.26 for the regressor)
    "negative": (np.r_[-1.0, np.ones(29)], "Negative values in data passed"),
    # "Found input variables with inconsistent numbers of samples: [30, 30, 29]"
    "too short": (np.ones(29), r"sample_weight has shape \(29,\), expected \(30,\)"),
    "all zero": (np.zeros(30), "at least one non-zero number"),
    "NaN": (np.r_[np.nan, np.ones(29)], "sample_weight contains NaN"),
}


@pytest.mark.parametrize("case", sorted(BAD_SCORE_WEIGHTS))
@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionClassifier]
)
@pytest.mark.parametrize("positions", ["last", "all"])
def test_score_checks_sample_weight_as_fit_does(case, Estimator, positions):
    """score refuses the weights fit refuses, with fit's message; weights fit
    takes score as the metric weighs them."""
    X, _ = _data()
    per_position = (30, 4) if positions == "all" else (30,)
    labels = np.arange(np.prod(per_position)).reshape(per_position) % 2
    model = Estimator(n_heads=None, positions=positions).fit(X, labels)
    bad, message = BAD_SCORE_WEIGHTS[case]
    with pytest.raises(ValueError, match=message):
        Estimator(n_heads=None, positions=positions).fit(X, labels, sample_weight=bad)
    with pytest.raises(ValueError, match=message):
        model.score(X, labels, sample_weight=bad)
    assert model.score(X, labels, sample_weight=np.ones(30)) == pytest.approx(
        model.score(X, labels), rel=1e-12
    )


@pytest.mark.parametrize(
    ("make_bad", "error", "message"),
    [
        (lambda X: None, TypeError, "array of sequences; got None"),
        (lambda X: (x for x in X), TypeError, r"got generator; pass list\(X\)"),
        (lambda X: np.ma.masked_array(X, mask=X > 1), TypeError,
         "masked array: its mask would be ignored"),
    ],
)
def test_inputs_numpy_would_misread_are_named(make_bad, error, message):
    """None and a generator were numpy's 0-dimensional arrays, with advice
    about reshaping one sequence; a masked array's mask was dropped.
    fit, predict and transform name them; the data itself is left as it was."""
    X, y = _data()
    model = LinearAttentionRegressor(n_heads=None).fit(X, y)
    features = LiftedAttentionFeatures().fit(X)
    for call in (model.predict, features.transform,
                 lambda bad: LinearAttentionRegressor().fit(bad, y)):
        with pytest.raises(error, match=message):
            call(make_bad(X))
    masked = np.ma.masked_array(X, mask=X > 1)
    with pytest.raises(TypeError, match="masked array"):
        model.predict(masked)
    np.testing.assert_array_equal(masked.data, X)
    assert model.predict(masked.filled(0.0)).shape == (30,)


def test_rows_of_another_sequence_length_name_the_3d_route():
    """Rows fitted at 4 tokens, given rows of 6: scikit-learn's "X has 12
    features, but ... is expecting 8" alone, though the same sequences in 3-D
    are taken; the error names the reshape, whose predictions it checks."""
    from sklearn.base import clone

    from sklearn_linattn import LinearAttentionClassifierCV, LinearAttentionRegressorCV

    X, y = _data()
    longer = np.random.default_rng(5).normal(size=(7, 6, 2))
    labels = np.arange(30) % 2
    message = (r"X has 12 features, but \w+ is expecting 8 features as input\. "
               r"Rows of 12 columns are sequences of 6 tokens of dimension 2 "
               r"\(fit's had 4\)\. .*X\.reshape\(n_samples, 6, 2\)")
    for model, target in [
        (LinearAttentionRegressor(n_heads=None, token_dim=2), y),
        (LinearAttentionClassifier(n_heads=None, token_dim=2), labels),
        (LinearAttentionRegressorCV(token_dim=2, cv=3), y),
        (LinearAttentionClassifierCV(token_dim=2, cv=3), labels),
        (LiftedAttentionFeatures(token_dim=2), None),
    ]:
        on_rows = clone(model).fit(X.reshape(30, -1), target)
        on_cubes = clone(model).fit(X, target)
        method = "transform" if target is None else "predict"
        with pytest.raises(ValueError, match=message):
            getattr(on_rows, method)(longer.reshape(7, -1))
        np.testing.assert_array_equal(
            getattr(on_rows, method)(longer.reshape(7, -1).reshape(7, 6, 2)),
            getattr(on_cubes, method)(longer),
        )
    streamed = LinearAttentionRegressor(n_heads=None, token_dim=2).partial_fit(
        X.reshape(30, -1), y
    )
    with pytest.raises(ValueError, match=message):
        streamed.partial_fit(longer.reshape(7, -1), np.ones(7))
    # a width that is no multiple of token_dim keeps scikit-learn's message
    with pytest.raises(ValueError, match=r"X has 7 features, but .* 8 features"
                                         r" as input\.$"):
        streamed.predict(np.ones((3, 7)))
