"""
How many heads do the data support?
===================================

``n_heads="auto"`` returns the fewest heads whose training loss is not
significantly worse than the lifted fit's (an F-test whose noise scale comes from
the fits without each of five folds, so it holds when the noise depends on the
input). Here we check that choice against the held-out error of the best
``k``-head model for every ``k``, computed with scikit-learn's
:func:`~sklearn.model_selection.validation_curve` over ``n_heads``.

The data: a 3-head layer with 2 outputs (``d = 6``), targets with noise whose size
grows with the query's norm.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import KFold, validation_curve
from sklearn_linattn import LinearAttentionRegressor, MultiHeadLinearAttention

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
print(
    f"default: {model.n_heads_} heads ({search.criterion}); counts probed "
    f"{list(search.counts_tried)}; F = {search.f_statistic:.2f} "
    f"(critical {search.f_critical:.2f})"
)

# %%
# Held-out error of the best k-head model
# ---------------------------------------
counts = np.arange(1, 9)
cv = KFold(5, shuffle=True, random_state=0)
_, test_scores = validation_curve(
    LinearAttentionRegressor(),
    X,
    y,
    param_name="n_heads",
    param_range=counts,
    cv=cv,
    scoring="neg_mean_squared_error",
)
held_out = -test_scores.mean(axis=1)
spread = test_scores.std(axis=1) / np.sqrt(cv.get_n_splits())
lifted = -validation_curve(
    LinearAttentionRegressor(),
    X,
    y,
    param_name="n_heads",
    param_range=[None],
    cv=cv,
    scoring="neg_mean_squared_error",
)[1].mean()
for k, error in zip(counts, held_out, strict=True):
    print(f"{k} heads: held-out MSE {error:.5f}")
print(f"lifted fit (every head): {lifted:.5f}")

fig, ax = plt.subplots(figsize=(6, 3.6))
ax.errorbar(
    counts,
    held_out,
    yerr=spread,
    marker="o",
    capsize=3,
    label="best k-head model",
)
ax.axhline(
    lifted, color="gray", linestyle="--", label="lifted fit (no head limit)"
)
ax.axvline(
    model.n_heads_,
    color="C3",
    linestyle=":",
    label=f'n_heads="auto": {model.n_heads_}',
)
ax.set_xlabel("number of heads k")
ax.set_ylabel("held-out mean squared error")
ax.set_yscale("log")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# Fewer heads than the data came from leave signal out (the error is large);
# more heads than needed only fit noise, so the held-out error rises slowly
# towards the lifted fit's. The default's count sits at the knee.
