"""
Choosing alpha, and sample weights
==================================

:class:`~sklearn_linattn.LinearAttentionRegressorCV` chooses the ridge penalty
``alpha`` like :class:`~sklearn.linear_model.RidgeCV`, from one pass over the data:
the lifted least-squares problem is fixed by statistics that add up over sequences
and do not depend on ``alpha``, so every ``alpha`` of the grid is scored from one
eigendecomposition per training set. With ``cv=None`` that is exact leave-one-out;
with ``cv=5`` each fold's training statistics are the sum of the other folds'.
After the choice the estimator is a fitted
:class:`~sklearn_linattn.LinearAttentionRegressor` for ``alpha_``: heads, certificate.

The second half shows ``sample_weight``: integer weights are repeated sequences, a
zero weight removes a sequence (from the fit and from the certificate).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, KFold
from sklearn_linattn import LinearAttentionRegressor, LinearAttentionRegressorCV
from sklearn_linattn.datasets import make_random_mhla

# %%
# Noisy targets from a 2-head model
# ---------------------------------
# Few sequences for the 40 lifted features of ``d = 4``, and noise as large as the
# signal: the penalty matters. ``alpha`` is added to the lifted Gram matrix, whose
# entries grow with the number of sequences and the sixth power of the token
# scale, so the default grid (``alphas="auto"``) is relative to it: 0 and
# ``np.logspace(-6, 2, 9)`` times the mean diagonal of that Gram, ``alphas_``
# after the fit. An explicit grid is absolute, as in ``RidgeCV``.
rng = np.random.default_rng(0)
X, y_clean, truth = make_random_mhla(80, 6, 4, n_heads=2, random_state=0)
y = y_clean + y_clean.std() * rng.normal(size=y_clean.shape)

loo = LinearAttentionRegressorCV().fit(X, y)  # cv=None: leave-one-out
kfold = LinearAttentionRegressorCV(cv=KFold(5)).fit(X, y)
alphas = kfold.alphas_  # the same grid for both: the Gram of all the sequences
print(f"grid: {alphas.min():g} and {alphas[1]:.3g} ... {alphas.max():.3g}")
print(
    f"leave-one-out: alpha_={loo.alpha_:.3g}; 5-fold: alpha_={kfold.alpha_:.3g}"
)
print(f"heads of the chosen model: {kfold.n_heads_}")

# %%
# The same choice as a grid search
# --------------------------------
# ``GridSearchCV`` fits the plain estimator once per alpha and fold (50 fits here)
# and reaches the same scores; ``benchmarks/bench_cv.py`` times both on 20000
# sequences.
search = GridSearchCV(
    LinearAttentionRegressor(n_heads=None),
    {"alpha": alphas},
    cv=KFold(5),
    scoring="neg_mean_squared_error",
).fit(X, y)
print("GridSearchCV alpha:", search.best_params_["alpha"])
difference = np.abs(search.cv_results_["mean_test_score"] - kfold.cv_scores_)
print(f"largest score difference: {difference.max():.1e}")

fig, ax = plt.subplots(figsize=(6, 3.5))  # alpha=0 left out of the log axis
ax.semilogx(
    alphas[1:], -loo.cv_scores_[1:], "o-", label="leave-one-out (cv=None)"
)
ax.semilogx(alphas[1:], -kfold.cv_scores_[1:], "s-", label="5-fold")
ax.semilogx(
    alphas[1:],
    -search.cv_results_["mean_test_score"][1:],
    "k+",
    markersize=12,
    label="GridSearchCV, 5-fold",
)
ax.axvline(kfold.alpha_, color="gray", linestyle=":", label="alpha_ chosen")
ax.set_xlabel("alpha")
ax.set_ylabel("cross-validated MSE")
ax.legend()
fig.tight_layout()

# %%
# Sample weights
# --------------
# Weights multiply each sequence's squared error. Integer weights equal repeating
# the sequences; a zero weight removes one. Here a fifth of the sequences have
# corrupted targets: giving them weight zero recovers the noiseless 2-head model
# from the rest (to the printed relative distance), and the certificate counts
# only the sequences with a positive weight.
X, y, truth = make_random_mhla(300, 6, 4, n_heads=2, random_state=1)
corrupted = rng.random(300) < 0.2
y_observed = np.where(corrupted, y + 10 * y.std() * rng.normal(size=300), y)
weights = np.where(corrupted, 0.0, 1.0)

unweighted = LinearAttentionRegressorCV().fit(X, y_observed)
weighted = LinearAttentionRegressorCV().fit(
    X, y_observed, sample_weight=weights
)
scale = np.linalg.norm(truth.lifted_coef())
for name, model in [("unweighted", unweighted), ("zero weights", weighted)]:
    print(
        f"{name:12s}: alpha_={model.alpha_:.3g}, heads {model.n_heads_}, "
        f"distance {model.attention_.distance(truth) / scale:.1e}, "
        f"certified on {model.certificate_.n_samples}"
    )

counts = rng.integers(1, 4, size=300)
by_weight = LinearAttentionRegressor(alpha=1.0, n_heads=None).fit(
    X, y_observed, sample_weight=counts
)
by_repeat = LinearAttentionRegressor(alpha=1.0, n_heads=None).fit(
    np.repeat(X, counts, axis=0), np.repeat(y_observed, counts)
)
gap = np.abs(by_weight.coef_ - by_repeat.coef_).max()
print(
    f"integer weights vs repeated sequences: coefficients differ by {gap:.1e}"
)
