"""Reading attention heads out of lifted coefficients (Algorithm 1, step 3, of
Yau et al. 2025, and the minimal-head read-out described on the theory page).

The lifted coefficients fix only the part of ``W[a,b,c,e]`` symmetric in ``(b, c)``;
heads are a factorization ``W[(a,b),(c,e)] = sum_h V_h[a,b] Q_h[c,e]`` of any ``W``
with that symmetric part, so the number of heads is the rank of the chosen ``W``.

- :func:`read_out_heads`: what the estimators call. A budgeted search for the fewest
  heads that compute the fitted function within ``tol``, or, on noisy data, whose
  training loss is not significantly worse than the lifted fit's (an F-test).
- :func:`paper_heads`: the paper's read-out, the SVD of the symmetric split.
- :func:`minimal_heads`, :func:`fixed_heads`: the fewest heads within ``tol``, and
  the best model with at most ``k`` heads (wrappers of the same search).

Heads come in one canonical form so that two fits of the same data give the same
arrays: sorted by strength (singular value of ``W``, largest first), scale balanced
(``||V_h||_F = ||Q_h||_F``), and signs fixed so that the entry of largest magnitude
in each ``V_h`` is positive.
"""

import time
from dataclasses import dataclass

import numpy as np
import scipy.stats

from ._data import single_threaded_blas
from ._lift import compile_search_kernels
from ._low_rank import (
    RESTARTS,
    alternating_projections,
    balanced_rows,
    fewest_heads_bound,
    fold_lifted_coef,
    head_coef,
    low_rank_fold,
    nearest_isotropic_folds,
    svd,
    unfold_lifted_coef,
    weighted_head_fit,
)

__all__ = [
    "HeadReadout",
    "fixed_heads",
    "head_parameter_count",
    "minimal_heads",
    "paper_heads",
    "read_out_heads",
]

# The F-test's level: a count is rejected when a loss increase this unlikely
# under the k-head model is observed.
SIGNIFICANCE = 0.01
# Noise in the lifted coefficients above this share of `tol` (relative to the
# signal) makes the count a statistical question: then the F-test decides. Below it
# (exact data, up to float64 rounding) the heads must reproduce the fit within tol.
# Float32 targets carry noise of about tol itself, which the tol criterion alone
# would read as a function needing every head.
NOISE_SHARE = 1e-2
# A count whose alternating-projection iterate (closest in the Frobenius metric)
# has an F statistic above SCREEN times the critical value is not refined in the
# training metric: the refinement lowered the statistic by a factor 1.5 to 6 in
# our experiments.
SCREEN = 20.0
# Iterations of alternating projections per count on noisy coefficients, and the
# progress per window below which they stop (they only provide a start and a
# screen there).
SCREEN_ITER = 100
SCREEN_STALL = 0.99
# Seeded random starts of the isotropic-subspace search when alternating
# projections fail the screen with one output (besides their own iterate).
ISOTROPIC_STARTS = 8
# When a count fails the screen, Gauss-Newton steps in the training metric are
# tried too if their estimated cost is below this share of the remaining budget.
# Python's overhead per conjugate-gradient iteration, for that estimate.
SCREEN_WEIGHTED_ITER = 6
SCREEN_CG_ITER = 20
SCREEN_SHARE = 0.5
CG_OVERHEAD_SECONDS = 1e-4
# Gauss-Newton steps in the training metric when testing a count, when polishing an
# accepted one, and for a fixed count.
TEST_ITER = 8
# A test stops when the linearized problem at the current heads promises no loss
# below GIVE_UP times the critical loss (its minimum is then near).
GIVE_UP = 2.0
POLISH_ITER = 10
FIXED_ITER = 200
# Gauss-Newton solves its steps exactly from the dense Jacobian (and M formed by
# applying the weight to the identity) when p is at most DENSE_LIFTED and a step
# costs about n_outputs * p^2 * n_parameters <= DENSE_WORK flops; by conjugate
# gradients otherwise.
DENSE_LIFTED = 300
DENSE_WORK = 3e7
# Noiseless counts: Gauss-Newton steps in head space after alternating
# projections stall, dense up to this many parameters; it stops at
# EXACT_MARGIN * tol, or when a step gains less than a factor 1 / (1 -
# EXACT_STALL) (converging starts gain far more: the residual is zero).
EXACT_ITER = 15
EXACT_STALL = 0.5
# The upward pass: iterations of alternating projections per count, and the
# random isotropic-subspace starts tried with one output when they stall.
UPWARD_ITER = 300
UPWARD_ISOTROPIC_STARTS = 2
EXACT_DENSE_PARAMETERS = 600
EXACT_MARGIN = 1e-3
# A fixed count whose fit is not exact (noiseless): Gauss-Newton steps without the
# early stop, from the paper's heads cut to the count, with the budget left.
PLATEAU_ITER = 60


def _canonical_signs(left, right):
    """Flip paired columns so that the largest-magnitude entry of each left column
    is positive."""
    rows = np.argmax(np.abs(left), axis=0)
    signs = np.sign(left[rows, np.arange(left.shape[1])])
    signs[signs == 0] = 1.0
    return left * signs, right * signs


