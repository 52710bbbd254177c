"""Typed answers on the wire: strict schemas for OpenAI, the answer as a tool elsewhere.

`ProviderRequest.output` asks for a final answer that is JSON of a given
schema. OpenAI (Responses and Chat Completions) and Gemini take the schema as a
response format; Anthropic, and Gemini when tools are offered too (its API
refuses function calling together with a JSON response type), are given a tool
`OUTPUT_TOOL` whose input schema is the answer's and are made to call a tool.
`answer_from_output_tool` turns that call back into a text block holding the
JSON, so the runtime sees the same kind of answer from every provider and the
transcript never holds a tool call that no tool answers.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

from mentra_nb.providers.base import OutputFormat, ProviderRequest, ToolDefinition
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    MessageDelta,
    ProviderEvent,
)

__all__ = ["OUTPUT_TOOL", "answer_from_output_tool", "json_schema_format", "strict_schema",
           "with_output_tool"]

OUTPUT_TOOL = "final_answer"

# What OpenAI's strict mode accepts besides structure, per its Structured Outputs guide.
_STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4",
                             "ipv6", "uuid"})
_STRICT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items",
                              "anyOf", "enum", "const", "$ref", "$defs", "description", "title",
                              "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
                              "exclusiveMaximum", "multipleOf", "minItems", "maxItems"})
# Constraints strict mode refuses but the model can still honour when told: they
# move into the description (pydantic checks them on our side either way).
_HINTED_KEYWORDS = frozenset({"minLength", "maxLength", "uniqueItems", "minProperties",
                              "maxProperties", "examples"})
_DROPPED_KEYWORDS = frozenset({"default", "discriminator"})


class _NotStrict(Exception):
    """The schema uses something strict mode cannot express."""


def json_schema_format(output: OutputFormat) -> dict[str, Any]:
    """OpenAI's `json_schema` response format (Responses `text.format` holds it flat,
    Chat Completions under `response_format.json_schema`): strict when the schema
    can be, else the schema as it is, not strict."""
    strict = strict_schema(output.json_schema)
    spec: dict[str, Any] = {"name": output.name,
                            "schema": strict if strict is not None else output.json_schema,
                            "strict": strict is not None}
    if output.description:
        spec["description"] = output.description
    return spec


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """`schema` as OpenAI's strict mode wants it, or None when it cannot be made so.

    Strict mode needs `additionalProperties: false` on every object and every
    property in `required`. An optional field therefore becomes one the model
    must always fill: a nullable field (`x: int | None = None`) is answered
    with null, a field with a default (`x: int = 5`) with a value of its own
    choosing, which pydantic validates like any other. Defaults are dropped
    (strict mode refuses them); length and uniqueness constraints move into
    the description. Open-ended objects (`dict[str, X]`), tuples and `allOf`
    cannot be strict: the caller then sends the schema as it is, not strict.
    """
    try:
        strict: dict[str, Any] = _strict(copy.deepcopy(schema))
    except _NotStrict:
        return None
    return strict


def _strict(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return {"$ref": node["$ref"]}  # strict mode refuses keywords beside a reference
    unknown = set(node) - _STRICT_KEYWORDS - _HINTED_KEYWORDS - _DROPPED_KEYWORDS - {"oneOf"}
    if unknown:
        raise _NotStrict(", ".join(sorted(unknown)))
    out: dict[str, Any] = {}
    hints = []
    for key, value in node.items():
        if key in _DROPPED_KEYWORDS:
            continue
        if key in _HINTED_KEYWORDS:
            hints.append(f"{key}: {value}")
        elif key in ("properties", "$defs"):
            out[key] = {name: _strict(sub) for name, sub in value.items()}
        elif key in ("anyOf", "oneOf"):
            # A discriminated union's members exclude each other already.
            out["anyOf"] = [_strict(sub) for sub in value]
        elif key == "items":
            if not isinstance(value, dict):
                raise _NotStrict("items")
            out[key] = _strict(value)
        elif key == "format":
            if value in _STRICT_FORMATS:
                out[key] = value
        elif key == "additionalProperties":
            if value is not False:
                raise _NotStrict("additionalProperties")
        else:
            out[key] = value
    if hints:
        out["description"] = "; ".join([*(x for x in [out.get("description")] if x), *hints])
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return out


def with_output_tool(request: ProviderRequest, *, force: bool = True) -> ProviderRequest:
    """`request` with its answer offered as the tool `OUTPUT_TOOL`.

    With `force` the model must call a tool: the output tool itself when it is
    the only one, any tool otherwise (so it can still use the others first).
    Without (Anthropic with extended thinking, which refuses forced tool use)
    it may also answer in text, which is validated all the same."""
    output = request.output
    assert output is not None
    tool = output_tool(output)
    choice = request.tool_choice
    if force:
        choice = OUTPUT_TOOL if not request.tools or request.tool_choice == "none" else "any"
    tools = [tool] if request.tool_choice == "none" else [*request.tools, tool]
    return request.model_copy(update={"tools": tools, "tool_choice": choice})


def output_tool(output: OutputFormat) -> ToolDefinition:
    what = f" ({output.description.strip()})" if output.description.strip() else ""
    return ToolDefinition(
        name=OUTPUT_TOOL,
        description=f"Give your final answer, a {output.name}{what}, as this tool's input. Call it "
                    "once you have everything you need, instead of answering in text.",
        input_schema=output.json_schema,
    )


async def answer_from_output_tool(events: AsyncIterator[ProviderEvent]) -> AsyncIterator[ProviderEvent]:
    """The stream with each call of `OUTPUT_TOOL` turned into a text block holding its input."""
    answers: set[int] = set()
    other_calls = False
    try:
        async for event in events:
            if isinstance(event, ContentBlockStarted) and event.kind == "tool_use":
                if event.tool_name == OUTPUT_TOOL:
                    answers.add(event.index)
                    yield ContentBlockStarted.text(event.index)
                    continue
                other_calls = True
            elif isinstance(event, ContentBlockDelta) and event.index in answers:
                if event.kind == "tool_input_json":
                    yield ContentBlockDelta.text(event.index, event.value)
                continue
            elif (isinstance(event, MessageDelta) and answers and not other_calls
                  and event.stop_reason == "tool_use"):
                event = event.model_copy(update={"stop_reason": "end_turn"})
            yield event
    finally:
        closer = getattr(events, "aclose", None)
        if closer is not None:
            await closer()
