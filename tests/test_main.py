"""The demo runs end to end and reports what the method guarantees."""

import subprocess
import sys

from sklearn_linattn.__main__ import run


def test_demo_numbers(capsys):
    rows = run(token_dim=4, n_heads=2, n_tokens=10, seed=3)
    below, at, above = rows
    assert not below["identifiable"] and below["rank"] == below["n_samples"]
    assert above["identifiable"] and above["rank"] == 40
    assert above["test_error"] < 1e-8 and above["distance"] < 1e-8
    assert above["n_heads"] == 2 <= above["paper_n_heads"]
    assert below["test_error"] > 1e-3  # too few samples to pin the function down
    assert "identifiable" in capsys.readouterr().out


def test_module_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "sklearn_linattn", "--token-dim", "3", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "identifiable" in result.stdout and "p=18" in result.stdout
