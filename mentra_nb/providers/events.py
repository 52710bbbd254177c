"""The events a provider stream yields, normalised across wire protocols.

A stream is: `MessageStarted`, then per content block `ContentBlockStarted`,
any number of `ContentBlockDelta`, `ContentBlockStopped`; then `MessageDelta`
(stop reason, usage) and finally `MessageStopped`. A stream that ends without
`MessageStopped` was cut and is an error, never a silent truncation.

`MessageDelta.usage` carries the message's usage *so far* (cumulative within the
message); the turn loop keeps the latest one and adds it to the agent's totals
when the message is committed. `RetryAttempt` may come before `MessageStarted`
when the provider had to retry opening the stream.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mentra_nb.messages import Role, Usage

__all__ = [
    "BlockKind",
    "ContentBlockDelta",
    "ContentBlockStarted",
    "ContentBlockStopped",
    "DeltaKind",
    "MessageDelta",
    "MessageStarted",
    "MessageStopped",
    "ProviderEvent",
    "RetryAttempt",
]

BlockKind = Literal["text", "thinking", "redacted_thinking", "tool_use"]
"""The kinds of content block a stream opens."""
DeltaKind = Literal["text", "tool_input_json", "thinking", "signature"]
"""The kinds of delta a content block receives."""


class _Event(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)


class MessageStarted(_Event):
    """A reply began: the model that answers, its response id and the usage so far."""

    type: Literal["message_started"] = "message_started"
    id: str = ""
    model: str = ""
    role: Role = Role.ASSISTANT


class ContentBlockStarted(_Event):
    """A block opens at `index`. Tool use blocks carry their id and name;
    redacted thinking carries its opaque data whole."""

    type: Literal["content_block_started"] = "content_block_started"
    index: int
    kind: BlockKind
    tool_use_id: str | None = None
    tool_name: str | None = None
    redacted_data: str | None = None

    @model_validator(mode="after")
    def _tool_use_has_identity(self) -> ContentBlockStarted:
        if self.kind == "tool_use" and not (self.tool_use_id and self.tool_name):
            raise ValueError("a tool_use block start needs tool_use_id and tool_name")
        return self

    @classmethod
    def text(cls, index: int) -> ContentBlockStarted:
        return cls(index=index, kind="text")

    @classmethod
    def thinking(cls, index: int) -> ContentBlockStarted:
        return cls(index=index, kind="thinking")

    @classmethod
    def redacted_thinking(cls, index: int, data: str) -> ContentBlockStarted:
        return cls(index=index, kind="redacted_thinking", redacted_data=data)

    @classmethod
    def tool_use(cls, index: int, id: str, name: str) -> ContentBlockStarted:
        return cls(index=index, kind="tool_use", tool_use_id=id, tool_name=name)


class ContentBlockDelta(_Event):
    """More of an open content block: text, thinking, a signature or a tool call's input JSON."""

    type: Literal["content_block_delta"] = "content_block_delta"
    index: int
    kind: DeltaKind
    value: str

    @classmethod
    def text(cls, index: int, text: str) -> ContentBlockDelta:
        return cls(index=index, kind="text", value=text)

    @classmethod
    def tool_input_json(cls, index: int, partial_json: str) -> ContentBlockDelta:
        return cls(index=index, kind="tool_input_json", value=partial_json)

    @classmethod
    def thinking(cls, index: int, text: str) -> ContentBlockDelta:
        return cls(index=index, kind="thinking", value=text)

    @classmethod
    def signature(cls, index: int, signature: str) -> ContentBlockDelta:
        return cls(index=index, kind="signature", value=signature)


class ContentBlockStopped(_Event):
    """A content block is complete."""

    type: Literal["content_block_stopped"] = "content_block_stopped"
    index: int


class MessageDelta(_Event):
    """The message's end: why it stopped and its final usage."""

    type: Literal["message_delta"] = "message_delta"
    stop_reason: str | None = None
    usage: Usage | None = None


class MessageStopped(_Event):
    """The stream's last event: the reply is complete."""

    type: Literal["message_stopped"] = "message_stopped"


class RetryAttempt(_Event):
    """Opening the stream failed transiently; the provider waits `delay_s` and tries again."""

    type: Literal["retry_attempt"] = "retry_attempt"
    attempt: int
    delay_s: float
    reason: str


ProviderEvent = Annotated[
    MessageStarted | ContentBlockStarted | ContentBlockDelta | ContentBlockStopped | MessageDelta | MessageStopped | RetryAttempt,
    Field(discriminator="type"),
]
"""Any event a provider's stream yields, told apart by its `type` field."""
