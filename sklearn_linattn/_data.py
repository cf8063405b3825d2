"""The lifted data source: one place that turns validated sequences into what the
solvers need, in memory or on a Dask cluster.

A data source holds the training *rows*: one per sequence (``positions="last"``, the
query is the last token) or one per position (``positions="all"``, the query is the
token at that position and ``S`` the prefix or whole-sequence second moment), each
with a weight (the sample weight; zero for left-padding positions). It offers the
solvers three views of the weighted lifted problem, all in the same (rescaled) units:

- :meth:`statistics`: the sufficient statistics ``Phi^T W Phi``, ``Phi^T W y``, sums
  and counts, streamed chunk by chunk (they add up over rows, chunks and blocks);
- :meth:`compact_rows`: ``sqrt(w) S``-pairs and queries, ``O(n_rows d^2)``, from which
  the structured products and the kernel come without forming ``Phi``;
- :meth:`operator`: ``sqrt(W) Phi`` as a :class:`scipy.sparse.linalg.LinearOperator`.

Rescaling: MHLA is homogeneous of degree 3 in the tokens, so the tokens are scaled by
a power of two ``c`` (largest entry in [1/2, 1)), the targets by a power of two ``s``
and the weights by a power of two ``omega`` before anything is lifted. The lifted
coefficients then scale back exactly by ``c^3 / s`` (:class:`Rescaling`): the cubic
features neither overflow nor underflow, whatever the scale of the data.

What the machine affords is decided here too, for the solvers and
:func:`~sklearn_linattn.certify` alike: :func:`dense_threads` (the BLAS threads of
dense linear algebra on matrices of an order) and :func:`choose_solver` (the solver
``solver="auto"`` picks for data of a size, from :func:`available_memory`).
"""

import contextlib
import copy
import functools
import math
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse.linalg
from scipy.linalg.blas import dsyrk

from ._lift import (
    add_structured_gram,
    largest_magnitude,
    lifted_features,
    lifted_matvec,
    lifted_position_features,
    lifted_rmatvec,
    n_lifted_features,
    pair_statistics,
    position_pair_statistics,
    upper_outer_products,
)
from ._validation import (
    caller_stacklevel,
    check_sequence_values,
    is_dask_array,
    require_dask,
)

__all__ = [
    "CenteredOperator",
    "CompactOperator",
    "DaskLiftedData",
    "FitCost",
    "InMemoryLiftedData",
    "KeptRows",
    "LiftedStatistics",
    "Rescaling",
    "StatisticsSource",
    "available_memory",
    "check_fit_cost",
    "choose_solver",
    "default_batch_size",
    "dense_threads",
    "fit_cost",
    "fold_of_position",
    "is_dask_array",
    "largest_exponent",
    "lifted_data",
    "lifted_predict",
    "sequence_folds",
]

# Memory for one chunk of lifted features when batch_size=None: at least 32 MiB, at
# most 256 MiB, and within that 2 p rows, which the symmetric rank-k update needs to
# run near BLAS speed (measured in benchmarks/bench_solvers.py, section 2).
_CHUNK_BYTES = (32 * 2**20, 256 * 2**20)

# The structured Gram accumulation (LiftedStatistics.add_compact) keeps the distinct
# entries of the Gram, about p^2 / 4, and forms m (m + 1) / 2 pair products per row
# (m = d (d + 1) / 2) in blocks of about this many bytes. It is used while a block of
# 256 rows stays under 64 MiB (d <= 22); beyond, the pair products of a block would
# outgrow the chunk of lifted rows and the symmetric rank-k update of those is used
# (benchmarks/bench_speed.py measures d <= 16 only).
_STRUCTURED_BLOCK_BYTES = 5 * 2**20
_STRUCTURED_MAX_PRODUCTS = 32768
# The structured statistics are summed in this many lanes (chunk i in lane i mod
# _LANES, the lanes added in order): the same sums whatever the thread count, and
# up to this many threads accumulating them.
_LANES = 4


