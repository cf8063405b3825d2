"""Reading attention heads out of lifted coefficients (Algorithm 1, step 3, of
Yau et al. 2025, and the fewest-heads read-out: theory page, "How many heads").

The lifted coefficients fix only the part of ``W[a,b,c,e]`` symmetric in ``(b, c)``;
heads are a factorization ``W[(a,b),(c,e)] = sum_h V_h[a,b] Q_h[c,e]`` of any ``W``
with that symmetric part, so the number of heads is the rank of the chosen ``W``.

- :func:`paper_heads`: the paper's read-out, the SVD of the symmetric split.
- :func:`read_out_heads`: what the estimators call. A count ``k`` is judged by one
  fit, the same for the search and for ``n_heads=k`` (:meth:`_Search.fit`,
  :mod:`sklearn_linattn._low_rank`): it passes when it reproduces the lifted fit
  within ``tol`` (exact data) or by the held-out tests of
  :mod:`sklearn_linattn._folds` (noisy data), cheapest first. Two shortcuts of
  the search fail counts on other heads than ``n_heads=k`` fits (their verdicts
  agreed with ``n_heads=k``'s wherever measured): an exact fit that ends beyond
  ``REFIT_REACH`` of the lifted fit is not refitted in the training metric, and
  counts near interpolation that a completion of the split fails are not
  fitted (:meth:`_Search._fit`); below the count returned those are then
  fitted as ``n_heads=k`` fits them (:func:`_fitted_below`).

No clock is read: every loop is bounded by counts of iterations and a work limit
in flops, so the heads are a function of the data and the parameters, returned
in one canonical form (theory page, "Heads in canonical form").
"""

import functools
import warnings
from dataclasses import dataclass, fields, replace

import numpy as np
import scipy.linalg

from ._attention import _fold_indices, fold_lifted_coef, unfold_lifted_coef
from ._data import single_threaded_blas
from ._designs import LiftedDesign, PenalizedDesign, design_loss
from ._folds import FoldsBeyondWork
from ._low_rank import (
    ACCURACY,
    LINEARIZED_TOL,
    LSMR_ITER,
    ROUNDING,
    Budget,
    Progress,
    completion_queries,
    cost_model,
    fit_heads,
    head_coef,
    isotropic_queries,
    linearized_refit,
    svd,
)
from ._validation import caller_stacklevel

__all__ = ["CountFit", "HeadReadout", "paper_heads", "read_out_heads"]

# What each constant does; the measurements that set it are in
# benchmarks/README.md, "Constants of the head read-out".
#
# Starts of a k-head fit (_Search.starts): the split completed to rank k by
# COMPLETION_ITER rounds of alternating projections (noisy data); one output's
# common isotropic subspaces from ISOTROPIC_STARTS seeds (exact data),
# NOISY_ISOTROPIC_STARTS (noisy), EXACT_STARTS_PER_DIM * r for r - 1 heads of
# exact data (r: the tokens' span's dimension); RANDOM_STARTS random query
# matrices on exact data and NOISY_RANDOM_STARTS on noisy data of several outputs
# with k >= 2, drawn in the spans' bases; every seed starts from START_SEED.
COMPLETION_ITER = 30
RANDOM_STARTS = 10
NOISY_RANDOM_STARTS = 4
ISOTROPIC_STARTS = 40
NOISY_ISOTROPIC_STARTS = 8
EXACT_STARTS_PER_DIM = 20
START_SEED = 20261201
# Noisy fits of one output with 2 <= k < d / 2 heads end with a start on the
# nearest common isotropic subspace from FEW_HEADS_SEEDS seeds, refined where its
# loss is below the other starts' minimum.
FEW_HEADS_SEEDS = 1
# On noisy data every start runs SCREEN_ITER steps and the SCREEN_KEPT best are
# resumed; a start within SAME_START (relative) of a better one is not.
SCREEN_ITER = 10
SCREEN_KEPT = 2
SAME_START = 3e-3
# Levenberg-Marquardt steps per start (FIT_ITER), and to polish the returned
# heads (POLISH_ITER). The search refits exact fits that end beyond tol in the
# Frobenius metric in the training metric (as n_heads=k does) where they end
# within REFIT_REACH.
FIT_ITER = 100
REFIT_REACH = 1e-2
POLISH_ITER = 20
# Gauss-Newton steps refining heads within tol of the lifted fit to it.
REFINE_ITER = 5
# A noisy fit has stalled when 5 steps gain less than RESOLUTION of the lifted
# fit's explained energy.
RESOLUTION = 1e-6
# A count passes at a cross-validated error at most the lifted fit's plus SLACK
# standard errors.
SLACK = 0.0
# Held-out errors within max(ERROR_TIE, min(TIE_PER_TOL * tol, TIE_LIMIT))
# (relative) of the lifted fit's tie with it: no worse, and within a squared-error
# threshold; a classifier's count passes only below it (unless it is the lifted
# fit on the data: _Search.reproduces_lifted).
ERROR_TIE = 1e-9
TIE_PER_TOL = 10.0
TIE_LIMIT = 1e-6
# ... and no worse than the lifted fit on more than FOLDS_MAJORITY of the folds.
FOLDS_MAJORITY = 0.5
# With several outputs, no output's cross-validated error above the lifted fit's
# (lowered as the threshold is) by more than OUTPUT_SPREAD standard errors of its
# per-fold differences.
OUTPUT_SPREAD = 2.0
# Below INTERPOLATION_MARGIN equations (rows times outputs) per degree of freedom
# in the folds' fits, generalized cross-validation checks the comparison.
INTERPOLATION_MARGIN = 2.0
# Near interpolation a count is not fitted when its generalized cross-validated
# error would fail even at TRAINING_FLOOR times the lifted fit's training error.
TRAINING_FLOOR = 0.5
# With REFIT_MARGIN training rows per lifted feature, linearized refits that pass
# on every fold stand for the folds' own refits.
REFIT_MARGIN = 10.0
# Noisy fits stop at heads whose lifted coefficients exceed DRIFT times the lifted
# fit's norm, and are polished (and judged) with the penalty DRIFT_PENALTY *
# signal * ||theta_k - theta||^2 / ||theta||^2.
DRIFT = 1e3
DRIFT_PENALTY = 1e-6
# The first fits from the interpolating count on (_reproducing_beyond) may spend
# BEYOND_SHARE times the nominal work the search spent on its fits before them,
# or BEYOND_FLOOR flops where that is more.
BEYOND_SHARE = 4.0
BEYOND_FLOOR = 2e8
# The estimators' work limit: head_work_limit times the lifted fit's flops plus
# WORK_FLOOR.
WORK_FLOOR = 5e10


def unfitted_counts(readout):
    """The counts below the one a read-out returned (below the last one fitted,
    where the work limit cut the search short: it did not reach those above)
    that have no row in ``readout.counts``: ruled out, or left unfitted; none
    for a fixed ``n_heads``."""
    if readout.criterion == "fixed":
        return []
    tried = {int(k) for k in readout.counts_tried}
    reached = readout.n_heads if readout.complete else max(tried, default=0)
    return [k for k in range(1, reached) if k not in tried]


def heads_phrase(n_heads):
    """``"1 head"``, ``"3 heads"``."""
    return f"{n_heads} head" + ("" if n_heads == 1 else "s")


def _drifted(value_rows, query_rows, coef, token_dim):
    """Whether heads' lifted coefficients exceed ``DRIFT`` times ``coef``'s norm
    (drift along the null space of a singular training metric, which the
    minimum-norm lifted fit ``coef`` leaves at zero)."""
    theta = head_coef(value_rows, query_rows, token_dim)
    norm = np.linalg.norm(coef)
    return bool(norm > 0 and np.linalg.norm(theta) > DRIFT * norm)


def _anchored(design, coef):
    """``design`` plus the penalty ``DRIFT_PENALTY * signal * ||theta_k -
    coef||^2 / ||coef||^2`` (:class:`PenalizedDesign`): a drift of ``D`` times
    the lifted norm costs ``DRIFT_PENALTY * D^2`` of the explained energy."""
    weight = DRIFT_PENALTY * _explained_energy(design) / np.sum(coef**2)
    return PenalizedDesign(design, coef, weight)


def token_exponents(design):
    """Powers of two, one per token coordinate, that bring the coordinates to
    comparable sizes in the training metric: the integers nearest to ``l``
    (less its median) of the least-squares fit ``log2 n[b, c, e] = 2 (l_b +
    l_c + l_e) + constant`` to the metric's positive diagonal entries
    (``design.direction_norms()``, a head direction's ``S[b, c] q[e]`` on the
    training rows: ``l_b`` is about ``log2`` of coordinate ``b``'s size).
    None where no data define them (the Frobenius distance) or all are 0."""
    norms = design.direction_norms()
    if norms is None:
        return None
    d = design.token_dim
    norms = np.asarray(norms, dtype=np.float64).reshape(d, d, d)
    entries = np.nonzero(np.isfinite(norms) & (norms > 0))
    used = np.unique(np.concatenate(entries))
    if used.size < 2:
        return None
    equations = np.zeros((entries[0].size, d + 1))
    for coordinates in entries:
        np.add.at(equations, (np.arange(coordinates.size), coordinates), 2.0)
    equations[:, d] = 1.0
    columns = np.append(used, d)
    logs = np.log2(norms[entries])
    solution = scipy.linalg.lstsq(equations[:, columns], logs)[0][:-1]
    exponents = np.zeros(d, dtype=int)
    exponents[used] = np.rint(solution - np.median(solution)).astype(int)
    return exponents if np.any(exponents) else None


def _lifted_exponents(exponents):
    """``e_b + e_c + e_e`` for each lifted feature ``(b, c, e)``: the power of
    two that multiplies its coefficient when token coordinate ``j`` is divided
    by ``2^(e_j)``."""
    d = len(exponents)
    b, c, e = np.unravel_index(_fold_indices(d)[0], (d, d, d))
    return exponents[b] + exponents[c] + exponents[e]


def _heads_in_data_units(value_rows, query_rows, exponents):
    """Heads fitted with token coordinate ``j`` divided by ``2^(e_j)``, in the
    data's units: value entry ``b`` times ``2^(-e_b)``, query entry ``(c, e)``
    times ``2^(-e_c - e_e)`` (exact: powers of two)."""
    k, d = len(query_rows), len(exponents)
    values = np.ldexp(value_rows.reshape(k, -1, d), -exponents)
    queries = np.ldexp(
        query_rows.reshape(k, d, d), -(exponents[:, None] + exponents[None, :])
    )
    return values.reshape(k, -1), queries.reshape(k, d * d)


def _explained_energy(design):
    """The targets' energy above the design's baseline (the lifted fit's loss):
    what the lifted fit explains (at least the smallest positive float)."""
    energy = float(np.vdot(design.targets, design.targets)) - design.baseline
    return max(energy, np.finfo(float).tiny)


