"""The landing page's figure: test error and certificate against training size."""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn.datasets import make_random_mhla

d = 4
p = d * d * (d + 1) // 2  # 40 lifted features
X, y, truth = make_random_mhla(120, 16, d, n_heads=2, random_state=0)
rng = np.random.default_rng(1)
X_long = rng.normal(scale=0.25, size=(500, 64, d))  # four times longer sequences
y_long = truth.predict(X_long)[:, 0]

sizes = np.array([5, 10, 15, 20, 25, 30, 35, 38, 39, 40, 41, 45, 50, 60, 80, 100, 120])
errors, ranks, certified = [], [], []
for n in sizes:
    with warnings.catch_warnings():  # alpha=0 below p: the interpolation is the point
        warnings.simplefilter("ignore", UserWarning)
        model = LinearAttentionRegressor(n_heads=None).fit(X[:n], y[:n])
    residual = model.predict(X_long) - y_long
    errors.append(np.linalg.norm(residual) / np.linalg.norm(y_long))
    ranks.append(model.certificate_.rank)
    certified.append(model.certificate_.identifiable)
errors, ranks, certified = map(np.asarray, (errors, ranks, certified))

# What the caption (docs/index.rst) reads off the figure; the build fails if the
# figure stops showing it.
assert not certified[sizes < p].any() and certified[sizes >= p].all()
assert 0.01 < errors[sizes == p - 1][0] and 3e-13 < errors[sizes == p][0] < 3e-10
assert errors[sizes >= 50].max() < 1e-13

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.3), layout="constrained")
for ax in (left, right):
    ax.axvspan(0, p, color="0.93", zorder=0)
    ax.axvline(p, color="0.5", lw=0.8)
    ax.set_xlim(0, sizes[-1] + 3)
    ax.set_xlabel("training sequences (16 tokens each)")
marks = {
    "not identifiable": (~certified, "x", "tab:red"),
    "identifiable": (certified, "o", "tab:green"),
}
left.semilogy(sizes, errors, color="0.6", zorder=1)
right.plot(sizes, ranks, color="0.6", zorder=1)
for label, (where, marker, color) in marks.items():
    left.scatter(
        sizes[where],
        errors[where],
        marker=marker,
        color=color,
        label=label,
        zorder=2,
        s=25,
    )
    right.scatter(
        sizes[where], ranks[where], marker=marker, color=color, zorder=2, s=25
    )
left.set_ylabel("relative error")
left.set_title("Error on sequences 4x longer than trained on", fontsize=10)
left.legend(loc="center right", fontsize=8)
right.axhline(p, color="0.5", lw=0.8, ls="--")
right.set_ylabel(r"rank of $\Lambda$")
right.set_title(f"Certificate: identifiable when the rank is p = {p}", fontsize=10)
