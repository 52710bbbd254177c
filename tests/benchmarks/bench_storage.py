"""1. Checkpoint storage: the same 200-turn conversation with tool calls, stored by
our SqliteStore, LangGraph's SqliteSaver (a messages graph with a tool node)
and the OpenAI Agents SDK's SQLiteSession (a Runner with a function tool).

Each framework runs for real, driven by an offline model that replays the
conversation. A wrapper around each one's storage calls counts the bytes the
process hands to write() during those calls (database, WAL and journal pages)
and the time spent in them, so framework overhead is not charged to storage.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.benchmarks.conversation import Turn, conversation
from tests.benchmarks.report import Table, io_written, ratio

__all__ = ["run"]

TURNS = 200
CHECKPOINTS = (10, 100, 200)  # report the mean of the 10 turns ending here
# After the 200 turns, STEADY more turns are measured one by one with each store's
# WAL emptied (checkpointed, outside the meters) before the turn, so SQLite's
# automatic checkpoint cannot land inside one store's window and not another's.
STEADY = 10


def empty_wal(db: Path) -> None:
    """Checkpoint and truncate `db`'s WAL from a connection of our own."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


@dataclass
class Commit:
    """One transaction as the WAL holds it: the pages it wrote, each named by
    the table or index it belongs to ("page 1": the file's header page)."""

    pages: list[str]


def wal_commits(db: Path) -> list[Commit]:
    """The commits in `db`'s WAL, oldest first. Each frame is a 24-byte header
    and a whole page; the last frame of a commit carries the database's size."""
    data = db.with_name(db.name + "-wal").read_bytes()
    page_size = int.from_bytes(data[8:12], "big")
    conn = sqlite3.connect(db)
    try:
        owner = {page: name for name, page in conn.execute("SELECT name, pageno FROM dbstat")}
    finally:
        conn.close()
    commits, pages, offset = [], [], 32
    while offset + 24 + page_size <= len(data):
        page, size_after = int.from_bytes(data[offset:offset + 4], "big"), data[offset + 4:offset + 8]
        pages.append("page 1" if page == 1 else owner.get(page, "free"))
        if size_after != bytes(4):
            commits.append(Commit(pages))
            pages = []
        offset += 24 + page_size
    return commits


@dataclass
class Meter:
    """Bytes written and seconds spent inside storage calls, per turn."""

    bytes: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    calls: int = 0
    names: list[list[str]] = field(default_factory=list)  # the write calls of each turn
    _bytes: int = 0
    _seconds: float = 0.0
    _names: list[str] = field(default_factory=list)

    def measure(self, fn: Callable[[], Any], name: str = "") -> Any:
        self.calls += 1
        self._names.append(name)
        before, started = io_written(), time.perf_counter()
        try:
            return fn()
        finally:
            self._seconds += time.perf_counter() - started
            self._bytes += io_written() - before

    async def measure_async(self, coro: Any) -> Any:
        before, started = io_written(), time.perf_counter()
        try:
            return await coro
        finally:
            self._seconds += time.perf_counter() - started
            self._bytes += io_written() - before

    def end_turn(self) -> None:
        self.bytes.append(self._bytes)
        self.seconds.append(self._seconds)
        self.names.append(self._names)
        self._bytes, self._seconds, self._names = 0, 0.0, []

    def window(self, values: list[Any], turn: int) -> float:
        return statistics.fmean(values[max(0, turn - 10) : turn])

    def steady(self, values: list[Any], turns: int) -> float:
        """Mean of the turns after `turns`, each measured with an empty WAL."""
        return statistics.fmean(values[turns:])


@dataclass
class Result:
    name: str
    meter: Meter
    files: list[Path]
    wall: float
    page_size: int = 0
    steady_commits: list[list[Commit]] = field(default_factory=list)  # of each steady turn

    @property
    def disk(self) -> int:
        return sum(p.stat().st_size for p in self.files if p.exists())


