"""The held-out criterion of the head read-out: ``K`` interleaved folds of the
training sequences (sequence ``i`` in fold ``i mod K``, all its positions
together), each with the training design of the other folds and the held-out
squared error of any heads (or lifted coefficients) on itself.

Two forms, as the head designs of :mod:`sklearn_linattn._low_rank`:

- :class:`StatisticsFolds`: from the folds' additive statistics (the solver
  ``"normal"`` and Dask accumulate them in the fit's one pass); the held-out error
  of coefficients ``theta`` on a fold is a quadratic form of that fold's statistics.
- :class:`RowFolds`: from the rows themselves (the solver ``"dual"``); the lifted
  fits without each fold come from the kernel.

The intercept, when fitted, is refitted on each training set, as a refit would.
"""

import numpy as np
import scipy.linalg

from ._data import sum_statistics
from ._low_rank import LiftedDesign, SequenceDesign, head_coef, predict_rows

__all__ = ["RowFolds", "StatisticsFolds", "metric_factor", "moments_of_pairs"]


def metric_factor(gram, alpha, tol):
    """A factor ``F`` of ``M = gram + alpha I`` (``M = F F^T``) and a solver of
    ``M x = b`` (minimum norm when ``M`` is singular: eigenvalues at most ``tol``
    times the largest count as zero).

    Returns
    -------
    factor : ndarray of shape (p, rank)
    solve : callable
        ``solve(moment)`` for ``moment`` of shape (p, n_outputs): the minimum-norm
        solution, shape (n_outputs, p).
    flops : float
    """
    p = len(gram)
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
    eigenvalues, vectors = scipy.linalg.eigh(system, check_finite=False)
    kept = eigenvalues > tol * max(eigenvalues[-1], 0.0)
    basis, values = vectors[:, kept], eigenvalues[kept]

    def solve(moment):
        return (basis @ ((basis.T @ moment) / values[:, None])).T

    return basis * np.sqrt(values), solve, 9.0 * p**3


def _fold_mean_errors(errors, weights):
    """glmnet's cross-validated error and its standard error from per-fold total
    errors and weights: the weighted mean of the folds' mean errors, and the square
    root of their weighted variance over ``K - 1``."""
    errors, weights = np.asarray(errors, float), np.asarray(weights, float)
    used = weights > 0
    means = errors[used] / weights[used]
    share = weights[used] / weights[used].sum()
    mean = float(share @ means)
    spread = float(share @ (means - mean) ** 2) / max(used.sum() - 1, 1)
    return mean, float(np.sqrt(spread))


