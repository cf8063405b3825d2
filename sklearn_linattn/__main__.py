"""``python -m sklearn_linattn``: the paper's three experiments, in about a minute.

1. Learning a random multi-head linear attention layer from below, around and above
   ``p`` samples: test error on longer sequences, heads recovered, certificate.
2. Associative recall on Gaussian (identifiable) and orthogonal (not identifiable)
   data: smallest eigenvalue, distance to the generating model, error on
   out-of-distribution queries.
3. Finite automata from lookups on clean and on noisy tokens: certificate rank,
   execution of unseen automata on long words, out-of-distribution error, and which
   inputs the certificate covers.

Options: ``--quick`` (seconds), ``--seed``, ``--plot DIR`` (PNG figures, needs
matplotlib).
"""

import argparse
import importlib.util
import os
import sys
import time

import numpy as np

from . import LinearAttentionRegressor, __version__
from .datasets import (
    encode_automaton_lookup,
    execute_automaton,
    make_associative_recall,
    make_automaton,
    make_automaton_lookups,
    make_random_mhla,
)

# Sizes of the default run (about a minute on 2 cores) and of --quick (seconds).
SIZES = {
    "default": {
        "mhla": {"token_dim": 8, "n_heads": 2, "n_tokens": 100},
        "recall": {"key_dim": 4, "n_samples": 2**14},
        "automata": {
            "n_states": 3,
            "n_symbols": 2,
            "n_samples": 3000,
            "n_automata": 50,
            "word_length": 50,
        },
    },
    "quick": {
        "mhla": {"token_dim": 4, "n_heads": 2, "n_tokens": 10},
        "recall": {"key_dim": 2, "n_samples": 600},
        "automata": {
            "n_states": 2,
            "n_symbols": 2,
            "n_samples": 600,
            "n_automata": 10,
            "word_length": 20,
        },
    },
}


def _relative_error(predicted, expected):
    return float(np.linalg.norm(predicted - expected) / np.linalg.norm(expected))


def _relative_distance(fitted, truth):
    return fitted.distance(truth) / np.linalg.norm(truth.lifted_coef())