def _files(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-journal")]


# --- ours ------------------------------------------------------------------------

_WRITES = {
    "create_agent", "begin_run", "checkpoint_pending", "commit_assistant", "append_messages",
    "finish_run", "rollback_run", "save_state", "set_status", "acquire_lease", "renew_leases",
    "release_leases", "write_records", "update_agent_profile",
}


class MeteredStore:
    """Our store with every write call measured; everything else passes through."""

    def __init__(self, store: Any, meter: Meter) -> None:
        self._store, self._meter = store, meter

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in _WRITES:
            return attr
        return lambda *a, **k: self._meter.measure(lambda: attr(*a, **k), name)


async def _ours(turns: list[Turn], db: Path, *, synchronous: str = "NORMAL",
                page_size: int | None = None) -> Result:
    from mentra_nb import Runtime, SqliteStore, tool
    from mentra_nb.store.sqlite import APPLICATION_ID
    from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

    results = {t.tool_input["query"]: t.tool_result for t in turns}

    @tool
    def lookup(query: str) -> str:
        """Look something up in the data."""
        return results[query]

    scripts = []
    for t in turns:
        scripts += [tool_use_stream(t.call_id, "lookup", t.tool_input_json), text_stream(t.answer)]
    meter = Meter()
    if page_size is not None:
        # A blank file stamped as ours with that page size: the store creates its
        # tables in it and keeps the page size (it sets its own only on a new file).
        conn = sqlite3.connect(db)
        conn.execute(f"PRAGMA page_size = {page_size}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.close()
    store = SqliteStore(db)
    store._conn.execute(f"PRAGMA synchronous = {synchronous}")
    rt = Runtime.empty(store=MeteredStore(store, meter), tools=[lookup],
                       providers=[ScriptedProvider("anthropic", scripts)])
    agent = rt.spawn("analyst", "anthropic:model")
    meter.end_turn()  # creating the agent is not a turn
    meter.bytes.clear(), meter.seconds.clear()
    started = time.perf_counter()
    for t in turns[:-STEADY]:
        await agent.send(t.user)
        meter.end_turn()
    wall = time.perf_counter() - started
    steady: list[list[Commit]] = []
    for t in turns[-STEADY:]:
        empty_wal(db)
        await agent.send(t.user)
        meter.end_turn()
        steady.append(wal_commits(db))
    assert len(store.load_messages(agent.id)) == 4 * len(turns)
    size = store._conn.execute("PRAGMA page_size").fetchone()[0]
    await rt.aclose()
    store.close()
    name = f"mentra-nb SqliteStore (synchronous={synchronous})"
    if page_size is not None:
        name = f"mentra-nb SqliteStore ({page_size // 1024} KiB pages, synchronous={synchronous})"
    return Result(name, meter, _files(db), wall, size, steady)


# --- LangGraph --------------------------------------------------------------------


def _langgraph(turns: list[Turn], db: Path) -> Result:
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool as lc_tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    results = {t.tool_input["query"]: t.tool_result for t in turns}

    @lc_tool
    def lookup(query: str) -> str:
        """Look something up in the data."""
        return results[query]

    current: list[Turn] = []

    def model(state: MessagesState) -> dict[str, Any]:
        turn = current[-1]
        if isinstance(state["messages"][-1], HumanMessage):
            call = {"name": "lookup", "args": turn.tool_input, "id": turn.call_id}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content=turn.answer)]}

    meter = Meter()

    class MeteredSaver(SqliteSaver):
        def put(self, *args: Any, **kwargs: Any) -> Any:
            return meter.measure(lambda: super(MeteredSaver, self).put(*args, **kwargs))

        def put_writes(self, *args: Any, **kwargs: Any) -> Any:
            return meter.measure(lambda: super(MeteredSaver, self).put_writes(*args, **kwargs))

    conn = sqlite3.connect(db, check_same_thread=False)
    saver = MeteredSaver(conn)
    saver.setup()
    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode([lookup]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, ["tools", END])
    graph.add_edge("tools", "model")
    app = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "analyst"}}
    meter.bytes.clear()
    started = time.perf_counter()
    for i, t in enumerate(turns):
        if i == len(turns) - STEADY:
            wall = time.perf_counter() - started
        if i >= len(turns) - STEADY:
            empty_wal(db)
        current.append(t)
        app.invoke({"messages": [HumanMessage(t.user)]}, config)
        meter.end_turn()
    assert len(app.get_state(config).values["messages"]) == 4 * len(turns)
    conn.close()
    return Result("LangGraph SqliteSaver (MessagesState)", meter, _files(db), wall)


