"""Figures as PNG image blocks for vision models: open matplotlib figures, a
figure or axes or PIL image held by a variable, or the images a cell displayed.

matplotlib is never imported here: a kernel that has not imported it has no
figure to show. Every image is at most `MAX_SIDE` pixels on its long side
(what vision models read without scaling down themselves) and at most
`MAX_IMAGE_BASE64` of base64, and at most `MAX_IMAGES` go in one answer; the
answer says each image's real size. A figure is rendered at the resolution that
fits, measured after `savefig.bbox = "tight"` would crop or grow it; a displayed
PNG above the caps is scaled down with PIL (imported only then), or left out
when even decoding it would take too much memory.
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
    MAX_IMAGES,
    MAX_SIDE,
    bound_image,
    image_size,
)

__all__ = ["MAX_IMAGES", "MAX_SIDE", "FigureNotFound", "Shown", "current_figures", "find_figures"]

# A tight bounding box so large that the figure would be drawn at fewer dots per
# inch than this (an artist far outside the axes) is not used: the figure's own
# area is shown instead.
MIN_TIGHT_DPI = 10.0
_CELL = re.compile(r"^\s*(?:cell\s*:?\s*|in\s*\[\s*|out\s*\[\s*)(-?\d+)\s*\]?\s*$", re.I)


class FigureNotFound(LookupError):
    """Nothing matched, or what matched cannot be shown; the message says why."""

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


def _figure_area(figure: Any) -> tuple[Any, str]:
    """The area of `figure` savefig would save (a Bbox in inches) and a note when it
    is not what the user's settings ask for. `savefig.bbox = "tight"` crops (or
    grows) it to what the artists cover, so that is measured rather than assumed."""
    matplotlib = sys.modules["matplotlib"]
    whole = figure.bbox_inches
    if matplotlib.rcParams["savefig.bbox"] != "tight":
        return whole, ""
    tight = figure.get_tightbbox().padded(matplotlib.rcParams["savefig.pad_inches"])
    if MAX_SIDE / max(tight.width, tight.height, 0.01) < MIN_TIGHT_DPI:
        return whole, (f" (its tight bounding box is {tight.width:,.0f}x{tight.height:,.0f} in, an artist "
                       "far outside the axes; the figure's own area is shown)")
    return tight, ""


def _figure_png(figure: Any) -> tuple[ImageBlock, str]:
    """`figure` as a PNG within `MAX_SIDE`, and its real size in pixels; a figure
    that cannot be drawn that small is `FigureNotFound` saying why."""
    try:
        area, note = _figure_area(figure)
        dpi = min(float(figure.dpi), MAX_SIDE / max(area.width, area.height, 0.01))
        for _ in range(3):  # a side rounded past the cap is drawn again, a little smaller
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=dpi, bbox_inches=area)
            data = buffer.getvalue()
            size = image_size(data)
            if size is None or max(size) <= MAX_SIDE:
                break
            dpi *= MAX_SIDE / max(size) * 0.99
    except (MemoryError, ValueError, OverflowError, RuntimeError) as err:
        # matplotlib refuses a canvas over 2**16 px a side with ValueError, a big one fails
        # to allocate, and FreeType refuses text below a pixel (RuntimeError) in a figure
        # so large that it fits only at a few dots per inch.
        width, height = figure.get_size_inches()
        raise FigureNotFound(
            f"the figure ({width:g}x{height:g} in) cannot be drawn within {MAX_SIDE} px "
            f"({type(err).__name__}: {str(err)[:200]}); make it smaller (fig.set_size_inches(...))") from None
    if size is None or max(size) > MAX_SIDE:
        raise FigureNotFound(f"the figure cannot be drawn within {MAX_SIDE} px; make it smaller")
    suptitle = getattr(figure, "get_suptitle", lambda: "")()  # matplotlib >= 3.8
    title = figure.get_label() or suptitle or next((a.get_title() for a in figure.get_axes() if a.get_title()), "")
    what = f"{size[0]}x{size[1]} px{note}"
    return _png_block(data), (f"'{title}', {what}" if title else what)


def _pil_png(image: Any) -> tuple[ImageBlock, str]:
    """A PIL image as a PNG within `MAX_SIDE`, and its size (and the size sent, when scaled)."""
    width, height = image.size
    scale = MAX_SIDE / max(width, height, 1)
    try:
        # resize makes the small copy straight away (thumbnail would copy the big one first).
        scaled = image if scale >= 1 else image.resize(
            (max(1, round(width * scale)), max(1, round(height * scale))), reducing_gap=2.0)
        if scaled.mode not in ("RGB", "RGBA", "L", "LA", "P", "1", "I;16"):
            scaled = scaled.convert("RGBA")
        buffer = io.BytesIO()
        scaled.save(buffer, format="PNG")
    except (MemoryError, OSError, ValueError) as err:
        raise FigureNotFound(f"the {width}x{height} px PIL image cannot be turned into a PNG "
                             f"({type(err).__name__}: {str(err)[:200]})") from None
    what = f"PIL image {width}x{height} px"
    if scaled.size != image.size:
        what += f", scaled down to {scaled.size[0]}x{scaled.size[1]} px"
    return _png_block(buffer.getvalue()), what


def _bounded(image: ImageBlock) -> tuple[ImageBlock | None, str]:
    """A displayed image within the caps (None when it cannot be: the text says why),
    bounded as MCP's images are, and a text giving its real size."""
    bounded = bound_image(image.media_type, image.data)
    if bounded.note:
        return bounded.image, bounded.note
    size = image_size(base64.b64decode(image.data))
    return bounded.image, f"{size[0]}x{size[1]} px" if size else image.media_type


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
    images, described = [], []
    for number in numbers[:MAX_IMAGES]:
        figure = _open_figure(number)
        if figure is None:
            continue
        try:
            image, what = _figure_png(figure)
        except FigureNotFound as err:
            described.append(f"matplotlib figure {number}: left out: {err}")
            continue
        images.append(image)
        described.append(f"matplotlib figure {number}: {what}")
    more = f" (and {len(numbers) - MAX_IMAGES} more not shown)" if len(numbers) > MAX_IMAGES else ""
    if not images and described:
        raise FigureNotFound("; ".join(described))
    return Shown(images, "; ".join(described) + more)


def _cell_images(displayed: list[ImageBlock], cell: str) -> Shown:
    bounded = [_bounded(i) for i in displayed[:MAX_IMAGES]]
    images = [image for image, _ in bounded if image is not None]
    sizes = "; ".join(what for _, what in bounded)
    more = (f" (and {len(displayed) - MAX_IMAGES} more not shown)" if len(displayed) > MAX_IMAGES else "")
    what = f"{len(displayed)} image{'s' if len(displayed) > 1 else ''} displayed by cell {cell}: {sizes}{more}"
    if not images:
        raise FigureNotFound(f"nothing to show: {what}")
    return Shown(images, what)


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
