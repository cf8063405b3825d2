"""Input handling, for numpy and Dask alike: 3-D sequences or 2-D flattened rows,
targets (one per sequence or one per position), sample weights, clear errors.

Everything downstream receives sequences as a float64, C-ordered array of shape
``(n_samples, n_tokens, token_dim)`` (a view of the caller's data when it already is
one; never written to), or a Dask array of that shape chunked along samples only,
whose blocks are checked for values (NaN, infinity) by :func:`check_sequence_values`
where they are computed. Dask is imported only when a Dask array is passed
(:func:`require_dask`). This module imports no other module of the package.
"""

import contextlib
import inspect
import sys
import types
import warnings
from numbers import Integral, Number, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    make_constraint,
    validate_parameter_constraints,
)
from sklearn.utils.validation import (
    _check_feature_names_in,
    _check_sample_weight,
    check_array,
    validate_data,
)

__all__ = [
    "BooleanRefusingParamsMixin",
    "RealInterval",
    "as_array",
    "caller_stacklevel",
    "check_input_features",
    "check_sequence_values",
    "input_precision",
    "is_dask_array",
    "reject_boolean_parameters",
    "require_dask",
    "validate_class_weight",
    "validate_sample_weight",
    "validate_sequences",
    "validate_targets",
    "warn_about_layout",
    "warn_if_classes_unbalanced",
    "warn_if_mean_left_out",
    "warn_if_token_scales_differ",
    "warn_if_underdetermined",
]

_LAYOUT = (
    "Expected sequences of shape (n_samples, n_tokens, token_dim), or rows of shape "
    "(n_samples, n_tokens * token_dim) with token_dim given"
)


def input_precision(*arrays):
    """Machine epsilon of the least precise floating-point array among ``arrays``
    (float64's when none is a floating-point array): the relative precision at
    which the data were given, before their conversion to float64.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn._validation import input_precision
    >>> float(input_precision(np.ones(3, dtype=np.float32), [1.0, 2.0]))
    1.1920928955078125e-07
    """
    eps = float(np.finfo(np.float64).eps)
    for array in arrays:
        for dtype in _numpy_dtypes(array):
            if np.issubdtype(dtype, np.floating):
                eps = max(eps, float(np.finfo(dtype).eps))
    return eps


def _numpy_dtypes(array):
    """The numpy dtypes ``array`` holds: a DataFrame's, one per column, else its
    own (a Series has one, maybe pandas', not iterable); pandas' nullable dtypes
    as the numpy dtype they hold ("Float32": float32). None where there is none
    (a list)."""
    dtypes = getattr(array, "dtypes", None)
    if dtypes is None or np.ndim(dtypes) == 0:
        dtypes = [getattr(array, "dtype", None)]
    numpy_dtypes = (getattr(dtype, "numpy_dtype", dtype) for dtype in dtypes)
    return [dtype for dtype in numpy_dtypes if isinstance(dtype, np.dtype)]


def is_dask_array(X):
    """Whether ``X`` is a Dask array, without importing Dask."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks")


def require_dask():
    """The ``dask`` and ``dask.array`` modules, or a clear error."""
    try:
        import dask
        import dask.array
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "A Dask array was passed but Dask is not installed: "
            "python -m pip install 'sklearn-linattn[dask]'"
        ) from error
    return dask, dask.array


def _refuse_unreadable(X):
    """Refuse, by name, inputs numpy would read as something else: None and a
    generator become 0-dimensional arrays (whose advice is about shapes), and a
    masked array's mask would be dropped silently."""
    if X is None or isinstance(X, types.GeneratorType):
        route = "; pass list(X)" if isinstance(X, types.GeneratorType) else ""
        raise TypeError(
            f"X must be an array of sequences; got "
            f"{'None' if X is None else type(X).__name__}{route}. {_LAYOUT}."
        )
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(
            "X is a masked array: its mask would be ignored. Fill the masked "
            "entries (X.filled(0.0): zero tokens at the left are padding) or "
            "drop the sequences that have them."
        )


