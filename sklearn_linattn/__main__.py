"""``python -m sklearn_linattn``: learn a random multi-head linear attention layer.

Draws a random 2-head MHLA (the paper's first experiment: token entries N(0, 1/T),
parameters N(0, 1/d)), fits it by lifted least squares from below, around and above
``p`` samples, and reports test error on longer sequences, heads and the certificate.
"""

import argparse
import time

import numpy as np

from . import LinearAttentionRegressor, MultiHeadLinearAttention, __version__


def _random_mhla(rng, token_dim, n_heads):
    scale = 1.0 / np.sqrt(token_dim)
    return MultiHeadLinearAttention(
        rng.normal(scale=scale, size=(n_heads, 1, token_dim)),
        rng.normal(scale=scale, size=(n_heads, token_dim, token_dim)),
    )


def _sequences(rng, n_samples, n_tokens, token_dim):
    return rng.normal(
        scale=1 / np.sqrt(n_tokens), size=(n_samples, n_tokens, token_dim)
    )


def run(token_dim=6, n_heads=2, n_tokens=20, seed=0):
    """Fit a random MHLA from growing training sets and print a report.

    Returns
    -------
    rows : list of dict
        One per training-set size: ``n_samples``, ``test_error`` (relative),
        ``distance`` (relative, to the generating model), ``identifiable``,
        ``rank``, ``n_heads`` (minimal read-out), ``paper_n_heads`` (the paper's
        SVD read-out), ``seconds``.
    """
    rng = np.random.default_rng(seed)
    truth = _random_mhla(rng, token_dim, n_heads)
    p = token_dim * token_dim * (token_dim + 1) // 2
    X_test = _sequences(rng, 500, 2 * n_tokens, token_dim)
    y_test = truth.predict(X_test)[:, 0]
    print(
        f"sklearn-linattn {__version__}: learning a random {n_heads}-head linear "
        f"attention layer, d={token_dim}, {n_tokens} tokens, p={p} lifted features"
    )
    print("test sequences are twice as long as the training ones\n")
    header = (
        f"{'n_samples':>9}  {'test rel. error':>15}  {'rel. distance':>13}  "
        f"{'certificate':>16}  {'heads':>5}  {'paper heads':>11}  {'time':>7}"
    )
    print(header)
    print("-" * len(header))
    LinearAttentionRegressor().fit(X_test[:2], y_test[:2])  # compile before timing
    rows = []
    for n_samples in (p // 2, p, 3 * p):
        X = _sequences(rng, n_samples, n_tokens, token_dim)
        y = truth.predict(X)[:, 0]
        start = time.perf_counter()
        model = LinearAttentionRegressor().fit(X, y)
        seconds = time.perf_counter() - start
        paper = LinearAttentionRegressor(n_heads=None).fit(X, y)
        cert = model.certificate_
        row = {
            "n_samples": n_samples,
            "test_error": float(
                np.linalg.norm(model.predict(X_test) - y_test) / np.linalg.norm(y_test)
            ),
            "distance": model.attention_.distance(truth)
            / np.linalg.norm(truth.lifted_coef()),
            "identifiable": cert.identifiable,
            "rank": cert.rank,
            "n_heads": model.n_heads_,
            "paper_n_heads": paper.n_heads_,
            "seconds": seconds,
        }
        rows.append(row)
        verdict = "identifiable" if cert.identifiable else "not identif."
        print(
            f"{n_samples:>9}  {row['test_error']:>15.2e}  {row['distance']:>13.2e}  "
            f"{verdict:>12} {cert.rank:>3}  {row['n_heads']:>5}  "
            f"{row['paper_n_heads']:>11}  {seconds:>6.2f}s"
        )
    print(
        f"\nThe generating model has {n_heads} heads. 'heads' is the minimal read-out "
        "(n_heads='auto'); the paper's SVD read-out returns up to "
        f"d={token_dim} heads for the same function."
    )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_linattn",
        description="Learn a random multi-head linear attention layer by lifted "
        "least squares (Yau et al., NeurIPS 2025).",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--token-dim", type=int, default=6, help="token dimension d")
    parser.add_argument("--heads", type=int, default=2, help="heads of the target")
    args = parser.parse_args(argv)
    run(token_dim=args.token_dim, n_heads=args.heads, seed=args.seed)


if __name__ == "__main__":
    main()
