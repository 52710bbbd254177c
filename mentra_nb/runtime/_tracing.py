"""OpenTelemetry spans for runs, model calls and tool calls (the `otel` extra).

Spans follow the OpenTelemetry GenAI semantic conventions (development status;
the latest experimental names): `invoke_agent {agent}` per run, `chat {model}`
per model call (model, token usage, finish reason, response id) and
`execute_tool {tool}` per tool call (name, call id, error). A tool that starts
another agent's run (a subagent) runs inside its `execute_tool` span, so that
run is its child; a teammate's run is a child of the run that last mailed it
(`note_mail_to`, kept in memory only).

Tracing is off unless a tracer provider is configured: `Runtime(tracer_provider=...)`
or OpenTelemetry's global one (`trace.set_tracer_provider`). Prompts, replies,
tool arguments and results are recorded only with `MENTRA_TRACE_CONTENT=1`;
provider keys never are (they live in request headers, which no span sees).
Nothing here runs per streamed delta: a span starts before a call and gets its
attributes when the call ends.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from mentra_nb.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = ["CONTENT_ENV", "OtelRunTrace", "RunTrace", "note_mail_to", "run_trace", "tracer_for"]

CONTENT_ENV = "MENTRA_TRACE_CONTENT"
_SCOPE = "mentra_nb"

# agent id -> the span context of the run that last mailed it (teams); popped by
# that agent's next run. In memory: a restart starts new traces.
_MAIL_CAUSES: dict[str, Any] = {}
# Looked up once: every team mail asks, and a failing import is not free.
_OTEL_INSTALLED = importlib.util.find_spec("opentelemetry") is not None


def tracer_for(provider: object | None) -> Tracer | None:
    """A tracer from `provider`, else from the global provider if one is configured;
    None when OpenTelemetry is not installed or nothing is configured."""
    try:
        from opentelemetry import trace
    except ImportError:  # the `otel` extra is not installed
        return None
    if provider is None:
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider):
            return None  # nobody called set_tracer_provider: tracing is off
    get_tracer = getattr(provider, "get_tracer", None)
    if get_tracer is None:
        return None
    tracer: Tracer = get_tracer(_SCOPE)
    return tracer


def note_mail_to(agent_id: str) -> None:
    """Mail for `agent_id` was posted: its next run is a child of the current span."""
    if not _OTEL_INSTALLED:
        return
    from opentelemetry import trace

    span_context = trace.get_current_span().get_span_context()
    if span_context.is_valid:
        _MAIL_CAUSES[agent_id] = span_context


def _content_enabled() -> bool:
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ToolUseBlock):
            parts.append({"type": "tool_call", "id": block.id, "name": block.name,
                          "arguments": block.input})
        elif isinstance(block, ToolResultBlock):
            parts.append({"type": "tool_call_response", "id": block.tool_use_id,
                          "result": block.content})
    return parts


def _messages_json(messages: Sequence[Message], finish_reason: str | None = None) -> str:
    out = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role.value, "parts": _parts(message)}
        if finish_reason is not None:
            item["finish_reason"] = finish_reason
        out.append(item)
    return json.dumps(out, ensure_ascii=False)


def _usage_attributes(usage: Usage) -> dict[str, Any]:
    # The conventions count every prompt token as input, cached or not, and give
    # the cached ones apart.
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_tokens,
    }
    if usage.cost_usd is not None:
        attributes["mentra.usage.cost_usd"] = usage.cost_usd
    return attributes


def _error_type(error: BaseException) -> str:
    return type(error).__qualname__


class RunTrace:
    """The spans of one run, with tracing off: every method does nothing, so the
    turn loop has one path whether or not spans are recorded (`run_trace` gives an
    `OtelRunTrace` when a tracer is configured). A span is opaque to the loop: it
    gets one from `chat_started` or `tool` and hands it back when the call ends."""

    @contextmanager
    def run(self) -> Iterator[None]:
        """The run's span, current while the run works."""
        yield

    def run_ended(self, usage: Usage, error: BaseException | None) -> None:
        """The run ended, with this usage (and `error` if it failed)."""

    def chat_started(self, *, messages: Sequence[Message], system: str | None,
                     temperature: float | None, max_tokens: int | None) -> object:
        """A model call begins; returns its span."""
        return None

    def chat_ended(self, span: object, *, usage: Usage | None, finish_reason: str | None,
                   response_id: str | None, response_model: str | None, reply: Message | None,
                   error: BaseException | None) -> None:
        """The model call of `span` ended (with `error` if it failed)."""

    @contextmanager
    def tool(self, use: ToolUseBlock, description: str | None) -> Iterator[object]:
        """A tool call's span, current while it runs (so a run it starts is its child)."""
        yield None

    def tool_ended(self, span: object, result: ToolResultBlock) -> None:
        """The tool call of `span` gave `result`."""


