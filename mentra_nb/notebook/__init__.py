"""The notebook layer: `%load_ext mentra_nb`, the `%mentra` magics and the widgets."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mentra_nb.notebook._host import RuntimeHost
    from mentra_nb.notebook._session import NotebookSession
    from mentra_nb.notebook.agent_view import AgentView
    from mentra_nb.notebook.turn import Turn

__all__ = [
    "AgentView",
    "NotebookSession",
    "RuntimeHost",
    "Turn",
    "load_ipython_extension",
    "magic_hint",
    "session",
    "unload_ipython_extension",
]

# The widgets and the session, imported on first use (PEP 562): `%load_ext` only
# registers the magics, and the runtime loads with the first `%mentra` command.
# (The session's module is `_session`: a submodule named `session` would replace the
# `session()` function below on the package when it is first imported.)
_EXPORTS = {"AgentView": "mentra_nb.notebook.agent_view",
            "NotebookSession": "mentra_nb.notebook._session", "RuntimeHost": "mentra_nb.notebook._host",
            "Turn": "mentra_nb.notebook.turn"}
_LOADED_ATTR = "_mentra_loaded"
_SESSION_ATTR = "_mentra_session"
_CELLS_ATTR = "_mentra_cells"
# Where Agent is defined: the display hook names it, so loading imports no runtime.
_AGENT_CLASS = ("mentra_nb.runtime._agent", "Agent")


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'mentra_nb.notebook' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def session(shell: Any = None) -> NotebookSession:
    """This kernel's session, made on first use after `%load_ext mentra_nb`."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None or not getattr(shell, _LOADED_ATTR, False):
        raise RuntimeError("mentra-nb is not loaded in this kernel; run %load_ext mentra_nb first")
    current: NotebookSession | None = getattr(shell, _SESSION_ATTR, None)
    if current is None:
        from mentra_nb.notebook._session import NotebookSession

        current = NotebookSession(shell.user_ns, cells=getattr(shell, _CELLS_ATTR, None))
        setattr(shell, _SESSION_ATTR, current)
    return current


def load_ipython_extension(shell: Any) -> None:
    """Called by `%load_ext mentra_nb`. Loading again (or re-running the setup
    cell) keeps the same session, runtime and leases."""
    from mentra_nb.errors import MentraError
    from mentra_nb.notebook._cell_history import CellHistory
    from mentra_nb.notebook._magics import MentraMagics

    if getattr(shell, _LOADED_ATTR, False):
        return
    setattr(shell, _LOADED_ATTR, True)
    magics = MentraMagics(shell, lambda: session(shell))
    shell.register_magics(magics)
    shell.configurables.append(magics)  # so %config MentraMagics.default_model works
    formatter = shell.display_formatter.ipython_display_formatter
    formatter.for_type_by_name(*_AGENT_CLASS, lambda agent: _display_agent(shell, agent))
    shell.set_custom_exc((MentraError,), _show_mentra_error)
    # From here on each cell's exception and displayed images are kept for {Err[n]},
    # %mentra explain and the notebook tools.
    cells = CellHistory(shell)
    cells.install()
    setattr(shell, _CELLS_ATTR, cells)


def unload_ipython_extension(shell: Any) -> None:
    """`%unload_ext mentra_nb`: close this kernel's session (its runtime stops its agents and
    releases their leases) and stop recording cells."""
    current = getattr(shell, _SESSION_ATTR, None)
    if current is not None:
        current.close()
    setattr(shell, _SESSION_ATTR, None)
    setattr(shell, _LOADED_ATTR, False)
    cells = getattr(shell, _CELLS_ATTR, None)
    if cells is not None:
        cells.uninstall()
    setattr(shell, _CELLS_ATTR, None)


def _display_agent(shell: Any, agent: Any) -> None:
    from mentra_nb.notebook._display import display

    display(session(shell).view(agent))


def _show_mentra_error(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
    # A MentraError's message already says what went wrong and what to do; a
    # traceback into the runtime would only hide it.
    print(f"{etype.__name__}: {value}")
    hint = magic_hint(value)
    if hint:
        print(f"mentra: {hint}")


def magic_hint(error: BaseException) -> str | None:
    """What to type in a notebook about `error`. The layers below speak to any
    caller, so only this layer names the magics."""
    from mentra_nb.errors import DatabaseError, LeaseLost, ModelNotFound, StoreError

    if isinstance(error, DatabaseError):  # not a state file: another file would not help
        return "%mentra db shows which database this notebook uses and how it was found"
    if isinstance(error, StoreError) and not isinstance(error, LeaseLost):
        return "%mentra db PATH keeps this notebook's agents in another state file"
    if isinstance(error, ModelNotFound):
        return "%mentra models lists the models each provider offers"
    return None
