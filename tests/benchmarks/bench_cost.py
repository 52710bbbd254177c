"""7. Cost: a 20-turn notebook conversation with and without Anthropic prompt caching.

The agent is the real one (runtime, AnthropicProvider building its real request
bodies, SSE decoding, pricing at the table's prices). What answers it is an
emulation of the Messages API's documented cache accounting, behind an httpx
transport, since no real key runs in CI:

- the prompt is the tools, then the system blocks, then the messages' blocks, in
  that order; a block's size is its JSON length / 4 tokens (an estimate of the
  tokenizer: the ratio between the two runs, not the absolute dollars, is the point);
- a `cache_control` block caches the prefix that ends with it, if that prefix has
  at least 1,024 tokens (Sonnet's minimum); a later request reads the longest
  cached prefix that ends at most 20 blocks before one of its breakpoints
  (`cache_read_input_tokens`), writes the rest up to its last breakpoint
  (`cache_creation_input_tokens`) and pays full price for what follows
  (`input_tokens`); entries live 5 minutes from their last use, and the user
  takes a minute per turn.

Each turn is a notebook question: the model calls a `lookup` tool, reads the
result and answers (two model calls), over the built-in tools' schemas and a
system prompt of a few hundred words.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from tests.benchmarks.conversation import conversation
from tests.benchmarks.report import Table

__all__ = ["AnthropicCacheEmulator", "run"]

TURNS = 20
MIN_CACHEABLE = 1024  # tokens: the smallest prefix Sonnet and Opus cache
LOOKBACK = 20  # blocks before a breakpoint the API checks for an earlier cache entry
TTL = 300.0  # seconds: the default 5-minute cache, refreshed on each read
SECONDS_PER_TURN = 60.0
SYSTEM = " ".join(
    ["You are a data analyst working inside a Jupyter notebook. Answer with numbers "
     "from the data, name the columns you used, and say how sure you are."] * 12)


def _tokens(block: dict[str, Any]) -> int:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return max(1, len(json.dumps(plain, sort_keys=True)) // 4)


class AnthropicCacheEmulator:
    """Answers POST /v1/messages the way the model of this conversation would, with
    usage counted as the API documents prompt caching (see the module docstring)."""

    def __init__(self) -> None:
        self.cache: dict[str, float] = {}  # prefix hash -> expiry (virtual seconds)
        self.now = 0.0
        self.turns = {t.user: t for t in conversation(TURNS)}
        self.calls: list[dict[str, int]] = []

    def blocks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        system = body.get("system") or []
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        blocks = [*body.get("tools", []), *system]
        for message in body["messages"]:
            blocks += [{**b, "role": message["role"]} for b in message["content"]]
        return blocks

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = self.blocks(body)
        sizes = [_tokens(b) for b in blocks]
        hashes, digest = [], hashlib.sha256()
        for block in blocks:
            digest.update(json.dumps({k: v for k, v in block.items() if k != "cache_control"},
                                     sort_keys=True).encode())
            hashes.append(digest.copy().hexdigest())
        breakpoints = [i for i, b in enumerate(blocks) if "cache_control" in b]
        self.cache = {h: t for h, t in self.cache.items() if t > self.now}
        read_end = 0  # blocks [0, read_end) come from the cache
        for bp in breakpoints:
            for end in range(bp, max(-1, bp - LOOKBACK), -1):
                if hashes[end] in self.cache:
                    read_end = max(read_end, end + 1)
                    break
        write_end = read_end
        for bp in breakpoints:
            if bp + 1 > read_end and sum(sizes[: bp + 1]) >= MIN_CACHEABLE:
                write_end = max(write_end, bp + 1)
        for end in range(read_end):
            if hashes[end] in self.cache:
                self.cache[hashes[end]] = self.now + TTL  # a read refreshes the entry
        for bp in breakpoints:
            if bp < write_end:
                self.cache[hashes[bp]] = self.now + TTL
        usage = {"cache_read_input_tokens": sum(sizes[:read_end]),
                 "cache_creation_input_tokens": sum(sizes[read_end:write_end]),
                 "input_tokens": sum(sizes[write_end:])}
        self.calls.append(usage)
        return usage

    def reply(self, body: dict[str, Any]) -> bytes:
        usage = self.usage(body)
        last = body["messages"][-1]["content"]
        question = next((m for m in reversed(body["messages"])
                         if m["role"] == "user" and m["content"][0]["type"] == "text"), None)
        turn = self.turns[question["content"][0]["text"]] if question else None
        if last[-1]["type"] == "text" and turn is not None:
            blocks = [{"type": "tool_use", "id": turn.call_id, "name": "lookup", "input": {}}]
            deltas = [{"type": "input_json_delta", "partial_json": turn.tool_input_json}]
            text, stop = turn.tool_input_json, "tool_use"
        else:
            answer = turn.answer if turn is not None else "done"
            blocks, deltas = [{"type": "text", "text": ""}], [{"type": "text_delta", "text": answer}]
            text, stop = answer, "end_turn"
            self.now += SECONDS_PER_TURN  # the user reads the answer and writes the next cell
        events = [("message_start", {"type": "message_start", "message": {
            "id": f"msg_{len(self.calls)}", "type": "message", "role": "assistant", "content": [],
            "model": body["model"], "usage": {**usage, "output_tokens": 1}}})]
        for index, (block, delta) in enumerate(zip(blocks, deltas, strict=True)):
            events += [("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": block}),
                       ("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": delta}),
                       ("content_block_stop", {"type": "content_block_stop", "index": index})]
        events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                                      "usage": {"output_tokens": max(1, len(text) // 4)}}),
                   ("message_stop", {"type": "message_stop"})]
        return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


async def _conversation_cost(model: str, prompt_cache: bool) -> tuple[Any, AnthropicCacheEmulator]:
    import httpx

    from mentra_nb import AgentConfig, Runtime, SqliteStore, tool
    from mentra_nb.providers.anthropic import AnthropicProvider

    emulator = AnthropicCacheEmulator()
    results = {t.tool_input["query"]: t.tool_result for t in conversation(TURNS)}

    async def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=emulator.reply(json.loads(request.content)))

    @tool(read_only=True)
    def lookup(query: str = "") -> str:
        """Look the question up in the notebook's data frames."""
        return results.get(query, "no data")

    with tempfile.TemporaryDirectory() as folder:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handle))
        provider = AnthropicProvider(api_key="sk-ant-bench", base_url="http://anthropic.invalid",
                                     client=client)
        rt = Runtime(store=SqliteStore(Path(folder) / "bench.sqlite"), providers=[provider],
                     tools=[lookup], runtime_id="bench", workspace=folder)
        try:
            agent = rt.spawn("analyst", model, AgentConfig(system=SYSTEM, prompt_cache=prompt_cache))
            for turn in conversation(TURNS):
                await agent.send(turn.user)
            return agent.usage, emulator
        finally:
            await rt.aclose()
            await client.aclose()


