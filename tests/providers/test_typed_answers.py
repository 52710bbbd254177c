"""Typed answers on each provider's wire: the request carries the schema the way that
API wants it, and the replayed reply becomes a validated instance.

Every test runs a real runtime over a real SQLite file against the local server
replaying the provider's SSE format (tests/providers/wire/*_json.sse,
*_final_answer.sse).
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from mentra_nb import OutputValidationError, Runtime, SqliteStore
from mentra_nb.messages import Role, TextBlock, ToolUseBlock
from mentra_nb.providers._output import strict_schema
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.base import OutputFormat
from mentra_nb.providers.gemini import GeminiProvider
from mentra_nb.providers.openai import OpenAIProvider
from mentra_nb.providers.openai_chat import OpenAIChatProvider
from mentra_nb.runtime._output import OutputSpec
from mentra_nb.testing import ScriptedProvider, text_stream

from .conftest import FAST_RETRY, Stream, wire
from .helpers import ask, runtime_with
from .sse_bodies import sse_body


class Forecast(BaseModel):
    """A weather report for one city."""

    city: str
    temperature_c: float
    summary: str | None = None


FORECAST = Forecast(city="Paris", temperature_c=18.5, summary="Mild and dry")


def _strict_forecast_schema() -> dict:
    return {
        "type": "object",
        "title": "Forecast",
        "description": "A weather report for one city.",
        "properties": {
            "city": {"type": "string", "title": "City"},
            "temperature_c": {"type": "number", "title": "Temperature C"},
            "summary": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Summary"},
        },
        # Strict mode: every property required (summary may be null), nothing else allowed.
        "required": ["city", "temperature_c", "summary"],
        "additionalProperties": False,
    }


async def _ask(provider, db_path, model: str, output=Forecast, **kwargs):
    """One typed send on a runtime without tools; returns (answer, agent)."""
    store = SqliteStore(db_path)
    rt = Runtime.empty(store=store, providers=[provider])
    try:
        agent = rt.spawn("w", model)
        answer = await agent.send("Weather in Paris?", output=output, **kwargs)
        return answer, agent
    finally:
        await rt.aclose()
        store.close()


# --- OpenAI Responses -----------------------------------------------------------------


async def test_openai_responses_asks_for_a_strict_json_schema_and_parses_the_reply(server, client, db_path):
    provider = OpenAIProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("openai_json.sse")))
    answer, agent = await _ask(provider, db_path, "openai:gpt-4.1")
    assert answer == Forecast(city="Paris", temperature_c=18.5, summary=None)
    assert server.requests[0].json()["text"] == {"format": {
        "type": "json_schema", "name": "Forecast", "schema": _strict_forecast_schema(), "strict": True,
        "description": "A weather report for one city."}}
    # The answer is an ordinary text message of the transcript.
    assert agent.history[-1].content == [TextBlock(text='{"city":"Paris","temperature_c":18.5,"summary":null}')]


async def test_openai_responses_runs_tools_first_and_the_final_answer_conforms(server, client, db_path):
    provider = OpenAIProvider(api_key="k", base_url=server.url, client=client, reasoning_effort="low",
                              retry=FAST_RETRY)
    server.queue(Stream(wire("openai_reasoning_tools.sse")), Stream(wire("openai_json.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "openai:o4-mini")
        answer = await agent.send("Weather in Bogotá and Paris?", output=Forecast)
    assert answer.city == "Paris"
    first, second = (r.json() for r in server.requests)
    # The schema rides along with the tools on every round; the tools ran in between.
    assert first["text"]["format"]["name"] == second["text"]["format"]["name"] == "Forecast"
    assert {t["name"] for t in first["tools"]} >= {"get_weather"}
    assert [i["type"] for i in second["input"] if i.get("type") == "function_call_output"] == [
        "function_call_output", "function_call_output"]


async def test_a_schema_that_cannot_be_strict_is_sent_as_it_is(server, client, db_path):
    class Scores(BaseModel):
        by_name: dict[str, float]  # open-ended keys: strict mode cannot express them

    provider = OpenAIProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    body = provider.request_body(ask(output=OutputFormat(name="Scores", json_schema=Scores.model_json_schema())))
    assert body["text"]["format"] == {"type": "json_schema", "name": "Scores",
                                      "schema": Scores.model_json_schema(), "strict": False}


# --- OpenAI Chat Completions (and the servers that copy it) ---------------------------


async def test_chat_completions_sends_response_format_json_schema(server, client, db_path):
    provider = OpenAIChatProvider("openai-chat", api_key="k", base_url=server.url, client=client,
                                  retry=FAST_RETRY)
    server.queue(Stream(wire("chat_json.sse")))
    answer, _ = await _ask(provider, db_path, "openai-chat:gpt-4o-mini")
    assert answer == FORECAST
    assert server.requests[0].json()["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Forecast", "schema": _strict_forecast_schema(), "strict": True,
        "description": "A weather report for one city."}}


async def test_an_invalid_answer_goes_back_with_the_validation_errors(server, client, db_path):
    provider = OpenAIChatProvider("llamacpp", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("chat_json_invalid.sse")), Stream(wire("chat_json.sse")))
    answer, agent = await _ask(provider, db_path, "llamacpp:llama-3.2-3b-instruct")
    assert answer == FORECAST
    retry = server.requests[1].json()
    # llama.cpp's servers build a grammar from the schema.
    assert retry["response_format"] == {"type": "json_object", "schema": Forecast.model_json_schema()}
    *_, bad_answer, feedback = retry["messages"]
    assert bad_answer == {"role": "assistant",
                          "content": 'Here is the forecast: {"city":"Paris","temperature_c":"mild"}'}
    assert feedback["role"] == "user"
    assert "Your answer is not a valid Forecast (attempt 1 of 3)" in feedback["content"]
    assert "- temperature_c: Input should be a valid number" in feedback["content"]
    # Both attempts and the feedback are the transcript's, in order.
    assert [m.role for m in agent.history] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]


async def test_output_validation_error_after_the_retries_keeps_every_attempt(server, client, db_path):
    provider = OpenAIChatProvider("llamacpp", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(*(Stream(wire("chat_json_invalid.sse")) for _ in range(2)))
    store = SqliteStore(db_path)
    rt = Runtime.empty(store=store, providers=[provider])
    try:
        agent = rt.spawn("w", "llamacpp:llama-3.2-3b-instruct")
        with pytest.raises(OutputValidationError, match=r"answered 2 times without a valid Forecast") as caught:
            await agent.send("Weather in Paris?", output=Forecast, output_retries=1)
        assert caught.value.errors == [{"loc": ["temperature_c"], "msg": "Input should be a valid number, "
                                        "unable to parse string as a number", "type": "float_parsing"}]
        assert caught.value.raw == 'Here is the forecast: {"city":"Paris","temperature_c":"mild"}'
        assert len(server.requests) == 2
        assert agent.status.name == "failed"
        kept = agent.history
    finally:
        await rt.aclose()
        store.close()
    assert [m.role for m in kept] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    # The attempts are stored messages: a new runtime (a restarted kernel) reads them back.
    store = SqliteStore(db_path)
    rt = Runtime.empty(store=store, providers=[provider])
    try:
        again = rt.resume_agent(agent.id)
        assert again.history == kept
    finally:
        await rt.aclose()
        store.close()


# --- Gemini ----------------------------------------------------------------------------


async def test_gemini_asks_for_json_with_response_json_schema(server, client, db_path):
    provider = GeminiProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("gemini_json.sse")))
    answer, _ = await _ask(provider, db_path, "gemini:gemini-2.5-flash")
    assert answer == FORECAST
    config = server.requests[0].json()["generationConfig"]
    assert config == {"responseMimeType": "application/json",
                      "responseJsonSchema": Forecast.model_json_schema()}


async def test_gemini_with_tools_answers_through_a_forced_final_answer_function(server, client, db_path):
    provider = GeminiProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("gemini_tools.sse")), Stream(wire("gemini_final_answer.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "gemini:gemini-2.5-flash")
        answer = await agent.send("Weather in Paris and Tokyo?", output=Forecast)
    assert answer == Forecast(city="Paris", temperature_c=18.5, summary="From get_weather")
    first, second = (r.json() for r in server.requests)
    for body in (first, second):
        # Gemini refuses function calling with a JSON response type: the answer is a function.
        assert "responseMimeType" not in body.get("generationConfig", {})
        assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
        final = body["tools"][0]["functionDeclarations"][-1]
        assert final["name"] == "final_answer"
        assert final["parametersJsonSchema"] == Forecast.model_json_schema()
    # The call became the answer's text: no function call without a response in the transcript.
    last = agent.history[-1]
    assert last.tool_uses == [] and '"city": "Paris"' in last.text


# --- Anthropic -------------------------------------------------------------------------


async def test_anthropic_forces_the_final_answer_tool_and_parses_its_input(server, client, db_path):
    provider = AnthropicProvider(api_key="sk-ant-k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("anthropic_final_answer.sse")))
    answer, agent = await _ask(provider, db_path, "anthropic:claude-sonnet-4-5")
    assert answer == FORECAST
    body = server.requests[0].json()
    assert body["tool_choice"] == {"type": "tool", "name": "final_answer"}
    (tool,) = body["tools"]
    assert tool["name"] == "final_answer" and tool["input_schema"] == Forecast.model_json_schema()
    assert "A weather report for one city." in tool["description"]
    last = agent.history[-1]
    assert last.content == [TextBlock(text='{"city": "Paris", "temperature_c": 18.5, "summary": "Mild and dry"}')]


async def test_anthropic_may_call_its_tools_before_the_final_answer(server, client, db_path):
    provider = AnthropicProvider(api_key="sk-ant-k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("anthropic_tool_use.sse")), Stream(wire("anthropic_final_answer.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5")
        answer = await agent.send("Weather in San Francisco?", output=Forecast)
    assert answer == FORECAST
    first, second = (r.json() for r in server.requests)
    # Some tool must be called; the model picks its own tools first, then final_answer.
    assert first["tool_choice"] == second["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in first["tools"]][-1] == "final_answer"
    calls = [b for m in agent.history for b in m.content if isinstance(b, ToolUseBlock)]
    assert [c.name for c in calls] == ["get_weather", "get_time"]


def test_anthropic_with_extended_thinking_offers_the_tool_without_forcing_it() -> None:
    provider = AnthropicProvider(api_key="sk-ant-k", thinking_budget=2048)
    schema = Forecast.model_json_schema()
    body = provider.request_body(ask(model="claude-sonnet-4-5",
                                     output=OutputFormat(name="Forecast", json_schema=schema)))
    assert "tool_choice" not in body  # the API refuses forced tool use while thinking
    assert [t["name"] for t in body["tools"]] == ["final_answer"]


def test_a_request_without_output_is_unchanged() -> None:
    body = OpenAIChatProvider("openai-chat", api_key="k").request_body(ask())
    assert "response_format" not in body
    assert "text" not in OpenAIProvider(api_key="k").request_body(ask())
    assert "generationConfig" not in GeminiProvider(api_key="k").request_body(ask())


def test_field_constraints_survive_as_hints_in_a_strict_schema() -> None:
    from mentra_nb.providers._output import strict_schema

    class Item(BaseModel):
        name: str = Field(min_length=2, description="What it is")
        tags: list[str] = Field(default_factory=list, max_length=3)

    class Basket(BaseModel):
        items: list[Item]
        kind: int | str

    strict = strict_schema(Basket.model_json_schema())
    assert strict is not None
    item = strict["$defs"]["Item"]
    assert item["required"] == ["name", "tags"] and item["additionalProperties"] is False
    assert item["properties"]["name"]["description"] == "What it is; minLength: 2"
    # maxItems is strict mode's own; the default is dropped (the model always fills the field).
    assert item["properties"]["tags"] == {"type": "array", "items": {"type": "string"}, "maxItems": 3,
                                          "title": "Tags"}
    assert strict["properties"]["kind"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert strict["properties"]["items"] == {"type": "array", "items": {"$ref": "#/$defs/Item"},
                                             "title": "Items"}


async def test_a_typed_session_records_and_replays_with_its_schema(tmp_path):
    from mentra_nb.providers.replay import CassetteMismatch, RecordingProvider, ReplayProvider
    from mentra_nb.providers.test import TestProvider

    class Other(BaseModel):
        city: str

    cassette = tmp_path / "typed.cassette.jsonl"
    recorded, _ = await _ask(RecordingProvider(TestProvider(), cassette), tmp_path / "live.sqlite", "test")
    replayed, _ = await _ask(ReplayProvider(cassette, name="test"), tmp_path / "replay.sqlite", "test")
    assert recorded == replayed == Forecast(city="a", temperature_c=0.0, summary=None)
    # The schema is part of the recorded request: a replay asking for another type misses.
    with pytest.raises(CassetteMismatch, match="output"):
        await _ask(ReplayProvider(cassette, name="test"), tmp_path / "other.sqlite", "test", output=Other)


def test_a_request_without_output_is_recorded_as_before_output_existed() -> None:
    from mentra_nb.providers.replay import _request_json

    assert "output" not in _request_json(ask())


# --- recursive models -------------------------------------------------------------------


class Node(BaseModel):
    """A tree of named parts."""

    name: str
    children: list[Node] = []


TREE = Node(name="root", children=[Node(name="a", children=[Node(name="a1")]), Node(name="b")])


def test_a_recursive_models_schema_is_an_object_at_the_top_keeping_its_definitions() -> None:
    # pydantic gives a recursive model's schema as a bare reference into $defs.
    assert set(Node.model_json_schema()) == {"$ref", "$defs"}
    schema = OutputSpec(Node).format.json_schema
    assert schema["type"] == "object" and "$ref" not in schema
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Node"] == Node.model_json_schema()["$defs"]["Node"]
    strict = strict_schema(schema)
    assert strict is not None and strict["additionalProperties"] is False
    assert strict["$defs"]["Node"]["required"] == ["name", "children"]


@pytest.mark.parametrize("provider_name", ["openai", "openai-chat", "gemini", "anthropic"])
async def test_a_recursive_model_is_a_typed_answer_on_every_provider(server, client, db_path, provider_name):
    kind = {"openai": OpenAIProvider, "openai-chat": OpenAIChatProvider, "gemini": GeminiProvider,
            "anthropic": AnthropicProvider}[provider_name]
    provider = kind(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(sse_body(provider_name, TREE.model_dump_json(), {}, typed=True)))
    answer, _ = await _ask(provider, db_path, f"{provider_name}:m", output=Node)
    assert answer == TREE
    body = server.requests[0].json()
    sent = {"openai": lambda: body["text"]["format"]["schema"],
            "openai-chat": lambda: body["response_format"]["json_schema"]["schema"],
            "gemini": lambda: body["generationConfig"]["responseJsonSchema"],
            "anthropic": lambda: body["tools"][-1]["input_schema"]}[provider_name]()
    # The request's schema is the tree object itself, its children referring to its definition.
    assert sent["type"] == "object" and "$ref" not in sent
    assert sent["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert sent["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    if provider_name.startswith("openai"):
        assert (body.get("text", {}).get("format") or body["response_format"]["json_schema"])["strict"] is True


async def test_a_recursive_model_is_a_typed_answer_from_the_scripted_and_the_offline_model() -> None:
    from mentra_nb.providers.test import TestProvider

    scripted = ScriptedProvider("chat", [text_stream(TREE.model_dump_json())])
    rt = Runtime.empty(providers=[scripted, TestProvider()])
    try:
        assert await rt.spawn("w", "chat:m").send("the parts?", output=Node) == TREE
        [request] = scripted.recorded_requests()
        assert request.output is not None and request.output.json_schema["type"] == "object"
        # The offline model answers with an example of the schema: a valid tree.
        example = await rt.spawn("offline", "test:default").send("the parts?", output=Node)
        assert isinstance(example, Node)
    finally:
        await rt.aclose()
