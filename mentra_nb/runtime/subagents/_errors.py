"""Errors of the subagent tree, placed in mentra-nb's one exception tree.

    AgentError
    └── SubagentError              a subagent operation was refused
        ├── SubagentLimitReached   max_agents / max_concurrency / max_depth
        ├── UnknownSubagent        no such path (or no tree for that root)
        └── InvalidPreviewCursor   a preview cursor that no page handed out
    ConfigError
    └── SubagentCheckpointError    a stored tree that breaks the limits or the format

Tools turn every `SubagentError` into an error result the model reads, so the
messages are written for a model as much as for a person.
"""

from __future__ import annotations

from mentra_nb.errors import AgentError, ConfigError

__all__ = [
    "InvalidPreviewCursor",
    "SubagentCheckpointError",
    "SubagentError",
    "SubagentLimitReached",
    "UnknownSubagent",
]


class SubagentError(AgentError):
    """A subagent operation was refused; the message says why."""


class SubagentLimitReached(SubagentError):
    """A spawn would pass `SubagentLimits` (agents, concurrency or depth)."""


class UnknownSubagent(SubagentError, LookupError):
    """No subagent at that path in this tree."""


class InvalidPreviewCursor(SubagentError, ValueError):
    """A preview's `before=` cursor that does not point into that child's transcript."""


class SubagentCheckpointError(ConfigError):
    """The stored subagent tree cannot be opened with this agent's limits."""
