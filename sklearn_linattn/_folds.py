"""The held-out criterion of the head read-out: ``K`` folds of the training
sequences (those of positive weight dealt to the folds in turn, one by one, then
in runs of consecutive sequences, all the positions of a sequence together;
:func:`~sklearn_linattn._data.fold_of_position`),
each with the training design of the other folds and the held-out error of any
heads (or lifted coefficients) on itself.

Two forms, as the head designs of :mod:`sklearn_linattn._low_rank`:

- :class:`StatisticsFolds`: from the folds' additive statistics (the solver
  ``"normal"`` and Dask accumulate them in the fit's one pass); the held-out squared
  error of coefficients ``theta`` on a fold is a quadratic form of its statistics.
- :class:`RowFolds`: from the rows themselves (the solver ``"dual"``); the lifted
  fits without each fold come from the kernel.

The error is the squared error (regression), or for classifiers the weighted
count of misclassified held-out rows (the largest score's class, or the score's
sign with two classes) where the rows are at hand. The intercept, when fitted,
is refitted on each training set, as a refit would.
"""

import numpy as np
import scipy.linalg

from ._attention import unfold_lifted_coef
from ._data import sum_statistics
from ._designs import (
    LiftedDesign,
    RowCost,
    SequenceDesign,
    predict_rows,
    rows_are_cheaper,
)
from ._lift import lifted_matvec
from ._low_rank import head_coef

__all__ = [
    "FoldsBeyondWork",
    "RowFolds",
    "StatisticsFolds",
    "metric_factor",
    "moments_of_pairs",
]


class FoldsBeyondWork(Exception):
    """Building the held-out folds would exceed the work left (``flops``: the
    work done before it stopped)."""

    def __init__(self, flops, unheld=False):
        super().__init__(
            f"the held-out folds need more than the work left ({flops:.2g} flops done)"
        )
        self.flops = flops
        # whether they would be of no use: every row of positive weight in one fold
        self.unheld = unheld


def metric_factor(gram, alpha, tol, flops_left=np.inf):
    """A factor ``F`` of ``M = gram + alpha I`` (``M = F F^T``) and a solver of
    ``M x = b`` (minimum norm when ``M`` is singular: eigenvalues at most ``tol``
    times the largest count as zero). :class:`FoldsBeyondWork` (its ``flops``
    0) before a factorization whose flops exceed ``flops_left``.

    Returns
    -------
    factor : ndarray of shape (p, rank)
    solve : callable
        ``solve(moment)`` for ``moment`` of shape (p, n_outputs): the minimum-norm
        solution, shape (n_outputs, p).
    flops : float
    """
    p = len(gram)
    if p**3 / 3 > flops_left:
        raise FoldsBeyondWork(0.0)
    system = gram + alpha * np.eye(p)
    try:
        upper = scipy.linalg.cholesky(system, check_finite=False)
        if np.min(np.abs(np.diag(upper))) ** 2 > tol * np.max(np.diag(system)):

            def solve(moment):
                return scipy.linalg.cho_solve(
                    (upper, False), moment, check_finite=False
                ).T

            return upper.T, solve, p**3 / 3
    except np.linalg.LinAlgError:
        pass
    if 9.0 * p**3 > flops_left:
        raise FoldsBeyondWork(p**3 / 3)
    eigenvalues, vectors = scipy.linalg.eigh(system, check_finite=False)
    kept = eigenvalues > tol * max(eigenvalues[-1], 0.0)
    basis, values = vectors[:, kept], eigenvalues[kept]

    def solve(moment):
        return (basis @ ((basis.T @ moment) / values[:, None])).T

    return basis * np.sqrt(values), solve, 9.0 * p**3


