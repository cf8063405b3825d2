"""The package's module structure (docs/architecture.rst): imports run one way."""

import ast
import graphlib
from pathlib import Path

import sklearn_linattn

PACKAGE = Path(sklearn_linattn.__file__).parent


def package_imports():
    """``{module: set of package modules it imports}`` from the source of every
    module of the package, imports inside functions included (they are cycles
    all the same, only deferred)."""
    modules = {path.stem: path for path in PACKAGE.glob("*.py")}
    graph = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:  # from . import x / from .x import y
                    parts = [node.module] if node.module else []
                elif node.level == 0 and (node.module or "").startswith(
                    "sklearn_linattn"
                ):
                    parts = node.module.split(".")[1:2]
                else:
                    continue
                if parts:
                    imported.add(parts[0])
                else:  # from . import name: a submodule, or a name of __init__
                    imported.update(
                        alias.name if alias.name in modules else "__init__"
                        for alias in node.names
                    )
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "sklearn_linattn":
                        imported.add(parts[1] if len(parts) > 1 else "__init__")
        graph[name] = imported - {name}
    return graph


def test_module_imports_have_no_cycle():
    graph = package_imports()
    # the parse sees the imports (a graph without edges has no cycle either)
    assert {"_data", "_lift"} <= graph["_solvers"]
    assert "_validation" in graph["_data"] and "_solvers" in graph["_estimators"]
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        raise AssertionError(f"modules import each other: {error.args[1]}") from None


def test_public_submodules_are_attributes_of_the_package():
    """``import sklearn_linattn`` gave ``sklearn_linattn.preprocessing`` but not
    ``sklearn_linattn.datasets`` (AttributeError until imported by name), though
    the API page names both as where everything public is imported from."""
    import os
    import subprocess
    import sys

    code = (
        "import sklearn_linattn as s; "
        "print(s.datasets.make_random_mhla.__name__, s.preprocessing.__name__, "
        "{'datasets', 'preprocessing'} <= set(s.__all__))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}, check=True,
    ).stdout.split()
    assert out == ["make_random_mhla", "sklearn_linattn.preprocessing", "True"]
