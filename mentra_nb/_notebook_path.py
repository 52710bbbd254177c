"""Which notebook this kernel runs, found one way for everyone who needs it.

The notebook layer puts the state file beside it, the providers look for a
`.env` beside it and the replay provider keeps its cassette beside it. The
notebook's path comes from, in order: `JPY_SESSION_NAME` (Jupyter Server),
IPython's `__session__`, VS Code's `__vsc_ipynb_file__` in the kernel's
variables, or the command line of the headless runner (nbconvert, papermill)
that started this kernel: those tell the kernel nothing, but name the notebook
they run. Code below the notebook layer has no kernel variables of its own,
so the notebook session lends them with `use_namespace` when it starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

__all__ = ["notebook_path", "runner_notebook", "use_namespace"]

_namespace: Mapping[str, Any] | None = None


def use_namespace(user_ns: Mapping[str, Any] | None) -> None:
    """Read the kernel's variables (`None`: forget them) when no namespace is passed."""
    global _namespace
    _namespace = user_ns


def notebook_path(
    user_ns: Mapping[str, Any] | None = None, environ: Mapping[str, str] = os.environ,
    cwd: Path | None = None,
) -> tuple[Path, str] | None:
    """The notebook this kernel runs (absolute), and where that was learnt; None
    when nothing says (a script, a plain IPython shell)."""
    namespace = user_ns if user_ns is not None else (_namespace or {})
    candidates = [
        (environ.get("JPY_SESSION_NAME"), "JPY_SESSION_NAME"),
        (namespace.get("__session__"), "__session__"),
        (namespace.get("__vsc_ipynb_file__"), "__vsc_ipynb_file__"),
    ]
    for value, source in candidates:
        if isinstance(value, str) and value.endswith(".ipynb"):
            path = Path(value).expanduser()
            return (path if path.is_absolute() else (cwd or Path.cwd()) / path), source
    return runner_notebook()


# Words in a parent's command line that say it runs notebooks without a server.
_RUNNERS = ("nbconvert", "papermill", "nbclient")


def runner_notebook(process: psutil.Process | None = None) -> tuple[Path, str] | None:
    """The notebook a headless runner (the parent of `process`, default this one)
    executes, read from the runner's command line; None if the parent is no such
    runner, or names no notebook, or several (`nbconvert --execute a.ipynb b.ipynb`:
    which one this kernel runs is not said anywhere)."""
    try:
        parent = (process or psutil.Process()).parent()
        if parent is None:
            return None
        argv = parent.cmdline()
        runner = next((r for r in _RUNNERS if any(r in Path(arg).name for arg in argv)), None)
        if runner is None:
            return None
        notebooks = [arg for arg in argv[1:] if arg.endswith(".ipynb") and not arg.startswith("-")]
        if runner == "papermill":
            notebooks = notebooks[:1]  # papermill INPUT OUTPUT: the state belongs to the input
        if len(set(notebooks)) != 1:
            return None
        path = Path(notebooks[0]).expanduser()
        if not path.is_absolute():
            path = Path(parent.cwd()) / path
    except (psutil.Error, OSError):
        return None
    return path, f"the {runner} command line"
