"""OpenAI Chat Completions, streamed: OpenAI itself and every server that copies it.

Presets name the usual servers so a model id is all a user writes:

    rt.spawn("w", "openai-chat:gpt-4.1")          # api.openai.com, OPENAI_API_KEY
    rt.spawn("w", "openrouter:anthropic/claude-sonnet-4.5")   # OPENROUTER_API_KEY
    rt.spawn("w", "ollama:llama3.2:3b")           # 127.0.0.1:11434, no key
    rt.spawn("w", "lmstudio:qwen2.5-7b-instruct") # 127.0.0.1:1234
    rt.spawn("w", "vllm:...")  rt.spawn("w", "llamacpp:...")

Any other compatible server: `OpenAIChatProvider(name="mine", base_url="http://host:port/v1")`.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any, Literal, Unpack

from pydantic import BaseModel, ConfigDict

from mentra_nb.errors import ConfigError, StreamError
from mentra_nb.messages import (
    ImageBlock,
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from mentra_nb.providers._http import ConnectionOptions, HTTPProvider
from mentra_nb.providers._output import json_schema_format
from mentra_nb.providers._sse import ServerSentEvent
from mentra_nb.providers._transcript import merge_consecutive
from mentra_nb.providers._usage import UsageReport
from mentra_nb.providers.base import (
    ModelInfo,
    ProviderRequest,
    ProviderTraits,
    ToolChoice,
    ToolDefinition,
)
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    ProviderEvent,
)

__all__ = ["PRESETS", "ChatPreset", "ChatStreamDecoder", "OpenAIChatProvider", "wire_messages"]


class ChatPreset(BaseModel):
    """Where an OpenAI-compatible server lives and how it wants to be spoken to."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    base_url: str
    base_url_env: tuple[str, ...] = ()
    key_env: tuple[str, ...] = ()
    key_required: bool = False
    # OpenAI's own API wants `max_completion_tokens`; most copies only know `max_tokens`.
    max_tokens_field: str = "max_tokens"
    include_usage: bool = True
    # How a typed answer's schema is asked for: OpenAI's `json_schema` response format,
    # or llama.cpp's `{"type": "json_object", "schema": ...}`, which both its C++
    # server and llama-cpp-python's server turn into a grammar.
    schema_format: Literal["json_schema", "json_object"] = "json_schema"
    # Whether a tool's images may be sent (after its `tool` message, see
    # `wire_messages`): OpenAI and the vision models behind the routers take them;
    # llama.cpp's server answers 400 without a multimodal projector, so there the
    # turn loop's error result says the model was not shown them.
    tool_result_images: bool = True
    # Its name in traces (`gen_ai.provider.name`) and whose price rows apply; default: `name`.
    system: str | None = None
    price_key: str | None = None


PRESETS: dict[str, ChatPreset] = {
    p.name: p
    for p in [
        ChatPreset(name="openai-chat", base_url="https://api.openai.com/v1",
                   base_url_env=("OPENAI_BASE_URL",), key_env=("OPENAI_API_KEY",),
                   key_required=True, max_tokens_field="max_completion_tokens",
                   system="openai", price_key="openai"),
        ChatPreset(name="openrouter", base_url="https://openrouter.ai/api/v1",
                   base_url_env=("OPENROUTER_BASE_URL",), key_env=("OPENROUTER_API_KEY",),
                   key_required=True),
        ChatPreset(name="ollama", base_url="http://127.0.0.1:11434/v1",
                   base_url_env=("OLLAMA_BASE_URL",), key_env=("OLLAMA_API_KEY",)),
        ChatPreset(name="lmstudio", base_url="http://127.0.0.1:1234/v1",
                   base_url_env=("LMSTUDIO_BASE_URL",), key_env=("LMSTUDIO_API_KEY",)),
        ChatPreset(name="vllm", base_url="http://127.0.0.1:8000/v1",
                   base_url_env=("VLLM_BASE_URL",), key_env=("VLLM_API_KEY",)),
        ChatPreset(name="llamacpp", base_url="http://127.0.0.1:8080/v1",
                   base_url_env=("LLAMACPP_BASE_URL",), key_env=("LLAMACPP_API_KEY",),
                   schema_format="json_object", tool_result_images=False),
    ]
}
"""The OpenAI-compatible servers known by name (openai-chat, openrouter, ollama, lmstudio, vllm,
llamacpp): base URL, key variable and their quirks.
"""


