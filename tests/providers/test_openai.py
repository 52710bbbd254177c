"""The OpenAI Responses provider against a local server replaying the Responses SSE format."""

from __future__ import annotations

import json

import pytest

from mentra_nb import StreamError
from mentra_nb.messages import Message, Role, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from mentra_nb.providers.base import ProviderRequest, ToolDefinition
from mentra_nb.providers.openai import OpenAIProvider

from .conftest import FAST_RETRY, Reply, Stream, wire
from .helpers import ask, assemble, runtime_with


@pytest.fixture
def provider(server, client) -> OpenAIProvider:
    return OpenAIProvider(api_key="sk-proj-test-key-0000000000000001", base_url=server.url,
                          client=client, retry=FAST_RETRY)


def _recorded(name: str) -> list[dict]:
    return [json.loads(line[6:]) for line in wire(name).decode().splitlines() if line.startswith("data: ")]


async def test_streams_output_text_with_usage(server, provider) -> None:
    server.queue(Stream(wire("openai_text.sse")))
    message, assembler = await assemble(provider, ask("Hello", model="gpt-4.1", system="Be kind.",
                                                      max_output_tokens=300))
    assert message == Message(role=Role.ASSISTANT, content=[TextBlock(text="Hi there!")])
    assert assembler.stop_reason == "end_turn"
    # Cached input is reported apart from fresh input, as Anthropic does.
    assert assembler.usage == Usage(input_tokens=32, output_tokens=11, cache_read_tokens=5)
    sent = server.requests[0]
    assert (sent.method, sent.path) == ("POST", "/responses")
    assert sent.headers["authorization"] == "Bearer sk-proj-test-key-0000000000000001"
    assert sent.json() == {
        "model": "gpt-4.1", "stream": True, "store": False, "instructions": "Be kind.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hello"}]}],
        "max_output_tokens": 300,
    }


async def test_reasoning_items_and_parallel_function_calls_round_trip(server, client, db_path) -> None:
    provider = OpenAIProvider(api_key="k", base_url=server.url, client=client,
                              reasoning_effort="low", retry=FAST_RETRY)
    server.queue(Stream(wire("openai_reasoning_tools.sse")), Stream(wire("openai_text.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "openai:o4-mini")
        reply = await agent.send("Weather in Bogotá and Paris?")
    assert reply.text == "Hi there!"
    turn = agent.history[1].content
    assert isinstance(turn[0], ThinkingBlock)
    assert turn[0].thinking == "**Checking two cities**\n\nI will call get_weather for both."
    assert turn[1:] == [
        ToolUseBlock(id="call_pQ0bBgnEAKqmpD3yzGMHeh5K", name="get_weather",
                     input={"location": "Bogotá, Colombia"}),
        ToolUseBlock(id="call_Vm1mZ2W1uGkXhYhZ8Tj0Wd3Q", name="get_weather",
                     input={"location": "Paris, France"}),
    ]
    first, second = server.requests[0].json(), server.requests[1].json()
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"effort": "low", "summary": "auto"}
    reasoning_item = next(e["item"] for e in _recorded("openai_reasoning_tools.sse")
                          if e["type"] == "response.output_item.done" and e["item"]["type"] == "reasoning")
    assert second["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Bogotá and Paris?"}]},
        reasoning_item,  # id, summary and encrypted content exactly as received
        {"type": "function_call", "call_id": "call_pQ0bBgnEAKqmpD3yzGMHeh5K", "name": "get_weather",
         "arguments": json.dumps({"location": "Bogotá, Colombia"})},
        {"type": "function_call", "call_id": "call_Vm1mZ2W1uGkXhYhZ8Tj0Wd3Q", "name": "get_weather",
         "arguments": json.dumps({"location": "Paris, France"})},
        {"type": "function_call_output", "call_id": "call_pQ0bBgnEAKqmpD3yzGMHeh5K",
         "output": "18 degrees celsius in Bogotá, Colombia"},
        {"type": "function_call_output", "call_id": "call_Vm1mZ2W1uGkXhYhZ8Tj0Wd3Q",
         "output": "18 degrees celsius in Paris, France"},
    ]
    weather = next(t for t in second["tools"] if t["name"] == "get_weather")
    assert weather["type"] == "function" and weather["parameters"]["required"] == ["location"]
    assert (usage := agent.snapshot.usage).output_tokens == 215 + 11 and usage.input_tokens == 81 + 32


async def test_response_failed_mid_stream_is_a_stream_error(server, provider) -> None:
    server.queue(Stream(wire("openai_failed.sse")))
    with pytest.raises(StreamError, match="server_error.*failed to generate"):
        await assemble(provider, ask())


async def test_a_stream_without_response_completed_is_an_error(server, provider) -> None:
    body = wire("openai_text.sse")
    server.queue(Stream(body[: body.index(b"event: response.completed")]))
    with pytest.raises(StreamError, match="ended before response.completed"):
        await assemble(provider, ask())


def test_non_reasoning_models_do_not_ask_for_encrypted_reasoning() -> None:
    provider = OpenAIProvider(api_key="k", base_url="http://127.0.0.1:9")
    assert "include" not in provider.request_body(ask(model="gpt-4.1"))
    assert provider.request_body(ask(model="gpt-5-mini"))["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parametrize(("choice", "wire_choice"), [
    ("auto", "auto"), ("any", "required"), ("none", "none"),
    ("get_weather", {"type": "function", "name": "get_weather"}),
])
def test_tool_choice_maps_to_the_responses_api(choice, wire_choice) -> None:
    provider = OpenAIProvider(api_key="k", base_url="http://127.0.0.1:9")
    body = provider.request_body(ask(tools=[ToolDefinition(name="get_weather")], tool_choice=choice))
    assert body["tool_choice"] == wire_choice


def test_foreign_thinking_is_left_out_of_the_input() -> None:
    provider = OpenAIProvider(api_key="k", base_url="http://127.0.0.1:9")
    body = provider.request_body(ProviderRequest(model="gpt-4.1", messages=[
        Message.user("a"),
        Message.assistant(ThinkingBlock(thinking="t", signature="EqQBanthropic"), TextBlock(text="b")),
        Message.user("c"),
    ]))
    assert body["input"][1] == {"role": "assistant", "content": "b"}


async def test_lists_models(server, provider) -> None:
    server.queue(Reply(200, {"object": "list", "data": [
        {"id": "gpt-4.1", "object": "model", "created": 1744316542, "owned_by": "system"},
        {"id": "o4-mini", "object": "model", "created": 1744225351, "owned_by": "system"},
    ]}))
    assert [m.key for m in await provider.list_models()] == ["openai:gpt-4.1", "openai:o4-mini"]
    assert server.requests[0].path == "/models"
