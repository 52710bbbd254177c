"""`AgentState`: everything an agent is at this instant, changed only by named operations.

One object per agent owns its committed transcript, the live stream of the reply
being written, its status, usage, run generation and the resumable turn. The
turn loop, recovery and the extensions change it only through the methods
below; each writes what it must to the store *before* memory changes (so what
observers see is what a crash would leave behind) and then notifies observers
once. Reads are plain properties.

    await state.begin_run(opening)            # persisted; status awaiting_model
    parts = state.live_parts("text")          # the stream's hot path appends here
    await state.commit_assistant(message, usage, next_status)
    await state.append_tool_results(message)
    await state.roll_back(baseline, status, opening)

The operations of a run are coroutines: their writes go through `StoreIO`,
which for a network store awaits them off the event loop (this agent waits for
its write; the runtime's other agents keep streaming).

The hot path of a streamed reply stays a few list appends per delta: the turn
loop asks `live_parts(kind)` once per content block and appends each delta to
that list, which the state owns and joins when it is read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Literal

from mentra_nb.errors import MentraError
from mentra_nb.messages import Message, Usage
from mentra_nb.runtime._assembly import MessageAssembler
from mentra_nb.runtime._observers import Observers
from mentra_nb.runtime._snapshot import AgentSnapshot
from mentra_nb.runtime._store_io import StoreIO
from mentra_nb.runtime.events import (
    AgentEvent,
    AssistantMessageCommitted,
    HistoryReplaced,
    RunStarted,
    ToolResultsCommitted,
    UsageReported,
)
from mentra_nb.status import AgentStatus, PendingToolUse
from mentra_nb.store.base import PendingTurn, PersistedAgent, RunRecord, Store

__all__ = ["AgentState", "LiveKind"]

log = logging.getLogger("mentra_nb.runtime")

LiveKind = Literal["text", "thinking"]


class AgentState:
    """The state of one agent, with its observers (`snapshots`, `events`, and
    `milestones`: every event except the per-delta ones)."""

    def __init__(self, agent_id: str, name: str, store: Store, token: str, persisted: PersistedAgent,
                 snapshot: Callable[[], AgentSnapshot], io: StoreIO | None = None) -> None:
        self.agent_id = agent_id
        self._name = name
        self._store = store
        self._io = io if io is not None else StoreIO(store)
        self._token = token
        self._snapshot = snapshot
        self.snapshots: Observers[AgentSnapshot] = Observers()
        self.events: Observers[AgentEvent] = Observers()
        # Listeners that skip the per-delta events (text, reasoning, tool input):
        # a long reply is tens of thousands of those, and nothing is built for them
        # unless someone asked for every delta.
        self.milestones: Observers[AgentEvent] = Observers()
        # The uncommitted stream, kept as parts: appending to one growing string
        # would copy it on every delta (quadratic in the reply's length).
        self._text_parts: list[str] = []
        self._thinking_parts: list[str] = []
        self._waiting_calls: list[PendingToolUse] = []
        # While a reply streams, its tool calls so far are read from the assembler.
        self._streaming_calls: MessageAssembler | None = None
        # True when a run ended without its last write (a full disk, a failing
        # store): memory was reset but the store still holds the run.
        self._stale = False
        self._loaded_history: list[Message] | None = None
        self._stored_message_count = 0
        # The last messages read while the transcript is not loaded, with the mark of
        # the load they were read after (`_take`): a view reads the last page, then
        # its markdown the last few, of the same unchanged transcript.
        self._lazy_mark = object()
        self._tail: tuple[object, list[Message]] = (None, [])
        self._resumable: Message | None = None
        self._status = AgentStatus.idle()
        self._run_generation = 0
        self._usage = Usage()
        self._branch_id = persisted.record.branch_id or agent_id
        self._take(persisted)

    # --- reads -------------------------------------------------------------------

    @property
    def transcript(self) -> Sequence[Message]:
        """The committed transcript (read from the store on first use). Read-only:
        it changes through the operations below."""
        return self._history()

    @property
    def history_len(self) -> int:
        loaded = self._loaded_history
        return len(loaded) if loaded is not None else self._stored_message_count

    def recent_messages(self, count: int) -> list[Message]:
        """The last `count` committed messages; reads only those from the store
        when the transcript is not loaded (a resumed agent's, until first needed)."""
        if count <= 0:
            return []
        if self._loaded_history is not None:
            return self._loaded_history[-count:]
        mark, tail = self._tail
        if mark is self._lazy_mark and len(tail) >= min(count, self._stored_message_count):
            return tail[-count:]
        mark = self._lazy_mark
        tail = self._store.load_messages(self.agent_id, max(0, self._stored_message_count - count))
        self._tail = (mark, tail)
        return tail

    @property
    def status(self) -> AgentStatus:
        return self._status

    @property
    def branch_id(self) -> str:
        """The branch of history the transcript is read from and extended."""
        return self._branch_id

    @property
    def usage(self) -> Usage:
        return self._usage

    @property
    def run_generation(self) -> int:
        return self._run_generation

    @property
    def resumable_turn(self) -> Message | None:
        """The user message of a rolled-back run, which `agent.resume()` would replay."""
        return self._resumable

    @property
    def stale(self) -> bool:
        """A run ended without its last write; `reload` before the next run."""
        return self._stale

    @property
    def current_text(self) -> str:
        return _joined(self._text_parts)

    @property
    def current_thinking(self) -> str:
        return _joined(self._thinking_parts)

    @property
    def pending_tool_uses(self) -> list[PendingToolUse]:
        """Tool calls streamed or waiting to run in the current round."""
        if self._streaming_calls is not None:
            return self._streaming_calls.pending_tool_uses()
        return self._waiting_calls

    def pending_turn(self, generation: int) -> PendingTurn:
        """The half-written reply, as a checkpoint stores it."""
        return PendingTurn(
            run_generation=generation,
            current_text=self.current_text,
            current_thinking=self.current_thinking,
            pending_tool_uses=self.pending_tool_uses,
            updated_at=time.time(),
        )

    # --- notifying ------------------------------------------------------------------

    @property
    def watched(self) -> bool:
        """Whether anyone (a view, a callback, an iterator) follows this agent."""
        return self.snapshots.listening or self.events.listening or self.milestones.listening

    def changed(self) -> None:
        """Publish a new snapshot (built only when someone watches)."""
        if self.snapshots.listening:
            self.snapshots.publish(self._snapshot())

    def emit(self, event: AgentEvent) -> None:
        if self.events.listening:
            self.events.publish(event)
        if self.milestones.listening:
            self.milestones.publish(event)

    def emit_delta(self, event: AgentEvent) -> None:
        """A per-delta event; callers check `events.listening` before building it."""
        self.events.publish(event)

    def close(self) -> None:
        """End every observer's iteration (the runtime is closing)."""
        self.snapshots.close()
        self.events.close()
        self.milestones.close()
        self._io.forget(self.agent_id)

    # --- operations ----------------------------------------------------------------

    def set_status(self, status: AgentStatus) -> bool:
        """Change the status in memory (the store learns it with the step that
        caused it); notifies when it changed and says whether it did."""
        if status == self._status:
            return False
        self._status = status
        self.changed()
        return True

    async def begin_run(self, opening: Sequence[Message]) -> int:
        """Start the next run with its opening messages; returns the transcript
        length before them (what a rollback returns to)."""
        baseline = len(self._history())
        generation = self._run_generation + 1
        status = AgentStatus.awaiting_model()
        run = RunRecord(generation=generation, baseline=baseline, started_at=time.time())
        await self._write(lambda: self._store.begin_run(
            self.agent_id, run, list(opening), status=status, token=self._token, clear_resumable=True))
        self._history().extend(opening)
        self._resumable = None
        self._run_generation = generation
        self.set_status(status)
        self.emit(RunStarted(agent_id=self.agent_id, run_generation=generation))
        return baseline

    def append_messages(self, messages: Sequence[Message]) -> None:
        """Commit messages that are not the model's, outside a run (a fork's or a
        forked child's inherited turns); in a run, `add_messages`."""
        if not messages:
            return
        history = self._history()  # read before the write, or the read would hold them too
        self._store.append_messages(self.agent_id, list(messages), token=self._token)
        history.extend(messages)
        self.changed()

    async def add_messages(self, messages: Sequence[Message]) -> None:
        """Commit messages of a run that are not the model's (a round's injected
        mail, feedback on a rejected answer)."""
        if not messages:
            return
        history = self._history()  # read before the write, or the read would hold them too
        added = list(messages)
        await self._write(lambda: self._store.append_messages(self.agent_id, added, token=self._token))
        history.extend(added)
        self.changed()

    def stream_from(self, assembler: MessageAssembler) -> None:
        """A reply starts streaming: its tool calls so far are read from `assembler`."""
        self._streaming_calls = assembler

    def live_parts(self, kind: LiveKind) -> list[str]:
        """The list the stream's hot path appends `kind` deltas to (owned by the state)."""
        return self._text_parts if kind == "text" else self._thinking_parts

    def stream_ended(self, pending: list[PendingToolUse]) -> None:
        """The reply's stream ended: its calls stay pending until run or rolled back."""
        self._streaming_calls = None
        self._waiting_calls = pending

    async def checkpoint_pending(self, generation: int) -> None:
        """Write the half-written reply (the store keeps the last one only)."""
        pending = self.pending_turn(generation)
        await self._write(lambda: self._store.checkpoint_pending(self.agent_id, pending, token=self._token))

    async def commit_assistant(self, message: Message, run_usage: Usage, next_status: AgentStatus, *,
                         final: bool = False) -> None:
        """Commit the model's message with its usage; `final` also ends the run
        (one transaction)."""
        usage = self._usage + run_usage
        if final:
            await self._write(lambda: self._store.finish_run(
                self.agent_id, status=next_status, token=self._token, append=[message], usage=usage))
        else:
            await self._write(lambda: self._store.commit_assistant(
                self.agent_id, message, usage=usage, status=next_status, token=self._token))
        self._history().append(message)
        self._usage = usage
        self._clear_live_text()
        self._status = next_status
        fields = {"agent_id": self.agent_id, "run_generation": self._run_generation}
        self.emit(AssistantMessageCommitted(**fields, message=message))
        self.emit(UsageReported(**fields, usage=run_usage, total=usage))
        self.changed()

    async def append_tool_results(self, message: Message) -> None:
        """Commit the results of a round's tool calls; none is pending any more."""
        await self._write(lambda: self._store.append_messages(self.agent_id, [message], token=self._token))
        self._history().append(message)
        self.stream_ended([])
        self.emit(ToolResultsCommitted(agent_id=self.agent_id, run_generation=self._run_generation,
                                       message=message))

    def tool_call_done(self, tool_use_id: str, event: AgentEvent) -> None:
        """One call of the round has its result (not committed yet): it leaves the
        pending list, `event` announces it."""
        self.stream_ended([p for p in self.pending_tool_uses if p.id != tool_use_id])
        self.emit(event)
        self.changed()

    async def finish_run(self, status: AgentStatus) -> None:
        """End the run keeping the transcript (a graceful stop); a store error raises."""
        await self._write(lambda: self._store.finish_run(self.agent_id, status=status, token=self._token))
        self.set_status(status)

    async def fail_run(self, status: AgentStatus) -> None:
        """End a failed run keeping its transcript (e.g. max_rounds). A store error
        leaves the agent stale: memory is reset, recovery runs before its next run."""
        try:
            await self._write(lambda: self._store.finish_run(self.agent_id, status=status, token=self._token))
        except MentraError as err:
            log.warning("could not end the run of agent %s: %s", self._name, err)
            self._stale = True
        self._reset_live()
        self.set_status(status)

    def abandon_run(self, status: AgentStatus) -> None:
        """Another runtime owns the agent now: its store state wins, so nothing is
        written; memory drops the live stream."""
        self._reset_live()
        self.set_status(status)

    async def roll_back(self, baseline: int, status: AgentStatus, opening: Message | None) -> bool:
        """Undo the run back to `baseline`, keeping `opening` for `agent.resume()`.
        A store error leaves the agent stale (the store still holds the run) and
        returns False."""
        written = True
        try:
            await self._write(lambda: self._store.rollback_run(
                self.agent_id, status=status, resumable=opening, token=self._token))
        except MentraError as err:
            log.warning("could not roll back the run of agent %s: %s", self._name, err)
            self._stale = True
            written = False
        del self._history()[baseline:]
        if opening is not None:
            self._resumable = opening
        self._reset_live()
        self._status = status
        self.changed()
        return written

    def show_transcript(self, transcript: list[Message], resumable: Message | None) -> None:
        """Show `transcript` (what the store will hold once recovered) without writing."""
        self._loaded_history = list(transcript)
        self._resumable = resumable
        self.changed()

    def replace_history(self, persisted: PersistedAgent) -> None:
        """The store moved the agent to another history (a rewind, a switch of
        branch): take it, read lazily, and tell views to re-read the transcript."""
        self._take(persisted)
        self._stale = False
        self.emit(HistoryReplaced(agent_id=self.agent_id, run_generation=self._run_generation,
                                  branch_id=self._branch_id, history_len=self.history_len))
        self.changed()

    def reload(self, persisted: PersistedAgent) -> None:
        """Take the stored state (after recovery) in place of memory."""
        self._take(persisted)
        self._stale = False
        self.changed()

    # --- internals -------------------------------------------------------------------

    async def _write(self, call: Callable[[], None]) -> None:
        await self._io.run(self.agent_id, call)

    def _history(self) -> list[Message]:
        if self._loaded_history is None:
            self._loaded_history = self._store.load_messages(self.agent_id)
        return self._loaded_history

    def _take(self, persisted: PersistedAgent) -> None:
        record = persisted.record
        # None until first needed when the caller did not load the transcript.
        transcript_missing = not persisted.transcript and record.message_count > 0
        self._loaded_history = None if transcript_missing else list(persisted.transcript)
        self._stored_message_count = record.message_count
        self._lazy_mark = object()
        self._resumable = persisted.resumable_turn
        self._status = record.status
        self._run_generation = record.run_generation
        self._usage = record.usage
        self._branch_id = record.branch_id or record.id

    def _clear_live_text(self) -> None:
        # In place: the turn loop may still hold these lists (see `live_parts`).
        self._text_parts.clear()
        self._thinking_parts.clear()

    def _reset_live(self) -> None:
        self._clear_live_text()
        self.stream_ended([])


def _joined(parts: list[str]) -> str:
    if len(parts) > 1:
        parts[:] = ["".join(parts)]
    return parts[0] if parts else ""
