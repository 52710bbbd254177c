"""4. Resume: open a store holding N agents x M messages and bring them all back.

In process: `Runtime(...).resume()` on a fresh store object (leases, recovery;
transcripts are read lazily), then with every transcript read, vs loading the
same conversations from LangGraph's SqliteSaver (`get_state` per thread) and
the OpenAI Agents SDK's SQLiteSession (`get_items` per session). In a kernel:
the time until `%mentra resume` returns, and until every view it shows has
its transcript's last page.

Grids: 10 → 50 agents and 100 → 1,000 messages. Linear growth is 5x and 10x.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.conversation import conversation
from tests.benchmarks.report import Table, ratio

__all__ = ["run"]

GRID = [(10, 100), (10, 1000), (50, 100), (50, 1000)]
REPEAT = 5


def _messages(count: int) -> list[Any]:
    from mentra_nb.messages import Message, ToolResultBlock, ToolUseBlock

    out: list[Message] = []
    for t in conversation(-(-count // 4)):
        out += [
            Message.user(t.user),
            Message.assistant(ToolUseBlock(id=t.call_id, name="lookup", input=t.tool_input)),
            Message.user(ToolResultBlock(tool_use_id=t.call_id, content=t.tool_result)),
            Message.assistant(t.answer),
        ]
    return out[:count]


def build_ours(db: Path, agents: int, messages: int, runtime_id: str = "analysis") -> None:
    from mentra_nb import Runtime, SqliteStore

    async def build() -> None:
        store = SqliteStore(db)
        rt = Runtime.empty(store=store, runtime_id=runtime_id)
        transcript = _messages(messages)
        for i in range(agents):
            agent = rt.spawn(f"agent{i}", "test")
            store.append_messages(agent.id, transcript, token=rt._leases.token)
        await rt.aclose()
        store.close()

    asyncio.run(build())


class CollectorClock:
    """Seconds the cyclic garbage collector ran while it was started (gc.callbacks)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began = 0.0

    def __enter__(self) -> CollectorClock:
        gc.callbacks.append(self._tick)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._tick)

    def _tick(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began


def _resume_ours(db: Path) -> tuple[float, float, float]:  # (lazy, every transcript read, GC)
    from mentra_nb import Runtime, SqliteStore

    async def resume() -> tuple[float, float, float]:
        store = SqliteStore(db)
        rt = Runtime.empty(store=store, runtime_id="analysis")
        records = rt.list_persisted_agents()
        with CollectorClock() as collector:
            started = time.perf_counter()
            agents = rt.resume()
            resumed = time.perf_counter() - started
            # What the peers' columns do: every transcript in memory.
            lengths = [len(agent.history) for agent in agents]
            loaded = time.perf_counter() - started
        stored = {record.id: record.message_count for record in records}
        assert lengths == [stored[agent.id] for agent in agents] and len(agents) == len(stored)
        await rt.aclose()
        store.close()
        return resumed, loaded, collector.seconds

    return asyncio.run(resume())


def _langgraph(db: Path, agents: int, messages: int) -> tuple[Any, Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    def build_app(conn: sqlite3.Connection) -> Any:
        graph = StateGraph(MessagesState)
        graph.add_node("model", lambda state: {"messages": []})
        graph.add_edge(START, "model")
        graph.add_edge("model", END)
        return graph.compile(checkpointer=SqliteSaver(conn))

    def build() -> None:
        lc: list[Any] = []
        for m in _messages(messages):
            if m.tool_uses:
                lc.append(AIMessage(content="", tool_calls=[
                    {"name": u.name, "args": u.input, "id": u.id} for u in m.tool_uses]))
            elif m.tool_results:
                r = m.tool_results[0]
                lc.append(ToolMessage(content=r.content, tool_call_id=r.tool_use_id))
            elif m.role.value == "user":
                lc.append(HumanMessage(m.text))
            else:
                lc.append(AIMessage(m.text))
        conn = sqlite3.connect(db, check_same_thread=False)
        app = build_app(conn)
        for i in range(agents):
            app.update_state({"configurable": {"thread_id": f"agent{i}"}}, {"messages": lc})
        conn.close()

    def resume() -> float:
        conn = sqlite3.connect(db, check_same_thread=False)
        app = build_app(conn)  # set up outside the timer, as our store and runtime are
        started = time.perf_counter()
        for i in range(agents):
            state = app.get_state({"configurable": {"thread_id": f"agent{i}"}})
            assert len(state.values["messages"]) == messages
        seconds = time.perf_counter() - started
        conn.close()
        return seconds

    return build, resume


def _openai_agents(db: Path, agents: int, messages: int) -> tuple[Any, Any]:
    from agents import SQLiteSession

    def items() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in _messages(messages):
            if m.tool_uses:
                u = m.tool_uses[0]
                out.append({"type": "function_call", "call_id": u.id, "name": u.name,
                            "arguments": str(u.input)})
            elif m.tool_results:
                r = m.tool_results[0]
                out.append({"type": "function_call_output", "call_id": r.tool_use_id, "output": r.content})
            else:
                out.append({"role": m.role.value, "content": m.text})
        return out

    def build() -> None:
        async def go() -> None:
            payload = items()
            for i in range(agents):
                session = SQLiteSession(f"agent{i}", db)
                await session.add_items(payload)
                session.close()

        asyncio.run(go())

    def resume() -> float:
        async def go() -> float:
            # Opened outside the timer, as our store and runtime are.
            sessions = [SQLiteSession(f"agent{i}", db) for i in range(agents)]
            started = time.perf_counter()
            for session in sessions:
                assert len(await session.get_items()) == messages
            seconds = time.perf_counter() - started
            for session in sessions:
                session.close()
            return seconds

        return asyncio.run(go())

    return build, resume


def in_process(folder: Path) -> Table:
    table = Table(
        "Resume in process: every agent back",
        ["agents x messages", "ours, lazy s", "ours, every transcript read s", "of which GC s",
         "µs/message",
         "LangGraph get_state s", "vs ours (transcripts read)", "OpenAI Agents get_items s",
         "vs ours (transcripts read)"],
    )
    ours: dict[tuple[int, int], float] = {}
    sdk: dict[tuple[int, int], float] = {}
    missing: list[str] = []
    for agents, messages in GRID:
        db = folder / f"ours-{agents}-{messages}.sqlite"
        build_ours(db, agents, messages)
        peers: dict[str, Any] = {}
        for name, factory in (("LangGraph", _langgraph), ("OpenAI Agents", _openai_agents)):
            try:
                build, resume = factory(folder / f"{name}-{agents}-{messages}.sqlite", agents, messages)
                build()
                peers[name] = resume
            except ImportError as err:
                missing.append(f"{name}: {err}")
        # Interleaved repeats, best of each: the machine is shared and noisy.
        runs: dict[str, list[float]] = {"lazy": [], "ours": [], "gc": [], **{name: [] for name in peers}}
        for _ in range(REPEAT):
            # Garbage from the previous contender is collected first, so that no
            # one pays for another's heap in a collection mid-measurement.
            gc.collect()
            resumed, loaded, collected = _resume_ours(db)
            runs["lazy"].append(resumed)
            runs["ours"].append(loaded)
            runs["gc"].append(collected)
            for name, resume in peers.items():
                gc.collect()
                runs[name].append(resume())
        best = {name: min(values) for name, values in runs.items()}
        ours[(agents, messages)] = best["ours"]
        if "OpenAI Agents" in best:
            sdk[(agents, messages)] = best["OpenAI Agents"]
        cells: list[str] = []
        for name in ("LangGraph", "OpenAI Agents"):
            cells += ([f"{best[name]:.3f}", ratio(best["ours"], best[name])] if name in best
                      else ["n/a", "n/a"])
        table.add(f"{agents} x {messages:,}", f"{best['lazy']:.3f}", f"{best['ours']:.3f}",
                  f"{best['gc']:.3f}", best["ours"] / (agents * messages) * 1e6, *cells)
    table.notes += [
        f"growth 10 → 50 agents (linear = 5x): {_growth(ours, 'agents')}",
        f"growth 100 → 1,000 messages (linear = 10x): {_growth(ours, 'messages')}",
        "lazy: `rt.resume()`, which takes leases and applies recovery but reads a transcript only "
        "when first needed (an agent cut mid-run is read at once); growth is of the transcripts-read "
        "column",
        f"best of {REPEAT} interleaved runs; a fresh store object each time; the OS file cache is warm; "
        "each store, runtime, saver and session is opened before its timer starts",
        "of which GC: time the cyclic garbage collector ran inside our timer (it is paused while "
        "a transcript is decoded, whose objects then go to the oldest generation without a walk)",
        _target(ours, sdk),
        "what each returns: ours, validated frozen pydantic `Message`s with typed blocks (about six "
        "objects per message the collector tracks); get_items, the dicts `json.loads` makes of each "
        "row, unvalidated (dicts of strings, which the collector does not track); LangGraph, "
        "LangChain message objects",
        *(f"not measured: {m}" for m in sorted(set(missing))),
    ]
    return table


def _target(ours: dict[tuple[int, int], float], sdk: dict[tuple[int, int], float]) -> str:
    target = "target: ours ≤ 1.00x the OpenAI Agents SDK's get_items at 50 x 1,000"
    if (50, 1000) not in sdk:
        return f"{target}: not measured"
    mine = ours[(50, 1000)] / sdk[(50, 1000)]
    return f"{target}: {mine:.2f}x ({'met' if mine <= 1.0 else 'NOT met'}; the columns above are its inverse)"


def _growth(times: dict[tuple[int, int], float], axis: str) -> str:
    if axis == "agents":
        pairs = [(times[(10, m)], times[(50, m)], f"{m:,} messages") for m in (100, 1000)]
    else:
        pairs = [(times[(a, 100)], times[(a, 1000)], f"{a} agents") for a in (10, 50)]
    return ", ".join(f"{big / small:.1f}x at {label}" for small, big, label in pairs)


KERNEL_REPEAT = 3


def in_kernel(folder: Path) -> Table:
    import compileall
    import shutil

    from tests.kernels import Kernel

    # Installed packages carry bytecode (pip compiles on install); a source checkout
    # under PYTHONDONTWRITEBYTECODE would time the compiler (as in bench_import).
    compileall.compile_dir(Path(__file__).resolve().parents[2] / "mentra_nb", quiet=1)
    table = Table(
        "Resume in a kernel: until `%mentra resume` returns, and until every view has its transcript",
        ["agents x messages", "%load_ext wall s", "%mentra resume returned, wall s",
         "every view's transcript, wall s", "kernel CPU s", "µs/message", "vs 10 x 100",
         "every run's transcript wall s (load average, 1 min)"],
    )
    times: dict[tuple[int, int], float] = {}
    for agents, messages in GRID:
        case = folder / f"kernel-{agents}-{messages}"
        case.mkdir()
        build_ours(case / "built.sqlite", agents, messages)
        runs: list[tuple[float, float, float, float]] = []
        loads: list[float] = []
        for _ in range(KERNEL_REPEAT):
            # A fresh copy each time: the first resume takes the agents' leases.
            shutil.copy(case / "built.sqlite", case / "analysis.mentra.sqlite")
            kernel = Kernel(case)
            try:
                runs.append(_resume_in(kernel, agents))
                loads.append(os.getloadavg()[0])
            finally:
                kernel.close()
            for stale in case.glob("analysis.mentra.sqlite*"):
                stale.unlink()
            shutil.rmtree(case / ".mentra", ignore_errors=True)
        loaded, returned, ready, cpu = min(runs, key=lambda r: r[2])
        times[(agents, messages)] = ready
        table.add(f"{agents} x {messages:,}", loaded, returned, ready, cpu, ready / (agents * messages) * 1e6,
                  ratio(times[GRID[0]], ready),
                  ", ".join(f"{run[2]:.2f} ({load:.1f})" for run, load in zip(runs, loads, strict=True)))
    table.notes += [
        f"growth 10 → 50 agents (linear = 5x): {_growth(times, 'agents')}",
        f"growth 100 → 1,000 messages (linear = 10x): {_growth(times, 'messages')}",
        "returns: the cell's `idle` on iopub; every view's transcript: the last view's first page "
        "of messages (its `items` message) on iopub, or the return if later; a view is usable then",
        "kernel CPU: user + system time of the kernel's process (all its threads) until then, "
        "which another process's load on this shared machine changes less than the wall time",
        f"best of {KERNEL_REPEAT} kernels each (by the transcript column); through jupyter_client like a "
        "notebook server; mentra_nb's bytecode is compiled first, as pip does on install",
        "wall: time.perf_counter() in this process, from sending the request to the message on "
        "iopub; on 2 cores shared with other work it follows the load average (last column)",
        "target: every view's transcript (wall) at 50 x 1,000 ≤ 0.5 s on an idle machine",
    ]
    return table


def _resume_in(kernel: Any, agents: int) -> tuple[float, float, float, float]:
    """(%load_ext s, until `%mentra resume` returned s, until every view had its
    transcript s, the kernel process's CPU s meanwhile)."""
    import psutil

    started = time.perf_counter()
    kernel.run("%load_ext mentra_nb")
    loaded = time.perf_counter() - started
    client = kernel.client
    process = psutil.Process(kernel.manager.provisioner.pid)
    cpu = process.cpu_times()
    started = time.perf_counter()
    msg_id = client.execute("%mentra resume")
    returned: float | None = None
    greeted: dict[str, float] = {}  # comm id -> when its first page arrived
    resumed = 0
    while returned is None or len(greeted) < agents:
        message = client.get_iopub_msg(timeout=600)
        kind, content = message["msg_type"], message["content"]
        now = time.perf_counter() - started
        if kind == "stream" and message["parent_header"].get("msg_id") == msg_id:
            resumed += content["text"].count("mentra: resumed")
        elif kind == "error":
            raise AssertionError(f"%mentra resume failed: {content['ename']}: {content['evalue']}")
        elif kind == "status" and content["execution_state"] == "idle" and \
                message["parent_header"].get("msg_id") == msg_id:
            returned = now
        elif kind == "comm_msg" and content["data"].get("method") == "custom":
            custom = content["data"]["content"]
            if custom.get("kind") == "items" and custom.get("start") == 0:
                greeted.setdefault(content["comm_id"], now)
    used = process.cpu_times()
    client.get_shell_msg(timeout=60)
    assert resumed == agents, f"resumed {resumed} of {agents}"
    return (loaded, returned, max(returned, *greeted.values()),
            used.user + used.system - cpu.user - cpu.system)


def run() -> list[Table]:
    with tempfile.TemporaryDirectory(prefix="mentra-bench-") as tmp:
        folder = Path(tmp)
        return [in_process(folder), in_kernel(folder)]


if __name__ == "__main__":
    for table in run():
        print(table.text(), end="\n\n")
