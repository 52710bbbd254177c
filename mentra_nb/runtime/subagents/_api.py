"""The Python face of a root agent's subagents, for the notebook and for scripts.

    from mentra_nb.runtime import subagents
    subagents.list_subagents(lead)                 # [SubagentInfo, …] in path order
    subagents.subagent_picker(lead)                # SubagentPicker | None (empty tree)
    stop = subagents.watch_subagents(lead, print)  # PickerUpdated / PickerRemoved / SubagentNotice
    page = subagents.preview(lead, "/root/research")           # the latest turn
    page = subagents.preview(lead, "/root/research", before=page.older)
    subagents.interrupt_subagent(lead, "/root/research")       # returns the previous status

Reading (`list_subagents`, `subagent_picker`, `preview`) is safe from any
thread, also while the root runs. `watch_subagents` callbacks run on the
runtime's loop; `interrupt_subagent` must be called there too (a notebook host
hands it to its loop thread).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mentra_nb.errors import ConfigError
from mentra_nb.runtime.subagents._errors import UnknownSubagent
from mentra_nb.runtime.subagents._events import SubagentEvent
from mentra_nb.runtime.subagents._extension import SubagentsExtension
from mentra_nb.runtime.subagents._picker import SubagentInfo, SubagentPicker
from mentra_nb.runtime.subagents._preview import PREVIEW_MAX_BYTES, PreviewPage, preview_page
from mentra_nb.runtime.subagents._registry import SubagentRegistry
from mentra_nb.runtime.subagents._tree import SubagentStatus

if TYPE_CHECKING:
    from mentra_nb.runtime._agent import Agent
    from mentra_nb.runtime._runtime import Runtime

__all__ = [
    "interrupt_subagent",
    "list_subagents",
    "preview",
    "subagent",
    "subagent_picker",
    "subagent_registry",
    "watch_subagents",
]


def _extension(runtime: Runtime) -> SubagentsExtension:
    for extension in runtime._extensions:
        if isinstance(extension, SubagentsExtension):
            return extension
    raise ConfigError(
        f"runtime '{runtime.runtime_id}' has no SubagentsExtension installed; pass one in "
        "Runtime(extensions=[SubagentsExtension()])"
    )


def subagent_registry(runtime: Runtime) -> SubagentRegistry:
    """The registry holding every open tree of `runtime`."""
    return _extension(runtime).registry


def _root_id(root: Agent) -> str:
    location = subagent_registry(root.runtime).locate(root.id)
    if location is None:
        raise UnknownSubagent(
            f"agent '{root.name}' has no subagent tree; spawn it with "
            "AgentConfig(subagents=True) to let it delegate"
        )
    return location[0]


def list_subagents(root: Agent, prefix: str | None = None) -> list[SubagentInfo]:
    """Every child of `root`'s tree (or those under `prefix`), in path order."""
    return subagent_registry(root.runtime).infos(_root_id(root), prefix)


def subagent_picker(root: Agent) -> SubagentPicker | None:
    """The badge and picker for `root`'s tree; None while it has no children."""
    return subagent_registry(root.runtime).picker(_root_id(root))


def watch_subagents(
    root: Agent, callback: Callable[[SubagentEvent], None], *, replay: bool = True
) -> Callable[[], None]:
    """Call `callback` after every change of `root`'s tree (and at once with the
    current picker when `replay` and the tree has children). Returns an
    unsubscribe function."""
    return subagent_registry(root.runtime).subscribe(_root_id(root), callback, replay=replay)


def preview(
    root: Agent, path: str, before: str | None = None, *, max_bytes: int = PREVIEW_MAX_BYTES
) -> PreviewPage:
    """One turn of the child at `path`, newest first: `before=None` is the latest
    turn, `before=page.older` the one before it."""
    runtime = root.runtime
    root_id = _root_id(root)
    record = subagent_registry(runtime).tree(root_id).record(path)
    count = 0
    if record.agent_id is not None:
        # From the store, not the live agent: this may run on another thread.
        # Children live under the runtime id that spawned them, usually this one.
        for runtime_id in (runtime.runtime_id, None):
            found = [a for a in runtime.store.list_agents(runtime_id) if a.id == record.agent_id]
            if found:
                count = found[0].message_count
                break
    return preview_page(runtime.store, path, record, count, before, max_bytes=max_bytes)


def subagent(root: Agent, path: str) -> Agent | None:
    """The live `Agent` of the child at `path` (to watch it stream), or None when
    this runtime has not loaded it (e.g. a finished child after a restart)."""
    record = subagent_registry(root.runtime).tree(_root_id(root)).record(path)
    if record.agent_id is None:
        return None
    return root.runtime._agents.get(record.agent_id)


def interrupt_subagent(root: Agent, path: str) -> SubagentStatus:
    """Interrupt the child at `path` (as the `interrupt_agent` tool does); returns
    its status before. Call on the runtime's loop."""
    return subagent_registry(root.runtime).interrupt(_root_id(root), path)
