"""Head read-out: how many heads the default estimator returns, on noisy and
noiseless data, with constant and input-dependent noise.

Run: ``python benchmarks/bench_heads.py [--quick] [--seeds 5] [--json out.json]``

It uses only the public estimator, so the same script measures another version
of the package (``PYTHONPATH=/path/to/other/checkout python benchmarks/...``).

Every fit: a random H-head MHLA (parameters N(0, 1/d)) with ``n_outputs``
outputs, Gaussian sequences of 16 tokens (entries N(0, 1/16)), 3p sequences.

1. Noisy counts: d in {4, 8, 12, 16}, H in {1, 2, d/2}, noise 1% and 10% of each
   target's standard deviation, 1 and 3 outputs; the noise either constant or
   scaled by ``||q||^2 / mean ||q||^2`` (input-dependent, as the error of a layer on
   in-context prompts is). Reported: the fraction of fits returning H heads.
2. Noiseless recovery, the 280-fit grid (d in {4, 6, 8, 12, 16}, H in {1, 2, d/2,
   3d/4, d-1, d}, 10 seeds): ``n_heads_ == H`` and relative distance to the
   generating model below 1e-8.
3. In-context linear regression (d = 5: x in R^4 with covariance diag(2, 1, 0.5,
   0.25), 20 context pairs, 20,000 prompts): the best layer has one head.
4. ``load_digits`` rows (8 tokens of 8 pixels), the classifier's head count.
5. The dense grid of issue 31: multi-output noiseless models, d in {3, 4, 5, 6},
   every H <= d, 1-3 outputs, 3 seeds; V, Q entries N(0, 1/d), 2p + 50 sequences of
   8 tokens with entries N(0, 1): ``n_heads_ == H``.
6. ``--only misses``: every fit of the noisy grid (part 1, ``--dims``) that does
   not return H heads, with the test errors on 20,000 new sequences of the same
   law of the default and of ``n_heads=H``, as ratios to ``n_heads=None``'s:
   against the noiseless targets, and against new noisy ones.
7. ``--only float32``: tokens rounded to float32, the float64 targets of the
   model computed before (rounding is the only noise), an intercept: d in {4, 5,
   6}, H in {1, 2, d - 1}, one output, 200 sequences (``make_random_mhla``), the
   tokens times 1 and times 3, 20 seeds: ``n_heads_ == H`` at both scales.
8. ``--only fixed``: ``n_heads=H`` on noisy data of 2 outputs, issue 31's family
   (d = 3, H = 2, noise 10% and 30%, 200 sequences; d = 4, H = 3, noise 10%, 400
   sequences; 100 seeds each, 20 with ``--quick``): the fits whose training loss
   is above the generating model's, the largest ratio, the median work.
9. ``--only broad``: ``n_heads=H`` on a broader seeded grid of noisy data of
   several outputs (``broad_cases``: 300 problems, d 3 to 5, H 2 to d - 1, 2 to 4
   outputs, noise 10% to 60%, 2 p to 5 p sequences, an intercept in 40% and
   ``alpha`` 1e-4 to 1e-1 in 40%; ``--quick``: 40), each fitted with the
   package's starts and screen (``NOISY_RANDOM_STARTS``, ``SCREEN_ITER``) and with
   those of before the thirty-first pass (2 random starts, 5 screening steps, set
   here on ``sklearn_linattn._heads``): the fits whose training loss is above the
   generating model's, the largest ratio, and, paired, the fits that ended lower or
   higher with the package's constants, the largest rise and the work's ratio.
10. ``--only subspace``: one output, 2 heads of d = 5 (fewer than d / 2), 10%
    noise, 750 sequences (``make_random_mhla``; the draw of
    ``tests/test_heads.py::test_fixed_count_of_one_output_reaches_the_generating_training_loss``,
    seed 37, and seeds 0 to 9): ``n_heads=2``'s training loss over the
    generating model's and the default's heads, with the last start (the nearest
    common isotropic subspace, ``FEW_HEADS_SEEDS``) and without it (its query
    matrices replaced by zeros here, so that it is never refined).
"""

import argparse
import json
import time

import numpy as np

from sklearn_linattn import (
    LinearAttentionClassifier,
    LinearAttentionRegressor,
    MultiHeadLinearAttention,
)

N_TOKENS = 16


