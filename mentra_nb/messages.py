"""Conversation vocabulary shared by every layer: content blocks, messages, usage.

Blocks are a tagged union on `type`, so a transcript round-trips through JSON
(`Message.model_dump_json()` / `Message.model_validate_json()`) without pickle.

    >>> Message.user("hello").content == [ContentBlock.text("hello")]
    True
"""

from __future__ import annotations

import warnings
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import CoreSchema, core_schema

from mentra_nb._utf8 import valid_utf8

__all__ = [
    "MAX_CALL_TOKENS",
    "Block",
    "ContentBlock",
    "ImageBlock",
    "Message",
    "RedactedThinkingBlock",
    "Role",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "Usage",
    "preview",
    "token_count",
]


class Role(StrEnum):
    """Who wrote a message: the user or the assistant (tool results travel in user messages)."""

    USER = "user"
    ASSISTANT = "assistant"


class ContentBlock(BaseModel):
    """Base of every block; its class methods build the concrete kinds."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    @staticmethod
    def text(text: str) -> TextBlock:
        return TextBlock(text=text)

    @staticmethod
    def thinking(thinking: str, signature: str | None = None) -> ThinkingBlock:
        return ThinkingBlock(thinking=thinking, signature=signature)

    @staticmethod
    def redacted_thinking(data: str) -> RedactedThinkingBlock:
        return RedactedThinkingBlock(data=data)

    @staticmethod
    def tool_use(id: str, name: str, input: dict[str, Any] | None = None) -> ToolUseBlock:
        return ToolUseBlock(id=id, name=name, input=input or {})

    @staticmethod
    def tool_result(tool_use_id: str, content: str, *, is_error: bool = False,
                    images: list[ImageBlock] | None = None) -> ToolResultBlock:
        return ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=is_error,
                               images=images or [])

    @staticmethod
    def image(media_type: str, data: str) -> ImageBlock:
        return ImageBlock(media_type=media_type, data=data)


# `ContentBlock.text(...)` builds a block while `block.text` reads its field:
# pydantic warns that the field shadows the factory, which is what we want.
warnings.filterwarnings("ignore", message=r'Field name "(text|thinking)" in "\w+Block" shadows')


class _EncodableText:
    """A str that encodes to UTF-8: a lone surrogate (a tool's bytes decoded with
    `surrogateescape`, say) becomes U+FFFD, or the store could not write it. JSON
    cannot carry one (pydantic's parser refuses it), so text read from JSON (every
    stored transcript) is checked by the parser alone, with no Python call per
    string: that call was a sixth of the time a long transcript took to decode."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.json_or_python_schema(
            json_schema=core_schema.str_schema(),
            python_schema=core_schema.no_info_after_validator_function(valid_utf8, core_schema.str_schema()),
        )


EncodableText = Annotated[str, _EncodableText]


class TextBlock(ContentBlock):
    """Plain text (markdown) in a message."""

    type: Literal["text"] = "text"
    # The field shadows the `ContentBlock.text(...)` constructor on purpose: the
    # wire name is `text`, and the class-level constructor stays reachable. `Field()`
    # keeps it required (else the inherited constructor would be its default).
    text: EncodableText = Field()  # type: ignore[assignment]


class ThinkingBlock(ContentBlock):
    """Model reasoning. `signature` must be replayed byte-for-byte to the provider."""

    type: Literal["thinking"] = "thinking"
    thinking: EncodableText = Field()  # type: ignore[assignment]  # shadows ContentBlock.thinking(...), as above
    signature: str | None = None


