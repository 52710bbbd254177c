"""What the kernel's cells did: their source, output, exception and the images
they displayed, by execution count — the notebook as the agents' context.

IPython keeps each cell's source (`In`) and value (`Out`) already. `CellHistory`
adds the two it forgets: the traceback of a cell that failed (formatted once,
when it fails, as the user saw it but without ANSI colours; the exception
itself is not kept, so its frames and their variables are freed as before) and
the PNG images a cell displayed (a matplotlib plot under the inline backend is
closed once shown, so its image is the only copy left). Both are bounded: the
last `MAX_KEPT_CELLS` cells, `MAX_IMAGES_PER_CELL` images each. A cell that
succeeds and shows no image costs two empty callbacks; nothing here may ever
break a user's cell or traceback, so every hook swallows its own failures.
"""

from __future__ import annotations

import contextlib
import json
import re
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mentra_nb.messages import ImageBlock

__all__ = [
    "MAX_CELLS_PER_LISTING",
    "MAX_IMAGES_PER_CELL",
    "MAX_KEPT_CELLS",
    "MAX_LISTING_CHARS",
    "MAX_OUTPUT_CHARS",
    "MAX_SOURCE_CHARS",
    "MAX_TRACEBACK_CHARS",
    "CellError",
    "CellHistory",
    "CellLookupError",
    "clip",
]

MAX_KEPT_CELLS = 200
MAX_IMAGES_PER_CELL = 4
MAX_OUTPUT_CHARS = 4_000  # {Out[n]} and an output in notebook_cells
MAX_TRACEBACK_CHARS = 20_000
MAX_SOURCE_CHARS = 8_000  # one cell's source in notebook_cells
MAX_CELLS_PER_LISTING = 50
MAX_LISTING_CHARS = 40_000

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n… [cut: {len(text) - limit:,} more characters]"


