"""Recording a live session to a JSONL cassette and replaying it offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mentra_nb import AgentConfig, ConfigError, Runtime, SqliteStore, TransientProviderError
from mentra_nb.providers._http import RetryPolicy
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.replay import CassetteMismatch, RecordingProvider, ReplayProvider

from .conftest import Reply, Stream, wire
from .helpers import check_gcd, get_time, get_weather, runtime_with

NO_RETRY = {"retry": RetryPolicy(max_retries=0)}


async def record_session(server, client, cassette: Path, db: Path) -> list:
    live = AnthropicProvider(api_key="k", base_url=server.url, client=client, **NO_RETRY)
    server.queue(Stream(wire("anthropic_tool_use.sse")), Stream(wire("anthropic_text.sse")))
    async with runtime_with(RecordingProvider(live, cassette), db) as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5", AgentConfig(system="Weather bot."))
        await agent.send("Weather in SF?")
        return agent.history


async def test_a_replayed_session_gives_the_same_transcript_offline(server, client, tmp_path) -> None:
    cassette = tmp_path / "analysis.cassette.jsonl"
    recorded = await record_session(server, client, cassette, tmp_path / "a.sqlite")
    lines = cassette.read_text().splitlines()
    assert json.loads(lines[0]) == {"mentra_cassette": 1}
    assert len(lines) == 3  # header + two model calls
    replay = ReplayProvider(cassette, name="anthropic")
    async with runtime_with(replay, tmp_path / "b.sqlite") as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5", AgentConfig(system="Weather bot."))
        await agent.send("Weather in SF?")
        replayed = agent.history
    assert replayed == recorded
    assert len(server.requests) == 2  # the replay never touched the server


async def test_a_request_the_cassette_never_saw_names_the_first_difference(server, client, tmp_path) -> None:
    cassette = tmp_path / "c.jsonl"
    await record_session(server, client, cassette, tmp_path / "a.sqlite")
    async with runtime_with(ReplayProvider(cassette, name="anthropic"), tmp_path / "b.sqlite") as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5", AgentConfig(system="Weather bot."))
        with pytest.raises(CassetteMismatch) as caught:
            await agent.send("Weather in Paris?")
    message = str(caught.value)
    assert "messages[0].content[0].text" in message
    assert '"Weather in SF?"' in message and '"Weather in Paris?"' in message


async def test_a_session_longer_than_the_recording_is_a_clear_error(server, client, tmp_path) -> None:
    cassette = tmp_path / "c.jsonl"
    await record_session(server, client, cassette, tmp_path / "a.sqlite")
    async with runtime_with(ReplayProvider(cassette, name="anthropic"), tmp_path / "b.sqlite") as rt:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5", AgentConfig(system="Weather bot."))
        await agent.send("Weather in SF?")
        with pytest.raises(CassetteMismatch, match="no exchange left"):
            await agent.send("And tomorrow?")


async def test_recorded_errors_replay_as_the_same_error(server, client, tmp_path) -> None:
    cassette = tmp_path / "c.jsonl"
    live = AnthropicProvider(api_key="k", base_url=server.url, client=client, **NO_RETRY)
    server.queue(Reply(503, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    async with runtime_with(RecordingProvider(live, cassette), tmp_path / "a.sqlite") as rt:
        with pytest.raises(TransientProviderError) as live_error:
            await rt.spawn("w", "anthropic:m").send("hi")
    async with runtime_with(ReplayProvider(cassette, name="anthropic"), tmp_path / "b.sqlite") as rt:
        with pytest.raises(TransientProviderError) as replayed_error:
            await rt.spawn("w", "anthropic:m").send("hi")
    assert str(replayed_error.value) == str(live_error.value)
    assert replayed_error.value.status_code == 503


async def test_the_builtin_replay_provider_reads_the_cassette_named_in_the_environment(
    server, client, tmp_path, monkeypatch
) -> None:
    cassette = tmp_path / "session.cassette.jsonl"
    recorded = await record_session(server, client, cassette, tmp_path / "a.sqlite")
    monkeypatch.setenv("MENTRA_CASSETTE", str(cassette))
    store = SqliteStore(tmp_path / "b.sqlite")
    rt = Runtime.empty(store=store, tools=[get_weather, get_time, check_gcd])
    try:
        agent = rt.spawn("w", "replay:claude-sonnet-4-5", AgentConfig(system="Weather bot."))
        await agent.send("Weather in SF?")
        assert agent.history == recorded
    finally:
        await rt.aclose()
        store.close()


def test_a_missing_cassette_says_how_to_record_one(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no cassette at .*RecordingProvider"):
        ReplayProvider(tmp_path / "none.jsonl")


async def test_a_prompt_containing_a_key_is_scrubbed_and_still_replays(
    server, client, tmp_path, monkeypatch
) -> None:
    key = "sk-ant-api03-PASTEDBYMISTAKE-000000000000"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    cassette = tmp_path / "c.jsonl"
    live = AnthropicProvider(base_url=server.url, client=client, **NO_RETRY)
    server.queue(Stream(wire("anthropic_text.sse")))
    async with runtime_with(RecordingProvider(live, cassette), tmp_path / "a.sqlite") as rt:
        await rt.spawn("w", "anthropic:m").send(f"is {key} my key?")
    assert key not in cassette.read_text()
    async with runtime_with(ReplayProvider(cassette, name="anthropic"), tmp_path / "b.sqlite") as rt:
        reply = await rt.spawn("w", "anthropic:m").send(f"is {key} my key?")
    assert reply.text == "Hello!"
