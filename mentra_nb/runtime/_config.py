"""Per-agent configuration, persisted with the agent as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mentra_nb.errors import ConfigError
from mentra_nb.runtime._extension_fields import config_fields

__all__ = ["AgentConfig", "ConfigModel", "config_error", "describe_problems"]


def config_error(model: type[BaseModel], err: ValidationError, what: str | None = None) -> ConfigError:
    """`err` (pydantic's, from validating `model`) as a `ConfigError` naming each bad
    field, the value given and what the field allows."""
    return ConfigError(f"{what or 'invalid ' + model.__name__}: " + describe_problems(model, err))


def describe_problems(model: type[BaseModel], err: ValidationError) -> str:
    """The first few problems of `err` (from validating `model`), each naming the
    field, the value given and what the field allows."""
    problems = []
    for error in err.errors(include_url=False)[:3]:
        loc = ".".join(str(part) for part in error["loc"])
        raised = (error.get("ctx") or {}).get("error")
        if isinstance(raised, ValueError):  # a validator's own message (a nested config's too)
            problems.append(f"{loc}: {raised}" if loc else str(raised))
            continue
        given = repr(error["input"])[:60] if error["type"] != "missing" else "missing"
        allowed = _allowed(model, error["loc"])
        problems.append(f"{loc}={given}: {error['msg'][0].lower()}{error['msg'][1:]}"
                        + (f"; it must be {allowed}" if allowed else ""))
    more = f" (and {err.error_count() - 3} more)" if err.error_count() > 3 else ""
    return "; ".join(problems) + more


def _allowed(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> str | None:
    """What a numeric field at `loc` accepts, from its type and bounds (None: not numeric)."""
    info = None
    for part in loc:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        info = model.model_fields[part]
        model = next((a for a in (*get_args(info.annotation), info.annotation)
                      if isinstance(a, type) and issubclass(a, BaseModel)), None)
    if info is None:
        return None
    types = (*get_args(info.annotation), info.annotation)
    kind = "a whole number" if int in types else "a number" if float in types else None
    if kind is None:
        return None
    bounds = []
    for rule in info.metadata:
        if isinstance(rule, annotated_types.Gt):
            bounds.append(f"above {rule.gt:g}")
        elif isinstance(rule, annotated_types.Ge):
            bounds.append(f"at least {rule.ge:g}")
        elif isinstance(rule, annotated_types.Lt):
            bounds.append(f"below {rule.lt:g}")
        elif isinstance(rule, annotated_types.Le):
            bounds.append(f"at most {rule.le:g}")
    return " ".join([kind, " and ".join(bounds)]).strip() + (", or None" if type(None) in types else "")


class ConfigModel(BaseModel):
    """A config model whose constructor raises `ConfigError` (saying what each bad
    field allows), not pydantic's `ValidationError`."""

    if not TYPE_CHECKING:  # the pydantic mypy plugin keeps typing the fields as arguments
        def __init__(self, **data: Any) -> None:
            try:
                super().__init__(**data)
            except ValidationError as err:
                raise config_error(type(self), err) from None


class AgentConfig(ConfigModel):
    """How an agent talks to its model and which tools it sees.

    `tools` is an allow list (None: every registered tool); `hidden_tools` is
    removed from whatever remains. `max_rounds` bounds model calls per run.
    `auto_approve` names tools whose calls run without asking the user even
    though their spec requires approval (names or globs such as `files__*`);
    `read_only=True` hides every tool whose spec is not read-only (file writes,
    python, shell, …). `prompt_cache` asks Anthropic to cache the tools, the
    system prompt and the conversation so far (OpenAI and Gemini cache on their
    own). `output_retries` (default 2) is how many times a typed answer that
    fails validation goes back to the model with the errors before
    `OutputValidationError`.

    The registered extensions add fields of their own, given and read like these
    (`AgentConfig(max_rounds=5, **extension_fields)`, stored with the agent); each
    extension's documentation lists them, and `ExtensionFields.of(config)` reads
    one extension's typed. An unknown name is a `ConfigError` listing the known ones.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow")

    system: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    max_rounds: int = Field(default=20, ge=1, le=1000)
    tools: list[str] | None = None
    hidden_tools: list[str] = Field(default_factory=list)
    auto_approve: list[str] = Field(default_factory=list)
    read_only: bool = False
    prompt_cache: bool = True
    # How often a typed answer (`agent.send(..., output=Model)`) that fails
    # validation is sent back to the model with the errors before the run fails.
    output_retries: int = Field(default=2, ge=0, le=10)

    @model_validator(mode="before")
    @classmethod
    def _extension_fields(cls, data: Any) -> Any:
        """Validate each extension's fields with the model that declared them; every
        declared field is set (its default when not given), so a stored config
        lists them all, as it did when they were built in."""
        if not isinstance(data, dict):
            return data
        declared = config_fields()
        unknown = [k for k in data if k not in cls.model_fields and k not in declared]
        if unknown:
            known = ", ".join(sorted([*cls.model_fields, *declared]))
            raise ValueError(f"unknown config field{'s' if len(unknown) > 1 else ''} "
                             f"{', '.join(map(repr, unknown))}; AgentConfig takes: {known}")
        validated = {k: v for k, v in data.items() if k in cls.model_fields}
        problems = []
        for model in dict.fromkeys(declared.values()):
            try:
                fields = model.model_validate({k: v for k, v in data.items() if k in model.model_fields})
            except ValidationError as err:
                problems.append(describe_problems(model, err))
                continue
            validated.update({name: getattr(fields, name) for name in model.model_fields})
        if problems:
            raise ValueError("; ".join(problems))
        return validated

    def allows_tool(self, name: str) -> bool:
        """Whether the allow and hide lists let the agent see tool `name`."""
        return name not in self.hidden_tools and (self.tools is None or name in self.tools)
