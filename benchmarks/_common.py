"""What the benchmark scripts share: measuring, the command line, reporting, and the
reference definitions they check the package against.

Import it from a script in this directory (``python benchmarks/bench_x.py`` puts the
directory on ``sys.path``)::

    from _common import make_parser, markdown_table, median_seconds, write_json

- Measuring: :func:`median_seconds`, :func:`peak_bytes`, :func:`compile_kernels`
  (call it before timing anything).
- Command line and reporting: :func:`make_parser` (``--json FILE``, optionally
  ``--quick``), :func:`markdown_table`, :func:`write_json`.
- Shared definitions: :func:`random_attention` (the generating model of
  ``sklearn_linattn.datasets.make_random_mhla``), :func:`reference_lifted_features`
  (the lift written with ``numpy.einsum``), :func:`relative_error` and
  :func:`relative_distance` (the demo's, ``python -m sklearn_linattn``).
"""

import argparse
import json
import os
import statistics
import time
import tracemalloc

import numpy as np

from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn.__main__ import relative_distance, relative_error
from sklearn_linattn.datasets import make_random_mhla

__all__ = [
    "compile_kernels",
    "make_parser",
    "markdown_table",
    "median_seconds",
    "peak_bytes",
    "random_attention",
    "reference_lifted_features",
    "ReadOutClock",
    "relative_distance",
    "relative_error",
    "write_json",
]


def median_seconds(function, repeats):
    """Median wall-clock time of ``function()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class ReadOutClock:
    """The wall time of each head read-out while in use (fitted models keep no
    clock reading): wraps the estimators' ``read_out_heads``, appending each
    call's seconds to ``seconds``."""

    def __init__(self):
        self.seconds = []

    def __enter__(self):
        import sklearn_linattn._estimators as estimators

        self._module, self._original = estimators, estimators.read_out_heads

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return self._original(*args, **kwargs)
            finally:
                self.seconds.append(time.perf_counter() - start)

        estimators.read_out_heads = timed
        return self

    def __exit__(self, *exc):
        self._module.read_out_heads = self._original


def peak_bytes(function):
    """Peak memory allocated during ``function()`` (tracemalloc sees numpy buffers)."""
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def compile_kernels():
    """One tiny fit, so that Numba's compilation stays out of every timing."""
    LinearAttentionRegressor().fit(np.ones((3, 2, 2)), np.ones(3))


def _json_path(text):
    """argparse type of ``--json``: a file whose directory exists and is writable."""
    directory = os.path.dirname(os.path.abspath(text))
    if not text or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"needs a file name, got {text!r}")
    if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
        raise argparse.ArgumentTypeError(
            f"cannot write {text!r}: {directory} is not a writable directory"
        )
    return text


def make_parser(doc, quick=False):
    """The script's argument parser, with ``--json FILE`` (and ``--quick``).

    Parameters
    ----------
    doc : str
        The script's docstring; its first line describes the script in ``--help``.
    quick : bool, default=False
        Also add ``--quick`` (smaller sizes, ``args.quick``).

    Returns
    -------
    parser : argparse.ArgumentParser
        Add the script's own arguments, then ``args = parser.parse_args()``;
        ``args.json`` is None or a path checked to be writable before anything runs.
    """
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    if quick:
        parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument(
        "--json",
        metavar="FILE",
        type=_json_path,
        help="also write the results to this file",
    )
    return parser


def _cell(cell, row):
    return cell.format(**row) if isinstance(cell, str) else cell(row)


def markdown_table(columns, rows):
    """A markdown table of ``rows``, one line per row.

    Parameters
    ----------
    columns : sequence of (header, cell)
        ``cell`` is a format string filled with a row's fields
        (``"{seconds:.3f} s"``) or a function of the row returning a string.
    rows : iterable of dict

    Returns
    -------
    table : str
        Header, separator and rows, without a final newline.

    Examples
    --------
    >>> print(markdown_table([("d", "{d}"), ("time", "{seconds:.2f} s")],
    ...                      [{"d": 4, "seconds": 0.123}]))
    | d | time |
    | --- | --- |
    | 4 | 0.12 s |
    """
    lines = [
        "| " + " | ".join(header for header, _ in columns) + " |",
        "| " + " | ".join("---" for _ in columns) + " |",
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(cell, row) for _, cell in columns) + " |")
    return "\n".join(lines)


def _plain(value):
    """json.dump's fallback: numpy scalars and arrays as Python numbers and lists."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def write_json(path, results):
    """Write ``results`` to ``path`` as indented JSON (numpy numbers allowed).

    Does nothing when ``path`` is None (no ``--json`` given).
    """
    if path is None:
        return
    with open(path, "w") as handle:
        json.dump(results, handle, indent=2, default=_plain)
        handle.write("\n")


def random_attention(token_dim, n_heads, n_outputs=1, random_state=None):
    """A random MHLA, parameters ``N(0, 1 / token_dim)`` as in the paper.

    The generating model of ``make_random_mhla`` (which draws the model before the
    sequences): with the same ``random_state``, the same model.
    """
    return make_random_mhla(
        1, 1, token_dim, n_heads=n_heads, n_outputs=n_outputs, random_state=random_state
    )[2]


def reference_lifted_features(sequences):
    """The lifted features from the definition, with ``numpy.einsum``.

    ``phi(Z)[(b, c, e)] = w_bc S[b, c] q[e]`` for ``b <= c`` (in ``numpy.triu_indices``
    order, ``e`` fastest), ``S = Z^T Z``, ``q`` the last token, ``w_bc = sqrt(2)`` off
    the diagonal and 1 on it (Yau et al. 2025; the docs' theory page). The
    straightforward numpy implementation the Numba kernel is checked and timed against.
    """
    n, _, d = sequences.shape
    S = np.einsum("nti,ntj->nij", sequences, sequences)
    rows, cols = np.triu_indices(d)
    weights = np.where(rows == cols, 1.0, np.sqrt(2.0))
    pairs = S[:, rows, cols] * weights
    return np.einsum("nk,ne->nke", pairs, sequences[:, -1]).reshape(n, -1)
