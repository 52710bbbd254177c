"""What a frontend shows of a subagent tree, derived from the committed tree.

`SubagentPickerState` is the data behind the status badge with its picker (the count of children,
a tone, one option per child in path order); `SubagentSummary` is the
per-child line an `AgentSnapshot` carries; `SubagentInfo` adds what
`list_subagents` and the `list_agents` tool report. All are pure functions of a
`SubagentTree`, rebuilt after every commit.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.runtime.subagents._snapshot import SubagentSummary
from mentra_nb.runtime.subagents._tree import SubagentRecord, SubagentTree

__all__ = [
    "PickerOption",
    "SubagentInfo",
    "SubagentPickerState",
    "SubagentSummary",
    "Tone",
    "picker_for",
    "summaries_for",
]

Tone = Literal["neutral", "success", "error"]


class SubagentInfo(SubagentSummary):
    """One child with its parent and last message (bounded to 24,000 bytes)."""

    parent: str
    active_turn: str | None = None
    last_message: str | None = None


class PickerOption(BaseModel):
    """One child in the picker: its path, status, model and what waits for the user."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    label: str  # last path segment
    status: str  # status label: pending_init, running, interrupted, completed, errored
    model: str
    path: str  # what to pass to preview() / interrupt_subagent()
    agent_id: str | None
    waiting_for_approval: list[str] = Field(default_factory=list)  # tools waiting for the user


class SubagentPickerState(BaseModel):
    """The subagent badge: `text` is the count of children; `tone` is error if any
    child errored, else success if any is working, else neutral."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    title: str = "Subagents"
    symbol: str = "agent"
    count: int
    text: str
    tone: Tone
    options: list[PickerOption]


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _summary_fields(path: str, record: SubagentRecord) -> dict[str, object]:
    return {
        "path": path, "name": _name(path), "agent_id": record.agent_id, "status": record.status,
        "model": record.model, "depth": record.depth,
        "waiting_for_approval": [w.tool for w in record.awaiting_approval],
    }


def summaries_for(tree: SubagentTree, prefix: str | None = None) -> list[SubagentSummary]:
    """Children whose path starts with `prefix` (all of them without one)."""
    return [
        SubagentSummary(**_summary_fields(path, record))
        for path, record in tree.agents.items()
        if prefix is None or path.startswith(prefix)
    ]


def infos_for(tree: SubagentTree, prefix: str | None = None) -> list[SubagentInfo]:
    return [
        SubagentInfo(
            **_summary_fields(path, record),
            parent=record.parent, active_turn=record.active_turn, last_message=record.last_message,
        )
        for path, record in tree.agents.items()
        if prefix is None or path.startswith(prefix)
    ]


def picker_for(tree: SubagentTree) -> SubagentPickerState | None:
    """The badge and picker for `tree`; None for an empty tree (show nothing)."""
    if not tree.agents:
        return None
    records = tree.agents.values()
    if any(record.status == "errored" for record in records):
        tone: Tone = "error"
    elif tree.active_count > 0:
        tone = "success"
    else:
        tone = "neutral"
    options = [
        PickerOption(label=_name(path), status=record.status, model=record.model, path=path,
                     agent_id=record.agent_id,
                     waiting_for_approval=[w.tool for w in record.awaiting_approval])
        for path, record in tree.agents.items()
    ]
    return SubagentPickerState(count=len(options), text=str(len(options)), tone=tone, options=options)
