"""AttentionHeadsDisplay and HeadSearchDisplay: a fitted model's heads and its head
search (matplotlib)."""

import textwrap
import warnings
import weakref
from numbers import Integral, Real

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from ._attention import MultiHeadLinearAttention
from ._estimators import _LinearAttentionBase
from ._heads import HeadReadout, heads_phrase, unfitted_counts
from ._validation import caller_stacklevel

# The held-out panel's counts that failed are drawn in the first of
# FAILED_COLORS farther than COLOR_DISTANCE (RGB) from the counts' own color; its
# y-axis is logarithmic where the errors drawn span more than LOG_SPAN. Lines
# drawn at a height of the axes, not at an error: AT_AXES_HEIGHT.
FAILED_COLORS = ("tab:red", "tab:purple")
COLOR_DISTANCE = 0.35
LOG_SPAN = 100.0
AT_AXES_HEIGHT = ("interpolating", "unmeasured", "unfitted", "chosen")
# The legend's labels are wrapped to the axes' width (below the display's own
# axes, the figure's), at least MIN_LEGEND_COLUMNS characters a line, in
# LEGEND_FONTSIZE points; on the user's axes in a smaller type where it would
# take more than LEGEND_SHARE of their height, down to MIN_LEGEND_FONTSIZE.
LEGEND_FONTSIZE = 8
MIN_LEGEND_FONTSIZE = 5.5
LEGEND_SHARE = 0.9
MIN_LEGEND_COLUMNS = 20
# The heatmaps' tick labels are TICK_SIZE points, TICK_PITCH points apart at
# least (a new figure's panels grow with token_dim); the x-axis's are vertical
# where side by side they would not fit the axes' width.
TICK_SIZE = 7
TICK_PITCH = 11
# The keyword dictionaries of HeadSearchDisplay.plot, by the artists they style
# (keys of lines_, "band" for band_).
STYLED = {
    "counts": "line_kw",
    "lifted": "lifted_kw",
    "band": "fill_between_kw",
    "threshold": "threshold_kw",
    "chosen": "chosen_kw",
}
# Markers drawn by their edges (crosses, bars, hollow markers) have edges of
# EDGE_WIDTH points whatever the style.
EDGE_WIDTH = 1.5


# The artists HeadSearchDisplays drew, to the name of their model (None: unnamed):
# their legend labels are wrapped, whichever display drew the legend last, and
# where one model is drawn on the axes its name is the legend's title.
_DRAWN = weakref.WeakKeyDictionary()
# The axes HeadSearchDisplays made, whose legend is below them.
_BELOW = weakref.WeakSet()


def _pyplot(caller):
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            f"{caller} requires matplotlib: python -m pip install matplotlib"
        ) from error
    return plt


def _attention_estimator(estimator, display):
    """The estimator (a pipeline's last step; of a fitted hyper-parameter
    search, GridSearchCV's, its ``best_estimator_``'s) a display reads: one of
    the package's attention estimators, else a TypeError naming what it got."""
    best = getattr(estimator, "best_estimator_", None)
    if best is not None:
        estimator = best
    final = estimator[-1] if hasattr(estimator, "steps") else estimator
    if not isinstance(final, _LinearAttentionBase):
        # (an unfitted search, or one with refit=False, has no best_estimator_)
        search = hasattr(final, "refit") and hasattr(final, "estimator")
        raise TypeError(
            f"{display.__name__}.from_estimator takes a LinearAttention* estimator "
            "(or a pipeline ending in one, or a fitted search of one with "
            f"refit=True), got {type(final).__name__}"
            + (
                " without best_estimator_ (not fitted, or refit=False)."
                if search
                else "."
            )
        )
    return final


def _tick_rotation(axes, labels):
    """90 (vertical) where the tick labels side by side (about 0.6 of the type
    size a character, and a gap) are wider than the axes, else 0."""
    width = axes.bbox.width / axes.figure.dpi * 72  # points
    need = sum(0.6 * TICK_SIZE * len(str(label)) + 4 for label in labels)
    return 90 if need > width else 0


def _norm(matrix):
    """Frobenius norm, computed at unit scale: numpy's squares the entries and
    overflows from 1e154 on ("overflow encountered in dot", inf)."""
    largest = np.abs(matrix).max(initial=0.0)
    if not largest:
        return 0.0
    return float(largest * np.linalg.norm(matrix / largest))


