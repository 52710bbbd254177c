"""Tools: what an agent may call, described by a `ToolSpec`, built with `@tool`.

    @tool(read_only=True)
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

The input schema comes from the type hints (or from a single pydantic-model
parameter); input is validated before the call, and a validation failure goes
back to the model as an error result, never as an exception in the turn loop.
A parameter annotated `ToolContext` receives the call's context and is not part
of the schema.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Protocol, get_type_hints, overload, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from mentra_nb.errors import ToolError
from mentra_nb.messages import ImageBlock
from mentra_nb.providers.base import ToolDefinition
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime.events import ToolExecutionProgress

__all__ = [
    "FunctionTool",
    "Tool",
    "ToolContext",
    "ToolDurability",
    "ToolInputError",
    "ToolOutput",
    "ToolSideEffectLevel",
    "ToolSpec",
    "tool",
]


class ToolSideEffectLevel(StrEnum):
    """What a tool changes: nothing, the workspace, or the world outside it."""

    NONE = "none"  # reads only
    LOCAL = "local"  # changes files or state on this machine
    EXTERNAL = "external"  # reaches other systems


class ToolDurability(StrEnum):
    """Whether a tool call may safely run again after a crash (idempotent) or not."""

    REPLAY_SAFE = "replay_safe"  # running it again after a crash is harmless
    NOT_REPLAYABLE = "not_replayable"


class ToolSpec(ToolDefinition):
    """A tool as the runtime sees it: the model-facing definition plus how to run it.

    `read_only` tools of one round run concurrently; the others run one at a
    time, in call order. `timeout` (seconds) bounds one call. A call of a tool
    with `requires_approval` waits for the user's answer (`agent.approve` /
    `agent.deny`, or the AgentView's buttons) unless the agent's config
    auto-approves it or the user chose "always allow" for that agent.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    side_effect_level: ToolSideEffectLevel = ToolSideEffectLevel.NONE
    durability: ToolDurability = ToolDurability.REPLAY_SAFE
    read_only: bool = False
    requires_approval: bool = False
    timeout: float | None = 120.0

    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name, description=self.description, input_schema=self.input_schema
        )


class ToolOutput(BaseModel):
    """Return this from a tool to mark its result as an error without raising, or
    to show the model images: they travel with the tool result to providers that
    take them (inside it for Anthropic, OpenAI Responses and Gemini, right after it
    for Chat Completions); for any other model the result becomes an error saying
    the images could not be shown."""

    model_config = ConfigDict(defer_build=True)

    content: str
    is_error: bool = False
    images: list[ImageBlock] = Field(default_factory=list)


class ToolInputError(Exception):
    """The model's input does not fit the tool's schema (sent back as an error result)."""


class ToolContext:
    """What a running tool may know and do: which agent called it, report progress."""

    def __init__(self, agent: AgentHandle, tool_use_id: str, tool_name: str) -> None:
        self.agent = agent
        self.tool_use_id = tool_use_id
        self.tool_name = tool_name

    @property
    def agent_id(self) -> str:
        return self.agent.id

    @property
    def agent_name(self) -> str:
        return self.agent.name

    def report_progress(self, message: str) -> None:
        """Show `message` as this call's progress (an event; not sent to the model)."""
        state = self.agent.state
        state.emit(ToolExecutionProgress(
            agent_id=self.agent.id, run_generation=state.run_generation,
            tool_use_id=self.tool_use_id, name=self.tool_name, message=message,
        ))


@runtime_checkable
class Tool(Protocol):
    """Anything with a `spec` and an async `run(ctx, input) -> str | ToolOutput`.

    `run` raises `ToolInputError` for input that does not fit; any other
    exception becomes an error result naming the exception.
    """

    spec: ToolSpec

    async def run(self, ctx: ToolContext, input: dict[str, Any]) -> str | ToolOutput: ...


