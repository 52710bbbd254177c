"""`AgentView`: one long-lived widget per agent, updated in place.

Traffic rules (why the widget stays cheap on long streams):
- Streaming deltas travel as custom messages with sequence numbers,
  coalesced to at most one per 50 ms and flushed at once when a message is
  committed, a run ends, fails or is cancelled. A growing string is never
  resent per token.
- The committed transcript reaches the `items` trait only at message
  boundaries, already rendered to safe HTML, so the browser needs no markdown
  library and a view opened late catches up from state (plus a `reset` reply
  to its `hello` for the half-streamed text).
- Browser messages are validated; an invalid one is logged and ignored.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Annotated, Any, Literal

import traitlets
from pydantic import BaseModel, Field, TypeAdapter

from mentra_nb.errors import AgentError
from mentra_nb.messages import Role
from mentra_nb.notebook._widget import MentraWidget
from mentra_nb.notebook.assets import asset, widget_module
from mentra_nb.notebook.rendering import message_items, transcript_markdown
from mentra_nb.runtime.agent import Agent
from mentra_nb.runtime.approvals import PendingApproval
from mentra_nb.runtime.events import AgentEvent

if TYPE_CHECKING:
    from mentra_nb.notebook.host import RuntimeHost

__all__ = ["STREAM_INTERVAL", "AgentView"]

log = logging.getLogger("mentra_nb.notebook")

STREAM_INTERVAL = 0.05  # seconds: at most 20 delta messages per second per agent
_DELTA_EVENTS = {"text_delta", "reasoning_delta", "tool_use_updated"}


class _Hello(BaseModel):
    kind: Literal["hello"]


class _Stop(BaseModel):
    kind: Literal["stop"]


class _Interrupt(BaseModel):
    kind: Literal["interrupt"]


class _Send(BaseModel):
    kind: Literal["send"]
    text: str = Field(min_length=1, max_length=100_000)


class _Resume(BaseModel):
    kind: Literal["resume"]


class _Approve(BaseModel):
    kind: Literal["approve"]
    call_id: str = Field(min_length=1, max_length=200)
    always: bool = False


class _Deny(BaseModel):
    kind: Literal["deny"]
    call_id: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=2_000)


_browser_message: TypeAdapter[Any] = TypeAdapter(
    Annotated[_Hello | _Stop | _Interrupt | _Send | _Resume | _Approve | _Deny,
              Field(discriminator="kind")]
)

APPROVAL_INPUT_CHARS = 4_000  # what the widget shows of a call's input (a write_file's content may be huge)


class AgentView(MentraWidget):
    """Status, usage, the committed transcript, the live stream and controls."""

    _esm = widget_module("agent_view.js")
    _css = asset("mentra.css")

    agent_name = traitlets.Unicode("").tag(sync=True)
    model_key = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Dict().tag(sync=True)
    run_generation = traitlets.Int(0).tag(sync=True)
    usage = traitlets.Dict().tag(sync=True)
    items = traitlets.List().tag(sync=True)
    pending_tools = traitlets.List().tag(sync=True)
    approvals = traitlets.List().tag(sync=True)  # calls waiting for Approve / Deny / Always allow
    # What `agent.resume()` would do: {"kind": "replay", "text": ...} for a rolled-back
    # user turn, {"kind": "continue"} after cut tool calls, {} when there is nothing.
    resumable = traitlets.Dict().tag(sync=True)

    def __init__(self, agent: Agent, host: RuntimeHost) -> None:
        super().__init__()
        self._agent = agent
        self._host = host
        self._seq = 0
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._tool_json: dict[str, str] = {}  # tool id -> input JSON sent so far
        self._tool_pending: dict[str, str] = {}  # tool id -> input JSON not sent yet
        self._timer: asyncio.TimerHandle | None = None
        self._rendered_messages = 0
        self.messages_sent = 0  # custom messages, for the traffic benchmark
        self.on_msg(self._on_browser_message)
        host.call(self._attach)

    # --- runtime side (runs on the runtime thread) --------------------------------

    def _attach(self) -> None:
        agent = self._agent
        self.agent_name = agent.name
        self.model_key = agent.model.key
        self._sync_state()
        self._unsubscribe = agent.on_event(self._on_event)

    def _on_event(self, event: AgentEvent) -> None:
        if event.type == "text_delta":
            self._text.append(event.text)
        elif event.type == "reasoning_delta":
            self._thinking.append(event.text)
        elif event.type == "tool_use_updated":
            sent = self._tool_json.get(event.tool_use_id, "")
            self._tool_pending[event.tool_use_id] = event.input_json[len(sent):]
        if event.type in _DELTA_EVENTS:
            if self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(STREAM_INTERVAL, self._flush)
            return
        self._flush()
        if event.type in ("assistant_message_committed", "run_failed", "run_cancelled"):
            self._reset_stream()
        self._sync_state()

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._agent.status.model_dump() != self.status:
            self.status = self._agent.status.model_dump()
        if not (self._text or self._thinking or self._tool_pending):
            return
        tools = {k: v for k, v in self._tool_pending.items() if v}
        for tool_id, piece in tools.items():
            self._tool_json[tool_id] = self._tool_json.get(tool_id, "") + piece
        self._send_stream("delta", "".join(self._text), "".join(self._thinking), tools)
        self._text.clear()
        self._thinking.clear()
        self._tool_pending.clear()

    def _reset_stream(self) -> None:
        self._tool_json.clear()
        self._send_stream("reset", "", "", {})

    def _send_stream(self, kind: str, text: str, thinking: str, tools: dict[str, str]) -> None:
        self._seq += 1
        self.messages_sent += 1
        # Empty fields are left out: on a long stream the envelope is most of the bytes.
        message: dict[str, Any] = {"kind": kind, "seq": self._seq, "text": text}
        if thinking:
            message["thinking"] = thinking
        if tools:
            message["tools"] = tools
        self.send(message)

    def _sync_state(self) -> None:
        agent = self._agent
        history = agent.history
        snapshot = agent.snapshot
        with self.hold_sync():
            self.status = snapshot.status.model_dump()
            self.run_generation = snapshot.run_generation
            self.usage = snapshot.usage.model_dump()
            self.pending_tools = [p.model_dump() for p in snapshot.pending_tool_uses]
            approvals = [_approval_item(p) for p in snapshot.pending_approvals]
            if approvals != self.approvals:
                self.approvals = approvals
            resumable = _resumable(agent)
            if resumable != self.resumable:
                self.resumable = resumable
            if len(history) != self._rendered_messages:
                # Appends render only the new messages; a rollback re-renders.
                keep = self.items if len(history) > self._rendered_messages else []
                start = self._rendered_messages if keep else 0
                new = [item for i in range(start, len(history)) for item in message_items(history[i], i)]
                self.items = [*keep, *new]
                self._rendered_messages = len(history)

    def _catch_up(self) -> None:
        """Answer a view's hello with the whole half-streamed state."""
        self._flush()
        snapshot = self._agent.snapshot
        self._tool_json = {p.id: p.input_json for p in snapshot.pending_tool_uses}
        self._send_stream("reset", snapshot.current_text, snapshot.current_thinking, dict(self._tool_json))

    # --- browser side (runs on the kernel's shell thread) -------------------------

    def _on_browser_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        message = self._accept(_browser_message, content)
        agent = self._agent
        if isinstance(message, _Hello):
            self._host.call_soon(self._catch_up)
        elif isinstance(message, _Stop):
            self._host.call_soon(agent.stop)
        elif isinstance(message, _Interrupt):
            self._host.call_soon(agent.cancel)
        elif isinstance(message, _Send):
            future = self._host.submit(agent.send(message.text))
            future.add_done_callback(_log_failure(agent.name))
        elif isinstance(message, _Resume):
            future = self._host.submit(agent.resume())
            future.add_done_callback(_log_failure(agent.name))
        elif isinstance(message, _Approve):
            self._host.call_soon(_answer, agent.name, agent.approve, message.call_id, message.always)
        elif isinstance(message, _Deny):
            self._host.call_soon(_answer, agent.name, agent.deny, message.call_id, message.reason)

    # --- static outputs -----------------------------------------------------------

    def __repr__(self) -> str:
        agent = self._agent
        return f"AgentView({agent.name}, {agent.model.key}, {agent.status}, {agent.snapshot.history_len} messages)"

    def _markdown(self) -> str:
        agent = self._agent
        header = f"**{agent.name}** · `{agent.model.key}` · {agent.status}"
        body = transcript_markdown(agent.history)
        waiting = [f"*waiting for approval:* `{p.tool_name}` (call `{p.tool_use_id}`)"
                   for p in agent.snapshot.pending_approvals]
        return "\n\n".join([header, *([body] if body else []), *waiting])