def moments_of_pairs(pairs, token_dim):
    """``S`` (n, d, d) from the compact pairs ``w_bc S[b, c]`` (``w_bc = sqrt 2`` off
    the diagonal), weights included."""
    d = token_dim
    rows, cols = np.triu_indices(d)
    values = pairs / np.where(rows == cols, 1.0, np.sqrt(2.0))
    moments = np.zeros((len(pairs), d, d))
    moments[:, rows, cols] = values
    moments[:, cols, rows] = values
    return moments


# With several classes, a held-out row is classified right only when its class's
# score leads every other by more than SCORE_TIE times the row's largest score:
# classes absent from a training set get the same scores to rounding, and the
# rounding of the BLAS in use would otherwise decide them. (Per row: scores are
# cubic in a sequence's size, and a fold's largest would swamp small sequences.)
SCORE_TIE = np.sqrt(np.finfo(float).eps)


def _misclassified(predictions, targets, row_scale):
    """Weight of the rows whose target class does not have the largest score, by
    more than ``SCORE_TIE`` of the row's largest with several classes, or the
    score's sign with two (weighted rows: the scale ``c_i > 0`` changes no sign
    or largest score; ties count as misclassified)."""
    if predictions.shape[1] == 1:
        wrong = np.sign(predictions[:, 0]) != np.sign(targets[:, 0])
    else:
        rows, classes = np.arange(len(targets)), np.argmax(targets, axis=1)
        tie = SCORE_TIE * np.max(np.abs(predictions), axis=1, initial=0.0)
        others = predictions.copy()
        others[rows, classes] = -np.inf
        wrong = predictions[rows, classes] <= np.max(others, axis=1) + tie
    return float(row_scale**2 @ wrong)


def _squared(predictions, targets):
    residual = targets - predictions
    return float(np.vdot(residual, residual))


def _squared_by_output(predictions, targets):
    residual = targets - predictions
    return np.einsum("ij,ij->j", residual, residual)


class _Folds:
    """What both forms share: per-fold errors (``lifted_errors`` of the lifted
    fit, in the criterion's loss, ``lifted_squared`` its squared errors) and
    their weights."""

    n_folds = 0
    loss = "squared"

    def summary(self, errors):
        """glmnet's cross-validated error and its standard error, from per-fold
        total errors: the weighted mean of the folds' mean errors, and the square
        root of their weighted variance over ``K - 1``."""
        errors, weights = np.asarray(errors, float), np.asarray(self.weights, float)
        used = weights > 0
        means = errors[used] / weights[used]
        share = weights[used] / weights[used].sum()
        mean = float(share @ means)
        spread = float(share @ (means - mean) ** 2) / max(used.sum() - 1, 1)
        return mean, float(np.sqrt(spread))

    @property
    def lifted(self):
        """``(cv_error, standard_error)`` of the lifted fit."""
        return self.summary(self.lifted_errors)

    def learning_ratio(self, budget):
        """The lifted fit's held-out misclassification on all the rows over its
        folds' (at most 1), estimated from its learning curve, or 1 for squared
        errors: with ``e`` its cross-validated error trained on ``K - 1`` folds
        and ``e'`` on ``K - 2`` (:meth:`lifted_errors_on_fewer_rows`), an error
        ``a + b / n`` in the training rows ``n`` is ``e - (K - 2) / K (e' -
        e)`` on all of them; an error that rises with the rows (``e' < e``: the
        folds near the lifted fit's interpolation peak, where it fits the noise)
        is taken at ``e'`` (theory page, "How many heads"). Computed once, its
        fits charged to ``budget``; refused (``budget.refused``, the ratio 1)
        as soon as the fits left would exceed what is left of its limit."""
        if self.loss == "squared":
            return 1.0
        if self._learning_ratio is None:
            spent = self.flops
            now = self.lifted[0]
            try:
                errors = self.lifted_errors_on_fewer_rows(budget.limit - budget.spent)
            except FoldsBeyondWork as beyond:
                budget.spend(beyond.flops, 0.0)  # (the folds' work: not nominal)
                budget.refused = True
                return 1.0
            fewer = self.summary(errors)[0]
            budget.spend(self.flops - spent, 0.0)
            self.learning_falls = fewer >= now
            if self.learning_falls:
                fall = (self.n_folds - 2) / self.n_folds * (fewer - now)
            else:
                fall = now - fewer
            self._learning_ratio = max(1 - fall / now, 0.0) if now > 0 else 1.0
        return self._learning_ratio

    _learning_ratio = None
    learning_falls = False  # whether the lifted fit's error falls with the rows

    def errors(self, fold, value_rows, query_rows):
        """``(error, squared error)`` on ``fold`` of heads fitted without it
        (:meth:`error` and :meth:`squared_error`: the same for squared errors)."""
        error = self.error(fold, value_rows, query_rows)
        if self.loss == "squared":
            return error, error
        return error, self.squared_error(fold, value_rows, query_rows)

    @property
    def squared_weight(self):
        """The weight of every row times the outputs: squared errors per unit of
        it are those of :meth:`summary` for the squared loss."""
        weights = float(np.sum(self.weights))
        return weights if self.loss == "squared" else weights * self.n_outputs


