"""Peak memory of a fit against n_samples and d per solver, from a recorded run of
``python benchmarks/bench_solvers.py --sections 4 --json FILE`` (tracemalloc:
the memory a fit allocates beyond its input, which does not depend on the
machine's load, unlike the times)."""

import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt

# the plot directive runs this file with sys.argv = [its path]
RUN = Path(sys.argv[0]).resolve().parents[2] / "benchmarks" / "recorded"
rows = json.loads((RUN / "bench_solvers_scaling.json").read_text())["scaling"]
styles = {"normal": "o-", "dual": "s--", "cg": "^:"}
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
for ax, axis, x_name, x_label in [
    (axes[0], "n_samples", "n_samples", "training sequences (d = 8, 16 tokens)"),
    (axes[1], "d", "d", "token dimension d (2,000 sequences of 16 tokens)"),
]:
    for solver, style in styles.items():
        points = [
            (r[x_name], r["peak_mb"])
            for r in rows
            if r["axis"] == axis and r["solver"] == solver
        ]
        x, peak = zip(*points, strict=True)
        ax.plot(x, peak, style, label=f'solver="{solver}"', ms=5)
    sizes = sorted({(r[x_name], r["x_mb"]) for r in rows if r["axis"] == axis})
    x, size = zip(*sizes, strict=True)
    ax.plot(x, size, color="0.5", lw=0.8, label="the input X itself")
    ax.set_xlabel(x_label)
    ax.set_ylabel("peak memory beyond X (MiB)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
axes[0].set_xscale("log")
axes[0].set_title("Streaming: memory does not grow with n", fontsize=10)
axes[1].set_title("Memory against d: p x p, n x n, or neither", fontsize=10)
