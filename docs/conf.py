"""Sphinx configuration for the sklearn-linattn documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gallery_order
sys.path.insert(0, os.path.abspath("_ext"))

import linattn_docs  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import sklearn_linattn  # noqa: E402

# The gallery examples run in this process. Their matrices are small (p x p with p
# in the hundreds), where multi-threaded BLAS gains nothing and, on a machine shared
# with other jobs, spin-waiting threads made the same eigensolve 40 times slower.
threadpool_limits(1, user_api="blas")

project = "sklearn-linattn"
author = "sklearn-linattn developers"
copyright = "2026, sklearn-linattn developers"
release = sklearn_linattn.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "matplotlib.sphinxext.plot_directive",
    "matplotlib.sphinxext.figmpl_directive",
    "sphinx_copybutton",
    "linattn_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py"]
templates_path = ["_templates"]

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# "fit", not "LinearAttentionRegressor.fit", in a page's table of contents
toc_object_entries_show_parents = "hide"

# No network at build time: the objects the pages link to are listed in
# _ext/linattn_docs.py and written as inventories here.
intersphinx_mapping = linattn_docs.intersphinx_mapping(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "_build", "intersphinx")
)

# Figures drawn by code in the pages (``.. plot::``), at twice the resolution for
# sharp text on high-density screens.
plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 100)]
plot_srcset = ["2x"]
plot_rcparams = {"font.size": 11, "figure.dpi": 100}
plot_pre_code = "import numpy as np\nimport matplotlib.pyplot as plt\n"

# Prompts and printed output are not copied with the code.
copybutton_prompt_text = r">>> |\.\.\. "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True

html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-linattn {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "logo": {"text": f"sklearn-linattn {release}"},
    "icon_links": linattn_docs.repository_links(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyproject.toml")
    ),
    "navigation_with_keys": False,
    "show_prev_next": False,
    # every top-level page in the header, none hidden under "More"
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],
}
# The whole site's contents on the left of every page but the landing page.
html_sidebars = {"index": [], "**": ["sidebar-site-nav"]}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    # sections (subfolders with a README.rst) in this order, examples by number
    "subsection_order": [
        "../examples/paper",
        "../examples/estimators",
        "../examples/in_context",
        "../examples/real_data",
    ],
    "within_subsection_order": "gallery_order.ExampleNumberSortKey",
    "image_srcset": ["2x"],
    # "Examples using this class/function" on the API pages
    "doc_module": ("sklearn_linattn",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"sklearn_linattn": None},
}

myst_enable_extensions = ["dollarmath"]

# Formulas as MathML, converted during the build (docutils' converter, in
# _ext/linattn_docs.py), which browsers render without a script: the pages show
# them offline too, where MathJax, loaded from its CDN, left the TeX as text.
# Online, MathJax (mathjax_path) still loads and typesets the MathML.
html_math_renderer = "mathml"
suppress_warnings = ["myst.header"]
