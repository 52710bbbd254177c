"""Issue 14: the tool and provider boundaries, fuzzed with hypothesis. Whatever a
model sends as tool arguments, whatever names the workspace's files have, and
whatever text a provider streams, a run ends in a typed `MentraError` or goes on
with an error result; never another exception, and what it stored is readable.
Everything runs through a real agent on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mentra_nb import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MentraError,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    Runtime,
    SqliteStore,
    tool,
)
from mentra_nb.runtime._file_tools import file_tools
from mentra_nb.testing import ScriptedProvider, ok_stream, text_stream, tool_use_stream

pytestmark = pytest.mark.reliability


def valid_utf8(text: str) -> str:
    """What the runtime stores for `text`: lone surrogates become U+FFFD."""
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Text a model or a server may produce: control characters, lone surrogates,
# non-BMP characters, bidi marks, NUL.
ODD_TEXT = st.lists(st.one_of(st.characters(codec=None), st.sampled_from(
    ["\ud800", "\udfff", "\udc80", "\x00", "\u202e", "🙂", "<script>", "\r", "\\", "\\ud800"])),
    max_size=20).map("".join)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ODD_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ODD_TEXT, inner, max_size=4),
    max_leaves=20,
)
ARGUMENTS = st.one_of(
    JSON_VALUES.map(lambda v: json.dumps(v)),                       # any JSON, object or not
    st.dictionaries(st.sampled_from(["path", "pattern", "glob", "offset", "limit", "depth", "x"]),
                    JSON_VALUES, max_size=4).map(json.dumps),      # near the real schemas
    st.integers(1, 3000).map(lambda n: '{"x": ' + "[" * n + "]" * n + "}"),  # absurd nesting
    st.text(max_size=60),                                           # not JSON at all
    ODD_TEXT,
)


@tool(read_only=True)
def echo(x: Any = None) -> str:
    """Echo its argument."""
    return f"got {x!r}"


def _run(workspace: Path, scripts: list, tools: list | None = None) -> tuple[list, Exception | None]:
    """One real run: its stored transcript (read back from the file) and its error, if any."""

    async def go() -> tuple[list, Exception | None]:
        db = workspace.parent / "state.sqlite"
        store = SqliteStore(db)
        provider = ScriptedProvider("scripted", scripts)
        rt = Runtime.empty(store=store, providers=[provider],
                           tools=tools if tools is not None else [*file_tools(workspace), echo])
        agent = rt.spawn(f"a{os.urandom(4).hex()}", "scripted:m")
        error: Exception | None = None
        try:
            await asyncio.wait_for(agent.send("go"), 60)
        except MentraError as err:  # a typed error is an allowed ending
            error = err
        await rt.aclose()
        store.close()
        reread = SqliteStore(db)  # what was stored must load and serialise again
        stored = reread.load_agent(agent.id).transcript
        for message in stored:
            message.model_dump_json()
        reread.close()
        return stored, error

    return asyncio.run(go())


@pytest.fixture
def workspace():
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "ws"
        root.mkdir()
        (root / "notes.md").write_text("hello\n")
        yield root


@FUZZ
@given(name=st.sampled_from(["read_file", "list_dir", "glob", "grep", "echo", "nope"]), raw=ARGUMENTS)
def test_any_tool_arguments_end_in_a_result_or_a_typed_error(workspace, name, raw) -> None:
    stored, error = _run(workspace, [tool_use_stream("c1", name, raw), text_stream("ok")])
    assert error is None, error  # arguments never fail the run: they get an error result
    results = [b for m in stored for b in m.tool_results]
    assert [r.tool_use_id for r in results] == ["c1"]
    assert stored[-1].text == "ok"


@FUZZ
@given(names=st.lists(st.binary(min_size=1, max_size=20).filter(
    lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")), min_size=1, max_size=5,
    unique=True))
def test_any_file_names_are_listed_searched_and_stored(workspace, names) -> None:
    for raw in names:
        try:
            fd = os.open(os.fsencode(workspace) + b"/" + raw, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            continue  # a name this filesystem refuses
        os.write(fd, b"hello\n")
        os.close(fd)
    scripts = [tool_use_stream("c1", "list_dir", "{}"), tool_use_stream("c2", "glob", '{"pattern": "**/*"}'),
               tool_use_stream("c3", "grep", '{"pattern": "hello"}'), text_stream("ok")]
    stored, error = _run(workspace, scripts)
    assert error is None, error
    results = [b for m in stored for b in m.tool_results]
    assert len(results) == 3 and not any(r.is_error for r in results), results
    assert "notes.md" in results[1].content


DELTA_KINDS = st.sampled_from(["text", "thinking", "tool_input_json", "signature"])
EVENTS = st.lists(st.one_of(
    st.builds(ContentBlockDelta, index=st.integers(0, 2), kind=DELTA_KINDS, value=ODD_TEXT),
    st.integers(0, 2).map(ContentBlockStarted.text),
    st.integers(0, 2).map(lambda i: ContentBlockStarted.tool_use(i, f"t{i}", "echo")),
    st.integers(0, 2).map(lambda i: ContentBlockStopped(index=i)),
    st.just(MessageDelta(stop_reason="end_turn")),
    st.just(MessageStopped()),
), max_size=12)


@FUZZ
@given(body=EVENTS, deltas=st.lists(ODD_TEXT, max_size=8))
def test_any_provider_stream_ends_in_a_reply_or_a_typed_error(workspace, body, deltas) -> None:
    well_formed = [MessageStarted(), ContentBlockStarted.text(0),
                   *(ContentBlockDelta.text(0, d) for d in deltas), ContentBlockStopped(index=0),
                   MessageDelta(stop_reason="end_turn"), MessageStopped()]
    for events in ([MessageStarted(), *body], well_formed):
        stored, error = _run(workspace, [ok_stream(events), text_stream("ok"), text_stream("ok")],
                             tools=[echo])
        if events is well_formed:
            assert error is None, error
            assert stored[-1].text == valid_utf8("".join(deltas))
