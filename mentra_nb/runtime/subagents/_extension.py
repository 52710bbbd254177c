"""How subagents plug into a `Runtime`: `SubagentsExtension`.

One of a runtime's default extensions. An agent whose config has `subagents`
set (`AgentConfig(subagents=True)`) becomes the root of a tree: its tree is
opened (and crash fix-ups applied) when the agent is spawned or resumed, it is
offered the six subagent tools, and mail is delivered before each of its model
steps. Its children are real agents of the same runtime (kind "subagent",
their own transcripts in the store) that inherit its config, and run as
asyncio tasks on the runtime's loop, so a spawning tool call returns at once.

Mail between the agents of a tree is queued as records (`subagents.mail`):
each agent claims its own at the start of a round and settles it when the run
ends (and when it is loaded after a crash) by what its transcript kept.
`rt.post` to a subagent queues mail the same way; a child that is not running
is started for it, as `followup_task` would.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from mentra_nb.errors import ConfigError, MentraError
from mentra_nb.messages import Message
from mentra_nb.runtime._extensions import AgentExtension, RuntimeExtension
from mentra_nb.runtime._redaction import known_secrets, scrub
from mentra_nb.runtime._services import AgentHandle, Services
from mentra_nb.runtime.events import (
    AgentEvent,
    AssistantMessageCommitted,
    ToolApprovalRequested,
    ToolApprovalResolved,
)
from mentra_nb.runtime.subagents import _api
from mentra_nb.runtime.subagents import mail as _mail
from mentra_nb.runtime.subagents._config import SubagentConfig
from mentra_nb.runtime.subagents._errors import SubagentError, SubagentLimitReached, UnknownSubagent
from mentra_nb.runtime.subagents._fork import ForkTurns, fork_history
from mentra_nb.runtime.subagents._mailbox import new_mail_id, render_mail
from mentra_nb.runtime.subagents._preamble import child_config
from mentra_nb.runtime.subagents._registry import RegistryOwner, SubagentRegistry
from mentra_nb.runtime.subagents._snapshot import SubagentSnapshot, SubagentStatus
from mentra_nb.runtime.subagents._tools import subagent_tool_specs, subagent_tools
from mentra_nb.runtime.subagents._tree import ROOT_PATH, TREE, Mail, SubagentTree, legacy_mailbox
from mentra_nb.runtime.tools import Tool
from mentra_nb.store.base import AgentRecord

__all__ = ["HEADLESS_REFUSAL", "SubagentAgentExtension", "SubagentsExtension"]

log = logging.getLogger("mentra_nb.runtime.subagents")

SPAWNING_TOOLS = ("spawn_agent", "followup_task")
INTERRUPT_GRACE_S = 10.0  # how long interrupt_agent waits for the child's run to stop
# A child's last_message after its turn was cut (the spec's monitor records the abort's reason).
INTERRUPTED_REASON = "interrupted: its turn was stopped and rolled back; followup_task restarts it"
CLOSED_REASON = "interrupted: the runtime closed during its turn; followup_task restarts it"
HEADLESS_REFUSAL = "headless subagents cannot approve mutations"
"""The start of the error result a child's call gets under `SubagentLimits(approvals="deny")`."""


