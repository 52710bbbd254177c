"""`agent.send(prompt, output=Model)`: validated typed answers, retries with the
validation errors, `OutputValidationError`, tools in the same turn, resume and stop."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from mentra_nb import (
    AgentError,
    ConfigError,
    ContentBlockDelta,
    ContentBlockStarted,
    Message,
    MessageStarted,
    OutputValidationError,
    Role,
    Runtime,
    SqliteStore,
    tool,
)
from mentra_nb.runtime import AgentConfig, RunResult
from mentra_nb.testing import controlled_stream, text_stream, tool_use_stream
from tests.conftest import clear_leases, wait_until
from tests.runtimes import scripted_runtime as runtime


class Invoice(BaseModel):
    """An invoice's total."""

    vendor: str
    total: float
    paid: bool = False


GOOD = '{"vendor": "ACME", "total": 12.5}'


async def test_send_with_output_returns_a_validated_instance_and_asks_for_the_schema(db_path):
    rt = runtime(db_path, text_stream(GOOD))
    agent = rt.spawn("w", "anthropic:m")
    invoice = await agent.send("Read the invoice", output=Invoice)
    assert invoice == Invoice(vendor="ACME", total=12.5)
    (request,) = rt.providers.get("anthropic").requests
    assert request.output is not None
    assert request.output.name == "Invoice"
    assert request.output.json_schema == Invoice.model_json_schema()
    assert request.output.description == "An invoice's total."
    assert agent.history == [Message.user("Read the invoice"), Message.assistant(GOOD)]
    await rt.aclose()


async def test_a_plain_send_asks_for_no_schema(db_path):
    rt = runtime(db_path, text_stream("hi"))
    agent = rt.spawn("w", "anthropic:m")
    assert await agent.send("hello") == Message.assistant("hi")
    assert rt.providers.get("anthropic").requests[0].output is None
    await rt.aclose()


async def test_a_model_class_schema_is_built_once_for_many_runs(db_path):
    # A batch job starts a typed run per row; the schema is the same every time.
    built: list[str] = []

    class Counted(BaseModel):
        vendor: str
        total: float

        @classmethod
        def model_json_schema(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
            built.append(cls.__name__)
            return super().model_json_schema(*args, **kwargs)

    rt = runtime(db_path, text_stream(GOOD), text_stream(GOOD), text_stream(GOOD))
    agent = rt.spawn("w", "anthropic:m")
    for _ in range(3):
        assert await agent.send("Read it", output=Counted) == Counted(vendor="ACME", total=12.5)
    assert built == ["Counted"]
    requests = rt.providers.get("anthropic").requests
    assert [r.output.json_schema if r.output else None for r in requests] == [Counted.model_json_schema()] * 3
    await rt.aclose()


@pytest.mark.parametrize("text", [
    f"```json\n{GOOD}\n```",
    f"Sure! Here it is:\n{GOOD}\nAnything else?",
    f"{GOOD}\nHope this helps!",  # prose after the JSON only
])
async def test_json_inside_prose_or_a_fence_is_found(db_path, text):
    rt = runtime(db_path, text_stream(text))
    agent = rt.spawn("w", "anthropic:m")
    assert await agent.send("Read it", output=Invoice) == Invoice(vendor="ACME", total=12.5)
    await rt.aclose()


async def test_a_rejected_answer_goes_back_with_its_errors_until_one_validates(db_path):
    rt = runtime(db_path, text_stream("not json at all"), text_stream('{"vendor": "ACME", "total": "lots"}'),
                 text_stream(GOOD))
    agent = rt.spawn("w", "anthropic:m")
    result = await agent.run("Read the invoice", output=Invoice)
    assert isinstance(result, RunResult)
    assert result.output == Invoice(vendor="ACME", total=12.5)
    assert result.message == Message.assistant(GOOD)
    requests = rt.providers.get("anthropic").requests
    assert len(requests) == 3
    first_feedback, second_feedback = requests[1].messages[-1], requests[2].messages[-1]
    assert first_feedback.role is Role.USER
    assert first_feedback.text.startswith("Your answer is not a valid Invoice (attempt 1 of 3):\n- the answer: ")
    assert "Invalid JSON" in first_feedback.text
    assert second_feedback.text.splitlines()[1] == (
        "- total: Input should be a valid number, unable to parse string as a number")
    # The schema goes along, for a provider that could not show it to the model otherwise.
    assert second_feedback.text.endswith(json.dumps(Invoice.model_json_schema(), separators=(",", ":")))
    # Every attempt and every feedback is a committed, stored message.
    history = agent.history
    assert [m.role for m in history] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.USER,
                                         Role.ASSISTANT]
    assert rt.store.load_agent(agent.id).transcript == history
    assert agent.status.name == "finished"
    await rt.aclose()


