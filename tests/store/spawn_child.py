"""A process that spawns agents when told to, racing its siblings.

    python -m tests.store.spawn_child DB WORKDIR TRIALS

For each trial t it waits for WORKDIR/go-t, spawns an agent named `writer-t`
in runtime "nb" and prints `WON t <id>` or `LOST t <error type>`."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from mentra_nb import AgentExists, Runtime, SqliteStore
from tests.children import say


async def main(db: Path, work: Path, trials: int) -> None:
    store = SqliteStore(db)
    rt = Runtime.empty(store=store, runtime_id="nb")
    say("READY")
    for trial in range(trials):
        while not (work / f"go-{trial}").exists():
            time.sleep(0.002)  # noqa: ASYNC251 - spin close to the start line, like a race
        try:
            agent = rt.spawn(f"writer-{trial}", "test")
            say(f"WON {trial} {agent.id}")
        except AgentExists:
            say(f"LOST {trial} AgentExists")
        except Exception as err:
            say(f"LOST {trial} {type(err).__name__}: {err}")
    await rt.aclose()
    store.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])))
