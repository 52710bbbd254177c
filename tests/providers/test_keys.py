"""Keys come from arguments, the environment or a .env file, and never show anywhere."""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path

import pytest

from mentra_nb import ProviderAuthError, Runtime, SqliteStore
from mentra_nb.providers._keys import Secret, read_dotenv, redact, resolve_key
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.openai import OpenAIProvider
from mentra_nb.providers.replay import RecordingProvider

from .conftest import FAST_RETRY, Reply, Stream, wire
from .helpers import ask, collect

KEY = "sk-ant-api03-SECRETSECRETSECRET-0123456789abcdef"


def test_a_secret_never_prints_its_value() -> None:
    secret = Secret(KEY, "ANTHROPIC_API_KEY")
    for text in (repr(secret), str(secret), f"{secret}", repr([secret]), repr({"k": secret})):
        assert KEY not in text and "SECRET" not in text
    assert "ANTHROPIC_API_KEY" in repr(secret)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(secret)


def test_a_provider_repr_shows_no_key() -> None:
    provider = AnthropicProvider(api_key=KEY, base_url="http://127.0.0.1:9")
    assert KEY not in repr(provider) and "SECRET" not in repr(provider.api_key())


def test_keys_are_read_from_env_then_dotenv_beside_the_notebook(monkeypatch, tmp_path: Path) -> None:
    notebook_dir = tmp_path / "project"
    notebook_dir.mkdir()
    (notebook_dir / ".env").write_text('# keys\nexport OPENAI_API_KEY="sk-from-dotenv-beside-notebook"\n')
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-cwd-dotenv # a comment\n")
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook_dir / "analysis.ipynb"))
    key = resolve_key(None, ["OPENAI_API_KEY"], provider="openai")
    assert key is not None and key.reveal() == "sk-from-dotenv-beside-notebook"
    assert key.source == f"{notebook_dir / '.env'} (OPENAI_API_KEY)"
    monkeypatch.delenv("JPY_SESSION_NAME")
    key = resolve_key(None, ["OPENAI_API_KEY"], provider="openai")
    assert key is not None and key.reveal() == "sk-from-cwd-dotenv"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-environment")
    key = resolve_key(None, ["OPENAI_API_KEY"], provider="openai")
    assert key is not None and (key.reveal(), key.source) == ("sk-from-environment", "OPENAI_API_KEY")
    key = resolve_key("sk-explicit", ["OPENAI_API_KEY"], provider="openai")
    assert key is not None and key.reveal() == "sk-explicit"


def test_the_dotenv_file_is_not_loaded_into_the_environment(monkeypatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("GEMINI_API_KEY='AIza-from-file'\n")
    assert read_dotenv(tmp_path / ".env") == {"GEMINI_API_KEY": "AIza-from-file"}
    resolve_key(None, ["GEMINI_API_KEY"], provider="gemini")
    assert "GEMINI_API_KEY" not in os.environ


def test_a_missing_key_names_every_variable_it_looked_at() -> None:
    with pytest.raises(ProviderAuthError, match="set GEMINI_API_KEY or GOOGLE_API_KEY"):
        resolve_key(None, ["GEMINI_API_KEY", "GOOGLE_API_KEY"], provider="gemini")


def test_redact_masks_the_key_and_key_shaped_strings() -> None:
    text = f"bad key {KEY}; also sk-proj-abcdefghijklmnopqrstuvwx and AIzaSyA1234567890123456789012345678901"
    cleaned = redact(text, [Secret(KEY)])
    assert KEY not in cleaned and "sk-proj-abc" not in cleaned and "AIzaSy" not in cleaned
    assert cleaned.count("[redacted]") == 3


async def test_a_key_reaches_no_error_log_store_or_cassette(
    server, client, monkeypatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The whole path: an env key, a server that quotes it back in a 401, a successful run,
    recording to a cassette. The key must appear only in the request header."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    live = AnthropicProvider(base_url=server.url, client=client, retry=FAST_RETRY)
    cassette = tmp_path / "session.cassette.jsonl"
    recording = RecordingProvider(live, cassette)
    db = tmp_path / "keys.mentra.sqlite"
    server.queue(
        Reply(401, {"type": "error", "error": {"type": "authentication_error",
                                               "message": f"Incorrect API key provided: {KEY}"}}),
        Stream(wire("anthropic_text.sse")),
    )
    store = SqliteStore(db)
    rt = Runtime.empty(store=store, providers=[recording])
    failures: list[str] = []
    try:
        agent = rt.spawn("w", "anthropic:claude-sonnet-4-5")
        with pytest.raises(ProviderAuthError) as caught:
            await agent.send("hello")
        failures += [str(caught.value), repr(caught.value), repr(agent.snapshot)]
        failures += [repr(e) for e in agent.history]
        # The user pastes the key into a prompt by mistake; the cassette still must not hold it.
        reply = await agent.send(f"my key is {KEY}")
        assert reply.text == "Hello!"
        failures += [repr(agent.snapshot), repr(live), repr(recording)]
    finally:
        await rt.aclose()
        store.close()
    assert server.requests[0].headers["x-api-key"] == KEY  # it did reach the server, in a header
    for text in failures:
        assert KEY not in text
    assert KEY not in caplog.text
    assert KEY.encode() not in cassette.read_bytes()
    assert b"[redacted]" in cassette.read_bytes()
    for data in _files_bytes(tmp_path, "keys.mentra.sqlite*"):
        # The store keeps what the user typed (their choice), but never a key the runtime held.
        assert data.count(KEY.encode()) <= data.count(b"my key is ")


def _files_bytes(folder: Path, pattern: str) -> list[bytes]:
    return [path.read_bytes() for path in folder.glob(pattern)]


async def test_openai_auth_errors_do_not_repeat_the_partially_masked_key(server, client) -> None:
    key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    provider = OpenAIProvider(api_key=key, base_url=server.url, client=client)
    server.queue(Reply(401, {"error": {"message": "Incorrect API key provided: sk-proj-********************6789.",
                                       "type": "invalid_request_error", "code": "invalid_api_key"}}))
    with pytest.raises(ProviderAuthError) as caught:
        await collect(provider.stream(ask()))
    assert "6789" not in str(caught.value)
    assert "an explicit argument" in str(caught.value)
    assert "********" not in str(caught.value)


def test_redact_leaves_ordinary_words_that_contain_sk_alone() -> None:
    text = "run the task-management-framework-migration and ask-questions-with-long-names"
    assert redact(text) == text