class OpenAIChatProvider(HTTPProvider):
    """Chat Completions over SSE. `preset` picks defaults; every argument overrides them."""

    def __init__(
        self,
        preset: str | ChatPreset = "openai-chat",
        *,
        include_usage: bool | None = None,
        key_required: bool | None = None,
        **options: Unpack[ConnectionOptions],
    ) -> None:
        if isinstance(preset, str):
            if preset not in PRESETS:
                raise ConfigError(
                    f"unknown OpenAI-compatible preset {preset!r}; known: {', '.join(PRESETS)}. "
                    "For another server pass base_url=... (and name=...)"
                )
            preset = PRESETS[preset]
        self.preset = preset
        self.name = preset.name
        self.key_env = preset.key_env
        self.base_url_env = preset.base_url_env
        self.default_base_url = preset.base_url
        self.key_required = preset.key_required if key_required is None else key_required
        self.include_usage = preset.include_usage if include_usage is None else include_usage
        self.tool_result_images = preset.tool_result_images
        self.system = preset.system
        self.price_key = preset.price_key
        if preset.name == "ollama" and not options.get("base_url") and not os.environ.get("OLLAMA_BASE_URL"):
            options["base_url"] = _ollama_host()
        super().__init__(**options)

    @classmethod
    def traits(cls, preset: str = "openai-chat") -> ProviderTraits:
        """A preset's traits, for the registry (they differ per preset)."""
        return ProviderTraits.of(PRESETS[preset], preset)

    def request_body(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "stream": True}
        body["messages"] = wire_messages(request.messages, request.system)
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = [_tool(t) for t in request.tools]
        if request.tool_choice is not None and (request.tools or request.tool_choice == "none"):
            body["tool_choice"] = _tool_choice(request.tool_choice)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            body[self.preset.max_tokens_field] = request.max_output_tokens
        if request.output is not None:
            if self.preset.schema_format == "json_object":
                body["response_format"] = {"type": "json_object", "schema": request.output.json_schema}
            else:  # OpenAI's own; vLLM, Ollama, LM Studio and OpenRouter take it too
                body["response_format"] = {"type": "json_schema",
                                           "json_schema": json_schema_format(request.output)}
        return body

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        return self._post_sse(request.model, f"{self.base_url}/chat/completions", self.request_body(request),
                              ChatStreamDecoder(self.name))

    async def list_models(self) -> list[ModelInfo]:
        data = await self._get_json(f"{self.base_url}/models")
        return [
            ModelInfo(id=m["id"], provider=self.name, display_name=m.get("name"),
                      context_window=m.get("context_length"))
            for m in data.get("data", [])
            if isinstance(m, dict) and "id" in m
        ]


def _ollama_host() -> str | None:
    """Ollama's own variable, `OLLAMA_HOST` (`host:port`, scheme optional)."""
    host = os.environ.get("OLLAMA_HOST", "").strip().rstrip("/")
    if not host:
        return None
    if not host.startswith(("http://", "https://")):
        host = "http://" + host
    return host + "/v1"


def wire_messages(messages: list[Message], system: str | None) -> list[dict[str, Any]]:
    """The transcript as chat messages; each tool result becomes its own `tool` message.

    A `tool` message carries text only, so the images a tool result holds follow
    the results in a user message that names their call (OpenAI's advice for
    vision input from tools); vision models behind every router read them there.
    """
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    # Many chat templates (llama.cpp, Mistral) reject two user turns in a row.
    for message in merge_consecutive(messages):
        if message.role is Role.USER:
            parts: list[dict[str, Any]] = []
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    result = f"Error: {block.content}" if block.is_error else block.content
                    wire.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": result})
                    if block.images:
                        parts.append({"type": "text", "text": f"The images tool call {block.tool_use_id} returned:"})
                        parts.extend(_image_part(image) for image in block.images)
                elif isinstance(block, TextBlock) and block.text:
                    parts.append({"type": "text", "text": block.text})
                elif isinstance(block, ImageBlock):
                    parts.append(_image_part(block))
            if parts:
                # Plain strings where possible: small local servers often only take strings.
                only_text = all(p["type"] == "text" for p in parts)
                content: Any = "\n\n".join(p["text"] for p in parts) if only_text else parts
                wire.append({"role": "user", "content": content})
            continue
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        calls = [
            {"id": b.id, "type": "function",
             "function": {"name": b.name, "arguments": json.dumps(b.input)}}
            for b in message.content
            if isinstance(b, ToolUseBlock)
        ]
        if not text and not calls:
            continue  # only reasoning, which Chat Completions cannot take back
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            out["tool_calls"] = calls
        wire.append(out)
    return wire


def _image_part(image: ImageBlock) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": tool.name, "description": tool.description, "parameters": tool.input_schema}}


def _tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if choice == "any":
        return "required"
    if choice in ("auto", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                 "length": "max_tokens"}


