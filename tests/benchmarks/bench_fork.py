"""Forking a conversation: bytes written and time to fork a 10, 1,000 and
10,000-message conversation, ours against LangGraph's SqliteSaver, side by side.

Both hold the same messages (tests/benchmarks/conversation.py: user question,
tool call, tool result, answer). Ours: `agent.fork(name, at=N)` on an agent whose
history has one message more, so the fork point lies in the past. LangGraph's:
the documented way to fork a thread, `graph.update_state(config, values)` with the
`checkpoint_id` of a past checkpoint holding the same N messages, which writes the
new checkpoint that the next `invoke` from it would continue. Each fork is
measured five times (new names, new calls) with its store's WAL or journal
emptied outside the meters; bytes are what the process handed to write() during
the call, database, WAL and journal pages included, so the lease and every index
page we touch are counted.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.bench_storage import empty_wal
from tests.benchmarks.conversation import conversation
from tests.benchmarks.report import Table, io_written, ratio

__all__ = ["run"]

LENGTHS = (10, 1_000, 10_000)
REPEAT = 5
TARGET = 32 * 1024  # bytes: "a handful of pages, the same at every length"


def _measure(fn: Any) -> tuple[int, float]:
    before, started = io_written(), time.perf_counter()
    fn()
    return io_written() - before, time.perf_counter() - started


def _ours(n: int, db: Path) -> tuple[list[int], list[float]]:
    from mentra_nb import Runtime, SqliteStore
    from mentra_nb.messages import ContentBlock, Message

    messages: list[Message] = []
    for t in conversation(n // 4 + 1):
        messages += [Message.user(t.user),
                     Message.assistant(ContentBlock.tool_use(t.call_id, "lookup", t.tool_input)),
                     Message.user(ContentBlock.tool_result(t.call_id, t.tool_result)),
                     Message.assistant(t.answer)]

    async def go() -> tuple[list[int], list[float]]:
        store = SqliteStore(db)
        rt = Runtime.empty(store=store, runtime_id="bench")
        source = rt.spawn("analyst", "test")
        source.state.append_messages(messages[: n + 1])
        sizes, times = [], []
        for i in range(REPEAT):
            empty_wal(db)
            written, seconds = _measure(lambda i=i: source.fork(f"fork-{i}", at=n))
            sizes.append(written)
            times.append(seconds)
        # At 10 the fork point falls between a tool call and its result: the fork
        # also writes an error result for the call (providers need one).
        assert rt.agent("fork-0").history[:n] == messages[:n]
        await rt.aclose()
        store.close()
        return sizes, times

    return asyncio.run(go())


def _langgraph(n: int, db: Path) -> tuple[list[int], list[float]]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    messages: list[Any] = []
    for t in conversation(n // 4 + 1):
        messages += [HumanMessage(t.user, id=f"u{t.index}"),
                     AIMessage("", id=f"a{t.index}",
                               tool_calls=[{"name": "lookup", "args": t.tool_input, "id": t.call_id}]),
                     ToolMessage(t.tool_result, tool_call_id=t.call_id, id=f"r{t.index}"),
                     AIMessage(t.answer, id=f"b{t.index}")]

    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": []}

    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    app = graph.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "analyst"}}
    past = app.update_state(config, {"messages": messages[:n]}, as_node="model")
    app.update_state(config, {"messages": [messages[n]]}, as_node="model")  # the past is past
    sizes, times = [], []
    for _ in range(REPEAT):
        empty_wal(db)
        written, seconds = _measure(lambda: app.update_state(past, {"messages": []}, as_node="model"))
        sizes.append(written)
        times.append(seconds)
    forked = app.get_state({"configurable": {"thread_id": "analyst"}})
    assert len(forked.values["messages"]) == n
    conn.close()
    return sizes, times


def run() -> list[Table]:
    table = Table(
        "Forking a conversation (median of 5 forks)",
        ["messages", "mentra-nb bytes", "LangGraph bytes", "LangGraph/ours bytes",
         "mentra-nb ms", "LangGraph ms", "LangGraph/ours time"],
    )
    worst = 0
    with tempfile.TemporaryDirectory(prefix="mentra-bench-fork-") as folder:
        for n in LENGTHS:
            ours_bytes, ours_times = _ours(n, Path(folder) / f"ours-{n}.sqlite")
            their_bytes, their_times = _langgraph(n, Path(folder) / f"langgraph-{n}.sqlite")
            ob, tb = statistics.median(ours_bytes), statistics.median(their_bytes)
            ot, tt = statistics.median(ours_times), statistics.median(their_times)
            worst = max(worst, max(ours_bytes))
            table.add(n, f"{ob:,.0f}", f"{tb:,.0f}", ratio(ob, tb), ot * 1000, tt * 1000, ratio(ot, tt))
    table.notes += [
        "ours: agent.fork(name, at=N): the fork's lease, its agent row and one branch row pointing "
        "at the source's messages, two transactions, whatever N is",
        "LangGraph: graph.update_state(<config of the past checkpoint>, {'messages': []}) with "
        "SqliteSaver, the documented fork; its new checkpoint holds the whole message list",
        "at 10 messages the fork point falls between a tool call and its result, so our fork also "
        "writes an error result for that call (one message); LangGraph's keeps the dangling call",
        f"largest fork of ours at any length: {worst:,} bytes "
        f"({'within' if worst < TARGET else 'OVER'} the {TARGET // 1024} KiB target)",
    ]
    return [table]
