"""A streamed reply's HTML, sent as spans of the text the browser holds."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mentra_nb.messages import Message
from mentra_nb.notebook._rendering import message_items
from mentra_nb.notebook._stream_refs import encode_html


def resolve(parts, sources):
    """What agent_view.js's resolveHtml does."""
    def escape(text):
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")

    return "".join(p if isinstance(p, str) else escape(sources[p[0]][p[1]:p[2]]) for p in parts)


def html_of(text):
    return message_items(Message.assistant(text), 0)[0]["html"]


PROSE = ("Pandas reads the file in chunks, so memory stays flat while the frame grows. "
         "Call `df.describe()` to see **count, mean and spread** per column.\n\n"
         "1. Load the data with `pd.read_csv(path)` and check the dtypes first.\n"
         "2. Drop the rows where the target is missing, then split off a test set.\n\n"
         "```python\ndf = pd.read_csv('sales.csv')\nprint(df.head())\n```\n\n"
         "Values like 3 < 5 & \"quoted\" text are escaped in the HTML, and that is fine.")


def test_prose_goes_out_as_spans_and_comes_back_exactly():
    html = html_of(PROSE)
    parts = encode_html(html, [PROSE, ""])
    assert resolve(parts, [PROSE, ""]) == html
    # What stays literal is markup, escaped text, and runs too short to pay for a span.
    for literal in (p for p in parts if isinstance(p, str)):
        for run in re.split(r"<[^>]*>|&[#\w]+;|\n", literal):
            assert len(run) <= 16, f"{run!r} was sent as text, not as a span"
    wire = len(json.dumps(parts, separators=(",", ":")))
    print(f"HTML {len(html)} bytes, by reference {wire} bytes")


def test_a_plain_paragraph_costs_a_few_bytes():
    text = "A plain answer in one long paragraph, as models usually write them. " * 40
    parts = encode_html(html_of(text), [text, ""])
    assert parts == ["<p>", [0, 0, len(text.rstrip())], "</p>\n"]


def test_nothing_is_referenced_that_is_not_there():
    html = html_of(PROSE)
    assert encode_html(html, ["something else entirely", ""]) == [html]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*"ab cd*_`#>-<&\"'\n\\[]()!1.$", "word ", "  ", "\t", "é", "a" * 30,
                                 "```python\n", "x^2", "\\frac{a}{b}", "def "]),
               max_size=120).map("".join))
def test_any_markdown_round_trips(text):
    html = html_of(text) if text.strip() else "<p></p>\n"
    thinking = "unrelated thinking " * 3
    parts = encode_html(html, [text, thinking])
    assert resolve(parts, [text, thinking]) == html


@pytest.mark.parametrize("language", ["", "python"])
def test_code_full_of_quotes_is_referenced_not_resent(language):
    """Quotes become `&quot;` in the HTML; the browser escapes spans the same way,
    so the escaped runs still go out as spans (issue 22: they were resent, 1.9x).
    Highlighted code adds only its token map (issue 15: the code stays one text run)."""
    code = "\n".join(f'config["key_{i}"] = {{"name": "value {i}", "flag": "<on> & \'off\'"}}'
                     for i in range(40))
    text = f"Here is the config:\n\n```{language}\n{code}\n```\n"
    html = html_of(text)
    parts = encode_html(html, [text, ""])
    assert resolve(parts, [text, ""]) == html
    wire = len(json.dumps(parts, separators=(",", ":")))
    token_map = re.search(r'data-hl="([^"]*)"', html)
    assert (token_map is not None) == bool(language)
    tokens = len(token_map.group(1)) if token_map else 0
    assert wire - tokens < len(text) / 4, (wire, tokens, len(text))
    print(f"{language or 'plain'}: text {len(text)} bytes, wire {wire} (token map {tokens})")