def random_mhla_experiment(token_dim, n_heads, n_tokens, seed):
    """Fit a random MHLA from p/2, p and 3p samples (p lifted features)."""
    p = token_dim * token_dim * (token_dim + 1) // 2
    X_test, y_test, truth = make_random_mhla(
        500, 2 * n_tokens, token_dim, n_heads=n_heads, random_state=seed
    )
    rng = np.random.default_rng(seed + 1)
    rows = []
    for n_samples in (p // 2, p, 3 * p):
        X = rng.normal(
            scale=1 / np.sqrt(n_tokens), size=(n_samples, n_tokens, token_dim)
        )
        y = truth.predict(X)[:, 0]
        start = time.perf_counter()
        model = LinearAttentionRegressor().fit(X, y)
        seconds = time.perf_counter() - start
        paper = LinearAttentionRegressor(n_heads=None).fit(X, y)
        rows.append(
            {
                "n_samples": n_samples,
                "test_error": _relative_error(model.predict(X_test), y_test),
                "distance": _relative_distance(model.attention_, truth),
                "identifiable": model.certificate_.identifiable,
                "rank": model.certificate_.rank,
                "n_heads": model.n_heads_,
                "paper_n_heads": paper.n_heads_,
                "seconds": seconds,
            }
        )
    return {"p": p, "n_heads": n_heads, "rows": rows}


def recall_experiment(key_dim, n_samples, seed):
    """Associative recall: Gaussian contexts vs whole orthonormal bases."""
    X_ood, y_ood, _ = make_associative_recall(
        500, key_dim, 3 * key_dim, "gaussian", random_state=seed + 7
    )
    rows = []
    for distribution, n_pairs in (("gaussian", key_dim), ("orthogonal", 2 * key_dim)):
        X, y, truth = make_associative_recall(
            n_samples, key_dim, n_pairs, distribution, random_state=seed
        )
        model = LinearAttentionRegressor().fit(X, y)
        rows.append(
            {
                "distribution": distribution,
                "n_pairs": n_pairs,
                "min_eigenvalue": model.certificate_.min_eigenvalue,
                "identifiable": model.certificate_.identifiable,
                "rank": model.certificate_.rank,
                "distance": _relative_distance(model.attention_, truth),
                "ood_error": _relative_error(model.predict(X_ood), y_ood),
                "ood_covered": float(model.certificate_.covers(X_ood).mean()),
                "n_heads": model.n_heads_,
            }
        )
    return {
        "p": rows[0]["rank"] if rows[0]["identifiable"] else None,
        "ood_pairs": 3 * key_dim,
        "rows": rows,
    }


def _partial_tables(n_states, n_symbols, n_sequences, rng):
    """Out-of-distribution lookups: random partial tables with repeated entries."""
    sequences = []
    for _ in range(n_sequences):
        table = make_automaton(n_states, n_symbols, rng)
        n_rows = n_states * n_symbols + 2
        rows = np.stack(
            [rng.integers(0, n_states, n_rows), rng.integers(0, n_symbols, n_rows)],
            axis=1,
        )
        state, symbol = rng.integers(0, n_states), rng.integers(0, n_symbols)
        sequences.append(encode_automaton_lookup(table, state, symbol, rows=rows))
    return np.asarray(sequences)


def automata_experiment(n_states, n_symbols, n_samples, n_automata, word_length, seed):
    """Learn transition lookups from clean and from noisy tokens; run automata."""
    rng = np.random.default_rng(seed + 11)
    tables = [make_automaton(n_states, n_symbols, rng) for _ in range(n_automata)]
    words = [rng.integers(0, n_symbols, word_length) for _ in range(n_automata)]
    X_ood = _partial_tables(n_states, n_symbols, 300, rng)
    X_in, _, _, _ = make_automaton_lookups(
        300, n_states, n_symbols, random_state=seed + 13
    )
    rows = []
    for token_noise in (0.0, 0.1):
        X, y, _, truth = make_automaton_lookups(
            n_samples, n_states, n_symbols, token_noise=token_noise, random_state=seed
        )
        model = LinearAttentionRegressor().fit(X, y)
        correct_steps = correct_words = 0
        for table, word in zip(tables, words, strict=True):
            expected = execute_automaton(truth, table, word)
            visited = execute_automaton(model, table, word)
            correct_steps += int(np.sum(visited[1:] == expected[1:]))
            correct_words += int(np.array_equal(visited, expected))
        rows.append(
            {
                "token_noise": token_noise,
                "rank": model.certificate_.rank,
                "n_lifted_features": model.certificate_.n_lifted_features,
                "identifiable": model.certificate_.identifiable,
                "step_accuracy": correct_steps / (n_automata * word_length),
                "word_accuracy": correct_words / n_automata,
                "ood_error": _relative_error(
                    model.predict(X_ood), truth.predict(X_ood)
                ),
                "covered_in_distribution": float(
                    model.certificate_.covers(X_in).mean()
                ),
                "covered_ood": float(model.certificate_.covers(X_ood).mean()),
                "n_heads": model.n_heads_,
            }
        )
    return {"n_automata": n_automata, "word_length": word_length, "rows": rows}


def _print_mhla(result, token_dim, n_tokens):
    print(
        f"1. Random {result['n_heads']}-head linear attention, d={token_dim}, "
        f"{n_tokens} tokens, p={result['p']} lifted features"
    )
    print("   test sequences are twice as long as the training ones")
    print(
        f"   {'samples':>8} {'test rel.err':>12} {'rel.distance':>12} "
        f"{'certificate':>17} {'heads':>5} {'paper heads':>11} {'fit':>7}"
    )
    for row in result["rows"]:
        verdict = "identifiable" if row["identifiable"] else "not identif."
        print(
            f"   {row['n_samples']:>8} {row['test_error']:>12.1e} "
            f"{row['distance']:>12.1e} {verdict:>12} {row['rank']:>4} "
            f"{row['n_heads']:>5} {row['paper_n_heads']:>11} {row['seconds']:>6.2f}s"
        )


def _print_recall(result):
    print("\n2. Associative recall: the value stored under the query's key")
    print(
        f"   out-of-distribution queries: Gaussian contexts of {result['ood_pairs']} "
        "pairs"
    )
    print(
        f"   {'training data':>24} {'lambda_min':>10} {'rank':>5} {'rel.distance':>12} "
        f"{'OOD rel.err':>11} {'OOD covered':>11} {'heads':>5}"
    )
    for row in result["rows"]:
        name = f"{row['distribution']}, {row['n_pairs']} pairs"
        print(
            f"   {name:>24} {max(row['min_eigenvalue'], 0.0):>10.1e} {row['rank']:>5} "
            f"{row['distance']:>12.1e} {row['ood_error']:>11.1e} "
            f"{row['ood_covered']:>11.0%} {row['n_heads']:>5}"
        )


def _print_automata(result, n_states, n_symbols):
    print(
        f"\n3. Automata ({n_states} states, {n_symbols} symbols): learn one lookup, "
        f"run {result['n_automata']} unseen automata on {result['word_length']}-symbol "
        "words"
    )
    print("   OOD: partial transition tables with repeated entries")
    print(
        f"   {'tokens':>11} {'rank':>9} {'steps ok':>8} {'words ok':>8} "
        f"{'OOD rel.err':>11} {'covered in/OOD':>14} {'heads':>5}"
    )
    for row in result["rows"]:
        name = "clean" if row["token_noise"] == 0 else f"noise {row['token_noise']}"
        rank = f"{row['rank']}/{row['n_lifted_features']}"
        covered = f"{row['covered_in_distribution']:.0%}/{row['covered_ood']:.0%}"
        print(
            f"   {name:>11} {rank:>9} {row['step_accuracy']:>8.0%} "
            f"{row['word_accuracy']:>8.0%} {row['ood_error']:>11.1e} {covered:>14} "
            f"{row['n_heads']:>5}"
        )


def _plot(results, directory):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(directory, exist_ok=True)
    paths = []

    mhla = results["mhla"]["rows"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.semilogy(
        [r["n_samples"] for r in mhla],
        [r["test_error"] for r in mhla],
        "o-",
        label="test error (longer sequences)",
    )
    ax.semilogy(
        [r["n_samples"] for r in mhla],
        [r["distance"] for r in mhla],
        "s--",
        label="distance to generating model",
    )
    ax.axvline(results["mhla"]["p"], color="gray", lw=0.8, label="p (lifted features)")
    ax.set_xlabel("training sequences")
    ax.set_ylabel("relative error")
    ax.set_title("Learning a random MHLA")
    ax.legend(fontsize=8)
    paths.append(_save(fig, directory, "random_mhla.png"))

    fig, ax = plt.subplots(figsize=(5, 3.5))
    recall = results["recall"]["rows"]
    names = [r["distribution"] for r in recall]
    x = np.arange(len(recall))
    floor = 1e-16
    ax.bar(
        x - 0.2,
        [max(r["distance"], floor) for r in recall],
        0.4,
        label="distance to generating model",
    )
    ax.bar(
        x + 0.2,
        [max(r["ood_error"], floor) for r in recall],
        0.4,
        label="OOD relative error",
    )
    ax.set_yscale("log")
    ax.set_ylim(floor, 10)
    ax.set_xticks(
        x,
        [
            f"{n}\nlambda_min={max(r['min_eigenvalue'], 0):.1e}"
            for n, r in zip(names, recall, strict=True)
        ],
    )
    ax.set_ylabel("relative error")
    ax.set_title("Associative recall: the certificate")
    ax.legend(fontsize=8)
    paths.append(_save(fig, directory, "associative_recall.png"))

    fig, ax = plt.subplots(figsize=(5, 3.5))
    automata = results["automata"]["rows"]
    labels = [
        "clean" if r["token_noise"] == 0 else f"noise {r['token_noise']}"
        for r in automata
    ]
    ax.bar(labels, [max(r["ood_error"], floor) for r in automata])
    ax.set_yscale("log")
    ax.set_ylim(floor, 100)
    ax.set_ylabel("OOD relative error")
    for i, r in enumerate(automata):
        ax.annotate(
            f"rank {r['rank']}/{r['n_lifted_features']}\n"
            f"words ok {r['word_accuracy']:.0%}",
            (i, max(r["ood_error"], floor)),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_title("Automata: clean vs noisy training tokens")
    paths.append(_save(fig, directory, "automata.png"))
    return paths


def _save(figure, directory, name):
    import matplotlib.pyplot as plt

    path = os.path.join(directory, name)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def run(quick=False, seed=0):
    """Run the three experiments and print the report.

    Returns
    -------
    results : dict
        ``"mhla"``, ``"recall"`` and ``"automata"``, each with its ``"rows"``.
    """
    sizes = SIZES["quick" if quick else "default"]
    print(
        f"sklearn-linattn {__version__}: the experiments of Yau et al., 'Learning "
        "Linear Attention in Polynomial Time' (NeurIPS 2025)\n"
    )
    LinearAttentionRegressor().fit(np.ones((3, 2, 2)), np.ones(3))  # compile first
    results = {
        "mhla": random_mhla_experiment(seed=seed, **sizes["mhla"]),
    }
    _print_mhla(results["mhla"], sizes["mhla"]["token_dim"], sizes["mhla"]["n_tokens"])
    results["recall"] = recall_experiment(seed=seed, **sizes["recall"])
    _print_recall(results["recall"])
    results["automata"] = automata_experiment(seed=seed, **sizes["automata"])
    _print_automata(
        results["automata"],
        sizes["automata"]["n_states"],
        sizes["automata"]["n_symbols"],
    )
    print(
        "\nReading: with enough generic data the certificate holds and the fit is the "
        "generating function on every input; where it fails (too few samples, "
        "orthonormal contexts, clean one-hot tokens) other minimizers compute other "
        "functions, and covers() tells which inputs are still safe."
    )
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_linattn",
        description="Reproduce the experiments of 'Learning Linear Attention in "
        "Polynomial Time' (Yau et al., NeurIPS 2025) at laptop size.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--plot", metavar="DIR", help="write PNG figures to DIR (needs matplotlib)"
    )
    args = parser.parse_args(argv)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        parser.error("--plot needs matplotlib: python -m pip install matplotlib")
    start = time.perf_counter()
    results = run(quick=args.quick, seed=args.seed)
    if args.plot:
        for path in _plot(results, args.plot):
            print(f"wrote {path}")
    print(f"\ndone in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
