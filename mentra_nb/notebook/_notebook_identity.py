"""A notebook's agents belong to the notebook, not to its file name.

The runtime id that keeps a notebook's agents apart in a state file, and that
state file, are written into the notebook's own metadata
(`"metadata": {"mentra": {"id": "tour", "state": "/…/.mentra/tour.sqlite"}}`)
by the front end the first time a view of its agents appears, and saved at once
(js/saved_state.js; with real-time collaboration, by the server's autosave); a
kernel reads them back from the notebook file when it looks for its state. So a
notebook renamed or moved keeps its agents, and a new notebook that takes a name
someone used before carries no id: if a notebook beside it carries the name's
runtime id (the one that had the name, renamed), the new one gets a fresh id
(`Untitled-2`) and agents of its own.

Why metadata rather than following the front end's renames: it travels with
the file whatever moves it (the file browser with no kernel running, `mv`, git,
a download), and the kernel reads it from disk before any view exists; a
rename made while no kernel watched cannot be followed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mentra_nb.store.sqlite import stored_agent_names

__all__ = ["METADATA_KEY", "STATE_FOLDER", "NotebookIdentity", "StoredNearby", "adopt_command", "free_runtime_id",
           "read_identity", "state_file_of", "stored_nearby"]

METADATA_KEY = "mentra"
STATE_FOLDER = ".mentra"  # beside the notebook, hidden: the file browser shows notebooks
# Notebooks looked at beside this one when a name's runtime id may be taken.
MAX_NOTEBOOKS_READ = 200


class NotebookIdentity(BaseModel):
    """What a notebook's metadata says about its agents."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str = Field(min_length=1, max_length=500)
    state: str = Field("", max_length=4096)  # the state file (absolute), "" on a database server


def read_identity(notebook: Path) -> NotebookIdentity | None:
    """The identity saved in `notebook`'s metadata; None when it has none (a new
    notebook, one of an earlier version) or cannot be read."""
    try:
        document = json.loads(notebook.read_bytes())
        return NotebookIdentity.model_validate(document["metadata"][METADATA_KEY])
    except (OSError, ValueError, KeyError, TypeError, ValidationError):
        return None


def state_file_of(identity: NotebookIdentity, notebook: Path, default: Path) -> Path:
    """Where the agents of a notebook that carries `identity` live: the file its
    metadata names, else a file of that name in the notebook's own `.mentra/` (a
    folder moved or cloned with its state), else `default` (beside it, by its
    name): the first that holds agents of its runtime id, or else the first that
    exists."""
    candidates = [default]
    if identity.state:
        recorded = Path(identity.state)
        candidates[:0] = [recorded, notebook.parent / STATE_FOLDER / recorded.name]
    for candidate in candidates:
        if identity.id in stored_agent_names(candidate):
            return candidate
    return next((c for c in candidates if c.is_file()), default)


def free_runtime_id(name_id: str, state_file: Path, notebook: Path) -> str:
    """The runtime id of a notebook that carries none yet: its name's (agents stored
    under it by an earlier version stay its own), unless another notebook beside it
    carries that id, the notebook that had this name before a rename: then the name
    with the first number free in the file and beside it (`Untitled-2`)."""
    stored = stored_agent_names(state_file)
    if name_id not in stored:
        return name_id
    carried = {identity.id for _, identity in _identities_beside(notebook)}
    if name_id not in carried:
        return name_id
    number = 2
    while f"{name_id}-{number}" in stored or f"{name_id}-{number}" in carried:
        number += 1
    return f"{name_id}-{number}"


class StoredNearby(BaseModel):
    """Agents kept in a state file near a notebook: a runtime id's lead agents,
    and the notebook that carries that id, if one beside it does."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    state_file: Path
    runtime_id: str
    agents: list[str]
    notebook: Path | None = None


def stored_nearby(notebook: Path | None, cwd: Path) -> list[StoredNearby]:
    """Every runtime with agents in the state files of the notebook's folder and
    the current folder (`.mentra/*.sqlite`), most agents first."""
    folders = list(dict.fromkeys(f.resolve() for f in (notebook.parent if notebook else cwd, cwd)))
    carriers = {identity.id: path for folder in folders for path, identity in _identities_in(folder)}
    found = [
        StoredNearby(state_file=state_file, runtime_id=runtime_id, agents=names,
                     notebook=carriers.get(runtime_id))
        for folder in folders
        for state_file in sorted((folder / STATE_FOLDER).glob("*.sqlite"))
        for runtime_id, names in stored_agent_names(state_file).items()
    ]
    return sorted(found, key=lambda s: -len(s.agents))


def adopt_command(stored: StoredNearby, cwd: Path) -> str:
    """The magic that makes `stored`'s agents this notebook's."""
    try:
        path = str(stored.state_file.relative_to(cwd.resolve()))
    except ValueError:
        path = str(stored.state_file)
    quoted = f'"{path}"' if " " in path else path
    runtime_id = f'"{stored.runtime_id}"' if " " in stored.runtime_id else stored.runtime_id
    return f"%mentra adopt {quoted} {runtime_id}"


def _identities_beside(notebook: Path) -> Iterator[tuple[Path, NotebookIdentity]]:
    for path, identity in _identities_in(notebook.parent):
        if path.resolve() != notebook.resolve():
            yield path, identity


def _identities_in(folder: Path) -> Iterator[tuple[Path, NotebookIdentity]]:
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".ipynb") and e.is_file())
    except OSError:
        return
    for name in names[:MAX_NOTEBOOKS_READ]:
        identity = read_identity(folder / name)
        if identity is not None:
            yield folder / name, identity
