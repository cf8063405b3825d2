"""sklearn_linattn.preprocessing: padding, time series, positions, tokenwise
transformers, their pandas output, and the estimators' layout warnings."""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.decomposition import PCA, TruncatedSVD
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_linattn import (
    LiftedAttentionFeatures,
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    MultiHeadLinearAttention,
)
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
    pad_sequences,
)

# Checks that fail by design, with the reason (scikit-learn marks them xfail).
_ANY_LENGTH = (
    "2-D rows are univariate series (n_cases, n_timepoints), and series of any "
    "length are accepted in every layout, so transform takes rows of another width"
)
EXPECTED_FAILED_CHECKS = {
    "SeriesToTokens": {
        "check_n_features_in": (
            "n_features_in_ is the channels of the series, in every layout (1 for "
            "rows of univariate series), not the width of 2-D rows: " + _ANY_LENGTH
        ),
        "check_n_features_in_after_fitting": _ANY_LENGTH,
        "check_transformer_general": _ANY_LENGTH,
    },
}


@parametrize_with_checks(
    [
        PositionalEncoding(),
        PositionalEncoding(kind="sinusoidal", n_positions=3, constant=True),
        PositionalEncoding(n_positions=2, constant=False, origin="start"),
        TokenwiseTransformer(StandardScaler()),
        TokenwiseTransformer(PCA(n_components=1)),
        SeriesToTokens(),
        SeriesToTokens(window=2, max_len=3),
    ],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS.get(
        type(estimator).__name__, {}
    ),
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def ragged(rng, lengths, token_dim=3):
    return [rng.normal(size=(n, token_dim)) for n in lengths]


# ---------------------------------------------------------------- pad_sequences


def test_pad_sequences_left_pads_and_keeps_each_sequence(rng):
    sequences = ragged(rng, [2, 5, 1, 4])
    padded = pad_sequences(sequences)
    assert padded.shape == (4, 5, 3)
    for row, sequence in zip(padded, sequences, strict=True):
        n = len(sequence)
        np.testing.assert_array_equal(row[5 - n :], sequence)
        assert not row[: 5 - n].any()


def test_padding_does_not_change_the_lifted_features(rng):
    """Zero tokens on the left add nothing to S and keep the query: the padded data
    has exactly the features of each sequence alone."""
    sequences = ragged(rng, [2, 6, 3])
    padded = LiftedAttentionFeatures().fit_transform(pad_sequences(sequences))
    for row, sequence in zip(padded, sequences, strict=True):
        alone = LiftedAttentionFeatures().fit_transform(sequence[None])[0]
        np.testing.assert_allclose(row, alone, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "truncating, kept", [("pre", slice(-3, None)), ("post", slice(0, 3))]
)
def test_pad_sequences_truncates(rng, truncating, kept):
    long, short = rng.normal(size=(6, 2)), rng.normal(size=(2, 2))
    padded = pad_sequences([long, short], max_len=3, truncating=truncating)
    np.testing.assert_array_equal(padded[0], long[kept])
    np.testing.assert_array_equal(padded[1, 1:], short)
    assert not padded[1, 0].any()


def test_pad_sequences_scalar_tokens_and_dtype():
    padded = pad_sequences([[1, 2, 3], np.array([7])], dtype=np.float32)
    assert padded.dtype == np.float32
    np.testing.assert_array_equal(padded[:, :, 0], [[1, 2, 3], [0, 0, 7]])


def test_pad_sequences_empty_sequence_is_all_padding():
    """An empty sequence has no token to tell its dimension: it takes the
    others' and becomes padding throughout."""
    padded = pad_sequences([[], np.ones((2, 3)), np.empty((0, 3))])
    assert padded.shape == (3, 2, 3)
    np.testing.assert_array_equal(padded[0], 0.0)
    np.testing.assert_array_equal(padded[1], 1.0)
    np.testing.assert_array_equal(padded[2], 0.0)
    with pytest.raises(ValueError, match="every sequence is empty"):
        pad_sequences([[], []])


@pytest.mark.parametrize(
    "sequences, kwargs, error, match",
    [
        ([], {}, ValueError, "empty"),
        ("abc", {}, TypeError, "list of arrays"),
        (5, {}, TypeError, "list of arrays"),
        ([np.ones((2, 3)), np.ones((2, 4))], {}, ValueError, r"sequence 1 has shape"),
        ([np.ones((2, 3, 1))], {}, ValueError, r"shape \(2, 3, 1\)"),
        ([np.ones((2, 3))], {"max_len": 0}, ValueError, "max_len"),
        ([np.ones((2, 3))], {"max_len": 2.5}, ValueError, "max_len"),
        ([np.ones((2, 3))], {"truncating": "middle"}, ValueError, "truncating"),
        ([["a", "b"]], {}, ValueError, "sequence 0 could not be converted"),
        # tokens of no feature were padded into an array (n, n_tokens, 0)
        ([np.zeros((0,)), np.zeros((2, 0))], {}, ValueError, r"1 has shape \(2, 0\)"),
        ([[[]]], {}, ValueError, "tokens of dimension 0"),
        # a dict was read as the list of its keys ("could not convert 'a'")
        ({"a": np.ones((2, 2))}, {}, TypeError, "list of arrays .* got dict"),

        # dates were cast to days since 1970 without a word
        (
            [np.ones((2, 2)), np.zeros((2, 2), dtype="datetime64[D]")],
            {},
            ValueError,
            r"sequence 1 has dtype datetime64\[D\]: dates and durations",
        ),
    ],
)
def test_pad_sequences_errors(sequences, kwargs, error, match):
    with pytest.raises(error, match=match):
        pad_sequences(sequences, **kwargs)


def test_ragged_lists_fail_in_numpy_but_pad(rng):
    sequences = ragged(rng, [2, 3])
    with pytest.raises(ValueError):
        np.asarray(sequences, dtype=float)
    assert pad_sequences(sequences).shape == (2, 3, 3)


def test_pad_sequences_refuses_a_dataframe_as_the_list():
    """A DataFrame was read as its column labels ("sequence 0 has shape ()")."""
    pandas = pytest.importorskip("pandas")
    message = r"got DataFrame \(one sequence\? pass \[df\]\)"
    with pytest.raises(TypeError, match=message):
        pad_sequences(pandas.DataFrame(np.ones((3, 2))))


def test_pad_sequences_suggests_the_transpose_for_channels_first_series(rng):
    series = [rng.normal(size=(3, n)) for n in (5, 7)]  # (n_channels, n_timepoints)
    with pytest.raises(ValueError, match=r"\[s\.T for s in sequences\]"):
        pad_sequences(series)
    with pytest.raises(ValueError, match="different token dimensions") as info:
        pad_sequences([np.ones((2, 3)), np.ones((4, 5))])  # no common row count
    assert "s.T" not in str(info.value)


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LiftedAttentionFeatures]
)
def test_ragged_list_into_an_estimator_names_both_pads(Estimator, rng):
    with pytest.raises(ValueError, match="sequences of different lengths") as info:
        Estimator().fit(ragged(rng, [2, 3]), np.zeros(2))
    assert "pad_sequences(X)" in str(info.value)
    assert "SeriesToTokens()" in str(info.value)


# -------------------------------------------------------------- SeriesToTokens