# --- OpenAI Agents SDK ----------------------------------------------------------


async def _openai_agents(turns: list[Turn], db: Path) -> Result:
    from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)
    results = {t.tool_input["query"]: t.tool_result for t in turns}
    current: list[Turn] = []

    @function_tool
    def lookup(query: str) -> str:
        """Look something up in the data."""
        return results[query]

    class ReplayModel(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                               **kwargs: Any) -> ModelResponse:
            turn = current[-1]
            last = input[-1] if isinstance(input, list) else {"role": "user"}
            if last.get("type") == "function_call_output":
                output: list[Any] = [ResponseOutputMessage(
                    id=f"msg_{turn.index}", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text=turn.answer, annotations=[])],
                )]
            else:
                output = [ResponseFunctionToolCall(
                    type="function_call", call_id=turn.call_id, name="lookup",
                    arguments=turn.tool_input_json, id=f"fc_{turn.index}", status="completed",
                )]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            # The SDK's Model interface requires it; the benchmark's Runner.run never streams.
            raise RuntimeError("the storage benchmark does not stream")

    meter = Meter()

    class MeteredSession(SQLiteSession):
        async def add_items(self, items: Any) -> None:
            await meter.measure_async(super().add_items(items))

    session = MeteredSession("analyst", db)
    agent = Agent(name="analyst", instructions="", model=ReplayModel(), tools=[lookup])
    started = time.perf_counter()
    steady: list[list[Commit]] = []
    for i, t in enumerate(turns):
        if i == len(turns) - STEADY:
            wall = time.perf_counter() - started
        if i >= len(turns) - STEADY:
            empty_wal(db)
        current.append(t)
        await Runner.run(agent, t.user, session=session)
        meter.end_turn()
        if i >= len(turns) - STEADY:
            steady.append(wal_commits(db))
    assert len(await session.get_items()) == 4 * len(turns)
    session.close()
    conn = sqlite3.connect(db)
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    return Result("OpenAI Agents SQLiteSession", meter, _files(db), wall, size, steady)


# --- a reply streamed at a model's pace -----------------------------------------------

PACED_TEXT = 3_600  # characters, streamed in ~4-character tokens
PACED_SECONDS = 10.5


async def _paced_reply(db: Path) -> tuple[int, int, int, int]:
    """(text bytes, bytes written by pending-turn checkpoints, their number, bytes
    written by the whole turn) for one reply streamed over PACED_SECONDS."""
    from mentra_nb import Runtime, SqliteStore
    from mentra_nb.testing import ScriptedProvider, text_stream

    words = (conversation(40)[7].answer + " ") * 20
    text = words[:PACED_TEXT]
    chunks = PACED_TEXT // 4
    meter, checkpoints = Meter(), Meter()
    store = SqliteStore(db)

    class Metered(MeteredStore):
        def __getattr__(self, name: str) -> Any:
            attr = super().__getattr__(name)
            if name != "checkpoint_pending":
                return attr
            return lambda *a, **k: checkpoints.measure(lambda: attr(*a, **k))

    provider = ScriptedProvider("anthropic", [text_stream("warm up"),
                                              text_stream(text, chunks=chunks,
                                                          delay=PACED_SECONDS / chunks)])
    rt = Runtime.empty(store=Metered(store, meter), providers=[provider])
    agent = rt.spawn("writer", "anthropic:model")
    await agent.send("warm up")
    empty_wal(db)
    meter.end_turn(), checkpoints.end_turn()
    reply = await agent.send("write it")
    meter.end_turn(), checkpoints.end_turn()
    assert reply.text == text
    await rt.aclose()
    store.close()
    return len(text.encode()), checkpoints.bytes[-1], checkpoints.calls, meter.bytes[-1]