class ChatStreamDecoder:
    """Chat completion chunks → provider events.

    Text, reasoning (`reasoning_content` / `reasoning`, sent by DeepSeek,
    OpenRouter and vLLM) and each tool call (by its `index`, interleaved or
    not) get their own block. The stream is complete at `data: [DONE]`; a
    server that closes right after its `finish_reason` chunk without `[DONE]`
    is tolerated, since the reply itself is whole by then.
    """

    def __init__(self, provider: str = "openai-chat") -> None:
        self.provider = provider
        self.done = False
        self._started = False
        self._next = 0
        self._text: int | None = None
        self._thinking: int | None = None
        self._tools: dict[int, int] = {}  # tool call index → block index
        self._waiting: dict[int, dict[str, str]] = {}  # tool calls whose name has not come yet
        self._open: list[int] = []
        self._finish_reason: str | None = None
        self._usage: Usage | None = None

    def feed(self, event: ServerSentEvent) -> Iterable[ProviderEvent]:
        if event.data.strip() == "[DONE]":
            return self.feed_done()
        chunk = event.json()
        if not isinstance(chunk, dict):
            raise StreamError(f"{self.provider} sent a chunk that is not a JSON object")
        return self.feed_chunk(chunk)

    def _new_block(self, started: ContentBlockStarted) -> tuple[int, ProviderEvent]:
        index = self._next
        self._next += 1
        self._open.append(index)
        return index, started.model_copy(update={"index": index})

    def feed_chunk(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise StreamError(
                f"{self.provider} reported an error mid-stream: {message}; the run was rolled back"
            )
        events: list[ProviderEvent] = []
        if not self._started:
            self._started = True
            events.append(MessageStarted(id=chunk.get("id") or "", model=chunk.get("model") or ""))
        if chunk.get("usage"):
            self._usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue  # n > 1 is not something the runtime asks for
            events += self._delta(choice.get("delta") or {})
            if choice.get("finish_reason"):
                self._finish_reason = choice["finish_reason"]
        return events

    def _delta(self, delta: dict[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if self._thinking is None:
                self._thinking, started = self._new_block(ContentBlockStarted.thinking(0))
                events.append(started)
            events.append(ContentBlockDelta.thinking(self._thinking, reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self._text is None:
                self._text, started = self._new_block(ContentBlockStarted.text(0))
                events.append(started)
            events.append(ContentBlockDelta.text(self._text, content))
        for call in delta.get("tool_calls") or []:
            events += self._tool_call(call)
        return events

    def _tool_call(self, call: dict[str, Any]) -> list[ProviderEvent]:
        position = call.get("index", len(self._tools))
        function = call.get("function") or {}
        arguments = function.get("arguments") or ""
        block = self._tools.get(position)
        if block is None:
            waiting = self._waiting.setdefault(position, {"id": "", "name": "", "arguments": ""})
            waiting["id"] = waiting["id"] or call.get("id") or ""
            waiting["name"] = waiting["name"] or function.get("name") or ""
            waiting["arguments"] += arguments
            if not waiting["name"]:
                return []  # some servers send the name a chunk late; hold the arguments
            del self._waiting[position]
            # A server that sends no id gets a unique one: ids are what approvals and
            # results are matched by, so "call_<n>" repeated every reply would collide.
            call_id = waiting["id"] or f"call_{uuid.uuid4().hex[:24]}"
            block, started = self._new_block(ContentBlockStarted.tool_use(0, call_id, waiting["name"]))
            self._tools[position] = block
            events: list[ProviderEvent] = [started]
            if waiting["arguments"]:
                events.append(ContentBlockDelta.tool_input_json(block, waiting["arguments"]))
            return events
        return [ContentBlockDelta.tool_input_json(block, arguments)] if arguments else []

    def feed_done(self) -> list[ProviderEvent]:
        if not self._started:
            raise StreamError(f"{self.provider} ended its stream without sending any chunk")
        if self._waiting:
            raise StreamError(
                f"{self.provider} streamed a tool call without a function name; "
                "the server's tool calling is broken for this model"
            )
        events: list[ProviderEvent] = [ContentBlockStopped(index=i) for i in self._open]
        self._open = []
        reason = self._finish_reason or "stop"
        stop_reason = _STOP_REASONS.get(reason, reason)
        if self._tools and stop_reason == "end_turn":
            stop_reason = "tool_use"  # some servers say "stop" after tool calls
        events.append(MessageDelta(stop_reason=stop_reason, usage=self._usage or Usage()))
        events.append(MessageStopped())
        self.done = True
        return events

    def finish(self) -> Iterable[ProviderEvent]:
        if self.done:
            return []
        if self._finish_reason is not None:
            return self.feed_done()
        raise StreamError(
            f"{self.provider}'s stream ended before its final chunk (no finish_reason, no "
            "[DONE]); the reply was cut off, so the run was rolled back"
        )


def _usage(raw: Any) -> Usage:
    report = UsageReport("openai-chat", raw)
    cached = report.count("prompt_tokens_details", "cached_tokens")
    return report.usage(
        input_tokens=max(0, report.count("prompt_tokens") - cached),
        output_tokens=report.count("completion_tokens"),
        cache_read_tokens=cached,
    )
