"""Provider faults at random points against the local SSE server: 429 and 5xx before
the stream, connection resets, streams cut at a random byte, a corrupted event at a
random line, a server that keeps failing. Each turn either completes or fails with a
`MentraError` and is rolled back whole: no run ends half-committed.

The server (tests/providers/conftest.py) replays each protocol's real wire format
and makes the faults real (a reset is a TCP RST, a cut is a chunked body that
never ends).
"""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest

from mentra_nb import MentraError, Message, Runtime, SqliteStore
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.gemini import GeminiProvider
from mentra_nb.providers.openai import OpenAIProvider
from mentra_nb.providers.openai_chat import OpenAIChatProvider
from tests.children import integrity
from tests.providers.conftest import FAST_RETRY, Reply, Reset, Stream, WireServer, wire
from tests.providers.helpers import check_gcd, get_time, get_weather
from tests.reliability.oracle import read_agents

pytestmark = pytest.mark.reliability

CASES = 24

# (provider factory, model, the streams of one complete turn)
PROTOCOLS = [
    (AnthropicProvider, "anthropic:m", ["anthropic_text.sse"]),
    (AnthropicProvider, "anthropic:m", ["anthropic_tool_use.sse", "anthropic_text.sse"]),
    (OpenAIProvider, "openai:o4-mini", ["openai_text.sse"]),
    (OpenAIChatProvider, "openai-chat:gpt-4o", ["chat_text.sse"]),
    (OpenAIChatProvider, "openai-chat:gpt-4o", ["chat_parallel_tools.sse", "chat_text.sse"]),
    (GeminiProvider, "gemini:gemini-2.5-flash", ["gemini_text.sse"]),
]


def _fault(rng: random.Random, body: bytes) -> tuple[str, list[Stream | Reply | Reset]]:
    """One stream's worth of server actions with a fault at a random point."""
    kind = rng.choice(["429", "500", "reset", "cut", "corrupt", "gives_up", "none"])
    if kind == "429":
        return kind, [Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"}),
                      Stream(body)]
    if kind == "500":
        return kind, [Reply(500, {"error": {"message": "internal"}}), Stream(body)]
    if kind == "reset":
        return kind, [Reset(), Stream(body)]
    if kind == "cut":
        return kind, [Stream(body, cut_after=rng.randrange(1, len(body)), chunk=rng.choice([7, 64, 512]))]
    if kind == "corrupt":
        lines = body.split(b"\n")
        data = [i for i, line in enumerate(lines) if line.startswith(b"data: {")]
        i = rng.choice(data)
        lines[i] = lines[i][: rng.randrange(7, len(lines[i]))]  # a JSON object cut short
        return kind, [Stream(b"\n".join(lines))]
    if kind == "gives_up":
        return kind, [Reply(503, "unavailable") for _ in range(FAST_RETRY.max_retries + 1)]
    return kind, [Stream(body)]


@pytest.mark.parametrize("case", range(CASES))
async def test_a_provider_fault_at_a_random_point_never_half_commits_a_turn(case, tmp_path) -> None:
    seed = random.SystemRandom().randrange(10**6)
    rng = random.Random(seed)
    factory, model, wires = rng.choice(PROTOCOLS)
    where = f"(case {case}, seed {seed}, {model}, {wires})"
    server = WireServer()
    db = tmp_path / "faults.mentra.sqlite"
    store = SqliteStore(db)
    try:
        async with httpx.AsyncClient() as client:
            provider = factory(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
            rt = Runtime.empty(store=store, providers=[provider],
                               tools=[get_weather, get_time, check_gcd])
            agent = rt.spawn("w", model)
            faults = []
            for name in wires:
                kind, actions = _fault(rng, wire(name))
                faults.append(kind)
                server.queue(*actions)
            try:
                reply = await asyncio.wait_for(agent.send("hi"), 30)
            except MentraError:
                # Rolled back whole: nothing of the turn stays, its message stays resumable.
                assert agent.history == [], where + f" {faults}"
                assert agent.resumable_turn == Message.user("hi"), where
            else:
                assert reply == agent.history[-1] and agent.history[0] == Message.user("hi"), where
            [stored] = read_agents(db).values()
            assert stored.run is None and stored.pending is None, f"half-committed {where} {faults}"
            assert stored.transcript == agent.history, where
            answered = {r.tool_use_id for m in agent.history for r in m.tool_results}
            assert all(u.id in answered for m in agent.history for u in m.tool_uses), where
            # And the next turn, on a healthy server, works.
            server.script.clear()  # faults the failed turn never reached
            server.queue(*(Stream(wire(name)) for name in wires))
            await asyncio.wait_for(agent.send("again"), 30)
            await rt.aclose()
    finally:
        server.close()
        store.close()
    assert integrity(db) == "ok", where
