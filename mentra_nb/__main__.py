"""Command line: `python -m mentra_nb demo [--db PATH]`, `python -m mentra_nb worker --db DSN`."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mentra_nb", description="mentra-nb tools")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="stream an offline agent, then resume it in a second process")
    demo.add_argument("--db", help="state file to create (default: a new temporary folder)")
    demo.add_argument("--resume", action="store_true", help="only resume the agents in --db")
    from mentra_nb._worker_command import add_worker_command, run_worker

    add_worker_command(commands)
    args = parser.parse_args(argv)
    if args.command == "worker":
        return run_worker(args)
    if args.command == "demo":
        if args.resume and not args.db:
            parser.error("--resume needs --db PATH")
        from mentra_nb._demo import run_demo

        return run_demo(args.db, resume_only=args.resume)
    return 2


if __name__ == "__main__":
    sys.exit(main())
