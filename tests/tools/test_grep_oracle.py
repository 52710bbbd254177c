"""Issue 33 (6): `grep` is read-only and runs without approval, and it masks known
secrets in the lines it prints; but if it matched the raw text, which calls match
would still tell a model the secret, a few calls a character (`key=k3y-[a-m]`?
`key=k3y-[a-f]`? ...). It matches the masked text, so they tell nothing."""

from __future__ import annotations

import re
import string

import pytest

from mentra_nb import Runtime, ToolOutput
from mentra_nb.runtime import known_secrets, scrub
from mentra_nb.runtime._file_tools import file_tools
from mentra_nb.runtime.tools import ToolContext
from tests.tools.helpers import by_name

ALPHABET = string.ascii_letters + string.digits + "-_"
# Neither has a provider's shape: only the known-secret rule masks them.
KEY = "k3y-Q9v2xLm7Tz0pW4rB8nYc"
OTHER_KEY = "k3y-aaaaaaaaaaaaaaaaaaaa"


@pytest.fixture
async def call():
    """Run a tool as the turn loop does (one runtime for the attack's hundreds of calls)."""
    rt = Runtime.empty()
    agent = rt.spawn("caller", "test")

    async def run(tool, **input) -> ToolOutput:
        out = await tool.run(ToolContext(agent, "call-1", tool.spec.name), input)
        return out if isinstance(out, ToolOutput) else ToolOutput(content=out)

    yield run
    await rt.aclose()


def _workspace(root, key, monkeypatch):
    monkeypatch.setenv("MENTRA_ORACLE_API_KEY", key)  # a key the runtime knows
    root.mkdir()
    (root / "settings.ini").write_text(f"[service]\nurl = https://example.org\nkey={key}\nretries = 3\n")
    (root / "notes.md").write_text("the key= line in settings.ini is read at start\n")
    return by_name(file_tools(root))["grep"]


async def _what_the_model_sees(call, grep, workspace, pattern: str) -> str:
    out = await call(grep, pattern=pattern)
    return scrub(out.content, known_secrets(workspace))  # as the turn loop passes it on


async def _attack(call, grep, workspace, length: int) -> tuple[str, list[tuple[str, str]]]:
    """Extend the known prefix `key=` one character at a time, halving the candidate
    characters with a character class each call ("does it go on with one of these?").
    Returns its guess and every (pattern, answer) it saw."""
    guess, seen = "", []
    for _ in range(length):
        candidates = ALPHABET
        while len(candidates) > 1:
            half = candidates[: len(candidates) // 2]
            pattern = re.escape("key=" + guess) + "[" + re.escape(half) + "]"
            answer = await _what_the_model_sees(call, grep, workspace, pattern)
            seen.append((pattern, answer))
            candidates = candidates[len(candidates) // 2:] if answer.startswith("no matches") else half
        guess += candidates
    return guess, seen


async def test_which_grep_calls_match_reveals_nothing_of_a_secret(tmp_path, monkeypatch, call):
    grep = _workspace(tmp_path / "a", KEY, monkeypatch)
    guess, seen = await _attack(call, grep, tmp_path / "a", len(KEY))
    assert len(seen) == 6 * len(KEY)  # 64 candidates: 6 halvings a character
    # On the raw text each answer says whether the key goes on with the half asked about, and
    # the guess is the key. On the masked text every answer is "no matches".
    assert guess != KEY and KEY[:4] not in guess, f"the attack recovered {guess!r}"
    assert all(answer.startswith("no matches for /key=") for _, answer in seen)
    # The same attack on a workspace holding another key asks and hears exactly the same:
    # the answers depend on nothing in the key.
    other = _workspace(tmp_path / "b", OTHER_KEY, monkeypatch)
    assert await _attack(call, other, tmp_path / "b", len(KEY)) == (guess, seen)


async def test_grep_still_finds_the_line_and_shows_it_masked(tmp_path, monkeypatch, call):
    grep = _workspace(tmp_path / "a", KEY, monkeypatch)
    found = await _what_the_model_sees(call, grep, tmp_path / "a", r"^key=")
    assert found == "settings.ini:3: key=[redacted]"
    assert await _what_the_model_sees(call, grep, tmp_path / "a", r"key=\[redacted\]") == found
    # The lines around it keep their numbers.
    assert await _what_the_model_sees(call, grep, tmp_path / "a", "retries") == "settings.ini:4: retries = 3"
    assert KEY not in (await call(grep, pattern="key")).content