def n_heads_within(singular_values, tol, total=None):
    """Fewest leading singular values whose dropped tail has Frobenius norm at
    most ``tol`` times ``total`` (default: the norm of them all, summed as the
    tails are, so that ``tol=1`` keeps none)."""
    tails = np.sqrt(np.cumsum(singular_values[::-1] ** 2))[::-1]  # norm of s[r:]
    if total is None:
        total = tails[0] if len(tails) else 0.0
    if total == 0:
        return 0
    return int(np.argmax(np.append(tails, 0.0) <= tol * total))


def heads_of_folded(folded, n_heads, n_outputs, token_dim, decomposition=None):
    """Canonical heads of the rank-``n_heads`` truncation of a folded ``W``
    (``decomposition``: its SVD, when already computed).

    Returns
    -------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    """
    d = token_dim
    left, singular_values, right_t = decomposition or svd(folded)
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
    left, right = left[:, :n_heads], right_t[:n_heads].T
    # signs: the largest-magnitude entry of each left column positive
    signs = np.sign(left[np.argmax(np.abs(left), axis=0), np.arange(left.shape[1])])
    signs[signs == 0] = 1.0
    left, right = left * signs, right * signs
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


def fewest_heads_bound(lifted_coef, token_dim, tol):
    """A lower bound on the heads needed to reproduce ``lifted_coef`` within tol.

    For any ``r``-head model the slices ``S_{a,e}[b, c] = W_sym[a, b, c, e]`` are
    ``sym(sum_h V_h[a, b] Q_h[c, e])``, of rank at most ``2 r``; so the part of the
    slices beyond their ``2 r`` largest eigenvalues is within the model's distance
    to ``lifted_coef``.
    """
    d = token_dim
    slices = fold_lifted_coef(lifted_coef, d).reshape(-1, d, d, d)
    slices = slices.transpose(0, 3, 1, 2).reshape(-1, d, d)  # one per (a, e)
    squared = np.sort(np.linalg.eigvalsh(slices) ** 2, axis=1)  # ascending
    tails = np.concatenate(
        [np.cumsum(squared, axis=1)[:, ::-1], np.zeros((len(squared), 1))], axis=1
    ).sum(axis=0)
    allowed = (tol * np.linalg.norm(lifted_coef)) ** 2
    kept = int(np.argmax(tails <= allowed))
    return max(1, -(-kept // 2))


class _EqualByValue:
    """Equality and hash of a frozen dataclass field by field: arrays by their
    entries and NaN (not computed) equal to NaN, so that a row or a read-out
    equals its pickled copy and that of a refit of the same data (NaN compares
    unequal to itself, and arrays compare entry-wise)."""

    def _values(self):
        values = []
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, np.ndarray):
                value = (value.shape, tuple(value.ravel().tolist()))
            elif isinstance(value, float) and value != value:
                value = "nan"
            values.append(value)
        return tuple(values)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self):
        return hash(self._values())


@dataclass(frozen=True, eq=False)
class CountFit(_EqualByValue):
    """One head count fitted by the read-out (a row of ``head_search_.counts``).

    A row describes the count's fit as it was judged: on noisy data the heads
    ``n_heads=k`` returns (polished before the verdict); on exact data the
    heads returned are then polished on to rounding, so that their distance
    (``head_search_.relative_distance``) can be below their row's. In the
    search, a noisy count that fails generalized cross-validation whatever its
    training error passes only by reproducing the lifted fit; it is first
    tried as the symmetric split completed to rank k, and where generalized
    cross-validation fails that completion the count fails and its row
    describes those heads; otherwise the count is fitted (theory page, "Near
    interpolation").

    Attributes
    ----------
    n_heads : int
    relative_distance : float
        ``||theta_k - theta||_F / ||theta||_F``, ``theta`` the lifted fit.
    training_loss : float
        The training objective's excess over the lifted fit's, relative to the
        lifted fit's training-metric energy.
    cv_error : float
        Cross-validated error per unit weight, the count refitted on each fold
        as ``n_heads=k`` fits it, from the fold's own starts (NaN when not
        computed), or the linearized refits' where they pass the count
        (``linearized_cv_error``).
    training_error : float
        The same error of these heads on the training rows, where the criterion
        is squared error (NaN otherwise). In the search, when it is above the
        count's ``threshold``, the count fails without refitting the folds (and
        ``cv_error`` is NaN): a held-out error is at least the training error.
        A count asked for (``n_heads=k``) is refitted on its folds all the same
        (``cv_error`` reported) and fails as in the search, although its refits
        can pass (a fold's refit can find a better minimum than the fit to all
        the rows; where the Gram has lost directions to rounding, as with tokens
        far from zero, errors computed from the statistics are rounding's).
    gcv_error : float
        Generalized cross-validation of these heads: their training squared
        error over ``(1 - D / (rows outputs))^2``, ``D`` the dimension of the
        k-head models (inf from ``D`` on; NaN when not computed). Where the
        count, fitted to a fold's 80% of the rows, has fewer than two equations
        (rows times outputs) per degree of freedom, it fails when this is above
        the lower of the lifted fit's cross-validated and generalized
        cross-validated squared errors (theory page, "Near interpolation").
        Elsewhere it is reported only. A count that fails so is failed without
        its folds' refits (``cv_error`` NaN), also where asked for
        (``n_heads=k``): their verdict would test the same ``gcv_error``.
    folds_within : int or None
        The folds on whose held-out rows the refitted heads' error is at most
        the lifted fit's times the folds' size factor ``r_k`` that lowers
        ``threshold`` for squared errors (theory page; None when not
        refitted; folds whose rows all have
        zero weight are not counted). A count passes only on a majority of the
        folds as well: a mean of heavy-tailed errors can rest on one fold.
    folds_refitted : int or None
        How many folds were refitted, one at a time, those the linearized refits
        found furthest above the lifted fit first (None when they were not, or
        the work limit stopped their refits): in the search, fewer than all when
        those already fail the count whatever the others' errors (their errors'
        sum above the threshold, or too many of them worse than the lifted fit's
        for a majority); ``cv_error`` and ``folds_within`` are then NaN and
        None. A count asked for (``n_heads=k``) that its folds' refits decide is
        refitted on every fold (not one that generalized cross-validation
        fails: ``gcv_error``). A fold without held-out rows of weight, or
        without rows to fit on, is counted here, and with the lifted fit's error
        there, but not refitted (the heads would err as it does).
    linearized_cv_error : float
        The cross-validated error of the heads' refits linearized at this fit
        (one Gauss-Newton step on each fold; NaN when not computed): with at
        least 10 rows per lifted feature, a count they find within its
        ``threshold`` and no worse than the lifted fit on every fold passes
        without the folds' own refits (``cv_error`` is then theirs); every other
        count goes to those refits. Optimistic where the count has about as many
        parameters as there are rows: the full fit has seen every fold.
    threshold : float
        The cross-validated error a count must not exceed: the lifted fit's
        (``head_search_.cv_error``), lowered by the factor by which the lifted
        fit, with more degrees of freedom, gains more than k heads from being
        fitted to all the rows instead of a fold's 80% (theory page). For
        misclassification the rate must be strictly below it (or 0 where it
        is 0: the class scores then decide), and the factor is
        at most the lifted fit's own learning curve on the folds, extrapolated
        to all the rows, less the heads' own fall. Near interpolation, for
        squared errors, it is the lower of ``head_search_.cv_error`` and
        ``head_search_.gcv_error``, not lowered. A classifier's count that is
        the lifted fit on the data (``training_loss`` within ``tol**2``, and
        every fold's refit no worse than the lifted fit's in misclassified
        weight and class scores) passes at ``head_search_.cv_error`` itself,
        with ``score_threshold`` the lifted fit's own. NaN when not computed.
    passes : bool or None
        The verdict; None when it was not reached (a count above the one
        returned, or the work limit stopped its test first), or, on noisy
        data, without held-out folds to reach it (``n_heads=k`` fitted with
        ``solver="cg"``, or by ``partial_fit`` whose first call, or the
        ``fit`` it continues, had ``n_heads=None``, or with every row of
        positive weight in one sequence).
    failed_on : str or None
        The test that failed the count (None when it passes or is undecided):
        ``"tol"`` (exact data: not within ``tol``), ``"training"`` (its training
        error above ``threshold``), ``"gcv"`` (near interpolation, ``gcv_error``
        above the lifted fit's squared error), ``"refits"`` (its folds' refits'
        error above ``threshold``, or, for misclassification, not below it
        and the count not the lifted fit on the data: ``threshold``),
        ``"majority"`` (worse than the lifted fit on a majority of the folds),
        ``"output"`` (several outputs: worse than the lifted fit on one output,
        by more than 2 standard errors of the per-fold differences, theory page)
        or ``"scores"`` (a classifier: ``score_cv_error`` above
        ``score_threshold``); where the first folds' refits already fail it
        (``folds_refitted`` below 5), the test they fail it on (the folds not
        refitted could have failed it on another as well).
    criterion : str or None
        ``"tol"`` or ``"cv"``: which test it passed or failed last (``"cv"``:
        the held-out tests, training error, linearized refits and refits on
        the folds); for a count left undecided the last test it passed:
        ``"training"`` (its training error is within the threshold) or
        ``"linearized"`` (so are its linearized refits; its folds' refits
        were not finished); None when the work limit stopped its fit or its
        training test first.
    score_cv_error : float
        A classifier's count refitted on every fold: the refits' held-out
        squared error of the class scores (one-hot targets, per unit weight
        and class; NaN otherwise). A count whose misclassification passes
        fails when this is above ``score_threshold``: misclassification moves
        a held-out row at a time, and on few rows heads whose scores predict
        worse than the lifted fit's can misclassify fewer of them by chance.
    score_threshold : float
        The lifted fit's held-out squared error of the class scores, lowered by
        the factor of ``threshold`` for squared errors (NaN where
        ``score_cv_error`` is).
    """

    n_heads: int
    relative_distance: float
    training_loss: float
    cv_error: float = float("nan")
    passes: object = None
    criterion: object = None
    training_error: float = float("nan")
    linearized_cv_error: float = float("nan")
    gcv_error: float = float("nan")
    folds_within: object = None
    folds_refitted: object = None
    threshold: float = float("nan")
    failed_on: object = None
    score_cv_error: float = float("nan")
    score_threshold: float = float("nan")



