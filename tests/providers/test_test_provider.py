"""The offline `test` provider and model-id resolution."""

from __future__ import annotations

import pytest

from mentra_nb import ConfigError, Message, ModelInfo, Runtime, UnknownProvider, tool
from mentra_nb.providers import ProviderRegistry, ProviderRequest, TestProvider, ToolDefinition
from mentra_nb.providers.test import example_for_schema


async def _events(provider, request):
    return [e async for e in provider.stream(request)]


async def test_it_answers_text_deterministically_in_streamed_chunks():
    request = ProviderRequest(model="default", messages=[Message.user("the quick brown fox")])
    first = await _events(TestProvider(), request)
    second = await _events(TestProvider(), request)
    assert first == second
    deltas = [e.value for e in first if e.type == "content_block_delta"]
    assert "".join(deltas) == "You said: the quick brown fox"
    assert len(deltas) == 6
    assert first[-1].type == "message_stopped"


async def test_with_tools_it_calls_each_once_then_answers_with_the_results():
    @tool
    def scale(factor: float, label: str, flags: list[int] | None = None) -> str:
        """Scale."""
        return f"{label}x{factor}"

    @tool(read_only=True)
    def today() -> str:
        """The date."""
        return "2026-11-30"

    rt = Runtime.empty(tools=[scale, today])
    agent = rt.spawn("w", "test")
    reply = await agent.send("go")
    calls = agent.history[1].tool_uses
    assert [(c.name, c.input) for c in calls] == [("scale", {"factor": 0.0, "label": "a"}), ("today", {})]
    assert all(not r.is_error for r in agent.history[2].tool_results)
    assert reply.text == "Tool results: scale returned ax0.0; today returned 2026-11-30"
    await rt.aclose()


def test_schema_examples_respect_refs_enums_and_minimums():
    schema = {
        "type": "object",
        "required": ["kind", "n", "child", "tags"],
        "properties": {
            "kind": {"enum": ["b", "c"]},
            "n": {"type": "integer", "minimum": 3},
            "child": {"$ref": "#/$defs/Child"},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 2}, "minItems": 1},
            "optional": {"type": "string"},
        },
        "$defs": {"Child": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}},
    }
    assert example_for_schema(schema, schema) == {"kind": "b", "n": 3, "child": {"ok": False}, "tags": ["aa"]}


def test_model_ids_split_on_the_first_colon():
    assert ModelInfo.parse("ollama:llama3:8b") == ModelInfo(provider="ollama", id="llama3:8b")
    assert ModelInfo.parse("test").key == "test:default"
    with pytest.raises(ConfigError, match="provider:model"):
        ModelInfo.parse("  ")


def test_an_unknown_provider_suggests_the_closest_known_one():
    registry = ProviderRegistry([TestProvider(name="anthropic")])
    with pytest.raises(UnknownProvider) as info:
        registry.get("antropic")
    assert str(info.value).startswith("unknown provider 'antropic'; did you mean 'anthropic'? Known: ")
    assert "test" in str(info.value)


def test_explicit_providers_win_over_built_ins():
    mine = TestProvider(chunk_delay=0.5)
    assert ProviderRegistry([mine]).get("test") is mine
    assert isinstance(ProviderRegistry().get("test"), TestProvider)


def test_tool_definitions_default_to_an_empty_object_schema():
    assert ToolDefinition(name="x").input_schema == {"type": "object", "properties": {}}


async def test_closing_a_runtime_leaves_providers_passed_in_open():
    closed = []

    class Closable(TestProvider):
        async def aclose(self):
            closed.append(self.name)

    mine = Closable(name="mine")
    rt = Runtime.empty(providers=[mine])
    rt.providers.get("test")
    await rt.aclose()
    assert closed == []
