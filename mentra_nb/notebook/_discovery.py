"""Where a notebook's agents live: the state file and the runtime id.

Order: an explicit `%mentra db PATH` → the notebook's own path (from
`JPY_SESSION_NAME`, IPython's `__session__`, or VS Code's
`__vsc_ipynb_file__`) → `<notebook stem>.mentra.sqlite` beside it → else
`./mentra.sqlite`. The runtime id is the notebook's file name, so two
notebooks never see each other's agents even when they share a file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from mentra_nb._notebook_path import notebook_path

__all__ = ["StoreLocation", "discover_store", "notebook_path"]

STORE_SUFFIX = ".mentra.sqlite"


class StoreLocation(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    path: Path
    runtime_id: str
    source: str  # how it was found, shown by `%mentra db`
    notebook: Path | None = None


def discover_store(user_ns: Mapping[str, Any], *, explicit: str | os.PathLike[str] | None = None,
                   cwd: Path | None = None, environ: Mapping[str, str] = os.environ) -> StoreLocation:
    cwd = cwd or Path.cwd()
    found = notebook_path(user_ns, environ, cwd)
    notebook = found[0] if found is not None else None
    runtime_id = _runtime_id(notebook)
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


def _runtime_id(notebook: Path | None) -> str:
    if notebook is None:
        return "notebook"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", notebook.name[: -len(".ipynb")]) or "notebook"
