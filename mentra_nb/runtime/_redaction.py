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
import os
import re
from collections.abc import Iterable
from pathlib import Path

from mentra_nb.messages import Message, TextBlock, ToolResultBlock
from mentra_nb.providers import find_dotenv_files, read_dotenv, redact

__all__ = ["MIN_SECRET_CHARS", "known_secrets", "scrub", "scrub_message"]

MIN_SECRET_CHARS = 8
_SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSW(?:OR)?D|CREDENTIAL|ACCESS_KEY|PRIVATE_KEY",
                          re.IGNORECASE)


def known_secrets(workspace: Path | None = None) -> list[str]:
    """The secret values to mask, longest first (so a key containing another is masked whole)."""
    values: set[str] = set()
    for name, value in os.environ.items():
        if _SECRET_NAME.search(name):
            values.add(value.strip())
    dotenv_files: list[Path] = list(find_dotenv_files())
    if workspace is not None:
        with contextlib.suppress(OSError):
            dotenv_files += sorted(p for p in workspace.glob(".env*") if p.is_file())
    for path in dotenv_files:
        values.update(v.strip() for v in read_dotenv(path).values())
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


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
