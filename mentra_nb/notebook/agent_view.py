"""`AgentView`: one long-lived widget per agent, updated in place.

Traffic rules (why the widget stays cheap on long streams):
- The live stream is read from the agent's snapshot while a run is active and
  sent as a custom message with the new text only (sequence-numbered, short
  keys); the agent's hot path never calls the widget per token. A stream's
  first words go at once (within a poll, 50 ms), later text at most once per
  LIVE_WINDOW, so the browser shows text within a window of the model writing
  it. A running tool call's progress reports go the same way: the newest one,
  first at once, then at most one a second.
- The committed transcript travels as custom `items` messages too: each new
  message once, as safe HTML rendered in the kernel (the browser needs no
  markdown library). A reply that was just streamed is sent as references
  into the text the browser already has (`stream_refs`), so its bytes cross
  the wire once.
- Displaying the widget sends the transcript's last page (TRANSCRIPT_PAGE
  messages) and the half-streamed text at once, with the count of messages
  before it; the browser's "Show N earlier messages" asks for the page before
  (`earlier`), rendered then and prepended. The browser keeps one stream per
  widget model (not per view): a view needs no answer from the kernel, which
  matters during Run All, when the kernel answers nothing until the last
  queued cell ran. A view that finds a gap says `hello` and gets what it had. Nothing is rendered
  before the widget is displayed: resuming fifty long agents renders nothing.
- Browser messages are validated; an invalid one is logged and ignored.

A view shows an agent's whole conversation (`scope` {}), or one turn (`scope`
{"kind": "turn", "first": N}: the messages from index N, for the run that a
cell started). A turn view follows its run only; when the run ends, each place
it was shown is replaced by the turn as static markdown, which every reader of
the saved notebook can render (JupyterLab without a kernel, GitHub, nbconvert).

A full view stays live, so it is shown as two outputs: the conversation as
static markdown, replaced in place at the end of every run, and the widget
just below it. While the widget is live its style sheet hides the markdown
above it; every reader without the live widget (a saved notebook reopened,
GitHub, nbconvert) shows the markdown instead. The widget's output holds no
markdown of its own, so nothing is shown twice. (The
browser also saves a small placeholder state for the widget, so a reopened
notebook with a new kernel shows no "model not found": js/saved_state.js.)
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import traitlets
from pydantic import Field

from mentra_nb import pricing
from mentra_nb.errors import AgentError, MentraError
from mentra_nb.messages import Message, Role, TextBlock, ThinkingBlock
from mentra_nb.notebook._assets import static_file
from mentra_nb.notebook._display import Shown, show
from mentra_nb.notebook._rendering import (
    md_block,
    md_code,
    md_text,
    message_items,
    transcript_markdown,
)
from mentra_nb.notebook._stream_refs import encode_html
from mentra_nb.notebook._widget import BrowserMessage, BrowserMessages, MentraWidget
from mentra_nb.notebook._wire import Approval, DeltaMessage, LiveState, SourceMessage
from mentra_nb.runtime import (
    AGENT_NAME_PATTERN,
    Agent,
    AgentEvent,
    AgentSnapshot,
    AgentStatus,
    PendingApproval,
    SubagentSnapshot,
    TeamSnapshot,
    spending,
)
from mentra_nb.runtime.cell_tools import changed_at, rewind_with_cells

if TYPE_CHECKING:
    from mentra_nb.notebook._host import RuntimeHost

__all__ = [
    "LIVE_WINDOW", "PROGRESS_FIRST_DELAY", "PROGRESS_MAX_DELAY", "STREAM_INTERVAL", "AgentView",
    "TurnScope", "progress_delay",
]

log = logging.getLogger("mentra_nb.notebook")

# The live stream is read every STREAM_INTERVAL while nothing waits, so a
# stream's first words go within a poll; after each message the next goes no
# sooner than LIVE_WINDOW later, with whatever streamed meanwhile. Every Jupyter
# message costs ~380 bytes of envelope besides its text (frames, a 64-byte
# signature, a ~200-byte header, comm id; the topic is cut to 4 bytes and the
# parent header left out: _widget.py): sent per 16-ms token, a model's 60
# tokens/s would cost ~35 times the text on the wire; coalesced over 150 ms,
# about 13 times (an ipywidgets Output widget streaming the same text: 16 to 24
# times; tests/benchmarks/bench_wire.py), and the browser shows each piece
# within about a window of the model writing it (p95 ~0.2 s: bench_lag.py). A
# longer window would save bytes, not the reader's time: the p95 lag is the
# window plus 40 to 90 ms here, so 250 ms leaves no room for 200. The browser
# reveals each message over the time since the one before, never longer than the
# window (js/agent_view.js Reveal), and Stop keeps what it showed (`_stop`).
STREAM_INTERVAL = 0.05  # seconds
"""Seconds between two reads of the agent's live text while a run is active."""
LIVE_WINDOW = 0.15  # seconds
"""Seconds between two messages of live text to the browser, after the first words (which go at
once).
"""
# A running call's progress reports (an MCP server may send hundreds a second)
# are read less often than text: the newest at once, then after 1, 2, 4, 4 … s.
PROGRESS_FIRST_DELAY = 1.0  # seconds
"""Seconds before a running call's second progress report is sent (the first goes at once)."""
PROGRESS_MAX_DELAY = 4.0  # seconds
"""The longest wait, in seconds, between two progress reports of a running call."""


