"""Google's Gemini API: `streamGenerateContent` with server-sent events.

    GeminiProvider()                            # key from GEMINI_API_KEY or GOOGLE_API_KEY
    GeminiProvider(thinking_budget=1024)        # ask for thought summaries
    rt.spawn("w", "gemini:gemini-2.5-flash")

Gemini names a tool in its result rather than citing a call id, so results are
matched to their calls through the transcript. Thought signatures (which the
API wants back on the part that carried them) ride in a `ThinkingBlock`
placed just before that part, and are reattached to it on the next request.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any, Unpack

from mentra_nb.errors import InvalidRequest, StreamError
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
from mentra_nb.providers._output import answer_from_output_tool, with_output_tool
from mentra_nb.providers._signatures import unwrap, wrap
from mentra_nb.providers._sse import ServerSentEvent
from mentra_nb.providers._transcript import merge_consecutive, tool_names
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

__all__ = ["SIGNATURE_PROTOCOL", "GeminiProvider", "GeminiStreamDecoder", "wire_contents"]

SIGNATURE_PROTOCOL = "gemini"
"""The protocol name Gemini's thought signatures are stored under; another provider's are not sent
to Gemini.
"""
# Ids we make up for calls Gemini sent without one; never sent back as ids.
_LOCAL_ID_PREFIX = "gemini-call-"


class GeminiProvider(HTTPProvider):
    """Provider `gemini`. `GOOGLE_GEMINI_BASE_URL` or `GEMINI_BASE_URL` override the base URL."""

    name = "gemini"
    # functionResponse.parts carries images (multimodal function responses, Gemini 3 models).
    tool_result_images = True
    key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    system = "gcp.gemini"  # the OpenTelemetry GenAI name of the Gemini API
    base_url_env = ("GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL")
    default_base_url = "https://generativelanguage.googleapis.com"

    def __init__(
        self,
        *,
        thinking_budget: int | None = None,
        api_version: str = "v1beta",
        **options: Unpack[ConnectionOptions],
    ) -> None:
        super().__init__(**options)
        self.thinking_budget = thinking_budget
        self.api_version = api_version

    def auth_headers(self, key: Secret | None) -> dict[str, str]:
        # A header, not the `?key=` query parameter, so the key is never part of a URL
        # that httpx could print in an exception.
        return {"x-goog-api-key": key.reveal()} if key is not None else {}

    def request_body(self, request: ProviderRequest) -> dict[str, Any]:
        if request.output is not None and request.tools:
            # Gemini refuses function calling with a JSON response type, so the
            # answer becomes one more function, which the model must call.
            request = with_output_tool(request)
        body: dict[str, Any] = {"contents": wire_contents(request.messages)}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            body["tools"] = [{"functionDeclarations": [_tool(t) for t in request.tools]}]
        if request.tool_choice is not None and (request.tools or request.tool_choice == "none"):
            body["toolConfig"] = {"functionCallingConfig": _tool_choice(request.tool_choice)}
        config: dict[str, Any] = {}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            config["maxOutputTokens"] = request.max_output_tokens
        if request.output is not None and not request.tools:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = request.output.json_schema
        if self.thinking_budget is not None:
            config["thinkingConfig"] = {"includeThoughts": True,
                                        "thinkingBudget": self.thinking_budget}
        if config:
            body["generationConfig"] = config
        return body

    def _model_path(self, model: str) -> str:
        return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        url = (f"{self.base_url}/{self.api_version}/{self._model_path(request.model)}"
               ":streamGenerateContent")
        events = self._post_sse(request.model, url, self.request_body(request),
                                GeminiStreamDecoder(self.name), params={"alt": "sse"})
        return answer_from_output_tool(events) if request.output is not None and request.tools else events

    async def list_models(self) -> list[ModelInfo]:
        data = await self._get_json(f"{self.base_url}/{self.api_version}/models",
                                    params={"pageSize": "1000"})
        models = []
        for m in data.get("models", []):
            if not isinstance(m, dict) or "name" not in m:
                continue
            if "generateContent" not in m.get("supportedGenerationMethods", ["generateContent"]):
                continue
            models.append(ModelInfo(
                id=m["name"].removeprefix("models/"), provider=self.name,
                display_name=m.get("displayName"), context_window=m.get("inputTokenLimit"),
            ))
        return models


def wire_contents(messages: list[Message]) -> list[dict[str, Any]]:
    """Alternating `user` / `model` contents; results name their tool, signatures rejoin parts."""
    names = tool_names(messages)
    contents: list[dict[str, Any]] = []
    for message in merge_consecutive(messages):
        parts: list[dict[str, Any]] = []
        signature: str | None = None
        for block in message.content:
            part: dict[str, Any] | None = None
            if isinstance(block, ThinkingBlock):
                data = unwrap(block.signature, SIGNATURE_PROTOCOL)
                if data is not None:
                    signature = data.get("thoughtSignature")
                continue  # thought summaries are not sent back
            if isinstance(block, TextBlock) and block.text:
                part = {"text": block.text}
            elif isinstance(block, ImageBlock):
                part = {"inlineData": {"mimeType": block.media_type, "data": block.data}}
            elif isinstance(block, ToolUseBlock):
                call: dict[str, Any] = {"name": block.name, "args": block.input}
                if not block.id.startswith(_LOCAL_ID_PREFIX):
                    call["id"] = block.id
                part = {"functionCall": call}
            elif isinstance(block, ToolResultBlock):
                key = "error" if block.is_error else "result"
                reply: dict[str, Any] = {
                    "name": names.get(block.tool_use_id, block.tool_use_id),
                    "response": {key: block.content},
                }
                if not block.tool_use_id.startswith(_LOCAL_ID_PREFIX):
                    reply["id"] = block.tool_use_id
                if block.images:
                    reply["parts"] = [
                        {"inlineData": {"mimeType": image.media_type, "data": image.data,
                                        "displayName": f"image-{n}"}}
                        for n, image in enumerate(block.images, 1)]
                part = {"functionResponse": reply}
            if part is None:
                continue
            if signature is not None:
                part["thoughtSignature"] = signature
                signature = None
            parts.append(part)
        if parts:
            role = "model" if message.role is Role.ASSISTANT else "user"
            if contents and contents[-1]["role"] == role:
                contents[-1]["parts"].extend(parts)
            else:
                contents.append({"role": role, "parts": parts})
    return contents


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    # `parametersJsonSchema` takes full JSON Schema; `parameters` only an OpenAPI subset.
    return {"name": tool.name, "description": tool.description,
            "parametersJsonSchema": tool.input_schema}


def _tool_choice(choice: ToolChoice) -> dict[str, Any]:
    if choice in ("auto", "any", "none"):
        return {"mode": choice.upper()}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}


_STOP_REASONS = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens"}


class GeminiStreamDecoder:
    """GenerateContentResponse chunks → provider events.

    Gemini has no closing event: the last chunk carries `finishReason` (usage
    may follow in one more chunk), so the stream is read to its end and is
    complete only if a finish reason was seen.
    """

    def __init__(self, provider: str = "gemini") -> None:
        self.provider = provider
        self.done = False
        self._started = False
        self._next = 0
        self._current: tuple[int, str] | None = None  # the open text/thinking block
        self._open: list[int] = []
        self._finish_reason: str | None = None
        self._usage = Usage()
        self._called_tool = False
        self._response_id = ""

    def _new_block(self, started: ContentBlockStarted) -> tuple[int, list[ProviderEvent]]:
        events: list[ProviderEvent] = self._close_current()
        index = self._next
        self._next += 1
        self._open.append(index)
        events.append(started.model_copy(update={"index": index}))
        return index, events

    def _close_current(self) -> list[ProviderEvent]:
        if self._current is None:
            return []
        index, _ = self._current
        self._current = None
        self._open.remove(index)
        return [ContentBlockStopped(index=index)]

    def feed(self, event: ServerSentEvent) -> Iterable[ProviderEvent]:
        chunk = event.json()
        if isinstance(chunk, list) and chunk:
            chunk = chunk[0]
        if not isinstance(chunk, dict):
            raise StreamError(f"{self.provider} sent a chunk that is not a JSON object")
        if chunk.get("error"):
            error = chunk["error"]
            raise StreamError(
                f"{self.provider} reported an error mid-stream ({error.get('status', 'error')}): "
                f"{error.get('message', error)}; the run was rolled back"
            )
        events: list[ProviderEvent] = []
        if not self._started:
            self._started = True
            self._response_id = chunk.get("responseId") or uuid.uuid4().hex[:12]
            events.append(MessageStarted(id=chunk.get("responseId", ""),
                                         model=chunk.get("modelVersion", "")))
        candidates = chunk.get("candidates") or []
        feedback = chunk.get("promptFeedback") or {}
        if not candidates and feedback.get("blockReason"):
            raise InvalidRequest(
                f"{self.provider} blocked the prompt ({feedback['blockReason']}); "
                "rephrase it or adjust the safety settings"
            )
        if chunk.get("usageMetadata"):
            self._usage = _usage(chunk["usageMetadata"])
        if candidates:
            candidate = candidates[0]
            for part in (candidate.get("content") or {}).get("parts") or []:
                events += self._part(part)
            if candidate.get("finishReason"):
                self._finish_reason = candidate["finishReason"]
        return events

    def _part(self, part: dict[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        if part.get("thoughtSignature"):
            index, opened = self._new_block(ContentBlockStarted.thinking(0))
            data = {"thoughtSignature": part["thoughtSignature"]}
            events += [*opened, ContentBlockDelta.signature(index, wrap(SIGNATURE_PROTOCOL, data))]
            events += self._close_current_if(index)
        if "functionCall" in part:
            call = part["functionCall"]
            call_id = call.get("id") or f"{_LOCAL_ID_PREFIX}{self._response_id}-{self._next}"
            self._called_tool = True
            index, opened = self._new_block(ContentBlockStarted.tool_use(0, call_id, call["name"]))
            events += opened
            events.append(ContentBlockDelta.tool_input_json(index, json.dumps(call.get("args") or {})))
            self._open.remove(index)
            events.append(ContentBlockStopped(index=index))
        elif isinstance(part.get("text"), str):
            kind = "thinking" if part.get("thought") else "text"
            if self._current is None or self._current[1] != kind:
                started = ContentBlockStarted.thinking(0) if kind == "thinking" else ContentBlockStarted.text(0)
                index, opened = self._new_block(started)
                self._current = (index, kind)
                events += opened
            index = self._current[0]
            if part["text"]:
                delta = ContentBlockDelta.thinking if kind == "thinking" else ContentBlockDelta.text
                events.append(delta(index, part["text"]))
        return events

    def _close_current_if(self, index: int) -> list[ProviderEvent]:
        # A signature block is whole as soon as it opens.
        if index in self._open:
            self._open.remove(index)
            return [ContentBlockStopped(index=index)]
        return []

    def finish(self) -> Iterable[ProviderEvent]:
        if self._finish_reason is None:
            raise StreamError(
                f"{self.provider}'s stream ended without a finishReason; the reply was cut off, "
                "so the run was rolled back"
            )
        events: list[ProviderEvent] = [ContentBlockStopped(index=i) for i in self._open]
        self._open = []
        stop_reason = _STOP_REASONS.get(self._finish_reason, self._finish_reason.lower())
        if self._called_tool and stop_reason == "end_turn":
            stop_reason = "tool_use"
        events += [MessageDelta(stop_reason=stop_reason, usage=self._usage), MessageStopped()]
        self.done = True
        return events


def _usage(raw: Any) -> Usage:
    report = UsageReport("gemini", raw)
    cached = report.count("cachedContentTokenCount")
    return report.usage(
        input_tokens=max(0, report.count("promptTokenCount") - cached),
        output_tokens=report.count("candidatesTokenCount") + report.count("thoughtsTokenCount"),
        cache_read_tokens=cached,
    )
