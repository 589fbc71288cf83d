"""The lab bench stays apart from the library (src/shancoll/bench/).

``import shancoll`` loads nothing of ``shancoll.bench``; ``import
shancoll.bench`` loads none of its modules; and the bench modules import one
another without a circle, neither at the top nor inside functions.
"""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

import shancoll.bench

BENCH_DIR = Path(shancoll.bench.__file__).parent
BENCH_MODULES = sorted(p.stem for p in BENCH_DIR.glob("*.py") if p.stem != "__init__")


def _loaded_after(statement: str) -> list[str]:
    """The shancoll.bench modules loaded by ``statement`` in a fresh interpreter."""
    listing = "print(sorted(m for m in sys.modules if m.startswith('shancoll.bench')))"
    code = f"{statement}\nimport sys\n{listing}"
    # cwd="/": the installed package, never ./src (which has no compiled _core).
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd="/"
    )
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


def test_the_library_imports_nothing_of_the_bench():
    assert _loaded_after("import shancoll") == []


def test_the_bench_package_imports_none_of_its_modules():
    assert _loaded_after("import shancoll.bench") == ["shancoll.bench"]


@pytest.mark.parametrize("module", BENCH_MODULES)
def test_each_bench_module_imports_alone(module):
    assert f"shancoll.bench.{module}" in _loaded_after(f"import shancoll.bench.{module}")


def _siblings_imported(path: Path) -> set[str]:
    """The bench modules that ``path`` imports, anywhere in it (lazy imports too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:  # from .sweep import x
                found.add(node.module.split(".")[0])
            elif node.level == 1:  # from . import sweep
                found.update(alias.name for alias in node.names)
            elif (node.module or "").startswith("shancoll.bench."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("shancoll.bench."):
                    found.add(alias.name.split(".")[2])
    return found & set(BENCH_MODULES)


def test_no_import_circle_among_the_bench_modules():
    graph = {m: _siblings_imported(BENCH_DIR / f"{m}.py") for m in BENCH_MODULES}
    assert graph["plot"] and "sweep" not in graph["plot"]  # the old plot <-> sweep circle
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError on a circle
