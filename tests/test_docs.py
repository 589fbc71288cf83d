"""The API reference (docs/api) builds with warnings as errors and has a
page per public function, with its signature and its algorithms."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import shancoll

DOCS = Path(__file__).resolve().parent.parent / "docs" / "api"


def test_api_reference_builds_with_a_page_per_public_name(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(DOCS), str(tmp_path)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    for name in shancoll.__all__:
        if name.startswith("_"):
            continue
        page = tmp_path / "_generated" / f"{name}.html"
        assert page.is_file(), name
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        assert f"shancoll.{name}" in text, name
    bcast = html.unescape(re.sub(r"<[^>]+>", "", (tmp_path / "_generated/bcast.html").read_text()))
    assert "bcast(comm: MPI.Comm, buf: Any, root: int = 0" in bcast
    assert all(a in bcast for a in shancoll.algorithms("bcast"))


def test_the_readme_s_python_examples_type_check(tmp_path):
    """The README's Python blocks, in order as one session, pass mypy against
    the package's stubs (py.typed, _core.pyi) and mpi4py's and NumPy's. `LIB`
    is the directory the README says to set (the PMPI example)."""
    readme = (DOCS.parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) >= 5
    source = tmp_path / "readme_examples.py"
    source.write_text('LIB = "/path/to/shancoll/lib"\n' + "\n".join(blocks))
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-version", "3.11", "--no-incremental",
         str(source)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
