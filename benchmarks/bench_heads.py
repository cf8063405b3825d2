"""Head recovery: minimal heads (n_heads="auto") against the paper's SVD read-out.

Run: ``python benchmarks/bench_heads.py [--seeds 10] [--dims 4 6 8 12 16]``

For each token dimension d and number of generating heads H in
{1, 2, d/2, 3d/4, d-1, d}, and
each seed: draw a random H-head MHLA (parameters N(0, 1/d)), 3p Gaussian training
sequences (16 tokens, entries N(0, 1/16)), fit the lifted regression once, then read
heads out of the same coefficients both ways. Reports the fraction of fits where the
read-out has exactly H heads and relative distance below 1e-8 to the generating model,
the median head count, and the median read-out time relative to the regression time
(the fit with the paper's read-out, measured in the same run). A second table repeats
this on noisy targets (noise 1% of the targets' standard deviation): head counts at
the default tol=1e-8 and at tol=1e-2.
"""

import argparse
import json
import statistics
import time

import numpy as np

from sklearn_linattn import LinearAttentionRegressor, MultiHeadLinearAttention
from sklearn_linattn._heads import minimal_heads, paper_heads


def random_mhla(rng, d, n_heads):
    scale = 1 / np.sqrt(d)
    return MultiHeadLinearAttention(
        rng.normal(scale=scale, size=(n_heads, 1, d)),
        rng.normal(scale=scale, size=(n_heads, d, d)),
    )


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def one_fit(d, n_heads, seed, noise):
    rng = np.random.default_rng(seed)
    truth = random_mhla(rng, d, n_heads)
    p = d * d * (d + 1) // 2
    X = rng.normal(scale=0.25, size=(3 * p, 16, d))
    y = truth.predict(X)[:, 0]
    y = y + noise * y.std() * rng.normal(size=y.shape)
    model, regression_seconds = timed(
        lambda: LinearAttentionRegressor(n_heads=None).fit(X, y)
    )
    coef = model.coef_[None]
    scale = np.linalg.norm(truth.lifted_coef())
    row = {"regression_seconds": regression_seconds}
    for name, read_out, tol in [
        ("auto", minimal_heads, 1e-8),
        ("paper", paper_heads, 1e-8),
        ("auto_tol_1e-2", minimal_heads, 1e-2),
    ]:
        (value, query), seconds = timed(read_out, coef, d, tol)
        heads = MultiHeadLinearAttention(value, query)
        row[name] = {
            "n_heads": len(value),
            "distance": heads.distance(truth) / scale,
            "seconds": seconds,
        }
    return row


def summarize(rows, name, n_heads):
    results = [row[name] for row in rows]
    exact = [r["n_heads"] == n_heads and r["distance"] < 1e-8 for r in results]
    ratio = [
        r["seconds"] / row["regression_seconds"]
        for r, row in zip(results, rows, strict=True)
    ]
    return {
        "recovered": float(np.mean(exact)),
        "median_heads": statistics.median(r["n_heads"] for r in results),
        "median_time_ratio": statistics.median(ratio),
        "median_seconds": statistics.median(r["seconds"] for r in results),
    }


def print_tables(table):
    """Markdown tables of the summaries."""
    print(
        "\n### Noiseless targets: exact recovery (n_heads == H and distance < 1e-8)\n"
    )
    print(
        "| d | H | auto: recovered | auto: median heads | auto: read-out time "
        "| auto: time / regression | paper: recovered | paper: median heads "
        "| regression time |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for e in table:
        if e["noise"] == 0:
            a, p = e["auto"], e["paper"]
            print(
                f"| {e['d']} | {e['H']} | {a['recovered']:.0%} | {a['median_heads']:g} "
                f"| {a['median_seconds']:.3f} s | {a['median_time_ratio']:.2f} "
                f"| {p['recovered']:.0%} | "
                f"{p['median_heads']:g} | {e['median_regression_seconds']:.3f} s |"
            )
    print("\n### Targets with 1% noise: heads returned\n")
    print(
        "| d | H | auto (tol=1e-8): median heads | read-out time | time / regression "
        "| auto (tol=1e-2): median heads | paper: median heads |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for e in table:
        if e["noise"] > 0:
            a, loose, p = e["auto"], e["auto_tol_1e-2"], e["paper"]
            print(
                f"| {e['d']} | {e['H']} | {a['median_heads']:g} | "
                f"{a['median_seconds']:.3f} s | {a['median_time_ratio']:.2f} | "
                f"{loose['median_heads']:g} | "
                f"{p['median_heads']:g} |"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 6, 8, 12, 16])
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--from-json", help="only print the tables of a saved run")
    args = parser.parse_args()
    if args.from_json:
        with open(args.from_json) as handle:
            print_tables(json.load(handle))
        return

    LinearAttentionRegressor().fit(np.ones((3, 2, 2)), np.ones(3))  # compile first
    table = []
    for noise in (0.0, 0.01):
        for d in args.dims:
            for n_heads in sorted({1, 2, d // 2, (3 * d) // 4, d - 1, d}):
                rows = [one_fit(d, n_heads, seed, noise) for seed in range(args.seeds)]
                entry = {"noise": noise, "d": d, "H": n_heads}
                for name in ("auto", "paper", "auto_tol_1e-2"):
                    entry[name] = summarize(rows, name, n_heads)
                entry["median_regression_seconds"] = statistics.median(
                    row["regression_seconds"] for row in rows
                )
                table.append(entry)
                print(json.dumps(entry), flush=True)

    print_tables(table)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(table, handle, indent=2)


if __name__ == "__main__":
    main()
