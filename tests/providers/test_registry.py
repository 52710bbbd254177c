"""Built-in providers are made on first use, from the environment."""

from __future__ import annotations

import pytest

from mentra_nb import Runtime, SqliteStore, UnknownProvider
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.gemini import GeminiProvider
from mentra_nb.providers.openai import OpenAIProvider
from mentra_nb.providers.registry import ProviderRegistry

from .conftest import Stream, wire
from .helpers import runtime_with


def test_a_typo_in_the_provider_suggests_the_right_one() -> None:
    with pytest.raises(UnknownProvider, match="unknown provider 'antropic'; did you mean 'anthropic'") as caught:
        ProviderRegistry().get("antropic")
    for name in ("anthropic", "openai", "openai-chat", "openrouter", "ollama", "gemini", "local", "test"):
        assert name in str(caught.value)


def test_builtins_are_created_without_keys_and_find_them_at_first_use() -> None:
    registry = ProviderRegistry()
    assert isinstance(registry.get("anthropic"), AnthropicProvider)
    assert isinstance(registry.get("openai"), OpenAIProvider)
    assert isinstance(registry.get("gemini"), GeminiProvider)
    assert registry.get("anthropic") is registry.get("anthropic")
    assert not registry.get("anthropic").has_key()


async def test_spawn_with_a_model_id_alone_uses_the_sdk_environment_variables(
    server, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-0000000001")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.queue(Stream(wire("anthropic_text.sse")))
    store = SqliteStore(tmp_path / "env.mentra.sqlite")
    rt = Runtime.empty(store=store)
    try:
        reply = await rt.spawn("w", "anthropic:claude-sonnet-4-5").send("hi")
    finally:
        await rt.aclose()
        store.close()
    assert reply.text == "Hello!"
    assert server.requests[0].headers["x-api-key"] == "sk-ant-from-env-0000000001"


async def test_an_explicit_provider_instance_wins_over_the_builtin(server, client, db_path) -> None:
    mine = AnthropicProvider(api_key="explicit", base_url=server.url, client=client)
    server.queue(Stream(wire("anthropic_text.sse")))
    async with runtime_with(mine, db_path) as rt:
        await rt.spawn("w", "anthropic:m").send("hi")
        assert rt.providers.get("anthropic") is mine
    assert server.requests[0].headers["x-api-key"] == "explicit"