class SubagentsExtension(RuntimeExtension, RegistryOwner):
    """The runtime-wide half: one registry, and the tasks driving children."""

    config = SubagentConfig
    snapshot = SubagentSnapshot
    # The `subagents` functions as methods of the root (`root.list_subagents()`), as
    # the team functions are methods of a lead.
    agent_api: ClassVar[dict[str, Any]] = {
        "list_subagents": _api.list_subagents,
        "subagent": _api.subagent,
        "subagent_picker": _api.subagent_picker,
        "watch_subagents": _api.watch_subagents,
        "preview_subagent": _api.preview,
        "interrupt_subagent": _api.interrupt_subagent,
        "pending_subagent_approvals": _api.pending_approvals,
        "approve_subagent_call": _api.approve_call,
        "deny_subagent_call": _api.deny_call,
    }

    def __init__(self, registry: SubagentRegistry | None = None) -> None:
        self.registry = registry or SubagentRegistry()
        self._roots: dict[str, AgentHandle] = {}  # the open roots, to reach their services
        self._runs: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._handles: dict[tuple[str, str], _ChildRun] = {}

    def tool_names(self) -> tuple[str, ...]:
        return tuple(subagent_tool_specs())

    def attach(self, agent: AgentHandle) -> AgentExtension | None:
        if agent.kind == "subagent":
            extension = SubagentAgentExtension(self, agent, location=None)
        else:
            limits = SubagentConfig.of(agent.config).subagents
            if limits is None:
                return None
            services = agent.services
            self.registry.initialize(
                agent.id, store=services.store, token=services.token, limits=limits,
                on_commit=agent.state.changed,
            )
            extension = SubagentAgentExtension(self, agent, location=(agent.id, ROOT_PATH))
            self._roots[agent.id] = agent
        # The agent was just loaded (and crash-recovered): mail its last process
        # claimed is done if the transcript kept it, pending again if not.
        extension.settle()
        return extension

    def post_mail(self, services: Services, record: AgentRecord, sender: str, content: str) -> int | None:
        if record.kind != "subagent":
            return None
        if not isinstance(sender, str) or not sender.strip() or sender.startswith("/"):
            raise ConfigError(
                f"the sender {sender!r} cannot post to a subagent: give a name that is not a path "
                "of the tree (paths are how its agents sign their mail), e.g. sender='user'")
        if not isinstance(content, str) or not content.strip():
            raise ConfigError("rt.post needs some content for the subagent to read; got none")
        root_id, path = _locate_stored(services, record)
        mail = Mail(id=new_mail_id(), sender=sender, recipient=path,
                    text=scrub(content, known_secrets(services.workspace_root)))
        return _mail.queue_mail(services.store, root_id, mail).seq

    def mail_arrived(self) -> None:
        self.registry.mail_changed()
        for root_id in self.registry.root_ids():
            self._wake_for_posted(root_id)

    def _wake_for_posted(self, root_id: str) -> None:
        """Posted mail (`rt.post`) for a child that is not running starts it, as a
        follow-up would; mail from its tree waits for one (the spec's send_message)."""
        posted = {m.recipient for m in self.registry.pending_mail(root_id)
                  if not m.sender.startswith(ROOT_PATH)}
        for path in sorted(posted - {ROOT_PATH}):
            self._wake(root_id, path)

    def _wake(self, root_id: str, path: str) -> None:
        record = self.registry.tree(root_id).agents.get(path)
        if record is None or record.is_active or record.status == "errored" or record.agent_id is None:
            return
        owner = self._roots.get(root_id)
        if owner is None:
            return
        services = owner.services
        try:
            child = services.live_agent(record.agent_id) or services.load_agent(record.agent_id)
            opening = [child.resumable_turn] if child.resumable_turn is not None else []
            self.start(root_id, path, child, opening, restart=True)
        except MentraError as err:  # e.g. the concurrency limit: the mail waits for a follow-up
            log.warning("posted mail for subagent %s waits: %s", path, err)


    def start(self, root_id: str, path: str, child: AgentHandle, opening: list[Message], *,
              restart: bool = False) -> None:
        """Mark `path` running (persisted) and start its run as a task."""
        handle = _ChildRun(child, self._monitor(root_id, path))
        turn = f"run-{child.state.run_generation + 1}"
        if restart:
            self.registry.restart(root_id, path, handle, turn=turn)
        else:
            self.registry.attach(root_id, path, handle, turn=turn, agent_id=child.id)
        key = (root_id, path)
        task = asyncio.get_running_loop().create_task(
            self._drive(root_id, path, handle, opening), name=f"mentra-subagent-{path}"
        )
        self._runs[key] = task
        self._handles[key] = handle

        def forget(done: asyncio.Task[None]) -> None:
            if self._runs.get(key) is done:
                del self._runs[key]
                self._handles.pop(key, None)

        task.add_done_callback(forget)

    def _monitor(self, root_id: str, path: str) -> Callable[[AgentEvent], None]:
        """What the tree learns from a running child's events, as the spec's monitor:
        each committed message with text becomes its `last_message`, and a call
        waiting for the user is recorded (and announced to its parent)."""
        registry = self.registry

        def on_event(event: AgentEvent) -> None:
            try:
                if isinstance(event, AssistantMessageCommitted):
                    if event.message.text:
                        registry.message(root_id, path, event.message.text)
                elif isinstance(event, ToolApprovalRequested):
                    call = f"{event.tool_use_id}@{event.run_generation}"
                    registry.approval_pending(root_id, path, call, event.name)
                elif isinstance(event, ToolApprovalResolved):
                    registry.approval_resolved(root_id, path, f"{event.tool_use_id}@{event.run_generation}")
            except MentraError as err:  # the run goes on; the tree catches up at its end
                log.warning("could not record the progress of subagent %s: %s", path, err)

        return on_event

    async def _drive(self, root_id: str, path: str, handle: _ChildRun, opening: list[Message]) -> None:
        child = handle.child
        status: SubagentStatus = "completed"
        text: str | None = None
        unsubscribe = child.state.milestones.add_callback(handle.monitor)
        try:
            if handle.interrupted:  # interrupted before its run began
                raise asyncio.CancelledError
            reply = await child.start_run(opening)
            text = reply.text
        except asyncio.CancelledError:
            status = "interrupted"
            text = INTERRUPTED_REASON
        except Exception as err:
            status = "errored"
            text = str(err) if isinstance(err, MentraError) else f"{type(err).__name__}: {err}"
        finally:
            unsubscribe()
        # A runtime that is closing interrupts its children; that is not news for
        # the parent (a crash would not tell it either): record it, send nothing.
        closing = child.services.closed
        if closing and status == "interrupted":
            text = CLOSED_REASON
        try:
            self.registry.finished(root_id, path, status, text, notify_parent=not closing)
        except MentraError as err:
            log.warning("could not record that subagent %s ended (%s): %s", path, status, err)
        if not closing:
            # Mail posted while this run was in its last round waits for no signal.
            self._wake_for_posted(root_id)

    def run_task(self, root_id: str, path: str) -> asyncio.Task[None] | None:
        """The task driving the child at `path`, while it runs."""
        return self._runs.get((root_id, path))

    async def aclose(self) -> None:
        for handle in self._handles.values():
            handle.interrupt()
        await asyncio.gather(*self._runs.values(), return_exceptions=True)
        for root_id in self.registry.root_ids():
            self.registry.remove_root(root_id)
        self._roots.clear()


