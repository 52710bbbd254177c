"""Characters that change how code reads without being seen, marked visibly.

Bidi controls reorder what an editor shows (a "Trojan Source" comment that ends
mid-line, CVE-2021-42574) and zero-width characters hide inside names and
strings, so code a model wrote must not carry them unseen into a cell the user
runs. Code written into a cell for the user (`%%mentra NAME -f code`) gets each
one replaced by a marker such as `<U+202E>`, as GitHub and VS Code mark them; the
widgets mark them in the code they show (js/dom.js `markHidden`, same set). The
stored transcript keeps the text as the model wrote it.

The set: bidi controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069),
zero-width and invisible characters (U+00AD, U+180E, U+200B-U+200D, U+2060-U+2064,
U+FEFF), Hangul fillers that pass for spaces in names (U+115F, U+1160, U+3164,
U+FFA0) and tag characters (U+E0000-U+E007F). A zero-width joiner between two
emoji (a family, a flag) is the emoji's own and is left alone.
"""

from __future__ import annotations

import re

__all__ = ["HIDDEN_CHARACTERS", "hidden_characters", "mark_hidden"]

# The character class, written the same way in js/dom.js (a test compares them).
HIDDEN_CHARACTERS = (r"\u00AD\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064"
                     r"\u2066-\u2069\u3164\uFEFF\uFFA0\U000E0000-\U000E007F")
_HIDDEN = re.compile(f"[{HIDDEN_CHARACTERS}]")
_ZWJ = "\u200d"


def _emoji(char: str) -> bool:
    return char >= "\U0001f000" or "\u2600" <= char <= "\u27bf" or char == "\ufe0f"


def _is_hidden(text: str, at: int) -> bool:
    if text[at] != _ZWJ:
        return True
    return not (0 < at < len(text) - 1 and _emoji(text[at - 1]) and _emoji(text[at + 1]))


def hidden_characters(text: str) -> list[str]:
    """The hidden characters in `text`, as `U+XXXX`, each once, in order."""
    found = [f"U+{ord(m.group(0)):04X}" for m in _HIDDEN.finditer(text) if _is_hidden(text, m.start())]
    return list(dict.fromkeys(found))


def mark_hidden(text: str) -> str:
    """`text` with each hidden character replaced by `<U+XXXX>`."""
    return _HIDDEN.sub(lambda m: f"<U+{ord(m.group(0)):04X}>" if _is_hidden(text, m.start()) else m.group(0),
                       text)
