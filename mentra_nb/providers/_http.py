"""Opening a provider stream over httpx: timeouts, retries and typed HTTP errors.

Only *opening* a stream is retried. Once the first byte of a 200 response has
arrived the model is generating, and a retry would bill and stream the whole
reply again behind the runtime's back; an error after that point is raised and
the turn loop rolls the run back instead.

Retries back off exponentially with full jitter, honour `Retry-After` (seconds
or an HTTP date, also `retry-after-ms`) capped at `RetryPolicy.max_delay`, and
stop when either the attempt count or the time budget is spent. Each retry is
announced with a `RetryAttempt` event so the notebook can show it.
"""

from __future__ import annotations

import asyncio
import difflib
import email.utils
import json
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypedDict, Unpack

import httpx
from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.errors import (
    ConfigError,
    InvalidRequest,
    ModelNotFound,
    ProviderAuthError,
    ProviderError,
    StreamError,
    TransientProviderError,
)
from mentra_nb.providers._keys import Secret, redact, resolve_key
from mentra_nb.providers._sse import ServerSentEvent, iter_sse
from mentra_nb.providers.base import ModelInfo
from mentra_nb.providers.events import ProviderEvent, RetryAttempt

__all__ = [
    "ConnectionOptions",
    "HTTPProvider",
    "RetryPolicy",
    "StreamDecoder",
    "Timeouts",
    "error_for_status",
    "open_stream",
    "owned_client",
    "parse_retry_after",
    "stream_errors",
]

TRANSIENT_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class RetryPolicy(BaseModel):
    """How hard to try opening a stream.

    `max_retries` retries after the first attempt; `max_delay` caps any single
    wait (including a server's `Retry-After`); `budget_s` caps the total time
    spent waiting, so a long outage fails the run instead of hanging the cell.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    max_retries: int = Field(default=4, ge=0)
    base_delay: float = Field(default=0.5, ge=0)
    max_delay: float = Field(default=60.0, ge=0)
    budget_s: float = Field(default=180.0, ge=0)

    def backoff(self, retry: int) -> float:
        """Full jitter: a random wait up to the exponential step, so clients spread out."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (retry - 1)))
        return random.uniform(ceiling / 2, ceiling)


class Timeouts(BaseModel):
    """`read` is the longest silence allowed between two chunks of a stream.

    Silence is not the only way a stream can hang: a server (or a proxy) that
    sends keep-alive comments or pings forever is never silent. `idle` bounds
    the time without content (an event that carries part of the reply), and
    `total` bounds a whole response, from the first byte to the last.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    connect: float = 10.0
    read: float = 300.0
    write: float = 30.0
    pool: float = 30.0
    idle: float = Field(default=300.0, gt=0)
    total: float = Field(default=3600.0, gt=0)

    def to_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


def parse_retry_after(headers: httpx.Headers, *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `Retry-After`."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _provider_message(body: bytes) -> tuple[str, str]:
    """(error type/code, message) from the JSON error bodies providers send."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return "", text[:500]
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # Gemini sometimes wraps its error in a list
    if not isinstance(data, dict):
        return "", text[:500]
    error = data.get("error", data)
    if isinstance(error, str):
        return "", error
    if not isinstance(error, dict):
        return "", text[:500]
    kind = error.get("type") or error.get("code") or error.get("status") or ""
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and detail.get("reason"):
            kind = detail["reason"]
    message = error.get("message") or data.get("message") or text[:500]
    return str(kind), str(message)