def validate_sequences(
    X, *, token_dim=None, estimator=None, reset=False, warn_layout=True
):
    """Check sequences and return them as a 3-D float64 C-ordered array.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_tokens, token_dim) or \
(n_samples, n_tokens * token_dim)
        Sequences, tokens as rows, the query last. A 2-D row is one sequence
        flattened token by token; with ``token_dim=None`` it is a single token.
        A Dask array is checked for its shape here and for its values block by
        block (:func:`check_sequence_values`).
    token_dim : int or None
        The token dimension the caller expects; None accepts any (at fit time).
    estimator : estimator instance, optional
        When given, 2-D input goes through
        :func:`sklearn.utils.validation.validate_data` so that ``n_features_in_``
        and ``feature_names_in_`` are set (``reset=True``) or checked
        (``reset=False``). 3-D input sets ``n_features_in_`` to
        ``n_tokens * token_dim`` on reset and accepts any ``n_tokens`` afterwards.
    reset : bool
        Whether this call fits the estimator.
    warn_layout : bool
        Whether a fit (``estimator`` given, ``reset=True``) warns about a layout
        that looks like a mistake (:func:`warn_about_layout`); the token
        transformers, which do not lift the tokens, pass False.

    Returns
    -------
    sequences : ndarray or dask array of shape (n_samples, n_tokens, token_dim)
    """
    if sp.issparse(X):
        raise TypeError(
            "Sparse input is not supported: sequences are dense token matrices. "
            f"{_LAYOUT}; convert with X.toarray()."
        )
    if is_dask_array(X):
        return _validate_dask_sequences(X, token_dim, estimator, reset, warn_layout)
    _refuse_unreadable(X)
    if not hasattr(X, "ndim") or _is_array_of_sequences(X):
        X = as_array(X)  # lists, objects that only offer __array__
    _refuse_complex("X", X, "sequences are real token matrices")
    _refuse_dates("X", X)
    if X.ndim == 3:
        with _converted_to_float(
            "X", "an array of shape (n_samples, n_tokens, token_dim)"
        ):
            sequences = check_array(
                X,
                allow_nd=True,
                dtype=np.float64,
                order="C",
                input_name="X",
                estimator=estimator,
            )
        _check_3d_shape(sequences.shape, token_dim, estimator, reset, warn_layout)
        return sequences
    _check_ndim(X)
    if reset and token_dim is not None:  # before validate_data sets n_features_in_
        _token_dim_of_width(X.shape[1], token_dim)
    if not reset:
        _refuse_one_sequence(X.shape, token_dim, estimator)
        _refuse_other_length(X.shape, token_dim, estimator)
    with _converted_to_float(
        "X", "an array of shape (n_samples, n_tokens * token_dim)"
    ):
        if estimator is None:
            rows = check_array(X, dtype=np.float64, order="C", input_name="X")
        else:
            rows = validate_data(
                estimator, X, reset=reset, dtype=np.float64, order="C"
            )
    n_samples, n_features = rows.shape
    from_rows = token_dim is None
    token_dim = _token_dim_of_width(n_features, token_dim)
    if estimator is not None and reset and warn_layout:
        warn_about_layout(n_features // token_dim, token_dim, from_rows=from_rows)
    return rows.reshape(n_samples, n_features // token_dim, token_dim)


def _refuse_one_sequence(shape, token_dim, estimator):
    """A 2-D ``X`` of ``token_dim`` columns given to an estimator fitted on
    longer rows: one sequence ``Z`` of shape (n_tokens, d), which 2-D input
    reads as one flattened sequence per row; the error says to pass ``Z[None]``
    (validate_data's said only that the counts of features differ)."""
    expected = getattr(estimator, "n_features_in_", None)
    if token_dim is None or expected is None or shape[1] != token_dim or not shape[0]:
        return
    if expected != token_dim:
        raise ValueError(
            f"{_features_differ(shape[1], estimator)} X of shape {shape} looks like "
            f"one sequence of {shape[0]} tokens of dimension {token_dim}: a 2-D X "
            "holds one flattened sequence per row, shape (n_samples, n_tokens * "
            "token_dim). Pass one sequence Z as Z[None], of shape (1, n_tokens, "
            "token_dim) (or rows that are one-token sequences as X[:, None])."
        )


def _refuse_other_length(shape, token_dim, estimator):
    """2-D rows whose width is another multiple of ``token_dim`` than fit's:
    flattened sequences of another length, which a 2-D ``X`` cannot hold (its
    width is fit's) but 3-D input can (attention takes any number of tokens);
    the error says how to pass them (validate_data's said only that the counts
    of features differ)."""
    expected = getattr(estimator, "n_features_in_", None)
    if token_dim is None or expected is None or shape[1] == expected:
        return
    if shape[1] % token_dim or expected % token_dim:
        return
    raise ValueError(
        f"{_features_differ(shape[1], estimator)} Rows of {shape[1]} columns are "
        f"sequences of {shape[1] // token_dim} tokens of dimension {token_dim} "
        f"(fit's had {expected // token_dim}). A 2-D X must have fit's width; "
        "sequences of another length are passed 3-D: "
        f"X.reshape(n_samples, {shape[1] // token_dim}, {token_dim})."
    )


def _features_differ(n_features, estimator):
    """scikit-learn's message for a count of features other than ``fit``'s."""
    return (
        f"X has {n_features} features, but {type(estimator).__name__} is expecting "
        f"{estimator.n_features_in_} features as input."
    )


def _is_array_of_sequences(X):
    """Whether ``X`` is a 1-D object array (or pandas Series) holding one array
    per sequence."""
    return (
        (isinstance(X, np.ndarray) or _is_pandas_series(X))
        and isinstance(X.dtype, np.dtype)
        and X.dtype == object
        and X.ndim == 1
        and X.size > 0
        and all(np.ndim(item) >= 1 for item in X)
    )


def _is_pandas(X, kind):
    """Whether ``X`` is a pandas ``kind`` ("Series", "DataFrame"), without
    importing pandas."""
    return type(X).__module__.split(".")[0] == "pandas" and type(X).__name__ == kind


def _is_pandas_series(X):
    """Whether ``X`` is a pandas Series, without importing pandas."""
    return _is_pandas(X, "Series")


def _is_pandas_frame(X):
    """Whether ``X`` is a pandas DataFrame, without importing pandas."""
    return _is_pandas(X, "DataFrame")


def _refuse_complex(name, array, expected):
    """Complex arrays (or DataFrame columns) are refused, naming ``name``, its
    dtype and what it must hold (``expected``): scikit-learn's message prints
    the whole array after it."""
    kind = next((t for t in _numpy_dtypes(array) if t.kind == "c"), None)
    if kind is not None:
        raise ValueError(
            f"Complex data not supported: {name} has dtype {kind}; {expected}."
        )


def _refuse_dates(name, array):
    """Datetime and timedelta arrays (or DataFrame columns) are refused: numpy
    casts them to float64 silently (days or nanoseconds since 1970), a number
    that means nothing to the model."""
    kind = next((t for t in _numpy_dtypes(array) if t.kind in "Mm"), None)
    if kind is not None:
        raise ValueError(
            f"{name} has dtype {kind}: dates and durations are not numbers here "
            f"(numpy would read them as counts since 1970 or of their unit). "
            f"{name} must hold real numbers (float, int or bool); convert them "
            "explicitly first."
        )


@contextlib.contextmanager
def _converted_to_float(name, expected):
    """numpy's "could not convert string to float: 'a'" (or "float() argument
    must be a string or a real number, not 'dict'") raised while converting
    ``name`` to float64, with the input named and what it must hold; numpy's
    words are kept after it. A Python int beyond float64's range (``2**1100`` in
    an object array) raised OverflowError("int too large to convert to float"),
    naming neither the input nor the range: it is a ValueError here, as
    scikit-learn's "value too large for dtype('float64')" is."""
    try:
        yield
    except OverflowError as error:
        raise ValueError(
            f"{name} must be {expected} of real numbers (float, int or bool) "
            f"within float64's range (magnitudes below about 1.8e308); numpy "
            f"could not convert it: {error}"
        ) from error
    except (TypeError, ValueError) as error:
        text = str(error)
        if not any(
            words in text
            for words in (
                "could not convert",
                "argument must be",
                "setting an array element with a sequence",  # (a table of arrays)
            )
        ):
            raise
        raise type(error)(
            f"{name} must be {expected} of real numbers (float, int or bool); "
            f"numpy could not convert it: {text}"
        ) from error


def as_array(X, dtype=None):
    """``numpy.asarray(X, dtype)``; a list of sequences of different lengths gets an
    error that names the two ways to pad it (numpy only says "inhomogeneous")."""
    ragged_warning = getattr(np, "exceptions", np).VisibleDeprecationWarning
    _refuse_unreadable(X)
    if _is_array_of_sequences(X):  # one array per sequence: read as their list
        X = list(X)
    try:
        with warnings.catch_warnings():
            # numpy < 1.24 makes an object array of a ragged list, with this warning
            warnings.simplefilter("error", ragged_warning)
            return np.asarray(X, dtype=dtype)
    except (ValueError, ragged_warning) as error:
        text = str(error)
        if not any(word in text for word in ("inhomogeneous", "ragged", "sequence")):
            raise
        raise ValueError(
            "X looks like a list of sequences of different lengths (numpy: "
            f"{error}). Pad them into one array of shape (n_samples, n_tokens, "
            "token_dim) first: sequences with tokens as rows, (n_tokens_i, "
            "token_dim), with sklearn_linattn.preprocessing.pad_sequences(X); time "
            "series laid out (n_channels, n_timepoints_i), as aeon and sktime hold "
            "them, with sklearn_linattn.preprocessing.SeriesToTokens()"
            ".fit_transform(X)."
        ) from None


def _check_ndim(X):
    if X.ndim != 2:
        raise ValueError(
            f"{_LAYOUT}; got an array with {X.ndim} dimension(s) and shape "
            f"{X.shape}. Reshape your data: a single sequence Z of shape "
            "(n_tokens, token_dim) is Z[None]."
        )


def _check_3d_shape(shape, token_dim, estimator, reset, warn_layout=True):
    n_samples, n_tokens, found_dim = shape
    if n_samples == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={shape}) while a minimum of 1 is "
            "required."
        )
    if n_tokens == 0 or found_dim == 0:
        raise ValueError(
            f"X has shape {shape}: every sequence needs at least one token of "
            "dimension at least 1."
        )
    if token_dim is not None and found_dim != token_dim:
        raise ValueError(
            f"X has token dimension {found_dim} (shape {shape}) but "
            f"token_dim={token_dim} was expected: shape (n_samples, n_tokens, "
            f"{token_dim})."
        )
    if estimator is not None and reset:
        if warn_layout:
            warn_about_layout(n_tokens, found_dim, from_rows=False)
        estimator.n_features_in_ = n_tokens * found_dim
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_


