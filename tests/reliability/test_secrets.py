"""Secrets: a recognisable fake key in every provider variable, agents run through
every HTTP provider against the local wire server (successes, and errors whose
bodies echo the key back, as real servers do), a cassette recorded, a kernel
driven through `%mentra` magics. Then the state files, the cassette, the
outputs, the error messages and a DEBUG log are scanned: the key appears nowhere.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from pathlib import Path

import httpx
import pytest

from mentra_nb import MentraError, Runtime, SqliteStore
from mentra_nb.notebook._rendering import transcript_markdown
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.gemini import GeminiProvider
from mentra_nb.providers.openai import OpenAIProvider
from mentra_nb.providers.openai_chat import OpenAIChatProvider
from mentra_nb.providers.replay import RecordingProvider
from tests.kernels import Kernel
from tests.providers.conftest import FAST_RETRY, Reply, Stream, WireServer, wire
from tests.providers.helpers import check_gcd, get_time, get_weather

pytestmark = pytest.mark.reliability

KEY = f"sk-mentra-CANARY-{secrets.token_hex(12)}"
VARIABLES = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY",
             "GOOGLE_API_KEY", "VLLM_API_KEY", "LLAMACPP_API_KEY", "LMSTUDIO_API_KEY"]
PROVIDERS = [
    (AnthropicProvider, "anthropic:m", "anthropic_tool_use.sse", "anthropic_text.sse"),
    (OpenAIProvider, "openai:o4-mini", "openai_reasoning_tools.sse", "openai_text.sse"),
    (OpenAIChatProvider, "openai-chat:gpt-4o", "chat_parallel_tools.sse", "chat_text.sse"),
    (GeminiProvider, "gemini:gemini-2.5-flash", "gemini_tools.sse", "gemini_text.sse"),
]


def _echo(status: int) -> Reply:
    """An error whose body quotes the key, as e.g. OpenAI's 401 does."""
    return Reply(status, {"error": {"message": f"Incorrect API key provided: {KEY}. You can find "
                                               "your API key at https://example.invalid",
                                    "type": "invalid_request_error"}})


@pytest.fixture
def canary_env(monkeypatch, tmp_path):
    for name in VARIABLES:
        monkeypatch.setenv(name, KEY)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")


def _scan(paths: list[Path], texts: list[str]) -> list[str]:
    found = [str(p) for p in paths if p.exists() and KEY.encode() in p.read_bytes()]
    found += [f"text {i}: {t[:200]!r}" for i, t in enumerate(texts) if KEY in t]
    return found


async def test_no_key_reaches_a_file_an_output_an_error_or_a_log(canary_env, tmp_path) -> None:
    log_file = tmp_path / "debug.log"
    handler = logging.FileHandler(log_file)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    texts: list[str] = []
    server = WireServer()
    try:
        async with httpx.AsyncClient() as client:
            for factory, model, tool_wire, text_wire in PROVIDERS:
                name = model.split(":")[0]
                db = tmp_path / f"{name}.mentra.sqlite"
                store = SqliteStore(db)
                inner = factory(base_url=server.url, client=client, retry=FAST_RETRY)  # key from env
                provider = RecordingProvider(inner, tmp_path / f"{name}.cassette.jsonl")
                rt = Runtime.empty(store=store, providers=[provider],
                                   tools=[get_weather, get_time, check_gcd])
                agent = rt.spawn("w", model)
                server.queue(Stream(wire(tool_wire)), Stream(wire(text_wire)))
                await asyncio.wait_for(agent.send("What is the weather?"), 30)
                for status in (401, 400):
                    server.queue(_echo(status))
                    try:
                        await asyncio.wait_for(agent.send("again"), 30)
                    except MentraError as err:
                        texts += [str(err), repr(err)]
                texts += [repr(agent), repr(provider), repr(inner), repr(agent.snapshot),
                          transcript_markdown(agent.history)]
                await rt.aclose()
                store.close()
        # The server saw the key (so it was really sent), and nothing else did.
        assert any(KEY in r.headers.get("authorization", "") + r.headers.get("x-api-key", "")
                   + r.headers.get("x-goog-api-key", "") + r.path for r in server.requests)
    finally:
        server.close()
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
    files = [p for p in tmp_path.iterdir() if p.name != ".env"]
    assert log_file.stat().st_size > 0
    assert not _scan(files, texts), "the key leaked"


def test_no_key_reaches_a_notebooks_outputs(canary_env, tmp_path) -> None:
    server = WireServer()
    os.environ["ANTHROPIC_BASE_URL"] = server.url  # the kernel inherits the environment
    kernel = None
    outputs: list[str] = []
    try:
        kernel = Kernel(tmp_path)

        def run(code: str) -> None:
            def collect(msg: dict) -> None:
                content = msg["content"]
                if msg["msg_type"] in ("stream", "error", "execute_result", "display_data"):
                    outputs.append(repr(content))

            kernel.client.execute_interactive(code, timeout=60, output_hook=collect)

        server.queue(Stream(wire("anthropic_text.sse")), _echo(401))
        run("%load_ext mentra_nb")
        run("%config MentraMagics.default_model = 'anthropic:claude-sonnet-4-5'")
        run("%mentra spawn writer")
        run("%mentra send writer --wait hello")
        run("%mentra send writer --wait again")
        run("%mentra list")
        run("import mentra_nb.notebook as nb; a = nb.session().agent('writer'); print(a.status, a.history)")
        assert any("Hello!" in out for out in outputs), outputs  # the model really answered
    finally:
        os.environ.pop("ANTHROPIC_BASE_URL", None)
        if kernel is not None:
            kernel.close()
        server.close()
    # Every file, the state folder's too (.mentra/analysis.sqlite and its WAL).
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != ".env"]
    assert not _scan(files, outputs), "the key leaked"


async def test_a_key_prefix_quoted_in_an_error_body_is_masked_everywhere(canary_env, tmp_path) -> None:
    """Issue 14.1: a provider that quotes the first 12 characters of the key it
    rejected must not put them in the error, the stored status or a log line."""
    prefix = KEY[:12]
    log_file = tmp_path / "debug.log"
    handler = logging.FileHandler(log_file)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    server = WireServer()
    texts: list[str] = []
    db = tmp_path / "prefix.mentra.sqlite"
    try:
        async with httpx.AsyncClient() as client:
            store = SqliteStore(db)
            provider = OpenAIChatProvider(base_url=server.url, client=client, retry=FAST_RETRY)
            rt = Runtime.empty(store=store, providers=[provider])
            agent = rt.spawn("w", "openai-chat:gpt-4o")
            for body in (f"Incorrect API key provided: {prefix}...", f"key {prefix}**********{KEY[-4:]} is bad"):
                server.queue(Reply(400, {"error": {"message": body, "type": "invalid_request_error"}}))
                with pytest.raises(MentraError) as caught:
                    await asyncio.wait_for(agent.send("hi"), 30)
                texts += [str(caught.value), repr(agent.snapshot)]
            await rt.aclose()
            store.close()
    finally:
        server.close()
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
    assert any("[redacted]" in t for t in texts), texts
    leaks = [t for t in texts if prefix in t]
    leaks += [str(p) for p in (db, log_file) if prefix.encode() in p.read_bytes()]
    assert not leaks, "a key prefix leaked"
