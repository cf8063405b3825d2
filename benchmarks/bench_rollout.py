"""Rollout speed: ``generate`` (streaming S) against recomputing predict on the prefix.

Run: ``python benchmarks/bench_rollout.py [--quick] [--repeats R] [--json FILE]``

For a ``LinearAttentionRegressor`` fitted to a one-head layer ``y = S Q q`` with
``Q`` symmetric positive definite (so that the normalised rollout contracts and the
two ways agree to rounding; see ``tests/test_rollout.py``), read out through
``coef_`` and through its ``attention_`` (the heads), with a ``to_token`` that
normalises, it times ``n_steps`` generated tokens from 32 prompts of 10 tokens
two ways: ``generate`` (``S <- S + z z^T``, O(d^2) state update per step) and the
naive loop that calls ``predict`` on the whole grown sequence at every step (cost
growing with the length). Reported: steps per second of each (median of
``--repeats`` runs, the two interleaved), their ratio from the same run, and the
largest relative difference of the generated tokens (they must agree).
"""

import numpy as np
from _common import (
    compile_kernels,
    make_parser,
    markdown_table,
    median_seconds,
    write_json,
)

from sklearn_linattn import LinearAttentionRegressor, MultiHeadLinearAttention


def unit(outputs, step):
    return outputs / np.linalg.norm(outputs, axis=1, keepdims=True)


def naive_rollout(predict, prompts, n_steps):
    """Predict on the whole grown sequence at each step; append the next token."""
    sequences = prompts
    tokens = []
    for step in range(n_steps):
        token = unit(predict(sequences), step)
        tokens.append(token)
        sequences = np.concatenate([sequences, token[:, None, :]], axis=1)
    return np.stack(tokens, axis=1)


def measure(name, model, prompts, n_steps, repeats):
    generated = model.generate(prompts, n_steps, to_token=unit).tokens
    naive = naive_rollout(model.predict, prompts, n_steps)
    difference = float(np.abs(generated - naive).max() / np.abs(naive).max())
    fast, slow = [], []
    for _ in range(repeats):  # interleaved, so that load changes hit both
        fast.append(median_seconds(lambda: model.generate(prompts, n_steps, unit), 1))
        slow.append(
            median_seconds(lambda: naive_rollout(model.predict, prompts, n_steps), 1)
        )
    fast, slow = float(np.median(fast)), float(np.median(slow))
    return {
        "model": name,
        "d": prompts.shape[2],
        "n_steps": n_steps,
        "generate_steps_per_s": n_steps / fast,
        "naive_steps_per_s": n_steps / slow,
        "speedup": slow / fast,
        "max_relative_difference": difference,
    }


def main():
    parser = make_parser(__doc__, quick=True)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    compile_kernels()
    dims = (4, 8) if args.quick else (4, 8, 16)
    horizons = (100,) if args.quick else (100, 1000)
    rows = []
    for d in dims:
        rng = np.random.default_rng(d)
        A = rng.normal(size=(d, d))
        truth = MultiHeadLinearAttention(
            np.eye(d)[None], (A @ A.T / d + np.eye(d))[None]
        )
        X = rng.normal(size=(3 * d**3, 10, d))
        fitted = LinearAttentionRegressor().fit(X, truth.predict(X))
        prompts = X[:32]
        for n_steps in horizons:
            rows.append(
                measure("regressor (coef_)", fitted, prompts, n_steps, args.repeats)
            )
            rows.append(
                measure(
                    "attention_ (heads)",
                    fitted.attention_,
                    prompts,
                    n_steps,
                    args.repeats,
                )
            )
            print(rows[-2], rows[-1], flush=True)
    print(
        markdown_table(
            [
                ("model", "{model}"),
                ("d", "{d}"),
                ("steps", "{n_steps}"),
                ("generate (steps/s)", "{generate_steps_per_s:.0f}"),
                ("predict on prefix (steps/s)", "{naive_steps_per_s:.0f}"),
                ("ratio", "{speedup:.1f}"),
                ("max rel. difference", "{max_relative_difference:.1e}"),
            ],
            rows,
        )
    )
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