def _token_dim_of_width(n_features, token_dim):
    if token_dim is None:
        return n_features
    if n_features % token_dim:
        raise ValueError(
            f"X has {n_features} columns, which is not a multiple of "
            f"token_dim={token_dim}; rows must be sequences flattened token by token, "
            f"shape (n_samples, n_tokens * {token_dim})."
        )
    return token_dim


def _validate_dask_sequences(X, token_dim, estimator, reset, warn_layout=True):
    """Shape checks of a Dask array (the values are checked per block), the same
    rules and messages as for numpy input; returns it 3-D, chunked along samples."""
    require_dask()
    _check_known_chunks(X, "X")
    if X.dtype.kind not in "biuf":
        raise ValueError(
            f"X has dtype {X.dtype}; sequences must be real numbers (float, int or "
            "bool)."
        )
    if X.ndim == 3:
        _check_3d_shape(X.shape, token_dim, estimator, reset, warn_layout)
        return _without_empty_chunks(X.rechunk({1: -1, 2: -1}))
    _check_ndim(X)
    if not reset:
        _refuse_one_sequence(X.shape, token_dim, estimator)
        _refuse_other_length(X.shape, token_dim, estimator)
    n_samples, n_features = X.shape
    if n_samples == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is "
            "required."
        )
    if estimator is not None:
        if reset:
            estimator.n_features_in_ = n_features
            if hasattr(estimator, "feature_names_in_"):
                del estimator.feature_names_in_
        elif n_features != estimator.n_features_in_:
            raise ValueError(_features_differ(n_features, estimator))
    from_rows = token_dim is None
    token_dim = _token_dim_of_width(n_features, token_dim)
    if estimator is not None and reset and warn_layout:
        warn_about_layout(n_features // token_dim, token_dim, from_rows=from_rows)
    X = _without_empty_chunks(X.rechunk({1: -1}))
    return X.reshape(n_samples, n_features // token_dim, token_dim)


def _check_known_chunks(array, name):
    """A clear error for a Dask array of unknown chunk sizes along any axis (after
    boolean indexing); its shape holds NaN, which every later check would name."""
    if any(np.isnan(size) for sizes in array.chunks for size in sizes):
        raise ValueError(
            f"{name} is a Dask array with unknown chunk sizes (for example after "
            f"boolean indexing); call {name} = {name}.compute_chunk_sizes() before "
            "passing it."
        )


def _without_empty_chunks(X):
    """``X`` without its chunks of 0 samples (``X[mask].compute_chunk_sizes()``
    leaves them where a block had no selected sample; Dask's reductions and the
    blockwise checks fail on them)."""
    sizes = X.chunks[0]
    if 0 not in sizes:
        return X
    return X.rechunk({0: tuple(size for size in sizes if size)})


def check_sequence_values(block):
    """One block of a Dask array of sequences, checked like numpy input (finite
    real numbers) and converted to float64 C-ordered."""
    return check_array(
        block, allow_nd=True, dtype=np.float64, order="C", input_name="X"
    )


def validate_targets(y, n_samples, estimator_name="estimator", n_tokens=None):
    """Check regression targets and return them as rows of a 2-D float64 array.

    Parameters
    ----------
    y : array-like or dask array
        ``(n_samples,)`` or ``(n_samples, n_outputs)``; with ``n_tokens`` given (a
        fit with ``positions="all"``), ``(n_samples, n_tokens)`` or
        ``(n_samples, n_tokens, n_outputs)``. Finite numbers; a Dask array is
        checked for its shape here and for its values (with the messages of
        numpy input) block by block wherever a pass computes it.
    n_samples : int
    estimator_name : str
    n_tokens : int or None
        Tokens per sequence when there is a target per position.

    Returns
    -------
    targets : ndarray (or dask array) of shape (n_rows, n_outputs)
        One row per sequence, or per position (sample-major).
    single_output : bool
        Whether ``y`` had no outputs axis (then predictions have none either).
    """
    if y is None:
        raise ValueError(
            f"{estimator_name} requires y to be passed, but the target y is None."
        )
    if sp.issparse(y):
        raise TypeError("Sparse targets are not supported; pass a dense array y.")
    per_position = n_tokens is not None
    expected = (
        f"(n_samples, n_tokens) or (n_samples, n_tokens, n_outputs) with n_samples="
        f"{n_samples}, n_tokens={n_tokens}"
        if per_position
        else f"(n_samples,) or (n_samples, n_outputs) with n_samples={n_samples}"
    )
    _refuse_dates("y", y)
    _refuse_complex("y", y, "targets are real numbers")
    if is_dask_array(y):
        _check_known_chunks(y, "y")
        targets = y.map_blocks(
            _checked_target_block,
            expected=expected,
            dtype=np.float64,
            meta=np.empty((0,) * y.ndim),
        )
    else:
        # (scikit-learn: "Input should have at least 1 dimension ...")
        if isinstance(y, (Number, str, bytes)) or getattr(y, "shape", None) == ():
            raise ValueError(f"y must have shape {expected}, got the scalar {y!r}.")
        # (no sample: the count's mismatch with X's below names y)
        targets = _checked_target_block(y, expected)
    if targets.ndim >= 1 and targets.shape[0] != n_samples:
        raise ValueError(
            f"X has {n_samples} samples but y has {targets.shape[0]}; they must match."
        )
    dims = (2, 3) if per_position else (1, 2)
    if targets.ndim not in dims or (per_position and targets.shape[1] != n_tokens):
        raise ValueError(f"y must have shape {expected}, got shape {targets.shape}.")
    if targets.ndim == dims[1] and targets.shape[-1] == 0:
        raise ValueError(
            f"y must have shape {expected} and at least one output, got shape "
            f"{targets.shape}."
        )
    single_output = targets.ndim == dims[0]
    n_rows = n_samples * (n_tokens if per_position else 1)
    return targets.reshape(n_rows, -1), single_output


def _checked_target_block(y, expected, ensure_min_samples=0):
    """Targets (or a block of them, which may be empty) as finite float64;
    ``expected`` describes their shape in the error for values numpy cannot
    convert."""
    with _converted_to_float("y", f"an array of shape {expected}"):
        return check_array(
            y,
            ensure_2d=False,
            allow_nd=True,
            dtype=np.float64,
            input_name="y",
            ensure_min_samples=ensure_min_samples,
            # (y of no output is refused by validate_targets, naming y and its
            # shape; scikit-learn's "Found array with 0 feature(s)" named neither)
            ensure_min_features=0,
        )


_NO_POSITIVE_WEIGHT = "Sample weights must contain at least one non-zero number."
# Newer scikit-learn refuses all-zero weights unless allowed (1.6 has no such
# check): they are checked here, where a later partial_fit batch may have them
_ALL_ZERO_WEIGHTS_CHECKED_HERE = (
    {"allow_all_zero_weights": True}
    if "allow_all_zero_weights" in inspect.signature(_check_sample_weight).parameters
    else {}
)


def _checked_weight_block(weights):
    """A block of Dask sample weights as finite non-negative float64 (a block
    of zeros too: the weights as a whole need a positive one,
    :func:`_checked_dask_weights`)."""
    with _converted_to_float("sample_weight", "an array of shape (n_samples,)"):
        if not np.size(weights) or not np.any(weights):
            return np.asarray(weights, dtype=np.float64)
        return _check_sample_weight(
            weights,
            np.empty((np.shape(weights)[0], 0)),
            dtype=np.float64,
            ensure_non_negative=True,
        )


def _with_a_positive_weight(weights, any_positive):
    if not any_positive:
        raise ValueError(_NO_POSITIVE_WEIGHT)
    return weights


def _checked_dask_weights(sample_weight, require_positive=True):
    """Dask sample weights whose blocks are checked like numpy weights wherever a
    pass reads them: each block finite and non-negative, and (through a
    dependency of every block on the reduction ``any(w > 0)``, over the weights
    only) not all zero, with ``require_positive``."""
    _, da = require_dask()
    meta = np.empty((0,))
    weights = sample_weight.map_blocks(
        _checked_weight_block, dtype=np.float64, meta=meta
    )
    if not require_positive:
        return weights
    return da.map_blocks(
        _with_a_positive_weight,
        weights,
        (weights > 0).any(),
        dtype=np.float64,
        meta=meta,
    )


def validate_sample_weight(sample_weight, sequences, require_positive=True):
    """Sample weights as a float64 array of shape ``(n_samples,)`` (None stays None).

    Weights must be finite and non-negative, and (with ``require_positive``; a
    later batch of ``partial_fit`` may weigh nothing) not all zero; a scalar is
    broadcast. A Dask array, while the sequences are a Dask array too, is checked
    for its shape here and for its values, with the same messages, block by block
    in the passes that read it (no pass of its own over the sequences); with
    sequences in memory it is computed (weights are small) and checked like any.
    """
    n_samples = sequences.shape[0]
    if sample_weight is None:
        return None
    expected = f"None, a number or an array of shape ({n_samples},)"
    if isinstance(sample_weight, (str, bytes)):
        raise TypeError(
            f"sample_weight must be {expected} of real numbers, got the string "
            f"{sample_weight!r}."
        )
    _refuse_dates("sample_weight", sample_weight)
    _refuse_complex("sample_weight", sample_weight, "weights are real numbers")
    if is_dask_array(sample_weight) and not is_dask_array(sequences):
        sample_weight = np.asarray(sample_weight.compute())
    if is_dask_array(sample_weight):
        _check_known_chunks(sample_weight, "sample_weight")
        if sample_weight.shape != (n_samples,):
            raise ValueError(
                f"sample_weight must have shape ({n_samples},), got "
                f"{sample_weight.shape}."
            )
        return _checked_dask_weights(sample_weight, require_positive)
    if isinstance(sample_weight, Number):  # scikit-learn broadcasts it unchecked
        if isinstance(sample_weight, complex):
            raise ValueError("Complex data not supported: sample_weight is complex.")
        with _converted_to_float("sample_weight", expected):
            check_array(
                np.atleast_1d(sample_weight), ensure_2d=False,
                input_name="sample_weight",
            )
    shape = getattr(sample_weight, "shape", None)  # (np.shape calls __array__ ...)
    if shape is None and isinstance(sample_weight, (list, tuple)):
        shape = np.shape(sample_weight)
    if shape is not None and len(shape) == 1 and shape[0] != n_samples:
        # (scikit-learn: "Found array with 0 sample(s)", naming no input, for [])
        raise ValueError(
            f"sample_weight has shape {shape}, expected ({n_samples},): one weight "
            "per sample."
        )
    with _converted_to_float("sample_weight", expected):
        weights = _check_sample_weight(
            sample_weight,
            np.empty((n_samples, 0)),
            dtype=np.float64,
            ensure_non_negative=True,
            **_ALL_ZERO_WEIGHTS_CHECKED_HERE,
        )
    if require_positive and n_samples and not np.any(weights):
        raise ValueError(_NO_POSITIVE_WEIGHT)  # (scikit-learn 1.6 lets these through)
    return weights


def validate_class_weight(class_weight):
    """A dict of class weights must map classes to finite non-negative numbers."""
    if not isinstance(class_weight, dict):
        return
    for label, weight in class_weight.items():
        try:
            value = None if isinstance(weight, (bool, np.bool_, str)) else float(weight)
        except (TypeError, ValueError):
            value = None
        if value is None or not np.isfinite(value) or value < 0:
            raise ValueError(
                "class_weight must map each class to a finite non-negative number, "
                f"got class_weight[{label!r}] = {weight!r}."
            )


class RealInterval(Interval):
    """scikit-learn's ``Interval`` that also holds real numbers numpy cannot test
    for NaN: ``Interval(Real, ...)`` accepts ``fractions.Fraction(1, 2)`` as a
    ``numbers.Real`` and then fails inside ``numpy.isnan`` with "ufunc 'isnan'
    not supported" (scikit-learn's own ``Ridge(alpha=Fraction(1, 2))`` too,
    while ``RidgeCV(alphas=[Fraction(1, 2)])`` converts it). The value is
    compared as the float it converts to; the estimator converts it the same
    way where it uses it."""

    def __contains__(self, val):
        if isinstance(val, Real) and not isinstance(val, Integral):
            try:
                val = float(val)
            except (TypeError, ValueError, OverflowError):
                return False
        return super().__contains__(val)


def _numeric_constraints(constraints):
    """Whether a parameter's constraints take numbers (an ``Interval``) and no
    boolean (``"boolean"``, ``"verbose"`` or the type ``bool``)."""
    if not isinstance(constraints, list):
        return False
    takes_numbers = any(isinstance(c, Interval) for c in constraints)
    takes_bools = any(
        (isinstance(c, str) and c in ("boolean", "verbose"))
        or (isinstance(c, type) and issubclass(c, (bool, np.bool_)))
        for c in constraints
    )
    return takes_numbers and not takes_bools


class BooleanRefusingParamsMixin:
    """Refuse a bool for a numeric parameter, naming it, before scikit-learn's
    parameter check: that check reads ``True`` as the number 1 (accepted where 1
    is) and ``False`` as 0, refused where 0 is with a message that does not say
    what was wrong with ``False`` (``n_heads=False``: "must be a str among
    {'auto'}, an int in the range [1, inf) or None. Got False instead")."""

    def _validate_params(self):
        constraints = getattr(self, "_parameter_constraints", {})
        params = self.get_params(deep=False)
        for name, value in params.items():
            if not isinstance(value, (bool, np.bool_)):
                continue
            if not _numeric_constraints(constraints.get(name)):
                continue
            shown = [
                str(c)
                for c in map(make_constraint, constraints[name])
                if not c.hidden
            ]
            expected = (
                shown[0]
                if len(shown) == 1
                else f"{', '.join(shown[:-1])} or {shown[-1]}"
            )
            raise InvalidParameterError(
                f"The {name!r} parameter of {type(self).__name__} must be "
                f"{expected} (not a bool). Got {value!r} instead."
            )
        super()._validate_params()

    def _validate_params_used_after_fit(self, names):
        """The parameters a fitted model reads again (``positions``, ``n_jobs``
        ...), checked as fit checks them: ``set_params`` after ``fit`` takes any
        value, and ``positions="x"`` then predicted as ``"all"`` silently,
        ``n_jobs="x"`` failed in joblib ("'<' not supported between 'str' and
        'int'")."""
        constraints = self._parameter_constraints
        validate_parameter_constraints(
            {name: constraints[name] for name in names},
            {name: getattr(self, name) for name in names},
            caller_name=type(self).__name__,
        )


def check_input_features(estimator, input_features):
    """scikit-learn's ``_check_feature_names_in`` (the names of the input
    features, checked against ``feature_names_in_`` and ``n_features_in_``),
    with a named error for names that are not a 1-D list: a string, a number
    or a set failed inside it with "len() of unsized object"."""
    if input_features is not None and (
        isinstance(input_features, (str, bytes, set, frozenset, dict))
        or np.ndim(input_features) != 1
    ):
        raise TypeError(
            "input_features must be a 1-D array-like of "
            f"{estimator.n_features_in_} feature names, in order, or None; got "
            f"{input_features!r}."
        )
    return _check_feature_names_in(estimator, input_features)


def reject_boolean_parameters(estimator, names, kind="an int or None"):
    """scikit-learn's parameter check treats True as the number 1; a boolean for a
    numeric parameter is a mistake, so say so as scikit-learn would."""
    for name in names:
        value = getattr(estimator, name)
        if isinstance(value, (bool, np.bool_)):
            raise InvalidParameterError(
                f"The {name!r} parameter of {type(estimator).__name__} must be "
                f"{kind} (not a bool). Got {value!r} instead."
            )


# A single token of dimension d is a cubic polynomial of the row with p = d^2 (d+1)/2
# terms; from this p on (d = 13), a row is more likely a flattened sequence.
_ROW_AS_ONE_TOKEN_MIN_LIFTED = 1_000
# p from which transposed-looking 3-D input warns, and p > n_samples warns.
_LARGE_LIFTED = 10_000


def caller_stacklevel():
    """The ``stacklevel`` that attributes a warning to the first caller outside
    this package and scikit-learn (the user's ``fit`` or pipeline call), counted
    from the function that calls this one."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in (
        "sklearn_linattn",
        "sklearn",
    ):
        frame, level = frame.f_back, level + 1
    return level


def _lifted_count(token_dim):
    return token_dim * token_dim * (token_dim + 1) // 2


def warn_about_layout(n_tokens, token_dim, *, from_rows):
    """Warn, naming the fix, when the sequences an estimator is fitted on look
    laid out by mistake (each is a warning's condition, tested both ways):

    - far more features per token than tokens, with ``p = d^2 (d + 1) / 2`` above
      10,000: the time-series layout ``(n_samples, n_channels, n_timepoints)``
      read as tokens-as-rows (``(200, 2, 50)``: 2 tokens, ``p = 63,750``; its
      transpose ``(200, 50, 2)`` has ``p = 6``);
    - 2-D rows without ``token_dim`` (``from_rows``), read as one token each, wide
      enough for ``p`` of 1,000 or more: a flattened sequence, or the cubic
      kernel machine of the whole row on purpose (the message describes both);
    - scalar tokens: the model then has the single feature ``sum_t z_t^2 z_last``.
    """
    n_lifted = _lifted_count(token_dim)
    if from_rows and n_tokens == 1 and n_lifted >= _ROW_AS_ONE_TOKEN_MIN_LIFTED:
        message = (
            f"X is 2-D and token_dim=None, so each row of {token_dim} columns is "
            "one token: the model is a cubic polynomial of the row, a kernel "
            "machine with the kernel (x . x')^3, with p = "
            f"{n_lifted:,} lifted features (solved in kernel form while "
            "n_samples < p). That is a recipe of its own (the documentation's "
            "page 'Real data', 'A whole series as one token'): its memory grows "
            "as n_outputs d^3 and its head read-out's work as n_outputs^2 d^4, "
            "and a fit that cannot run is refused before it starts. If the rows "
            "are sequences flattened token by token, pass token_dim (the features "
            "of one token), or pass 3-D sequences of shape (n_samples, n_tokens, "
            "token_dim)."
        )
    elif token_dim > 2 * n_tokens and n_lifted > _LARGE_LIFTED:
        message = (
            f"X has {n_tokens} token(s) of dimension {token_dim} per sequence, so "
            f"the model lifts each sequence to p = {n_lifted:,} features "
            "(d^2 (d + 1) / 2 with d = token_dim): fitting will be slow and need "
            "many samples. Sequences are read as (n_samples, n_tokens, token_dim), "
            "tokens as rows. If X is laid out as (n_samples, n_channels, "
            "n_timepoints), pass X.transpose(0, 2, 1) (shape (n_samples, "
            f"{token_dim}, {n_tokens})) or sklearn_linattn.preprocessing."
            f"SeriesToTokens().fit_transform(X). If the tokens really have "
            f"{token_dim} features, reduce them first, e.g. with "
            "sklearn_linattn.preprocessing.TokenwiseTransformer(PCA(n_components=8))."
        )
    elif token_dim == 1:
        message = (
            "The tokens are scalars (token_dim=1): the model then has a single "
            "lifted feature, sum_t z_t^2 * z_last, and cannot tell the values of a "
            "sequence apart. For a univariate series, group k consecutive values "
            "into a token (sklearn_linattn.preprocessing.SeriesToTokens(window=k), "
            "or X.reshape(n_samples, -1, k)), or append position features "
            "(sklearn_linattn.preprocessing.PositionalEncoding(n_positions=k))."
        )
    else:
        return
    warnings.warn(message, UserWarning, stacklevel=caller_stacklevel())


_REDUCE_TOKEN_DIM = (
    "Reduce the token dimension: fewer position features "
    "(PositionalEncoding(n_positions=k) with a small k), fewer features per token "
    "(TokenwiseTransformer(PCA(n_components=k)), or a smaller SeriesToTokens "
    "window); or fit on more sequences."
)


def warn_if_underdetermined(n_rows, token_dim, *, alpha=None, n_tokens=None,
                            cv_estimator="LinearAttentionRegressorCV"):
    """Warn, naming the route, when a fit has at least as many lifted features
    ``p = d^2 (d + 1) / 2`` as training rows (each is a warning's condition,
    tested both ways):

    - ``alpha=0`` (a plain estimator's default), at any ``p``: the minimum-norm
      fit interpolates the training targets, noise included, which on real data
      predicts poorly; the route is ``cv_estimator`` (``alpha`` chosen by
      leave-one-out in one pass) or ``alpha > 0``;
    - a penalty (``alpha > 0``, or ``alpha=None``: chosen by cross-validation),
      with ``p`` of 10,000 or more, unless each sequence is one token (the
      kernel layout, which :func:`warn_about_layout` describes): the fit is slow
      and reads out up to ``d^2`` heads, usually because the token dimension
      grew (one position feature per token, many channels).
    """
    n_lifted = _lifted_count(token_dim)
    if n_lifted < n_rows:
        return
    sizes = (
        f"the model has p = d^2 (d + 1) / 2 = {n_lifted:,} lifted features (token "
        f"dimension d = {token_dim}) for {n_rows:,} training rows"
    )
    if alpha == 0:
        message = (
            f"alpha=0 and {sizes}: the minimum-norm fit interpolates the training "
            "targets (fits them exactly, noise included), and on real, noisy data "
            f"it predicts poorly. Use {cv_estimator}, which chooses alpha by "
            "leave-one-out in one pass, or set alpha > 0. (On exact targets, as in "
            "the paper's noiseless tasks, the minimum-norm fit is the one wanted; "
            "certificate_.covers(X) says which inputs it determines.)"
        )
        if n_lifted >= _LARGE_LIFTED and n_tokens != 1:
            message += " " + _REDUCE_TOKEN_DIM
    elif n_lifted >= _LARGE_LIFTED and n_tokens != 1:
        message = (
            f"The tokens have dimension d = {token_dim}, so {sizes}: the fit is "
            "slow and reads out up to d^2 heads. " + _REDUCE_TOKEN_DIM
        )
    else:
        return
    warnings.warn(message, UserWarning, stacklevel=caller_stacklevel())


# Token coordinates whose largest magnitudes differ by more than this factor are
# warned about: the lifted features are cubic in the tokens, and the Gram's entries
# differ by the factor's sixth power (largest magnitudes, not root mean squares:
# sparse coordinates, as digits' edge pixels or rare one-hot symbols, are not in
# other units). Noiseless 1-head targets, 300 sequences of
# d = 3 (tests/test_scales.py): one coordinate 300 times the others dropped 6
# of the Gram's 18 directions (a poor fit of noiseless targets), 100 times none.
_TOKEN_SCALE_RATIO = 100.0


def warn_if_token_scales_differ(sequences):
    """Warn, naming the remedy, when the token coordinates' largest magnitudes
    (over every token of every sequence; all-zero coordinates left out) differ
    by more than a factor of 100: the fit's rank tolerance then drops
    directions of the lifted Gram that the data determine."""
    # max and -min, not max(abs(.)): no temporary the size of the input, which
    # the streamed fit otherwise never copies ("input + one chunk")
    scales = np.maximum(
        sequences.max(axis=(0, 1), initial=0.0),
        -sequences.min(axis=(0, 1), initial=0.0),
    )
    used = np.flatnonzero(scales > 0)
    if used.size < 2:
        return
    large, small = used[np.argmax(scales[used])], used[np.argmin(scales[used])]
    ratio = scales[large] / scales[small]
    if not ratio > _TOKEN_SCALE_RATIO:
        return
    warnings.warn(
        f"The token coordinates differ in scale by a factor of {ratio:.3g} "
        f"(largest magnitude {scales[large]:.3g} for coordinate {large}, "
        f"{scales[small]:.3g} for coordinate {small}): the lifted features, cubic "
        "in the tokens, differ by that factor cubed, and the fit drops directions "
        "of their Gram that the data determine, whatever n_heads. Put the "
        "coordinates on one scale first, for example with "
        "TokenwiseTransformer(MaxAbsScaler()), which keeps zero padding and "
        "constant features.",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )


# The training R^2 that adding the mean residual to the predictions must add for the
# fit to warn: 70 times the largest seen on the paper's data (1.5e-3: a ridge fit of
# noisy random MHLA targets, 144 samples; noiseless fits give rounding), 8 times
# below the documented pipeline on aeon's Covid3Month (0.79).
_MEAN_GAIN_WARNING = 0.1


def warn_if_classes_unbalanced(gain):
    """Warn, naming ``fit_intercept=True``, when a classifier fitted without an
    intercept leaves the means of its scores out: adding each score's mean
    training residual would raise a score's training ``R^2`` by more than 0.1
    (``gain``, per score, of the lifted fit); with several classes' one-vs-rest
    scores, by more than 0.1 beyond what one shift shared by every score gives,
    since that changes no predicted class. Classes without training weight
    are left out.

    Without an intercept or a constant token feature the scores are odd
    functions of the tokens, ``f(-Z) = -f(Z)``: with unbalanced classes and
    inputs spread about zero they cannot lean to the more frequent classes (on
    85/15 labels of random attention the test accuracy falls below always
    predicting the frequent class; tests/test_estimators.py)."""
    several = np.size(gain) > 1
    gain = np.atleast_1d(gain)
    # inf: codes constant over the weighted rows (a class without training
    # weight), which the fit never predicts; no intercept changes that
    gain = float(np.max(gain[np.isfinite(gain)], initial=0.0))
    if not gain > _MEAN_GAIN_WARNING:
        return
    what_adding_gives = (
        "each class's score its own mean training residual would raise a score's "
        f"training R^2 by {gain:.2f} more than one shift shared by every score "
        "(which changes no predicted class) would, in the lifted fit"
        if several
        else f"every score their mean training residual would raise the scores' "
        f"training R^2 by {gain:.2f}, in the lifted fit"
    )
    warnings.warn(
        "The classifier has no intercept (fit_intercept=False, MHLA's own form) "
        "and its class scores (+1 for the class, -1 otherwise) leave their mean "
        f"out: adding to {what_adding_gives}. The classes are "
        "unbalanced, and without an intercept or a constant token feature the "
        "scores cannot lean to the more frequent classes. Set fit_intercept=True, "
        "or append a constant feature (PositionalEncoding(constant=True)).",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )


def warn_if_mean_left_out(gain):
    """Warn, naming ``fit_intercept=True``, when a regressor fitted without an
    intercept leaves a large part of the targets' mean in its residuals: adding
    their (weighted) mean to every prediction would raise the training ``R^2`` by
    more than 0.1. ``gain`` holds that rise per output.

    MHLA has no bias, and fits of its own data leave no such mean (exact fits none
    at all); real targets that are not centered, with a penalty that shrinks the
    model toward zero, do."""
    gain = np.atleast_1d(gain)
    if not np.any(gain > _MEAN_GAIN_WARNING):
        return
    output = int(np.argmax(gain))
    which = f" (output {output})" if gain.size > 1 else ""
    if np.isinf(gain[output]):  # a constant target: its R^2 is not defined
        adding_gives = (
            f"the targets{which} are constant, and adding the mean training "
            "residual to every prediction would fit them exactly"
        )
    else:
        adding_gives = (
            "adding the mean training residual to every prediction would raise "
            f"the training R^2 by {gain[output]:.3g}{which}"
        )
    warnings.warn(
        "The fit has no intercept (fit_intercept=False, MHLA's own form) and "
        f"leaves the targets' mean out: {adding_gives}. "
        "Targets that are not centered need fit_intercept=True (or centered y). "
        "An alpha_ chosen at the top of a cross-validated grid is the same "
        "symptom: the penalty shrinks the model toward zero, far from the mean.",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )
