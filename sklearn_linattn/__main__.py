"""``python -m sklearn_linattn``: the paper's three experiments, in seconds.

1. Learning a random multi-head linear attention layer from below, around and above
   ``p`` samples: test error on longer sequences, heads recovered, certificate.
2. Associative recall on Gaussian (identifiable) and orthogonal (not identifiable)
   data: smallest eigenvalue, distance to the generating model, error on
   out-of-distribution queries.
3. Finite automata from lookups on clean and on noisy tokens: certificate rank,
   execution of unseen automata on long words, out-of-distribution error, and which
   inputs the certificate covers.

Each experiment is a function returning plain rows (one dict per fit); one formatter,
:func:`format_table`, prints them. :func:`relative_error` and
:func:`relative_distance` are the measures the demo and the benchmark scripts share.

Options: ``--quick`` (seconds), ``--seed``, ``--plot DIR`` (PNG figures, needs
matplotlib).
"""

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections import ChainMap

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

# Sizes of the default run (5 to 10 s on 2 cores) and of --quick (about 3 s).
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


def relative_error(predicted, expected):
    """Relative error of predictions, ``||predicted - expected|| / ||expected||``.

    Parameters
    ----------
    predicted, expected : array-like of the same shape
        Norms are Frobenius norms over all entries.

    Returns
    -------
    error : float

    Examples
    --------
    >>> from sklearn_linattn.__main__ import relative_error
    >>> relative_error([3.0, 4.0], [3.0, 0.0])
    1.333...
    """
    predicted, expected = np.asarray(predicted), np.asarray(expected)
    return float(np.linalg.norm(predicted - expected) / np.linalg.norm(expected))


def relative_distance(fitted, truth):
    """Distance between two models relative to the size of the generating one.

    The model distance of Yau et al. (2025), the Frobenius norm of the difference of
    the lifted coefficients (zero exactly when both models compute the same function
    on every input), divided by the norm of ``truth``'s lifted coefficients.

    Parameters
    ----------
    fitted, truth : MultiHeadLinearAttention
        Models with the same ``token_dim`` and ``n_outputs``.

    Returns
    -------
    distance : float

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_linattn import MultiHeadLinearAttention
    >>> from sklearn_linattn.__main__ import relative_distance
    >>> truth = MultiHeadLinearAttention(np.ones((1, 1, 2)), np.eye(2)[None])
    >>> rescaled = MultiHeadLinearAttention(2 * np.ones((1, 1, 2)), np.eye(2)[None] / 2)
    >>> relative_distance(rescaled, truth)  # the same function
    0.0
    >>> doubled = MultiHeadLinearAttention(2 * np.ones((1, 1, 2)), np.eye(2)[None])
    >>> relative_distance(doubled, truth)
    1.0
    """
    return float(fitted.distance(truth) / np.linalg.norm(truth.lifted_coef()))


def format_table(columns, rows, indent=""):
    """A plain-text table with right-aligned columns.

    Parameters
    ----------
    columns : sequence of (header, width, cell)
        ``cell`` is a format string filled with a row's fields (``"{rank}"``,
        ``"{error:.1e}"``) or a function of the row returning a string. Header and
        cells are right-aligned to ``width`` characters.
    rows : iterable of dict
    indent : str, default=""
        Put in front of every line.

    Returns
    -------
    table : str
        The header line and one line per row, without a final newline.

    Examples
    --------
    >>> from sklearn_linattn.__main__ import format_table
    >>> columns = [("samples", 8, "{n}"), ("error", 8, "{error:.1e}"),
    ...            ("ok", 4, lambda row: "yes" if row["error"] < 1 else "no")]
    >>> print(format_table(columns, [{"n": 10, "error": 0.5}, {"n": 200, "error": 2}]))
     samples    error   ok
          10  5.0e-01  yes
         200  2.0e+00   no
    """
    lines = [" ".join(f"{header:>{width}}" for header, width, _ in columns)]
    for row in rows:
        cells = (
            cell.format(**row) if isinstance(cell, str) else cell(row)
            for _, _, cell in columns
        )
        lines.append(
            " ".join(
                f"{text:>{width}}"
                for text, (_, width, _) in zip(cells, columns, strict=True)
            )
        )
    return "\n".join(indent + line for line in lines)


def random_mhla_experiment(token_dim, n_heads, n_tokens, seed):
    """Fit a random MHLA from p/2, p and 3p samples (p lifted features).

    Returns
    -------
    rows : list of dict
        One per training-set size: ``n_samples``, ``n_lifted_features``,
        ``test_error`` (relative, on sequences twice as long), ``distance`` (relative,
        to the generating model), ``identifiable``, ``rank``, ``n_heads`` (minimal
        read-out), ``paper_n_heads`` (SVD read-out) and ``seconds`` (fit time).
    """
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
                "n_lifted_features": p,
                "test_error": relative_error(model.predict(X_test), y_test),
                "distance": relative_distance(model.attention_, truth),
                "identifiable": model.certificate_.identifiable,
                "rank": model.certificate_.rank,
                "n_heads": model.n_heads_,
                "paper_n_heads": paper.n_heads_,
                "seconds": seconds,
            }
        )
    return rows


