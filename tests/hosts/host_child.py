"""A kernel on "another host": a runtime whose leases name `MENTRA_HOST_ID`
(set by the test), on the store the test gives it.

    python -m tests.hosts.host_child STORE MODE

STORE is a SQLite file's path or a Postgres DSN. MODE:

- `own`: drives `writer` (a plain agent) and `lead` with teammate `mate`, and
  waits for mail. Prints `READY <writer id> <lead id> <mate id>`, then for every
  run that starts `WOKE <agent name> <the run's last user message as JSON>` and
  for every run that ends `DONE <agent name> <reply>`.
- `stream`: drives `writer` through one long streamed reply (about 10 s).
  Prints `STREAMING <writer id>` once it streams, then `LOST <error>` if its lease
  was taken over (a write refused), else `FINISHED`; then waits to be killed.

The lease TTL is `MENTRA_TEST_LEASE_TTL` seconds (short, for takeovers in tests).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator

from mentra_nb import LeaseLost, ModelInfo, ProviderRequest, Runtime
from mentra_nb.providers.events import ProviderEvent
from mentra_nb.store import open_store
from mentra_nb.testing import text_stream
from tests.children import say, until_killed

RUNTIME_ID = os.environ.get("MENTRA_TEST_RUNTIME_ID", "shared")
LONG_REPLY = " ".join(f"word{i}" for i in range(200))


def last_user_text(request: ProviderRequest) -> str:
    for message in reversed(request.messages):
        if message.role.value == "user" and message.text:
            return message.text
    return ""


class HostProvider:
    """`own`: answers `echo: <last user text>`; `stream`: a long reply, slowly."""

    name = "host"

    def __init__(self, mode: str) -> None:
        self.mode = mode

    async def list_models(self) -> list[ModelInfo]:
        return []

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        if self.mode == "stream":
            script = text_stream(LONG_REPLY, chunks=200, delay=0.05)
        else:
            say(f"WOKE {request.model} {json.dumps(last_user_text(request))}")
            script = text_stream(f"echo: {last_user_text(request)}", chunks=2)
        async for event in script.play():
            yield event


def report_runs(agent) -> None:
    def on_event(event) -> None:
        if event.type == "run_finished":
            say(f"DONE {agent.name} {json.dumps(agent.history[-1].text)}")

    agent.on_event(on_event)


async def main(location: str, mode: str) -> None:
    ttl = float(os.environ.get("MENTRA_TEST_LEASE_TTL", "30"))
    store = open_store(location)
    rt = Runtime.empty(store=store, providers=[HostProvider(mode)], runtime_id=RUNTIME_ID,
                       lease_ttl=ttl, owner_label=f"kernel {os.environ['MENTRA_HOST_ID']}-kernel")
    if mode == "own":
        # Each agent's model is named after it, so WOKE lines say who runs.
        writer = rt.spawn("writer", "host:writer")
        lead = rt.spawn("lead", "host:lead")
        mate = await lead.spawn_teammate("mate", "helper", model="host:mate")
        for agent in (writer, lead, mate):
            report_runs(agent)
        say(f"READY {writer.id} {lead.id} {mate.id}")
    else:
        writer = rt.spawn("writer", "host:writer")
        started = asyncio.Event()
        writer.on_event(lambda e: started.set() if e.type == "text_delta" else None)
        run = asyncio.ensure_future(writer.send("write at length"))
        await started.wait()
        say(f"STREAMING {writer.id}")
        try:
            await run
            say("FINISHED")
        except LeaseLost as err:
            say(f"LOST {err}")
    await until_killed()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
