"""Shaping the runtime's transcript for wire protocols that are stricter than it is."""

from __future__ import annotations

from mentra_nb.messages import Message, ToolResultBlock, ToolUseBlock

__all__ = ["merge_consecutive", "tool_names"]


def merge_consecutive(messages: list[Message]) -> list[Message]:
    """Join runs of same-role messages into one message each.

    Anthropic and Gemini require user and assistant turns to alternate, but the
    runtime may commit a tool-result message and then an injected
    `<team-inbox>` message, both from the user. Within a merged user message
    tool results are moved first, as Anthropic requires them to lead.
    """
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role == message.role:
            previous = merged[-1]
            content = [*previous.content, *message.content]
            results = [b for b in content if isinstance(b, ToolResultBlock)]
            others = [b for b in content if not isinstance(b, ToolResultBlock)]
            merged[-1] = Message(role=message.role, content=[*results, *others])
        else:
            merged.append(message)
    return merged


def tool_names(messages: list[Message]) -> dict[str, str]:
    """Tool use id → tool name, for protocols whose results name the tool (Gemini)."""
    return {b.id: b.name for m in messages for b in m.content if isinstance(b, ToolUseBlock)}