class OtelRunTrace(RunTrace):
    """The OpenTelemetry spans of one run (tracing is on)."""

    def __init__(self, tracer: Tracer, *, agent_id: str, agent_name: str, provider: str,
                 model: str) -> None:
        self.tracer = tracer
        self.agent_id = agent_id
        self.agent_name = agent_name
        self.provider = provider  # gen_ai.provider.name: the provider's `system` trait
        self.model = model
        self.content = _content_enabled()
        self._run: Span | None = None

    @contextmanager
    def run(self) -> Iterator[None]:
        """The run's `invoke_agent` span, current while the run works."""
        from opentelemetry import trace

        cause = _MAIL_CAUSES.pop(self.agent_id, None)
        parent: Context | None = (trace.set_span_in_context(trace.NonRecordingSpan(cause))
                                  if cause is not None else None)
        span = self.tracer.start_span(
            f"invoke_agent {self.agent_name}", context=parent, kind=trace.SpanKind.INTERNAL,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": self.provider,
                        "gen_ai.agent.name": self.agent_name, "gen_ai.agent.id": self.agent_id,
                        "gen_ai.conversation.id": self.agent_id, "gen_ai.request.model": self.model})
        self._run = span
        with trace.use_span(span, end_on_exit=True, record_exception=False,
                            set_status_on_exception=False):
            yield

    def run_ended(self, usage: Usage, error: BaseException | None) -> None:
        span = self._run
        if span is None:
            return
        span.set_attributes(_usage_attributes(usage))
        if error is not None:
            self._failed(span, error)

    def chat_started(self, *, messages: Sequence[Message], system: str | None,
                     temperature: float | None, max_tokens: int | None) -> Span:
        from opentelemetry import trace

        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat",
                                      "gen_ai.provider.name": self.provider,
                                      "gen_ai.request.model": self.model}
        if temperature is not None:
            attributes["gen_ai.request.temperature"] = temperature
        if max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = max_tokens
        if self.content:
            attributes["gen_ai.input.messages"] = _messages_json(messages)
            if system:
                attributes["gen_ai.system_instructions"] = json.dumps(
                    [{"type": "text", "content": system}], ensure_ascii=False)
        return self.tracer.start_span(f"chat {self.model}", kind=trace.SpanKind.CLIENT,
                                      attributes=attributes)

    def chat_ended(self, span: object, *, usage: Usage | None, finish_reason: str | None,
                   response_id: str | None, response_model: str | None, reply: Message | None,
                   error: BaseException | None) -> None:
        chat = cast("Span", span)  # the one chat_started gave
        if usage is not None:
            chat.set_attributes(_usage_attributes(usage))
        if finish_reason:
            chat.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        if response_id:
            chat.set_attribute("gen_ai.response.id", response_id)
        if response_model:
            chat.set_attribute("gen_ai.response.model", response_model)
        if reply is not None and self.content:
            chat.set_attribute("gen_ai.output.messages", _messages_json([reply], finish_reason))
        if error is not None:
            self._failed(chat, error)
        chat.end()

    @contextmanager
    def tool(self, use: ToolUseBlock, description: str | None) -> Iterator[Span]:
        """A tool call's `execute_tool` span, current while it runs (so a subagent
        it starts is its child)."""
        from opentelemetry import trace

        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool",
                                      "gen_ai.tool.name": use.name, "gen_ai.tool.call.id": use.id,
                                      "gen_ai.tool.type": "function"}
        if description:
            attributes["gen_ai.tool.description"] = description
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(use.input, ensure_ascii=False)
        with self.tracer.start_as_current_span(
            f"execute_tool {use.name}", kind=trace.SpanKind.INTERNAL, attributes=attributes,
            record_exception=False, set_status_on_exception=False,
        ) as span:
            yield span

    def tool_ended(self, span: object, result: ToolResultBlock) -> None:
        from opentelemetry.trace import Status, StatusCode

        call = cast("Span", span)  # the one tool() gave
        if self.content:
            call.set_attribute("gen_ai.tool.call.result", result.content)
        if result.is_error:
            # The message can quote data, so it is content: only the kind by default.
            call.set_attribute("error.type", "tool_error")
            call.set_status(Status(StatusCode.ERROR, result.content[:500] if self.content else None))

    def _failed(self, span: Span, error: BaseException) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", _error_type(error))
        # An error's message can quote the conversation: it is content.
        span.set_status(Status(StatusCode.ERROR, str(error)[:500] if self.content else None))


_NO_TRACE = RunTrace()  # stateless: one serves every run


def run_trace(tracer_provider: object | None, *, agent_id: str, agent_name: str, provider: str,
              model: str) -> RunTrace:
    """The spans of a run about to start: OpenTelemetry's when a tracer is
    configured, else ones that record nothing."""
    tracer = tracer_for(tracer_provider)
    if tracer is None:
        return _NO_TRACE
    return OtelRunTrace(tracer, agent_id=agent_id, agent_name=agent_name, provider=provider, model=model)
