"""One rate limiter per job: how many rows may run at once, shared by all of them.

A provider that answers 429 (or says `Retry-After`) is telling the whole account to
slow down, not one conversation: every row's retry halves the job's concurrency
(never below 1) and holds back new rows until the wait it asked for is over. Each
row that then finishes well gives one slot back, up to the concurrency asked for
(additive increase, multiplicative decrease, as TCP does).
"""

from __future__ import annotations

import time

__all__ = ["SharedLimiter"]


class SharedLimiter:
    """`limit` is how many rows may run now; `wait_s()` how long to hold new ones."""

    def __init__(self, concurrency: int) -> None:
        self.ceiling = concurrency
        self.limit = float(concurrency)
        self._resume_at = 0.0
        self.throttled = 0  # how many times a provider slowed the job
        self.lowest = concurrency  # the fewest slots it has had

    @property
    def slots(self) -> int:
        return max(1, int(self.limit))

    def wait_s(self) -> float:
        return max(0.0, self._resume_at - time.monotonic())

    def slow_down(self, retry_after_s: float | None) -> None:
        """A provider refused a call for its rate: halve, and wait what it asked."""
        self.throttled += 1
        self.limit = max(1.0, self.limit / 2)
        self.lowest = min(self.lowest, self.slots)
        if retry_after_s:
            self._resume_at = max(self._resume_at, time.monotonic() + min(retry_after_s, 60.0))

    def succeeded(self) -> None:
        """A row finished without being refused: one more slot, up to the ceiling."""
        self.limit = min(float(self.ceiling), self.limit + 1.0)
