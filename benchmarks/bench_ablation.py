"""What each mechanism of the default head read-out buys: the read-out with one
mechanism taken out at a time, against the package as it is, on three grids.

Run from the repository root: ``python benchmarks/bench_ablation.py [--variants
NAME ...] [--json FILE]`` (``--list`` names the variants). Each variant is a copy
of ``sklearn_linattn/`` in a temporary folder with one edit (``VARIANTS``: exact
text of ``_heads.py`` replaced; the script stops with the variant's name where
the text is no longer there), run in a subprocess of its own on one BLAS thread.
All variants take about 25 minutes on one core of the project's machine.

The grids, all with the default ``n_heads="auto"``:

- ``fewest``: every second case of ``bench_fewest_heads.py``'s 600 (small noisy
  problems near interpolation, regressors and classifiers, plain and CV, weights,
  ``partial_fit``): heads, and the held-out error (1 - R^2, 1 - accuracy) against
  the same case's ``n_heads=None``;
- ``dense``: ``bench_heads.py``'s dense noiseless grid (d 3 to 6, every H <= d,
  1 to 3 outputs), 2 seeds: whether the generating count comes back;
- ``noisy``: ``bench_heads.py``'s noisy grid at d = 4 and 8 (1, 2 and d / 2
  heads, 1% and 10% noise, 1 and 3 outputs, constant and input-dependent
  noise), 2 seeds: the generating count, and the error on 4000 new sequences
  against the noiseless targets, against ``n_heads=None``'s.

Reported per variant against the package: the ``fewest`` cases whose heads
changed, of those the ones whose held-out error is above 1.1 times (below 0.9
times) the package's, the cases above 1.3 times ``n_heads=None``'s error (the
package's in parentheses), the generating counts found, searches cut short, and
the total work (flops) and fit time over the package's. The tests a variant fails
are not run here: ``PYTHONPATH=<variant folder> python -m pytest tests/test_heads.py``
(``--keep DIR`` keeps the copies).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

HEADS = "sklearn_linattn/_heads.py"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> [(file, text, replacement)]: one mechanism taken out
VARIANTS = {
    "package": [],
    "no_rescaled": [(HEADS, """        exponents = token_exponents(self.design)
        if exponents is None:
            return None""", """        return None""")],
    "no_isotropic": [
        (HEADS, "        if one_output is not None and r / 2 <= k < r:",
         "        if False:"),
        (HEADS, "            not self.budget.exhausted and not self.exact\n",
         "            False and not self.budget.exhausted and not self.exact\n"),
    ],
    "no_random_starts": [(HEADS, "RANDOM_STARTS = 10\nNOISY_RANDOM_STARTS = 4",
                          "RANDOM_STARTS = 0\nNOISY_RANDOM_STARTS = 0")],
    "no_completion_verdict": [(HEADS, """        if self.exact or self.folds is None:
            return self.d * self.d + 1
        training_error""", """        return self.d * self.d + 1
        training_error""")],
    "no_reproducing_beyond": [(
        HEADS, "            high = _reproducing_beyond(search, limit, paper_count)",
        "            pass")],
    "no_fitted_below": [(HEADS, "        high = _fitted_below(search, high)",
                         "        search.completed.clear()")],
    "no_linearized_pass": [
        (HEADS, "REFIT_MARGIN = 10.0", "REFIT_MARGIN = float('inf')")
    ],
    # not a mechanism taken out: the majority of folds replaced by a trimmed sum
    # (the heads' excess over the lifted fit times the size ratio, summed over
    # the folds but their best one, at most 0); measured, not kept
    "trimmed_majority": [(
        HEADS,
        "        elif within <= FOLDS_MAJORITY * np.sum(held):\n",
        "        elif (lambda excess: excess.sum() - excess.min() > 0)(\n"
        "            (margin * np.asarray(errors) - ratio * lifted * (1 + tie))[held]\n"
        "        ):\n",
    )],
    "no_drift": [(HEADS, "DRIFT = 1e3", "DRIFT = float('inf')")],
    "no_output_test": [(HEADS, "OUTPUT_SPREAD = 2.0", "OUTPUT_SPREAD = float('inf')")],
    "no_gcv": [(HEADS, "INTERPOLATION_MARGIN = 2.0", "INTERPOLATION_MARGIN = 0.0")],
    "no_scores_test": [(
        HEADS,
        "            if verdict.passes and score_cv_error > score_threshold * tie:",
        "            if False:",
    )],
    "no_majority": [(HEADS, "FOLDS_MAJORITY = 0.5", "FOLDS_MAJORITY = -1.0")],
    "no_size_ratio": [(HEADS, """        equations, trained = self.equations
        if self.near_interpolation(self.lifted_dof) or self.lifted_dof >= trained:
            return 1.0""", """        return 1.0""")],
    "no_learning_ratio": [(
        HEADS, "        learning = self.folds.learning_ratio(self.budget)",
        "        learning = 1.0")],
    "no_refine": [(HEADS, """        if not self.refinable(value_rows, query_rows):
            return value_rows, query_rows
        accept""", """        return value_rows, query_rows
        accept""")],
}


def make_variant(name, folder):
    """A copy of the package with the variant's edits, in ``folder``."""
    target = os.path.join(folder, name)
    shutil.copytree(
        os.path.join(ROOT, "sklearn_linattn"), os.path.join(target, "sklearn_linattn"),
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for path, text, replacement in VARIANTS[name]:
        path = os.path.join(target, path)
        with open(path) as handle:
            source = handle.read()
        if source.count(text) != 1:
            raise SystemExit(f"variant {name}: the text to replace is not in {path}")
        with open(path, "w") as handle:
            handle.write(source.replace(text, replacement))
    return target


def run_grids():
    """The rows of the three grids for the package this process imports."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_fewest_heads as fewest
    import bench_heads as heads
    import numpy as np

    from sklearn_linattn import LinearAttentionRegressor

    warnings.simplefilter("ignore")
    rows = []

    def record(grid, key, model, error, lifted_error, seconds, **extra):
        search = model.head_search_
        rows.append(dict(
            grid=grid, key=key, heads=int(model.n_heads_), criterion=search.criterion,
            complete=bool(search.complete), work=float(search.work),
            seconds=seconds, error=float(error), lifted_error=float(lifted_error),
            **extra,
        ))

    def timed(fit):
        start = time.perf_counter()
        model = fit()
        return model, time.perf_counter() - start

    for case in fewest.draw_cases(600)[::2]:
        X, y, X_test, y_test, weights = fewest.make_data(case)
        model, seconds = timed(lambda: fewest.fitted(case, X, y, weights))
        lifted = fewest.fitted(case, X, y, weights, n_heads=None)
        record("fewest", case["id"], model, 1 - model.score(X_test, y_test),
               1 - lifted.score(X_test, y_test), seconds)
    for d in [3, 4, 5, 6]:
        for n_heads in range(1, d + 1):
            for n_outputs in (1, 2, 3):
                for seed in range(2):
                    rng = np.random.default_rng([seed, d, n_heads, n_outputs])
                    truth = heads.random_mhla(rng, d, n_heads, n_outputs)
                    X = rng.normal(size=(2 * heads.n_lifted(d) + 50, 8, d))
                    model, seconds = timed(
                        lambda: LinearAttentionRegressor().fit(X, truth.predict(X))
                    )
                    record("dense", f"{d}-{n_heads}-{n_outputs}-{seed}", model,
                           0.0, 0.0, seconds, H=n_heads)
    for d in (4, 8):
        for n_heads, noise, n_outputs, scaled in heads.noisy_cells(d):
            for seed in range(2):
                truth, X, y = heads.synthetic(1000 + seed, d, n_heads, n_outputs,
                                              noise, scaled)
                model, seconds = timed(lambda: LinearAttentionRegressor().fit(X, y))
                lifted = LinearAttentionRegressor(n_heads=None).fit(X, y)
                scale = noise * y.std(axis=0)
                error = heads.new_data_errors(model, truth, scale, scaled, n_test=4000)
                lifted_error = heads.new_data_errors(
                    lifted, truth, scale, scaled, n_test=4000
                )
                record("noisy", f"{d}-{n_heads}-{noise}-{n_outputs}-{scaled}-{seed}",
                       model, error[0], lifted_error[0], seconds, H=n_heads)
    return rows


def compare(rows, package):
    """One variant's row of the table against the package's rows."""
    base = {(r["grid"], r["key"]): r for r in package}
    changed = worse = better = over = over_package = 0
    for row in rows:
        reference = base[row["grid"], row["key"]]
        if row["grid"] != "fewest":
            continue
        if row["heads"] != reference["heads"]:
            changed += 1
            worse += row["error"] > 1.1 * reference["error"] + 1e-12
            better += row["error"] < 0.9 * reference["error"] - 1e-12
        over += row["error"] > 1.3 * row["lifted_error"] + 1e-12
        over_package += reference["error"] > 1.3 * row["lifted_error"] + 1e-12

    def found(grid):
        picked = [r for r in rows if r["grid"] == grid]
        return f"{sum(r['heads'] == r['H'] for r in picked)}/{len(picked)}"

    def ratio(key):
        return sum(r[key] for r in rows) / sum(r[key] for r in package)

    noisy_over = sum(
        r["error"] > 1.3 * r["lifted_error"] for r in rows if r["grid"] == "noisy"
    )
    n_fewest = sum(r["grid"] == "fewest" for r in rows)
    return (
        f"{changed}/{n_fewest}", f"{worse} / {better}", f"{over} ({over_package})",
        found("dense"), found("noisy"), str(noisy_over),
        str(sum(not r["complete"] for r in rows)),
        f"{ratio('work'):.2f}", f"{ratio('seconds'):.2f}",
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--list", action="store_true", help="name the variants")
    parser.add_argument("--json", help="write every variant's rows to this file")
    parser.add_argument("--keep", help="make the copies in this folder, and keep them")
    parser.add_argument("--rows", help=argparse.SUPPRESS)  # (a subprocess's output)
    args = parser.parse_args()
    if args.list:
        print("\n".join(VARIANTS))
        return
    if args.rows:  # run in a variant's subprocess
        with open(args.rows, "w") as handle:
            json.dump(run_grids(), handle)
        return
    names = ["package"] + [name for name in args.variants if name != "package"]
    folder = args.keep or tempfile.mkdtemp(prefix="ablation-")
    results = {}
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for name in names:
        root = make_variant(name, folder)
        out = os.path.join(folder, f"{name}.json")
        subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--rows", out],
            env=dict(environment, PYTHONPATH=root), check=True,
        )
        with open(out) as handle:
            results[name] = json.load(handle)
        print(f"{name}: done", file=sys.stderr, flush=True)
    if not args.keep:
        shutil.rmtree(folder)
    header = (
        "variant", "fewest: heads changed", "worse > 1.1x / better < 0.9x",
        "> 1.3x n_heads=None (package)", "dense: generating count",
        "noisy: generating count", "noisy > 1.3x None", "cut short", "work / package",
        "time / package",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for name in names:
        print(f"| {name} | " + " | ".join(compare(results[name], results["package"]))
              + " |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle)


if __name__ == "__main__":
    main()
