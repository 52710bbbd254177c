"""The Gemini provider against a local server replaying streamGenerateContent's SSE format."""

from __future__ import annotations

import pytest

from mentra_nb import ProviderAuthError, StreamError
from mentra_nb.messages import Message, Role, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from mentra_nb.providers.base import ToolDefinition
from mentra_nb.providers.gemini import GeminiProvider

from .conftest import FAST_RETRY, Reply, Stream, wire
from .helpers import ask, assemble, runtime_with

KEY = "AIzaSyTestKey000000000000000000000000001"


@pytest.fixture
def provider(server, client) -> GeminiProvider:
    return GeminiProvider(api_key=KEY, base_url=server.url, client=client, retry=FAST_RETRY)


async def test_streams_text_with_usage(server, provider) -> None:
    server.queue(Stream(wire("gemini_text.sse")))
    message, assembler = await assemble(provider, ask("Why is the sky blue?", model="gemini-2.0-flash",
                                                      system="Answer in one line.", temperature=0.1))
    assert message == Message(role=Role.ASSISTANT,
                              content=[TextBlock(text="The sky is blue because of Rayleigh scattering.")])
    assert assembler.stop_reason == "end_turn"
    assert assembler.usage == Usage(input_tokens=9, output_tokens=12)
    sent = server.requests[0]
    assert sent.path == "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == KEY
    assert KEY not in sent.path  # the key travels in a header, never in the URL
    assert sent.json() == {
        "contents": [{"role": "user", "parts": [{"text": "Why is the sky blue?"}]}],
        "systemInstruction": {"parts": [{"text": "Answer in one line."}]},
        "generationConfig": {"temperature": 0.1},
    }


async def test_function_calls_with_thought_signatures_round_trip(server, client, db_path) -> None:
    provider = GeminiProvider(api_key=KEY, base_url=server.url, client=client, thinking_budget=512)
    server.queue(Stream(wire("gemini_tools.sse")), Stream(wire("gemini_text.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "gemini:gemini-2.5-flash")
        reply = await agent.send("Weather in Paris and Tokyo?")
    assert reply.text.startswith("The sky is blue")
    blocks = agent.history[1].content
    assert blocks[0] == ThinkingBlock(thinking="**Planning the lookups**\nI should check both cities.")
    assert isinstance(blocks[1], ThinkingBlock) and blocks[1].thinking == ""
    assert [(b.name, b.input) for b in blocks[2:] if isinstance(b, ToolUseBlock)] == [
        ("get_weather", {"location": "Paris"}), ("get_weather", {"location": "Tokyo"})]
    first, second = server.requests[0].json(), server.requests[1].json()
    assert first["generationConfig"] == {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 512}}
    declaration = next(d for d in first["tools"][0]["functionDeclarations"] if d["name"] == "get_weather")
    assert declaration["parametersJsonSchema"]["required"] == ["location"]
    assert second["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Tokyo?"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"location": "Paris"}},
             "thoughtSignature": "CiQB0e2Kb7tNf1Jd0tM7uVbUkSRvqcKxNpu8G3QeP2kW3kYwXhwKbwHR7YpvKmh4jCpcGV0YqR8="},
            {"functionCall": {"name": "get_weather", "args": {"location": "Tokyo"}}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather",
                                  "response": {"result": "18 degrees celsius in Paris"}}},
            {"functionResponse": {"name": "get_weather",
                                  "response": {"result": "18 degrees celsius in Tokyo"}}},
        ]},
    ]
    assert agent.snapshot.usage.cache_read_tokens == 16


async def test_an_invalid_key_reported_as_400_is_an_auth_error(server, provider) -> None:
    server.queue(Reply(400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                       "status": "INVALID_ARGUMENT", "details": [
                                           {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                            "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}))
    with pytest.raises(ProviderAuthError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        await assemble(provider, ask())
    assert len(server.requests) == 1


async def test_a_stream_without_a_finish_reason_is_an_error(server, provider) -> None:
    body = wire("gemini_text.sse")
    server.queue(Stream(body[: body.rindex(b"data: ")]))
    with pytest.raises(StreamError, match="without a finishReason"):
        await assemble(provider, ask())


def test_tool_choice_maps_to_function_calling_config() -> None:
    provider = GeminiProvider(api_key="k", base_url="http://127.0.0.1:9")
    body = provider.request_body(ask(tools=[ToolDefinition(name="f")], tool_choice="f"))
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}}
    body = provider.request_body(ask(tools=[ToolDefinition(name="f")], tool_choice="none"))
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


async def test_lists_generate_content_models(server, provider) -> None:
    server.queue(Reply(200, {"models": [
        {"name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash", "inputTokenLimit": 1048576,
         "supportedGenerationMethods": ["generateContent", "countTokens"]},
        {"name": "models/text-embedding-004", "displayName": "Embedding",
         "supportedGenerationMethods": ["embedContent"]},
    ]}))
    models = await provider.list_models()
    assert [(m.key, m.context_window) for m in models] == [("gemini:gemini-2.5-flash", 1048576)]
