"""The agent-name rule, stated once: the runtime enforces it, the magics parse with it."""

from __future__ import annotations

import re

__all__ = ["AGENT_NAME_PATTERN", "AGENT_NAME_RULE", "agent_name_problem"]

AGENT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""What an agent's name may be, as a regular expression."""
AGENT_NAME_RULE = "1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
"""`AGENT_NAME_PATTERN` in words, for error messages."""

_AGENT_NAME = re.compile(AGENT_NAME_PATTERN)


def agent_name_problem(name: object) -> str | None:
    """None for an allowed agent name, else what is wrong with it."""
    if isinstance(name, str) and _AGENT_NAME.match(name):
        return None
    return f"agent name {name!r} is not allowed: use {AGENT_NAME_RULE}"
