"""Sphinx helpers of this documentation (loaded by conf.py as an extension).

- Offline intersphinx inventories: the build runs without network access, so the
  few scikit-learn, numpy, scipy and matplotlib objects the pages link to are
  listed here and written as ``objects.inv`` files; a reference to one of those
  projects that no inventory resolves is a warning (an error under ``-W``).
- The header's repository links come from ``[project.urls]`` in pyproject.toml.
- Signatures: dataclass fields whose names start with ``_`` (internal state) are
  left out of the documented signatures.
- ``.. demo-output::``: runs ``python -m sklearn_linattn --quick`` during the build
  and shows what it prints, its wide tables split and long lines wrapped to fit the
  page.
- ``.. recorded-table:: SCRIPT``: a table of the recorded run
  ``benchmarks/recorded/SCRIPT.json``, drawn by the script's own ``rst_table``
  (nothing is run but the formatting).
"""

import importlib.util
import inspect
import itertools
import json
import os
import re
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from docutils.statemachine import StringList

# name -> page, relative to the project's documentation root ("$" is the name)
_SKLEARN_API = "modules/generated/$.html#$"
OFFLINE_INVENTORIES = {
    "sklearn": (
        "https://scikit-learn.org/stable/",
        "scikit-learn",
        {
            "py:class": [
                "sklearn.decomposition.PCA",
                "sklearn.decomposition.TruncatedSVD",
                "sklearn.linear_model.LinearRegression",
                "sklearn.linear_model.LogisticRegression",
                "sklearn.linear_model.Ridge",
                "sklearn.linear_model.RidgeCV",
                "sklearn.linear_model.RidgeClassifier",
                "sklearn.linear_model.RidgeClassifierCV",
                "sklearn.model_selection.GridSearchCV",
                "sklearn.model_selection.KFold",
                "sklearn.model_selection.ShuffleSplit",
                "sklearn.model_selection.StratifiedKFold",
                "sklearn.model_selection.TimeSeriesSplit",
                "sklearn.model_selection.ValidationCurveDisplay",
                "sklearn.pipeline.Pipeline",
                "sklearn.preprocessing.FunctionTransformer",
                "sklearn.preprocessing.PolynomialFeatures",
                "sklearn.preprocessing.QuantileTransformer",
                "sklearn.preprocessing.StandardScaler",
            ],
            "py:function": [
                "sklearn.datasets.load_digits",
                "sklearn.metrics.r2_score",
                "sklearn.model_selection.cross_val_score",
                "sklearn.model_selection.validation_curve",
                "sklearn.pipeline.make_pipeline",
                "sklearn.utils.validation.validate_data",
            ],
        },
        _SKLEARN_API,
    ),
    "numpy": (
        "https://numpy.org/doc/stable/",
        "NumPy",
        {
            "py:class": ["numpy.ndarray"],
            "py:function": [
                "numpy.linalg.matrix_rank",
                "numpy.linalg.norm",
                "numpy.logspace",
                "numpy.random.default_rng",
                "numpy.triu_indices",
            ],
        },
        "reference/generated/$.html#$",
    ),
    "scipy": (
        "https://docs.scipy.org/doc/scipy/",
        "SciPy",
        {"py:class": ["scipy.sparse.linalg.LinearOperator"]},
        "reference/generated/$.html#$",
    ),
    # the displays' keyword dictionaries (line_kw, im_kw, ...) name what they
    # are passed to
    "matplotlib": (
        "https://matplotlib.org/stable/",
        "Matplotlib",
        {
            "py:method": [
                "matplotlib.axes.Axes.axhline",
                "matplotlib.axes.Axes.axhspan",
                "matplotlib.axes.Axes.axvline",
                "matplotlib.axes.Axes.imshow",
                "matplotlib.axes.Axes.plot",
            ],
        },
        "api/_as_gen/$.html#$",
    ),
}


def write_inventory(path, project, entries, uri):
    """Write a Sphinx (version 2) ``objects.inv`` listing ``entries``."""
    # Sphinx expands only a trailing "$" of an inventory's URI: the page's "$" is
    # written out here.
    lines = [
        f"{name} {role} 1 {uri[:-1].replace('$', name) + uri[-1]} -"
        for role, names in sorted(entries.items())
        for name in sorted(names)
    ]
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        "# Version: stable\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    body = zlib.compress(("\n".join(lines) + "\n").encode())
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(header.encode() + body)


def intersphinx_mapping(directory):
    """The ``intersphinx_mapping`` of the offline inventories in ``directory``."""
    mapping = {}
    for key, (url, project, entries, uri) in OFFLINE_INVENTORIES.items():
        path = os.path.join(directory, f"{key}-objects.inv")
        write_inventory(path, project, entries, uri)
        mapping[key] = (url, path)
    return mapping


