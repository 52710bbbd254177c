"""Where a notebook's agents live: the state file and the runtime id.

Order: an explicit `%mentra db PATH` (or `%mentra db postgresql://…`) → the
`MENTRA_DB_URL` environment variable (a Postgres URL shared by several hosts) →
the notebook's own path (from `JPY_SESSION_NAME`, IPython's `__session__`, VS
Code's `__vsc_ipynb_file__` or a headless runner's command line) →
`.mentra/<notebook stem>.sqlite` beside it, or the file its metadata names →
else `./.mentra/mentra.sqlite`.
The runtime id is the notebook's file name when its agents are first stored, and
then the id the notebook carries in its metadata, whatever it is called later
(`_notebook_identity`), so two notebooks never see each other's agents even
when they share a store; on a shared database (Postgres)
and a JupyterHub it starts with the user's name (`JUPYTERHUB_USER`), so two
users' notebooks of one name do not either. The folder is hidden, so the file browser shows notebooks, not state.

In a Voila app every page load (a kernel of its own) gets agents of its own:
the runtime id is `<notebook>/voila-<kernel id>` (`mentra_nb/_voila.py`).

Earlier versions kept `<stem>.mentra.sqlite` (and `./mentra.sqlite`) beside the
notebook: `migrate_store` moves such a file into the folder on first use.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from mentra_nb._notebook_path import notebook_path
from mentra_nb._voila import visitor_runtime_id
from mentra_nb.errors import ConfigError
from mentra_nb.notebook._notebook_identity import (
    STATE_FOLDER,
    free_runtime_id,
    read_identity,
    state_file_of,
)
from mentra_nb.store import is_postgres_url
from mentra_nb.store.locations import dsn_has_password
from mentra_nb.store.postgres import redact_dsn

__all__ = ["EXPLICIT_SOURCE", "StoreLocation", "discover_store", "migrate_store", "notebook_path"]

DB_URL_VARIABLE = "MENTRA_DB_URL"
EXPLICIT_SOURCE = "set with %mentra db"
LEGACY_SUFFIX = ".mentra.sqlite"
# SQLite's companions of a database file, moved along with it.
_COMPANIONS = ("", "-wal", "-shm", "-journal")


class StoreLocation(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    path: Path
    runtime_id: str
    source: str  # how it was found, shown by `%mentra db`
    notebook: Path | None = None
    # Where earlier versions kept this notebook's state (moved here on first use).
    legacy_path: Path | None = None
    url: str | None = None  # a Postgres URL: the store is there, not at `path`

    @property
    def where(self) -> str:
        """The store as messages name it (a URL without its password)."""
        return redact_dsn(self.url) if self.url else str(self.path)


def discover_store(user_ns: Mapping[str, Any], *, explicit: str | os.PathLike[str] | None = None,
                   cwd: Path | None = None, environ: Mapping[str, str] = os.environ) -> StoreLocation:
    cwd = cwd or Path.cwd()
    found = notebook_path(user_ns, environ, cwd)
    notebook = found[0] if found is not None else None
    # A notebook that carries its agents' id in its metadata keeps it, whatever its
    # name now (_notebook_identity).
    identity = read_identity(notebook) if notebook is not None else None
    runtime_id = identity.id if identity is not None else _runtime_id(notebook)
    runtime_id = visitor_runtime_id(runtime_id, environ)  # a Voila page's own agents
    # On a shared database the runtime id names the hub user, so two users' notebooks
    # of one name stay apart; a file is one user's already (and keeps its old ids).
    shared_id = f"{environ['JUPYTERHUB_USER']}/{runtime_id}" \
        if environ.get("JUPYTERHUB_USER") and identity is None else runtime_id
    if explicit is not None and is_postgres_url(explicit):
        if dsn_has_password(str(explicit)):
            raise ConfigError(
                "leave the password out of %mentra db: the notebook would keep it. Put it in "
                "~/.pgpass (or PGPASSFILE) or the PGPASSWORD variable, or set MENTRA_DB_URL in "
                "the kernel's environment"
            )
        return StoreLocation(path=cwd / STATE_FOLDER / "mentra.sqlite", url=str(explicit),
                             runtime_id=shared_id, source=EXPLICIT_SOURCE, notebook=notebook)
    url = environ.get(DB_URL_VARIABLE)
    if explicit is None and url:
        if not is_postgres_url(url):
            # Not echoed: it is environment, where a password may be.
            raise ConfigError(f"{DB_URL_VARIABLE} must be a postgresql:// URL or a libpq "
                              "connection string (host=... dbname=...)")
        return StoreLocation(path=cwd / STATE_FOLDER / "mentra.sqlite", url=url,
                             runtime_id=shared_id, notebook=notebook,
                             source=f"the {DB_URL_VARIABLE} environment variable")
    if explicit is not None:
        path = Path(explicit).expanduser()
        return StoreLocation(path=path if path.is_absolute() else cwd / path, runtime_id=runtime_id,
                             source=EXPLICIT_SOURCE, notebook=notebook)
    if found is not None:
        notebook = found[0]
        stem = notebook.name[: -len(".ipynb")]
        beside = notebook.parent / STATE_FOLDER / f"{stem}.sqlite"
        if identity is not None:
            path = state_file_of(identity, notebook, beside)
            source = f"the notebook's metadata (the notebook from {found[1]})"
        else:
            path = beside
            runtime_id = free_runtime_id(runtime_id, path, notebook)
            source = f"beside the notebook (from {found[1]})"
        return StoreLocation(path=path, runtime_id=runtime_id, source=source, notebook=notebook,
                             legacy_path=notebook.with_name(stem + LEGACY_SUFFIX))
    return StoreLocation(path=cwd / STATE_FOLDER / "mentra.sqlite", runtime_id=runtime_id,
                         source="the current folder (the notebook's path is unknown)",
                         legacy_path=cwd / "mentra.sqlite")


def migrate_store(location: StoreLocation) -> Path | None:
    """Move an earlier version's state file (and its -wal/-shm) to `location.path`
    if only the old one exists; returns where it came from, or None. Creates the
    state folder either way, so SQLite can make its file there."""
    if location.url is not None:
        return None  # on Postgres: no file to move, no folder to make
    location.path.parent.mkdir(parents=True, exist_ok=True)
    old = location.legacy_path
    if old is None or location.path.exists() or not old.is_file():
        return None
    # The -wal holds committed transactions not yet in the main file: it moves
    # first, so a crash between two renames never leaves a main file without them.
    for suffix in reversed(_COMPANIONS):
        source = old.with_name(old.name + suffix)
        if source.exists():
            os.replace(source, location.path.with_name(location.path.name + suffix))
    return old


def _runtime_id(notebook: Path | None) -> str:
    if notebook is None:
        return "notebook"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", notebook.name[: -len(".ipynb")]) or "notebook"