class AttentionHeadsDisplay:
    r"""Heatmaps of the value and query matrices of each attention head.

    One column per head: :math:`V_h` (outputs by token features) above
    :math:`Q_h` (token features by query features), in
    :math:`y(Z) = \sum_h V_h (Z^\top Z) Q_h q`. All matrices share one
    symmetric color scale, so heads can be compared (the estimators balance each
    head's scale, :math:`\lVert V_h \rVert_F = \lVert Q_h \rVert_F`).
    Create it with :meth:`from_estimator`, or from the matrices and then
    :meth:`plot`, as scikit-learn's ``*Display`` classes.

    Parameters
    ----------
    value_matrices : array-like of shape (n_heads, n_outputs, token_dim)
        The value matrices ``V_h``.
    query_matrices : array-like of shape (n_heads, token_dim, token_dim)
        The fused key-query matrices ``Q_h``.
    feature_names : list of str of length token_dim, default=None
        Names of the token features, for the ticks; None numbers them.
    name : str, default=None
        The model's name, in each head's title (:meth:`from_estimator` gives
        the estimator's class name); None leaves it out.

    Attributes
    ----------
    images_ : ndarray of matplotlib AxesImage, shape (2, n_shown_heads)
        Row 0 the ``V_h``, row 1 the ``Q_h`` images.
    axes_ : ndarray of matplotlib Axes, shape (2, n_shown_heads)
        The axes of ``images_``.
    colorbar_ : matplotlib Colorbar
        The color scale shared by all images (labelled, in the ticks' size).
    figure_ : matplotlib Figure
        The figure holding the axes.

    See Also
    --------
    MultiHeadLinearAttention : The model whose heads are drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_linattn import (
    ...     AttentionHeadsDisplay, LinearAttentionRegressor)
    >>> from sklearn_linattn.datasets import make_random_mhla
    >>> X, y, truth = make_random_mhla(100, 8, 3, n_heads=2, random_state=0)
    >>> model = LinearAttentionRegressor(n_heads=2).fit(X, y)
    >>> display = AttentionHeadsDisplay.from_estimator(model)
    >>> display.images_.shape  # V_h and Q_h of two heads
    (2, 2)
    >>> display.images_[1, 0].get_array().shape  # Q_1
    (3, 3)
    >>> display.axes_[0, 0].get_title().splitlines()[0]  # named by its class
    'LinearAttentionRegressor'
    >>> display = AttentionHeadsDisplay.from_estimator(
    ...     model, name="two heads", im_kw={"interpolation": "nearest"})
    >>> display.images_[0, 0].get_interpolation()
    'nearest'
    """

    def __init__(
        self, value_matrices, query_matrices, *, feature_names=None, name=None
    ):
        self.value_matrices = value_matrices
        self.query_matrices = query_matrices
        self.feature_names = feature_names
        self.name = name

    @classmethod
    def from_estimator(
        cls,
        estimator,
        *,
        max_heads=None,
        feature_names=None,
        cmap="RdBu_r",
        ax=None,
        name=None,
        im_kw=None,
    ):
        """Plot the heads of a fitted estimator (or of a pipeline ending in one).

        Parameters
        ----------
        estimator : fitted estimator, Pipeline or hyper-parameter search
            A fitted :class:`LinearAttentionRegressor`, classifier or CV estimator,
            or a pipeline whose last step is one, or a fitted search
            (:class:`~sklearn.model_selection.GridSearchCV`, ``refit=True``) of
            either: its ``best_estimator_`` is drawn (else a TypeError).
        max_heads : int, default=None
            Draw the first (strongest) ``max_heads`` heads; None draws all.
        feature_names : list of str of length token_dim, default=None
            Names of the token features, for the ticks.
        cmap : str or matplotlib Colormap, default="RdBu_r"
            A diverging colormap: zero is its middle.
        ax : array of matplotlib Axes of shape (2, n_shown_heads), default=None
            Where to draw (``V_h`` above ``Q_h``; for one head also shape
            (2,)); None makes a new figure.
        name : str, default=None
            The model's name, in each head's title; None names it by the class
            of the attention estimator drawn (of a pipeline's last step, a
            search's ``best_estimator_``).
        im_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.imshow`:
            :meth:`plot`.

        Returns
        -------
        display : AttentionHeadsDisplay
        """
        final = _attention_estimator(estimator, cls)
        check_is_fitted(final, "attention_")
        attention = final.attention_
        display = cls(
            attention.value_matrices,
            attention.query_matrices,
            feature_names=feature_names,
            name=type(final).__name__ if name is None else name,
        )
        return display.plot(max_heads=max_heads, cmap=cmap, ax=ax, im_kw=im_kw)

    def plot(self, *, max_heads=None, cmap="RdBu_r", ax=None, name=None, im_kw=None):
        """Draw the heatmaps.

        Parameters
        ----------
        max_heads : int, default=None
            Draw the first ``max_heads`` heads; None draws all.
        cmap : str or matplotlib Colormap, default="RdBu_r"
            A diverging colormap: zero is its middle.
        ax : array of matplotlib Axes of shape (2, n_shown_heads), default=None
            Where to draw (``V_h`` above ``Q_h``; for one head also shape
            (2,)); None makes a new figure.
        name : str, default=None
            The model's name, the first line of each head's title; None takes
            the display's ``name`` (None: not named).
        im_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.imshow` for every
            heatmap, over the defaults ``cmap``, ``vmin=-vmax`` (the largest
            entry's magnitude: one symmetric scale) and ``aspect="equal"``
            (e.g. ``{"interpolation": "nearest", "alpha": 0.8}``; a ``norm``
            replaces ``vmin`` and ``vmax``). Drawn again on its ``axes_``, into
            the same images: what an earlier ``im_kw`` set and this one does not
            (an ``alpha``) is kept.

        Returns
        -------
        display : AttentionHeadsDisplay
            ``self``, with ``images_``, ``axes_``, ``colorbar_`` and ``figure_``.
            Drawn again on its ``axes_``, the display redraws its images and
            colorbar there (no second colorbar).
        """
        plt = _pyplot("AttentionHeadsDisplay.plot")
        name = _check_name(self.name if name is None else name)
        im_kw = _style_dicts("AttentionHeadsDisplay.plot", {"im_kw": im_kw})["im_kw"]
        # the model's own checks of shapes and values, on copies
        attention = MultiHeadLinearAttention(self.value_matrices, self.query_matrices)
        value, query = attention.value_matrices, attention.query_matrices
        n_heads, n_outputs, token_dim = value.shape
        if max_heads is not None and (
            isinstance(max_heads, bool)
            or not isinstance(max_heads, Integral)
            or max_heads < 1
        ):
            raise ValueError(f"max_heads must be an integer >= 1, got {max_heads!r}.")
        shown = n_heads if max_heads is None else min(int(max_heads), n_heads)
        if shown == 0:
            raise ValueError("The model has no heads to draw (n_heads=0).")
        names = self.feature_names
        if isinstance(names, str):
            raise TypeError(
                f"feature_names must be a list of {token_dim} names, one per token "
                f"feature, got the string {names!r}."
            )
        # a set or a dict has no order to label the ticks by; a generator or a
        # number no length
        if names is not None and (
            isinstance(names, (set, frozenset, dict)) or np.ndim(names) != 1
        ):
            raise TypeError(
                f"feature_names must be a list of {token_dim} names, one per token "
                f"feature, in order, got {type(names).__name__}"
                + (f" of shape {np.shape(names)}." if np.ndim(names) > 1 else ".")
            )
        if names is not None and len(names) != token_dim:
            raise ValueError(
                f"feature_names has {len(names)} names but tokens have "
                f"token_dim={token_dim} features."
            )
        if ax is None:
            # a head's panel wide and tall enough for a tick label a feature
            # (at 1.9 inches, 16 features' labels ran into each other), and
            # room for the longest label beside the first and below each row
            panel = max(1.9, TICK_PITCH * token_dim / 72)
            longest = max(
                [2] + [len(str(name)) for name in ([] if names is None else names)]
            )
            room = 0.6 * TICK_SIZE * (longest - 2) / 72  # inches
            figure, ax = plt.subplots(
                2,
                shown,
                figsize=(
                    1.0 + room + panel * shown,
                    1.2 + 0.25 * n_outputs + panel + 2 * room,
                ),
                gridspec_kw={"height_ratios": [n_outputs, token_dim]},
                squeeze=False,
                layout="constrained",
            )
        else:
            ax = np.asarray(ax, dtype=object)
            if ax.shape == (2,) and shown == 1:  # plt.subplots(2, 1): one head
                ax = ax.reshape(2, 1)
            if ax.shape != (2, shown):
                raise ValueError(
                    f"ax must be an array of Axes of shape (2, {shown}) (V_h above "
                    f"Q_h for each of {shown} heads), got shape {ax.shape}."
                )
            other = next((a for a in ax.ravel() if not hasattr(a, "imshow")), None)
            if other is not None:
                raise TypeError(
                    f"ax must hold matplotlib Axes, got a {type(other).__name__} "
                    "among them."
                )
            figure = ax[0, 0].figure
        # drawn again on its own axes: into its images and colorbar (new ones
        # lay over the old, and a second colorbar took room from the heads)
        before = self._drawn_on(ax, value[:shown], query[:shown])
        limit = max(np.abs(value[:shown]).max(), np.abs(query[:shown]).max())
        limit = limit if limit > 0 else 1.0
        # entries near the float range drawn in units of a power of two:
        # matplotlib's color scale spans 2 * limit (inf beyond 9e307, "Axis
        # limits cannot be NaN or Inf")
        unit = int(np.frexp(limit)[1]) if limit > 2.0**1000 else 0
        if unit:
            value, query, limit = (
                np.ldexp(value, -unit), np.ldexp(query, -unit), np.ldexp(limit, -unit)
            )
        images = np.empty((2, shown), dtype=object)
        ticks = np.arange(token_dim)
        labels = names if names is not None else [str(i) for i in ticks]
        for h in range(shown):
            # (in the data's units; inf where beyond float64)
            with np.errstate(over="ignore"):
                strength = np.ldexp(
                    _norm(value[h]) * _norm(query[h]), 2 * unit
                )
            for row, matrix in enumerate((value[h], query[h])):
                axes = ax[row, h]
                # (a norm of the user's sets the color scale itself)
                scale = {} if "norm" in im_kw else {"vmin": -limit, "vmax": limit}
                style = {"cmap": cmap, **scale, "aspect": "equal", **im_kw}
                if before is None:
                    images[row, h] = axes.imshow(matrix, **style)
                else:  # (the colorbar follows its image's colors)
                    images[row, h] = before[0][row, h]
                    images[row, h].set_data(matrix)
                    axes.set_aspect(style.pop("aspect"))
                    if "norm" in style:
                        images[row, h].set_norm(style.pop("norm"))
                    images[row, h].set_clim(
                        style.pop("vmin", None), style.pop("vmax", None)
                    )
                    images[row, h].set(**style)
                axes.set_xticks(ticks, labels, rotation=_tick_rotation(axes, labels))
                axes.tick_params(length=0, labelsize=TICK_SIZE)
            ax[0, h].set_yticks(np.arange(n_outputs))
            ax[1, h].set_yticks(ticks, labels)
            ax[0, h].set_xlabel("value feature", fontsize=8)
            ax[1, h].set_xlabel("query feature", fontsize=8)
            ax[0, h].set_title(
                ("" if not name else f"{name}\n")
                + f"head {h + 1}\n$\\|V\\|\\,\\|Q\\|$ = {strength:.2g}",
                fontsize=9,
            )
        ax[0, 0].set_ylabel("$V_h$: output", fontsize=8)
        ax[1, 0].set_ylabel("$Q_h$: key feature", fontsize=8)
        if before is None:
            colorbar = figure.colorbar(images[1, 0], ax=list(ax.ravel()), shrink=0.8)
        else:
            colorbar = before[1]
        # what the colors are, in the heatmaps' type sizes
        in_units = f" (units of $2^{{{unit}}}$)" if unit else ""
        colorbar.set_label("entry of $V_h$ and $Q_h$" + in_units, fontsize=8)
        colorbar.ax.tick_params(labelsize=7)
        self.images_, self.axes_, self.colorbar_, self.figure_ = (
            images,
            ax,
            colorbar,
            figure,
        )
        return self

    def _drawn_on(self, ax, value, query):
        """``(images_, colorbar_)`` where the display drew on the axes ``ax``
        before, images of the same shapes as ``value`` and ``query``'s
        matrices, all still there, else None (having removed those images and
        that colorbar that are, as after ``ax.clear()``)."""
        before = getattr(self, "axes_", None)
        if (
            before is None
            or np.shape(before) != ax.shape
            or any(a is not b for a, b in zip(ax.ravel(), before.ravel(), strict=True))
        ):
            return None
        images, colorbar = self.images_, self.colorbar_
        shapes = [matrix.shape for matrix in (*value, *query)]
        kept = all(image.axes is not None for image in images.ravel()) and (
            colorbar.ax in colorbar.ax.figure.axes
        )
        if kept and [i.get_array().shape for i in images.ravel()] == shapes:
            return images, colorbar
        if colorbar.ax in colorbar.ax.figure.axes and colorbar.mappable.axes:
            colorbar.remove()  # (before its image: it reads the image's axes)
        for image in images.ravel():
            if image.axes is not None:
                image.remove()
        return None


