"""The README's Python examples run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.skipif(not README.exists(), reason="README.md is not next to the tests")
def test_readme_python_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})
    assert "True" in capsys.readouterr().out


@pytest.mark.skipif(not README.exists(), reason="README.md is not next to the tests")
def test_readme_quotes_the_demo(capsys):
    """The certificate paragraph's numbers are the demo's (python -m
    sklearn_linattn, seed 0)."""
    from sklearn_linattn.__main__ import run

    results = run()
    capsys.readouterr()
    text = " ".join(README.read_text().split())
    gaussian, orthogonal = results["recall"]
    clean, noisy = results["automata"]
    assert (
        f"(distance {orthogonal['distance']:.2f}, OOD error "
        f"{orthogonal['ood_error']:.2f})" in text
    )
    assert (
        f"(rank {clean['rank']}/{clean['n_lifted_features']}, OOD error "
        f"{clean['ood_error']:.2f})" in text
    )
    assert "at rounding, below 1e-13" in text
    assert max(gaussian["distance"], gaussian["ood_error"], noisy["ood_error"]) < 1e-13
