"""Issue 33.20: bidi controls and zero-width characters in code a model wrote are
marked visibly where the user reads or runs that code: the cell `-f code` writes
(here) and the widgets' code (js/dom.js `markHidden`, tested with vitest)."""

from __future__ import annotations

import re
from pathlib import Path

from mentra_nb.notebook._hidden_characters import HIDDEN_CHARACTERS, hidden_characters, mark_hidden
from tests.notebook.test_notebook_context import execute, kernel  # noqa: F401 (the fixture)

# Trojan Source's "early return": reads as a comment, runs as a return.
TROJAN = 'access_level = "user"\nif access_level != "user\u202e \u2066# Check if admin\u2069 \u2066":\n    print("admin")'


def test_hidden_characters_are_marked_and_visible_ones_kept():
    assert mark_hidden("a\u200bb\u202ec\ufeffd\U000e0041") == "a<U+200B>b<U+202E>c<U+FEFF>d<U+E0041>"
    assert hidden_characters(TROJAN) == ["U+202E", "U+2066", "U+2069"]
    # A joiner inside an emoji sequence is the emoji's; accents and other scripts are text.
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467 caf\u00e9 \u05e9\u05dc\u05d5\u05dd"
    assert mark_hidden(family) == family and hidden_characters(family) == []
    assert mark_hidden("x\u200dy") == "x<U+200D>y"


def test_the_widgets_mark_the_same_characters():
    source = (Path(__file__).resolve().parents[2] / "js" / "dom.js").read_text(encoding="utf-8")
    js_class = re.search(r"const HIDDEN = /\[(.*?)\]/gu;", source)
    assert js_class is not None
    python_class = HIDDEN_CHARACTERS.replace("\\U000E0000", "\\u{E0000}").replace("\\U000E007F", "\\u{E007F}")
    assert js_class.group(1) == python_class


def test_format_code_marks_hidden_characters_in_the_new_cell(kernel):  # noqa: F811
    kernel.run("%mentra spawn coder")
    # The offline model answers "You said: <prompt>", so the prompt's block comes back.
    text, reply = execute(kernel, f"%%mentra coder -f code\nHere:\n```python\n{TROJAN}\n```")
    assert reply["status"] == "ok"
    [payload] = reply["payload"]
    assert "\u202e" not in payload["text"] and "\u2066" not in payload["text"]
    assert 'if access_level != "user<U+202E> <U+2066># Check if admin<U+2069> <U+2066>":' in payload["text"]
    assert "hidden characters (U+202E, U+2066, U+2069)" in text
    # The transcript keeps what the model wrote.
    stored = kernel.run("print(ascii(__import__('mentra_nb').notebook.session().agent('coder').history[-1].text))")
    assert "\\u202e" in stored and "<U+202E>" not in stored
