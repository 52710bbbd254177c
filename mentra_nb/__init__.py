"""mentra-nb: durable, tool-using LLM agents inside Jupyter notebooks.

    from mentra_nb import Runtime, SqliteStore
    rt = Runtime(store=SqliteStore("analysis.mentra.sqlite"), runtime_id="analysis")
    writer = rt.spawn("writer", "test")
    reply = await writer.send("hello")
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time, __getattr__ below
    from mentra_nb.errors import (
        AgentBusy,
        AgentError,
        AgentExists,
        AgentNotFound,
        AwaitingApproval,
        BudgetExceeded,
        ConfigError,
        InvalidRequest,
        LeaseLost,
        LeaseUnavailable,
        MaxRoundsExceeded,
        MCPServerError,
        MentraError,
        ModelNotFound,
        NoResumableTurn,
        OutputValidationError,
        ProviderAuthError,
        ProviderError,
        RunHalted,
        StoreError,
        StreamError,
        ToolError,
        TransientProviderError,
        UnknownProvider,
    )
    from mentra_nb.messages import (
        ContentBlock,
        ImageBlock,
        Message,
        RedactedThinkingBlock,
        Role,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
        Usage,
    )
    from mentra_nb.providers import (
        ContentBlockDelta,
        ContentBlockStarted,
        ContentBlockStopped,
        MessageDelta,
        MessageStarted,
        MessageStopped,
        ModelInfo,
        Provider,
        ProviderEvent,
        ProviderRequest,
        RetryAttempt,
        TestProvider,
    )
    from mentra_nb.runtime import (
        APPROVAL_INTERRUPTED_RESULT,
        INTERRUPTED_TOOL_RESULT,
        Agent,
        AgentConfig,
        AgentEvent,
        AgentExtension,
        AgentSnapshot,
        AgentStatus,
        MCPServer,
        PendingApproval,
        PendingToolUse,
        Runtime,
        RuntimeExtension,
        SubagentError,
        SubagentLimits,
        SubagentsExtension,
        SubagentSummary,
        TeammateInfo,
        TeamMemberStatus,
        Tool,
        ToolContext,
        ToolDurability,
        ToolOutput,
        ToolSideEffectLevel,
        ToolSpec,
        Workspace,
        file_tools,
        shell_tool,
        tool,
    )
    from mentra_nb.runtime.teams import TeamMessage, TeamRequest
    from mentra_nb.store import (
        PersistedAgent,
        PostgresStore,
        SqliteStore,
        Store,
    )

# The public names, by the module each comes from. `import mentra_nb` imports none
# of them: each is imported on first use (PEP 562), so importing the package, or
# `%load_ext mentra_nb` before its first command, costs little more than Python.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "mentra_nb.errors": (
        "AgentBusy", "AgentError", "AgentExists", "AgentNotFound", "AwaitingApproval", "BudgetExceeded",
        "ConfigError", "InvalidRequest", "LeaseLost", "LeaseUnavailable", "MaxRoundsExceeded", "MCPServerError",
        "MentraError",
        "ModelNotFound", "NoResumableTurn", "OutputValidationError", "ProviderAuthError", "ProviderError", "RunHalted", "StoreError",
        "StreamError", "ToolError", "TransientProviderError", "UnknownProvider",
    ),
    "mentra_nb.messages": (
        "ContentBlock", "ImageBlock", "Message", "RedactedThinkingBlock", "Role", "TextBlock",
        "ThinkingBlock", "ToolResultBlock", "ToolUseBlock", "Usage",
    ),
    "mentra_nb.providers": (
        "ContentBlockDelta", "ContentBlockStarted", "ContentBlockStopped", "MessageDelta",
        "MessageStarted", "MessageStopped", "ModelInfo", "Provider", "ProviderEvent",
        "ProviderRequest", "RetryAttempt", "TestProvider",
    ),
    "mentra_nb.runtime": (
        "APPROVAL_INTERRUPTED_RESULT", "INTERRUPTED_TOOL_RESULT", "Agent", "AgentConfig",
        "AgentEvent", "AgentExtension", "AgentSnapshot", "AgentStatus", "MCPServer", "PendingApproval",
        "PendingToolUse", "Runtime", "RuntimeExtension", "SubagentError", "SubagentLimits",
        "SubagentsExtension", "SubagentSummary", "TeammateInfo", "TeamMemberStatus", "Tool",
        "ToolContext", "ToolDurability", "ToolOutput", "ToolSideEffectLevel", "ToolSpec",
        "Workspace", "file_tools", "shell_tool", "tool",
    ),
    "mentra_nb.runtime.teams": ("TeamMessage", "TeamRequest"),
    "mentra_nb.store": ("PersistedAgent", "PostgresStore", "SqliteStore", "Store"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


# Public submodules reachable as attributes (`mentra_nb.pricing.register(...)`).
_SUBMODULES = ("pricing",)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"mentra_nb.{name}")
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'mentra_nb' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})


__version__ = "0.1.0"


# What the `notebook` extra installs; a kernel may have IPython without the rest.
_NOTEBOOK_EXTRA = {"IPython", "ipykernel", "ipywidgets", "anywidget", "traitlets", "markdown_it"}


def load_ipython_extension(shell: object) -> None:
    """`%load_ext mentra_nb` (the notebook layer is imported only then)."""
    # Checked here, by name, because the notebook layer imports its widgets only
    # when a command first needs them.
    missing = sorted(name for name in _NOTEBOOK_EXTRA if importlib.util.find_spec(name) is None)
    if missing:
        raise ModuleNotFoundError(
            f"%load_ext mentra_nb needs mentra-nb's `notebook` extra, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed in this kernel's environment: "
            "run `%pip install 'mentra-nb[notebook]'`, then restart the kernel", name=missing[0])
    from mentra_nb.notebook import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: object) -> None:
    from mentra_nb.notebook import unload_ipython_extension as unload

    unload(shell)

__all__ = [
    "APPROVAL_INTERRUPTED_RESULT",
    "INTERRUPTED_TOOL_RESULT",
    "Agent",
    "AgentBusy",
    "AgentConfig",
    "AgentError",
    "AgentEvent",
    "AgentExists",
    "AgentExtension",
    "AgentNotFound",
    "AgentSnapshot",
    "AgentStatus",
    "AwaitingApproval",
    "BudgetExceeded",
    "ConfigError",
    "ContentBlock",
    "ContentBlockDelta",
    "ContentBlockStarted",
    "ContentBlockStopped",
    "ImageBlock",
    "InvalidRequest",
    "LeaseLost",
    "LeaseUnavailable",
    "MCPServer",
    "MCPServerError",
    "MaxRoundsExceeded",
    "MentraError",
    "Message",
    "MessageDelta",
    "MessageStarted",
    "MessageStopped",
    "ModelInfo",
    "ModelNotFound",
    "NoResumableTurn",
    "OutputValidationError",
    "PendingApproval",
    "PendingToolUse",
    "PersistedAgent",
    "PostgresStore",
    "Provider",
    "ProviderAuthError",
    "ProviderError",
    "ProviderEvent",
    "ProviderRequest",
    "RedactedThinkingBlock",
    "RetryAttempt",
    "Role",
    "RunHalted",
    "Runtime",
    "RuntimeExtension",
    "SqliteStore",
    "Store",
    "StoreError",
    "StreamError",
    "SubagentError",
    "SubagentLimits",
    "SubagentSummary",
    "SubagentsExtension",
    "TeamMemberStatus",
    "TeamMessage",
    "TeamRequest",
    "TeammateInfo",
    "TestProvider",
    "TextBlock",
    "ThinkingBlock",
    "Tool",
    "ToolContext",
    "ToolDurability",
    "ToolError",
    "ToolOutput",
    "ToolResultBlock",
    "ToolSideEffectLevel",
    "ToolSpec",
    "ToolUseBlock",
    "TransientProviderError",
    "UnknownProvider",
    "Usage",
    "Workspace",
    "file_tools",
    "shell_tool",
    "tool",
]