class StatisticsFolds(_Folds):
    """Held-out folds from additive statistics.

    Parameters
    ----------
    folds : list of LiftedStatistics
    alpha : float
        In the statistics' (rescaled) units.
    fit_intercept : bool
    token_dim : int
    tol : float
        Relative eigenvalue tolerance of a singular training Gram.
    rows : callable, optional
        ``rows()`` returns ``(pairs, queries, targets, row_scale, row_folds)``
        of every row (as in :class:`RowFolds`, pairs weighted), called only where
        they are read: a fold's heads are refitted on its training rows where that
        is cheaper (:func:`rows_are_cheaper`), and with ``classify`` the held-out
        errors are counts of misclassified rows.
    classify : bool, default=False
    flops_limit : float, default=inf
        The work the folds' lifted fits may take: :class:`FoldsBeyondWork`
        before a fold's factorization, times the folds left to build, would
        exceed what is left of it.
    dual : bool or None, default=None
        Where the rows are not in memory (``partial_fit``, Dask), whether ``fit``
        in memory with ``solver="auto"`` would refit the folds on their rows
        (:class:`RowFolds`, the dual solver's): the folds' designs in the
        lifted metric count their work as ``fit``'s would
        (:class:`RowCost`). None: ``fit`` in memory, whose designs are its own.
    """

    def __init__(
        self, folds, alpha, fit_intercept, token_dim, tol, rows=None, classify=False,
        flops_limit=np.inf, dual=None,
    ):
        self.n_folds = len(folds)
        self.n_outputs = folds[0].moment.shape[1]
        self.token_dim = token_dim
        self.alpha, self.fit_intercept, self.tol = alpha, fit_intercept, tol
        self.flops = 0.0
        self._parts, self._rows, self._designs = [], [], {}
        self._rows_source, self._all = rows, None
        self.lifted_errors, self.lifted_squared, self.weights = [], [], []
        self.lifted_output_squared = []
        if rows is not None and classify:
            self.loss = "misclassified"
        self._statistics = folds
        for left_out, heldout in enumerate(folds):
            # refused before the fold whose work, times the folds left, would
            # exceed the limit, not after building all but the last
            try:
                training, equations, factor, coef = self._lifted_fit_within(
                    (left_out,), flops_limit, 0.0, self.n_folds - left_out
                )
            except FoldsBeyondWork as beyond:
                beyond.unheld = sum(fold.weight_sum > 0 for fold in folds) <= 1
                raise
            _, moment, _, feature_mean, target_mean = equations
            cheaper = rows_are_cheaper(
                training.n_observations, factor.shape[1], token_dim, alpha
            )
            on_rows = rows is not None and cheaper
            form = self._heldout_form(heldout, feature_mean, target_mean)
            # (the rows fit in memory would refit this fold on: its own design's
            # work is counted as theirs where these are not, dual)
            cost = None
            if dual is not None and (dual or cheaper):
                cost = RowCost(training.n_rows, token_dim, alpha)
            self._parts.append(
                (coef, factor, form, feature_mean, target_mean, on_rows, cost)
            )
            self.lifted_squared.append(self._squared(form, coef))
            self.lifted_output_squared.append(self._squared_by_output(form, coef))
            if self.loss == "squared":
                self.weights.append(heldout.weight_sum * moment.shape[1])
                self.lifted_errors.append(self.lifted_squared[-1])
                continue
            _, moments, queries, targets, scale, row_folds = self._row_data()
            mask = row_folds == left_out
            held = (moments[mask], queries[mask], targets[mask], scale[mask])
            self._rows.append(held)
            self.weights.append(float(held[3] @ held[3]))
            self.lifted_errors.append(
                self._misclassified_by(left_out, coef, feature_mean, target_mean)
            )
        if self.loss == "squared":  # kept for the classifier's learning curve
            self._statistics = None

    def _lifted_fit_within(self, left_out, flops_limit, start, fits_left):
        """:meth:`_lifted_fit_without`, or :class:`FoldsBeyondWork` (the work done
        since ``start``, in :attr:`flops`) where its factorization, repeated for
        the ``fits_left`` fits of a series (their Grams alike: all singular or
        none), would exceed what is left of ``flops_limit``."""
        done = self.flops - start
        try:
            return self._lifted_fit_without(
                left_out, (flops_limit - done) / fits_left
            )
        except FoldsBeyondWork as beyond:
            raise FoldsBeyondWork(done + beyond.flops) from None

    def _lifted_fit_without(self, left_out, flops_left=np.inf):
        """The lifted fit on the folds not in ``left_out`` (its flops counted):
        ``(training statistics, normal equations, metric factor, coef)``."""
        training = sum_statistics(
            part for index, part in enumerate(self._statistics)
            if index not in left_out
        )
        equations = training.normal_equations(self.fit_intercept)
        gram, moment = equations[:2]
        solving = 4.0 * len(gram) ** 2 * (1 + moment.shape[1])  # beside the factor
        factor, solve, flops = metric_factor(
            gram, self.alpha, self.tol, flops_left - solving
        )
        self.flops += flops + solving
        return training, equations, factor, solve(moment)

    def _misclassified_by(self, fold, coef, feature_mean, target_mean):
        """Misclassified rows of ``fold`` under lifted coefficients fitted to
        targets centered at ``target_mean`` (features at ``feature_mean``)."""
        pairs, *_, row_folds = self._row_data()
        _, queries, targets, scale = self._rows[fold]
        predictions = lifted_matvec(pairs[row_folds == fold], queries, coef)
        predictions += np.outer(scale, target_mean - coef @ feature_mean)
        return _misclassified(predictions, targets, scale)

    def lifted_errors_on_fewer_rows(self, flops_limit=np.inf):
        """Misclassified rows of each fold under the lifted fit trained without it
        and without the next fold (``K - 2`` folds); :class:`FoldsBeyondWork`
        as soon as a fit, times the fits left, would exceed ``flops_limit``."""
        errors, start = [], self.flops
        for fold in range(self.n_folds):
            _, equations, _, coef = self._lifted_fit_within(
                (fold, (fold + 1) % self.n_folds), flops_limit, start,
                self.n_folds - fold,
            )
            feature_mean, target_mean = equations[3:]
            errors.append(self._misclassified_by(fold, coef, feature_mean, target_mean))
        return errors

    def _row_data(self):
        """``(pairs, moments, queries, targets, row_scale, row_folds)`` of every
        row, built on first use."""
        if self._all is None:
            pairs, *others = self._rows_source()
            self._all = (pairs, moments_of_pairs(pairs, self.token_dim), *others)
        return self._all

    @staticmethod
    def _heldout_form(statistics, feature_mean, target_mean):
        """``(G, B, c)`` with the held-out squared error of ``theta`` equal to
        ``tr(theta G theta^T) - 2 tr(theta B) + sum(c)``: the fold's weighted sums
        centered at the training means."""
        upper = np.triu(statistics.gram_upper)
        gram = upper + np.triu(upper, 1).T
        weight = statistics.weight_sum
        features, targets = statistics.feature_sum, statistics.target_sum
        mixed = np.outer(features, feature_mean)
        gram = gram - mixed - mixed.T + weight * np.outer(feature_mean, feature_mean)
        moment = (
            statistics.moment
            - np.outer(features, target_mean)
            - np.outer(feature_mean, targets)
            + weight * np.outer(feature_mean, target_mean)
        )
        squares = (
            statistics.target_square_sum
            - 2 * target_mean * targets
            + weight * target_mean**2
        )
        return gram, moment, squares

    @staticmethod
    def _squared(form, coef):
        gram, moment, squares = form
        value = np.vdot(coef @ gram, coef) - 2 * np.vdot(coef, moment.T) + squares.sum()
        return max(float(value), 0.0)

    @staticmethod
    def _squared_by_output(form, coef):
        gram, moment, squares = form
        value = np.einsum("ap,ap->a", coef @ gram, coef)
        return np.maximum(value - 2 * np.einsum("ap,pa->a", coef, moment) + squares, 0)

    def coef(self, fold):
        """The lifted fit without ``fold``."""
        return self._parts[fold][0]

    def design(self, fold):
        """The training design without ``fold``: on its rows where they are at
        hand and cheaper, else in its lifted metric (built once: its metric is
        cached on it)."""
        if fold in self._designs:
            return self._designs[fold]
        coef, factor, *_, on_rows, cost = self._parts[fold]
        if not on_rows:
            design = LiftedDesign(coef, self.token_dim, factor, cost)
        else:
            _, moments, queries, targets, scale, row_folds = self._row_data()
            train = row_folds != fold
            design = SequenceDesign(
                moments[train], queries[train], targets[train], scale[train],
                self.alpha, self.fit_intercept,
            ).toward(coef)
        self._designs[fold] = design
        return design

    def error(self, fold, value_rows, query_rows):
        """Held-out error on ``fold`` of heads fitted without it."""
        if not self._rows:
            return self.squared_error(fold, value_rows, query_rows)
        _, _, _, feature_mean, target_mean, *_ = self._parts[fold]
        theta = head_coef(value_rows, query_rows, self.token_dim)
        moments, queries, targets, scale = self._rows[fold]
        predictions = predict_rows(moments, queries, value_rows, query_rows)
        predictions += np.outer(scale, target_mean - theta @ feature_mean)
        return _misclassified(predictions, targets, scale)

    def squared_error(self, fold, value_rows, query_rows):
        """Held-out squared error on ``fold`` of heads (whatever the loss)."""
        coef, _, form, *_ = self._parts[fold]
        theta = head_coef(value_rows, query_rows, self.token_dim)
        gram, moment, _ = form
        # As the lifted fit's error plus the change, which has no cancellation.
        gap = theta - coef
        change = np.vdot(gap @ gram, gap) + 2 * np.vdot(gap, coef @ gram - moment.T)
        return max(self.lifted_squared[fold] + float(change), 0.0)

    def output_errors(self, fold, value_rows, query_rows):
        """Held-out squared error on ``fold`` of heads, output by output."""
        coef, _, form, *_ = self._parts[fold]
        theta = head_coef(value_rows, query_rows, self.token_dim)
        gram, moment, _ = form
        gap = theta - coef
        change = np.einsum("ap,ap->a", gap @ gram, gap)
        change += 2 * np.einsum("ap,ap->a", gap, coef @ gram - moment.T)
        return np.maximum(self.lifted_output_squared[fold] + change, 0.0)