def repository_links(pyproject):
    """Header icon links to the URLs of ``[project.urls]`` in ``pyproject``.

    None are made up: without that table (or without ``tomllib``, Python < 3.11)
    the header has no repository link.
    """
    try:
        import tomllib
    except ImportError:
        return []
    with open(pyproject, "rb") as handle:
        urls = tomllib.load(handle).get("project", {}).get("urls", {})
    icons = {"github.com": "fa-brands fa-github", "gitlab.com": "fa-brands fa-gitlab"}
    return [
        {
            "name": name,
            "url": url,
            "icon": next(
                (icon for host, icon in icons.items() if host in url),
                "fa-solid fa-code-branch",
            ),
            "type": "fontawesome",
        }
        for name, url in urls.items()
    ]


def _warn_unresolved(app, env, node, contnode):
    """An unresolved reference into a linked project is a build warning.

    Sphinx calls every handler of the event, so this one asks intersphinx itself.
    """
    from sphinx.ext.intersphinx import missing_reference
    from sphinx.util import logging

    target = node.get("reftarget", "")
    if target.split(".")[0] not in OFFLINE_INVENTORIES:
        return None
    if missing_reference(app, env, node, contnode) is None:
        logging.getLogger(__name__).warning(
            "%s is not in the offline inventories: add it to "
            "docs/_ext/linattn_docs.py (OFFLINE_INVENTORIES)",
            target,
            location=node,
        )
    return None


def _public_signature(app, what, name, obj, options, signature, return_annotation):
    """Drop ``_private`` dataclass fields from a class signature."""
    if what != "class" or not signature or not hasattr(obj, "__dataclass_fields__"):
        return None
    parameters = inspect.signature(obj).parameters.values()
    public = [p for p in parameters if not p.name.startswith("_")]
    if len(public) == len(parameters):
        return None
    shown = inspect.Signature(public)
    return str(shown), return_annotation


def _table_columns(lines):
    """The column ranges ``[start, end)`` of a table of right-aligned columns (the
    demo's ``format_table``): each column from the end of the previous one (its
    padding) to the end of its text; a header word over blank cells in every row
    (the first word of a two-word header) belongs to the column after it."""
    width = max(map(len, lines))
    lines = [line.ljust(width) for line in lines]
    filled = [any(line[i] != " " for line in lines) for i in range(width)]
    columns, start, i = [], 0, 0
    while i < width:
        if not filled[i]:
            i += 1
            continue
        end = i
        while end < width and filled[end]:
            end += 1
        columns.append([start, end])
        start = i = end
    merged = []
    for column in columns:
        if merged and merged[-1][2]:  # the previous segment was a header word only
            column = [merged.pop()[0], column[1]]
        header_only = not any(line[column[0] : column[1]].strip() for line in lines[1:])
        merged.append([column[0], column[1], header_only])
    return [(start, end) for start, end, _ in merged]


def split_table(lines, width):
    """A table wider than ``width`` as tables of its first column and some of the
    others, one under the other (a blank line between them): as few as fit, their
    widths as even as can be. Lines as they are if no split fits."""
    if max(map(len, lines)) <= width or len(lines) < 2:
        return lines
    (first, *others) = _table_columns(lines)
    budget = width - (first[1] - first[0])
    sizes = [end - start for start, end in others]
    for n_groups in range(2, len(others) + 1):
        splits = [
            (0, *cuts, len(others))
            for cuts in itertools.combinations(range(1, len(others)), n_groups - 1)
        ]
        widths = [
            max(sum(sizes[a:b]) for a, b in itertools.pairwise(cut)) for cut in splits
        ]
        if min(widths) <= budget:
            cut = splits[widths.index(min(widths))]
            break
    else:
        return lines
    out = []
    for a, b in itertools.pairwise(cut):
        if out:
            out.append("")
        for line in lines:
            cells = [line[start:end] for start, end in [first, *others[a:b]]]
            out.append("".join(cells).rstrip())
    return out