def error_for_status(
    status: int,
    body: bytes,
    headers: httpx.Headers,
    *,
    provider: str,
    model: str,
    key: Secret | None,
    key_hint: str,
) -> ProviderError:
    """The typed error for an HTTP failure; the message never contains the key."""
    kind, message = _provider_message(body)
    message = redact(message, [key])
    detail = f" ({kind})" if kind else ""
    if status in (401, 403) or kind in ("API_KEY_INVALID", "authentication_error", "invalid_api_key"):
        # Never repeat the provider's text here: some quote a slice of the key back.
        source = key.source if key is not None else "no key"
        return ProviderAuthError(
            f"{provider} rejected the API key from {source} (HTTP {status}{detail}). "
            f"Check {key_hint}: it may be wrong, revoked, or lack access to '{model}'.",
            status_code=status,
        )
    if status == 404:
        return ModelNotFound(
            f"{provider} does not serve model '{model}' (HTTP 404{detail}: {message}). "
            f"Check the model id; the provider's list_models() lists what {provider} offers.",
            status_code=status,
        )
    if status in TRANSIENT_STATUSES or status >= 500:
        return TransientProviderError(
            f"{provider} is unavailable or rate-limiting (HTTP {status}{detail}: {message})",
            status_code=status,
            retry_after=parse_retry_after(headers),
        )
    return InvalidRequest(
        f"{provider} rejected the request (HTTP {status}{detail}): {message}",
        status_code=status,
    )


def owned_client(client: httpx.AsyncClient | None, timeouts: Timeouts) -> tuple[httpx.AsyncClient, bool]:
    """The caller's client, or a new one this provider owns and must close."""
    if client is not None:
        return client, False
    return httpx.AsyncClient(timeout=timeouts.to_httpx()), True


StatusErrorFactory = Callable[[int, bytes, httpx.Headers], Awaitable[ProviderError]]


async def open_stream(
    client: httpx.AsyncClient,
    request: Callable[[], httpx.Request],
    *,
    policy: RetryPolicy,
    provider: str,
    on_status_error: StatusErrorFactory,
    secrets: Iterable[Secret | None] = (),
) -> AsyncIterator[RetryAttempt | httpx.Response]:
    """Yield a `RetryAttempt` per retry, then the open 200 response (caller closes it).

    `request` builds a fresh `httpx.Request` per attempt. Non-retryable errors
    and an exhausted budget raise typed `ProviderError`s.
    """
    secrets = list(secrets)
    started = time.monotonic()
    retry = 0
    while True:
        error: ProviderError
        try:
            response = await client.send(request(), stream=True)
        except httpx.TimeoutException as err:
            error = TransientProviderError(
                f"{provider} did not answer in time ({type(err).__name__}); "
                "raise the provider's timeouts if the model is slow to start"
            )
        except httpx.TransportError as err:
            error = TransientProviderError(
                f"could not reach {provider}: {redact(str(err) or type(err).__name__, secrets)}"
            )
        else:
            if response.status_code < 400:
                yield response
                return
            try:
                body = await response.aread()
            except httpx.HTTPError:
                body = b""
            finally:
                await response.aclose()
            error = await on_status_error(response.status_code, body, response.headers)
        retry += 1
        if not error.retryable or retry > policy.max_retries:
            if error.retryable and retry > policy.max_retries:
                error.args = (f"{error.args[0]}; gave up after {retry} attempts",)
            raise error
        wait = policy.backoff(retry)
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            wait = min(policy.max_delay, retry_after)
        spent = time.monotonic() - started
        if spent + wait > policy.budget_s:
            error.args = (
                f"{error.args[0]}; not retrying: waiting {wait:.1f}s more would exceed the "
                f"retry budget of {policy.budget_s:.0f}s (RetryPolicy.budget_s)",
            )
            raise error
        yield RetryAttempt(attempt=retry, delay_s=round(wait, 3), reason=str(error))
        await asyncio.sleep(wait)


@asynccontextmanager
async def stream_errors(provider: str, secrets: Iterable[Secret | None] = ()) -> AsyncIterator[None]:
    """Turn transport failures while reading an open stream into `StreamError`s."""
    try:
        yield
    except httpx.ReadTimeout:
        raise StreamError(
            f"{provider} went silent mid-stream for longer than the read timeout; "
            "the reply was cut off, so the run was rolled back"
        ) from None
    except httpx.HTTPError as err:
        detail = redact(str(err) or type(err).__name__, list(secrets))
        raise StreamError(
            f"the connection to {provider} broke mid-stream ({type(err).__name__}: {detail}); "
            "the reply was cut off, so the run was rolled back"
        ) from None


