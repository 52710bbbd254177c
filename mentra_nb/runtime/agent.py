"""`Agent`: one conversation with a model, its live state and its observers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from mentra_nb.errors import AgentBusy, AgentError, AgentNotFound, NoResumableTurn, StoreError
from mentra_nb.messages import ContentBlock, Message, Role, Usage
from mentra_nb.providers.base import ModelInfo
from mentra_nb.runtime.approvals import ApprovalDecision, Approvals, load_approval_state
from mentra_nb.runtime.config import AgentConfig
from mentra_nb.runtime.events import AgentEvent, ToolExecutionProgress
from mentra_nb.runtime.extensions import AgentExtension
from mentra_nb.runtime.observers import Observers
from mentra_nb.runtime.recovery import recover
from mentra_nb.runtime.snapshot import AgentSnapshot
from mentra_nb.status import AgentStatus, PendingToolUse
from mentra_nb.store.base import PersistedAgent, TeamRequest

if TYPE_CHECKING:
    from mentra_nb.runtime.assembly import MessageAssembler
    from mentra_nb.runtime.runtime import Runtime
    from mentra_nb.runtime.team_members import TeammateInfo
    from mentra_nb.runtime.tools import Tool

__all__ = ["Agent", "MessageInput"]

MessageInput = str | ContentBlock | Sequence[ContentBlock] | Message


class Agent:
    """An agent driven by a `Runtime`. Create it with `rt.spawn(...)` or
    `rt.resume_agent(...)`, never directly.

        reply = await agent.send("Summarise the data")
        async for snapshot in agent.watch(): ...
    """

    def __init__(self, runtime: Runtime, persisted: PersistedAgent) -> None:
        record = persisted.record
        self._runtime = runtime
        self.id = record.id
        self.name = record.name
        self.model = ModelInfo.parse(record.model)
        try:
            self.config = AgentConfig.model_validate(record.config)
        except ValidationError as err:
            problem = err.errors(include_url=False, include_input=False)[0]
            raise StoreError(
                f"agent '{record.name}' ({record.id}) has a stored configuration this mentra-nb "
                f"cannot read ({'.'.join(map(str, problem['loc'])) or 'config'}: {problem['msg']}); "
                "a newer mentra-nb probably wrote it. Upgrade (pip install -U mentra-nb), or spawn "
                "the agent anew under another name"
            ) from None
        self.kind = record.kind
        self.parent_id = record.parent_id
        self.role = record.role
        self._take_stored_state(persisted)
        # The uncommitted stream, kept as parts: appending to one growing string
        # would copy it on every delta (quadratic in the reply's length).
        self._text_parts: list[str] = []
        self._thinking_parts: list[str] = []
        self._waiting_calls: list[PendingToolUse] = []
        # While a reply streams, its tool calls so far are read from the assembler.
        self._streaming_calls: MessageAssembler | None = None
        self._snapshots: Observers[AgentSnapshot] = Observers()
        self._events: Observers[AgentEvent] = Observers()
        # Listeners that skip the per-delta events (text, reasoning, tool input):
        # a long reply is tens of thousands of those, and nothing is built for them
        # unless someone asked for every delta.
        self._milestones: Observers[AgentEvent] = Observers()
        self._run_task: asyncio.Task[Message] | None = None
        self._stop_requested = False
        self._extensions: list[AgentExtension] = []
        self._approvals = Approvals(self, load_approval_state(runtime.store, self.id))
        # True when a run ended without its last write (a full disk, a failing
        # store): memory was reset but the store still holds the run.
        self._stale = False

    def __repr__(self) -> str:
        return f"<Agent {self.name} ({self.model.key}) {self._status}>"

    # --- what the agent is ---------------------------------------------------

    @property
    def _history(self) -> list[Message]:
        """The committed transcript, read from the store on first use."""
        if self._loaded_history is None:
            self._loaded_history = self._runtime.store.load_messages(self.id)
        return self._loaded_history

    @_history.setter
    def _history(self, value: list[Message]) -> None:
        self._loaded_history = value

    @property
    def _history_len(self) -> int:
        loaded = self._loaded_history
        return len(loaded) if loaded is not None else self._stored_message_count

    @property
    def _pending_tool_uses(self) -> list[PendingToolUse]:
        """Tool calls streamed or waiting to run in the current round."""
        if self._streaming_calls is not None:
            return self._streaming_calls.pending_tool_uses()
        return self._waiting_calls

    @_pending_tool_uses.setter
    def _pending_tool_uses(self, value: list[PendingToolUse]) -> None:
        self._streaming_calls = None
        self._waiting_calls = value

    @property
    def _current_text(self) -> str:
        if len(self._text_parts) > 1:
            self._text_parts[:] = ["".join(self._text_parts)]
        return self._text_parts[0] if self._text_parts else ""

    @_current_text.setter
    def _current_text(self, value: str) -> None:
        self._text_parts = [value] if value else []

    @property
    def _current_thinking(self) -> str:
        if len(self._thinking_parts) > 1:
            self._thinking_parts[:] = ["".join(self._thinking_parts)]
        return self._thinking_parts[0] if self._thinking_parts else ""

    @_current_thinking.setter
    def _current_thinking(self, value: str) -> None:
        self._thinking_parts = [value] if value else []

    @property
    def is_teammate(self) -> bool:
        return self.kind == "teammate"

    @property
    def runtime(self) -> Runtime:
        return self._runtime

    @property
    def history(self) -> list[Message]:
        """The committed transcript (a copy)."""
        return list(self._history)

    @property
    def last_message(self) -> Message | None:
        recent = self.recent_messages(1)
        return recent[0] if recent else None

    def recent_messages(self, count: int) -> list[Message]:
        """The last `count` committed messages; reads only those from the store
        when the transcript is not loaded (a resumed agent's, until first needed)."""
        if count <= 0:
            return []
        if self._loaded_history is not None:
            return self._loaded_history[-count:]
        return self._runtime.store.load_messages(self.id, max(0, self._stored_message_count - count))

    @property
    def status(self) -> AgentStatus:
        return self._status

    @property
    def usage(self) -> Usage:
        return self._usage

    @property
    def resumable_turn(self) -> Message | None:
        """The user message of a rolled-back run, which `resume()` would replay."""
        return self._resumable

    @property
    def is_running(self) -> bool:
        return self._run_task is not None and not self._run_task.done()

    @property
    def snapshot(self) -> AgentSnapshot:
        # model_construct: built on every change while someone watches, so skip
        # re-validating values that are already typed.
        extra: dict[str, Any] = {}
        for extension in self._extensions:
            extra.update(extension.snapshot_fields())
        return AgentSnapshot.model_construct(
            agent_id=self.id,
            name=self.name,
            model=self.model.key,
            status=self._status,
            run_generation=self._run_generation,
            history_len=self._history_len,
            current_text=self._current_text,
            current_thinking=self._current_thinking,
            pending_tool_uses=list(self._pending_tool_uses),
            pending_approvals=self._approvals.pending,
            pending_team_messages=extra.get("pending_team_messages", 0),
            teammates=extra.get("teammates", []),
            subagents=extra.get("subagents", []),
            usage=self._usage,
        )

    def tools(self) -> list[Tool]:
        """The tools this agent may call: the runtime's and its extensions',
        filtered by its config (`tools`, `hidden_tools`, `read_only`)."""
        offered = [*self._runtime.tools, *(t for e in self._extensions for t in e.tools())]
        return [
            t for t in offered
            if self.config.allows_tool(t.spec.name) and (t.spec.read_only or not self.config.read_only)
        ]

    @property
    def always_allowed_tools(self) -> list[str]:
        """Tools the user chose to "always allow" for this agent (kept in the store)."""
        return sorted(self._approvals.always_allow)

    # --- observing -----------------------------------------------------------

    def watch(self) -> AsyncIterator[AgentSnapshot]:
        """The current snapshot, then one per change, for as long as you iterate."""
        return self._snapshots.iterate(first=self.snapshot)

    def events(self) -> AsyncIterator[AgentEvent]:
        """Every event from now on, for as long as you iterate."""
        return self._events.iterate()

    def on_event(self, callback: Callable[[AgentEvent], None], *, deltas: bool = True) -> Callable[[], None]:
        """Call `callback` synchronously on the runtime's loop for every event;
        returns a function that unsubscribes.

        `deltas=False` leaves out `text_delta`, `reasoning_delta` and
        `tool_use_updated`: for listeners that read the live stream from
        `snapshot` at their own pace, which keeps the hot path free of them."""
        return (self._events if deltas else self._milestones).add_callback(callback)

    def on_snapshot(self, callback: Callable[[AgentSnapshot], None]) -> Callable[[], None]:
        return self._snapshots.add_callback(callback)

    # --- driving -------------------------------------------------------------

    async def send(self, content: MessageInput) -> Message:
        """Send a user message and run until the model answers without tools.

        Returns the final assistant message. Raises `AgentBusy` if a run is in
        progress; on a provider error the run is rolled back (the message stays
        available to `resume()`) and the error is raised.
        """
        return await self._start_run([_user_message(content)])

    async def resume(self) -> Message:
        """Replay the user turn that a crash, cancel or error rolled back, or
        continue a run whose last tool calls were interrupted."""
        if self._resumable is not None:
            return await self._start_run([self._resumable])
        if self._history and self._history[-1].role is Role.USER:
            return await self._start_run([])
        raise NoResumableTurn(
            f"agent '{self.name}' has no interrupted turn to resume; send it a new message instead"
        )

    def stop(self) -> None:
        """Finish the current run at the next round boundary, keeping the transcript.

        Calls waiting for approval are denied, so the round can end."""
        if self.is_running:
            self._stop_requested = True
            self._approvals.deny_all("the user stopped the run before answering")

    # --- approvals (runtime/approvals.py) ---------------------------------------

    def approve(self, call_id: str, always: bool = False) -> None:
        """Let the paused tool call `call_id` run. `always=True` also lets this
        agent call that tool without asking from now on (remembered in the store).

        `call_id` may name the run too, `"<call id>@<run>"` (the pending call's
        `reference`), so an answer written for one run never approves another
        run's call that reuses the id. Raises `AgentError` if no such call is
        waiting. Safe from any thread.
        """
        self._approvals.answer(call_id, ApprovalDecision(approved=True, always=always))

    def deny(self, call_id: str, reason: str = "") -> None:
        """Refuse the paused tool call `call_id`; the model gets an error result
        saying it was not run, with `reason`."""
        self._approvals.answer(call_id, ApprovalDecision(approved=False, reason=reason))

    def cancel(self) -> None:
        """Abort the current run now; it is rolled back (its message stays resumable)."""
        if self._run_task is not None and not self._run_task.done():
            self._run_task.cancel()

    def _reload(self) -> None:
        """Bring memory back in line with the store after a run whose ending could
        not be written: apply the recovery matrix now that the store may accept it."""
        store = self._runtime.store
        persisted = store.load_agent(self.id)
        if persisted is None:
            raise AgentNotFound(f"agent {self.id} is no longer in {store!r}")
        persisted = recover(store, persisted, token=self._runtime._leases.token)
        self._take_stored_state(persisted)
        self._stale = False
        self._changed()

    def _take_stored_state(self, persisted: PersistedAgent) -> None:
        record = persisted.record
        # None until first needed when the caller did not load the transcript.
        transcript_missing = not persisted.transcript and record.message_count > 0
        self._loaded_history: list[Message] | None = (
            None if transcript_missing else list(persisted.transcript)
        )
        self._stored_message_count = record.message_count
        self._resumable = persisted.resumable_turn
        self._status = record.status
        self._run_generation = record.run_generation
        self._usage = record.usage

    async def _start_run(self, opening: list[Message]) -> Message:
        from mentra_nb.runtime.turn import Run  # turn imports agent types

        if self._stale and not self.is_running:
            self._reload()
        if self.is_running:
            raise AgentBusy(
                f"agent '{self.name}' is still running (generation {self._run_generation}); "
                "wait for it, or call agent.stop() / agent.cancel()"
            )
        self._runtime._ensure_open()
        self._runtime._leases.start_heartbeat()
        self._stop_requested = False
        run = Run(self, opening)
        self._run_task = asyncio.get_running_loop().create_task(
            run.execute(), name=f"mentra-run-{self.name}-{self._run_generation + 1}"
        )
        return await self._run_task

    # --- state changes (used by the turn loop) -------------------------------

    def _changed(self) -> None:
        if self._snapshots.listening:
            self._snapshots.publish(self.snapshot)

    def _emit(self, event: AgentEvent) -> None:
        if self._events.listening:
            self._events.publish(event)
        if self._milestones.listening:
            self._milestones.publish(event)

    def _emit_delta(self, event: AgentEvent) -> None:
        """A per-delta event; callers check `self._events.listening` before building it."""
        self._events.publish(event)

    def _set_status(self, status: AgentStatus) -> None:
        if status != self._status:
            self._status = status
            self._changed()

    def _tool_progress(self, tool_use_id: str, tool_name: str, message: str) -> None:
        self._emit(
            ToolExecutionProgress(
                agent_id=self.id, run_generation=self._run_generation,
                tool_use_id=tool_use_id, name=tool_name, message=message,
            )
        )

    def _close_observers(self) -> None:
        self._snapshots.close()
        self._events.close()
        self._milestones.close()

    # --- teams (runtime/teams.py) -----------------------------------------------

    async def spawn_teammate(
        self, name: str, role: str, prompt: str | None = None, *,
        model: str | ModelInfo | None = None, max_rounds: int | None = None,
    ) -> Agent:
        """Spawn a persistent teammate of this lead; `prompt` becomes its first mail.

        It gets this agent's config (and model, unless `model` is given) with a
        teammate system prompt; it works on its own, woken by team mail.
        """
        from mentra_nb.runtime.teams import team_of

        if self.kind != "agent":
            raise AgentError(f"only a lead agent can spawn teammates; '{self.name}' is a {self.kind}")
        return await team_of(self).spawn(name, role, prompt, model=model, max_rounds=max_rounds)

    def send_team_message(self, to: str, content: str) -> None:
        """Put `content` in team member `to`'s inbox, from this agent (wakes a teammate)."""
        from mentra_nb.runtime.teams import team_of

        team_of(self).send(self.name, to, content)

    def broadcast_team_message(self, content: str) -> list[str]:
        """Send `content` to every other member of this lead's team; returns their names."""
        from mentra_nb.runtime.teams import team_of

        if self.kind != "agent":
            raise AgentError(f"only the lead may broadcast; '{self.name}' can send_team_message")
        return team_of(self).broadcast(self.name, content)

    @property
    def teammates(self) -> list[TeammateInfo]:
        """This lead's teammates, with their status and whether they are alive here."""
        return list(self.snapshot.teammates)

    def teammate(self, name: str) -> Agent:
        """The live teammate called `name` (to watch it or read its history)."""
        from mentra_nb.runtime.teams import team_of

        agent = team_of(self).live_agent(name)
        if agent is None or agent is self:
            raise AgentNotFound(
                f"no live teammate '{name}' in {self.name}'s team; lead.teammates lists them "
                "(rt.resume() revives the stored ones)"
            )
        return agent

    def send_team_request(self, to: str, protocol: str, content: str) -> TeamRequest:
        """Ask member `to` to approve or reject something (e.g. protocol "shutdown");
        the answer arrives in this agent's inbox."""
        from mentra_nb.runtime.teams import team_of

        return team_of(self).request(self.name, to, protocol, content)

    def team_requests(self, status: str | None = "pending") -> list[TeamRequest]:
        """Protocol requests sent to or by this agent (default: the pending ones)."""
        from mentra_nb.runtime.teams import team_of

        return team_of(self).list_requests(self.name, status=status)  # type: ignore[arg-type]

    def approve_request(self, request_id: str, reason: str | None = None) -> TeamRequest:
        """Approve a pending request addressed to this agent (e.g. a teammate's plan)."""
        from mentra_nb.runtime.teams import team_of

        return team_of(self).respond(self.name, request_id, True, reason)

    def reject_request(self, request_id: str, reason: str) -> TeamRequest:
        """Reject a pending request addressed to this agent; the requester reads `reason`."""
        from mentra_nb.runtime.teams import team_of

        return team_of(self).respond(self.name, request_id, False, reason)


def _user_message(content: MessageInput) -> Message:
    if isinstance(content, Message):
        if content.role is not Role.USER:
            raise ValueError("agent.send() takes a user message; got an assistant message")
        return content
    if isinstance(content, (str, ContentBlock)):
        return Message.user(content)
    blocks = list(content)
    if not blocks:
        raise ValueError("agent.send() needs some content: a string or content blocks")
    return Message.user(*blocks)

