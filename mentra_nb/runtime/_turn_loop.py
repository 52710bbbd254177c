"""One run of the turn loop: stream → assemble → commit → run tools → next round.

Every committed step is one store transaction, written before memory changes,
so what observers see is what a crash would leave behind. The half-streamed
message is checkpointed a second after its stream began and then at doubling
intervals, never per token. A provider error or a hard cancel rolls the run back to where it began,
keeping its user message for `agent.resume()`; a stop "now" (`agent.stop(now=True)`)
cancels too, but keeps what was streamed as a committed message marked
`truncated` (and the work of earlier rounds) and ends the run as finished; hitting `max_rounds` keeps the
work done and fails with `MaxRoundsExceeded`, and so does any `RunHalted` an
extension raises before a round (a limit it keeps). A run asked for a typed answer validates its final answer;
one that fails goes back to the model with the errors as a user message, and
after `output_retries` of them the run fails with `OutputValidationError`,
every attempt kept. Each call's usage is priced here, once, when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from mentra_nb import pricing
from mentra_nb._utf8 import valid_utf8
from mentra_nb.errors import (
    LeaseLost,
    MaxRoundsExceeded,
    MentraError,
    OutputValidationError,
    RunHalted,
)
from mentra_nb.messages import (
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from mentra_nb.providers.base import ProviderRequest, takes_tool_result_images
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageStarted,
    RetryAttempt,
)
from mentra_nb.runtime._approvals import Approvals, denial_result, load_approval_state
from mentra_nb.runtime._assembly import MAX_TOOL_INPUT_DEPTH, MessageAssembler, json_depth
from mentra_nb.runtime._extensions import AgentExtension
from mentra_nb.runtime._output import OutputSpec, RejectedAnswer, describe_errors
from mentra_nb.runtime._recovery import recovered_run
from mentra_nb.runtime._redaction import known_secrets, scrub, scrub_message
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime._tracing import RunTrace, run_trace
from mentra_nb.runtime.events import (
    ReasoningDelta,
    RetryAttempted,
    RunCancelled,
    RunFailed,
    RunFinished,
    TextDelta,
    ToolExecutionFinished,
    ToolExecutionStarted,
    ToolUseReady,
    ToolUseUpdated,
)
from mentra_nb.runtime.tools import Tool, ToolContext, ToolInputError, ToolOutput
from mentra_nb.status import AgentStatus

__all__ = ["FIRST_CHECKPOINT", "MAX_CHECKPOINT_INTERVAL", "STOPPED_TOOL_RESULT", "StopKind", "TurnLoop"]

log = logging.getLogger("mentra_nb.runtime")

# The half-streamed reply is checkpointed this long after its stream began, then
# at doubling intervals up to the maximum (see _PendingCheckpoint for why).
FIRST_CHECKPOINT = 1.0  # seconds
MAX_CHECKPOINT_INTERVAL = 30.0  # seconds
STOPPED_TOOL_RESULT = "stopped: the user stopped the run before this tool finished"
"""The result of a tool call cancelled by `agent.stop(now=True)`."""

# How a user asked a run to stop: "now" (end the stream or tool at once, keep what
# was streamed) or "round" (finish the current round first).
StopKind = Literal["now", "round"]
"""How a run is being stopped: `now` (end the reply where it is) or `round` (after this round)."""


class TurnLoop:
    """One run of one agent. The agent creates it (`agent.send`, `agent.resume`);
    it changes the agent only through `agent.state`'s named operations."""

    def __init__(self, agent: AgentHandle, opening: Sequence[Message], *, approvals: Approvals,
                 extensions: Sequence[AgentExtension], tools: Callable[[], list[Tool]],
                 stop_requested: Callable[[], StopKind | None],
                 stop_keeps_text: Callable[[], int | None] = lambda: None,
                 output: OutputSpec[Any] | None = None, output_retries: int = 2) -> None:
        self.agent = agent
        self.state = agent.state
        self.opening = list(opening)
        self.approvals = approvals
        self.extensions = extensions
        self.tools = tools  # asked each round: an extension may offer more tools mid-run
        self.stop_requested = stop_requested
        self.stop_keeps_text = stop_keeps_text  # Stop's cut of the streamed reply (None: all of it)
        self.output = output
        self.output_retries = output_retries
        self.output_value: Any = None  # the validated answer, when `output` asked for one
        self._rejected = 0  # answers that failed validation in this run
        self.generation = self.state.run_generation + 1
        self._checkpoint: _PendingCheckpoint | None = None
        self._usage = Usage()  # the last model call's, priced
        self._run_usage = Usage()  # this run's calls, for its trace
        self._stop_reason: str | None = None
        self._response: tuple[str, str] = ("", "")  # the reply's id and model, for its trace
        self._assembler: MessageAssembler | None = None  # the reply streaming now, if any
        model = agent.model
        self.trace: RunTrace = run_trace(
            agent.services.tracer_provider, agent_id=agent.id, agent_name=agent.name,
            provider=agent.services.providers.traits(model.provider).system, model=model.id)

    def _event_fields(self) -> dict[str, Any]:
        return {"agent_id": self.agent.id, "run_generation": self.generation}

    async def execute(self) -> Message:
        trace = self.trace
        with trace.run():
            error: BaseException | None = None
            try:
                return await self._execute()
            except BaseException as err:
                error = err
                raise
            finally:
                trace.run_ended(self._run_usage, error)

    async def _execute(self) -> Message:
        agent, state = self.agent, self.state
        baseline = await state.begin_run(self._scrubbed(self.opening))
        succeeded = False
        try:
            message = await self._rounds()
            succeeded = True
            return message
        except asyncio.CancelledError:
            if self.stop_requested() == "now":
                kept = await self._stop_now(baseline)
                if kept is not None:
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()  # the cancel was ours, and it is handled
                    succeeded = True
                    return kept
            await self._roll_back(baseline, AgentStatus.idle())
            state.emit(RunCancelled(**self._event_fields()))
            raise
        except RunHalted as err:  # a limit: the work so far is kept
            await state.fail_run(AgentStatus.failed(str(err)))
            state.emit(RunFailed(**self._event_fields(), error=str(err), rolled_back=False))
            raise
        except LeaseLost as err:
            # Another runtime owns the agent now; its store state wins and we must not write.
            state.abandon_run(AgentStatus.failed(str(err)))
            state.emit(RunFailed(**self._event_fields(), error=str(err), rolled_back=False))
            raise
        except Exception as err:
            error = str(err) if isinstance(err, MentraError) else f"{type(err).__name__}: {err}"
            await self._roll_back(baseline, AgentStatus.failed(error))
            state.emit(RunFailed(**self._event_fields(), error=error, rolled_back=True))
            raise
        finally:
            if self._checkpoint is not None:
                self._checkpoint.cancel()
            for extension in self.extensions:
                try:
                    await extension.after_run(succeeded)
                except Exception:
                    log.exception("an extension failed after the run of agent %s", agent.name)

    async def _rounds(self) -> Message:
        agent, state = self.agent, self.state
        max_rounds = agent.config.max_rounds
        for _ in range(max_rounds):
            await self._inject_round_messages()
            message, invalid_inputs = await self._stream_message()
            uses = message.tool_uses
            if not uses and self.output is not None and not await self._answer_valid(message):
                if self.stop_requested():
                    await state.finish_run(AgentStatus.finished())
                    state.emit(RunFinished(**self._event_fields(), message=message))
                    return message
                state.set_status(AgentStatus.awaiting_model())
                continue
            if not uses:
                # The final message and the end of the run are one transaction.
                await self._commit_assistant(message, AgentStatus.finished(), final=True)
                state.emit(RunFinished(**self._event_fields(), message=message))
                return message
            await self._commit_assistant(message, AgentStatus.executing_tool(uses[0].id, uses[0].name))
            results = await self._run_tools(uses, invalid_inputs)
            await state.append_tool_results(Message(role=Role.USER, content=list(results)))
            if self.stop_requested():
                await state.finish_run(AgentStatus.finished())
                state.emit(RunFinished(**self._event_fields(), message=message))
                return message
            state.set_status(AgentStatus.awaiting_model())
        raise MaxRoundsExceeded(
            f"agent '{agent.name}' made {max_rounds} model calls without a final "
            "answer (AgentConfig.max_rounds); its work so far is kept. Call agent.resume() to let "
            "it continue, or raise max_rounds."
        )

    async def _answer_valid(self, message: Message) -> bool:
        """Validate a final answer against the typed output. A rejected one is
        committed with a user message listing its errors (the model tries again), or,
        once the retries are spent, with the run failing as OutputValidationError."""
        output = self.output
        assert output is not None
        try:
            self.output_value = output.parse(message)
            return True
        except RejectedAnswer as rejected:
            self._rejected += 1
            await self._commit_assistant(message, AgentStatus.awaiting_model())
            if self._rejected > self.output_retries:
                raise OutputValidationError(
                    f"agent '{self.agent.name}' answered {self._rejected} times without a valid "
                    f"{output.name} (output_retries={self.output_retries}); last errors: "
                    f"{describe_errors(rejected.errors)}. Every attempt is kept in its transcript. "
                    "Send again, raise output_retries, or make the model's fields easier to fill.",
                    errors=rejected.errors, raw=rejected.raw,
                ) from None
            await self.state.add_messages([output.feedback(rejected, self._rejected, self.output_retries)])
            return False

    async def _stop_now(self, baseline: int) -> Message | None:
        """End a run that Stop cut: commit the text streamed so far as a truncated
        reply, or the cut tool calls with "stopped" results, and finish. None when
        nothing is worth keeping (the run is then rolled back like a cancel)."""
        state = self.state
        history = state.transcript
        last = history[-1] if len(history) > baseline else None
        if self._assembler is not None:  # cut while streaming: keep the text (tool calls are dropped)
            text = state.current_text
            keep = self.stop_keeps_text()
            if keep is not None:
                text = text[:keep]
            state.stream_ended([])
            if text.strip():
                self._usage = pricing.priced(self.agent.model.key, self._assembler.usage)
                self._run_usage += self._usage
                message = Message(role=Role.ASSISTANT, content=[TextBlock(text=text)], truncated=True)
                await self._commit_assistant(message, AgentStatus.finished(), final=True)
                state.emit(RunFinished(**self._event_fields(), message=message))
                return message
        elif last is not None and last.role is Role.ASSISTANT and last.tool_uses:
            # Cut while its tools ran: each call gets a result, so the transcript stays valid.
            await state.append_tool_results(Message(role=Role.USER, content=[
                _error(use, STOPPED_TOOL_RESULT) for use in last.tool_uses]))
        replies = [m for m in state.transcript[baseline:] if m.role is Role.ASSISTANT]
        if not replies:
            return None
        await state.finish_run(AgentStatus.finished())
        state.emit(RunFinished(**self._event_fields(), message=replies[-1]))
        return replies[-1]

    async def _inject_round_messages(self) -> None:
        """Messages extensions add before each model call (e.g. mail for the agent)."""
        injected = [m for e in self.extensions for m in await e.before_round()]
        await self.state.add_messages(self._scrubbed(injected))

    def _scrubbed(self, messages: Sequence[Message]) -> list[Message]:
        """Messages that are not the model's, without the secrets the runtime knows:
        a prompt may quote output that showed a key, mail may carry one."""
        if not messages:
            return []
        secrets = known_secrets(self.agent.services.workspace_root)
        return [scrub_message(m, secrets) for m in messages]

    # --- streaming -------------------------------------------------------------

    async def _stream_message(self) -> tuple[Message, dict[str, str]]:
        agent = self.agent
        request = ProviderRequest(
            model=agent.model.id,
            messages=list(self.state.transcript),
            system=agent.config.system,
            tools=[t.spec.definition() for t in self.tools()],
            temperature=agent.config.temperature,
            max_output_tokens=agent.config.max_output_tokens,
            prompt_cache=agent.config.prompt_cache,
            output=self.output.format if self.output is not None else None,
        )
        trace = self.trace
        span = trace.chat_started(messages=request.messages, system=request.system,
                                  temperature=request.temperature,
                                  max_tokens=request.max_output_tokens)
        try:
            message, invalid = await self._stream(request)
        except BaseException as err:
            trace.chat_ended(span, usage=None, finish_reason=None, response_id=None,
                             response_model=None, reply=None, error=err)
            raise
        trace.chat_ended(span, usage=self._usage, finish_reason=self._stop_reason,
                         response_id=self._response[0], response_model=self._response[1],
                         reply=message, error=None)
        return message, invalid

    async def _stream(self, request: ProviderRequest) -> tuple[Message, dict[str, str]]:
        agent, state = self.agent, self.state
        provider = agent.services.providers.get(agent.model.provider)
        assembler = MessageAssembler()
        checkpoint = self._checkpoint = _PendingCheckpoint(self)
        self._assembler = assembler
        state.stream_from(assembler)
        stream = provider.stream(request)
        # The request is on its way: a slow first token shows as streaming, not as a
        # model that was never asked (spec/000 waits for Streaming before any event).
        state.set_status(AgentStatus.streaming())
        events, snapshots = state.events, state.snapshots
        # The block the last text or thinking delta went to, its parts list in the
        # assembler and the state's live parts list of that kind.
        hot_index, hot_kind = -1, ""
        hot_parts: list[str] | None = None
        live_parts: list[str] = []
        try:
            async for event in stream:
                # The hot path: a text or thinking delta, tens of thousands per reply.
                # It takes a few list appends and attribute checks, nothing more,
                # unless someone listens to every delta.
                if type(event) is ContentBlockDelta:
                    if not event.value.isascii():
                        # A lone surrogate ("\ud800" in the provider's JSON) cannot be stored;
                        # only a delta that holds one is copied (most non-ASCII text is fine).
                        value = valid_utf8(event.value)
                        if value is not event.value:
                            event = event.model_copy(update={"value": value})
                    if event.index != hot_index or event.kind != hot_kind:
                        hot_parts = assembler.stream_parts(event.index, event.kind)
                        if hot_parts is not None:
                            hot_index, hot_kind = event.index, event.kind
                            live_parts = state.live_parts("text" if hot_kind == "text" else "thinking")
                        else:
                            hot_index, hot_kind = -1, ""
                    if hot_parts is not None:
                        hot_parts.append(event.value)
                        live_parts.append(event.value)
                        if events.listening:
                            self._emit_stream_delta(event)
                        if checkpoint.timer is None:
                            checkpoint.request()
                        if snapshots.listening:
                            state.changed()
                        continue
                if isinstance(event, RetryAttempt):
                    state.emit(RetryAttempted(**self._event_fields(), attempt=event.attempt,
                                              delay_s=event.delay_s, reason=event.reason))
                    continue
                assembler.apply(event)
                # One snapshot per event: from the status change, or else from changed().
                notified = False
                if isinstance(event, MessageStarted):
                    self._response = (event.id, event.model)
                    notified = state.set_status(AgentStatus.streaming())
                elif isinstance(event, ContentBlockStarted):
                    notified = state.set_status(AgentStatus.streaming())
                    if event.kind == "tool_use":
                        checkpoint.request()
                elif isinstance(event, ContentBlockDelta):
                    if event.kind == "tool_input_json" and events.listening:
                        self._emit_tool_input(assembler, event.index)
                    checkpoint.request()
                elif isinstance(event, ContentBlockStopped):
                    pending = assembler.pending_tool_use(event.index)
                    if pending is not None:
                        state.emit(ToolUseReady(**self._event_fields(), tool_use_id=pending.id,
                                                name=pending.name, input=_lenient_json(pending.input_json)))
                    checkpoint.request()
                if not notified:
                    state.changed()
                if assembler.stopped:
                    break  # the message is complete; don't wait for the transport to close
        finally:
            # The calls streamed so far stay pending (until run, or rolled back).
            state.stream_ended(assembler.pending_tool_uses())
            closer = getattr(stream, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()
        self._assembler = None
        message = assembler.finish()
        # Priced once per call, at the table's prices now (never per delta).
        self._usage = pricing.priced(agent.model.key, assembler.usage)
        self._run_usage += self._usage
        self._stop_reason = assembler.stop_reason
        return message, assembler.invalid_tool_inputs

    def _emit_stream_delta(self, event: ContentBlockDelta) -> None:
        kind = TextDelta if event.kind == "text" else ReasoningDelta
        self.state.emit_delta(kind(**self._event_fields(), index=event.index, text=event.value))

    def _emit_tool_input(self, assembler: MessageAssembler, index: int) -> None:
        pending = assembler.pending_tool_use(index)
        if pending is not None:
            self.state.emit_delta(ToolUseUpdated(**self._event_fields(), tool_use_id=pending.id,
                                                 name=pending.name, input_json=pending.input_json))

    async def _commit_assistant(self, message: Message, next_status: AgentStatus, *,
                                final: bool = False) -> None:
        if self._checkpoint is not None:
            self._checkpoint.cancel()
        await self.state.commit_assistant(message, self._usage, next_status, final=final)

    # --- tools -------------------------------------------------------------------

    async def _run_tools(self, uses: list[ToolUseBlock], invalid: dict[str, str]) -> list[ToolResultBlock]:
        """Read-only neighbours run together; everything else one at a time, in call order."""
        available = {t.spec.name: t for t in self.tools()}
        results: dict[str, ToolResultBlock] = {}
        running: list[ToolUseBlock] = []
        together: list[ToolUseBlock] = []

        async def run_together() -> None:
            outcomes = await asyncio.gather(*(self._run_one(u, available, invalid, running) for u in together))
            for use, result in zip(together, outcomes, strict=True):
                results[use.id] = result
            together.clear()

        for use in uses:
            tool = available.get(use.name)
            if tool is not None and tool.spec.read_only and use.id not in invalid:
                together.append(use)
                continue
            if together:
                await run_together()
            together.append(use)
            await run_together()
        if together:
            await run_together()
        return [results[u.id] for u in uses]

    async def _run_one(self, use: ToolUseBlock, available: dict[str, Tool], invalid: dict[str, str],
                       running: list[ToolUseBlock]) -> ToolResultBlock:
        trace = self.trace
        # The span is current while the tool runs: a run of another agent it starts is its child.
        tool = available.get(use.name)
        with trace.tool(use, tool.spec.description if tool is not None else None) as span:
            result = await self._run_tool(use, available, invalid, running)
            trace.tool_ended(span, result)
            return result

    async def _run_tool(self, use: ToolUseBlock, available: dict[str, Tool], invalid: dict[str, str],
                        running: list[ToolUseBlock]) -> ToolResultBlock:
        state = self.state
        tool = available.get(use.name)
        if use.id in invalid:
            result = _error(use, f"tool '{use.name}' was not run: {invalid[use.id]}. Call it again "
                                 "with a JSON object that matches its input schema.")
        elif tool is None:
            names = ", ".join(sorted(available)) or "none"
            result = _error(use, f"unknown tool '{use.name}'; the available tools are: {names}")
        else:
            running.append(use)
            state.set_status(AgentStatus.executing_tool(use.id, use.name))
            try:
                decision = None
                refusal = None
                if self.approvals.required(tool.spec):
                    refusal = next((text for e in self.extensions
                                    if (text := e.refuse_approval(use.name)) is not None), None)
                    if refusal is None:
                        # The run pauses here (status stays executing_tool, the
                        # snapshot lists the call) until the user answers.
                        decision = await self.approvals.wait(use, self.generation)
                if refusal is not None:
                    result = _error(use, refusal)
                elif decision is not None and not decision.approved:
                    result = _error(use, denial_result(use.name, decision.reason))
                else:
                    state.emit(ToolExecutionStarted(**self._event_fields(), tool_use_id=use.id,
                                                    name=use.name))
                    result = await self._call(tool, use)
            finally:
                running.remove(use)
                if running:
                    state.set_status(AgentStatus.executing_tool(running[0].id, running[0].name))
        # Before anyone sees it: the result goes to the store, the widgets and the provider.
        result = result.model_copy(update={
            "content": scrub(valid_utf8(result.content), known_secrets(self.agent.services.workspace_root))})
        state.tool_call_done(use.id, ToolExecutionFinished(
            **self._event_fields(), tool_use_id=use.id, name=use.name, content=result.content,
            is_error=result.is_error,
        ))
        return result

    async def _call(self, tool: Tool, use: ToolUseBlock) -> ToolResultBlock:
        ctx = ToolContext(self.agent, use.id, use.name)
        timeout = tool.spec.timeout
        try:
            async with asyncio.timeout(timeout) as scope:
                output = await tool.run(ctx, dict(use.input))
        except ToolInputError as err:
            return _error(use, str(err))
        except TimeoutError as err:
            if scope.expired():
                return _error(use, f"tool '{use.name}' timed out after {timeout:g} s and was stopped")
            return _error(use, f"tool '{use.name}' failed: {type(err).__name__}: {err}")
        except Exception as err:
            return _error(use, f"tool '{use.name}' failed: {type(err).__name__}: {err}")
        if isinstance(output, ToolOutput):
            if output.images and not self._model_sees_tool_images():
                return _error(use, _without_images(output.content, len(output.images), self.agent.model.key,
                                                   self.agent.services.providers.taking_tool_result_images()))
            return ToolResultBlock(tool_use_id=use.id, content=output.content, is_error=output.is_error,
                                   images=list(output.images))
        return ToolResultBlock(tool_use_id=use.id, content=str(output))

    def _model_sees_tool_images(self) -> bool:
        try:
            return takes_tool_result_images(self.agent.services.providers.get(self.agent.model.provider))
        except MentraError:
            return False

    # --- endings -----------------------------------------------------------------

    async def _roll_back(self, baseline: int, status: AgentStatus) -> None:
        if await self.state.roll_back(baseline, status, self.opening[0] if self.opening else None):
            return
        # The store refused the rollback (a full disk) and still holds the run. Its
        # next load applies the recovery matrix, which keeps a committed tool call
        # (with an error result) rather than rolling back: show that outcome now,
        # so the agent never shows one transcript and comes back with another.
        store, agent_id = self.agent.services.store, self.state.agent_id
        try:
            persisted = store.load_agent(agent_id)
            verdict = None if persisted is None else recovered_run(
                persisted, load_approval_state(store, agent_id))
        except MentraError:
            return  # unreadable too: memory keeps the rollback it intended
        if persisted is None or verdict is None:
            return
        if verdict.rolled_back:
            self.state.show_transcript(persisted.transcript[: verdict.baseline], verdict.resumable)
        else:
            extra = [verdict.results] if verdict.results is not None else []
            self.state.show_transcript([*persisted.transcript, *extra], None)


def _without_images(text: str, count: int, model: str, providers: list[str]) -> str:
    """The error result of a tool that showed images to a model whose API cannot
    take them (the in-process local provider, llama.cpp's server)."""
    note = (f"this tool returned {count} image{'s' if count > 1 else ''}, but {model} cannot take images "
            "in tool results, so the model was not shown them; use a vision model through a provider "
            f"that takes them ({', '.join(providers)})")
    return f"{text}\n[{note}]" if text.strip() else note


def _error(use: ToolUseBlock, content: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=use.id, content=content, is_error=True)


def _lenient_json(raw: str) -> dict[str, Any]:
    if json_depth(raw) > MAX_TOOL_INPUT_DEPTH:
        return {}  # refused as input anyway; events must stay serialisable
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


class _PendingCheckpoint:
    """Writes the pending turn FIRST_CHECKPOINT after the stream began, then at
    doubling intervals (at most MAX_CHECKPOINT_INTERVAL apart).

    Each checkpoint rewrites the whole text so far and writes at least a page of
    WAL, so a fixed interval made a ten-second reply write a hundred times its
    own text. Recovery never needs the pending text (a run without its
    assistant message is rolled back either way); it only stays readable after
    a crash. So a reply that streams in under a second writes no checkpoint, and
    a long one writes O(log(duration)) of them. The write happens on a timer, so
    the last delta before a pause is caught too."""

    def __init__(self, run: TurnLoop) -> None:
        self.run = run
        self.interval = FIRST_CHECKPOINT
        self.due = time.monotonic() + FIRST_CHECKPOINT
        self.timer: asyncio.TimerHandle | None = None
        # The write in flight: a task, as the store may answer off the loop. The
        # state writes an agent's steps in order, so a commit after it lands after it.
        self.writing: asyncio.Task[None] | None = None

    def request(self) -> None:
        """Note a change: the next checkpoint is written when it is due. While
        `timer` is pending one is already due, so the hot path skips this call."""
        if self.timer is None:
            delay = max(0.0, self.due - time.monotonic())
            self.timer = asyncio.get_running_loop().call_later(delay, self.write)

    def write(self) -> None:
        self.cancel()
        self.interval = min(self.interval * 2, MAX_CHECKPOINT_INTERVAL)
        self.due = time.monotonic() + self.interval
        self.writing = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        run = self.run
        try:
            await run.state.checkpoint_pending(run.generation)
        except MentraError as err:
            # Losing a checkpoint loses only uncommitted text, which a crash would
            # roll back anyway; the next commit reports a real store problem.
            log.warning("pending-turn checkpoint of agent %s failed: %s", run.agent.name, err)

    def cancel(self) -> None:
        """No further checkpoint; one not yet started is dropped (what it would write
        is about to be committed or rolled back), one being written ends first."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.writing is not None:
            self.writing.cancel()
            self.writing = None
