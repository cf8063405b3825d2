"""
Head recovery: the paper's read-out against minimal heads
==========================================================

The lifted fit determines only the part of ``W[a,b,c,e] = sum_h V_h[a,b] Q_h[c,e]``
symmetric in ``(b, c)``. The paper reads heads out of the SVD of the symmetric
split, which has rank ``d`` almost always, so it returns ``d`` heads even when the data
came from one. ``n_heads="auto"`` chooses the free antisymmetric part to make ``W`` low
rank and returns the fewest heads; both compute the same function.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn.datasets import make_random_mhla

d = 6
counts = {"generating": [], "paper read-out": [], "minimal (auto)": []}
for n_heads in range(1, d + 1):
    p = d * d * (d + 1) // 2
    X, y, truth = make_random_mhla(
        3 * p, 12, d, n_heads=n_heads, random_state=n_heads
    )
    paper = LinearAttentionRegressor(n_heads=None).fit(X, y)
    minimal = LinearAttentionRegressor().fit(X, y)
    counts["generating"].append(n_heads)
    counts["paper read-out"].append(paper.n_heads_)
    counts["minimal (auto)"].append(minimal.n_heads_)
    print(
        f"generating {n_heads}: paper read-out {paper.n_heads_}, minimal "
        f"{minimal.n_heads_}; distance between the two "
        f"{paper.attention_.distance(minimal.attention_):.1e}"
    )

# %%
# Singular values of the folded coefficients, two generating heads
# ----------------------------------------------------------------
X, y, truth = make_random_mhla(3 * p, 12, d, n_heads=2, random_state=0)
paper = LinearAttentionRegressor(n_heads=None).fit(X, y)
minimal = LinearAttentionRegressor().fit(X, y)


def head_strengths(model):
    return [
        np.linalg.norm(V) * np.linalg.norm(Q)
        for V, Q in zip(
            model.value_matrices_, model.query_matrices_, strict=True
        )
    ]


fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
x = np.arange(1, d + 1)
for offset, (name, values) in zip(
    (-0.25, 0, 0.25), counts.items(), strict=True
):
    left.bar(x + offset, values, 0.25, label=name)
left.set_xlabel("heads of the generating model")
left.set_ylabel("heads returned")
left.set_title(f"d = {d}: heads returned by each read-out")
left.set_ylim(0, d + 2)  # room above the bars for the legend
left.set_yticks(range(d + 1))
left.legend(loc="upper center", ncols=3, fontsize="small")
right.semilogy(
    range(1, paper.n_heads_ + 1),
    head_strengths(paper),
    "o-",
    label="paper read-out",
)
right.semilogy(
    range(1, minimal.n_heads_ + 1),
    head_strengths(minimal),
    "s-",
    label="minimal (auto)",
)
right.set_xlabel("head")
right.set_ylabel("strength ||V_h|| ||Q_h|| (singular value of W)")
right.set_title("Same function, 2 generating heads")
right.legend()
fig.tight_layout()
plt.show()
