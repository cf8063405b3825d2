"""
Attention in scikit-learn's tools
=================================

The estimators take 2-D rows (each a sequence flattened token by token, with
``token_dim``) so they fit in ``Pipeline``, ``GridSearchCV`` and ``cross_val_score``
like any regressor; and :class:`~sklearn_linattn.LiftedAttentionFeatures` hands the
lifted features to any linear model.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn_linattn import LiftedAttentionFeatures, LinearAttentionRegressor
from sklearn_linattn.datasets import make_random_mhla

d, n_tokens = 3, 10
X, y, truth = make_random_mhla(
    400, n_tokens, d, n_heads=2, noise=0.05, random_state=0
)
rows = X.reshape(
    len(X), -1
)  # (400, 30): what a DataFrame of sequences looks like

# %%
# Cross-validation and a grid search over the ridge penalty
# ---------------------------------------------------------
scores = cross_val_score(LinearAttentionRegressor(token_dim=d), rows, y, cv=5)
print(f"5-fold R^2: {scores.mean():.3f} +- {scores.std():.3f}")

search = GridSearchCV(
    LinearAttentionRegressor(token_dim=d, n_heads=None),
    {"alpha": np.logspace(-4, 3, 15)},
    cv=5,
).fit(rows, y)
print(f"best alpha: {search.best_params_['alpha']:.3g}")

# %%
# In a pipeline, after a preprocessing step
# -----------------------------------------
# Scaling every token by ``c`` scales the output by ``c^3``; the pipeline learns the
# rescaled function.
pipeline = make_pipeline(
    FunctionTransformer(lambda r: 2.0 * r),
    LinearAttentionRegressor(token_dim=d),
).fit(rows, y)
print(f"pipeline R^2 on training data: {pipeline.score(rows, y):.3f}")

# %%
# The lifted features with any linear model
# -----------------------------------------
features = LiftedAttentionFeatures(token_dim=d).set_output(transform="pandas")
print(features.fit_transform(rows).iloc[:2, :6])
ridge = make_pipeline(LiftedAttentionFeatures(token_dim=d), RidgeCV()).fit(
    rows, y
)
print(f"RidgeCV on lifted features, R^2: {ridge.score(rows, y):.3f}")

# %%
# Validation curve of the grid search
# -----------------------------------
fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogx(
    search.param_grid["alpha"], search.cv_results_["mean_test_score"], "o-"
)
ax.set_xlabel("alpha (ridge penalty on the lifted coefficients)")
ax.set_ylabel("mean 5-fold R^2")
ax.set_title("GridSearchCV over alpha")
fig.tight_layout()
plt.show()
