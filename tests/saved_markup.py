"""Renderers that show a saved notebook's markdown, and a probe for model text
that became live markup in what they made (issue 14.2, issue 33.1-3).

- nbconvert's HTML exporter (what `jupyter nbconvert --to html` runs; it passes
  raw HTML through),
- markdown-it-py's "gfm-like" preset, standing in for GitHub (raw HTML on,
  tables, strikethrough; its linkify needs linkify-it-py and only makes http
  links, so it is off).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import nbformat
from markdown_it import MarkdownIt
from nbconvert import HTMLExporter

# Elements and attributes no markdown of ours produces: only raw HTML makes them.
RAW_ELEMENTS = frozenset(("script", "iframe", "img", "svg", "object", "embed", "style", "x-evil", "form",
                          "input", "textarea", "div-evil", "details", "marquee", "video", "audio", "base",
                          "link", "meta"))
_gfm = MarkdownIt("gfm-like").disable("linkify")


class _LiveMarkup(HTMLParser):
    """Collects every place the payload became markup rather than text."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        if tag in RAW_ELEMENTS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            handler = (name.startswith("on") and value) or name == "srcdoc"
            script_link = name in ("href", "src") and not re.match(r"(https?:|#|$)", (value or "").strip(), re.I)
            if handler or script_link:
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and "alert" in data:
            self.found.append(f"<script>{data[:80]}")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def live_markup(html: str) -> list[str]:
    """Raw elements, event handlers, `srcdoc` and non-http links in `html`."""
    parser = _LiveMarkup()
    parser.feed(html)
    return parser.found


def visible_text(html: str) -> str:
    """The text a reader of `html` sees (its pieces joined by spaces)."""
    parser = _Text()
    parser.feed(html)
    return " ".join(parser.parts)


def visible_words(html: str) -> set[str]:
    """The words (letters and digits) a reader of `html` sees."""
    return set(re.findall(r"[A-Za-z0-9]+", visible_text(html)))


def nbconvert_notebook(*markdowns: str) -> str:
    """The HTML nbconvert makes of a notebook whose outputs are these markdowns
    (as a view's saved `text/markdown`)."""
    nb = nbformat.v4.new_notebook()
    for markdown in markdowns:
        cell = nbformat.v4.new_code_cell("view")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": markdown,
                                                                      "text/plain": "view"})]
        nb.cells.append(cell)
    body, _resources = HTMLExporter().from_notebook_node(nb)
    return _main(body)


def nbconvert_file(path: str) -> str:
    """The HTML `jupyter nbconvert --to html` makes of the notebook at `path`."""
    body, _resources = HTMLExporter().from_filename(path)
    return _main(body)


def _main(page: str) -> str:
    """The notebook's part of nbconvert's page (its head carries nbconvert's own
    scripts and styles)."""
    start, end = page.index("<main>"), page.rindex("</main>")
    return page[start:end]


def gfm(markdown: str) -> str:
    return _gfm.render(markdown)
