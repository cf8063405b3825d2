"""Sphinx configuration for the sklearn-linattn documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import sklearn_linattn  # noqa: E402

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
}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}

myst_enable_extensions = ["dollarmath"]
suppress_warnings = ["myst.header"]
