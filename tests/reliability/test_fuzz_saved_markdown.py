"""Issue 33: model text in saved notebooks and exports, fuzzed with hypothesis.

Strings built from the pieces that change how markdown is read (fences and
backtick runs of every length, `\\r`, `\\r\\n` and `\\n`, line prefixes `>`, `-`,
`1.`, `#`, indentation, `<`, HTML blocks, tables, maths, links) are put wherever
a model's text goes: a reply, thinking, a tool's name, input and result, an
image's media type, subagent and team mail, and the markdown and notebook
exports. Rendered by nbconvert's markdown renderer (mistune, which passes raw
HTML through) and markdown-it's gfm-like preset (GitHub's stand-in), no string
may become an element, an event handler or a script link, and the words the
live view shows of a reply must still be there to read."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from mentra_nb import ContentBlock, Message
from mentra_nb._inert_markdown import _parsed_inert_markdown, inert_markdown, plain_paragraphs
from mentra_nb.notebook._markdown_html import _parsed_html, render_markdown
from mentra_nb.notebook._rendering import md_block, transcript_markdown
from mentra_nb.runtime._export import ExportHeader, export_transcript
from tests.saved_markup import gfm, live_markup, visible_text

pytestmark = pytest.mark.reliability

# MENTRA_FUZZ_EXAMPLES=3000 for the long run.
FUZZ = settings(max_examples=int(os.environ.get("MENTRA_FUZZ_EXAMPLES", "150")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

PIECES = [
    # fences and backtick runs
    "`", "``", "```", "````", "~~~", "```python", "``` `", "~~~ ~",
    # line endings
    "\n", "\r", "\r\n", "\n\n", "\r\r",
    # prefixes
    "> ", ">", "- ", "* ", "+ ", "1. ", "2) ", "# ", "###### ", "    ", "\t", "   ", "| ", " |", "|---|",
    "===", "---", "***", "___",
    # HTML and its blocks
    "<", ">", "</", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
    "<iframe srcdoc='<script>alert(1)</script>'>", "<div>", "</div>", "<pre>", "</pre>", "<!--", "-->",
    "<?php", "?>", "<![CDATA[", "]]>", "<x-evil onclick=alert(1)>", "<javascript:alert(1)>",
    "<https://example.com>", "&lt;", "&", "&#60;script&#62;",
    # links, maths, escapes, emphasis
    "[x](javascript:alert(1))", "![i](javascript:alert(1))", "[r]: javascript:alert(1)", "[r]", "[", "](",
    "$", "$$", "\\", "*", "**", "_", "~~", "\\begin{a}", "\\end{a}", "\\\\[", "\\\\]", "\\\\(", "\\\\)", "\\(",
    # plain words, so that text is there to survive
    "hello", "world", "alert", " ",
]
PREFIXES = ["", "", "> ", "- ", "1. ", "# ", "    ", "  ", "```", "````", "~~~", "<div>", "| ", "$$"]
ENDINGS = ["\n", "\r", "\r\n", "\n\n"]
SCATTERED = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), max_size=40).map("".join)
# Line by line: a prefix, some pieces, a line ending each.
LINES = st.lists(st.tuples(st.lists(st.sampled_from(PREFIXES), max_size=2).map("".join),
                           st.lists(st.sampled_from(PIECES), max_size=4).map("".join),
                           st.sampled_from(ENDINGS)),
                 max_size=8).map(lambda lines: "".join(p + c + e for p, c, e in lines))
MODEL_TEXT = st.one_of(SCATTERED, LINES)
SHORT_TEXT = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)

RENDERERS = {"nbconvert": markdown2html_mistune, "gfm": gfm}


def assert_inert(markdown: str) -> dict[str, str]:
    rendered = {name: render(markdown) for name, render in RENDERERS.items()}
    for name, html in rendered.items():
        assert not live_markup(html), (name, markdown, live_markup(html))
    return rendered


@FUZZ
@given(reply=MODEL_TEXT)
def test_a_reply_is_inert_and_keeps_the_words_the_live_view_shows(reply):
    saved = assert_inert(md_block(reply, "**assistant**:"))
    shown = "".join(c if c.isalnum() else " " for c in visible_text(render_markdown(reply))).split()
    for name, html in saved.items():
        text = visible_text(html)
        missing = [w for w in shown if w not in text]
        assert not missing, (name, reply, missing)


@FUZZ
@given(text=MODEL_TEXT, name=SHORT_TEXT, media_type=SHORT_TEXT, sender=SHORT_TEXT)
def test_every_model_string_in_a_transcript_is_inert(text, name, media_type, sender):
    inbox = json.dumps([{"type": "message", "from": sender, "content": text, "protocol": name}])
    messages = [
        Message.user(text),
        Message.assistant(ContentBlock.thinking(text), ContentBlock.text(text),
                          ContentBlock.tool_use("t1", name, {name: text})),
        Message.user(ContentBlock.tool_result("t1", text, images=[ContentBlock.image(media_type, "AAAA")])),
        Message.assistant(ContentBlock.image(media_type, "AAAA")),
        Message.user(f'<subagent_update id="m1" agent="{sender}" status="completed">{text}</subagent_update>'),
        Message.user(f'<subagent_message id="m2" from="{sender}">{text}</subagent_message>'),
        Message.user(f"<team-inbox>{inbox}</team-inbox>"),
    ]
    assert_inert(transcript_markdown(messages))


@FUZZ
@given(text=MODEL_TEXT, name=SHORT_TEXT, media_type=SHORT_TEXT)
def test_every_model_string_in_an_export_is_inert(text, name, media_type):
    header = ExportHeader(name="writer", agent_id="a1", model="anthropic:m", forked_from=name, fork_index=1)
    messages = [
        Message.user(text),
        Message.assistant(ContentBlock.thinking(text), ContentBlock.text(text),
                          ContentBlock.tool_use(name, name, {"q": text})),
        Message.user(ContentBlock.tool_result(name, text, is_error=True)),
        Message.assistant(ContentBlock.image(media_type, "AAAA")),
    ]
    assert_inert(export_transcript(header, messages, "markdown"))
    notebook = json.loads(export_transcript(header, messages, "ipynb"))
    for cell in notebook["cells"]:
        assert_inert(cell["source"])


# Prose: paragraphs of lines of words; half of them with one character spliced in
# somewhere that starts markup, a control character or unusual whitespace.
_WORD = st.sampled_from(["Hello", "world", "Turn", "é", "x", "Ünïcode", "日本"])
_FILLER = st.sampled_from([" ", " ", ".", ",", ":", "'", '"', "(", ")", "%", "/", "3", "😀", "\u00a0"])
_LINE = st.tuples(_WORD, st.lists(st.one_of(_WORD, _FILLER), max_size=12)).map(lambda t: t[0] + "".join(t[1]))
_PARAGRAPHS = st.lists(st.lists(_LINE, min_size=1, max_size=3).map("\n".join), min_size=1, max_size=3).map("\n\n".join)
_SPOILER = st.sampled_from(["\n", "\n\n\n", "\r", "\r\n", "\t", " ", "  \n", "\u2028", "\x85", "\x00", "- ", "+ ",
                            "=", "1. ", "2) ", "*", "_", "`", "&", "<", ">", "!", "[", "]", "|", "~", "$", "# ", "\\",
                            "    ", "3"])
PROSE = st.tuples(_PARAGRAPHS, st.one_of(st.none(), st.tuples(_SPOILER, st.integers(0, 300)))).map(
    lambda t: t[0] if t[1] is None else t[0][:t[1][1]] + t[1][0] + t[0][t[1][1]:])


@FUZZ
@given(text=PROSE, label=st.sampled_from(["", "**user**:"]))
def test_prose_without_markup_is_written_as_the_parser_would(text, label):
    # Plain prose skips markdown-it (resuming fifty agents renders thousands of
    # messages); what it skips must not change a byte of what is written.
    assert inert_markdown(text, label) == _parsed_inert_markdown(text, label)
    assert render_markdown(text) == _parsed_html(text)


def test_prose_without_markup_needs_no_parser():
    assert plain_paragraphs("Turn 3: what's the churn?\nThanks (all) 50% \"x\".\n\nBye.") == [
        "Turn 3: what's the churn?\nThanks (all) 50% \"x\".", "Bye."]
    for markup in ("- a list", "1. first", "**bold**", "a  \nhard break", "code `x`", "# title", "    indented",
                   "tab\there", "a\r\nb", "a\n\n\nb", "", "R&D", "a <b>", "$x$", "see [1]", "3 apples"):
        assert plain_paragraphs(markup) is None, markup
