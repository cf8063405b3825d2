"""Reading attention heads out of lifted coefficients (Algorithm 1, step 3, of
Yau et al. 2025, and the minimal-head read-out of the theory page).

The lifted coefficients fix only the part of ``W[a,b,c,e]`` symmetric in ``(b, c)``;
heads are a factorization ``W[(a,b),(c,e)] = sum_h V_h[a,b] Q_h[c,e]`` of any ``W``
with that symmetric part, so the number of heads is the rank of the chosen ``W``.

- :func:`read_out_heads`: what the estimators call (the search below).
- :func:`paper_heads`: the paper's read-out, the SVD of the symmetric split.

**The search.** A head count ``k`` is *accepted* when the best ``k``-head model it
finds passes the criterion: on noiseless coefficients, reproducing them within
``tol``; on noisy ones, a training loss not significantly above the lifted fit's
(:meth:`_Search.test`). The paper's count (the SVD of the symmetric split,
truncated within ``tol``) always passes. The fewest accepted heads are found by
galloping (noisy: up from one head; noiseless: down from the paper's count, after
a probe at a lower bound) and then bisection, one probe per count. A probe runs a
fixed number of iterations: alternating projections between rank-``k``
matrices and the affine set of ``W`` with the fitted symmetric part (with one
output, also Levenberg-Marquardt for a common isotropic subspace of the slices),
then Gauss-Newton on the heads in the training metric. No clock is read: the
result is a function of the coefficients, the metric and the parameters.

Heads come in one canonical form: sorted by strength (singular value of ``W``),
scale balanced (``||V_h||_F = ||Q_h||_F``), and signs fixed so that the entry of
largest magnitude in each ``V_h`` is positive.
"""

import functools
import time
from dataclasses import dataclass

import numpy as np
import scipy.stats

from ._data import single_threaded_blas
from ._low_rank import (
    IDENTITY,
    RESTARTS,
    STEP_TOL,
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
    "head_parameter_count",
    "paper_heads",
    "read_out_heads",
]

# Level of the test: a count is rejected when a loss increase this unlikely under
# the k-head model is observed.
SIGNIFICANCE = 0.01
# The lifted fit's noise (relative to the signal, in the training metric) above this
# share of `tol` makes the count a statistical question; below it (exact data up to
# float64 rounding) the heads must reproduce the fit within tol.
NOISE_SHARE = 1e-2
# Iterations of alternating projections for a noisy probe's start (a start only).
SCREEN_ITER = 100
# A noisy probe whose best start has a test statistic above SCREEN times the
# critical value is rejected without refinement (Gauss-Newton lowered the
# statistic by factors of 1.5 to 6 in our runs); refinement stops once the loss
# passes, or when the linearized problem promises no loss below GIVE_UP times
# the passing loss.
SCREEN = 20.0
# Gauss-Newton steps are dense (exact, from the Jacobian; M formed once by applying
# the metric to the identity) for at most DENSE_LIFTED lifted features and, in the
# training metric, about n_outputs p^2 n_parameters <= DENSE_WORK flops per step
# for forming M J; by conjugate gradients otherwise.
DENSE_LIFTED = 300
DENSE_WORK = 3e7
GIVE_UP = 2.0
# Gauss-Newton steps in the training metric: per probe, and for a fixed count; a
# fit stops earlier when a step lowers the loss by less than STALL (relative).
FIT_ITER = 30
FIXED_ITER = 100
STALL = 1e-12
# Noiseless probes: Gauss-Newton in the Frobenius metric after alternating
# projections stall (a zero-residual problem, where they converge slowly), and
# the seeded isotropic starts tried with one output.
EXACT_PROJECTIONS = 1000
EXACT_ITER = 30
# ... which stops when a step gains less than a factor 2 (a zero-residual problem:
# where Gauss-Newton converges, it gains far more per step).
EXACT_STALL = 0.5
ISOTROPIC_STARTS = 8
# A probe is run only while the estimated flops of the probes so far stay within
# this multiple of the regression's (LiftedSolution.flops) plus a floor; beyond
# that the fewest heads accepted so far, or the paper's read-out (criterion
# "paper"), are returned.
WORK_FACTOR = 10.0
WORK_FLOOR = 4e8
# Noiseless searches get more: their answer is exact structure, and a count just
# below the generating one fails only after all its starts ran (with 4e8, d = 8
# and H = 6 gave 0 of 10 generating counts).
EXACT_WORK_FLOOR = 1e10


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
    tails = np.sqrt(np.cumsum(singular_values[::-1] ** 2))[::-1]  # norm of s[r:]
    return int(np.argmax(np.append(tails, 0.0) <= tol * total))


