"""A real HTTP server on 127.0.0.1 that replays provider wire formats.

Tests queue what the server should do with each request it receives (stream a
recorded SSE transcript, answer with an error status, reset the connection,
cut the stream halfway) and afterwards read back every request it got. It
speaks HTTP/1.1 by hand over a socket so faults are real faults: a reset is a
TCP RST, a cut is a chunked body that never ends.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from mentra_nb.providers._http import RetryPolicy

WIRE = Path(__file__).parent / "wire"

# Retries in tests: quick, but still real backoff with jitter.
FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=2.0, budget_s=10)


def wire(name: str) -> bytes:
    """A recorded SSE transcript from tests/providers/wire/, byte for byte."""
    return (WIRE / name).read_bytes()


@dataclass
class Stream:
    """Answer 200 with `body` as an event stream, in `chunk`-byte writes.

    `cut_after` stops after that many bytes and drops the connection without
    ending the chunked body; `pause` sleeps between writes.
    """

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunk: int = 64
    cut_after: int | None = None
    pause: float = 0.0
    content_type: str = "text/event-stream"


@dataclass
class Reply:
    """A plain (non-streaming) answer."""

    status: int
    body: bytes | str | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Reset:
    """Read the request, then reset the connection before any byte of the response."""


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
            503: "Service Unavailable", 529: "Overloaded"}


class WireServer:
    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.script: list[Stream | Reply | Reset] = []
        self.requests: list[Recorded] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="wire-server", daemon=True)
        self._thread.start()

    def queue(self, *actions: Stream | Reply | Reset) -> None:
        with self._lock:
            self.script.extend(actions)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        workers: list[threading.Thread] = []
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            worker = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            worker.start()
            workers.append(worker)
        for worker in workers:
            worker.join(timeout=5)

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            request = self._read_request(conn)
            if request is None:
                return
            with self._lock:
                self.requests.append(request)
                action = self.script.pop(0) if self.script else Reply(
                    500, {"error": {"message": f"test server: nothing queued for {request.path}"}})
            self._answer(conn, action)
        except (OSError, ValueError) as err:  # a client that went away is not a test failure
            self.errors.append(err)
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    @staticmethod
    def _read_request(conn: socket.socket) -> Recorded | None:
        data = b""
        while b"\r\n\r\n" not in data:
            piece = conn.recv(65536)
            if not piece:
                return None
            data += piece
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            piece = conn.recv(65536)
            if not piece:
                break
            rest += piece
        return Recorded(method=method, path=path, headers=headers, body=rest[:length])

    def _answer(self, conn: socket.socket, action: Stream | Reply | Reset) -> None:
        if isinstance(action, Reset):
            # SO_LINGER with a zero timeout turns close() into a TCP RST.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if isinstance(action, Reply):
            body = action.body
            if isinstance(body, dict):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            headers = {"content-type": "application/json", **action.headers,
                       "content-length": str(len(body)), "connection": "close"}
            conn.sendall(self._head(action.status, headers) + body)
            return
        headers = {"content-type": action.content_type, **action.headers,
                   "transfer-encoding": "chunked", "connection": "close"}
        conn.sendall(self._head(action.status, headers))
        body = action.body if action.cut_after is None else action.body[: action.cut_after]
        for start in range(0, len(body), action.chunk):
            piece = body[start : start + action.chunk]
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            if action.pause:
                time.sleep(action.pause)
        if action.cut_after is None:
            conn.sendall(b"0\r\n\r\n")
        else:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    @staticmethod
    def _head(status: int, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@pytest.fixture
def server() -> Iterator[WireServer]:
    srv = WireServer()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture
async def client() -> Any:
    async with httpx.AsyncClient() as c:
        yield c


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests see only the keys and base URLs they set, never the developer's."""
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY",
                "GOOGLE_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENROUTER_BASE_URL",
                "GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL", "OLLAMA_HOST", "OLLAMA_BASE_URL",
                "JPY_SESSION_NAME", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "MENTRA_CASSETTE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env from the repository