@dataclass(frozen=True, eq=False)
class HeadReadout(_EqualByValue):
    """How the heads of a fit were read out (the estimators' ``head_search_``).

    Two read-outs are equal when every field is (arrays entry by entry, NaN
    equal to NaN, as in :class:`CountFit`): a read-out equals its pickled copy
    and that of a refit of the same data.

    Attributes
    ----------
    value_matrices : ndarray of shape (n_heads, n_outputs, token_dim)
    query_matrices : ndarray of shape (n_heads, token_dim, token_dim)
    criterion : str
        Why this count: ``"tol"`` (the heads reproduce the lifted fit within
        ``tol``: in lifted coefficients, or, on exact data the certificate does
        not identify, on the training objective, within ``tol**2`` of the
        signal, where ``relative_distance`` can be far above ``tol``),
        ``"cv"`` (the cross-validated error of ``n_heads=k``, each fold
        refitted from its own lifted fit, is within its threshold, or, with at
        least 10 training rows per lifted feature, that of its refits
        linearized at the full fit on every fold, :class:`CountFit`),
        ``"lifted"`` (the paper's read-out of the lifted fit, because no fewer
        heads passed; or, with ``fewer_untried``, fewer heads that could only
        reproduce the lifted fit were not fitted; or, with ``complete`` False,
        the work limit cut the search short before any passed; or noisy data
        had no held-out folds, with a warning), ``"fixed"`` (``n_heads=k``: the
        best model found with at most ``k`` heads), ``"paper"``
        (``n_heads=None``).
    passes : bool or None
        Whether the returned heads pass (``"tol"``, ``"cv"`` and ``"lifted"``
        always do; for ``"fixed"`` the verdict on the count returned, None where
        noisy data have no held-out folds to judge it (also where every row of
        positive weight lies in one sequence),
        the ``passes`` of its :class:`~sklearn_linattn.CountFit`).
    complete : bool
        False when the work limit left a verdict the search needed undecided:
        the count returned is the fewest that passed before (or the lifted
        fit's). A search whose last fit runs out of work but is decided (passes
        by ``tol``, or fails) is complete.
    counts : tuple of CountFit
        Every count fitted, in the order fitted (but counts from the
        interpolating one on whose fit the work limit cut short: they are
        left out, undecided, as if not fitted). A count below the one returned
        without a row was not fitted: ruled out (on exact data, fewer heads
        than the slices' bound allows; from the interpolating count on, where
        only reproducing the lifted fit passes, counts below one that failed
        to, which fewer heads cannot do either, and near interpolation counts
        whose generalized cross-validated error fails even at half the lifted
        fit's training error and that the slices' bound keeps from reproducing
        it; theory page, "Near interpolation"), or, with
        ``fewer_untried`` or ``complete`` False, left unfitted.
    relative_distance : float
        Of the returned heads, as in :class:`CountFit`.
    cv_error, cv_standard_error : float
        The lifted fit's cross-validated error and its standard error across
        the folds (NaN without folds, or where every row of positive weight
        lies in one sequence); a count passes "cv" at or below its
        ``threshold`` (:class:`CountFit`; misclassification below it, unless
        the count is the lifted fit on the data: then at its threshold,
        ``cv_error`` itself), at most ``cv_error``. Squared errors
        are in the targets' units squared, per unit of sample weight and per
        output, each output's weighted by ``output_weights`` squared.
    gcv_error : float
        The lifted fit's generalized cross-validated squared error (its
        training error over ``(1 - dof / rows)^2``, ``dof`` the trace of its hat
        matrix; inf without degrees of freedom left, NaN without folds). Near
        interpolation (fewer than two equations per degree of freedom in the
        folds' fits) it can lower the threshold, and a count there passes "cv"
        only when its own
        (:class:`CountFit`) is at most the lower of the lifted fit's
        cross-validated and generalized cross-validated squared errors too.
    work, work_limit : float
        Flops the read-out spent, and its limit. The limit is checked as work
        is charged, one evaluation or step at a time, so a search cut short can
        end past it by the last such charge.
    output_weights : ndarray of shape (n_outputs,) or None
        A multi-output regression's weights of its outputs in the read-out
        (the search's, and ``n_heads=None``'s truncation at ``tol``): the
        power of two nearest the largest output's noise over each output's
        (the root of the lifted fit's training residual, at least 1e-6 of the
        output's sum of squared, centered with an intercept, targets; that
        floor alone near interpolation), so that the heads' fit and the
        held-out errors weigh each output's errors against its own noise,
        whatever its units (theory page, "Several outputs"); the folds use the
        same weights. Distances and squared errors are of the weighted
        outputs. None: not weighted (one output, classifiers, outputs within
        a factor sqrt(2) of one noise).
    effective_outputs : float
        The outputs counted as independent ones in the held-out tests' equations
        and degrees of freedom: ``m^2 / trace(R^2)``, ``R`` the correlations of
        the lifted fit's training residuals across the ``m`` outputs that have
        noise (those it fits to rounding do not count; theory page, "Several
        outputs"); ``m`` below two rows per degree of freedom, where the
        correlations are not known to rounding, for ``solver="cg"`` and for
        ``n_heads=None``.
    tol : float
        The tolerance the read-out used: the estimator's ``tol``, or more where
        the fit pins its coefficients down only so far (float32 input, the
        solver's own precision, targets centered far from zero).
    loss : str or None
        The held-out error the counts were judged on: ``"squared"`` (squared
        errors; regressors, and classifiers whose rows were not kept:
        ``partial_fit`` beyond its kept rows, Dask) or ``"misclassified"``
        (a classifier's misclassified rows); None where no folds were built
        or none holds rows to predict.
    fewer_untried : bool
        True where the lifted fit's heads came back while counts below them
        that could reproduce it were not all fitted. Counts whose models have
        as many parameters as the training rows have equations pass only by
        reproducing the lifted fit within ``tol``, and then predict as it
        does; under a work limit their first fit may take at most four times
        the work the search spent before it (or ``2e8`` flops; ``partial_fit``
        counts both as ``fit`` on the same rows spends them), and a count
        whose fit would exceed that, or the limit, is not fitted.
        ``head_work_limit=None`` fits them all and can return fewer heads
        with the same predictions. The search counts as complete (what is
        left could only predict as the lifted fit does), unless the work limit
        itself ran out during such a fit (``complete`` False).
    n_heads_asked : int or None
        The ``n_heads=k`` asked for (criterion ``"fixed"``), else None. The
        count returned is fewer where heads of the best ``k``-head model are
        zero within ``tol`` (they are dropped, and the count left is fitted).

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
    passes: object
    complete: bool
    counts: tuple
    relative_distance: float
    cv_error: float = float("nan")
    cv_standard_error: float = float("nan")
    gcv_error: float = float("nan")
    work: float = 0.0
    work_limit: float = float("inf")
    output_weights: object = None
    effective_outputs: float = 1.0
    tol: float = float("nan")
    loss: object = None
    fewer_untried: bool = False
    n_heads_asked: object = None

    @property
    def n_heads(self):
        """The number of heads returned (``len(value_matrices)``)."""
        return len(self.value_matrices)

    @property
    def counts_tried(self):
        """The head counts fitted, in order."""
        return tuple(count.n_heads for count in self.counts)


class _Search:
    """The read-out of one lifted fit: its design, folds, starts and verdicts."""

    def __init__(
        self, coef, d, tol, design, folds, budget, verbose, identifiable, residual,
        degrees_of_freedom=None, n_observations=None, fit_intercept=False,
        residual_sum_of_squares=None, effective_outputs=None,
    ):
        self.coef, self.d, self.tol = coef, d, tol
        self.identifiable, self.residual = identifiable, residual
        self.m = coef.shape[0]
        # the outputs counted as independent in equations and degrees of freedom
        self.outputs = float(self.m if effective_outputs is None else effective_outputs)
        self.design, self.budget = design, budget
        self._folds = folds
        self.verbose = verbose
        self.norm = float(np.linalg.norm(coef))
        self.split = fold_lifted_coef(coef, d)
        self.signal = 1.0 if design is None else _explained_energy(design)
        self.fits = {}  # count -> (value_rows, query_rows, CountFit)
        # whether the work limit left a verdict the search needed undecided
        self.undecided = False
        self.linearized_errors = {}  # count -> its linearized refits' fold errors
        self.anchored = set()  # counts whose fits drifted (polished with a penalty)
        self.completed = set()  # counts judged by completion_verdict
        self.completions = {}  # count -> the split completed to its rank
        # the generalized cross-validation's inputs (given with the folds)
        self.degrees_of_freedom = degrees_of_freedom
        self.n_observations, self.fit_intercept = n_observations, fit_intercept
        self.residual_sum_of_squares = residual_sum_of_squares
        self.lifted_cv = (float("nan"), float("nan"))
        self.frobenius = LiftedDesign(coef, d)
        # whether the folds were not built, every row of positive weight in one
        self.unheld = False
        # whether counts that could reproduce the lifted fit were left unfitted
        # (_reproducing_beyond)
        self.fewer_untried = False

    @property
    def folds_built(self):
        return self._folds is not None and not callable(self._folds)

    @property
    def folds(self):
        """The held-out folds, built on first use (None without any, or where
        building them would exceed the work limit: the search is then cut
        short, its budget exhausted)."""
        if callable(self._folds):
            left = self.budget.limit - self.budget.spent
            try:
                self._folds = self._folds(flops_limit=left)
            except FoldsBeyondWork as beyond:  # a fold's factorization: p^3 work
                self._folds = None
                self.budget.spend(beyond.flops, 0.0)
                # (folds that could not be used are not work the limit cut short)
                self.unheld = beyond.unheld
                self.budget.refused = self.undecided = not beyond.unheld
                return None
            # (the folds' lifted fits: no nominal work, _reproducing_beyond)
            self.budget.spend(self._folds.flops, 0.0)
            self.lifted_cv = self._folds.lifted
        return self._folds

    @property
    def exact(self):
        """Whether the lifted fit is exact: its training residual is within ``tol``
        of the targets (relative root mean square), with residual degrees of
        freedom left."""
        if self.residual is None:
            return False
        return self.residual <= self.tol**2 * (self.residual + self.signal)

    error_scale = 1.0  # squared errors to the data's units (read_out_heads)

    def log(self, message):
        if self.verbose:
            print(f"[heads] {message}", flush=True)

    def log_count(self, count):
        """Print a count's row as ``head_search_`` reports it."""
        self.log(f"{heads_phrase(count.n_heads)}: {self.reported(count)}")

    @property
    def held_out_scale(self):
        """What held-out errors are multiplied by to be in the data's units:
        ``error_scale`` for squared errors, 1 for misclassification."""
        if self.folds_built and self.folds.loss != "squared":
            return 1.0
        return self.error_scale

    def reported(self, count):
        """A count's errors in the data's units, as ``head_search_`` reports them."""
        held_out = self.held_out_scale
        return replace(
            count,
            cv_error=count.cv_error * held_out,
            training_error=count.training_error * held_out,
            linearized_cv_error=count.linearized_cv_error * held_out,
            threshold=count.threshold * held_out,
            gcv_error=count.gcv_error * self.error_scale,
            score_cv_error=count.score_cv_error * self.error_scale,
            score_threshold=count.score_threshold * self.error_scale,
        )

    @functools.cached_property
    def split_svd(self):
        """The SVD of the symmetric split (the paper's read-out)."""
        return svd(self.split)

    def distance(self, value_rows, query_rows):
        theta = head_coef(value_rows, query_rows, self.d)
        difference = float(np.linalg.norm(theta - self.coef))
        if not self.norm:  # a fold with no training rows of weight: theta = 0
            return 0.0 if difference == 0 else np.inf
        return difference / self.norm

    def starts(self, k):
        """Query rows to start a k-head fit from (the constants' comment)."""
        starts = [self.split_svd[2][:k]]
        if not self.exact:
            starts.insert(0, self.completion_start(k))
        one_output = self.one_output
        n_random = RANDOM_STARTS if self.exact else 0
        if not self.exact and one_output is None and k >= 2:
            n_random = NOISY_RANDOM_STARTS
        (tokens, r), (queries, q) = self.token_bases
        if one_output is not None and r / 2 <= k < r:
            n_isotropic = ISOTROPIC_STARTS if self.exact else NOISY_ISOTROPIC_STARTS
            if self.exact and k == r - 1:
                n_isotropic = max(n_isotropic, EXACT_STARTS_PER_DIM * r)
            found = isotropic_queries(
                one_output, self.d, k, n_isotropic, [START_SEED, k], self.tol,
                self.budget, (tokens, r),
            )
            starts += [query for _, query in found[:2]]
        # query matrices drawn in the spans' bases: the same in any order of the
        # token coordinates, and the same draws with a coordinate no token uses
        random_state = np.random.default_rng([START_SEED, k, self.m, r, q])
        for _ in range(n_random):
            drawn = random_state.normal(size=(k, r, q))
            starts.append((tokens[:, :r] @ drawn @ queries[:, :q].T).reshape(k, -1))
        return starts

    @functools.cached_property
    def one_output(self):
        """The lifted coefficients as one output where their rows are proportional
        within ``tol`` (outputs that repeat one another), else None."""
        if self.m == 1:
            return self.coef
        _, singular, right_t = svd(self.coef)
        if singular[1] > self.tol * singular[0]:
            return None
        return singular[:1, None] * right_t[:1]

    def completion_start(self, k):
        """The query rows of the symmetric split completed to rank k (computed, and
        charged, once per count: a count :meth:`completion_verdict` sends to its
        fit starts from the same)."""
        if k not in self.completions:
            self.budget.spend(self.completion_flops(k))
            self.completions[k] = completion_queries(
                self.coef, self.d, k, COMPLETION_ITER
            )
        return self.completions[k].copy()

    def completion_flops(self, k):
        small, large = sorted((self.m * self.d, self.d**2))
        rounds = COMPLETION_ITER * (8.0 * k + 4.0) * self.m * self.d**3
        return rounds + (4.0 * large + 8.0 * small) * small**2

    def least_fit_flops(self, k, nominal=False):
        """The work of a noisy k-head fit's first start: the completion, one
        evaluation of its values (SVD of the head features) in the training
        metric and in the Frobenius one (where :meth:`reproduce` refines a count
        from the interpolating one on), and one Levenberg-Marquardt step's solve;
        near the paper's count these dominate (``nominal``: in nominal flops, the
        training metric's work on the design's :func:`cost_model`,
        :class:`Budget`)."""

        def evaluation(design):
            small, large = sorted((k * self.d, design.n_columns))
            return design.feature_flops(k) + 6.0 * small * small * large

        training = cost_model(self.design) if nominal else self.design
        if self.design.structured:
            step = (k * self.d**2) ** 3 / 3
        else:  # LSMR: two Jacobian products an iteration
            step = 2.0 * LSMR_ITER * training.feature_flops(k)
        return (
            self.completion_flops(k)
            + evaluation(training)
            + evaluation(self.frobenius)
            + step
        )

    def fit(self, k, stage="refits", asked=False, fitted=False):
        """The k-head fit and its verdict (cached), tested up to ``stage``:
        ``"training"``, ``"linearized"`` or ``"refits"``; a count no test has
        failed keeps the criterion of the last it passed (undecided). A count
        ``asked`` for (``n_heads=k``) is refitted on all its folds unless
        generalized cross-validation fails it, and fails on its training error
        as in the search."""
        if k not in self.fits:
            self.fits[k] = self._fit(k, asked, fitted)
        value_rows, query_rows, count = self.fits[k]
        tests = (
            ("training", self.linearized_refits),
            ("linearized", functools.partial(self.refits, asked=asked)),
        )
        for passed, test in tests:
            if passed == stage:  # tested up to stage
                break
            if count.criterion == passed:
                if self.budget.exhausted:
                    self.undecided = True
                    break
                count = test(k, value_rows, query_rows, count)
                self.log_count(count)
        if asked and count.passes and count.training_error > count.threshold:
            # the training error the search fails a count on (their refits can
            # pass it: a better minimum on a fold, or errors of statistics that
            # rounding dominates): failed as the search fails it, so that the
            # search never returns more heads than an n_heads=k that passes
            count = replace(count, passes=False, failed_on="training")
            self.log_count(count)
        self.fits[k] = value_rows, query_rows, count
        return self.fits[k]

    def _fit(self, k, asked=False, fitted=False):
        """``(value_rows, query_rows, CountFit)``: the best start by training loss
        (:meth:`training_fit`; noisy fits polished); exact data that identify
        the function are fitted in the Frobenius metric (:meth:`frobenius_fit`),
        then in the training metric where that ends beyond tol (in the search:
        and within ``REFIT_REACH``). In the search, counts from
        :attr:`first_hopeless` on are judged by :meth:`completion_verdict`
        where it decides, unless ``fitted``."""
        if not (asked or fitted) and k >= self.first_hopeless:
            judged = self.completion_verdict(k)
            if judged is not None:
                self.completed.add(k)
                self.log_count(judged[2])
                return judged
        if self.frobenius_fits:
            value_rows, query_rows = self.frobenius_fit(k)
            distance = self.distance(value_rows, query_rows)
            if (
                self.tol < distance <= (np.inf if asked else REFIT_REACH)
                and not self.budget.over_limit  # (the work limit ran out)
            ):
                # refitted in the training metric (REFIT_REACH's comment)
                value_rows, query_rows = fit_heads(
                    self.design, query_rows, FIT_ITER, budget=self.budget
                )[:2]
            loss = design_loss(self.design, value_rows, query_rows)
        else:
            value_rows, query_rows, loss = self.training_fit(k)
        # judged as n_heads=k returns them: polished (not where the work limit
        # ran out: the count is left undecided, unless it is within tol already)
        if not self.exact and not self.budget.over_limit:
            refinable = self.refinable(value_rows, query_rows)
            reproduced = self.reproduce(value_rows, query_rows)
            if self.distance(*reproduced) <= self.tol:
                # they reproduce the lifted fit (a count beyond the interpolating
                # one passes only so): refined to it to rounding, the training
                # objective's minimum, without the polish's work
                value_rows, query_rows = self.refined(*reproduced)
            else:  # polished, and refined unless that failed already
                value_rows, query_rows = self.polish(value_rows, query_rows)
                if not refinable:
                    value_rows, query_rows = self.reproduce(value_rows, query_rows)
            loss = design_loss(self.design, value_rows, query_rows)
        count = CountFit(k, self.distance(value_rows, query_rows), self.excess(loss))
        within = self.within(value_rows, query_rows, loss, self.design)
        folds = None if within or self.exact else self.folds  # built on first use
        if within:
            count = replace(count, passes=True, criterion="tol")
        elif self.budget.exhausted:
            self.undecided = True
        elif self.exact:  # (no folds: tol decides)
            count = replace(count, passes=False, criterion="tol", failed_on="tol")
        elif folds is None or not np.any(self.held_folds):
            # noisy data without held-out folds, or every row of weight in one
            # sequence (n_heads=k: the search returns the lifted fit's heads
            # with a warning): tol is no test of noisy heads, and the held-out
            # tests have no folds; not judged
            count = replace(count, passes=None, criterion=None)
        else:
            count = self.training_count(value_rows, query_rows, count, loss)
            if not asked and count.training_error > count.threshold:
                count = replace(
                    count, passes=False, criterion="cv", failed_on="training"
                )
            elif self.gcv_fails(k, count.gcv_error):
                # (also n_heads=k: the refits' verdict fails on the same
                # gcv_error whatever their errors, so they are not run)
                count = replace(count, passes=False, criterion="cv", failed_on="gcv")
        self.log_count(count)
        return value_rows, query_rows, count

    def training_fit(self, k):
        """``(value_rows, query_rows, loss)``: the best start in the training
        metric (on noisy data screened by ``SCREEN_ITER`` steps, the kept ones'
        fits then resumed), the first within tol ending the starts."""
        design = self.design
        accept, resolution = self.stop_rules(design)
        run = functools.partial(
            fit_heads, design, accept_below=accept, budget=self.budget,
            max_norm=np.inf if self.exact else DRIFT * self.norm,
        )
        starts = [(start, None) for start in self.starts(k)]  # (queries, progress)
        if not self.exact:  # screen the starts (one at `accept` ends them)
            screened = []
            for start, _ in starts:
                progress = Progress()
                screened.append((*run(start, SCREEN_ITER, progress=progress), progress))
                if screened[-1][2] <= accept or self.budget.over_limit:
                    break
            kept = []  # (coefficients, query rows, progress), the best first
            for value_rows, query_rows, _, _, progress in sorted(
                screened, key=lambda f: f[2]
            ):
                theta = head_coef(value_rows, query_rows, self.d)
                if len(kept) < SCREEN_KEPT and all(
                    np.linalg.norm(theta - other) > SAME_START * np.linalg.norm(other)
                    for other, *_ in kept
                ):
                    kept.append((theta, query_rows, progress))
            starts = [(query_rows, progress) for _, query_rows, progress in kept]
        best = None
        for start, progress in starts:  # (a screened fit resumed)
            heads = run(start, FIT_ITER, resolution=resolution, progress=progress)[:3]
            if best is None or heads[2] < best[2]:
                best = heads
            if self.within(*best, design) or self.budget.exhausted:
                break
        if (
            not self.budget.exhausted and not self.exact
            and self.one_output is not None and 2 <= k < self.token_ranks[0] / 2
        ):  # a last start: the nearest common isotropic subspace of the slices
            subspace = isotropic_queries(
                self.one_output, self.d, k, FEW_HEADS_SEEDS, [START_SEED, k],
                self.tol, self.budget, self.token_bases[0],
            )[0][1]
            if fit_heads(design, subspace, 0, budget=self.budget)[2] < best[2]:
                # already below the other starts' minimum: refined to a lower one
                best = run(subspace, FIT_ITER, resolution=resolution)[:3]
        return best

    def frobenius_fit(self, k):
        """``(value_rows, query_rows)`` of exact identified data: the best start
        in the Frobenius metric, the first within tol ending the starts; first
        with the token coordinates of comparable sizes (:attr:`rescaled`), the
        heads then in the data's units and refined there, and where those are
        not within tol, from the starts of the data's units (the nearer of the
        two fits is kept)."""
        geometries = [(self, None)]
        if self.rescaled is not None:
            geometries.insert(0, self.rescaled)
        best = None
        for source, exponents in geometries:
            design = source.frobenius
            accept = source.stop_rules(design)[0]
            fitted = None
            for start in source.starts(k):
                heads = fit_heads(
                    design, start, FIT_ITER, accept_below=accept, budget=self.budget
                )[:3]
                if fitted is None or heads[2] < fitted[2]:
                    fitted = heads
                if source.within(*fitted, design) or self.budget.exhausted:
                    break
            value_rows, query_rows = fitted[:2]
            if exponents is not None:
                value_rows, query_rows = _heads_in_data_units(
                    value_rows, query_rows, exponents
                )
                if source.within(*fitted, design):  # to rounding in the data's units
                    value_rows, query_rows = self.refined(value_rows, query_rows)
            distance = self.distance(value_rows, query_rows)
            if best is None or distance < best[2]:
                best = value_rows, query_rows, distance
            if distance <= self.tol or self.budget.exhausted:
                break
        return best[:2]

    def excess(self, loss):
        """A training loss's excess over the lifted fit's, per unit of the
        explained energy (:attr:`CountFit.training_loss`)."""
        return max(loss - self.design.baseline, 0.0) / self.signal

    def training_count(self, value_rows, query_rows, count, loss):
        """``count`` with the heads' training error (squared errors; NaN for
        misclassification), generalized cross-validated error and threshold:
        the held-out tests' start (criterion ``"training"``). The training
        squared error, per unit weight and output, is a lower bound of the
        cross-validated one; ``loss``: the heads' loss on :attr:`design`."""
        folds, k = self.folds, count.n_heads
        if self.fit_intercept:
            # The folds' held-out errors are centered at the means of each
            # fold's training rows (a refit's intercept): summed, they are not
            # the heads' error with the full fit's intercept. From the training
            # objective J = RSS + alpha ||theta||^2 instead, whose excess over
            # the lifted fit's is the design's loss above its baseline.
            theta = head_coef(value_rows, query_rows, self.d)
            penalty = folds.alpha * float(
                np.vdot(self.coef, self.coef) - np.vdot(theta, theta)
            )
            squared = self.residual_sum_of_squares + (loss - self.design.baseline)
            squared = max(squared + penalty, 0.0) / folds.squared_weight
        else:
            errors = [
                folds.squared_error(fold, value_rows, query_rows)
                for fold in range(folds.n_folds)
            ]
            squared = float(np.sum(errors)) / folds.squared_weight
        return replace(
            count, criterion="training",
            training_error=squared if self.folds.loss == "squared" else np.nan,
            gcv_error=self.generalized_cv(squared, self.head_dof(k)),
            threshold=self.threshold_of(k),
        )

    def stop_rules(self, design):
        """``(accept_below, resolution)`` of a fit on ``design``: within
        ``ACCURACY * tol`` of the targets' energy above the baseline, and on noisy
        data steps that gain less than ``RESOLUTION`` of the explained energy."""
        energy = float(np.vdot(design.targets, design.targets))
        accept = design.baseline + (ACCURACY * self.tol) ** 2 * energy
        explained = max(energy - design.baseline, 0.0)
        return accept, 0.0 if self.exact else RESOLUTION * explained

    @functools.cached_property
    def rescaled(self):
        """``(search, exponents)``: the search of the lifted fit with token
        coordinate ``j`` divided by ``2^(e_j)`` (:func:`token_exponents`), in
        the Frobenius metric there; None where every ``e_j`` is 0. Exact fits
        start there (:meth:`frobenius_fit`): in the data's units a coordinate
        much smaller than the others weighs its coefficients far more, and fits
        of the generating count can stop at local minima (benchmarks/README.md,
        "Exact fits in comparable units")."""
        exponents = token_exponents(self.design)
        if exponents is None:
            return None
        with np.errstate(over="ignore", under="ignore"):
            coef = np.ldexp(self.coef, _lifted_exponents(exponents))
        if not np.all(np.isfinite(coef)) or np.count_nonzero(coef) != np.count_nonzero(
            self.coef
        ):  # beyond the float range: fitted in the data's units
            return None
        search = _Search(
            coef, self.d, self.tol, LiftedDesign(coef, self.d), None, self.budget, 0,
            True, 0.0,
        )
        return search, exponents

    @property
    def frobenius_fits(self):
        """Whether counts are fitted in the Frobenius metric (exact identified data)."""
        return self.identifiable and self.exact

    def within(self, value_rows, query_rows, loss, design):
        """Whether heads reproduce the lifted fit within ``tol``: in lifted
        coefficients, or, on exact data that do not identify the function, on
        the training objective (within ``tol^2`` of the signal)."""
        if self.distance(value_rows, query_rows) <= self.tol:
            return True
        if self.identifiable or not self.exact or design is not self.design:
            return False
        return loss - design.baseline <= self.tol**2 * self.signal

    def reproduce(self, value_rows, query_rows):
        """Heads beyond ``tol`` of the lifted fit but within ``sqrt(tol)``, or of a
        count from the interpolating one on (which passes only by reproducing the
        lifted fit), refined in the Frobenius metric and kept where that brings
        them within ``tol``: in a singular training metric a fit stops where the
        training objective no longer resolves the distance."""
        if not self.refinable(value_rows, query_rows):
            return value_rows, query_rows
        accept = self.stop_rules(self.frobenius)[0]
        refined = fit_heads(
            self.frobenius, query_rows, POLISH_ITER, accept, self.budget
        )[:2]
        if self.distance(*refined) <= self.tol:
            return refined
        return value_rows, query_rows

    def refinable(self, value_rows, query_rows):
        """Whether :meth:`reproduce` refines these heads."""
        distance = self.distance(value_rows, query_rows)
        near = distance <= np.sqrt(self.tol) or (
            len(query_rows) >= self.fewest_interpolating()
        )
        return self.tol < distance and near and not self.budget.exhausted

    def refined(self, value_rows, query_rows):
        """Heads within ``tol`` of the lifted fit refined toward it in the
        Frobenius metric, to within ``ROUNDING`` eps of it or ``REFINE_ITER``
        steps (Gauss-Newton converges quadratically where the heads reproduce it
        exactly), so that they do not depend on where within ``tol`` a fit
        stopped; kept only where nearer than before."""
        refined = fit_heads(
            self.frobenius, query_rows, REFINE_ITER,
            accept_below=(ROUNDING * np.finfo(float).eps) ** 2
            * _explained_energy(self.frobenius),
            budget=self.budget,
        )
        if self.distance(*refined[:2]) <= self.distance(value_rows, query_rows):
            return refined[:2]
        return value_rows, query_rows

    def polish(self, value_rows, query_rows):
        """The returned heads refined to a minimum (to rounding; on noisy data until
        they stall), with the drift penalty where they drift."""
        within = (
            self.frobenius_fits and self.distance(value_rows, query_rows) <= self.tol
        )
        design = self.frobenius if within else self.design
        k = len(query_rows)
        if not within and (k in self.anchored or self.drifted(value_rows, query_rows)):
            self.anchored.add(k)
            design = _anchored(self.design, self.coef)

        def polished(design):
            # on noisy data until the fits' stall rule: a minimum to rounding
            # is out of reach (losses creep down for tens of steps) and not needed
            return fit_heads(
                design, query_rows, POLISH_ITER, budget=self.budget,
                polish=self.exact, resolution=self.stop_rules(design)[1],
            )[:2]

        heads = polished(design)
        if design is self.design and self.drifted(*heads):
            # drifted along the null space of a singular training metric:
            # polished from the same start with a penalty on the distance to
            # the lifted fit
            self.anchored.add(k)
            heads = polished(_anchored(self.design, self.coef))
        return heads

    def drifted(self, value_rows, query_rows):
        """Whether noisy heads have drifted beyond ``DRIFT`` times the lifted norm."""
        return not self.exact and _drifted(value_rows, query_rows, self.coef, self.d)

    def threshold_of(self, k):
        """The threshold of k heads: the lifted fit's cross-validated error plus
        ``SLACK`` standard errors (near interpolation, for squared errors, at
        most its generalized cross-validated one) times :meth:`size_ratio`, for
        misclassification at most the lifted fit's learning ratio ``L``
        (``_Folds.learning_ratio``); where its error falls with the rows, the
        heads' own fall credited: ``L + (1 - L) s_k``, ``s_k = f(D_k) / f(D)``
        their share of the lifted fit's fall from a fold's training rows to all
        of them, ``f(q) = q / (E_f - q) - q / (E - q)`` the fall of least
        squares' estimation error (the model of :meth:`size_ratio`), about
        ``D_k / D`` far from interpolation, less near it; 0 from ``D >= E_f``
        on (theory page, "How many heads")."""
        learning = self.folds.learning_ratio(self.budget)
        equations, trained = self.equations
        dof = self.lifted_dof
        if self.folds.learning_falls and 0 < dof < trained:

            def fall(q):
                return q / (trained - q) - q / (equations - q)

            learning += (1 - learning) * (fall(min(self.head_dof(k), dof)) / fall(dof))
        threshold = self.lifted_cv[0] + SLACK * self.lifted_cv[1]
        if self.folds.loss == "squared" and self.near_interpolation(dof):
            threshold = min(threshold, self.lifted_gcv)
        return float(threshold * min(self.size_ratio(k), learning))

    @property
    def equations(self):
        """``(E, E_f)``: the equations (rows times outputs) of all the rows and of
        a fold's training rows (``E_f = 0`` without two folds that hold rows)."""
        held = np.sum(self.held_folds)
        equations = self.n_observations * self.outputs
        return equations, equations * (1 - 1 / held) if held else 0.0

    def size_ratio(self, k):
        """The folds' size factor ``r_k = rho(D) / rho(D_k)`` (at most 1), ``rho(D) =
        (1 - D / E_f) / (1 - D / E)``, for squared errors and misclassification
        alike; 1 near interpolation (theory page, "How many heads")."""
        equations, trained = self.equations
        if self.near_interpolation(self.lifted_dof) or self.lifted_dof >= trained:
            return 1.0

        def rescaling(dof):
            return (1 - dof / trained) / (1 - dof / equations)

        heads = min(self.head_dof(k), self.lifted_dof)
        return rescaling(self.lifted_dof) / rescaling(heads)

    def near_interpolation(self, dof):
        """Whether a model of ``dof`` degrees of freedom, fitted to the folds'
        training rows, has fewer than ``INTERPOLATION_MARGIN`` equations each."""
        trained = self.n_observations * self.outputs * (1 - 1 / self.folds.n_folds)
        return trained < INTERPOLATION_MARGIN * dof

    def gcv_fails(self, k, gcv_error):
        """Whether k heads near interpolation have a generalized cross-validated
        error above the lower of the lifted fit's cross-validated and generalized
        cross-validated squared errors."""
        dof = self.head_dof(k)
        lifted = np.sum(self.folds.lifted_squared) / self.folds.squared_weight
        return self.near_interpolation(dof) and gcv_error > min(lifted, self.lifted_gcv)

    @property
    def token_ranks(self):
        """``(r, q)``: the dimensions of the tokens' and of the queries' spans that
        the lifted coefficients use, their ranks within ``tol`` (singular values
        above ``tol`` times the largest; ``d`` where all are zero) along a token
        index of ``S`` and along the query's (:attr:`token_bases`): ``d`` for
        tokens in general position, fewer where they are linearly dependent
        (one-hot positions that sum to the constant feature)."""
        return self.token_bases[0][1], self.token_bases[1][1]

    @functools.cached_property
    def token_bases(self):
        """``((U, r), (V, q))``: orthonormal bases of the token coordinates whose
        first ``r`` (``q``) columns span the tokens' (queries') span that
        :attr:`token_ranks` counts, by the SVD of the lifted coefficients
        along that index, each column's entry of largest magnitude positive.
        They follow the data, not the order of the coordinates."""
        d = self.d
        cube = self.split.reshape(self.m, d, d, d)  # [a, b, c, e]

        def basis(matrix):
            left, singular = svd(matrix)[:2]
            rank = d
            if singular.size and singular[0] > 0:
                rank = int(np.sum(singular > self.tol * singular[0]))
            largest = left[np.argmax(np.abs(left), axis=0), np.arange(d)]
            return left * np.where(largest < 0, -1.0, 1.0), rank

        tokens = basis(cube.transpose(1, 0, 2, 3).reshape(d, -1))
        queries = basis(cube.transpose(3, 0, 1, 2).reshape(d, -1))
        return tokens, queries

    @property
    def span_features(self):
        """``p = q r (r + 1) / 2``: the lifted features of the tokens' and the
        queries' spans (:attr:`token_ranks`), ``d^2 (d + 1) / 2`` in general
        position."""
        r, q = self.token_ranks
        return q * r * (r + 1) // 2

    def head_dof(self, k):
        """The k-head models' degrees of freedom: their dimension, plus one per
        output with an intercept. For ``m`` outputs (their effective number) on
        tokens of ``r`` and queries of ``q`` dimensions (:attr:`token_ranks`) the
        dimension is ``k (m r + r q) - k^2`` (at most ``m p``, ``p = q r (r + 1) /
        2``), with one output ``p - q (r - k) (r - k + 1) / 2 + k (r - k)`` (theory
        page, "How many heads")."""
        r, q = self.token_ranks
        p, m = self.span_features, self.outputs
        if m <= 1 + 1e-9:
            dimension = p - q * (r - k) * (r - k + 1) // 2 + k * (r - k) if k < r else p
        else:
            dimension = min(k * (m * r + r * q) - k * k, m * p)
        return dimension + m * self.fit_intercept

    def generalized_cv(self, squared_error, dof):
        """Generalized cross-validation: a training squared error over ``(1 - dof /
        equations)^2`` (inf from ``dof = equations`` on)."""
        equations = self.n_observations * self.outputs
        if dof >= equations:
            return np.inf
        return squared_error / (1 - dof / equations) ** 2

    def fewest_interpolating(self):
        """The fewest heads whose models have as many dimensions as the training
        rows have equations (they fail, :meth:`gcv_fails`); inf in a fold's
        refit, whose search is given no observation count."""
        if self.n_observations is None:
            return np.inf
        equations = self.n_observations * self.outputs
        return next(
            (k for k in range(1, self.d * self.d + 1)
             if self.head_dof(k) >= equations),
            np.inf,
        )

    @functools.cached_property
    def first_hopeless(self):
        """The first count that fails generalized cross-validation even at
        ``TRAINING_FLOOR`` times the lifted fit's training error: from it on only
        reproducing the lifted fit within ``tol`` passes (``d^2 + 1`` on exact
        data, or without folds)."""
        if self.exact or self.folds is None:
            return self.d * self.d + 1
        training_error = self.residual_sum_of_squares / self.folds.squared_weight
        floor = TRAINING_FLOOR * training_error
        return next(
            (k for k in range(1, self.d * self.d + 1)
             if self.gcv_fails(k, self.generalized_cv(floor, self.head_dof(k)))),
            self.d * self.d + 1,
        )

    @functools.cached_property
    def hopeless(self):
        """The counts not fitted: from :attr:`first_hopeless` up to the slices'
        lower bound (:func:`fewest_heads_bound`)."""
        bound = fewest_heads_bound(self.coef, self.d, self.tol)
        return range(self.first_hopeless, bound)

    def completion_verdict(self, k):
        """``(value_rows, query_rows, CountFit)`` of a count from
        :attr:`first_hopeless` on, judged without fitting it: the split
        completed to rank k (:meth:`completion_start`, where every noisy fit
        starts) fails the count when generalized cross-validation fails it at
        its training error; None where it does not, or where it reproduces the
        lifted fit within ``tol`` (the count is then fitted: from that start
        ``n_heads=k``'s fit can still end beyond ``tol`` where the training
        metric is singular)."""
        query_rows = self.completion_start(k)
        # the values of n_heads=k's first start: least squares in the training
        # metric, not the Frobenius one (with a singular Gram, Frobenius values
        # can reproduce the lifted fit where n_heads=k's do not); refined in the
        # Frobenius metric as a fit is (:meth:`reproduce`)
        value_rows, query_rows, _, _ = fit_heads(
            self.design, query_rows, 0, budget=self.budget
        )
        value_rows, query_rows = self.reproduce(value_rows, query_rows)
        distance = self.distance(value_rows, query_rows)
        if distance <= self.tol:
            return None
        loss = design_loss(self.design, value_rows, query_rows)
        count = CountFit(k, distance, self.excess(loss))
        count = self.training_count(value_rows, query_rows, count, loss)
        if not self.gcv_fails(k, count.gcv_error):
            return None
        return value_rows, query_rows, replace(
            count, passes=False, criterion="cv", failed_on="gcv"
        )

    @functools.cached_property
    def lifted_dof(self):
        """The lifted fit's degrees of freedom, all outputs (with the intercept)."""
        dof = self.degrees_of_freedom
        return ((dof() if callable(dof) else dof) + self.fit_intercept) * self.outputs

    @functools.cached_property
    def lifted_gcv(self):
        """The lifted fit's generalized cross-validated error."""
        squared_error = self.residual_sum_of_squares / self.folds.squared_weight
        return self.generalized_cv(squared_error, self.lifted_dof)

    def linearized_refits(self, k, value_rows, query_rows, count):
        """The linearized test of k heads: each fold's refit linearized at the full
        fit (:func:`linearized_refit`). With many rows a pass on every fold passes
        (:meth:`linearized_verdict`); every other count goes to its folds' own
        refits (:meth:`refits`), which ``n_heads=k`` is judged by (the
        linearization fails counts that those refits pass), taken in the order of
        the linearized errors' excess over the lifted fit's."""
        folds, errors, output_errors = self.folds, [], []
        held = self.held_folds
        for fold in range(folds.n_folds):
            if not held[fold]:
                error, _, fold_output_errors = self.as_lifted(fold)
                errors.append(error)
                if self.by_output:
                    output_errors.append(fold_output_errors)
                continue
            design, coef = folds.design(fold), folds.coef(fold)
            refit = linearized_refit(design, query_rows, self.budget)
            if _drifted(*refit, coef, self.d):  # near-singular: bounded as in polish
                anchored = _anchored(design, coef)
                refit = linearized_refit(anchored, query_rows, self.budget)
            errors.append(folds.error(fold, *refit))
            if self.by_output:
                output_errors.append(folds.output_errors(fold, *refit))
        if self.budget.exhausted:  # undecided: the training test its last passed
            self.undecided = True
            return count
        self.linearized_errors[k] = errors
        count = replace(count, linearized_cv_error=folds.summary(errors)[0])
        decided = self.linearized_verdict(k, count, errors, output_errors or None)
        # (a pass decides n_heads=k, asked, as it does the search)
        return decided or replace(count, criterion="linearized")

    def linearized_verdict(self, k, count, errors, output_errors=None):
        """The linearized refits' pass where it stands, else None: squared errors,
        no worse than the lifted fit on every fold, with at least ``REFIT_MARGIN``
        training rows per lifted feature of the spans (:attr:`span_features`)."""
        if (
            self.folds.loss != "squared"
            or self.n_observations < REFIT_MARGIN * self.span_features
        ):
            return None
        verdict = self.verdict(k, count, errors, 1 + LINEARIZED_TOL, output_errors)
        if verdict.passes and verdict.folds_within == np.sum(self.held_folds):
            return verdict
        return None

    @property
    def error_tie(self):
        """Held-out errors within this (relative) of each other tie (module
        constants ``ERROR_TIE``, ``TIE_PER_TOL``, ``TIE_LIMIT``)."""
        return max(ERROR_TIE, min(TIE_PER_TOL * self.tol, TIE_LIMIT))

    @property
    def held_folds(self):
        """Which folds hold rows of positive weight and leave some to fit on
        (the others are not counted toward a majority)."""
        weights = np.asarray(self.folds.weights)
        return (weights > 0) & (weights < np.sum(weights))

    def as_lifted(self, fold):
        """A fold without held-out rows of weight, or without rows to fit on
        (where heads and lifted fit are both zero), is not refitted: its error,
        squared error and outputs' squared errors are the lifted fit's."""
        folds = self.folds
        return (
            folds.lifted_errors[fold],
            folds.lifted_squared[fold],
            folds.lifted_output_squared[fold],
        )

    def refits(self, k, value_rows, query_rows, count, asked=False):
        """The held-out verdict on k heads: each fold refitted as ``n_heads=k`` fits
        it, from its own lifted fit's starts; unless ``asked`` for, the count fails
        as soon as the folds refitted fail it (:meth:`fails_whatever_follows`),
        the folds its linearized refits found worst first. Every fold's refit is
        independent of the others: the order changes only when a failure shows."""
        folds = self.folds
        errors = np.zeros(folds.n_folds)
        score_errors = np.zeros(folds.n_folds)  # squared (a classifier's scores)
        output_errors = [None] * folds.n_folds if self.by_output else None
        excess = np.asarray(self.linearized_errors[k]) - np.asarray(folds.lifted_errors)
        held = self.held_folds
        for done, fold in enumerate(np.argsort(-excess, kind="stable"), start=1):
            if not held[fold]:
                errors[fold], score_errors[fold], fold_output_errors = self.as_lifted(
                    fold
                )
                if output_errors is not None:
                    output_errors[fold] = fold_output_errors
            else:
                search = _Search(
                    folds.coef(fold), self.d, self.tol, folds.design(fold), None,
                    self.budget, 0, False, None,
                )
                refit = search._fit(k)[:2]  # polished
                errors[fold], score_errors[fold] = folds.errors(fold, *refit)
                if output_errors is not None:
                    output_errors[fold] = folds.output_errors(fold, *refit)
                if self.budget.exhausted:  # undecided: the last test it passed
                    self.undecided = True
                    return count
            if asked or done == folds.n_folds:
                continue
            if self.reproduces_lifted(count, errors, score_errors, partial=True):
                continue  # (decided on all the folds: a tie passes there)
            failed_on = self.fails_whatever_follows(k, count, errors)
            if failed_on:
                return replace(
                    count, passes=False, criterion="cv", folds_refitted=done,
                    failed_on=failed_on,
                )
        verdict = self.verdict(k, count, list(errors), output_errors=output_errors)
        if folds.loss != "squared":
            # a classifier: a count that passes on misclassification fails when
            # its refits' squared error of the class scores is above the lifted
            # fit's, lowered by size_ratio as for squared errors (theory page,
            # "How many heads")
            score_cv_error = float(np.sum(score_errors)) / folds.squared_weight
            lifted = float(np.sum(folds.lifted_squared)) / folds.squared_weight
            score_threshold = float(self.size_ratio(k) * lifted)
            verdict = replace(
                verdict, score_cv_error=score_cv_error, score_threshold=score_threshold
            )
            tie = 1 + self.error_tie
            if verdict.passes and score_cv_error > score_threshold * tie:
                verdict = replace(verdict, passes=False, failed_on="scores")
            if not verdict.passes and self.reproduces_lifted(
                count, errors, score_errors
            ):
                # the lifted fit itself on these rows and on every fold: a tie
                # of one function, not heads shown no better than it (judged
                # against the lifted fit's own errors, which it has)
                verdict = replace(
                    verdict, passes=True, failed_on=None,
                    threshold=float(self.lifted_cv[0]), score_threshold=lifted,
                )
        return replace(verdict, folds_refitted=folds.n_folds)

    def reproduces_lifted(self, count, errors, score_errors, partial=False):
        """Whether a classifier's k heads compute the lifted fit on the data: their
        training objective within ``tol^2`` of the signal above the lifted fit's
        (where the data do not identify the coefficients, other heads fit them
        alike) and, on every fold that holds rows, their refit's misclassified
        weight and squared error of the class scores no worse than the lifted
        fit's (a tie, or a fold where the refit, not quite the fold's lifted fit,
        predicts better).
        ``partial``: folds not refitted yet (zero errors) are not held against
        them."""
        if self.folds.loss == "squared" or not count.training_loss <= self.tol**2:
            return False
        tie = self.error_tie
        folds = self.folds
        held = self.held_folds
        for error, squared, lifted, lifted_squared, fold_held in zip(
            errors, score_errors, folds.lifted_errors, folds.lifted_squared, held,
            strict=True,
        ):
            if not fold_held or (partial and error == 0 and squared == 0):
                continue
            if error - lifted > tie * abs(lifted):
                return False
            if squared - lifted_squared > tie * abs(lifted_squared):
                return False
        return True

    def fails_whatever_follows(self, k, count, errors):
        """The test the folds refitted so far fail k heads on whatever the others
        hold (their errors, 0 in ``errors``, taken as 0: every test is monotone
        in the errors), or None."""
        return self.verdict(k, count, list(errors)).failed_on

    @property
    def by_output(self):
        """Whether counts are also judged output by output: squared errors of
        several outputs that do not repeat one another."""
        return self.folds.loss == "squared" and self.m > 1 and self.outputs > 1 + 1e-9

    def worse_output(self, k, output_errors):
        """Whether an output's refits are worse than the lifted fit's on it (times
        :meth:`size_ratio`) by more than ``OUTPUT_SPREAD`` standard errors of the
        per-fold differences, and beyond rounding."""
        folds = self.folds
        held = self.held_folds
        if np.sum(held) < 2:
            return False
        fold_weights = np.asarray(folds.weights, float)[held]  # times the outputs
        weights = fold_weights / self.m  # per output
        differences = (
            np.asarray(output_errors)[held]
            - self.size_ratio(k) * np.asarray(folds.lifted_output_squared)[held]
        ) / weights[:, None]
        share = weights / weights.sum()
        mean = share @ differences
        spread = np.sqrt(share @ (differences - mean) ** 2 / (len(share) - 1))
        # beyond rounding too (sqrt(eps) of the lifted fit's mean error per
        # output): an output fitted exactly (a constant beside noisy targets)
        # differs by rounding alone, with a spread of rounding
        lifted = np.sum(np.asarray(folds.lifted_squared)[held])
        floor = np.sqrt(np.finfo(float).eps) * lifted / np.sum(fold_weights)
        return bool(np.any((mean > floor) & (mean > OUTPUT_SPREAD * spread)))

    def verdict(self, k, count, errors, margin=1.0, output_errors=None):
        """The held-out verdict on k heads from their refits' errors on the folds:
        within the threshold (misclassification strictly below it, or 0 at 0),
        no worse than the lifted fit on a majority of the folds, and per
        output; errors known only within a relative ``margin - 1`` pass only
        with that margin."""
        folds = self.folds
        cv_error = folds.summary(errors)[0]
        tie = self.error_tie
        if folds.loss == "squared":
            within_threshold = cv_error * margin <= count.threshold * (1 + tie)
        else:
            # misclassified rows: a count that ties the lifted fit is not
            # shown to be as good (theory page), unless neither misclassifies a
            # held-out row: then the class scores' test decides (refits)
            within_threshold = cv_error < count.threshold * (1 - tie) or (
                cv_error == 0 and count.threshold == 0
            )
        # the heads must also be no worse than the lifted fit (a tie is not
        # worse) on a majority of the folds that hold rows of positive weight
        # (FOLDS_MAJORITY)
        held = self.held_folds
        ratio = self.size_ratio(k)
        lifted = np.asarray(folds.lifted_errors)
        no_worse = margin * np.asarray(errors) <= ratio * lifted * (1 + tie)
        within = int(np.sum(no_worse & held))
        failed_on = None
        if not within_threshold:
            failed_on = "refits"
        elif self.gcv_fails(k, count.gcv_error):
            failed_on = "gcv"
        elif within <= FOLDS_MAJORITY * np.sum(held):
            failed_on = "majority"
        elif output_errors is not None and self.worse_output(k, output_errors):
            failed_on = "output"
        return replace(
            count, cv_error=cv_error, passes=failed_on is None, criterion="cv",
            folds_within=within, failed_on=failed_on,
        )