def n_heads_within(singular_values, tol):
    """Fewest leading singular values whose dropped tail has relative Frobenius
    norm at most ``tol``."""
    total = np.linalg.norm(singular_values)
    if total == 0:
        return 0
    # tails[r] = norm of singular_values[r:]
    tails = np.sqrt(np.cumsum(singular_values[::-1] ** 2))[::-1]
    tails = np.append(tails, 0.0)
    return int(np.argmax(tails <= tol * total))


def heads_of_folded(folded, n_heads, n_outputs, token_dim, decomposition=None):
    """Canonical heads of the rank-``n_heads`` truncation of a folded matrix ``W``.

    ``decomposition`` is ``svd(folded)`` when already known. A large ``W`` of rank
    ``n_heads`` (an iterate of the search) is decomposed through its range, found
    from a fixed-seed sketch: exact for rank ``n_heads``, and much cheaper than
    its full SVD.

    Returns
    -------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    """
    d = token_dim
    if decomposition is not None:
        left, singular_values, right_t = decomposition
    elif 0 < n_heads and 4 * n_heads <= min(folded.shape) and folded.size > 2**16:
        sketch = np.random.default_rng(0).normal(size=(folded.shape[1], n_heads))
        basis = np.linalg.qr(folded @ sketch)[0]
        core_left, singular_values, right_t = svd(basis.T @ folded)
        left = basis @ core_left
    else:
        left, singular_values, right_t = svd(folded)
    root = np.sqrt(singular_values[:n_heads])
    left, right = _canonical_signs(left[:, :n_heads], right_t[:n_heads].T)
    value = (left * root).T.reshape(n_heads, n_outputs, d)
    query = (right * root).T.reshape(n_heads, d, d)
    return value, query


def paper_heads(lifted_coef, token_dim, tol):
    """The paper's head read-out: SVD of the folded coefficient matrix.

    ``W[(a, b), (c, e)] = sum_i s_i u_i v_i^T`` gives heads
    ``V_i = reshape(sqrt(s_i) u_i, (n_outputs, d))`` and
    ``Q_i = reshape(sqrt(s_i) v_i, (d, d))``; at most ``min(n_outputs, d) * d``
    heads. The smallest singular values are dropped while the dropped part stays
    within ``tol`` of ``||W||_F`` (relative Frobenius norm).

    Parameters
    ----------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
    token_dim : int
    tol : float

    Returns
    -------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn import MultiHeadLinearAttention
    >>> from sklearn_linattn._heads import paper_heads
    >>> rng = np.random.default_rng(0)
    >>> one_head = MultiHeadLinearAttention(
    ...     rng.normal(size=(1, 1, 3)), rng.normal(size=(1, 3, 3)))
    >>> value, query = paper_heads(one_head.lifted_coef(), 3, tol=1e-10)
    >>> len(value)  # the symmetric split needs more heads than the model has
    3
    """
    folded = fold_lifted_coef(lifted_coef, token_dim)
    _, singular_values, _ = svd(folded)
    return heads_of_folded(
        folded, n_heads_within(singular_values, tol), lifted_coef.shape[0], token_dim
    )


def head_parameter_count(n_heads, n_outputs, token_dim):
    """Dimension of the set of lifted coefficients that ``n_heads`` heads compute.

    ``k`` heads have ``k (n_outputs d + d^2)`` parameters; the function does not
    change under ``V -> A V``, ``Q -> A^{-T} Q`` for any invertible ``k x k``
    mixing ``A`` (``k^2`` dimensions, which include the per-head scalings). With
    one output, the part of ``W`` antisymmetric in ``(b, c)`` that keeps the rank
    adds ``d k (k - 1) / 2`` more (the slices may change by any antisymmetric
    matrix supported on the heads' value subspace); with several outputs it adds
    none. The count is capped at ``n_outputs * p``. (Checked against the rank of
    the map's Jacobian for ``d <= 5``, ``n_outputs <= 5``.)

    Examples
    --------
    >>> from sklearn_linattn._heads import head_parameter_count
    >>> head_parameter_count(1, 1, 4), head_parameter_count(2, 1, 4)
    (19, 32)
    >>> head_parameter_count(4, 1, 4)  # d heads describe every function: p
    40
    """
    k, m, d = n_heads, n_outputs, token_dim
    n_lifted = d * d * (d + 1) // 2
    count = k * (m * d + d * d - k)
    if m == 1:
        count -= d * k * (k - 1) // 2
    return int(min(max(count, 0), m * n_lifted))


@dataclass(frozen=True, eq=False)
class HeadReadout:
    """How the heads of a fit were read out (the estimators' ``head_search_``).

    Attributes
    ----------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    criterion : str
        Why this count was returned: ``"tol"`` (the heads compute the lifted
        function within ``tol``), ``"f-test"`` (their training loss is not
        significantly worse than the lifted fit's), ``"precision"`` (their
        training predictions are within the input's floating-point precision of
        the lifted fit's: float32 data), ``"fixed"`` (the best model
        with the requested number of heads), ``"paper"`` (the paper's SVD
        read-out, requested or the fallback when the budget ran out).
    complete : bool
        False when the budget ran out before the search finished; the heads are
        then valid (within ``tol`` or accepted by the test) but possibly more than
        needed.
    counts_tried : tuple of int
        Head counts examined, in order.
    seconds : float
        CPU time the read-out took (of the calling thread; the budget is counted
        the same way, so a busy machine does not cut the search short).
    relative_distance : float
        ``||theta_heads - theta_lifted||_F / ||theta_lifted||_F``.
    f_statistic, f_critical : float
        The F statistic of the returned heads against the lifted fit and its
        critical value (NaN when no test was possible: too few samples, or
        ``n_heads=None``).
    """

    value_matrices: np.ndarray
    query_matrices: np.ndarray
    criterion: str
    complete: bool
    counts_tried: tuple
    seconds: float
    relative_distance: float
    f_statistic: float = float("nan")
    f_critical: float = float("nan")

    @property
    def n_heads(self):
        return len(self.value_matrices)


