"""11. A network store and the runtime's event loop: 10 agents streaming 3 turns each
with Postgres behind a TCP proxy that adds 5 ms each way (a managed database in
another zone), against the same on a SQLite file.

The proxy is a real asyncio TCP relay on 127.0.0.1 in a thread of its own: every
chunk read in either direction is written onward 5 ms after it arrived (in
order; the delay is latency, not a throttle). The model is the offline `test`
provider pacing its words (100 deltas/s per agent, ~1 s a turn). While the
agents stream, a probe on the runtime's loop sleeps 5 ms again and again; a
stall is how late it woke. "Store calls on the loop" is the store as it was
before `StoreIO` (every call blocking the loop: `network = False`), measured in
the same run.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tests.benchmarks.report import Table, ratio

__all__ = ["LatencyProxy", "run"]

AGENTS = 10
TURNS = 3
WORDS = 100
DELAY = 0.01  # seconds per streamed delta
LATENCY = 0.005  # seconds added each way by the proxy
PROBE = 0.005  # the loop probe's sleep


class LatencyProxy:
    """A TCP relay on 127.0.0.1 to `port` that delays every chunk by `latency`
    seconds in each direction, on an event loop in a thread of its own."""

    def __init__(self, port: int, latency: float) -> None:
        self.target = port
        self.latency = latency
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="latency-proxy", daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._relay, "127.0.0.1", 0), self.loop).result(10)
        self.port: int = self._server.sockets[0].getsockname()[1]

    def dsn(self, direct: str) -> str:
        """`direct` (a DSN on 127.0.0.1) through this proxy."""
        parts = urlsplit(direct)
        netloc = parts.netloc.rsplit(":", 1)[0] + f":{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    async def _relay(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        try:
            server_in, server_out = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            client_out.close()
            return
        # Cancelled by `close`: ended quietly (asyncio logs a connection callback's cancel).
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(self._pipe(client_in, server_out), self._pipe(server_in, client_out),
                                 return_exceptions=True)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def forward() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                sink.write(chunk)
                await sink.drain()
            sink.close()

        forwarding = asyncio.ensure_future(forward())
        try:
            while chunk := await source.read(65536):
                queue.put_nowait((time.monotonic() + self.latency, chunk))
        finally:
            queue.put_nowait((0.0, b""))
            await asyncio.gather(forwarding, return_exceptions=True)

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            relays = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in relays:
                task.cancel()
            await asyncio.gather(*relays, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


async def _stream(store: Any) -> tuple[float, list[float]]:
    """(wall seconds, loop stalls in seconds) of AGENTS agents streaming TURNS turns."""
    from mentra_nb import Runtime
    from mentra_nb.providers.test import TestProvider

    rt = Runtime.empty(store=store, providers=[TestProvider(name="paced", chunk_delay=DELAY)])
    agents = [rt.spawn(f"a{i}", "paced:default") for i in range(AGENTS)]
    words = " ".join(f"w{i}" for i in range(WORDS))
    stalls: list[float] = []
    running = True

    async def probe() -> None:
        while running:
            started = time.perf_counter()
            await asyncio.sleep(PROBE)
            stalls.append(max(0.0, time.perf_counter() - started - PROBE))

    async def converse(agent: Any) -> None:
        for _ in range(TURNS):
            await agent.send(words)

    probing = asyncio.ensure_future(probe())
    started = time.perf_counter()
    await asyncio.gather(*(converse(a) for a in agents))
    wall = time.perf_counter() - started
    running = False
    await probing
    for agent in agents:
        assert len(agent.history) == 2 * TURNS
    await rt.aclose()
    return wall, stalls


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run() -> list[Table]:
    from tests.postgres import PostgresServer, find_binaries

    if find_binaries() is None:
        raise RuntimeError("no Postgres server binaries (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="mentra-bench-stall-"))
    server = PostgresServer.start(folder / "pg")
    proxy = LatencyProxy(server.port, LATENCY)
    try:
        return [_run(server, proxy, folder)]
    finally:
        proxy.close()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _run(server: Any, proxy: LatencyProxy, folder: Path) -> Table:
    from mentra_nb import PostgresStore, SqliteStore

    class OnTheLoop(PostgresStore):
        network = False  # as before StoreIO: every call blocks the runtime's loop

    def sqlite() -> Any:
        return SqliteStore(folder / f"s{time.monotonic_ns()}.sqlite")

    def postgres(kind: type[PostgresStore]) -> Any:
        return lambda: kind(proxy.dsn(server.create_database("stall")))

    cases = [("SQLite file", sqlite),
             (f"Postgres +{LATENCY * 1000:g} ms each way, store calls on the loop (before)",
              postgres(OnTheLoop)),
             (f"Postgres +{LATENCY * 1000:g} ms each way, store calls off the loop (StoreIO)",
              postgres(PostgresStore))]
    table = Table(
        f"A network store and the event loop: {AGENTS} agents x {TURNS} streamed turns "
        f"(~{WORDS * DELAY:g} s each)",
        ["store", "wall s", "vs SQLite", "loop stall p50 ms", "p99 ms", "max ms"],
    )
    base = 0.0
    for name, make in cases:
        store = make()
        try:
            wall, stalls = asyncio.run(_stream(store))
        finally:
            store.close()
        base = base or wall
        table.add(name, wall, ratio(base, wall), _ms(stalls, 0.5), _ms(stalls, 0.99), max(stalls) * 1000)
    table.notes += [
        f"the proxy: an asyncio TCP relay on 127.0.0.1 delaying each chunk {LATENCY * 1000:g} ms "
        "in each direction; targets: wall <= 1.2x SQLite, loop stall p99 <= 20 ms",
        f"loop stall: how late a {PROBE * 1000:g} ms sleep on the runtime's loop woke, sampled "
        "throughout the run",
    ]
    return table


if __name__ == "__main__":
    print(run()[0].text())
