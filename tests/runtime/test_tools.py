"""@tool builds schemas from typed functions and validates input before the call."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from mentra_nb import (
    AgentConfig,
    Runtime,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolSideEffectLevel,
    tool,
)
from mentra_nb.runtime.tools import ToolInputError


def test_the_schema_comes_from_type_hints_defaults_and_the_docstring():
    @tool(read_only=True, timeout=5)
    def search(query: Annotated[str, Field(description="What to look for")], limit: int = 10,
               mode: Literal["fast", "exact"] = "fast") -> list[str]:
        """Search the notes.

        Longer explanation that is not part of the description.
        """
        return []

    spec = search.spec
    assert spec.name == "search"
    assert spec.description == "Search the notes."
    assert spec.read_only and spec.side_effect_level is ToolSideEffectLevel.NONE
    assert spec.timeout == 5
    schema = spec.input_schema
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"] == {"description": "What to look for", "title": "Query", "type": "string"}
    assert schema["properties"]["limit"]["default"] == 10
    assert schema["properties"]["mode"]["enum"] == ["fast", "exact"]
    assert schema["additionalProperties"] is False


class Order(BaseModel):
    item: str
    quantity: int = Field(gt=0)


def test_a_single_pydantic_model_parameter_is_the_schema():
    @tool
    async def place(order: Order) -> str:
        """Place an order."""
        return f"{order.quantity} x {order.item}"

    assert place.spec.input_schema["required"] == ["item", "quantity"]
    assert not place.spec.read_only
    assert place.spec.side_effect_level is ToolSideEffectLevel.LOCAL


async def test_input_is_validated_before_the_call():
    calls = []

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        calls.append((a, b))
        return a + b

    assert await add.run(None, {"a": 1, "b": "2"}) == "3"  # lax coercion, as pydantic does
    with pytest.raises(ToolInputError, match="invalid input for tool 'add': b: Field required"):
        await add.run(None, {"a": 1})
    with pytest.raises(ToolInputError, match="c: Extra inputs are not permitted"):
        await add.run(None, {"a": 1, "b": 2, "c": 3})
    assert calls == [(1, 2)]


async def test_the_context_parameter_is_injected_and_not_in_the_schema():
    @tool
    async def whoami(ctx: ToolContext) -> str:
        """Who is calling."""
        return ctx.tool_use_id

    assert whoami.spec.input_schema["properties"] == {}
    agent = Runtime.empty().spawn("writer", "test")
    assert await whoami.run(ToolContext(agent, "call-7", "whoami"), {}) == "call-7"


async def test_results_are_rendered_as_text_or_kept_as_tool_output():
    @tool
    def data() -> dict:
        """Some data."""
        return {"rows": 3}

    @tool
    def refuse() -> ToolOutput:
        """Refuses politely."""
        return ToolOutput(content="not allowed here", is_error=True)

    assert await data.run(None, {}) == '{"rows": 3}'
    assert await refuse.run(None, {}) == ToolOutput(content="not allowed here", is_error=True)


def test_the_decorated_function_is_still_callable():
    @tool
    def double(x: int) -> int:
        """Double it."""
        return 2 * x

    assert double(4) == 8


def test_unusable_definitions_are_clear_errors():
    with pytest.raises(ToolError, match="name 'bad name' is not usable"):
        @tool(name="bad name")
        def f() -> None:
            """x"""

    with pytest.raises(ToolError, match=r"cannot take \*args"):
        @tool
        def g(*values: int) -> None:
            """x"""


async def test_the_test_model_is_offered_the_built_in_tools_only_when_named(tmp_path):
    """Issue 36.1: it calls every tool it is offered, and write_file would wait for an
    approval a plain script cannot give; the user's own tools are still offered."""
    @tool(read_only=True)
    def today() -> str:
        """The date."""
        return "2026-12-03"

    rt = Runtime(tools=[today], workspace=tmp_path)
    plain = rt.spawn("plain", "test")
    assert [t.spec.name for t in plain.tools()] == ["today"]
    assert (await plain.send("go")).text == "Tool results: today returned 2026-12-03"
    named = rt.spawn("named", "test", config=AgentConfig(tools=["read_file", "today"]))
    assert [t.spec.name for t in named.tools()] == ["read_file", "today"]
    scripted = rt.spawn("scripted", "anthropic:m")  # any other model gets them all
    assert "write_file" in [t.spec.name for t in scripted.tools()]
    await rt.aclose()