def read_out_heads(
    lifted_coef,
    token_dim,
    n_heads,
    tol,
    *,
    design,
    folds=None,
    identifiable=True,
    residual=0.0,
    degrees_of_freedom=None,
    n_observations=None,
    fit_intercept=False,
    residual_sum_of_squares=None,
    work_limit=None,
    error_scale=1.0,
    output_weights=None,
    effective_outputs=None,
    resolution=0.0,
    verbose=0,
):
    """Heads of a fitted lifted model: the estimators' read-out.

    ``n_heads=None``: the paper's read-out (:func:`paper_heads`); ``"auto"``: the
    fewest heads that pass; an int ``k``: the best model found with at most ``k``
    heads (heads zero within ``tol`` of the lifted coefficients' norm dropped,
    and the count left fitted).

    Parameters
    ----------
    lifted_coef : ndarray of shape (n_outputs, n_lifted_features)
        The lifted solution (centered when an intercept is fitted).
    token_dim : int
    n_heads : "auto", int or None
    tol : float
        Relative Frobenius tolerance on the lifted coefficients.
    design : LiftedDesign or SequenceDesign
        The training objective of heads (:mod:`sklearn_linattn._low_rank`).
    folds : StatisticsFolds, RowFolds or callable, optional
        The held-out folds (:mod:`sklearn_linattn._folds`), or a function that
        builds them when first needed; without them only ``tol`` decides.
    identifiable : bool, default=True
        Whether the training data identify the function (the certificate).
    residual : float or None, default=0.0
        The lifted fit's training residual (sum of squares, in the design's
        units), None without residual degrees of freedom: within ``tol`` of the
        targets the data are exact.
    degrees_of_freedom : callable or float, optional
        The trace of the lifted fit's hat matrix for one output (without the
        intercept), or a function that returns it. It, ``n_observations`` (the
        training rows) and ``residual_sum_of_squares`` (the lifted fit's
        training residual, as ``residual`` but whatever its degrees of freedom)
        are needed with ``folds``: the held-out tests' sizes and generalized
        cross-validation.
    n_observations : float, optional
    fit_intercept : bool, default=False
        Whether an intercept was fitted (a degree of freedom per output).
    residual_sum_of_squares : float, optional
    work_limit : float, optional
        Flops the read-out may spend (:class:`~sklearn_linattn._low_rank.Budget`);
        None: no limit.
    error_scale : float, default=1.0
        Multiplies the squared errors reported (to the data's units).
    output_weights : ndarray of shape (n_outputs,), optional
        When the problem is of output ``j``'s targets multiplied by
        ``output_weights[j]``: the heads returned are for the outputs as given;
        distances and errors are reported in the weighted units.
    effective_outputs : float, optional
        How many independent outputs the outputs count as in the held-out
        tests (default: all of them).
    resolution : float, default=0.0
        The relative precision of ``lifted_coef`` (``tol`` with the user's
        part left out): an ``n_heads=k`` fit drops only heads below it.
    verbose : int
        Print each count fitted and its verdict.

    Returns
    -------
    HeadReadout

    Examples
    --------
    Heads of a noiseless two-head model, in the Frobenius metric:

    >>> import numpy as np
    >>> from sklearn_linattn import MultiHeadLinearAttention
    >>> from sklearn_linattn._heads import read_out_heads
    >>> from sklearn_linattn._designs import LiftedDesign
    >>> rng = np.random.default_rng(0)
    >>> truth = MultiHeadLinearAttention(
    ...     rng.normal(size=(2, 1, 4)), rng.normal(size=(2, 4, 4)))
    >>> coef = truth.lifted_coef()
    >>> readout = read_out_heads(coef, 4, "auto", 1e-8, design=LiftedDesign(coef, 4))
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
    budget = Budget(work_limit)
    with single_threaded_blas():
        search = _Search(
            lifted_coef, d, tol, design, folds, budget, verbose, identifiable,
            residual, degrees_of_freedom, n_observations, fit_intercept,
            residual_sum_of_squares, effective_outputs,
        )
        search.error_scale = error_scale
        folded, k, criterion, passes = _search(search, n_heads, resolution)
        known = search.split_svd if folded is search.split else None
        value, query = heads_of_folded(folded, k, search.m, d, known)
        del known, search.split_svd  # as large as W: not kept beside the heads
        distance = search.distance(
            value.reshape(k, search.m * d), query.reshape(k, d * d)
        )
        if output_weights is not None and k:  # the heads of the outputs as given
            folded = value.reshape(k, -1).T @ query.reshape(k, -1)
            folded /= np.repeat(np.asarray(output_weights, float), d)[:, None]
            value, query = heads_of_folded(folded, k, search.m, d)
    counts = tuple(search.reported(fit[2]) for fit in search.fits.values())
    # (folds that hold no rows to predict, all the weight in one sequence: none)
    held = search.folds_built and bool(np.any(search.held_folds))
    lifted_cv = (np.nan, np.nan)
    if held:
        lifted_cv = tuple(error * search.held_out_scale for error in search.lifted_cv)
    lifted_gcv = search.lifted_gcv * error_scale if held else np.nan
    search.log(
        f"{heads_phrase(k)} ({criterion}); counts fitted {[c.n_heads for c in counts]}"
    )
    return HeadReadout(
        value,
        query,
        criterion,
        None if passes is None else bool(passes),
        not search.undecided,
        counts,
        distance,
        *lifted_cv,
        gcv_error=lifted_gcv,
        work=budget.spent,
        work_limit=budget.limit,
        output_weights=output_weights,
        effective_outputs=search.outputs,
        tol=search.tol,
        loss=search.folds.loss if held else None,
        fewer_untried=search.fewer_untried,
        n_heads_asked=int(n_heads) if criterion == "fixed" else None,
    )


def _search(search, n_heads, resolution=0.0):
    """``(folded W, n_heads, criterion, passes)`` of a read-out; ``resolution``:
    the lifted coefficients' own relative precision."""
    paper_count = n_heads_within(search.split_svd[1], search.tol)
    if n_heads is None:
        return search.split, paper_count, "paper", True
    # The heads the lifted fit resolves: a truncation of its split stands for a
    # fit only where it drops nothing resolved.
    floor = max(resolution, ROUNDING * np.finfo(float).eps)
    resolved = n_heads_within(search.split_svd[1], floor)
    if n_heads != "auto":
        if search.norm == 0 or paper_count == 0:
            return search.split, paper_count, "fixed", True
        return _fixed(search, int(n_heads), resolved, floor)
    if search.norm == 0 or paper_count == 0 or resolved <= 1:
        return search.split, paper_count, "tol", True
    if paper_count == 1:  # (the fewest is 1 head, fitted as n_heads=1 fits it)
        folded, k, _, _ = _fixed(search, 1, resolved, floor)
        if search.distance(*search.fits[1][:2]) <= search.tol:
            return folded, k, "tol", True
        return search.split, paper_count, "tol", True
    # The fewest passing heads (the paper's count passes): on exact fits, where a
    # failing count costs every start, galloping down from it; on noisy fits the
    # fewest the training error does not reject (galloping up), then one count at
    # a time the fewest the linearized refits pass, then the folds' own refits.
    if search.frobenius_fits:
        low = min(fewest_heads_bound(search.coef, search.d, search.tol), paper_count)
        high = _fewest(
            search, low, paper_count, lambda k: search.fit(k)[2].passes, "down"
        )
    elif not search.exact and (search.folds is None or not np.any(search.held_folds)):
        if search.folds is None and not search.unheld:
            if search.budget.refused:  # building them would exceed the work limit
                return search.split, paper_count, "lifted", True  # (cut short)
            message = (
                "n_heads='auto' decides the head count of noisy data on held-out "
                "folds, which this fit did not keep (solver='cg' keeps none, and "
                "partial_fit keeps them only when its first call, or the fit it "
                "continues, had n_heads other than None): the lifted fit's own "
                "heads are returned. Fit with solver='normal' or 'dual' (and "
                "n_heads other than None, where partial_fit is to continue the "
                "fit), or set n_heads to a number of heads."
            )
        else:
            message = (
                "n_heads='auto' decides the head count of noisy data on 5 folds "
                "of the sequences of positive sample_weight, and "
                "every row of positive weight lies in one sequence: no fold can be "
                "predicted from the others, and the lifted fit's own heads are "
                "returned. Set n_heads to a number of heads."
            )
        warnings.warn(message, UserWarning, stacklevel=caller_stacklevel())
        return search.split, paper_count, "lifted", True
    else:

        def undecided_or_passes(stage):
            def verdict(k):
                if k in search.hopeless:  # not fitted
                    return False
                count = search.fit(k, stage=stage)[2]
                return True if count.criterion == stage else count.passes

            return verdict

        # counts whose models have as many dimensions as there are equations fail
        # (their generalized cross-validated error is infinite): none is fitted
        limit = min(paper_count, search.fewest_interpolating())
        low = _fewest(search, 1, limit, undecided_or_passes("training"), "double")
        for stage in ("linearized", "refits"):  # one count at a time
            low = _fewest(search, low, limit, undecided_or_passes(stage), "up")
        high = paper_count if low == limit else low
        if high == paper_count and not search.undecided:
            high = _reproducing_beyond(search, limit, paper_count)
        high = _fitted_below(search, high)
    if search.undecided:  # cut short: the fewest that passed so far
        passed = [k for k, fit in search.fits.items() if fit[2].passes]
        high = min(passed, default=paper_count)
    if high == paper_count:
        return search.split, paper_count, "lifted", True
    value_rows, query_rows, count = search.fits[high]
    if search.exact:  # (noisy fits are polished before their verdict)
        value_rows, query_rows = search.polish(value_rows, query_rows)
    return value_rows.T @ query_rows, high, count.criterion, True


