"""Markdown to the safe HTML the widgets show, rendered in the kernel so the
browser needs no markdown, highlighting or maths library.

- CommonMark plus tables, with raw HTML disabled: a model's `<script>` is text.
- Fenced code is highlighted by Pygments into short token classes
  (`<span class="k">`) that mentra.css colours with JupyterLab's
  `--jp-mirror-editor-*` variables, so code looks as it does in a cell, in every theme.
- `$…$` and `$$…$$` become MathML (latex2mathml), which browsers typeset
  natively: no KaTeX or MathJax bundle in the widget. latex2mathml copies
  `\\text{…}` verbatim and passes `\\href` through, so its output is parsed and
  rebuilt from an allow-list of MathML elements and attributes; anything else
  (or LaTeX it cannot read) is shown as the source, in a code span.
- Links open in a new tab: a click must not navigate JupyterLab away.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from functools import lru_cache
from typing import Any

from latex2mathml.converter import convert as latex_to_mathml
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

__all__ = ["render_markdown"]

# Longer code is shown plain: highlighting a huge paste would hold the kernel.
MAX_HIGHLIGHT_CHARS = 100_000
MAX_MATH_CHARS = 2_000

_formatter = HtmlFormatter(nowrap=True)
_WHITESPACE_TOKEN = re.compile(r'<span class="w">(\s*)</span>')  # unstyled: its bytes are waste

_MATHML = "http://www.w3.org/1998/Math/MathML"
_MATH_ELEMENTS = frozenset((
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac",
    "msqrt", "mroot", "mstyle", "mtable", "mtr", "mtd", "mlabeledtr", "mover", "munder", "munderover",
    "mpadded", "mphantom", "menclose", "merror", "mmultiscripts", "mprescripts", "none", "semantics",
    "annotation"))
# Presentation attributes only: no links, no event handlers, no colours (a
# `\color{red}` must not fight the theme).
_MATH_ATTRIBUTES = frozenset((
    "display", "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "accent",
    "accentunder", "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines",
    "frame", "framespacing", "displaystyle", "scriptlevel", "linethickness", "width", "height", "depth",
    "voffset", "notation", "minsize", "maxsize", "movablelimits", "symmetric", "largeop", "form",
    "mathsize", "encoding"))


def _highlight(code: str, language: str, _attrs: str) -> str:
    if not language or len(code) > MAX_HIGHLIGHT_CHARS:
        return ""  # markdown-it escapes it
    lexer = _lexer(language.lower())
    return "" if lexer is None else _WHITESPACE_TOKEN.sub(r"\1", highlight(code, lexer, _formatter))


@lru_cache(maxsize=64)
def _lexer(language: str) -> Any:
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def _clean(node: ET.Element) -> ET.Element:
    """A copy of a MathML tree with only allowed elements and attributes."""
    tag = node.tag.removeprefix(f"{{{_MATHML}}}")
    if tag not in _MATH_ELEMENTS:
        raise ValueError(f"unexpected element {tag!r} in MathML")
    copy = ET.Element(tag, {k: v for k, v in node.attrib.items() if k in _MATH_ATTRIBUTES})
    copy.text = node.text
    for child in node:
        cleaned = _clean(child)
        cleaned.tail = child.tail
        copy.append(cleaned)
    return copy


def _math(latex: str, options: dict[str, Any]) -> str:
    display = bool(options.get("display_mode"))
    source = html.escape(latex)
    try:
        if len(latex) > MAX_MATH_CHARS:
            raise ValueError("too long to typeset")
        tree = ET.fromstring(latex_to_mathml(latex, display="block" if display else "inline"))
        math = _clean(tree)
    except Exception:  # any LaTeX the converter cannot read is shown as written
        return f"<code>{source}</code>"
    # (No xmlns: in HTML a <math> element is MathML by its name.) The source rides
    # along for screen readers that skip MathML.
    math.set("alttext", latex)
    return ET.tostring(math, encoding="unicode", short_empty_elements=False)


def _link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("target", "_blank")
    tokens[idx].attrSet("rel", "noopener noreferrer")
    return str(self.renderToken(tokens, idx, options, env))


# html=False: raw HTML in a model's answer is shown as text, never injected.
_md = (MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight})
       .enable("table")
       .use(dollarmath_plugin, allow_space=False, allow_digits=False, renderer=_math))
_md.add_render_rule("link_open", _link_open)


def render_markdown(text: str) -> str:
    """`text` (a model's or a user's markdown) as safe HTML for the widgets."""
    html_text: str = _md.render(text)
    return html_text
