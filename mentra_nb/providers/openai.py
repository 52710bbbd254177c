"""OpenAI's Responses API, streamed over server-sent events.

    OpenAIProvider()                                   # key from OPENAI_API_KEY
    OpenAIProvider(reasoning_effort="medium")          # reasoning models
    rt.spawn("writer", "openai:gpt-5")

Requests are stateless (`store: false`): the runtime owns the transcript and
sends it whole each time. Reasoning items come back with their id and
encrypted content and are replayed as received, carried in
`ThinkingBlock.signature` as a JSON envelope (see `_signatures`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Iterable
from typing import Any, Unpack

from mentra_nb.errors import StreamError
from mentra_nb.messages import (
    ImageBlock,
    Message,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from mentra_nb.providers._http import ConnectionOptions, HTTPProvider
from mentra_nb.providers._keys import Secret
from mentra_nb.providers._output import json_schema_format
from mentra_nb.providers._signatures import unwrap, wrap
from mentra_nb.providers._sse import ServerSentEvent
from mentra_nb.providers._usage import UsageReport
from mentra_nb.providers.base import ModelInfo, ProviderRequest, ToolChoice, ToolDefinition
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    ProviderEvent,
)

__all__ = ["REASONING_PROTOCOL", "OpenAIProvider", "ResponsesStreamDecoder"]

REASONING_PROTOCOL = "openai-responses"
"""The protocol name OpenAI's encrypted reasoning items are stored under; another provider's are
not sent to OpenAI.
"""

# Models that reason and accept `reasoning` / encrypted reasoning content.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5|gpt-oss|codex)")


class OpenAIProvider(HTTPProvider):
    """Provider `openai` (Responses API). `OPENAI_BASE_URL` overrides the base URL."""

    name = "openai"
    tool_result_images = True  # function_call_output.output may be a list with input_image parts
    key_env = ("OPENAI_API_KEY",)
    base_url_env = ("OPENAI_BASE_URL",)
    default_base_url = "https://api.openai.com/v1"

    def __init__(
        self,
        *,
        reasoning_effort: str | None = None,
        reasoning_summary: str | None = "auto",
        **options: Unpack[ConnectionOptions],
    ) -> None:
        super().__init__(**options)
        self.reasoning_effort = reasoning_effort
        self.reasoning_summary = reasoning_summary

    def auth_headers(self, key: Secret | None) -> dict[str, str]:
        headers = super().auth_headers(key)
        for env, header in (("OPENAI_ORG_ID", "openai-organization"),
                            ("OPENAI_PROJECT_ID", "openai-project")):
            if os.environ.get(env):
                headers[header] = os.environ[env]
        return headers

    def reasons(self, model: str) -> bool:
        return self.reasoning_effort is not None or bool(_REASONING_MODEL.match(model))

    def request_body(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "stream": True, "store": False}
        if request.system:
            body["instructions"] = request.system
        body["input"] = wire_input(request.messages)
        if request.tools:
            body["tools"] = [_tool(t) for t in request.tools]
        if request.tool_choice is not None and (request.tools or request.tool_choice == "none"):
            body["tool_choice"] = _tool_choice(request.tool_choice)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            body["max_output_tokens"] = request.max_output_tokens
        if request.output is not None:
            body["text"] = {"format": {"type": "json_schema", **json_schema_format(request.output)}}
        if self.reasons(request.model):
            # Without store, the only way to hand reasoning back is its encrypted form.
            body["include"] = ["reasoning.encrypted_content"]
            reasoning: dict[str, Any] = {}
            if self.reasoning_effort:
                reasoning["effort"] = self.reasoning_effort
            if self.reasoning_summary:
                reasoning["summary"] = self.reasoning_summary
            if reasoning:
                body["reasoning"] = reasoning
        return body

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        return self._post_sse(request.model, f"{self.base_url}/responses", self.request_body(request),
                              ResponsesStreamDecoder(self.name))

    async def list_models(self) -> list[ModelInfo]:
        data = await self._get_json(f"{self.base_url}/models")
        return [
            ModelInfo(id=m["id"], provider=self.name)
            for m in data.get("data", [])
            if isinstance(m, dict) and "id" in m
        ]


def wire_input(messages: list[Message]) -> list[dict[str, Any]]:
    """The transcript as Responses input items, in order.

    Tool results become `function_call_output` items placed before any other
    user content of the same message; reasoning items from this protocol are
    replayed as received, other providers' reasoning is dropped.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role is Role.USER:
            parts: list[dict[str, Any]] = []
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    text = f"Error: {block.content}" if block.is_error else block.content
                    # A string as always; a list of input parts when the tool showed images.
                    output: Any = text if not block.images else [
                        *([{"type": "input_text", "text": text}] if text else []),
                        *(_input_image(image) for image in block.images)]
                    items.append(
                        {"type": "function_call_output", "call_id": block.tool_use_id, "output": output}
                    )
                elif isinstance(block, TextBlock) and block.text:
                    parts.append({"type": "input_text", "text": block.text})
                elif isinstance(block, ImageBlock):
                    parts.append(_input_image(block))
            if parts:
                items.append({"role": "user", "content": parts})
            continue
        items += _assistant_items(message)
    return items