def recall_experiment(key_dim, n_samples, seed):
    """Associative recall: Gaussian contexts vs whole orthonormal bases.

    Returns
    -------
    rows : list of dict
        One per training distribution: ``distribution``, ``n_pairs``,
        ``min_eigenvalue``, ``identifiable``, ``rank``, ``distance`` (relative, to the
        generating model), ``ood_pairs`` (pairs in the out-of-distribution contexts),
        ``ood_error`` (relative), ``ood_covered`` (fraction of out-of-distribution
        inputs the certificate covers), all of the minimum-norm lifted fit; and
        ``n_heads`` and ``heads_distance`` of the default head read-out (the fewest
        heads that fit the data as well).
    """
    ood_pairs = 3 * key_dim
    X_ood, y_ood, _ = make_associative_recall(
        500, key_dim, ood_pairs, "gaussian", random_state=seed + 7
    )
    rows = []
    for distribution, n_pairs in (("gaussian", key_dim), ("orthogonal", 2 * key_dim)):
        X, y, truth = make_associative_recall(
            n_samples, key_dim, n_pairs, distribution, random_state=seed
        )
        # the paper's point is about any minimizer: the minimum-norm lifted fit
        model = LinearAttentionRegressor(n_heads=None).fit(X, y)
        heads = LinearAttentionRegressor().fit(X, y)
        rows.append(
            {
                "distribution": distribution,
                "n_pairs": n_pairs,
                "min_eigenvalue": model.certificate_.min_eigenvalue,
                "identifiable": model.certificate_.identifiable,
                "rank": model.certificate_.rank,
                "distance": relative_distance(model.attention_, truth),
                "ood_pairs": ood_pairs,
                "ood_error": relative_error(model.predict(X_ood), y_ood),
                "ood_covered": float(model.certificate_.covers(X_ood).mean()),
                "n_heads": heads.n_heads_,
                "heads_distance": relative_distance(heads.attention_, truth),
            }
        )
    return rows


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
    """Learn transition lookups from clean and from noisy tokens; run automata.

    Returns
    -------
    rows : list of dict
        One per token noise level: ``token_noise``, ``rank``, ``n_lifted_features``,
        ``identifiable``, ``step_accuracy`` and ``word_accuracy`` (executing
        ``n_automata`` unseen automata on words of ``word_length`` symbols),
        ``ood_error`` (relative, on partial tables with repeated entries),
        ``covered_in_distribution``, ``covered_ood`` (fractions the certificate
        covers) and ``n_heads``.
    """
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
                "ood_error": relative_error(
                    model.predict(X_ood), truth.predict(X_ood)
                ),
                "covered_in_distribution": float(
                    model.certificate_.covers(X_in).mean()
                ),
                "covered_ood": float(model.certificate_.covers(X_ood).mean()),
                "n_heads": model.n_heads_,
            }
        )
    return rows


def _verdict(row):
    return "identifiable" if row["identifiable"] else "not identif."


def _noise_label(row):
    return "clean" if row["token_noise"] == 0 else f"noise {row['token_noise']}"


# The report: for each experiment, its function, its title (filled with the sizes and
# the first row) and its table's columns.
EXPERIMENTS = {
    "mhla": (
        random_mhla_experiment,
        "1. Random {n_heads}-head linear attention, d={token_dim}, {n_tokens} tokens, "
        "p={n_lifted_features} lifted features\n"
        "   test sequences are twice as long as the training ones",
        [
            ("samples", 8, "{n_samples}"),
            ("test rel.err", 12, "{test_error:.1e}"),
            ("rel.distance", 12, "{distance:.1e}"),
            ("certificate", 12, _verdict),
            ("rank", 4, "{rank}"),
            ("heads", 5, "{n_heads}"),
            ("paper heads", 11, "{paper_n_heads}"),
            ("fit", 7, "{seconds:.2f}s"),
        ],
    ),
    "recall": (
        recall_experiment,
        "2. Associative recall: the value stored under the query's key\n"
        "   out-of-distribution queries: Gaussian contexts of {ood_pairs} pairs",
        [
            ("training data", 24, "{distribution}, {n_pairs} pairs"),
            ("lambda_min", 10, lambda row: f"{max(row['min_eigenvalue'], 0.0):.1e}"),
            ("rank", 5, "{rank}"),
            ("rel.distance", 12, "{distance:.1e}"),
            ("OOD rel.err", 11, "{ood_error:.1e}"),
            ("OOD covered", 11, "{ood_covered:.0%}"),
            ("heads", 5, "{n_heads}"),
            ("heads' distance", 15, "{heads_distance:.1e}"),
        ],
    ),
    "automata": (
        automata_experiment,
        "3. Automata ({n_states} states, {n_symbols} symbols): learn one lookup, "
        "run {n_automata} unseen automata on {word_length}-symbol words\n"
        "   OOD: partial transition tables with repeated entries",
        [
            ("tokens", 11, _noise_label),
            ("rank", 9, "{rank}/{n_lifted_features}"),
            ("steps ok", 8, "{step_accuracy:.0%}"),
            ("words ok", 8, "{word_accuracy:.0%}"),
            ("OOD rel.err", 11, "{ood_error:.1e}"),
            ("covered in/OOD", 14, "{covered_in_distribution:.0%}/{covered_ood:.0%}"),
            ("heads", 5, "{n_heads}"),
        ],
    ),
}