class _Folds:
    """What both forms share: the lifted fit's cross-validated error and the
    threshold a count must meet."""

    n_folds = 0

    def summary(self, errors):
        """``(cv_error, standard_error)`` of per-fold total errors."""
        return _fold_mean_errors(errors, self.weights)

    @property
    def lifted(self):
        """``(cv_error, standard_error)`` of the lifted fit."""
        return self.summary(self.lifted_errors)

    @property
    def signal(self):
        """The held-out targets' mean energy (per unit weight, all outputs)."""
        return self.summary(self.target_energy)[0]

    def exact(self, tol):
        """Whether the lifted fit predicts the held-out folds within ``tol``
        (relative root mean square) or within the rounding of their errors."""
        within = sum(self.lifted) <= tol**2 * self.signal
        rounded = all(
            error <= bound
            for error, bound in zip(self.lifted_errors, self.rounding, strict=True)
        )
        return within or rounded


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
    """

    def __init__(self, folds, alpha, fit_intercept, token_dim, tol):
        self.n_folds = len(folds)
        self.token_dim = token_dim
        self.flops = 0.0
        self._parts = []
        self.lifted_errors, self.weights, self.target_energy = [], [], []
        self.rounding = []
        for left_out, heldout in enumerate(folds):
            training = sum_statistics(
                fold for index, fold in enumerate(folds) if index != left_out
            )
            gram, moment, _, feature_mean, target_mean = training.normal_equations(
                fit_intercept
            )
            factor, solve, flops = metric_factor(gram, alpha, tol)
            coef = solve(moment)
            form = self._heldout_form(heldout, feature_mean, target_mean)
            self._parts.append((coef, factor, form))
            self.flops += flops + 4.0 * len(gram) ** 2 * (1 + moment.shape[1])
            self.lifted_errors.append(self._error(form, coef))
            self.rounding.append(self._rounding(form, coef))
            self.weights.append(heldout.weight_sum * moment.shape[1])
            self.target_energy.append(float(np.sum(form[2])))

    @staticmethod
    def _heldout_form(statistics, feature_mean, target_mean):
        """``(G, B, c)`` with the held-out error of ``theta`` equal to
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
    def _error(form, coef):
        gram, moment, squares = form
        value = np.vdot(coef @ gram, coef) - 2 * np.vdot(coef, moment.T) + squares.sum()
        return max(float(value), 0.0)

    @staticmethod
    def _rounding(form, coef):
        """The rounding of :meth:`_error`, a difference of large terms: ``p eps``
        times their magnitudes (as for the residual in the solver)."""
        gram, moment, squares = form
        terms = np.vdot(coef @ gram, coef) + 2 * abs(np.vdot(coef, moment.T))
        return len(gram) * np.finfo(float).eps * float(terms + squares.sum())

    def design(self, fold):
        """The training design without ``fold``."""
        coef, factor, _ = self._parts[fold]
        return LiftedDesign(coef, self.token_dim, factor)

    def error(self, fold, value_rows, query_rows):
        """Held-out error on ``fold`` of heads fitted without it."""
        coef, _, form = self._parts[fold]
        gram, moment, _ = form
        # As the lifted fit's error plus the change, which has no cancellation.
        gap = head_coef(value_rows, query_rows, self.token_dim) - coef
        change = np.vdot(gap @ gram, gap) + 2 * np.vdot(gap, coef @ gram - moment.T)
        return max(self.lifted_errors[fold] + float(change), 0.0)


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
    sample_index : ndarray of int, shape (n_rows,)
        The sequence each row belongs to.
    alpha : float
    fit_intercept : bool
    kernel : ndarray of shape (n_rows, n_rows)
        ``<phi_i, phi_j>`` of the weighted rows.
    kernel_solve : callable
        ``kernel_solve(kernel, targets, alpha) -> weights``: the solver's minimum-norm
        (or ridge) kernel solution.
    n_folds : int
    """

    def __init__(self, moments, queries, targets, row_scale, sample_index, alpha,
                 fit_intercept, kernel, kernel_solve, n_folds):
        self.n_folds = n_folds
        self.fit_intercept = fit_intercept
        self.flops = 0.0
        self._moments, self._queries = moments, queries
        self._targets, self._row_scale = targets, row_scale
        self._parts = []
        self.lifted_errors, self.weights, self.target_energy = [], [], []
        self.rounding = [0.0] * n_folds  # errors of residuals: no cancellation
        for fold in range(n_folds):
            heldout = sample_index % n_folds == fold
            train = ~heldout
            scale_t, targets_t = row_scale[train], targets[train]
            design = SequenceDesign(
                moments[train], queries[train], targets_t, scale_t, alpha,
                fit_intercept,
            )
            heldout_rows = (moments[heldout], queries[heldout], targets[heldout],
                            row_scale[heldout])
            predictions, target_mean = self._lifted_predictions(
                kernel, train, heldout, targets_t, scale_t, alpha, kernel_solve
            )
            n_train = int(train.sum())
            self.flops += n_train**3 * 4.0 + 2.0 * n_train * len(kernel)
            residual = heldout_rows[2] - predictions
            self._parts.append((design, heldout_rows, train))
            self.lifted_errors.append(float(np.vdot(residual, residual)))
            self.weights.append(float(heldout_rows[3] @ heldout_rows[3]) * targets.shape[1])
            centered = heldout_rows[2] - np.outer(heldout_rows[3], target_mean)
            self.target_energy.append(float(np.vdot(centered, centered)))

    def _lifted_predictions(self, kernel, train, heldout, targets_t, scale_t, alpha,
                            kernel_solve):
        """Weighted predictions on the held-out rows of the lifted fit without
        them, from the kernel: ``K_ht a`` (centered at the training means with an
        intercept)."""
        block = kernel[np.ix_(train, train)]
        cross = kernel[np.ix_(heldout, train)]
        scale_h = self._row_scale[heldout]
        total = float(scale_t @ scale_t)
        if not self.fit_intercept or total == 0:
            weights = kernel_solve(block, targets_t, alpha)
            return cross @ weights, np.zeros(targets_t.shape[1])
        unit = scale_t / np.sqrt(total)
        projector_rows = block - np.outer(unit, unit @ block)
        centered = projector_rows - np.outer(projector_rows @ unit, unit)
        target_mean = scale_t @ targets_t / total
        centered_targets = targets_t - np.outer(scale_t, target_mean)
        weights = kernel_solve(centered, centered_targets, alpha)
        weights = weights - np.outer(unit, unit @ weights)  # P a
        # c_h (phi_h - mu) theta = K_ht P a - c_h (s^T K_tt P a) / total
        predictions = cross @ weights - np.outer(scale_h, scale_t @ (block @ weights)) / total
        return predictions + np.outer(scale_h, target_mean), target_mean

    def design(self, fold):
        return self._parts[fold][0]

    def error(self, fold, value_rows, query_rows):
        design, (moments, queries, targets, scale), train = self._parts[fold]
        predictions = predict_rows(moments, queries, value_rows, query_rows)
        if self.fit_intercept:
            scale_t = self._row_scale[train]
            fitted = predict_rows(
                self._moments[train], self._queries[train], value_rows, query_rows
            )
            total = float(scale_t @ scale_t)
            if total:
                intercept = scale_t @ (self._targets[train] - fitted) / total
                predictions = predictions + np.outer(scale, intercept)
        residual = targets - predictions
        return float(np.vdot(residual, residual))