class _Search:
    """State shared by the steps of one read-out: the target, the noise model, the
    clock and the log."""

    def __init__(self, lifted_coef, token_dim, tol, apply_weight, rss, n_obs,
                 budget_seconds, verbose, data_precision=None):
        self.coef = lifted_coef
        self.d = token_dim
        self.m, self.p = lifted_coef.shape
        self.tol = tol
        self.apply_weight = apply_weight
        self.start = time.thread_time()
        self.deadline = self.start + (
            np.inf if budget_seconds is None else float(budget_seconds)
        )
        self.verbose = verbose
        self.norm = float(np.linalg.norm(lifted_coef))
        self._weight_matrix = None
        self.tried = []
        self.complete = True
        rss = 0.0 if rss is None else float(np.sum(rss))
        # Residual degrees of freedom of the lifted fit; no test without them.
        self.df_residual = self.m * (int(n_obs or 0) - self.p)
        self.variance = rss / self.df_residual if self.df_residual > 0 else None
        self.data_precision = data_precision or 0.0
        self._signal = None

    @property
    def signal(self):
        """Training-metric energy of the lifted fit's predictions (computed once;
        the time per output row is kept for the search's cost estimates)."""
        if self._signal is None:
            start = time.thread_time()
            self._signal = float(np.vdot(self.coef, self.apply_weight(self.coef)))
            self.apply_seconds = (time.thread_time() - start) / self.m
        return self._signal

    @property
    def precision_loss(self):
        """Loss increases below the data's own rounding are no evidence against a
        count: heads whose training predictions are within ``data_precision``
        (relative RMS) of the lifted fit's are accepted."""
        return self.data_precision**2 * max(self.signal, 0.0)

    def weight_matrix(self, n_heads, n_kept):
        """``M`` as a matrix when Gauss-Newton for this count should use dense
        steps, else None."""
        n_parameters = n_heads * (n_kept * self.d + self.d * self.d)
        if self.p > DENSE_LIFTED or n_kept * self.p**2 * n_parameters > DENSE_WORK:
            return None
        if self._weight_matrix is None:
            self._weight_matrix = np.asarray(self.apply_weight(np.eye(self.p)))
        return self._weight_matrix

    def log(self, message):
        if self.verbose:
            elapsed = time.thread_time() - self.start
            print(f"[heads {elapsed:7.3f} s] {message}", flush=True)

    def expired(self):
        if time.thread_time() > self.deadline:
            self.complete = False
            return True
        return False

    def loss(self, theta):
        return self.loss_of(theta, self.coef)

    def loss_of(self, theta, target):
        residual = theta - target
        return float(np.vdot(residual, self.apply_weight(residual)))

    def distance(self, folded):
        gap = unfold_lifted_coef(folded, self.d) - self.coef
        return float(np.linalg.norm(gap) / self.norm)

    def truncated(self, n_heads):
        """The paper's read-out cut to ``n_heads`` heads (the rank-``n_heads``
        truncation of the folded coefficients): a start for Gauss-Newton from
        another basin than the alternating projections' iterate."""
        value_rows, query_rows = balanced_rows(
            fold_lifted_coef(self.coef, self.d), n_heads
        )
        return value_rows.T @ query_rows

    def test(self, n_heads, n_kept=None):
        """``(df1, critical loss, critical F)`` of the F-test for ``n_heads`` whose
        value matrices use ``n_kept`` output directions (all by default), or None
        when it cannot be applied."""
        if self.variance is None:
            return None
        n_kept = self.m if n_kept is None else n_kept
        df1 = self.m * self.p - head_parameter_count(n_heads, n_kept, self.d)
        if df1 <= 0:
            return None
        critical = float(scipy.stats.f.isf(SIGNIFICANCE, df1, self.df_residual))
        return df1, max(critical * df1 * self.variance, self.precision_loss), critical

    def statistic(self, loss, n_heads, n_kept=None):
        test = self.test(n_heads, n_kept)
        if test is None or self.variance == 0:
            return float("nan"), float("nan")
        df1, _, critical = test
        return loss / df1 / self.variance, critical

    def noisy(self):
        """Whether the lifted fit's noise, or the data's own precision, is above
        ``NOISE_SHARE * tol`` (relative, in the training metric): then counts come
        from the F-test and the precision floor. (The statistics of ``partial_fit``
        can hold no residual at all for float32 data that a model fits exactly up
        to their rounding.)"""
        if self.variance is None or self.signal <= 0:
            return False
        noise = np.sqrt(self.variance * self.m * self.p / self.signal)
        return bool(max(noise, self.data_precision) > NOISE_SHARE * self.tol)