def n_lifted(d):
    return d * d * (d + 1) // 2


def random_mhla(rng, d, n_heads, n_outputs):
    scale = 1 / np.sqrt(d)
    return MultiHeadLinearAttention(
        rng.normal(scale=scale, size=(n_heads, n_outputs, d)),
        rng.normal(scale=scale, size=(n_heads, d, d)),
    )


def synthetic(seed, d, n_heads, n_outputs, noise, scaled=False, n_samples=None):
    rng = np.random.default_rng(seed)
    truth = random_mhla(rng, d, n_heads, n_outputs)
    n_samples = n_samples or 3 * n_lifted(d)
    X = rng.normal(scale=1 / np.sqrt(N_TOKENS), size=(n_samples, N_TOKENS, d))
    y = truth.predict(X)
    eps = rng.normal(size=y.shape)
    if scaled:
        size = np.linalg.norm(X[:, -1], axis=1) ** 2
        eps *= (size / size.mean())[:, None]
    return truth, X, y + noise * y.std(axis=0) * eps


def noisy_row(d, n_heads, noise, n_outputs, scaled, seeds):
    hits, seconds = [], []
    for seed in range(seeds):
        _, X, y = synthetic(1000 + seed, d, n_heads, n_outputs, noise, scaled)
        start = time.perf_counter()
        model = LinearAttentionRegressor().fit(X, y)
        seconds.append(time.perf_counter() - start)
        hits.append(model.n_heads_ == n_heads)
    return dict(
        d=d, H=n_heads, noise=noise, n_outputs=n_outputs, scaled=scaled,
        recovered=int(sum(hits)), seeds=seeds, seconds=float(np.median(seconds)),
    )