class CellLookupError(LookupError):
    """A cell number that does not exist, or has no output / error / image; the
    message says which cells do."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class CellError:
    """A cell's exception as text: `In [n]`, the exception's name, its traceback."""

    execution_count: int
    name: str
    traceback: str


def _format_error(shell: Any, error: BaseException, before_exec: bool) -> str:
    # A usage error (a magic's bad input) and a syntax error read best as IPython
    # shows them: one message, no frames of IPython's own.
    if type(error).__name__ == "UsageError":
        return f"UsageError: {error}"
    if before_exec:
        return "".join(traceback.format_exception_only(type(error), error)).rstrip()
    try:
        # The traceback the user saw (IPython's context and "Cell In[n], line m"), coloured.
        formatter = shell.InteractiveTB
        text = formatter.stb2text(formatter.structured_traceback(type(error), error, error.__traceback__))
    except Exception:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return clip(_ANSI.sub("", text).strip("\n"), MAX_TRACEBACK_CHARS)


class CellHistory:
    """Records each cell's exception and displayed images in `shell` once
    `install()`ed (by `%load_ext mentra_nb`); cells before that have `In` and
    `Out` only."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._errors: OrderedDict[int, CellError] = OrderedDict()
        self._images: OrderedDict[int, list[ImageBlock]] = OrderedDict()
        self._showing: list[ImageBlock] = []  # images displayed by the cell running now
        self.last_error: CellError | None = None
        self._installed = False

    # --- recording ------------------------------------------------------------------

    def install(self) -> None:
        if self._installed:
            return
        self._installed = True
        self.shell.events.register("pre_run_cell", self._before_cell)
        self.shell.events.register("post_run_cell", self._after_cell)
        # ipykernel's display publisher lets a hook see each display message (it
        # must hand the message on); a terminal IPython has no images to keep.
        register = getattr(self.shell.display_pub, "register_hook", None)
        if callable(register):
            register(self._on_display)

    def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        for event, callback in (("pre_run_cell", self._before_cell), ("post_run_cell", self._after_cell)):
            with contextlib.suppress(ValueError):
                self.shell.events.unregister(event, callback)
        unregister = getattr(self.shell.display_pub, "unregister_hook", None)
        if callable(unregister):
            unregister(self._on_display)

    def _before_cell(self, info: Any = None) -> None:
        self._showing = []

    def _on_display(self, msg: Any) -> Any:
        try:
            if msg.get("msg_type") == "display_data" and len(self._showing) < MAX_IMAGES_PER_CELL:
                png = msg["content"]["data"].get("image/png")
                if isinstance(png, str) and png:
                    self._showing.append(ImageBlock(media_type="image/png", data=png.replace("\n", "")))
        except Exception:
            pass
        return msg

    def _after_cell(self, result: Any) -> None:
        try:
            count = result.execution_count
            if not isinstance(count, int):
                return
            if self._showing:
                self._keep(self._images, count, self._showing)
                self._showing = []
            error = result.error_in_exec or result.error_before_exec
            if error is not None:
                failure = CellError(count, type(error).__name__,
                                    _format_error(self.shell, error, result.error_in_exec is None))
                self._keep(self._errors, count, failure)
                self.last_error = failure
        except Exception:
            pass

    @staticmethod
    def _keep(kept: OrderedDict[int, Any], count: int, value: Any) -> None:
        kept[count] = value
        kept.move_to_end(count)
        while len(kept) > MAX_KEPT_CELLS:
            kept.popitem(last=False)

    # --- reading --------------------------------------------------------------------

    @property
    def last_count(self) -> int:
        """The execution count of the last cell that ran (0 before any)."""
        return len(self.shell.history_manager.input_hist_raw) - 1

    def _check(self, n: int) -> None:
        last = self.last_count
        if not 1 <= n <= last:
            raise CellLookupError(f"there is no cell In[{n}] in this kernel; cells run so far: "
                                  + (f"1 to {last}" if last else "none"))

    def source(self, n: int) -> str:
        """Cell n's source as typed."""
        self._check(n)
        return str(self.shell.history_manager.input_hist_raw[n])

    def has_output(self, n: int) -> bool:
        return n in self.shell.history_manager.output_hist

    def output(self, n: int, limit: int = MAX_OUTPUT_CHARS) -> str:
        """Cell n's value (`Out[n]`) as text, cut at `limit` characters."""
        self._check(n)
        outputs = self.shell.history_manager.output_hist
        if n not in outputs:
            have = ", ".join(str(k) for k in sorted(outputs)[-20:]) or "none"
            raise CellLookupError(f"cell In[{n}] has no output (Out[{n}]): its last line was not an expression "
                                  f"with a value; cells with an output: {have}")
        return clip(_text_of(outputs[n]), limit)

    def error(self, n: int) -> CellError:
        """Cell n's exception, as recorded when it failed."""
        self._check(n)
        found = self._errors.get(n)
        if found is None:
            have = ", ".join(str(k) for k in list(self._errors)[-20:]) or "none since %load_ext mentra_nb"
            raise CellLookupError(f"cell In[{n}] raised no exception (that mentra saw); cells with an "
                                  f"error: {have}")
        return found

    def errors(self) -> dict[int, CellError]:
        return dict(self._errors)

    def images(self, n: int) -> list[ImageBlock]:
        """The PNG images cell n displayed (plots included)."""
        self._check(n)
        found = self._images.get(n)
        if not found:
            have = ", ".join(str(k) for k in list(self._images)[-20:]) or "none yet"
            raise CellLookupError(f"cell In[{n}] displayed no image; cells that did: {have}")
        return list(found)

    def last_images(self) -> tuple[int, list[ImageBlock]] | None:
        """The most recent cell that displayed images, and its images."""
        if not self._images:
            return None
        count = next(reversed(self._images))
        return count, list(self._images[count])

    def cells_with_images(self) -> list[int]:
        return list(self._images)

    # --- the listing notebook_cells returns ---------------------------------------------

    def listing(self, start: int | None, end: int | None, *, with_outputs: bool,
                notebook: Path | None) -> str:
        last = self.last_count
        if last == 0:
            return "no cell has run in this kernel yet"
        end = last if end is None else min(end, last)
        start = max(1, end - 19) if start is None else max(1, start)
        if start > end:
            raise CellLookupError(f"no cells from {start} to {end}; cells run so far: 1 to {last}")
        parts: list[str] = []
        if end - start + 1 > MAX_CELLS_PER_LISTING:
            parts.append(f"[cells {start} to {end - MAX_CELLS_PER_LISTING} left out: at most "
                         f"{MAX_CELLS_PER_LISTING} cells per call; ask for them with start and end]")
            start = end - MAX_CELLS_PER_LISTING + 1
        markdown = _markdown_before(notebook)
        for n in range(start, end + 1):
            for text in markdown.get(n, []):
                parts.append(f"Markdown cell (from the notebook file, before In [{n}]):\n{clip(text, MAX_SOURCE_CHARS)}")
            parts.append(f"In [{n}]:\n{clip(str(self.shell.history_manager.input_hist_raw[n]), MAX_SOURCE_CHARS)}")
            if not with_outputs:
                continue
            if self.has_output(n):
                parts.append(f"Out[{n}]:\n{self.output(n)}")
            failure = self._errors.get(n)
            if failure is not None:
                parts.append(f"Error in In [{n}]:\n{clip(failure.traceback, MAX_OUTPUT_CHARS)}")
            shown = self._images.get(n)
            if shown:
                parts.append(f"[In [{n}] displayed {len(shown)} image{'s' if len(shown) > 1 else ''}: "
                             f"view_figure with figure='cell {n}' shows it]")
        if notebook is None:
            parts.append("[the kernel does not know its notebook file, so markdown cells are not listed]")
        return clip("\n\n".join(parts), MAX_LISTING_CHARS)


def _text_of(value: Any) -> str:
    try:
        from IPython.lib.pretty import pretty

        return str(pretty(value, max_width=100, max_seq_length=200))  # type: ignore[no-untyped-call]
    except Exception as err:  # a user's repr may raise
        return f"<repr failed: {type(err).__name__}: {err}>"


def _markdown_before(notebook: Path | None) -> dict[int, list[str]]:
    """The notebook file's markdown cells (as last saved), by the execution count of
    the code cell that follows each (markdown after the last run cell is left out)."""
    if notebook is None or notebook.suffix != ".ipynb":
        return {}
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return {}
    found: dict[int, list[str]] = {}
    waiting: list[str] = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        if cell.get("cell_type") == "markdown" and text.strip():
            waiting.append(text)
        elif cell.get("cell_type") == "code" and isinstance(cell.get("execution_count"), int) and waiting:
            found.setdefault(cell["execution_count"], []).extend(waiting)
            waiting = []
    return found
