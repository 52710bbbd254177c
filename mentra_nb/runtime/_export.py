"""An agent's transcript written out for people and programs: Markdown, JSON or
a notebook (`agent.export(...)`).

Everything committed is included (text, thinking, tool calls with their input,
tool results, errors marked), and nothing else: no config, no key (the store
never holds one, and tool results were scrubbed of secrets before they were
stored). Images are named, not embedded, in Markdown and notebooks; JSON keeps
every message as stored.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Literal

from mentra_nb._inert_markdown import code_span, fenced, inert_markdown, inert_text
from mentra_nb.errors import ConfigError
from mentra_nb.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = ["EXPORT_FORMATS", "ExportFormat", "ExportHeader", "export_transcript"]

ExportFormat = Literal["markdown", "json", "ipynb"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("markdown", "json", "ipynb")


class ExportHeader:
    """Who the transcript belongs to, for the export's title and metadata
    (`forked_from`: the name of the agent it was forked from)."""

    def __init__(self, *, name: str, agent_id: str, model: str,
                 forked_from: str | None = None, fork_index: int | None = None) -> None:
        self.name, self.agent_id, self.model = name, agent_id, model
        self.forked_from, self.fork_index = forked_from, fork_index

    def as_json(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"agent": self.name, "id": self.agent_id, "model": self.model}
        if self.forked_from is not None:
            meta |= {"forked_from": self.forked_from, "fork_index": self.fork_index}
        return meta

    def title(self) -> str:
        fork = (f" · forked from {inert_text(self.forked_from)} at message {self.fork_index}"
                if self.forked_from is not None else "")
        return f"# {inert_text(self.name)}\n\n{code_span(self.model)}{fork}"


def export_transcript(header: ExportHeader, messages: list[Message], format: str = "markdown",
                      path: str | os.PathLike[str] | None = None) -> str:
    """The transcript as `format` text; also written to `path` (UTF-8) when given."""
    if format not in EXPORT_FORMATS:
        raise ConfigError(f"unknown export format {format!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    if format == "json":
        text = json.dumps({**header.as_json(), "exported_at": time.time(),
                           "messages": [m.model_dump(mode="json") for m in messages]}, indent=1)
    elif format == "ipynb":
        text = json.dumps(_notebook(header, messages), indent=1)
    else:
        text = "\n\n".join([header.title(), *(_markdown(i, m) for i, m in enumerate(messages))]) + "\n"
    if path is not None:
        target = Path(path).expanduser()
        if target.parent and not target.parent.is_dir():
            raise ConfigError(f"cannot export to {target}: the folder {target.parent} does not exist")
        target.write_text(text, encoding="utf-8")
    return text


def _markdown(index: int, message: Message) -> str:
    # Model-written text goes in inert (mentra_nb/_inert_markdown.py): a notebook
    # export is rendered by nbconvert, which passes raw HTML through.
    parts = [f"## {index} · {message.role.value}"]
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(inert_markdown(block.text))
        elif isinstance(block, ThinkingBlock):
            thinking = inert_markdown(block.thinking, "*thinking:*")
            parts.append("\n".join(f"> {line}" if line else ">" for line in thinking.split("\n")))
        elif isinstance(block, RedactedThinkingBlock):
            parts.append("> *thinking (redacted by the provider)*")
        elif isinstance(block, ToolUseBlock):
            parts.append(f"**tool call** {code_span(block.name)} ({code_span(block.id)})\n\n"
                         f"{fenced(json.dumps(block.input, indent=1, ensure_ascii=False), 'json')}")
        elif isinstance(block, ToolResultBlock):
            label = "tool error" if block.is_error else "tool result"
            parts.append(f"**{label}** ({code_span(block.tool_use_id)})\n\n{fenced(block.content)}")
        elif isinstance(block, ImageBlock):
            parts.append(f"*\\[image: {inert_text(block.media_type)}\\]*")
    return "\n\n".join(parts)


def _notebook(header: ExportHeader, messages: list[Message]) -> dict[str, Any]:
    cells = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": header.title()}]
    cells += [
        {"cell_type": "markdown", "id": f"message-{i}", "metadata": {"mentra": {"role": m.role.value}},
         "source": _markdown(i, m)}
        for i, m in enumerate(messages)
    ]
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"mentra": header.as_json()},
            "cells": cells}