class RedactedThinkingBlock(ContentBlock):
    """Reasoning the provider encrypted; `data` is opaque and replayed as is."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ToolUseBlock(ContentBlock):
    """The model's call of a tool: its id, the tool's name and the input it gave."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultBlock(ContentBlock):
    """What a tool returned: its text, and the images it showed (a plot for a
    vision model, say), which providers that take images in tool results send
    inside the result."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: EncodableText  # a tool's output is whatever the tool printed; it must still be storable
    is_error: bool = False
    images: list[ImageBlock] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_images(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A result without images stores (and replays) exactly as before images existed.
        data = handler(self)
        if not self.images and isinstance(data, dict):
            data.pop("images", None)
        return data


class ImageBlock(ContentBlock):
    """An inline image, base64-encoded."""

    type: Literal["image"] = "image"
    media_type: str
    data: str


Block = Annotated[
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock,
    Field(discriminator="type"),
]
"""Any content block, told apart by its `type` field."""


class Message(BaseModel):
    """One message of a transcript: its role and its content blocks, committed as a unit."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    role: Role
    content: list[Block]
    # An assistant reply cut by Stop before the model finished it (shown as such).
    truncated: bool = False

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Stored and wire JSON stay as they were for every message that was not cut.
        data = handler(self)
        if not self.truncated and isinstance(data, dict):
            data.pop("truncated", None)
        return data

    @classmethod
    def user(cls, *content: str | ContentBlock) -> Message:
        return cls(role=Role.USER, content=_blocks(content))

    @classmethod
    def assistant(cls, *content: str | ContentBlock) -> Message:
        return cls(role=Role.ASSISTANT, content=_blocks(content))

    @property
    def text(self) -> str:
        """The concatenated text blocks (no thinking, no tool traffic)."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]


def preview(message: Message, limit: int = 80) -> str:
    """A one-line glimpse of `message` for tables and pickers: its text, else its
    tool traffic (`→ lookup`, `← result`), cut to `limit` characters."""
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            parts.append(f"→ {block.name}")
        elif isinstance(block, ToolResultBlock):
            shown = f" [{len(block.images)} image{'s' if len(block.images) > 1 else ''}]" if block.images else ""
            parts.append(f"← {'error: ' if block.is_error else ''}{block.content}{shown}")
        elif isinstance(block, ImageBlock):
            parts.append("[image]")
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _blocks(content: tuple[str | ContentBlock, ...]) -> list[Any]:
    return [TextBlock(text=c) if isinstance(c, str) else c for c in content]


# Impossible counts are clamped to these: one model call never reads or writes
# 100 million tokens (the largest context windows are a few million), and no sum
# of calls reaches a quadrillion (a float holds every count up to it exactly).
MAX_CALL_TOKENS = 100_000_000
"""The most tokens one model call can report; a larger count is clamped to it and flagged."""
MAX_TOTAL_TOKENS = 10**15
_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")


def token_count(value: Any, cap: int = MAX_CALL_TOKENS) -> tuple[int, bool]:
    """A token count as reported (None: absent, 0), and whether it was possible. An
    impossible one (negative, fractional, not a number, above `cap`) is clamped:
    0, or `cap` for a huge one."""
    if value is None:
        return 0, True
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)  # an integer sent as a string is still an integer
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0, False
    if value != value or value < 0:  # NaN, or negative
        return 0, False
    if value > cap:
        return cap, False
    if isinstance(value, float) and not value.is_integer():
        return int(value), False
    return int(value), True


class Usage(BaseModel):
    """Token counts and what they cost. Adding two usages sums every field.

    `input_tokens` are the prompt tokens read at the full price; the prompt
    tokens served from the provider's cache are `cache_read_tokens` and those
    written to it `cache_creation_tokens` (so a prompt is the sum of the three).
    `cost_usd` is what the tokens cost at the price table's prices when they were
    counted (`mentra_nb.pricing`), or None when any model call in the sum had no
    price: an unknown cost is never shown as a number.

    `misreported_calls` counts the model calls in the sum whose usage report was
    impossible (a negative, fractional, non-numeric or absurdly large count; a
    negative or non-finite cost). Each such count was clamped to the nearest
    possible value (0, or the cap) and the call's cost is unknown, so a server's
    report can never lower what an agent has spent, and budgets stop the agent
    rather than trust it (see `mentra_nb.runtime.cost`).
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float | None = 0.0
    misreported_calls: int = 0

    @model_validator(mode="before")
    @classmethod
    def _possible_counts_and_cost(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        misreported = False
        for key in _TOKEN_FIELDS:
            if key in data:
                count, possible = token_count(data[key], MAX_TOTAL_TOKENS)
                data[key], misreported = count, misreported or not possible
        cost = data.get("cost_usd")
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float)
                                 or not 0 <= cost < float("inf")):
            data["cost_usd"], misreported = None, True
        calls = data.get("misreported_calls") or 0
        calls = calls if isinstance(calls, int) and not isinstance(calls, bool) and calls > 0 else 0
        data["misreported_calls"] = max(calls, 1) if misreported else calls
        if data["misreported_calls"]:
            data["cost_usd"] = None  # what a misreported call cost is not known
        # Tokens counted without a price (a provider's report before the runtime
        # prices it, or a row stored before costs were tracked) have an unknown
        # cost, not a zero one; no tokens at all cost nothing.
        elif "cost_usd" not in data and any(data.get(k) for k in _TOKEN_FIELDS):
            data["cost_usd"] = None
        return data

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_creation_tokens=self.cache_creation_tokens + other.cache_creation_tokens,
            cost_usd=cost,
            misreported_calls=self.misreported_calls + other.misreported_calls,
        )

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token: full-price, read from the cache and written to it."""
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens

    @property
    def total_tokens(self) -> int:
        """Every token of the calls: the whole prompt (cached or not) and the output."""
        return self.prompt_tokens + self.output_tokens