class HeadSearchDisplay:
    """The evidence behind a fit's head count: the criterion against the count.

    From ``head_search_`` (a :class:`~sklearn_linattn.HeadReadout`): every count
    the read-out fitted, with its cross-validated error (the held-out criterion)
    against the lifted fit's (with its standard error shaded) and the threshold
    each count must meet, or, where the counts were decided by ``tol``, the relative
    distance of each count's heads to the lifted fit against ``tol``; the chosen
    count is marked. Counts that failed are drawn in red (purple where the
    counts' own color is red), wherever their error lies: one that failed on
    the majority of the folds, or before all its folds were refitted, can lie
    below its threshold. Where the errors drawn span more than two decades the
    y-axis is logarithmic (linear below the smallest positive error where one is
    zero), unless the axes, or axes sharing their y-axis, already show data;
    logarithmic axes (the user's) with a zero error drawn are made linear
    below the smallest positive error (or the lowest data they show), which a
    log scale cannot draw.
    Like scikit-learn's :class:`~sklearn.model_selection.ValidationCurveDisplay`:
    create it with :meth:`from_estimator`, or from a readout and then
    :meth:`plot`.
    A search that fitted no count has nothing to draw (:meth:`plot` raises
    a ValueError saying why, e.g. where no count below the lifted fit's could
    pass, or ``n_heads=None``).

    Parameters
    ----------
    head_search : HeadReadout
        A fitted estimator's ``head_search_``.
    tol : float, default=None
        The read-out's ``tol``, drawn on the distance panel; None omits it.
    identifiable : bool, default=None
        Whether the data identify the lifted function (``certificate_``). On
        exact data that do not, a count also reproduces the lifted fit when its
        training objective is within ``tol**2`` of the lifted fit's (relative to
        the signal), so the distance panel draws ``sqrt(training_loss)`` too
        (``lines_["objective"]``). None: drawn when a count passed ``tol`` at a
        distance above ``tol``.
    error_name : str, default=None
        What the folds' error is, for the y-axis label: :meth:`from_estimator`
        gives ``"misclassification rate"`` where the counts were judged on a
        classifier's misclassified rows, else ``"squared error"`` (regressors,
        and classifiers whose rows were not kept, ``head_search_.loss``), or
        ``"weighted squared error"`` where a regression's outputs are weighted
        (``head_search_.output_weights``: the errors are the weighted
        outputs'); None says ``"error"``.
    name : str, default=None
        The model's name (:meth:`from_estimator` gives the estimator's class
        name), before each of the display's labels
        (``"LinearAttentionRegressor: lifted fit"``). The legend shows it once,
        as its title, where the axes hold one named model's search, and before
        each entry where they hold several; None leaves the entries unnamed.

    Attributes
    ----------
    lines_ : dict of matplotlib Line2D
        ``"counts"`` (the cross-validated errors of counts refitted on each
        fold from its own start, or with many rows decided by their linearized
        refits), ``"lifted"`` (the lifted fit's cross-validated error),
        ``"threshold"`` (each count's threshold: the lifted fit's error,
        lowered by how much more it gains from all the rows than from a fold's
        80%) and ``"chosen"``; where the search had such counts,
        ``"refits"``, the counts of ``"counts"`` whose error failed the
        threshold, drawn again in the failed counts' color, ``"stopped"``,
        the linearized refits' errors of counts that the first folds' own
        refits failed whatever the others' (the search
        refitted no more), ``"training"``, the training errors of counts that
        failed on them (above the threshold: a held-out error is at least the
        training error; a count asked for, ``n_heads=k``, is also on
        ``"counts"``, its folds refitted all the same), ``"gcv"``, counts near
        interpolation that failed on generalized cross-validation
        (``CountFit.failed_on``), at their generalized cross-validated squared
        error (a classifier's at its threshold, the error being in other
        units), ``"interpolating"``,
        counts with as many dimensions as equations (an infinite generalized
        cross-validated error: they fail), as an infinity sign at the top of
        the axes,
        ``"majority"``, counts
        whose error was within the threshold but worse than the lifted fit's on
        a majority of the folds, ``"output"``, counts within the threshold but
        worse than the lifted fit on one of several outputs, ``"scores"``,
        a classifier's counts within the threshold whose class scores predict
        held-out rows worse than the lifted fit's (``CountFit.score_cv_error``),
        ``"undecided"``,
        counts the search left undecided
        (above the count returned, or cut short by the work limit) at the last
        error measured, linearized refits' or training, and ``"tol"``,
        counts that reproduce the lifted fit within ``tol`` (or a classifier's
        that pass as the lifted fit on the data, at their threshold: theory
        page), drawn at its cross-validated error, and ``"unmeasured"``,
        counts left undecided before any error of theirs was measured, marked
        on the x-axis. On both
        panels, ``"unfitted"``: counts below the one returned (not for a fixed
        ``n_heads``; below the last one fitted where the work limit cut the
        search short) that were not fitted (ruled out, or left unfitted:
        ``head_search_.counts``), marked on the x-axis. On the
        distance panel (counts decided by ``tol``): ``"counts"`` (the decided
        counts' relative distances), ``"undecided"`` (counts the work limit
        left undecided, at their fit's distance so far), ``"objective"`` (see
        ``identifiable``), ``"threshold"`` (``tol``; none where
        no count was judged: noisy heads without held-out folds) and ``"chosen"``.
        Keys whose line would be empty are left out, except ``"counts"``
        (drawn without a legend entry when empty) and ``"chosen"``.
    band_ : matplotlib artist or None
        The lifted fit's cross-validated error plus and minus its standard
        error (held-out counts only).
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from sklearn_linattn import HeadSearchDisplay, LinearAttentionRegressor
    >>> from sklearn_linattn.datasets import make_random_mhla
    >>> X, y, truth = make_random_mhla(300, 8, 4, n_heads=2, random_state=0)
    >>> y = y + 0.05 * y.std() * np.random.default_rng(0).normal(size=y.shape)
    >>> model = LinearAttentionRegressor().fit(X, y)
    >>> display = HeadSearchDisplay.from_estimator(model)
    >>> sorted(display.lines_)
    ['chosen', 'counts', 'lifted', 'threshold', 'training']
    >>> display.lines_["lifted"].get_label()
    'LinearAttentionRegressor: lifted fit'
    >>> display.ax_.get_legend().get_title().get_text()  # one model: its title
    'LinearAttentionRegressor'

    A second model on the same axes, named and restyled: both are kept.

    >>> ridge = LinearAttentionRegressor(alpha=1e-2).fit(X, y)
    >>> second = HeadSearchDisplay.from_estimator(
    ...     ridge, name="ridge", ax=display.ax_, line_kw={"linestyle": ":"})
    >>> second.lines_["counts"].get_linestyle()
    ':'
    >>> display.lines_["counts"].axes is second.ax_
    True
    """

    def __init__(
        self, head_search, *, tol=None, identifiable=None, error_name=None, name=None
    ):
        self.head_search = head_search
        self.tol = tol
        self.identifiable = identifiable
        self.error_name = error_name
        self.name = name

    @classmethod
    def from_estimator(
        cls,
        estimator,
        *,
        name=None,
        ax=None,
        line_kw=None,
        lifted_kw=None,
        fill_between_kw=None,
        threshold_kw=None,
        chosen_kw=None,
    ):
        """Plot the head search of a fitted estimator (or a pipeline ending in one).

        Parameters
        ----------
        estimator : fitted estimator, Pipeline or hyper-parameter search
            A fitted :class:`LinearAttentionRegressor`, classifier or CV
            estimator, or a pipeline whose last step is one, or a fitted
            search (:class:`~sklearn.model_selection.GridSearchCV`,
            ``refit=True``) of either: its ``best_estimator_`` is drawn (else
            a TypeError).
        name : str, default=None
            The model's name, in the legend: its title where the axes hold one
            model's search, else before each of its entries
            (``"LinearAttentionRegressor: lifted fit"``). None names it by the
            class of the attention estimator drawn (of a pipeline's last step, a
            search's ``best_estimator_``).
        ax : matplotlib Axes, default=None
            Where to draw; None makes a new figure (the legend's place on
            either: :meth:`plot`).
        line_kw : dict, default=None
            Keyword arguments of the counts' line: :meth:`plot`.
        lifted_kw : dict, default=None
            Keyword arguments of the lifted fit's line: :meth:`plot`.
        fill_between_kw : dict, default=None
            Keyword arguments of its standard error's band: :meth:`plot`.
        threshold_kw : dict, default=None
            Keyword arguments of the thresholds: :meth:`plot`.
        chosen_kw : dict, default=None
            Keyword arguments of the chosen count's line: :meth:`plot`.

        Returns
        -------
        display : HeadSearchDisplay
        """
        final = _attention_estimator(estimator, cls)
        check_is_fitted(final, "head_search_")
        search = final.head_search_
        # the tol the read-out used, where it records it (it can be above the
        # estimator's: float32 data, centered targets)
        tol = getattr(search, "tol", None)
        if tol is None or not np.isfinite(tol):  # (a record without it)
            tol = getattr(final, "tol", None)
        certificate = getattr(final, "certificate_", None)
        identifiable = None if certificate is None else bool(certificate.identifiable)
        # what the counts were judged on: a classifier's misclassified rows, or
        # squared errors (also a classifier's, where its rows were not kept:
        # partial_fit beyond its kept rows, Dask)
        loss = getattr(search, "loss", None)
        if loss is None:  # (no folds, or a record without it)
            loss = "misclassified" if is_classifier(final) else "squared"
        if loss == "misclassified":
            error_name = "misclassification rate"
        elif getattr(search, "output_weights", None) is not None:
            # (several outputs weighted against their noise: the errors are
            # the weighted outputs', up to 4**k times the targets' own)
            error_name = "weighted squared error"
        else:
            error_name = "squared error"
        return cls(
            search,
            tol=tol,
            identifiable=identifiable,
            error_name=error_name,
            name=type(final).__name__ if name is None else name,
        ).plot(
            ax=ax,
            line_kw=line_kw,
            lifted_kw=lifted_kw,
            fill_between_kw=fill_between_kw,
            threshold_kw=threshold_kw,
            chosen_kw=chosen_kw,
        )

    def plot(
        self,
        *,
        ax=None,
        name=None,
        line_kw=None,
        lifted_kw=None,
        fill_between_kw=None,
        threshold_kw=None,
        chosen_kw=None,
    ):
        """Draw the criterion against the count.

        On axes where another :class:`HeadSearchDisplay` drew, the lifted fit,
        its band, the thresholds and the chosen count are drawn in the counts'
        color (else gray and black), so that each model's are told apart; the
        keyword dictionaries override these defaults.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; None makes a new figure, with the legend below the
            axes. On the given axes the legend is inside them, its labels
            wrapped to their width; on small axes in a smaller type (down to
            5.5 points), and it can cover the counts
            (``display.ax_.get_legend().remove()`` takes it away); on axes
            too small for it even so it is left out, with a warning.
            Other displays' artists on the axes (another model's head search,
            ``ax=display.ax_``) are kept, and their legend entries too.
        name : str, default=None
            The model's name, before each of the display's labels
            (``"LinearAttentionRegressor: k heads"``), so that two models drawn
            on one axes can be told apart. Where the axes hold one named
            model's search, the legend shows the name once, as its title (left
            out on axes too small for it). None takes the display's ``name``
            (None: the entries unnamed).
        line_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.plot` for the
            counts' line (``lines_["counts"]``), e.g. ``{"color": "C1",
            "linestyle": ":"}``; the counts that failed are drawn in a color
            apart from it. The line joins adjacent counts only (a NaN in its
            data between counts further apart: no trend through counts never
            measured); each count measured has its marker.
        lifted_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.axhline` for the
            lifted fit's cross-validated error (``lines_["lifted"]``).
        fill_between_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.axhspan` for the
            band of its standard error (``band_``).
        threshold_kw : dict, default=None
            Keyword arguments of the thresholds (``lines_["threshold"]``):
            of :meth:`matplotlib.axes.Axes.plot` for the markers at each
            count's threshold, or on the distance panel of
            :meth:`matplotlib.axes.Axes.axhline` for the line at ``tol``.
        chosen_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.axvline` for the
            chosen count (``lines_["chosen"]``).

        Returns
        -------
        display : HeadSearchDisplay
            ``self``, with ``lines_``, ``ax_`` and ``figure_``. Drawn again on
            its ``ax_``, the display replaces what it drew there before (and
            only that).

        Raises
        ------
        ValueError
            Where the search fitted no count (``head_search.counts`` empty):
            the message says why.
        """
        plt = _pyplot("HeadSearchDisplay.plot")
        from matplotlib.ticker import MaxNLocator, MultipleLocator
        search = self.head_search
        if not isinstance(search, HeadReadout):
            raise TypeError(
                "head_search must be a fitted estimator's head_search_ (a "
                f"HeadReadout), got {type(search).__name__}"
                + (
                    "; HeadSearchDisplay.from_estimator takes the estimator."
                    if hasattr(search, "head_search_")
                    else "."
                )
            )
        if self.tol is not None and (
            isinstance(self.tol, (bool, np.bool_))
            or not isinstance(self.tol, Real)
            or not self.tol >= 0
        ):
            raise ValueError(
                f"tol must be a non-negative real number or None, got {self.tol!r}."
            )
        if self.identifiable is not None and not isinstance(
            self.identifiable, (bool, np.bool_)
        ):
            raise TypeError(
                f"identifiable must be True, False or None, got {self.identifiable!r}."
            )
        if self.error_name is not None and not isinstance(self.error_name, str):
            raise TypeError(
                f"error_name must be a string or None, got {self.error_name!r}."
            )
        counts = sorted(search.counts, key=lambda count: count.n_heads)
        if not counts:
            reasons = {
                "paper": "n_heads=None asks for the paper's read-out; fit with "
                "n_heads='auto' or an int",
                "tol": "the lifted fit has at most one head",
                "fixed": "the n_heads asked for is at least the lifted fit's own "
                "count of heads",
                "lifted": "no count below the lifted fit's could pass: on exact "
                "data fewer heads cannot reproduce it (a bound from its "
                "coefficients), on noisy data too few training rows leave fewer "
                "heads too many parameters to be judged on held-out folds, or the "
                "fit kept no folds (a warning said so)",
            }
            reason = reasons.get(search.criterion, "")
            if search.n_heads == 0:
                reason = "the lifted fit is zero: no heads"
            if search.fewer_untried:
                reason = (
                    "fewer heads could pass only by reproducing the lifted fit "
                    "(with its predictions), and their fits would exceed the "
                    "search's share of work (head_search_.fewer_untried; "
                    "head_work_limit=None fits them)"
                )
            if not search.complete:
                reason = "the work limit (head_work_limit) stopped the search first"
            raise ValueError(
                f"The head search fitted no count (criterion {search.criterion!r}): "
                f"nothing to draw; {reason}."
            )
        model_name = _check_name(self.name if name is None else name)
        styles = _style_dicts(
            "HeadSearchDisplay.plot",
            {
                "line_kw": line_kw,
                "lifted_kw": lifted_kw,
                "fill_between_kw": fill_between_kw,
                "threshold_kw": threshold_kw,
                "chosen_kw": chosen_kw,
            },
        )
        if ax is not None and not hasattr(ax, "has_data"):
            shape = f" of shape {ax.shape}" if hasattr(ax, "shape") else ""
            raise TypeError(
                "ax must be one matplotlib Axes (the display draws one panel), "
                f"got {type(ax).__name__}{shape}."
            )
        again = {}  # the counts' style drawn again
        if ax is not None and ax is getattr(self, "ax_", None):
            again = self._removed_from(ax)
        # axes that already show something keep it in view
        reused = ax is not None and ax.has_data()
        # (and those, or axes sharing their y-axis with axes that do, their
        # y-scale)
        keeps_scale = ax is not None and any(
            other.has_data() for other in ax.get_shared_y_axes().get_siblings(ax)
        )
        created = ax is None
        # another head search on these axes (ax=display.ax_): this one's lifted
        # fit, band, thresholds and chosen count in its counts' color (in gray
        # and black both models' could not be told apart)
        beside = ax is not None and any(artist.axes is ax for artist in _DRAWN)
        if created:
            figure, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
        figure = ax.figure
        # (restored when it is drawn again on these axes)
        self._view_before = (
            ax.get_xlim(), ax.get_ylim(), ax.get_autoscalex_on(),
            ax.get_autoscaley_on(),
        )
        # the held-out panel where a held-out test decided a count, or where
        # the search had folds and the work limit stopped it before any count
        # was decided (noisy data); the distance panel where tol decided
        by_tol = any(count.criterion == "tol" for count in counts)
        held_out = any(count.criterion not in ("tol", None) for count in counts) or (
            np.isfinite(search.cv_error) and not by_tol
        )
        lines, self.band_ = {}, None
        if held_out:
            refitted = [
                count
                for count in counts
                if count.criterion == "cv" and np.isfinite(count.cv_error)
            ]
            lines["counts"] = ax.plot(
                *_joined_where_adjacent(
                    [count.n_heads for count in refitted],
                    [count.cv_error for count in refitted],
                ),
                **{
                    "marker": "o",
                    "label": "k heads" if refitted else "_k heads",
                    **again,
                    **styles["line_kw"],
                },
            )[0]
            color = lines["counts"].get_color()
            failed_color = _failed_color(color)
            own = {"color": color} if beside else {}
            unrefitted = [
                count
                for count in counts
                if np.isnan(count.cv_error) and np.isfinite(count.linearized_cv_error)
            ]
            bounded = [
                count
                for count in counts
                if np.isnan(count.cv_error)
                and np.isnan(count.linearized_cv_error)
                and np.isfinite(count.training_error)
            ]
            # counts decided, or left undecided, before their folds' own refits:
            # (key, counts, the errors drawn, marker, label)
            stopped = [c for c in unrefitted if c.folds_refitted is not None]
            linearized = [c for c in unrefitted if c.folds_refitted is None]
            undecided = [c for c in linearized + bounded if c.passes is None]
            # (a count asked for is refitted too: also on the counts' line)
            failed_training = [
                c for c in counts
                if c.failed_on == "training" and np.isfinite(c.training_error)
            ]
            # near interpolation: drawn at their generalized cross-validated
            # squared error, or, for misclassification (other units), at their
            # threshold
            # (counts with as many dimensions as equations: infinite, drawn at
            # the top of the axes)
            failed_gcv = [c for c in counts if c.failed_on == "gcv"]
            interpolating = [c for c in failed_gcv if c.gcv_error == np.inf]
            failed_gcv = [c for c in failed_gcv if c not in interpolating]
            gcv_errors = [
                c.gcv_error if np.isfinite(c.training_error) else c.threshold
                for c in failed_gcv
            ]
            majority, on_output, on_scores = (
                [c for c in counts if c.failed_on == key and np.isfinite(c.cv_error)]
                for key in ("majority", "output", "scores")
            )  # (failed by their first folds: drawn as "stopped")
            above = [c for c in refitted if c.failed_on == "refits"]
            partial = [
                (
                    "refits",
                    above,
                    [c.cv_error for c in above],
                    "o",
                    "k heads not below the threshold (fails)"
                    if self.error_name == "misclassification rate"
                    else "k heads above the threshold (fails)",
                ),
                (
                    "stopped",
                    stopped,
                    [c.linearized_cv_error for c in stopped],
                    "x",
                    "k heads failing on their first folds' refits "
                    "(linearized refits shown)",
                ),
                (
                    "training",
                    failed_training,
                    [c.training_error for c in failed_training],
                    "^",
                    "k heads' training error (above the threshold: fails)",
                ),
                (
                    "gcv",
                    failed_gcv,
                    gcv_errors,
                    "*",
                    "k heads near interpolation, generalized cross-validation "
                    "(above the lifted fit's: fails)",
                ),
                (
                    "majority",
                    majority,
                    [c.cv_error for c in majority],
                    "X",
                    "k heads worse than the lifted fit on most folds (fails)",
                ),
                (
                    "output",
                    on_output,
                    [c.cv_error for c in on_output],
                    "P",
                    "k heads worse than the lifted fit on an output (fails)",
                ),
                (
                    "scores",
                    on_scores,
                    [c.cv_error for c in on_scores],
                    "v",
                    "k heads whose class scores predict worse than the lifted "
                    "fit's (fails)",
                ),
                (
                    "undecided",
                    undecided,
                    [
                        c.training_error
                        if np.isnan(c.linearized_cv_error)
                        else c.linearized_cv_error
                        for c in undecided
                    ],
                    "d",
                    "k heads left undecided (their last error measured)",
                ),
            ]
            unmeasured = [
                count
                for count in counts
                if count.passes is None
                and np.isnan(count.cv_error)
                and np.isnan(count.linearized_cv_error)
                and np.isnan(count.training_error)
            ]
            # counts that failed at a cross-validated error on the counts'
            # line: a hollow marker around the line's, not hidden behind it
            on_line = ("majority", "output", "scores")
            size = lines["counts"].get_markersize()
            for key, drawn, errors, marker, label in partial:
                if drawn:
                    lines[key] = ax.plot(
                        [count.n_heads for count in drawn],
                        errors,
                        marker=marker,
                        linestyle="none",
                        # failed counts in their own color: one that failed
                        # after its first folds can be drawn below its threshold
                        color=color if key == "undecided" else failed_color,
                        label=label,
                        fillstyle="none"
                        if key == "undecided" or key in on_line
                        else "full",
                        markersize=2 * size if key in on_line else size,
                        # (crosses and hollow markers are their edges: styles
                        # with no marker edges, seaborn's, drew nothing)
                        markeredgewidth=EDGE_WIDTH,
                        zorder=3,
                    )[0]
            if interpolating:  # an infinite error: at the top of the axes
                lines["interpolating"] = _at_height(
                    ax, [count.n_heads for count in interpolating], 0.95,
                    marker="$\\infty$", markersize=12, color=failed_color,
                    label="k heads with as many dimensions as equations "
                    "(generalized cross-validation infinite: fails)",
                )
            if unmeasured:  # no error to draw them at: on the x-axis
                # (a question mark: in the undecided counts' hollow diamond it
                # read as one at an error, an error near the axes' floor)
                lines["unmeasured"] = _at_height(
                    ax, [count.n_heads for count in unmeasured], 0.03,
                    marker="$?$", markersize=9, color=color,
                    label="k heads left undecided before a cross-validated or "
                    "training error was measured",
                )
            misclassification = self.error_name == "misclassification rate"
            # a classifier's count that passes at its threshold, not below it:
            # the lifted fit on the data (CountFit.threshold)
            on_data = [
                count for count in counts
                if misclassification and count.passes and count.criterion == "cv"
                and count.cv_error >= count.threshold
            ]
            within = [count for count in counts if count.criterion == "tol"] + on_data
            if within:
                lines["tol"] = ax.plot(
                    [count.n_heads for count in within],
                    [search.cv_error] * len(within),
                    marker="s",
                    linestyle="none",
                    color="C2",
                    label="k heads reproducing the lifted fit on the data "
                    "(they pass at their threshold)"
                    if on_data
                    else "k heads reproducing the lifted fit (tol)",
                )[0]
            lines["lifted"] = _quietly(
                ax.axhline, search.cv_error,
                **{
                    "color": "gray", "linestyle": "--", "label": "lifted fit",
                    **own, **styles["lifted_kw"],
                },
            )
            thresholds = [count for count in counts if np.isfinite(count.threshold)]
            if thresholds:
                lines["threshold"] = ax.plot(
                    [count.n_heads for count in thresholds],
                    [count.threshold for count in thresholds],
                    **{
                        "color": "black",
                        "marker": "_",
                        "markersize": 12,
                        "markeredgewidth": EDGE_WIDTH,
                        "linestyle": "none",
                        "label": "threshold of k heads (a count must be below it)"
                        if misclassification
                        else "threshold of k heads (a count must not exceed it)",
                        **own, **styles["threshold_kw"],
                    },
                )[0]
            self.band_ = _quietly(
                ax.axhspan,
                search.cv_error - search.cv_standard_error,
                search.cv_error + search.cv_standard_error,
                **{
                    "color": "gray",
                    "alpha": 0.15,
                    "label": "its standard error",
                    **own, **styles["fill_between_kw"],
                },
            )
            # (on two lines where one would be taller than the axes: the
            # misclassification rate's was cut at both ends)
            name = self.error_name or "error"
            separator = " " if len(name) < 16 else "\n"
            ax.set_ylabel(f"cross-validated{separator}{name}")
            scale = _error_scale(lines)
            if scale and not keeps_scale:
                ax.set_yscale(scale[0], **scale[1])
            elif ax.get_yscale() == "log":  # the user's, or kept
                _show_zero_errors(ax, lines, keeps_scale)
        else:
            decided = [count for count in counts if count.passes is not None]
            lines["counts"] = ax.semilogy(
                *_joined_where_adjacent(
                    [count.n_heads for count in decided],
                    [max(count.relative_distance, 1e-17) for count in decided],
                ),
                **{
                    "marker": "o",
                    "label": "k heads" if decided else "_k heads",
                    **again,
                    **styles["line_kw"],
                },
            )[0]
            color = lines["counts"].get_color()
            own = {"color": color} if beside else {}
            undecided = [count for count in counts if count.passes is None]
            if undecided:
                lines["undecided"] = ax.semilogy(
                    [count.n_heads for count in undecided],
                    [max(count.relative_distance, 1e-17) for count in undecided],
                    marker="d",
                    fillstyle="none",
                    markeredgewidth=EDGE_WIDTH,
                    linestyle="none",
                    color=color,
                    # (a complete search leaves undecided only noisy heads
                    # without held-out folds: solver="cg", n_heads=k)
                    label="k heads left undecided (their fit so far)"
                    if not search.complete
                    else "k heads not judged (no held-out folds for noisy heads)",
                )[0]
            objective = self.identifiable is False or (
                self.identifiable is None
                and self.tol is not None
                and any(
                    count.passes
                    and count.criterion == "tol"
                    and count.relative_distance > self.tol
                    for count in counts
                )
            )
            if objective:
                lines["objective"] = ax.semilogy(
                    [count.n_heads for count in counts],
                    [max(count.training_loss, 1e-34) ** 0.5 for count in counts],
                    marker="s",
                    linestyle="none",
                    color="C2",
                    label="k heads, sqrt(training_loss) (within tol passes too: "
                    "data not identifying)",
                )[0]
            # (no count judged and none left undecided by the work limit:
            # noisy heads without folds, for which tol is no test)
            unjudged = search.complete and all(c.passes is None for c in counts)
            if self.tol is not None and not unjudged:
                lines["threshold"] = ax.axhline(
                    self.tol,
                    **{
                        "color": "gray", "linestyle": ":", "label": "tol",
                        **own, **styles["threshold_kw"],
                    },
                )
            ax.set_ylabel("relative distance to the lifted fit")
        unfitted = unfitted_counts(search)  # below the one returned, without a row
        if unfitted:
            lines["unfitted"] = _at_height(
                ax, unfitted, 0.03, marker="|", markersize=10,
                markeredgewidth=EDGE_WIDTH, color="gray",
                label="k heads not fitted (ruled out, or left unfitted: "
                "head_search_.counts)",
            )
        cut_short = "" if search.complete else "; the work limit cut the search short"
        if search.criterion == "fixed":
            verdict = {True: "passes its test", False: "fails its test"}.get(
                search.passes, "not judged: no held-out folds"
            )
            asked = getattr(search, "n_heads_asked", None) or search.n_heads
            dropped = (
                f"; {heads_phrase(search.n_heads)} returned, the others zero "
                "within tol"
                if asked != search.n_heads
                else ""
            )
            label = (
                f"asked for: {asked} (n_heads={asked}{dropped}; {verdict}"
                f"{cut_short})"
            )
        else:
            why = {
                "tol": "reproduces the lifted fit within tol",
                "cv": "the fewest that passed the held-out tests",
                "lifted": "the lifted fit's: no fewer heads passed",
            }.get(search.criterion, search.criterion)
            if search.criterion == "lifted" and not search.complete:
                why = "the lifted fit's"
            elif search.criterion == "lifted" and search.fewer_untried:
                why = "the lifted fit's: fewer that could reproduce it not fitted"
            label = f"chosen: {search.n_heads} ({why}{cut_short})"
        lines["chosen"] = ax.axvline(  # behind the counts' markers
            search.n_heads,
            **{
                "color": "black", "linestyle": "-.", "label": label, "zorder": 1,
                **own, **styles["chosen_kw"],
            },
        )
        # the legend's entries named by the model (not those the user labelled)
        if model_name:
            for key, artist in [*lines.items(), ("band", self.band_)]:
                own = styles.get(STYLED.get(key), {})
                label = None if artist is None else artist.get_label()
                if label and not label.startswith("_") and "label" not in own:
                    artist.set_label(f"{model_name}: {label}")
        _DRAWN.update(
            (artist, model_name or None)
            for artist in [*lines.values(), self.band_]
            if artist is not None
        )
        ax.set_xlabel("number of heads k")
        # whole counts on the x-axis, even for one count
        shown = [count.n_heads for count in counts] + [search.n_heads] + unfitted
        low, high = min(shown) - 0.5, max(shown) + 0.5
        if reused:  # keep what the axes already showed
            low, high = min(low, ax.get_xlim()[0]), max(high, ax.get_xlim()[1])
        ax.set_xlim(low, high)
        ax.xaxis.set_major_locator(
            MultipleLocator(1) if high - low <= 12 else MaxNLocator(integer=True)
        )
        # (the labels to wrap: also another display's on these axes)
        drawn = [*lines.values(), self.band_] + [
            artist for artist in _DRAWN
            if artist.axes is ax and artist not in [*lines.values(), self.band_]
        ]
        # (not after ax.clear(), or the legend removed: the user's axes then)
        if created or (ax in _BELOW and ax.get_legend() is not None):
            # below the axes, the figure taller by its entries: inside, the
            # best place matplotlib found at one dpi covered a count's marker
            # at another (also on a display's own axes drawn on again: the
            # figure grown by the entries added)
            before = 0 if created else _legend_lines(ax.get_legend())
            legend = _display_legend(
                ax, drawn, figure.bbox.width, LEGEND_FONTSIZE,
                loc="upper center", frameon=False,
            )
            added = _legend_lines(legend) - before
            figure.set_figheight(figure.get_figheight() + 0.17 * added)
            _below_the_x_axis(ax, legend)
            _BELOW.add(ax)
        else:  # the user's axes: inside them (below, it left the figure)
            legend = _legend_within(ax, "best", drawn)
            if legend is not None and _hides_markers(legend, lines):
                _make_room_above(ax, legend)
                legend.remove()
                _legend_within(ax, "upper center", drawn)
        self.lines_, self.ax_, self.figure_ = lines, ax, figure
        return self

    def _removed_from(self, ax):
        """Remove what the display drew on ``ax`` (drawn again there: in place
        of its earlier artists, those still there: ``ax.clear()`` or the user
        can have removed them), give the axes back their view from before it
        drew (the limits the user set, or autoscaled to what is left: not the
        room it made above), and return the counts' style to draw them in
        again (the next color of the axes' cycle had turned them from blue to
        orange); none after ``ax.clear()``, on the user's fresh axes."""
        drawn = [
            artist for artist in [*self.lines_.values(), self.band_]
            if artist is not None and artist.axes is ax
        ]
        for artist in drawn:
            artist.remove()
        if not drawn:
            return {}
        xlim, ylim, *autoscaled = getattr(
            self, "_view_before", (None, None, True, True)
        )
        ax.relim()
        if not autoscaled[0]:
            ax.set_xlim(xlim)
        if not autoscaled[1]:
            ax.set_ylim(ylim)
        ax.autoscale(enable=autoscaled[0], axis="x")
        ax.autoscale(enable=autoscaled[1], axis="y")
        return {"color": self.lines_["counts"].get_color()}