def _paced_table(db: Path) -> Table:
    text, pending, count, whole = asyncio.run(_paced_reply(db))
    table = Table(
        f"A reply streamed at a model's pace: {text:,} bytes of text over {PACED_SECONDS} s",
        ["store", "pending-turn checkpoints", "bytes they wrote", "÷ the text",
         "bytes the whole turn wrote", "÷ the text (whole turn)"],
    )
    table.add("mentra-nb SqliteStore", count, f"{pending / 1024:,.1f} KiB", f"{pending / text:.2f}",
              f"{whole / 1024:,.1f} KiB", f"{whole / text:.2f}")
    table.notes += [
        "target: the checkpoints of a 10-second reply write ≤ 4x its text (a fixed 250 ms "
        "interval wrote 44 checkpoints, ~110x, before issue 22)",
        "whole turn: the user message, the checkpoints and the committed reply, each commit "
        "writing whole pages to the WAL (emptied before the turn)",
    ]
    return table


# --- the table -------------------------------------------------------------------------


def run(turns: int = TURNS) -> list[Table]:
    convo = conversation(turns + STEADY)
    results: list[Result] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mentra-bench-") as tmp:
        folder = Path(tmp)
        results.append(asyncio.run(_ours(convo, folder / "ours.sqlite")))
        results.append(asyncio.run(_ours(convo, folder / "ours-full.sqlite", synchronous="FULL")))
        results.append(asyncio.run(_ours(convo, folder / "ours-1k.sqlite", page_size=1024)))
        for name, runner in (("LangGraph", lambda: _langgraph(convo, folder / "langgraph.sqlite")),
                             ("OpenAI Agents", lambda: asyncio.run(
                                 _openai_agents(convo, folder / "openai.sqlite")))):
            try:
                results.append(runner())
            except ImportError as err:
                notes.append(f"{name} is not installed ({err}); pip install -e '.[bench]'")
        return [*_tables(results, turns, notes), _where_the_bytes_go(results, convo),
                _paced_table(folder / "paced.sqlite")]


def _json_per_turn(turns: list[Turn]) -> float:
    """The mean bytes of a turn's four messages as our store keeps them (compact JSON)."""
    from mentra_nb.messages import Message, ToolResultBlock, ToolUseBlock

    sizes = [sum(len(m.model_dump_json()) for m in (
        Message.user(t.user),
        Message.assistant(ToolUseBlock(id=t.call_id, name="lookup", input=t.tool_input)),
        Message.user(ToolResultBlock(tool_use_id=t.call_id, content=t.tool_result)),
        Message.assistant(t.answer))) for t in turns]
    return statistics.fmean(sizes)


def _by_btree(commits: list[Commit]) -> Counter[str]:
    return Counter(page for commit in commits for page in commit.pages)


def _where_the_bytes_go(results: list[Result], convo: list[Turn]) -> Table:
    table = Table(
        f"Where a steady-state turn's bytes go (turns {len(convo) - STEADY + 1}-{len(convo)}, read from "
        "each WAL)",
        ["store", "page size", "commits per turn", "pages per turn", "bytes per turn",
         "pages per turn by table or index"],
    )
    per_call: dict[str, Counter[str]] = {}
    calls: Counter[str] = Counter()
    for r in results:
        if not r.steady_commits or "synchronous=FULL" in r.name:
            continue
        turns = len(r.steady_commits)
        pages = _by_btree([c for turn in r.steady_commits for c in turn])
        table.add(r.name, f"{r.page_size // 1024} KiB",
                  f"{sum(len(turn) for turn in r.steady_commits) / turns:.1f}",
                  f"{sum(pages.values()) / turns:.1f}",
                  f"{statistics.fmean(r.meter.bytes[-STEADY:]) / 1024:,.1f} KiB",
                  ", ".join(f"{name} {count / turns:.1f}" for name, count in pages.most_common()))
        if r is results[0]:
            writes = r.meter.names[-turns:]
            for names, commits in zip(writes, r.steady_commits, strict=True):
                if len(names) == len(commits):  # each write call is one transaction
                    for name, commit in zip(names, commits, strict=True):
                        calls[name] += 1
                        per_call.setdefault(name, Counter()).update(commit.pages)
    ours = results[0]
    frame = ours.page_size + 24
    sdk = [statistics.fmean(r.meter.bytes[-STEADY:]) for r in results if r.name.startswith("OpenAI")]
    target = (f"target ≤ 0.25x the OpenAI Agents SDK: {0.25 * sdk[0]:,.0f} bytes, "
              f"{int((0.25 * sdk[0] - 32) // frame)} pages of {ours.page_size // 1024} KiB a turn. "
              if sdk else "")
    table.notes += [
        "ours, by store call (mean pages per call): " + "; ".join(
            f"{name} {sum(c.values()) / calls[name]:.1f} ("
            + ", ".join(f"{b} {n / calls[name]:.1f}" for b, n in c.most_common()) + ")"
            for name, c in per_call.items()),
        f"a turn's four messages are {_json_per_turn(convo[-STEADY:]):,.0f} bytes of JSON; a commit "
        f"writes every page it changed, whole, to the WAL ({ours.page_size:,} + 24 bytes a page, "
        "32 for the WAL's header); a row that does not fit its leaf page adds a page, the interior "
        "page above it, and page 1 (the header records the file's size)",
        f"{target}The recovery matrix needs four commits "
        "(the user's message before the model is asked, the model's tool call before the tool "
        "runs, the tool's result, the reply), each writing its leaf of the messages table; the "
        "turn's ~1.6 KB of rows fill most of a 2 KiB leaf, so most turns also add a leaf (two "
        "pages more). Even with no agent row written at all that is about six pages of "
        "2 KiB; 1 KiB pages (the row above) cost the read-back (see docs/benchmarks.md)",
    ]
    return table


