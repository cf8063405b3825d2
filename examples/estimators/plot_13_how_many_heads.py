"""
How many heads do the data support?
===================================

``n_heads="auto"`` returns the fewest heads whose model is not clearly worse
than the lifted fit on held-out data: a count ``k`` passes when the
cross-validated error of ``n_heads=k`` over five folds of the sequences
(dealt in turn, one by one and after the 40th in runs of consecutive
sequences; each fold refitted as ``n_heads=k`` fits it) is at most its
threshold, and on a majority of the folds its error is at most the lifted
fit's on that fold, lowered by the same factor. The threshold is the lifted
fit's cross-validated error, lowered by how much more the lifted fit, with more
degrees of freedom, gains from all the rows than from a fold's 80% (theory
page, :ref:`how-many-heads`). With several outputs, as here, a count also fails
when it is clearly worse than the lifted fit on one output, and near
interpolation generalized cross-validation checks it too. On exact data the count
is the fewest heads that reproduce the lifted fit within ``tol``.
:class:`~sklearn_linattn.HeadSearchDisplay` draws that evidence from
``head_search_``.

The data: a 3-head layer with 2 outputs (``d = 6``), targets with noise whose
size grows with the query's norm.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn_linattn import (
    HeadSearchDisplay,
    LinearAttentionRegressor,
    MultiHeadLinearAttention,
)

rng = np.random.default_rng(0)
d, n_heads, n_outputs = 6, 3, 2
truth = MultiHeadLinearAttention(
    rng.normal(size=(n_heads, n_outputs, d)) / np.sqrt(d),
    rng.normal(size=(n_heads, d, d)) / np.sqrt(d),
)
X = rng.normal(size=(500, 16, d)) / 4
y = truth.predict(X)
size = np.linalg.norm(X[:, -1], axis=1) ** 2
y = y + 0.2 * y.std(axis=0) * (size / size.mean())[:, None] * rng.normal(
    size=y.shape
)

model = LinearAttentionRegressor().fit(X, y)
search = model.head_search_
print(f"default: {model.n_heads_} heads ({search.criterion})")
print(
    f"lifted fit: cross-validated error {search.cv_error:.3g} "
    f"+- {search.cv_standard_error:.2g}"
)
for count in search.counts:
    verdict = {True: "passes", False: "fails", None: "undecided"}[count.passes]
    if count.failed_on is not None:  # the test that failed it
        verdict += f" ({count.failed_on})"
    if np.isfinite(count.cv_error):
        within = f"{count.folds_within} of 5 folds no worse"
        error = f"CV {count.cv_error:.3g} ({within})"
    elif count.folds_refitted is not None:
        error = f"failed by its first {count.folds_refitted} folds' refits"
    elif np.isfinite(count.linearized_cv_error):
        error = f"linearized refits {count.linearized_cv_error:.3g}"
    else:
        error = f"training {count.training_error:.3g}"
    threshold = f"threshold {count.threshold:.3g}"
    heads = "1 head" if count.n_heads == 1 else f"{count.n_heads} heads"
    print(f"{heads}: {error}, {threshold}: {verdict}")

# %%
# The counts the search fitted
# ----------------------------
# A held-out error is at least the training error, so a count whose training
# error is already above its threshold (black dashes) fails without
# refitting the folds (triangles up). The search finds the fewest count that its
# training error does not reject (1, 2, 4, ..., then bisection), then goes up
# one count at a time: each fold's refit linearized at the full fit (one
# Gauss-Newton step, cheap, but it has seen every fold) orders the folds, worst
# first (with at least 10 rows per lifted feature, a count it passes on every
# fold passes), and the count is refitted on each fold from the fold's own
# starts (circles), which decides; a count its first folds' refits already fail,
# whatever the others hold, is drawn at its linearized error (crosses), which
# can lie below its threshold: counts that failed are drawn in red wherever they
# lie. Every count below the chosen one (the black dash-dot line) that was
# fitted fails. The counts' line joins adjacent counts only: a count the search
# skipped (doubling from 1 to 4 skips 3) has no error to draw a trend through.
display = HeadSearchDisplay.from_estimator(model)
display.ax_.set_title("the head search of n_heads='auto'")
plt.show()

# %%
# Every count, for comparison
# ---------------------------
# ``n_heads=k`` runs the same fit the search runs for ``k`` and reports its
# verdict too: fewer heads than the data came from leave signal out; more only
# fit noise, and their held-out error stays near the lifted fit's. The
# linearized refits are drawn for every count; they never fail a count, and
# pass one alone only with ten rows per lifted feature or more (here 500
# sequences for 126 lifted features: fewer), so every count is refitted on
# each fold.
counts = range(1, 7)
fixed = [
    LinearAttentionRegressor(n_heads=k).fit(X, y).head_search_ for k in counts
]
fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
ax.plot(
    counts,
    [fit.counts[0].linearized_cv_error for fit in fixed],
    marker="v",
    label="k heads, linearized refits",
)
ax.plot(
    counts,
    [fit.counts[0].cv_error for fit in fixed],
    marker="o",
    label="k heads, refitted on each fold",
)
ax.plot(
    counts,
    [fit.counts[0].threshold for fit in fixed],
    color="black",
    marker="_",
    markersize=12,
    linestyle="none",
    label="threshold of k heads",
)
ax.axhline(search.cv_error, color="gray", linestyle="--", label="lifted fit")
ax.axvline(model.n_heads_, color="C3", linestyle="-.", label="n_heads='auto'")
ax.set_xlabel("number of heads k")
ax.set_ylabel("cross-validated squared error")
ax.set_yscale("log")
ax.legend()
plt.show()
