"""How an MCP tool is named to the model: `mcp__<server>__<tool>`.

Providers accept tool names of 1-64 letters, digits, `_` and `-` (OpenAI and
Anthropic both; Gemini a subset of that). MCP allows far more in a tool's name,
so other characters become `_`, and a name that is still too long, or that
collides with another after that, keeps a readable prefix and ends in a short
hash of the original, so it is stable across restarts.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_TOOL_NAME", "PREFIX", "model_tool_name"]

PREFIX = "mcp__"
"""The prefix of every MCP tool's name as the model sees it (`mcp__<server>__<tool>`); reserved."""
MAX_TOOL_NAME = 64
_UNUSABLE = re.compile(r"[^A-Za-z0-9_-]")


def model_tool_name(server: str, tool: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """The name the model sees for `tool` of `server`, distinct from the names in `taken`."""
    original = f"{PREFIX}{server}__{tool}"
    clean = _UNUSABLE.sub("_", original)
    if len(clean) <= MAX_TOOL_NAME and clean not in taken:
        return clean
    digest = hashlib.sha256(original.encode()).hexdigest()[:8]
    return f"{clean[: MAX_TOOL_NAME - len(digest) - 1]}_{digest}"
