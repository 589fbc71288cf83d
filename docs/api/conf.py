"""Sphinx configuration of shancoll's API reference (docs/api).

Build: ``.venv/bin/python -m sphinx -W -b html docs/api docs/api/_build``
(tests/test_docs.py does, warnings as errors). One page per public
function of ``shancoll`` is written here at build time from ``__all__``, so
a new collective gets its page without anyone remembering to add one: its
signature and docstring (autodoc follows the compiled entries' ``__wrapped__``
to the documenting Python function) and, for a collective, its algorithms
as ``shancoll.algorithms`` lists them.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import shancoll

project = "shancoll"
author = "the shancoll developers"
release = shancoll.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_numpy_docstring = True
autodoc_typehints = "signature"
html_theme = "alabaster"
exclude_patterns = ["_build"]

HERE = Path(__file__).resolve().parent
PAGES = HERE / "_generated"


def _algorithms(name: str) -> list[str]:
    try:
        return shancoll.algorithms(name)
    except Exception:  # not a collective (introspection, settings)
        return []


def _page(name: str) -> str:
    title = f"``shancoll.{name}``"
    lines = [title, "=" * len(title), ""]
    value = getattr(shancoll, name)
    directive = "autoclass" if inspect.isclass(value) else "autofunction"
    lines += [f".. {directive}:: shancoll.{name}", ""]
    if inspect.isclass(value):
        lines += ["   :members:", ""]
    algorithms = _algorithms(name)
    if algorithms:
        lines += ["Algorithms", "----------", ""]
        lines += [f"- ``{a}``" for a in algorithms]
        lines += ["", "``algorithm=\"auto\"`` (the default) chooses among them by the rule "
                      "table of this machine (:func:`shancoll.rules_info`).", ""]  # fmt: skip
    return "\n".join(lines) + "\n"


def _write_pages() -> None:
    PAGES.mkdir(exist_ok=True)
    names = [n for n in shancoll.__all__ if not n.startswith("_")]
    for name in names:
        (PAGES / f"{name}.rst").write_text(_page(name), encoding="utf-8")
    toc = "\n".join(f"   _generated/{n}" for n in names)
    (HERE / "reference.rst").write_text(
        "Reference\n=========\n\n.. toctree::\n   :maxdepth: 1\n\n" + toc + "\n", encoding="utf-8"
    )


_write_pages()
