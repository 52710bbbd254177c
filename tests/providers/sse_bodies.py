"""Small SSE bodies in each provider's wire format, built for a test: a text answer
(or Anthropic's `final_answer` tool call) with the usage report the test chooses,
hostile or not. The recorded transcripts in wire/ are the reference for their shape."""

from __future__ import annotations

import json
from typing import Any

# The usage object each format carries, from plain token counts.
USAGE_FIELDS = {
    "openai-chat": ("prompt_tokens", "completion_tokens"),
    "openai": ("input_tokens", "output_tokens"),
    "anthropic": ("input_tokens", "output_tokens"),
    "gemini": ("promptTokenCount", "candidatesTokenCount"),
}


def _events(*pairs: tuple[str | None, Any]) -> bytes:
    out = []
    for name, data in pairs:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out).encode()


def chat_sse(text: str, usage: Any) -> bytes:
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    return _events(
        (None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        *([(None, {**chunk, "choices": [], "usage": usage})] if usage is not None else []),
        (None, "[DONE]"),
    )


def openai_sse(text: str, usage: Any) -> bytes:
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return _events(
        ("response.created", {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {**item, "status": "in_progress", "content": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1",
                                        "output_index": 0, "content_index": 0, "delta": text}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": {
            "id": "resp_1", "status": "completed", "output": [item], "usage": usage}}),
    )


def anthropic_sse(text: str, usage: Any, *, final_answer: bool = False) -> bytes:
    """A text answer, or (`final_answer`) `text` as the input of the final_answer tool.
    message_start carries `usage` as it is, message_delta its output_tokens again."""
    block = ({"type": "tool_use", "id": "toolu_1", "name": "final_answer", "input": {}} if final_answer
             else {"type": "text", "text": ""})
    delta = ({"type": "input_json_delta", "partial_json": text} if final_answer
             else {"type": "text_delta", "text": text})
    later = {k: v for k, v in usage.items() if k == "output_tokens"} if isinstance(usage, dict) else usage
    return _events(
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
            "usage": usage if usage is not None else {}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "tool_use" if final_answer else "end_turn"},
                           "usage": later}),
        ("message_stop", {"type": "message_stop"}),
    )


def gemini_sse(text: str, usage: Any) -> bytes:
    return _events((None, {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP",
                        "index": 0}],
        **({"usageMetadata": usage} if usage is not None else {}),
        "modelVersion": "m", "responseId": "r1"}))


def sse_body(provider: str, text: str, usage: Any, *, typed: bool = False) -> bytes:
    """`text` as `provider`'s answer (`typed`: a typed answer, which Anthropic gives as
    its final_answer tool's input)."""
    if provider == "openai-chat":
        return chat_sse(text, usage)
    if provider == "openai":
        return openai_sse(text, usage)
    if provider == "gemini":
        return gemini_sse(text, usage)
    return anthropic_sse(text, usage, final_answer=typed)
