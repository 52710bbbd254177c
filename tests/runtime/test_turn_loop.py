"""The turn loop: statuses, streaming, tools, errors, cancellation and stops."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time

import pytest

from mentra_nb import (
    AgentBusy,
    AgentConfig,
    AgentExists,
    AgentStatus,
    ConfigError,
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MaxRoundsExceeded,
    Message,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    Runtime,
    SqliteStore,
    StreamError,
    ToolContext,
    TransientProviderError,
    UnknownProvider,
    Usage,
    tool,
)
from mentra_nb.runtime import STOPPED_TOOL_RESULT, _turn_loop
from mentra_nb.runtime._turn_loop import FIRST_CHECKPOINT
from mentra_nb.testing import (
    ScriptedProvider,
    controlled_stream,
    error_stream,
    ok_stream,
    text_stream,
    tool_use_stream,
)
from tests.conftest import WAIT_LIMIT, wait_until


@pytest.fixture
async def make(db_path):
    """make(scripts, tools=..., config=...) -> (agent, provider), on a real SQLite file."""
    runtimes: list[Runtime] = []

    def build(scripts=(), *, tools=(), config=None, name="writer"):
        provider = ScriptedProvider("anthropic", list(scripts))
        rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider], tools=tools,
                           runtime_id=f"rt{len(runtimes)}")
        runtimes.append(rt)
        return rt.spawn(name, "anthropic:model", config=config), provider

    yield build
    for rt in runtimes:
        await rt.aclose()


async def collect(agent):
    seen = []

    async def consume():
        async for snapshot in agent.watch():
            seen.append(snapshot)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    return seen, task


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


async def test_observers_see_every_status_and_the_text_grow_then_clear(make):
    agent, _ = make([tool_use_stream("t1", "lookup", '{"key": "a"}'), text_stream("All done here", chunks=3)],
                    tools=[lookup])
    seen, task = await collect(agent)
    reply = await agent.send("go")
    await asyncio.sleep(0)
    task.cancel()
    statuses = []
    for s in seen:
        if not statuses or statuses[-1] != str(s.status):
            statuses.append(str(s.status))
    assert statuses == ["idle", "awaiting_model", "streaming", "executing_tool(lookup)",
                        "awaiting_model", "streaming", "finished"]
    texts = []
    for s in seen:
        if s.current_text and (not texts or texts[-1] != s.current_text):
            texts.append(s.current_text)
    assert texts == ["All d", "All done h", "All done here"]
    assert seen[-1].current_text == ""
    assert seen[-1].history_len == 4
    assert reply.text == "All done here"


async def test_the_status_is_streaming_from_the_request_on_not_from_the_first_token(make):
    script, control = controlled_stream()
    agent, provider = make([script])
    sending = asyncio.create_task(agent.send("hi"))
    # The model was asked and has not answered yet: a slow first token shows as streaming.
    await wait_until(lambda: provider.requests and agent.status == AgentStatus.streaming())
    assert agent.snapshot.current_text == ""
    control.send(MessageStarted(id="m", model="model"))
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, "hello"))
    control.send(ContentBlockStopped(index=0))
    control.send(MessageDelta(stop_reason="end_turn", usage=Usage(input_tokens=1, output_tokens=1)))
    control.send(MessageStopped())
    assert (await sending).text == "hello"


async def test_pending_tool_uses_show_partial_input_while_streaming(make):
    script, control = controlled_stream()
    agent, _ = make([script, text_stream("ok")], tools=[lookup])
    send = asyncio.create_task(agent.send("go"))
    control.send(MessageStarted())
    control.send(ContentBlockStarted.tool_use(0, "t1", "lookup"))
    control.send(ContentBlockDelta.tool_input_json(0, '{"key": "a'))
    await wait_until(lambda: agent.snapshot.pending_tool_uses)
    await wait_until(lambda: agent.snapshot.pending_tool_uses[0].input_json == '{"key": "a')
    assert agent.snapshot.pending_tool_uses[0].name == "lookup"
    for event in (ContentBlockDelta.tool_input_json(0, '"}'), ContentBlockStopped(index=0),
                  MessageDelta(stop_reason="tool_use"), MessageStopped()):
        control.send(event)
    await send
    assert agent.snapshot.pending_tool_uses == []
    assert agent.history[2].tool_results[0].content == "value-of-a"


async def test_read_only_tools_run_together_and_results_keep_call_order(make):
    barrier = asyncio.Barrier(2)

    @tool(read_only=True)
    async def slow(x: int) -> str:
        """Waits for its sibling, then sleeps."""
        await asyncio.wait_for(barrier.wait(), WAIT_LIMIT)  # deadlocks unless both run at once
        await asyncio.sleep(0.05)
        return "slow"

    @tool(read_only=True)
    async def fast(x: int) -> str:
        """Waits for its sibling."""
        await asyncio.wait_for(barrier.wait(), WAIT_LIMIT)
        return "fast"

    agent, provider = make(
        [tool_use_stream("a", "slow", '{"x": 1}', calls=[("b", "fast", '{"x": 2}')]), text_stream("ok")],
        tools=[slow, fast],
    )
    await agent.send("go")
    results = agent.history[2].tool_results
    assert [(r.tool_use_id, r.content, r.is_error) for r in results] == [("a", "slow", False), ("b", "fast", False)]


async def test_mutating_tools_run_one_at_a_time_in_call_order(make):
    active, peak, order = [0], [0], []

    @tool
    async def write(name: str) -> str:
        """Writes something."""
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        order.append(name)
        await asyncio.sleep(0.02)
        active[0] -= 1
        return f"wrote {name}"

    calls = [("b", "write", '{"name": "second"}'), ("c", "write", '{"name": "third"}')]
    agent, _ = make([tool_use_stream("a", "write", '{"name": "first"}', calls=calls), text_stream("ok")],
                    tools=[write])
    await agent.send("go")
    assert peak[0] == 1
    assert order == ["first", "second", "third"]


async def test_malformed_tool_json_goes_back_to_the_model_as_an_error(make):
    agent, provider = make([tool_use_stream("t1", "lookup", '{"key": "a"'), text_stream("sorry")], tools=[lookup])
    reply = await agent.send("go")
    assert reply.text == "sorry"
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.is_error
    assert "not valid JSON" in result.content and "Call it again" in result.content


async def test_an_unknown_tool_goes_back_to_the_model_naming_the_real_ones(make):
    agent, provider = make([tool_use_stream("t1", "lookpu", "{}"), text_stream("ok")], tools=[lookup])
    await agent.send("go")
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.is_error and result.content == "unknown tool 'lookpu'; the available tools are: lookup"


async def test_invalid_tool_input_is_an_error_result_naming_the_field(make):
    agent, provider = make([tool_use_stream("t1", "lookup", '{"kee": 1}'), text_stream("ok")], tools=[lookup])
    await agent.send("go")
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.is_error
    assert "invalid input for tool 'lookup'" in result.content and "key" in result.content


async def test_a_tool_exception_becomes_an_error_result(make):
    @tool
    def explode(reason: str) -> str:
        """Always fails."""
        raise ValueError(f"cannot do {reason}")

    agent, provider = make([tool_use_stream("t1", "explode", '{"reason": "that"}'), text_stream("ok")],
                           tools=[explode])
    await agent.send("go")
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.is_error and result.content == "tool 'explode' failed: ValueError: cannot do that"
    assert agent.snapshot.status == AgentStatus.finished()


async def test_a_tool_that_outlives_its_timeout_is_stopped(make):
    @tool(timeout=0.05)
    async def hang() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return ""

    agent, provider = make([tool_use_stream("t1", "hang", "{}"), text_stream("ok")], tools=[hang])
    await agent.send("go")
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.is_error and result.content == "tool 'hang' timed out after 0.05 s and was stopped"


async def test_tools_receive_their_context_and_can_report_progress(make):
    @tool
    async def work(steps: int, ctx: ToolContext) -> str:
        """Works in steps."""
        for i in range(steps):
            ctx.report_progress(f"step {i + 1}/{steps}")
        return f"{ctx.agent_name} did {steps} steps"

    agent, _ = make([tool_use_stream("t1", "work", '{"steps": 2}'), text_stream("ok")], tools=[work])
    events = []
    agent.on_event(events.append)
    await agent.send("go")
    assert [e.message for e in events if e.type == "tool_execution_progress"] == ["step 1/2", "step 2/2"]
    assert agent.history[2].tool_results[0].content == "writer did 2 steps"


async def test_sync_tools_run_off_the_event_loop(make):
    loop_thread = threading.get_ident()
    ran_in = []

    @tool
    def blocking(x: int) -> int:
        """A synchronous tool."""
        ran_in.append(threading.get_ident())
        return x * 2

    agent, _ = make([tool_use_stream("t1", "blocking", '{"x": 21}'), text_stream("ok")], tools=[blocking])
    await agent.send("go")
    assert agent.history[2].tool_results[0].content == "42"
    assert ran_in and ran_in[0] != loop_thread


async def test_max_rounds_keeps_the_work_and_fails_clearly(make):
    scripts = [tool_use_stream(f"t{i}", "lookup", '{"key": "a"}') for i in range(2)]
    agent, _ = make(scripts, tools=[lookup], config=AgentConfig(max_rounds=2))
    with pytest.raises(MaxRoundsExceeded, match="made 2 model calls without a final answer"):
        await agent.send("go")
    assert len(agent.history) == 5  # user, (tool call, result) x 2
    assert agent.snapshot.status.name == "failed"
    stored = agent.runtime.store.load_agent(agent.id)
    assert stored.run is None and len(stored.transcript) == 5


async def test_a_provider_error_mid_stream_rolls_the_run_back(make):
    broken = error_stream([MessageStarted(), ContentBlockStarted.text(0), ContentBlockDelta.text(0, "Hal")],
                          TransientProviderError("connection reset by peer"))
    agent, _ = make([text_stream("first answer"), broken])
    await agent.send("first")
    events = []
    agent.on_event(events.append)
    with pytest.raises(TransientProviderError):
        await agent.send("second")
    assert agent.history == [Message.user("first"), Message.assistant("first answer")]
    assert agent.resumable_turn == Message.user("second")
    assert agent.snapshot.status == AgentStatus.failed("connection reset by peer")
    assert agent.snapshot.current_text == ""
    assert [e for e in events if e.type == "run_failed"][0].rolled_back
    stored = agent.runtime.store.load_agent(agent.id)
    assert stored.transcript == agent.history and stored.run is None and stored.pending_turn is None


async def test_a_stream_that_ends_without_its_final_event_is_an_error(make):
    cut = ok_stream([MessageStarted(), ContentBlockStarted.text(0), ContentBlockDelta.text(0, "Hal")])
    agent, _ = make([cut])
    with pytest.raises(StreamError, match="ended before its final event"):
        await agent.send("go")
    assert agent.history == []


def _reply(*blocks):
    return ok_stream([MessageStarted(), *blocks, MessageDelta(stop_reason="end_turn"), MessageStopped()])


@pytest.mark.parametrize(("events", "problem"), [
    ([ContentBlockDelta.text(0, "orphan")], "content block 0, never started"),
    ([ContentBlockStarted.text(0), ContentBlockDelta.text(0, "ok"), ContentBlockDelta.text(1, "orphan")],
     "content block 1, never started"),
    ([ContentBlockStarted.tool_use(0, "t1", "grep"), ContentBlockDelta.text(0, "text into a call")],
     "a text delta to a tool_use block"),
    ([ContentBlockStarted.text(0), ContentBlockDelta.text(0, "words"), ContentBlockDelta.thinking(0, "thought")],
     "a thinking delta to a text block"),
])
async def test_a_malformed_stream_fails_the_run_and_rolls_it_back(make, events, problem):
    agent, _ = make([_reply(*events)])
    with pytest.raises(StreamError, match=problem):
        await agent.send("go")
    assert agent.history == [] and agent.resumable_turn == Message.user("go")
    assert agent.snapshot.current_text == ""


async def test_interleaved_text_and_thinking_blocks_land_in_their_own_blocks(make):
    agent, _ = make([_reply(
        ContentBlockStarted.thinking(0), ContentBlockStarted.text(1),
        ContentBlockDelta.thinking(0, "Let me "), ContentBlockDelta.text(1, "The "),
        ContentBlockDelta.thinking(0, "think."), ContentBlockDelta.signature(0, "sig"),
        ContentBlockDelta.thinking(0, ".."), ContentBlockDelta.text(1, "answer."),
        ContentBlockStopped(index=0), ContentBlockStopped(index=1),
    )])
    reply = await agent.send("go")
    thinking, text = reply.content
    assert (thinking.type, thinking.thinking, thinking.signature) == ("thinking", "Let me think...", "sig")
    assert (text.type, text.text) == ("text", "The answer.")


async def test_cancel_rolls_the_run_back_and_keeps_the_message_resumable(make):
    script, control = controlled_stream()
    agent, _ = make([text_stream("before"), script, text_stream("replayed")])
    await agent.send("one")
    send = asyncio.create_task(agent.send("two"))
    control.send(MessageStarted())
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, "partial"))
    await wait_until(lambda: agent.snapshot.current_text == "partial")
    agent.cancel()
    with pytest.raises(asyncio.CancelledError):
        await send
    assert agent.history == [Message.user("one"), Message.assistant("before")]
    assert agent.snapshot.status == AgentStatus.idle()
    assert agent.runtime.store.load_agent(agent.id).transcript == agent.history
    assert (await agent.resume()).text == "replayed"


async def test_stop_ends_at_the_next_round_boundary_keeping_the_transcript(make):
    release = asyncio.Event()

    @tool
    async def step() -> str:
        """One step of work."""
        await release.wait()
        return "stepped"

    agent, provider = make([tool_use_stream("t1", "step", "{}"), text_stream("never asked")], tools=[step])
    send = asyncio.create_task(agent.send("go"))
    await wait_until(lambda: agent.snapshot.status.name == "executing_tool")
    agent.stop()
    release.set()
    last = await send
    assert last.tool_uses[0].id == "t1"
    assert len(provider.requests) == 1  # no further model call
    assert len(agent.history) == 3 and agent.history[2].tool_results[0].content == "stepped"
    assert agent.snapshot.status == AgentStatus.finished()


async def streaming_essay(make, text):
    """An agent streaming `text`, its reply not ended: the agent, its provider, the send."""
    script, control = controlled_stream()
    agent, provider = make([script])
    send = asyncio.create_task(agent.send("write a long essay"))
    control.send(MessageStarted(id="m1", model="model"))
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, text))
    await wait_until(lambda: agent.snapshot.current_text == text)
    return agent, provider, send


async def test_stop_now_ends_a_long_stream_at_once_keeping_its_text_as_a_truncated_reply(make, db_path):
    agent, provider, send = await streaming_essay(make, "The first paragraph, and then")
    assert agent.stopping is None
    agent.stop(now=True)
    assert agent.stopping == "now"
    reply = await send  # the stream never ended on its own: Stop ended it
    assert reply.truncated and reply.text == "The first paragraph, and then"
    assert agent.status == AgentStatus.finished() and agent.stopping is None
    assert [m.text for m in agent.history] == ["write a long essay", "The first paragraph, and then"]
    assert agent.snapshot.current_text == "" and agent.snapshot.pending_tool_uses == []
    # Committed for good, marked in the store too.
    store = SqliteStore(db_path)
    stored = store.load_messages(agent.id)
    store.close()
    assert stored[-1].truncated and stored[-1].text == "The first paragraph, and then"
    assert not stored[0].truncated
    # And the agent takes the next message as usual.
    provider.add(text_stream("ok"))
    assert (await agent.send("shorter please")).text == "ok"


async def test_stop_now_can_keep_only_what_a_reader_was_shown(make):
    """A view's Stop passes how much of the reply its reader saw: the text that
    streamed while the click travelled to the kernel is not kept (issue 32)."""
    agent, _, send = await streaming_essay(make, "Shown to the reader. Streamed after the click")
    agent.stop(now=True, keep_text=len("Shown to the reader."))
    reply = await send
    assert reply.truncated and reply.text == "Shown to the reader."
    assert [m.text for m in agent.history] == ["write a long essay", "Shown to the reader."]


async def test_stop_now_while_a_tool_runs_answers_the_call_stopped_and_keeps_earlier_work(make):
    @tool
    async def slow() -> str:
        """Takes forever."""
        await asyncio.Event().wait()
        return ""

    agent, provider = make([tool_use_stream("t1", "slow", "{}"), text_stream("never asked")], tools=[slow])
    send = asyncio.create_task(agent.send("go"))
    await wait_until(lambda: agent.snapshot.status.name == "executing_tool")
    agent.stop(now=True)
    last = await send
    assert last.tool_uses[0].id == "t1" and len(provider.requests) == 1
    result = agent.history[-1].tool_results[0]
    assert result.is_error and result.content == STOPPED_TOOL_RESULT
    assert agent.status == AgentStatus.finished()


async def test_stop_now_before_any_text_rolls_back_like_an_interrupt(make):
    script, _control = controlled_stream()
    agent, _ = make([script])
    send = asyncio.create_task(agent.send("hello"))
    await wait_until(lambda: agent.is_running)
    agent.stop(now=True)
    with pytest.raises(asyncio.CancelledError):
        await send
    assert agent.history == [] and agent.resumable_turn is not None


async def test_finish_round_reports_stopping_round_until_the_run_ends(make):
    script, control = controlled_stream()
    agent, _ = make([script])
    send = asyncio.create_task(agent.send("hello"))
    await wait_until(lambda: agent.is_running)
    agent.stop()
    assert agent.stopping == "round"
    for event in text_stream("done").events:
        control.send(event)
    control.close()
    assert (await send).text == "done" and not (await send).truncated
    assert agent.stopping is None


async def test_a_second_send_while_running_is_refused(make):
    script, control = controlled_stream()
    agent, _ = make([script])
    send = asyncio.create_task(agent.send("one"))
    await wait_until(lambda: agent.is_running)
    with pytest.raises(AgentBusy, match="still running"):
        await agent.send("two")
    control.fail(TransientProviderError("gone"))
    with pytest.raises(TransientProviderError):
        await send


async def test_events_tell_the_story_of_a_run(make):
    agent, _ = make([tool_use_stream("t1", "lookup", '{"key": "a"}'), text_stream("done")], tools=[lookup])
    events = []
    agent.on_event(events.append)
    await agent.send("go")
    assert [e.type for e in events] == [
        "run_started", "tool_use_updated", "tool_use_ready", "assistant_message_committed",
        "usage_reported", "tool_execution_started", "tool_execution_finished",
        "tool_results_committed", "text_delta", "assistant_message_committed", "usage_reported",
        "run_finished",
    ]
    assert all(e.run_generation == 1 and e.agent_id == agent.id for e in events)


async def test_usage_adds_up_across_messages_and_is_persisted(make):
    agent, _ = make([tool_use_stream("t1", "lookup", '{"key": "a"}'),
                     text_stream("done", usage=Usage(input_tokens=100, output_tokens=7))], tools=[lookup])
    await agent.send("go")
    assert agent.usage == Usage(input_tokens=110, output_tokens=12)
    assert agent.runtime.store.load_agent(agent.id).record.usage == agent.usage


async def test_the_pending_turn_is_checkpointed_after_a_second_then_at_doubling_intervals(make, db_path,
                                                                                    monkeypatch):
    script, control = controlled_stream()
    agent, _ = make([script])
    writes: list[tuple[float, str]] = []
    store = agent.runtime.store
    original = store.checkpoint_pending

    def counting(agent_id, pending, *, token):
        writes.append((time.monotonic(), pending.current_text))
        original(agent_id, pending, token=token)

    store.checkpoint_pending = counting
    # When each timer fired: the next one is due an interval after that moment (the
    # write itself may take a while on a loaded machine, so store calls are not the clock).
    fired: list[float] = []
    write = _turn_loop._PendingCheckpoint.write

    def timed_write(self):
        fired.append(time.monotonic())
        write(self)

    monkeypatch.setattr(_turn_loop._PendingCheckpoint, "write", timed_write)
    send = asyncio.create_task(agent.send("go"))
    started = time.monotonic()
    control.send(MessageStarted())
    control.send(ContentBlockStarted.text(0))
    for _ in range(200):
        control.send(ContentBlockDelta.text(0, "x"))
    # A timer writes the checkpoint, so the last delta before a pause is stored too.
    await wait_until(lambda: writes and writes[-1][1] == "x" * 200)
    assert SqliteStore(db_path).load_agent(agent.id).pending_turn.current_text == "x" * 200
    control.send(ContentBlockDelta.text(0, "y"))
    await wait_until(lambda: writes[-1][1].endswith("y"))
    control.send(ContentBlockStopped(index=0))
    control.send(MessageStopped())
    await send
    times = [started, *fired]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    # Never sooner than due (timers do not fire early): 1 s, then 2 s, 4 s, ...
    assert all(gap >= FIRST_CHECKPOINT * 2**i - 0.01 for i, gap in enumerate(gaps)), gaps
    assert SqliteStore(db_path).load_agent(agent.id).pending_turn is None


async def test_a_reply_that_streams_within_a_second_writes_no_checkpoint(make, db_path):
    agent, _ = make([tool_use_stream("t1", "lookup", '{"key": "a"}'), text_stream("done " * 50)],
                    tools=[lookup])
    calls: list[str] = []
    store = agent.runtime.store
    original = store.checkpoint_pending

    def counting(agent_id, pending, *, token):
        calls.append(pending.current_text)
        original(agent_id, pending, token=token)

    store.checkpoint_pending = counting
    await agent.send("go")
    # A scripted stream never yields to the event loop, so no timer can fire mid-reply.
    assert calls == []


async def test_the_request_carries_the_config_and_only_allowed_tools(make):
    @tool
    def secret_tool() -> str:
        """Hidden from this agent."""
        return ""

    config = AgentConfig(system="Be brief.", temperature=0.2, max_output_tokens=300, hidden_tools=["secret_tool"])
    agent, provider = make([text_stream("ok")], tools=[lookup, secret_tool], config=config)
    await agent.send("go")
    request = provider.requests[0]
    assert (request.system, request.temperature, request.max_output_tokens) == ("Be brief.", 0.2, 300)
    assert [t.name for t in request.tools] == ["lookup"]
    assert request.model == "model"


async def test_spawn_rejects_bad_names_unknown_providers_and_duplicates(make):
    agent, _ = make()
    rt = agent.runtime
    with pytest.raises(ConfigError, match="name 'has space' is not allowed"):
        rt.spawn("has space", "anthropic:model")
    with pytest.raises(UnknownProvider, match="unknown provider 'antropic'; did you mean 'anthropic'"):
        rt.spawn("other", "antropic:model")
    with pytest.raises(AgentExists, match="already exists"):
        rt.spawn("writer", "anthropic:model")
    assert [a.name for a in rt.agents] == ["writer"]


async def test_extensions_add_tools_round_messages_and_snapshot_fields(db_path):
    from mentra_nb import AgentExtension, RuntimeExtension

    outcomes = []

    @tool(read_only=True)
    def ping() -> str:
        """Ping."""
        return "pong"

    class Inbox(AgentExtension):
        def __init__(self):
            self.mail = ["note from alice"]

        def tools(self):
            return [ping]

        async def before_round(self):
            delivered, self.mail = self.mail, []
            return [Message.user(f"<inbox>{m}</inbox>") for m in delivered]

        async def after_run(self, succeeded):
            outcomes.append(succeeded)

        def snapshot_fields(self):
            return {"pending_team_messages": len(self.mail)}

    class Installer(RuntimeExtension):
        def attach(self, agent):
            return Inbox() if agent.name == "lead" else None

    provider = ScriptedProvider("anthropic", [tool_use_stream("t1", "ping", "{}"), text_stream("ok")])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider], extensions=[Installer()])
    lead = rt.spawn("lead", "anthropic:model")
    other = rt.spawn("other", "anthropic:model")
    assert lead.snapshot.pending_team_messages == 1
    assert [t.spec.name for t in lead.tools()] == ["ping"] and other.tools() == []
    await lead.send("go")
    first = provider.requests[0].messages
    assert [m.text for m in first] == ["go", "<inbox>note from alice</inbox>"]
    assert [t.name for t in provider.requests[0].tools] == ["ping"]
    assert lead.snapshot.pending_team_messages == 0
    assert outcomes == [True]
    assert rt.store.load_agent(lead.id).transcript[1].text == "<inbox>note from alice</inbox>"
    await rt.aclose()
