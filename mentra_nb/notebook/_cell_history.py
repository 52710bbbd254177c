"""What the kernel's cells did: their source, output, exception and the images
they displayed, by execution count — the notebook as the agents' context.

IPython keeps each cell's source (`In`) and value (`Out`) already, and since
IPython 9 what each cell printed (`history_manager.outputs`). `CellHistory`
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
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    """A cell's exception as text: `In [n]`, the exception's name, its traceback,
    and the cell's source (kept with it: a headless runner stores no history)."""

    execution_count: int
    name: str
    traceback: str
    source: str


@dataclass(frozen=True)
class _Ran:
    """One cell run since `%load_ext mentra_nb`, as recorded when it ended."""

    count: int
    source: str
    error: CellError | None
    images: tuple[str, ...]  # base64 PNGs, as displayed


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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


class CellHistory:
    """Records each cell's exception and displayed images in `shell` once
    `install()`ed (by `%load_ext mentra_nb`); cells before that have `In` and
    `Out` only.

    Cells are named by execution count (`In[3]`) or counted back from the cell
    running now (`In[-1]` is the one before it). Runners that store no history
    (nbval) give every cell the same count, so there only the relative form
    finds a cell, and `Out` has nothing."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._ran: deque[_Ran] = deque(maxlen=MAX_KEPT_CELLS)
        self._source = ""  # the cell running now
        # Base64 PNGs displayed by the cell running now. Kept as the strings the display
        # message holds (no copy, and no pydantic while %load_ext loads).
        self._showing: list[str] = []
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
        raw = getattr(info, "raw_cell", "")
        self._source = raw if isinstance(raw, str) else ""

    def _on_display(self, msg: Any) -> Any:
        try:
            if msg.get("msg_type") == "display_data" and len(self._showing) < MAX_IMAGES_PER_CELL:
                png = msg["content"]["data"].get("image/png")
                if isinstance(png, str) and png:
                    self._showing.append(png)
        except Exception:
            pass
        return msg

    def _after_cell(self, result: Any) -> None:
        try:
            count = result.execution_count
            if not isinstance(count, int):
                return
            error = result.error_in_exec or result.error_before_exec
            failure = None
            if error is not None:
                failure = CellError(count, type(error).__name__,
                                    _format_error(self.shell, error, result.error_in_exec is None),
                                    clip(self._source, MAX_SOURCE_CHARS))
                self.last_error = failure
            self._ran.append(_Ran(count, self._source, failure, tuple(self._showing)))
            self._showing = []
        except Exception:
            pass

    # --- reading --------------------------------------------------------------------

    @property
    def last_count(self) -> int:
        """The execution count of the last cell IPython stored (0 before any, or
        when the runner stores no history)."""
        return len(self.shell.history_manager.input_hist_raw) - 1

    def _ran_cell(self, n: int) -> _Ran | None:
        """The recorded run of cell n (n < 0: counted back from the cell running now)."""
        if n < 0:
            if -n > len(self._ran):
                raise CellLookupError(f"there is no cell In[{n}]: {_plural(len(self._ran), 'cell')} ran since "
                                      "%load_ext mentra_nb")
            return self._ran[n]
        self._check(n)
        return next((r for r in reversed(self._ran) if r.count == n), None)

    def _check(self, n: int) -> None:
        last = self.last_count
        if not 1 <= n <= last:
            runs = f"1 to {last}" if last else "none stored (this runner keeps no history: In[-1] is the cell before)"
            raise CellLookupError(f"there is no cell In[{n}] in this kernel; cells run so far: {runs}")

    def source(self, n: int) -> str:
        """Cell n's source as typed."""
        ran = self._ran_cell(n)
        if n < 0 and ran is not None:
            return ran.source
        return str(self.shell.history_manager.input_hist_raw[n])

    def output(self, n: int, limit: int = MAX_OUTPUT_CHARS) -> str:
        """Cell n's value (`Out[n]`) as text, cut at `limit` characters."""
        ran = self._ran_cell(n)
        count = ran.count if n < 0 and ran is not None else n
        outputs = self.shell.history_manager.output_hist
        if count not in outputs or (n < 0 and self.last_count == 0):
            have = ", ".join(str(k) for k in sorted(outputs)[-20:]) or "none"
            raise CellLookupError(f"cell In[{n}] has no output (Out[{n}]): its last line was not an expression "
                                  f"with a value; cells with an output: {have}")
        return clip(_text_of(outputs[count]), limit)

    def printed(self, n: int, limit: int = MAX_OUTPUT_CHARS) -> str:
        """What cell n wrote to stdout and stderr, cut at `limit` characters ("" on an
        IPython before 9, which does not keep it)."""
        try:
            outputs = getattr(self.shell.history_manager, "outputs", {}).get(n, [])
            text = "".join(chunk for output in outputs
                           if getattr(output, "output_type", "") in ("out_stream", "err_stream")
                           for chunk in output.bundle.get("stream", []) if isinstance(chunk, str))
        except Exception:  # IPython's own structure: never let it break the listing
            return ""
        return clip(_ANSI.sub("", text).rstrip("\n"), limit) if text.strip() else ""

    def has_output(self, n: int) -> bool:
        return n in self.shell.history_manager.output_hist

    def error(self, n: int) -> CellError:
        """Cell n's exception, as recorded when it failed."""
        ran = self._ran_cell(n)
        if ran is None or ran.error is None:
            have = ", ".join(str(r.count) for r in self._ran if r.error is not None) or \
                "none since %load_ext mentra_nb"
            raise CellLookupError(f"cell In[{n}] raised no exception (that mentra saw); cells with an "
                                  f"error: {have}")
        return ran.error

    def images(self, n: int) -> list[ImageBlock]:
        """The PNG images cell n displayed (plots included)."""
        ran = self._ran_cell(n)
        if ran is None or not ran.images:
            have = ", ".join(str(k) for k in self.cells_with_images()[-20:]) or "none yet"
            raise CellLookupError(f"cell In[{n}] displayed no image; cells that did: {have}")
        return _image_blocks(ran.images)

    def last_images(self) -> tuple[str, list[ImageBlock]] | None:
        """The most recent cell that displayed images ("In[7]", or "In[-2]" where the
        runner numbers no cells), and its images."""
        for back, ran in enumerate(reversed(self._ran), 1):
            if ran.images:
                return (f"In[{ran.count}]" if self.last_count else f"In[-{back}]"), _image_blocks(ran.images)
        return None

    def cells_with_images(self) -> list[int]:
        return list(dict.fromkeys(r.count for r in self._ran if r.images))

    # --- the listing notebook_cells returns ---------------------------------------------

    def listing(self, start: int | None, end: int | None, *, with_outputs: bool,
                notebook: Path | None) -> str:
        last = self.last_count
        if last == 0:
            return self._unnumbered_listing(with_outputs)
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
        ran = {r.count: r for r in self._ran}
        for n in range(start, end + 1):
            for text in markdown.get(n, []):
                parts.append(f"Markdown cell (from the notebook file, before In [{n}]):\n{clip(text, MAX_SOURCE_CHARS)}")
            parts.append(f"In [{n}]:\n{clip(str(self.shell.history_manager.input_hist_raw[n]), MAX_SOURCE_CHARS)}")
            if with_outputs:
                printed = self.printed(n)
                if printed:
                    parts.append(f"Printed by In [{n}]:\n{printed}")
                if self.has_output(n):
                    parts.append(f"Out[{n}]:\n{self.output(n)}")
                parts += _outcome(ran.get(n), f"In [{n}]", f"figure='cell {n}'")
        if notebook is None:
            parts.append("[the kernel does not know its notebook file, so markdown cells are not listed]")
        return clip("\n\n".join(parts), MAX_LISTING_CHARS)

    def _unnumbered_listing(self, with_outputs: bool) -> str:
        if not self._ran:
            return "no cell has run in this kernel yet"
        parts = ["[this kernel's runner stores no history (nbval, say): the cells since %load_ext "
                 "mentra_nb, oldest first, without values or markdown]"]
        cells = list(self._ran)[-MAX_CELLS_PER_LISTING:]
        for back, ran in zip(range(-len(cells), 0), cells, strict=True):
            parts.append(f"In [{back}]:\n{clip(ran.source, MAX_SOURCE_CHARS)}")
            if with_outputs:
                parts += _outcome(ran, f"In [{back}]", f"figure='cell {back}'")
        return clip("\n\n".join(parts), MAX_LISTING_CHARS)


def _image_blocks(pngs: tuple[str, ...]) -> list[ImageBlock]:
    from mentra_nb.messages import ImageBlock

    return [ImageBlock(media_type="image/png", data=png.replace("\n", "")) for png in pngs]


def _outcome(ran: _Ran | None, label: str, figure: str) -> list[str]:
    if ran is None:
        return []
    parts = []
    if ran.error is not None:
        parts.append(f"Error in {label}:\n{clip(ran.error.traceback, MAX_OUTPUT_CHARS)}")
    if ran.images:
        parts.append(f"[{label} displayed {_plural(len(ran.images), 'image')}: view_figure with {figure} "
                     "shows it]")
    return parts


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
