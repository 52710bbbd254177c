"""A provider is its class plus one registration: nothing else lists it (issue 31).

The provider below is registered the way the docs' recipe says
(docs/maintainers/where-to-change-what.md); its key variable, tracing name, price
key and image support come from its class alone.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mentra_nb import AgentConfig, Runtime, SqliteStore, UnknownProvider, pricing
from mentra_nb.messages import ContentBlock
from mentra_nb.providers import register_provider
from mentra_nb.providers.openai_chat import OpenAIChatProvider
from mentra_nb.providers.registry import BUILTIN_PROVIDERS, ProviderRegistry
from mentra_nb.providers.replay import RecordingProvider, ReplayProvider
from mentra_nb.runtime import ToolOutput, tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

from .conftest import Stream, wire
from .helpers import runtime_with

ACME_KEY = "acme-sk-ECHOED-BY-A-MODEL-00000000001"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()  # enough for a tool's image block


class AcmeProvider(ScriptedProvider):
    """A provider nothing in mentra-nb knows of: everything about it is said here."""

    key_env = ("ACME_API_KEY",)
    system = "acme.ai"
    price_key = "acme-list"  # its models are priced by the `acme-list:` rows
    tool_result_images = True

    def __init__(self) -> None:
        super().__init__("acme", [text_stream("Hello from Acme")])


@pytest.fixture
def acme() -> Iterator[None]:
    register_provider("acme", AcmeProvider)
    pricing.register("acme-list:big", input=2.0, output=8.0)
    try:
        yield
    finally:
        BUILTIN_PROVIDERS.pop("acme", None)
        pricing.unregister("acme-list:big")


async def test_its_key_never_reaches_a_cassette_recorded_through_another_provider(
    acme, server, client, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("ACME_API_KEY", ACME_KEY)
    cassette = tmp_path / "acme.cassette.jsonl"
    live = OpenAIChatProvider(api_key="sk-test-chat-key-000000000001", base_url=server.url, client=client)
    # The model quotes the key back (it saw it in a tool result, say): the reply is not
    # the runtime's to scrub, so only the cassette's scrubbing keeps it out.
    echo = wire("chat_text.sse").replace(b'" there"', json.dumps(f" {ACME_KEY}").encode())
    server.queue(Stream(echo))
    async with runtime_with(RecordingProvider(live, cassette), tmp_path / "a.sqlite") as rt:
        recorded = await rt.spawn("w", "openai-chat:gpt-4.1").send("what is my Acme key?")
    assert recorded.text == f"Hello {ACME_KEY}"  # the key really went through the recording
    assert ACME_KEY not in cassette.read_text()
    async with runtime_with(ReplayProvider(cassette, name="openai-chat"), tmp_path / "b.sqlite") as rt:
        replayed = await rt.spawn("w", "openai-chat:gpt-4.1").send("what is my Acme key?")
    assert replayed.text == "Hello [redacted]"
    assert len(server.requests) == 1  # the replay never touched the server


async def test_tracing_names_its_system(acme, tmp_path) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = Runtime.empty(store=SqliteStore(tmp_path / "t.sqlite"), tracer_provider=tracer_provider)
    try:
        agent = rt.spawn("w", "acme:big")
        await agent.send("hi")
    finally:
        await rt.aclose()
        tracer_provider.shutdown()
    (run,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent w"]
    assert run.attributes is not None and run.attributes["gen_ai.provider.name"] == "acme.ai"


async def test_pricing_finds_its_price_under_its_price_key(acme, tmp_path) -> None:
    assert pricing.price("acme:big-2026-01-01") == pricing.price("acme-list:big") is not None
    async with runtime_with(AcmeProvider(), tmp_path / "p.sqlite") as rt:
        agent = rt.spawn("w", "acme:big")
        await agent.send("hi")
    usage = agent.usage
    assert usage.cost_usd == pytest.approx((usage.input_tokens * 2.0 + usage.output_tokens * 8.0) / 1e6)
    assert usage.cost_usd > 0


@tool(read_only=True)
def snapshot() -> ToolOutput:
    """Show a picture."""
    return ToolOutput(content="a dot", images=[ContentBlock.image("image/png", PNG)])


async def test_the_errors_listing_known_providers_name_it(acme) -> None:
    with pytest.raises(UnknownProvider, match="Known: .*acme"):
        ProviderRegistry().get("acme-typo-x")
    blind = ScriptedProvider("blind", [tool_use_stream("c1", "snapshot", "{}"), text_stream("ok")])
    blind.tool_result_images = False
    rt = Runtime.empty(providers=[blind], tools=[snapshot])
    try:
        agent = rt.spawn("a", "blind:m", AgentConfig())
        await agent.send("look")
    finally:
        await rt.aclose()
    [result] = agent.history[2].tool_results
    assert result.is_error and "a provider that takes them (acme, anthropic," in result.content