class _Hello(BrowserMessage):
    kind: Literal["hello"]


class _Stop(BrowserMessage):
    kind: Literal["stop"]
    now: bool = False  # True: "Stop" (end the stream now); False: "Finish round"
    # With "Stop": the characters of live text the view showed when clicked, and the
    # sequence number of the last message it had applied (whose stream they are).
    shown: int | None = Field(default=None, ge=0)
    seq: int | None = Field(default=None, ge=0)


class _Earlier(BrowserMessage):
    """"Show earlier messages": the page before message `before`, the first the browser has."""

    kind: Literal["earlier"]
    before: int = Field(ge=0)


class _Interrupt(BrowserMessage):
    kind: Literal["interrupt"]


class _Send(BrowserMessage):
    kind: Literal["send"]
    text: str = Field(min_length=1, max_length=100_000)


class _Resume(BrowserMessage):
    kind: Literal["resume"]


class _Fork(BrowserMessage):
    """"Fork from here": a new agent `name` with this one's first `at` messages."""

    kind: Literal["fork"]
    at: int = Field(ge=0)
    name: str = Field(pattern=AGENT_NAME_PATTERN)


class _EditSource(BrowserMessage):
    """"Edit" was clicked: the words of the user message at `index`, as written."""

    kind: Literal["edit_source"]
    index: int = Field(ge=0)


class _Edit(BrowserMessage):
    """"Edit": send `text` in place of the user message at `index`."""

    kind: Literal["edit"]
    index: int = Field(ge=0)
    text: str = Field(min_length=1, max_length=100_000)


class _Undo(BrowserMessage):
    """"Undo" on the turn whose first message is `first`: revert the cell changes
    made from that turn on and rewind the conversation to before it."""

    kind: Literal["undo"]
    first: int = Field(ge=0)


class _Approve(BrowserMessage):
    kind: Literal["approve"]
    call_id: str = Field(min_length=1, max_length=200)
    always: bool = False


class _Deny(BrowserMessage):
    kind: Literal["deny"]
    call_id: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=2_000)


# How many messages a view renders at a time: the last page when it is displayed,
# each earlier page when the reader asks for it (a resumed notebook of fifty long
# agents renders fifty pages, not fifty transcripts).
TRANSCRIPT_PAGE = 50

# What a saved notebook keeps of a transcript: the tail, so a long-lived agent's
# output does not grow the .ipynb by its whole history on every display.
STATIC_MESSAGES = 40
APPROVAL_INPUT_CHARS = 4_000  # what the widget shows of a call's input (a write_file's content may be huge)


