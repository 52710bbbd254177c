"""Transcripts as markdown (for saved notebooks, nbconvert, nbval) and as safe
HTML blocks (for the live widgets, which render no markdown themselves).

The saved `text/markdown` is rendered later by whatever opens the notebook
(nbconvert's HTML export passes raw HTML through), so every string that came
from a model, a tool or a teammate goes in through `md_text` (HTML
characters as entities, link brackets escaped: no tag, no `javascript:` link),
`md_code` (an inline code span no backtick can close) or `_fence`.
"""

from __future__ import annotations

import json
import re
from typing import Any

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
from mentra_nb.notebook._markdown_html import render_markdown

__all__ = ["mail_notices", "md_cell", "md_code", "md_text", "message_items", "transcript_markdown"]

_RESULT_PREVIEW = 4000


_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_UNSAFE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "[": "\\[", "]": "\\]"})


def md_text(text: str) -> str:
    """Model-written markdown made inert: no raw HTML, no links, formatting kept.

    Outside fenced code blocks `&`, `<` and `>` become entities (so no tag or
    autolink survives) and `[`/`]` are escaped (so no link or image does).
    Fenced code is left alone: every renderer shows it as literal text."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is None:
            opened = _FENCE_OPEN.match(line)
            if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
                fence = opened.group(1)
                out.append(line)
            else:
                out.append(line.translate(_UNSAFE))
        else:
            stripped = line.strip()
            if (not line.startswith(("    ", "\t")) and stripped and set(stripped) == {fence[0]}
                    and len(stripped) >= len(fence)):
                fence = None
            out.append(line)
    if fence is not None:
        # Close it here: left open, it would swallow (or be closed by) what we add after it.
        out.append(fence)
    return "\n".join(out)


def md_code(text: str) -> str:
    """`text` as an inline code span that no backtick inside it can close."""
    text = text.replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def md_cell(text: str) -> str:
    """One table cell: one line, every HTML and link character escaped, '|' too
    (no fence can open inside a cell, so nothing is left as is)."""
    return " ".join(str(text).split()).translate(_UNSAFE).replace("|", "\\|")


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


_TEAM_INBOX = re.compile(r"^<team-inbox>\s*(.*?)\s*</team-inbox>\s*$", re.S)
_SUBAGENT_MAIL = re.compile(
    r'<subagent_update id="[^"]*" agent="([^"]*)" status="([^"]*)">(.*?)</subagent_update>'
    r'|<subagent_message id="[^"]*" from="([^"]*)">(.*?)</subagent_message>',
    re.S,
)


def mail_notices(text: str) -> list[str] | None:
    """Team and subagent mail injected into a transcript, as short lines for
    people (no ids, no timestamps: saved outputs stay stable); None for other text."""
    inbox = _TEAM_INBOX.match(text)
    if inbox is not None:
        try:
            items = json.loads(inbox.group(1))
        except ValueError:
            return None
        lines = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            item = _with_verdict(item)
            kind = str(item.get("type", "message")).replace("_", " ")
            protocol = f" ({item['protocol']})" if item.get("protocol") else ""
            lines.append(f"*team {md_text(kind)}{md_text(protocol)} from {md_text(str(item.get('from', '?')))}*: "
                         f"{md_text(str(item.get('content', '')))}")
        return lines
    found = list(_SUBAGENT_MAIL.finditer(text))
    if not found or _SUBAGENT_MAIL.sub("", text).strip():
        return None
    return [
        f"*update from {md_text(m.group(1))} ({md_text(m.group(2))})*: {md_text(m.group(3))}"
        if m.group(1) is not None
        else f"*message from {md_text(m.group(4))}*: {md_text(m.group(5))}"
        for m in found
    ]


def _with_verdict(item: dict[str, Any]) -> dict[str, Any]:
    """A protocol response says how it was answered ("approved", "rejected"), then
    its reason if it has one: a reason is optional, and the model reads `approve`."""
    if item.get("type") != "response" or not isinstance(item.get("approve"), bool):
        return item
    verdict = "approved" if item["approve"] else "rejected"
    reason = str(item.get("content") or "").strip()
    return {**item, "content": f"{verdict}: {reason}" if reason else verdict}


def transcript_markdown(messages: list[Message]) -> str:
    """The transcript as markdown: what a reader of the saved notebook sees."""
    parts: list[str] = []
    for message in messages:
        who = "**user**" if message.role is Role.USER else "**assistant**"
        for block in message.content:
            if isinstance(block, TextBlock):
                notices = mail_notices(block.text)
                parts.extend(notices if notices is not None else [f"{who}: {md_text(block.text)}"])
            elif isinstance(block, ThinkingBlock):
                parts.append(f"{who} *(thinking)*: {md_text(block.thinking)}")
            elif isinstance(block, RedactedThinkingBlock):
                parts.append(f"{who} *(redacted thinking)*")
            elif isinstance(block, ToolUseBlock):
                parts.append(f"{who} calls {md_code(block.name)}\n\n{_fence(json.dumps(block.input, indent=2), 'json')}")
            elif isinstance(block, ToolResultBlock):
                label = "error" if block.is_error else "result"
                parts.append(f"tool {label}:\n\n{_fence(block.content[:_RESULT_PREVIEW])}")
                parts.extend(f"*\\[image {md_text(image.media_type)}\\]*" for image in block.images)
            elif isinstance(block, ImageBlock):
                parts.append(f"{who}: *\\[image {md_text(block.media_type)}\\]*")
        if message.truncated:
            parts.append("*… stopped here (Stop cut this reply)*")
    return "\n\n".join(parts)


def message_items(message: Message, index: int) -> list[dict[str, Any]]:
    """One display item per block, with HTML ready for the widget."""
    items: list[dict[str, Any]] = []
    for block in message.content:
        base = {"index": index, "role": message.role.value}
        if isinstance(block, TextBlock):
            notices = mail_notices(block.text)
            if notices is not None:
                items.append({**base, "kind": "notice", "html": render_markdown("\n\n".join(notices))})
            else:
                items.append({**base, "kind": "text", "html": render_markdown(block.text)})
        elif isinstance(block, ThinkingBlock):
            items.append({**base, "kind": "thinking", "html": render_markdown(block.thinking)})
        elif isinstance(block, RedactedThinkingBlock):
            items.append({**base, "kind": "thinking", "html": "<p><em>redacted</em></p>"})
        elif isinstance(block, ToolUseBlock):
            items.append({**base, "kind": "tool_use", "id": block.id, "name": block.name,
                          "input": json.dumps(block.input, indent=2)})
        elif isinstance(block, ToolResultBlock):
            items.append({**base, "kind": "tool_result", "id": block.tool_use_id,
                          "content": block.content[:_RESULT_PREVIEW],
                          "truncated": len(block.content) > _RESULT_PREVIEW, "is_error": block.is_error,
                          **({"images": [{"media_type": i.media_type, "data": i.data} for i in block.images]}
                             if block.images else {})})
        elif isinstance(block, ImageBlock):
            items.append({**base, "kind": "image", "media_type": block.media_type, "data": block.data})
    if message.truncated:  # cut by Stop: the view marks where
        for item in reversed(items):
            if item["kind"] == "text":
                item["truncated"] = True
                break
    return items
