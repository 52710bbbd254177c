"""The runtime most tests build: on a real SQLite file, without the built-in file
tools (so a test sees exactly the tools it registers), with a scripted
`anthropic` provider."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mentra_nb import Runtime, SqliteStore, Tool
from mentra_nb.testing import ScriptedProvider, StreamScript

__all__ = ["scripted_runtime"]


def scripted_runtime(db_path: Path | str, *scripts: StreamScript, provider: ScriptedProvider | None = None,
                     runtime_id: str = "nb", tools: Iterable[Tool] = (), **kwargs: Any) -> Runtime:
    """A runtime whose `anthropic:*` models play `scripts` in order (or `provider`,
    when a test reads its requests); `kwargs` go to `Runtime`."""
    if provider is None:
        provider = ScriptedProvider("anthropic", list(scripts))
    elif scripts:
        raise TypeError("give scripts or a provider, not both")
    return Runtime.empty(store=SqliteStore(db_path), runtime_id=runtime_id, providers=[provider],
                         tools=list(tools), **kwargs)
