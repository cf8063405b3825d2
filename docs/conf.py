"""Sphinx configuration for the sklearn-linattn documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gallery_order

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
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py"]
templates_path = ["_templates"]

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "pydata_sphinx_theme"
html_title = "sklearn-linattn"
html_theme_options = {
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
    "within_subsection_order": "gallery_order.ExampleNumberSortKey",
}

myst_enable_extensions = ["dollarmath"]
suppress_warnings = ["myst.header"]
