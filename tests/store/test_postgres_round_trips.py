"""A run's steps cost PostgresStore few round trips: across a network every one
is a wait (5 ms each way to a database in another zone), and a step taking one
per statement (BEGIN, the lease check, the head, each write, COMMIT: four to
eight) made a run of ten agents 1.5x slower than on SQLite.

Counted on the wire, by a TCP relay on 127.0.0.1 that reads the client's
protocol messages: the client waits for the server after each Sync or Flush
(one wait for the two sent together) and each simple Query, so those are its
round trips (whatever the timing)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from mentra_nb import AgentStatus, PostgresStore
from mentra_nb.errors import LeaseLost, StoreError
from mentra_nb.messages import Message, Usage
from mentra_nb.store.base import PendingTurn, RunRecord
from mentra_nb.testing.store_conformance import _spawn

# Frontend messages after which the client waits for the server's answer: a
# simple Query, and a Sync or Flush (which end a run of extended-protocol messages).
SYNCS = {b"S", b"H"}
# Untyped requests before the startup message: SSLRequest, GSSENCRequest.
PRE_STARTUP = {80877103, 80877104}


class CountingRelay:
    """Relays TCP connections to `port`, counting the client's waits for the server."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.waits = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def dsn(self, direct: str) -> str:
        parts = urlsplit(direct)
        return urlunsplit(parts._replace(netloc=parts.netloc.rsplit(":", 1)[0] + f":{self.port}"))

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(("127.0.0.1", self.target))
            self._sockets += [client, server]
            threading.Thread(target=self._client_to_server, args=(client, server), daemon=True).start()
            threading.Thread(target=_pipe, args=(server, client), daemon=True).start()

    def _client_to_server(self, client: socket.socket, server: socket.socket) -> None:
        # Counted before it is relayed: the server's answer, and so the end of the
        # step that sent it, comes after the count.
        previous = b""
        for kind, message in _frontend_messages(client):
            # A Sync sent with a Flush (as psycopg ends a pipeline) is one wait.
            if kind == b"Q" or (kind in SYNCS and previous not in SYNCS):
                with self._lock:
                    self.waits += 1
            previous = kind
            try:
                server.sendall(message)
            except OSError:
                return

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass


def _frontend_messages(client: socket.socket) -> Iterator[tuple[bytes, bytes]]:
    """Each message the client sends: (its type byte, b"" before startup; its bytes)."""
    buffer = b""

    def take(n: int) -> bytes | None:
        nonlocal buffer
        while len(buffer) < n:
            try:
                chunk = client.recv(65536)
            except OSError:
                return None
            if not chunk:
                return None
            buffer += chunk
        taken, buffer = buffer[:n], buffer[n:]
        return taken

    while True:  # untyped: a length, then a request's code or the protocol version
        head = take(8)
        rest = None if head is None else take(struct.unpack("!i", head[:4])[0] - 8)
        if head is None or rest is None:
            return
        yield b"", head + rest
        if struct.unpack("!i", head[4:])[0] not in PRE_STARTUP:
            break
    while (kind := take(1)) is not None:
        size = take(4)
        body = None if size is None else take(struct.unpack("!i", size)[0] - 4)
        if size is None or body is None:
            return
        yield kind, kind + size + body


@pytest.fixture
def counted(pg_dsn):
    relay = CountingRelay(urlsplit(pg_dsn).port or 5432)
    try:
        # One connection: every step's messages cross the relay the same way.
        store = PostgresStore(relay.dsn(pg_dsn), min_size=1, max_size=1)
        try:
            yield relay, store
        finally:
            store.close()
    finally:
        relay.close()


def _waits_of(relay: CountingRelay, step: Callable[[], None]) -> int:
    before = relay.waits
    step()
    return relay.waits - before


def test_each_step_of_a_run_is_two_round_trips(counted):
    relay, store = counted
    agent_id, token = _spawn(store, "writer")
    waiting = AgentStatus.awaiting_model()
    steps = {
        "begin_run": lambda: store.begin_run(
            agent_id, RunRecord(generation=1, baseline=0, started_at=1.0), [Message.user("hi")],
            status=waiting, token=token, clear_resumable=True),
        "checkpoint_pending": lambda: store.checkpoint_pending(
            agent_id, PendingTurn(run_generation=1, current_text="half"), token=token),
        "commit_assistant": lambda: store.commit_assistant(
            agent_id, Message.assistant("tool call"), usage=Usage(), status=waiting, token=token),
        "append_messages": lambda: store.append_messages(agent_id, [Message.user("result")], token=token),
        "finish_run": lambda: store.finish_run(
            agent_id, status=AgentStatus.finished(), token=token, append=[Message.assistant("done")],
            usage=Usage()),
    }
    waits = {name: _waits_of(relay, step) for name, step in steps.items()}
    # Before: 8, 4, 7, 6 and 8 (a round trip per statement).
    assert waits == dict.fromkeys(steps, 2)
    assert [m.text for m in store.load_messages(agent_id)] == ["hi", "tool call", "result", "done"]


def test_a_refused_step_leaves_its_connection_ready_for_the_next(counted):
    """A step refused halfway (after the fence and head were read, the transaction
    open in pipeline mode) rolls back: the pool's one connection serves the next."""
    _, store = counted
    agent_id, token = _spawn(store, "writer")
    run = RunRecord(generation=1, baseline=0, started_at=1.0)
    with pytest.raises(LeaseLost):
        store.begin_run(agent_id, run, [Message.user("hi")], status=AgentStatus.awaiting_model(),
                        token="not-the-lease")
    with pytest.raises(StoreError, match="stored messages"):
        store.begin_run(agent_id, run.model_copy(update={"baseline": 3}), [Message.user("hi")],
                        status=AgentStatus.awaiting_model(), token=token)
    store.begin_run(agent_id, run, [Message.user("hi")], status=AgentStatus.awaiting_model(), token=token)
    store.finish_run(agent_id, status=AgentStatus.finished(), token=token)
    stored = store.load_agent(agent_id)
    assert stored is not None and stored.run is None
    assert [m.text for m in stored.transcript] == ["hi"]
