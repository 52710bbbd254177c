"""7. Postgres: our PostgresStore vs LangGraph's PostgresSaver, on one throwaway
server, in one run.

- Per turn: the 200-turn conversation of `bench_storage` (a tool call per
  turn), each framework driven for real by an offline model. Bytes are what
  the server wrote to its WAL during the turn (`pg_current_wal_lsn()` before
  and after: every byte Postgres must make durable, table and index pages
  included), time is the time inside the storage calls.
- Resume: 50 agents x 1,000 messages, every transcript read back
  (`Runtime.resume()` and each agent's history vs `get_state` per thread).

PostgresSaver is set up as its documentation shows: a psycopg connection with
`autocommit=True, prepare_threshold=0, row_factory=dict_row`, `setup()` once,
outside the timers (as our store's migrations are).
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.bench_resume import _messages
from tests.benchmarks.bench_storage import CHECKPOINTS, Meter, MeteredStore
from tests.benchmarks.conversation import Turn, conversation
from tests.benchmarks.report import Table, ratio

__all__ = ["run"]

TURNS = 200
RESUME = (50, 1000)
REPEAT = 3


class WalMeter(Meter):
    """A `Meter` whose bytes are the server's WAL bytes per turn (not this process's writes)."""

    def __init__(self, dsn: str) -> None:
        super().__init__()
        import psycopg

        self._conn = psycopg.connect(dsn, autocommit=True)
        self._lsn = self._now()

    def _now(self) -> Any:
        row = self._conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
        return row[0] if row else None

    def end_turn(self) -> None:
        now = self._now()
        row = self._conn.execute("SELECT pg_wal_lsn_diff(%s, %s)", (now, self._lsn)).fetchone()
        self._lsn = now
        self._bytes = int(row[0]) if row else 0
        super().end_turn()

    def close(self) -> None:
        self._conn.close()


def _database_size(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0


async def _ours(turns: list[Turn], dsn: str) -> tuple[WalMeter, float]:
    from mentra_nb import PostgresStore, Runtime, tool
    from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

    results = {t.tool_input["query"]: t.tool_result for t in turns}

    @tool
    def lookup(query: str) -> str:
        """Look something up in the data."""
        return results[query]

    scripts = []
    for t in turns:
        scripts += [tool_use_stream(t.call_id, "lookup", t.tool_input_json), text_stream(t.answer)]
    store = PostgresStore(dsn)
    meter = WalMeter(dsn)
    rt = Runtime.empty(store=MeteredStore(store, meter), tools=[lookup],
                       providers=[ScriptedProvider("anthropic", scripts)])
    agent = rt.spawn("analyst", "anthropic:model")
    meter.end_turn()  # creating the agent is not a turn
    meter.bytes.clear(), meter.seconds.clear()
    started = time.perf_counter()
    for t in turns:
        await agent.send(t.user)
        meter.end_turn()
    wall = time.perf_counter() - started
    assert len(store.load_messages(agent.id)) == 4 * len(turns)
    await rt.aclose()
    store.close()
    meter.close()
    return meter, wall


def _connect_like_the_docs(dsn: str) -> Any:
    from psycopg import Connection
    from psycopg.rows import dict_row

    return Connection.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def _lc_messages(messages: list[Any]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out: list[Any] = []
    for m in messages:
        if m.tool_uses:
            out.append(AIMessage(content="", tool_calls=[
                {"name": u.name, "args": u.input, "id": u.id} for u in m.tool_uses]))
        elif m.tool_results:
            r = m.tool_results[0]
            out.append(ToolMessage(content=r.content, tool_call_id=r.tool_use_id))
        elif m.role.value == "user":
            out.append(HumanMessage(m.text))
        else:
            out.append(AIMessage(m.text))
    return out


def _langgraph(turns: list[Turn], dsn: str) -> tuple[WalMeter, float]:
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool as lc_tool
    from langgraph.checkpoint.postgres import PostgresSaver
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

    conn = _connect_like_the_docs(dsn)
    meter_box: list[WalMeter] = []

    class MeteredSaver(PostgresSaver):
        def put(self, *args: Any, **kwargs: Any) -> Any:
            return meter_box[0].measure(lambda: super(MeteredSaver, self).put(*args, **kwargs))

        def put_writes(self, *args: Any, **kwargs: Any) -> Any:
            return meter_box[0].measure(
                lambda: super(MeteredSaver, self).put_writes(*args, **kwargs))

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
    meter = WalMeter(dsn)
    meter_box.append(meter)
    started = time.perf_counter()
    for t in turns:
        current.append(t)
        app.invoke({"messages": [HumanMessage(t.user)]}, config)
        meter.end_turn()
    wall = time.perf_counter() - started
    assert len(app.get_state(config).values["messages"]) == 4 * len(turns)
    conn.close()
    meter.close()
    return meter, wall


# --- resume -----------------------------------------------------------------------------


def _build_ours(dsn: str, agents: int, messages: int) -> None:
    from mentra_nb import PostgresStore, Runtime

    async def build() -> None:
        store = PostgresStore(dsn)
        rt = Runtime.empty(store=store, runtime_id="analysis")
        transcript = _messages(messages)
        for i in range(agents):
            agent = rt.spawn(f"agent{i}", "test")
            store.append_messages(agent.id, transcript, token=rt.services.token)
        await rt.aclose()
        store.close()

    asyncio.run(build())


def _resume_ours(dsn: str) -> float:
    from mentra_nb import PostgresStore, Runtime

    async def resume() -> float:
        store = PostgresStore(dsn)  # connecting and checking the schema: outside the timer
        rt = Runtime.empty(store=store, runtime_id="analysis")
        started = time.perf_counter()
        agents = rt.resume()
        for agent in agents:
            assert len(agent.history) == RESUME[1]
        seconds = time.perf_counter() - started
        await rt.aclose()
        store.close()
        return seconds

    return asyncio.run(resume())


def _langgraph_resume(dsn: str, agents: int, messages: int) -> tuple[Any, Any]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    def build_app(conn: Any) -> Any:
        graph = StateGraph(MessagesState)
        graph.add_node("model", lambda state: {"messages": []})
        graph.add_edge(START, "model")
        graph.add_edge("model", END)
        return graph.compile(checkpointer=PostgresSaver(conn))

    def build() -> None:
        conn = _connect_like_the_docs(dsn)
        PostgresSaver(conn).setup()
        app = build_app(conn)
        lc = _lc_messages(_messages(messages))
        for i in range(agents):
            app.update_state({"configurable": {"thread_id": f"agent{i}"}}, {"messages": lc})
        conn.close()

    def resume() -> float:
        conn = _connect_like_the_docs(dsn)
        started = time.perf_counter()
        app = build_app(conn)
        for i in range(agents):
            state = app.get_state({"configurable": {"thread_id": f"agent{i}"}})
            assert len(state.values["messages"]) == messages
        seconds = time.perf_counter() - started
        conn.close()
        return seconds

    return build, resume


# --- the tables ------------------------------------------------------------------------


def run(turns: int = TURNS) -> list[Table]:
    from tests.postgres import PostgresServer, find_binaries

    if find_binaries() is None:
        raise RuntimeError("no Postgres server binaries (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="mentra-bench-pg-"))
    server = PostgresServer.start(folder / "pg")
    try:
        return _run(server, turns)
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _run(server: Any, turns: int) -> list[Table]:
    convo = conversation(turns)
    ours_db, peer_db = server.create_database("ours"), server.create_database("langgraph")
    notes: list[str] = []
    ours, ours_wall = asyncio.run(_ours(convo, ours_db))
    peer: WalMeter | None = None
    try:
        peer, peer_wall = _langgraph(convo, peer_db)
    except ImportError as err:
        notes.append(f"langgraph-checkpoint-postgres is not installed ({err}); "
                     "pip install -e '.[bench]'")
    points = [c for c in CHECKPOINTS if c <= turns]
    size = Table(
        f"Postgres: {turns}-turn conversation with a tool call per turn (one server)",
        ["store", "database size", *(f"WAL bytes, turn {c}" for c in points),
         f"turn {points[-1]} vs ours", *(f"write ms, turn {c}" for c in points),
         f"turn {points[-1]} ms vs ours", f"whole turn ms, mean of {turns}"],
    )
    rows = [("mentra-nb PostgresStore", ours, ours_wall, ours_db)]
    if peer is not None:
        rows.append(("LangGraph PostgresSaver (MessagesState)", peer, peer_wall, peer_db))
    for name, meter, wall, dsn in rows:
        sizes = [meter.window(meter.bytes, c) for c in points]
        times = [meter.window(meter.seconds, c) * 1000 for c in points]
        size.add(name, f"{_database_size(dsn) / 1024:,.0f} KiB", *(f"{b / 1024:,.1f} KiB" for b in sizes),
                 ratio(ours.window(ours.bytes, points[-1]), sizes[-1]), *times,
                 ratio(ours.window(ours.seconds, points[-1]) * 1000, times[-1]),
                 wall / turns * 1000)
    size.notes += [
        "WAL bytes: what the server wrote to its write-ahead log during the turn (all tables "
        "and indexes), mean of the 10 turns ending at that turn",
        "write ms: time inside the store's calls (ours: every Store write; LangGraph: put and "
        "put_writes), mean of the same 10 turns",
        *notes,
    ]
    agents, messages = RESUME
    resume = Table(f"Postgres: resume {agents} agents x {messages:,} messages, every transcript read",
                   ["store", "best of 3, s", "vs ours"])
    ours_resume_db = server.create_database("ours_resume")
    _build_ours(ours_resume_db, agents, messages)
    peer_resume: Any = None
    try:
        build, peer_resume = _langgraph_resume(server.create_database("lg_resume"), agents, messages)
        build()
    except ImportError:
        peer_resume = None
    runs: dict[str, list[float]] = {"ours": [], "peer": []}
    for _ in range(REPEAT):
        gc.collect()
        runs["ours"].append(_resume_ours(ours_resume_db))
        if peer_resume is not None:
            gc.collect()
            runs["peer"].append(peer_resume())
    best_ours = min(runs["ours"])
    resume.add("mentra-nb PostgresStore: Runtime.resume() + histories", best_ours, "1x")
    if runs["peer"]:
        best_peer = min(runs["peer"])
        resume.add("LangGraph PostgresSaver: get_state per thread", best_peer,
                   ratio(best_ours, best_peer))
    return [size, resume]


if __name__ == "__main__":
    for table in run():
        print(table.text(), end="\n\n")
