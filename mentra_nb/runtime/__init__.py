"""The agent runtime: pure asyncio, no Jupyter imports.

The public face of the package; the implementation lives in `_`-prefixed
modules. `events` and `tools` are public modules (event types, tool authoring),
and `cost`, `teams`, `subagents` and `mcp` are the extension packages (free
functions taking the agent or the runtime). The docs' Architecture page
(docs/maintainers/architecture.md) describes the shape.
"""

from mentra_nb.runtime import cost, mcp, subagents, teams
from mentra_nb.runtime._agent import Agent, MessageInput, OwningRuntime
from mentra_nb.runtime._approvals import APPROVAL_INTERRUPTED_RESULT
from mentra_nb.runtime._config import AgentConfig, SubagentLimits
from mentra_nb.runtime._extensions import AgentExtension, RuntimeExtension
from mentra_nb.runtime._file_tools import (
    FILE_TOOL_NAMES,
    SECRET_FILES,
    Workspace,
    WorkspaceRefusal,
    file_tools,
)
from mentra_nb.runtime._names import AGENT_NAME_PATTERN, AGENT_NAME_RULE, agent_name_problem
from mentra_nb.runtime._output import RunResult
from mentra_nb.runtime._recovery import INTERRUPTED_TOOL_RESULT
from mentra_nb.runtime._redaction import known_secrets, scrub
from mentra_nb.runtime._runtime import Runtime, default_extensions
from mentra_nb.runtime._services import AgentHandle, HasServices, Services
from mentra_nb.runtime._shell_tool import BoundedOutput, shell_tool
from mentra_nb.runtime._snapshot import (
    AgentSnapshot,
    AgentStatus,
    PendingApproval,
    PendingToolUse,
    SnapshotFields,
    SubagentSummary,
    TeammateInfo,
    TeamMemberStatus,
)
from mentra_nb.runtime._state import AgentState
from mentra_nb.runtime._turn_loop import STOPPED_TOOL_RESULT, StopKind
from mentra_nb.runtime.cost import CostExtension, Spending, spending, spending_from_records
from mentra_nb.runtime.events import AgentEvent
from mentra_nb.runtime.mcp import MCPExtension, MCPServer
from mentra_nb.runtime.subagents import SubagentError, SubagentsExtension
from mentra_nb.runtime.teams import Team, TeamExtension
from mentra_nb.runtime.tools import (
    FunctionTool,
    Tool,
    ToolContext,
    ToolDurability,
    ToolOutput,
    ToolSideEffectLevel,
    ToolSpec,
    tool,
)

__all__ = [
    "AGENT_NAME_PATTERN",
    "AGENT_NAME_RULE",
    "APPROVAL_INTERRUPTED_RESULT",
    "FILE_TOOL_NAMES",
    "INTERRUPTED_TOOL_RESULT",
    "SECRET_FILES",
    "STOPPED_TOOL_RESULT",
    "Agent",
    "AgentConfig",
    "AgentEvent",
    "AgentExtension",
    "AgentHandle",
    "AgentSnapshot",
    "AgentState",
    "AgentStatus",
    "BoundedOutput",
    "CostExtension",
    "FunctionTool",
    "HasServices",
    "MCPExtension",
    "MCPServer",
    "MessageInput",
    "OwningRuntime",
    "PendingApproval",
    "PendingToolUse",
    "RunResult",
    "Runtime",
    "RuntimeExtension",
    "Services",
    "SnapshotFields",
    "Spending",
    "StopKind",
    "SubagentError",
    "SubagentLimits",
    "SubagentSummary",
    "SubagentsExtension",
    "Team",
    "TeamExtension",
    "TeamMemberStatus",
    "TeammateInfo",
    "Tool",
    "ToolContext",
    "ToolDurability",
    "ToolOutput",
    "ToolSideEffectLevel",
    "ToolSpec",
    "Workspace",
    "WorkspaceRefusal",
    "agent_name_problem",
    "cost",
    "default_extensions",
    "file_tools",
    "known_secrets",
    "mcp",
    "scrub",
    "shell_tool",
    "spending",
    "spending_from_records",
    "subagents",
    "teams",
    "tool",
]
