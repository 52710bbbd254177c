"""The offline `test` provider: deterministic, streaming, and tool-aware.

With tools offered and a fresh user message, it calls every tool once with
arguments built from the tool's JSON schema; once the tool results are back it
answers with a summary of them. Without tools it answers the user's text. Asked
for a typed answer (`agent.send(..., output=Model)`), its final answer is JSON
built from the schema instead: every field, each with the smallest valid value. The
same request always yields the same events, so tutorials and tests can check
outputs exactly. Nothing leaves the process.

    rt.spawn("writer", "test")            # default model
    TestProvider(chunk_delay=0.02)        # slower, to watch it stream
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from mentra_nb.messages import Message, Role, TextBlock, ToolResultBlock, Usage
from mentra_nb.providers.base import ModelInfo, ProviderRequest, ToolDefinition
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    ProviderEvent,
)

__all__ = ["TestProvider", "example_for_schema"]


class TestProvider:
    """Offline provider named `test`. `chunk_size` words are streamed per delta."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, *, name: str = "test", chunk_delay: float = 0.0, chunk_size: int = 1) -> None:
        self.name = name
        self.chunk_delay = chunk_delay
        self.chunk_size = max(1, chunk_size)
        self._calls = 0

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id="default", provider=self.name, display_name="Deterministic test model")]

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self._calls += 1
        last = request.messages[-1] if request.messages else None
        results = last.tool_results if last is not None and last.role is Role.USER else []
        yield MessageStarted(id=f"test-msg-{self._calls}", model=request.model)
        if request.tools and last is not None and not results and request.tool_choice != "none":
            for index, tool in enumerate(request.tools):
                call_id = f"call_{self._calls}_{index}"
                yield ContentBlockStarted.tool_use(index, call_id, tool.name)
                yield ContentBlockDelta.tool_input_json(index, json.dumps(_arguments(tool)))
                yield ContentBlockStopped(index=index)
            stop_reason = "tool_use"
            text = ""
        else:
            if request.output is not None:
                schema = request.output.json_schema
                text = json.dumps(example_for_schema(schema, schema, every_property=True))
            else:
                text = _answer(request.messages, results)
            yield ContentBlockStarted.text(0)
            words = text.split(" ")
            for start in range(0, len(words), self.chunk_size):
                chunk = " ".join(words[start : start + self.chunk_size])
                if start + self.chunk_size < len(words):
                    chunk += " "
                if self.chunk_delay:
                    await asyncio.sleep(self.chunk_delay)
                yield ContentBlockDelta.text(0, chunk)
            yield ContentBlockStopped(index=0)
            stop_reason = "end_turn"
        prompt_chars = sum(len(m.model_dump_json()) for m in request.messages)
        usage = Usage(input_tokens=prompt_chars // 4, output_tokens=max(1, len(text) // 4))
        yield MessageDelta(stop_reason=stop_reason, usage=usage)
        yield MessageStopped()


def _answer(messages: list[Message], results: list[ToolResultBlock]) -> str:
    if results:
        names = {u.id: u.name for m in messages for u in m.tool_uses}
        parts = [
            f"{names.get(r.tool_use_id, r.tool_use_id)} {'failed' if r.is_error else 'returned'} {r.content}"
            for r in results
        ]
        return "Tool results: " + "; ".join(parts)
    for message in reversed(messages):
        if message.role is Role.USER:
            said = " ".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
            if said:
                return f"You said: {said}"
    return "Hello from the test model."


def _arguments(tool: ToolDefinition) -> dict[str, Any]:
    value = example_for_schema(tool.input_schema, tool.input_schema)
    return value if isinstance(value, dict) else {}


def example_for_schema(schema: Any, root: dict[str, Any], *, every_property: bool = False) -> Any:
    """A small value that validates against `schema` (required fields only, or
    `every_property`)."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return example_for_schema(target, root, every_property=every_property)
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("examples"):
        return schema["examples"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return example_for_schema(options[0], root, every_property=every_property)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties", {})
        names = list(props) if every_property else schema.get("required", [])
        return {name: example_for_schema(props.get(name, {}), root, every_property=every_property)
                for name in names}
    if kind == "array":
        count = schema.get("minItems", 0)
        return [example_for_schema(schema.get("items", {}), root, every_property=every_property)
                for _ in range(count)]
    if kind == "string":
        return "a" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return int(low) if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    return None