class FunctionTool:
    """A Python function as a tool. Calling the object calls the function."""

    def __init__(self, func: Callable[..., Any], spec: ToolSpec, input_model: type[BaseModel],
                 context_param: str | None, model_param: str | None) -> None:
        self.func = func
        self.spec = spec
        self._input_model = input_model
        self._context_param = context_param
        self._model_param = model_param
        self.__doc__ = func.__doc__
        self.__name__ = getattr(func, "__name__", spec.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tool {self.spec.name}>"

    async def run(self, ctx: ToolContext, input: dict[str, Any]) -> str | ToolOutput:
        try:
            parsed = self._input_model.model_validate(input)
        except ValidationError as err:
            raise ToolInputError(_describe_validation(self.spec.name, err)) from None
        if self._model_param is not None:
            kwargs: dict[str, Any] = {self._model_param: parsed}
        else:
            kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        if inspect.iscoroutinefunction(self.func):
            result = await self.func(**kwargs)
        else:
            # Sync tools run in a worker thread so a slow one never stalls streaming.
            result = await asyncio.to_thread(self.func, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        return render_tool_result(result)


def render_tool_result(result: Any) -> str | ToolOutput:
    if isinstance(result, (str, ToolOutput)):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    try:
        return json.dumps(result, default=str)
    except (TypeError, ValueError):
        return repr(result)


def _describe_validation(name: str, err: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in err.errors()
    )
    return f"invalid input for tool '{name}': {problems}"


@overload
def tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    func: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    side_effect_level: ToolSideEffectLevel | str | None = None,
    durability: ToolDurability | str = ToolDurability.REPLAY_SAFE,
    timeout: float | None = 120.0,
    requires_approval: bool = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    side_effect_level: ToolSideEffectLevel | str | None = None,
    durability: ToolDurability | str = ToolDurability.REPLAY_SAFE,
    timeout: float | None = 120.0,
    requires_approval: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed function (sync or async) into a `FunctionTool`.

    Used bare (`@tool`) or with options (`@tool(read_only=True, timeout=10)`);
    `requires_approval=True` makes every call wait for the user's yes.
    """

    def build(f: Callable[..., Any]) -> FunctionTool:
        return _function_tool(
            f,
            name=name,
            description=description,
            read_only=read_only,
            side_effect_level=side_effect_level,
            durability=durability,
            timeout=timeout,
            requires_approval=requires_approval,
        )

    return build(func) if func is not None else build


_TOOL_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def _function_tool(
    f: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    read_only: bool,
    side_effect_level: ToolSideEffectLevel | str | None,
    durability: ToolDurability | str,
    timeout: float | None,
    requires_approval: bool = False,
) -> FunctionTool:
    tool_name = name or getattr(f, "__name__", "")
    if not tool_name or len(tool_name) > 64 or not set(tool_name) <= _TOOL_NAME_CHARS:
        raise ToolError(
            f"tool name {tool_name!r} is not usable: providers accept 1-64 characters of "
            "letters, digits, '_' and '-'; pass @tool(name=...)"
        )
    try:
        hints = get_type_hints(f, include_extras=True)
    except Exception as err:  # unresolved forward references
        raise ToolError(f"cannot read the type hints of tool '{tool_name}': {err}") from err
    fields: dict[str, Any] = {}
    context_param = None
    model_param = None
    params = [p for p in inspect.signature(f).parameters.values()]
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(f"tool '{tool_name}' cannot take *args or **kwargs; name each input")
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_param = param.name
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    if len(fields) == 1:
        (only, (annotation, _default)), = fields.items()
        if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
            model_param = only
    if model_param is not None:
        input_model: type[BaseModel] = fields[model_param][0]
    else:
        input_model = create_model(
            f"{tool_name}_input", __config__=ConfigDict(extra="forbid"), **fields
        )
    schema = input_model.model_json_schema()
    schema.pop("title", None)
    doc = inspect.cleandoc(f.__doc__ or "").split("\n\n")[0].replace("\n", " ")
    level = ToolSideEffectLevel(side_effect_level) if side_effect_level else (
        ToolSideEffectLevel.NONE if read_only else ToolSideEffectLevel.LOCAL
    )
    spec = ToolSpec(
        name=tool_name,
        description=description if description is not None else doc,
        input_schema=schema,
        read_only=read_only,
        side_effect_level=level,
        durability=ToolDurability(durability),
        timeout=timeout,
        requires_approval=requires_approval,
    )
    return FunctionTool(f, spec, input_model, context_param, model_param)


