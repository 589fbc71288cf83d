"""notebooks/smpi_scaling.ipynb executes on the committed simulated results
(plots from CSV only: no SimGrid needed, a few seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "smpi_scaling.ipynb"


@pytest.mark.timeout(300)
def test_smpi_notebook_executes():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )  # fmt: skip
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs)
    assert "SMPI / shancoll" in text and "not found" not in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 3