def _tol_search(search, lower, upper, at_upper=None):
    """Fewest heads in ``[lower, upper)`` within ``tol``. ``at_upper`` is a known
    solution with ``upper`` heads, if any (the paper's read-out).

    With ``at_upper``: one probe at ``lower`` by alternating projections and
    Gauss-Newton from their iterate (few heads are often exactly the bound), then
    downwards from the best count found (:func:`_descend_to`) until a count
    fails. Every step down
    is a valid answer, so a spent budget still returns the fewest heads found so
    far; probing upwards instead spends the budget on counts that fail. Without
    ``at_upper`` (a fixed count below the paper's): upward single starts until
    one succeeds, then downwards. Returns ``(folded, n_heads)`` or None."""
    found = None
    for k in range(lower, upper):
        if search.expired():
            return found
        search.tried.append(k)
        folded, error = low_rank_fold(
            search.coef, search.d, k, search.tol, max_iter=UPWARD_ITER,
            deadline=search.deadline,
        )
        search.log(f"{k} heads: distance {error:.1e} (tol {search.tol:g})")
        if error > search.tol and at_upper is not None:
            # The bound: Gauss-Newton from the iterate only (it finishes slow
            # convergence in a few steps); if that fails, go down from the
            # paper's count.
            folded, error = _exact_heads(search, k, [folded])
            if error <= search.tol:
                found = (folded, k)
            break
        if error > search.tol and k > 1:
            starts = [folded]
            if search.m == 1 and k < search.d:
                starts += nearest_isotropic_folds(
                    search.coef, search.d, k, folded, UPWARD_ISOTROPIC_STARTS,
                    search.deadline,
                )
            folded, error = _exact_heads(search, k, starts)
        if error <= search.tol:
            found = (folded, k)
            break
    if found is None:
        if at_upper is None:
            return None
        found = (at_upper, upper)
    while found[1] > lower and not search.expired():
        k = found[1] - 1
        search.tried.append(k)
        folded, error = _descend_to(search, k)
        if error > search.tol:
            break
        found = (folded, k)
    return found


def _descend_to(search, k):
    """``k`` heads within ``tol`` for the downward pass: with one output the
    isotropic-subspace search, then alternating projections with restarts, then
    Gauss-Newton from where they stalled and from the nearest isotropic models;
    with several outputs one start of alternating projections and Gauss-Newton
    from it (a zero-residual problem: it converges in a few steps where the
    projections crawl), and only then the restarts. Returns ``(folded, relative
    error)``."""
    one_output = search.m == 1
    folded, error = low_rank_fold(
        search.coef, search.d, k, search.tol,
        restarts=RESTARTS if one_output else 0, deadline=search.deadline,
    )
    search.log(
        f"{k} heads{', with restarts' if one_output else ''}: distance {error:.1e}"
    )
    if error <= search.tol:
        return folded, error
    starts = [folded]
    if one_output and k < search.d:
        starts += nearest_isotropic_folds(
            search.coef, search.d, k, folded, ISOTROPIC_STARTS, search.deadline
        )
    folded, error = _exact_heads(search, k, starts)
    if error <= search.tol or one_output or search.expired():
        return folded, error
    folded, error = low_rank_fold(
        search.coef, search.d, k, search.tol, restarts=RESTARTS,
        deadline=search.deadline,
    )
    search.log(f"{k} heads, with restarts: distance {error:.1e}")
    if error > search.tol:
        folded, error = _exact_heads(search, k, [folded])
    return folded, error


def _exact_heads(search, k, starts, max_iter=EXACT_ITER, stall=EXACT_STALL):
    """Gauss-Newton in head space (Frobenius metric) from each start, for ``k``
    heads that reproduce the coefficients: converges fast where alternating
    projections crawl (a zero-residual problem). Returns the best ``(folded,
    relative error)``."""
    d, coef = search.d, search.coef
    identity = None
    n_parameters = k * (search.m * d + d * d)
    if n_parameters <= EXACT_DENSE_PARAMETERS and search.p <= DENSE_LIFTED:
        identity = np.eye(search.p)
    target = (EXACT_MARGIN * search.tol * search.norm) ** 2
    best = (starts[0], search.distance(starts[0]))
    for start in starts:
        if search.expired():
            break
        value_rows, query_rows = balanced_rows(start, k)
        value_rows, query_rows, loss, n_iter = weighted_head_fit(
            coef, d, value_rows, query_rows, lambda rows: rows,
            max_iter=max_iter, accept_below=target, weight_matrix=identity,
            stall=stall, deadline=search.deadline,
        )
        error = float(np.sqrt(max(loss, 0.0)) / search.norm)
        search.log(f"{k} heads, Gauss-Newton ({n_iter} steps): distance {error:.1e}")
        if error < best[1]:
            best = (value_rows.T @ query_rows, error)
        if error <= EXACT_MARGIN * search.tol:
            break
    return best