class DemoOutput(Directive):
    """What ``python -m sklearn_linattn --quick`` prints, run during the build.

    Prose lines longer than ``:width:`` are wrapped; a table (consecutive lines
    indented by four spaces or more) wider than that is split into tables of its
    first column and as many of the others as fit, stacked, so that the block
    needs no horizontal scrolling and no row is broken.
    """

    option_spec = {"width": directives.positive_int}

    def run(self):
        width = self.options.get("width", 88)
        root = str(Path(__file__).resolve().parents[2])  # the package documented
        path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
        result = subprocess.run(
            [sys.executable, "-m", "sklearn_linattn", "--quick"],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
            cwd=root,
            env={**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": path},
        )
        text = "\n".join(demo_lines(result.stdout, width))
        block = nodes.literal_block(text, text, classes=["demo-output"])
        block["language"] = "none"
        return [block]


def demo_lines(output, width):
    """The demo's printed ``output`` fitted to ``width`` characters: tables split
    (:func:`split_table`), prose wrapped with a hanging indent."""
    lines, table = [], []
    for line in [*output.rstrip().splitlines(), ""]:
        if line.startswith("    ") and line.strip():
            table.append(line)
            continue
        if table:
            lines.extend(split_table(table, width))
            table = []
        if len(line) <= width:
            lines.append(line)
            continue
        indent = re.match(r" *", line).group()
        lines.extend(textwrap.wrap(line, width, subsequent_indent=indent + "   "))
    return lines[:-1]


def benchmark_script(name):
    """The module ``benchmarks/<name>.py`` (imported for its formatting; its
    ``main`` is not run), with ``benchmarks/`` on the path for ``_common``."""
    directory = Path(__file__).resolve().parents[2] / "benchmarks"
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    spec = importlib.util.spec_from_file_location(name, directory / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RecordedTable(Directive):
    """A table of a benchmark's recorded run: ``.. recorded-table:: SCRIPT``
    with options ``:models:`` and ``:tasks:`` (space-separated keys, passed to
    the script's ``rst_table`` as lists; all tasks when left out), or
    ``:function: rst_summary`` for another of the script's ``rst_*`` functions of
    the record."""

    required_arguments = 1
    option_spec = {
        "models": directives.unchanged,
        "tasks": directives.unchanged,
        "function": directives.unchanged,
    }

    def run(self):
        name = self.arguments[0]
        path = Path(__file__).resolve().parents[2] / "benchmarks" / "recorded"
        path = path / f"{name}.json"
        self.state.document.settings.env.note_dependency(str(path))
        record = json.loads(path.read_text())
        module = benchmark_script(name)
        options = dict(self.options)
        function = getattr(module, options.pop("function", "rst_table"))
        lists = {key: value.split() for key, value in options.items()}
        text = function(record, **lists)
        container = nodes.container()
        self.state.nested_parse(
            StringList(text.splitlines(), source=str(path)),
            self.content_offset,
            container,
        )
        return container.children


def _mathml(translator, node, tex, block):
    """MathML of the TeX ``tex`` (docutils' converter); a build warning, and the TeX
    as text, where it cannot convert."""
    from docutils.utils.math import latex2mathml
    from sphinx.util import logging

    try:
        from docutils.utils.math import MathError
    except ImportError:  # docutils before 0.21 raised SyntaxError
        MathError = SyntaxError
    if "as_block" in inspect.signature(latex2mathml.tex2mathml).parameters:
        options = {"as_block": block}
    else:  # docutils before 0.21
        options = {"inline": not block}

    # TeX reads x' as x^{\prime}; the converter gives an apostrophe operator,
    # which MathJax draws as a large quote.
    tex = re.sub(r"'+", lambda m: "^{" + r"\prime" * len(m.group()) + "}", tex)
    try:
        mathml = latex2mathml.tex2mathml(tex, **options)
    except (MathError, SyntaxError, IndexError) as error:
        logging.getLogger(__name__).warning(
            "math %r is not converted to MathML: %s", tex, error, location=node
        )
        return translator.encode(tex)
    # upright capital Greek, as TeX sets it (the converter marks it with a class
    # for a style sheet of its own)
    return mathml.replace('<mi class="capital-greek">', '<mi mathvariant="normal">')


def _visit_math(translator, node):
    translator.body.append(translator.starttag(node, "span", "", CLASS="math"))
    translator.body.append(_mathml(translator, node, node.astext(), False))
    translator.body.append("</span>")
    raise nodes.SkipNode


def _visit_math_block(translator, node):
    from sphinx.util.math import get_node_equation_number

    translator.body.append(translator.starttag(node, "div", CLASS="math"))
    if node["number"]:
        number = get_node_equation_number(translator, node)
        translator.body.append(f'<span class="eqno">({number})')
        translator.add_permalink_ref(node, "Link to this equation")
        translator.body.append("</span>")
    for part in node.astext().split("\n\n"):
        if not part.strip():
            continue
        if "\\\\" in part and "\\begin" not in part:  # lines, as MathJax aligns them
            part = "\\begin{aligned}" + part + "\\end{aligned}"
        translator.body.append(_mathml(translator, node, part, True))
    translator.body.append("</div>\n")
    raise nodes.SkipNode


def _add_mathjax(app, pagename, templatename, context, doctree):
    """MathJax (``mathjax_path``, its CDN by default) on the pages with formulas:
    online it typesets their MathML in its own fonts, as it did their TeX; offline,
    where it does not load, the browser renders the MathML itself."""
    if app.builder.format != "html" or app.builder.math_renderer_name != "mathml":
        return
    if app.config.mathjax_path and context.get("has_maths_elements", True):
        app.builder.add_js_file(app.config.mathjax_path, defer="defer")


def setup(app):
    app.connect("missing-reference", _warn_unresolved, priority=900)
    app.connect("autodoc-process-signature", _public_signature)
    app.add_directive("demo-output", DemoOutput)
    app.add_directive("recorded-table", RecordedTable)
    app.add_html_math_renderer(
        "mathml", (_visit_math, None), (_visit_math_block, None)
    )
    app.connect("html-page-context", _add_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