class AgentView(MentraWidget):
    """Status, usage, the committed transcript, the live stream and controls."""

    _esm = static_file("agent_view.js")
    _css = static_file("mentra.css")

    _mentra_view = traitlets.Unicode("agent").tag(sync=True)
    agent_name = traitlets.Unicode("").tag(sync=True)
    model_key = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Dict().tag(sync=True)
    run_generation = traitlets.Int(0).tag(sync=True)
    usage = traitlets.Dict().tag(sync=True)
    # "$0.0123", "cost unknown", or with what its team and subagents spent too.
    cost = traitlets.Unicode("").tag(sync=True)
    pending_tools: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    # The running tool call's latest progress report (an MCP server's progress
    # notifications, `ctx.report_progress`); "" when none. The newest is sent,
    # first at once, then at most one a second (a server may report hundreds of times a second).
    progress = traitlets.Unicode("").tag(sync=True)
    approvals: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)  # calls waiting for Approve / Deny / Always allow
    # What `agent.resume()` would do: {"kind": "replay", "text": ...} for a rolled-back
    # user turn, {"kind": "continue"} after cut tool calls, {} when there is nothing.
    resumable = traitlets.Dict().tag(sync=True)
    # {} for the whole conversation, {"kind": "turn", "first": N} for one turn's view.
    scope = traitlets.Dict().tag(sync=True)
    # A fork's origin for its header, {"parent": name, "at": messages it began with}; {} otherwise.
    fork_origin = traitlets.Dict().tag(sync=True)
    # Where the agent's cell changes no undo reverted were made (their message
    # indexes, ascending): the conversation's view offers Undo on the turns they
    # fall in. [] in a turn's view (its turn is over before Undo could act).
    changed_cells_at: traitlets.List[int] = traitlets.List().tag(sync=True)
    # What the last "Fork from here", "Edit" or "Undo" click did, or why it could not ("" at first).
    notice = traitlets.Unicode("").tag(sync=True)

    # Where this notebook's agents are kept ({"id": runtime id, "state": file}): the
    # page writes it into the notebook's metadata, so they follow the notebook through
    # renames and moves (_notebook_identity, js/saved_state.js).
    notebook = traitlets.Dict().tag(sync=True)

    def __init__(self, agent: Agent, host: RuntimeHost, *, turn: TurnScope | None = None,
                 notebook: dict[str, str] | None = None) -> None:
        self._agent = agent
        self._host = host
        self._turn = turn
        self._first = turn.first if turn is not None else 0
        self._seq = 0
        self._stream_began = 0  # the sequence number of the message the browser's live text starts at
        # The committed transcript as display items, kept here (not in a synced
        # trait, which would resend the whole list on every message) and built
        # when the widget is first displayed.
        self._items: list[dict[str, Any]] | None = None
        self._rendered_messages = self._first
        self._loaded_from = self._first  # the index of the first message in `_items`
        self._replacements = 0  # rewinds, edits and switches of branch seen (`_markdown_key`)
        self._shown: list[Shown] = []  # where a turn view was displayed
        self._ended = False
        self._end: int | None = None  # a turn view's message count when its turn ended
        self._partial = ""  # the reply streamed so far, as last read
        self._shown_lock = threading.Lock()  # `show` (shell thread) against `_end_turn` (runtime thread)
        # How much of the current message's stream the browser has.
        self._sent_text = 0
        self._sent_thinking = 0
        self._tool_json: dict[str, str] = {}  # tool id -> input JSON sent so far
        # When the stream's and the progress reports' unsent parts may go.
        self._live_window = _Window(LIVE_WINDOW)
        self._progress_batches = _Batches()
        self._latest_progress = ""  # the newest report, which `progress` shows when due
        self._timer: asyncio.TimerHandle | None = None
        self._cost_key: tuple[object, ...] | None = None
        self._changed_key: tuple[int, int] | None = None  # (history length, rewinds) `changed_cells_at` is of
        self._changed_at: list[int] = []
        self._tree_cost = ""
        # The agent's state goes with the widget's opening, not in an update right
        # after it (a turn view is opened by every cell that sends).
        def read() -> tuple[object, dict[str, Any]]:
            snapshot = agent.snapshot
            return ((snapshot, agent.stopping),
                    {**self._agent_traits(snapshot), "fork_origin": _fork_origin(agent)})

        self._opened_at, state = host.call(read)
        super().__init__(agent_name=agent.name, model_key=agent.model.key,
                         scope={} if turn is None else {"kind": "turn", "first": turn.first},
                         notebook=notebook or {}, **state)
        self.on_msg(self._on_browser_message)
        # Not waited for: whatever the caller asks of the runtime next runs after it,
        # and `_attach` catches up with what changed since the state was read.
        host.call_soon(self._attach)

    # --- runtime side (runs on the runtime thread) --------------------------------

    def _attach(self) -> None:
        agent = self._agent
        self.agent_name = agent.name
        self.model_key = agent.model.key
        if (agent.snapshot, agent.stopping) != self._opened_at:
            self._sync_state()  # what changed since the widget's state was read
        self._unsubscribe = agent.on_event(self._on_event, deltas=False)
        self._poll_while_running()

    def _follows_run(self, snapshot: AgentSnapshot | None = None) -> bool:
        """Whether the agent's current run is one this view shows (a turn view
        shows its own run only). Callers that hold a snapshot pass it: building one
        asks every extension for its fields."""
        if self._turn is None:
            return True
        return (snapshot or self._agent.snapshot).run_generation == self._turn.generation

    def _on_event(self, event: AgentEvent) -> None:
        if self._turn is not None and getattr(event, "run_generation", self._turn.generation) != \
                self._turn.generation:
            return  # another turn's: its own cell shows it
        if event.type == "run_started":
            self._poll_while_running()
        if event.type == "tool_execution_progress":
            # Not sent here: an MCP server's flood of notifications (22,641 in one
            # 8-s call) would be as many messages. The poll sends the newest when due.
            self._latest_progress = event.message
            return
        if event.type in ("tool_execution_finished", "run_finished", "run_failed", "run_cancelled"):
            self._latest_progress = self.progress = ""
            self._progress_batches.reset()
        if event.type == "assistant_message_committed":
            self._commit(event.message)
        elif event.type == "history_replaced":
            self._replacements += 1  # the same length may be other messages
            self._replace_transcript()
        else:
            with self.hold_sync():  # one state message for the status and the rest
                self._flush()
                if event.type in ("run_failed", "run_cancelled"):
                    self._reset_stream()
                self._sync_state()
        if self._turn is None and event.type in ("run_finished", "run_failed", "run_cancelled",
                                                  "history_replaced", "tool_approval_requested"):
            self._refresh_fallbacks()  # (a paused run's copy says what it waits for)
        if self._turn is not None and event.type in ("run_finished", "run_failed", "run_cancelled"):
            if event.type == "run_cancelled":  # rolled back: the agent is idle, this turn was cut
                self.status = AgentStatus.interrupted().model_dump(exclude_none=True)
            else:
                self._partial = ""
            self._end_turn()

    def _end_turn(self) -> None:
        """The turn this view shows is over: stop following the agent, and put
        the turn as static markdown where the view was shown."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        with self._shown_lock:
            self._end = self._agent.snapshot.history_len
            self._ended = True
            shown = list(self._shown)
        bundle = self._static_bundle()
        if self._page_seen:
            self.saved_copy = bundle
        for place in shown:
            place.replace(bundle)

    def _keep_saved_copy(self) -> None:
        if self._turn is None:
            super()._keep_saved_copy()
        elif self._ended:
            self.saved_copy = self._static_bundle()

    def _static_bundle(self) -> dict[str, Any]:
        return {"text/plain": repr(self), "text/markdown": self._current_markdown()}

    def show(self) -> None:
        """Display this view in the running cell (a turn view's place is replaced
        by its static transcript when the turn ends)."""
        shown = show(self._widget_bundle())
        if shown is None:
            return
        with self._shown_lock:
            ended = self._ended
            if not ended:
                self._shown.append(shown)
        if ended:  # the turn ended before the cell showed it
            shown.replace(self._host.call(self._static_bundle))

    # --- a full view's static markdown (for readers without the live widget) -------

    def _ipython_display_(self) -> None:
        """Display the view: a full view as its static markdown and the widget (see
        the module's docstring), a turn view as `show` does."""
        if self._turn is not None:
            self.show()
            return
        # What a reader without the widget sees below the markdown (JupyterLab shows
        # an untrusted notebook's widgets so): nothing that goes stale.
        self._display_with_fallback(f"AgentView({self._agent.name}) · live view; saved as the markdown above")

    def _status(self, snapshot: AgentSnapshot | None = None) -> dict[str, Any]:
        """The status trait: the agent's (without the fields it leaves empty: each
        status update crosses the wire with every view), with `stopping` ("now" /
        "round") while a stop is on its way; a turn view not yet started says it
        waits for the model."""
        agent = self._agent
        snapshot = snapshot or agent.snapshot
        if self._turn is not None and snapshot.run_generation < self._turn.generation:
            return AgentStatus.awaiting_model().model_dump(exclude_none=True)
        status = snapshot.status.model_dump(exclude_none=True)
        stopping = agent.stopping
        if stopping is not None:
            status["stopping"] = stopping
        return status

    def _stop(self, now: bool, shown: int | None = None, seq: int | None = None) -> None:
        """Stop clicked in the browser. "Stop" keeps the reply as far as the reader
        saw it (`shown` characters), when what they saw is the reply streaming now:
        their view had applied the message that began this stream (`seq`)."""
        keep = None
        if now and shown is not None and seq is not None and seq >= self._stream_began:
            keep = min(shown, self._sent_text)
        self._agent.stop(now=now, keep_text=keep)
        self._sync_state()  # "stopping…" at once, before the run ends

    def _poll_while_running(self, snapshot: AgentSnapshot | None = None, delay: float = STREAM_INTERVAL) -> None:
        if (self._timer is None and self._agent.is_running and not self._ended and self.comm is not None
                and self._follows_run(snapshot)):  # not closed
            self._timer = asyncio.get_running_loop().call_later(delay, self._poll)

    def _poll(self) -> None:
        self._timer = None
        snapshot = self._flush(coalesced=True)
        # Right after a message the next can go only a window later: no poll before then.
        wait = self._live_window.wait(time.monotonic())
        self._poll_while_running(snapshot, wait or STREAM_INTERVAL)

    def _flush(self, *, coalesced: bool = False) -> AgentSnapshot:
        """Send what streamed since the last flush, if anything did. `coalesced`
        (the poll) sends live text only when the window since the last message has
        passed; events flush everything. Returns the snapshot it read."""
        snapshot = self._agent.snapshot
        status = self._status(snapshot)
        if status != self.status:
            self.status = status
        text, thinking = snapshot.current_text, snapshot.current_thinking
        if text:
            self._partial = text  # what an Interrupt would cut (a turn view keeps showing it)
        if len(text) < self._sent_text or len(thinking) < self._sent_thinking:
            self._resend_stream()  # the stream restarted without an event we act on
            return snapshot
        now = time.monotonic()
        progress = self._latest_progress
        if progress != self.progress and (not coalesced or self._progress_batches.due(now)):
            self.progress = progress
            self._progress_batches.sent_one()
        if coalesced and self._live_window.wait(now) > 0:
            return snapshot
        tools = {}
        for pending in snapshot.pending_tool_uses:
            sent = self._tool_json.get(pending.id, "")
            if len(pending.input_json) > len(sent):
                tools[pending.id] = pending.input_json[len(sent):]
                self._tool_json[pending.id] = pending.input_json
        text, thinking = text[self._sent_text:], thinking[self._sent_thinking:]
        if text or thinking or tools:
            self._sent_text += len(text)
            self._sent_thinking += len(thinking)
            self._send_delta(text, thinking, tools)
            self._live_window.sent(now)
        return snapshot

    def _commit(self, message: Message) -> None:
        """The streamed reply became a transcript message. One message tells the
        browser: the tail of the stream it has not seen, the reply as spans of the
        whole stream, and that the stream is over."""
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        thinking = "".join(b.thinking for b in message.content if isinstance(b, ThinkingBlock))
        stream: _Stream | None = None
        if len(text) >= self._sent_text and len(thinking) >= self._sent_thinking:
            stream = _Stream(whole=[text, thinking],
                             tail=[text[self._sent_text:], thinking[self._sent_thinking:]])
        if self._sync_state(stream):
            self._sent_text = self._sent_thinking = 0
            self._tool_json.clear()
            self._live_window.reset()
        else:
            self._reset_stream()

    def _cost_text(self, snapshot: AgentSnapshot) -> str:
        own = pricing.format_cost(snapshot.usage.cost_usd)
        teammates = TeamSnapshot.of(snapshot).teammates
        subagents = SubagentSnapshot.of(snapshot).subagents
        if not teammates and not subagents:
            return own
        # The tree's sum is read again only when the agent's usage or its members
        # changed (a member's run ends with a status change), not on every delta.
        key = (snapshot.usage, teammates, subagents)
        if key != self._cost_key:
            self._cost_key = key
            total = spending(self._agent).total
            what = " and ".join(w for w, present in (("team", teammates), ("subagents", subagents))
                                if present)
            self._tree_cost = f" · {pricing.format_cost(total.cost_usd)} with {what}"
        return own + self._tree_cost

    def _reset_stream(self) -> None:
        self._sent_text = self._sent_thinking = 0
        self._tool_json.clear()
        self._live_window.reset()
        self._send_custom({"kind": "reset", **_stream_fields("", "", {})})

    def _send_delta(self, text: str, thinking: str, tools: dict[str, str]) -> None:
        """New live text: the most frequent message, so its keys are one letter and
        empty fields are left out (js/agent_view.js LiveStream reads it)."""
        self._seq += 1
        message: DeltaMessage = {"s": self._seq, "t": text}
        if thinking:
            message["h"] = thinking
        if tools:
            message["u"] = tools
        self.send(message)

    def _send_custom(self, message: dict[str, Any]) -> None:
        self._seq += 1
        if message["kind"] == "reset" or "tail" in message or "live" in message:
            self._stream_began = self._seq  # the browser's live text starts again here
        self.send({**message, "seq": self._seq})

    def _sync_state(self, stream: _Stream | None = None) -> bool:
        """Bring traits and items in line with the agent; True if the stream, when
        given (the newest message was just streamed), was ended with the new items."""
        agent = self._agent
        snapshot = agent.snapshot
        with self.hold_sync():  # traitlets sends only the values that changed
            for name, value in self._agent_traits(snapshot).items():
                setattr(self, name, value)
        count = snapshot.history_len
        if self._items is None or count == self._rendered_messages or (
                count < self._first and self._rendered_messages == self._first):
            return False  # not displayed yet, or nothing new (or a turn rolled back before it began)
        if count > self._rendered_messages:
            start = len(self._items)
            new = self._render(agent.recent_messages(count - self._rendered_messages), self._rendered_messages)
        else:  # a rollback: render again
            start, new = 0, self._last_page(count)
            self._items.clear()
        count = max(count, self._first)
        self._items.extend(new)
        self._rendered_messages = count
        self._send_items(start, new, stream)
        return stream is not None

    def _agent_traits(self, snapshot: AgentSnapshot) -> dict[str, Any]:
        """The synced traits that follow the agent's state, as it is now."""
        return {
            "status": self._status(snapshot),
            "run_generation": snapshot.run_generation if self._turn is None else self._turn.generation,
            "usage": snapshot.usage.model_dump(),
            "cost": self._cost_text(snapshot),
            "pending_tools": [p.model_dump() for p in snapshot.pending_tool_uses],
            "approvals": [approval_item(p) for p in snapshot.pending_approvals],
            "resumable": _resumable(self._agent),
            "changed_cells_at": self._cells_changed_at(snapshot.history_len),
        }

    def _cells_changed_at(self, history_len: int) -> list[int]:
        """`changed_cells_at`, read from the store again only when the conversation
        grew or was replaced (a cell change is followed by its tool's result)."""
        if self._turn is not None:
            return []
        key = (history_len, self._replacements)
        if key != self._changed_key:
            services = self._agent.services
            self._changed_at, self._changed_key = changed_at(services.store, self._agent.id), key
        return self._changed_at

    def _replace_transcript(self) -> None:
        """A rewind, an edit or a switch of branch: the transcript is another one,
        perhaps as long as the old, so it is rendered and sent again from the start.
        (A turn's view keeps showing what its turn did.)"""
        self._sync_state()
        if self._items is not None and self._turn is None:
            count = self._agent.snapshot.history_len
            self._items = self._last_page(count)
            self._rendered_messages = count
            self._send_items(0, list(self._items))

    @property
    def items(self) -> list[dict[str, Any]]:
        """The committed transcript (of its turn, for a turn view) as the browser
        has it: its last page, rendered on first use, and the earlier pages the
        browser asked for."""
        if self._items is None:
            count = self._agent.snapshot.history_len
            self._items = self._last_page(count)
            self._rendered_messages = max(count, self._first)
        return self._items

    def _last_page(self, count: int) -> list[dict[str, Any]]:
        """The last TRANSCRIPT_PAGE of the view's `count` messages, rendered (only
        those are read from the store, if the transcript is not loaded)."""
        self._loaded_from = max(self._first, count - TRANSCRIPT_PAGE)
        return self._render(self._agent.recent_messages(count - self._loaded_from), self._loaded_from)

    def _send_earlier(self, before: int) -> None:
        """The browser asked for the page before its first message `before`. A
        request that crossed a change of the transcript (or another view's click)
        is ignored: the browser has been sent the transcript as it is now."""
        count = self._agent.snapshot.history_len
        if self._items is None or before != self._loaded_from or not self._first < before <= count:
            return
        start = max(self._first, before - TRANSCRIPT_PAGE)
        page = self._render(self._agent.recent_messages(count - start)[: before - start], start)
        self._items[:0] = page
        self._loaded_from = start
        self._send_custom({"kind": "earlier", "items": page, "earlier": start - self._first})

    @staticmethod
    def _render(messages: list[Message], first_index: int) -> list[dict[str, Any]]:
        return [item for i, message in enumerate(messages, first_index)
                for item in message_items(message, i)]

    def _send_items(self, start: int, items: list[dict[str, Any]], stream: _Stream | None = None,
                    live: LiveState | None = None) -> None:
        message: dict[str, Any] = {"kind": "items", "start": start, "items": items}
        if start == 0:  # the transcript from its first page: how many messages come before it
            message["earlier"] = self._loaded_from - self._first
        if stream is not None:
            # The browser appends `tail`, checks its text against `basis`, resolves
            # the spans, then clears its live stream.
            message["items"] = [_by_reference(item, stream.whole) for item in items]
            message["tail"] = stream.tail
            message["basis"] = [len(source) for source in stream.whole]
        if live is not None:
            message["live"] = live  # the live stream is replaced by this (a hello's answer)
        self._send_custom(message)

    def _hello(self) -> None:
        """Answer a view's hello: the transcript as loaded and the half-streamed state,
        in one message (each costs ~420 bytes of envelope, and every displayed
        view is greeted)."""
        # A copy: an earlier page is prepended to `items` in place.
        self._send_items(0, list(self.items), live=self._live_now())

    def _resend_stream(self) -> None:
        self._send_custom({"kind": "reset", **self._live_now()})

    def _live_now(self) -> LiveState:
        """The half-streamed reply as the browser should hold it now (nothing when
        this view follows no run), counted as sent."""
        snapshot = self._agent.snapshot
        if self._ended or not self._follows_run(snapshot):
            self._sent_text = self._sent_thinking = 0
            self._tool_json = {}
            return _stream_fields("", "", {})
        self._sent_text, self._sent_thinking = len(snapshot.current_text), len(snapshot.current_thinking)
        self._tool_json = {p.id: p.input_json for p in snapshot.pending_tool_uses}
        return _stream_fields(snapshot.current_text, snapshot.current_thinking, dict(self._tool_json))

    # --- browser side (runs on the kernel's shell thread) -------------------------

    def _on_hello(self, _message: _Hello) -> None:
        self._host.call_soon(self._hello)

    def _on_earlier(self, message: _Earlier) -> None:
        self._host.call_soon(self._send_earlier, message.before)

    def _on_stop(self, message: _Stop) -> None:
        self._host.call_soon(self._stop, message.now, message.shown, message.seq)

    def _on_interrupt(self, _message: _Interrupt) -> None:
        self._host.call_soon(self._agent.cancel)

    def _on_send(self, message: _Send) -> None:
        self._host.submit(self._agent.send(message.text)).add_done_callback(_log_failure(self._agent.name))

    def _on_resume(self, _message: _Resume) -> None:
        self._host.submit(self._agent.resume()).add_done_callback(_log_failure(self._agent.name))

    def _on_approve(self, message: _Approve) -> None:
        agent = self._agent
        self._host.call_soon(_answer, agent.name, agent.approve, message.call_id, message.always)

    def _on_deny(self, message: _Deny) -> None:
        agent = self._agent
        self._host.call_soon(_answer, agent.name, agent.deny, message.call_id, message.reason)

    def _on_fork(self, message: _Fork) -> None:
        self._host.call_soon(self._fork_from_here, message.at, message.name)

    def _on_edit_source(self, message: _EditSource) -> None:
        self._host.call_soon(self._send_source, message.index)

    def _on_edit(self, message: _Edit) -> None:
        self._host.submit(self._agent.edit(message.index, message.text)).add_done_callback(self._report_edit)

    def _on_undo(self, message: _Undo) -> None:
        first = message.first
        self._host.submit(rewind_with_cells(self._agent, first)).add_done_callback(
            lambda future: self._report_undo(first, future))

    browser_messages = BrowserMessages({
        _Hello: _on_hello, _Earlier: _on_earlier, _Stop: _on_stop, _Interrupt: _on_interrupt, _Send: _on_send,
        _Resume: _on_resume, _Approve: _on_approve, _Deny: _on_deny, _Fork: _on_fork,
        _EditSource: _on_edit_source, _Edit: _on_edit, _Undo: _on_undo,
    })

    # --- time travel from the browser (runs on the runtime thread) -----------------

    def _fork_from_here(self, at: int, name: str) -> None:
        try:
            fork = self._agent.fork(name, at=at)
        except MentraError as err:
            self.notice = f"could not fork: {err}"
            return
        self.notice = (f"forked as '{fork.name}' with the first {at} messages; "
                       f"nb.session().agent('{fork.name}') in a cell shows it")

    def _send_source(self, index: int) -> None:
        # On request, not with every item: a prompt would cross the wire twice.
        history = self._agent.history
        text = history[index].text if index < len(history) else ""
        source: SourceMessage = {"kind": "source", "index": index, "text": text}
        self.send(source)

    def _report_undo(self, first: int, future: Any) -> None:
        if future.cancelled():
            return
        error = future.exception()
        if isinstance(error, MentraError):
            self.notice = f"could not undo: {error}"
        elif error is not None:
            log.warning("an undo sent from %s's widget failed: %s", self._agent.name, error)
            self.notice = f"could not undo: {error}"
        else:
            self.notice = f"undone: the conversation goes on from its first {first} messages; " \
                          f"cells: {future.result().summary()}"
        # The undo is recorded after the rewind was seen: read where changes remain.
        self._changed_key = None
        self.changed_cells_at = self._cells_changed_at(self._agent.snapshot.history_len)

    def _report_edit(self, future: Any) -> None:
        if future.cancelled():
            return
        error = future.exception()
        if isinstance(error, MentraError):
            self.notice = f"could not edit: {error}"
        elif error is not None:
            log.warning("an edit sent from %s's widget failed: %s", self._agent.name, error)

    # --- static outputs -----------------------------------------------------------

    def _displayed(self) -> None:
        """Displayed: the browser gets the transcript now, without asking for it (a
        busy kernel would answer a hello only after the cells queued before it)."""
        items = self.items  # rendered now: from here on each new message is sent as it comes
        turn = self._turn
        if (turn is not None and not items and not self._ended
                and self._agent.snapshot.history_len <= turn.first):
            # A turn view is shown as its run starts: the prompt, committed a moment
            # later, is the first message its browser gets (one message, not two).
            return
        self._hello()

    def __repr__(self) -> str:
        agent = self._agent
        if self._turn is not None and not self._ended:
            # Deterministic while it runs: a cell's saved text must not depend on timing.
            return f"AgentView({agent.name}, turn {self._turn.generation})"
        if self._turn is not None:
            return (f"AgentView({agent.name}, turn {self._turn.generation}, {self._turn_status()}, "
                    f"{len(self._turn_messages())} messages)")
        return f"AgentView({agent.name}, {agent.model.key}, {agent.status}, {agent.snapshot.history_len} messages)"

    def _turn_status(self) -> str:
        status = self.status
        name = str(status.get("name", "idle"))
        return f"failed: {status.get('error')}" if name == "failed" else name

    def _turn_messages(self) -> list[Message]:
        """This turn's messages (not later turns', once it ended)."""
        agent = self._agent
        count = agent.snapshot.history_len
        end = count if self._end is None else min(self._end, count)
        return agent.recent_messages(count - self._first)[: max(0, end - self._first)]

    def _markdown_key(self) -> object:
        agent = self._agent
        return (agent.snapshot, agent.resumable_turn, self._replacements, self._ended, self._end,
                self._partial, self.status, self.fork_origin)

    def _markdown(self) -> str:
        agent = self._agent
        if self._turn is not None and not self._ended:
            # Deterministic while it runs (saved text must not depend on timing); the
            # turn's transcript replaces it when the turn ends.
            return f"**{md_text(agent.name)}** · turn {self._turn.generation} · *running…*"
        if self._turn is not None:
            header = (f"**{md_text(agent.name)}** · turn {self._turn.generation} · "
                      f"{md_text(self._turn_status())}")
            recent = self._turn_messages()[-STATIC_MESSAGES:]
            earlier = len(self._turn_messages()) - len(recent)
        else:
            header = f"**{md_text(agent.name)}** · {md_code(agent.model.key)} · {md_text(str(agent.status))}"
            if self.fork_origin:
                header += (f" · fork of **{md_text(self.fork_origin['parent'])}** at message "
                           f"{self.fork_origin['at']}")
            recent = agent.recent_messages(STATIC_MESSAGES)
            earlier = agent.snapshot.history_len - len(recent)
        if earlier > 0:
            header += f"\n\n*… {earlier} earlier messages (`agent.history` has them all)*"
        body = transcript_markdown(recent)
        resumable = agent.resumable_turn
        if self._turn is not None and not recent and resumable is not None:
            body = md_block(resumable.text, "*rolled back (`agent.resume()` replays it):*")
            if self._partial.strip():
                # Interrupt rolls the turn back; what had streamed stays readable here.
                body += "\n\n" + md_block(self._partial, "*the reply so far, not kept:*")
        waiting = [f"*waiting for approval:* {md_code(p.tool_name)} (`%mentra approve` "
                   f"{md_code(agent.name)} {md_code(p.reference)})"
                   for p in agent.snapshot.pending_approvals]
        return "\n\n".join([header, *([body] if body else []), *waiting])


@dataclass(frozen=True)
class TurnScope:
    """The turn a view shows: the messages from index `first` on, of run `generation`."""

    first: int
    generation: int


@dataclass
class _Stream:
    """A reply's streamed text and thinking (`whole`), and what the browser has not seen of them."""

    whole: list[str]
    tail: list[str]


class _Window:
    """Live text goes at most once per `window`: after a quiet spell at once, text
    that follows a message soon after waits for its window to end."""

    def __init__(self, window: float) -> None:
        self._window = window
        self._last: float | None = None  # when the last message went (None: none in this stream)

    def wait(self, now: float) -> float:
        """How long until the next message may go (0: now)."""
        return 0.0 if self._last is None else max(0.0, self._last + self._window - now)

    def sent(self, now: float) -> None:
        self._last = now

    def reset(self) -> None:
        """A new stream: its first words go at once."""
        self._last = None


class _Batches:
    """When a progress report is due (see PROGRESS_FIRST_DELAY): the first at once,
    a later one when the oldest unsent has waited `progress_delay`."""

    def __init__(self) -> None:
        self._since: float | None = None  # when the oldest unsent part appeared (None: all sent)
        self._sent = 0

    def due(self, now: float) -> bool:
        """Called while something is unsent."""
        if self._since is None:
            self._since = now
        return self._sent == 0 or now - self._since >= progress_delay(self._sent)

    def sent_one(self) -> None:
        self._since = None
        self._sent += 1

    def reset(self) -> None:
        """A new call: its first report goes at once."""
        self._since, self._sent = None, 0


def progress_delay(sent: int) -> float:
    """How long a progress report waits once `sent` (≥ 1) reports of its call went
    out: PROGRESS_FIRST_DELAY, doubling to PROGRESS_MAX_DELAY."""
    return min(PROGRESS_MAX_DELAY, PROGRESS_FIRST_DELAY * 2.0 ** (sent - 1))


def _stream_fields(text: str, thinking: str, tools: dict[str, str]) -> LiveState:
    # Empty fields are left out: on a long stream the envelope is most of the bytes.
    fields: LiveState = {"text": text}
    if thinking:
        fields["thinking"] = thinking
    if tools:
        fields["tools"] = tools
    return fields


def _by_reference(item: dict[str, Any], streamed: list[str]) -> dict[str, Any]:
    if item.get("role") != "assistant" or item.get("kind") not in ("text", "thinking"):
        return item
    parts = encode_html(item["html"], streamed)
    if all(isinstance(part, str) for part in parts):
        return item
    return {**{k: v for k, v in item.items() if k != "html"}, "html_parts": parts}


# The cell tools' questions carry code or a diff: shown as it reads, not as a JSON string.
_VERBATIM_FIELDS = {"edit_cell": "diff", "run_cell": "code", "delete_cell": "source"}


def approval_item(pending: PendingApproval) -> Approval:
    """A paused tool call as the widgets show it (its input bounded)."""
    field = _VERBATIM_FIELDS.get(pending.tool_name)
    verbatim = pending.input.get(field) if field else None
    if isinstance(verbatim, str):
        rest = {k: v for k, v in pending.input.items() if k != field}
        text = f"{json.dumps(rest, ensure_ascii=False)}\n{field}:\n{verbatim}"
    else:
        text = json.dumps(pending.input, indent=2, ensure_ascii=False)
    if len(text) > APPROVAL_INPUT_CHARS:
        text = f"{text[:APPROVAL_INPUT_CHARS]}\n… [{len(text) - APPROVAL_INPUT_CHARS} more characters]"
    return {"id": pending.tool_use_id, "ref": pending.reference, "name": pending.tool_name, "input": text}


def _answer(name: str, answer: Any, *args: Any) -> None:
    # A second click, or a click on a call that stopped waiting, is not an error worth a traceback.
    try:
        answer(*args)
    except AgentError as err:
        log.warning("an approval answer from %s's widget was ignored: %s", name, err)


def _fork_origin(agent: Agent) -> dict[str, Any]:
    if agent.forked_from is None:
        return {}
    parent = agent.services.store.load_agent(agent.forked_from, transcript=False)
    return {"parent": parent.record.name if parent is not None else "a deleted agent",
            "at": agent.fork_index}


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
    last = agent.last_message
    if last is not None and last.role is Role.USER and last.tool_results:
        return {"kind": "continue"}
    return {}


def _log_failure(name: str) -> Any:
    def report(future: Any) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("a turn sent to %s from its widget failed: %s", name, future.exception())

    return report