class StreamDecoder(Protocol):
    """Turns one protocol's server-sent events into provider events."""

    done: bool  # the protocol's final event was seen; stop reading

    def feed(self, event: ServerSentEvent) -> Iterable[ProviderEvent]: ...

    def finish(self) -> Iterable[ProviderEvent]:
        """Called when the body ends; raises `StreamError` if the final event never came."""
        ...


class ConnectionOptions(TypedDict, total=False):
    """The constructor options every provider over httpx takes, declared once:
    each provider's `__init__` adds its own and passes these on as `**options`."""

    api_key: str | Secret | None
    base_url: str | None
    client: httpx.AsyncClient | None
    timeouts: Timeouts | None
    retry: RetryPolicy | None
    name: str | None
    headers: dict[str, str] | None


class HTTPProvider:
    """What every provider over httpx shares: key, base URL, client, retries, timeouts.

    Subclasses set the class attributes and build requests; the base class
    opens the stream, retries, maps HTTP errors and feeds a `StreamDecoder`.
    """

    name: str = ""
    key_env: tuple[str, ...] = ()
    base_url_env: tuple[str, ...] = ()
    default_base_url: str = ""
    key_required: bool = True

    def __init__(self, **options: Unpack[ConnectionOptions]) -> None:
        name = options.get("name")
        if name:
            self.name = name
        self._explicit_key = options.get("api_key")
        self._key: Secret | None = None
        base_url = options.get("base_url")
        self.base_url = (base_url or self._base_url_from_env() or self.default_base_url).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"base URL {self.base_url!r} for provider '{self.name}' must start with "
                "http:// or https://"
            )
        self.timeouts = options.get("timeouts") or Timeouts()
        self.retry = options.get("retry") or RetryPolicy()
        self.extra_headers = dict(options.get("headers") or {})
        self._client, self._owns_client = owned_client(options.get("client"), self.timeouts)

    def _base_url_from_env(self) -> str | None:
        for var in self.base_url_env:
            value = os.environ.get(var, "").strip()
            if value:
                return value
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"

    @property
    def key_hint(self) -> str:
        return " or ".join(self.key_env) if self.key_env else "the api_key argument"

    def api_key(self) -> Secret | None:
        """The key, found on first use (so a provider can exist before its key does)."""
        if self._key is None:
            self._key = resolve_key(
                self._explicit_key, self.key_env, provider=self.name, required=self.key_required
            )
        return self._key

    def has_key(self) -> bool:
        try:
            return self.api_key() is not None
        except ProviderAuthError:
            return False

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    # --- subclass hooks ------------------------------------------------------

    def auth_headers(self, key: Secret | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key.reveal()}"} if key is not None else {}

    async def _status_error(
        self, status: int, body: bytes, headers: httpx.Headers, model: str
    ) -> ProviderError:
        error = error_for_status(
            status, body, headers, provider=self.name, model=model, key=self._key,
            key_hint=self.key_hint,
        )
        if isinstance(error, ModelNotFound):
            # Suggest real model ids, best effort: listing may itself fail.
            try:
                async with asyncio.timeout(5):
                    known = [m.id for m in await self.list_models()]
            except (ProviderError, httpx.HTTPError, TimeoutError, ValueError):
                known = []
            if known:
                close = difflib.get_close_matches(model, known, n=5, cutoff=0.3) or known[:5]
                error.args = (f"{error.args[0]} Known models include: {', '.join(close)}",)
        return error

    async def list_models(self) -> list[ModelInfo]:
        return []

    # --- shared machinery ----------------------------------------------------

    def _post_sse(
        self, model: str, url: str, payload: dict[str, Any], decoder: Any,
        params: dict[str, str] | None = None,
    ) -> AsyncIterator[ProviderEvent]:
        """POST `payload` as JSON to `url` and decode the server-sent events it
        answers with; the request is rebuilt for every attempt (see `_stream`)."""
        body = json.dumps(payload).encode()

        def build(key: Secret | None) -> httpx.Request:
            headers = {
                **self.auth_headers(key),
                "content-type": "application/json",
                "accept": "text/event-stream",
                **self.extra_headers,
            }
            return self._client.build_request(
                "POST", url, params=params, content=body, headers=headers,
                timeout=self.timeouts.to_httpx(),
            )

        return self._stream(model, build, decoder)

    async def _stream(
        self, model: str, build: Callable[[Secret | None], httpx.Request], decoder: StreamDecoder
    ) -> AsyncIterator[ProviderEvent]:
        key = self.api_key()

        async def status_error(status: int, body: bytes, headers: httpx.Headers) -> ProviderError:
            return await self._status_error(status, body, headers, model)

        response: httpx.Response | None = None
        try:
            async for item in open_stream(
                self._client, lambda: build(key), policy=self.retry, provider=self.name,
                on_status_error=status_error, secrets=[key],
            ):
                if isinstance(item, RetryAttempt):
                    yield item
                else:
                    response = item
            if response is None:  # pragma: no cover - open_stream yields a response or raises
                raise StreamError(f"{self.name}: no response was opened")
            clock = _ContentClock(self.name, self.timeouts)
            async with stream_errors(self.name, [key]):
                async for event in iter_sse(response, deadline=clock.deadline):
                    decoded = _decode(self.name, decoder, event)
                    if decoded:
                        clock.content()
                    for out in decoded:
                        yield out
                    if decoder.done:
                        break
            for out in decoder.finish():
                yield out
        finally:
            # Also when the consumer stops early or the run is cancelled: the
            # connection goes back to the pool (or is dropped) instead of leaking.
            if response is not None:
                await response.aclose()

    async def _get_json(self, url: str, *, params: dict[str, str] | None = None) -> Any:
        """A plain GET (model listing), with the same error mapping as streams."""
        key = self.api_key()
        headers = {**self.auth_headers(key), **self.extra_headers}
        try:
            response = await self._client.get(url, headers=headers, params=params)
        except httpx.HTTPError as err:
            raise TransientProviderError(
                f"could not reach {self.name} at {self.base_url}: "
                f"{redact(str(err) or type(err).__name__, [key])}"
            ) from None
        if response.status_code >= 400:
            raise error_for_status(
                response.status_code, response.content, response.headers, provider=self.name,
                model="(listing models)", key=key, key_hint=self.key_hint,
            )
        try:
            return response.json()
        except ValueError:
            raise InvalidRequest(
                f"{self.name} answered the model listing at {url} with something that is not "
                "JSON; check the base URL"
            ) from None