def _error_scale(lines):
    """``(scale, options)`` of the y-axis where the errors drawn (not the lines
    at a height of the axes) are non-negative and their positive ones span more
    than ``LOG_SPAN`` (on a linear axis the smaller would sit on its floor: a
    count near interpolation nearly 4000 times the lifted fit's error hid the others):
    logarithmic, or, with a zero error (no misclassified row), linear up to the
    smallest positive one; else None."""
    values = _drawn_errors(lines)
    positive = values[values > 0]
    if not positive.size or values.min() < 0:
        return None
    if positive.max() <= LOG_SPAN * positive.min():
        return None
    if values.min() > 0:
        return "log", {}
    return "symlog", {"linthresh": float(positive.min())}


def _show_zero_errors(ax, lines, keeps_scale):
    """Make logarithmic axes (the user's, or shared with axes showing data)
    linear below the smallest positive error where an error drawn is zero
    (no misclassified row): a log axis does not draw zeros, and the counts, the
    lifted fit and the thresholds of a classifier without errors were all left
    out. Where other data are shown, linear below their lowest too."""
    values = _drawn_errors(lines)
    if not np.any(values == 0):
        return
    floors = list(values[values > 0])
    if keeps_scale:
        floors.append(ax.get_ylim()[0])
    if floors:
        ax.set_yscale("symlog", linthresh=float(min(floors)))
    else:
        ax.set_yscale("linear")


