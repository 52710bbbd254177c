"""The widgets' markdown: highlighted code, tables, links that open a new tab,
maths as MathML, and nothing a model writes turns into markup or a script."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from mentra_nb.notebook._assets import static_file
from mentra_nb.notebook._markdown_html import (
    HIGHLIGHTED,
    MAX_MATH_SPANS,
    MAX_MATH_TOTAL_CHARS,
    render_markdown,
)


def test_fenced_code_stays_text_with_a_token_map_the_widget_colours():
    html = render_markdown("```python\ndef f(x):\n    return x + 1  # add\n```")
    assert html == ('<pre><code class="language-python" data-hl="k:3 1 nf:1 p:1 1 p:2 5 k:6 3 o:1 1 mi:1 2 c1:5 1">'
                    "def f(x):\n    return x + 1  # add\n</code></pre>\n")


def test_token_lengths_count_utf16_units_as_the_browser_does():
    html = render_markdown('```python\ns = "é😀"\n```')
    # The string is `"`, é, 😀 (two UTF-16 units) and `"`: 5 units, 4 code points.
    assert 'data-hl="2 o:1 1 s2:5 1"' in html


def test_every_highlighted_class_has_a_colour_in_the_stylesheet():
    css = static_file("mentra.css").read_text()
    missing = [name for name in HIGHLIGHTED if f".mentra-code .{name}" not in css]
    assert not missing


def test_code_in_an_unknown_or_no_language_is_escaped_not_highlighted():
    for fence in ("```nosuchlanguage\n", "```\n"):
        html = render_markdown(f"{fence}<b>x</b> & y\n```")
        assert "<span" not in html
        assert "&lt;b&gt;x&lt;/b&gt; &amp; y" in html


def test_highlighting_escapes_markup_inside_code():
    html = render_markdown('```html\n<script>alert("x")</script>\n```')
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "data-hl=" in html


def test_tables_and_links():
    html = render_markdown("| a | b |\n|---|---|\n| 1 | 2 |\n\n[docs](https://example.org)")
    assert "<table>" in html and "<td>1</td>" in html
    assert '<a href="https://example.org" target="_blank" rel="noopener noreferrer">docs</a>' in html


def test_a_javascript_link_is_not_a_link():
    assert "href" not in render_markdown("[click](javascript:alert(1))")


def test_raw_html_from_a_model_is_text():
    html = render_markdown("<img src=x onerror=alert(1)>")
    assert "<img" not in html and "&lt;img" in html


def test_inline_and_display_maths_become_mathml():
    html = render_markdown("Euler: $e^{i\\pi}+1=0$\n\n$$\n\\frac{a}{b}\n$$")
    inline = html[html.index("<math"):html.index("</math>") + len("</math>")]
    tree = ET.fromstring(inline)
    assert tree.get("display") == "inline"
    assert tree.get("alttext") == "e^{i\\pi}+1=0"
    assert '<math display="block"' in html and "<mfrac>" in html


def test_dollar_amounts_stay_text():
    assert render_markdown("It costs $5 and $10.") == "<p>It costs $5 and $10.</p>\n"


@pytest.mark.parametrize("latex", [
    "\\text{<script>alert(1)</script>}",  # latex2mathml copies \text verbatim
    "\\text{a < b}",
])
def test_maths_that_would_carry_markup_is_shown_as_its_source(latex):
    html = render_markdown(f"${latex}$")
    assert "<script" not in html and "<math" not in html
    assert "<code>" in html


def test_a_flood_of_maths_is_typeset_up_to_a_budget_and_the_rest_shown_as_written():
    """Typesetting runs on the runtime's thread: 100,000 spans in one reply held every
    other agent for 39 s. Past MAX_MATH_SPANS a message's maths is code, as written."""
    count = MAX_MATH_SPANS + 5_000
    html = render_markdown(" ".join(f"$x_{{{i}}}$" for i in range(count)) + "\n\n$$\nlast\n$$")
    assert html.count("<math") == MAX_MATH_SPANS
    assert html.count("<code>x_{") == count - MAX_MATH_SPANS
    assert f"<code>x_{{{count - 1}}}</code>" in html
    assert html.endswith("<pre><code>last\n</code></pre>\n")  # a display span past it too
    assert "<script" not in html


def test_long_maths_spends_the_budget_sooner():
    latex = "\\sqrt{" + "x+" * 490 + "y}"  # about 1,000 characters, under one span's limit
    fits = MAX_MATH_TOTAL_CHARS // len(latex)
    html = render_markdown(" ".join([f"${latex}$"] * (fits + 3)))
    assert html.count("<math") == fits and html.count("<code>\\sqrt{") == 3


def test_a_link_in_maths_is_dropped():
    html = render_markdown("$\\href{javascript:alert(1)}{x}$")  # latex2mathml passes \href through
    assert not re.search(r"\shref=", html)
    assert "<mi>x</mi>" in html


def test_colours_in_maths_are_dropped_so_the_theme_decides():
    html = render_markdown("$\\color{red}{x}$")
    assert "red" not in html.split("alttext")[0]
    assert "<mi>x</mi>" in html
