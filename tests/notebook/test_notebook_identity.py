"""Issue 30.1: a notebook's agents belong to the notebook, not its file name.

The rules as the kernel applies them to files on disk (the browser tests in
tests/browser/test_notebook_identity.py rename notebooks in JupyterLab and
Notebook 7 for real)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nbformat

from mentra_nb import Runtime, SqliteStore
from mentra_nb.notebook._discovery import discover_store
from mentra_nb.notebook._notebook_identity import adopt_command, stored_nearby
from mentra_nb.store.sqlite import stored_agent_names


def _notebook(path: Path, identity: dict[str, str] | None = None) -> Path:
    nb = nbformat.v4.new_notebook()
    if identity is not None:
        nb.metadata["mentra"] = identity
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _store_agents(state: Path, runtime_id: str, *names: str) -> None:
    state.parent.mkdir(parents=True, exist_ok=True)
    rt = Runtime.empty(store=SqliteStore(state), runtime_id=runtime_id)
    for name in names:
        rt.spawn(name, "test")
    asyncio.run(rt.aclose())
    rt.store.close()


def _found(notebook: Path, cwd: Path):
    return discover_store({}, cwd=cwd, environ={"JPY_SESSION_NAME": str(notebook)})


def test_a_renamed_notebook_finds_the_agents_its_metadata_names(tmp_path):
    state = tmp_path / ".mentra" / "Untitled.sqlite"
    _store_agents(state, "Untitled", "writer")
    tour = _notebook(tmp_path / "tour.ipynb", {"id": "Untitled", "state": str(state)})
    found = _found(tour, tmp_path)
    assert (found.path, found.runtime_id) == (state, "Untitled")
    assert found.source == "the notebook's metadata (the notebook from JPY_SESSION_NAME)"


def test_a_moved_notebook_finds_them_where_they_were_or_in_its_own_folder(tmp_path):
    state = tmp_path / "old" / ".mentra" / "Untitled.sqlite"
    _store_agents(state, "Untitled", "writer")
    moved = _notebook(tmp_path / "new" / "tour.ipynb", {"id": "Untitled", "state": str(state)})
    assert _found(moved, tmp_path).path == state
    # The whole folder moved (or cloned elsewhere): the file of that name beside it.
    state.rename(tmp_path / "new" / "Untitled.sqlite")
    (tmp_path / "new" / ".mentra").mkdir()
    (tmp_path / "new" / "Untitled.sqlite").rename(tmp_path / "new" / ".mentra" / "Untitled.sqlite")
    assert _found(moved, tmp_path).path == tmp_path / "new" / ".mentra" / "Untitled.sqlite"


def test_a_new_notebook_never_attaches_to_the_agents_of_the_one_that_had_its_name(tmp_path):
    state = tmp_path / ".mentra" / "Untitled.sqlite"
    _store_agents(state, "Untitled", "writer")
    _store_agents(state, "Untitled-2", "critic")  # a second new notebook's, by then
    _notebook(tmp_path / "tour.ipynb", {"id": "Untitled", "state": str(state)})
    _notebook(tmp_path / "review.ipynb", {"id": "Untitled-2", "state": str(state)})
    fresh = _found(_notebook(tmp_path / "Untitled.ipynb"), tmp_path)
    assert (fresh.path, fresh.runtime_id) == (state, "Untitled-3")


def test_agents_an_earlier_version_stored_under_the_name_stay_that_notebooks(tmp_path):
    state = tmp_path / ".mentra" / "report.sqlite"
    _store_agents(state, "report", "writer")
    found = _found(_notebook(tmp_path / "report.ipynb"), tmp_path)
    assert (found.path, found.runtime_id) == (state, "report")


def test_what_is_stored_nearby_and_the_command_that_adopts_it(tmp_path):
    _store_agents(tmp_path / ".mentra" / "Untitled.sqlite", "Untitled", "writer", "critic")
    _store_agents(tmp_path / ".mentra" / "other.sqlite", "other", "solo")
    _notebook(tmp_path / "other.ipynb", {"id": "other", "state": ""})
    nearby = stored_nearby(tmp_path / "tour.ipynb", tmp_path)
    assert [(s.state_file.name, s.runtime_id, s.agents, s.notebook) for s in nearby] == [
        ("Untitled.sqlite", "Untitled", ["writer", "critic"], None),
        ("other.sqlite", "other", ["solo"], tmp_path / "other.ipynb"),
    ]
    assert adopt_command(nearby[0], tmp_path) == "%mentra adopt .mentra/Untitled.sqlite Untitled"


def test_looking_at_a_state_file_writes_nothing_beside_it(tmp_path):
    state = tmp_path / ".mentra" / "a.sqlite"
    _store_agents(state, "a", "writer")
    before = sorted(p.name for p in state.parent.iterdir())
    assert stored_agent_names(state) == {"a": ["writer"]}
    assert stored_agent_names(tmp_path / "missing.sqlite") == {}
    (tmp_path / "not.sqlite").write_text("not a database")
    assert stored_agent_names(tmp_path / "not.sqlite") == {}
    assert sorted(p.name for p in state.parent.iterdir()) == before
    assert not (tmp_path / "missing.sqlite").exists()
