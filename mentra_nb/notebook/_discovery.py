"""Where a notebook's agents live: the state file and the runtime id.

Order: an explicit `%mentra db PATH` (or `%mentra db postgresql://…`) → the
`MENTRA_DB_URL` environment variable (a Postgres URL shared by several hosts) →
the notebook's own path (from `JPY_SESSION_NAME`, IPython's `__session__`, or
VS Code's `__vsc_ipynb_file__`) → `<notebook stem>.mentra.sqlite` beside it →
else `./mentra.sqlite`. The runtime id is the notebook's file name, so two
notebooks never see each other's agents even when they share a store; on a
JupyterHub it starts with the user's name (`JUPYTERHUB_USER`), so two users'
notebooks of one name do not either.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict

from mentra_nb._notebook_path import notebook_path
from mentra_nb.errors import ConfigError
from mentra_nb.store import is_postgres_url
from mentra_nb.store.postgres import redact_dsn

__all__ = ["StoreLocation", "discover_store", "notebook_path"]

STORE_SUFFIX = ".mentra.sqlite"
DB_URL_VARIABLE = "MENTRA_DB_URL"


class StoreLocation(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    path: Path
    runtime_id: str
    source: str  # how it was found, shown by `%mentra db`
    notebook: Path | None = None
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
    runtime_id = _runtime_id(notebook, environ)
    if explicit is not None and is_postgres_url(explicit):
        if _has_password(str(explicit)):
            raise ConfigError(
                "leave the password out of %mentra db: the notebook would keep it. Put it in "
                "~/.pgpass (or PGPASSFILE) or the PGPASSWORD variable, or set MENTRA_DB_URL in "
                "the kernel's environment"
            )
        return StoreLocation(path=cwd / "mentra.sqlite", url=str(explicit), runtime_id=runtime_id,
                             source="set with %mentra db", notebook=notebook)
    url = environ.get(DB_URL_VARIABLE)
    if explicit is None and url:
        if not is_postgres_url(url):
            raise ConfigError(f"{DB_URL_VARIABLE} must be a postgresql:// URL, not {url[:30]!r}")
        return StoreLocation(path=cwd / "mentra.sqlite", url=url, runtime_id=runtime_id,
                             source=f"the {DB_URL_VARIABLE} environment variable", notebook=notebook)
    if explicit is not None:
        path = Path(explicit).expanduser()
        return StoreLocation(path=path if path.is_absolute() else cwd / path, runtime_id=runtime_id,
                             source="set with %mentra db", notebook=notebook)
    if found is not None:
        notebook = found[0]
        return StoreLocation(path=notebook.with_name(notebook.name[: -len(".ipynb")] + STORE_SUFFIX),
                             runtime_id=runtime_id, source=f"beside the notebook (from {found[1]})",
                             notebook=notebook)
    return StoreLocation(path=cwd / "mentra.sqlite", runtime_id=runtime_id,
                         source="the current folder (the notebook's path is unknown)")


def _runtime_id(notebook: Path | None, environ: Mapping[str, str]) -> str:
    name = "notebook"
    if notebook is not None:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", notebook.name[: -len(".ipynb")]) or "notebook"
    user = environ.get("JUPYTERHUB_USER")
    return f"{user}/{name}" if user else name


def _has_password(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.password) or "password" in parse_qs(parts.query)