class _ChildRun:
    """The live handle of one child's run; `interrupt` cancels it (the run is
    rolled back, its task message kept for a follow-up)."""

    def __init__(self, child: AgentHandle, monitor: Callable[[AgentEvent], None]) -> None:
        self.child = child
        self.monitor = monitor
        self.interrupted = False

    def interrupt(self) -> None:
        self.interrupted = True
        self.child.cancel()


class SubagentAgentExtension(AgentExtension):
    """The per-agent half: tools, mail delivery and the snapshot field of one
    agent of a tree (the root, or a child)."""

    def __init__(self, owner: SubagentsExtension, agent: AgentHandle,
                 location: tuple[str, str] | None) -> None:
        self.owner = owner
        self.agent = agent
        self._location = location
        self._tools: list[Tool] | None = None

    @property
    def registry(self) -> SubagentRegistry:
        return self.owner.registry

    def location(self) -> tuple[str, str] | None:
        """(root id, path); a child learns it once the tree records its agent id."""
        if self._location is None:
            self._location = self.registry.locate(self.agent.id)
        if self._location is not None and not self.registry.has_root(self._location[0]):
            return None
        return self._location

    def require_location(self) -> tuple[str, str]:
        location = self.location()
        if location is None:
            raise UnknownSubagent(
                f"agent '{self.agent.name}' is not part of an open subagent tree"
            )
        return location

    # --- AgentExtension -------------------------------------------------------------

    def tools(self) -> list[Tool]:
        if SubagentConfig.of(self.agent.config).subagents is None:
            return []
        if self._tools is None:
            self._tools = subagent_tools(self)
        if self.can_spawn():
            return self._tools
        # At max_depth spawning is refused anyway; not offering it saves a wasted round.
        return [t for t in self._tools if t.spec.name not in SPAWNING_TOOLS]

    def can_spawn(self) -> bool:
        """Whether this agent is above its tree's `max_depth` (a root always is)."""
        location = self.location()
        if location is None:
            return True  # not in an open tree: spawn_agent itself says so
        root_id, path = location
        if path == ROOT_PATH:
            return True
        try:
            depth = self.registry.tree(root_id).record(path).depth
        except UnknownSubagent:
            return True
        return depth < self.registry.limits(root_id).max_depth

    def refuse_approval(self, tool_name: str) -> str | None:
        location = self.location()
        if location is None or location[1] == ROOT_PATH:
            return None  # the root has a user
        if self.registry.limits(location[0]).approvals != "deny":
            return None
        return (f"{HEADLESS_REFUSAL}: '{tool_name}' needs the user's approval and this subagent "
                'tree answers such calls with "deny" (SubagentLimits(approvals="deny")), so it was '
                "not run. Do the task without it, or say in your final answer what should be done.")

    async def before_round(self) -> list[Message]:
        location = self.location()
        if location is None:
            return []
        root_id, path = location
        agent = self.agent
        services = agent.services
        try:
            mail = _mail.claim_mail(services.store, root_id, path, agent.state.transcript,
                                    agent_id=agent.id, token=services.token)
        except MentraError as err:  # the mail stays pending for the next round
            log.warning("could not read the mail of %s: %s", path, err)
            return []
        return [render_mail(m) for m in mail]

    async def after_run(self, succeeded: bool) -> None:
        # Settled from the transcript rather than from `succeeded`: what the store
        # keeps (rolled back or not) says which mail was read. Through StoreIO, in
        # order with the agent's writes; the run is over, so the store thread reads
        # a copy of the transcript that no longer changes.
        agent = self.agent
        history = list(agent.state.transcript)
        if await agent.services.store_io.run(agent.id, lambda: self._settle_stored(history)):
            self.registry.mail_changed()

    def settle(self) -> None:
        """Settle the mail this agent claimed by what its transcript holds."""
        if self._settle_stored(self.agent.state.transcript):
            self.registry.mail_changed()

    def _settle_stored(self, transcript: Sequence[Message]) -> bool:
        """The store's half of `settle` (safe on a store thread: it notifies no one);
        whether any mail went back to pending."""
        agent = self.agent
        services = agent.services
        try:
            requeued = _mail.settle_mail(services.store, agent.id, transcript, token=services.token)
        except MentraError as err:
            # Left claimed, it is settled again when the agent next runs or loads.
            log.warning("could not settle the subagent mail of %s: %s", agent.name, err)
            return False
        return requeued > 0

    def snapshot_fields(self) -> dict[str, Any]:
        location = self.location()
        if location is None:
            return {}
        root_id, path = location
        prefix = None if path == ROOT_PATH else f"{path}/"
        return {"subagents": self.registry.summaries(root_id, prefix)}

    # --- what the tools do ------------------------------------------------------------

    def resolve(self, target: str) -> str:
        """An absolute path (`/root/a/b`) as is; anything else relative to the caller."""
        _root_id, path = self.require_location()
        target = target.strip().rstrip("/") or ROOT_PATH
        if target == ROOT_PATH or target.startswith(ROOT_PATH + "/"):
            return target
        return f"{path}/{target.lstrip('/')}"

    def spawn(self, task_name: str, message: str, fork_turns: ForkTurns, model: str | None) -> str:
        root_id, caller = self.require_location()
        limits = self.registry.limits(root_id)
        depth = 0 if caller == ROOT_PATH else self.registry.tree(root_id).record(caller).depth
        if depth + 1 > limits.max_depth:
            raise SubagentLimitReached(
                f"subagent depth limit {limits.max_depth} reached: `{caller}` is at depth {depth} "
                "and cannot spawn agents; do this task yourself"
            )
        services = self.agent.services
        _provider, info = services.providers.resolve(model or self.agent.model.key)
        path = f"{caller}/{task_name}"
        forked = fork_history(self.agent.state.transcript, fork_turns)
        self.registry.reserve(root_id, path, caller, None, depth + 1, info.key)
        try:
            root = services.live_agent(root_id)
            config = child_config(
                root.config if root is not None else self.agent.config, path=path, parent=caller,
                can_spawn=depth + 1 < limits.max_depth,
                approvals=limits.approvals,
            )
            child = services.create_agent(
                _agent_name(task_name), info.key, config, kind="subagent", parent_id=self.agent.id,
            )
            child.state.append_messages(forked)
            self.owner.start(root_id, path, child, [Message.user(message)])
        except BaseException:
            try:
                self.registry.remove(root_id, path)
            except MentraError as err:
                log.warning("could not forget the failed subagent %s: %s", path, err)
            raise
        return path

    def send_message(self, target: str, message: str) -> str:
        root_id, caller = self.require_location()
        path = self.resolve(target)
        if path == caller:
            raise SubagentError("an agent cannot send a message to itself")
        self.registry.queue_message(root_id, caller, path, message)
        return path

    def followup(self, target: str, message: str) -> str:
        root_id, caller = self.require_location()
        path = self.resolve(target)
        if path in (ROOT_PATH, caller):
            raise SubagentError(f"followup_task takes one of your subagents, not `{path}`")
        record = self.registry.tree(root_id).record(path)
        if record.status == "errored":
            raise SubagentError(
                f"agent `{path}` errored and cannot be revived ({record.last_message}); "
                "spawn a new agent for this task"
            )
        if record.is_active:
            raise SubagentError(
                f"agent `{path}` is still {record.status}; use send_message to add to its task, "
                "or wait_agent for it to finish"
            )
        if record.agent_id is None:
            raise SubagentError(f"agent `{path}` was never started; spawn a new agent instead")
        services = self.agent.services
        child = services.live_agent(record.agent_id) or services.load_agent(record.agent_id)
        follow = Message.user(message)
        # An interrupted run was rolled back; its task message goes first again.
        opening = [child.resumable_turn, follow] if child.resumable_turn is not None else [follow]
        self.owner.start(root_id, path, child, opening, restart=True)
        return path

    async def interrupt(self, target: str) -> tuple[str, str]:
        """Interrupt `target` and wait (briefly) until its run has stopped, so the
        caller's next step sees it interrupted and may follow up at once."""
        root_id, _caller = self.require_location()
        path = self.resolve(target)
        previous = self.registry.interrupt(root_id, path)
        running = self.owner.run_task(root_id, path)
        if running is not None:
            await asyncio.wait({running}, timeout=INTERRUPT_GRACE_S)
        return path, previous

    async def wait(self, max_wait: float) -> list[str]:
        root_id, caller = self.require_location()
        return await self.registry.wait(root_id, caller, max_wait)


def _locate_stored(services: Services, record: AgentRecord) -> tuple[str, str]:
    """(root id, path) of the stored subagent `record`, from the store (its tree may
    be driven by another process)."""
    root = record
    while root.kind == "subagent" and root.parent_id is not None:
        parent = services.store.load_agent(root.parent_id, transcript=False)
        if parent is None:
            break
        root = parent.record
    found = services.store.read_records(TREE.name, scope=root.id)
    if root.kind != "subagent" and found and isinstance(found[0].value, dict):
        tree = SubagentTree.model_validate(legacy_mailbox(found[0].value)[0])
        path = next((p for p, r in tree.agents.items() if r.agent_id == record.id), None)
        if path is not None:
            return root.id, path
    raise UnknownSubagent(
        f"subagent '{record.name}' ({record.id}) is in no stored subagent tree, so no one would "
        "read mail posted to it; post to its root agent instead")


def _agent_name(task_name: str) -> str:
    # Agent names must start with a letter or digit; task names may start with '_'.
    return task_name if task_name[0].isalnum() else f"sub{task_name}"[:64]