def _fixed(search, k, resolved, floor):
    """``(folded W, count, "fixed", passes)`` of ``n_heads=k``: the best model
    found with at most k heads (the lifted fit itself from the ``resolved``
    heads it has at its resolution ``floor`` on), heads zero within ``tol`` of
    the lifted fit's split dropped, and where that drops any beyond ``floor``,
    the model of the count left fitted (a truncation is no fit of its count)."""
    reference = np.linalg.norm(search.split_svd[1])
    while True:
        if k >= resolved:  # the lifted fit itself
            folded, passes = search.split, True
            singular_values = search.split_svd[1]
        else:
            value_rows, query_rows, count = search.fit(k, asked=True)
            if search.exact:  # (noisy fits are polished before their verdict)
                value_rows, query_rows = search.polish(value_rows, query_rows)
            folded, passes = value_rows.T @ query_rows, count.passes
            # relative to the lifted fit's split: not to this W's own norm,
            # which can drift along directions the training data do not see
            # (a singular Gram) and dwarf the heads that fit them
            singular_values = svd(folded)[1]
        kept = min(k, n_heads_within(singular_values, search.tol, reference))
        beyond = n_heads_within(singular_values, floor, reference)
        if kept in (0, k) or kept >= beyond:
            return folded, kept, "fixed", passes
        k = kept


