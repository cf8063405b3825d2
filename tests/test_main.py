"""The demo runs end to end, reports what the method guarantees, and fails early and
clearly on bad arguments."""

import doctest
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from conftest import naive_lifted_features, naive_relative_distance, random_attention

import sklearn_linattn.__main__ as demo
from sklearn_linattn import MultiHeadLinearAttention
from sklearn_linattn.__main__ import (
    SIZES,
    format_table,
    main,
    relative_distance,
    relative_error,
    run,
)
from sklearn_linattn.datasets import make_random_mhla


def test_quick_demo_numbers(capsys):
    results = run(quick=True, seed=0)
    below, at, above = results["mhla"]
    p = above["n_lifted_features"]
    assert [row["n_samples"] for row in (below, at, above)] == [p // 2, p, 3 * p]
    assert not below["identifiable"] and below["rank"] == below["n_samples"]
    assert below["test_error"] > 1e-3  # too few samples to pin the function down
    assert above["identifiable"] and above["rank"] == p
    assert above["test_error"] < 1e-8 and above["distance"] < 1e-8
    generating_heads = SIZES["quick"]["mhla"]["n_heads"]
    assert above["n_heads"] == generating_heads <= above["paper_n_heads"]

    gaussian, orthogonal = results["recall"]
    assert gaussian["identifiable"] and gaussian["distance"] < 1e-8
    assert gaussian["ood_error"] < 1e-8 and gaussian["ood_covered"] == 1.0
    assert not orthogonal["identifiable"] and abs(orthogonal["min_eigenvalue"]) < 1e-12
    assert orthogonal["distance"] > 0.1 and orthogonal["ood_covered"] < 1.0

    clean, noisy = results["automata"]
    assert not clean["identifiable"] and noisy["identifiable"]
    assert clean["word_accuracy"] == noisy["word_accuracy"] == 1.0
    assert noisy["ood_error"] < 1e-8 < clean["ood_error"]
    assert clean["covered_in_distribution"] == 1.0 > clean["covered_ood"]
    assert noisy["covered_ood"] == 1.0

    # the report prints every row: the rows are plain data, the tables show them
    out = capsys.readouterr().out
    assert "Associative recall" in out and "Automata" in out
    assert f"p={p} lifted features" in out
    for row in (below, at, above):
        assert f"{row['test_error']:.1e}" in out
    assert f"{noisy['rank']}/{noisy['n_lifted_features']}" in out


def test_format_table_aligns_headers_and_cells():
    columns = [
        ("name", 6, "{name}"),
        ("error", 9, "{error:.1e}"),
        ("flag", 4, lambda row: "yes" if row["flag"] else "no"),
    ]
    rows = [
        {"name": "a", "error": 0.25, "flag": True},
        {"name": "bb", "error": 3.0, "flag": False},
    ]
    lines = format_table(columns, rows, indent="  ").split("\n")
    assert lines == [
        "    name     error flag",
        "       a   2.5e-01  yes",
        "      bb   3.0e+00   no",
    ]
    assert format_table(columns, []) == "  name     error flag"


def test_relative_measures_against_their_definitions(rng):
    predicted, expected = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    naive = np.sqrt(((predicted - expected) ** 2).sum() / (expected**2).sum())
    assert relative_error(predicted, expected) == pytest.approx(naive, rel=1e-12)
    assert relative_error(expected, expected) == 0.0

    for n_outputs in (1, 3):
        truth = random_attention(rng, 4, 2, n_outputs)
        other = random_attention(rng, 4, 3, n_outputs)
        assert relative_distance(other, truth) == pytest.approx(
            naive_relative_distance(other, truth), rel=1e-10
        )
    value, query = truth.value_matrices, truth.query_matrices
    # the same function: each head rescaled, heads in the other order
    same = MultiHeadLinearAttention(3 * value[::-1], query[::-1] / 3)
    assert relative_distance(same, truth) < 1e-12
    # a model computing twice the function is one model-size away
    doubled = MultiHeadLinearAttention(2 * value, query)
    assert relative_distance(doubled, truth) == pytest.approx(1.0, rel=1e-12)


def _benchmark_helpers():
    path = pathlib.Path(__file__).parents[1] / "benchmarks" / "_common.py"
    if not path.exists():
        pytest.skip("benchmarks/ is not next to tests/")
    spec = importlib.util.spec_from_file_location("_common", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_references_match_the_definitions(rng):
    common = _benchmark_helpers()
    # one definition of the measures: the demo's
    assert common.relative_error is relative_error
    assert common.relative_distance is relative_distance
    # the reference lift the Numba kernel is timed against is the definition
    X = rng.normal(size=(7, 5, 4))
    np.testing.assert_allclose(
        common.reference_lifted_features(X), naive_lifted_features(X), atol=1e-13
    )
    # the benchmarks' random model is make_random_mhla's generating model
    model = common.random_attention(5, 3, n_outputs=2, random_state=4)
    _, _, truth = make_random_mhla(20, 7, 5, n_heads=3, n_outputs=2, random_state=4)
    np.testing.assert_array_equal(model.value_matrices, truth.value_matrices)
    np.testing.assert_array_equal(model.query_matrices, truth.query_matrices)


def test_benchmark_tables_and_json(tmp_path, capsys):
    common = _benchmark_helpers()
    columns = [("d", "{d}"), ("time", "{seconds:.2f} s"), ("ok", lambda r: "yes")]
    table = common.markdown_table(columns, [{"d": 4, "seconds": 0.123}])
    assert table.split("\n") == [
        "| d | time | ok |",
        "| --- | --- | --- |",
        "| 4 | 0.12 s | yes |",
    ]
    # numpy numbers and arrays are written as plain JSON numbers and lists
    path = tmp_path / "run.json"
    common.write_json(str(path), {"x": np.float64(0.5), "n": np.arange(2)})
    assert json.loads(path.read_text()) == {"x": 0.5, "n": [0, 1]}
    common.write_json(None, {"x": 1})  # no --json: nothing written
    # a --json path that cannot be written fails before the benchmark runs
    parser = common.make_parser("A benchmark.\n\nMore.", quick=True)
    args = parser.parse_args(["--quick", "--json", str(path)])
    assert args.quick and args.json == str(path)
    for bad, message in [
        (str(tmp_path / "missing" / "run.json"), "is not a writable directory"),
        (str(tmp_path), "needs a file name"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(["--json", bad])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_docstring_examples():
    # pytest --doctest-modules never collects __main__.py: run its examples here
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    failed, attempted = doctest.testmod(demo, optionflags=flags)
    assert attempted >= 10 and failed == 0


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
    directory = tmp_path / "new" / "figures"  # created, parents too
    assert main(["--quick", "--plot", str(directory)]) == 0
    written = sorted(path.name for path in directory.iterdir())
    assert written == ["associative_recall.png", "automata.png", "random_mhla.png"]
    for name in written:
        assert (directory / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _exits_before_running(capsys, argv):
    """main(argv) exits with status 2 without printing any experiment; its stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no experiment ran
    assert "Traceback" not in captured.err
    return captured.err


def test_plot_without_matplotlib_is_a_clear_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    err = _exits_before_running(capsys, ["--quick", "--plot", str(tmp_path / "f")])
    assert "--plot needs matplotlib" in err and "pip install matplotlib" in err
    assert not (tmp_path / "f").exists()


def test_plot_into_an_unusable_directory_fails_first(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    err = _exits_before_running(capsys, ["--quick", "--plot", str(a_file)])
    assert f"--plot {a_file}: exists and is not a directory" in err

    below_a_file = a_file / "figures"
    err = _exits_before_running(capsys, ["--quick", "--plot", str(below_a_file)])
    assert f"--plot {below_a_file}: cannot write figures there" in err

    err = _exits_before_running(capsys, ["--quick", "--plot", ""])
    assert "--plot needs a directory name" in err


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root writes into read-only directories",
)
def test_plot_into_a_read_only_directory_fails_first(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o500)
    try:
        err = _exits_before_running(capsys, ["--quick", "--plot", str(read_only)])
    finally:
        read_only.chmod(0o700)
    assert "cannot write figures there (Permission denied)" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seed", "-1"], "argument --seed: must be an integer >= 0, got -1"),
        (["--seed", "abc"], "argument --seed: invalid int value: 'abc'"),
        (["--seed", "1.5"], "argument --seed: invalid int value: '1.5'"),
        (["--seed"], "argument --seed: expected one argument"),
        (["--plot"], "argument --plot: expected one argument"),
        (["--unknown"], "unrecognized arguments: --unknown"),
    ],
)
def test_bad_command_line_arguments(capsys, argv, message):
    err = _exits_before_running(capsys, argv)
    assert message in err and "usage: python -m sklearn_linattn" in err
