"""Markdown to the safe HTML the widgets show, rendered in the kernel so the
browser needs no markdown, highlighting or maths library.

- CommonMark plus tables, with raw HTML disabled: a model's `<script>` is text.
- Fenced code is tokenized by Pygments; the code stays plain escaped text (so a
  streamed reply's code still goes out as references to text the browser has,
  see _stream_refs.py) and its tokens ride along as a compact map,
  `data-hl="k:3 1 nf:4 p:1 ..."` (a class and a length in UTF-16 units, or just
  a length for unstyled text), which the widget turns into `<span class="k">`s
  that mentra.css colours with JupyterLab's `--jp-mirror-editor-*` variables.
  Sending the spans themselves cost 7 to 8 times the code's bytes.
- `$…$` and `$$…$$` become MathML (latex2mathml), which browsers typeset
  natively: no KaTeX or MathJax bundle in the widget. latex2mathml copies
  `\\text{…}` verbatim and passes `\\href` through, so its output is parsed and
  rebuilt from an allow-list of MathML elements and attributes; anything else
  (or LaTeX it cannot read) is shown as the source, in a code span.
- Typesetting runs on the runtime's thread, where every agent's turn runs, and
  costs 0.1 to 10 ms a span: one message typesets at most `MAX_MATH_SPANS`
  spans and `MAX_MATH_TOTAL_CHARS` of LaTeX, and shows the rest as source in
  code spans, so a reply of 100,000 `$x^2$` cannot stall the other agents (it
  held them for 39 s). Typeset spans are cached: a message shown by two views,
  or sent again to a reopened view, is typeset once.
- Links open in a new tab: a click must not navigate JupyterLab away.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

from mentra_nb._inert_markdown import plain_paragraphs

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

# Pygments, latex2mathml and ElementTree are imported by the first code fence or
# maths that needs them: most transcripts need neither, and `%mentra resume` of a
# notebook pays for every import (about 15 ms of the ~200 ms it imports here).

__all__ = ["HIGHLIGHTED", "render_markdown"]

# Longer code is shown plain: highlighting a huge paste would hold the kernel.
MAX_HIGHLIGHT_CHARS = 100_000
MAX_MATH_CHARS = 2_000  # one span's LaTeX
MAX_MATH_SPANS = 200  # typeset per message (a page of dense maths has fewer)
MAX_MATH_TOTAL_CHARS = 20_000  # of LaTeX typeset per message (about 0.15 s of work)
_MATH_TOKENS = frozenset(("math_inline", "math_inline_double", "math_block", "math_block_label"))

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

# Pygments' short class names that mentra.css colours; other tokens are plain text.
HIGHLIGHTED = frozenset((
    "k", "kd", "kn", "kp", "kr", "ow", "kc", "no", "kt", "s", "s1", "s2", "sa", "sb", "sc", "sd", "dl",
    "sh", "si", "sx", "se", "sr", "ss", "c", "c1", "cm", "ch", "cs", "cpf", "cp", "nd", "m", "mi", "mf",
    "mh", "mo", "mb", "il", "nf", "fm", "nc", "ne", "nb", "bp", "vc", "vg", "vi", "nv", "na", "nt", "o",
    "p", "gh", "gu", "gd", "err", "gi"))


def _highlight(code: str, language: str, _attrs: str) -> str:
    """The fence as markdown-it writes it, plus the token map (or "" to let
    markdown-it write it plain)."""
    if not language or len(code) > MAX_HIGHLIGHT_CHARS:
        return ""
    lexer = _lexer(language.lower())
    tokens = _token_map(code, lexer) if lexer is not None else ""
    if not tokens:
        return ""
    return (f'<pre><code class="language-{escapeHtml(language)}" data-hl="{tokens}">'
            f"{escapeHtml(code)}</code></pre>")


def _token_map(code: str, lexer: Any) -> str:
    runs: list[list[Any]] = []  # [class, length], adjacent runs of one class merged
    seen = 0
    for token_type, value in lexer.get_tokens(code):
        if not value:
            continue
        seen += len(value)
        name = _short_name(token_type)
        length = len(value.encode("utf-16-le")) // 2  # JavaScript counts UTF-16 units
        if runs and runs[-1][0] == name:
            runs[-1][1] += length
        else:
            runs.append([name, length])
    if seen != len(code):
        return ""  # the lexer changed the text (tabs, newlines): do not guess
    return " ".join(f"{name}:{length}" if name else str(length) for name, length in runs)


def _short_name(token_type: Any) -> str:
    from pygments.token import STANDARD_TYPES

    while token_type is not None:
        name = STANDARD_TYPES.get(token_type)
        if name is not None:
            return name if name in HIGHLIGHTED else ""
        token_type = token_type.parent
    return ""


@lru_cache(maxsize=64)
def _lexer(language: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def _clean(node: ET.Element) -> ET.Element:
    """A copy of a MathML tree with only allowed elements and attributes."""
    import xml.etree.ElementTree as ET

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
    return _typeset(latex, bool(options.get("display_mode")))


@lru_cache(maxsize=512)
def _typeset(latex: str, display: bool) -> str:
    import xml.etree.ElementTree as ET

    from latex2mathml.converter import convert as latex_to_mathml

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


def _past_the_budget_as_code(tokens: list[Token]) -> None:
    """Past a message's maths budget, maths tokens become code: their LaTeX is
    shown as written, and costs no more than any other text."""
    spans = chars = 0
    for token in _in_order(tokens):
        if token.type not in _MATH_TOKENS or len(token.content) > MAX_MATH_CHARS:
            continue  # (LaTeX too long for one span is shown as code anyway, at no cost)
        spans += 1
        chars += len(token.content)
        if spans > MAX_MATH_SPANS or chars > MAX_MATH_TOTAL_CHARS:
            if token.type.startswith("math_inline"):
                token.type = "code_inline"
            else:
                token.type, token.content = "code_block", token.content.strip() + "\n"


def _in_order(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from token.children or ()


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
    plain = plain_paragraphs(text)
    if plain is not None:  # what markdown-it would write, without parsing
        return "".join(f"<p>{escapeHtml(paragraph)}</p>\n" for paragraph in plain)
    return _parsed_html(text)


def _parsed_html(text: str) -> str:
    env: dict[str, Any] = {}
    tokens = _md.parse(text, env)
    _past_the_budget_as_code(tokens)
    html_text: str = _md.renderer.render(tokens, _md.options, env)
    return html_text