def heads_of_folded(folded, n_heads, n_outputs, token_dim):
    """Canonical heads of the rank-``n_heads`` truncation of a folded ``W``.

    Returns
    -------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    """
    d = token_dim
    left, singular_values, right_t = svd(folded)
    if n_outputs == 1 and 0 < n_heads < d:
        # One output: the W of rank k with a given symmetric part form a family
        # (antisymmetric blocks on the heads' value subspace U); take its member
        # of least norm, 2 P S_e - P S_e P with P the projector onto U (theory
        # page, "Heads in canonical form"), so the heads depend on the function
        # and U alone, not on the path that found them.
        basis = left[:, :n_heads]
        slices = fold_lifted_coef(unfold_lifted_coef(folded, d), d)
        slices = slices.reshape(d, d, d).transpose(2, 0, 1)  # S_e[b, c]
        projected = basis @ (basis.T @ slices)
        folded = (2 * projected - projected @ (basis @ basis.T)).transpose(1, 2, 0)
        left, singular_values, right_t = svd(folded.reshape(d, d * d))
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
    count = n_heads_within(svd(folded)[1], tol)
    return heads_of_folded(folded, count, lifted_coef.shape[0], token_dim)


def head_parameter_count(n_heads, n_outputs, token_dim):
    """Dimension of the set of lifted coefficients that ``n_heads`` heads compute.

    ``k`` heads have ``k (n_outputs d + d^2)`` parameters; the function does not
    change under ``V -> A V``, ``Q -> A^{-T} Q`` for any invertible ``k x k``
    mixing ``A`` (``k^2`` dimensions). With one output, the part of ``W``
    antisymmetric in ``(b, c)`` that keeps the rank adds ``d k (k - 1) / 2`` more;
    with several outputs it adds none. The count is capped at ``n_outputs * p``.
    (Checked against the rank of the map's Jacobian for ``d <= 5``,
    ``n_outputs <= 5``.)

    Examples
    --------
    >>> from sklearn_linattn._heads import head_parameter_count
    >>> head_parameter_count(1, 1, 4), head_parameter_count(2, 1, 4)
    (19, 32)
    >>> head_parameter_count(4, 1, 4)  # d heads describe every function: p
    40
    """
    k, m, d = n_heads, n_outputs, token_dim
    count = k * (m * d + d * d - k)
    if m == 1:
        count -= d * k * (k - 1) // 2
    return int(min(max(count, 0), m * d * d * (d + 1) // 2))


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
        training loss is within the input's floating-point precision of the lifted
        fit's: float32 data), ``"fixed"`` (the best model
        found with the requested number of heads), ``"paper"`` (the paper's SVD
        read-out: requested, or the search would cost more than its work limit).
    counts_tried : tuple of int
        Head counts probed, in order.
    relative_distance : float
        ``||theta_heads - theta_lifted||_F / ||theta_lifted||_F``.
    f_statistic, f_critical : float
        The returned heads' test statistic against the lifted fit and its critical
        value (NaN when no test applied).
    seconds : float
        Wall time the read-out took (for information; nothing depends on it).

    Examples
    --------
    >>> from sklearn_linattn import LinearAttentionRegressor
    >>> from sklearn_linattn.datasets import make_random_mhla
    >>> X, y, _ = make_random_mhla(300, 8, 4, n_heads=2, random_state=0)
    >>> search = LinearAttentionRegressor().fit(X, y).head_search_
    >>> search.n_heads, search.criterion, search.relative_distance < 1e-8
    (2, 'tol', True)
    """

    value_matrices: np.ndarray
    query_matrices: np.ndarray
    criterion: str
    counts_tried: tuple
    relative_distance: float
    f_statistic: float = float("nan")
    f_critical: float = float("nan")
    seconds: float = 0.0

    @property
    def n_heads(self):
        return len(self.value_matrices)


class _Search:
    """One read-out: the target, the metric, the noise model and the probes."""

    def __init__(self, coef, d, tol, apply_weight, noise, precision, verbose):
        self.coef, self.d, self.tol = coef, d, tol
        self.m, self.p = coef.shape
        self.apply_weight = apply_weight
        self.noise = noise
        self.precision = precision or 0.0
        self.verbose = verbose
        self.norm = float(np.linalg.norm(coef))
        self.split = fold_lifted_coef(coef, d)
        self.tried = []
        self.fits = {}  # count -> folded W of the probe
        self.work_left = np.inf  # flops the probes may still spend (_probe_cost)
        self.lower = 1  # the search's lower bound on the count
        self._signal = None
        self._weight_matrix = None

    def log(self, message):
        if self.verbose:
            print(f"[heads] {message}", flush=True)

    @property
    def signal(self):
        """Training-metric energy of the lifted fit's predictions."""
        if self._signal is None:
            self._signal = float(np.vdot(self.coef, self.apply_weight(self.coef)))
        return self._signal

    def loss(self, theta):
        residual = theta - self.coef
        return float(np.vdot(residual, self.apply_weight(residual)))

    def distance(self, folded):
        gap = unfold_lifted_coef(folded, self.d) - self.coef
        return float(np.linalg.norm(gap) / self.norm)

    def noisy(self):
        """Whether the lifted fit's noise, or the data's own precision, exceeds
        ``NOISE_SHARE * tol`` relative to the signal."""
        if self.noise is None or self.signal <= 0:
            return self.precision > NOISE_SHARE * self.tol
        spread = np.sqrt(self.noise.residual_variance * self.m * self.p / self.signal)
        return bool(max(spread, self.precision) > NOISE_SHARE * self.tol)

    def dense_steps(self, n_heads, exact=False):
        """Whether Gauss-Newton steps for this count are solved from the dense
        Jacobian (small problems) rather than by conjugate gradients."""
        if self.p > DENSE_LIFTED:
            return False
        n_parameters = n_heads * (self.m * self.d + self.d * self.d)
        return exact or self.m * self.p**2 * n_parameters <= DENSE_WORK

    def weight_matrix(self, n_heads):
        """``M`` as a matrix when Gauss-Newton steps for this count are dense."""
        if not self.dense_steps(n_heads):
            return None
        if self._weight_matrix is None:
            self._weight_matrix = np.asarray(self.apply_weight(np.eye(self.p)))
        return self._weight_matrix

    def fit(self, k, start, max_iter, exact=False, decided=None, patient=False):
        """Gauss-Newton on ``k`` heads from the folded ``start``: in the Frobenius
        metric (``exact``, stopping when a step gains less than ``EXACT_STALL``
        unless ``patient``) or the training metric; with ``decided = (accept,
        reject)`` losses, it stops as soon as the loss is below ``accept`` or the
        linearized problem promises nothing below ``reject``. Returns ``(folded,
        loss)``."""
        value_rows, query_rows = balanced_rows(start, k)
        if exact:
            dense = self.dense_steps(k, exact=True)
            weight, matrix = (lambda rows: rows), (IDENTITY if dense else None)
        else:
            weight, matrix = self.apply_weight, self.weight_matrix(k)
        accept, reject = (-np.inf, np.inf) if decided is None else decided
        value_rows, query_rows, loss, n_steps = weighted_head_fit(
            self.coef, self.d, value_rows, query_rows, weight, max_iter=max_iter,
            stall=EXACT_STALL if exact and not patient else STALL,
            weight_matrix=matrix,
            accept_below=accept, give_up_above=reject,
            step_tol=np.inf if exact else STEP_TOL,
        )
        self.spend(n_steps * _step_cost(self, k, exact))  # the steps taken
        return value_rows.T @ query_rows, loss

    def test(self, k, loss, n_kept=None):
        """``(statistic, critical value, threshold)`` of the k-head model's loss
        increase (theory page, "How many heads"; its value matrices use
        ``n_kept`` output directions), NaNs when no test applies."""
        n_kept = self.m if n_kept is None else n_kept
        # (at least one dimension: the k-head model may not span the identified
        # directions although it has as many parameters)
        df1 = max(
            self.m * self.noise.rank - head_parameter_count(k, n_kept, self.d), 1
        )
        if self.noise.variance <= 0:
            return float("nan"), float("nan"), float("nan")
        critical = float(scipy.stats.f.isf(SIGNIFICANCE, df1, self.noise.dof))
        # Loss increases below the data's own rounding (float32 input) are no
        # evidence against a count: that rounding follows the inputs.
        floor = self.precision**2 * max(self.signal, 0.0) / df1 / self.noise.variance
        return loss / df1 / self.noise.variance, critical, max(critical, floor)

    @functools.cached_property
    def output_directions(self):
        """Output directions by decreasing training-metric energy (eigenvectors
        of ``coef M coef^T``) and the energy beyond the first ``r`` of them."""
        energy = self.coef @ self.apply_weight(self.coef).T
        energies, rotation = np.linalg.eigh((energy + energy.T) / 2)
        energies = np.maximum(energies[::-1], 0.0)
        tails = np.append(np.cumsum(energies[::-1])[::-1], 0.0)
        return rotation[:, ::-1], tails

    def kept_outputs(self, kept):
        """The search on the first ``kept`` output directions (this one when all
        are kept) and the training-metric energy of the others."""
        if kept == self.m:
            return self, 0.0
        rotation, tails = self.output_directions
        fitting = _Search(
            rotation[:, :kept].T @ self.coef, self.d, self.tol, self.apply_weight,
            self.noise, self.precision, self.verbose,
        )
        fitting.work_left = self.work_left
        return fitting, float(tails[kept])

    def expand(self, folded, kept):
        """A folded ``W`` fitted on the first ``kept`` output directions, in the
        original outputs."""
        if kept == self.m:
            return folded
        rotation = self.output_directions[0][:, :kept]
        blocks = folded.reshape(kept, self.d, -1)
        return np.einsum("ak,kbx->abx", rotation, blocks).reshape(self.m * self.d, -1)

    def spend(self, flops):
        """Charge ``flops`` to the work limit; False once it is exceeded."""
        self.work_left -= flops
        return self.work_left >= 0

    def starts(self, k, n_isotropic=ISOTROPIC_STARTS):
        """Folded ``W`` of rank ``k`` to start Gauss-Newton from: alternating
        projections from the symmetric split, the split's rank-``k`` truncation
        (the paper's heads cut to ``k``) and, with one output, the models nearest
        in the Frobenius metric on seeded isotropic subspaces."""
        projected = alternating_projections(
            self.coef, self.d, k, self.split, 0.0, SCREEN_ITER
        )[0]
        truncated = balanced_rows(self.split, k)
        starts = [projected, truncated[0].T @ truncated[1]]
        if self.m == 1 and k < self.d:
            starts += nearest_isotropic_folds(
                self.coef, self.d, k, projected, n_isotropic
            )
        return starts

    def probe(self, k, noisy):
        """The best ``k``-head model this search finds, and whether it passes."""
        self.tried.append(k)
        if not noisy:
            folded, error = low_rank_fold(
                self.coef, self.d, k, self.tol, max_iter=EXACT_PROJECTIONS
            )
            if error > self.tol and self.work_left > 0:
                truncated = balanced_rows(self.split, k)
                starts = [folded, truncated[0].T @ truncated[1]]
                if self.m == 1 and k < self.d:
                    starts += nearest_isotropic_folds(
                        self.coef, self.d, k, folded, ISOTROPIC_STARTS
                    )
                # Gauss-Newton from the two nearest (isotropic models come sorted).
                nearest = sorted(starts[:3], key=self.distance)[:2]
                fits = [self.fit(k, start, EXACT_ITER, exact=True) for start in nearest]
                folded = min(fits, key=lambda pair: pair[1])[0]
                error = self.distance(folded)
            if error > self.tol and self.work_left > 0:
                # Gauss-Newton from the truncated split without the early stop
                # (it can cross a plateau: d = 3, 2 outputs, 2 heads, 28 steps).
                truncated = balanced_rows(self.split, k)
                folded = self.fit(
                    k, truncated[0].T @ truncated[1], 2 * EXACT_ITER, exact=True,
                    patient=True,
                )[0]
                error = self.distance(folded)
            if error > self.tol and k > self.lower and self.spend(
                RESTARTS * _probe_cost(self, k, False)
            ):  # last: seeded restarts (one output: 40 isotropic starts)
                folded, error = low_rank_fold(
                    self.coef, self.d, k, self.tol, restarts=RESTARTS
                )
            self.log(f"{k} heads: distance {error:.2e} (tol {self.tol:g})")
            return folded, error <= self.tol
        # k heads have value matrices of row rank at most k d: with fewer than
        # that many outputs kept, fit the k d output directions of largest
        # training-metric energy and leave the rest out (their energy adds to
        # the loss exactly); a nested model, counted as such by the test.
        kept = min(self.m, k * self.d)
        fitting, dropped = self.kept_outputs(kept)
        # (isotropic starts changed no count of the noisy grid: d 4-8, 128 fits)
        starts = fitting.starts(k, n_isotropic=0)
        losses = [fitting.loss(unfold_lifted_coef(s, self.d)) for s in starts]
        best = int(np.argmin(losses))
        statistic, critical, threshold = self.test(k, losses[best] + dropped, kept)
        # The threshold as a loss: a fit below it passes.
        limit = (losses[best] + dropped) * threshold / statistic - dropped
        if statistic > SCREEN * threshold:  # beyond what refining ever gained
            self.log(f"{k} heads: F {statistic:.3g} at the start, screened out")
            return self.expand(starts[best], kept), False
        folded, loss = fitting.fit(
            k, starts[best], FIT_ITER, decided=(limit, GIVE_UP * limit)
        )
        self.work_left = fitting.work_left
        statistic, critical, threshold = self.test(k, loss + dropped, kept)
        folded = self.expand(folded, kept)
        self.log(f"{k} heads: F {statistic:.3g} (critical {critical:.3g})")
        return folded, bool(statistic <= threshold)


def _step_cost(search, k, exact):
    """Estimated flops of one Gauss-Newton step with ``k`` heads: dense steps form
    and solve the normal equations, others run conjugate-gradient products."""
    m, d, p = search.m, search.d, search.p
    parameters = k * (m * d + d * d)
    if exact and search.dense_steps(k, exact=True):  # no product with M
        return 2 * m * p * parameters**2 + parameters**3 // 3
    if not exact and search.dense_steps(k):
        return 2 * m * p * p * parameters + 2 * m * p * parameters**2
    return 60 * (2 * m * p * p + 4 * m * p * k * d)


def _probe_cost(search, k, noisy):
    """Estimated flops of one probe's alternating projections (an
    eigendecomposition of the smaller Gram of ``W`` each) and first Gauss-Newton
    step; the steps it takes are charged as they are taken."""
    m = min(search.m, k * search.d) if noisy else search.m  # the outputs fitted
    small, large = sorted((m * search.d, search.d * search.d))
    projection = 2 * small**2 * large + 10 * small**3
    iterations = SCREEN_ITER if noisy else EXACT_PROJECTIONS
    return iterations * projection + _step_cost(search, k, not noisy) * m / search.m


def read_out_heads(
    lifted_coef,
    token_dim,
    n_heads,
    tol,
    *,
    apply_weight,
    noise=None,
    regression_flops=None,
    verbose=0,
    data_precision=None,
):
    """Heads of a fitted lifted model: the estimators' read-out.

    - ``n_heads=None``: the paper's SVD read-out (:func:`paper_heads`).
    - ``n_heads="auto"``: the fewest heads accepted by the criterion, found by
      bisection (module docstring). On noiseless coefficients (the lifted fit's
      noise below ``tol`` relative to the signal) a count is accepted when its
      heads reproduce ``lifted_coef`` within ``tol`` (relative Frobenius norm). On
      noisy ones, with ``Delta_k`` the training-loss increase of the ``k``-head
      model over the lifted fit, ``q_k`` its dimension
      (:func:`head_parameter_count`), ``r`` the rank of the training metric and
      ``sigma^2`` the variance per dimension of the lifted coefficients in that
      metric (``noise``), ``k`` is accepted when
      ``F = Delta_k / ((n_outputs r - q_k) sigma^2)`` is below the 99% quantile of
      the F distribution with ``(n_outputs r - q_k, noise.dof)`` degrees of freedom.
    - An int ``k``: the fewest heads within ``tol`` when at most ``k`` suffice,
      else the best ``k``-head model found for the training objective.

    Parameters
    ----------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
        The lifted solution (centered when an intercept is fitted).
    token_dim : int
    n_heads : "auto", int or None
    tol : float
        Relative Frobenius tolerance on the lifted coefficients.
    apply_weight : callable
        ``apply_weight(R)`` returns ``R @ M`` for ``R`` of shape
        ``(r, n_lifted_features)``, ``M = G + alpha I`` with ``G`` the (weighted,
        centered) lifted Gram: the training objective of any ``theta`` exceeds the
        lifted fit's by ``trace((theta - lifted_coef) M (theta - lifted_coef)^T)``.
    noise : object with ``variance``, ``dof`` and ``rank``, optional
        The noise model of the lifted coefficients (see ``_solvers.CoefNoise``);
        None when there is none (fewer observations than features): then only
        ``tol`` applies.
    regression_flops : float, optional
        The regression's cost; a probe runs only while the read-out's estimated
        flops stay within ``WORK_FACTOR`` times it plus ``WORK_FLOOR``. None: no
        limit.
    verbose : int
        Print each count probed and its statistic.
    data_precision : float, optional
        Relative precision of the data as given (float32 input): loss increases
        below ``data_precision^2`` times the fitted predictions' energy are no
        evidence against a count.

    Returns
    -------
    HeadReadout

    Examples
    --------
    Heads of a noiseless two-head model, with the training metric the identity:

    >>> import numpy as np
    >>> from sklearn_linattn import MultiHeadLinearAttention
    >>> from sklearn_linattn._heads import read_out_heads
    >>> rng = np.random.default_rng(0)
    >>> truth = MultiHeadLinearAttention(
    ...     rng.normal(size=(2, 1, 4)), rng.normal(size=(2, 4, 4)))
    >>> readout = read_out_heads(
    ...     truth.lifted_coef(), 4, "auto", 1e-8, apply_weight=lambda r: r)
    >>> readout.n_heads, readout.criterion
    (2, 'tol')
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
    start = time.perf_counter()
    with single_threaded_blas():
        search = _Search(
            lifted_coef, d, tol, apply_weight, noise, data_precision, verbose
        )
        folded, k, criterion, statistic = _search(search, n_heads, regression_flops)
        value, query = heads_of_folded(folded, k, search.m, d)
    theta = head_coef(value.reshape(k, search.m * d), query.reshape(k, d * d), d)
    distance = float(np.linalg.norm(theta - lifted_coef) / search.norm) if k else 0.0
    search.log(f"{k} heads ({criterion}); counts tried {search.tried}")
    return HeadReadout(
        value, query, criterion, tuple(search.tried), distance, *statistic,
        seconds=time.perf_counter() - start,
    )


def _search(search, n_heads, regression_flops):
    """``(folded W, n_heads, criterion, (statistic, critical))`` of a read-out."""
    split, nan = search.split, (float("nan"), float("nan"))
    paper_count = n_heads_within(svd(split)[1], search.tol)
    if n_heads is None or search.norm == 0 or paper_count <= 1:
        return split, paper_count, "paper" if n_heads is None else "tol", nan
    noisy = search.noisy()
    # A fixed count from the paper's up is "auto" (the fewest within tol; on
    # noisy data the paper's heads, which are the lifted fit).
    fixed = n_heads != "auto" and int(n_heads) < paper_count
    if n_heads != "auto" and not fixed and noisy:
        return split, paper_count, "tol", nan
    upper = int(n_heads) if fixed else paper_count
    if noisy and (fixed or search.noise is None):
        # A fixed count on noisy data needs no test; without a noise model
        # (fewer observations than features) no count below the paper's passes.
        if not fixed:
            return split, paper_count, "tol", nan
        return _best_fixed(search, upper)
    lower = 1 if noisy else min(
        fewest_heads_bound(search.coef, search.d, search.tol), upper
    )
    search.lower = lower
    if regression_flops is not None:
        floor = WORK_FLOOR if noisy else EXACT_WORK_FLOOR
        search.work_left = WORK_FACTOR * regression_flops + floor
    # The fewest accepted heads in [lower, high]; `high` starts one past a fixed
    # count ("none found") or at the paper's count (accepted). Noisy fits gallop
    # up from `lower` = 1 (1, 3, 7, 15, ...) until a count passes;
    # noiseless ones probe the lower bound, then gallop down from `high` until a
    # count fails (failing probes cost the most: all restarts). Then bisection.
    found = None
    low, high = lower, upper + 1 if fixed else paper_count
    step, turned = 1, False
    while low < high:
        if turned:
            k = (low + high) // 2
        elif noisy or low == lower:
            k = min(low + step - 1, high - 1)
        else:
            k = max(high - step, low)
        exhausted = not search.spend(_probe_cost(search, k, noisy))
        if not exhausted:
            folded, accepted = search.probe(k, noisy)
            exhausted = search.work_left < 0 and not accepted  # a costly fallback
        if exhausted:  # the fewest accepted so far, or the paper's read-out
            search.log(f"the probe of {k} heads is beyond the work limit")
            if fixed or found is not None:
                break
            return split, paper_count, "paper", nan
        search.fits[k] = folded
        if accepted:
            found, high = (folded, k), k
            turned = turned or noisy
        else:
            low = k + 1
            turned = turned or (not noisy and k != lower)
        if noisy or k != lower:
            step *= 2
    if found is None:
        return _best_fixed(search, upper) if fixed else (split, paper_count, "tol", nan)
    folded, k = found
    if not noisy:
        return folded, k, "tol", nan
    # Polish in the training metric (within the probe's output directions).
    kept = min(search.m, k * search.d)
    fitting, dropped = search.kept_outputs(kept)
    if kept < search.m:  # the probe's W in the kept directions
        rotation = search.output_directions[0][:, :kept]
        blocks = folded.reshape(search.m, search.d, -1)
        folded = np.einsum("ak,abx->kbx", rotation, blocks).reshape(kept * search.d, -1)
    folded, loss = fitting.fit(k, folded, FIT_ITER)
    statistic, critical, _ = search.test(k, loss + dropped, kept)
    criterion = "precision" if statistic > critical else "f-test"
    return search.expand(folded, kept), k, criterion, (statistic, critical)


def _best_fixed(search, k):
    """The best ``k``-head model found for the training objective: Gauss-Newton
    from the probe at ``k`` (if any) and from the two best of :meth:`_Search.starts`
    by training loss."""
    nan = (float("nan"), float("nan"))
    probed = [search.fits[k]] if k in search.fits else []
    others = search.starts(k)
    losses = [search.loss(unfold_lifted_coef(s, search.d)) for s in others]
    best_two = [others[i] for i in np.argsort(losses)[:2]]
    fits = [search.fit(k, start, FIXED_ITER) for start in probed + best_two]
    folded, loss = min(fits, key=lambda pair: pair[1])
    statistic = search.test(k, loss)[:2] if search.noise is not None else nan
    return folded, k, "fixed", statistic
