"""Model-written text as markdown that someone else's renderer will show as text.

Saved notebooks (a view's `text/markdown`) and exports (`agent.export`) are
rendered later by nbconvert, JupyterLab, GitHub or an editor, each with its own
markdown parser, and nbconvert passes raw HTML through. So a model's, tool's or
teammate's string is never pasted in as it came. A reply is parsed here
(CommonMark, tables, strikethrough and `$` maths, raw HTML off, the way the live
view reads it) and written out again from the tree in one plain form that every
CommonMark renderer reads the same way:

- text with every character that could start markup backslash-escaped (or, for
  `& < > \\`, written as an entity): no tag, no autolink, no link or image, no
  entity, and no line that opens a block (`#`, `>`, `-`, `1.`, a fence);
- code as a backtick fence longer than any backtick run inside it (a code span
  likewise), which nothing in the code can close;
- formatting (headings, emphasis, lists, quotes, tables) as plain markers;
- maths between `$` with `<`, `>`, `[`, `]`, `|` written as TeX macros, so a
  renderer that knows no maths sees plain text too.

Line endings are normalised first: CommonMark ends lines at `\\r` as well as
`\\n`, so a lone `\\r` could otherwise start a block where none was expected.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode
from mdit_py_plugins.dollarmath import dollarmath_plugin

__all__ = ["code_span", "fenced", "inert_markdown", "inert_text", "plain_paragraphs"]

# Read as the live view reads it (mentra_nb/notebook/_markdown_html.py).
_parser = (MarkdownIt("commonmark", {"html": False})
           .enable(["table", "strikethrough"])
           .use(dollarmath_plugin, allow_space=False, allow_digits=False))

_NEWLINES = re.compile(r"\r\n?")
# Backslash-escaped wherever they stand: each can open or close inline markup
# (emphasis, code, links, strikethrough, maths, table cells) or a block.
_ESCAPED = "`*_[]|~$#"
# A backslash as an entity: nbconvert finds maths (`\\[…\\]`, `\\(…\\)`,
# `\begin{…}…\end{…}`) by regular expressions over the whole source, code and
# escapes included, and what it takes for maths is not read as markdown.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "&#92;"}
_TEXT = str.maketrans({**{c: "\\" + c for c in _ESCAPED}, **_ENTITIES})
# `_` between two letters or digits can neither open nor close emphasis
# (CommonMark's intraword rule), so `snake_case` stays as it was written.
_INTRAWORD_UNDERSCORE = re.compile(r"(?<=[^\W_])\\_(?=[^\W_])")
# At the start of a line these open a list, a quote or a heading underline.
_LINE_START = re.compile(r"^([-+=]|\d{1,9}(?=[.)]))")
_LANGUAGE = re.compile(r"[\w+#.-]{1,40}")
# Maths: characters a renderer that knows no maths would read as markup, as TeX
# macros that typeset the same. A backslash before them, a backtick or a
# fence-like `~~~` cannot be rewritten safely: such maths is shown as text.
_MATH_MACROS = {"\\|": r"\Vert ", "|": r"\vert ", "<": r"\lt ", ">": r"\gt ", "[": r"\lbrack ",
                "]": r"\rbrack "}
_MATH_REWRITE = re.compile(r"\\\||[|<>\[\]]")
_MATH_UNSAFE = re.compile(r"\\[<>\[\]()]|`|~~~|\\$")
_MATH_ENVIRONMENT = re.compile(r"\\begin\{([^}]*)\}")
# What nbconvert takes for the start of maths anywhere in the source, code spans
# included: code holding one is written as text instead.
_MATH_OPENERS = re.compile(r"\$\$|\\\\[\[(]|\\begin\{")


# A line of prose with no markup: it opens with a letter (no block starts so, and
# no indentation) and holds no character that any markup (inline, a table, an
# entity) starts with, nor a control character (`\r` included).
_PLAIN_LINE = re.compile(r"[^\W\d_][^\x00-\x1f\x7f\\`*_\[\]|~$#&<>!]*")


def plain_paragraphs(text: str) -> list[str] | None:
    """`text`'s paragraphs (their lines joined by `\\n`) when it is prose with no
    markup, which CommonMark reads exactly as written; None otherwise.

    Saves the parser where most of a transcript's text needs none (prompts, many
    replies): resuming a notebook of fifty agents shows thousands of messages."""
    paragraphs = text.split("\n\n")
    for paragraph in paragraphs:
        for line in paragraph.split("\n"):
            # (A paragraph's lines lose their trailing whitespace: only lines without any qualify.)
            if _PLAIN_LINE.fullmatch(line) is None or line[-1].isspace():
                return None
    return paragraphs


def _normalise_newlines(text: str) -> str:
    return _NEWLINES.sub("\n", text)


def _one_line(text: str) -> str:
    """`text` with every run of whitespace (line endings included) as one space."""
    return " ".join(text.split())


def inert_text(text: str) -> str:
    """A string as literal text on one line (a name, a status, a label): every
    character that could be markup is escaped, line endings become spaces."""
    return _escape_line(_one_line(text))


def code_span(text: str, *, in_table: bool = False) -> str:
    """`text` as an inline code span no backtick inside it can close (one line;
    in a table cell `|` is escaped too, as GFM requires even inside code). Code
    that nbconvert would take for maths (`$$`, `\\\\[`, `\\begin{`) is escaped text."""
    text = _one_line(text) if text.strip() else " "
    if _MATH_OPENERS.search(text):
        return inert_text(text)
    if in_table:
        text = text.replace("|", "\\|")
    ticks = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fenced(text: str, language: str = "") -> str:
    """`text` as a fenced code block no line inside it can close."""
    ticks = "`" * max(3, _longest_run(text, "`") + 1)
    info = match.group(0) if (match := _LANGUAGE.match(language)) else ""
    return f"{ticks}{info}\n{_normalise_newlines(text)}\n{ticks}"


def inert_markdown(text: str, label: str = "") -> str:
    """A model's markdown reply made inert: formatting kept, no markup of its own.

    `label` (markdown the caller wrote, such as `**assistant**:`) leads the
    first paragraph, or stands as its own paragraph when the reply opens with
    another block (a fence, a heading, a list)."""
    plain = plain_paragraphs(text)
    if plain is not None:  # what the parser would write, without the parser
        return "\n\n".join([f"{label} {plain[0]}" if label else plain[0], *plain[1:]])
    return _parsed_inert_markdown(text, label)


def _parsed_inert_markdown(text: str, label: str) -> str:
    tree = SyntaxTreeNode(_parser.parse(_normalise_newlines(text)))
    blocks = [_block(node) for node in tree.children]
    blocks = [b for b in blocks if b]
    if label:
        if blocks and tree.children[0].type == "paragraph":
            blocks[0] = f"{label} {blocks[0]}"
        else:
            blocks.insert(0, label)
    return "\n\n".join(blocks)


def _longest_run(text: str, char: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(char)}+", text)), default=0)


def _escape(text: str) -> str:
    return _INTRAWORD_UNDERSCORE.sub("_", text.translate(_TEXT))


def _escape_line(line: str) -> str:
    """Escaped text at the start of a line (it may also stand anywhere else)."""
    escaped = _escape(line.lstrip(" \t"))
    start = _LINE_START.match(escaped)
    if start is None:
        return escaped
    # `-` becomes `\-`; `12.` becomes `12\.` (a digit cannot be escaped).
    marker = start.group(0)
    return ("\\" + escaped) if not marker[0].isdigit() else marker + "\\" + escaped[len(marker):]


def _prefixed(text: str, first: str, rest: str) -> str:
    """`text`'s lines behind a container's markers (`> `, a list item's marker
    and indentation); empty lines get the marker without trailing spaces."""
    lines = text.split("\n")
    return "\n".join((first if i == 0 else rest) + line if line else (first if i == 0 else rest).rstrip()
                     for i, line in enumerate(lines))


def _block(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind == "paragraph":
        return _inline(node.children[0]) if node.children else ""
    if kind == "heading":
        level = int(node.tag[1:])
        return "#" * level + " " + _inline(node.children[0], single_line=True) if node.children else "#" * level
    if kind in ("fence", "code_block"):
        language = node.info.split(maxsplit=1)[0] if kind == "fence" and node.info.strip() else ""
        return fenced(node.content.removesuffix("\n"), language)
    if kind == "math_block":
        return _math(node.content.strip("\n"), "$$\n", "\n$$") or fenced(node.content.removesuffix("\n"))
    if kind == "hr":
        return "___"  # not `---` or `***`, which a `-` or `*` list item would read as its marker
    if kind == "blockquote":
        return _prefixed(_blocks(node.children, tight=False), "> ", "> ")
    if kind in ("bullet_list", "ordered_list"):
        return _list(node)
    if kind == "table":
        return _table(node)
    # Nothing else comes out of this parser; were it to, its text is still only text.
    return _escape_line(_one_line(node.content))


def _blocks(children: list[SyntaxTreeNode], *, tight: bool) -> str:
    return ("\n" if tight else "\n\n").join(b for b in (_block(c) for c in children) if b)


def _list(node: SyntaxTreeNode) -> str:
    tight = all(p.hidden for item in node.children for p in item.children if p.type == "paragraph")
    items = []
    start = int(node.attrs.get("start", 1)) if node.type == "ordered_list" else 0
    for i, item in enumerate(node.children):
        marker = f"{start + i}{item.markup or '.'} " if node.type == "ordered_list" else f"{item.markup or '-'} "
        body = _blocks(item.children, tight=tight)
        items.append(_prefixed(body, marker, " " * len(marker)) if body else marker.rstrip())
    return ("\n" if tight else "\n\n").join(items)


def _table(node: SyntaxTreeNode) -> str:
    rows: list[str] = []
    for section in node.children:
        for row in section.children:
            cells = [_inline(cell.children[0], in_table=True, single_line=True) if cell.children else "" for cell in row.children]
            rows.append("| " + " | ".join(cells) + " |")
            if section.type == "thead":
                aligns = [str(cell.attrs.get("style", "")) for cell in row.children]
                rows.append("| " + " | ".join(_ALIGN.get(a, "---") for a in aligns) + " |")
    return "\n".join(rows)


_ALIGN = {"text-align:left": ":---", "text-align:right": "---:", "text-align:center": ":---:"}


def _inline(node: SyntaxTreeNode, *, in_table: bool = False, single_line: bool = False) -> str:
    """A paragraph's, heading's or cell's inline content (`single_line`: its line
    breaks as spaces, for a heading or a cell)."""
    out: list[str] = []
    line_start = True
    for child in node.children:
        piece = _inline_piece(child, in_table=in_table, single_line=single_line, line_start=line_start)
        if out and out[-1].endswith("$") and piece.startswith("$"):
            piece = " " + piece  # two maths side by side must not make a `$$`
        out.append(piece)
        line_start = piece.endswith("\n")
    return "".join(out)


def _inline_piece(node: SyntaxTreeNode, *, in_table: bool, single_line: bool, line_start: bool) -> str:
    kind = node.type

    def inner() -> str:
        return _inline(node, in_table=in_table, single_line=single_line)

    if kind == "text":
        return _escape_line(node.content) if line_start else _escape(node.content)
    if kind == "softbreak":
        return " " if single_line else "\n"
    if kind == "hardbreak":
        return " " if single_line else "\\\n"
    if kind == "code_inline":
        return code_span(node.content, in_table=in_table)
    if kind == "em":
        return f"*{inner()}*"
    if kind == "strong":
        return f"**{inner()}**"
    if kind == "s":
        return f"~~{inner()}~~"
    if kind in ("link", "image"):
        # No link or image survives (a saved notebook must not fetch or open a
        # model's URL): both are shown as the text they were written as.
        target = node.attrs.get("href" if kind == "link" else "src", "")
        bang = "!" if kind == "image" else ""
        return f"{bang}\\[{inner()}\\]({inert_text(str(target))})"
    if kind in ("math_inline", "math_inline_double"):
        fence = "$$" if kind == "math_inline_double" else "$"
        return _math(node.content, fence, fence, inline=True) or inert_text(f"{fence}{node.content}{fence}")
    return inert_text(node.content)


def _math(latex: str, opening: str, closing: str, *, inline: bool = False) -> str:
    """Maths between its delimiters, readable as plain text by renderers that
    know no maths; "" when it cannot be (the caller shows its source instead)."""
    if _MATH_UNSAFE.search(latex) or (inline and "\n" in latex) or not latex.strip():
        return ""
    # nbconvert takes `\begin{x}` to the next `\end{x}` wherever that is: it must be in here.
    if any(f"\\end{{{m.group(1)}}}" not in latex[m.end():] for m in _MATH_ENVIRONMENT.finditer(latex)):
        return ""
    rewritten = _MATH_REWRITE.sub(lambda m: _MATH_MACROS[m.group(0)], latex)
    if not inline:
        # A line of display maths must not read as a block to such a renderer.
        rewritten = "\n".join(_escape_math_line(line) for line in rewritten.split("\n"))
    return f"{opening}{rewritten}{closing}"


def _escape_math_line(line: str) -> str:
    stripped = line.lstrip(" \t")
    return "{}" + stripped if stripped[:1] in "#-+=*>:" or _LINE_START.match(stripped) else stripped