def _reproducing_beyond(search, low, paper_count):
    """The fewest count in ``[low, paper_count)`` whose fit, as ``n_heads=k``
    fits it, reproduces the lifted fit (from ``low``, the fewest interpolating
    count, only that passes); ``paper_count`` where none does.

    The paper's count less one first (where it fails, no other count is fitted:
    the search is not doubled where nothing reproduces the lifted fit), then by
    bisection (the fewest is usually near ``low``, and a fit costs more the more
    heads it has). Under a work limit the fits until one passes may cost at most
    ``BEYOND_SHARE`` times the nominal work the search spent on its fits before,
    or ``BEYOND_FLOOR`` (:class:`Budget`): the bisection stops at a count whose
    first start alone (:meth:`_Search.least_fit_flops`) would exceed that or the
    work limit, fits cut short are left out, and the fewest count found to pass
    is returned (the search is still complete: it needed none of them, unless
    its own work limit, not the share, stopped them). Once a count has passed
    the share no longer applies: the fewer counts that may reproduce the lifted
    fit too are fitted within the search's own work limit."""
    budget, undecided = search.budget, search.undecided
    if budget.limit < np.inf:  # no work limit (head_work_limit=None): no cap either
        allowed = max(BEYOND_SHARE * budget.nominal_spent, BEYOND_FLOOR)
        budget.nominal_limit = budget.nominal_spent + allowed
    untried = False  # a count not fitted, or cut short: its verdict unknown

    def reproduces(k):
        nonlocal untried
        if k in search.hopeless:
            return False
        if (
            budget.spent + search.least_fit_flops(k) > budget.limit
            or budget.nominal_spent + search.least_fit_flops(k, nominal=True)
            > budget.nominal_limit
        ):
            untried = True
            return None  # its first start alone would overrun: stop here
        passes = search.fit(k, fitted=True)[2].passes
        untried = untried or passes is None
        if passes:  # fewer heads reproduce the lifted fit: the search's own limit
            budget.nominal_limit = np.inf
        return bool(passes)

    try:
        _fewest(search, low, paper_count, reproduces, "bisect")
    finally:
        budget.nominal_limit = np.inf
    # cut short by their own cap, the search is complete; by the search's work
    # limit (where that cap is it), it is not: the counts below the one returned
    # that a completion failed are then left unfitted (_fitted_below)
    search.undecided = undecided or budget.exhausted
    search.fits = {  # (in the order fitted)
        k: fit for k, fit in search.fits.items() if k < low or fit[2].passes is not None
    }
    passed = [k for k, fit in search.fits.items() if k >= low and fit[2].passes]
    search.fewer_untried = untried and not passed
    return min(passed, default=paper_count)


