"""AttentionHeadsDisplay: heatmaps of V_h and Q_h of a fitted model;
HeadSearchDisplay: the head search's evidence against the count."""

import dataclasses
import warnings

import numpy as np
import pytest
from conftest import (
    classes_with_positions_and_a_constant,
    few_sequences_three_classes,
    hidden_head_outputs,
    noiseless_far_from_zero,
    random_attention,
    random_sequences,
    seventeen_sequences_three_labels,
)
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.pipeline import make_pipeline

from sklearn_linattn import (
    AttentionHeadsDisplay,
    HeadSearchDisplay,
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    MultiHeadLinearAttention,
)
from sklearn_linattn.datasets import make_random_mhla
from sklearn_linattn.preprocessing import PositionalEncoding

plt = pytest.importorskip("matplotlib.pyplot")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def fitted_regressor(n_heads=None, n_outputs=1, seed=0):
    rng = np.random.default_rng(seed)
    truth = random_attention(rng, 3, 2, n_outputs=n_outputs)
    X = random_sequences(rng, 120, 6, 3)
    return LinearAttentionRegressor(n_heads=n_heads).fit(X, truth.predict(X))


def test_images_are_the_heads_on_one_symmetric_scale():
    model = fitted_regressor(n_heads=None, n_outputs=2)
    display = AttentionHeadsDisplay.from_estimator(model)
    V, Q = model.value_matrices_, model.query_matrices_
    assert display.images_.shape == display.axes_.shape == (2, model.n_heads_)
    limit = max(np.abs(V).max(), np.abs(Q).max())
    for h in range(model.n_heads_):
        np.testing.assert_array_equal(display.images_[0, h].get_array(), V[h])
        np.testing.assert_array_equal(display.images_[1, h].get_array(), Q[h])
        for image in display.images_[:, h]:
            assert image.get_clim() == pytest.approx((-limit, limit))
    assert display.figure_ is display.axes_[0, 0].figure
    assert display.colorbar_.mappable is display.images_[1, 0]


def test_the_color_scale_says_what_it_shows_in_the_heatmaps_type_size():
    """The colorbar is labelled, and its ticks are no larger than the heatmaps'
    (at rcParams' default size they were half again as large as every other
    text of the figure)."""
    display = AttentionHeadsDisplay.from_estimator(fitted_regressor(n_heads=2))
    colorbar_axes = display.colorbar_.ax
    assert "V_h" in colorbar_axes.get_ylabel() and "Q_h" in colorbar_axes.get_ylabel()
    display.figure_.canvas.draw()
    heatmap = display.axes_[1, 0].get_xticklabels()[0].get_fontsize()
    sizes = {label.get_fontsize() for label in colorbar_axes.get_yticklabels()}
    assert sizes and max(sizes) <= heatmap


@pytest.mark.parametrize("scale", [1e200, 8e307])
def test_heads_near_the_float_range_are_drawn(scale):
    """Entries beyond 1e154 warned "overflow encountered in dot" (the norms in
    the titles squared them), and beyond 9e307 the color scale, -limit to
    limit, failed in matplotlib ("Axis limits cannot be NaN or Inf"): the
    norms are taken at unit scale and such entries drawn in units of a power
    of two, which the colorbar names."""
    rng = np.random.default_rng(0)
    value, query = rng.uniform(-1, 1, size=(1, 2, 3)), rng.uniform(-1, 1, (1, 3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        display = AttentionHeadsDisplay(scale * value, scale * query).plot()
        display.figure_.canvas.draw()
    assert "inf" in display.axes_[0, 0].get_title()  # |V| |Q| beyond float64
    label = display.colorbar_.ax.get_ylabel()
    if scale > 1e300:
        unit = int(np.frexp(scale * max(np.abs(value).max(), np.abs(query).max()))[1])
        assert f"units of $2^{{{unit}}}$" in label
        np.testing.assert_array_equal(
            display.images_[0, 0].get_array(), np.ldexp(scale * value[0], -unit)
        )
    else:
        assert "units" not in label
        np.testing.assert_array_equal(
            display.images_[0, 0].get_array(), scale * value[0]
        )


def test_max_heads_draws_the_strongest_first_heads():
    model = fitted_regressor(n_heads=None)
    display = AttentionHeadsDisplay.from_estimator(model, max_heads=2)
    assert display.images_.shape == (2, 2)
    np.testing.assert_array_equal(
        display.images_[1, 1].get_array(), model.query_matrices_[1]
    )
    # more than there are: all of them
    many = AttentionHeadsDisplay.from_estimator(model, max_heads=100)
    assert many.images_.shape == (2, model.n_heads_)


def test_pipeline_classifier_and_feature_names():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 5, 2))
    y = np.where(X[:, -1, 0] * (X[:, :, 0] ** 2).sum(axis=1) > 0, "a", "b")
    pipeline = make_pipeline(
        PositionalEncoding(n_positions=0, constant=True),
        LinearAttentionClassifier(n_heads=None),
    ).fit(X, y)
    names = ["x0", "x1", "1"]
    display = AttentionHeadsDisplay.from_estimator(pipeline, feature_names=names)
    labels = [t.get_text() for t in display.axes_[1, 0].get_xticklabels()]
    assert labels == names
    np.testing.assert_array_equal(
        display.images_[0, 0].get_array(), pipeline[-1].value_matrices_[0]
    )


def test_draws_into_given_axes_and_leaves_the_matrices_unchanged():
    attention = random_attention(np.random.default_rng(2), 3, 2)
    V, Q = attention.value_matrices.copy(), attention.query_matrices.copy()
    figure, ax = plt.subplots(2, 2)
    display = AttentionHeadsDisplay(attention.value_matrices, attention.query_matrices)
    assert display.plot(ax=ax) is display
    assert display.figure_ is figure and display.axes_[1, 1] is ax[1, 1]
    np.testing.assert_array_equal(attention.value_matrices, V)
    np.testing.assert_array_equal(attention.query_matrices, Q)



@pytest.mark.parametrize("layout", [None, "constrained"])
def test_heads_drawn_again_on_their_axes_replace_the_images_and_colorbar(layout):
    """Drawn again on its own axes (a new colormap, or changed matrices), the
    display added a second colorbar, which took room from the heads (without a
    layout engine they narrowed at each draw), and laid new images over the
    old ones: one image per axes, one colorbar, the new matrices and scale."""
    attention = random_attention(np.random.default_rng(2), 3, 2)
    figure, ax = plt.subplots(2, 2, layout=layout)
    display = AttentionHeadsDisplay(attention.value_matrices, attention.query_matrices)
    display.plot(ax=ax)
    figure.canvas.draw()
    n_axes = len(figure.axes)
    positions = [a.get_position(original=True).bounds for a in ax.ravel()]
    display.value_matrices = 3.0 * attention.value_matrices
    display.plot(ax=display.axes_, cmap="PuOr")
    figure.canvas.draw()
    assert len(figure.axes) == n_axes
    assert [len(a.images) for a in ax.ravel()] == [1] * 4
    np.testing.assert_allclose(
        display.images_[0, 1].get_array(), display.value_matrices[1]
    )
    limit = max(
        np.abs(display.value_matrices).max(), np.abs(attention.query_matrices).max()
    )
    assert display.colorbar_.vmax == pytest.approx(limit)
    assert display.colorbar_.cmap.name == "PuOr"
    if layout is None:  # (a layout engine places the heads anew)
        np.testing.assert_allclose(
            [a.get_position(original=True).bounds for a in ax.ravel()], positions
        )
    # after ax.clear() (the images gone): drawn anew, one colorbar still
    ax[0, 0].clear()
    display.plot(ax=display.axes_)
    assert len(figure.axes) == n_axes
    assert [len(a.images) for a in ax.ravel()] == [1] * 4



def overlapping_tick_labels(axes, renderer):
    """Pairs of neighbouring tick labels of the axes whose boxes overlap."""
    found = []
    for labels in (axes.get_xticklabels(), axes.get_yticklabels()):
        boxes = [label.get_window_extent(renderer) for label in labels]
        found += [
            (a.get_text(), b.get_text())
            for a, b, box_a, box_b in zip(
                labels, labels[1:], boxes, boxes[1:], strict=False
            )
            if box_a.overlaps(box_b)
        ]
    return found


@pytest.mark.parametrize("token_dim", [3, 16, 30])
def test_heads_tick_labels_do_not_run_into_each_other(token_dim):
    """In the figure of 1.9 inches a head, 16 token features' tick labels ran
    into each other ("1011121314"): the heads' panels grow with the features,
    and the x-axis's labels turn vertical where side by side they do not fit;
    named features too."""
    rng = np.random.default_rng(0)
    value = rng.normal(size=(2, 1, token_dim))
    query = rng.normal(size=(2, token_dim, token_dim))
    for names in (None, [f"feature {i}" for i in range(token_dim)]):
        display = AttentionHeadsDisplay(value, query, feature_names=names).plot()
        display.figure_.canvas.draw()
        renderer = display.figure_.canvas.get_renderer()
        for axes in display.axes_.ravel():
            assert not overlapping_tick_labels(axes, renderer)


def test_heads_are_titled_by_the_models_name():
    """As scikit-learn's displays: ``name``, by default the estimator's class
    name, so that two models' heads can be told apart."""
    model = fitted_regressor(n_heads=2)
    display = AttentionHeadsDisplay.from_estimator(model)
    titles = [axes.get_title() for axes in display.axes_[0]]
    assert all(title.startswith("LinearAttentionRegressor\nhead ") for title in titles)
    display = AttentionHeadsDisplay.from_estimator(model, name="mine")
    assert display.axes_[0, 1].get_title().startswith("mine\nhead 2\n")
    attention = model.attention_
    display = AttentionHeadsDisplay(
        attention.value_matrices, attention.query_matrices
    ).plot()
    assert display.axes_[0, 0].get_title().startswith("head 1\n")
    display.plot(ax=display.axes_, name="again")
    assert display.axes_[0, 0].get_title().startswith("again\nhead 1\n")
    with pytest.raises(TypeError, match="name must be a string or None, got 1"):
        display.plot(name=1)


