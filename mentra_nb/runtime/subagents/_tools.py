"""The model-facing subagent tools: spawn_agent, send_message, followup_task,
list_agents, interrupt_agent, wait_agent.

Agents are named by path: the root is `/root`, its children `/root/<task_name>`,
theirs `/root/<task_name>/<task_name>`. A target may also be given relative to
the caller (`research` from `/root` is `/root/research`). Results are JSON;
refusals are error results whose text says what to do instead.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mentra_nb.errors import MentraError
from mentra_nb.runtime.subagents._errors import SubagentError
from mentra_nb.runtime.subagents._fork import ForkTurns
from mentra_nb.runtime.subagents._registry import SubagentRegistry
from mentra_nb.runtime.subagents._tree import MAX_MESSAGE_BYTES, valid_task_name
from mentra_nb.runtime.tools import (
    Tool,
    ToolContext,
    ToolDurability,
    ToolInputError,
    ToolOutput,
    ToolSideEffectLevel,
    ToolSpec,
)

__all__ = [
    "WAIT_DEFAULT_MS",
    "WAIT_MAX_MS",
    "WAIT_MIN_MS",
    "ToolCaller",
    "subagent_tool_specs",
    "subagent_tools",
    "validate_message",
    "validate_task_name",
]

WAIT_MIN_MS = 10_000
WAIT_MAX_MS = 120_000
WAIT_DEFAULT_MS = 30_000

_MESSAGE = {
    "type": "string",
    "description": f"Plain text, at most {MAX_MESSAGE_BYTES:,} bytes (UTF-8).",
}
_TARGET = {
    "type": "string",
    "description": "The agent's path, e.g. /root/research, or a path relative to you.",
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


def subagent_tool_specs() -> dict[str, ToolSpec]:
    local = {"side_effect_level": ToolSideEffectLevel.LOCAL,
             "durability": ToolDurability.NOT_REPLAYABLE}
    return {
        "spawn_agent": ToolSpec(
            name="spawn_agent",
            description=(
                "Start a subagent on an independent task; it works in parallel and this call "
                "returns at once with its path. Its result arrives later as a "
                "<subagent_update> message (use wait_agent to wait for it)."
            ),
            input_schema=_schema({
                "task_name": {
                    "type": "string", "pattern": "^[a-z0-9_]{1,64}$",
                    "description": "Short name of the task (a-z, 0-9, _); the agent's path "
                                   "becomes <your path>/<task_name>.",
                },
                "message": {**_MESSAGE, "description": "The task, with everything the agent "
                            f"needs to know. At most {MAX_MESSAGE_BYTES:,} bytes."},
                "fork_turns": {
                    "description": 'How much of your conversation the agent starts with: "none" '
                                   '(default), "all", or the number of most recent turns.',
                    "anyOf": [{"type": "string", "enum": ["none", "all"]},
                              {"type": "integer", "minimum": 1}],
                },
                "model": {"type": "string",
                          "description": "provider:model for the agent; default: your own."},
            }, ["task_name", "message"]),
            **local,
        ),
        "send_message": ToolSpec(
            name="send_message",
            description=(
                "Leave a message for another agent of your tree (e.g. /root or a subagent). It "
                "is read before that agent's next model step; it does not start a new task."
            ),
            input_schema=_schema({"target": _TARGET, "message": _MESSAGE}, ["target", "message"]),
            **local,
        ),
        "followup_task": ToolSpec(
            name="followup_task",
            description=(
                "Give a completed or interrupted subagent a new task; it keeps its conversation "
                "and runs again. An errored subagent cannot be revived: spawn a new one."
            ),
            input_schema=_schema({"target": _TARGET, "message": _MESSAGE}, ["target", "message"]),
            **local,
        ),
        "list_agents": ToolSpec(
            name="list_agents",
            description="List the subagents of your tree with their status, model and last message.",
            input_schema=_schema({"path_prefix": {
                "type": "string", "description": "Only agents whose path starts with this."}}, []),
            read_only=True,
        ),
        "interrupt_agent": ToolSpec(
            name="interrupt_agent",
            description=(
                "Stop a subagent's current turn (it is rolled back; followup_task can restart "
                "it). Returns the status it had."
            ),
            input_schema=_schema({"target": _TARGET}, ["target"]),
            **local,
        ),
        "wait_agent": ToolSpec(
            name="wait_agent",
            description=(
                "Wait until a subagent sends you mail (a result or a message); returns the "
                "paths of the senders, to be read in your next step. Returns [] at once when "
                "no other agent is working, or [] when the timeout passes."
            ),
            input_schema=_schema({"timeout_ms": {
                "type": "integer", "minimum": WAIT_MIN_MS, "maximum": WAIT_MAX_MS,
                "description": f"How long to wait, {WAIT_MIN_MS}-{WAIT_MAX_MS} ms "
                               f"(default {WAIT_DEFAULT_MS}).",
            }}, []),
            read_only=True,
            # The tool bounds itself; the runtime's limit only has to be looser.
            timeout=WAIT_MAX_MS / 1000 + 10,
        ),
    }


# --- input checks (shared with the Python API) -------------------------------------


def validate_task_name(task_name: object) -> str:
    if not valid_task_name(task_name):
        raise SubagentError(
            f"task_name {task_name!r} is not allowed: use 1-64 characters of a-z, 0-9 and _ "
            "(for example 'summarize_data')"
        )
    return task_name  # type: ignore[return-value]


def validate_message(message: object, field: str = "message") -> str:
    if not isinstance(message, str) or not message.strip():
        raise SubagentError(f"{field} must be non-empty text")
    size = len(message.encode("utf-8"))
    if size > MAX_MESSAGE_BYTES:
        raise SubagentError(
            f"{field} is {size:,} bytes; the limit is {MAX_MESSAGE_BYTES:,} bytes (UTF-8). "
            "Shorten it, or put the data where the agent can read it and say where"
        )
    return message


def _fork_turns(value: object) -> ForkTurns:
    if isinstance(value, str):
        value = value.strip()
        # Models write "ALL" or "None" as often as the schema's spelling.
        if value.lower() in ("none", "all"):
            return "all" if value.lower() == "all" else "none"
        if value.isdigit():
            value = int(value)
    if value is None:
        return "none"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise SubagentError(f'fork_turns must be "none", "all" or a number of turns >= 1, not {value!r}')


def _timeout_ms(value: object) -> int:
    if value is None:
        return WAIT_DEFAULT_MS
    if isinstance(value, int) and not isinstance(value, bool) and WAIT_MIN_MS <= value <= WAIT_MAX_MS:
        return value
    raise SubagentError(f"timeout_ms must be an integer from {WAIT_MIN_MS} to {WAIT_MAX_MS}, not {value!r}")


def _text(input: dict[str, Any], name: str, *, required: bool = True) -> Any:
    if name not in input:
        if required:
            raise ToolInputError(f"missing required input '{name}'")
        return None
    value = input[name]
    if not isinstance(value, str):
        raise ToolInputError(f"input '{name}' must be a string, not {type(value).__name__}")
    return value


# --- the tools -------------------------------------------------------------------------

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class SubagentTool:
    """One subagent tool, bound to the agent that may call it."""

    def __init__(self, spec: ToolSpec, handler: Handler) -> None:
        self.spec = spec
        self._handler = handler

    def __repr__(self) -> str:
        return f"<tool {self.spec.name}>"

    async def run(self, ctx: ToolContext, input: dict[str, Any]) -> str | ToolOutput:
        allowed = set(self.spec.input_schema["properties"])
        unknown = sorted(set(input) - allowed)
        if unknown:
            raise ToolInputError(
                f"invalid input for tool '{self.spec.name}': unknown field(s) {', '.join(unknown)}; "
                f"it takes {', '.join(sorted(allowed)) or 'no input'}"
            )
        try:
            result = await self._handler(input)
        except MentraError as err:  # refusals go back to the model, not up the turn loop
            return ToolOutput(content=str(err), is_error=True)
        return json.dumps(result, ensure_ascii=False)


class ToolCaller(Protocol):
    """The agent's subagent extension, as its tools use it (`SubagentAgentExtension`)."""

    @property
    def registry(self) -> SubagentRegistry: ...
    def require_location(self) -> tuple[str, str]: ...
    def resolve(self, target: str) -> str: ...
    def spawn(self, task_name: str, message: str, fork_turns: ForkTurns, model: str | None) -> str: ...
    def send_message(self, target: str, message: str) -> str: ...
    def followup(self, target: str, message: str) -> str: ...
    async def interrupt(self, target: str) -> tuple[str, str]: ...
    async def wait(self, max_wait: float) -> list[str]: ...


