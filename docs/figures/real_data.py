"""Test scores of our recipes and the toolkits' models on every real data set, from
the recorded run of ``python benchmarks/bench_real_sequences.py --json
benchmarks/recorded/bench_real_sequences.json`` (nothing is fitted here)."""

import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

# the plot directive runs this file with sys.argv = [its path]
RUN = Path(sys.argv[0]).resolve().parents[2] / "benchmarks" / "recorded"
record = json.loads((RUN / "bench_real_sequences.json").read_text())
labels = {key: model["label"] for key, model in record["models"].items()}
styles = {  # ours in colour, the toolkits' in grey
    "default": dict(marker="o", mfc="none", color="tab:blue"),
    "documented": dict(marker="o", color="tab:blue"),
    "one_token": dict(marker="D", color="tab:orange"),
    "minirocket": dict(marker="^", color="0.25"),
    "rocket": dict(marker="s", mfc="none", color="0.25"),
    "dtw": dict(marker="x", color="0.45"),
    "ridge": dict(marker="+", color="0.45"),
}
panels = [
    (["classification"], "test accuracy", None),
    (["regression", "forecasting"], "test $R^2$ (clipped at -1)", -1.0),
]
sizes = [sum(r["task"] in tasks for r in record["results"]) for tasks, _, _ in panels]
fig, axes = plt.subplots(
    1, 2, figsize=(10, 0.42 * max(sizes) + 1.6), layout="constrained"
)
for ax, (tasks, xlabel, floor) in zip(axes, panels, strict=True):
    rows = [r for r in record["results"] if r["task"] in tasks]
    for offset, (key, style) in zip(
        np.linspace(-0.25, 0.25, len(styles)), styles.items(), strict=True
    ):
        points = [
            (r["results"][key]["score"], i + offset)
            for i, r in enumerate(rows)
            if "score" in r["results"].get(key, {})
        ]
        if not points:
            continue
        score, y = np.array(points).T
        if floor is not None:
            score = np.maximum(score, floor)
        ax.plot(score, y, ls="none", ms=6, label=labels[key], **style)
    ax.set_yticks(range(len(rows)), [r["name"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", color="0.9")
    for i in range(len(rows) - 1):
        ax.axhline(i + 0.5, color="0.9", lw=0.8)
axes[0].set_title("Classification (aeon, scikit-learn)", fontsize=10)
axes[1].set_title("Regression (aeon),\nforecasting (statsmodels, aeon)", fontsize=10)
handles, names = axes[0].get_legend_handles_labels()
fig.legend(handles, names, loc="outside lower center", ncol=4, fontsize=9)
