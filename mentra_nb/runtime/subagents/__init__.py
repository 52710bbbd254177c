"""Subagents: an agent delegates work to child agents that run in parallel.

Give an agent `AgentConfig(subagents=True)` (or `SubagentLimits(...)`) and it
gets the tools spawn_agent, send_message, followup_task, list_agents,
interrupt_agent and wait_agent. Its tree of children is persisted as a
`subagents.tree` record of the root, and mail between them as a `Mailbox`
(`MAIL`, runtime/mail.py) like the team's.

A package shaped like `teams`: free functions taking the root agent (`_api`:
`list_subagents(root)`, `preview(root, path)`, …), the extension that plugs
subagents into a runtime (`_extension`), and behind them the tree and how its
changes are committed (`_registry`, `_tree`), the tools, mail and previews.
"""

from mentra_nb.runtime.subagents._api import (
    approve_call,
    deny_call,
    interrupt_subagent,
    list_subagents,
    pending_approvals,
    preview,
    subagent,
    subagent_picker,
    subagent_registry,
    watch_subagents,
)
from mentra_nb.runtime.subagents._config import SubagentConfig, SubagentLimits
from mentra_nb.runtime.subagents._errors import (
    InvalidPreviewCursor,
    SubagentCheckpointError,
    SubagentError,
    SubagentLimitReached,
    UnknownSubagent,
)
from mentra_nb.runtime.subagents._events import (
    PickerRemoved,
    PickerUpdated,
    SubagentEvent,
    SubagentNotice,
)
from mentra_nb.runtime.subagents._extension import (
    HEADLESS_REFUSAL,
    SubagentAgentExtension,
    SubagentsExtension,
)
from mentra_nb.runtime.subagents._picker import PickerOption, SubagentInfo, SubagentPickerState
from mentra_nb.runtime.subagents._preview import PREVIEW_MAX_BYTES, PreviewPage
from mentra_nb.runtime.subagents._registry import SubagentRegistry
from mentra_nb.runtime.subagents._snapshot import SubagentSnapshot, SubagentSummary
from mentra_nb.runtime.subagents._tree import (
    MAX_MESSAGE_BYTES,
    TREE,
    Mail,
    SubagentRecord,
    SubagentStatus,
    SubagentTree,
    stored_tree,
)
from mentra_nb.runtime.subagents.mail import MAIL

__all__ = [
    "HEADLESS_REFUSAL",
    "MAIL",
    "MAX_MESSAGE_BYTES",
    "PREVIEW_MAX_BYTES",
    "TREE",
    "InvalidPreviewCursor",
    "Mail",
    "PickerOption",
    "PickerRemoved",
    "PickerUpdated",
    "PreviewPage",
    "SubagentAgentExtension",
    "SubagentCheckpointError",
    "SubagentConfig",
    "SubagentError",
    "SubagentEvent",
    "SubagentInfo",
    "SubagentLimitReached",
    "SubagentLimits",
    "SubagentNotice",
    "SubagentPickerState",
    "SubagentRecord",
    "SubagentRegistry",
    "SubagentSnapshot",
    "SubagentStatus",
    "SubagentSummary",
    "SubagentTree",
    "SubagentsExtension",
    "UnknownSubagent",
    "approve_call",
    "deny_call",
    "interrupt_subagent",
    "list_subagents",
    "pending_approvals",
    "preview",
    "stored_tree",
    "subagent",
    "subagent_picker",
    "subagent_registry",
    "watch_subagents",
]
