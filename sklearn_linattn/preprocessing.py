"""From a user's own sequences to the input of the attention estimators.

Linear attention sees a sequence only through ``S = Z^T Z`` and the query ``q = Z[-1]``
(see the theory page of the documentation, or Yau et al. 2025). Three consequences
shape real data, and this module has a tool for each:

- ``S`` is a sum over tokens, so **zero tokens change nothing** and variable-length
  sequences are padded with zero tokens on the left (:func:`pad_sequences`).
- ``S`` forgets the **order** of the context tokens, and the model is a homogeneous
  cubic (no constant, linear or quadratic terms). :class:`PositionalEncoding` appends
  position features (counted from the query, or from the start of the sequence) and a
  constant feature, which restore both.
- The model has ``p = d^2 (d + 1) / 2`` lifted features for tokens of dimension ``d``.
  :class:`TokenwiseTransformer` applies any scikit-learn transformer token by token
  (``StandardScaler`` to scale, ``PCA`` to reduce ``d``), fitted on the real tokens.

Every transformer takes 3-D sequences ``(n_samples, n_tokens, token_dim)`` or 2-D rows
``(n_samples, n_tokens * token_dim)`` flattened token by token (pass ``token_dim``),
returns the same layout, and keeps padding tokens (the all-zero tokens before the
first non-zero one) all zero.
"""

import warnings
from numbers import Integral, Number

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import (
    check_array,
    check_is_fitted,
)

from ._data import check_allocation
from ._validation import (
    BooleanRefusingParamsMixin,
    _converted_to_float,
    _is_pandas_frame,
    _is_pandas_series,
    _refuse_complex,
    _refuse_dates,
    as_array,
    caller_stacklevel,
    check_input_features,
    is_dask_array,
    reject_boolean_parameters,
    validate_sequences,
)

__all__ = [
    "PositionalEncoding",
    "SeriesToTokens",
    "TokenwiseTransformer",
    "pad_sequences",
]


