"""The agent runtime: pure asyncio, no Jupyter imports.

The public face of the package; the implementation lives in `_`-prefixed
modules. `events` and `tools` are public modules (event types, tool authoring),
and `cost`, `teams`, `subagents`, `mcp` and `cell_tools` are the extension packages (free
functions taking the agent or the runtime), registered below in the order they
act on each round. The docs' Architecture page (docs/maintainers/architecture.md)
describes the shape.
"""

from mentra_nb.runtime import batch, cell_tools, cost, mcp, subagents, teams
from mentra_nb.runtime._agent import Agent, MessageInput, OwningRuntime
from mentra_nb.runtime._approvals import APPROVAL_INTERRUPTED_RESULT
from mentra_nb.runtime._config import AgentConfig
from mentra_nb.runtime._extension_fields import ExtensionFields
from mentra_nb.runtime._extensions import (
    AgentExtension,
    RuntimeExtension,
    default_extensions,
    register_extension,
    registered_extensions,
    unregister_extension,
)
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
from mentra_nb.runtime._runtime import Runtime
from mentra_nb.runtime._services import AgentHandle, HasServices, Services
from mentra_nb.runtime._shell_tool import BoundedOutput, shell_tool
from mentra_nb.runtime._snapshot import (
    AgentSnapshot,
    AgentStatus,
    PendingApproval,
    PendingToolUse,
    SnapshotFields,
)
from mentra_nb.runtime._state import AgentState
from mentra_nb.runtime._turn_loop import STOPPED_TOOL_RESULT, StopKind
from mentra_nb.runtime.batch import BatchExtension, BatchJob
from mentra_nb.runtime.cost import (
    CostConfig,
    CostExtension,
    Spending,
    spending,
    spending_from_records,
)
from mentra_nb.runtime.events import AgentEvent
from mentra_nb.runtime.mcp import MCPConfig, MCPExtension, MCPServer
from mentra_nb.runtime.subagents import (
    SubagentConfig,
    SubagentError,
    SubagentLimits,
    SubagentsExtension,
    SubagentSnapshot,
    SubagentSummary,
)
from mentra_nb.runtime.teams import (
    Team,
    TeamConfig,
    TeamExtension,
    TeammateInfo,
    TeamMemberStatus,
    TeamSnapshot,
)
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
    "BatchExtension",
    "BatchJob",
    "BoundedOutput",
    "CostConfig",
    "CostExtension",
    "ExtensionFields",
    "FunctionTool",
    "HasServices",
    "MCPConfig",
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
    "SubagentConfig",
    "SubagentError",
    "SubagentLimits",
    "SubagentSnapshot",
    "SubagentSummary",
    "SubagentsExtension",
    "Team",
    "TeamConfig",
    "TeamExtension",
    "TeamMemberStatus",
    "TeamSnapshot",
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
    "batch",
    "cell_tools",
    "cost",
    "default_extensions",
    "file_tools",
    "known_secrets",
    "mcp",
    "register_extension",
    "registered_extensions",
    "scrub",
    "shell_tool",
    "spending",
    "spending_from_records",
    "subagents",
    "teams",
    "tool",
    "unregister_extension",
]

# The built-in extensions, in the order they act on each round: budgets first (a run
# they stop has not yet taken any mail), teams (so a team inbox precedes other
# injected messages), subagents (only for agents with `AgentConfig(subagents=...)`),
# MCP (only for agents with `AgentConfig(mcp_servers=[...])`), batch jobs (`agent.map`), cell
# tools (only in a runtime given a notebook: `Runtime(notebook=...)`).
for _builtin in (CostExtension, TeamExtension, SubagentsExtension, MCPExtension, BatchExtension,
                 cell_tools.CellsExtension):
    register_extension(_builtin)
