"""Every notebook runs top to bottom in a real kernel against the example memory, without a cell
error, and draws at least one figure."""

from __future__ import annotations

import pytest

from jobs.runtime import PROJECT_ROOT

pytestmark = pytest.mark.integration

NOTEBOOKS = sorted((PROJECT_ROOT / "notebooks").glob("*.ipynb"))


def test_the_four_notebooks_are_there_with_their_outputs_stripped():
    import nbformat

    assert [p.name for p in NOTEBOOKS] == ["01_import_overview.ipynb", "02_facts_over_time.ipynb",
                                           "03_evidence_and_contradictions.ipynb", "04_sql_and_graph.ipynb"]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_runs_against_the_example_memory_and_draws(path, example_memory, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    # the kernel is a child of this process: it opens the memory these name
    monkeypatch.setenv("CORPUSMEM_DSN", example_memory.dsn)
    monkeypatch.setenv("CORPUSMEM_HOME", str(example_memory.home))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()   # raises on a cell error
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert figures, f"{path.name} drew no figure"