def default_batch_size(n_lifted, rows_per_sample=1):
    """Samples per chunk: ``2 p`` rows, kept between 32 and 256 MiB of features."""
    row_bytes = 8 * n_lifted * rows_per_sample
    low, high = (bound // row_bytes for bound in _CHUNK_BYTES)
    return max(1, min(max(2 * n_lifted // rows_per_sample, low), high))


def structured_block_rows(token_dim):
    """Rows per matrix product of :meth:`LiftedStatistics.add_compact`."""
    n_pairs = token_dim * (token_dim + 1) // 2
    width = n_pairs * (n_pairs + 1) // 2
    return int(min(max(_STRUCTURED_BLOCK_BYTES // (8 * width), 256), 4096))


def compact_workspace(token_dim, block_rows):
    """Buffers for :meth:`LiftedStatistics.add_compact`."""
    n_pairs = token_dim * (token_dim + 1) // 2
    return (
        np.empty((block_rows, n_pairs * (n_pairs + 1) // 2)),
        np.empty((block_rows, token_dim * (token_dim + 1) // 2)),
    )


def _lifts_as_given(token_scale):
    """Whether tokens with this scale are lifted unscaled and their statistics
    rescaled afterwards (:meth:`LiftedStatistics.scale_features`): for scales
    within ``2^-20..2^20`` no sum of products of six entries overflows or
    underflows."""
    return 2.0**-20 <= token_scale <= 2.0**20


def uses_structured_gram(token_dim):
    """Whether the Gram is accumulated from its distinct entries (small ``d``)."""
    n_pairs = token_dim * (token_dim + 1) // 2
    return n_pairs * (n_pairs + 1) // 2 <= _STRUCTURED_MAX_PRODUCTS


_blas_controller = None
_blas_controller_lock = threading.Lock()


def blas_threads():
    """The BLAS thread count in force (``threadpoolctl``; 1 when unknown)."""
    global _blas_controller
    from threadpoolctl import ThreadpoolController

    with _blas_controller_lock:
        if _blas_controller is None:
            _blas_controller = ThreadpoolController()
        controller = _blas_controller
    counts = [
        pool.num_threads
        for pool in controller.lib_controllers
        if pool.user_api == "blas"
    ]
    return max(counts, default=1)


def single_threaded_blas():
    """Context manager: BLAS on one thread (small dense products and factorizations
    run faster so, and do not collapse when other processes share the cores)."""
    global _blas_controller
    from threadpoolctl import ThreadpoolController

    with _blas_controller_lock:
        if _blas_controller is None:
            _blas_controller = ThreadpoolController()
        controller = _blas_controller
    return controller.limit(limits=1, user_api="blas")


# Up to this many rows, the p x p (or n x n) factorizations and eigensolvers run on
# one BLAS thread. With other processes on the cores, OpenBLAS's threads collapse
# (benchmarks/bench_speed.py, section 6: the dual fit at n = 2000 took 24x the time
# of n = 1000 with 2 threads on a loaded machine, for 8x the flops); a second
# thread saves less than 2x on a quiet one.
_SINGLE_THREAD_ORDER = 4096


def dense_threads(order):
    """BLAS limits for dense linear algebra on matrices of this order."""
    if order <= _SINGLE_THREAD_ORDER:
        return single_threaded_blas()
    return contextlib.nullcontext()


# --- the memory budget: the solver "auto" picks -------------------------------------

# Share of the available memory the p x p (normal) or n x n (dual) matrices and their
# decomposition may take (three copies: the matrix, its factor, workspace).
_MEMORY_SHARE = 0.25
_COPIES = 3
# The memory solver="auto" decides for: a fixed reference (a laptop's), not the
# machine's free memory, so that the solver, and with it the model (the lifted
# fit, whether held-out folds are kept for the head search), is the same on every
# machine and load. A machine that cannot hold the chosen solver's matrices gets
# check_fit_cost's ValueError, not another model.
_SOLVER_MEMORY = 16 * 2**30
# The n x n matrices a dual fit holds at its peak (fit_cost, for the refusal; the
# choice below keeps _COPIES, which defines the model): the kernel, kept for the
# read-out, its centered copy and the deflated block (fit_intercept), the
# spectrum's Cholesky factor and the regularized one (alpha > 0). Traced peaks
# at n = 1500, d = 16: 2.3 (alpha = 0), 3.1 (alpha > 0), 4.3 (fit_intercept),
# 5.1 (both) times n^2 floats, rows included.
_DUAL_COPIES = 6
# The compact rows solver="cg" holds at its peak (fit_cost): the rows and LSQR's
# products, temporaries of their size. Traced peaks 2.9 to 3.3 times the rows at
# d = 10 to 16, n = 1500 to 5000.
_CG_COPIES = 4
_FALLBACK_MEMORY = 4 * 2**30


def available_memory():
    """Memory available to a new allocation, in bytes.

    Linux's ``MemAvailable`` (free memory plus reclaimable page cache), else the
    free physical pages, else 4 GiB.
    """
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return _FALLBACK_MEMORY


def choose_solver(n_rows, n_lifted, memory=None, distributed=False):
    """The solver ``solver="auto"`` uses.

    ``"dual"`` when there are fewer rows than lifted features, the data is in
    memory and the ``n_rows x n_rows`` kernel fits; else ``"normal"`` when the
    ``p x p`` Gram matrix fits; else ``"cg"``. "Fits" means three such float64
    matrices take at most a quarter of ``memory`` bytes (default 16 GiB, a
    fixed reference, ``_SOLVER_MEMORY``: not the machine's free memory, on
    which the model would depend).
    """
    budget = _MEMORY_SHARE * (_SOLVER_MEMORY if memory is None else memory)
    if not distributed and n_rows < n_lifted and _COPIES * 8 * n_rows**2 <= budget:
        return "dual"
    if _COPIES * 8 * n_lifted**2 <= budget:
        return "normal"
    return "cg"


# --- what a fit needs: refused before it starts when it cannot run ------------------

# Work of the head read-out beyond which a fit is refused. The read-out folds the
# lifted coefficients into W[(a, b), (c, e)], a (n_outputs d) x d^2 matrix, and
# takes its thin SVD twice (for the head count, then for the heads), on one core:
# 3e11 flops took 48 to 97 s on the project's shared 2-core machine (ArrowHead as
# one token, d = 251, 3 classes; benchmarks/bench_one_token.py), so 1e12 is
# minutes. With a whole series as one token it dominates the fit: OSULeaf (d =
# 427, 6 classes) would need 1e13, after a dual solve of 15 s.
_READOUT_MAX_FLOPS = 1e12


@dataclass(frozen=True)
class FitCost:
    """The largest arrays and the head read-out work of a fit, before it runs
    (:func:`fit_cost`). Sizes in bytes (float64)."""

    n_lifted: int
    n_outputs: int
    token_dim: int
    solver: str
    solver_bytes: float  # the solver's matrices (kernel, Gram) and rows
    coef_bytes: float  # the lifted coefficients, n_outputs x p
    folded_bytes: float  # W, (n_outputs d) x d^2, of the head read-out
    memory: float  # the peak: all of the above and their working copies
    readout_flops: float

    @property
    def folded_shape(self):
        return (self.n_outputs * self.token_dim, self.token_dim**2)


def fit_cost(n_rows, token_dim, n_outputs, solver):
    """Peak memory and head read-out work of a fit, from its sizes alone.

    A model of the largest float64 arrays, summed (a bound: not all live at
    once):

    - the solver's: six ``n_rows x n_rows`` matrices and the compact rows
      (``n_rows (d (d + 1) / 2 + d)``) for ``"dual"``, three ``p x p`` and one
      chunk of lifted rows for ``"normal"``, four copies of the compact rows for
      ``"cg"`` (LSQR's products);
    - the lifted coefficients, ``n_outputs x p``, three times while the solver
      forms them;
    - the head read-out's: four arrays the size of ``W``, ``(n_outputs d) x
      d^2`` (``W``, the copy its SVD works on, its singular vectors, the heads);
      with one output five more (the canonical form of the heads projects the
      slices of ``W``). Measured with ``tracemalloc`` on the paper's read-out
      (``n_heads=None``), the traced peak of fits with a series as one token
      was 0.55 to 0.9 times this sum.

    The read-out's work is that of two thin SVDs of ``W``: ``4 L r^2 + 22 r^3``
    flops each (``r`` the smaller side of ``W``, ``L`` the larger; Golub and Van
    Loan's count).

    Examples
    --------
    >>> from sklearn_linattn._data import fit_cost
    >>> cost = fit_cost(200, 427, 6, "dual")  # OSULeaf, a series as one token
    >>> cost.folded_shape, f"{cost.readout_flops:.0e}"
    ((2562, 182329), '1e+13')
    """
    d = token_dim
    n_lifted = n_lifted_features(d)
    n_pairs = d * (d + 1) // 2
    compact = 8.0 * n_rows * (n_pairs + d)
    if solver == "dual":
        solver_bytes = _DUAL_COPIES * 8.0 * n_rows**2 + compact
    elif solver == "normal":
        rows = min(n_rows, default_batch_size(n_lifted))
        solver_bytes = _COPIES * 8.0 * n_lifted**2 + 8.0 * rows * n_lifted
    else:
        solver_bytes = _CG_COPIES * compact
    coef_bytes = 8.0 * n_outputs * n_lifted
    height, width = n_outputs * d, d * d
    rank, longest = min(height, width), max(height, width)
    folded_bytes = 8.0 * height * width
    readout_copies = 9 if n_outputs == 1 else 4
    return FitCost(
        n_lifted=n_lifted,
        n_outputs=n_outputs,
        token_dim=d,
        solver=solver,
        solver_bytes=solver_bytes,
        coef_bytes=coef_bytes,
        folded_bytes=folded_bytes,
        memory=solver_bytes + 3 * coef_bytes + readout_copies * folded_bytes,
        readout_flops=2.0 * (4.0 * longest * rank**2 + 22.0 * rank**3),
    )


def _size(n_bytes):
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n_bytes >= size:
            return f"{n_bytes / size:.3g} {unit}"
    return f"{n_bytes / 1e3:.3g} kB"


def _dimension(n):
    """A size as digits, or as a power of two beyond 1e18 (Python prints no
    integer of more than 4300 digits)."""
    return str(n) if n < 10**18 else f"~2**{int(n).bit_length() - 1}"


def check_allocation(caller, shapes, memory=None, peak=1):
    """A ValueError before ``caller`` allocates float64 arrays of ``shapes``
    (a dict, description -> shape) whose ``peak`` times (the working copies at
    its peak) exceed the available memory (:func:`available_memory`, or
    ``memory`` bytes), naming them. Sizes are Python integers: any size, even
    beyond the float range, is compared exactly."""
    needed = 8 * sum(math.prod(int(n) for n in shape) for shape in shapes.values())
    memory = available_memory() if memory is None else memory
    if peak * needed > memory:
        arrays = ", ".join(
            f"{name} of shape ({', '.join(map(_dimension, shape))})"
            for name, shape in shapes.items()
        )
        size = _size(needed) if needed < 1e18 else "more than 1e18 bytes"
        at_peak = f", about {peak} times that at its peak" if peak > 1 else ""
        raise ValueError(
            f"{caller} would allocate {arrays} ({size}{at_peak}), more than the "
            f"{_size(memory)} of memory available: reduce these sizes."
        )


def check_features_memory(n_samples, token_dim, memory=None):
    """A ValueError before lifted features that cannot fit in memory
    (:func:`available_memory`, or ``memory`` bytes) are allocated."""
    n_lifted = n_lifted_features(token_dim)
    needed = 8.0 * n_samples * n_lifted
    memory = available_memory() if memory is None else memory
    if needed > memory:
        raise ValueError(
            f"The lifted features of {n_samples:,} sequences are a {n_samples:,} x "
            f"{n_lifted:,} array ({_size(needed)}), more than the {_size(memory)} "
            f"of memory available: token dimension d = {token_dim} gives p = d^2 "
            "(d + 1) / 2 lifted features. Transform fewer sequences at a time (or "
            "a Dask array), or reduce the token dimension first, e.g. "
            "make_pipeline(PCA(n_components=64), LiftedAttentionFeatures())."
        )


def check_fit_cost(data, solver, memory=None):
    """A ValueError before a fit that cannot run: its peak memory
    (:func:`fit_cost`) beyond the available memory (:func:`available_memory`,
    or ``memory`` bytes), or its head read-out beyond 1e12 flops (minutes to
    hours on one core). The message names the sizes, what dominates and what to
    do.
    """
    cost = fit_cost(data.n_rows, data.token_dim, max(data.n_outputs, 1), solver)
    memory = available_memory() if memory is None else memory
    too_large = cost.memory > memory
    too_slow = cost.readout_flops > _READOUT_MAX_FLOPS
    if not (too_large or too_slow):
        return cost
    # (solver='cg' is suggested only where its own memory fits: the lifted
    # coefficients and W, kept by every solver, can be what does not)
    cg_fits = (
        fit_cost(data.n_rows, data.token_dim, max(data.n_outputs, 1), "cg").memory
        <= memory
    )
    reasons = []
    if too_large:
        reasons.append(
            f"about {_size(cost.memory)} of memory, more than the "
            f"{_size(memory)} available"
        )
    if too_slow:
        reasons.append(
            f"about {cost.readout_flops:.1e} floating-point operations in its head "
            f"read-out (the limit is {_READOUT_MAX_FLOPS:.0e}, minutes on one core)"
        )
    solver_part = {
        "dual": f"the {data.n_rows:,} x {data.n_rows:,} kernel",
        "normal": f"the {cost.n_lifted:,} x {cost.n_lifted:,} Gram matrix",
        "cg": "products with the lifted rows",
    }[solver]
    height, width = cost.folded_shape
    raise ValueError(
        "This fit would need " + " and ".join(reasons) + ". The model has p = "
        f"{cost.n_lifted:,} lifted features (token dimension d = {cost.token_dim}) "
        f"and {cost.n_outputs} output(s): solver {solver!r} works on {solver_part} "
        f"({_size(cost.solver_bytes)}) and returns the {cost.n_outputs} x "
        f"{cost.n_lifted:,} lifted coefficients ({_size(cost.coef_bytes)}); the "
        f"head read-out folds them into W, a {height:,} x {width:,} matrix "
        f"({_size(cost.folded_bytes)}), and takes its SVD. Memory grows as "
        "n_outputs d^3, the read-out's work as n_outputs^2 d^4: reduce the token "
        "dimension. For a whole series as one token (the cubic kernel), reduce "
        "the series first, e.g. make_pipeline(PCA(n_components=64), estimator) "
        "(d = 64: p = 133,120) or every k-th value; for sequences, "
        "TokenwiseTransformer(PCA(n_components=k)), fewer position features or a "
        "smaller SeriesToTokens window."
        + (
            " Or set solver='cg' (O(n_samples d^2) memory): solver='auto' "
            "chooses as if 16 GiB were available on every machine, so that the "
            "model is the same on each."
            if too_large and solver != "cg" and cg_fits else ""
        )
    )


def to_unit(array, axes):
    """``array`` scaled by powers of two to entries below 1 in absolute value
    over ``axes`` (each slice in [1/2, 1) at its largest; zeros kept), and the
    integer exponents that scale it back, exactly: ``ldexp(scaled, exponents)``.
    """
    exponents = np.frexp(np.abs(array).max(axis=axes, initial=0.0))[1]
    return np.ldexp(array, -np.expand_dims(exponents, axes)), exponents


def largest_exponent(array):
    """The power-of-two exponent of ``array``'s largest entry in absolute value
    (``largest < 2**e``; 0 for an empty, all-zero or non-finite array): units in
    which its squares neither overflow nor underflow, exactly."""
    largest = np.max(np.abs(array), initial=0.0)
    return int(np.frexp(largest)[1]) if np.isfinite(largest) else 0


def power_of_two_scale(largest, name="X"):
    """The power of two ``c`` with ``c * largest`` in [1/2, 1) (1 for 0 or inf).

    Raises a ValueError for values so small (below about 1e-301, the subnormal
    range) that ``1 / largest`` is not a float.
    """
    if not np.isfinite(largest) or largest <= 0:
        return 1.0
    exponent = int(np.frexp(largest)[1])
    if exponent < -1000:
        raise ValueError(
            f"The largest entry of {name} in absolute value is {largest:.1e}: values "
            "this small (below about 1e-301) cannot be rescaled exactly. Multiply "
            f"{name} by a constant first (for sample weights only their ratios matter)."
        )
    return float(np.ldexp(1.0, -exponent))


@dataclass(frozen=True)
class Rescaling:
    """Powers of two applied to tokens, targets and weights before lifting.

    A model fitted to the rescaled rows has lifted coefficients ``theta_s``; the
    coefficients for the data as given are ``theta_s * c^3 / s`` (exact: powers of
    two). The ridge penalty ``alpha`` of the original problem is
    ``alpha * omega * c^6`` in rescaled units, and the certificate's eigenvalues
    divide by ``c^6``. Products of the scales are formed by ``numpy.ldexp`` so that
    no intermediate overflows.
    """

    token: float = 1.0
    target: float = 1.0
    weight: float = 1.0

    @staticmethod
    def _exponent(power_of_two):
        return int(np.frexp(power_of_two)[1]) - 1

    @property
    def coef_exponent(self):
        """``log2`` of ``c^3 / s``, the factor from rescaled to original
        coefficients."""
        return 3 * self._exponent(self.token) - self._exponent(self.target)

    def coef(self, coef):
        """Rescaled lifted coefficients in the data's units (times ``c^3 / s``)."""
        return np.ldexp(coef, self.coef_exponent)

    def heads(self, matrices):
        """Value or query matrices of a rescaled model in the data's units: each
        carries the square root of ``c^3 / s``."""
        exponent = self.coef_exponent
        root = np.sqrt(2.0) if exponent % 2 else 1.0
        return np.ldexp(matrices * root, exponent // 2)

    def squared_error(self, error):
        """Squared errors of rescaled targets in the data's units (over ``s^2``;
        inf beyond the float range, for targets near its top: reported only)."""
        with np.errstate(over="ignore"):
            return np.ldexp(error, -2 * self._exponent(self.target))

    def alpha(self, alpha):
        """The ridge penalty in rescaled units, ``alpha * omega * c^6`` (capped at
        the largest float)."""
        exponent = self._exponent(self.weight) + 6 * self._exponent(self.token)
        with np.errstate(over="ignore"):
            scaled = np.ldexp(float(alpha), exponent)
        return float(min(scaled, np.finfo(np.float64).max))

    def unscaled_alpha(self, scaled):
        """Ridge penalties in rescaled units back in the data's units (divided by
        ``omega * c^6``; exact, powers of two), NaN where that is not a normal
        float64 (beyond the float range, or below it: ``c^6`` reaches ``1e+-300``
        for ``|X|`` near ``1e+-50``)."""
        exponent = self._exponent(self.weight) + 6 * self._exponent(self.token)
        scaled = np.asarray(scaled, dtype=np.float64)
        with np.errstate(over="ignore", under="ignore"):
            unscaled = np.ldexp(scaled, -exponent)
        normal = np.isfinite(unscaled) & (np.abs(unscaled) >= np.finfo(np.float64).tiny)
        return np.where(normal | (scaled == 0), unscaled, np.nan)

    def eigenvalue(self, value):
        """An eigenvalue of the rescaled ``Lambda`` in the data's units (``/ c^6``)."""
        with np.errstate(under="ignore", over="ignore"):
            return float(np.ldexp(value, -6 * self._exponent(self.token)))

    @classmethod
    def from_largest(cls, token, target=None, weight=None):
        """The scales for data whose largest magnitudes are these (``None``: no
        targets, or no sample weights); errors name ``X``, ``y``, ``sample_weight``
        (:func:`power_of_two_scale`)."""
        token = power_of_two_scale(float(token))
        target = 1.0 if target is None else power_of_two_scale(float(target), "y")
        if weight is not None:
            weight = power_of_two_scale(float(weight), "sample_weight")
        return cls(token, target, 1.0 if weight is None else weight)


class LiftedStatistics:
    """Running weighted sums that determine the lifted least-squares problem.

    Rows arrive scaled by the square roots of their weights (``sqrt(w) phi``,
    ``sqrt(w) y`` and ``sqrt(w)`` itself), so every sum is a weighted one.

    Parameters
    ----------
    n_lifted : int
    n_outputs : int

    Attributes
    ----------
    gram_upper : ndarray of shape (p, p), Fortran-ordered
        Upper triangle of ``Phi^T W Phi`` (the lower triangle is maintained only by
        :meth:`add_compact`). Reading it folds in the distinct entries
        :meth:`add_compact` accumulated.
    moment : ndarray of shape (p, n_outputs)
        ``Phi^T W y``.
    feature_sum : ndarray of shape (p,)
        ``Phi^T w``.
    target_sum : ndarray of shape (n_outputs,)
        ``y^T w``.
    target_square_sum : ndarray of shape (n_outputs,)
        ``sum_i w_i y_i^2``, for the residual sum of squares.
    target_products : ndarray of shape (n_outputs, n_outputs)
        ``sum_i w_i y_i y_i^T``, for the residuals' correlations across outputs.
    weight_sum : float
    weight_square_sum : float
        ``sum_i w_i^2``, for the effective number of rows.
    n_observations : int
        Rows with a positive weight.
    n_rows : int
        Rows added, those of weight zero too (the rows ``fit`` in memory fits
        the heads on, where it fits them on its rows).
    """

    def __init__(self, n_lifted, n_outputs):
        self._gram = None  # allocated when first read or added to (p x p)
        # Distinct Gram entries accumulated by add_compact, folded into the Gram
        # when it is read (see _lift.add_structured_gram).
        self._products = None
        self._token_dim = None
        self.moment = np.zeros((n_lifted, n_outputs))
        self.feature_sum = np.zeros(n_lifted)
        self.target_sum = np.zeros(n_outputs)
        self.target_square_sum = np.zeros(n_outputs)
        self.target_products = np.zeros((n_outputs, n_outputs))
        self.weight_sum = 0.0
        self.weight_square_sum = 0.0
        self.n_observations = self.n_rows = 0

    @property
    def gram_upper(self):
        self.fold()
        if self._gram is None:
            self._gram = np.zeros((self.n_lifted, self.n_lifted), order="F")
        return self._gram

    def fold(self):
        """Fold the distinct entries accumulated by :meth:`add_compact` into the
        Gram (done whenever it is read)."""
        if self._products is not None:
            if self._gram is None:
                self._gram = np.zeros((self.n_lifted, self.n_lifted), order="F")
            add_structured_gram(self._products, self._token_dim, self._gram)
            self._products = None

    @gram_upper.setter
    def gram_upper(self, value):
        self._products = None
        self._gram = value

    @property
    def n_lifted(self):
        return self.moment.shape[0]

    @property
    def _has_gram(self):
        """Whether the folded Gram holds sums (not only pending products)."""
        return self._gram is not None and bool(self._gram.any())

    def with_output_weights(self, weights):
        """These statistics with output ``j``'s targets multiplied by
        ``weights[j]`` (a copy sharing the Gram, read-only; exact for powers of
        two)."""
        self.fold()
        weighted = copy.copy(self)
        weighted.moment = self.moment * weights
        weighted.target_sum = self.target_sum * weights
        weighted.target_square_sum = self.target_square_sum * weights**2
        weighted.target_products = self.target_products * np.outer(weights, weights)
        return weighted

    @property
    def n_outputs(self):
        return self.moment.shape[1]

    def add(self, features, targets, row_scale):
        """Add a chunk of weighted rows.

        Parameters
        ----------
        features : ndarray of shape (m, p), C-ordered
            ``sqrt(w) phi`` of each row.
        targets : ndarray of shape (m, n_outputs)
            ``sqrt(w) y``.
        row_scale : ndarray of shape (m,)
            ``sqrt(w)``.
        """
        # Symmetric rank-m update of the upper triangle; features.T is Fortran-ordered,
        # so BLAS reads it in place.
        self.gram_upper = dsyrk(
            1.0,
            features.T,
            beta=1.0,
            c=self.gram_upper,
            trans=0,
            lower=0,
            overwrite_c=1,
        )
        # Phi^T W y and Phi^T w in one pass: (sqrt(w) Phi)^T [sqrt(w) y, sqrt(w)].
        augmented = np.empty((targets.shape[0], targets.shape[1] + 1))
        augmented[:, :-1] = targets
        augmented[:, -1] = row_scale
        products = features.T @ augmented
        self.moment += products[:, :-1]
        self.feature_sum += products[:, -1]
        self._add_sums(targets, row_scale)

    def _add_sums(self, targets, row_scale):
        self.target_sum += row_scale @ targets
        self.target_square_sum += np.einsum("ij,ij->j", targets, targets)
        self.target_products += targets.T @ targets
        self.weight_sum += float(row_scale @ row_scale)
        with np.errstate(over="ignore"):  # (effective_observations: inf is unknown)
            weights = row_scale * row_scale
            self.weight_square_sum += float(weights @ weights)
        self.n_observations += int(np.count_nonzero(row_scale))
        self.n_rows += len(row_scale)

    def add_compact(
        self, pairs, queries, targets, row_scale, block_rows=None, workspace=None
    ):
        """Add a chunk of weighted rows given in compact form, without their lifted
        features.

        The Gram's distinct entries ``sum_i s_ia s_ib q_ie q_if`` (``a <= b``,
        ``e <= f``: about ``p^2 / 4`` of them) are accumulated as one matrix product
        per block of rows, half the flops of a symmetric rank-k update of the
        lifted rows (see :func:`~sklearn_linattn._lift.add_structured_gram`).

        Parameters
        ----------
        pairs : ndarray of shape (m, d * (d + 1) // 2), C-ordered
            ``sqrt(w) s`` of each row (weighted pair statistics).
        queries : ndarray of shape (m, d), C-ordered
        targets : ndarray of shape (m, n_outputs)
            ``sqrt(w) y``.
        row_scale : ndarray of shape (m,)
            ``sqrt(w)``.
        block_rows : int, optional
            Rows per matrix product (memory: ``block_rows * n_pairs^2 / 2`` floats).
        workspace : tuple of two ndarrays, optional
            Buffers of shapes ``(block_rows, n_pairs * (n_pairs + 1) // 2)`` and
            ``(block_rows, d * (d + 1) // 2)`` to reuse between calls.
        """
        n_rows, d = queries.shape
        n_pairs = pairs.shape[1]
        width, query_width = n_pairs * (n_pairs + 1) // 2, d * (d + 1) // 2
        if self._products is None:
            self._products = np.zeros((width, query_width), order="F")
            self._token_dim = d
        if block_rows is None:
            block_rows = structured_block_rows(d)
        if workspace is None:
            block_rows = max(1, min(block_rows, n_rows))
            workspace = compact_workspace(d, block_rows)
        pair_products, query_products = workspace
        block_rows = pair_products.shape[0]
        # products^T (C-ordered view of the Fortran-ordered products) += right^T left,
        # through numpy's matmul: it releases the GIL, so the threads of
        # InMemoryLiftedData.statistics multiply in parallel (scipy's BLAS wrappers
        # hold it).
        accumulated = self._products.T
        product = np.empty_like(accumulated)
        for start in range(0, n_rows, block_rows):
            stop = min(start + block_rows, n_rows)
            left = upper_outer_products(
                pairs[start:stop], out=pair_products[: stop - start]
            )
            right = upper_outer_products(
                queries[start:stop], out=query_products[: stop - start]
            )
            np.matmul(right.T, left, out=product)
            accumulated += product
        # Phi^T W y and Phi^T w in one product: s^T [(sqrt(w) y, sqrt(w)) (x) q].
        augmented = np.empty((n_rows, targets.shape[1] + 1))
        augmented[:, :-1] = targets
        augmented[:, -1] = row_scale
        weighted_queries = (augmented[:, :, None] * queries[:, None, :]).reshape(
            n_rows, -1
        )
        products = (pairs.T @ weighted_queries).reshape(n_pairs, -1, d)
        products = products.transpose(1, 0, 2).reshape(augmented.shape[1], -1)
        self.moment += products[:-1].T
        self.feature_sum += products[-1]
        self._add_sums(targets, row_scale)

    def scale_features(self, factor):
        """The statistics of the same rows with every lifted feature multiplied by
        ``factor`` (tokens by ``c``: ``factor = c^3``; a power of two keeps this
        exact). Returns ``self``."""
        if factor == 1.0:
            return self
        if self._gram is not None:
            self._gram *= factor * factor
        if self._products is not None:  # folded into the Gram as they are
            self._products *= factor * factor
        self.moment *= factor
        self.feature_sum *= factor
        return self

    def merge(self, other):
        """Add the statistics of other rows (sums add up): returns ``self``.
        Where both hold only distinct Gram entries not yet folded, these add up
        as they are: folding is a gather, so the sums are added in the same
        order as folded Grams would be (and each batch of ``partial_fit`` does
        not fold its folds' Grams). Otherwise both are folded first."""
        if other._products is not None and not (self._has_gram or other._has_gram):
            if self._products is None:
                self._products = other._products.copy(order="F")
                self._token_dim = other._token_dim
            else:
                self._products += other._products
        else:
            self.gram_upper += other.gram_upper
        self.moment += other.moment
        self.feature_sum += other.feature_sum
        self.target_sum += other.target_sum
        self.target_square_sum += other.target_square_sum
        self.target_products += other.target_products
        self.weight_sum += other.weight_sum
        self.weight_square_sum += other.weight_square_sum
        self.n_observations += other.n_observations
        self.n_rows += other.n_rows
        return self

    @property
    def effective_observations(self):
        """:func:`effective_observations` of these rows."""
        return effective_observations(
            self.weight_sum, self.weight_square_sum, self.n_observations
        )

    def copy(self):
        new = LiftedStatistics.__new__(LiftedStatistics)
        new.__dict__.update(
            {
                key: value.copy(order="K") if isinstance(value, np.ndarray) else value
                for key, value in self.__dict__.items()
            }
        )
        if new._gram is not None:
            new._gram = np.asfortranarray(new._gram)
        return new

    def __getstate__(self):
        self.fold()  # pickle the Gram, not pending products
        return self.__dict__

    def __setstate__(self, state):
        # statistics pickled before n_rows was kept: their rows of positive weight
        state.setdefault("n_rows", state["n_observations"])
        self.__dict__.update(state)

    def normal_equations(self, fit_intercept):
        """The weighted (and, with an intercept, centered) normal equations.

        Returns
        -------
        gram : ndarray of shape (p, p)
            ``Phi^T W Phi``, or ``(Phi - mean)^T W (Phi - mean)`` with an intercept.
        moment : ndarray of shape (p, n_outputs)
        target_square_sum : ndarray of shape (n_outputs,)
            ``sum_i w_i (y_i - target_mean)^2``.
        feature_mean : ndarray of shape (p,)
            Weighted column means; zero without an intercept.
        target_mean : ndarray of shape (n_outputs,)
            Zero without an intercept.
        """
        upper = np.triu(self.gram_upper)
        gram = upper + np.triu(upper, 1).T
        moment = self.moment.copy()
        squares = self.target_square_sum.copy()
        if not fit_intercept or self.weight_sum == 0:
            zeros = np.zeros(gram.shape[0]), np.zeros(moment.shape[1])
            return gram, moment, squares, *zeros
        total = self.weight_sum
        feature_mean = self.feature_sum / total
        target_mean = self.target_sum / total
        gram -= total * np.outer(feature_mean, feature_mean)
        moment -= total * np.outer(feature_mean, target_mean)
        squares -= total * target_mean**2
        return gram, moment, np.maximum(squares, 0.0), feature_mean, target_mean


def sum_statistics(parts):
    """The statistics of the union of disjoint sets of rows (a new object)."""
    parts = iter(parts)
    total = next(parts).copy()
    for part in parts:
        total.merge(part)
    return total


class CompactOperator(scipy.sparse.linalg.LinearOperator):
    """``sqrt(W) Phi`` from the compact rows (weighted pairs and queries)."""

    def __init__(self, pairs, queries):
        self.pairs, self.queries = pairs, queries
        n_lifted = pairs.shape[1] * queries.shape[1]
        super().__init__(np.float64, (pairs.shape[0], n_lifted))

    def _matvec(self, vector):
        return lifted_matvec(self.pairs, self.queries, np.ravel(vector)[None])[:, 0]

    def _rmatvec(self, vector):
        return lifted_rmatvec(self.pairs, self.queries, np.ravel(vector)[:, None])[0]

    def squared_column_norms(self):
        """The diagonal of ``A^T A``: ``sum_i w_i s_ia^2 q_ie^2`` for feature
        ``(a, e)``."""
        return _squared_column_norms(self.pairs, self.queries)


def _squared_column_norms(pairs, queries):
    return np.ravel((pairs**2).T @ queries**2)


class CenteredOperator(scipy.sparse.linalg.LinearOperator):
    """``sqrt(W) (Phi - 1 mean^T)`` from ``sqrt(W) Phi``: the intercept's centering,
    immutable and shared by every solver's operator.

    Parameters
    ----------
    operator : LinearOperator of shape (n_rows, p)
        ``sqrt(W) Phi``.
    row_scale : ndarray of shape (n_rows,)
        ``sqrt(w)``.
    feature_mean : ndarray of shape (p,)
    """

    def __init__(self, operator, row_scale, feature_mean):
        self.operator, self.row_scale, self.feature_mean = (
            operator,
            row_scale,
            feature_mean,
        )
        super().__init__(np.float64, operator.shape)

    def _matvec(self, vector):
        vector = np.ravel(vector)
        return self.operator.matvec(vector) - self.row_scale * (
            self.feature_mean @ vector
        )

    def _rmatvec(self, vector):
        vector = np.ravel(vector)
        return self.operator.rmatvec(vector) - self.feature_mean * (
            self.row_scale @ vector
        )


def padding_row_mask(sequences):
    """``(n_samples, n_tokens)`` bool: True for the leading all-zero tokens."""
    nonzero = np.any(sequences != 0, axis=2)
    return np.cumsum(nonzero, axis=1) == 0


def _kept_positive(scaled, original):
    """``scaled`` (``original`` times a positive scale), with entries that
    underflowed to zero where ``original`` is positive set to the smallest
    subnormal: whether a row has weight must not depend on the scale, which
    ``fit`` (from the largest of all the weights) and ``partial_fit`` (from the
    first batch's) choose differently."""
    underflowed = (scaled == 0) & (original > 0)
    return np.where(underflowed, np.finfo(np.float64).smallest_subnormal, scaled)


def _row_scale(sequences, sample_weight, positions, weight_scale):
    """``sqrt(w)`` per row: the weight (times ``weight_scale``), and zero at
    left-padding positions. With ``positions="all"`` the weights may be given per
    sequence or per position (class weights differ between positions)."""
    n_samples, n_tokens, _ = sequences.shape
    if sample_weight is None:
        weights = np.ones(n_samples)
    else:
        weights = np.asarray(sample_weight, dtype=np.float64)
        weights = _kept_positive(weights * weight_scale, weights)
    if positions == "last":
        return np.sqrt(weights)
    kept = ~padding_row_mask(sequences)
    weights = weights.reshape(n_samples, -1)  # (n, 1) per sequence, (n, T) per row
    return np.sqrt((kept * weights).ravel())


class _RowLayout:
    """Which rows a sequence contributes: its last token, or every position."""

    def __init__(self, positions, causal, token_dim):
        self.positions, self.causal = positions, causal
        self.token_dim = token_dim
        self.n_lifted = n_lifted_features(token_dim)

    def rows_per_sample(self, n_tokens):
        return 1 if self.positions == "last" else n_tokens

    def features(self, sequences, out=None, n_threads=1):
        if self.positions == "last":
            return lifted_features(sequences, out=out, n_threads=n_threads)
        return lifted_position_features(
            sequences, causal=self.causal, out=out, n_threads=n_threads
        )

    def pairs(self, sequences, n_threads=1, return_largest=False):
        """Compact rows (pairs, queries), and ``max |sequences|`` with
        ``return_largest`` (found in the same pass for ``positions="last"``)."""
        if self.positions == "last":
            return pair_statistics(
                sequences, n_threads=n_threads, return_largest=return_largest
            )
        compact = position_pair_statistics(
            sequences, causal=self.causal, n_threads=n_threads
        )
        if return_largest:
            return (*compact, largest_magnitude(sequences))
        return compact


class InMemoryLiftedData:
    """Lifted rows of an in-memory array of sequences.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64, C-ordered
        Validated; never written to, never copied whole.
    targets : ndarray of shape (n_rows, n_outputs) or None
        One row per sequence (``"last"``) or per position (``"all"``, sample-major).
    sample_weight : ndarray of shape (n_samples,) or None
    positions : {"last", "all"}
    causal : bool
    batch_size : int or None
        Samples per chunk.
    n_threads : int
    """

    is_distributed = False

    def __init__(
        self,
        sequences,
        targets=None,
        sample_weight=None,
        positions="last",
        causal=True,
        batch_size=None,
        n_threads=1,
    ):
        n_samples, n_tokens, token_dim = sequences.shape
        self.sequences = sequences
        self.layout = _RowLayout(positions, causal, token_dim)
        self.n_lifted = self.layout.n_lifted
        self.token_dim = token_dim
        rows_per_sample = self.layout.rows_per_sample(n_tokens)
        self.n_rows = n_samples * rows_per_sample
        if batch_size is None:
            batch_size = default_batch_size(self.n_lifted, rows_per_sample)
        self.batch_size = max(1, min(batch_size, n_samples))
        self.n_threads = n_threads
        # The token scale needs max |X|, a pass over all of X: it is found by the
        # first pass that reads X anyway (see the rescaling property).
        self._rescaling = Rescaling.from_largest(
            0.0,
            None if targets is None else np.max(np.abs(targets), initial=0.0),
            None if sample_weight is None else np.max(sample_weight, initial=0.0),
        )
        self._token_scale_known = False
        self.row_scale = _row_scale(
            sequences, sample_weight, positions, self._rescaling.weight
        )
        self.n_observations = int(np.count_nonzero(self.row_scale))
        self.targets = None
        self.n_outputs = 0
        if targets is not None:
            self.targets = targets * (self.row_scale * self._rescaling.target)[:, None]
            self.n_outputs = targets.shape[1]

    @property
    def rescaling(self):
        """The :class:`Rescaling` of these data (the token scale is found on first
        use, by a scan of ``X`` unless :meth:`statistics` found it on its way)."""
        if not self._token_scale_known:
            self._set_token_scale(largest_magnitude(self.sequences))
        return self._rescaling

    def _set_token_scale(self, largest):
        self._rescaling = replace(self._rescaling, token=power_of_two_scale(largest))
        self._token_scale_known = True

    def set_rescaling(self, rescaling):
        """Use other scales (``partial_fit`` keeps the first batch's, so that the
        statistics of all batches add up); targets and weights follow."""
        old = self._rescaling
        weight_factor = np.sqrt(rescaling.weight / old.weight)
        self.row_scale = _kept_positive(self.row_scale * weight_factor, self.row_scale)
        if self.targets is not None:
            self.targets = self.targets * (
                weight_factor * rescaling.target / old.target
            )
        self._rescaling = rescaling
        self._token_scale_known = True

    def _chunks(self, batch_size=None):
        """Yield ``(row_start, row_stop, rescaled sequences of the chunk)``."""
        for start, stop in self._chunk_bounds(batch_size):
            yield self._chunk(start, stop)

    def _chunk_bounds(self, batch_size=None):
        n_samples = self.sequences.shape[0]
        batch_size = self.batch_size if batch_size is None else batch_size
        return [
            (start, min(start + batch_size, n_samples))
            for start in range(0, n_samples, batch_size)
        ]

    def _chunk(self, start, stop):
        """``(row_start, row_stop, rescaled sequences)`` of samples start:stop."""
        per_sample = self.layout.rows_per_sample(self.sequences.shape[1])
        chunk = np.ascontiguousarray(self.sequences[start:stop])
        if self.rescaling.token != 1.0:
            chunk = chunk * self.rescaling.token
        return start * per_sample, stop * per_sample, chunk

    def statistics(self, progress=None):
        """Stream the weighted lifted rows into :class:`LiftedStatistics`.

        For small ``d`` (:func:`uses_structured_gram`) the rows stay in compact form
        and the Gram's distinct entries are accumulated
        (:meth:`LiftedStatistics.add_compact`) in ``_LANES`` fixed lanes, by as
        many threads as ``n_threads`` or the BLAS thread count allows (at most
        the lanes), each with single-threaded BLAS, the lanes added up in order
        at the end: the same bits on any thread count; otherwise each chunk of
        lifted rows goes through a symmetric rank-k update.
        """
        if uses_structured_gram(self.token_dim):
            return self._structured_statistics(progress)
        statistics = LiftedStatistics(self.n_lifted, self.n_outputs)
        targets = np.zeros((self.n_rows, 0)) if self.targets is None else self.targets
        buffer = None
        for start, stop, chunk in self._chunks():
            if buffer is None:
                buffer = np.empty((stop - start, self.n_lifted))
            features = self.layout.features(
                chunk, out=buffer[: stop - start], n_threads=self.n_threads
            )
            scale = self.row_scale[start:stop]
            features *= scale[:, None]
            statistics.add(features, targets[start:stop], scale)
            if progress is not None:
                progress(stop, self.n_rows)
        return statistics

    def sequence_folds(self, n_folds, first_sample=0):
        """The fold of each sequence (:func:`sequence_folds`)."""
        per_sample = self.layout.rows_per_sample(self.sequences.shape[1])
        return sequence_folds(self.row_scale, per_sample, n_folds, first_sample)

    def folds_of_rows(self, n_folds, first_sample=0):
        """The fold of each row: its sequence's (:meth:`sequence_folds`)."""
        per_sample = self.layout.rows_per_sample(self.sequences.shape[1])
        return np.repeat(self.sequence_folds(n_folds, first_sample), per_sample)

    def fold_statistics(self, n_folds, first_sample=0, progress=None):
        """The statistics of ``n_folds`` folds of the sequences
        (:func:`sequence_folds`; all positions of a sequence in one fold). They
        add up to :meth:`statistics`, in one pass over the data; the scales are
        shared.

        Returns
        -------
        list of LiftedStatistics
        """
        rescaling = self.rescaling  # shared by the folds (a scan if not known)
        n_samples = self.sequences.shape[0]
        per_sample = self.layout.rows_per_sample(self.sequences.shape[1])
        sequence_fold = self.sequence_folds(n_folds, first_sample)
        folds = []
        for fold in range(n_folds):
            members = sequence_fold == fold
            view = copy.copy(self)
            view.sequences = self.sequences[members]
            view.row_scale = self.row_scale.reshape(n_samples, per_sample)[
                members
            ].ravel()
            if self.targets is not None:
                view.targets = self.targets.reshape(
                    n_samples, per_sample, self.n_outputs
                )[members].reshape(-1, self.n_outputs)
            view.n_rows = view.row_scale.shape[0]
            view.n_observations = int(np.count_nonzero(view.row_scale))
            view.batch_size = max(1, min(self.batch_size, view.sequences.shape[0]))
            view._rescaling, view._token_scale_known = rescaling, True
            folds.append(view.statistics())
            if progress is not None:
                progress(min(fold + 1, n_folds) * self.n_rows // n_folds, self.n_rows)
        return folds

    def residual_sum_of_squares(self, coef, feature_mean, target_mean):
        """Weighted residual sum of squares of a (rescaled) model, by one more
        streamed pass: exact where the statistics' difference of large terms
        rounds away a small residual. Rows in the form :meth:`statistics` used
        (compact or lifted), so that a fit compiles no other kernel."""
        total = np.zeros(coef.shape[0])
        offset = target_mean - coef @ feature_mean
        compact = uses_structured_gram(self.token_dim)
        for start, stop, chunk in self._chunks():
            if compact:
                pairs, queries = self.layout.pairs(chunk, n_threads=self.n_threads)
                fitted = lifted_matvec(pairs, queries, coef) + offset
            else:
                features = self.layout.features(chunk, n_threads=self.n_threads)
                fitted = features @ coef.T + offset
            residual = (
                self.targets[start:stop] - self.row_scale[start:stop, None] * fitted
            )
            total += np.einsum("ij,ij->j", residual, residual)
        return total

    def _structured_statistics(self, progress):
        targets = np.zeros((self.n_rows, 0)) if self.targets is None else self.targets
        # Chunks of one matrix product each (compact rows are small), chunk i in
        # lane i mod _LANES; each lane sums its chunks in order and the lanes are
        # added in lane order, so that the sums, and their rounding, are the same
        # whatever the threads (which take lanes as they come free).
        per_sample = self.layout.rows_per_sample(self.sequences.shape[1])
        threads = max(self.n_threads, blas_threads())
        block_rows = structured_block_rows(self.token_dim)
        # at least 4 chunks per lane, for balance
        block_rows = min(block_rows, max(256, -(-self.n_rows // (4 * _LANES))))
        bounds = self._chunk_bounds(
            max(1, min(self.batch_size, block_rows // per_sample))
        )
        n_lanes = max(1, min(_LANES, len(bounds)))
        n_workers = max(1, min(threads, n_lanes))
        lock = threading.Lock()
        done = [0]

        # Tokens whose scale c is within 2^-20..2^20 are lifted as given and the
        # statistics scaled afterwards (exact: powers of two; no copy of the chunk).
        # When c is not known yet, each thread also finds max |X| over its chunks
        # while they are in cache, instead of a separate pass over all of X.
        find_scale = not self._token_scale_known
        scale_after = find_scale or _lifts_as_given(self._rescaling.token)
        large_tokens = threading.Event()  # a chunk has |x| >= 2^20: lift scaled chunks

        def chunks(lane):
            for start, stop in bounds[lane::n_lanes]:
                if large_tokens.is_set():
                    return
                if scale_after:
                    rows = start * per_sample, stop * per_sample
                    yield *rows, np.ascontiguousarray(self.sequences[start:stop])
                else:
                    yield self._chunk(start, stop)

        def accumulate(lane):
            statistics = LiftedStatistics(self.n_lifted, self.n_outputs)
            workspace, largest = None, 0.0
            for start, stop, chunk in chunks(lane):
                if find_scale:
                    pairs, queries, chunk_largest = self.layout.pairs(
                        chunk, return_largest=True
                    )
                    largest = max(largest, chunk_largest)
                    # (small entries are no verdict yet: a later chunk may be
                    # larger; the pairs of large ones are not used)
                    if power_of_two_scale(largest) < 2.0**-20:
                        large_tokens.set()
                        break
                else:
                    pairs, queries = self.layout.pairs(chunk)
                if workspace is None:
                    workspace = compact_workspace(
                        self.token_dim, min(block_rows, self.n_rows)
                    )
                scale = self.row_scale[start:stop]
                pairs *= scale[:, None]
                statistics.add_compact(
                    pairs, queries, targets[start:stop], scale, workspace=workspace
                )
                if progress is not None:
                    with lock:
                        done[0] += stop - start
                        progress(done[0], self.n_rows)
            return statistics, largest

        with single_threaded_blas():
            if n_workers == 1:
                results = [accumulate(lane) for lane in range(n_lanes)]
            else:  # (map returns the lanes in order, whichever thread took each)
                errors = np.geterr()  # the caller's: numpy's errstate is per thread

                def in_callers_errstate(lane):
                    with np.errstate(**errors):
                        return accumulate(lane)

                with ThreadPoolExecutor(n_workers) as pool:
                    results = list(pool.map(in_callers_errstate, range(n_lanes)))
            if find_scale:
                if large_tokens.is_set():  # max |X| >= 2^20: scan all of X
                    largest = largest_magnitude(self.sequences)
                else:
                    largest = max(largest for _, largest in results)
                self._set_token_scale(largest)
                if large_tokens.is_set() or not _lifts_as_given(
                    self._rescaling.token
                ):  # lift again, from scaled chunks
                    return self._structured_statistics(progress)
            statistics = results[0][0]
            for other, _ in results[1:]:
                statistics.merge(other)
        if scale_after:
            statistics.scale_features(self._rescaling.token**3)
        return statistics

    def compact_rows(self):
        """``(sqrt(w) pairs, queries)`` of every row, ``O(n_rows d^2)`` memory."""
        pairs = np.empty((self.n_rows, self.token_dim * (self.token_dim + 1) // 2))
        queries = np.empty((self.n_rows, self.token_dim))
        for start, stop, chunk in self._chunks():
            pairs[start:stop], queries[start:stop] = self.layout.pairs(
                chunk, n_threads=self.n_threads
            )
        pairs *= self.row_scale[:, None]
        return pairs, queries

    def operator(self):
        """``sqrt(W) Phi`` as a linear operator (from :meth:`compact_rows`)."""
        return CompactOperator(*self.compact_rows())


class StatisticsSource:
    """A data source made of statistics already accumulated (``partial_fit``,
    cross-validation).

    Offers :meth:`statistics` (and :meth:`fold_statistics`: kept folds, or those
    of the data source ``folds``), so it serves the ``"normal"`` solver.
    """

    is_distributed = False

    def __init__(self, statistics, layout, rescaling, folds=None, rows=None):
        self._statistics = statistics
        self._folds = folds
        self.layout = layout
        self.token_dim = layout.token_dim
        self.n_lifted = statistics.n_lifted
        self.n_outputs = statistics.n_outputs
        self.n_observations = statistics.n_observations
        self.n_rows = statistics.n_observations
        self.rescaling = rescaling
        # the rows the statistics were accumulated from, if at hand (the
        # in-memory data, or rows kept by partial_fit): the head read-out fits
        # and judges heads on them
        if rows is None and hasattr(folds, "compact_rows"):
            rows = folds
        self.rows = rows

    def statistics(self, progress=None):
        return self._statistics

    def fold_statistics(self, n_folds, first_sample=0, progress=None):
        """The folds' statistics: kept ones (``partial_fit``), or those of the
        data source given as ``folds`` (a pass over its data)."""
        if hasattr(self._folds, "fold_statistics"):
            return self._folds.fold_statistics(n_folds, first_sample, progress)
        if self._folds is None or len(self._folds) != n_folds:
            raise ValueError(f"no statistics of {n_folds} folds were kept")
        return self._folds


class KeptRows:
    """Compact rows kept across ``partial_fit`` calls, where the head read-out
    judges counts on rows (a classifier's misclassified held-out rows), so that
    batches read out heads as ``fit`` on all of them does.

    Offers what the solvers read of in-memory data for the head read-out:
    ``compact_rows()``, ``targets``, ``row_scale``, ``n_rows``, ``token_dim``,
    ``n_lifted`` and each row's held-out fold, ``row_folds``. The batches are
    kept apart and joined when first read (a merge copies no rows).
    """

    def __init__(self, batches, token_dim):
        self._batches = tuple(batches)  # (pairs, queries, targets, scale, folds)
        self.token_dim = token_dim
        self.n_lifted = token_dim * token_dim * (token_dim + 1) // 2
        self.n_rows = sum(len(batch[3]) for batch in self._batches)

    @classmethod
    def of(cls, data, n_folds, first_sample=0, compact_rows=None):
        """The rows of in-memory ``data`` (None for data that are not), their
        sequences in folds counted from ``first_sample`` (:func:`sequence_folds`);
        their ``(pairs, queries)`` from ``compact_rows()`` if given (those the
        fit computed), else from ``data.compact_rows()``."""
        if not hasattr(data, "compact_rows"):
            return None
        folds = data.folds_of_rows(n_folds, first_sample)
        pairs, queries = (compact_rows or data.compact_rows)()
        batch = (pairs, queries, data.targets, data.row_scale, folds)
        return cls([batch], data.token_dim)

    def merge(self, other):
        """These rows followed by ``other``'s."""
        return KeptRows(self._batches + other._batches, self.token_dim)

    def __getstate__(self):  # the batches, not their joined copy
        state = dict(self.__dict__)
        state.pop("_joined", None)
        return state

    @functools.cached_property
    def _joined(self):
        return [np.concatenate(arrays) for arrays in zip(*self._batches, strict=True)]

    def compact_rows(self):
        """``(sqrt(w) pairs, queries)`` of every row."""
        return self._joined[0], self._joined[1]

    @property
    def targets(self):
        return self._joined[2]

    @property
    def row_scale(self):
        return self._joined[3]

    @property
    def row_folds(self):
        return self._joined[4]


def lifted_data(
    sequences,
    targets=None,
    sample_weight=None,
    positions="last",
    causal=True,
    batch_size=None,
    n_threads=1,
    rescaling=None,
):
    """The data source for validated sequences: in memory or Dask.

    Parameters
    ----------
    sequences : ndarray or dask array of shape (n_samples, n_tokens, token_dim)
        From :func:`~sklearn_linattn._validation.validate_sequences`.
    targets : ndarray or dask array of shape (n_rows, n_outputs), optional
    sample_weight : ndarray or dask array of shape (n_samples,), optional
    positions, causal, batch_size, n_threads
        See :class:`InMemoryLiftedData`.
    rescaling : Rescaling, optional
        Use these scales instead of choosing them from the data (``partial_fit``
        keeps the first batch's, so that statistics of all batches add up).
    """
    kind = DaskLiftedData if is_dask_array(sequences) else InMemoryLiftedData
    data = kind(
        sequences,
        targets,
        sample_weight,
        positions=positions,
        causal=causal,
        batch_size=batch_size,
        n_threads=n_threads,
    )
    if rescaling is not None:
        data.set_rescaling(rescaling)
    return data


# --- prediction ----------------------------------------------------------------------


def lifted_predict(
    sequences,
    coef,
    intercept,
    positions="last",
    causal=True,
    batch_size=None,
    n_threads=1,
):
    """``phi(sequences) @ coef.T + intercept``, chunk by chunk.

    Each sequence is scaled by a power of two before lifting and its products
    scaled back (as ``MultiHeadLinearAttention.predict`` and ``generate`` scale
    it), so that the cubic features neither overflow nor underflow, whatever the
    other sequences of the batch hold.

    Parameters
    ----------
    sequences : ndarray of shape (n_samples, n_tokens, token_dim), float64, C-ordered
    coef : ndarray of shape (n_outputs, p)
    intercept : ndarray of shape (n_outputs,)
    positions : {"last", "all"}
    causal : bool

    Returns
    -------
    predictions : ndarray of shape (n_rows, n_outputs)
        One row per sequence, or per position (sample-major) with ``"all"``.
    """
    n_samples, n_tokens, token_dim = sequences.shape
    layout = _RowLayout(positions, causal, token_dim)
    per_sample = layout.rows_per_sample(n_tokens)
    if batch_size is None:
        batch_size = default_batch_size(layout.n_lifted, per_sample)
    batch_size = max(1, min(batch_size, n_samples))
    predictions = np.empty((n_samples * per_sample, coef.shape[0]))
    buffer = np.empty((batch_size * per_sample, layout.n_lifted))
    for start in range(0, n_samples, batch_size):
        stop = min(start + batch_size, n_samples)
        chunk = sequences[start:stop]
        chunk, exponents = to_unit(chunk, (1, 2))
        rows = slice(start * per_sample, stop * per_sample)
        features = layout.features(
            chunk, out=buffer[: (stop - start) * per_sample], n_threads=n_threads
        )
        np.matmul(features, coef.T, out=predictions[rows])
        # the cube of each sequence's scale, row by row
        cubes = np.repeat(3 * exponents, per_sample)[:, None]
        # (an output beyond float64 is inf; the estimators' predict says so)
        with np.errstate(over="ignore"):
            predictions[rows] = np.ldexp(predictions[rows], cubes)
    return predictions + intercept


def effective_observations(weight_sum, weight_square_sum, n_observations):
    """Kish's effective number of rows, ``(sum w)^2 / sum w^2``: every row of
    positive weight (``n_observations``) where the weights are equal (to
    rounding), fewer where some rows weigh far less than others (a row of
    weight 1e-12 beside rows of weight 1 counts next to nothing); every row
    where ``sum w^2`` is beyond float64 (weights beyond 1e154, or below
    1e-162, which only ``partial_fit`` batches in other units reach)."""
    if not 0 < weight_square_sum < np.inf:
        return n_observations
    effective = weight_sum**2 / weight_square_sum
    if effective >= n_observations * (1 - 1e-9):  # equal weights
        return n_observations
    return effective


def positive_weight_sequences(row_scale, rows_per_sample):
    """Whether each sequence has a row of positive weight (a boolean array of
    shape ``(n_sequences,)``); ``row_scale`` holds the rows' square-root
    weights, ``rows_per_sample`` rows to a sequence."""
    return np.any(np.reshape(row_scale, (-1, rows_per_sample)) > 0, axis=1)


def sequence_folds(row_scale, rows_per_sample, n_folds, first_sample=0):
    """The fold of each sequence: the ``i``-th sequence with a row of positive
    weight, counted from ``first_sample``, is in fold
    :func:`fold_of_position` ``(i, n_folds)``, so that rows of zero weight are as
    good as removed (a sequence without any is in the fold of the next that has,
    where it adds nothing).

    Parameters
    ----------
    row_scale : ndarray of shape (n_sequences * rows_per_sample,)
        The square roots of the rows' weights.
    rows_per_sample : int
    n_folds : int
    first_sample : int, default=0
        Sequences of positive weight before these (earlier batches, blocks).

    Returns
    -------
    ndarray of int, shape (n_sequences,)
    """
    positive = positive_weight_sequences(row_scale, rows_per_sample)
    before = np.cumsum(positive) - positive  # positive sequences before each
    return fold_of_position(first_sample + before, n_folds)


LONGEST_RUN = 16  # consecutive sequences that share a fold, at most
RUNS_PER_FOLD = 4  # runs of each length dealt to each fold (single sequences: 8)


def fold_of_position(position, n_folds):
    """The fold of the ``position``-th sequence (0-based, sequences of positive
    weight only). The sequences are dealt to the folds in turn, in runs of
    consecutive sequences: the run at position ``i`` is the longest power of two
    ``r <= LONGEST_RUN`` with ``i >= RUNS_PER_FOLD * n_folds * r`` (1 below it),
    so with 5 folds 40 single sequences, then 20 runs each of 2, 4 and 8, then
    runs of 16. No run is longer than a twentieth of the sequences before it: a
    small set is interleaved sequence by sequence, while in a large one the
    neighbours of ordered data (overlapping windows of a series) mostly share a
    fold, which is then not predicted from their near copies. The fold depends
    on the position alone, so batches and blocks counted from their first
    sequence agree with one pass over all the data.

    Examples
    --------
    >>> from sklearn_linattn._data import fold_of_position
    >>> fold_of_position(np.arange(12), 5).tolist()
    [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]
    >>> fold_of_position(np.arange(40, 52), 5).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 0]
    """
    position = np.asarray(position, dtype=np.int64)
    segment = RUNS_PER_FOLD * n_folds  # runs of each length
    # the largest power of two at most position // segment (frexp: exact)
    exponent = np.frexp(np.maximum(position // segment, 1))[1].astype(np.int64)
    run = 2 ** (exponent - 1)
    run = np.minimum(run, LONGEST_RUN)
    start = np.where(run == 1, 0, segment * run)  # where runs of this length begin
    return (position - start) // run % n_folds


# --- Dask --------------------------------------------------------------------------


def _block_statistics(
    block, targets, weights, layout_args, rescaling, batch_size, folds=None,
    padding=False,
):
    """Statistics of one block of sequences (runs on a worker); with ``folds =
    (n_folds, first_sample)`` a list, one per fold (:func:`sequence_folds`).
    With ``padding``, ``(statistics, [padding mask])`` for
    :func:`_merge_padded`."""
    data = InMemoryLiftedData(
        check_sequence_values(block),
        targets,
        weights,
        positions=layout_args[0],
        causal=layout_args[1],
        batch_size=batch_size,
    )
    data.set_rescaling(rescaling)
    if folds is not None:
        statistics = data.fold_statistics(*folds)
    else:
        statistics = data.statistics()
    if not padding:
        return statistics
    return statistics, [padding_row_mask(data.sequences)]


def _merge(*parts):
    """Sum statistics, or lists of fold statistics fold by fold."""
    total = parts[0]
    for part in parts[1:]:
        if isinstance(total, list):
            for mine, theirs in zip(total, part, strict=True):
                mine.merge(theirs)
        else:
            total.merge(part)
    return total


def _merge_padded(*parts):
    """:func:`_merge` of parts ``(statistics, padding masks)``, the masks of
    consecutive blocks concatenated in order."""
    statistics, masks = parts[0]
    for other, other_masks in parts[1:]:
        statistics, masks = _merge(statistics, other), masks + other_masks
    return statistics, masks


def _block_compact(block, weights, layout_args, rescaling):
    data = InMemoryLiftedData(
        check_sequence_values(block),
        None,
        weights,
        positions=layout_args[0],
        causal=layout_args[1],
    )
    data.set_rescaling(rescaling)
    return np.hstack(data.compact_rows())


def warn_if_outputs_beyond_float64(predictions, sequences, coef):
    """Warn, naming the cause and the remedy, where lifted-model predictions
    (of ``sequences`` with coefficients ``coef``) are beyond the float64 range:
    :func:`lifted_predict` returns them as +-inf (numpy's "overflow encountered
    in ldexp", which names nothing, is silenced there)."""
    if np.isfinite(predictions).all():
        return
    largest = float(np.max(np.abs(sequences), initial=0.0))
    warnings.warn(
        "Some outputs of the model are beyond the float64 range (inf): "
        "they are cubic in the tokens, whose largest entry here is "
        f"{largest:.3g}, times the fitted coefficients (largest "
        f"{float(np.max(np.abs(coef), initial=0.0)):.3g}). Scale X "
        "down: a factor c multiplies every output by c^3.",
        RuntimeWarning,
        stacklevel=caller_stacklevel(),
    )


def _block_predict(block, coef, intercept, positions, causal, warn):
    sequences = check_sequence_values(block)
    predictions = lifted_predict(sequences, coef, intercept, positions, causal)
    if warn:
        warn_if_outputs_beyond_float64(predictions, sequences, coef)
    return predictions


def predict_dask(
    sequences, coef, intercept, positions="last", causal=True, warn=False
):
    """Lazy predictions of a 3-D Dask array chunked along samples, one block at a
    time; only the coefficients travel with the graph. With ``warn``, a block
    whose predictions are beyond float64 warns as in-memory ``predict`` does
    (:func:`warn_if_outputs_beyond_float64`), when it is computed.

    Returns
    -------
    predictions : dask array of shape (n_rows, n_outputs)
    """
    n_tokens = sequences.shape[1]
    per_sample = 1 if positions == "last" else n_tokens
    return sequences.map_blocks(
        _block_predict,
        coef,
        intercept,
        positions,
        causal,
        warn,
        dtype=np.float64,
        drop_axis=[1, 2],
        new_axis=1,
        chunks=(
            tuple(size * per_sample for size in sequences.chunks[0]),
            (coef.shape[0],),
        ),
    )


def warn_if_features_beyond_float64(features, sequences):
    """Warn, naming the cause and the remedy, where lifted features (of
    ``sequences``) are beyond the float64 range (inf)."""
    # |w S[b, c] q[e]| <= sqrt(2) n_tokens max|x|^3: only then can one overflow
    largest = float(np.max(np.abs(sequences), initial=0.0))
    safe = (np.finfo(np.float64).max / (np.sqrt(2.0) * sequences.shape[1])) ** (
        1 / 3
    )
    if largest >= safe and not np.isfinite(features).all():
        warnings.warn(
            "Some lifted features are beyond the float64 range (inf): a feature "
            "S[b,c]*q[e] is cubic in the tokens, whose largest entry here is "
            f"{largest:.3g}. Scale X down: a factor c multiplies every feature by "
            "c^3.",
            RuntimeWarning,
            stacklevel=caller_stacklevel(),
        )


def _block_features(block):
    sequences = check_sequence_values(block)
    features = lifted_features(sequences)
    warn_if_features_beyond_float64(features, sequences)
    return features


def features_dask(sequences):
    """Lazy lifted features of a 3-D Dask array chunked along samples, one block
    at a time; a block whose features are beyond float64 warns as in memory
    (:func:`warn_if_features_beyond_float64`), when it is computed.

    Returns
    -------
    features : dask array of shape (n_samples, n_lifted_features)
    """
    n_lifted = n_lifted_features(sequences.shape[2])
    return sequences.map_blocks(
        _block_features,
        dtype=np.float64,
        drop_axis=[1, 2],
        new_axis=1,
        chunks=(sequences.chunks[0], (n_lifted,)),
    )


class DaskLiftedData:
    """Lifted rows of a Dask array chunked along samples: the same views as
    :class:`InMemoryLiftedData`, computed blockwise on the workers.

    Statistics are computed per block and tree-reduced, so only ``O(p^2)`` arrays
    travel; the operator keeps the compact rows on the workers (``persist``) and
    moves only ``n_rows``- and ``p``-vectors. Targets and weights (small) are
    brought to the client. The kernel form (``n_rows x n_rows``) is not offered.
    """

    is_distributed = True

    def __init__(
        self,
        sequences,
        targets=None,
        sample_weight=None,
        positions="last",
        causal=True,
        batch_size=None,
        n_threads=1,
    ):
        _, da = require_dask()
        n_samples, n_tokens, token_dim = sequences.shape
        self.sequences = sequences
        self.layout = _RowLayout(positions, causal, token_dim)
        self.layout_args = (positions, causal)
        self.n_lifted = self.layout.n_lifted
        self.token_dim = token_dim
        self.per_sample = self.layout.rows_per_sample(n_tokens)
        self.n_rows = n_samples * self.per_sample
        self.batch_size = batch_size
        self.sample_weight = (
            None if sample_weight is None else da.asarray(sample_weight)
        )
        self.raw_targets = None
        if targets is not None:
            # Rows split like the sequence blocks (which have no empty chunk):
            # Dask's reductions over a 2-D array fail on a chunk of 0 rows, as
            # ``y[mask].compute_chunk_sizes()`` leaves them.
            row_chunks = tuple(size * self.per_sample for size in sequences.chunks[0])
            self.raw_targets = da.asarray(targets).rechunk((row_chunks, -1))
        self.n_outputs = 0 if targets is None else targets.shape[1]
        self._rescaling = None
        self._row_scale = None
        self._targets = None
        self._weight_values = None
        self._padding = None

    @property
    def _weights(self):
        """The sample weights on the client (small), computed once: every later
        pass reads these values, not the checked Dask graph again (submitting
        its keys a second time, differently optimized, made the scheduler warn
        of colliding keys)."""
        if self._weight_values is None and self.sample_weight is not None:
            self._weight_values = np.asarray(self.sample_weight.compute())
        return self._weight_values

    @property
    def rescaling(self):
        """The :class:`Rescaling` of these data: their largest magnitudes, in one
        pass over the blocks, unless scales were given (:meth:`set_rescaling`:
        ``partial_fit`` batches and cross-validation folds take no such pass)."""
        if self._rescaling is None:
            dask, da = require_dask()
            # float64 first: bool tokens have no negative, and -min of an int
            # (or unsigned) dtype wraps around
            sequences = self.sequences.astype(np.float64)
            lazy = [da.maximum(da.max(sequences), -da.min(sequences))]
            if self.raw_targets is not None:
                lazy.append(da.max(da.absolute(self.raw_targets)))
            if self.sample_weight is not None and self._weight_values is None:
                lazy.append(self.sample_weight)
            padding = self.layout.positions == "all" and self._padding is None
            if padding:  # read with the maxima: one pass over the blocks, not two
                lazy.append(self._padding_graph())
            largest, *others = dask.compute(*lazy)
            if padding:
                self._padding = np.asarray(others.pop())
            target = None if self.raw_targets is None else others.pop(0)
            if others:
                self._weight_values = np.asarray(others.pop(0))
            self._rescaling = Rescaling.from_largest(
                largest,
                target,
                None if self._weights is None else np.max(self._weights),
            )
        return self._rescaling

    def set_rescaling(self, rescaling):
        self._rescaling = rescaling
        self._row_scale = self._targets = None

    def _block_weights(self):
        """Weights split like the sequence blocks (None for unit weights): per
        sequence, or per row (``positions="all"`` with class weights)."""
        if self.sample_weight is None:
            return [None] * len(self.sequences.chunks[0])
        sample_chunks = self.sequences.chunks[0]
        if self.sample_weight.shape[0] != self.sequences.shape[0]:  # per row
            sample_chunks = tuple(size * self.per_sample for size in sample_chunks)
        return np.split(self._weights, np.cumsum(sample_chunks)[:-1])

    def _block_targets(self):
        if self.raw_targets is None:
            return [None] * len(self.sequences.chunks[0])
        return list(self.raw_targets.to_delayed().ravel())

    def statistics(self, progress=None):
        return self._reduce_blocks(None)

    def fold_statistics(self, n_folds, first_sample=0, progress=None):
        """See :meth:`InMemoryLiftedData.fold_statistics` (folds by the global
        count of sequences of positive weight, so blocks can be chunked in any
        way)."""
        return self._reduce_blocks((n_folds, first_sample))

    def _reduce_blocks(self, folds):
        dask, _ = require_dask()
        blocks = self.sequences.to_delayed().ravel()
        rescaling = self.rescaling  # (its pass, if any, reads the padding too)
        offsets = np.zeros(len(blocks))
        if folds is not None:
            # the sequences of positive weight before each block (with
            # positions="all" and the scales given, partial_fit's later batches,
            # row_scale reads the padding in a pass of its own: a sequence's fold
            # depends on its position in the whole batch)
            per_sample = self.layout.rows_per_sample(self.sequences.shape[1])
            positive = positive_weight_sequences(self.row_scale, per_sample)
            ends = np.cumsum(self.sequences.chunks[0])
            offsets = np.concatenate([[0], np.cumsum(positive)[ends[:-1] - 1]])
        # otherwise the padding, where not known, is read in this pass
        padding = self.layout.positions == "all" and self._padding is None
        first_sample = 0 if folds is None else folds[1]
        parts = [
            dask.delayed(_block_statistics)(
                block,
                targets,
                weights,
                self.layout_args,
                rescaling,
                self.batch_size,
                None if folds is None else (folds[0], first_sample + int(offset)),
                padding,
            )
            for block, targets, weights, offset in zip(
                blocks,
                self._block_targets(),
                self._block_weights(),
                offsets,
                strict=True,
            )
        ]
        merge = _merge_padded if padding else _merge
        while len(parts) > 1:  # a tree of pairwise sums: only p x p matrices travel
            parts = [
                dask.delayed(merge)(*parts[i : i + 2]) for i in range(0, len(parts), 2)
            ]
        (total,) = dask.compute(parts[0])
        if padding:
            total, masks = total
            self._padding = np.concatenate(masks)
        return total

    @property
    def row_scale(self):
        if self._row_scale is None:
            n_samples, n_tokens, _ = self.sequences.shape
            if self.sample_weight is None:
                weights = np.ones(n_samples)
            else:
                scaled = self._weights * self.rescaling.weight
                weights = _kept_positive(scaled, self._weights)
            if self.layout.positions == "last":
                self._row_scale = np.sqrt(weights)
            else:
                if self._padding is None and self._rescaling is None:
                    _ = self.rescaling  # its pass over X reads the padding too
                if self._padding is None:
                    self._padding = self._padding_graph().compute()
                weights = weights.reshape(n_samples, -1)
                self._row_scale = np.sqrt((~self._padding * weights).ravel())
        return self._row_scale

    def _padding_graph(self):
        """Which positions are left padding, (n_samples, n_tokens) booleans."""
        return self.sequences.map_blocks(padding_row_mask, dtype=bool, drop_axis=2)

    @property
    def n_observations(self):
        return int(np.count_nonzero(self.row_scale))

    @property
    def targets(self):
        if self._targets is None and self.raw_targets is not None:
            targets = np.asarray(self.raw_targets.compute(), dtype=np.float64)
            self._targets = targets * (self.row_scale * self.rescaling.target)[:, None]
        return self._targets

    def operator(self):
        """``sqrt(W) Phi`` with the compact rows persisted on the workers."""
        dask, da = require_dask()
        m = self.token_dim * (self.token_dim + 1) // 2
        parts = [
            da.from_delayed(
                dask.delayed(_block_compact)(
                    block, weights, self.layout_args, self.rescaling
                ),
                shape=(size * self.per_sample, m + self.token_dim),
                dtype=np.float64,
            )
            for block, weights, size in zip(
                self.sequences.to_delayed().ravel(),
                self._block_weights(),
                self.sequences.chunks[0],
                strict=True,
            )
        ]
        compact = da.concatenate(parts).persist()
        return DaskCompactOperator(compact, m, self.n_lifted)


def _block_matvec(block, n_pairs, vector):
    return lifted_matvec(block[:, :n_pairs], block[:, n_pairs:], vector[None])[:, 0]


def _block_rmatvec(block, weight, n_pairs):
    return lifted_rmatvec(block[:, :n_pairs], block[:, n_pairs:], weight)


def _block_squared_norms(block, n_pairs):
    return _squared_column_norms(block[:, :n_pairs], block[:, n_pairs:])[None]


class DaskCompactOperator(scipy.sparse.linalg.LinearOperator):
    """``sqrt(W) Phi`` of compact rows kept on Dask workers."""

    def __init__(self, compact, n_pairs, n_lifted):
        self.compact, self.n_pairs = compact, n_pairs
        super().__init__(np.float64, (compact.shape[0], n_lifted))

    def _matvec(self, vector):
        out = self.compact.map_blocks(
            _block_matvec, self.n_pairs, np.ravel(vector), drop_axis=1, dtype=np.float64
        )
        return out.compute()

    def _rmatvec(self, vector):
        _, da = require_dask()
        weights = da.from_array(np.ravel(vector), chunks=(self.compact.chunks[0],))
        partial = da.map_blocks(
            _block_rmatvec,
            self.compact,
            weights[:, None],
            self.n_pairs,
            dtype=np.float64,
            chunks=((1,) * len(self.compact.chunks[0]), (self.shape[1],)),
        )
        return partial.sum(axis=0).compute()

    def squared_column_norms(self):
        """The diagonal of ``A^T A``, summed over the blocks."""
        partial = self.compact.map_blocks(
            _block_squared_norms,
            self.n_pairs,
            dtype=np.float64,
            chunks=((1,) * len(self.compact.chunks[0]), (self.shape[1],)),
        )
        return partial.sum(axis=0).compute()
