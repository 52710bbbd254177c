"""Figures as PNG image blocks for vision models: open matplotlib figures, a
figure or axes or PIL image held by a variable, or the images a cell displayed.

matplotlib and PIL are never imported here: a kernel that has not imported
them has no figure of theirs to show. Images are at most `MAX_SIDE` pixels on
their long side (what vision models read without scaling down themselves) and
at most `MAX_IMAGES` go in one answer.
"""

from __future__ import annotations

import base64
import io
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mentra_nb.messages import ImageBlock
from mentra_nb.notebook._cell_history import CellHistory, CellLookupError
from mentra_nb.runtime.images import (  # shared with MCP's images
    MAX_IMAGE_BASE64,
    MAX_IMAGES,
    MAX_SIDE,
)

__all__ = ["MAX_IMAGES", "MAX_SIDE", "FigureNotFound", "Shown", "current_figures", "find_figures"]

_CELL = re.compile(r"^\s*(?:cell\s*:?\s*|in\s*\[\s*|out\s*\[\s*)(-?\d+)\s*\]?\s*$", re.I)


class FigureNotFound(LookupError):
    """Nothing matched; the message says what there is."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Shown:
    """Images found, and a line saying what they are (for the model and the user)."""

    images: list[ImageBlock]
    description: str


def _pyplot() -> Any:
    return sys.modules.get("matplotlib.pyplot")


def _is(value: Any, module: str, name: str) -> bool:
    loaded = sys.modules.get(module)
    kind = getattr(loaded, name, None) if loaded is not None else None
    return isinstance(kind, type) and isinstance(value, kind)


def _png_block(data: bytes) -> ImageBlock:
    return ImageBlock(media_type="image/png", data=base64.b64encode(data).decode("ascii"))


def _figure_png(figure: Any) -> tuple[ImageBlock, str]:
    width, height = figure.get_size_inches()
    dpi = min(float(figure.dpi), MAX_SIDE / max(width, height, 0.01))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    suptitle = getattr(figure, "get_suptitle", lambda: "")()  # matplotlib >= 3.8
    title = figure.get_label() or suptitle or next((a.get_title() for a in figure.get_axes() if a.get_title()), "")
    size = f"{round(width * dpi)}x{round(height * dpi)} px"
    return _png_block(buffer.getvalue()), (f"'{title}', {size}" if title else size)


def _pil_png(image: Any) -> tuple[ImageBlock, str]:
    copy = image.copy()
    copy.thumbnail((MAX_SIDE, MAX_SIDE))
    if copy.mode not in ("RGB", "RGBA", "L", "LA", "P", "1", "I;16"):
        copy = copy.convert("RGBA")
    buffer = io.BytesIO()
    copy.save(buffer, format="PNG")
    return _png_block(buffer.getvalue()), f"PIL image {image.size[0]}x{image.size[1]} px"


def _bounded(image: ImageBlock) -> ImageBlock | None:
    """A displayed PNG as sent, or scaled down when too big (None: too big, no PIL)."""
    if len(image.data) <= MAX_IMAGE_BASE64:
        return image
    pil = sys.modules.get("PIL.Image")
    if pil is None:
        return None
    return _pil_png(pil.open(io.BytesIO(base64.b64decode(image.data))))[0]


def _open_figure(key: int | str) -> Any | None:
    """pyplot's open figure `key` (a number or label), or None. Looked up in pyplot's
    registry of figure managers, because `plt.figure(key)` finds a figure only by
    making it current: from the runtime's thread that could redirect a cell drawing
    at that moment, or open a new figure if the inline backend just closed this one."""
    from matplotlib._pylab_helpers import Gcf

    for manager in Gcf.get_all_fig_managers():
        figure = manager.canvas.figure
        if manager.num == key or (isinstance(key, str) and figure.get_label() == key):
            return figure
    return None


def current_figures() -> Shown | None:
    """The open matplotlib figures (None when there are none)."""
    plt = _pyplot()
    if plt is None:
        return None
    numbers = plt.get_fignums()
    if not numbers:
        return None
    open_figures = [(n, f) for n in numbers[:MAX_IMAGES] if (f := _open_figure(n)) is not None]
    rendered = [(n, *_figure_png(f)) for n, f in open_figures]
    more = f" (and {len(numbers) - MAX_IMAGES} more not shown)" if len(numbers) > MAX_IMAGES else ""
    return Shown([image for _, image, _ in rendered],
                 "; ".join(f"matplotlib figure {n}: {what}" for n, _, what in rendered) + more)


def _cell_images(displayed: list[ImageBlock], cell: str) -> Shown:
    images = [b for b in (_bounded(i) for i in displayed) if b is not None]
    if not images:
        raise FigureNotFound(f"the images cell {cell} displayed are too large to send (over 5 MB) and "
                             "PIL is not loaded to scale them down")
    return Shown(images, f"{len(images)} image{'s' if len(images) > 1 else ''} displayed by cell {cell}")


def _value_images(name: str, value: Any) -> Shown | None:
    if _is(value, "matplotlib.axes", "Axes"):
        value = value.get_figure()
    if _is(value, "matplotlib.figure", "Figure"):
        image, what = _figure_png(value)
        return Shown([image], f"matplotlib figure in '{name}': {what}")
    if _is(value, "PIL.Image", "Image"):
        image, what = _pil_png(value)
        return Shown([image], f"'{name}': {what}")
    return None


def find_figures(figure: str | None, cells: CellHistory | None, user_ns: Mapping[str, Any]) -> Shown:
    """What `view_figure(figure)` shows. No `figure`: the open matplotlib figures,
    else the images the latest cell displayed. A number: matplotlib figure n. "cell
    n" (or In[n], Out[n]): the images cell n displayed, or its value if that is a
    figure or image. Otherwise a figure's label or a variable's name."""
    plt = _pyplot()
    wanted = (figure or "").strip()
    if not wanted:
        shown = current_figures()
        if shown is not None:
            return shown
        latest = cells.last_images() if cells is not None else None
        if latest is not None:
            return _cell_images(latest[1], latest[0])
        raise FigureNotFound("there is no figure to show: no matplotlib figure is open and no cell has "
                             "displayed an image since mentra was loaded; draw one in a cell first")
    if wanted.isdigit():
        number = int(wanted)
        found = _open_figure(number) if plt is not None else None
        if found is not None:
            image, what = _figure_png(found)
            return Shown([image], f"matplotlib figure {number}: {what}")
        raise FigureNotFound(f"there is no open matplotlib figure {number}; {_available(cells)}")
    cell = _CELL.match(wanted)
    if cell is not None:
        n = int(cell.group(1))
        if cells is None:
            raise FigureNotFound("this kernel records no cell images (load mentra with %load_ext mentra_nb)")
        try:
            return _cell_images(cells.images(n), f"In[{n}]")
        except CellLookupError as err:
            out = user_ns.get("Out", {})
            value = out.get(n) if isinstance(out, Mapping) else None
            shown = _value_images(f"Out[{n}]", value) if value is not None else None
            if shown is not None:
                return shown
            raise FigureNotFound(str(err)) from None
    found = _open_figure(wanted) if plt is not None and wanted in plt.get_figlabels() else None
    if found is not None:
        image, what = _figure_png(found)
        return Shown([image], f"matplotlib figure {what}")
    if wanted in user_ns:
        shown = _value_images(wanted, user_ns[wanted])
        if shown is not None:
            return shown
        raise FigureNotFound(f"'{wanted}' is a {type(user_ns[wanted]).__name__}, not a matplotlib Figure or "
                             f"Axes or a PIL image; {_available(cells)}")
    raise FigureNotFound(f"no figure, cell or variable named '{wanted}'; {_available(cells)}")


def _available(cells: CellHistory | None) -> str:
    plt = _pyplot()
    numbers = plt.get_fignums() if plt is not None else []
    labels = [label for label in plt.get_figlabels() if label] if plt is not None else []
    shown = cells.cells_with_images()[-10:] if cells is not None else []
    return (f"open figures: {', '.join(map(str, numbers)) or 'none'}"
            + (f" (labels: {', '.join(labels)})" if labels else "")
            + f"; cells that displayed images: {', '.join(f'cell {n}' for n in shown) or 'none'}; "
            "or name a variable holding a matplotlib Figure or Axes or a PIL image")
