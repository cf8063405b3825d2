"""The documentation builds with warnings as errors, running every gallery example."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not (ROOT / "docs" / "conf.py").exists(), reason="no docs tree")
def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("sphinx_gallery")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(tmp_path / "doctrees"),
            str(ROOT / "docs"),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=ROOT,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    built = tmp_path / "html"
    for page in (
        "index.html",
        "user_guide.html",
        "theory.html",
        "benchmarks.html",
        "api.html",
        "auto_examples/index.html",
    ):
        assert (built / page).exists(), page
    assert len(list((built / "_images").glob("sphx_glr_plot_*"))) >= 5