def _fitted_below(search, high):
    """``high``, or fewer heads: from the largest count below ``high`` that
    failed on :meth:`_Search.completion_verdict`, the counts are fitted as
    ``n_heads=k`` fits them, one at a time down, while they pass (a completion
    can miss what a fit finds). Counts the search skipped as failing with a
    completion's failure (galloping: 1, 2, 4, ...) are fitted too, so that
    ``n_heads=k - 1`` fails; a count a fit failed, or that cannot reproduce
    the lifted fit (:attr:`_Search.hopeless`), ends them."""
    completed = {k for k in search.completed if k < high}

    def ends(j):  # a count a fit failed, or that cannot reproduce the lifted fit
        return (j in search.fits and j not in completed) or j in search.hopeless

    k = max(completed, default=0)
    while k >= 1 and not ends(k):
        passes = None  # unless fitted: left to fit where no work is left
        if not search.budget.exhausted:
            completed.discard(k)
            search.fits.pop(k, None)
            passes = search.fit(k, fitted=True)[2].passes
        if passes is None:
            # cut short by the work limit before count k's fit decided it: the
            # counts below k those fits would have reached, failed by a
            # completion alone (which the fits were to confirm: a fit's verdict
            # can differ), are left undecided
            search.undecided = True
            end = max((j for j in range(1, k) if ends(j)), default=0)
            left = sorted(j for j in completed if end < j <= k and j in search.fits)
            for j in left:
                value_rows, query_rows, count = search.fits[j]
                search.fits[j] = value_rows, query_rows, replace(
                    count, passes=None, criterion=None, failed_on=None
                )
            break
        if not passes:
            break
        high, k = k, k - 1
    search.completed.clear()
    return high