def _quietly(draw, *args, **kwargs):
    """``draw(*args, **kwargs)`` without matplotlib's warning that log axes
    have no positive data (lines across the axes update their view: errors
    all zero so far, before :func:`_show_zero_errors` makes them linear)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Data has no positive values")
        return draw(*args, **kwargs)


def _drawn_errors(lines):
    """The finite errors drawn (not the lines at a height of the axes)."""
    values = np.concatenate([
        np.asarray(line.get_ydata(), dtype=float)
        for key, line in lines.items()
        if key not in AT_AXES_HEIGHT
    ])
    return values[np.isfinite(values)]


def _failed_color(counts_color):
    """The first of ``FAILED_COLORS`` apart from the counts' color (a style or
    the axes' earlier lines can make the counts red)."""
    from matplotlib.colors import to_rgb

    counts = np.array(to_rgb(counts_color))
    for candidate in FAILED_COLORS:
        if np.linalg.norm(np.array(to_rgb(candidate)) - counts) > COLOR_DISTANCE:
            return candidate
    return FAILED_COLORS[-1]


def _below_the_x_axis(ax, legend):
    """Anchor the legend just below the x-axis's tick labels and label, at a
    distance in inches that a new layout keeps (a fixed fifth of the axes'
    height reached into the x-axis label of larger styles, seaborn's poster),
    centered on the figure (centered on the axes, which a large y-axis label
    pushes right, it reached the figure's edge under seaborn's poster)."""
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    figure = ax.figure
    _lay_out(figure)
    axis = ax.xaxis.get_tightbbox()
    depth = (ax.bbox.y0 - axis.y0) / figure.dpi + 0.05  # inches, with a gap
    legend.set_bbox_to_anchor(
        (0.5, 0.0),
        transform=blended_transform_factory(figure.transSubfigure, ax.transAxes)
        + ScaledTranslation(0, -depth, figure.dpi_scale_trans),
    )


