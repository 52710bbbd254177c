"""Anthropic's Messages API, streamed over server-sent events.

    AnthropicProvider()                                  # key from ANTHROPIC_API_KEY
    AnthropicProvider(thinking_budget=4000)              # extended thinking
    rt.spawn("writer", "anthropic:claude-sonnet-4-5")   # made on first use

Thinking blocks come back with a signature and redacted thinking with opaque
data; both are replayed byte-for-byte on the next request, which the API
requires when a tool result follows thinking.

With `ProviderRequest.prompt_cache` (agents ask for it unless
`AgentConfig(prompt_cache=False)`) the request marks three cache breakpoints
(`cache_control: {"type": "ephemeral"}`, the 5-minute cache), in the order the
API builds its prompt: the last tool definition (caching every tool), the
system prompt, and the last block of the conversation's last message. The next
turn re-sends that whole prefix, so it is read from the cache at a tenth of the
input price; each breakpoint caches a prefix the one after it extends, so a
changed system prompt does not lose the tools' cache.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any, Unpack

from mentra_nb.errors import StreamError
from mentra_nb.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from mentra_nb.providers._http import ConnectionOptions, HTTPProvider
from mentra_nb.providers._keys import Secret
from mentra_nb.providers._output import answer_from_output_tool, with_output_tool
from mentra_nb.providers._signatures import is_envelope
from mentra_nb.providers._sse import ServerSentEvent
from mentra_nb.providers._transcript import merge_consecutive
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

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider", "AnthropicStreamDecoder"]

ANTHROPIC_VERSION = "2023-06-01"
"""The `anthropic-version` header every request sends."""
DEFAULT_MAX_TOKENS = 8192


class AnthropicProvider(HTTPProvider):
    """Provider `anthropic`. `ANTHROPIC_BASE_URL` overrides the default base URL."""

    name = "anthropic"
    tool_result_images = True  # tool_result.content may hold image blocks
    key_env = ("ANTHROPIC_API_KEY",)
    base_url_env = ("ANTHROPIC_BASE_URL",)
    default_base_url = "https://api.anthropic.com"

    def __init__(
        self,
        *,
        thinking_budget: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        **options: Unpack[ConnectionOptions],
    ) -> None:
        super().__init__(**options)
        self.thinking_budget = thinking_budget
        self.max_tokens = max_tokens

    def auth_headers(self, key: Secret | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key is not None:
            headers["x-api-key"] = key.reveal()
        return headers

    def request_body(self, request: ProviderRequest) -> dict[str, Any]:
        """The JSON body sent to `POST /v1/messages` (public so tests and tools can inspect it)."""
        if request.output is not None:
            # No native JSON-schema answer on every Claude model: the answer is a tool
            # the model must call (extended thinking refuses forced tool use: it may).
            request = with_output_tool(request, force=not self.thinking_budget)
        max_tokens = request.max_output_tokens or self.max_tokens
        body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens, "stream": True}
        if request.system:
            body["system"] = request.system
        body["messages"] = wire_messages(request.messages)
        if request.tools:
            body["tools"] = [_tool(t) for t in request.tools]
            if request.tool_choice is not None:
                body["tool_choice"] = _tool_choice(request.tool_choice)
        elif request.tool_choice == "none":
            body["tool_choice"] = {"type": "none"}
        if request.prompt_cache:
            _mark_cache_breakpoints(body)
        if self.thinking_budget:
            # The API requires max_tokens above the thinking budget and no temperature.
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
            body["max_tokens"] = max(max_tokens, self.thinking_budget + 1024)
        elif request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        events = self._post_sse(request.model, f"{self.base_url}/v1/messages", self.request_body(request),
                                AnthropicStreamDecoder())
        return answer_from_output_tool(events) if request.output is not None else events

    async def list_models(self) -> list[ModelInfo]:
        data = await self._get_json(f"{self.base_url}/v1/models", params={"limit": "1000"})
        return [
            ModelInfo(id=m["id"], provider=self.name, display_name=m.get("display_name"))
            for m in data.get("data", [])
            if isinstance(m, dict) and "id" in m
        ]


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages in the API's shape: alternating roles, tool results first, no empty turns."""
    wire: list[dict[str, Any]] = []
    for message in merge_consecutive(messages):
        blocks = [b for b in (_block(block) for block in message.content) if b is not None]
        if not blocks:
            continue  # e.g. an assistant turn that only held another provider's reasoning
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        if wire and wire[-1]["role"] == role:
            blocks = [*wire[-1]["content"], *blocks]
            blocks.sort(key=lambda b: b["type"] != "tool_result")  # stable: results lead
            wire[-1]["content"] = blocks
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def _block(block: Any) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ThinkingBlock):
        if not block.signature or is_envelope(block.signature):
            return None  # unsigned or another provider's reasoning: the API would reject it
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        # A plain string as always; a list of text and image blocks when the tool showed images.
        content: Any = block.content
        if block.images:
            content = [*([{"type": "text", "text": block.content}] if block.content else []),
                       *(_image(image) for image in block.images)]
        result: dict[str, Any] = {
            "type": "tool_result", "tool_use_id": block.tool_use_id, "content": content,
        }
        if block.is_error:
            result["is_error"] = True
        return result
    if isinstance(block, ImageBlock):
        return _image(block)
    return None


def _image(block: ImageBlock) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": block.media_type, "data": block.data}}


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name, "input_schema": tool.input_schema}
    if tool.description:
        spec["description"] = tool.description
    return spec