def _input_image(block: ImageBlock) -> dict[str, Any]:
    return {"type": "input_image", "image_url": f"data:{block.media_type};base64,{block.data}"}


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    """An assistant turn as items in block order: text runs, reasoning, function calls."""
    items: list[dict[str, Any]] = []
    text: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            text.append(block.text)
            continue
        if text:
            items.append({"role": "assistant", "content": "".join(text)})
            text = []
        if isinstance(block, ThinkingBlock):
            item = unwrap(block.signature, REASONING_PROTOCOL)
            if item is not None:
                items.append(item)
        elif isinstance(block, ToolUseBlock):
            items.append({"type": "function_call", "call_id": block.id, "name": block.name,
                          "arguments": json.dumps(block.input)})
    if text:
        items.append({"role": "assistant", "content": "".join(text)})
    return items


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    return {"type": "function", "name": tool.name, "description": tool.description,
            "parameters": tool.input_schema, "strict": False}


def _tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if choice == "any":
        return "required"
    if choice in ("auto", "none"):
        return choice
    return {"type": "function", "name": choice}


class ResponsesStreamDecoder:
    """Responses stream events → provider events.

    Output items (and message content parts) get consecutive block indexes in
    the order they open; items the runtime does not model (built-in tool
    calls) are skipped.
    """

    def __init__(self, provider: str = "openai") -> None:
        self.provider = provider
        self.done = False
        self._started = False
        self._next = 0
        self._blocks: dict[tuple[int, int], int] = {}  # (output_index, content_index) → block
        self._open: set[int] = set()
        self._kinds: dict[int, str] = {}
        self._args_seen: set[int] = set()
        self._summary_index: dict[int, int] = {}
        self._called_tool = False

    def _start(self, key: tuple[int, int], started: ContentBlockStarted | None, kind: str,
               ) -> tuple[int, list[ProviderEvent]]:
        index = self._next
        self._next += 1
        self._blocks[key] = index
        self._open.add(index)
        self._kinds[index] = kind
        event = started or ContentBlockStarted(index=index, kind="text")
        return index, [event.model_copy(update={"index": index})]

    def _stop(self, index: int) -> list[ProviderEvent]:
        if index in self._open:
            self._open.discard(index)
            return [ContentBlockStopped(index=index)]
        return []

    def feed(self, event: ServerSentEvent) -> Iterable[ProviderEvent]:
        data = event.json()
        if not isinstance(data, dict):
            raise StreamError(f"{self.provider} sent an event whose data is not an object")
        kind = data.get("type", event.event)
        if kind == "error":
            raise StreamError(
                f"{self.provider} reported an error mid-stream ({data.get('code') or 'error'}): "
                f"{data.get('message', data)}; the run was rolled back, try again"
            )
        if kind == "response.failed":
            error = (data.get("response") or {}).get("error") or {}
            raise StreamError(
                f"{self.provider} failed the response ({error.get('code') or 'failed'}): "
                f"{error.get('message', 'no message')}; the run was rolled back"
            )
        if kind == "response.created":
            response = data.get("response") or {}
            self._started = True
            return [MessageStarted(id=response.get("id", ""), model=response.get("model", ""))]
        if not self._started:
            if kind.startswith("response."):
                raise StreamError(f"{self.provider} sent {kind} before response.created")
            return []
        handler = getattr(self, "_on_" + kind.replace("response.", "").replace(".", "_"), None)
        return handler(data) if handler is not None else []

    def _on_output_item_added(self, data: dict[str, Any]) -> list[ProviderEvent]:
        item, output = data["item"], data["output_index"]
        if item.get("type") == "function_call":
            self._called_tool = True
            index, events = self._start(
                (output, -1), ContentBlockStarted.tool_use(0, item["call_id"], item["name"]), "tool"
            )
            if item.get("arguments"):
                self._args_seen.add(index)
                events.append(ContentBlockDelta.tool_input_json(index, item["arguments"]))
            return events
        if item.get("type") == "reasoning":
            return self._start((output, -1), ContentBlockStarted.thinking(0), "reasoning")[1]
        return []  # a message opens its blocks per content part

    def _text_block(self, data: dict[str, Any]) -> tuple[int, list[ProviderEvent]]:
        key = (data["output_index"], data.get("content_index", 0))
        if key in self._blocks:
            return self._blocks[key], []
        return self._start(key, ContentBlockStarted.text(0), "text")

    def _on_content_part_added(self, data: dict[str, Any]) -> list[ProviderEvent]:
        if (data.get("part") or {}).get("type") in ("output_text", "refusal"):
            return self._text_block(data)[1]
        return []

    def _on_output_text_delta(self, data: dict[str, Any]) -> list[ProviderEvent]:
        index, events = self._text_block(data)
        return [*events, ContentBlockDelta.text(index, data.get("delta", ""))]

    _on_refusal_delta = _on_output_text_delta

    def _on_content_part_done(self, data: dict[str, Any]) -> list[ProviderEvent]:
        key = (data["output_index"], data.get("content_index", 0))
        return self._stop(self._blocks[key]) if key in self._blocks else []

    def _on_function_call_arguments_delta(self, data: dict[str, Any]) -> list[ProviderEvent]:
        index = self._blocks.get((data["output_index"], -1))
        if index is None or not data.get("delta"):
            return []
        self._args_seen.add(index)
        return [ContentBlockDelta.tool_input_json(index, data["delta"])]

    def _on_function_call_arguments_done(self, data: dict[str, Any]) -> list[ProviderEvent]:
        index = self._blocks.get((data["output_index"], -1))
        if index is None or index in self._args_seen or not data.get("arguments"):
            return []
        self._args_seen.add(index)  # a server that skipped the deltas
        return [ContentBlockDelta.tool_input_json(index, data["arguments"])]

    def _reasoning_delta(self, data: dict[str, Any], part: str) -> list[ProviderEvent]:
        index = self._blocks.get((data["output_index"], -1))
        if index is None:
            return []
        events: list[ProviderEvent] = []
        position = data.get(part, 0)
        previous = self._summary_index.get(index)
        if previous is not None and previous != position:
            events.append(ContentBlockDelta.thinking(index, "\n\n"))
        self._summary_index[index] = position
        events.append(ContentBlockDelta.thinking(index, data.get("delta", "")))
        return events

    def _on_reasoning_summary_text_delta(self, data: dict[str, Any]) -> list[ProviderEvent]:
        return self._reasoning_delta(data, "summary_index")

    def _on_reasoning_text_delta(self, data: dict[str, Any]) -> list[ProviderEvent]:
        return self._reasoning_delta(data, "content_index")

    def _on_output_item_done(self, data: dict[str, Any]) -> list[ProviderEvent]:
        item, output = data["item"], data["output_index"]
        events: list[ProviderEvent] = []
        if item.get("type") == "reasoning":
            index = self._blocks.get((output, -1))
            if index is not None:
                events.append(ContentBlockDelta.signature(index, wrap(REASONING_PROTOCOL, item)))
                events += self._stop(index)
            return events
        for (out, _), index in sorted(self._blocks.items(), key=lambda kv: kv[1]):
            if out == output:
                events += self._stop(index)
        return events

    def _finish(self, data: dict[str, Any], stop_reason: str) -> list[ProviderEvent]:
        response = data.get("response") or {}
        events: list[ProviderEvent] = []
        for index in sorted(self._open):
            events += self._stop(index)
        events.append(MessageDelta(stop_reason=stop_reason, usage=_usage(response.get("usage"))))
        events.append(MessageStopped())
        self.done = True
        return events

    def _on_completed(self, data: dict[str, Any]) -> list[ProviderEvent]:
        return self._finish(data, "tool_use" if self._called_tool else "end_turn")

    def _on_incomplete(self, data: dict[str, Any]) -> list[ProviderEvent]:
        details = (data.get("response") or {}).get("incomplete_details") or {}
        reason = details.get("reason") or "incomplete"
        return self._finish(data, "max_tokens" if reason == "max_output_tokens" else reason)

    def finish(self) -> Iterable[ProviderEvent]:
        if not self.done:
            raise StreamError(
                f"{self.provider}'s stream ended before response.completed; the reply was cut "
                "off, so the run was rolled back"
            )
        return []


def _usage(raw: Any) -> Usage:
    """Responses counts cached input inside `input_tokens`; we report it apart, as Anthropic does."""
    if not raw:
        return Usage()
    report = UsageReport("openai", raw)
    cached = report.count("input_tokens_details", "cached_tokens")
    return report.usage(
        input_tokens=max(0, report.count("input_tokens") - cached),
        output_tokens=report.count("output_tokens"),
        cache_read_tokens=cached,
    )
