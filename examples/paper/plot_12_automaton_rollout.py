"""
Executing automata by rollout
=============================

The paper's execution story with the layer run forward. Training data are one-step
transitions: a random automaton's transition table in the context, then the token
``[onehot(state, symbol); 0]`` of the current state with the symbol read; the target
is the next state. The fitted layer then executes whole unseen words (fresh automata,
lengths 10 to 500) with ``generate``: at each step its output is read as the next
state, and ``to_token`` combines that state with the next symbol of the word into the
token appended to the sequence. Each step updates ``S <- S + z z^T`` and costs the
same however long the word has grown; one wrong state derails the rest of the word.

Trained on clean one-hot tokens the data are not identifiable (the certificate fails)
and the learned layer computes another function than the generating one: on the
rollout's sequences its outputs drift away from the generating layer's as the words
grow, and a wrong state soon derails most words (the fractions are printed below).
With a little Gaussian noise on the training tokens the certificate holds, so the
learned layer is the generating one on every input, and the rollout's outputs stay
within float precision of it at every length.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn.datasets import (
    make_automaton_rollout,
    make_automaton_transitions,
)

n_states, n_symbols, max_length = 3, 2, 500
lengths = np.array([10, 20, 50, 100, 200, 500])
prompts, to_token, states = make_automaton_rollout(
    100, max_length, n_states, n_symbols, random_state=1
)

results = {}
for name, noise in [("clean tokens", 0.0), ("noisy tokens (0.1)", 0.1)]:
    X, y, _, truth = make_automaton_transitions(
        1000, n_states, n_symbols, token_noise=noise, random_state=0
    )
    model = LinearAttentionRegressor().fit(X, y)
    _, outputs = model.generate(prompts, max_length, to_token=to_token)
    _, generating = truth.generate(prompts, max_length, to_token=to_token)
    # a word of length L is executed correctly when its first L states are right
    derailed = np.cumsum(outputs.argmax(axis=2) != states, axis=1) > 0
    deviation = np.abs(outputs - generating).max(axis=(0, 2))
    results[name] = (
        1 - derailed[:, lengths - 1].mean(axis=0),
        deviation[lengths - 1],
    )
    print(
        f"{name}: certificate {bool(model.certificate_)} (lambda_min "
        f"{model.certificate_.min_eigenvalue:.1e}),\n  distance to the "
        f"generating layer {model.attention_.distance(truth):.1e}"
    )
    for length, accuracy, error in zip(lengths, *results[name], strict=True):
        print(
            f"  length {length:3d}: words executed {accuracy:.0%}, "
            f"largest output deviation {error:.1e}"
        )

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
for name, (accuracy, deviation) in results.items():
    left.plot(lengths, accuracy, "o-", label=name)
    right.semilogy(lengths, deviation, "o-", label=name)
left.set(
    xscale="log",
    xlabel="word length",
    ylabel="words executed exactly",
    ylim=(-0.05, 1.05),
)
right.set(
    xscale="log",
    xlabel="word length",
    ylabel="max |learned - generating| output",
)
left.legend()
fig.tight_layout()
plt.show()