def subagent_tools(ext: ToolCaller) -> list[Tool]:
    specs = subagent_tool_specs()

    async def spawn_agent(input: dict[str, Any]) -> Any:
        task_name = validate_task_name(input.get("task_name"))
        message = validate_message(_text(input, "message"))
        model = _text(input, "model", required=False)
        path = ext.spawn(task_name, message, _fork_turns(input.get("fork_turns")), model)
        return {"task_name": path, "status": "running"}

    async def send_message(input: dict[str, Any]) -> Any:
        target = _text(input, "target")
        path = ext.send_message(target, validate_message(_text(input, "message")))
        return {"task_name": path, "queued": True}

    async def followup_task(input: dict[str, Any]) -> Any:
        target = _text(input, "target")
        path = ext.followup(target, validate_message(_text(input, "message")))
        return {"task_name": path, "status": "running"}

    async def list_agents(input: dict[str, Any]) -> Any:
        prefix = _text(input, "path_prefix", required=False)
        root_id, _caller = ext.require_location()
        if prefix is not None and prefix.strip():
            prefix = ext.resolve(prefix) if not prefix.startswith("/") else prefix
        else:
            prefix = None
        return ext.registry.list(root_id, prefix)

    async def interrupt_agent(input: dict[str, Any]) -> Any:
        path, previous = await ext.interrupt(_text(input, "target"))
        return {"task_name": path, "previous_status": previous}

    async def wait_agent(input: dict[str, Any]) -> Any:
        timeout_ms = _timeout_ms(input.get("timeout_ms"))
        return await ext.wait(timeout_ms / 1000)

    handlers: dict[str, Handler] = {
        "spawn_agent": spawn_agent, "send_message": send_message, "followup_task": followup_task,
        "list_agents": list_agents, "interrupt_agent": interrupt_agent, "wait_agent": wait_agent,
    }
    return [SubagentTool(specs[name], handler) for name, handler in handlers.items()]
