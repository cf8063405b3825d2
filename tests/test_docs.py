"""The documentation: its code blocks run as shown, and the site builds without
warnings, running every gallery example."""

import doctest
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([*DOCS.glob("*.rst"), *DOCS.glob("*.md")]) if DOCS.exists() else []
RUN = {"python", "pycon"}  # blocks that run, as doctests
SHOWN = {"bash", "text", "none"}  # blocks that are only shown
# Longest code line: wider lines are cut off in the page's column at 1400 px
# (about 80 characters of code fit in a guide page, 82 in a gallery example).
MAX_LINE = 76
MAX_EXAMPLE_LINE = 80
EXAMPLES = sorted((ROOT / "examples").glob("**/plot_*.py"))

_RST_DIRECTIVE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)")
_MD_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(?:\{(?:code-block|code)\}\s*)?(\S*)")


def code_blocks(path):
    """(language, line number, text) of every code block of an .rst or .md page."""
    lines = Path(path).read_text().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if path.suffix == ".rst" and (match := _RST_DIRECTIVE.match(line)):
            indent = len(match.group(1))
            i += 1
            while i < len(lines) and lines[i].strip().startswith(":"):
                i += 1  # directive options
            while i < len(lines) and not lines[i].strip():
                i += 1
            start, body = i + 1, []
            while i < len(lines) and (
                not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
            ):
                body.append(lines[i])
                i += 1
            text = textwrap.dedent("\n".join(body)).strip("\n")
            blocks.append((match.group(2) or "python", start, text + "\n"))
            continue
        if path.suffix == ".md" and (match := _MD_FENCE.match(line)):
            fence, start, body = match.group(2), i + 2, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                if not lines[i].strip().startswith(":"):  # MyST options
                    body.append(lines[i])
                i += 1
            i += 1
            if match.group(3).startswith("{"):
                continue  # a MyST directive such as {image}, not code
            text = textwrap.dedent("\n".join(body)).strip("\n")
            blocks.append((match.group(3) or "text", start, text + "\n"))
            continue
        i += 1
    return blocks


def test_the_parser_finds_blocks_of_both_formats(tmp_path):
    rst = tmp_path / "page.rst"
    rst.write_text(
        "Text\n\n.. code-block:: pycon\n   :caption: x\n\n   >>> 1 + 1\n   2\n\n"
        "After.\n\n.. code-block:: bash\n\n   pip install .\n"
    )
    assert code_blocks(rst) == [
        ("pycon", 6, ">>> 1 + 1\n2\n"),
        ("bash", 13, "pip install .\n"),
    ]
    md = tmp_path / "page.md"
    md.write_text(
        "# T\n\n```pycon\n>>> 2 * 3\n6\n```\n\n```{code-block} text\nx\n```\n"
        "\n```{image} figure.svg\n:alt: no code\n```\n"
    )
    assert code_blocks(md) == [("pycon", 4, ">>> 2 * 3\n6\n"), ("text", 9, "x\n")]