def test_heads_pass_im_kw_to_every_image():
    from matplotlib.colors import SymLogNorm

    model = fitted_regressor(n_heads=2)
    im_kw = {"interpolation": "nearest", "alpha": 0.5, "cmap": "PuOr"}
    display = AttentionHeadsDisplay.from_estimator(model, im_kw=im_kw)
    assert im_kw == {"interpolation": "nearest", "alpha": 0.5, "cmap": "PuOr"}
    for image in display.images_.ravel():
        assert image.get_interpolation() == "nearest"
        assert image.get_alpha() == 0.5
        assert image.get_cmap().name == "PuOr"  # over the cmap parameter
        low, high = image.get_clim()
        assert low == -high > -np.inf  # the symmetric scale kept
    # drawn again on its axes, into its images
    images = display.images_.copy()
    display.plot(ax=display.axes_, im_kw={"cmap": "viridis"})
    assert all(
        a is b for a, b in zip(images.ravel(), display.images_.ravel(), strict=True)
    )
    assert display.colorbar_.cmap.name == "viridis"
    # a norm sets the scale itself
    norm = SymLogNorm(1e-3, vmin=-2, vmax=2)
    display = AttentionHeadsDisplay.from_estimator(model, im_kw={"norm": norm})
    assert display.images_[0, 0].norm is norm
    with pytest.raises(TypeError, match="im_kw must be a dict .*got list"):
        AttentionHeadsDisplay.from_estimator(model, im_kw=["nearest"])


def test_one_head_draws_into_a_column_of_two_axes():
    """plt.subplots(2, 1) gives a 1-D array of two Axes: V_h above Q_h."""
    attention = random_attention(np.random.default_rng(2), 3, 1)
    figure, ax = plt.subplots(2, 1)
    display = AttentionHeadsDisplay(attention.value_matrices, attention.query_matrices)
    display.plot(ax=ax)
    assert display.axes_.shape == (2, 1) and display.axes_[1, 0] is ax[1]
    np.testing.assert_array_equal(
        display.images_[1, 0].get_array(), attention.query_matrices[0]
    )


def test_unfitted_estimator_raises():
    with pytest.raises(NotFittedError):
        AttentionHeadsDisplay.from_estimator(LinearAttentionRegressor())


@pytest.mark.parametrize("Display", [AttentionHeadsDisplay, HeadSearchDisplay])
def test_an_estimator_that_is_not_attention_is_a_type_error(rng, Display):
    """A fitted Ridge was "not fitted yet" (it has no attention_)."""
    from sklearn.linear_model import Ridge

    ridge = Ridge().fit(rng.normal(size=(20, 4)), rng.normal(size=20))
    with pytest.raises(TypeError, match="takes a LinearAttention.* got Ridge"):
        Display.from_estimator(make_pipeline(ridge))


def test_a_fitted_search_draws_its_best_estimator():
    """A fitted GridSearchCV (of the estimator, or of a pipeline ending in it)
    was a TypeError; it is drawn as its best_estimator_: the same heads and
    the same counts at the same errors. Not fitted, or fitted with
    refit=False, it has none: a TypeError that says so."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import FunctionTransformer

    X, y = hidden_head_outputs(0, n_samples=150)[:2]
    for estimator, grid in (
        (LinearAttentionRegressor(), {"alpha": [0.0, 1e-3]}),
        (
            make_pipeline(FunctionTransformer(), LinearAttentionRegressor()),
            {"linearattentionregressor__alpha": [0.0, 1e-3]},
        ),
    ):
        search = GridSearchCV(estimator, grid, cv=2).fit(X, y)
        best = search.best_estimator_
        final = best[-1] if hasattr(best, "steps") else best
        heads = AttentionHeadsDisplay.from_estimator(search)
        np.testing.assert_array_equal(
            heads.images_[1, 0].get_array(), final.attention_.query_matrices[0]
        )
        counts = final.head_search_.counts
        display = HeadSearchDisplay.from_estimator(search)
        assert display.head_search is final.head_search_
        assert drawn_counts(display) == {c.n_heads for c in counts}
    for search in (
        GridSearchCV(LinearAttentionRegressor(), {"alpha": [0.0]}),
        GridSearchCV(LinearAttentionRegressor(), {"alpha": [0.0]}, cv=2, refit=False)
        .fit(X, y),
    ):
        with pytest.raises(
            TypeError, match="got GridSearchCV without best_estimator_"
        ):
            HeadSearchDisplay.from_estimator(search)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_heads": 0}, "max_heads must be an integer >= 1"),
        ({"max_heads": 1.5}, "max_heads must be an integer >= 1"),
        ({"max_heads": True}, "max_heads must be an integer >= 1"),
        ({"ax": "axes"}, r"ax must be an array of Axes of shape \(2, 2\)"),
    ],
)
def test_bad_plot_arguments(kwargs, message):
    attention = random_attention(np.random.default_rng(3), 3, 2)
    display = AttentionHeadsDisplay(attention.value_matrices, attention.query_matrices)
    with pytest.raises(ValueError, match=message):
        display.plot(**kwargs)


def test_bad_matrices_and_names():
    with pytest.raises(ValueError, match="value_matrices has 2 heads"):
        AttentionHeadsDisplay(np.ones((2, 1, 3)), np.ones((1, 3, 3))).plot()
    with pytest.raises(ValueError, match="feature_names has 2 names"):
        AttentionHeadsDisplay(
            np.ones((1, 1, 3)), np.ones((1, 3, 3)), feature_names=["a", "b"]
        ).plot()
    with pytest.raises(TypeError, match="got the string 'abc'"):  # not 3 names
        AttentionHeadsDisplay(
            np.ones((1, 1, 3)), np.ones((1, 3, 3)), feature_names="abc"
        ).plot()
    empty = MultiHeadLinearAttention(np.ones((0, 1, 3)), np.ones((0, 3, 3)))
    with pytest.raises(ValueError, match="no heads to draw"):
        AttentionHeadsDisplay(empty.value_matrices, empty.query_matrices).plot()


@pytest.mark.parametrize(
    "names, found",
    [
        ({"a", "b", "c"}, "got set"),  # drawn in the set's order
        ({"a": 0, "b": 1, "c": 2}, "got dict"),
        ((name for name in "abc"), "got generator"),  # "has no len()"
        (3, "got int"),
        ([["a", "b", "c"]], r"got list of shape \(1, 3\)"),
    ],
)
def test_feature_names_must_be_an_ordered_list(names, found):
    """A set labelled the ticks in its own order (a silent wrong answer); a
    generator or a number failed in len()."""
    display = AttentionHeadsDisplay(
        np.ones((1, 1, 3)), np.ones((1, 3, 3)), feature_names=names
    )
    with pytest.raises(TypeError, match=f"list of 3 names, .* in order, {found}"):
        display.plot()
    for ordered in (["a", "b", "c"], ("a", "b", "c"), np.array(["a", "b", "c"])):
        AttentionHeadsDisplay(
            np.ones((1, 1, 3)), np.ones((1, 3, 3)), feature_names=ordered
        ).plot()


def test_an_array_of_other_objects_than_axes_is_a_type_error():
    """An array of the right shape holding no Axes was an AttributeError
    ('str' object has no attribute 'figure')."""
    display = AttentionHeadsDisplay(np.ones((1, 1, 3)), np.ones((1, 3, 3)))
    with pytest.raises(TypeError, match="ax must hold matplotlib Axes, got a str"):
        display.plot(ax=["V", "Q"])


# --- HeadSearchDisplay ---------------------------------------------------------------


def noisy_search(**params):
    rng = np.random.default_rng(3)
    truth = random_attention(rng, 4, 2)
    X = random_sequences(rng, 120, 8, 4)
    y = truth.predict(X)[:, 0]
    y = y + 0.1 * y.std() * rng.normal(size=y.shape)
    return LinearAttentionRegressor(**params).fit(X, y)


def test_search_display_draws_each_count_by_the_test_that_decided_it():
    model = noisy_search()
    search = model.head_search_
    display = HeadSearchDisplay.from_estimator(model)
    refitted = [c for c in search.counts if np.isfinite(c.cv_error)]
    np.testing.assert_array_equal(
        display.lines_["counts"].get_xdata(), [c.n_heads for c in refitted]
    )
    np.testing.assert_array_equal(
        display.lines_["counts"].get_ydata(), [c.cv_error for c in refitted]
    )
    unrefitted = sorted(
        (c for c in search.counts
         if np.isnan(c.cv_error) and np.isfinite(c.linearized_cv_error)),
        key=lambda c: c.n_heads,
    )
    linearized = [c for c in unrefitted if c.folds_refitted is None]
    assert not [c for c in linearized if c.passes is False]  # refits decide
    for key, drawn in [
        ("stopped", [c for c in unrefitted if c.folds_refitted is not None]),
        ("undecided", [c for c in linearized if c.passes is None]),
    ]:
        assert (key in display.lines_) == bool(drawn)
        if drawn:
            np.testing.assert_array_equal(
                display.lines_[key].get_ydata(), [c.linearized_cv_error for c in drawn]
            )
    if "training" in display.lines_:  # drawn as failing: they failed
        failed = {c.n_heads for c in search.counts if c.passes is False}
        assert set(display.lines_["training"].get_xdata()) <= failed
    assert display.lines_["lifted"].get_ydata()[0] == search.cv_error
    judged = sorted(
        (c for c in search.counts if np.isfinite(c.threshold)), key=lambda c: c.n_heads
    )
    np.testing.assert_array_equal(
        display.lines_["threshold"].get_ydata(), [c.threshold for c in judged]
    )
    assert all(c.threshold <= search.cv_error for c in judged)
    assert display.lines_["chosen"].get_xdata()[0] == model.n_heads_
    assert "cut the search short" not in display.lines_["chosen"].get_label()


@pytest.mark.parametrize("seed, n_tokens, n_rows, alpha, key", [
    (4, 16, 52, 1e-3, "gcv"), (37, 16, 56, 0.0, "majority"),
])
def test_search_display_shows_what_failed_counts_within_the_threshold(
    seed, n_tokens, n_rows, alpha, key
):
    """Counts whose training or cross-validated error is within the threshold
    but which failed another test are not drawn as failing on it: near
    interpolation at their generalized cross-validated error, and counts worse
    than the lifted fit on most folds with their own marker."""
    rng = np.random.default_rng(seed)
    d = 4 if key == "gcv" else 3
    truth = random_attention(rng, d, 2)
    X = random_sequences(rng, n_rows, n_tokens, d)
    y = truth.predict(X)[:, 0]
    y = y + 0.1 * y.std() * rng.normal(size=y.shape)
    model = LinearAttentionRegressor(alpha=alpha, fit_intercept=alpha > 0).fit(X, y)
    search = model.head_search_
    failed = [  # (a majority of the first folds refitted: drawn as "stopped")
        c for c in search.counts
        if c.failed_on == key and (key == "gcv" or c.folds_refitted == 5)
    ]
    assert failed, f"no count failed on {key}: the test exercises nothing"
    display = HeadSearchDisplay.from_estimator(model)
    drawn = display.lines_[key]
    np.testing.assert_array_equal(drawn.get_xdata(), [c.n_heads for c in failed])
    errors = [c.gcv_error if key == "gcv" else c.cv_error for c in failed]
    np.testing.assert_array_equal(drawn.get_ydata(), errors)
    if key == "majority":
        assert_marks_the_counts_line(display, drawn)
    if "training" in display.lines_:
        on_training = {c.n_heads for c in search.counts if c.failed_on == "training"}
        assert set(display.lines_["training"].get_xdata()) == on_training



def test_search_display_marks_a_classifiers_count_that_is_the_lifted_fit_on_the_data():
    """A classifier's count that passes as the lifted fit on the data sits at
    its threshold, not below it as the legend asks of the others: it is drawn
    with the counts reproducing the lifted fit, so named (positions and a
    constant on 210 rows of make_classification: 2 heads of the lifted fit's
    6)."""
    Z, y = classes_with_positions_and_a_constant()
    model = LinearAttentionClassifier().fit(Z, y)
    search = model.head_search_
    on_data = [c for c in search.counts if c.passes and c.cv_error >= c.threshold]
    assert [c.n_heads for c in on_data] == [model.n_heads_]
    display = HeadSearchDisplay.from_estimator(model)
    drawn = display.lines_["tol"]
    np.testing.assert_array_equal(drawn.get_xdata(), [model.n_heads_])
    np.testing.assert_array_equal(drawn.get_ydata(), [search.cv_error])
    assert drawn.get_label() == (
        "LinearAttentionClassifier: k heads reproducing the lifted fit on the data "
        "(they pass at their threshold)"
    )

def test_search_display_draws_a_fixed_counts_training_failure_beside_its_refits():
    """n_heads=k failed on its training error is still refitted on its folds:
    the display draws both, the refits' error on the counts' line and the
    training error above the threshold (noiseless 2-head targets on tokens
    offset by 100, whose statistics' errors are rounding's)."""
    X, y = noiseless_far_from_zero(100.0, seed=18)
    model = LinearAttentionRegressor(n_heads=2).fit(X, y)
    count = model.head_search_.counts[0]
    assert count.failed_on == "training" and np.isfinite(count.cv_error)
    display = HeadSearchDisplay.from_estimator(model)
    np.testing.assert_array_equal(display.lines_["training"].get_xdata(), [2])
    np.testing.assert_array_equal(
        display.lines_["training"].get_ydata(), [count.training_error]
    )
    refits = display.lines_["counts"].get_ydata()
    np.testing.assert_array_equal(refits, [count.cv_error])
    assert count.training_error > display.lines_["threshold"].get_ydata()[0]


def test_search_display_marks_counts_worse_on_an_output():
    X, y, _ = hidden_head_outputs(0)
    model = LinearAttentionRegressor().fit(X, y)
    failed = [c for c in model.head_search_.counts if c.failed_on == "output"]
    assert failed, "no count failed on an output: the test exercises nothing"
    display = HeadSearchDisplay.from_estimator(model)
    drawn = display.lines_["output"]
    np.testing.assert_array_equal(drawn.get_xdata(), [c.n_heads for c in failed])
    np.testing.assert_array_equal(drawn.get_ydata(), [c.cv_error for c in failed])
    assert_marks_the_counts_line(display, drawn)



def test_search_display_says_when_the_outputs_errors_are_weighted():
    """Outputs with unlike noise are weighted in the search (here up to 64
    times): the errors drawn, head_search_'s, are the weighted outputs', up to
    4096 times a plain squared error, under the label "cross-validated squared
    error". The label says they are weighted; one output's does not."""
    X, y, _ = hidden_head_outputs(0, n_samples=300)
    model = LinearAttentionRegressor().fit(X, y)
    search = model.head_search_
    assert search.output_weights is not None and np.ptp(search.output_weights) > 0
    display = HeadSearchDisplay.from_estimator(model)
    assert display.ax_.get_ylabel() == "cross-validated\nweighted squared error"
    assert display.lines_["lifted"].get_ydata()[0] == search.cv_error
    one = LinearAttentionRegressor().fit(X, y[:, 0])
    assert one.head_search_.output_weights is None
    label = HeadSearchDisplay.from_estimator(one).ax_.get_ylabel()
    assert label == "cross-validated squared error"