def _display_legend(ax, drawn, width, fontsize, titled=True, **options):
    """The axes' legend in ``fontsize`` points, the labels of the display's
    ``drawn`` artists wrapped to ``width`` pixels (the user's own left as
    they are). Where the displays' entries are of one named model, its name
    is the legend's title (where ``titled``), not repeated before each entry
    (on small axes the names made the legend too tall to fit)."""
    handles, labels = ax.get_legend_handles_labels()
    points = width / ax.figure.dpi * 72
    # characters a line, less the handle's width
    columns = max(MIN_LEGEND_COLUMNS, int(points / (0.55 * fontsize)) - 6)
    ours = [any(h is d for d in drawn) for h in handles]
    names = {_DRAWN.get(h) for h, mine in zip(handles, ours, strict=True) if mine}
    title = names.pop() if len(names) == 1 else None
    if title is not None:
        prefix = f"{title}: "
        title = title if titled else None
        labels = [
            label[len(prefix):] if mine and label.startswith(prefix) else label
            for label, mine in zip(labels, ours, strict=True)
        ]
    if title is not None:
        options = {"title": textwrap.fill(title, columns),
                   "title_fontsize": fontsize, **options}
    labels = [
        textwrap.fill(label, columns) if mine else label
        for label, mine in zip(labels, ours, strict=True)
    ]
    return ax.legend(handles, labels, fontsize=fontsize, **options)