def run_page(path):
    """Run a page's code blocks in order, in one namespace, as doctests.

    Returns the doctest report of the failures (empty when all pass).
    """
    globs = {"__name__": "__docs__"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    report = []
    for language, line, text in code_blocks(path):
        if language not in RUN:
            continue
        name = f"{path.name}, block at line {line}"
        test = parser.get_doctest(text, globs, name, str(path), line - 1)
        test.globs = globs  # DocTest copies them; the page's blocks share one
        runner.run(test, out=report.append, clear_globs=False)
    return "".join(report)


def test_a_failing_block_is_reported(tmp_path):
    page = tmp_path / "page.rst"
    page.write_text(
        ".. code-block:: pycon\n\n   >>> x = 2\n   >>> x + 1\n   3\n\n"
        ".. code-block:: pycon\n\n   >>> x * 10\n   21\n   >>> undefined\n"
    )
    report = run_page(page)
    assert "Expected:\n    21\nGot:\n    20" in report
    assert "NameError: name 'undefined' is not defined" in report


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_code_blocks_run_as_shown(page, monkeypatch):
    """Every Python block of the page is a doctest that passes: it runs, and it
    prints what the page shows. Shell and text blocks are only checked for width."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    blocks = code_blocks(page)
    for language, line, text in blocks:
        assert language in RUN | SHOWN, f"{page.name}:{line}: language {language!r}"
        if language in RUN:
            assert ">>>" in text, f"{page.name}:{line}: a Python block without >>>"
        for offset, code in enumerate(text.splitlines()):
            assert len(code) <= MAX_LINE, (
                f"{page.name}:{line + offset}: {len(code)} characters, at most "
                f"{MAX_LINE} fit the page"
            )
    report = run_page(page)
    assert not report, report


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_code_fits_the_page(example):
    """The code cells of a gallery example fit its column (text cells are prose,
    wrapped by the browser)."""
    parser = pytest.importorskip("sphinx_gallery.py_source_parser")
    _, blocks = parser.split_code_and_text_blocks(str(example), return_node=False)[:2]
    for block in blocks:
        if block.type != "code":
            continue
        for offset, code in enumerate(block.content.splitlines()):
            assert len(code) <= MAX_EXAMPLE_LINE, (
                f"{example.name}:{block.lineno + offset}: {len(code)} characters"
            )


def _public_docstrings():
    """(name, docstring) of every public object of the package and of the
    public methods and properties of its classes."""
    import importlib
    import inspect

    seen, found = set(), []

    def visit(obj, name):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        found.append((name, inspect.getdoc(obj) or ""))
        if inspect.isclass(obj):  # with the package's base classes' methods
            for base in obj.__mro__:
                if not base.__module__.startswith("sklearn_linattn"):
                    continue
                for key, value in vars(base).items():
                    if key.startswith("_"):
                        continue
                    value = getattr(value, "__func__", getattr(value, "fget", value))
                    if inspect.isfunction(value):
                        visit(value, f"{name}.{key}")

    for module_name in ("sklearn_linattn", "sklearn_linattn.datasets",
                        "sklearn_linattn.preprocessing"):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            visit(getattr(module, name), f"{module_name}.{name}")
    return found


def test_api_examples_fit_their_page():
    """The examples of the API pages fit their column (code lines of 79 to 84
    characters were cut off on the pages of the estimators, displays, data sets
    and preprocessing at every window width; the column holds about 77)."""
    long = [
        f"{name}: {len(line)} characters: {line}"
        for name, doc in _public_docstrings()
        for line in doc.splitlines()
        if line.startswith((">>> ", "... ")) and len(line) > MAX_LINE
    ]
    assert not long, "\n".join(long)


def _public_signatures(docscrape):
    """(name, is a class, the documented Parameters' names, the signature's
    parameters) of every public class and function of the package
    (dataclasses are left out: their fields are their Attributes)."""
    import dataclasses
    import importlib
    import inspect

    for module_name in ("sklearn_linattn", "sklearn_linattn.datasets",
                        "sklearn_linattn.preprocessing"):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                if obj.__init__ is object.__init__ or dataclasses.is_dataclass(obj):
                    continue
                doc = docscrape.ClassDoc(obj)
            elif inspect.isfunction(obj):
                doc = docscrape.FunctionDoc(obj)
            else:
                continue
            documented = {
                part.strip()
                for entry in doc["Parameters"]
                for part in entry.name.split(",")
            }
            parameters = {
                key
                for key, value in inspect.signature(obj).parameters.items()
                if value.kind not in (value.VAR_POSITIONAL, value.VAR_KEYWORD)
            }
            yield name, inspect.isclass(obj), documented, parameters


def test_every_parameter_of_a_public_class_is_documented():
    """Each parameter of a public class's constructor has an entry in its
    docstring's Parameters (LinearAttentionClassifier left out solver_tol and
    max_iter, LinearAttentionClassifierCV head_work_limit)."""
    docscrape = pytest.importorskip("numpydoc.docscrape")
    missing = [
        f"{name}: {key}"
        for name, is_class, documented, parameters in _public_signatures(docscrape)
        if is_class
        for key in sorted(parameters - documented)
    ]
    assert not missing, "\n".join(missing)


def test_documented_parameters_are_the_signature():
    """A public class's or function's Parameters section names exactly the
    parameters of its signature: no prose inside the section, which numpydoc reads
    as a parameter (SeriesToTokens showed a paragraph as a bold parameter name with
    raw backticks), and every parameter of a public function described
    (automaton_lookup_attention had no Parameters section); no prose in Returns
    either."""
    docscrape = pytest.importorskip("numpydoc.docscrape")
    wrong = []
    for name, _, documented, parameters in _public_signatures(docscrape):
        wrong += [f"{name}: documented {key!r}" for key in documented - parameters]
        wrong += [f"{name}: missing {key!r}" for key in parameters - documented]
    # A sentence in Returns is read as a return value of that type (generate's
    # and generate_pipeline's 'Both come as a named tuple ...' rendered bold).
    for name, text in _public_docstrings():
        wrong += [
            f"{name}: prose in Returns: {entry.type!r}"
            for entry in docscrape.NumpyDocString(text)["Returns"]
            if not entry.desc and entry.type.rstrip().endswith(".")
        ]
    assert not wrong, "\n".join(sorted(wrong))


def test_references_to_other_projects_have_an_offline_inventory():
    """Every :class:/:meth:/:func: reference of the docstrings and pages to
    another project names a project with an offline inventory, so that the
    build links it or warns (a project without one was left unlinked silently:
    the displays' matplotlib methods)."""
    sys.path.insert(0, str(DOCS / "_ext"))
    import linattn_docs

    role = re.compile(r":(?:class|meth|func|attr|obj|mod|exc):`~?([A-Za-z_][\w.]*)")
    sources = [*(ROOT / "sklearn_linattn").glob("**/*.py"), *PAGES]
    names = {
        target.split(".")[0]
        for path in sources
        for target in role.findall(path.read_text())
        if "." in target
    }
    # importable packages, not this package's own names (CountFit.passes)
    projects = {name for name in names if importlib.util.find_spec(name)}
    assert "sklearn" in projects  # the scan finds references
    missing = projects - {"sklearn_linattn"} - set(linattn_docs.OFFLINE_INVENTORIES)
    assert not missing, sorted(missing)


def test_real_data_numbers_come_from_the_recorded_run():
    """The real-data page types no score: its tables are drawn from the recorded
    run of benchmarks/bench_real_sequences.py, which covers every data set and
    model the script defines, and every recorded score reaches the table."""
    import json

    sys.path.insert(0, str(DOCS / "_ext"))
    import linattn_docs

    page = (DOCS / "real_data.rst").read_text()
    assert ".. recorded-table:: bench_real_sequences" in page
    assert ".. plot:: figures/real_data.py" in page
    # the comparison section (the one-token section quotes its own recorded run,
    # benchmarks/recorded/bench_one_token.json)
    start = page.index("The comparison\n---")
    section = page[start : page.index("\n---", page.index("\n---", start) + 4)]
    prose = re.sub(r"``[^`]*``", "", section)  # version floors and code are literals
    assert not re.findall(r"\b\d\.\d{2,}\b|\b\d+(?:\.\d+)? s\b", prose)
    script = linattn_docs.benchmark_script("bench_real_sequences")
    recorded = ROOT / "benchmarks" / "recorded" / "bench_real_sequences.json"
    record = json.loads(recorded.read_text())
    assert [row["name"] for row in record["results"]] == list(script.DATA_SETS)
    table = script.rst_table(record, script.MAIN_MODELS)
    for row in record["results"]:
        assert row["name"] in table
        for key in script.MODELS:
            if script.applies(key, row["task"]):
                assert key in row["results"], (row["name"], key)
            result = row["results"].get(key, {})
            if key in script.MAIN_MODELS and "score" in result:
                assert f"{result['score']:.3f}" in table


def printed_lines(rst):
    """The lines a gallery example printed, from its generated .rst page."""
    lines, inside = [], False
    for line in Path(rst).read_text().splitlines():
        if line.startswith(".. rst-class:: sphx-glr-script-out"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
        elif (
            inside
            and line.startswith("    ")
            and not line.strip().startswith(".. code-block::")
        ):
            lines.append(line[4:])
    return lines


@pytest.mark.skipif(not (DOCS / "conf.py").exists(), reason="no docs tree")
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
            str(DOCS),
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
        "getting_started.html",
        "user_guide.html",
        "own_sequences.html",
        "real_data.html",
        "theory.html",
        "benchmarks.html",
        "glossary.html",
        "api.html",
        "auto_examples/index.html",
        "auto_examples/real_data/plot_7_digits_rows.html",
        "auto_examples/real_data/plot_8_macro_forecasting.html",
        "auto_examples/real_data/plot_11_real_sequences.html",
        "generated/sklearn_linattn.preprocessing.PositionalEncoding.html",
    ):
        assert (built / page).exists(), page
    examples = list((built / "_images").glob("sphx_glr_plot_*_001.png"))
    assert len(examples) >= 9
    # what the examples print fits their pages too
    for page in (DOCS / "auto_examples").glob("**/plot_*.rst"):
        printed = printed_lines(page)
        assert printed, page.name
        for line in printed:
            assert len(line) <= MAX_EXAMPLE_LINE, f"{page.name}: {line!r}"
    # figures at twice the resolution too, for high-density screens
    assert list((built / "_images").glob("sphx_glr_plot_1_*_001_2_00x.png"))

    index = (built / "index.html").read_text()
    header = re.search(
        r'<ul class="bd-navbar-elements navbar-nav">(.*?)</ul>', index, re.S
    )
    assert header is not None
    # The API reference is a link of the header itself, not hidden under "More".
    assert 'href="api.html"' in header.group(1).split("dropdown")[0]
    # The version is in the header.
    from sklearn_linattn import __version__

    assert f"sklearn-linattn {__version__}" in re.sub(r"<[^>]+>", " ", index)
    # The landing page shows code and a figure drawn in the build.
    text = re.sub(r"<[^>]+>", "", index)
    assert "LinearAttentionRegressor().fit(X, y)" in text
    assert re.search(r'<img [^>]*srcset="[^"]*2x', index)
    for page in ("user_guide.html", "own_sequences.html", "theory.html"):
        assert 'aria-label="Site Navigation"' in (built / page).read_text(), page
    # The estimators' generate, defined on their shared base class, is on their
    # pages (the template leaves other inherited members, scikit-learn's, out).
    for name in ("LinearAttentionRegressor", "LinearAttentionClassifierCV"):
        page = (built / "generated" / f"sklearn_linattn.{name}.html").read_text()
        assert f'id="sklearn_linattn.{name}.generate"' in page, name
    # Internal constructors and fields of the certificate are not public API.
    certificate = (
        built / "generated" / "sklearn_linattn.IdentifiabilityCertificate.html"
    ).read_text()
    for internal in ("from_spectrum", "from_kernel", "from_estimates", "_span"):
        assert internal not in certificate, internal
    # Links into scikit-learn's documentation, and "Examples using" on API pages.
    guide = (built / "model_selection.html").read_text()
    assert "https://scikit-learn.org/stable/modules/generated/" in guide
    regressor = (
        built / "generated" / "sklearn_linattn.LinearAttentionRegressor.html"
    ).read_text()
    assert "Examples using" in regressor
    assert "sphx-glr-thumbcontainer" in regressor


# --- the head read-out's prose against what it does ----------------------------------


def _section(text, start, end):
    """The text from ``start`` up to ``end``, whitespace collapsed."""
    text = " ".join(text.split())
    begin = text.index(start)
    return text[begin : text.index(end, begin + len(start))]


def _user_guide():
    return (DOCS / "user_guide.rst").read_text()


@pytest.mark.skipif(not DOCS.exists(), reason="no docs tree")
def test_tol_on_exact_data_the_certificate_does_not_identify_is_documented():
    """Exact data that do not identify the function: criterion "tol" comes back
    with heads far from the lifted fit in coefficients (they are within tol on
    the training objective), which the docs must say where they define "tol"."""
    from sklearn_linattn import HeadReadout, LinearAttentionRegressor
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(25, 8, 4, n_heads=2, random_state=0)  # p = 40
    X, y = np.concatenate([X] * 4), np.concatenate([y] * 4)  # rank 25, 100 rows
    model = LinearAttentionRegressor().fit(X, y)
    search = model.head_search_
    assert not model.certificate_.identifiable
    assert search.criterion == "tol" and search.relative_distance > 1e3 * search.tol
    assert search.counts[-1].training_loss <= search.tol**2
    criterion = _section(HeadReadout.__doc__, "criterion : str", "passes :")
    tol = _section(LinearAttentionRegressor.__doc__, "tol : float", "head_work_limit :")
    auto = _section(LinearAttentionRegressor.__doc__, '- ``"auto"``', "- int ``k``")
    guide = _section(_user_guide(), "On exact data, the fewest", "On noisy data")
    for text in (criterion, tol, auto, guide):
        assert "training objective" in text and "identify" in text


@pytest.mark.skipif(not (ROOT / "README.md").exists(), reason="no README")
def test_default_heads_of_noisy_data_are_not_said_to_compute_the_lifted_fit():
    """On noisy data the default's heads, and so ``coef_``, are a function near
    the lifted fit, not the lifted fit: the README's table and the user guide's
    "What a fit does" say so."""
    from sklearn_linattn import LinearAttentionRegressor
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(400, 8, 4, n_heads=2, noise=0.1, random_state=0)
    auto = LinearAttentionRegressor().fit(X, y)
    lifted = LinearAttentionRegressor(n_heads=None).fit(X, y)
    distance = np.linalg.norm(auto.coef_ - lifted.coef_) / np.linalg.norm(lifted.coef_)
    assert auto.head_search_.criterion == "cv"
    assert distance == pytest.approx(auto.head_search_.relative_distance, rel=1e-6)
    assert distance > 1e-2
    readme = " ".join((ROOT / "README.md").read_text().split())
    row = _section(readme, "| `LinearAttentionRegressor` |", "`certificate_` |")
    assert "on noisy data" in row
    guide = _section(_user_guide(), "What a fit does", "Input layout")
    assert "coef_`` are the learned function" not in guide
    assert "on noisy data" in guide and "relative_distance" in guide


def test_fixed_counts_without_folds_are_documented_for_partial_fit():
    """``n_heads=k`` by ``partial_fit`` whose first call had ``n_heads=None``
    keeps no folds: ``head_search_.passes`` is None, as the docstring says."""
    from sklearn_linattn import LinearAttentionRegressor
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(400, 8, 4, n_heads=2, noise=0.1, random_state=0)
    model = LinearAttentionRegressor(n_heads=None).partial_fit(X[:200], y[:200])
    model.set_params(n_heads=2).partial_fit(X[200:], y[200:])
    assert model.head_search_.criterion == "fixed"
    assert model.head_search_.passes is None
    fixed = _section(LinearAttentionRegressor.__doc__, "- int ``k``", "- None:")
    assert "partial_fit" in fixed


def test_classifier_docstring_states_the_class_scores_test():
    """A classifier's count whose misclassification passes can fail on its class
    scores (``failed_on="scores"``): the classifier's ``n_heads`` says so."""
    from conftest import few_sequences_three_classes

    from sklearn_linattn import LinearAttentionClassifier

    X, labels = few_sequences_three_classes(n_test=0)
    model = LinearAttentionClassifier(alpha=0.1, fit_intercept=True).fit(X, labels)
    one = model.head_search_.counts[0]
    assert one.cv_error < one.threshold and one.failed_on == "scores"
    text = _section(LinearAttentionClassifier.__doc__, "n_heads :", "fit_intercept :")
    assert "score_threshold" in text and "majority" in text


def test_effective_outputs_of_lsqr_are_documented():
    """``solver="cg"`` keeps no residual correlations: ``[y, 3y]`` counts as two
    outputs there (one with the normal equations), as its docstring says."""
    from sklearn_linattn import HeadReadout, LinearAttentionRegressor
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(300, 8, 3, n_heads=2, noise=0.2, random_state=1)
    Y = np.column_stack([y, 3 * y])
    normal = LinearAttentionRegressor(n_heads=2).fit(X, Y).head_search_
    lsqr = LinearAttentionRegressor(solver="cg", n_heads=2).fit(X, Y).head_search_
    assert normal.effective_outputs == pytest.approx(1.0)
    assert lsqr.effective_outputs == 2.0
    text = _section(HeadReadout.__doc__, "effective_outputs :", "tol : float")
    assert '``solver="cg"``' in text


@pytest.mark.skipif(not DOCS.exists(), reason="no docs tree")
def test_fixed_count_with_many_rows_skips_its_folds_refits_as_documented():
    """With ten rows per lifted feature, ``n_heads=k`` whose linearized refits pass
    is not refitted on its folds: the user guide's cost paragraph says so."""
    from sklearn_linattn import LinearAttentionRegressor
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(400, 8, 4, n_heads=2, noise=0.1, random_state=0)
    count = LinearAttentionRegressor(n_heads=2).fit(X, y).head_search_.counts[0]
    assert count.passes and count.folds_refitted is None
    assert count.cv_error == count.linearized_cv_error
    guide = _section(_user_guide(), "What the default costs", "Forecasts beyond")
    assert "linearized" in guide


@pytest.mark.skipif(not DOCS.exists(), reason="no docs tree")
def test_noiseless_targets_without_residual_degrees_of_freedom_are_judged_as_noisy():
    """Noiseless targets of a two-head layer from fewer sequences than lifted
    features leave no residual degree of freedom: they are searched on held-out
    folds as noisy data are, and need not get two heads. The docs that define
    "exact data" say so."""
    from sklearn_linattn import LinearAttentionRegressor
    from sklearn_linattn.datasets import make_random_mhla

    X, y, _ = make_random_mhla(30, 16, 4, n_heads=2, random_state=0)  # p = 40
    with pytest.warns(UserWarning, match="interpolates"):
        search = LinearAttentionRegressor().fit(X, y).head_search_
    assert search.loss == "squared" and search.n_heads == 4
    auto = _section(LinearAttentionRegressor.__doc__, '- ``"auto"``', "- int ``k``")
    guide = _section(_user_guide(), "On exact data, the fewest", "On noisy data")
    for text in (auto, guide):
        assert "residual degrees of freedom" in text and "noiseless" in text
