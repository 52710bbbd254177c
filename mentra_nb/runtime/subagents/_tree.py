"""The subagent tree of one root agent, as persisted in its `subagents.tree` record.

    SubagentTree
      agents:  path → SubagentRecord   ("/root/<task>/<task>…", in path order)

The tree's mail is not part of it: each item is a `subagents.mail` record
(runtime/subagents/mail.py). Trees stored before that kept a `mailbox` list;
`legacy_mailbox` takes it out when such a tree is opened.

Committed trees are never mutated: a change copies the tree into a `TreeDraft`,
edits the draft, persists it, and only then replaces the committed tree. So a
reader on any thread (a widget, a preview) always sees a tree that is on disk.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.runtime.subagents._errors import (
    SubagentCheckpointError,
    SubagentLimitReached,
    UnknownSubagent,
)
from mentra_nb.runtime.subagents._snapshot import SubagentStatus
from mentra_nb.store.base import Store
from mentra_nb.store.records import RecordKind

__all__ = [
    "MAX_MESSAGE_BYTES",
    "ROOT_PATH",
    "TREE",
    "Mail",
    "SubagentRecord",
    "SubagentStatus",
    "SubagentTree",
    "TreeDraft",
    "WaitingCall",
    "bounded_text",
    "is_active",
    "legacy_mailbox",
    "stored_tree",
]

ROOT_PATH = "/root"
MAX_MESSAGE_BYTES = 24_000
"""The most bytes of a message between subagents; a longer last message is cut."""
ELLIPSIS = "…"


_ACTIVE: frozenset[str] = frozenset({"pending_init", "running"})
_TASK_NAME = re.compile(r"^[a-z0-9_]{1,64}$")


def is_active(status: SubagentStatus) -> bool:
    """Pending and running children count against `max_concurrency`."""
    return status in _ACTIVE


def bounded_text(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, ending with `…` when cut.

    Cuts on a character boundary, never inside a multi-byte sequence.
    """
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    room = limit - len(ELLIPSIS.encode("utf-8"))
    # errors="ignore" drops the partial character the byte cut may have split.
    return encoded[:room].decode("utf-8", errors="ignore") + ELLIPSIS


def valid_task_name(name: object) -> bool:
    return isinstance(name, str) and _TASK_NAME.match(name) is not None


class WaitingCall(BaseModel):
    """A child's tool call waiting for the user's approval."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    call: str  # the pending call's reference, `<call id>@<run>`: what approve/deny take
    tool: str


class SubagentRecord(BaseModel):
    """One child: where it sits, which agent it is, and how its work ended."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    parent: str
    agent_id: str | None = None  # None only between reserving the path and creating the agent
    depth: int
    model: str
    status: SubagentStatus = "pending_init"
    active_turn: str | None = None
    last_message: str | None = None
    # Calls of its running turn that wait for the user (its status stays running).
    awaiting_approval: list[WaitingCall] = Field(default_factory=list)

    @property
    def is_active(self) -> bool:
        return is_active(self.status)


class Mail(BaseModel):
    """An item of a tree's mail (a `subagents.mail` record): a message between agents, a finish notice
    (`kind="update"`) a child leaves for its parent, or the notice that a child's
    call waits for the user's approval (`kind="approval"`, `text` the tool's name)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    sender: str
    recipient: str
    kind: Literal["message", "update", "approval"] = "message"
    status: SubagentStatus | None = None
    text: str = ""


class SubagentTree(BaseModel):
    """A root agent's subagents as stored with the root."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    agents: dict[str, SubagentRecord] = Field(default_factory=dict)

    def draft(self) -> TreeDraft:
        # A shallow copy: records are frozen, so sharing them is safe.
        return TreeDraft(dict(self.agents))

    @property
    def active_count(self) -> int:
        return sum(1 for record in self.agents.values() if record.is_active)

    def record(self, path: str) -> SubagentRecord:
        record = self.agents.get(path)
        if record is None:
            known = ", ".join(self.agents) or "none yet"
            raise UnknownSubagent(f"unknown agent `{path}` (known agents: {known})")
        return record

    def validate_limits(self, *, max_agents: int, root_id: str) -> None:
        """A stored tree must fit the limits it is opened with (the root counts)."""
        if len(self.agents) >= max_agents:
            raise SubagentCheckpointError(
                f"subagent checkpoint exceeds safety limits: agent {root_id} has "
                f"{len(self.agents)} stored subagents, but max_agents is {max_agents} (including "
                f"root); open it with AgentConfig(subagents=SubagentLimits("
                f"max_agents={len(self.agents) + 1})) or higher"
            )


# The tree of a root agent: one record of the root's (scope: its id), written
# whole at every commit, fenced by the root's lease.
TREE = RecordKind("subagents.tree", SubagentTree)
"""The record kind of a root agent's subagent tree: one record per root."""


def stored_tree(store: Store, root_id: str) -> dict[str, Any] | None:
    """The stored tree of `root_id` as JSON (None when it has none): what was last
    committed, unvalidated, for a reader that must see a tree it cannot open."""
    found = store.read_records(TREE.name, scope=root_id)
    value = found[0].value if found else None
    return value if isinstance(value, dict) else None


def legacy_mailbox(raw: dict[str, Any]) -> tuple[dict[str, Any], list[Mail]]:
    """A stored tree split into the tree and the mail it kept inside itself before
    mail became records (an empty list for a tree stored since)."""
    tree = dict(raw)
    mailbox = tree.pop("mailbox", None) or []
    return tree, [Mail.model_validate(item) for item in mailbox]


class TreeDraft:
    """A tree being changed; `freeze()` turns it back into a `SubagentTree`. Mail
    the change sends (`outbox`) or withdraws (`withdrawn`, ids of pending mail)
    is written in the same transaction as the tree."""

    def __init__(self, agents: dict[str, SubagentRecord]) -> None:
        self.agents = agents
        self.outbox: list[Mail] = []
        self.withdrawn: list[str] = []

    @property
    def active_count(self) -> int:
        return sum(1 for record in self.agents.values() if record.is_active)

    def ensure_concurrency_available(self, max_concurrency: int) -> None:
        if self.active_count >= max_concurrency - 1:
            raise SubagentLimitReached(
                f"subagent concurrency limit {max_concurrency} (including root) reached"
            )

    def update(self, path: str, **changes: object) -> SubagentRecord:
        record = self.agents[path].model_copy(update=changes)
        self.agents[path] = record
        return record

    def freeze(self) -> SubagentTree:
        # Path order, as the picker and list_agents show it.
        return SubagentTree.model_construct(agents=dict(sorted(self.agents.items())))
