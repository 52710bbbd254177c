"""Chat Completions and its presets against a local server replaying the chunk format."""

from __future__ import annotations

import pytest

from mentra_nb import ConfigError, StreamError
from mentra_nb.messages import Message, Role, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from mentra_nb.providers.base import ToolDefinition
from mentra_nb.providers.openai_chat import PRESETS, OpenAIChatProvider
from mentra_nb.providers.registry import ProviderRegistry

from .conftest import FAST_RETRY, Reply, Stream, wire
from .helpers import ask, assemble, runtime_with


@pytest.fixture
def provider(server, client) -> OpenAIChatProvider:
    return OpenAIChatProvider(api_key="sk-test-chat-key-000000000001", base_url=server.url,
                              client=client, retry=FAST_RETRY)


async def test_streams_content_with_usage_from_the_final_chunk(server, provider) -> None:
    server.queue(Stream(wire("chat_text.sse")))
    message, assembler = await assemble(provider, ask("Hello", model="gpt-4o-mini", system="Be kind.",
                                                      max_output_tokens=50, temperature=0))
    assert message == Message(role=Role.ASSISTANT, content=[TextBlock(text="Hello there")])
    assert assembler.stop_reason == "end_turn"
    assert assembler.usage == Usage(input_tokens=15, output_tokens=10, cache_read_tokens=4)
    sent = server.requests[0]
    assert (sent.method, sent.path) == ("POST", "/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-test-chat-key-000000000001"
    assert sent.json() == {
        "model": "gpt-4o-mini", "stream": True,
        "messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hello"}],
        "stream_options": {"include_usage": True}, "temperature": 0,
        "max_completion_tokens": 50,
    }