def _plot(results, directory):
    """Write the three figures to ``directory`` (checked by ``main``); their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []

    mhla = results["mhla"]
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
    ax.axvline(
        mhla[0]["n_lifted_features"], color="gray", lw=0.8, label="p (lifted features)"
    )
    ax.set_xlabel("training sequences")
    ax.set_ylabel("relative error")
    ax.set_title("Learning a random MHLA")
    ax.legend(fontsize=8)
    paths.append(_save(fig, directory, "random_mhla.png"))

    fig, ax = plt.subplots(figsize=(5, 3.5))
    recall = results["recall"]
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
    # room above the tallest bar (quick runs' errors reach 1e4)
    tallest = max([r[k] for r in recall for k in ("distance", "ood_error")] + [1.0])
    ax.set_ylim(floor, 10 * tallest)
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
    automata = results["automata"]
    labels = [_noise_label(r) for r in automata]
    ax.bar(labels, [max(r["ood_error"], floor) for r in automata])
    ax.set_yscale("log")
    # room above the tallest bar for its label (quick runs' errors reach 1e4)
    ax.set_ylim(floor, 1e3 * max([r["ood_error"] for r in automata] + [0.1]))
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

    Parameters
    ----------
    quick : bool, default=False
        Small sizes (about 3 s instead of 5 to 10 s).
    seed : int, default=0
        Seed of every random draw.

    Returns
    -------
    results : dict
        ``"mhla"``, ``"recall"`` and ``"automata"``, each the list of rows its
        experiment function returned.
    """
    sizes = SIZES["quick" if quick else "default"]
    print(
        f"sklearn-linattn {__version__}: the experiments of Yau et al., 'Learning "
        "Linear Attention in Polynomial Time' (NeurIPS 2025)\n"
    )
    LinearAttentionRegressor().fit(np.ones((3, 2, 2)), np.ones(3))  # compile first
    results = {}
    for name, (experiment, title, columns) in EXPERIMENTS.items():
        rows = experiment(seed=seed, **sizes[name])
        results[name] = rows
        if len(results) > 1:
            print()
        # the sizes name the experiment; the first row adds what it computed (p, ...)
        print(title.format_map(ChainMap(sizes[name], rows[0])))
        print(format_table(columns, rows, indent="   "))
    print(
        "\nReading: with enough generic data the certificate holds and the fit is the "
        "generating function on every input; where it fails (too few samples, "
        "orthonormal contexts, clean one-hot tokens) other minimizers compute other "
        "functions, and covers() tells which inputs are still safe."
    )
    return results


def _seed(text):
    """argparse type of ``--seed``: an integer >= 0 (what numpy accepts as a seed)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {value}")
    return value


def _check_plot_directory(parser, directory):
    """Before any experiment runs: matplotlib imports and ``directory`` is writable.

    Creates ``directory`` (and its parents) if needed; errors exit through
    ``parser.error`` (exit status 2, a message naming the problem).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except ImportError as error:
        parser.error(
            f"--plot needs matplotlib ({error}): python -m pip install matplotlib"
        )
    if not directory:
        parser.error("--plot needs a directory name, got ''")
    if os.path.exists(directory) and not os.path.isdir(directory):
        parser.error(f"--plot {directory}: exists and is not a directory")
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        parser.error(
            f"--plot {directory}: cannot write figures there "
            f"({error.strerror or error})"
        )


def main(argv=None):
    """Command line: ``python -m sklearn_linattn [--quick] [--seed N] [--plot DIR]``.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments; None reads ``sys.argv``. Bad arguments (a negative seed, a
        ``--plot`` directory that cannot be written, matplotlib missing) exit with
        status 2 and a message before any experiment runs.

    Returns
    -------
    status : int
        0 on success.
    """
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_linattn",
        description="Reproduce the experiments of 'Learning Linear Attention in "
        "Polynomial Time' (Yau et al., NeurIPS 2025) at laptop size.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument(
        "--seed", type=_seed, default=0, help="random seed, an integer >= 0 (default 0)"
    )
    parser.add_argument(
        "--plot", metavar="DIR", help="write PNG figures to DIR (needs matplotlib)"
    )
    args = parser.parse_args(argv)
    if args.plot is not None:
        _check_plot_directory(parser, args.plot)
    start = time.perf_counter()
    with warnings.catch_warnings():
        # the paper's noiseless tasks at n <= p: interpolation is what they study
        warnings.filterwarnings("ignore", message="alpha=0 and the model has")
        results = run(quick=args.quick, seed=args.seed)
    if args.plot is not None:
        for path in _plot(results, args.plot):
            print(f"wrote {path}")
    print(f"\ndone in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