class RowFolds(_Folds):
    """Held-out folds from the training rows.

    Parameters
    ----------
    moments : ndarray of shape (n_rows, d, d)
        ``c_i S_i`` of each row (``c_i`` the square root of its weight).
    queries : ndarray of shape (n_rows, d)
    targets : ndarray of shape (n_rows, n_outputs)
        ``c_i y_i``.
    row_scale : ndarray of shape (n_rows,)
    row_folds : ndarray of int, shape (n_rows,)
        The fold each row is held out in (its sequence's), from 0 to
        ``n_folds - 1``.
    alpha : float
    fit_intercept : bool
    kernel : ndarray of shape (n_rows, n_rows)
        ``<phi_i, phi_j>`` of the weighted rows.
    kernel_solve : callable
        ``kernel_solve(kernel, targets, row_scale) -> (weights, target_mean)``: the
        solver's kernel-form solution (centered with an intercept, the weights
        then orthogonal to ``row_scale``).
    n_folds : int
    classify : bool
        Count misclassified rows instead of squared errors.
    """

    def __init__(
        self,
        moments,
        queries,
        targets,
        row_scale,
        row_folds,
        alpha,
        fit_intercept,
        kernel,
        kernel_solve,
        n_folds,
        classify=False,
    ):
        self.n_folds = n_folds
        self.n_outputs = targets.shape[1]
        self.alpha, self.fit_intercept = alpha, fit_intercept
        self.loss = "misclassified" if classify else "squared"
        self.flops = 0.0
        self._all = moments, queries, targets, row_scale
        self._kernel = (kernel, kernel_solve, row_folds, alpha) if classify else None
        self._parts, self._coefs, self._designs = [], {}, {}
        self.lifted_errors, self.lifted_squared, self.weights = [], [], []
        self.lifted_output_squared = []
        for fold in range(n_folds):
            heldout = row_folds == fold
            train = ~heldout
            design = SequenceDesign(
                moments[train],
                queries[train],
                targets[train],
                row_scale[train],
                alpha,
                fit_intercept,
            )
            held = (
                moments[heldout],
                queries[heldout],
                targets[heldout],
                row_scale[heldout],
            )
            predictions, target_mean, weights = (
                self._lifted_predictions(kernel, train, heldout, kernel_solve)
            )
            n_train = int(train.sum())
            self.flops += (
                n_train**3 / 3 + 2.0 * n_train * len(kernel) * targets.shape[1]
            )
            self._parts.append((design, held, train, weights))
            self.lifted_squared.append(_squared(predictions, held[2]))
            self.lifted_output_squared.append(_squared_by_output(predictions, held[2]))
            if classify:
                self.weights.append(float(held[3] @ held[3]))
                self.lifted_errors.append(_misclassified(predictions, *held[2:]))
            else:
                self.weights.append(float(held[3] @ held[3]) * targets.shape[1])
                self.lifted_errors.append(self.lifted_squared[-1])

    def lifted_errors_on_fewer_rows(self, flops_limit=np.inf):
        """Misclassified rows of each fold under the lifted fit trained without it
        and without the next fold (``K - 2`` folds); :class:`FoldsBeyondWork`
        as soon as the fits left would exceed ``flops_limit``."""
        kernel, kernel_solve, row_folds, alpha = self._kernel
        _, _, targets, scale = self._all
        trains = [
            (row_folds != fold) & (row_folds != (fold + 1) % self.n_folds)
            for fold in range(self.n_folds)
        ]
        sizes = [int(np.sum(train)) for train in trains]
        fits = [  # the factorization and the predictions of each
            n**3 / 3 + 2.0 * n * len(kernel) * targets.shape[1] for n in sizes
        ]
        errors, start = [], self.flops
        for fold, train in enumerate(trains):
            done = self.flops - start
            if sum(fits[fold:]) > flops_limit - done:
                raise FoldsBeyondWork(done)
            heldout = row_folds == fold
            predictions = self._lifted_predictions(
                kernel, train, heldout, kernel_solve
            )[0]
            self.flops += fits[fold]
            errors.append(
                _misclassified(predictions, targets[heldout], scale[heldout])
            )
        return errors

    def _lifted_predictions(self, kernel, train, heldout, kernel_solve):
        """Weighted predictions on the held-out rows of the lifted fit without
        them, from the kernel (centered at the training means with an intercept),
        the training target mean and its kernel weights ``a`` (coefficients
        ``A_c^T a``)."""
        targets, row_scale = self._all[2:]
        scale_t, scale_h = row_scale[train], row_scale[heldout]
        block = kernel[np.ix_(train, train)]
        weights, target_mean = kernel_solve(block, targets[train], scale_t)
        predictions = kernel[np.ix_(heldout, train)] @ weights
        total = float(scale_t @ scale_t)
        if self.fit_intercept and total:
            # c_h (phi_h - mu) theta, theta = A_t^T a with a orthogonal to c_t
            fitted = block @ weights
            predictions -= np.outer(scale_h, scale_t @ fitted) / total
            predictions += np.outer(scale_h, target_mean)
        return predictions, target_mean, weights

    def coef(self, fold):
        """The lifted fit without ``fold``: ``A_c^T a = A^T (a - c (c . a) / c.c)``
        for its kernel weights ``a`` (``A`` the training rows ``c_i phi_i``);
        computed once (the search reads it for every count)."""
        if fold not in self._coefs:
            self._coefs[fold] = self._lifted_coef(fold)
        return self._coefs[fold]

    def _lifted_coef(self, fold):
        design, _, train, weights = self._parts[fold]
        scale = self._all[3][train]
        total = float(scale @ scale)
        if self.fit_intercept and total:
            weights = weights - np.outer(scale, scale @ weights) / total
        d = design.token_dim
        folded = np.einsum("ia,ibc,ie->abce", weights, design.moments, design.queries)
        return unfold_lifted_coef(folded.reshape(-1, d**3), d)

    def design(self, fold):
        """The training design without ``fold``, toward its lifted fit (built
        once: its metric is cached on it)."""
        if fold not in self._designs:
            self._designs[fold] = self._parts[fold][0].toward(self.coef(fold))
        return self._designs[fold]

    def error(self, fold, value_rows, query_rows):
        """Held-out error on ``fold`` of heads fitted without it."""
        return self.errors(fold, value_rows, query_rows)[0]

    def squared_error(self, fold, value_rows, query_rows):
        """Held-out squared error on ``fold`` of heads (whatever the loss)."""
        predictions, targets, _ = self._heldout(fold, value_rows, query_rows)
        return _squared(predictions, targets)

    def errors(self, fold, value_rows, query_rows):
        """:meth:`_Folds.errors` from one prediction of the held-out rows."""
        predictions, targets, scale = self._heldout(fold, value_rows, query_rows)
        squared = _squared(predictions, targets)
        if self.loss == "squared":
            return squared, squared
        return _misclassified(predictions, targets, scale), squared

    def output_errors(self, fold, value_rows, query_rows):
        """Held-out squared error on ``fold`` of heads, output by output."""
        predictions, targets, _ = self._heldout(fold, value_rows, query_rows)
        return _squared_by_output(predictions, targets)

    def _heldout(self, fold, value_rows, query_rows):
        """``(predictions, targets, row_scale)`` of heads on ``fold``'s rows."""
        _, (moments, queries, targets, scale), train, _ = self._parts[fold]
        predictions = predict_rows(moments, queries, value_rows, query_rows)
        total = float(self._all[3][train] @ self._all[3][train])
        if self.fit_intercept and total:
            all_moments, all_queries, all_targets, all_scale = self._all
            fitted = predict_rows(
                all_moments[train], all_queries[train], value_rows, query_rows
            )
            intercept = all_scale[train] @ (all_targets[train] - fitted) / total
            predictions = predictions + np.outer(scale, intercept)
        return predictions, targets, scale
