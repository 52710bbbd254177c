"""OpenTelemetry spans, read back from the SDK's in-memory exporter: the span tree
of a turn with tools, a team exchange and a subagent; content only on request;
never a key."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from mentra_nb import (
    AgentConfig,
    Runtime,
    SqliteStore,
    TeamMemberStatus,
    TransientProviderError,
    Usage,
    tool,
)
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.runtime._tracing import tracer_for
from mentra_nb.runtime.subagents import SubagentLimits
from mentra_nb.testing import ScriptedProvider, error_stream, text_stream, tool_use_stream
from tests.conftest import WAIT_LIMIT, wait_until
from tests.subagents.helpers import RoutedProvider, call
from tests.teams.helpers import wait_for_teammate_status

MODEL = "anthropic:claude-sonnet-4-5"
SECRET = "sk-ant-api03-NEVER-IN-A-SPAN-0001"


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def by_name(finished, name: str):
    return [s for s in finished if s.name == name]


def parent_of(span, finished):
    return next((s for s in finished if span.parent and s.context.span_id == span.parent.span_id), None)


def all_attribute_text(finished) -> str:
    return json.dumps([{k: str(v) for k, v in (s.attributes or {}).items()} for s in finished]
                      + [s.status.description or "" for s in finished])


async def test_a_turn_with_a_tool_is_one_run_two_chats_and_a_tool_call(db_path, spans) -> None:
    provider, exporter = spans
    scripted = ScriptedProvider("anthropic", [
        tool_use_stream("call-1", "lookup", '{"key": "a"}'),
        text_stream("Answer: a is ready now", usage=Usage(input_tokens=40, output_tokens=3,
                                                          cache_read_tokens=1000)),
    ])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[scripted], tools=[lookup],
                       tracer_provider=provider)
    agent = rt.spawn("writer", MODEL)
    await agent.send("look a up please")
    await rt.aclose()

    finished = exporter.get_finished_spans()
    (run,) = by_name(finished, "invoke_agent writer")
    chats = by_name(finished, "chat claude-sonnet-4-5")
    (tool_span,) = by_name(finished, "execute_tool lookup")
    assert len(chats) == 2 and len(finished) == 4
    assert run.parent is None
    assert all(parent_of(s, finished) is run for s in [*chats, tool_span])
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "writer"
    assert run.attributes["gen_ai.agent.id"] == agent.id
    assert run.attributes["gen_ai.provider.name"] == "anthropic"
    # The run's usage is its calls' sum; input counts every prompt token, cached ones too.
    assert run.attributes["gen_ai.usage.input_tokens"] == 10 + 40 + 1000
    assert run.attributes["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert run.attributes["mentra.usage.cost_usd"] == pytest.approx(agent.usage.cost_usd)
    first, second = sorted(chats, key=lambda s: s.start_time)
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert first.attributes["gen_ai.response.id"] == "msg-call-1"
    assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes["gen_ai.usage.output_tokens"]) == (10, 5)
    assert second.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert first.end_time <= tool_span.start_time and tool_span.end_time <= second.start_time
    assert tool_span.attributes["gen_ai.tool.name"] == "lookup"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "call-1"
    assert tool_span.attributes["gen_ai.tool.description"] == "Look a key up."
    assert "error.type" not in tool_span.attributes
    assert run.status.status_code is not StatusCode.ERROR
    # Content stays out unless asked for.
    text = all_attribute_text(finished)
    # (The scripted reply's id quotes its first 16 characters; the rest is content.)
    assert "look a up please" not in text and "value of a" not in text and "ready now" not in text


async def test_a_failing_tool_call_and_a_failed_run_say_so_without_their_messages(db_path, spans) -> None:
    provider, exporter = spans
    broken = error_stream([], TransientProviderError("connection reset by peer at secret-host"))
    scripted = ScriptedProvider("anthropic", [tool_use_stream("call-1", "nosuchtool", "{}"), broken])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[scripted], tools=[lookup],
                       tracer_provider=provider)
    agent = rt.spawn("writer", MODEL)
    with pytest.raises(TransientProviderError):
        await agent.send("go")
    await rt.aclose()
    finished = exporter.get_finished_spans()
    (tool_span,) = by_name(finished, "execute_tool nosuchtool")
    assert tool_span.attributes["error.type"] == "tool_error"
    assert tool_span.status.status_code is StatusCode.ERROR
    (run,) = by_name(finished, "invoke_agent writer")
    failed_chat = max(by_name(finished, "chat claude-sonnet-4-5"), key=lambda s: s.start_time)
    for span in (run, failed_chat):
        assert span.attributes["error.type"] == "TransientProviderError"
        assert span.status.status_code is StatusCode.ERROR
    assert "secret-host" not in all_attribute_text(finished)


async def test_a_long_stream_is_one_chat_span_with_no_per_delta_work(db_path, spans) -> None:
    provider, exporter = spans
    scripted = ScriptedProvider("anthropic", [text_stream("x" * 5000, chunks=2500)])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[scripted], tracer_provider=provider)
    agent = rt.spawn("writer", MODEL)
    await agent.send("write")
    await rt.aclose()
    (chat,) = by_name(exporter.get_finished_spans(), "chat claude-sonnet-4-5")
    assert len(chat.events) == 0


async def test_content_is_recorded_only_with_mentra_trace_content_and_never_a_key(
        db_path, spans, monkeypatch) -> None:
    provider, exporter = spans
    monkeypatch.setenv("MENTRA_TRACE_CONTENT", "1")
    seen_keys = []

    async def answer(request: httpx.Request) -> httpx.Response:
        seen_keys.append(request.headers["x-api-key"])
        body = json.loads(request.content)
        text = "the answer is 42"
        events = [
            ("message_start", {"type": "message_start", "message": {
                "id": "msg_1", "model": body["model"], "usage": {"input_tokens": 12, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        sse = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse.encode())

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    anthropic = AnthropicProvider(api_key=SECRET, base_url="http://anthropic.invalid", client=client)
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[anthropic], tracer_provider=provider)
    agent = rt.spawn("writer", MODEL, AgentConfig(system="Answer with a number."))
    await agent.send("what is six times seven?")
    await rt.aclose()
    await client.aclose()

    assert seen_keys == [SECRET]  # the key was sent to the provider...
    finished = exporter.get_finished_spans()
    assert SECRET not in all_attribute_text(finished)  # ...and never recorded
    (chat,) = by_name(finished, "chat claude-sonnet-4-5")
    inputs = json.loads(chat.attributes["gen_ai.input.messages"])
    assert inputs == [{"role": "user", "parts": [{"type": "text", "content": "what is six times seven?"}]}]
    assert json.loads(chat.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "the answer is 42"}],
         "finish_reason": "end_turn"}]
    assert json.loads(chat.attributes["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "Answer with a number."}]


async def test_tool_arguments_and_results_are_content_too(db_path, spans, monkeypatch) -> None:
    provider, exporter = spans
    monkeypatch.setenv("MENTRA_TRACE_CONTENT", "1")
    scripted = ScriptedProvider("anthropic", [tool_use_stream("call-1", "lookup", '{"key": "a"}'),
                                              text_stream("done")])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[scripted], tools=[lookup],
                       tracer_provider=provider)
    await rt.spawn("writer", MODEL).send("go")
    await rt.aclose()
    (tool_span,) = by_name(exporter.get_finished_spans(), "execute_tool lookup")
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {"key": "a"}
    assert tool_span.attributes["gen_ai.tool.call.result"] == "value of a"


async def test_a_subagents_run_is_a_child_of_the_tool_call_that_spawned_it(db_path, spans) -> None:
    provider, exporter = spans
    spawn = ("s1", "spawn_agent", json.dumps({"task_name": "child_a", "message": "Summarise A",
                                              "model": "anthropic:child_a"}))
    routed = RoutedProvider(root=[tool_use_stream(*spawn), call("w1", "wait_agent"), text_stream("done")],
                            child_a=[text_stream("A: fine")])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[routed], tracer_provider=provider)
    root = rt.spawn("lead", "anthropic:root",
                    config=AgentConfig(subagents=SubagentLimits(max_agents=4, max_concurrency=2)))
    await asyncio.wait_for(root.send("Summarise A"), WAIT_LIMIT)
    await rt.aclose()

    finished = exporter.get_finished_spans()
    (root_run,) = by_name(finished, "invoke_agent lead")
    (spawn_span,) = by_name(finished, "execute_tool spawn_agent")
    (child_run,) = [s for s in finished if s.name.startswith("invoke_agent") and s is not root_run]
    assert child_run.attributes["gen_ai.request.model"] == "child_a"
    assert parent_of(child_run, finished) is spawn_span
    assert parent_of(spawn_span, finished) is root_run
    assert child_run.context.trace_id == root_run.context.trace_id
    (child_chat,) = by_name(finished, "chat child_a")
    assert parent_of(child_chat, finished) is child_run


async def test_a_teammates_run_is_a_child_of_the_run_that_mailed_it(db_path, spans) -> None:
    provider, exporter = spans
    scripted = ScriptedProvider("anthropic", [
        tool_use_stream("m1", "team_send", '{"to": "alice", "content": "find sources"}'),
        text_stream("ok"), text_stream("ok"),
    ])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[scripted], tracer_provider=provider)
    lead = rt.spawn("lead", MODEL)
    await lead.spawn_teammate("alice", "researcher")
    await lead.send("ask alice")
    await wait_until(lambda: len(by_name(exporter.get_finished_spans(), "invoke_agent alice")) == 1)
    await wait_for_teammate_status(lead, "alice", TeamMemberStatus.idle())
    await rt.aclose()

    finished = exporter.get_finished_spans()
    (lead_run,) = by_name(finished, "invoke_agent lead")
    (send,) = by_name(finished, "execute_tool team_send")
    (alice_run,) = by_name(finished, "invoke_agent alice")
    assert parent_of(send, finished) is lead_run
    assert parent_of(alice_run, finished) is send
    assert alice_run.context.trace_id == lead_run.context.trace_id


def test_tracing_is_off_when_no_tracer_provider_is_configured() -> None:
    # Nothing in the test suite sets OpenTelemetry's global provider.
    assert tracer_for(None) is None


def test_the_global_tracer_provider_is_used_when_the_runtime_is_given_none(tmp_path) -> None:
    # In a child process: OpenTelemetry's global provider can be set once per process.
    code = textwrap.dedent("""
        import asyncio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from mentra_nb import Runtime, SqliteStore

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        async def main():
            rt = Runtime.empty(store=SqliteStore("state.sqlite"))
            await rt.spawn("writer", "test").send("hello")
            await rt.aclose()

        asyncio.run(main())
        print(sorted(s.name for s in exporter.get_finished_spans()))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "['chat default', 'invoke_agent writer']"