def run() -> list[Table]:
    from mentra_nb import pricing

    table = Table(f"Cost of a {TURNS}-turn notebook conversation (2 model calls a turn), "
                  f"at the price table of {pricing.PRICES_CHECKED}",
                  ["model", "caching", "prompt tokens", "read from cache", "written to cache",
                   "output tokens", "cost", "cached / uncached"])
    # Sonnet only: its 1,024-token cache minimum is the one the emulation uses.
    for model in ("anthropic:claude-sonnet-4-5",):
        cached, _ = asyncio.run(_conversation_cost(model, True))
        plain, _ = asyncio.run(_conversation_cost(model, False))
        for label, usage in (("off", plain), ("on", cached)):
            table.add(model.split(":")[1], label, f"{usage.prompt_tokens:,}",
                      f"{usage.cache_read_tokens:,}", f"{usage.cache_creation_tokens:,}",
                      f"{usage.output_tokens:,}", pricing.format_cost(usage.cost_usd),
                      f"{cached.cost_usd / plain.cost_usd:.2f}x" if label == "on" else "")
    table.notes.append(
        "Usage comes from an emulation of the Messages API's documented cache accounting (see "
        "bench_cost.py; tokens estimated as JSON characters / 4), the dollars from "
        "mentra_nb.pricing; the agent, its request bodies and the pricing are the real ones.")
    return [table]
