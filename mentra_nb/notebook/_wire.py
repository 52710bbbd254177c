"""The shapes the kernel sends the widgets' front ends: each view's synced traits and
its custom messages. (What the front ends send back are the `BrowserMessage` models
of each view's dispatch table.)

`mentra_nb/notebook/_wire_ts.py` turns these and the browser messages into js/wire.d.ts,
which the front end's JSDoc types import and `tsc` checks; a test fails when the
file is stale, and another when a view's synced traits differ from its `…Traits`
here. Keys a dict trait may lack (its `{}` before the first update, fields left
out when empty) are `NotRequired`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

# pydantic reads a TypedDict's schema only from typing_extensions' on Python < 3.12.
from typing_extensions import TypedDict

__all__ = [
    "AGENT_VIEW_WIRE",
    "BATCH_VIEW_WIRE",
    "PICKER_WIRE",
    "TEAM_VIEW_WIRE",
    "WidgetWire",
]


class Image(TypedDict):
    media_type: str
    data: str


class Item(TypedDict):
    """One rendered block of a transcript message (notebook/_rendering.py message_items)."""

    index: int
    role: str
    kind: str
    html: NotRequired[str]
    id: NotRequired[str]
    name: NotRequired[str]
    input: NotRequired[str]
    content: NotRequired[str]
    truncated: NotRequired[bool]
    is_error: NotRequired[bool]
    media_type: NotRequired[str]
    data: NotRequired[str]
    images: NotRequired[list[Image]]


# --- AgentView -------------------------------------------------------------------------


class Status(TypedDict):
    name: NotRequired[str]
    tool_id: NotRequired[str | None]
    tool_name: NotRequired[str | None]
    error: NotRequired[str | None]
    stopping: NotRequired[Literal["now", "round"] | None]


class Usage(TypedDict):
    input_tokens: NotRequired[int]
    output_tokens: NotRequired[int]


class PendingTool(TypedDict):
    id: str
    name: str
    input_json: str


class Approval(TypedDict):
    """A paused tool call (agent_view.py approval_item)."""

    id: str
    ref: str
    name: str
    input: str


class Resumable(TypedDict):
    kind: NotRequired[Literal["replay", "continue"]]
    text: NotRequired[str]


class Scope(TypedDict):
    kind: NotRequired[Literal["full", "turn"]]
    first: NotRequired[int]


class ForkOrigin(TypedDict):
    parent: NotRequired[str]
    at: NotRequired[int]


class AgentViewTraits(TypedDict):
    agent_name: str
    model_key: str
    status: Status
    run_generation: int
    usage: Usage
    cost: str
    pending_tools: list[PendingTool]
    progress: str
    approvals: list[Approval]
    resumable: Resumable
    scope: Scope
    fork_origin: ForkOrigin
    changed_cells_at: list[int]
    notice: str
    notebook: dict[str, object]


class WireItem(Item):
    """An item as streamed: its HTML may be parts, literal or `[source, start, end]`
    spans of the text (0) or thinking (1) the browser already holds."""

    html_parts: NotRequired[list[str | tuple[int, int, int]]]


class LiveState(TypedDict):
    text: NotRequired[str]
    thinking: NotRequired[str]
    tools: NotRequired[dict[str, str]]


class StreamMessage(TypedDict):
    """A sequenced message: the live stream reset, transcript items, or an earlier page."""

    kind: Literal["reset", "items", "earlier"]
    seq: int
    text: NotRequired[str]
    thinking: NotRequired[str]
    tools: NotRequired[dict[str, str]]
    start: NotRequired[int]
    items: NotRequired[list[WireItem]]
    earlier: NotRequired[int]
    tail: NotRequired[tuple[str, str]]
    basis: NotRequired[tuple[int, int]]
    live: NotRequired[LiveState]


class DeltaMessage(TypedDict):
    """New live text, in short keys: the most frequent message."""

    s: int
    t: NotRequired[str]
    h: NotRequired[str]
    u: NotRequired[dict[str, str]]


class SourceMessage(TypedDict):
    """The words of the user message at `index`, which "Edit" asked for."""

    kind: Literal["source"]
    index: int
    text: str


AgentViewCustom = StreamMessage | DeltaMessage | SourceMessage


# --- TeamView --------------------------------------------------------------------------


class Lead(TypedDict):
    name: NotRequired[str]
    status: NotRequired[str]
    unread: NotRequired[int]


class Member(TypedDict):
    name: str
    role: str
    model: str
    status: str
    error: NotRequired[str | None]
    alive: bool
    unread: int
    last_active: NotRequired[float | None]


class Request(TypedDict):
    id: str
    protocol: str
    sender: str
    content: str
    created_at: float


class TeammateApproval(Approval):
    agent: str


class TeamViewTraits(TypedDict):
    lead: Lead
    members: list[Member]
    requests: list[Request]
    approvals: list[TeammateApproval]
    notice: str


class TeammatePreview(TypedDict):
    """A teammate's transcript, sent to every view of the team when one opens it."""

    kind: Literal["preview"]
    name: str
    pages: int
    count: int
    items: list[Item]
    has_older: bool
    error: NotRequired[str]


# --- SubagentPickerView ----------------------------------------------------------------


class Badge(TypedDict):
    count: NotRequired[int]
    text: NotRequired[str]
    tone: NotRequired[str]


class PickerOption(TypedDict):
    label: str
    status: str
    model: str
    path: str
    agent_id: str | None
    waiting_for_approval: NotRequired[list[str]]


class SubagentPreview(TypedDict):
    path: NotRequired[str]
    status: NotRequired[str]
    model: NotRequired[str]
    items: NotRequired[list[Item]]
    has_older: NotRequired[bool]
    truncated: NotRequired[bool]
    error: NotRequired[str | None]
    loaded_older: NotRequired[bool]


class SubagentApproval(Approval):
    path: str


class BatchProgress(TypedDict):
    state: str
    agent: str
    total: int
    done: int
    running: int
    failed: int
    waiting: int
    cancelled: int
    tokens: int
    cost: str
    rows_per_minute: int
    eta: str
    note: str
    throttled: int


class BatchFailure(TypedDict):
    index: int
    agent: str
    error: str


class BatchRow(TypedDict):
    index: NotRequired[int]
    agent: NotRequired[str]
    items: NotRequired[list[Item]]


class BatchTraits(TypedDict):
    job_name: str
    progress: BatchProgress
    failures: list[BatchFailure]
    row: BatchRow
    notice: str


class PickerTraits(TypedDict):
    root_name: str
    badge: Badge
    options: list[PickerOption]
    preview: SubagentPreview
    approvals: list[SubagentApproval]
    notice: str
    preview_live: str


class WidgetWire:
    """What one view's front end reads and receives from the kernel."""

    def __init__(self, name: str, traits: type, custom: Any) -> None:
        self.name = name  # the prefix of its types in js/wire.d.ts
        self.traits = traits
        self.custom = custom


AGENT_VIEW_WIRE = WidgetWire("AgentView", AgentViewTraits, AgentViewCustom)
TEAM_VIEW_WIRE = WidgetWire("TeamView", TeamViewTraits, TeammatePreview)
PICKER_WIRE = WidgetWire("Picker", PickerTraits, None)
BATCH_VIEW_WIRE = WidgetWire("BatchView", BatchTraits, None)