class _OutputSubspace:
    """The lifted coefficients seen through their ``r`` leading output directions.

    A ``k``-head model's coefficients have row rank at most ``k d``, and the
    ``k``-head models are closed under rotations of the outputs; so a count with
    ``k d < n_outputs`` is fitted on the ``k d`` leading directions (in the
    training metric) and the rest of the coefficients is left unfitted.
    The training loss splits exactly: the part in the kept directions plus the
    weighted energy of the dropped ones. (A nested model with ``r`` outputs'
    value matrices, counted as such by the test.)"""

    def __init__(self, search):
        self.search = search
        # Directions of decreasing weighted energy: eigenvectors of
        # lifted_coef M lifted_coef^T, so the dropped rows carry the least of the
        # training loss (directions from the unweighted SVD would keep the noise
        # of weakly determined features and drop signal).
        energy = search.coef @ search.apply_weight(search.coef).T
        energies, rotation = np.linalg.eigh((energy + energy.T) / 2)
        self.rotation = rotation[:, ::-1]  # (m, m)
        self.rotated = self.rotation.T @ search.coef
        energies = np.maximum(energies[::-1], 0.0)
        # dropped[r]: weighted energy beyond the first r directions
        self.dropped = np.append(np.cumsum(energies[::-1])[::-1], 0.0)

    def kept(self, n_heads):
        return min(self.rotated.shape[0], n_heads * self.search.d)

    def target(self, n_heads):
        return self.rotated[: self.kept(n_heads)]

    def expand(self, value_rows, n_heads):
        """Value rows of the ``r`` kept directions back on all outputs."""
        r, d = self.kept(n_heads), self.search.d
        value = value_rows.reshape(n_heads, r, d)
        full = np.einsum("ai,hib->hab", self.rotation[:, :r], value)
        return full.reshape(n_heads, -1)