def _legend_within(ax, loc, drawn):
    """The legend of the user's axes, wrapped to their width, in a type small
    enough that it fits in their height, and left out of the layout (on a
    panel of a 2 x 2 grid a legend five times the axes' width collapsed
    constrained layout); None, with a warning, on axes too small for it in
    ``MIN_LEGEND_FONTSIZE`` points (on axes of 2 x 2 inches the legend was
    twice their height and left the figure), the user's own entries, if any,
    then in a legend of theirs. The model's name, the legend's title, is
    left out before the legend is."""
    width, height = _axes_size(ax)
    fontsize, titled = LEGEND_FONTSIZE, True
    while True:
        legend = _display_legend(ax, drawn, width, fontsize, titled, loc=loc)
        legend.set_in_layout(False)
        share = legend.get_window_extent().height / height
        if share <= LEGEND_SHARE:
            return legend
        if fontsize <= MIN_LEGEND_FONTSIZE and titled and legend.get_title().get_text():
            legend.remove()
            titled = False
            continue
        if fontsize <= MIN_LEGEND_FONTSIZE:
            legend.remove()
            # (the user's own entries, which had a legend before, keep one)
            handles, labels = ax.get_legend_handles_labels()
            own = [
                i for i, handle in enumerate(handles)
                if not any(handle is artist for artist in drawn)
            ]
            if own:
                ax.legend([handles[i] for i in own], [labels[i] for i in own])
            dpi = ax.figure.dpi
            warnings.warn(
                f"HeadSearchDisplay: the legend does not fit in axes of "
                f"{width / dpi:.1f} x {height / dpi:.1f} inches (in "
                f"{MIN_LEGEND_FONTSIZE:g}-point type): left out; draw on larger "
                "axes, or add it with display.ax_.legend().",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )
            return None
        # (wrapped labels' height goes about as the type's square; a tenth of
        # a point less at least)
        smaller = min(fontsize * (LEGEND_SHARE / share) ** 0.5, fontsize - 0.1)
        fontsize = max(MIN_LEGEND_FONTSIZE, smaller)


