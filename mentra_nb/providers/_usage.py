"""Reading a provider's usage report without trusting it.

A server's token counts decide what an agent has spent and whether its budget
lets the next call start, so a count that cannot be right (negative,
fractional, not a number, above `MAX_CALL_TOKENS`) is never taken as it is: it
is clamped (0, or the cap), the call is marked misreported
(`Usage.misreported_calls`, which makes its cost unknown and stops a budgeted
agent), and the log says what the server sent. An absent count is 0, as
before: many servers leave cache fields out.
"""

from __future__ import annotations

import logging
from typing import Any

from mentra_nb.messages import Usage, token_count

__all__ = ["UsageReport"]

logger = logging.getLogger("mentra_nb.providers")


class UsageReport:
    """One usage object from `provider`'s stream: `count(...)` reads a field,
    `usage(...)` builds the call's `Usage`, marked when any count was impossible."""

    def __init__(self, provider: str, raw: Any) -> None:
        self.provider = provider
        self.raw: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.problems = [] if raw is None or isinstance(raw, dict) else [f"usage={_shown(raw)}"]

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def count(self, *path: str) -> int:
        """The count at `path` (nested keys), clamped when impossible."""
        value: Any = self.raw
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        count, possible = token_count(value)
        if not possible:
            self.problems.append(f"{'.'.join(path)}={_shown(value)}")
        return count

    def usage(self, *, already_misreported: bool = False, **counts: int) -> Usage:
        """The call's usage; `already_misreported`: an earlier report of the same call
        (Anthropic's are cumulative) was impossible, and was logged then."""
        if self.problems and not already_misreported:
            logger.warning(
                "%s reported impossible token counts (%s); they were clamped, the call's cost is "
                "unknown, and an agent with a budget stops before its next call",
                self.provider, "; ".join(self.problems))
        misreported = bool(self.problems) or already_misreported
        return Usage.model_validate({**counts, "misreported_calls": int(misreported)})


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