def _noisy_search(search, upper):
    """Fewest heads below ``upper`` accepted by the F-test. Returns
    ``(value_rows, query_rows, n_heads, loss, n_kept)`` or None.

    1. Screen: the F statistic of each count's alternating-projection iterate
       (nearest in the Frobenius metric) within ``SCREEN`` times the critical
       value; counts 1, 2, 4, ... until one passes, then bisection (assuming more
       heads never fit worse; few heads are cheap to probe).
    2. Test upwards from the first count that passes the screen, each refined by
       Gauss-Newton in the training metric, until one is accepted.
    3. Downwards from the accepted count, one count at a time while they are
       accepted: a thorough screen (more starts and Gauss-Newton steps in the
       training metric, as the budget allows), then the test. On ill-conditioned
       Grams the Frobenius-nearest heads can score far worse than the best heads,
       so the cheap screen alone can overshoot by a head."""
    outputs = _OutputSubspace(search)
    d = search.d
    starts = {}
    tested = set()

    def start(k, thorough=False):
        """The best start found for ``k`` heads and its loss: the
        alternating-projection iterate, or with one output, when that fails the
        screen, the nearest isotropic-subspace models (alternating projections
        crawl above ``d / 2`` heads); with ``thorough``, more of those and a few
        Gauss-Newton steps in the training metric."""
        target = outputs.target(k)
        dropped = outputs.dropped[len(target)]
        screen_loss = search.test(k, outputs.kept(k))
        screen_loss = np.inf if screen_loss is None else SCREEN * screen_loss[1]
        if k not in starts:
            folded, _ = alternating_projections(
                target, d, k, fold_lifted_coef(target, d), search.tol,
                SCREEN_ITER, search.deadline, stall=SCREEN_STALL, warm=True,
            )
            theta = unfold_lifted_coef(folded, d)
            starts[k] = (folded, search.loss_of(theta, target) + dropped)
            if starts[k][1] > screen_loss and len(target) == 1 and k < d:
                for candidate in nearest_isotropic_folds(
                    target, d, k, folded, UPWARD_ISOTROPIC_STARTS, search.deadline
                ):
                    theta = unfold_lifted_coef(candidate, d)
                    loss = search.loss_of(theta, target) + dropped
                    if loss < starts[k][1]:
                        starts[k] = (candidate, loss)
        best = starts[k]
        folded = best[0]
        if thorough and best[1] > screen_loss:
            candidates = [folded]
            if len(target) == 1 and k < d:
                # One output: alternating projections can stop far from the
                # nearest k-head models; the isotropic-subspace search does not.
                candidates += nearest_isotropic_folds(
                    target, d, k, folded, ISOTROPIC_STARTS, search.deadline
                )
            for candidate in candidates:
                loss = search.loss_of(unfold_lifted_coef(candidate, d), target)
                candidate, loss = weighted_screen(k, candidate, loss + dropped, target)
                if loss < best[1]:
                    best = (candidate, loss)
                if best[1] <= screen_loss or search.expired():
                    break
        starts[k] = best
        return best

    def weighted_screen(k, folded, loss, target):
        """A few Gauss-Newton steps in the training metric, when affordable: on
        ill-conditioned Grams the Frobenius-nearest heads can score hundreds of
        times worse than the best ones near them."""
        cost = (SCREEN_WEIGHTED_ITER * SCREEN_CG_ITER) * (
            search.apply_seconds * len(target) + CG_OVERHEAD_SECONDS
        )
        if cost > SCREEN_SHARE * (search.deadline - time.thread_time()):
            return folded, loss
        test = search.test(k, outputs.kept(k))
        if test is None:
            return folded, loss
        dropped = outputs.dropped[len(target)]
        value_rows, query_rows = balanced_rows(folded, k)
        value_rows, query_rows, new_loss, _ = weighted_head_fit(
            target, d, value_rows, query_rows, search.apply_weight,
            max_iter=SCREEN_WEIGHTED_ITER, cg_max_iter=SCREEN_CG_ITER,
            give_up_above=SCREEN * test[1] - dropped,
            weight_matrix=search.weight_matrix(k, len(target)),
            deadline=search.deadline,
        )
        if new_loss + dropped < loss:
            return value_rows.T @ query_rows, new_loss + dropped
        return folded, loss

    def screen(k, thorough=False):
        search.tried.append(k)
        folded, loss = start(k, thorough)
        statistic, critical = search.statistic(loss, k, outputs.kept(k))
        # The test's loss threshold (floored by the data's precision), loosened.
        test = search.test(k, outputs.kept(k))
        passed = test is not None and loss <= SCREEN * test[1]
        search.log(
            f"{k} heads on {outputs.kept(k)} output direction(s), "
            f"{'thorough ' if thorough else ''}screen: F "
            f"{statistic:.3g} (screen {SCREEN * critical:.3g})"
            f"{'' if passed else ': rejected'}"
        )
        return passed

    low, high = 1, upper  # upper passes (the paper's read-out is within tol)
    probe = 1
    while probe < high and not search.expired():
        if screen(probe):
            high = probe
            break
        low, probe = probe + 1, 2 * probe
    while low < high and not search.expired():
        middle = (low + high) // 2
        if screen(middle):
            high = middle
        else:
            low = middle + 1
    def test(k):
        """Refine ``k`` heads from their start and test them; the accepted heads
        are polished with what is left of the budget."""
        test = search.test(k, outputs.kept(k))
        if test is None:
            return None
        tested.add(k)
        _, threshold, critical = test
        folded, _ = starts[k] if k in starts else start(k)
        target = outputs.target(k)
        dropped = outputs.dropped[len(target)]
        value_rows, query_rows = balanced_rows(folded, k)
        value_rows, query_rows, loss, n_iter = weighted_head_fit(
            target, d, value_rows, query_rows, search.apply_weight,
            max_iter=TEST_ITER, accept_below=threshold - dropped,
            give_up_above=GIVE_UP * threshold - dropped,
            weight_matrix=search.weight_matrix(k, len(target)),
            deadline=search.deadline,
        )
        accepted = loss + dropped <= threshold
        search.log(
            f"{k} heads, test: F {(loss + dropped) / threshold * critical:.3g} "
            f"(critical {critical:.3g}) after {n_iter} Gauss-Newton steps: "
            f"{'accepted' if accepted else 'rejected'}"
        )
        if not accepted:
            return None
        if not search.expired():
            value_rows, query_rows, loss, _ = weighted_head_fit(
                target, d, value_rows, query_rows, search.apply_weight,
                max_iter=POLISH_ITER,
                weight_matrix=search.weight_matrix(k, len(target)),
                deadline=search.deadline,
            )
        return (
            outputs.expand(value_rows, k), query_rows, k, loss + dropped,
            outputs.kept(k),
        )

    found = None
    for k in range(high, upper):
        if search.expired():
            return None
        found = test(k)
        if found is not None:
            break
    if found is None:
        return None
    while found[2] > 1 and not search.expired():
        k = found[2] - 1
        if k in tested and starts[k][1] <= SCREEN * search.test(k, outputs.kept(k))[1]:
            break  # tested from a start that passed the screen: nothing to add
        if not screen(k, thorough=True):
            break
        smaller = test(k)
        if smaller is None:
            break
        found = smaller
    return found