def noisy_cells(d):
    """The noisy grid's cells at ``d`` (part 1): ``(H, noise, n_outputs, scaled)``."""
    for n_heads in sorted({1, 2, d // 2}):
        for noise in (0.01, 0.1):
            for n_outputs in (1, 3):
                for scaled in (False, True):
                    yield n_heads, noise, n_outputs, scaled


def new_data_errors(model, truth, noise_scale, scaled, seed=99, n_test=20_000):
    """Mean squared test errors of ``model`` on new sequences of ``synthetic``'s
    law: against the noiseless targets, and against new noisy ones."""
    rng = np.random.default_rng(seed)
    d = truth.query_matrices.shape[-1]
    X = rng.normal(scale=1 / np.sqrt(N_TOKENS), size=(n_test, N_TOKENS, d))
    clean = truth.predict(X).reshape(n_test, -1)
    eps = rng.normal(size=clean.shape)
    if scaled:
        size = np.linalg.norm(X[:, -1], axis=1) ** 2
        eps *= (size / size.mean())[:, None]
    predicted = model.predict(X).reshape(n_test, -1)
    noisy = clean + noise_scale * eps
    return np.mean((predicted - clean) ** 2), np.mean((predicted - noisy) ** 2)


def miss_rows(d, seeds):
    """The fits of the noisy grid at ``d`` that miss H (part 6)."""
    rows = []
    for n_heads, noise, n_outputs, scaled in noisy_cells(d):
        for seed in range(seeds):
            truth, X, y = synthetic(1000 + seed, d, n_heads, n_outputs, noise, scaled)
            model = LinearAttentionRegressor().fit(X, y)
            if model.n_heads_ == n_heads:
                continue
            noise_scale = noise * truth.predict(X).reshape(len(X), -1).std(axis=0)
            errors = {
                name: new_data_errors(m, truth, noise_scale, scaled)
                for name, m in [
                    ("default", model),
                    ("H", LinearAttentionRegressor(n_heads=n_heads).fit(X, y)),
                    ("None", LinearAttentionRegressor(n_heads=None).fit(X, y)),
                ]
            }
            rows.append(dict(
                d=d, H=n_heads, noise=noise, n_outputs=n_outputs, scaled=scaled,
                seed=seed, heads=int(model.n_heads_),
                criterion=model.head_search_.criterion,
                **{
                    f"{name}_{kind}": float(errors[name][i] / errors["None"][i])
                    for name in ("default", "H")
                    for i, kind in enumerate(("clean", "noisy"))
                },
            ))
            print(json.dumps({"misses": rows[-1]}), flush=True)
    return rows


def noiseless_row(d, n_heads, seeds):
    found, seconds, work = 0, [], 0.0
    for seed in range(seeds):
        truth, X, y = synthetic(seed, d, n_heads, 1, 0.0)
        start = time.perf_counter()
        model = LinearAttentionRegressor().fit(X, y[:, 0])
        seconds.append(time.perf_counter() - start)
        work += model.head_search_.work
        scale = np.linalg.norm(truth.lifted_coef())
        found += bool(
            model.n_heads_ == n_heads
            and model.attention_.distance(truth) / scale < 1e-8
        )
    return dict(
        d=d, H=n_heads, recovered=found, seeds=seeds,
        seconds=float(np.median(seconds)), work=float(work),
    )


def dense_row(d, n_heads, n_outputs, seeds):
    """Issue 31's dense grid: noiseless multi-output models."""
    found, counts, seconds = 0, [], []
    for seed in range(seeds):
        rng = np.random.default_rng([seed, d, n_heads, n_outputs])
        truth = random_mhla(rng, d, n_heads, n_outputs)
        X = rng.normal(size=(2 * n_lifted(d) + 50, 8, d))
        start = time.perf_counter()
        model = LinearAttentionRegressor().fit(X, truth.predict(X))
        seconds.append(time.perf_counter() - start)
        counts.append(int(model.n_heads_))
        found += model.n_heads_ == n_heads
    return dict(
        d=d, H=n_heads, n_outputs=n_outputs, recovered=found, seeds=seeds,
        counts=counts, seconds=float(np.median(seconds)),
    )


def incontext_row(seeds):
    counts = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        covariance = np.array([2.0, 1.0, 0.5, 0.25])
        x = rng.normal(size=(20000, 21, 4)) * np.sqrt(covariance)
        labels = np.einsum("ntd,nd->nt", x, rng.normal(size=(20000, 4)))
        X = np.concatenate([x, labels[..., None]], axis=-1)
        X[:, -1, -1] = 0.0
        counts.append(LinearAttentionRegressor().fit(X, labels[:, -1]).n_heads_)
    return dict(task="in-context regression", heads=counts)


def digits_row():
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = digits.data.reshape(-1, 8, 8) / 16.0
    start = time.perf_counter()
    model = LinearAttentionClassifier(fit_intercept=True).fit(X, digits.target)
    return dict(
        task="digits classifier", heads=[int(model.n_heads_)],
        criterion=model.head_search_.criterion,
        counts_tried=list(model.head_search_.counts_tried),
        seconds=time.perf_counter() - start,
    )


def float32_row(d, n_heads, seeds):
    """Part 7: float32 tokens of a noiseless model, at two scales."""
    from sklearn_linattn.datasets import make_random_mhla

    found, counts = 0, []
    for seed in range(seeds):
        X, y, _ = make_random_mhla(200, 7, d, n_heads=n_heads, random_state=seed)
        heads = []
        for scale in (1.0, 3.0):
            tokens = X.astype(np.float32) * np.float32(scale)
            model = LinearAttentionRegressor(fit_intercept=True)
            heads.append(int(model.fit(tokens, y * scale**3).n_heads_))
        counts.append(heads)
        found += heads == [n_heads, n_heads]
    return dict(d=d, H=n_heads, recovered=found, seeds=seeds, counts=counts)


def fixed_row(d, n_heads, noise, n_samples, seeds):
    """Part 8: n_heads=H against the generating model's training loss."""
    ratios, work = [], []
    for seed in range(seeds):
        truth, X, y = synthetic(seed, d, n_heads, 2, noise, n_samples=n_samples)
        model = LinearAttentionRegressor(n_heads=n_heads).fit(X, y)
        generating = np.sum((y - truth.predict(X)) ** 2)
        ratios.append(float(np.sum((y - model.predict(X)) ** 2) / generating))
        work.append(float(model.head_search_.work))
    return dict(
        d=d, H=n_heads, noise=noise, n_samples=n_samples, seeds=seeds,
        above=[seed for seed, ratio in enumerate(ratios) if ratio > 1 + 1e-9],
        largest=max(ratios), work=float(np.median(work)),
    )


BEFORE_SCREEN = dict(NOISY_RANDOM_STARTS=2, SCREEN_ITER=5)


def broad_cases(n_cases):
    """Part 9's seeded grid: (seed, d, H, outputs, noise, rows, intercept, alpha)."""
    cases = []
    for seed in range(n_cases):
        rng = np.random.default_rng([2026, seed])
        d = int(rng.integers(3, 6))
        n_heads = int(rng.integers(2, d))
        n_outputs = int(rng.integers(2, 5))
        noise = float(rng.uniform(0.1, 0.6))
        n_samples = int(round(rng.uniform(2.0, 5.0) * n_lifted(d)))
        intercept = bool(rng.random() < 0.4)
        alpha = float(10 ** rng.uniform(-4, -1)) if rng.random() < 0.4 else 0.0
        cases.append((seed, d, n_heads, n_outputs, noise, n_samples, intercept, alpha))
    return cases


def broad_row(case):
    """Part 9: n_heads=H with the package's and the earlier starts and screen."""
    from sklearn_linattn import _heads

    seed, d, n_heads, n_outputs, noise, n_samples, intercept, alpha = case
    truth, X, y = synthetic(5000 + seed, d, n_heads, n_outputs, noise,
                            n_samples=n_samples)
    generating = np.sum((y - truth.predict(X)) ** 2)
    row = dict(seed=seed, d=d, H=n_heads, n_outputs=n_outputs, noise=noise,
               n_samples=n_samples, intercept=intercept, alpha=alpha)
    package = {name: getattr(_heads, name) for name in BEFORE_SCREEN}
    for label, constants in (("package", package), ("before", BEFORE_SCREEN)):
        for name, value in constants.items():
            setattr(_heads, name, value)
        try:
            model = LinearAttentionRegressor(
                n_heads=n_heads, fit_intercept=intercept, alpha=alpha
            ).fit(X, y)
        finally:
            for name, value in package.items():
                setattr(_heads, name, value)
        row[label] = float(np.sum((y - model.predict(X)) ** 2) / generating)
        row[label + "_work"] = float(model.head_search_.work)
    return row


def subspace_row(seed, noise_seed):
    """Part 10: 2 heads of d = 5 with and without the last subspace start."""
    from sklearn_linattn import _heads
    from sklearn_linattn.datasets import make_random_mhla

    shipped = _heads.isotropic_queries

    def without(one_output, d, k, n, seed, tol, budget, bases):
        found = shipped(one_output, d, k, n, seed, tol, budget, bases)
        if k < bases[1] / 2:  # the last start only (the others have k >= r / 2)
            found = [(found[0][0], np.zeros_like(found[0][1]))] + list(found[1:])
        return found

    X, y, truth = make_random_mhla(750, 8, 5, n_heads=2, random_state=seed)
    y = y + 0.1 * np.std(y) * np.random.default_rng(noise_seed).normal(size=y.shape)
    generating = np.mean((truth.predict(X)[:, 0] - y) ** 2)
    row = dict(seed=seed, noise_seed=noise_seed)
    for label, queries in (("package", shipped), ("without", without)):
        _heads.isotropic_queries = queries
        try:
            fixed = LinearAttentionRegressor(n_heads=2).fit(X, y)
            default = LinearAttentionRegressor().fit(X, y)
        finally:
            _heads.isotropic_queries = shipped
        row[label] = float(np.mean((fixed.predict(X) - y) ** 2) / generating)
        row[label + "_heads"] = int(default.n_heads_)
    return row


def print_tables(results):
    rows = results["noisy"]
    if rows:
        print("\n### 1. Noisy targets: fits returning the generating count\n")
        print("| d | H | noise | outputs | constant noise | input-dependent noise |")
        print("| --- | --- | --- | --- | --- | --- |")
        keyed = {
            (r["d"], r["H"], r["noise"], r["n_outputs"], r["scaled"]): r for r in rows
        }
        for key in sorted({k[:4] for k in keyed}):
            cells = [
                f"{keyed[key + (s,)]['recovered']}/{keyed[key + (s,)]['seeds']}"
                if key + (s,) in keyed else "-"
                for s in (False, True)
            ]
            print(f"| {key[0]} | {key[1]} | {key[2]:.0%} | {key[3]} | "
                  f"{cells[0]} | {cells[1]} |")
        for scaled in (False, True):
            part = [r for r in rows if r["scaled"] == scaled]
            if part:
                print(
                    f"\n{'Input-dependent' if scaled else 'Constant'} noise: "
                    f"{sum(r['recovered'] for r in part)}/"
                    f"{sum(r['seeds'] for r in part)}."
                )
    rows = results["noiseless"]
    if rows:
        print("\n### 2. Noiseless targets: exact recovery "
              "(n_heads == H, distance < 1e-8)\n")
        print("| d | H | recovered | fit time (median) | read-out work (all seeds) |")
        print("| --- | --- | --- | --- | --- |")
        for r in rows:
            print(f"| {r['d']} | {r['H']} | {r['recovered']}/{r['seeds']} | "
                  f"{r['seconds']:.3f} s | {r.get('work', np.nan):.3g} flops |")
        print(f"\nTotal: {sum(r['recovered'] for r in rows)}/"
              f"{sum(r['seeds'] for r in rows)}.")
    rows = results.get("dense", [])
    if rows:
        print("\n### 5. Dense grid (noiseless, multi-output): n_heads == H\n")
        print("| d | outputs | found for H = 1 ... d | counts when missed |")
        print("| --- | --- | --- | --- |")
        for d in sorted({r["d"] for r in rows}):
            for m in sorted({r["n_outputs"] for r in rows}):
                cells = [r for r in rows if r["d"] == d and r["n_outputs"] == m]
                found = " ".join(f"{r['recovered']}" for r in cells)
                missed = "; ".join(
                    f"H={r['H']}: {r['counts']}" for r in cells
                    if r["recovered"] < r["seeds"]
                )
                print(f"| {d} | {m} | {found} | {missed or '-'} |")
        print(f"\nTotal: {sum(r['recovered'] for r in rows)}/"
              f"{sum(r['seeds'] for r in rows)}.")
    rows = results.get("misses", [])
    if rows:
        print("\n### 6. The noisy grid's misses: test errors over n_heads=None's\n")
        print("| d | H | noise | outputs | noise kind | seed | heads (criterion) | "
              "default: noiseless / noisy targets | n_heads=H: noiseless / noisy |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(
                f"| {r['d']} | {r['H']} | {r['noise']:.0%} | {r['n_outputs']} | "
                f"{'input-dependent' if r['scaled'] else 'constant'} | {r['seed']} | "
                f"{r['heads']} ({r['criterion']}) | {r['default_clean']:.2f} / "
                f"{r['default_noisy']:.2f} | {r['H_clean']:.2f} / {r['H_noisy']:.2f} |"
            )
    rows = results.get("float32", [])
    if rows:
        print("\n### 7. float32 tokens, noiseless: n_heads == H at scales 1 and 3\n")
        print("| d | H | recovered | counts when missed (scale 1, 3) |")
        print("| --- | --- | --- | --- |")
        for r in rows:
            missed = [c for c in r["counts"] if c != [r["H"], r["H"]]]
            print(f"| {r['d']} | {r['H']} | {r['recovered']}/{r['seeds']} | "
                  f"{missed or '-'} |")
        print(f"\nTotal: {sum(r['recovered'] for r in rows)}/"
              f"{sum(r['seeds'] for r in rows)}.")
    rows = results.get("fixed", [])
    if rows:
        print("\n### 8. n_heads=H on noisy data of 2 outputs: training loss over "
              "the generating model's\n")
        print("| d | H | noise | sequences | above (seeds) | largest ratio | "
              "median work |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(f"| {r['d']} | {r['H']} | {r['noise']:.0%} | {r['n_samples']} | "
                  f"{len(r['above'])}/{r['seeds']} {r['above'] or ''} | "
                  f"{r['largest']:.3f} | {r['work']:.2e} flops |")
    rows = results.get("broad", [])
    if rows:
        print("\n### 9. n_heads=H on the broader grid of several outputs: training "
              "loss over the generating model's\n")
        print("| starts, screening steps | fits | above (seeds) | largest ratio | "
              "median work |")
        print("| --- | --- | --- | --- | --- |")
        for label, name in (("before", "2, 5 (before)"), ("package", "package")):
            above = [r["seed"] for r in rows if r[label] > 1 + 1e-9]
            print(f"| {name} | {len(rows)} | {len(above)} {above} | "
                  f"{max(r[label] for r in rows):.3f} | "
                  f"{np.median([r[label + '_work'] for r in rows]):.2e} flops |")
        change = np.array([r["package"] / r["before"] - 1 for r in rows])
        work = np.array([r["package_work"] / r["before_work"] for r in rows])
        higher = change > 1e-9
        print(f"\nPackage against before, paired: {int(np.sum(change < -1e-9))} "
              f"lower, {int(np.sum(higher))} higher ({int(np.sum(change > 1e-4))} "
              f"by more than 1e-4, at most {1 + max(change.max(), 0.0):.4f} times; "
              f"{int(np.sum(higher & [r['intercept'] for r in rows]))} of them "
              f"with an intercept); work {np.median(work):.2f} times (median), "
              f"at most {work.max():.2f}.")
    rows = results.get("subspace", [])
    if rows:
        print("\n### 10. 2 heads of d = 5, one output: n_heads=2's training loss "
              "over the generating model's, and the default's heads\n")
        print("| seed | with the subspace start | without it |")
        print("| --- | --- | --- |")
        for r in rows:
            print(f"| {r['seed']} | {r['package']:.3f} ({r['package_heads']} heads) | "
                  f"{r['without']:.3f} ({r['without_heads']} heads) |")
    for r in results["tasks"]:
        print(f"\n{r['task']}: heads {r['heads']}"
              + (f" ({r['criterion']}, counts tried {r['counts_tried']}, "
                 f"{r['seconds']:.1f} s)" if "criterion" in r else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grid, 2 seeds")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per noisy cell")
    parser.add_argument(
        "--only",
        choices=[
            "noisy", "noiseless", "tasks", "dense", "misses", "float32", "fixed",
            "broad", "subspace",
        ],
        nargs="+", default=["noisy", "noiseless", "tasks", "dense"],
    )
    parser.add_argument("--dims", type=int, nargs="+", help="token dims to run")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--from-json", help="only print the tables of a saved run")
    args = parser.parse_args()
    if args.from_json:
        with open(args.from_json) as handle:
            print_tables(json.load(handle))
        return
    seeds = 2 if args.quick else args.seeds
    noisy_dims = args.dims or ([4, 8] if args.quick else [4, 8, 12, 16])
    exact_dims = args.dims or ([4, 8] if args.quick else [4, 6, 8, 12, 16])
    results = {
        "noisy": [], "noiseless": [], "tasks": [], "dense": [], "misses": [],
        "float32": [], "fixed": [], "broad": [], "subspace": [],
    }

    def report(kind, row):
        results[kind].append(row)
        print(json.dumps({kind: row}), flush=True)

    if "noisy" in args.only:
        for d in noisy_dims:
            for cell in noisy_cells(d):
                report("noisy", noisy_row(d, *cell, seeds))
    if "misses" in args.only:
        for d in args.dims or [4, 8]:
            results["misses"] += miss_rows(d, seeds)
    if "noiseless" in args.only:
        for d in exact_dims:
            for n_heads in sorted({1, 2, d // 2, (3 * d) // 4, d - 1, d}):
                report("noiseless", noiseless_row(d, n_heads, 2 if args.quick else 10))
    if "dense" in args.only:
        for d in [3, 4, 5, 6]:
            for n_heads in range(1, d + 1):
                for n_outputs in (1, 2, 3):
                    report("dense", dense_row(d, n_heads, n_outputs, 3))
    if "float32" in args.only:
        for d in (4, 5, 6):
            for n_heads in (1, 2, d - 1):
                report("float32", float32_row(d, n_heads, 5 if args.quick else 20))
    if "fixed" in args.only:
        for d, n_heads, noise, n_samples in ((3, 2, 0.1, 200), (3, 2, 0.3, 200),
                                             (4, 3, 0.1, 400)):
            report("fixed", fixed_row(d, n_heads, noise, n_samples,
                                      20 if args.quick else 100))
    if "broad" in args.only:
        for case in broad_cases(40 if args.quick else 300):
            report("broad", broad_row(case))
    if "subspace" in args.only:
        for seed, noise_seed in [(37, 1037)] + [(s, 1000 + s) for s in range(10)]:
            report("subspace", subspace_row(seed, noise_seed))
    if "tasks" in args.only:
        report("tasks", incontext_row(2 if args.quick else 5))
        report("tasks", digits_row())
    print_tables(results)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