def pad_sequences(sequences, max_len=None, truncating="pre", dtype=float):
    """Left-pad a list of variable-length sequences with zero tokens into a 3-D array.

    Zero tokens add nothing to ``S = Z^T Z``, and padding on the left keeps each
    sequence's query (its last token) last, so a padded sequence has exactly the
    lifted features of the original one.

    Parameters
    ----------
    sequences : list of array-like of shape (n_tokens_i, token_dim)
        Sequences of any lengths, tokens as rows, the query last. One-dimensional
        sequences of shape ``(n_tokens_i,)`` are sequences of scalar tokens
        (``token_dim=1``); an empty one (no token) takes the others' token
        dimension and is padding throughout.
    max_len : int, default=None
        Length of the output; None uses the longest sequence.
    truncating : {"pre", "post"}, default="pre"
        Which tokens to drop from sequences longer than ``max_len``: ``"pre"`` drops
        the earliest ones (the query is kept), ``"post"`` the last ones.
    dtype : data-type, default=float
        Data type of the output.

    Returns
    -------
    padded : ndarray of shape (n_samples, max_len, token_dim)
        Sequence ``i`` in the last ``min(n_tokens_i, max_len)`` rows of
        ``padded[i]``, zeros before it.

    Raises
    ------
    ValueError
        When ``sequences`` is empty, a sequence is not 1-D or 2-D, token dimensions
        differ, or ``max_len`` / ``truncating`` are invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn.preprocessing import pad_sequences
    >>> padded = pad_sequences([np.ones((2, 3)), np.full((4, 3), 2.0)])
    >>> padded.shape
    (2, 4, 3)
    >>> padded[0]
    array([[0., 0., 0.],
           [0., 0., 0.],
           [1., 1., 1.],
           [1., 1., 1.]])
    >>> pad_sequences([[1, 2, 3], [4]], max_len=2)[:, :, 0]  # scalar tokens
    array([[2., 3.],
           [0., 4.]])
    """
    # (a dict was read as the list of its keys, a DataFrame as its column
    # labels: "sequence 0 has shape ()")
    frame = _is_pandas_frame(sequences)
    if isinstance(sequences, (str, bytes, dict)) or sp.issparse(sequences) or frame:
        raise TypeError(
            "sequences must be a list of arrays of shape (n_tokens_i, token_dim), "
            f"got {type(sequences).__name__}"
            + (" (one sequence? pass [df])." if frame else ".")
        )
    try:
        sequences = list(sequences)
    except TypeError:
        raise TypeError(
            "sequences must be a list of arrays of shape (n_tokens_i, token_dim), "
            f"got {type(sequences).__name__}."
        ) from None
    if not sequences:
        raise ValueError("sequences is empty; pass at least one sequence.")
    if max_len is not None and (
        not isinstance(max_len, Integral) or isinstance(max_len, bool) or max_len < 1
    ):
        raise ValueError(
            f"max_len must be a positive integer or None, got {max_len!r}."
        )
    if truncating not in ("pre", "post"):
        raise ValueError(f"truncating must be 'pre' or 'post', got {truncating!r}.")

    arrays = []
    for i, sequence in enumerate(sequences):
        if sp.issparse(sequence):
            raise TypeError(f"sequence {i} is a sparse matrix; pass a dense array.")
        if np.iscomplexobj(sequence) and np.issubdtype(dtype, np.number) and not (
            np.issubdtype(dtype, np.complexfloating)
        ):
            raise ValueError(
                f"sequence {i} is complex; complex data is not supported (the "
                "estimators refuse it): pass the real parts, or real and "
                "imaginary parts as features."
            )
        kind = getattr(getattr(sequence, "dtype", None), "kind", None)
        if kind in ("M", "m"):  # (numpy casts them to counts since 1970, silently)
            raise ValueError(
                f"sequence {i} has dtype {sequence.dtype}: dates and durations are "
                "not numbers here; convert them to real numbers explicitly first."
            )
        try:
            with np.errstate(invalid="ignore"):  # (casts to integers: refused below)
                array = np.asarray(sequence, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as error:
            raise ValueError(
                f"sequence {i} could not be converted to an array of {dtype}: {error}"
            ) from None
        if array.dtype.kind in "iub":  # (numpy's cast truncates 0.5 to 0, silently)
            values = np.asarray(sequence)
            if values.dtype.kind in "fc" and not np.array_equal(values, array):
                raise ValueError(
                    f"sequence {i} has values that dtype={np.dtype(dtype).name} "
                    "would change (fractions truncated, or beyond its range); "
                    "pass dtype=float."
                )
        if array.ndim == 1 and array.size == 0:
            arrays.append(None)  # no token: its dimension is the others'
            continue
        if array.ndim == 1:
            array = array.reshape(-1, 1)
        if array.ndim != 2:
            raise ValueError(
                f"sequence {i} has shape {array.shape}; each sequence must have shape "
                "(n_tokens_i, token_dim) (or (n_tokens_i,) for scalar tokens)."
            )
        arrays.append(array)
    given = [(i, array) for i, array in enumerate(arrays) if array is not None]
    if not given:
        raise ValueError("every sequence is empty; pass at least one token.")
    dims = {array.shape[1] for _, array in given}
    if len(dims) > 1:
        (first, shape), *others = [(i, array.shape) for i, array in given]
        other, other_shape = next(item for item in others if item[1][1] != shape[1])
        hint = ""
        if len({array.shape[0] for _, array in given}) == 1:
            hint = (
                f" All have {shape[0]} rows, as time series laid out (n_channels, "
                "n_timepoints_i) have (aeon's and sktime's layout): tokens are the "
                "time steps, so pass [s.T for s in sequences], or use "
                "SeriesToTokens().fit_transform(sequences)."
            )
        raise ValueError(
            f"sequences have different token dimensions: sequence {first} has shape "
            f"{shape}, sequence {other} has shape {other_shape}. Every token needs "
            "the same token_dim (sequences are (n_tokens_i, token_dim), tokens as "
            "rows)." + hint
        )
    token_dim = dims.pop()
    if token_dim == 0:
        i, array = given[0]
        raise ValueError(
            f"sequence {i} has shape {array.shape}: tokens of dimension 0; each "
            "token needs at least one feature."
        )
    arrays = [
        np.zeros((0, token_dim), dtype=dtype) if array is None else array
        for array in arrays
    ]
    length = max(a.shape[0] for a in arrays) if max_len is None else int(max_len)
    if length == 0:
        raise ValueError("every sequence is empty; pass at least one token.")
    check_allocation("pad_sequences", {"padded": (len(arrays), length, token_dim)})
    padded = np.zeros((len(arrays), length, token_dim), dtype=dtype)
    for i, array in enumerate(arrays):
        kept = array[-length:] if truncating == "pre" else array[:length]
        if len(kept):
            padded[i, length - len(kept) :] = kept
    return padded


_SERIES_LAYOUT = (
    "Expected time series as a 3-D array (n_cases, n_channels, n_timepoints), "
    "2-D rows (n_cases, n_timepoints) of univariate series, or a list of arrays "
    "(n_channels, n_timepoints_i)"
)
_NAN_PADDING_HINT = (
    " Series of different lengths padded with NaN go in as a list of arrays of "
    "shape (n_channels, n_timepoints_i), each without its padding."
)


def _ragged_series(items):
    """A list of series as float64 arrays of shape (n_channels, n_timepoints_i)
    (1-D items are univariate series)."""
    series = []
    for i, item in enumerate(items):
        if sp.issparse(item):
            raise TypeError(f"series {i} is a sparse matrix; pass a dense array.")
        if _is_pandas_frame(item):
            # (read as (n_channels, n_timepoints_i), transposed without a word)
            raise ValueError(
                f"series {i} is a DataFrame: sktime's df-list holds one per case "
                "with the time points as rows, (n_timepoints_i, n_channels), the "
                "transpose of the layout read here, (n_channels, n_timepoints_i). "
                "Pass [df.to_numpy().T for df in X] (or [df.to_numpy() for df in "
                "X] if their rows are the channels)."
            )
        if np.iscomplexobj(item):
            raise ValueError(
                f"series {i} is complex; complex data is not supported (the "
                "estimators refuse it): pass the real parts, or real and "
                "imaginary parts as channels."
            )
        _refuse_dates(f"series {i}", item)
        try:
            array = np.asarray(item, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"series {i} could not be converted to an array of floats: {error}"
            ) from None
        if array.ndim == 1:
            array = array[None, :]
        if array.ndim != 2:
            raise ValueError(
                f"series {i} has shape {array.shape}; each series must have shape "
                "(n_channels, n_timepoints_i), or (n_timepoints_i,) if univariate."
            )
        if not np.all(np.isfinite(array)):
            raise ValueError(
                f"series {i} contains NaN or infinity." + _NAN_PADDING_HINT
            )
        series.append(array)
    return series


class SeriesToTokens(TransformerMixin, BooleanRefusingParamsMixin, BaseEstimator):
    """Time series in the toolkits' channels-first layout as token sequences.

    aeon and sktime hold a collection of time series as an array ``(n_cases,
    n_channels, n_timepoints)``, or, for series of different lengths, as a list of
    arrays ``(n_channels, n_timepoints_i)``. The estimators read tokens as rows,
    ``(n_samples, n_tokens, token_dim)``: this transformer makes each time step a
    token (its channels the token's features), or, with ``window=k``, each ``k``
    consecutive time steps one token of ``k * n_channels`` features, and left-pads
    shorter series with zero tokens (:func:`pad_sequences`), so that each query, the
    most recent token, stays last. The next steps read leading zero tokens as that
    padding: for series of one length whose values can be 0 (counts), pass them
    ``padding=None``.

    A univariate series gives tokens of dimension ``window``. Scalar tokens
    (``window=1``) leave the model a single lifted feature, ``sum_t z_t^2 z_last``:
    group values (``window=4`` gives ``p = 40``) or append positions
    (:class:`PositionalEncoding`).

    The three layouts are interchangeable: fitted in one, the transformer takes
    series of any length in any of them, with the channels seen in ``fit`` (rows of
    univariate series fitted as ``(3, 10)`` transform as ``(3, 12)``, ``(3, 1, 10)``
    or a list).

    Parameters
    ----------
    window : int, default=1
        Time steps per token. Token ``t`` of a series holds the time steps ``r + t k``
        to ``r + (t + 1) k - 1`` (``k = window``), time step by time step, all
        channels of a step together (feature ``j * n_channels + c`` is channel ``c``
        of step ``j``); the first ``r = n_timepoints_i mod k`` time steps are
        dropped, so the last token ends with the last time step.
    max_len : int, default=None
        Number of tokens of the output; None uses the longest series of the data
        transformed. Longer series keep their last ``max_len`` tokens.

    Attributes
    ----------
    n_channels_ : int
        Channels of the series seen in ``fit``.
    n_features_in_ : int
        The same number, in every layout: the features of a time step (1 for 2-D
        rows of univariate series, whatever their width). Unlike scikit-learn's
        usual number of columns, it does not fix the width of 2-D rows, which is
        the series' length.
    token_dim_out_ : int
        ``window * n_channels_``, the token dimension of the output.
    n_tokens_ : int
        Number of tokens of the output for the data seen in ``fit``
        (``max_len``, if set); :meth:`get_feature_names_out` names that many.

    See Also
    --------
    pad_sequences : Left-pad sequences whose tokens are already rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn.preprocessing import SeriesToTokens
    >>> # 2 cases, 2 channels, 3 time points
    >>> X = np.arange(12.0).reshape(2, 2, 3)
    >>> SeriesToTokens().fit_transform(X)[0]  # a token per time step
    array([[0., 3.],
           [1., 4.],
           [2., 5.]])
    >>> np.array_equal(SeriesToTokens().fit_transform(X), X.transpose(0, 2, 1))
    True

    Series of different lengths, as a list (each ``(n_channels, n_timepoints_i)``):

    >>> ragged = [np.ones((2, 3)), np.full((2, 1), 7.0)]
    >>> # left-padded with zero tokens
    >>> SeriesToTokens().fit_transform(ragged)[1]
    array([[0., 0.],
           [0., 0.],
           [7., 7.]])

    Univariate series ``(n_cases, n_timepoints)``, two values per token:

    >>> SeriesToTokens(window=2).fit_transform([[1.0, 2.0, 3.0, 4.0, 5.0]])
    array([[[2., 3.],
            [4., 5.]]])

    Fitted on rows of univariate series, it takes them in any layout and length:

    >>> encoder = SeriesToTokens().fit(np.zeros((3, 10)))
    >>> encoder.n_features_in_
    1
    >>> encoder.transform(np.ones((2, 1, 12))).shape
    (2, 12, 1)
    """

    _parameter_constraints = {
        "window": [Interval(Integral, 1, None, closed="left")],
        "max_len": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, window=1, max_len=None):
        self.window = window
        self.max_len = max_len

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the series and learn their number of channels.

        Parameters
        ----------
        X : array-like of shape (n_cases, n_channels, n_timepoints) or \
(n_cases, n_timepoints), or list of array-like of shape (n_channels, n_timepoints_i)
        y : None
            Ignored.

        Returns
        -------
        self : SeriesToTokens
        """
        reject_boolean_parameters(self, ("window",), "an int")
        reject_boolean_parameters(self, ("max_len",))
        series = self._checked_series(X)
        self.n_features_in_ = self.n_channels_ = series[0].shape[0]
        self.token_dim_out_ = self.window * self.n_channels_
        self.n_tokens_ = (
            max(s.shape[1] // self.window for s in series)
            if self.max_len is None
            else self.max_len
        )
        return self

    def transform(self, X):
        """Token sequences of the series, left-padded to one length.

        Parameters
        ----------
        X : array-like of shape (n_cases, n_channels, n_timepoints) or \
(n_cases, n_timepoints), or list of array-like of shape (n_channels, n_timepoints_i)
            Series of any lengths, in any of the layouts, with the channels seen
            in ``fit`` (2-D rows are univariate series, of any width).

        Returns
        -------
        X_tokens : ndarray of shape (n_cases, n_tokens, `token_dim_out_`)
        """
        check_is_fitted(self)
        self._validate_params_used_after_fit(("window", "max_len"))
        _refuse_dataframe_output(
            self,
            " (n_cases, n_tokens, token_dim)",
            "make the tokens before the steps that return DataFrames (Z = "
            "SeriesToTokens().fit_transform(X)) and pass those steps rows "
            "Z.reshape(len(Z), -1) with token_dim=Z.shape[2]",
        )
        self._refuse_changed_window()
        series = self._checked_series(X, self.n_channels_)
        k = self.window
        tokens = [s[:, s.shape[1] % k :].T.reshape(-1, k * s.shape[0]) for s in series]
        return pad_sequences(tokens, max_len=self.max_len)

    def get_feature_names_out(self, input_features=None):
        """Names of the output features, token by token as in the flattened output.

        For ``n_tokens_`` tokens (the output length of the data seen in ``fit``):
        ``token{t}_{channel}`` for ``window=1``; with ``window=k > 1``,
        ``token{t}_{channel}_step{j}``, time step ``j`` (0 to ``k - 1``, oldest
        first) of the token, in the order of the output features (steps, and
        within a step the channels). These are the names the next step of a
        pipeline receives (its input is ``n_tokens_ * token_dim_out_`` features).

        Parameters
        ----------
        input_features : array-like of str, default=None
            Names of the ``n_features_in_`` channels, checked as scikit-learn
            does; None uses ``x0, x1, ...``.

        Returns
        -------
        names : ndarray of str, shape (`n_tokens_` * `token_dim_out_`,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_linattn.preprocessing import SeriesToTokens
        >>> X = np.zeros((4, 2, 4))  # 4 cases, 2 channels, 4 time points
        >>> SeriesToTokens().fit(X).get_feature_names_out()[:4].tolist()
        ['token0_x0', 'token0_x1', 'token1_x0', 'token1_x1']
        >>> encoder = SeriesToTokens(window=2).fit(X)
        >>> encoder.get_feature_names_out(["temp", "wind"]).tolist()
        ['token0_temp_step0', 'token0_wind_step0', 'token0_temp_step1',
         'token0_wind_step1', 'token1_temp_step0', 'token1_wind_step0',
         'token1_temp_step1', 'token1_wind_step1']
        """
        check_is_fitted(self)
        self._refuse_changed_window()
        channels = check_input_features(self, input_features)
        steps = [""] if self.window == 1 else [f"_step{j}" for j in range(self.window)]
        return np.asarray(
            [
                f"token{t}_{channel}{step}"
                for t in range(self.n_tokens_)
                for step in steps
                for channel in channels
            ],
            dtype=object,
        )

    def _refuse_changed_window(self):
        changed = self.window * self.n_channels_ != self.token_dim_out_
        _refuse_changed_since_fit(self, "window", changed)

    def _checked_series(self, X, n_channels=None):
        """The series as a list of arrays (n_channels, n_timepoints_i), each with
        ``n_channels`` channels (None: those of the first) and any number of time
        points; 2-D rows are univariate series, whatever their width."""
        # a 1-D object array or pandas Series holding one series per case
        ragged = (
            isinstance(X, np.ndarray) or _is_pandas_series(X)
        ) and X.dtype == object and X.ndim == 1
        rows = False
        if isinstance(X, (list, tuple)) or ragged:
            series = _ragged_series(X)
            if not series:
                raise ValueError("X holds no series; pass at least one.")
        else:
            ndim = getattr(X, "ndim", None)
            if X is None or isinstance(X, (Number, str, bytes)) or ndim in (0, 1):
                # (scikit-learn: "Expected 2D array, got 1D array instead ...
                # reshape(-1, 1)", which would make series of one time point)
                got = (
                    f"an array of shape {X.shape}"
                    if ndim is not None
                    else type(X).__name__
                )
                raise ValueError(
                    f"{_SERIES_LAYOUT}; got {got}. Reshape your data: one "
                    "univariate series s of shape (n_timepoints,) is s[None]."
                )
            levels = getattr(getattr(X, "index", None), "nlevels", 1)
            if _is_pandas_frame(X) and levels > 1:
                # (its rows, a row per case and time point, were read as cases)
                raise ValueError(
                    f"X is a DataFrame with a {levels}-level row index, as sktime's "
                    "pd-multiindex layout holds series (a row per case and time "
                    "point, the channels as columns), while 2-D rows are read as "
                    "univariate series (n_cases, n_timepoints). Pass one array "
                    "(n_channels, n_timepoints_i) per case: [group.to_numpy().T "
                    "for _, group in X.groupby(level=0, sort=False)]."
                )
            _refuse_dates("X", X)
            _refuse_complex("X", X, "series are real numbers")
            try:
                with _converted_to_float(
                    "X", "an array of shape (n_cases, n_channels, n_timepoints)"
                ):
                    array = check_array(
                        X, allow_nd=True, dtype=np.float64, input_name="X"
                    )
            except ValueError as error:
                if "setting an array element with a sequence" in str(error):
                    # a table of series (sktime's nested DataFrame, say)
                    raise ValueError(
                        "X holds a sequence in each cell (a table of series, as "
                        "sktime's nested DataFrame); pass the series as a 3-D "
                        "array (n_cases, n_channels, n_timepoints) or a list of "
                        "arrays (n_channels, n_timepoints_i), one per case."
                    ) from None
                if "NaN" not in str(error) and "infinity" not in str(error):
                    raise
                raise ValueError(f"{error}{_NAN_PADDING_HINT}") from None
            if array.ndim > 3:
                raise ValueError(
                    f"{_SERIES_LAYOUT}; got an array of shape {array.shape}."
                )
            rows = array.ndim == 2
            series = list(array[:, None, :] if rows else array)
        fitted = n_channels is not None
        n_channels = n_channels if fitted else series[0].shape[0]
        if n_channels == 0:
            raise ValueError(
                f"series 0 has 0 channels (shape {series[0].shape}): series are "
                "(n_channels, n_timepoints_i) with at least one channel."
            )
        for i, s in enumerate(series):
            if s.shape[0] != n_channels:
                raise ValueError(
                    f"series {i} has {s.shape[0]} channel(s) (shape {s.shape}), "
                    f"expected {n_channels}"
                    + (", the channels seen in fit" if fitted else "")
                    + ": series are (n_channels, n_timepoints_i)."
                    + (_ROWS_ARE_UNIVARIATE if rows else _tokens_as_rows_hint(series))
                )
            if s.shape[1] < self.window:
                raise ValueError(
                    f"series {i} has {s.shape[1]} time point(s) (n_features="
                    f"{s.shape[1]}), fewer than window={self.window}: it would have "
                    "no token."
                )
        return series

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags


_ROWS_ARE_UNIVARIATE = (
    " 2-D rows (n_cases, n_timepoints) are univariate series; pass multivariate "
    "ones as (n_cases, n_channels, n_timepoints)."
)


def _tokens_as_rows_hint(series):
    """A hint when ragged series look like tokens-as-rows arrays instead."""
    if len({s.shape[1] for s in series}) == 1 and len(series) > 1:
        return (
            f" All have {series[0].shape[1]} columns, as sequences with tokens as "
            "rows (n_tokens_i, token_dim) have: pass them to pad_sequences instead, "
            "or pass [s.T for s in X]."
        )
    return ""


# PositionalEncoding's n_positions=None: one per token seen in fit, at most this many.
_DEFAULT_MAX_POSITIONS = 8


def _padding_mask(sequences, padding):
    """True for the tokens that are real, False for left padding (the all-zero tokens
    before the first token with a non-zero entry); all True with ``padding=None``."""
    if padding is None:
        return np.ones(sequences.shape[:2], dtype=bool)
    nonzero = np.any(sequences != 0, axis=2)
    return np.logical_or.accumulate(nonzero, axis=1)


# What the warning of _warn_if_all_padding says (a rollout from an empty prompt,
# generate_pipeline, leaves it out).
ALL_PADDING_WARNING = r".* as left padding throughout"


def _warn_if_all_padding(real, step):
    """Warn where ``padding="left"`` reads whole sequences as padding (``real``, the
    mask of :func:`_padding_mask`, has no token in them): the model sees an empty
    sequence, whose prediction is its intercept alone, whatever the data were.
    Padded sequences are empty only where the sequences were (an empty prompt);
    fixed-length windows of a series that can be 0 (counts) are, and such
    windows' leading zero tokens are read as padding too."""
    empty = int(np.sum(~np.any(real, axis=1)))
    if not empty:
        return
    warnings.warn(
        f"{step} (padding='left') reads {empty} of {len(real)} sequences as left "
        "padding throughout: every token is all zero, so they keep no position, "
        "constant or transformed features and the model sees empty sequences (it "
        "predicts its intercept for them). Unless they are empty on purpose, the "
        "zeros are values (fixed-length windows of a series that can be 0, counts "
        "for example): pass padding=None to PositionalEncoding and "
        "TokenwiseTransformer.",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )


class _TokenTransformerMixin:
    """Input handling shared by the tokenwise transformers: 3-D sequences or 2-D rows
    with ``token_dim``, the same layout out, ``n_features_in_`` as the estimators."""

    def _validate_tokens(self, X, reset):
        """Return ``(sequences, was_2d)``, sequences of shape (n, n_tokens, d)."""
        if reset:
            reject_boolean_parameters(self, ("token_dim",))
        if sp.issparse(X):
            raise TypeError(
                f"Sparse input is not supported by {type(self).__name__}: sequences "
                "are dense token matrices of shape (n_samples, n_tokens, token_dim); "
                "convert with X.toarray()."
            )
        if is_dask_array(X):
            raise TypeError(
                f"{type(self).__name__} takes sequences in memory, not a Dask array: "
                "transform each block (X.map_blocks(transformer.transform, ...), "
                "chunked along samples only) or compute X first."
            )
        if not hasattr(X, "ndim"):
            X = as_array(X)  # (lists; a string or a dict is refused as 0-D)
        # the estimators' checks and messages, n_features_in_ and
        # feature_names_in_ as they set them, without their layout warnings
        # (which are about the lifted features)
        sequences = validate_sequences(
            X,
            token_dim=self.token_dim if reset else self.token_dim_,
            estimator=self,
            reset=reset,
            warn_layout=False,
        )
        return sequences, X.ndim == 2

    def _fitted_layout(self, sequences):
        self.token_dim_ = sequences.shape[2]
        self.n_tokens_ = sequences.shape[1]

    def _output(self, sequences, was_2d):
        if was_2d:
            return sequences.reshape(len(sequences), -1)
        _refuse_dataframe_output(
            self,
            " for 3-D input",
            "pass the sequences as rows of shape (n_samples, n_tokens * token_dim) "
            "and set token_dim",
        )
        return sequences

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags

    def _token_names(self, input_features):
        """The names of each token's features, one list per token (in this
        module's names ``token{t}_{feature}``, the ``{feature}`` part).

        Input names are checked as scikit-learn does (``_check_feature_names_in``);
        a ``token{t}_`` prefix that all of token ``t``'s names carry (the names of
        a previous step of this module) is dropped, so that names do not grow
        along a pipeline. Without names, a token's features are ``x0, x1, ...``.
        """
        names = check_input_features(self, input_features)
        d = self.token_dim_
        if input_features is None and not hasattr(self, "feature_names_in_"):
            return [[f"x{j}" for j in range(d)]] * self.n_tokens_
        return [
            _without_token_prefix(names[t * d : (t + 1) * d], t)
            for t in range(self.n_tokens_)
        ]


def _without_token_prefix(names, t):
    """``names`` without the prefix ``token{t}_``, if every one of them has it."""
    prefix = f"token{t}_"
    if all(str(name).startswith(prefix) for name in names):
        return [str(name)[len(prefix) :] for name in names]
    return [str(name) for name in names]


def _refuse_changed_since_fit(estimator, name, changed):
    """Raise when parameter ``name``, which sets ``token_dim_out_``, was changed
    by ``set_params`` after ``fit`` (``changed``): the output would not have the
    token dimension the fit reported (for ``PositionalEncoding``'s ``constant``,
    numpy failed with "could not broadcast input array")."""
    if changed:
        raise ValueError(
            f"{name}={getattr(estimator, name)!r} was set after fit, which gave "
            f"token_dim_out_={estimator.token_dim_out_} with another value; fit "
            f"{type(estimator).__name__} again."
        )


def _refuse_dataframe_output(estimator, when, fix):
    """Raise when ``set_output`` asks for a DataFrame and the output is 3-D."""
    container = _get_output_config("transform", estimator)["dense"]
    if container != "default":
        raise ValueError(
            f"{type(estimator).__name__} returns 3-D sequences{when}, which a "
            f"{container} DataFrame cannot hold. With set_output(transform="
            f"'{container}'), {fix}; or use set_output(transform='default')."
        )


class PositionalEncoding(
    _TokenTransformerMixin, TransformerMixin, BooleanRefusingParamsMixin, BaseEstimator
):
    """Append position features, counted from the query or the start, and a constant.

    Linear attention forgets the order of the context tokens: ``S = Z^T Z`` is the
    same for any permutation of them. Appending to each token the features of its
    position makes ``S`` record which token sat where (its entries ``S[x_j,
    position_k]`` are the token at position ``k``), so the model can use order. A
    constant feature 1 in every token adds lower-degree terms the homogeneous cubic
    lacks: besides ``S[b, c] q[e]`` the model then has the features ``S[b, c]``,
    ``s[b] q[e]``, ``s[b]``, ``n q[e]`` and ``n`` (``s`` the sum of the tokens, ``n``
    their number). See the model in Yau et al. (2025) and the documentation's guide
    page "Your own sequences".

    Positions are counted **from the query** by default: the last token is position
    0, the one before it position 1, and so on, so left-padded sequences of different
    lengths line up at their queries. With ``origin="start"`` they are counted from the
    first token of the sequence (its first non-padding token): a token's features
    then never change when tokens are appended after it, as in a rollout
    (:func:`~sklearn_linattn.generate_pipeline`) or a fit with ``positions="all"``,
    whose output at a position sees the position features of that prefix alone.
    Padding tokens (the all-zero tokens before the first non-zero one) stay all
    zero, position features included, so they still change nothing.

    Parameters
    ----------
    kind : {"onehot", "sinusoidal"}, default="onehot"
        ``"onehot"``: one indicator per position; tokens at position
        ``n_positions`` or beyond get zero position features. ``"sinusoidal"``:
        the transformer encoding ``sin(k w_i)``, ``cos(k w_i)`` with frequencies
        ``w_i = 10000^(-2i / n_positions)``, defined for any position ``k``.
    n_positions : int, default=None
        Number of position features. None uses the number of tokens seen in
        ``fit``, at most 8: one-hot positions then tell apart the query and the 7
        tokens before it (with ``origin="start"``, the first 8 tokens), and longer
        sequences do not grow the token dimension (with one position per token,
        100 tokens of 6 features and the constant would give ``d = 107``,
        ``p = 618,246`` lifted features). 0 appends none (the constant alone,
        with ``constant=True``); 1 marks the query (or the first token). Choose
        the number of positions the task needs (each adds one to ``d``).
    constant : bool, default=True
        Also append a feature equal to 1 (0 for padding tokens): it gives the
        homogeneous cubic its constant, linear and quadratic terms, and lets a
        centering step before it (``TokenwiseTransformer(StandardScaler())``)
        lose nothing. ``False`` appends the positions alone.
    token_dim : int, default=None
        Dimension of a token, needed for 2-D ``X`` (rows flattened token by token).
        With None a 2-D row is one token; 3-D input gives it itself.
    padding : {"left"} or None, default="left"
        ``"left"``: the all-zero tokens before the first non-zero token are padding
        and stay zero (a sequence of zero tokens only warns: it is read as empty).
        None: every token is real (for fixed-length data whose first tokens may
        legitimately be zero, e.g. blank image rows or windows of counts).
    origin : {"query", "start"}, default="query"
        Where position 0 is: ``"query"``, the last token (positions count back
        from it); ``"start"``, the sequence's first token, its first non-padding
        one with ``padding="left"`` (positions count forward). Use ``"start"``
        to roll a pipeline out with :func:`~sklearn_linattn.generate_pipeline`
        or to train on every position.

    Attributes
    ----------
    n_positions_ : int
        Number of position features appended.
    token_dim_ : int
        Token dimension of the input.
    token_dim_out_ : int
        Token dimension of the output: ``token_dim_ + n_positions_ + constant``;
        pass it as ``token_dim`` to the next step when working on 2-D rows.
    n_tokens_ : int
        Number of tokens seen in ``fit`` (any number is accepted in ``transform``).
    n_features_in_ : int
        ``n_tokens * token_dim`` of the data seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` had string column names.

    See Also
    --------
    pad_sequences : Left-pad variable-length sequences with zero tokens.
    TokenwiseTransformer : Apply a scikit-learn transformer token by token.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn.preprocessing import PositionalEncoding
    >>> # a padding token, a token, the query
    >>> X = np.array([[[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]]])
    >>> # z, then positions 0 to 2, then the constant
    >>> PositionalEncoding().fit_transform(X)[0]
    array([[0., 0., 0., 0., 0., 0.],
           [1., 2., 0., 1., 0., 1.],
           [3., 4., 1., 0., 0., 1.]])

    The padding token stays zero; the query is position 0. Counted from the start,
    the first real token is position 0 instead:

    >>> PositionalEncoding(origin="start").fit_transform(X)[0]
    array([[0., 0., 0., 0., 0., 0.],
           [1., 2., 1., 0., 0., 1.],
           [3., 4., 0., 1., 0., 1.]])

    In a pipeline (``d = 2 + 5 + 1``, ``p = 288`` lifted features):

    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_linattn import LinearAttentionRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 5, 2))
    >>> y = X[:, 1, 0]  # the token at a fixed position
    >>> model = make_pipeline(
    ...     PositionalEncoding(), LinearAttentionRegressor(n_heads=None)
    ... ).fit(X, y)
    >>> round(model.score(X, y), 6)
    1.0
    """

    _parameter_constraints = {
        "kind": [StrOptions({"onehot", "sinusoidal"})],
        "n_positions": [Interval(Integral, 0, None, closed="left"), None],
        "constant": ["boolean"],
        "token_dim": [Interval(Integral, 1, None, closed="left"), None],
        "padding": [StrOptions({"left"}), None],
        "origin": [StrOptions({"query", "start"})],
    }

    def __init__(
        self,
        kind="onehot",
        n_positions=None,
        constant=True,
        token_dim=None,
        padding="left",
        origin="query",
    ):
        self.kind = kind
        self.n_positions = n_positions
        self.constant = constant
        self.token_dim = token_dim
        self.padding = padding
        self.origin = origin

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the token dimension and, when ``n_positions=None``, the length.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        y : None
            Ignored.

        Returns
        -------
        self : PositionalEncoding
        """
        reject_boolean_parameters(self, ("n_positions",))
        sequences, _ = self._validate_tokens(X, reset=True)
        self._fitted_layout(sequences)
        self.n_positions_ = (
            min(sequences.shape[1], _DEFAULT_MAX_POSITIONS)
            if self.n_positions is None
            else self.n_positions
        )
        self.token_dim_out_ = self.token_dim_ + self.n_positions_ + int(self.constant)
        return self

    def _positions(self, real):
        """The position of every token, from the mask of real (non-padding)
        tokens: shape (n_samples, n_tokens), or (n_tokens,) when it is the same
        for every sequence."""
        if self.origin == "start":
            return np.cumsum(real, axis=1) - 1  # padding: -1, masked anyway
        return np.arange(real.shape[1])[::-1]  # the same for every sequence

    def _position_features(self, positions):
        """Features of integer ``positions`` (any shape), shape ``(*positions.shape,
        n_positions_)``."""
        positions = np.asarray(positions)
        if self.kind == "onehot":
            return (positions[..., None] == np.arange(self.n_positions_)).astype(float)
        i = np.arange(self.n_positions_)
        frequencies = 10000.0 ** (-2 * (i // 2) / self.n_positions_)
        angles = positions[..., None] * frequencies
        return np.where(i % 2 == 0, np.sin(angles), np.cos(angles))

    def _extra_features(self, positions):
        """Position and constant features of tokens at ``positions``."""
        extra = self._position_features(positions)
        if self.constant:
            extra = np.concatenate([extra, np.ones(extra.shape[:-1] + (1,))], axis=-1)
        return extra

    def transform(self, X):
        """Append position (and constant) features to every non-padding token.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            Any number of tokens for 3-D input; the width seen in ``fit`` for 2-D.

        Returns
        -------
        X_out : ndarray of shape (n_samples, n_tokens, `token_dim_out_`) or \
(n_samples, n_tokens * `token_dim_out_`)
            The same layout as ``X``.
        """
        check_is_fitted(self)
        self._validate_params_used_after_fit(("kind", "constant", "padding", "origin"))
        self._refuse_changed_constant()
        sequences, was_2d = self._validate_tokens(X, reset=False)
        n_samples, n_tokens, _ = sequences.shape
        # the output, and the position features before they are copied in
        check_allocation(
            "PositionalEncoding.transform",
            {"X_out": (n_samples, n_tokens, self.token_dim_out_)},
            peak=2,
        )
        real = _padding_mask(sequences, self.padding)
        if self.padding is not None:
            _warn_if_all_padding(real, "PositionalEncoding")
        out = np.empty((n_samples, n_tokens, self.token_dim_out_))
        out[:, :, : self.token_dim_] = sequences
        out[:, :, self.token_dim_ :] = self._extra_features(self._positions(real))
        out[~real] = 0.0
        return self._output(out, was_2d)

    def _refuse_changed_constant(self):
        appended = self.token_dim_out_ - self.token_dim_ - self.n_positions_
        _refuse_changed_since_fit(self, "constant", int(self.constant) != appended)

    def _extra_names(self):
        """Names of the position and constant features of a token."""
        self._refuse_changed_constant()
        if self.kind == "onehot":
            names = [f"position{k}" for k in range(self.n_positions_)]
        else:
            names = [
                f"position_{'sin' if i % 2 == 0 else 'cos'}{i // 2}"
                for i in range(self.n_positions_)
            ]
        return names + ["constant"] * int(self.constant)

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns, token by token as in the flattened output.

        For the layout seen in ``fit`` (``n_tokens_`` tokens), token ``t`` has
        ``token{t}_{name}`` for each of its input features, then its position
        features, ``token{t}_position{k}`` (one-hot: the token is at position
        ``k``, counted from ``origin``) or ``token{t}_position_sin{i}`` and
        ``token{t}_position_cos{i}`` (sinusoidal, frequency ``i``), then
        ``token{t}_constant``.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Names of the ``n_features_in_`` input columns, checked as scikit-learn
            does: None uses ``feature_names_in_``, or ``x0, x1, ...`` for each
            token's features. A ``token{t}_`` prefix on all of token ``t``'s names
            (those of a previous step of this module) is not repeated.

        Returns
        -------
        names : ndarray of str, shape (`n_tokens_` * `token_dim_out_`,)

        Raises
        ------
        ValueError
            When an input name is one of the names of the appended features (the
            input already has a ``constant`` feature, say, from another
            ``PositionalEncoding``): the names would not be unique.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_linattn.preprocessing import PositionalEncoding
        >>> encoder = PositionalEncoding(n_positions=1).fit(np.ones((3, 2, 1)))
        >>> encoder.get_feature_names_out().tolist()
        ['token0_x0', 'token0_position0', 'token0_constant',
         'token1_x0', 'token1_position0', 'token1_constant']
        """
        check_is_fitted(self)
        extra = self._extra_names()
        names = []
        for t, features in enumerate(self._token_names(input_features)):
            clash = sorted(set(features) & set(extra))
            if clash:
                raise ValueError(
                    f"The input features of token {t} include {clash}, names of "
                    f"the features {type(self).__name__} appends, so the output "
                    "names would not be unique. Rename them, or drop the repeated "
                    "features (a second constant, say) from the earlier step."
                )
            names.extend(f"token{t}_{name}" for name in features + extra)
        return np.asarray(names, dtype=object)


# Tokens on which TokenwiseTransformer checks that a constant feature survives.
_CONSTANT_CHECK_TOKENS = 256


def _spans_constant(features):
    """Whether a linear combination of the columns is 1 on every row (to 1e-8)."""
    ones = np.ones(len(features))
    coef = np.linalg.lstsq(features, ones, rcond=None)[0]
    return bool(np.linalg.norm(features @ coef - ones) <= 1e-8 * np.sqrt(len(ones)))


def _inner_has(attribute):
    def check(self):
        return hasattr(self.transformer, attribute)

    return check


def _dense(transformed, transformer):
    """A transformer's output as a dense array (sparse matrices too); complex
    output is refused (assigned into real tokens it would lose its imaginary
    part)."""
    if sp.issparse(transformed):
        transformed = transformed.toarray()
    transformed = np.asarray(transformed)
    if np.iscomplexobj(transformed):
        raise ValueError(
            f"{type(transformer).__name__} returned complex values: tokens are "
            "real (return the real and imaginary parts as features)."
        )
    return transformed


class TokenwiseTransformer(
    _TokenTransformerMixin, TransformerMixin, BooleanRefusingParamsMixin, BaseEstimator
):
    """Apply a scikit-learn transformer to every token, fitted on the real tokens.

    Flattened rows mix tokens: ``StandardScaler`` on ``(n_samples, n_tokens *
    token_dim)`` scales every position separately and turns zero padding into
    non-zero tokens. This wrapper instead treats every non-padding token of every
    sequence as one sample: it fits ``transformer`` on those tokens and transforms each
    token with it, leaving padding tokens all zero. Use it to scale tokens
    (``StandardScaler``), or to reduce the token dimension ``d`` (``PCA``): the
    model has ``d^2 (d + 1) / 2`` lifted features, so ``d = 64`` already gives
    133,120 and ``d = 16`` only 2,176.

    Centering transformers (``StandardScaler``, ``PCA``) shift every token by a
    constant vector, and attention is a homogeneous cubic of the tokens: the shifted
    tokens need a constant feature (``PositionalEncoding(constant=True)`` after this
    step, since ``[A z + b; 1]`` is a linear map of ``[z; 1]``) to express the same
    functions. Linear ones (``StandardScaler(with_mean=False)``, ``TruncatedSVD``)
    do not. The order matters: a centering step **after** the constant maps it to
    0 (a ``UserWarning`` says so when the input tokens span a constant and the
    output ones do not).

    Parameters
    ----------
    transformer : transformer instance
        Any scikit-learn transformer taking ``(n_tokens_total, token_dim)``; it is
        cloned and fitted on the tokens (``y`` is not passed to it).
    token_dim : int, default=None
        Dimension of a token, needed for 2-D ``X`` (rows flattened token by token).
        With None a 2-D row is one token; 3-D input gives it itself.
    padding : {"left"} or None, default="left"
        ``"left"``: the all-zero tokens before the first non-zero token are padding,
        left out of the fit and kept zero (a real token mapped to all zeros at the
        start of its sequence warns: the next steps read it as padding; so does a
        sequence of zero tokens only, read as empty). None: every token is real.

    Attributes
    ----------
    transformer_ : transformer instance
        The fitted clone of ``transformer``.
    token_dim_ : int
        Token dimension of the input.
    token_dim_out_ : int
        Token dimension of the output; pass it as ``token_dim`` to the next step when
        working on 2-D rows.
    n_tokens_ : int
        Number of tokens seen in ``fit`` (any number is accepted in ``transform``).
    n_features_in_ : int
        ``n_tokens * token_dim`` of the data seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` had string column names.

    See Also
    --------
    PositionalEncoding : Append position features and a constant.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_linattn.preprocessing import (
    ...     TokenwiseTransformer, pad_sequences)
    >>> rng = np.random.default_rng(0)
    >>> X = pad_sequences([rng.normal(size=(n, 32)) for n in (3, 5, 8)])
    >>> reduce = TokenwiseTransformer(PCA(n_components=4)).fit(X)
    >>> reduce.transform(X).shape
    (3, 8, 4)
    >>> bool(np.all(reduce.transform(X)[0, :5] == 0))  # padding stays zero
    True
    >>> scaled = TokenwiseTransformer(StandardScaler()).fit_transform(X)
    >>> bool(np.allclose(scaled[X.any(axis=2)].std(axis=0), 1))
    True
    """

    _parameter_constraints = {
        "transformer": [HasMethods(["fit", "transform"])],
        "token_dim": [Interval(Integral, 1, None, closed="left"), None],
        "padding": [StrOptions({"left"}), None],
    }

    def __init__(self, transformer, token_dim=None, padding="left"):
        self.transformer = transformer
        self.token_dim = token_dim
        self.padding = padding

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Fit the transformer on all non-padding tokens.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        y : None
            Ignored (tokens have no targets).

        Returns
        -------
        self : TokenwiseTransformer
        """
        sequences, _ = self._validate_tokens(X, reset=True)
        self._fitted_layout(sequences)
        tokens = sequences[_padding_mask(sequences, self.padding)]
        if len(tokens) == 0:
            raise ValueError(
                "X has no non-padding tokens (every token is all zero); "
                f"{type(self).__name__} needs real tokens to fit the transformer."
            )
        self.transformer_ = clone(self.transformer).fit(tokens)
        probe = _dense(self.transformer_.transform(tokens[:1]), self.transformer)
        if probe.ndim != 2 or probe.shape[0] != 1 or probe.shape[1] == 0:
            raise ValueError(
                f"{type(self.transformer).__name__} must map tokens of shape "
                f"(n, {self.token_dim_}) to (n, k), k >= 1; it returned shape "
                f"{probe.shape}."
            )
        self.token_dim_out_ = probe.shape[1]
        self._warn_if_constant_lost(tokens[:_CONSTANT_CHECK_TOKENS])
        return self

    def _warn_if_constant_lost(self, tokens):
        """Warn when the tokens' indicator features (0 or 1 on every token) span a
        constant (the feature 1 that ``PositionalEncoding(constant=True)``
        appends, one-hot positions) and the transformed features do not:
        centering maps a constant feature to 0. Other constants are the data's
        own (a channel stuck at one value), kept out: in the documented order
        the warning would blame a constant appended after this step. Checked on a
        sample of tokens: a constant outside their span is outside the span of
        all tokens (and with no more tokens than features, the span says
        nothing)."""
        indicators = tokens[:, np.all((tokens == 0) | (tokens == 1), axis=0)]
        if len(tokens) <= tokens.shape[1] or not indicators.shape[1]:
            return
        if not _spans_constant(indicators):
            return
        transformed = _dense(self.transformer_.transform(tokens), self.transformer)
        if _spans_constant(np.asarray(transformed, dtype=np.float64)):
            return
        name = type(self.transformer).__name__
        warnings.warn(
            "The tokens' features include a constant (the feature 1 of "
            "PositionalEncoding(constant=True), or one-hot features covering every "
            f"token: positions or categories), and {name} maps them to features "
            "without one (centering turns a constant feature into 0): unless a "
            "later step appends a constant, the model loses the constant, linear "
            "and quadratic terms it gave. Append the constant after this step: "
            f"make_pipeline(TokenwiseTransformer({name}(...)), "
            "PositionalEncoding(constant=True), ...).",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )

    def transform(self, X):
        """Transform every non-padding token; padding tokens stay all zero.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
            Any number of tokens for 3-D input; the width seen in ``fit`` for 2-D.

        Returns
        -------
        X_out : ndarray of shape (n_samples, n_tokens, `token_dim_out_`) or \
(n_samples, n_tokens * `token_dim_out_`)
            The same layout as ``X``.
        """
        check_is_fitted(self)
        self._validate_params_used_after_fit(("padding",))
        sequences, was_2d = self._validate_tokens(X, reset=False)
        mask = _padding_mask(sequences, self.padding)
        if self.padding is not None:
            _warn_if_all_padding(mask, "TokenwiseTransformer")
        out = np.zeros(sequences.shape[:2] + (self.token_dim_out_,))
        if mask.any():
            tokens = sequences[mask]
            transformed = _dense(self.transformer_.transform(tokens), self.transformer)
            if transformed.shape != (len(tokens), self.token_dim_out_):
                # numpy would broadcast one row over every token
                raise ValueError(
                    f"{type(self.transformer).__name__} must map tokens of shape "
                    f"(n, {self.token_dim_}) to (n, {self.token_dim_out_}), as it "
                    f"did in fit; it mapped {len(tokens)} tokens to shape "
                    f"{transformed.shape}."
                )
            out[mask] = transformed
        # tokens read as left padding downstream that were not (whatever this
        # step's own padding)
        lost = int(
            np.sum(_padding_mask(sequences, "left") & ~_padding_mask(out, "left"))
        )
        if lost:
            name = type(self.transformer).__name__
            warnings.warn(
                f"{name} maps {lost} non-zero token(s) at the start of their "
                "sequences to all zeros, which PositionalEncoding (padding='left') "
                "and positions='all' read as left padding (no position, constant "
                "or weight): a token equal to the training minimum of MinMaxScaler, "
                "or below that of QuantileTransformer, say. Use a transformer "
                "that maps no real token to zero (MinMaxScaler(feature_range=(1, "
                "2)), say), or, if the sequences are not padded, padding=None in "
                "PositionalEncoding.",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )
        return self._output(out, was_2d)

    @available_if(_inner_has("get_feature_names_out"))
    def get_feature_names_out(self, input_features=None):
        """Names of the output columns: ``token{t}_`` and the transformer's names.

        For the layout seen in ``fit`` (``n_tokens_`` tokens), token ``t`` has
        ``token{t}_{name}`` for each name the fitted transformer gives the features
        of token ``t``: the input names themselves for a one-to-one transformer
        (``StandardScaler``), its own names for others (``pca0, pca1, ...``).

        Parameters
        ----------
        input_features : array-like of str, default=None
            Names of the ``n_features_in_`` input columns, checked as scikit-learn
            does: None uses ``feature_names_in_``, or ``x0, x1, ...`` for each
            token's features. A ``token{t}_`` prefix on all of token ``t``'s names
            (those of a previous step of this module) is not repeated.

        Returns
        -------
        names : ndarray of str, shape (`n_tokens_` * `token_dim_out_`,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.decomposition import PCA
        >>> from sklearn.preprocessing import StandardScaler
        >>> from sklearn_linattn.preprocessing import TokenwiseTransformer
        >>> X = np.random.default_rng(0).normal(size=(5, 2, 3))  # 2 tokens of 3
        >>> scaler = TokenwiseTransformer(StandardScaler()).fit(X)
        >>> scaler.get_feature_names_out().tolist()
        ['token0_x0', 'token0_x1', 'token0_x2', 'token1_x0', 'token1_x1', 'token1_x2']
        >>> TokenwiseTransformer(PCA(2)).fit(X).get_feature_names_out().tolist()
        ['token0_pca0', 'token0_pca1', 'token1_pca0', 'token1_pca1']

        Names of the input columns (a DataFrame's, say) carry through:

        >>> names = ["a0", "b0", "c0", "a1", "b1", "c1"]
        >>> scaler.get_feature_names_out(names).tolist()
        ['token0_a0', 'token0_b0', 'token0_c0', 'token1_a1', 'token1_b1', 'token1_c1']
        """
        check_is_fitted(self)
        names = []
        for t, features in enumerate(self._token_names(input_features)):
            inner = self.transformer_.get_feature_names_out(features)
            names.extend(f"token{t}_{name}" for name in inner)
        return np.asarray(names, dtype=object)