def read_out_heads(
    lifted_coef,
    token_dim,
    n_heads,
    tol,
    *,
    apply_weight,
    residual_sum_of_squares=None,
    n_observations=None,
    budget_seconds=None,
    verbose=0,
    data_precision=None,
):
    """Heads of a fitted lifted model: the estimators' read-out.

    With ``n_heads="auto"`` the count comes from the data:

    - Noiseless coefficients (the lifted fit's residual variance, in the training
      metric, below ``tol`` relative to the signal): the fewest heads whose
      lifted coefficients are within ``tol`` of ``lifted_coef`` (relative
      Frobenius norm), searched as in :func:`minimal_heads`.
    - Noisy coefficients: the fewest heads ``k`` that pass a nested-model F-test
      against the lifted fit. With ``Delta_k`` the increase of the training loss
      of the best ``k``-head model over the lifted fit, ``q_k`` the dimension of
      the ``k``-head model (:func:`head_parameter_count`), ``n`` the number of
      observations and ``RSS`` the lifted fit's residual sum of squares (pooled
      over outputs), ``k`` is accepted when

          F = (Delta_k / (n_outputs p - q_k)) / (RSS / (n_outputs (n - p)))

      is below the ``1 - SIGNIFICANCE`` quantile (99%) of the F distribution with
      ``(n_outputs p - q_k, n_outputs (n - p))`` degrees of freedom. The accepted
      heads are then refined towards the best ``k``-head model in the training
      metric (Gauss-Newton) with what is left of the budget. With fewer
      observations than lifted features there is no residual variance and only
      ``tol`` applies.

    With an int ``k``: the best model with at most ``k`` heads for the training
    objective (the fewest heads within ``tol`` when those are at most ``k``).
    With None: the paper's SVD read-out (:func:`paper_heads`).

    The search stops when ``budget_seconds`` is spent and returns the best valid
    heads it has: accepted by one of the criteria, else the paper's read-out
    truncated within ``tol`` (``complete=False``). BLAS runs single-threaded
    during the search (its products are small).

    Parameters
    ----------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
        The lifted solution (centered when an intercept is fitted).
    token_dim : int
    n_heads : "auto", int or None
    tol : float
        Relative Frobenius tolerance on the lifted coefficients.
    apply_weight : callable
        ``apply_weight(R)`` returns ``R @ (G + alpha I)`` for ``R`` of shape
        ``(r, n_lifted_features)``, ``G`` the (weighted, centered) lifted Gram:
        the training objective of any ``theta`` exceeds the lifted fit's by
        ``trace((theta - lifted_coef) (G + alpha I) (theta - lifted_coef)^T)``.
    residual_sum_of_squares : array-like of shape (n_outputs,), optional
        The lifted fit's training residual sum of squares; None disables the test.
    n_observations : int, optional
        Training rows of the fit.
    budget_seconds : float, optional
        Time allowed for the search; None for no limit.
    verbose : int
        Print each count tried, its statistic and the time.
    data_precision : float, optional
        Relative precision of the data as given (the estimators pass the machine
        epsilon of float32 input; see ``_validation.input_precision``).
        A count is also accepted when its training loss exceeds the lifted fit's by
        at most ``data_precision^2`` times the energy of the fitted predictions
        (criterion ``"precision"``): rounding float32 data leaves a residual that
        is not independent noise (it follows the inputs), which the F-test would
        read as structure.

    Returns
    -------
    HeadReadout

    Examples
    --------
    Heads of a noiseless two-head model, with the training weight the identity:

    >>> import numpy as np
    >>> from sklearn_linattn import MultiHeadLinearAttention
    >>> from sklearn_linattn._heads import read_out_heads
    >>> rng = np.random.default_rng(0)
    >>> truth = MultiHeadLinearAttention(
    ...     rng.normal(size=(2, 1, 4)), rng.normal(size=(2, 4, 4)))
    >>> readout = read_out_heads(
    ...     truth.lifted_coef(), 4, "auto", 1e-8, apply_weight=lambda r: r)
    >>> readout.n_heads, readout.criterion, readout.complete
    (2, 'tol', True)
    """
    lifted_coef = np.asarray(lifted_coef, dtype=np.float64)
    if lifted_coef.ndim != 2:
        raise ValueError(
            "lifted_coef must have shape (n_outputs, n_lifted_features), got shape "
            f"{lifted_coef.shape}."
        )
    d = int(token_dim)
    if lifted_coef.shape[1] != d * d * (d + 1) // 2:
        raise ValueError(
            f"lifted_coef has {lifted_coef.shape[1]} columns; token_dim={d} needs "
            f"{d * d * (d + 1) // 2} (d * d * (d + 1) / 2)."
        )
    if n_heads is not None:
        compile_search_kernels()  # before the search's clock starts
    with single_threaded_blas():  # a cached controller: ~2 ms less per fit
        return _read_out(
            lifted_coef, d, n_heads, tol, apply_weight, residual_sum_of_squares,
            n_observations, budget_seconds, verbose, data_precision,
        )