def _tables(results: list[Result], turns: int, notes: list[str]) -> list[Table]:
    ours = results[0]
    points = [c for c in CHECKPOINTS if c <= turns]
    size = Table(
        f"Checkpoint storage: {turns}-turn conversation with a tool call per turn",
        ["store", "db + WAL on disk", "vs ours", *(f"bytes written, turn {c}" for c in points),
         f"turn {points[-1]} vs ours", "last ÷ first window",
         f"steady state, turns {turns + 1}-{turns + STEADY}", "ours ÷ it (steady)"],
    )
    for r in results:
        windows = [r.meter.window(r.meter.bytes, c) for c in points]
        steady = r.meter.steady(r.meter.bytes, turns)
        size.add(r.name, f"{r.disk / 1024:,.0f} KiB", ratio(ours.disk, r.disk),
                 *(f"{w / 1024:,.1f} KiB" for w in windows),
                 ratio(ours.meter.window(ours.meter.bytes, points[-1]), windows[-1]),
                 f"{windows[-1] / windows[0]:.2f}", f"{steady / 1024:,.1f} KiB",
                 f"{ours.meter.steady(ours.meter.bytes, turns) / steady:.2f}")
    size.notes += [
        "bytes written: what the process handed to write() inside the store's own calls "
        "(database, WAL and journal pages; SQLite writes whole pages), mean of the 10 turns "
        "ending at that turn",
        "every store runs with WAL; the peers keep SQLite's default synchronous=FULL (an fsync "
        "per commit), ours uses NORMAL, so ours is also shown with FULL",
        f"the windows are as the turns ran (an automatic WAL checkpoint may land in one store's "
        f"window and not another's); the steady state is {STEADY} more turns, each measured after "
        "its store's WAL was emptied outside the meter. Target: ours ÷ the OpenAI Agents SDK's "
        "≤ 1.00 in the steady state",
        "ours: new state files use 2 KiB pages (SQLite's default, which the peers keep, is 4 KiB)",
        *notes,
    ]
    timing = Table(
        "Checkpoint storage: time per turn",
        ["store", *(f"write ms, turn {c}" for c in points), f"turn {points[-1]} vs ours",
         f"whole turn ms (framework + store), mean of {turns}"],
    )
    for r in results:
        windows = [r.meter.window(r.meter.seconds, c) * 1000 for c in points]
        timing.add(r.name, *windows,
                   ratio(ours.meter.window(ours.meter.seconds, points[-1]) * 1000, windows[-1]),
                   r.wall / turns * 1000)
    timing.notes.append("write ms: time inside the store's calls during one turn (mean of 10 turns)")
    return [size, timing]


if __name__ == "__main__":
    for table in run():
        print(table.text(), end="\n\n")