async def test_output_validation_error_after_output_retries_from_the_config(db_path):
    rt = runtime(db_path, *(text_stream('{"vendor": 3}') for _ in range(2)))
    agent = rt.spawn("w", "anthropic:m", config=AgentConfig(output_retries=1))
    with pytest.raises(OutputValidationError) as caught:
        await agent.send("Read it", output=Invoice)
    err = caught.value
    assert "answered 2 times without a valid Invoice (output_retries=1)" in str(err)
    assert err.raw == '{"vendor": 3}'
    assert [(e["loc"], e["type"]) for e in err.errors] == [(["vendor"], "string_type"), (["total"], "missing")]
    assert len(rt.providers.get("anthropic").requests) == 2
    # Kept, not rolled back: both attempts and the one feedback between them.
    assert [m.role for m in agent.history] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    assert agent.status.name == "failed" and "without a valid Invoice" in agent.status.error
    assert agent.resumable_turn is None
    await rt.aclose()


async def test_output_retries_zero_fails_at_the_first_bad_answer(db_path):
    rt = runtime(db_path, text_stream("{}"))
    agent = rt.spawn("w", "anthropic:m")
    with pytest.raises(OutputValidationError, match=r"answered 1 times"):
        await agent.send("Read it", output=Invoice, output_retries=0)
    await rt.aclose()


async def test_tools_run_first_and_only_the_final_answer_must_conform(db_path):
    @tool(read_only=True)
    def lookup(vendor: str) -> str:
        """The amount owed to a vendor."""
        return f"{vendor} is owed 12.5"

    rt = runtime(db_path, tool_use_stream("t1", "lookup", '{"vendor": "ACME"}'), text_stream(GOOD),
                 tools=[lookup])
    agent = rt.spawn("w", "anthropic:m")
    assert await agent.send("What do we owe ACME?", output=Invoice) == Invoice(vendor="ACME", total=12.5)
    requests = rt.providers.get("anthropic").requests
    assert all(r.output is not None and r.output.name == "Invoice" for r in requests)
    assert requests[1].messages[-1].tool_results[0].content == "ACME is owed 12.5"
    await rt.aclose()


async def test_output_must_be_a_pydantic_model_class(db_path):
    rt = runtime(db_path)
    agent = rt.spawn("w", "anthropic:m")
    for bad in (dict, Invoice(vendor="x", total=1), "Invoice"):
        with pytest.raises(ConfigError, match="output must be a pydantic model class"):
            await agent.send("x", output=bad)  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match="output_retries must be an integer from 0 to 10"):
        await agent.send("x", output=Invoice, output_retries=-1)
    assert agent.history == []  # nothing was sent or stored
    await rt.aclose()


async def test_the_offline_test_model_answers_typed_turns(db_path):
    class Nested(BaseModel):
        label: str

    class Report(BaseModel):
        title: str
        count: int
        ratio: float | None = None
        parts: list[Nested] = []
        main: Nested

    rt = Runtime.empty(store=SqliteStore(db_path))
    agent = rt.spawn("w", "test")
    report = await agent.send("Summarise", output=Report)
    assert report == Report(title="a", count=0, ratio=None, parts=[], main=Nested(label="a"))
    await rt.aclose()


