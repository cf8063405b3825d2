"""
Real sequences: where one layer of linear attention fits, and where it does not
================================================================================

Two small benchmarks on real data that ships inside installed packages, with
scikit-learn baselines in the same run (the documentation page "Real data" puts
them next to a larger one on aeon's time-series classification sets):

* **Yearly sunspot numbers** 1700-2008 (bundled with statsmodels): forecast next
  year's number from the 16 years before it, trained on the years up to 1920 and
  tested on the rest. Its dynamics are close to linear in the lags, which ridge on
  the lagged values captures; attention, a cubic model of the window, has no
  advantage to offer and did not beat it here.
* **Japanese vowels** (bundled with aeon, skipped when aeon is not installed): 12
  cepstral coefficients over 7 to 29 frames per utterance, nine speakers. Which
  speaker spoke depends much on how the coefficients vary together over the
  utterance, which ``S = Z^T Z`` holds; the series have different lengths, which
  zero padding handles exactly.

Univariate series are turned into tokens of a few consecutive values
(``SeriesToTokens(window=2)``): scalar tokens would leave the model one lifted
feature. ``alpha`` is chosen by leave-one-out cross-validation on the training data
(``LinearAttentionRegressorCV``), over a grid wide enough that the choice is inside
it; the regressor fits an intercept (``fit_intercept=True``), as for any real
targets that are not centered.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import statsmodels.api as sm
from sklearn.linear_model import RidgeClassifierCV, RidgeCV
from sklearn.metrics import r2_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn_linattn import (
    LinearAttentionClassifierCV,
    LinearAttentionRegressorCV,
)
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
)

alphas = np.logspace(-4, 6, 21)

# %%
# Sunspots: a series whose dynamics are nearly linear in the lags
# ---------------------------------------------------------------
data = sm.datasets.sunspots.load_pandas().data
years = data["YEAR"].to_numpy().astype(int)
values = data["SUNACTIVITY"].to_numpy()
lags = 16
windows = np.stack([values[t - lags : t] for t in range(lags, len(values))])
target, target_years = values[lags:], years[lags:]
train = target_years <= 1920
scale = values[: lags + train.sum()].std()  # from the training years only
windows, target = windows / scale, target / scale
print(
    f"{train.sum()} training windows (to 1920), {(~train).sum()} test windows"
)

forecasters = {
    "ridge on the 16 lags": RidgeCV(alphas=alphas),
    "attention, 8 tokens of 2 years": make_pipeline(
        SeriesToTokens(window=2),  # windows are univariate series: (n, 16)
        # 8 positions, a constant: d = 11; windows of one length have no
        # padding (a window starting with zeros starts with values)
        PositionalEncoding(constant=True, padding=None),
        LinearAttentionRegressorCV(
            alphas=alphas, n_heads=None, fit_intercept=True
        ),
    ),
}
forecasts = {}
for name, model in forecasters.items():
    start = time.perf_counter()
    model.fit(windows[train], target[train])
    forecasts[name] = model.predict(windows[~train])
    seconds = time.perf_counter() - start
    score = r2_score(target[~train], forecasts[name])
    print(f"{name:32s} test R^2 {score:.3f}  ({seconds:.2f} s)")
attention = forecasters["attention, 8 tokens of 2 years"][-1]
print(f"attention: d = {attention.token_dim_}, alpha = {attention.alpha_:.3g}")

fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(
    target_years[~train], scale * target[~train], "k", lw=1, label="observed"
)
for name, forecast in forecasts.items():
    ax.plot(target_years[~train], scale * forecast, lw=1, label=name)
ax.set_xlabel("year")
ax.set_ylabel("sunspot number")
ax.set_title("One-year-ahead forecasts, test years")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Japanese vowels: multichannel series of different lengths
# ---------------------------------------------------------
# aeon holds them as a list of arrays of shape ``(n_channels, n_timepoints_i)``;
# ``SeriesToTokens`` makes every frame a token of 12 features and left-pads the
# shorter utterances with zero tokens. The baselines get the same left-padded
# series, flattened.
try:
    from aeon.datasets import load_japanese_vowels
except ImportError:
    load_japanese_vowels = None
    print("aeon is not installed: the Japanese vowels are skipped")

if load_japanese_vowels is not None:
    X_train, y_train = load_japanese_vowels(split="train")
    X_test, y_test = load_japanese_vowels(split="test")
    length = max(x.shape[1] for x in X_train + X_test)
    pad = SeriesToTokens(max_len=length)
    flat_train = pad.fit_transform(X_train).reshape(len(X_train), -1)
    flat_test = pad.transform(X_test).reshape(len(X_test), -1)
    classifiers = {
        "attention": make_pipeline(
            SeriesToTokens(),
            TokenwiseTransformer(StandardScaler()),
            PositionalEncoding(constant=True),
            LinearAttentionClassifierCV(
                alphas=np.logspace(-2, 8, 21), n_heads=None
            ),
        ),
        "RidgeClassifierCV, flattened": make_pipeline(
            StandardScaler(), RidgeClassifierCV(alphas=np.logspace(-3, 3, 10))
        ),
        "1-NN, flattened": KNeighborsClassifier(n_neighbors=1),
    }
    for name, model in classifiers.items():
        fit_on, test_on = (
            (X_train, X_test)
            if name == "attention"
            else (flat_train, flat_test)
        )
        start = time.perf_counter()
        accuracy = model.fit(fit_on, y_train).score(test_on, y_test)
        seconds = time.perf_counter() - start
        print(f"{name:30s} test accuracy {accuracy:.3f}  ({seconds:.2f} s)")
