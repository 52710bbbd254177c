"""The notebook layer: `%load_ext mentra_nb`, the `%mentra` magics and the widgets."""

from __future__ import annotations

from typing import Any

from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.notebook.session import NotebookSession
from mentra_nb.notebook.turn import Turn

__all__ = [
    "AgentView",
    "NotebookSession",
    "Turn",
    "load_ipython_extension",
    "magic_hint",
    "session",
    "unload_ipython_extension",
]

_SESSION_ATTR = "_mentra_session"


def session(shell: Any = None) -> NotebookSession:
    """This kernel's session (the one `%load_ext mentra_nb` made)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    current: NotebookSession | None = getattr(shell, _SESSION_ATTR, None) if shell is not None else None
    if current is None:
        raise RuntimeError("mentra-nb is not loaded in this kernel; run %load_ext mentra_nb first")
    return current


def load_ipython_extension(shell: Any) -> None:
    """Called by `%load_ext mentra_nb`. Loading again (or re-running the setup
    cell) keeps the same session, runtime and leases."""
    from mentra_nb.errors import MentraError
    from mentra_nb.notebook._magics import MentraMagics
    from mentra_nb.runtime import Agent

    current = getattr(shell, _SESSION_ATTR, None)
    if current is None:
        current = NotebookSession(shell.user_ns)
        setattr(shell, _SESSION_ATTR, current)
        magics = MentraMagics(shell, current)
        shell.register_magics(magics)
        shell.configurables.append(magics)  # so %config MentraMagics.default_model works
        formatter = shell.display_formatter.ipython_display_formatter
        formatter.for_type(Agent, lambda agent: _display_agent(current, agent))
        shell.set_custom_exc((MentraError,), _show_mentra_error)


def unload_ipython_extension(shell: Any) -> None:
    current = getattr(shell, _SESSION_ATTR, None)
    if current is not None:
        current.close()
        setattr(shell, _SESSION_ATTR, None)


def _display_agent(current: NotebookSession, agent: Any) -> None:
    from mentra_nb.notebook._display import display

    display(current.view(agent))


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
    from mentra_nb.errors import LeaseLost, ModelNotFound, StoreError

    if isinstance(error, StoreError) and not isinstance(error, LeaseLost):
        return "%mentra db PATH keeps this notebook's agents in another state file"
    if isinstance(error, ModelNotFound):
        return "%mentra models lists the models each provider offers"
    return None
