"""The agent runtime: pure asyncio, no Jupyter imports."""

from mentra_nb.runtime._agent import Agent
from mentra_nb.runtime._approvals import APPROVAL_INTERRUPTED_RESULT, PendingApproval
from mentra_nb.runtime._config import AgentConfig, SubagentLimits
from mentra_nb.runtime._extensions import AgentExtension, RuntimeExtension
from mentra_nb.runtime._file_tools import Workspace, file_tools
from mentra_nb.runtime._recovery import INTERRUPTED_TOOL_RESULT
from mentra_nb.runtime._runtime import Runtime
from mentra_nb.runtime._shell_tool import shell_tool
from mentra_nb.runtime._snapshot import AgentSnapshot, AgentStatus, PendingToolUse
from mentra_nb.runtime.events import AgentEvent
from mentra_nb.runtime.subagents import SubagentError, SubagentsExtension, SubagentSummary
from mentra_nb.runtime.teams import Team, TeamExtension
from mentra_nb.runtime.teams._members import TeammateInfo, TeamMemberStatus
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
    "APPROVAL_INTERRUPTED_RESULT",
    "INTERRUPTED_TOOL_RESULT",
    "Agent",
    "AgentConfig",
    "AgentEvent",
    "AgentExtension",
    "AgentSnapshot",
    "AgentStatus",
    "FunctionTool",
    "PendingApproval",
    "PendingToolUse",
    "Runtime",
    "RuntimeExtension",
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
    "file_tools",
    "shell_tool",
    "tool",
]
