"""The Anthropic provider against a local server replaying the Messages API's SSE format."""

from __future__ import annotations

import json

import pytest

from mentra_nb import AgentConfig, ModelNotFound, StreamError
from mentra_nb.messages import (
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.base import ProviderRequest, ToolDefinition

from .conftest import FAST_RETRY, Reply, Stream, wire
from .helpers import ask, assemble, runtime_with


@pytest.fixture
def provider(server, client) -> AnthropicProvider:
    return AnthropicProvider(api_key="sk-ant-api03-test-key-0001", base_url=server.url,
                             client=client, retry=FAST_RETRY)


async def test_streams_text_and_reports_usage_and_stop_reason(server, provider) -> None:
    server.queue(Stream(wire("anthropic_text.sse")))
    message, assembler = await assemble(provider, ask("Hello", system="Be brief.", temperature=0.2))
    assert message == Message(role=Role.ASSISTANT, content=[TextBlock(text="Hello!")])
    assert assembler.stop_reason == "end_turn"
    assert assembler.usage == Usage(input_tokens=25, output_tokens=15)
    sent = server.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == "sk-ant-api03-test-key-0001"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.json() == {
        "model": "test-model", "max_tokens": 8192, "stream": True, "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        "temperature": 0.2,
    }


async def test_tool_calls_run_and_their_results_go_back_in_the_next_request(
    server, provider, db_path
) -> None:
    server.queue(Stream(wire("anthropic_tool_use.sse")), Stream(wire("anthropic_text.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5", AgentConfig(system="You check weather."))
        reply = await agent.send("Weather and time in SF?")
    assert reply.text == "Hello!"
    calls = agent.history[1]
    assert calls.content == [
        TextBlock(text="Okay, let's check the weather for San Francisco, CA:"),
        ToolUseBlock(id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather",
                     input={"location": "San Francisco, CA", "unit": "fahrenheit"}),
        ToolUseBlock(id="toolu_01JtD2b7UpzL1B1e6YhUVaY8", name="get_time",
                     input={"timezone": "America/Los_Angeles"}),
    ]
    # Cache tokens from message_start survive the cumulative message_delta, and each
    # call is priced at the table's claude-sonnet-4-5 row ($3 in, $15 out, $0.30
    # cache read, $3.75 cache write per million tokens).
    usage = agent.snapshot.usage
    assert usage.model_dump(exclude={"cost_usd"}) == Usage(
        input_tokens=472 + 25, output_tokens=89 + 15, cache_read_tokens=2048,
        cache_creation_tokens=100).model_dump(exclude={"cost_usd"})
    first = (472 * 3 + 89 * 15 + 2048 * 0.30 + 100 * 3.75) / 1e6
    second_call = (25 * 3 + 15 * 15) / 1e6
    assert usage.cost_usd == pytest.approx(first + second_call)
    second = server.requests[1].json()
    # Prompt caching is on by default: breakpoints on the last tool, the system
    # prompt and the last block of the last message, nowhere else.
    assert second["system"] == [{"type": "text", "text": "You check weather.",
                                 "cache_control": {"type": "ephemeral"}}]
    assert [t["name"] for t in second["tools"] if "cache_control" in t] == [second["tools"][-1]["name"]]
    assert second["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert {t["name"] for t in second["tools"]} == {"check_gcd", "get_time", "get_weather"}
    weather = next(t for t in second["tools"] if t["name"] == "get_weather")
    assert weather["input_schema"]["required"] == ["location"]
    assert weather["description"] == "Current weather at a location."
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather and time in SF?"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Okay, let's check the weather for San Francisco, CA:"},
            {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
             "input": {"location": "San Francisco, CA", "unit": "fahrenheit"}},
            {"type": "tool_use", "id": "toolu_01JtD2b7UpzL1B1e6YhUVaY8", "name": "get_time",
             "input": {"timezone": "America/Los_Angeles"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
             "content": "18 degrees fahrenheit in San Francisco, CA"},
            {"type": "tool_result", "tool_use_id": "toolu_01JtD2b7UpzL1B1e6YhUVaY8",
             "content": "12:00 in America/Los_Angeles", "cache_control": {"type": "ephemeral"}},
        ]},
    ]
    first_request = server.requests[0].json()
    assert first_request["messages"][-1]["content"] == [
        {"type": "text", "text": "Weather and time in SF?", "cache_control": {"type": "ephemeral"}}]


async def test_prompt_cache_false_sends_no_cache_control(server, provider, db_path) -> None:
    server.queue(Stream(wire("anthropic_tool_use.sse")), Stream(wire("anthropic_text.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5",
                         AgentConfig(system="You check weather.", prompt_cache=False))
        await agent.send("Weather and time in SF?")
    for request in server.requests:
        assert "cache_control" not in request.body.decode()
        assert request.json()["system"] == "You check weather."


def test_the_cache_breakpoint_skips_a_trailing_thinking_block(provider) -> None:
    # A thinking block cannot carry cache_control; the marker goes on the block before it.
    body = provider.request_body(ProviderRequest(
        model="m", prompt_cache=True, messages=[Message.user("hi"), Message.assistant(
            TextBlock(text="Let me think."), ThinkingBlock(thinking="hmm", signature="sig"))]))
    assert body["messages"][-1]["content"] == [
        {"type": "text", "text": "Let me think.", "cache_control": {"type": "ephemeral"}},
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
    ]
    assert "system" not in body and "tools" not in body


async def test_thinking_signatures_and_redacted_thinking_are_replayed_byte_for_byte(
    server, client, db_path
) -> None:
    provider = AnthropicProvider(api_key="k", base_url=server.url, client=client,
                                 thinking_budget=2000, retry=FAST_RETRY)
    server.queue(Stream(wire("anthropic_thinking.sse")), Stream(wire("anthropic_text.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5", AgentConfig(temperature=0.5))
        await agent.send("GCD of 1071 and 462?")
    recorded = [json.loads(line[6:]) for line in wire("anthropic_thinking.sse").decode().splitlines()
                if line.startswith("data: ")]
    signature = next(e["delta"]["signature"] for e in recorded
                     if e["type"] == "content_block_delta" and e["delta"]["type"] == "signature_delta")
    redacted = next(e["content_block"]["data"] for e in recorded
                    if e["type"] == "content_block_start" and e["content_block"]["type"] == "redacted_thinking")
    thinking = "".join(e["delta"]["thinking"] for e in recorded
                       if e["type"] == "content_block_delta" and e["delta"]["type"] == "thinking_delta")
    blocks = agent.history[1].content
    assert blocks[0] == ThinkingBlock(thinking=thinking, signature=signature)
    assert blocks[1] == RedactedThinkingBlock(data=redacted)
    first, second = server.requests[0].json(), server.requests[1].json()
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert "temperature" not in first  # the API refuses a temperature with thinking
    replayed = second["messages"][1]["content"]
    assert replayed[0] == {"type": "thinking", "thinking": thinking, "signature": signature}
    assert replayed[1] == {"type": "redacted_thinking", "data": redacted}
    assert replayed[2]["type"] == "tool_use"
    # Byte-for-byte: the raw request carries the signature exactly as it arrived.
    assert json.dumps(signature)[1:-1].encode() in server.requests[1].body


async def test_an_error_event_mid_stream_fails_the_run_and_rolls_it_back(
    server, provider, db_path
) -> None:
    server.queue(Stream(wire("anthropic_error.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5")
        with pytest.raises(StreamError, match="overloaded_error"):
            await agent.send("hi")
        assert all(m.role is Role.USER for m in agent.history)
        assert agent.snapshot.status.name == "failed"


def test_consecutive_user_messages_are_merged_with_tool_results_first() -> None:
    provider = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9")
    body = provider.request_body(ProviderRequest(model="m", messages=[
        Message.user("question"),
        Message.assistant(ToolUseBlock(id="t1", name="get_weather", input={"location": "x"})),
        Message(role=Role.USER, content=[ToolResultBlock(tool_use_id="t1", content="sunny", is_error=True)]),
        Message.user("<team-inbox>mail</team-inbox>"),
    ]))
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "sunny", "is_error": True},
        {"type": "text", "text": "<team-inbox>mail</team-inbox>"},
    ]


def test_other_providers_reasoning_is_not_sent_to_anthropic() -> None:
    provider = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9")
    foreign = ThinkingBlock(thinking="x", signature='{"mentra_signature":"openai-responses","data":{}}')
    body = provider.request_body(ProviderRequest(model="m", messages=[
        Message.user("a"), Message.assistant(foreign, TextBlock(text="b")), Message.user("c"),
    ]))
    assert body["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "b"}]}


@pytest.mark.parametrize(("choice", "wire_choice"), [
    ("auto", {"type": "auto"}), ("any", {"type": "any"}), ("none", {"type": "none"}),
    ("get_weather", {"type": "tool", "name": "get_weather"}),
])
def test_tool_choice_maps_to_the_messages_api(choice: str, wire_choice: dict) -> None:
    provider = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9")
    body = provider.request_body(ask(tools=[ToolDefinition(name="get_weather")], tool_choice=choice))
    assert body["tool_choice"] == wire_choice


async def test_lists_models(server, provider) -> None:
    server.queue(Reply(200, {"data": [
        {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5",
         "created_at": "2025-09-29T00:00:00Z"},
        {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5",
         "created_at": "2025-10-01T00:00:00Z"},
    ], "has_more": False, "first_id": "claude-sonnet-4-5", "last_id": "claude-haiku-4-5"}))
    models = await provider.list_models()
    assert [(m.key, m.display_name) for m in models] == [
        ("anthropic:claude-sonnet-4-5", "Claude Sonnet 4.5"),
        ("anthropic:claude-haiku-4-5", "Claude Haiku 4.5"),
    ]
    assert server.requests[0].path == "/v1/models?limit=1000"
    assert server.requests[0].headers["anthropic-version"] == "2023-06-01"


async def test_an_unknown_model_is_model_not_found_with_close_known_models(server, provider) -> None:
    server.queue(
        Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-sonet-4-5"}}),
        Reply(200, {"data": [{"id": "claude-sonnet-4-5"}, {"id": "claude-opus-4-1"}]}),
    )
    with pytest.raises(ModelNotFound) as caught:
        await assemble(provider, ask(model="claude-sonet-4-5"))
    message = str(caught.value)
    assert "claude-sonet-4-5" in message and "not_found_error" in message
    assert "Known models include: claude-sonnet-4-5" in message
    assert len(server.requests) == 2  # a 404 is not retried


async def test_a_lone_surrogate_escaped_in_a_delta_is_replaced_not_fatal(server, provider, tmp_path) -> None:
    """Issue 14.5: `"\\ud800"` in a delta's JSON decodes to a lone surrogate, which
    made storing the reply fail on every retry."""
    body = wire("anthropic_text.sse").replace(b'"text": "!"', b'"text": "\\ud800!"')
    assert b'\\ud800' in body
    server.queue(Stream(body))
    async with runtime_with(provider, tmp_path / "s.sqlite") as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5")
        reply = await agent.send("hi")
        assert reply.text == "Hello\ufffd!"
        assert rt.store.load_agent(agent.id).transcript[-1].text == "Hello\ufffd!"