class _ContentClock:
    """When a stream must end: `idle` after its last content, `total` after it opened."""

    def __init__(self, provider: str, timeouts: Timeouts) -> None:
        self.provider = provider
        self.timeouts = timeouts
        self.opened = self.last_content = time.monotonic()

    def content(self) -> None:
        self.last_content = time.monotonic()

    def deadline(self) -> tuple[float, str]:
        """(monotonic time, what to say when it passes) of the nearest limit."""
        idle_end = self.last_content + self.timeouts.idle
        total_end = self.opened + self.timeouts.total
        if idle_end <= total_end:
            return idle_end, (
                f"{self.provider} sent no content for {self.timeouts.idle:g} s (only keep-alives or "
                "pings), so the reply was abandoned and the run rolled back; raise Timeouts.idle "
                "if the model needs longer to think")
        return total_end, (
            f"{self.provider}'s reply took longer than {self.timeouts.total:g} s in all, so it was "
            "abandoned and the run rolled back; raise Timeouts.total for longer replies")


def _decode(provider: str, decoder: StreamDecoder, event: ServerSentEvent) -> list[ProviderEvent]:
    """Decode one event; a payload missing the fields its type promises is a `StreamError`."""
    try:
        return list(decoder.feed(event))
    except ProviderError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise StreamError(
            f"{provider} sent a {event.event} event that does not match its protocol "
            f"({type(err).__name__}: {err}): {event.data[:200]!r}"
        ) from None
