"""Which notebook this kernel runs, found one way for everyone who needs it.

The notebook layer puts the state file beside it, the providers look for a
`.env` beside it and the replay provider keeps its cassette beside it. The
notebook's path comes from, in order: `JPY_SESSION_NAME` (Jupyter Server, or
whoever starts the kernel: `NotebookClient(...).execute(env=...)`), IPython's
`__session__`, VS Code's `__vsc_ipynb_file__` and papermill's
`PAPERMILL_INPUT_PATH` parameter (`--inject-input-path`, or `parameters=` in
its Python API) in the kernel's variables, a Voila server's page (`_voila.py`),
or the command line of the headless
runner (nbconvert, papermill) that started this kernel: those tell the kernel
nothing, but name the notebook they run (of several named, the one in the
folder the kernel runs in, where nbconvert starts each notebook's kernel).
Code below the notebook layer has no kernel variables of its own, so the
notebook session lends them with `use_namespace` when it starts.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from mentra_nb._runner_command_line import runner_inputs
from mentra_nb._voila import voila_notebook

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
        (namespace.get("PAPERMILL_INPUT_PATH"), "papermill's PAPERMILL_INPUT_PATH"),
    ]
    for value, source in candidates:
        # (papermill's input may be a URL, s3://…: no folder to keep state in)
        if isinstance(value, str) and value.endswith(".ipynb") and "://" not in value:
            path = Path(value).expanduser()
            return (path if path.is_absolute() else (cwd or Path.cwd()) / path), source
    return voila_notebook(environ, cwd) or runner_notebook()


def runner_notebook(process: psutil.Process | None = None) -> tuple[Path, str] | None:
    """The notebook a headless runner (the parent of `process`, default this one)
    executes, read from the runner's command line by its own rules
    (`_runner_command_line`: `--output out.ipynb` names no notebook to run); None
    if the parent is no such runner, or names no notebook. Of several
    (`nbconvert --execute a.ipynb b.ipynb`), the one in the kernel's own folder
    (nbconvert starts each kernel in its notebook's folder); None when that is not
    exactly one, as for two notebooks of one folder: which one this kernel runs is
    not said anywhere."""
    if process is not None:
        return _runner_notebook(process)
    # This process's answer is asked for on every run (the notebook's `.env` holds
    # secrets to mask) and reading another process is slow; it stays the same while
    # the parent and the folder do: a runner's command line does not change.
    try:
        return _this_runner_notebook(os.getppid(), os.getcwd())
    except OSError:  # the folder was removed
        return _runner_notebook(None)


@functools.lru_cache(maxsize=4)
def _this_runner_notebook(parent_pid: int, cwd: str) -> tuple[Path, str] | None:
    return _runner_notebook(None)


def _runner_notebook(process: psutil.Process | None) -> tuple[Path, str] | None:
    try:
        process = process or psutil.Process()
        parent = process.parent()
        if parent is None:
            return None
        found = runner_inputs(parent.cmdline(), Path(parent.cwd()), _variable(parent, "PWD"))
        if found is None:
            return None
        runner, paths = found
        paths = [p for p in paths if p.suffix == ".ipynb"]
        how = f"the {runner} command line"
        if len(paths) > 1:
            here = Path(process.cwd()).resolve()
            paths = [p for p in paths if p.parent.resolve() == here]
            how += " and the kernel's folder"
        if len(paths) != 1:
            return None
    except (psutil.Error, OSError):
        return None
    return paths[0], how


def _variable(process: psutil.Process, name: str) -> str | None:
    """A variable of the environment `process` was started with, if it may be read."""
    try:
        return process.environ().get(name)
    except (psutil.Error, OSError):
        return None
