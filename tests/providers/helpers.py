"""Small helpers shared by the provider tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mentra_nb import Runtime, SqliteStore, tool
from mentra_nb.messages import Message
from mentra_nb.providers.base import Provider, ProviderRequest
from mentra_nb.providers.events import ProviderEvent
from mentra_nb.runtime._assembly import MessageAssembler


async def collect(stream: AsyncIterator[ProviderEvent]) -> list[ProviderEvent]:
    return [event async for event in stream]


async def assemble(provider: Provider, request: ProviderRequest) -> tuple[Message, MessageAssembler]:
    assembler = MessageAssembler()
    async for event in provider.stream(request):
        assembler.apply(event)
    return assembler.finish(), assembler


def ask(text: str = "hi", **fields: Any) -> ProviderRequest:
    return ProviderRequest(model=fields.pop("model", "test-model"), messages=[Message.user(text)], **fields)


@tool(read_only=True)
def get_weather(location: str, unit: str = "celsius") -> str:
    """Current weather at a location."""
    return f"18 degrees {unit} in {location}"


@tool(read_only=True)
def get_time(timezone: str = "UTC", tz: str = "") -> str:
    """Current time in a timezone."""
    return f"12:00 in {tz or timezone}"


@tool(read_only=True)
def check_gcd(a: int, b: int) -> str:
    """Check a greatest common divisor."""
    import math

    return str(math.gcd(a, b))


@asynccontextmanager
async def runtime_with(provider: Provider, db: Path) -> AsyncIterator[Runtime]:
    """A runtime over a real SQLite file with the weather/time/gcd tools, closed afterwards."""
    store = SqliteStore(db)
    rt = Runtime.empty(store=store, providers=[provider], tools=[get_weather, get_time, check_gcd])
    try:
        yield rt
    finally:
        await rt.aclose()
        store.close()