def naive_series_tokens(series, window):
    """Token t of a (n_channels, n_timepoints) series from the definition: the
    steps r + t k .. r + t k + k - 1, r = n_timepoints mod k, feature j * n_channels
    + c = channel c of step j."""
    n_channels, n_timepoints = series.shape
    start = n_timepoints % window
    return np.array(
        [
            [
                series[c, start + t * window + j]
                for j in range(window)
                for c in range(n_channels)
            ]
            for t in range(n_timepoints // window)
        ]
    ).reshape(-1, window * n_channels)


def test_series_channels_first_equals_the_transpose(rng):
    X = rng.normal(size=(5, 3, 7))  # (n_cases, n_channels, n_timepoints)
    np.testing.assert_array_equal(
        SeriesToTokens().fit_transform(X), X.transpose(0, 2, 1)
    )
    univariate = rng.normal(size=(5, 7))  # (n_cases, n_timepoints)
    np.testing.assert_array_equal(
        SeriesToTokens().fit_transform(univariate), univariate[:, :, None]
    )


def test_ragged_series_equal_their_padded_transposes(rng):
    series = [rng.normal(size=(2, n)) for n in (4, 9, 1, 6)]
    expected = pad_sequences([s.T for s in series])
    np.testing.assert_array_equal(SeriesToTokens().fit_transform(series), expected)
    as_objects = np.empty(len(series), dtype=object)  # how some toolkits store them
    as_objects[:] = series
    np.testing.assert_array_equal(SeriesToTokens().fit_transform(as_objects), expected)
    univariate = [s[0] for s in series]  # 1-D series
    np.testing.assert_array_equal(
        SeriesToTokens().fit_transform(univariate),
        pad_sequences([s[:, None] for s in univariate]),
    )


@pytest.mark.parametrize("window", [1, 2, 3])
@pytest.mark.parametrize("n_channels", [1, 2])
def test_series_windows_match_the_definition(rng, window, n_channels):
    series = [rng.normal(size=(n_channels, n)) for n in (3, 8, 10)]
    out = SeriesToTokens(window=window).fit_transform(series)
    expected = pad_sequences([naive_series_tokens(s, window) for s in series])
    np.testing.assert_array_equal(out, expected)
    assert out.shape[2] == window * n_channels
    # the query (last token) ends with each series' last time step
    np.testing.assert_array_equal(out[:, -1, -n_channels:], [s[:, -1] for s in series])


def test_series_max_len_keeps_the_latest_tokens(rng):
    X = rng.normal(size=(4, 2, 10))
    out = SeriesToTokens(window=2, max_len=3).fit_transform(X)
    np.testing.assert_array_equal(
        out, SeriesToTokens(window=2).fit_transform(X)[:, -3:]
    )


def test_series_pipeline_on_ragged_lists_equals_the_padded_fit(rng):
    """A ragged list of channels-first series through a Pipeline gives the model
    fitted on the padded transposes, and cross-validates on the list itself."""
    truth = MultiHeadLinearAttention(
        rng.normal(size=(1, 1, 2)), rng.normal(size=(1, 2, 2))
    )
    series = [rng.normal(size=(2, n)) for n in rng.integers(2, 9, size=90)]
    padded = pad_sequences([s.T for s in series])
    y = truth.predict(padded)[:, 0]
    pipeline = make_pipeline(SeriesToTokens(), LinearAttentionRegressor(n_heads=None))
    direct = LinearAttentionRegressor(n_heads=None).fit(padded, y)
    np.testing.assert_allclose(pipeline.fit(series, y)[-1].coef_, direct.coef_)
    assert np.all(cross_val_score(pipeline, series, y, cv=3) > 1 - 1e-8)


@pytest.mark.parametrize(
    "X, kwargs, error, match",
    [
        ([np.ones((2, 5)), np.ones((3, 5))], {}, ValueError, r"pad_sequences instead"),
        ([np.ones((2, 5)), np.ones((3, 6))], {}, ValueError, "has 3 channel"),
        ([np.ones((2, 1))], {"window": 2}, ValueError, "fewer than window=2"),
        ([np.full((1, 3), np.nan)], {}, ValueError, "each without its padding"),
        (np.full((2, 1, 3), np.nan), {}, ValueError, "each without its padding"),
        ([np.ones((2, 2, 2))], {}, ValueError, r"\(n_channels, n_timepoints_i\)"),
        (np.ones((2, 2, 2, 2)), {}, ValueError, "3-D array"),
        ([], {}, ValueError, "no series"),
        # complex series in a list lost their imaginary parts (numpy's
        # ComplexWarning only); series of no channel fitted, and transform
        # failed in numpy's reshape
        ([np.ones((2, 3)), 1j * np.ones((2, 4))], {}, ValueError, "1 is complex"),
        (np.ones((3, 0, 4)), {}, ValueError, "series 0 has 0 channels"),
        ([np.ones((0, 4))], {}, ValueError, "series 0 has 0 channels"),
        # numpy's "could not convert string to float" named nothing
        (
            np.full((2, 1, 3), "a"),
            {},
            ValueError,
            r"X must be an array of shape \(n_cases, n_channels, n_timepoints\) "
            "of real numbers .*could not convert string",
        ),
        # dates were read as days since 1970, silently
        (
            np.zeros((2, 1, 3), dtype="datetime64[D]"),
            {},
            ValueError,
            "X has dtype datetime64.D.: dates and durations",
        ),
        (
            [np.zeros((1, 3), dtype="datetime64[D]")],
            {},
            ValueError,
            "series 0 has dtype datetime64.D.: dates",
        ),
        # scikit-learn's message printed every value after its own
        (1j * np.ones((2, 1, 3)), {}, ValueError, "X has dtype complex128; series"),
        # scikit-learn: "Expected 2D array, got 1D array ... reshape(-1, 1)",
        # which would make series of one time point; None: "array=nan"
        (np.ones(5), {}, ValueError, r"3-D array .*got an array of shape \(5,\)"),
        (None, {}, ValueError, "3-D array .*got NoneType"),
    ],
)
def test_series_errors_name_the_fix(X, kwargs, error, match):
    with pytest.raises(error, match=match):
        SeriesToTokens(**kwargs).fit(X)


def test_a_table_of_series_names_the_layouts(rng):
    """A DataFrame holding a series in each cell (sktime's nested layout) failed
    in numpy: "setting an array element with a sequence"."""
    import pandas as pd

    nested = pd.DataFrame(
        {"a": [pd.Series(rng.normal(size=4)) for _ in range(3)],
         "b": [pd.Series(rng.normal(size=4)) for _ in range(3)]}
    )
    with pytest.raises(ValueError, match=r"a sequence in each cell .* list of arr"):
        SeriesToTokens().fit(nested)


def test_series_in_a_pandas_series_are_a_list_of_series(rng):
    """A pandas Series holding one array per case (the 1-D object array that
    SeriesToTokens takes) failed in numpy: "setting an array element with a
    sequence"."""
    import pandas as pd

    series = [rng.normal(size=(2, n)) for n in (3, 5, 4)]
    expected = SeriesToTokens().fit_transform(series)
    held = pd.Series(series, dtype=object)
    np.testing.assert_array_equal(SeriesToTokens().fit_transform(held), expected)


def test_series_transform_checks_the_channels(rng):
    encoder = SeriesToTokens().fit(rng.normal(size=(3, 2, 5)))
    assert (encoder.n_channels_, encoder.token_dim_out_) == (2, 2)
    assert encoder.transform(rng.normal(size=(3, 2, 9))).shape == (3, 9, 2)
    with pytest.raises(ValueError, match="expected 2, the channels seen in fit"):
        encoder.transform(rng.normal(size=(3, 4, 5)))
    with pytest.raises(ValueError, match="expected 2"):
        encoder.transform([rng.normal(size=(4, 5))])
    with pytest.raises(ValueError, match="2-D rows .* are univariate series"):
        encoder.transform(rng.normal(size=(3, 5)))


def univariate_layouts(series):
    """The same univariate series (1-D arrays of one length, or of several) in
    each layout that holds them: 2-D rows, a 3-D array of one channel, a list of
    1-D series, a list of (1, n_timepoints_i) arrays."""
    layouts = {"list": list(series), "list of 2-D": [s[None] for s in series]}
    if len({len(s) for s in series}) == 1:
        layouts["rows"] = np.array(series)
        layouts["3-D"] = np.array(series)[:, None, :]
    return layouts


@pytest.mark.parametrize("window", [1, 2])
@pytest.mark.parametrize("fit_layout", ["rows", "3-D", "list", "list of 2-D"])
def test_univariate_series_transform_in_every_layout_and_length(
    rng, window, fit_layout
):
    """Fitted on univariate series in one layout, SeriesToTokens transforms
    univariate series of any length in any layout, each to the tokens of the
    definition; n_features_in_ is the channels, 1, whatever the layout."""
    encoder = SeriesToTokens(window=window).fit(
        univariate_layouts([rng.normal(size=10) for _ in range(3)])[fit_layout]
    )
    assert encoder.n_features_in_ == encoder.n_channels_ == 1
    for lengths in ([10] * 4, [12] * 4, [5] * 2, [3, 12, 7]):
        series = [rng.normal(size=n) for n in lengths]
        expected = pad_sequences([naive_series_tokens(s[None], window) for s in series])
        for layout, X in univariate_layouts(series).items():
            np.testing.assert_array_equal(encoder.transform(X), expected, layout)


@pytest.mark.parametrize("fit_layout", ["3-D", "list"])
def test_series_n_features_in_is_the_channels(rng, fit_layout):
    """n_features_in_ counts the channels of multivariate series too, fitted as a
    3-D array or as a list, and series of any length with those channels
    transform in either layout."""
    X = rng.normal(size=(4, 3, 9))
    encoder = SeriesToTokens().fit(X if fit_layout == "3-D" else list(X))
    assert encoder.n_features_in_ == encoder.n_channels_ == 3
    longer = rng.normal(size=(2, 3, 14))
    expected = longer.transpose(0, 2, 1)
    np.testing.assert_array_equal(encoder.transform(longer), expected)
    np.testing.assert_array_equal(encoder.transform(list(longer)), expected)


# ---------------------------------------------------------- PositionalEncoding


@pytest.mark.parametrize("n_tokens, expected", [(5, 5), (8, 8), (100, 8)])
def test_default_positions_are_capped(rng, n_tokens, expected):
    """The issue's case: 100 tokens of 6 channels gave d = 107 (p = 618,246) with
    one position per token; the default now stops at 8 positions."""
    X = rng.normal(size=(3, n_tokens, 6))
    encoder = PositionalEncoding(constant=True).fit(X)
    assert encoder.n_positions_ == expected
    assert encoder.token_dim_out_ == 6 + expected + 1
    out = encoder.transform(X)
    np.testing.assert_array_equal(out[0, -expected:, 6:-1], np.eye(expected)[::-1])
    assert not out[0, : n_tokens - expected, 6:-1].any()  # beyond: no position


def test_onehot_positions_are_counted_from_the_query(rng):
    X = pad_sequences(ragged(rng, [2, 4], token_dim=2))
    out = PositionalEncoding(constant=True).fit_transform(X)
    assert out.shape == (2, 4, 2 + 4 + 1)
    np.testing.assert_array_equal(out[:, :, :2], X)
    # sequence 0: two padding tokens, then positions 1 and 0
    assert not out[0, :2].any()
    np.testing.assert_array_equal(out[0, 2:, 2:], [[0, 1, 0, 0, 1], [1, 0, 0, 0, 1]])
    # sequence 1: positions 3, 2, 1, 0 (the query is position 0)
    np.testing.assert_array_equal(out[1, :, 2:6], np.eye(4)[::-1])
    np.testing.assert_array_equal(out[1, :, 6], 1.0)


def test_positions_beyond_n_positions_are_zero_and_longer_inputs_work(rng):
    encoder = PositionalEncoding(n_positions=2).fit(rng.normal(size=(3, 2, 1)))
    out = encoder.transform(rng.normal(size=(3, 5, 1)))  # longer at transform
    np.testing.assert_array_equal(
        out[0, :, 1:3], [[0, 0], [0, 0], [0, 0], [0, 1], [1, 0]]
    )
    np.testing.assert_array_equal(out[0, :, 3], 1.0)  # the constant, by default


def test_sinusoidal_matches_formula_and_tells_positions_apart(rng):
    X = rng.normal(size=(2, 6, 1))
    k = 4
    out = PositionalEncoding(kind="sinusoidal", n_positions=k).fit_transform(X)
    for t in range(6):
        position = 5 - t
        for i in range(k):
            angle = position / 10000 ** (2 * (i // 2) / k)
            expected = np.sin(angle) if i % 2 == 0 else np.cos(angle)
            assert out[0, t, 1 + i] == pytest.approx(expected, abs=1e-15)
    codes = out[0, :, 1:]
    assert np.linalg.matrix_rank(codes - codes.mean(axis=0)) >= 3


def test_padding_off_gives_leading_zero_tokens_positions():
    X = np.zeros((1, 3, 2))
    X[0, 2] = 1.0
    on = PositionalEncoding().fit_transform(X)
    off = PositionalEncoding(padding=None).fit_transform(X)
    assert not on[0, :2].any()
    np.testing.assert_array_equal(off[0, :, 2:5], np.eye(3)[::-1])
    np.testing.assert_array_equal(off[0, :, 5], 1.0)


def test_sequences_read_as_padding_throughout_warn():
    """Fixed-length windows of a count series: a window of zeros was read as
    left padding throughout, so the model saw an empty sequence and predicted
    its intercept (with the default's heads, -88.6 where the targets are near 0,
    on aeon's PBS windows). Both steps that read padding say so, naming
    padding=None, which gives that window its position and constant features."""
    windows = np.array([[0, 0, 0, 0, 1, 3], [0, 0, 0, 0, 0, 0], [2, 1, 0, 0, 0, 1]])
    X = SeriesToTokens(window=2).fit_transform(windows.astype(float))
    steps = (PositionalEncoding(), TokenwiseTransformer(StandardScaler()))
    for step in steps:
        with pytest.warns(UserWarning, match="reads 1 of 3 sequences as left padding"):
            step.fit_transform(X)
        with pytest.warns(UserWarning, match="pass padding=None"):
            step.transform(X[1:2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for step in steps:
            step.set_params(padding=None).fit_transform(X)
            step.set_params(padding="left").fit(X[[0, 2]]).transform(X[[0, 2]])
    out = PositionalEncoding(padding=None).fit_transform(X)
    np.testing.assert_array_equal(out[1, :, -1], 1.0)  # the constant


def test_interior_zero_tokens_are_not_padding():
    X = np.ones((1, 4, 1))
    X[0, 0] = X[0, 2] = 0.0  # leading padding, then a real zero token
    out = PositionalEncoding().fit_transform(X)
    assert not out[0, 0].any()
    np.testing.assert_array_equal(out[0, 2, 1:], [0, 1, 0, 0, 1])


def test_the_constant_is_appended_by_default(rng):
    """The documented recipe's constant is the default; constant=False drops it."""
    X = pad_sequences(ragged(rng, [2, 3], token_dim=2))
    out = PositionalEncoding().fit_transform(X)
    assert out.shape == (2, 3, 2 + 3 + 1)
    np.testing.assert_array_equal(out[:, :, -1], [[0, 1, 1], [1, 1, 1]])
    without = PositionalEncoding(constant=False).fit_transform(X)
    np.testing.assert_array_equal(without, out[:, :, :-1])


def _sinusoid(position, n_positions):
    return [
        np.sin(position / 10000 ** (2 * (j // 2) / n_positions))
        if j % 2 == 0
        else np.cos(position / 10000 ** (2 * (j // 2) / n_positions))
        for j in range(n_positions)
    ]


@pytest.mark.parametrize("kind", ["onehot", "sinusoidal"])
@pytest.mark.parametrize("padding", ["left", None])
def test_positions_counted_from_the_start_follow_their_definition(
    kind, padding, rng
):
    """origin="start": the k-th real token of a sequence (its first non-padding
    token is k = 0) gets the features of position k, written out token by token;
    one-hot positions from n_positions on are zero."""
    X = pad_sequences(ragged(rng, [1, 4, 6, 3], token_dim=2))
    X[2, 2] = 0.0  # an interior zero token is a real token
    n_positions = 4
    out = PositionalEncoding(
        kind=kind, n_positions=n_positions, padding=padding, origin="start"
    ).fit_transform(X)
    for i, sequence in enumerate(X):
        k, started = 0, padding is None
        for t, token in enumerate(sequence):
            started = started or bool(token.any())
            if not started:
                assert not out[i, t].any()
                continue
            if kind == "onehot":
                code = [float(j == k) for j in range(n_positions)]
            else:
                code = _sinusoid(k, n_positions)
            np.testing.assert_allclose(
                out[i, t], [*token, *code, 1.0], rtol=0, atol=1e-15
            )
            k += 1


def test_start_positions_do_not_change_when_tokens_are_appended(rng):
    """Appending tokens leaves the features of the earlier ones as they were when
    positions count from the start; counted from the query they all move."""
    X = pad_sequences(ragged(rng, [2, 5, 3], token_dim=3))
    grown = np.concatenate([X, rng.normal(size=(3, 4, 3))], axis=1)
    start = PositionalEncoding(origin="start").fit(X)
    np.testing.assert_array_equal(start.transform(grown)[:, :5], start.transform(X))
    query = PositionalEncoding().fit(X)
    assert not np.array_equal(query.transform(grown)[:, :5], query.transform(X))


def test_every_position_output_is_the_prefix_output_with_start_positions(rng):
    """With positions from the start, the causal output of positions="all" at
    position t is the model's output on the prefix Z[:t + 1] read at its last
    token: the prefix's tokens have the same features. From the query, the
    prefix's tokens get other positions, and the outputs differ."""
    X = rng.normal(size=(300, 6, 2))
    y = X[:, :1, 0] * X[:, :, 1]  # per position: the first token's entry times z_t
    for origin, same in [("start", True), ("query", False)]:
        model = make_pipeline(
            PositionalEncoding(origin=origin),
            LinearAttentionRegressor(positions="all", alpha=1e-6, n_heads=None),
        ).fit(X, y)
        every = model.predict(X[:5])
        prefixes = np.column_stack(
            [model.predict(X[:5, : t + 1])[:, -1] for t in range(6)]
        )
        scale = np.abs(every).max()
        assert np.allclose(prefixes, every, rtol=0, atol=1e-10 * scale) == same


def test_2d_rows_with_token_dim_match_3d(rng):
    X = pad_sequences(ragged(rng, [1, 3, 2], token_dim=2))
    encoder = PositionalEncoding(constant=True, token_dim=2)
    rows = encoder.fit_transform(X.reshape(3, -1))
    assert encoder.token_dim_out_ == 2 + 3 + 1
    np.testing.assert_array_equal(
        rows, PositionalEncoding(constant=True).fit_transform(X).reshape(3, -1)
    )


def test_positional_feature_names(rng):
    pd = pytest.importorskip("pandas")

    X = pd.DataFrame(rng.normal(size=(4, 4)), columns=["a0", "b0", "a1", "b1"])
    encoder = PositionalEncoding(token_dim=2, constant=True).fit(X)
    names = encoder.get_feature_names_out()
    assert names.tolist() == [
        "token0_a0", "token0_b0", "token0_position0", "token0_position1",
        "token0_constant",
        "token1_a1", "token1_b1", "token1_position0", "token1_position1",
        "token1_constant",
    ]  # fmt: skip
    assert len(names) == encoder.transform(X).shape[1]


@pytest.mark.parametrize(
    "transformer", [PositionalEncoding(), TokenwiseTransformer(StandardScaler())]
)
def test_pandas_output_needs_rows(rng, transformer):
    """A DataFrame cannot hold 3-D sequences: pandas output with 3-D input is a
    clear error naming the 2-D layout; rows with token_dim give a DataFrame whose
    columns are get_feature_names_out."""
    pd = pytest.importorskip("pandas")
    X = rng.normal(size=(4, 5, 3))
    transformer = transformer.set_output(transform="pandas")
    with pytest.raises(ValueError, match=r"n_tokens \* token_dim.*token_dim"):
        transformer.fit_transform(X)
    rows = transformer.set_params(token_dim=3).fit_transform(X.reshape(4, -1))
    assert isinstance(rows, pd.DataFrame)
    assert rows.columns.tolist() == transformer.get_feature_names_out().tolist()
    reference = transformer.set_output(transform="default").fit_transform(X)
    np.testing.assert_allclose(rows.to_numpy(), reference.reshape(4, -1))


def test_permutation_invariance_without_positions_and_not_with(rng):
    """Attention ignores the order of context tokens; positions make it see it."""
    X = rng.normal(size=(300, 5, 2))
    y = X[:, 1, 0] * X[:, -1, 1] + X[:, 0, 1]
    permuted = X.copy()
    permuted[:, :4] = X[:, [2, 0, 3, 1]]
    plain = LinearAttentionRegressor(n_heads=None, alpha=1e-8).fit(X, y)
    np.testing.assert_allclose(plain.predict(permuted), plain.predict(X), atol=1e-8)
    ordered = make_pipeline(
        PositionalEncoding(constant=True), LinearAttentionRegressor(n_heads=None)
    ).fit(X, y)
    assert np.max(np.abs(ordered.predict(permuted) - ordered.predict(X))) > 0.1


def test_fixed_position_target_learned_with_positions_only(rng):
    """The target is an entry of the token two before the query: a linear function
    of one position, out of reach of order-blind attention."""
    X = rng.normal(size=(400, 6, 2))
    y = X[:, -3, 0]
    X_test = rng.normal(size=(200, 6, 2))
    y_test = X_test[:, -3, 0]
    without = LinearAttentionRegressor(n_heads=None).fit(X, y)
    constant_only = make_pipeline(
        PositionalEncoding(n_positions=1, constant=True),
        LinearAttentionRegressor(n_heads=None),
    ).fit(X, y)
    with_positions = make_pipeline(
        PositionalEncoding(), LinearAttentionRegressor(n_heads=None)
    ).fit(X, y)
    # R^2 out of sample (measured over 11 seeds: at most -0.002 and 0.29)
    assert without.score(X_test, y_test) < 0.3
    assert constant_only.score(X_test, y_test) < 0.5
    assert with_positions.score(X_test, y_test) > 1 - 1e-8


def test_constant_adds_lower_degree_terms(rng):
    """A product of two query entries is even in the tokens while the homogeneous
    cubic is odd (f(-Z) = -f(Z)), so plain attention cannot fit it at all; with the
    query marked (one position feature) and a constant feature it is exact."""
    X = rng.normal(size=(300, 4, 2))
    y = X[:, -1, 0] * X[:, -1, 1] + X[:, -1, 0]
    X_test = rng.normal(size=(200, 4, 2))
    y_test = X_test[:, -1, 0] * X_test[:, -1, 1] + X_test[:, -1, 0]
    plain = LinearAttentionRegressor(n_heads=None).fit(X, y)
    with_constant = make_pipeline(
        PositionalEncoding(n_positions=1, constant=True),
        LinearAttentionRegressor(n_heads=None),
    ).fit(X, y)
    assert plain.score(X_test, y_test) < 0.7
    assert with_constant.score(X_test, y_test) > 1 - 1e-8


def test_pad_encode_fit_in_one_pipeline_under_cross_val_score(rng):
    """Ragged lists straight into a Pipeline: padding, positions, the estimator."""
    lengths = rng.integers(3, 8, size=120)
    sequences = [rng.normal(size=(n, 2)) for n in lengths]
    y = np.array([s[-2, 0] + s[-1, 1] for s in sequences])  # query and token before
    pipeline = Pipeline(
        [
            ("pad", FunctionTransformer(pad_sequences, kw_args={"max_len": 8})),
            ("positions", PositionalEncoding(constant=True)),
            ("attention", LinearAttentionRegressor(n_heads=None)),
        ]
    )
    scores = cross_val_score(pipeline, sequences, y, cv=3)
    assert np.all(scores > 1 - 1e-8)


# ---------------------------------------------------------- TokenwiseTransformer


def test_tokenwise_scaler_fits_on_real_tokens_only(rng):
    sequences = [rng.normal(loc=5, scale=3, size=(n, 2)) for n in (2, 7, 4, 1)]
    X = pad_sequences(sequences)
    scaled = TokenwiseTransformer(StandardScaler()).fit_transform(X)
    tokens = np.vstack(sequences)
    expected = (tokens - tokens.mean(axis=0)) / tokens.std(axis=0)
    mask = X.any(axis=2)
    np.testing.assert_allclose(scaled[mask], expected, atol=1e-12)
    assert not scaled[~mask].any()


def test_flat_scaler_breaks_padding_tokenwise_keeps_it(rng):
    """StandardScaler on flattened rows scales each position apart and turns zero
    padding into non-zero tokens; TokenwiseTransformer keeps padding zero."""
    sequences = [rng.normal(size=(n, 2)) for n in rng.integers(1, 6, size=500)]
    X = pad_sequences(sequences, max_len=5)
    flat = StandardScaler().fit_transform(X.reshape(len(X), -1)).reshape(X.shape)
    assert flat[~X.any(axis=2)].any()
    tokenwise = TokenwiseTransformer(StandardScaler()).fit_transform(X)
    assert not tokenwise[~X.any(axis=2)].any()


def test_centering_after_the_constant_warns_and_zeroes_it(rng):
    """The issue's order, PositionalEncoding(constant=True) then a centering
    scaler, maps the constant to 0 (and warns); the documented order keeps it."""
    X = pad_sequences([rng.normal(loc=2, size=(n, 3)) for n in rng.integers(2, 7, 60)])
    real = X.any(axis=2)
    bad = make_pipeline(
        PositionalEncoding(n_positions=2, constant=True),
        TokenwiseTransformer(StandardScaler()),
    )
    with pytest.warns(UserWarning, match="Append the constant after this step"):
        out = bad.fit_transform(X)
    assert not out[:, :, -1].any()  # the constant feature, now 0 everywhere
    good = make_pipeline(
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(n_positions=2, constant=True),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = good.fit_transform(X)
    np.testing.assert_array_equal(out[:, :, -1], real.astype(float))


def test_a_constant_channel_of_the_data_does_not_warn(rng):
    """A channel stuck at one value spans a constant the scaler centers away, as
    the constant feature would be; it is the data's own, and in the documented
    order the constant appended after the scaler is kept: no warning. One-hot
    categories covering every token warn (the constant they span is lost unless
    a later step appends one)."""
    X = pad_sequences([rng.normal(size=(n, 3)) for n in rng.integers(2, 7, 60)])
    real = X.any(axis=2)
    X[..., 2] = np.where(real, 5.0, 0.0)
    X_before = X.copy()
    documented = make_pipeline(
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(n_positions=2, constant=True),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = documented.fit_transform(X)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(out[:, :, -1], real.astype(float))
    category = rng.integers(0, 2, size=X.shape[:2]).astype(float)
    X[..., 1], X[..., 2] = category * real, (1 - category) * real
    with pytest.warns(UserWarning, match="positions or categories"):
        TokenwiseTransformer(StandardScaler()).fit(X)


@pytest.mark.parametrize(
    "transformer",
    [StandardScaler(with_mean=False), TruncatedSVD(n_components=6)],
    ids=["scale-only", "svd-of-all"],
)
def test_linear_maps_after_the_constant_keep_it_and_do_not_warn(transformer, rng):
    """Without centering the constant survives (as a column or in the span)."""
    X = pad_sequences([rng.normal(size=(n, 3)) for n in rng.integers(2, 7, 60)])
    encoded = PositionalEncoding(n_positions=2, constant=True).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = TokenwiseTransformer(transformer).fit_transform(encoded)
    tokens = out[X.any(axis=2)]
    ones = np.ones(len(tokens))
    coef = np.linalg.lstsq(tokens, ones, rcond=None)[0]
    np.testing.assert_allclose(tokens @ coef, ones, atol=1e-10)


def test_tokenwise_linear_scaling_keeps_an_attention_model_exact(rng):
    """Padded noiseless data from a random attention model: scaling every token by
    the same diagonal map keeps the data an attention model's (exact fit); scaling
    the flattened rows does not."""
    from conftest import random_attention

    truth = random_attention(rng, 3, 2)

    def data(n):
        lengths = rng.integers(2, 9, size=n)
        X = pad_sequences([rng.normal(size=(k, 3)) for k in lengths], max_len=8)
        return X * [1.0, 10.0, 0.1], truth.predict(X)[:, 0]

    X, y = data(1000)
    X_test, y_test = data(300)
    tokenwise = make_pipeline(
        TokenwiseTransformer(StandardScaler(with_mean=False)),
        LinearAttentionRegressor(n_heads=None),
    ).fit(X, y)
    assert tokenwise.score(X_test, y_test) > 1 - 1e-8
    flat = make_pipeline(
        StandardScaler(), LinearAttentionRegressor(token_dim=3, n_heads=None)
    ).fit(X.reshape(len(X), -1), y)
    assert flat.score(X_test.reshape(len(X_test), -1), y_test) < 0.99


@pytest.mark.parametrize("center", [False, True])
def test_tokenwise_reduction_of_token_dim_and_pipeline_fits(rng, center):
    """Tokens of dimension 40 in a 3-dimensional subspace: reducing each token to 3
    features cuts p from 32,800 to 18 and the model of the reduced tokens is exact.
    TruncatedSVD is linear; PCA centers (an affine map), which a constant feature
    absorbs: [A z + b; 1] is a linear map of [z; 1]."""
    basis = np.linalg.qr(rng.normal(size=(40, 3)))[0]
    latent = rng.normal(size=(300, 5, 3))
    X = latent @ basis.T
    y = (latent[:, :, 0] ** 2).sum(axis=1) * latent[:, -1, 1]
    if center:
        steps = [
            TokenwiseTransformer(PCA(n_components=3)),
            PositionalEncoding(n_positions=0, constant=True),
        ]
    else:
        steps = [TokenwiseTransformer(TruncatedSVD(n_components=3))]
    model = make_pipeline(*steps, LinearAttentionRegressor(n_heads=None)).fit(X, y)
    assert model[0].transform(X).shape == (300, 5, 3)
    assert model[-1].token_dim_ == 3 + center
    X_test = rng.normal(size=(100, 7, 3)) @ basis.T  # longer sequences too
    latent_test = X_test @ basis
    y_test = (latent_test[:, :, 0] ** 2).sum(axis=1) * latent_test[:, -1, 1]
    assert model.score(X_test, y_test) > 1 - 1e-8


def test_tokenwise_2d_rows_and_feature_names(rng):
    X = pad_sequences(ragged(rng, [2, 3, 3, 1], token_dim=4))
    reducer = TokenwiseTransformer(PCA(n_components=2), token_dim=4)
    rows = reducer.fit_transform(X.reshape(4, -1))
    assert rows.shape == (4, 3 * 2)
    assert reducer.token_dim_out_ == 2
    np.testing.assert_allclose(
        rows, TokenwiseTransformer(PCA(n_components=2)).fit_transform(X).reshape(4, -1)
    )
    assert reducer.get_feature_names_out().tolist() == [
        "token0_pca0", "token0_pca1", "token1_pca0", "token1_pca1",
        "token2_pca0", "token2_pca1",
    ]  # fmt: skip


def test_tokenwise_then_positions_on_2d_rows(rng):
    X = rng.normal(size=(50, 3, 4))
    y = X[:, 0, 0]
    model = make_pipeline(
        TokenwiseTransformer(PCA(n_components=4), token_dim=4),
        PositionalEncoding(token_dim=4),
        LinearAttentionRegressor(token_dim=4 + 3 + 1, n_heads=None),
    ).fit(X.reshape(50, -1), y)
    assert model.score(X.reshape(50, -1), y) > 1 - 1e-8


# ---------------------------------------------- pandas output of token transformers


def sequences_with_target():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4, 2))
    return X, X[:, 1, 0] * X[:, -1, 1]


TOKEN_TRANSFORMERS = [
    lambda: PositionalEncoding(token_dim=2, constant=True),
    lambda: PositionalEncoding(token_dim=2, kind="sinusoidal", n_positions=3),
    lambda: TokenwiseTransformer(StandardScaler(with_mean=False), token_dim=2),
]


@pytest.mark.parametrize("make", TOKEN_TRANSFORMERS)
def test_token_transformers_pandas_output_of_rows_is_a_named_dataframe(make):
    pd = pytest.importorskip("pandas")
    X, _ = sequences_with_target()
    rows = X.reshape(len(X), -1)
    plain = make().fit(rows)
    t = make().set_output(transform="pandas")
    out = t.fit_transform(rows)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(t.get_feature_names_out())
    assert out.columns.is_unique
    np.testing.assert_array_equal(out.to_numpy(), plain.transform(rows))
    # DataFrame input: index kept, input names used
    names = [f"t{i}_{j}" for i in range(4) for j in range(2)]
    frame = pd.DataFrame(rows, columns=names, index=np.arange(100, 150))
    out = make().set_output(transform="pandas").fit_transform(frame)
    assert list(out.index) == list(range(100, 150))
    np.testing.assert_array_equal(out.to_numpy(), plain.transform(rows))
    # each input column's name, with its token, names its output column
    assert {f"token{c // 2}_{name}" for c, name in enumerate(names)} <= set(out)


@pytest.mark.parametrize("make", TOKEN_TRANSFORMERS)
@pytest.mark.parametrize("how", ["estimator", "global"])
def test_token_transformers_pandas_output_of_3d_input_is_a_clear_error(make, how):
    pytest.importorskip("pandas")
    X, _ = sequences_with_target()
    if how == "estimator":
        t = make().set_output(transform="pandas")
        context = sklearn.config_context()
    else:
        t = make()
        context = sklearn.config_context(transform_output="pandas")
    t.token_dim = None
    with context:
        layout = r"3-D.*\(n_samples, n_tokens \* token_dim\)"
        with pytest.raises(ValueError, match=layout):
            t.fit_transform(X)
        t.set_output(transform="default")
        assert t.fit_transform(X).shape[:2] == X.shape[:2]  # default output works


def test_pandas_output_pipeline_into_an_estimator_equals_the_numpy_pipeline():
    pytest.importorskip("pandas")
    X, y = sequences_with_target()
    rows = X.reshape(len(X), -1)
    pipe = make_pipeline(
        TokenwiseTransformer(StandardScaler(with_mean=False), token_dim=2),
        PositionalEncoding(token_dim=2),
        LinearAttentionRegressor(token_dim=7, n_heads=None),
    ).set_output(transform="pandas")
    pipe.fit(rows, y)
    np.testing.assert_array_equal(
        pipe[-1].feature_names_in_, pipe[1].get_feature_names_out()
    )
    plain = make_pipeline(
        TokenwiseTransformer(StandardScaler(with_mean=False), token_dim=2),
        PositionalEncoding(token_dim=2),
        LinearAttentionRegressor(token_dim=7, n_heads=None),
    ).fit(rows, y)
    np.testing.assert_allclose(pipe.predict(rows), plain.predict(rows), atol=1e-10)
    np.testing.assert_allclose(pipe.predict(rows), y, atol=1e-8)
    with pytest.raises(ValueError, match="3-D sequences"):
        pipe.fit(X, y)


# ------------------------------------------------------------------ feature names


def flat_width(transformer, X):
    """The number of columns of the transformed X, flattened token by token."""
    out = transformer.transform(X)
    return out.reshape(len(out), -1).shape[1]


@pytest.mark.parametrize("window", [1, 3])
def test_series_feature_names_say_token_channel_and_step(rng, window):
    """Every output value sits in the column its name says: token t, channel c,
    time step j of the token (the series value at time r + t * window + j)."""
    n_channels, n_timepoints = 2, 7
    X = rng.normal(size=(4, n_channels, n_timepoints))
    encoder = SeriesToTokens(window=window).fit(X)
    names = encoder.get_feature_names_out(["temp", "wind"])
    assert len(names) == encoder.n_tokens_ * encoder.token_dim_out_
    assert len(names) == flat_width(encoder, X)
    assert len(set(names)) == len(names)
    flat = encoder.transform(X).reshape(len(X), -1)
    start = n_timepoints % window
    for column, name in enumerate(names):
        parts = name.split("_")
        t, c = int(parts[0].removeprefix("token")), ["temp", "wind"].index(parts[1])
        j = int(parts[2].removeprefix("step")) if window > 1 else 0
        assert len(parts) == (3 if window > 1 else 2)
        np.testing.assert_array_equal(flat[:, column], X[:, c, start + t * window + j])
    default = SeriesToTokens(window=window).fit(X).get_feature_names_out()
    assert default[0] == ("token0_x0_step0" if window > 1 else "token0_x0")


def test_series_feature_names_follow_the_fitted_length_and_check_input_names(rng):
    series = [rng.normal(size=(2, n)) for n in (3, 9, 5)]
    encoder = SeriesToTokens(window=2).fit(series)
    assert encoder.n_tokens_ == 4  # the longest series, 9 steps, in windows of 2
    assert len(encoder.get_feature_names_out()) == flat_width(encoder, series)
    clipped = SeriesToTokens(window=2, max_len=6).fit(series)
    assert len(clipped.get_feature_names_out()) == 6 * 4 == flat_width(clipped, series)
    with pytest.raises(ValueError, match="input_features should have length"):
        encoder.get_feature_names_out(["a", "b", "c"])


@pytest.mark.parametrize(
    "make, extra",
    [
        (
            lambda: PositionalEncoding(n_positions=2, origin="start"),
            ["position0", "position1", "constant"],
        ),
        (
            lambda: PositionalEncoding(kind="sinusoidal", n_positions=3),
            ["position_sin0", "position_cos0", "position_sin1", "constant"],
        ),
        (lambda: PositionalEncoding(n_positions=0), ["constant"]),
        (lambda: PositionalEncoding(n_positions=1, constant=False), ["position0"]),
    ],
)
def test_positional_names_tell_positions_and_constant_apart(rng, make, extra):
    """Each token's columns: its input features, then the appended ones named for
    what they are (sinusoidal features are not named as one-hot positions); the
    columns named constant are 1 on real tokens; names are unique and as many as
    the output columns."""
    X = pad_sequences(ragged(rng, [2, 3, 1], token_dim=2))
    encoder = make().fit(X)
    names = encoder.get_feature_names_out()
    assert len(names) == flat_width(encoder, X) == len(set(names))
    token_names = ["x0", "x1"] + extra
    assert names.tolist() == [
        f"token{t}_{name}" for t in range(3) for name in token_names
    ]
    out = encoder.transform(X)
    real = X.any(axis=2)
    flat = out.reshape(len(X), -1)
    for column, name in enumerate(names):
        if name.endswith("_constant"):
            t = int(name.split("_")[0].removeprefix("token"))
            np.testing.assert_array_equal(flat[:, column], real[:, t])


def test_tokenwise_names_keep_the_input_names(rng):
    """Fitted on a DataFrame, the names of a one-to-one transformer's columns are
    the input columns' (with their token); a reducing transformer names its own
    features, per token; input_features is checked as scikit-learn does."""
    pd = pytest.importorskip("pandas")
    columns = ["price0", "volume0", "price1", "volume1", "price2", "volume2"]
    frame = pd.DataFrame(rng.normal(size=(6, 6)), columns=columns)
    scaler = TokenwiseTransformer(StandardScaler(), token_dim=2).fit(frame)
    names = scaler.get_feature_names_out()
    assert names.tolist() == [
        f"token{t}_{name}{t}" for t in range(3) for name in ("price", "volume")
    ]
    assert len(names) == flat_width(scaler, frame)
    np.testing.assert_array_equal(scaler.get_feature_names_out(columns), names)
    with pytest.raises(ValueError, match="input_features is not equal"):
        scaler.get_feature_names_out([f"c{i}" for i in range(6)])
    reducer = TokenwiseTransformer(PCA(n_components=1), token_dim=2).fit(frame)
    assert reducer.get_feature_names_out().tolist() == [
        "token0_pca0",
        "token1_pca0",
        "token2_pca0",
    ]
    # names from another step of this module keep one token prefix
    numpy_fit = TokenwiseTransformer(StandardScaler()).fit(rng.normal(size=(6, 2, 3)))
    upstream = [f"token{t}_x{j}" for t in range(2) for j in range(3)]
    np.testing.assert_array_equal(
        numpy_fit.get_feature_names_out(upstream), numpy_fit.get_feature_names_out()
    )
    assert numpy_fit.get_feature_names_out()[3] == "token1_x0"


@pytest.mark.parametrize(
    "tokenwise, window, first_token",
    [
        (StandardScaler(), 1, ["temp", "wind"]),
        (PCA(n_components=2), 2, ["pca0", "pca1"]),
    ],
)
def test_names_flow_through_the_documented_pipeline(
    rng, tokenwise, window, first_token
):
    """SeriesToTokens -> TokenwiseTransformer -> PositionalEncoding: the pipeline
    names every column of its flattened output, each once, and a step's names are
    computed from the previous step's."""
    X = rng.normal(size=(8, 2, 12))
    pipeline = make_pipeline(
        SeriesToTokens(window=window),
        TokenwiseTransformer(tokenwise),
        PositionalEncoding(n_positions=2),
    ).fit(X)
    names = pipeline.get_feature_names_out(["temp", "wind"])
    assert len(names) == flat_width(pipeline, X) == len(set(names))
    assert names[:5].tolist() == [
        f"token0_{name}"
        for name in first_token + ["position0", "position1", "constant"]
    ]
    n_tokens = 12 // window
    assert names[-1] == f"token{n_tokens - 1}_constant"


def test_repeated_appended_names_are_refused(rng):
    X = rng.normal(size=(5, 3, 2))
    chained = make_pipeline(PositionalEncoding(n_positions=0), PositionalEncoding())
    chained.fit(X)
    with pytest.raises(ValueError, match=r"include \['constant'\].*not be unique"):
        chained.get_feature_names_out()


def test_series_to_tokens_pandas_output_is_a_clear_error(rng):
    """SeriesToTokens has set_output (a Pipeline's set_output reaches it), and
    with pandas output it says that its 3-D output cannot be a DataFrame and how to
    get rows instead."""
    pytest.importorskip("pandas")
    X = rng.normal(size=(4, 2, 5))
    encoder = SeriesToTokens().set_output(transform="pandas")
    with pytest.raises(ValueError, match=r"3-D sequences.*token_dim=Z.shape\[2\]"):
        encoder.fit_transform(X)
    pipeline = make_pipeline(SeriesToTokens(), PositionalEncoding())
    with pytest.raises(ValueError, match="SeriesToTokens returns 3-D sequences"):
        pipeline.set_output(transform="pandas").fit_transform(X)
    assert encoder.set_output(transform="default").fit_transform(X).shape == (4, 5, 2)


# scikit-learn's checks of get_feature_names_out and set_output that
# parametrize_with_checks does not yield. SeriesToTokens is left out: its 2-D
# input rows are univariate series (_ANY_LENGTH) and its output is 3-D.
OUTPUT_CHECKS = [
    "check_transformer_get_feature_names_out",
    "check_transformer_get_feature_names_out_pandas",
    "check_get_feature_names_out_error",
    "check_dataframe_column_names_consistency",
    "check_set_output_transform",
    "check_set_output_transform_pandas",
    "check_global_output_transform_pandas",
]


@pytest.mark.parametrize("check_name", OUTPUT_CHECKS)
@pytest.mark.parametrize(
    "estimator",
    [
        PositionalEncoding(),
        PositionalEncoding(kind="sinusoidal", n_positions=3),
        TokenwiseTransformer(StandardScaler()),
        TokenwiseTransformer(PCA(n_components=1)),
    ],
    ids=repr,
)
def test_token_transformers_pass_sklearn_output_checks(estimator, check_name):
    pytest.importorskip("pandas")
    from sklearn.utils import estimator_checks

    check = getattr(estimator_checks, check_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(type(estimator).__name__, sklearn.clone(estimator))


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "transformer", [PositionalEncoding(), TokenwiseTransformer(StandardScaler())]
)
def test_transformers_bad_input(transformer, rng):
    with pytest.raises(ValueError, match=r"\(n_samples, n_tokens, token_dim\)"):
        transformer.fit(rng.normal(size=(2, 3, 4, 5)))
    with pytest.raises(ValueError, match="not a multiple of token_dim=3"):
        transformer.set_params(token_dim=3).fit(rng.normal(size=(5, 7)))
    transformer.set_params(token_dim=None).fit(rng.normal(size=(5, 3, 2)))
    with pytest.raises(ValueError, match="token dimension 3"):
        transformer.transform(rng.normal(size=(5, 3, 3)))
    with pytest.raises(ValueError, match="pad_sequences"):
        transformer.fit([np.ones((2, 2)), np.ones((3, 2))])


# 2-D rows (and non-arrays) the estimators refuse by name: the token transformers
# read dates as counts since 1970 silently, printed every complex value after
# scikit-learn's message, and gave numpy's bare "could not convert string to
# float" or "float() argument must be ... not 'dict'" naming neither X nor its shape
BAD_ROWS = {
    "dates": (
        np.arange(24).astype("datetime64[D]").reshape(4, 6),
        "X has dtype datetime64.D.: dates and durations are not numbers",
    ),
    "complex": (np.ones((4, 6)) + 1j, "X has dtype complex128; sequences are real"),
    "strings": (
        np.full((4, 6), "a"),
        r"X must be an array of shape \(n_samples, n_tokens \* token_dim\) of real "
        "numbers .*could not convert string",
    ),
    "a string": ("abc", r"\(n_samples, n_tokens, token_dim\).* 0 dimension"),
    "a dict": ({"a": 1}, r"\(n_samples, n_tokens, token_dim\).* 0 dimension"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
@pytest.mark.parametrize("when", ["fit", "transform"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: PositionalEncoding(token_dim=2),
        lambda: TokenwiseTransformer(StandardScaler(), token_dim=2),
    ],
    ids=["PositionalEncoding", "TokenwiseTransformer"],
)
def test_token_transformers_refuse_what_the_estimators_refuse(make, when, case, rng):
    X, match = BAD_ROWS[case]
    transformer = make()
    if when == "transform":
        transformer.fit(rng.normal(size=(4, 6)))
    with pytest.raises(ValueError, match=match) as error:
        getattr(transformer, when)(X)
    assert "+1.j" not in str(error.value)


@pytest.mark.parametrize(
    "transformer, match",
    [
        (PositionalEncoding(kind="learned"), "kind"),
        (PositionalEncoding(n_positions=-1), "n_positions"),
        (PositionalEncoding(padding="right"), "padding"),
        (TokenwiseTransformer("scale"), "transformer"),
    ],
)
def test_bad_parameters(transformer, match, rng):
    with pytest.raises(ValueError, match=match):
        transformer.fit(rng.normal(size=(3, 2, 2)))


def test_tokenwise_sparse_output_is_dense_tokens():
    """A transformer returning a sparse matrix (OneHotEncoder's default) gives
    the tokens of its dense output; padding stays zero."""
    from sklearn.preprocessing import OneHotEncoder

    X = np.array([[[0.0, 0.0], [1.0, 2.0], [2.0, 1.0]], [[1.0, 1.0]] * 3])
    onehot = TokenwiseTransformer(OneHotEncoder()).fit(X)
    dense = OneHotEncoder(sparse_output=False).fit(X[X.any(axis=2)])
    expected = np.zeros((2, 3, 4))
    expected[X.any(axis=2)] = dense.transform(X[X.any(axis=2)])
    np.testing.assert_array_equal(onehot.transform(X), expected)
    assert onehot.token_dim_out_ == 4


def test_tokenwise_warns_where_real_tokens_become_padding():
    """A non-zero token mapped to all zeros at the start of its sequence reads
    as left padding downstream (PositionalEncoding gives it no position): the
    training minimum of MinMaxScaler on scalar tokens, also with this step's
    padding=None. Tokens mapped to zero after a non-zero one, and padding
    that stays padding, do not warn."""
    from sklearn.preprocessing import MinMaxScaler

    X = np.array([[[1.0], [2.0], [3.0]], [[2.0], [3.0], [4.0]]])
    for padding in ("left", None):
        with pytest.warns(UserWarning, match="maps 1 non-zero token"):
            TokenwiseTransformer(MinMaxScaler(), padding=padding).fit_transform(X)
    later = np.array([[[2.0], [1.0], [3.0]], [[0.0], [3.0], [4.0]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TokenwiseTransformer(MinMaxScaler()).fit_transform(later)
        TokenwiseTransformer(StandardScaler()).fit_transform(X)


def test_tokenwise_refuses_a_transformer_output_of_another_shape(rng):
    """A transformer returning one row for many tokens was broadcast over every
    token (a silent wrong answer), and one returning another width than in fit
    failed in numpy's assignment."""
    from sklearn.preprocessing import FunctionTransformer

    X = rng.normal(size=(4, 3, 2))
    first_row = TokenwiseTransformer(FunctionTransformer(lambda z: z[:1])).fit(X)
    with pytest.raises(ValueError, match=r"mapped 12 tokens to shape \(1, 2\)"):
        first_row.transform(X)
    # 2 features for the one token fit probes, 3 for more
    wider = FunctionTransformer(lambda z: np.ones((len(z), 2 + (len(z) > 1))))
    fitted = TokenwiseTransformer(wider).fit(X)
    with pytest.raises(ValueError, match=r"to \(n, 2\), as it did in fit"):
        fitted.transform(X)


@pytest.mark.parametrize(
    "function, match",
    [
        (lambda z: z + 1j, "FunctionTransformer returned complex values"),
        (lambda z: z[:, :0], r"to \(n, k\), k >= 1; it returned shape \(1, 0\)"),
    ],
)
def test_tokenwise_refuses_complex_or_empty_transformer_output(function, match, rng):
    """Complex output lost its imaginary part (numpy's ComplexWarning only);
    output of no feature gave tokens of dimension 0, with a warning that the
    tokens had become padding."""
    from sklearn.preprocessing import FunctionTransformer

    with pytest.raises(ValueError, match=match):
        TokenwiseTransformer(FunctionTransformer(function)).fit_transform(
            rng.normal(size=(4, 3, 2))
        )


def test_tokenwise_all_padding_raises():
    with pytest.raises(ValueError, match="no non-padding tokens"):
        TokenwiseTransformer(StandardScaler()).fit(np.zeros((3, 2, 2)))


# ---------------------------------------------------------------- layout warnings


def test_transposed_layout_warns_and_names_the_fix(rng):
    X = rng.normal(size=(200, 2, 50))  # (n_samples, n_channels, n_timepoints)
    with pytest.warns(UserWarning, match=r"X\.transpose\(0, 2, 1\)") as record:
        LiftedAttentionFeatures().fit(X)
    message = str(record[0].message)
    assert "63,750" in message and "TokenwiseTransformer" in message


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionClassifier]
)
def test_estimators_warn_on_transposed_layout_before_fitting(Estimator, rng):
    """The warning comes from input validation, before any (slow) fit: a target of
    the wrong length stops the fit right after it."""
    X = rng.normal(size=(200, 2, 50))
    with pytest.warns(UserWarning, match="transpose"):
        with pytest.raises(ValueError):
            Estimator().fit(X, np.arange(5) % 2)


def test_tokens_as_rows_layout_does_not_warn(rng):
    X = rng.normal(size=(200, 50, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LinearAttentionRegressor(n_heads=None).fit(X, X[:, -1, 0] * X[:, 0, 1])
        LiftedAttentionFeatures().fit(X)


def _fit_without_warnings(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return model.fit(X, y)


def test_rows_without_token_dim_warn_and_name_token_dim(rng):
    """The issue's case: 2-D rows of 24 columns without token_dim are one token of
    dimension 24 (p = 7,200); with token_dim=6 they are 4 tokens and do not warn."""
    X = rng.normal(size=(300, 24))
    y = X[:, 0]
    with pytest.warns(UserWarning, match="pass token_dim") as record:
        LinearAttentionRegressor(n_heads=None).fit(X, y)
    message = str(record[0].message)
    assert "7,200" in message
    # it informs about the one-token model (a recipe of its own) and its cost
    assert "kernel" in message and "A whole series as one token" in message
    assert "n_outputs d^3" in message
    _fit_without_warnings(LinearAttentionRegressor(token_dim=6, n_heads=None), X, y)
    narrow = rng.normal(size=(300, 4))  # a small cubic polynomial of the row
    _fit_without_warnings(LinearAttentionRegressor(n_heads=None), narrow, narrow[:, 0])


@pytest.mark.parametrize(
    "Estimator", [LinearAttentionRegressor, LinearAttentionClassifier]
)
def test_scalar_tokens_warn_and_name_windows(Estimator, rng):
    """Scalar tokens leave one lifted feature, sum_t z_t^2 z_last; tokens of two
    values (the same series, SeriesToTokens(window=2)) do not warn."""
    series = rng.normal(size=(100, 12))  # univariate, (n_cases, n_timepoints)
    y = np.where(series[:, -1] > series[:, -2], 1, -1)
    with pytest.warns(UserWarning, match=r"SeriesToTokens\(window=k\)"):
        Estimator(n_heads=None).fit(series[:, :, None], y)
    windows = SeriesToTokens(window=2).fit_transform(series)
    _fit_without_warnings(Estimator(n_heads=None), windows, y)


def test_many_lifted_features_for_few_sequences_warn(rng):
    """One position per token (30 tokens of 6 features and the constant: d = 37,
    p = 26,011 for 100 sequences) warns and names the fix, with a penalty too;
    the default positions (at most 8, d = 15, p = 1,800) do not."""
    X = rng.normal(size=(100, 30, 6))
    y = X[:, -1, 0]
    many = PositionalEncoding(n_positions=30).fit_transform(X)
    with pytest.warns(UserWarning, match=r"PositionalEncoding\(n_positions=k\)") as rec:
        LinearAttentionRegressor(alpha=1.0, n_heads=None).fit(many, y)
    assert "26,011" in str(rec[0].message) and "100 training rows" in str(
        rec[0].message
    )
    default = make_pipeline(
        PositionalEncoding(), LinearAttentionRegressor(alpha=1.0, n_heads=None)
    )
    _fit_without_warnings(default, X, y)


def test_partial_fit_batches_do_not_warn_about_their_size(rng):
    """A first batch smaller than p is not all the data: partial_fit does not warn."""
    X = rng.normal(size=(50, 40, 30))  # p = 13,950 lifted features, 50 sequences
    model = LinearAttentionRegressor(n_heads=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.partial_fit(X, X[:, -1, 0])
    with pytest.warns(UserWarning, match="13,950"):
        LinearAttentionRegressor(n_heads=None).fit(X, X[:, -1, 0])


@pytest.mark.parametrize(
    "transformer, name",
    [
        (PositionalEncoding(token_dim=True), "token_dim"),
        (PositionalEncoding(n_positions=True), "n_positions"),
        (TokenwiseTransformer(StandardScaler(), token_dim=True), "token_dim"),
        (SeriesToTokens(window=True), "window"),
        (SeriesToTokens(max_len=True), "max_len"),
    ],
)
def test_a_boolean_for_a_number_is_refused_naming_the_parameter(transformer, name):
    """scikit-learn's checks take True for the integer 1: PositionalEncoding's
    token_dim=True gave a message about a shape of "(n_samples, n_tokens,
    True)", and window=True or n_positions=True were taken as 1."""
    from sklearn.utils._param_validation import InvalidParameterError

    X = np.random.default_rng(0).normal(size=(6, 1, 8))
    if not isinstance(transformer, SeriesToTokens):
        X = X.reshape(6, 4, 2)
    message = f"'{name}' parameter .*not a bool"
    with pytest.raises(InvalidParameterError, match=message):
        transformer.fit(X)


@pytest.mark.parametrize(
    "transformer",
    [
        LiftedAttentionFeatures(token_dim=2),
        PositionalEncoding(token_dim=2, n_positions=1),
        TokenwiseTransformer(StandardScaler(), token_dim=2),
        SeriesToTokens(),
    ],
    ids=["features", "positions", "tokenwise", "series"],
)
@pytest.mark.parametrize("names", ["abcd", 4, {"a", "b", "c", "d"}, [["a", "b"]]])
def test_input_features_that_are_no_list_of_names_are_named(transformer, names):
    """get_feature_names_out("abcd") failed inside scikit-learn's check with
    "len() of unsized object" (a set has no order to name features by)."""
    X = np.random.default_rng(0).normal(size=(6, 4))
    if isinstance(transformer, SeriesToTokens):
        X = X.reshape(6, 4, 1)
    fitted = transformer.fit(X)
    with pytest.raises(TypeError, match="input_features must be a 1-D array-like of"):
        fitted.get_feature_names_out(names)


@pytest.mark.parametrize(
    "transformer, params, name",
    [
        (PositionalEncoding(n_positions=2), {"kind": "x"}, "kind"),
        (PositionalEncoding(n_positions=2), {"origin": "x"}, "origin"),
        (PositionalEncoding(n_positions=2), {"constant": "x"}, "constant"),
        (TokenwiseTransformer(StandardScaler()), {"padding": "x"}, "padding"),
        (SeriesToTokens(), {"window": 0}, "window"),
        (SeriesToTokens(), {"max_len": -1}, "max_len"),
    ],
)
def test_parameters_set_after_fit_are_checked_where_transform_reads_them(
    transformer, params, name
):
    """set_params after fit takes any value: kind="x" transformed as sinusoidal
    positions and origin="x" as counted from the query, silently; window=0
    failed in numpy ("integer modulo by zero")."""
    from sklearn.utils._param_validation import InvalidParameterError

    X = np.random.default_rng(0).normal(size=(6, 4, 2))
    fitted = transformer.fit(X).set_params(**params)
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        fitted.transform(X)


def test_pad_sequences_refuses_complex_sequences():
    """The imaginary parts were dropped with numpy's ComplexWarning only (the
    estimators refuse complex data)."""
    with pytest.raises(ValueError, match="sequence 1 is complex"):
        pad_sequences([np.ones((2, 2)), np.ones((3, 2)) * 1j])


def test_pad_sequences_refuses_an_integer_dtype_that_would_change_values():
    """numpy's cast truncated 0.5 to 0 (and 1e30 to an arbitrary int32)
    silently; integer values, and booleans, convert as before."""
    with pytest.raises(ValueError, match="sequence 1 has values that dtype=int64"):
        pad_sequences([np.ones((2, 2)), np.full((3, 2), 0.5)], dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for values in ([[1e30]], [[np.nan]]):
            with pytest.raises(ValueError, match="dtype=int32 would change"):
                pad_sequences([np.array(values)], dtype=np.int32)
        with pytest.raises(ValueError, match="sequence 0 could not be converted"):
            pad_sequences([[[1e30]]], dtype=np.int32)  # (a list: Python's cast)
    padded = pad_sequences([np.array([[1.0, -2.0]]), [[3, 4], [5, 6]]], dtype=int)
    assert padded.dtype == int
    np.testing.assert_array_equal(padded, [[[0, 0], [1, -2]], [[3, 4], [5, 6]]])
    np.testing.assert_array_equal(
        pad_sequences([[True, False]], dtype=bool)[0, :, 0], [True, False]
    )


def test_outputs_beyond_memory_are_refused_before_allocation(monkeypatch):
    """A large n_positions or max_len was numpy's MemoryError (n_positions=10**9
    on 12 tokens: 89 GiB). Here with 10 kB available."""
    import sklearn_linattn._data as data

    monkeypatch.setattr(data, "available_memory", lambda: 10_000)
    X = np.ones((4, 3, 2))
    encoder = PositionalEncoding(n_positions=100).fit(X)
    with pytest.raises(ValueError, match=r"X_out of shape \(4, 3, 103\)"):
        encoder.transform(X)
    assert PositionalEncoding(n_positions=10).fit_transform(X).shape == (4, 3, 13)
    with pytest.raises(ValueError, match=r"padded of shape \(1, 1000, 2\)"):
        pad_sequences([np.ones((2, 2))], max_len=1000)
    with pytest.raises(ValueError, match=r"padded of shape \(2, 1000, 1\)"):
        SeriesToTokens(max_len=1000).fit_transform(np.ones((2, 1, 3)))


@pytest.mark.parametrize(
    "first",
    [PositionalEncoding(constant=True), TokenwiseTransformer(StandardScaler())],
    ids=["PositionalEncoding", "TokenwiseTransformer"],
)
def test_a_pipeline_refuses_one_2d_sequence_with_the_shape_to_pass(first):
    """One sequence ``Z`` of shape (n_tokens, d) through a pipeline that starts
    with a token transformer: its first step said only "X has 3 features, but
    ... is expecting 15"; it says to pass ``Z[None]``, as the estimators do."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 5, 3)), rng.normal(size=40)
    pipe = make_pipeline(first, LinearAttentionRegressor(alpha=1.0, n_heads=None))
    pipe.fit(X, y)
    with pytest.raises(ValueError, match=r"X has 3 features.*Z\[None\]"):
        pipe.predict(X[0])
    np.testing.assert_allclose(pipe.predict(X[0][None]), pipe.predict(X)[:1])
    # rows of one token each, as fitted: no refusal
    rows = first.fit(X[:, 0, :]).transform(X[:, 0, :])
    assert rows.shape[0] == 40


def test_series_in_sktime_pandas_layouts_are_refused_naming_the_fix(rng):
    """sktime's pd-multiindex DataFrame (a row per case and time point) was read
    as 2-D rows of univariate series, (3 cases x 5 points, 2 channels) -> shape
    (15, 2, 1); its df-list (a DataFrame (n_timepoints, n_channels) per case)
    came out transposed, (3, 2, 5) for 3 cases of 5 points of 2 channels."""
    import pandas as pd

    values = rng.normal(size=(3, 5, 2))  # cases, time points, channels
    index = pd.MultiIndex.from_product([range(3), range(5)])
    multi = pd.DataFrame(values.reshape(15, 2), index=index, columns=["a", "b"])
    with pytest.raises(ValueError, match="2-level row index.*groupby"):
        SeriesToTokens().fit(multi)
    fixed = [g.to_numpy().T for _, g in multi.groupby(level=0, sort=False)]
    np.testing.assert_array_equal(SeriesToTokens().fit_transform(fixed), values)

    frames = [pd.DataFrame(case, columns=["a", "b"]) for case in values]
    with pytest.raises(ValueError, match=r"series 0 is a DataFrame.*to_numpy\(\)\.T"):
        SeriesToTokens().fit(frames)
    encoder = SeriesToTokens().fit(values.transpose(0, 2, 1))
    with pytest.raises(ValueError, match="series 0 is a DataFrame"):
        encoder.transform(frames)
    fixed = [df.to_numpy().T for df in frames]
    np.testing.assert_array_equal(encoder.transform(fixed), values)
    # one univariate series per case as a pandas Series still works
    univariate = [pd.Series(case[:, 0]) for case in values]
    assert SeriesToTokens().fit_transform(univariate).shape == (3, 5, 1)


@pytest.mark.parametrize(
    "transformer, params",
    [
        (PositionalEncoding(), {"constant": False}),
        (PositionalEncoding(constant=False), {"constant": True}),
        (SeriesToTokens(), {"window": 2}),
    ],
)
def test_parameters_that_set_the_token_dimension_changed_after_fit_are_named(
    transformer, params
):
    """PositionalEncoding(constant=...) changed after fit failed in numpy ("could
    not broadcast input array from shape (5,5) into shape (4,5,6)");
    SeriesToTokens(window=...) returned tokens of another dimension than its
    token_dim_out_, and names of the fitted window."""
    X = np.random.default_rng(0).normal(size=(4, 5, 2))
    fitted = transformer.fit(X).set_params(**params)
    name = next(iter(params))
    with pytest.raises(ValueError, match=f"{name}=.* was set after fit.*fit"):
        fitted.transform(X)
    with pytest.raises(ValueError, match=f"{name}=.* was set after fit"):
        fitted.get_feature_names_out()
    refitted = fitted.fit(X)
    assert refitted.transform(X).shape[2] == refitted.token_dim_out_