def _axes_size(ax):
    """Width and height of the axes in pixels, at most their grid cell's, which
    a layout engine does not change (the axes' own, in a constrained grid,
    changed as later panels got their labels: the same legend was wrapped
    differently by the order the panels were drawn in)."""
    spec = ax.get_subplotspec()
    cell = ax.get_position() if spec is None else spec.get_position(ax.figure)
    cell = cell.transformed(ax.figure.transSubfigure)
    _lay_out(ax.figure.figure)
    return min(cell.width, ax.bbox.width), min(cell.height, ax.bbox.height)


def _lay_out(figure):
    """Lay the figure's axes out as drawing it does, on any backend.
    matplotlib's warning that constrained layout could not be applied (a
    figure too small for its axes) is left to the user's own draw: from here
    it named this module, and came once a panel drawn."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "constrained_layout not applied")
        figure.draw_without_rendering()


def _make_room_above(ax, legend):
    """Raise the top of the y-axis so that the data take the axes' height less
    the legend's (at most 80% of it is left to the legend)."""
    share = legend.get_window_extent().height / _axes_size(ax)[1]
    share = min(share + 0.05, 0.8)
    low, high = ax.get_ylim()
    if ax.get_yscale() == "log":
        low_log, high_log = np.log10(low), np.log10(high)
        ax.set_ylim(low, 10 ** (low_log + (high_log - low_log) / (1 - share)))
    else:
        ax.set_ylim(low, low + (high - low) / (1 - share))


def _hides_markers(legend, lines):
    """Whether the legend, where matplotlib placed it inside the axes, covers a
    count's marker (with a few counts and many kinds of verdict there is no
    room for it: a failed count was drawn under it). The lines across the whole
    axes (the chosen count, the lifted fit) do not count. The figure is laid
    out already (:func:`_legend_within`, and the legend is out of the layout):
    asked for its extent, the legend finds its best place there (another
    layout of the whole figure for each panel made a 4 x 4 grid take twice
    as long)."""
    box = legend.get_window_extent()
    for name, line in lines.items():
        if name in ("chosen", "lifted") or not hasattr(line, "get_xydata"):
            continue
        points = line.get_transform().transform(line.get_xydata())
        inside = (
            (points[:, 0] >= box.x0) & (points[:, 0] <= box.x1)
            & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1)
        )
        if np.any(inside):
            return True
    return False


def _at_height(ax, counts, height, **style):
    """Markers of ``counts`` at a ``height`` of the axes (0 bottom, 1 top),
    whatever the y-axis shows: counts without an error to draw them at."""
    return ax.plot(
        counts, [height] * len(counts), transform=ax.get_xaxis_transform(),
        linestyle="none", clip_on=False, **style,
    )[0]


def _joined_where_adjacent(n_heads, values):
    """``(x, y)`` of a line through the counts ``n_heads`` (in increasing order)
    at ``values`` that joins only adjacent counts: a NaN between counts further
    apart (1, 2, 4, 8 probed by doubling) breaks the line there, which would
    otherwise suggest errors at counts never measured."""
    x, y = [], []
    for k, value in zip(n_heads, values, strict=True):
        if x and k - x[-1] > 1:
            x.append(np.nan)
            y.append(np.nan)
        x.append(k)
        y.append(value)
    return np.array(x, dtype=float), np.array(y, dtype=float)


def _style_dicts(caller, styles):
    """The keyword dictionaries ``styles`` (name: dict or None), None as ``{}``,
    copied (the user's left as they are); a TypeError naming one that is not a
    dictionary."""
    checked = {}
    for key, value in styles.items():
        if value is None:
            value = {}
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise TypeError(
                f"{caller}: {key} must be a dict of matplotlib keyword arguments "
                f"(e.g. {{'color': 'C1'}}) or None, got {type(value).__name__}."
            )
        checked[key] = dict(value)
    return checked


def _check_name(name):
    """``name`` where it is a string or None, else a TypeError."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string or None, got {name!r}.")
    return name


def _legend_lines(legend):
    """The lines of text of a legend (its title's too); 0 for None."""
    if legend is None:
        return 0
    title = legend.get_title().get_text()
    return sum(
        text.get_text().count("\n") + 1 for text in legend.get_texts()
    ) + (title.count("\n") + 1 if title else 0)
