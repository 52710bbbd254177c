"""Prompts made from the notebook: `{var}`, `{In[n]}`, `{Out[n]}` and `{Err[n]}`
filled in, the `%mentra explain` prompt, and the code block `-f code` puts in
the next cell.

A cell may have displayed a key (`headers = {'x-api-key': os.environ[...]}; headers`),
so a prompt built here is scrubbed of the secrets the runtime knows, as tool results
are, before it is shown, sent or mailed to another kernel. (The runtime scrubs every
message it stores again; this keeps the key out of the cell's own output too.)"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from mentra_nb.notebook._cell_history import CellError, CellHistory, CellLookupError
from mentra_nb.runtime import known_secrets, scrub

__all__ = ["PromptFieldError", "explain_prompt", "first_code_block", "interpolate"]


class PromptFieldError(ValueError):
    """A `{...}` field of a prompt that cannot be filled; the message says why."""


class _Cells:
    """`In`, `Out` or `Err` in a prompt: cell n's source, value (as bounded text)
    or traceback (without ANSI colours)."""

    def __init__(self, cells: CellHistory, kind: str) -> None:
        self.cells = cells
        self.kind = kind

    def __getitem__(self, key: Any) -> str:
        try:
            n = int(key)
        except (TypeError, ValueError):
            raise PromptFieldError(f"{{{self.kind}[{key}]}}: write a cell number, as in {{{self.kind}[3]}}") from None
        try:
            if self.kind == "In":
                return self.cells.source(n)
            if self.kind == "Out":
                return self.cells.output(n)
            return self.cells.error(n).traceback
        except CellLookupError as err:
            raise PromptFieldError(f"{{{self.kind}[{n}]}}: {err}") from None

    def __format__(self, spec: str) -> str:
        raise PromptFieldError(f"{{{self.kind}}} needs a cell number, as in {{{self.kind}[3]}}")


class _Namespace(dict):  # type: ignore[type-arg]
    """The kernel's variables for str.format without copying them; In, Out and Err
    are cells."""

    def __init__(self, user_ns: Mapping[str, Any], cells: CellHistory | None) -> None:
        super().__init__()
        self._ns = user_ns
        self._cells = cells

    def __missing__(self, key: str) -> Any:
        if self._cells is not None and key in ("In", "Out", "Err"):
            return _Cells(self._cells, key)
        return self._ns[key]


def interpolate(prompt: str, user_ns: Mapping[str, Any], cells: CellHistory | None) -> str:
    """`prompt` with its `{...}` fields filled from the kernel; raises
    `PromptFieldError` saying what is wrong and what to do."""
    try:
        filled = string.Formatter().vformat(prompt, (), _Namespace(user_ns, cells))
    except PromptFieldError:
        raise
    except KeyError as err:
        raise PromptFieldError(
            f"the prompt names {{{err.args[0]}}}, which is not a variable in this kernel; define it, "
            "write {{ and }} for literal braces, or use --no-interpolate") from None
    except (ValueError, AttributeError, IndexError, TypeError) as err:
        raise PromptFieldError(f"cannot fill the prompt's {{...}} fields: {err}; use --no-interpolate "
                               "to send it as written") from None
    return scrub(filled, known_secrets())


def explain_prompt(error: CellError) -> str:
    """What `%mentra explain` sends: the failed cell and its traceback."""
    return scrub(f"My notebook cell In [{error.execution_count}] failed with {error.name}. Explain what "
                 f"went wrong and how to fix it; show the corrected code.\n\nThe cell:\n\n"
                 f"{_fenced(error.source, 'python')}\n\nThe traceback:\n\n{_fenced(error.traceback)}",
                 known_secrets())


def _fenced(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^\n`]*)\n(.*?)^ {0,3}\2[`~]*[ \t]*$", re.M | re.S)


def first_code_block(text: str) -> str | None:
    """The body of the first fenced code block in `text` (None when it has none)."""
    found = _FENCE.search(text)
    if found is None:
        return None
    return found.group(4).rstrip("\n")
