"""The demo runs end to end and reports what the method guarantees."""

import importlib.util
import subprocess
import sys

import pytest

from sklearn_linattn.__main__ import main, run


def test_quick_demo_numbers(capsys):
    results = run(quick=True, seed=0)
    below, at, above = results["mhla"]["rows"]
    assert not below["identifiable"] and below["rank"] == below["n_samples"]
    assert below["test_error"] > 1e-3  # too few samples to pin the function down
    assert above["identifiable"] and above["rank"] == results["mhla"]["p"]
    assert above["test_error"] < 1e-8 and above["distance"] < 1e-8
    assert above["n_heads"] == results["mhla"]["n_heads"] <= above["paper_n_heads"]

    gaussian, orthogonal = results["recall"]["rows"]
    assert gaussian["identifiable"] and gaussian["distance"] < 1e-8
    assert gaussian["ood_error"] < 1e-8 and gaussian["ood_covered"] == 1.0
    assert not orthogonal["identifiable"] and abs(orthogonal["min_eigenvalue"]) < 1e-12
    assert orthogonal["distance"] > 0.1 and orthogonal["ood_covered"] < 1.0

    clean, noisy = results["automata"]["rows"]
    assert not clean["identifiable"] and noisy["identifiable"]
    assert clean["word_accuracy"] == noisy["word_accuracy"] == 1.0
    assert noisy["ood_error"] < 1e-8 < clean["ood_error"]
    assert clean["covered_in_distribution"] == 1.0 > clean["covered_ood"]
    assert noisy["covered_ood"] == 1.0
    out = capsys.readouterr().out
    assert "Associative recall" in out and "Automata" in out


def test_module_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "sklearn_linattn", "--quick", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "identifiable" in result.stdout and "done in" in result.stdout


def test_plots_are_written(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["--quick", "--plot", str(tmp_path)]) == 0
    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == ["associative_recall.png", "automata.png", "random_mhla.png"]


def test_plot_without_matplotlib_is_a_clear_error(monkeypatch, capsys):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: (
            None if name == "matplotlib" else real_find_spec(name, *args)
        ),
    )
    with pytest.raises(SystemExit) as exit_info:
        main(["--quick", "--plot", "figures"])
    assert exit_info.value.code == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err


def test_bad_command_line_arguments(capsys):
    for argv in (["--seed", "abc"], ["--unknown"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid int value: 'abc'" in err and "unrecognized arguments" in err
