"""Run the benchmarks, print their tables, and write RESULTS.md.

    python -m tests.benchmarks [NAME ...]      NAME: storage streaming resume import concurrency cost wire
                                               postgres fork lag cells batch loopstall workers
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

from tests.benchmarks import (
    bench_batch,
    bench_cells,
    bench_concurrency,
    bench_cost,
    bench_fork,
    bench_import,
    bench_lag,
    bench_loop_stall,
    bench_postgres,
    bench_resume,
    bench_storage,
    bench_streaming,
    bench_wire,
    bench_workers,
)
from tests.benchmarks.report import Table, machine

BENCHMARKS = {
    "storage": bench_storage.run,
    "streaming": bench_streaming.run,
    "resume": bench_resume.run,
    "import": bench_import.run,
    "concurrency": bench_concurrency.run,
    "cost": bench_cost.run,
    "wire": bench_wire.run,
    "postgres": bench_postgres.run,
    "fork": bench_fork.run,
    "lag": bench_lag.run,
    "cells": bench_cells.run,
    "batch": bench_batch.run,
    "loopstall": bench_loop_stall.run,
    "workers": bench_workers.run,
}
RESULTS = Path(__file__).with_name("RESULTS.md")


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
        return 2
    chosen = names or list(BENCHMARKS)
    where = machine()
    print(where, end="\n\n")
    sections: list[str] = []
    failed = 0
    for name in chosen:
        started = time.perf_counter()
        try:
            tables: list[Table] = BENCHMARKS[name]()
        except Exception:
            failed += 1
            error = traceback.format_exc()
            print(f"benchmark {name} failed:\n{error}")
            sections.append(f"### {name}\n\nfailed:\n\n```\n{error}\n```")
            continue
        for table in tables:
            print(table.text(), end="\n\n")
            sections.append(table.markdown())
        print(f"({name}: {time.perf_counter() - started:.0f} s)\n")
    if not names:
        RESULTS.write_text(
            "# Benchmark results\n\n"
            "Written by `python -m tests.benchmarks`; every ratio was measured side by side in "
            "one run on a shared, noisy machine, so read ratios, not absolute times.\n\n"
            f"Machine and date: {where}\n\n" + "\n\n".join(sections) + "\n"
        )
        print(f"wrote {RESULTS}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
