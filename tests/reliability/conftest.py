"""Shared pieces of the reliability suite: child processes that are always killed
and reaped, seeds that print on failure, and read-only looks at a state file."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

from tests.children import Child

pytestmark = pytest.mark.reliability


def crash_seeds() -> list[int]:
    """30 seeds in CI; MENTRA_CRASH_ITERATIONS=300 for the long run; MENTRA_CRASH_SEED=N
    starts from N (a failure's test id names its seed: rerun it with
    MENTRA_CRASH_SEED=<seed> MENTRA_CRASH_ITERATIONS=1)."""
    count = int(os.environ.get("MENTRA_CRASH_ITERATIONS", "30"))
    base = os.environ.get("MENTRA_CRASH_SEED")
    start = int(base) if base else random.SystemRandom().randrange(10**6)
    return [start + i for i in range(count)]


def wait_for_progress(child: Child, at_least: int) -> None:
    """Until a child that prints `PROGRESS <n>` lines has printed one with n >= `at_least`."""
    while True:
        line = child.wait_for("PROGRESS ")
        if int(line.split()[1]) >= at_least:
            return


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes (None if absent): 'never a changed file'."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def digests(db: Path) -> dict[str, str | None]:
    """The store file and its WAL/journal side files."""
    return {suffix: file_digest(db.with_name(db.name + suffix)) for suffix in ("", "-wal", "-journal")}