def _read_out(
    lifted_coef, d, n_heads, tol, apply_weight, rss, n_obs, budget, verbose, precision
):
    search = _Search(
        lifted_coef, d, tol, apply_weight, rss, n_obs, budget, verbose, precision
    )
    m = search.m
    split = fold_lifted_coef(lifted_coef, d)
    decomposition = svd(split)  # the paper's read-out, kept for the fallback
    paper_count = n_heads_within(decomposition[1], tol)

    def result(folded, k, criterion, loss=None, n_kept=None):
        value, query = heads_of_folded(
            folded, k, m, d, decomposition if folded is split else None
        )
        theta = head_coef(value.reshape(k, m * d), query.reshape(k, d * d), d)
        distance = (
            float(np.linalg.norm(theta - lifted_coef) / search.norm)
            if search.norm else 0.0
        )
        if loss is None and criterion != "paper" and search.variance is not None:
            loss = search.loss(theta)  # for the F statistic reported
        statistic, critical = (
            search.statistic(loss, k, n_kept) if loss is not None else (np.nan, np.nan)
        )
        readout = HeadReadout(
            value, query, criterion, search.complete, tuple(search.tried),
            time.thread_time() - search.start, distance, statistic, critical,
        )
        search.log(
            f"{k} heads ({criterion}{'' if search.complete else ', budget spent'}); "
            f"counts tried {list(search.tried)}"
        )
        return readout

    if n_heads is None or search.norm == 0 or paper_count <= 1:
        return result(split, paper_count, "paper" if n_heads is None else "tol")

    fixed = n_heads != "auto"
    upper = min(int(n_heads), paper_count) if fixed else paper_count
    noisy = search.noisy()
    search.log(
        f"p={search.p}, {m} output(s), paper's count {paper_count}, "
        + (f"noisy: F-test at level {SIGNIFICANCE}" if noisy else "noiseless: tol")
    )
    if not noisy:
        lower = min(fewest_heads_bound(lifted_coef, d, tol), paper_count)
        found = _tol_search(
            search, lower, upper, split if upper == paper_count else None
        )
        if found is not None:
            return result(found[0], found[1], "tol")
        if not fixed or upper == paper_count:
            return result(split, paper_count, "tol" if search.complete else "paper")
    elif not fixed:
        found = _noisy_search(search, upper)
        if found is None:
            return result(split, paper_count, "tol" if search.complete else "paper")
        value_rows, query_rows, k, loss, kept = found
        statistic, critical = search.statistic(loss, k, kept)
        criterion = "f-test" if statistic <= critical else "precision"
        return result(value_rows.T @ query_rows, k, criterion, loss, kept)
    if upper == paper_count:
        return result(split, paper_count, "tol")
    # A fixed count below what reproduces the fit: the best model with k heads.
    k = upper
    search.tried.append(k)
    # Starts (folded W, heads): alternating projections with k heads and with
    # k - 1 (they can stall at k above where k - 1 heads get, and a k-head fit
    # must not be worse than a (k - 1)-head one: d = 4, 3 heads, ridge: 1.2e-3 at
    # k = 4 against 2.6e-4 at k = 3, the training loss 8x), and the paper's heads
    # cut to k. Gauss-Newton from the lowest.
    candidates = [
        (
            alternating_projections(
                lifted_coef, d, rank, split, 0.0, SCREEN_ITER, search.deadline
            )[0],
            rank,
        )
        for rank in (k, k - 1)
        if rank > 0
    ]
    candidates.append((search.truncated(k), k))
    losses = [search.loss(unfold_lifted_coef(c, d)) for c, _ in candidates]
    start, heads = candidates[int(np.argmin(losses))]
    value_rows, query_rows = balanced_rows(start, heads)
    value_rows, query_rows, loss, n_iter = weighted_head_fit(
        lifted_coef, d, value_rows, query_rows, apply_weight, max_iter=FIXED_ITER,
        stall=1e-13, weight_matrix=search.weight_matrix(heads, m),
        deadline=search.deadline,
    )
    search.log(f"{heads} heads: {n_iter} Gauss-Newton steps in the training metric")
    fitted = value_rows.T @ query_rows
    if not noisy and search.distance(fitted) > search.tol and not search.expired():
        # With the budget left: exact k-head models can sit behind a plateau that
        # both searches leave early; Gauss-Newton from the paper's heads cut to k
        # crosses it (d = 3, 2 outputs, 2 heads: 28 steps to 4e-13, after
        # stalling at 6e-2).
        folded, error = _exact_heads(
            search, k, [search.truncated(k)], PLATEAU_ITER, 1e-13
        )
        search.log(f"{k} heads, Gauss-Newton without early stop: distance {error:.1e}")
        if error <= search.tol:
            return result(folded, k, "tol")
        # n_heads="auto"'s search, down from the paper's count: its answer is
        # exact, and the best k-head model when it has at most k heads.
        found = _tol_search(search, lower, paper_count, split)
        if found is not None and found[1] <= k:
            return result(found[0], found[1], "tol")
    return result(fitted, heads, "fixed", loss)


def minimal_heads(lifted_coef, token_dim, tol, budget_seconds=None):
    """The fewest heads that reproduce ``lifted_coef`` within ``tol``.

    No model with fewer than the slices' eigenvalue bound can work, and the
    paper's read-out (the SVD of the symmetric split, truncated within ``tol``)
    always does. The bound gets one probe by alternating projections; when it
    fails, counts below the paper's are tried one at a time, downwards, until one
    fails (with one output first by Levenberg-Marquardt on a common isotropic
    subspace of the slices, then by alternating projections with restarts), so
    that the search holds a valid answer at every step.

    Returns
    -------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    """
    readout = read_out_heads(
        lifted_coef, token_dim, "auto", tol, apply_weight=lambda r: r,
        budget_seconds=budget_seconds,
    )
    return readout.value_matrices, readout.query_matrices


def fixed_heads(
    lifted_coef, token_dim, n_heads, apply_weight, tol, budget_seconds=None
):
    """The best model with at most ``n_heads`` heads for a weighted objective.

    Minimizes ``sum_a (theta_a - lifted_coef_a)^T weight (theta_a - lifted_coef_a)``
    over the lifted coefficients ``theta`` of ``n_heads``-head models (with
    ``weight = Phi^T Phi + alpha I`` and ``lifted_coef`` the lifted minimizer, the
    training objective up to a constant). See :func:`read_out_heads`.

    Returns
    -------
    value_matrices : ndarray of shape (h, n_outputs, token_dim), ``h <= n_heads``
    query_matrices : ndarray of shape (h, token_dim, token_dim)
    """
    readout = read_out_heads(
        lifted_coef, token_dim, int(n_heads), tol, apply_weight=apply_weight,
        budget_seconds=budget_seconds,
    )
    return readout.value_matrices, readout.query_matrices