async def test_interleaved_parallel_tool_calls_assemble_by_index_and_round_trip(
    server, provider, db_path
) -> None:
    server.queue(Stream(wire("chat_parallel_tools.sse"), chunk=40), Stream(wire("chat_text.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "openai-chat:gpt-4o")
        reply = await agent.send("Weather and time in Paris?")
    assert reply.text == "Hello there"
    assert agent.history[1].content == [
        ToolUseBlock(id="call_DdmO9pD3xa9XTPNJ32zg2hcA", name="get_weather", input={"location": "Paris"}),
        ToolUseBlock(id="call_ABCDEFGHIJKLMNOPQRSTUVWX", name="get_time", input={"tz": "Europe/Paris"}),
    ]
    second = server.requests[1].json()
    assert second["messages"] == [
        {"role": "user", "content": "Weather and time in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'}},
            {"id": "call_ABCDEFGHIJKLMNOPQRSTUVWX", "type": "function",
             "function": {"name": "get_time", "arguments": '{"tz": "Europe/Paris"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_DdmO9pD3xa9XTPNJ32zg2hcA",
         "content": "18 degrees celsius in Paris"},
        {"role": "tool", "tool_call_id": "call_ABCDEFGHIJKLMNOPQRSTUVWX", "content": "12:00 in Europe/Paris"},
    ]
    tool = next(t for t in second["tools"] if t["function"]["name"] == "get_weather")
    assert tool["type"] == "function" and tool["function"]["parameters"]["required"] == ["location"]


async def test_reasoning_deltas_and_sse_comments_from_openrouter(server, client) -> None:
    provider = OpenAIChatProvider("openrouter", api_key="sk-or-v1-test", base_url=server.url,
                                  client=client)
    server.queue(Stream(wire("chat_reasoning.sse")))
    message, assembler = await assemble(provider, ask(model="deepseek/deepseek-r1"))
    assert message.content == [ThinkingBlock(thinking="The user greets me."), TextBlock(text="Hi!")]
    assert assembler.usage == Usage(input_tokens=10, output_tokens=12)
    assert "max_completion_tokens" not in server.requests[0].json()


async def test_an_error_chunk_mid_stream_is_a_stream_error(server, provider) -> None:
    server.queue(Stream(wire("chat_error.sse")))
    with pytest.raises(StreamError, match="Provider returned error"):
        await assemble(provider, ask())


async def test_a_server_that_omits_done_after_finish_reason_is_tolerated(server, provider) -> None:
    body = wire("chat_text.sse")
    server.queue(Stream(body[: body.index(b"data: [DONE]")]))
    message, _ = await assemble(provider, ask())
    assert message.text == "Hello there"


async def test_a_stream_cut_before_finish_reason_is_an_error(server, provider) -> None:
    body = wire("chat_text.sse")
    server.queue(Stream(body[: body.index(b'data: {"id":"chatcmpl-123","object":"chat.completion.chunk",'
                                          b'"created":1694268190,"model":"gpt-4o-mini","system_fingerprint":'
                                          b'"fp_44709d6fcb","choices":[{"index":0,"delta":{},')]))
    with pytest.raises(StreamError, match="no finish_reason"):
        await assemble(provider, ask())


async def test_a_local_preset_needs_no_key_and_sends_none(server, client) -> None:
    provider = OpenAIChatProvider("ollama", base_url=server.url, client=client)
    server.queue(Stream(wire("chat_text.sse")))
    await assemble(provider, ask(model="llama3.2:3b"))
    assert "authorization" not in server.requests[0].headers
    assert server.requests[0].json()["model"] == "llama3.2:3b"


def test_presets_point_at_their_servers(monkeypatch) -> None:
    assert OpenAIChatProvider("ollama").base_url == "http://127.0.0.1:11434/v1"
    assert OpenAIChatProvider("lmstudio").base_url == "http://127.0.0.1:1234/v1"
    assert OpenAIChatProvider("vllm").base_url == "http://127.0.0.1:8000/v1"
    assert OpenAIChatProvider("llamacpp").base_url == "http://127.0.0.1:8080/v1"
    assert OpenAIChatProvider("openrouter").base_url == "https://openrouter.ai/api/v1"
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9999")
    assert OpenAIChatProvider("ollama").base_url == "http://127.0.0.1:9999/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:7777/v1")
    assert OpenAIChatProvider("openai-chat").base_url == "http://127.0.0.1:7777/v1"
    assert OpenAIChatProvider(base_url="http://127.0.0.1:1/v1").base_url == "http://127.0.0.1:1/v1"


def test_every_preset_is_a_builtin_provider() -> None:
    registry = ProviderRegistry()
    for name in PRESETS:
        provider = registry.get(name)
        assert isinstance(provider, OpenAIChatProvider) and provider.name == name


def test_an_unknown_preset_says_which_exist() -> None:
    with pytest.raises(ConfigError, match="known: openai-chat, openrouter, ollama"):
        OpenAIChatProvider("olama")


def test_tool_choice_and_consecutive_user_messages() -> None:
    provider = OpenAIChatProvider(api_key="k", base_url="http://127.0.0.1:9")
    body = provider.request_body(ask(tools=[ToolDefinition(name="f")], tool_choice="f"))
    assert body["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    body = provider.request_body(ask(tools=[ToolDefinition(name="f")], tool_choice="any"))
    assert body["tool_choice"] == "required"
    merged = provider.request_body(ask(model="m").model_copy(update={"messages": [
        Message.user("one"), Message.user("two")]}))
    assert merged["messages"] == [{"role": "user", "content": "one\n\ntwo"}]


async def test_lists_models(server, provider) -> None:
    server.queue(Reply(200, {"object": "list", "data": [{"id": "qwen2.5:7b", "object": "model"}]}))
    assert [m.key for m in await provider.list_models()] == ["openai-chat:qwen2.5:7b"]


async def test_tool_calls_without_ids_get_ids_that_never_repeat(server, provider) -> None:
    """Issue 14.9: a server that sends no call id once got `call_<provider>_<n>`,
    the same in every reply, so an old approval could match a new call."""
    body = wire("chat_parallel_tools.sse").replace(b'"id":"call_', b'"x_id":"call_')
    server.queue(Stream(body), Stream(body))
    first, _ = await assemble(provider, ask())
    second, _ = await assemble(provider, ask())
    ids = [u.id for m in (first, second) for u in m.tool_uses]
    assert len(ids) == 4 and len(set(ids)) == 4 and all(i.startswith("call_") for i in ids), ids