async def test_a_stopped_typed_turn_has_no_output(db_path):
    script, control = controlled_stream()
    rt = runtime(db_path, script)
    agent = rt.spawn("w", "anthropic:m")
    send = asyncio.create_task(agent.send("Read it", output=Invoice))
    control.send(MessageStarted())
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, '{"vendor": "AC'))
    await wait_until(lambda: agent.snapshot.current_text == '{"vendor": "AC')
    agent.stop(now=True)
    with pytest.raises(AgentError, match="stopped before it gave a valid answer"):
        await send
    assert agent.history[-1].truncated  # what was streamed is kept, as for any stop
    await rt.aclose()


async def test_resume_after_a_crash_mid_attempt_rolls_back_and_validates_again(db_path):
    """The kernel dies while the second attempt streams (its pending text checkpointed):
    as for any half-streamed run, the run is rolled back to its user message. The
    output class is not stored (a Python class cannot be): `resume(output=Invoice)`
    asks again, with its full retries."""
    script, control = controlled_stream()
    first = runtime(db_path, text_stream("no"), script)
    agent = first.spawn("w", "anthropic:m")
    send = asyncio.create_task(agent.send("Read it", output=Invoice))
    await wait_until(lambda: agent.snapshot.history_len == 3)  # attempt 1 and its feedback are stored
    control.send(MessageStarted())
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, '{"ven'))

    def checkpointed() -> bool:
        pending = first.store.load_agent(agent.id).pending_turn
        return pending is not None and pending.current_text == '{"ven'

    await wait_until(checkpointed)
    clear_leases(db_path)  # the kernel dies here

    second = runtime(db_path, text_stream(GOOD))
    resumed = second.resume_agent(agent.id)
    assert resumed.status.name == "interrupted"
    assert resumed.history == []
    assert resumed.resumable_turn == Message.user("Read it")
    assert await resumed.resume(output=Invoice) == Invoice(vendor="ACME", total=12.5)
    request = second.providers.get("anthropic").requests[-1]
    assert request.output is not None and request.messages == [Message.user("Read it")]
    await second.aclose()
    send.cancel()
    await asyncio.gather(send, return_exceptions=True)


async def test_resume_after_a_crash_between_attempts_continues_from_the_feedback(db_path):
    """The kernel dies after a rejected answer and its feedback were committed, before
    the next attempt streamed anything: the attempts are kept, and resuming continues
    from the feedback message."""
    script, _control = controlled_stream()
    first = runtime(db_path, text_stream("no"), script)
    agent = first.spawn("w", "anthropic:m")
    send = asyncio.create_task(agent.send("Read it", output=Invoice))
    await wait_until(lambda: len(first.providers.get("anthropic").requests) == 2)
    clear_leases(db_path)  # the kernel dies here

    second = runtime(db_path, text_stream(GOOD))
    resumed = second.resume_agent(agent.id)
    assert resumed.status.name == "interrupted"
    assert [m.role for m in resumed.history] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert resumed.history[-1].text.startswith("Your answer is not a valid Invoice")
    assert await resumed.resume(output=Invoice) == Invoice(vendor="ACME", total=12.5)
    assert second.providers.get("anthropic").requests[-1].messages == resumed.history[:3]
    await second.aclose()
    send.cancel()
    await asyncio.gather(send, return_exceptions=True)


async def test_resume_without_the_output_type_ends_in_plain_text(db_path):
    script, control = controlled_stream()
    first = runtime(db_path, script)
    agent = first.spawn("w", "anthropic:m")
    send = asyncio.create_task(agent.send("Read it", output=Invoice))
    control.send(MessageStarted())
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, "{"))
    await wait_until(lambda: agent.snapshot.current_text == "{")
    clear_leases(db_path)

    second = runtime(db_path, text_stream("ACME, 12.50"))
    resumed = second.resume_agent(agent.id)
    assert await resumed.resume() == Message.assistant("ACME, 12.50")
    assert second.providers.get("anthropic").requests[-1].output is None
    await second.aclose()
    send.cancel()
    await asyncio.gather(send, return_exceptions=True)
