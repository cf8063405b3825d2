"""The documentation builds with warnings as errors, running every gallery example."""

import os
import re
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
        "own_sequences.html",
        "theory.html",
        "benchmarks.html",
        "api.html",
        "auto_examples/index.html",
        "auto_examples/plot_7_digits_rows.html",
        "auto_examples/plot_8_macro_forecasting.html",
        "generated/sklearn_linattn.preprocessing.PositionalEncoding.html",
    ):
        assert (built / page).exists(), page
    assert len(list((built / "_images").glob("sphx_glr_plot_*_001.png"))) >= 7

    # The API reference is a link of the header itself, not hidden under "More".
    index = (built / "index.html").read_text()
    header = re.search(
        r'<ul class="bd-navbar-elements navbar-nav">(.*?)</ul>', index, re.S
    )
    assert header is not None
    assert 'href="api.html"' in header.group(1).split("dropdown")[0]
    # The landing page shows code; guide pages have the site's contents on the left.
    assert "LinearAttentionRegressor().fit(X, y)" in re.sub(r"<[^>]+>", "", index)
    for page in ("user_guide.html", "own_sequences.html", "theory.html"):
        assert 'aria-label="Site Navigation"' in (built / page).read_text(), page
    # Internal constructors of the certificate are not public API.
    certificate = (
        built / "generated" / "sklearn_linattn.IdentifiabilityCertificate.html"
    )
    for internal in ("from_spectrum", "from_kernel", "from_estimates"):
        assert internal not in certificate.read_text(), internal