EPHEMERAL = {"type": "ephemeral"}
# Blocks the API accepts a cache_control on (thinking blocks are cached with
# their turn but cannot carry the marker themselves).
_CACHEABLE = frozenset({"text", "image", "tool_use", "tool_result"})


def _mark_cache_breakpoints(body: dict[str, Any]) -> None:
    """Put `cache_control` on the last tool, the system prompt and the last
    cacheable block of the last message (the body's dicts are this request's own)."""
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(EPHEMERAL)}
    system = body.get("system")
    if isinstance(system, str):
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(EPHEMERAL)}]
    messages = body.get("messages")
    if messages:
        content = messages[-1]["content"]
        for i in range(len(content) - 1, -1, -1):
            if content[i].get("type") in _CACHEABLE:
                content[i] = {**content[i], "cache_control": dict(EPHEMERAL)}
                break


def _tool_choice(choice: ToolChoice) -> dict[str, Any]:
    if choice in ("auto", "any", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


class AnthropicStreamDecoder:
    """Messages API stream events → provider events.

    Block kinds the runtime does not model (server tool use, web search
    results) are skipped with their deltas, so a reply that uses them still
    assembles.
    """

    def __init__(self) -> None:
        self.done = False
        self._started = False
        self._usage = Usage()
        self._skipped: set[int] = set()

    def feed(self, event: ServerSentEvent) -> Iterable[ProviderEvent]:
        data = event.json()
        if not isinstance(data, dict):
            raise StreamError(f"anthropic sent a {event.event} event whose data is not an object")
        kind = data.get("type", event.event)
        if kind == "ping":
            return []
        if kind == "error":
            error = data.get("error") or {}
            raise StreamError(
                f"anthropic reported an error mid-stream ({error.get('type', 'error')}): "
                f"{error.get('message', data)}; the run was rolled back, try again"
            )
        if kind == "message_start":
            message = data.get("message") or {}
            self._started = True
            self._usage = _usage(message.get("usage") or {}, Usage())
            return [MessageStarted(id=message.get("id", ""), model=message.get("model", ""))]
        if not self._started:
            raise StreamError(f"anthropic sent {kind} before message_start")
        if kind == "content_block_start":
            return self._block_start(data["index"], data.get("content_block") or {})
        if kind == "content_block_delta":
            index = data["index"]
            if index in self._skipped:
                return []
            return self._delta(index, data.get("delta") or {})
        if kind == "content_block_stop":
            index = data["index"]
            return [] if index in self._skipped else [ContentBlockStopped(index=index)]
        if kind == "message_delta":
            self._usage = _usage(data.get("usage") or {}, self._usage)
            stop_reason = (data.get("delta") or {}).get("stop_reason")
            return [MessageDelta(stop_reason=stop_reason, usage=self._usage)]
        if kind == "message_stop":
            self.done = True
            return [MessageStopped()]
        return []  # event types added after this was written

    def _block_start(self, index: int, block: dict[str, Any]) -> list[ProviderEvent]:
        kind = block.get("type")
        if kind == "text":
            events: list[ProviderEvent] = [ContentBlockStarted.text(index)]
            if block.get("text"):
                events.append(ContentBlockDelta.text(index, block["text"]))
            return events
        if kind == "thinking":
            events = [ContentBlockStarted.thinking(index)]
            if block.get("thinking"):
                events.append(ContentBlockDelta.thinking(index, block["thinking"]))
            if block.get("signature"):
                events.append(ContentBlockDelta.signature(index, block["signature"]))
            return events
        if kind == "redacted_thinking":
            return [ContentBlockStarted.redacted_thinking(index, block.get("data", ""))]
        if kind == "tool_use":
            events = [ContentBlockStarted.tool_use(index, block["id"], block["name"])]
            if block.get("input"):
                events.append(ContentBlockDelta.tool_input_json(index, json.dumps(block["input"])))
            return events
        self._skipped.add(index)
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ProviderEvent]:
        kind = delta.get("type")
        if kind == "text_delta":
            return [ContentBlockDelta.text(index, delta.get("text", ""))]
        if kind == "input_json_delta":
            partial = delta.get("partial_json", "")
            return [ContentBlockDelta.tool_input_json(index, partial)] if partial else []
        if kind == "thinking_delta":
            return [ContentBlockDelta.thinking(index, delta.get("thinking", ""))]
        if kind == "signature_delta":
            return [ContentBlockDelta.signature(index, delta.get("signature", ""))]
        return []  # citations and future delta kinds carry nothing we store

    def finish(self) -> Iterable[ProviderEvent]:
        if not self.done:
            raise StreamError(
                "anthropic's stream ended before message_stop; the reply was cut off, "
                "so the run was rolled back"
            )
        return []


def _usage(raw: Any, previous: Usage) -> Usage:
    """Anthropic's counts are cumulative; a field missing from a delta keeps its last value."""
    report = UsageReport("anthropic", raw)

    def pick(key: str, old: int) -> int:
        return report.count(key) if report.has(key) else old

    return report.usage(
        input_tokens=pick("input_tokens", previous.input_tokens),
        output_tokens=pick("output_tokens", previous.output_tokens),
        cache_read_tokens=pick("cache_read_input_tokens", previous.cache_read_tokens),
        cache_creation_tokens=pick("cache_creation_input_tokens", previous.cache_creation_tokens),
        already_misreported=previous.misreported_calls > 0,
    )
