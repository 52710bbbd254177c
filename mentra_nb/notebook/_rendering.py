"""Transcripts as markdown (for saved notebooks, nbconvert, nbval) and as safe
HTML blocks (for the live widgets, which render no markdown themselves).

The saved `text/markdown` is rendered later by whatever opens the notebook
(nbconvert's HTML export passes raw HTML through), so every string that came
from a model, a tool or a teammate goes in through `md_text` (a short string,
all escaped), `md_block` (a reply: parsed and written out again inert, see
mentra_nb/_inert_markdown.py), `md_code` (a code span no backtick can close)
or `_fence`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mentra_nb._inert_markdown import code_span, fenced, inert_markdown, inert_text
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

__all__ = ["mail_notices", "md_block", "md_cell", "md_code", "md_text", "message_items", "transcript_markdown"]

_RESULT_PREVIEW = 4000


def md_text(text: str) -> str:
    """A short string (a name, a status, a path) as literal text on one line:
    every character that could be markup escaped, line endings as spaces."""
    return inert_text(text)


def md_block(text: str, label: str = "") -> str:
    """A model's markdown (a reply, thinking, a mail's content) made inert, its
    formatting kept; `label` (our markdown) leads it. See mentra_nb/_inert_markdown.py."""
    return inert_markdown(text, label)


def md_code(text: str, *, in_table: bool = False) -> str:
    """`text` as an inline code span that no backtick inside it can close (in a
    table cell, `in_table`: no `|` inside it can end the cell either)."""
    return code_span(text, in_table=in_table)


def md_cell(text: str) -> str:
    """One table cell: one line, every markup character escaped, `|` included."""
    return inert_text(str(text))


def _fence(text: str, lang: str = "") -> str:
    return fenced(text, lang)


_TEAM_INBOX = re.compile(r"^<team-inbox>\s*(.*?)\s*</team-inbox>\s*$", re.S)
# One delivery is one envelope (runtime/subagents/_mailbox.py): its content runs
# to the last closing tag, so a closing tag a child wrote into its answer cannot
# end it early and forge an update from another agent.
_SUBAGENT_MAIL = re.compile(
    r'<subagent_update id="[^"]*" agent="([^"]*)" status="([^"]*)">(.*)</subagent_update>'
    r'|<subagent_message id="[^"]*" from="([^"]*)">(.*)</subagent_message>',
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
            protocol = f" ({md_text(str(item['protocol']))})" if item.get("protocol") else ""
            label = f"*team {md_text(kind)}{protocol} from {md_text(str(item.get('from', '?')))}*:"
            lines.append(md_block(str(item.get("content", "")), label))
        return lines
    mail = _SUBAGENT_MAIL.fullmatch(text.strip())
    if mail is None:
        return None
    if mail.group(1) is not None:
        return [md_block(mail.group(3), f"*update from {md_text(mail.group(1))} ({md_text(mail.group(2))})*:")]
    return [md_block(mail.group(5), f"*message from {md_text(mail.group(4))}*:")]


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
                parts.extend(notices if notices is not None else [md_block(block.text, f"{who}:")])
            elif isinstance(block, ThinkingBlock):
                parts.append(md_block(block.thinking, f"{who} *(thinking)*:"))
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
