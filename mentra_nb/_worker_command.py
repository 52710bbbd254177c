"""`python -m mentra_nb worker --db postgresql://…`: run rows of the store's open
jobs on this host until stopped (SIGTERM or Ctrl-C: the rows running here are
rolled back and queued again for the notebook and other workers).

Progress goes to stderr, one line at a time, so a service manager's log reads well."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import signal
import sys
from collections.abc import Iterable
from typing import Any

from mentra_nb.errors import MentraError
from mentra_nb.providers.base import Provider
from mentra_nb.runtime.tools import Tool

__all__ = ["add_worker_command", "run_worker"]

DESCRIPTION = """\
Claim and run rows of the open jobs (agent.map, %mentra map) stored in a Postgres
database, beside the notebooks that started them and any other workers: each row
runs in its own fork of the job's agent, on the provider its model names (API keys
come from this host's environment). Stop with SIGTERM or Ctrl-C: rows running here
are rolled back and queued again. A killed worker's rows are taken over by the
others once its lease expires (--lease-ttl). SQLite jobs run only in the kernel
that started them.

A job whose agent has tools is run only if this worker offers the same tools
(--tools); a job with an output model only if the model's module can be imported
here (put it on PYTHONPATH). Jobs the worker cannot run are named on stderr and
left to others."""


def add_worker_command(commands: Any) -> None:
    """The `worker` subcommand's arguments."""
    worker = commands.add_parser(
        "worker", help="run rows of a Postgres store's open jobs on this host",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    worker.add_argument("--db", required=True, metavar="DSN",
                        help="the notebooks' Postgres store: postgresql://USER@HOST/DB "
                             "(or libpq's 'host=… dbname=…'); the password from PGPASSWORD or ~/.pgpass")
    worker.add_argument("--tools", action="append", default=[], metavar="MODULE[:NAME]",
                        help="tools the jobs' agents use: a Tool or a list of them at MODULE.NAME "
                             "(NAME defaults to TOOLS); may be repeated")
    worker.add_argument("--providers", action="append", default=[], metavar="MODULE[:NAME]",
                        help="provider instances to use instead of the built-in ones of the same "
                             "name: a Provider or a list at MODULE.NAME (NAME defaults to PROVIDERS)")
    worker.add_argument("--no-builtin-tools", dest="builtin_tools", action="store_false",
                        help="do not offer the built-in file tools (a notebook's runtime offers "
                             "them unless built with builtin_tools=False)")
    worker.add_argument("--concurrency", type=int, metavar="N",
                        help="rows of one job running here at once (default: the job's concurrency)")
    worker.add_argument("--lease-ttl", type=float, default=30.0, metavar="SECONDS",
                        help="how long after its last heartbeat a silent worker on another host "
                             "loses its rows to the others (default 30; never shorter than the "
                             "notebooks' lease TTL)")


def _objects(spec: str, default_name: str, kind: type[Any], what: str) -> list[Any]:
    module_name, _, name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise SystemExit(f"--{what} {spec}: cannot import {module_name!r} ({err}); is it on PYTHONPATH?") from None
    found = getattr(module, name or default_name, None)
    if found is None:
        raise SystemExit(f"--{what} {spec}: module {module_name!r} has no {name or default_name!r}")
    items = found if isinstance(found, (list, tuple)) else [found]
    wrong = [i for i in items if not isinstance(i, kind)]
    if wrong:
        raise SystemExit(f"--{what} {spec}: {wrong[0]!r} is not a {kind.__name__}")
    return list(items)


def _all(specs: Iterable[str], default_name: str, kind: type[Any], what: str) -> list[Any]:
    return [item for spec in specs for item in _objects(spec, default_name, kind, what)]


def run_worker(args: argparse.Namespace) -> int:
    from mentra_nb.runtime.batch import Worker
    from mentra_nb.store.locations import is_postgres_url
    from mentra_nb.store.postgres import PostgresStore

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if not is_postgres_url(args.db):
        say(f"mentra worker: {args.db!r} is not a Postgres database. Workers need Postgres "
            "(postgresql://USER@HOST/DB); SQLite jobs run in the kernel that started them.")
        return 2
    if args.concurrency is not None and args.concurrency < 1:
        say("mentra worker: --concurrency must be 1 or more")
        return 2
    if args.lease_ttl <= 0:
        say("mentra worker: --lease-ttl must be a number of seconds above 0")
        return 2
    tools: list[Tool] = _all(args.tools, "TOOLS", Tool, "tools")
    providers: list[Provider] = _all(args.providers, "PROVIDERS", Provider, "providers")
    try:
        store = PostgresStore(args.db)
    except MentraError as err:
        say(f"mentra worker: {err}")
        return 1
    try:
        worker = Worker(store, providers=providers, tools=tools, builtin_tools=args.builtin_tools,
                        concurrency=args.concurrency, lease_ttl=args.lease_ttl, say=say)
        asyncio.run(_until_stopped(worker, say))
    except MentraError as err:
        say(f"mentra worker: {err}")
        return 1
    finally:
        store.close()
    return 0


async def _until_stopped(worker: Any, say: Any) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stop_now(signum: int) -> None:
        if stop.is_set():
            return
        say(f"{worker.id}: {signal.Signals(signum).name}: stopping; rows running here go back in the queue")
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop_now, signum)
    await worker.run(stop)