def test_search_display_marks_a_classifiers_counts_failed_on_their_scores():
    """A count whose misclassification is within the threshold but whose class
    scores predict worse than the lifted fit's is drawn as failing."""
    X, labels = few_sequences_three_classes(n_test=0)
    model = LinearAttentionClassifier(alpha=0.1, fit_intercept=True).fit(X, labels)
    failed = [c for c in model.head_search_.counts if c.failed_on == "scores"]
    assert failed, "no count failed on its scores: the test exercises nothing"
    assert all(c.cv_error < c.threshold for c in failed)
    display = HeadSearchDisplay.from_estimator(model)
    drawn = display.lines_["scores"]
    np.testing.assert_array_equal(drawn.get_xdata(), [c.n_heads for c in failed])
    np.testing.assert_array_equal(drawn.get_ydata(), [c.cv_error for c in failed])
    assert_marks_the_counts_line(display, drawn)


def assert_marks_the_counts_line(display, drawn):
    """Failed counts drawn on the counts' line (where their cross-validated
    error lies) show around its markers, not hidden behind them: a hollow
    marker of twice the size, above the line (helper-78: a count that failed on
    its scores looked like a passing one)."""
    counts = display.lines_["counts"]
    on_line = set(map(tuple, counts.get_xydata()))
    assert set(map(tuple, drawn.get_xydata())) <= on_line
    assert drawn.get_markersize() == 2 * counts.get_markersize()
    assert drawn.get_fillstyle() == "none"
    assert drawn.get_zorder() > counts.get_zorder()


def test_search_display_marks_counts_failed_on_their_first_folds():
    """A count the first folds' refits fail is drawn apart, at its linearized
    refits' error (which can be below the threshold), not as failing there."""
    rng = np.random.default_rng(29)  # 3 p sequences of d = 4, 30% noise
    truth = random_attention(rng, 4, 2, 1)
    X = random_sequences(rng, 120, 16, 4)
    y = truth.predict(X)
    y = (y + 0.3 * y.std(axis=0) * rng.normal(size=y.shape))[:, 0]
    model = LinearAttentionRegressor().fit(X, y)
    stopped = [c for c in model.head_search_.counts if (c.folds_refitted or 5) < 5]
    assert stopped, "no count stopped early: the test exercises nothing"
    display = HeadSearchDisplay.from_estimator(model)
    np.testing.assert_array_equal(
        display.lines_["stopped"].get_xdata(), sorted(c.n_heads for c in stopped)
    )
    assert "first folds" in display.lines_["stopped"].get_label()
    assert all(
        c.n_heads not in display.lines_[key].get_xdata()
        for c in stopped for key in ("counts", "linearized") if key in display.lines_
    )


def test_search_display_says_when_the_work_limit_cut_the_search_short(monkeypatch):
    work = noisy_search(head_work_limit=None).head_search_.work
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", work / 2)
    with pytest.warns(ConvergenceWarning, match="work limit"):
        model = noisy_search(head_work_limit=0.0)
    assert not model.head_search_.complete and model.head_search_.counts
    display = HeadSearchDisplay.from_estimator(model)
    assert "the work limit cut the search short" in display.lines_["chosen"].get_label()
    undecided = [c.n_heads for c in model.head_search_.counts if c.passes is None]
    drawn = [
        n
        for key in ("linearized", "training", "stopped")
        if key in display.lines_
        for n in display.lines_[key].get_xdata()
    ]
    assert not set(undecided) & set(drawn)  # not drawn as failing


