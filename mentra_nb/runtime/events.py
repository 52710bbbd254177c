"""Events an agent publishes while it works (`agent.events()`).

Snapshots say *where* an agent is; events say *what happened*, including the
deltas a live view appends. Every event carries the agent id and the run
generation it belongs to.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.messages import Message, Usage

__all__ = [
    "AgentEvent",
    "AssistantMessageCommitted",
    "HistoryReplaced",
    "ReasoningDelta",
    "RetryAttempted",
    "RunCancelled",
    "RunFailed",
    "RunFinished",
    "RunStarted",
    "TextDelta",
    "ToolApprovalRequested",
    "ToolApprovalResolved",
    "ToolExecutionFinished",
    "ToolExecutionProgress",
    "ToolExecutionStarted",
    "ToolResultsCommitted",
    "ToolUseReady",
    "ToolUseUpdated",
    "UsageReported",
]


class _AgentEvent(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    agent_id: str
    run_generation: int


class RunStarted(_AgentEvent):
    """A run began (its run generation)."""

    type: Literal["run_started"] = "run_started"


class RunFinished(_AgentEvent):
    """The run ended with the model's final answer (or a stop)."""

    type: Literal["run_finished"] = "run_finished"
    message: Message


class RunFailed(_AgentEvent):
    """The run failed; `rolled_back` says whether its turn was rolled back."""

    type: Literal["run_failed"] = "run_failed"
    error: str
    rolled_back: bool


class RunCancelled(_AgentEvent):
    """The run was cancelled (`agent.cancel()`) and rolled back."""

    type: Literal["run_cancelled"] = "run_cancelled"


class TextDelta(_AgentEvent):
    """More of the reply's text, as it streams."""

    type: Literal["text_delta"] = "text_delta"
    index: int
    text: str


class ReasoningDelta(_AgentEvent):
    """More of the model's thinking, as it streams."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    index: int
    text: str


class ToolUseUpdated(_AgentEvent):
    """More of a tool call's input JSON arrived (`input_json` is everything so far)."""

    type: Literal["tool_use_updated"] = "tool_use_updated"
    tool_use_id: str
    name: str
    input_json: str


class ToolUseReady(_AgentEvent):
    """The model finished writing a tool call: its name and parsed input."""

    type: Literal["tool_use_ready"] = "tool_use_ready"
    tool_use_id: str
    name: str
    input: dict[str, Any]


class ToolApprovalRequested(_AgentEvent):
    """The run paused: this call waits for `agent.approve(id)` or `agent.deny(id, reason)`."""

    type: Literal["tool_approval_requested"] = "tool_approval_requested"
    tool_use_id: str
    name: str
    input: dict[str, Any]


class ToolApprovalResolved(_AgentEvent):
    """The user answered; `always` means this agent will not be asked about `name` again."""

    type: Literal["tool_approval_resolved"] = "tool_approval_resolved"
    tool_use_id: str
    name: str
    approved: bool
    always: bool = False
    reason: str = ""


class ToolExecutionStarted(_AgentEvent):
    """A tool call began to run."""

    type: Literal["tool_execution_started"] = "tool_execution_started"
    tool_use_id: str
    name: str


class ToolExecutionProgress(_AgentEvent):
    """A running tool call reported progress."""

    type: Literal["tool_execution_progress"] = "tool_execution_progress"
    tool_use_id: str
    name: str
    message: str


class ToolExecutionFinished(_AgentEvent):
    """A tool call finished: its result, and whether it is an error."""

    type: Literal["tool_execution_finished"] = "tool_execution_finished"
    tool_use_id: str
    name: str
    content: str
    is_error: bool


class AssistantMessageCommitted(_AgentEvent):
    """The assistant's message was written to the transcript."""

    type: Literal["assistant_message_committed"] = "assistant_message_committed"
    message: Message


class ToolResultsCommitted(_AgentEvent):
    """A round's tool results were written to the transcript."""

    type: Literal["tool_results_committed"] = "tool_results_committed"
    message: Message


class HistoryReplaced(_AgentEvent):
    """The transcript was replaced, not appended to: a rewind, an edit or a switch
    of branch. Views re-read the history (`history_len` messages, on `branch_id`)."""

    type: Literal["history_replaced"] = "history_replaced"
    branch_id: str
    history_len: int


class UsageReported(_AgentEvent):
    """Usage of one committed message (`usage`) and the agent's running total."""

    type: Literal["usage_reported"] = "usage_reported"
    usage: Usage
    total: Usage


class RetryAttempted(_AgentEvent):
    """Opening the stream failed with a transient error and will be tried again after a delay."""

    type: Literal["retry_attempted"] = "retry_attempted"
    attempt: int
    delay_s: float
    reason: str


AgentEvent = Annotated[
    RunStarted | RunFinished | RunFailed | RunCancelled | TextDelta | ReasoningDelta | ToolUseUpdated | ToolUseReady | ToolApprovalRequested | ToolApprovalResolved | ToolExecutionStarted | ToolExecutionProgress | ToolExecutionFinished | AssistantMessageCommitted | ToolResultsCommitted | UsageReported | RetryAttempted | HistoryReplaced,
    Field(discriminator="type"),
]
"""Any event an agent publishes (`agent.events()`), told apart by its `type` field."""
