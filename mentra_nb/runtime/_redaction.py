"""Secrets scrubbed out of everything that enters a transcript or the mail queue.

A tool can print anything it can read: `os.environ`, a config file, a log with
a key in it; a prompt can quote a cell that displayed one (`{Out[2]}`). Before
a tool result, a user message, injected mail or posted mail is stored (and so
reaches the state file, the widgets and the next request to the provider) the
values of the secrets the runtime knows are masked as "[redacted]":
- environment variables whose names say they hold a secret (`*API_KEY*`,
  `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, `*ACCESS_KEY*`,
  `*PRIVATE_KEY*`), which covers every provider key variable;
- every value in the `.env` files the keys are read from (beside the notebook,
  the current folder) and in the workspace root's `.env*` files;
- anything shaped like a provider key, and 10+-character fragments of a known
  key (a prefix quoted back in an error body).
Values shorter than `MIN_SECRET_CHARS` are not masked: they would hide
ordinary words (a `.env` line `DEBUG=true` is no secret worth breaking text for).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from mentra_nb.messages import Message, TextBlock, ToolResultBlock
from mentra_nb.providers import find_dotenv_files, read_dotenv, redact

__all__ = ["MIN_SECRET_CHARS", "known_secrets", "scrub", "scrub_message"]

MIN_SECRET_CHARS = 8
_SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSW(?:OR)?D|CREDENTIAL|ACCESS_KEY|PRIVATE_KEY",
                          re.IGNORECASE)


def known_secrets(workspace: Path | None = None) -> list[str]:
    """The secret values to mask, longest first (so a key containing another is masked whole).

    Every run asks (a job over many rows: once per row), so a `.env` file is parsed again
    only when its stamp (`_stamp`) changed, and the workspace folder listed again
    only when its own did; the environment is read every time."""
    values: set[str] = set()
    for name, value in os.environ.items():
        if _is_secret_name(name):
            values.add(value.strip())
    dotenv_files: list[Path] = list(find_dotenv_files())
    if workspace is not None:
        stamp = _stamp(workspace)
        dotenv_files += _workspace_dotenvs(workspace, stamp) if stamp is not None else _list_dotenvs(workspace)
    for path in dotenv_files:
        stamp = _stamp(path)
        values.update(_dotenv_secrets(path, stamp) if stamp is not None else _read_secrets(path))
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


@functools.lru_cache(maxsize=1024)
def _is_secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


# Seconds within which a mtime is too recent to trust: a write in the same clock
# tick as our read (coarse on most file systems, 2 s on FAT) can leave mtime and
# size as they were, so such a file is read (a folder listed) every time.
_RACY_SECONDS = 3


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What identifies one version of `path` (inode, size, mtime, ctime: a copy
    that keeps the old mtime, `cp -p`, still changes ctime); None when it is
    missing or so recent that it must be read again."""
    try:
        st = path.stat()
    except OSError:
        return None
    if time.time_ns() - st.st_mtime_ns < _RACY_SECONDS * 1_000_000_000:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@functools.lru_cache(maxsize=64)
def _dotenv_secrets(path: Path, stamp: tuple[int, int, int, int]) -> frozenset[str]:
    """`path`'s values, parsed once per `stamp` (the stamp is the cache key)."""
    return _read_secrets(path)


def _read_secrets(path: Path) -> frozenset[str]:
    return frozenset(v.strip() for v in read_dotenv(path).values())


@functools.lru_cache(maxsize=16)
def _workspace_dotenvs(workspace: Path, stamp: tuple[int, int, int, int]) -> tuple[Path, ...]:
    """The workspace's `.env*` files, listed once per version of the folder (adding,
    removing or renaming an entry changes its mtime)."""
    return _list_dotenvs(workspace)


def _list_dotenvs(workspace: Path) -> tuple[Path, ...]:
    with contextlib.suppress(OSError):
        return tuple(sorted(p for p in workspace.glob(".env*") if p.is_file()))
    return ()


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret (and key fragment or key-shaped string) masked."""
    return redact(text, secrets)


def scrub_message(message: Message, secrets: Iterable[str]) -> Message:
    """`message` with its text and tool results scrubbed (the same message when
    nothing in it is secret). Images and the model's own blocks are kept as they are."""
    secrets = list(secrets)
    content = []
    for block in message.content:
        if isinstance(block, TextBlock):
            block = block.model_copy(update={"text": scrub(block.text, secrets)})
        elif isinstance(block, ToolResultBlock):
            block = block.model_copy(update={"content": scrub(block.content, secrets)})
        content.append(block)
    if content == message.content:
        return message
    return message.model_copy(update={"content": content})