def _fewest(search, low, high, verdict, order):
    """The fewest count in ``[low, high]`` whose ``verdict(k)`` is True (``high``
    is taken to pass); ``high`` when a verdict is None (cut short by the work
    limit). ``order``: ``"up"`` (low, low + 1, ...: a fit costs more the more
    heads it has, so the search does not overshoot), ``"double"`` (twice the
    last count that failed: 1, 2, 4, ..., then bisecting), ``"down"`` (high -
    1, high - 2, high - 4, ..., at least low, then bisecting; low first when it
    is at most a third of high) or ``"bisect"`` (high - 1, then bisecting)."""
    step, galloping = 1, order != "up"
    probe = order == "down" and 3 * low <= high  # a small bound: cheap to fit
    while low < high and not search.budget.exhausted:
        probed = False
        if order == "up":
            k = low
        elif not galloping:
            k = (low + high) // 2
        elif order == "double":
            k = min(max(2 * (low - 1), low), high - 1)
        elif probe:
            k, probe, probed = low, False, True
        else:
            k = max(high - step, low)
        passes = verdict(k)
        if passes is None:
            search.undecided = True
            return high
        if not probed:
            step *= 2
        if passes:
            high = k
            galloping = galloping and order == "down"
        else:
            low = k + 1
            galloping = galloping and (order != "down" or probed)
    search.undecided = search.undecided or low < high
    return high
