"""Transcripts as markdown (for saved notebooks, nbconvert, nbval) and as safe
HTML blocks (for the live widgets, which render no markdown themselves)."""

from __future__ import annotations

import json
from typing import Any

from markdown_it import MarkdownIt

from mentra_nb.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = ["message_items", "transcript_markdown"]

# html=False: raw HTML in a model's answer is shown as text, never injected.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_RESULT_PREVIEW = 4000


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def transcript_markdown(messages: list[Message]) -> str:
    """The transcript as markdown: what a reader of the saved notebook sees."""
    parts: list[str] = []
    for message in messages:
        who = "**user**" if message.role is Role.USER else "**assistant**"
        for block in message.content:
            if isinstance(block, TextBlock):
                parts.append(f"{who}: {block.text}")
            elif isinstance(block, ThinkingBlock):
                parts.append(f"{who} *(thinking)*: {block.thinking}")
            elif isinstance(block, RedactedThinkingBlock):
                parts.append(f"{who} *(redacted thinking)*")
            elif isinstance(block, ToolUseBlock):
                parts.append(f"{who} calls `{block.name}`\n\n{_fence(json.dumps(block.input, indent=2), 'json')}")
            elif isinstance(block, ToolResultBlock):
                label = "error" if block.is_error else "result"
                parts.append(f"tool {label}:\n\n{_fence(block.content[:_RESULT_PREVIEW])}")
            elif isinstance(block, ImageBlock):
                parts.append(f"{who}: *[image {block.media_type}]*")
    return "\n\n".join(parts)


def message_items(message: Message, index: int) -> list[dict[str, Any]]:
    """One display item per block, with HTML ready for the widget."""
    items: list[dict[str, Any]] = []
    for block in message.content:
        base = {"index": index, "role": message.role.value}
        if isinstance(block, TextBlock):
            items.append({**base, "kind": "text", "html": _markdown.render(block.text)})
        elif isinstance(block, ThinkingBlock):
            items.append({**base, "kind": "thinking", "html": _markdown.render(block.thinking)})
        elif isinstance(block, RedactedThinkingBlock):
            items.append({**base, "kind": "thinking", "html": "<p><em>redacted</em></p>"})
        elif isinstance(block, ToolUseBlock):
            items.append({**base, "kind": "tool_use", "id": block.id, "name": block.name,
                          "input": json.dumps(block.input, indent=2)})
        elif isinstance(block, ToolResultBlock):
            items.append({**base, "kind": "tool_result", "id": block.tool_use_id,
                          "content": block.content[:_RESULT_PREVIEW],
                          "truncated": len(block.content) > _RESULT_PREVIEW, "is_error": block.is_error})
        elif isinstance(block, ImageBlock):
            items.append({**base, "kind": "image", "media_type": block.media_type, "data": block.data})
    return items