def _approval_item(pending: PendingApproval) -> dict[str, Any]:
    text = json.dumps(pending.input, indent=2, ensure_ascii=False)
    if len(text) > APPROVAL_INPUT_CHARS:
        text = f"{text[:APPROVAL_INPUT_CHARS]}\n… [{len(text) - APPROVAL_INPUT_CHARS} more characters]"
    return {"id": pending.tool_use_id, "name": pending.tool_name, "input": text}


def _answer(name: str, answer: Any, *args: Any) -> None:
    # A second click, or a click on a call that stopped waiting, is not an error worth a traceback.
    try:
        answer(*args)
    except AgentError as err:
        log.warning("an approval answer from %s's widget was ignored: %s", name, err)


RESUMABLE_PREVIEW_CHARS = 300


def _resumable(agent: Agent) -> dict[str, Any]:
    # The status, not the run task: a run's last event arrives before its task ends.
    if agent.status.is_running:
        return {}
    turn = agent.resumable_turn
    if turn is not None:
        text = turn.text
        cut = text[:RESUMABLE_PREVIEW_CHARS] + ("…" if len(text) > RESUMABLE_PREVIEW_CHARS else "")
        return {"kind": "replay", "text": cut}
    history = agent.history
    if history and history[-1].role is Role.USER and history[-1].tool_results:
        return {"kind": "continue"}
    return {}


def _log_failure(name: str) -> Any:
    def report(future: Any) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("a turn sent to %s from its widget failed: %s", name, future.exception())

    return report