def test_search_display_of_the_papers_read_out_raises():
    with pytest.raises(ValueError, match="n_heads=None asks for the paper's read-out"):
        HeadSearchDisplay.from_estimator(noisy_search(n_heads=None))


def test_search_display_of_a_search_that_fitted_no_count_says_why(monkeypatch):
    """Ten noisy sequences: no count below the lifted fit's can be judged but by
    reproducing it, and with no work allowed for those fits (as where they
    cost more than the search may spend on them) the lifted fit's heads come
    back without a count fitted (the message had said they were at most one
    head, or at most the n_heads asked for; then that no count below could
    pass, while fewer heads could, by reproducing the lifted fit: helper-78)."""
    monkeypatch.setattr("sklearn_linattn._heads.BEYOND_SHARE", 0.0)
    monkeypatch.setattr("sklearn_linattn._heads.BEYOND_FLOOR", 0.0)
    rng = np.random.default_rng(0)
    truth = random_attention(rng, 3, 2)
    X = random_sequences(rng, 10, 8, 3)
    y = truth.predict(X)[:, 0] + 0.1 * rng.normal(size=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # alpha=0 interpolates
        model = LinearAttentionRegressor().fit(X, y)
    assert model.head_search_.criterion == "lifted" and not model.head_search_.counts
    assert model.n_heads_ > 1 and model.head_search_.fewer_untried
    with pytest.raises(ValueError, match=r"their fits would exceed the search's "
                       r"share of work \(head_search_.fewer_untried"):
        HeadSearchDisplay.from_estimator(model)



def test_search_display_says_when_counts_that_could_reproduce_were_not_fitted():
    """18 sequences of d = 7 (three tokens with positions), three outputs, alpha
    = 1: count 1 fails, and the counts from the interpolating one on, which
    pass only by reproducing the lifted fit, are not fitted within the share
    of work the search gives them. The chosen count's label said the lifted
    fit's heads came back because "no fewer heads passed" (helper-78)."""
    X, y, _ = make_random_mhla(18, 3, 3, n_heads=2, n_outputs=3, random_state=2)
    X = PositionalEncoding(constant=True, padding=None).fit_transform(X)
    model = LinearAttentionRegressor(alpha=1.0).fit(X, y)
    search = model.head_search_
    assert search.criterion == "lifted" and search.fewer_untried and search.counts
    label = HeadSearchDisplay.from_estimator(model).lines_["chosen"].get_label()
    assert "fewer that could reproduce it not fitted" in label
    assert "no fewer heads passed" not in label

def drawn_counts(display):
    """Every count fitted drawn by a line of the display (the threshold, chosen
    and the counts not fitted aside)."""
    return {
        int(n)
        for key, line in display.lines_.items()
        if key not in ("threshold", "lifted", "chosen", "unfitted")
        for n in line.get_xdata()
    }


def test_search_display_of_unidentifiable_exact_data_draws_the_objective():
    """On exact data that do not identify the function, a count passes tol on
    its training objective: its distance (far above tol) was drawn alone, as if
    it failed."""
    from sklearn_linattn.datasets import make_automaton_lookups

    X, y = make_automaton_lookups(200, 2, 2, random_state=0)[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearAttentionRegressor().fit(X, y)
    search = model.head_search_
    assert not model.certificate_.identifiable and search.criterion == "tol"
    passed = [c for c in search.counts if c.passes and c.relative_distance > model.tol]
    assert passed, "no count passed on its objective: the test exercises nothing"
    display = HeadSearchDisplay.from_estimator(model)
    counts = sorted(search.counts, key=lambda c: c.n_heads)
    objective = display.lines_["objective"]
    np.testing.assert_array_equal(objective.get_xdata(), [c.n_heads for c in counts])
    np.testing.assert_allclose(
        objective.get_ydata(), [np.sqrt(c.training_loss) for c in counts]
    )
    heights = zip(objective.get_ydata(), counts, strict=True)
    assert all(y <= model.tol for y, c in heights if c.passes)
    np.testing.assert_array_equal(
        display.lines_["counts"].get_ydata(), [c.relative_distance for c in counts]
    )
    assert display.lines_["threshold"].get_ydata()[0] == model.tol
    # identifiable data: no objective drawn
    exact = fitted_regressor(n_heads="auto")
    assert "objective" not in HeadSearchDisplay.from_estimator(exact).lines_


def test_search_display_of_a_noisy_search_stopped_before_any_error(monkeypatch):
    """Stopped before a count's first test, a noisy search was drawn as exact
    data: its count's distance against tol, as if it failed tol."""
    work = noisy_search(head_work_limit=None).head_search_.work
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", work * 0.02)
    with pytest.warns(ConvergenceWarning, match="work limit"):
        model = noisy_search(head_work_limit=0.0)
    search = model.head_search_
    unmeasured = [c.n_heads for c in search.counts if c.criterion is None]
    assert unmeasured and not search.complete
    display = HeadSearchDisplay.from_estimator(model)
    assert display.ax_.get_ylabel() == "cross-validated squared error"
    np.testing.assert_array_equal(
        display.lines_["unmeasured"].get_xdata(), sorted(unmeasured)
    )
    assert display.lines_["lifted"].get_ydata()[0] == search.cv_error
    assert "tol" not in [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert drawn_counts(display) == {c.n_heads for c in search.counts}
    # counts above the last fitted were not reached, not ruled out: unmarked
    if "unfitted" in display.lines_:
        assert max(display.lines_["unfitted"].get_xdata()) < max(search.counts_tried)
    label = display.lines_["chosen"].get_label()
    assert "the work limit cut the search short" in label



def test_search_display_marks_unmeasured_counts_unlike_counts_at_an_error(
    monkeypatch,
):
    """A count left undecided before any error was measured, marked near the
    x-axis, was drawn as the hollow diamond of counts left undecided at their
    last error: it read as a count at an error near the axes' floor, below the
    lifted fit's. Its marker is none of those drawn at an error."""
    from dataclasses import replace

    work = noisy_search(head_work_limit=None).head_search_.work
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", work * 0.02)
    with pytest.warns(ConvergenceWarning, match="work limit"):
        search = noisy_search(head_work_limit=0.0).head_search_
    unmeasured = next(c for c in search.counts if c.criterion is None)
    # and a count left undecided after its linearized refits
    undecided = replace(
        unmeasured, n_heads=max(search.counts_tried) + 1, criterion="linearized",
        training_error=search.cv_error, linearized_cv_error=search.cv_error,
        threshold=search.cv_error,
    )
    search = replace(search, counts=search.counts + (undecided,))
    lines = HeadSearchDisplay(search).plot().lines_
    assert unmeasured.n_heads in lines["unmeasured"].get_xdata()
    np.testing.assert_array_equal(lines["undecided"].get_ydata(), [search.cv_error])
    at_an_error = {
        line.get_marker()
        for key, line in lines.items()
        if key not in ("unmeasured", "unfitted", "interpolating", "chosen")
    }
    assert lines["unmeasured"].get_marker() not in at_an_error


def test_search_display_of_an_exact_search_cut_short_marks_undecided(monkeypatch):
    rng = np.random.default_rng(0)
    truth = random_attention(rng, 4, 2)
    X = random_sequences(rng, 150, 8, 4)
    y = truth.predict(X)[:, 0]
    work = LinearAttentionRegressor(head_work_limit=None).fit(X, y).head_search_.work
    monkeypatch.setattr("sklearn_linattn._estimators.WORK_FLOOR", work * 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = LinearAttentionRegressor(head_work_limit=0.0).fit(X, y).head_search_
    undecided = sorted(c.n_heads for c in search.counts if c.passes is None)
    assert undecided, "no count left undecided: the test exercises nothing"
    display = HeadSearchDisplay(search, tol=1e-8).plot()
    np.testing.assert_array_equal(display.lines_["undecided"].get_xdata(), undecided)
    assert not set(undecided) & set(display.lines_["counts"].get_xdata())
    assert drawn_counts(display) == {c.n_heads for c in search.counts}


def test_search_display_labels_a_classifier_and_a_count_asked_for():
    rng = np.random.default_rng(1)
    X = random_sequences(rng, 150, 6, 3)
    y = np.where(X[:, -1, 0] * (X[:, :, 1] ** 2).sum(axis=1) > 0, "a", "b")
    model = LinearAttentionClassifier(n_heads=1).fit(X, y)
    search = model.head_search_
    display = HeadSearchDisplay.from_estimator(model)
    assert display.ax_.get_ylabel() == "cross-validated\nmisclassification rate"
    verdict = "passes" if search.passes else "fails"
    assert display.lines_["chosen"].get_label() == (
        f"LinearAttentionClassifier: asked for: 1 (n_heads=1; {verdict} its test)"
    )
    assert "below it" in display.lines_["threshold"].get_label()
    (count,) = search.counts
    drawn = display.lines_["counts"].get_ydata()
    np.testing.assert_array_equal(drawn, [count.cv_error])
    # one count: whole numbers on the x-axis (were 0.96, 0.975, ...)
    ticks = [t for t in display.ax_.get_xticks() if display.ax_.get_xlim()[0] <= t]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_search_display_says_a_count_without_held_out_folds_is_not_judged():
    """n_heads=k on noisy data fitted by solver="cg" keeps no folds: its verdict
    is None, and the label said it "fails its test"."""
    X, y, _ = make_random_mhla(400, 8, 4, n_heads=2, noise=0.1, random_state=0)
    model = LinearAttentionRegressor(n_heads=2, solver="cg").fit(X, y)
    assert model.head_search_.passes is None
    display = HeadSearchDisplay.from_estimator(model)
    assert display.lines_["chosen"].get_label() == (
        "LinearAttentionRegressor: asked for: 2 (n_heads=2; not judged: no held-out "
        "folds)"
    )


def test_search_display_draws_into_given_axes_and_replots():
    model = noisy_search()
    figure, (left, right) = plt.subplots(1, 2)
    display = HeadSearchDisplay.from_estimator(model, ax=right)
    assert display.ax_ is right and display.figure_ is figure
    assert not left.lines
    first = display.figure_
    assert display.plot() is display and display.figure_ is not first
    n_heads = [c.n_heads for c in model.head_search_.counts]
    assert display.ax_.get_xlim() == (min(n_heads) - 0.5, max(n_heads) + 0.5)
    # no empty line with a legend entry
    texts = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert all(display.lines_[key].get_xdata().size for key in display.lines_
               if key not in ("lifted", "chosen"))
    assert len(texts) == len(set(texts))


def test_search_display_checks_its_parameters():
    """The estimator itself (or None) was an AttributeError ('... has no
    attribute counts'); tol='x' a TypeError from a comparison inside (or
    nothing, on the held-out panel), identifiable='no' taken as True,
    error_name=3 drawn as the label "cross-validated 3"."""
    model = noisy_search()
    with pytest.raises(TypeError, match="got LinearAttentionRegressor; .*from_est"):
        HeadSearchDisplay(model).plot()
    with pytest.raises(TypeError, match=r"\(a HeadReadout\), got NoneType"):
        HeadSearchDisplay(None).plot()
    for tol in ("x", -1.0, np.nan, True):
        with pytest.raises(ValueError, match="tol must be a non-negative real"):
            HeadSearchDisplay(model.head_search_, tol=tol).plot()
    with pytest.raises(TypeError, match="identifiable must be True, False or None"):
        HeadSearchDisplay(model.head_search_, identifiable="no").plot()
    with pytest.raises(TypeError, match="error_name must be a string or None"):
        HeadSearchDisplay(model.head_search_, error_name=3).plot()
    HeadSearchDisplay(model.head_search_, tol=np.float32(1e-8), identifiable=False)


def test_search_display_takes_one_axes():
    """An array of Axes (plt.subplots(1, 2)) was an AttributeError from inside
    the display."""
    _, axes = plt.subplots(1, 2)
    with pytest.raises(TypeError, match=r"one matplotlib Axes .* of shape \(2,\)"):
        HeadSearchDisplay.from_estimator(noisy_search(), ax=axes)


def test_a_head_search_record_without_its_tol_draws_the_estimators(rng):
    """A record unpickled from a version without ``head_search_.tol`` holds NaN
    there: the display falls back to the estimator's ``tol``."""
    import dataclasses

    X = random_sequences(rng, 120, 4, 3)
    y = random_attention(rng, 3, 1).predict(X)
    model = LinearAttentionRegressor(tol=1e-7).fit(X, y)
    model.head_search_ = dataclasses.replace(model.head_search_, tol=float("nan"))
    display = HeadSearchDisplay.from_estimator(model)
    assert display.tol == 1e-7


def search_decided_three_ways():
    """A classifier of 17 sequences whose head search decides counts three
    ways, with seven legend entries."""
    X, y = seventeen_sequences_three_labels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few rows per lifted feature
        return LinearAttentionClassifier(
            alpha=0.1, fit_intercept=True, solver="dual"
        ).fit(X, y)


def test_the_legend_of_a_search_hides_no_count():
    """Counts decided three ways and seven legend entries: matplotlib's
    best place inside the axes covered the first count's marker (and a place
    free at one dpi covered one at another); the legend is below the axes. No
    marker of a count (the chosen line and the lifted fit's line span the axes,
    and are left out) lies under the legend, at any dpi."""
    model = search_decided_three_ways()
    display = HeadSearchDisplay.from_estimator(model)
    assert len(model.head_search_.counts) >= 3
    figure = display.figure_
    for dpi in (60, 72, 100, 200):
        figure.set_dpi(dpi)
        figure.canvas.draw()
        box = display.ax_.get_legend().get_window_extent(
            figure.canvas.get_renderer()
        )
        shown = 0
        for name, line in display.lines_.items():
            if name in ("chosen", "lifted"):
                continue
            for x, y_ in line.get_transform().transform(line.get_xydata()):
                shown += 1
                inside = box.x0 <= x <= box.x1 and box.y0 <= y_ <= box.y1
                assert not inside, (name, dpi)
        assert shown >= 3


def test_search_display_says_which_count_was_asked_for():
    """``n_heads=4`` whose fourth head is zero within ``tol`` returns 3 heads:
    the display said "asked for: 3 (n_heads=3...)", the count returned."""
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(300, 6, 4, n_heads=2, noise=0.6, random_state=1)
    model = LinearAttentionRegressor(n_heads=4, tol=0.25).fit(X, y)
    search = model.head_search_
    assert search.n_heads_asked == 4 and search.n_heads < 4
    label = HeadSearchDisplay.from_estimator(model).lines_["chosen"].get_label()
    assert label.startswith("LinearAttentionRegressor: asked for: 4 (n_heads=4; ")
    assert f"{search.n_heads} heads returned" in label
    assert LinearAttentionRegressor().fit(X, y).head_search_.n_heads_asked is None


def test_search_display_draws_infinite_and_unfitted_counts():
    """25 exact sequences of d = 4: 3 heads have as many dimensions as the
    equations (generalized cross-validation infinite) and were not drawn at all
    (matplotlib drops inf); 2 heads, below a count that failed to reproduce the
    lifted fit, were not fitted and left no trace."""
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(25, 6, 4, n_heads=2, noise=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # alpha=0 interpolates
        model = LinearAttentionRegressor().fit(X, y)
    search = model.head_search_
    infinite = [c.n_heads for c in search.counts if c.gcv_error == np.inf]
    missing = sorted(set(range(1, search.n_heads)) - set(search.counts_tried))
    assert infinite and missing
    display = HeadSearchDisplay.from_estimator(model)
    drawn = display.lines_["interpolating"]
    np.testing.assert_array_equal(drawn.get_xdata(), infinite)
    assert np.all(np.isfinite(drawn.get_ydata()))
    np.testing.assert_array_equal(display.lines_["unfitted"].get_xdata(), missing)
    low, high = display.ax_.get_xlim()
    assert low < min(missing) and max(infinite) < high
    if "gcv" in display.lines_:  # finite ones drawn apart from the infinite
        assert drawn.get_marker() != display.lines_["gcv"].get_marker()


def test_search_display_draws_a_classifiers_infinite_counts_as_infinite():
    """A classifier's counts have no training squared error (NaN): those with
    an infinite generalized cross-validated error were drawn at their
    threshold as failing generalized cross-validation, not as infinite."""
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(24, 2, 4, n_heads=1, noise=0.1, random_state=1)
    labels = y > np.median(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # alpha=0, fewer rows than features
        model = LinearAttentionClassifier().fit(X, labels)
    infinite = [c.n_heads for c in model.head_search_.counts if c.gcv_error == np.inf]
    assert infinite
    display = HeadSearchDisplay.from_estimator(model)
    np.testing.assert_array_equal(
        display.lines_["interpolating"].get_xdata(), infinite
    )
    gcv = display.lines_.get("gcv")
    assert gcv is None or not set(gcv.get_xdata()) & set(infinite)


def test_search_display_on_the_users_axes_keeps_its_legend_in_the_figure():
    """On axes the user made, the legend below them left the figure (the
    display can make only its own figure taller): it is placed on the axes."""
    import matplotlib.pyplot as plt

    model = search_decided_three_ways()
    figure, ax = plt.subplots()
    display = HeadSearchDisplay.from_estimator(model, ax=ax)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = display.ax_.get_legend().get_window_extent(renderer)
    whole = figure.bbox
    assert whole.x0 <= box.x0 and box.x1 <= whole.x1
    assert whole.y0 <= box.y0 and box.y1 <= whole.y1
    plt.close(figure)


def test_search_display_in_a_grid_of_small_panels_keeps_the_layout():
    """Four displays on a 2 x 2 grid with constrained layout: each legend, of
    long labels on one line each, was five times its panel's width, and the
    layout collapsed every axes ("axes sizes collapsed to zero"). The labels
    are wrapped to the axes' width and the legend left out of the layout."""
    import matplotlib.pyplot as plt

    model = search_decided_three_ways()
    figure, axes = plt.subplots(2, 2, figsize=(6.4, 4.8), layout="constrained")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the layout's warning that it collapsed
        for ax in axes.ravel():
            HeadSearchDisplay.from_estimator(model, ax=ax)
        figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for ax in axes.ravel():
        width = ax.get_window_extent(renderer).width
        assert width > 0.25 * figure.bbox.width  # (a quarter of a 2 x 2 grid)
        assert ax.get_legend().get_window_extent(renderer).width < 1.3 * width
    plt.close(figure)


def test_search_display_under_a_large_style_keeps_markers_and_the_x_label():
    """Under seaborn's poster style (no marker edges, large fonts) crosses and
    hollow markers, drawn by their edges, vanished, and the legend, anchored a
    fixed fifth of the axes' height below them, covered the x-axis label."""
    import matplotlib.pyplot as plt

    model = search_decided_three_ways()
    with plt.style.context("seaborn-v0_8-poster"):
        display = HeadSearchDisplay.from_estimator(model)
    assert "stopped" in display.lines_
    for key, line in display.lines_.items():
        if line.get_marker() in ("x", "|", "_", "d"):
            assert line.get_markeredgewidth() > 0, key
    figure = display.figure_
    for dpi in (60, 100):
        figure.set_dpi(dpi)
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        legend = display.ax_.get_legend().get_window_extent(renderer)
        axis = display.ax_.xaxis.get_tightbbox(renderer)
        assert legend.y1 <= axis.y0
    plt.close(figure)


def test_search_display_on_vector_canvases_subfigures_and_labelled_axes():
    """On a canvas without a bitmap renderer (SVG, PDF) the legend was never
    checked for covering a count, and it covered one; on a SubFigure's axes
    wrapping the legend raised AttributeError; the user's own labels (mathtext,
    line breaks) were rewrapped with the display's."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    model = search_decided_three_ways()
    figure = Figure(figsize=(6, 4))
    FigureCanvasSVG(figure)
    ax = figure.subplots()
    display = HeadSearchDisplay.from_estimator(model, ax=ax)
    figure.draw_without_rendering()
    box = ax.get_legend().get_window_extent()
    for key, line in display.lines_.items():
        if key in ("chosen", "lifted") or key in ("unfitted", "unmeasured"):
            continue
        points = line.get_transform().transform(line.get_xydata())
        inside = (
            (points[:, 0] >= box.x0) & (points[:, 0] <= box.x1)
            & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1)
        )
        assert not np.any(inside), key
    root = plt.figure(figsize=(8, 4), layout="constrained")
    sub_ax = root.subfigures(1, 2)[1].subplots()
    assert HeadSearchDisplay.from_estimator(model, ax=sub_ax).ax_ is sub_ax
    own = [r"$\frac{1}{n}\sum_i \ell_i$ of a long baseline", "my baseline\n(2025)"]
    _, users = plt.subplots()
    for label in own:
        users.plot([1, 5], [0.5, 0.5], label=label)
    HeadSearchDisplay.from_estimator(model, ax=users)
    texts = [text.get_text() for text in users.get_legend().get_texts()]
    assert texts[:2] == own
    plt.close("all")


def test_search_display_of_a_zero_model_says_it_is_zero():
    """Zero targets: no heads, whatever n_heads asked; the message said the
    count asked for was at least the lifted fit's."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4, 3))
    for n_heads in ("auto", 2):
        model = LinearAttentionRegressor(n_heads=n_heads).fit(X, np.zeros(30))
        with pytest.raises(ValueError, match="the lifted fit is zero: no heads"):
            HeadSearchDisplay.from_estimator(model)


def test_search_display_of_a_classifier_judged_on_squared_errors_says_so(
    monkeypatch,
):
    """A classifier whose rows partial_fit did not keep has its counts judged on
    the held-out squared errors of its class scores: the display labelled them
    a misclassification rate (of up to 1.0 and more), with a threshold a count
    "must be below"."""
    monkeypatch.setattr("sklearn_linattn._estimators.KEPT_ROWS_FLOATS", 0)
    rng = np.random.default_rng(0)
    X = random_sequences(rng, 600, 6, 2)
    scores = random_attention(rng, 2, 1).predict(X)[:, 0]
    y = (scores + 0.5 * scores.std() * rng.normal(size=scores.shape) > 0).astype(int)
    model = LinearAttentionClassifier()
    with pytest.warns(UserWarning, match="no longer keeps the training rows"):
        model.partial_fit(X, y, classes=[0, 1])
    search = model.head_search_
    assert any(count.criterion == "cv" for count in search.counts)
    display = HeadSearchDisplay.from_estimator(model)
    assert display.ax_.get_ylabel() == "cross-validated squared error"
    assert "must not exceed it" in display.lines_["threshold"].get_label()
    assert search.loss == "squared"
    # in memory, the same classifier is judged on misclassified rows
    fitted = LinearAttentionClassifier().fit(X, y)
    assert fitted.head_search_.loss == "misclassified"
    if any(count.criterion == "cv" for count in fitted.head_search_.counts):
        display = HeadSearchDisplay.from_estimator(fitted)
        assert display.ax_.get_ylabel() == "cross-validated\nmisclassification rate"


def test_search_display_of_noisy_heads_without_folds_says_not_judged():
    """``solver="cg"`` keeps no held-out folds: ``n_heads=1`` on noisy data is
    fitted and not judged, and was drawn as "left undecided (their fit so
    far)", as if the work limit had cut it short, against tol."""
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(300, 6, 4, n_heads=2, noise=0.3, random_state=1)
    model = LinearAttentionRegressor(solver="cg", n_heads=1).fit(X, y)
    assert model.head_search_.complete and model.head_search_.passes is None
    display = HeadSearchDisplay.from_estimator(model)
    assert display.lines_["undecided"].get_label() == (
        "LinearAttentionRegressor: k heads not judged (no held-out folds for noisy "
        "heads)"
    )
    assert "threshold" not in display.lines_  # tol is no test of noisy heads


def noisy_two_head_search():
    """The class docstring's fit: 2 heads of d = 4 with 5% noise; 1 head fails on
    its training error."""
    X, y, _ = make_random_mhla(300, 8, 4, n_heads=2, random_state=0)
    y = y + 0.05 * y.std() * np.random.default_rng(0).normal(size=y.shape)
    return LinearAttentionRegressor().fit(X, y).head_search_


def test_search_display_draws_failed_counts_in_their_own_color():
    """A count that failed after its first folds, or on the majority of the
    folds, can lie below its threshold; drawn in the passing counts' color it
    read as passing. Failed counts are drawn in a color apart from the counts'
    wherever they lie, also where a style or the axes' earlier lines make the
    counts red (the cycle's "C3" was then the counts' own color); undecided
    counts keep the counts' color."""
    from dataclasses import replace

    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    search = noisy_two_head_search()
    failed = next(c for c in search.counts if c.failed_on == "training")
    below = replace(
        failed, failed_on="majority", cv_error=0.9 * failed.threshold,
        training_error=0.8 * failed.threshold,
    )
    above = replace(
        failed, n_heads=failed.n_heads + 1, failed_on="refits",
        cv_error=1.5 * failed.threshold,
    )
    undecided = replace(
        failed, n_heads=failed.n_heads + 5, passes=None, criterion="linearized",
        failed_on=None, linearized_cv_error=failed.threshold,
    )
    _, with_lines = plt.subplots()
    for _ in range(3):  # the counts take the cycle's fourth color, "C3"
        with_lines.plot([0, 1], [0, 1])
    cases = [(search.counts, None), ((below, above, undecided), None)]
    cases.append(((below, above, undecided), with_lines))
    for counts, ax in cases:
        drawn = replace(search, counts=counts)
        lines = HeadSearchDisplay(drawn, tol=search.tol).plot(ax=ax).lines_
        passing = np.array(to_rgb(lines["counts"].get_color()))
        failing = [key for key in ("training", "majority", "refits") if key in lines]
        assert failing
        for key in failing:
            color = np.array(to_rgb(lines[key].get_color()))
            assert np.linalg.norm(color - passing) > 0.3, key
        if "undecided" in lines:
            assert lines["undecided"].get_color() == lines["counts"].get_color()
        if "majority" in lines:  # below its threshold, and apart all the same
            assert lines["majority"].get_ydata()[0] < below.threshold
            assert list(lines["refits"].get_xdata()) == [above.n_heads]


def test_search_display_is_logarithmic_where_errors_span_decades():
    """A count near interpolation at 4000 times the lifted fit's error set a
    linear y-axis on which every other count, the lifted fit and the thresholds
    sat on the floor (statsmodels' Nile series). Errors within two decades keep
    a linear axis; a zero error (no misclassified row) gives an axis linear
    below the smallest positive error; axes that share their y-axis with a
    user's plot keep its scale."""
    from dataclasses import replace

    import matplotlib.pyplot as plt

    search = noisy_two_head_search()
    failed = next(c for c in search.counts if c.failed_on == "training")
    display = HeadSearchDisplay(search, tol=search.tol).plot()
    assert display.ax_.get_yscale() == "linear"

    def spiked(factor, **changes):
        spike = replace(failed, failed_on="gcv", gcv_error=factor * search.cv_error)
        counts = tuple(spike if c is failed else c for c in search.counts)
        return replace(search, counts=counts, **changes), spike

    for factor, scale in ((4000.0, "log"), (20.0, "linear")):
        readout, spike = spiked(factor)
        display = HeadSearchDisplay(readout).plot()
        assert display.ax_.get_yscale() == scale
        assert display.lines_["gcv"].get_ydata()[0] == spike.gcv_error
    zero = replace(failed, n_heads=9, failed_on="majority", cv_error=0.0)
    readout, _ = spiked(4000.0)
    readout = replace(readout, counts=readout.counts + (zero,))
    assert HeadSearchDisplay(readout).plot().ax_.get_yscale() == "symlog"
    _, (users, empty) = plt.subplots(1, 2, sharey=True)
    users.plot([0, 1], [-1.0, 1.0])
    HeadSearchDisplay(spiked(4000.0)[0]).plot(ax=empty)
    assert users.get_yscale() == empty.get_yscale() == "linear"



def separable_classifier():
    """Two classes of a 2-head layer's output with a wide margin between them:
    no row misclassified, by any count or by the lifted fit."""
    X, y, _ = make_random_mhla(400, 8, 3, n_heads=2, random_state=0)
    keep = np.abs(y - np.median(y)) > y.std()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LinearAttentionClassifier().fit(
            X[keep], (y[keep] > np.median(y)).astype(int)
        )


def test_search_display_on_log_axes_draws_zero_errors():
    """On the user's logarithmic axes a classifier without misclassified rows
    drew nothing: every count, the lifted fit and the thresholds at zero were
    left out (with matplotlib's warning from this module). Zero errors make the
    axes linear below the smallest positive error drawn (below the lowest of
    the data they show, where they share their y-axis with a user's plot), and
    every error drawn is the search's."""
    from dataclasses import replace

    model = separable_classifier()
    search = model.head_search_
    assert search.cv_error == 0 and search.counts
    _, ax = plt.subplots()
    ax.set_yscale("log")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        display = HeadSearchDisplay.from_estimator(model, ax=ax)
    assert ax.get_yscale() == "linear"
    low, high = ax.get_ylim()
    assert low < 0 < high
    assert display.lines_["lifted"].get_ydata()[0] == search.cv_error
    assert drawn_counts(display) == {c.n_heads for c in search.counts}
    # one zero among positive errors: linear below the smallest positive one
    failed = replace(search.counts[0], cv_error=0.02, threshold=0.009)
    passed = replace(
        search.counts[-1], n_heads=failed.n_heads + 1, passes=True,
        failed_on=None, criterion="cv", cv_error=0.0, threshold=0.009,
    )
    readout = replace(
        search, counts=(failed, passed), cv_error=0.01, cv_standard_error=0.003
    )
    _, ax = plt.subplots()
    ax.set_yscale("log")
    display = HeadSearchDisplay(readout, error_name="misclassification rate").plot(
        ax=ax
    )
    assert ax.get_yscale() == "symlog"
    assert ax.yaxis.get_transform().linthresh == 0.009
    assert ax.get_ylim()[0] < 0
    # axes sharing the y-axis of a user's logarithmic plot: theirs kept in view
    _, (users, empty) = plt.subplots(1, 2, sharey=True)
    users.semilogy([0, 1], [1e-4, 1.0])
    HeadSearchDisplay(readout, error_name="misclassification rate").plot(ax=empty)
    assert users.get_yscale() == empty.get_yscale() == "symlog"
    assert empty.yaxis.get_transform().linthresh <= 1e-4


def legend_box_in_inches(ax):
    """The legend's and its figure's boxes, in inches from the figure's corner."""
    figure = ax.figure
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = ax.get_legend().get_window_extent(renderer)
    return box.transformed(figure.dpi_scale_trans.inverted()), figure.bbox_inches


def test_search_display_plotted_twice_on_its_axes_draws_once():
    """``display.plot(ax=ax)`` a second time on the same axes drew every line,
    the band and every legend entry twice (14 entries of 7), and raised the
    y-axis again to make room for the doubled legend: it replaces the display's
    own artists and leaves the user's."""
    model = search_decided_three_ways()
    _, ax = plt.subplots()
    ax.plot([1, 5], [0.5, 0.5], label="mine")
    display = HeadSearchDisplay.from_estimator(model, ax=ax)
    first = (len(ax.lines), len(ax.patches), ax.get_ylim(),
             [text.get_text() for text in ax.get_legend().get_texts()])
    assert display.plot(ax=ax) is display
    again = (len(ax.lines), len(ax.patches), ax.get_ylim(),
             [text.get_text() for text in ax.get_legend().get_texts()])
    assert again == first
    assert "mine" in again[-1]
    assert all(line.axes is ax for line in display.lines_.values())


def test_search_display_plotted_again_keeps_its_colors():
    """Drawn again on its axes, the display took the next color of the axes'
    cycle: its counts turned from blue to orange (and the failed counts'
    color, chosen apart from theirs, could change too)."""
    display = HeadSearchDisplay.from_estimator(search_decided_three_ways())
    first = {key: line.get_color() for key, line in display.lines_.items()}
    display.plot(ax=display.ax_)
    assert {key: line.get_color() for key, line in display.lines_.items()} == first


def test_search_display_plotted_again_after_its_artists_left_the_axes():
    """Drawn again on its axes after ``ax.clear()``, or after the user removed
    one of its lines, the display raised (NotImplementedError "cannot remove
    artist", ValueError "list.remove(x)") removing artists no longer there:
    it draws itself once, as on fresh axes."""
    model = search_decided_three_ways()
    _, fresh = plt.subplots()
    HeadSearchDisplay.from_estimator(model, ax=fresh)
    for undo in ("clear", "remove"):
        _, ax = plt.subplots()
        display = HeadSearchDisplay.from_estimator(model, ax=ax)
        if undo == "clear":
            ax.clear()
        else:
            display.lines_["lifted"].remove()
        display.plot(ax=ax)
        assert (len(ax.lines), len(ax.patches)) == (
            len(fresh.lines), len(fresh.patches)
        ), undo
        assert all(line.axes is ax for line in display.lines_.values())


def test_search_display_plotted_again_keeps_the_limits_the_user_set():
    """Drawn again on the user's axes, the display autoscaled them (to undo
    the room it made above the counts): the limits the user had set, (0, 10)
    and (0, 0.01), which the first draw kept, became the data's. The axes get
    their view from before the display drew, then the display draws as the
    first time."""
    _, ax = plt.subplots(figsize=(6, 4))
    ax.plot([1, 2], [0.001, 0.002], label="mine")
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 0.01)
    display = HeadSearchDisplay.from_estimator(search_decided_three_ways(), ax=ax)
    first = ax.get_xlim(), ax.get_ylim()
    assert first[0] == (0, 10)
    display.plot(ax=ax)
    assert (ax.get_xlim(), ax.get_ylim()) == first


@pytest.mark.parametrize(
    "size, layout", [((3.0, 3.0), None), ((2.6, 2.6), "constrained")]
)
def test_search_display_on_small_axes_fits_its_legend_in_them(size, layout):
    """On axes of 2 to 2.5 inches the wrapped legend, in 8 points, was up to
    1.7 times the axes' height and left the figure by up to 0.7 inches: its
    type is made smaller till it fits in the axes' height."""
    _, ax = plt.subplots(figsize=size, layout=layout)
    HeadSearchDisplay.from_estimator(search_decided_three_ways(), ax=ax)
    for dpi in (72, 100, 200):
        ax.figure.set_dpi(dpi)
        box, whole = legend_box_in_inches(ax)
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1, dpi
        assert whole.y0 <= box.y0 and box.y1 <= whole.y1, dpi
        axes = ax.get_window_extent().transformed(ax.figure.dpi_scale_trans.inverted())
        assert box.height <= axes.height, dpi
        assert ax.get_legend().get_texts()[0].get_fontsize() >= 5.5


@pytest.mark.parametrize("layout", [None, "constrained"])
def test_search_display_on_axes_too_small_for_its_legend_says_so(layout):
    """On a figure of 2 x 2 inches the legend, twice the axes' height, left the
    figure by 1.7 inches; in 5.5-point type it still does not fit: it is left
    out, with a warning saying how to draw it."""
    _, ax = plt.subplots(figsize=(2, 2), layout=layout)
    model = search_decided_three_ways()
    with pytest.warns(UserWarning, match=r"legend does not fit .* display.ax_.legend"):
        display = HeadSearchDisplay.from_estimator(model, ax=ax)
    assert ax.get_legend() is None and "chosen" in display.lines_


def test_search_display_leaves_matplotlibs_layout_warning_to_the_users_draw():
    """On a constrained grid too small for its axes, the display's own layouts
    (to measure its legend) repeated matplotlib's "constrained_layout not
    applied" warning, naming the display's module; only its own warning, at
    the user's line, is left."""
    _, axes = plt.subplots(3, 3, figsize=(0.8, 0.8), layout="constrained")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        HeadSearchDisplay.from_estimator(search_decided_three_ways(), ax=axes[0, 0])
    assert [str(w.message)[:34] for w in caught] == [
        "HeadSearchDisplay: the legend does"
    ]
    assert caught[0].filename == __file__


def test_search_display_too_big_for_the_axes_keeps_the_users_legend():
    """Where the display's legend is left out (axes too small for it), the
    user's own legend went with it: the display had replaced it by one of
    both's entries, then removed that. The user's entries keep a legend."""
    _, ax = plt.subplots(figsize=(2, 2))
    ax.plot([1, 2], [0.1, 0.2], label="mine")
    ax.legend()
    with pytest.warns(UserWarning, match="legend does not fit"):
        HeadSearchDisplay.from_estimator(search_decided_three_ways(), ax=ax)
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["mine"]


def test_search_display_wraps_long_labels_below_its_own_axes():
    """Below the display's own axes the labels are wrapped to the figure's
    width; the display's artists were passed as the names of its lines, so
    none matched a legend entry and a long label ran past the figure (923 px
    of legend on a 600 px figure, and constrained layout collapsed)."""
    search = search_decided_three_ways().head_search_
    long = dataclasses.replace(search, criterion="because " * 16)
    display = HeadSearchDisplay(long).plot()
    chosen = [
        text.get_text() for text in display.ax_.get_legend().get_texts()
        if text.get_text().startswith("chosen")
    ]
    assert len(chosen) == 1 and "\n" in chosen[0]
    display.figure_.draw_without_rendering()
    box = display.ax_.get_legend().get_window_extent()
    assert box.width < 1.1 * display.figure_.bbox.width


def test_search_display_under_a_large_style_keeps_its_legend_in_the_figure():
    """Under seaborn's poster style the legend below the axes was centered on
    the axes, which the large y-label pushes right: at 300 dpi its widest
    label reached the figure's right edge. It is centered on the figure."""
    with plt.style.context("seaborn-v0_8-poster"):
        display = HeadSearchDisplay.from_estimator(search_decided_three_ways())
    for dpi in (100, 300):
        display.figure_.set_dpi(dpi)
        box, whole = legend_box_in_inches(display.ax_)
        assert box.x0 >= whole.x0 + 0.1 and box.x1 <= whole.x1 - 0.1, dpi


def test_search_display_wraps_alike_on_every_panel_of_a_grid():
    """On a constrained 2 x 2 grid the labels were wrapped to each panel's
    width when drawn, which the layout changes as later panels get their
    labels: four displays of one search wrapped three ways, the first drawn
    legend was wider than its axes, and the room made above the counts for the
    legend differed (the y-axis' top from 1.50 to 1.67). The panels' grid
    cells are the measure, whichever is drawn first."""
    model = search_decided_three_ways()
    texts, sizes = [], []
    for order in ([0, 1, 2, 3], [3, 2, 1, 0]):
        figure, axes = plt.subplots(2, 2, figsize=(6.4, 4.8), layout="constrained")
        for i in order:
            HeadSearchDisplay.from_estimator(model, ax=axes.flat[i])
        figure.canvas.draw()
        for ax in axes.flat:
            legend = ax.get_legend()
            texts.append([text.get_text() for text in legend.get_texts()])
            sizes.append((legend.get_texts()[0].get_fontsize(), *ax.get_ylim()))
            assert legend.get_window_extent().width <= ax.get_window_extent().width
    assert all(t == texts[0] for t in texts)
    assert all(s == pytest.approx(sizes[0]) for s in sizes)


# --- HeadSearchDisplay: names, styles, several models on one axes --------------


def search_with_counts(model, n_heads):
    """The model's head search with its first count drawn on the counts' line
    copied to each of ``n_heads`` (at errors and distances that fall with k)."""
    search = model.head_search_
    first = next(
        c for c in sorted(search.counts, key=lambda c: c.n_heads)
        if (c.criterion == "cv" and np.isfinite(c.cv_error))
        or (c.criterion == "tol" and c.passes is not None)
    )
    counts = tuple(
        dataclasses.replace(
            first,
            n_heads=k,
            cv_error=first.cv_error * (1 + 1 / k),
            relative_distance=first.relative_distance * (1 + 1 / k),
        )
        for k in n_heads
    )
    return dataclasses.replace(search, counts=counts)


def exact_search():
    X, y, _ = make_random_mhla(300, 8, 4, n_heads=2, random_state=0)
    return LinearAttentionRegressor().fit(X, y)


@pytest.mark.parametrize("fit", [noisy_search, exact_search])
def test_search_display_joins_only_adjacent_counts(fit):
    """Counts probed by doubling (1, 2, 4, 8) were joined by one line, a trend
    through counts never measured: each count has its marker, and the line
    joins only counts one apart."""
    model = fit()
    search = search_with_counts(model, [1, 2, 4, 8])
    display = HeadSearchDisplay(search, tol=model.tol).plot()
    x = display.lines_["counts"].get_xdata()
    y = display.lines_["counts"].get_ydata()
    np.testing.assert_array_equal(x[np.isfinite(x)], [1, 2, 4, 8])
    assert display.lines_["counts"].get_marker() == "o"
    # the segments drawn: between consecutive finite points only
    joined = [
        (x[i], x[i + 1]) for i in range(len(x) - 1)
        if np.isfinite(x[i]) and np.isfinite(x[i + 1])
    ]
    assert joined == [(1, 2)]
    assert np.array_equal(np.isnan(x), np.isnan(y))


def test_search_display_names_its_legend_entries_by_the_estimator():
    """As scikit-learn's displays, ``name`` (by default the estimator's class
    name) is in the legend entries, so two models can be told apart."""
    model = noisy_search()
    display = HeadSearchDisplay.from_estimator(model)
    drawn = [*display.lines_.values(), display.band_]
    assert all(
        artist.get_label().startswith("LinearAttentionRegressor: ")
        for artist in drawn if not artist.get_label().startswith("_")
    )
    lifted = display.lines_["lifted"].get_label()
    assert lifted == "LinearAttentionRegressor: lifted fit"
    # one model on the axes: its name is the legend's title, not repeated
    legend = display.ax_.get_legend()
    assert legend.get_title().get_text() == "LinearAttentionRegressor"
    assert "lifted fit" in [text.get_text() for text in legend.get_texts()]
    # a pipeline, and a name given
    pipeline = make_pipeline(PositionalEncoding(), LinearAttentionRegressor())
    X, y, _ = make_random_mhla(200, 6, 3, n_heads=1, noise=0.1, random_state=0)
    display = HeadSearchDisplay.from_estimator(pipeline.fit(X, y))
    assert display.lines_["chosen"].get_label().startswith("LinearAttentionRegressor: ")
    display = HeadSearchDisplay.from_estimator(model, name="ridge-free")
    assert display.lines_["lifted"].get_label() == "ridge-free: lifted fit"
    # from a readout: unnamed, unless plot (or the constructor) names it
    display = HeadSearchDisplay(model.head_search_).plot()
    assert display.lines_["lifted"].get_label() == "lifted fit"
    assert not display.ax_.get_legend().get_title().get_text()
    display = HeadSearchDisplay(model.head_search_, name="a").plot(name="b")
    assert display.lines_["lifted"].get_label() == "b: lifted fit"
    with pytest.raises(TypeError, match="name must be a string or None, got 3"):
        HeadSearchDisplay(model.head_search_).plot(name=3)


def test_search_display_passes_its_keyword_dicts_to_the_artists():
    model = noisy_search()
    line_kw = {"color": "tab:red", "linestyle": ":", "linewidth": 3}
    display = HeadSearchDisplay.from_estimator(
        model,
        line_kw=line_kw,
        lifted_kw={"color": "tab:green", "linestyle": "-"},
        fill_between_kw={"color": "tab:olive", "alpha": 0.4},
        threshold_kw={"color": "tab:cyan", "markersize": 20},
        chosen_kw={"color": "tab:brown", "label": "my choice"},
    )
    lines = display.lines_
    counts = lines["counts"]
    assert (counts.get_color(), counts.get_linestyle(), counts.get_linewidth()) == (
        "tab:red", ":", 3
    )
    assert line_kw == {"color": "tab:red", "linestyle": ":", "linewidth": 3}
    assert (lines["lifted"].get_color(), lines["lifted"].get_linestyle()) == (
        "tab:green", "-"
    )
    from matplotlib.colors import to_rgba

    assert display.band_.get_facecolor() == pytest.approx(to_rgba("tab:olive", 0.4))
    assert lines["threshold"].get_color() == "tab:cyan"
    assert lines["threshold"].get_markersize() == 20
    assert lines["threshold"].get_marker() == "_"  # the defaults not given kept
    # a label of the user's is theirs, not named
    assert lines["chosen"].get_label() == "my choice"
    assert lines["chosen"].get_color() == "tab:brown"
    # failed counts in a color apart from the red counts
    failed = [lines[k] for k in ("training", "refits", "stopped") if k in lines]
    assert failed and all(line.get_color() != "tab:red" for line in failed)
    with pytest.raises(TypeError, match="line_kw must be a dict of .*got str"):
        HeadSearchDisplay.from_estimator(model, line_kw="red")


def test_two_search_displays_on_one_axes_keep_both():
    """A second model's search drawn on the first's axes keeps the first's
    lines and legend entries; its lifted fit, band, thresholds and chosen
    count are in its counts' color (both gray and black could not be told
    apart); drawn again, a display replaces only its own artists."""
    first_model = noisy_search()
    second_model = noisy_search(alpha=1e-2)
    _, ax = plt.subplots(figsize=(7, 6))
    first = HeadSearchDisplay.from_estimator(first_model, ax=ax, name="first")
    second = HeadSearchDisplay.from_estimator(second_model, ax=first.ax_, name="second")

    def artists(display):
        return [*display.lines_.values(), display.band_]

    assert all(artist.axes is ax for artist in artists(first) + artists(second))
    texts = [text.get_text().replace("\n", " ") for text in ax.get_legend().get_texts()]
    for name in ("first", "second"):
        assert f"{name}: lifted fit" in texts
        assert any(text.startswith(f"{name}: k heads") for text in texts)
    assert not ax.get_legend().get_title().get_text()  # two models: no title
    color = second.lines_["counts"].get_color()
    assert color != first.lines_["counts"].get_color()
    for key in ("lifted", "threshold", "chosen"):
        assert second.lines_[key].get_color() == color
    assert first.lines_["lifted"].get_color() == "gray"
    # drawn again on its axes: the first replaces its own, the second's stay
    before = len(ax.lines)
    first.plot(ax=ax)
    assert len(ax.lines) == before
    assert all(artist.axes is ax for artist in artists(first) + artists(second))
    texts = [text.get_text().replace("\n", " ") for text in ax.get_legend().get_texts()]
    assert texts.count("first: lifted fit") == texts.count("second: lifted fit") == 1


def test_a_second_search_on_a_displays_own_figure_keeps_the_legend_below():
    """On the figure from_estimator made (its legend below the axes), a second
    model's search put the legend of both inside the axes, over the counts:
    it stays below, the figure taller by the entries added."""
    first = HeadSearchDisplay.from_estimator(noisy_search(), name="first")
    height = first.figure_.get_figheight()
    HeadSearchDisplay.from_estimator(
        noisy_search(alpha=1e-2), ax=first.ax_, name="second"
    )
    box, whole = legend_box_in_inches(first.ax_)
    axes = first.ax_.get_window_extent().transformed(
        first.figure_.dpi_scale_trans.inverted()
    )
    assert box.y1 <= axes.y0 and whole.y0 <= box.y0
    assert first.figure_.get_figheight() > height
    texts = [t.get_text() for t in first.ax_.get_legend().get_texts()]
    assert "first: lifted fit" in texts and "second: lifted fit" in texts
