"""Assemble one streamed assistant message from provider events."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mentra_nb._utf8 import valid_utf8_value
from mentra_nb.errors import StreamError
from mentra_nb.messages import (
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageDelta,
    MessageStarted,
    MessageStopped,
)
from mentra_nb.status import PendingToolUse

__all__ = ["MAX_TOOL_INPUT_DEPTH", "MessageAssembler", "json_depth"]

# Deeper tool arguments are refused: no tool schema nests this far, and
# serialising deeper values exhausts the interpreter's recursion limit.
MAX_TOOL_INPUT_DEPTH = 64


@dataclass
class _OpenBlock:
    kind: str
    parts: list[str] = field(default_factory=list)  # text, thinking or tool input JSON
    signature: str | None = None
    tool_use_id: str | None = None
    tool_name: str | None = None
    redacted_data: str | None = None


class MessageAssembler:
    """Feeds on provider events; `finish()` returns the assembled `Message`.

    Tool input that is not a JSON object is kept aside in `invalid_tool_inputs`
    (tool id → problem) so the turn loop can answer the model with an error
    result instead of failing the run.
    """

    def __init__(self) -> None:
        self._blocks: dict[int, _OpenBlock] = {}
        self.stopped = False
        self.stop_reason: str | None = None
        self.usage = Usage()
        self.invalid_tool_inputs: dict[str, str] = {}

    def apply(self, event: Any) -> None:
        """Apply one event."""
        if isinstance(event, MessageStarted):
            return
        if self.stopped:
            raise StreamError(f"the provider sent {event.type} after message_stopped")
        if isinstance(event, ContentBlockStarted):
            if event.index in self._blocks:
                raise StreamError(f"the provider started content block {event.index} twice")
            block = _OpenBlock(
                kind=event.kind,
                tool_use_id=event.tool_use_id,
                tool_name=event.tool_name,
                redacted_data=event.redacted_data,
            )
            self._blocks[event.index] = block
            return
        if isinstance(event, ContentBlockDelta):
            block = self._open(event.index, event.type)
            if event.kind == "signature":
                block.signature = (block.signature or "") + event.value
            else:
                expected = {"text": "text", "thinking": "thinking", "tool_input_json": "tool_use"}
                if expected[event.kind] != block.kind:
                    raise StreamError(
                        f"the provider sent a {event.kind} delta to a {block.kind} block"
                    )
                block.parts.append(event.value)
            return
        if isinstance(event, ContentBlockStopped):
            self._open(event.index, event.type)  # only checks that the block was started
            return
        if isinstance(event, MessageDelta):
            if event.stop_reason is not None:
                self.stop_reason = event.stop_reason
            if event.usage is not None:
                self.usage = event.usage
            return
        if isinstance(event, MessageStopped):
            self.stopped = True

    def stream_parts(self, index: int, kind: str) -> list[str] | None:
        """For the stream's hot path: the parts list of open text or thinking block
        `index`, to append `kind` deltas to directly. None when such a delta does
        not fit (unknown block, other kind, after the end); `apply` then says what
        is wrong with it."""
        block = self._blocks.get(index)
        if block is None or block.kind != kind or kind not in ("text", "thinking") or self.stopped:
            return None
        return block.parts

    def _open(self, index: int, what: str) -> _OpenBlock:
        block = self._blocks.get(index)
        if block is None:
            raise StreamError(f"the provider sent {what} for content block {index}, never started")
        return block

    def pending_tool_uses(self) -> list[PendingToolUse]:
        return [_pending(b) for _, b in sorted(self._blocks.items()) if b.kind == "tool_use"]

    def pending_tool_use(self, index: int) -> PendingToolUse | None:
        """Tool call block `index` with its input so far; None if it is no tool call."""
        block = self._blocks.get(index)
        return _pending(block) if block is not None and block.kind == "tool_use" else None

    def finish(self) -> Message:
        if not self.stopped:
            raise StreamError(
                "the provider's stream ended before its final event (message_stopped); "
                "the reply was cut off, so the run was rolled back"
            )
        content: list[Any] = []
        for _, block in sorted(self._blocks.items()):
            joined = "".join(block.parts)
            if block.kind == "text":
                if joined:
                    content.append(TextBlock(text=joined))
            elif block.kind == "thinking":
                content.append(ThinkingBlock(thinking=joined, signature=block.signature))
            elif block.kind == "redacted_thinking":
                content.append(RedactedThinkingBlock(data=block.redacted_data or ""))
            elif block.kind == "tool_use":
                tool_id = block.tool_use_id or ""
                content.append(
                    ToolUseBlock(id=tool_id, name=block.tool_name or "", input=self._tool_input(tool_id, joined))
                )
        return Message(role=Role.ASSISTANT, content=content)

    def _tool_input(self, tool_id: str, raw: str) -> dict[str, Any]:
        if not raw.strip():
            return {}
        if json_depth(raw) > MAX_TOOL_INPUT_DEPTH:
            self.invalid_tool_inputs[tool_id] = (
                f"the arguments nest deeper than {MAX_TOOL_INPUT_DEPTH} levels; pass a flatter "
                "JSON object"
            )
            return {}
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, RecursionError) as err:
            where = (f"{err.msg}, position {err.pos}" if isinstance(err, json.JSONDecodeError)
                     else "nested too deeply")
            self.invalid_tool_inputs[tool_id] = (
                f"the arguments were not valid JSON ({where}): {raw[:500]}"
            )
            return {}
        if not isinstance(value, dict):
            self.invalid_tool_inputs[tool_id] = (
                f"the arguments must be a JSON object, got {type(value).__name__}: {raw[:500]}"
            )
            return {}
        # "\ud800" in the JSON decodes to a lone surrogate, which cannot be stored.
        result: dict[str, Any] = valid_utf8_value(value)
        return result


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


def json_depth(raw: str) -> int:
    """The deepest bracket nesting of a JSON text (brackets inside strings are not
    counted); 0 when it cannot exceed `MAX_TOOL_INPUT_DEPTH`, which is all callers ask."""
    if raw.count("{") + raw.count("[") <= MAX_TOOL_INPUT_DEPTH:
        return 0  # cannot be deeper than the limit; skip the scan
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_JSON_STRING.sub("", raw)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _pending(block: _OpenBlock) -> PendingToolUse:
    # Joined on demand: a call's input arrives in many small deltas, and
    # concatenating per delta would copy the input once per delta.
    return PendingToolUse(id=block.tool_use_id or "", name=block.tool_name or "", input_json="".join(block.parts))
