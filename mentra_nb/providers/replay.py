"""Record a live session to a JSONL cassette, and replay it without a network or a key.

    live = AnthropicProvider()
    rt = Runtime(providers=[RecordingProvider(live, "analysis.cassette.jsonl")])
    ...                                   # every exchange is appended to the cassette

    rt = Runtime(providers=[ReplayProvider("analysis.cassette.jsonl", name="anthropic")])
    ...                                   # same model ids, same replies, offline

or, with no code change, `MENTRA_CASSETTE=analysis.cassette.jsonl` and the model
id `replay:<model>`.

A cassette line holds one exchange: the request the runtime made and the
provider events it got back (or the error it ended with). Replay hands out the
first unused exchange whose request is identical; a request that matches none
is a `CassetteMismatch` naming the first difference from the next unused one.
Keys never reach a cassette: lines are scrubbed before they are written.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from mentra_nb import errors
from mentra_nb._notebook_path import notebook_path
from mentra_nb.errors import ConfigError, InvalidRequest, ProviderError
from mentra_nb.providers._keys import Secret, redact
from mentra_nb.providers.base import ModelInfo, Provider, ProviderRequest, takes_tool_result_images
from mentra_nb.providers.events import MessageStopped, ProviderEvent
from mentra_nb.providers.registry import key_variables

__all__ = [
    "CASSETTE_ENV",
    "CassetteEntry",
    "CassetteMismatch",
    "RecordedError",
    "RecordingProvider",
    "ReplayProvider",
    "default_cassette_path",
]

CASSETTE_ENV = "MENTRA_CASSETTE"
"""The environment variable naming the cassette the `replay` provider plays."""
_FORMAT = {"mentra_cassette": 1}
_EVENTS: TypeAdapter[list[ProviderEvent]] = TypeAdapter(
    list[ProviderEvent], config=ConfigDict(defer_build=True)
)


class CassetteMismatch(InvalidRequest):
    """The runtime asked for something the cassette never recorded."""


class RecordedError(BaseModel):
    """A provider error as recorded in a cassette, raised again on replay."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    type: str
    message: str
    status_code: int | None = None

    def rebuild(self) -> ProviderError:
        cls = getattr(errors, self.type, None)
        if not (isinstance(cls, type) and issubclass(cls, ProviderError)):
            cls = ProviderError
        return cls(self.message, status_code=self.status_code)


