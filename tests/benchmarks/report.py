"""Tables and the machine they were measured on.

Every benchmark returns `Table`s; `python -m tests.benchmarks` prints them and
writes them to RESULTS.md. Nothing here asserts on time: the machine is shared
and noisy, so only ratios measured side by side in one run mean anything.
"""

from __future__ import annotations

import datetime
import os
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Table", "io_written", "machine", "median_time", "ratio"]


@dataclass
class Table:
    """One benchmark's result: a title, column names, rows, and notes under it."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append([_cell(c) for c in cells])

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.notes:
            lines.append("")
            lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines)

    def text(self) -> str:
        widths = [max(len(c), *(len(r[i]) for r in self.rows)) if self.rows else len(c)
                  for i, c in enumerate(self.columns)]
        out = [self.title, "  ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=True))]
        out.append("  ".join("-" * w for w in widths))
        out += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in self.rows]
        out += [f"  * {note}" for note in self.notes]
        return "\n".join(out)


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def ratio(ours: float, theirs: float, *, suffix: str = "x") -> str:
    """`theirs / ours` as "12.3x": how many times more the peer needs."""
    if ours <= 0:
        return "n/a"
    return f"{theirs / ours:.2f}{suffix}"


def io_written() -> int:
    """Bytes this process has handed to write() so far (`wchar` in /proc/self/io):
    every page SQLite writes to the database, its WAL or a journal."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def median_time(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    return (
        f"{datetime.date.today().isoformat()} · {os.cpu_count()} cores ({cpu}) · "
        f"{platform.system()} {platform.release()} · Python {sys.version.split()[0]} · "
        f"SQLite {sqlite3.sqlite_version} · load average at start {load}"
    )
