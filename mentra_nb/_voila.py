"""Voila: a notebook served as an app, a kernel for every page load.

Voila starts each page's kernel in the notebook's folder, with the request in
its environment (`SERVER_SOFTWARE=voila/…`, `SCRIPT_NAME`) and, before the
notebook's cells run, `VOILA_KERNEL_ID`. It keeps that kernel after the tab
closes, so every page is a visitor of its own: its agents live under the runtime
id `<notebook>/voila-<kernel id>`, and no visitor waits for another's lease.
The notebook is named by the page (`/voila/render/sub/app.ipynb`) or, for
`voila app.ipynb` (whose page is `/`), by the server's command line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import psutil

__all__ = ["is_voila_kernel", "visitor_runtime_id", "voila_notebook"]

KERNEL_VARIABLE = "VOILA_KERNEL_ID"


def is_voila_kernel(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether a Voila server started this kernel, for a visitor's page."""
    return environ.get("SERVER_SOFTWARE", "").startswith("voila/")


def voila_notebook(environ: Mapping[str, str] = os.environ, cwd: Path | None = None,
                   process: psutil.Process | None = None) -> tuple[Path, str] | None:
    """The notebook a Voila page runs, and where that was learnt; None outside Voila."""
    if not is_voila_kernel(environ):
        return None
    page = environ.get("SCRIPT_NAME", "").rsplit("/", 1)[-1]
    if page.endswith(".ipynb"):
        return (cwd or Path.cwd()) / page, "Voila's SCRIPT_NAME"
    try:
        parent = (process or psutil.Process()).parent()
        if parent is None:
            return None
        argv = parent.cmdline()
        named = [arg for arg in argv[1:] if arg.endswith(".ipynb") and not arg.startswith("-")]
        # `voila app.ipynb` runs as [python, …/bin/voila, …] or [python, -m, voila, …].
        if len(named) != 1 or not any(Path(arg).name == "voila" for arg in argv[:3]):
            return None
        path = Path(named[0]).expanduser()
        return (path if path.is_absolute() else Path(parent.cwd()) / path), "the voila command line"
    except (psutil.Error, OSError):
        return None


def visitor_runtime_id(runtime_id: str, environ: Mapping[str, str] = os.environ) -> str:
    """`runtime_id` of this page's visitor in a Voila kernel; unchanged elsewhere."""
    visitor = environ.get(KERNEL_VARIABLE) if is_voila_kernel(environ) else None
    if not visitor:
        return runtime_id
    return f"{runtime_id}/voila-{re.sub(r'[^A-Za-z0-9_.-]', '_', visitor)}"
