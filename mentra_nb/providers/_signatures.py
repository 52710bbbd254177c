"""Provider-owned data carried in `ThinkingBlock.signature`.

Anthropic's thinking signature is an opaque string and goes in `signature`
as is. OpenAI's reasoning items (id, encrypted content, summary) and Gemini's
thought signatures have no field of their own in `messages.py`, so they ride
in `signature` as a small JSON envelope naming their protocol:

    {"mentra_signature": "openai-responses", "data": {...}}

Each provider replays only the envelopes of its own protocol and leaves the
others out: a signature is only valid for the API that issued it, so after a
switch of provider the old reasoning is dropped rather than rejected.
Anthropic signatures are base64 and never start with `{`, so the two kinds
cannot be confused.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["is_envelope", "unwrap", "wrap"]

_TAG = "mentra_signature"


def wrap(protocol: str, data: dict[str, Any]) -> str:
    """Compact JSON that keeps `data` exactly as the provider sent it (key order included)."""
    return json.dumps({_TAG: protocol, "data": data}, separators=(",", ":"))


def unwrap(signature: str | None, protocol: str) -> dict[str, Any] | None:
    """The data of an envelope from `protocol`, or None for anything else."""
    if not signature or not signature.startswith("{"):
        return None
    try:
        value = json.loads(signature)
    except json.JSONDecodeError:
        return None
    data = value.get("data") if isinstance(value, dict) and value.get(_TAG) == protocol else None
    return data if isinstance(data, dict) else None


def is_envelope(signature: str | None) -> bool:
    """True for any provider's envelope (so Anthropic can skip foreign reasoning)."""
    if not signature or not signature.startswith("{"):
        return False
    try:
        value = json.loads(signature)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and _TAG in value
