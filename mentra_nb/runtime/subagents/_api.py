"""The Python face of a root agent's subagents, for the notebook and for scripts.

Each function is also a method of the root agent (registered by
`SubagentsExtension`, as the team functions are): `root.list_subagents()`,
`root.preview_subagent(path)`, `root.interrupt_subagent(path)`, … The free
functions stay the typed way in:

    from mentra_nb.runtime import subagents
    subagents.list_subagents(lead)                 # [SubagentInfo, …] in path order
    subagents.subagent_picker(lead)                # SubagentPickerState | None (empty tree)
    stop = subagents.watch_subagents(lead, print)  # PickerUpdated / PickerRemoved / SubagentNotice
    page = subagents.preview(lead, "/root/research")           # the latest turn
    page = subagents.preview(lead, "/root/research", before=page.older)
    subagents.interrupt_subagent(lead, "/root/research")       # returns the previous status
    subagents.pending_approvals(lead)              # [(path, PendingApproval), …] waiting for you
    subagents.approve_call(lead, "/root/research", "call_1@1")  # or deny_call(..., reason)

Reading (`list_subagents`, `subagent_picker`, `preview`) is safe from any
thread, also while the root runs. `watch_subagents` callbacks run on the
runtime's loop; `interrupt_subagent` must be called there too (a notebook host
hands it to its loop thread).
"""

from __future__ import annotations

from collections.abc import Callable

from mentra_nb.errors import AgentError, ConfigError
from mentra_nb.runtime._agent import Agent
from mentra_nb.runtime._services import AgentHandle, HasServices
from mentra_nb.runtime._snapshot import PendingApproval
from mentra_nb.runtime.subagents._errors import UnknownSubagent
from mentra_nb.runtime.subagents._events import SubagentEvent
from mentra_nb.runtime.subagents._picker import SubagentInfo, SubagentPickerState
from mentra_nb.runtime.subagents._preview import PREVIEW_MAX_BYTES, PreviewPage, preview_page
from mentra_nb.runtime.subagents._registry import RegistryOwner, SubagentRegistry
from mentra_nb.runtime.subagents._tree import SubagentStatus

__all__ = [
    "approve_call",
    "deny_call",
    "interrupt_subagent",
    "list_subagents",
    "pending_approvals",
    "preview",
    "subagent",
    "subagent_picker",
    "subagent_registry",
    "watch_subagents",
]


def subagent_registry(owner: HasServices) -> SubagentRegistry:
    """The registry holding every open tree of a runtime (`owner`: the runtime or
    one of its agents)."""
    services = owner.services
    extension = services.extension(RegistryOwner)  # the SubagentsExtension
    if extension is None:
        raise ConfigError(
            f"runtime '{services.runtime_id}' has no SubagentsExtension installed; pass one in "
            "Runtime(extensions=[*default_extensions(), ...])"
        )
    return extension.registry


def _root_id(root: AgentHandle) -> str:
    location = subagent_registry(root).locate(root.id)
    if location is None:
        raise UnknownSubagent(
            f"agent '{root.name}' has no subagent tree; spawn it with "
            "AgentConfig(subagents=True) to let it delegate"
        )
    return location[0]


def list_subagents(root: AgentHandle, prefix: str | None = None) -> list[SubagentInfo]:
    """Every child of `root`'s tree (or those under `prefix`), in path order."""
    return subagent_registry(root).infos(_root_id(root), prefix)


def subagent_picker(root: AgentHandle) -> SubagentPickerState | None:
    """The badge and picker for `root`'s tree; None while it has no children."""
    return subagent_registry(root).picker(_root_id(root))


def watch_subagents(
    root: AgentHandle, callback: Callable[[SubagentEvent], None], *, replay: bool = True
) -> Callable[[], None]:
    """Call `callback` after every change of `root`'s tree (and at once with the
    current picker when `replay` and the tree has children). Returns an
    unsubscribe function."""
    return subagent_registry(root).subscribe(_root_id(root), callback, replay=replay)


def preview(
    root: AgentHandle, path: str, before: str | None = None, *, max_bytes: int = PREVIEW_MAX_BYTES
) -> PreviewPage:
    """One turn of the child at `path`, newest first: `before=None` is the latest
    turn, `before=page.older` the one before it."""
    services = root.services
    root_id = _root_id(root)
    record = subagent_registry(root).tree(root_id).record(path)
    count = 0
    if record.agent_id is not None:
        # From the store, not the live agent: this may run on another thread.
        # Children live under the runtime id that spawned them, usually this one.
        for runtime_id in (services.runtime_id, None):
            found = [a for a in services.store.list_agents(runtime_id) if a.id == record.agent_id]
            if found:
                count = found[0].message_count
                break
    return preview_page(services.store, path, record, count, before, max_bytes=max_bytes)


def subagent(root: AgentHandle, path: str) -> Agent | None:
    """The live `Agent` of the child at `path` (to watch it stream), or None when
    this runtime has not loaded it (e.g. a finished child after a restart)."""
    record = subagent_registry(root).tree(_root_id(root)).record(path)
    if record.agent_id is None:
        return None
    child = root.services.live_agent(record.agent_id)
    return child if isinstance(child, Agent) else None  # every live agent of a Runtime is one


def interrupt_subagent(root: AgentHandle, path: str) -> SubagentStatus:
    """Interrupt the child at `path` (as the `interrupt_agent` tool does); returns
    its status before. Call on the runtime's loop."""
    return subagent_registry(root).interrupt(_root_id(root), path)


def pending_approvals(root: AgentHandle) -> list[tuple[str, PendingApproval]]:
    """The calls of `root`'s children that wait for the user's approval, as
    (path, call) in path order (children live in this process only)."""
    waiting: list[tuple[str, PendingApproval]] = []
    for info in list_subagents(root):
        if not info.waiting_for_approval:
            continue
        child = subagent(root, info.path)
        if child is not None:
            waiting.extend((info.path, call) for call in child.snapshot.pending_approvals)
    return waiting


def _waiting_child(root: AgentHandle, path: str) -> Agent:
    child = subagent(root, path)
    if child is None:
        raise AgentError(
            f"subagent `{path}` is not running in this process, so it has no call waiting for "
            "approval; subagents.pending_approvals(root) lists the waiting ones"
        )
    return child


def approve_call(root: AgentHandle, path: str, call_id: str, *, always: bool = False) -> None:
    """Let the waiting call `call_id` (`<call id>@<run>`, or a bare call id) of the
    child at `path` run; `always=True` lets that child call the tool without asking
    from now on. Safe from any thread."""
    _waiting_child(root, path).approve(call_id, always=always)


def deny_call(root: AgentHandle, path: str, call_id: str, reason: str = "") -> None:
    """Refuse the waiting call `call_id` of the child at `path`; its model gets an
    error result with `reason`. Safe from any thread."""
    _waiting_child(root, path).deny(call_id, reason)