class CassetteEntry(BaseModel):
    """One recorded model call: the request as sent, the events streamed back, and the error that
    ended it, if any.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    provider: str
    request: dict[str, Any]
    events: list[ProviderEvent]
    error: RecordedError | None = None


def default_cassette_path() -> Path:
    """`$MENTRA_CASSETTE`, else `<notebook>.cassette.jsonl` beside the notebook, else the cwd."""
    explicit = os.environ.get(CASSETTE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    found = notebook_path()
    if found is not None:
        return found[0].with_name(found[0].stem + ".cassette.jsonl")
    return Path.cwd() / "mentra.cassette.jsonl"


def _request_json(request: ProviderRequest) -> dict[str, Any]:
    """The request as the cassette stores it: JSON, with keys scrubbed.

    Replay scrubs the incoming request the same way, so a prompt that
    happened to contain a key still matches its scrubbed recording.
    """
    # Every registered provider's key variables (their `key_env`), not only the recorded one's.
    secrets = [os.environ.get(v) for v in key_variables()]
    # Without a typed answer the request reads as before `output` existed, so older cassettes match.
    exclude = {"output"} if request.output is None else None
    scrubbed: dict[str, Any] = json.loads(redact(request.model_dump_json(exclude=exclude), secrets))
    return scrubbed


class RecordingProvider:
    """Wraps a live provider and appends each finished exchange to a cassette.

    An exchange is finished at its final event or its error. A stream that is
    abandoned before either (cancelled, closed early) is not recorded: it has
    no ending to replay.
    """

    def __init__(self, inner: Provider, path: str | Path | None = None, *,
                 secrets: Iterable[str | Secret] = ()) -> None:
        self.inner = inner
        self.name = inner.name
        self.tool_result_images = takes_tool_result_images(inner)
        self.path = Path(path) if path is not None else default_cassette_path()
        self._secrets = list(secrets)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RecordingProvider({self.inner!r}, path={str(self.path)!r})"

    def _scrub(self, line: str) -> str:
        variables = (*key_variables(), *getattr(self.inner, "key_env", ()))
        secrets: list[str | Secret | None] = [*self._secrets, *(os.environ.get(v) for v in variables)]
        api_key = getattr(self.inner, "api_key", None)
        if callable(api_key):
            with contextlib.suppress(ProviderError):
                secrets.append(api_key())
        return redact(line, secrets)

    def _write(self, entry: CassetteEntry) -> None:
        line = self._scrub(entry.model_dump_json())
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            new = not self.path.exists() or self.path.stat().st_size == 0
            with self.path.open("a", encoding="utf-8") as f:
                if new:
                    f.write(json.dumps(_FORMAT) + "\n")
                f.write(line + "\n")

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        events: list[ProviderEvent] = []
        written = False
        try:
            async for event in self.inner.stream(request):
                events.append(event)
                if isinstance(event, MessageStopped):
                    # Written before yielding: a consumer may stop reading at the final
                    # event, and the exchange is complete by then.
                    self._write(CassetteEntry(provider=self.name, request=_request_json(request),
                                              events=events))
                    written = True
                yield event
        except ProviderError as err:
            if not written:
                recorded = RecordedError(type=type(err).__name__, message=str(err),
                                         status_code=err.status_code)
                self._write(CassetteEntry(provider=self.name, request=_request_json(request),
                                          events=events, error=recorded))
            raise

    async def list_models(self) -> list[ModelInfo]:
        return await self.inner.list_models()


class ReplayProvider:
    """Plays a cassette back, deterministically and offline."""

    def __init__(self, path: str | Path, *, name: str = "replay") -> None:
        self.name = name
        self.tool_result_images = True  # it plays back what the recorded provider was sent
        self.path = Path(path)
        self.entries = self._load(self.path)
        self._used: set[int] = set()

    @classmethod
    def from_environment(cls) -> ReplayProvider:
        """The built-in `replay` provider: the cassette from `default_cassette_path()`."""
        return cls(default_cassette_path())

    def __repr__(self) -> str:
        return (f"ReplayProvider(name={self.name!r}, path={str(self.path)!r}, "
                f"{len(self.entries) - len(self._used)} of {len(self.entries)} exchanges left)")

    @staticmethod
    def _load(path: Path) -> list[CassetteEntry]:
        if not path.exists():
            raise ConfigError(
                f"no cassette at {path}; record one with RecordingProvider(provider, {str(path)!r}) "
                f"or point {CASSETTE_ENV} at an existing cassette"
            )
        entries: list[CassetteEntry] = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if number == 1 and "mentra_cassette" in data:
                    if data["mentra_cassette"] != _FORMAT["mentra_cassette"]:
                        raise ConfigError(
                            f"{path} is cassette format {data['mentra_cassette']}, this version "
                            f"of mentra-nb reads format {_FORMAT['mentra_cassette']}"
                        )
                    continue
                entries.append(CassetteEntry.model_validate(data))
            except (ValueError, TypeError) as err:
                if isinstance(err, ConfigError):
                    raise
                raise ConfigError(f"{path} line {number} is not a cassette entry: {err}") from None
        return entries

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        entry = self._take(_request_json(request))
        for event in entry.events:
            yield event
        if entry.error is not None:
            raise entry.error.rebuild()

    def _take(self, wanted: dict[str, Any]) -> CassetteEntry:
        unused = [i for i in range(len(self.entries)) if i not in self._used]
        for i in unused:
            if self.entries[i].request == wanted:
                self._used.add(i)
                return self.entries[i]
        if not unused:
            raise CassetteMismatch(
                f"the cassette {self.path} has no exchange left ({len(self.entries)} recorded, "
                "all replayed); the session went further than the recording. Record it again."
            )
        nearest = self.entries[unused[0]]
        where, recorded, asked = first_difference(nearest.request, wanted)
        raise CassetteMismatch(
            f"the request does not match the cassette {self.path}: first difference at "
            f"{where or 'the top level'}: the cassette has {_short(recorded)}, this request has "
            f"{_short(asked)}. Record the session again if the notebook changed."
        )

    async def list_models(self) -> list[ModelInfo]:
        seen = dict.fromkeys(str(e.request.get("model", "")) for e in self.entries)
        return [ModelInfo(id=m, provider=self.name) for m in seen if m]


_MISSING = object()


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any]:
    """The JSON path of the first place `a` and `b` differ, with both values there."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            left, right = a.get(key, _MISSING), b.get(key, _MISSING)
            if left != right:
                return first_difference(left, right, f"{path}.{key}" if path else key)
        return path, a, b
    if isinstance(a, list) and isinstance(b, list):
        for index in range(max(len(a), len(b))):
            left = a[index] if index < len(a) else _MISSING
            right = b[index] if index < len(b) else _MISSING
            if left != right:
                return first_difference(left, right, f"{path}[{index}]")
        return path, a, b
    return path, a, b


def _short(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."
