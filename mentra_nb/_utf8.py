"""Text that is valid UTF-8, whatever came in.

Python strings can hold lone surrogates: a file name that is not UTF-8 (Latin-1
on a Linux disk) decodes to them, and so does a JSON escape like "\\ud800" in a
provider's delta or a tool's output. They cannot be encoded, so a message
holding one fails when it is stored or sent, on every retry. Every text that
enters a message passes through `valid_utf8`, which swaps them for U+FFFD.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["valid_utf8", "valid_utf8_value"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_utf8(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the same object if none)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def valid_utf8_value(value: Any) -> Any:
    """A JSON value (nested dicts, lists and strings) with `valid_utf8` applied to
    every string, keys included. Callers bound the nesting depth first."""
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, dict):
        return {valid_utf8(str(k)): valid_utf8_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_utf8_value(v) for v in value]
    return value
