"""Per-agent configuration, persisted with the agent as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mentra_nb.errors import ConfigError

__all__ = ["AgentConfig", "SubagentLimits", "config_error"]


def config_error(model: type[BaseModel], err: ValidationError, what: str | None = None) -> ConfigError:
    """`err` (pydantic's, from validating `model`) as a `ConfigError` naming each bad
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
    return ConfigError(f"{what or 'invalid ' + model.__name__}: " + "; ".join(problems) + more)


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


class _Config(BaseModel):
    """A config model whose constructor raises `ConfigError` (saying what each bad
    field allows), not pydantic's `ValidationError`."""

    if not TYPE_CHECKING:  # the pydantic mypy plugin keeps typing the fields as arguments
        def __init__(self, **data: Any) -> None:
            try:
                super().__init__(**data)
            except ValidationError as err:
                raise config_error(type(self), err) from None


class SubagentLimits(_Config):
    """How far an agent may delegate to subagents. Every count includes the root.

    `max_agents` bounds the whole tree, `max_concurrency` the agents working at
    once, `max_depth` how deep spawning may nest (a child at the limit can still
    work, it just cannot spawn). `approvals` says what happens when a child calls
    a tool that needs the user's approval: "ask" (default) pauses the child until
    the user answers (the SubagentPicker shows the call; the parent gets a notice
    that ends its `wait_agent`); "deny" refuses it at once with the error result
    "headless subagents cannot approve mutations".
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    max_agents: int = Field(default=32, ge=2, le=256)
    max_concurrency: int = Field(default=8, ge=2, le=64)
    max_depth: int = Field(default=4, ge=1, le=16)
    approvals: Literal["ask", "deny"] = "ask"

    @model_validator(mode="after")
    def _concurrency_fits_the_tree(self) -> SubagentLimits:
        if self.max_agents < self.max_concurrency:
            raise ValueError(
                f"subagent max agents must be at least max concurrency "
                f"(max_agents={self.max_agents}, max_concurrency={self.max_concurrency})"
            )
        return self


class AgentConfig(_Config):
    """How an agent talks to its model and which tools it sees.

    `tools` is an allow list (None: every registered tool); `hidden_tools` is
    removed from whatever remains. `max_rounds` bounds model calls per run, and
    `teammate_max_rounds` (default 50) those of each teammate the agent spawns.
    `subagents` lets the agent delegate (True or `SubagentLimits(...)`; None: no
    subagent tools). `auto_approve` names tools whose calls run without asking
    the user even though their spec requires approval (names or globs such as
    `mcp__time__*`); `read_only=True` hides every tool whose spec is not read-only
    (file writes, python, shell, …). `mcp_servers` names the runtime's MCP
    servers whose tools the agent gets (`rt.add_mcp_server(...)`).

    Budgets bound what the agent spends over its life (every run, not each):
    `max_cost_usd` in dollars at the price table's prices, `max_tokens_total` in
    tokens (prompt, cached or not, plus output). A run stops at the round boundary
    once its next model call would pass either, with `BudgetExceeded`; its work is
    kept, and `agent.resume()` continues after `agent.configure(...)` raises the
    budget. A cost budget on a model without a price stops the run before its
    first call: an unknown cost cannot be checked. `prompt_cache` asks Anthropic
    to cache the tools, the system prompt and the conversation so far (OpenAI
    and Gemini cache on their own). `output_retries` (default 2) is how many
    times a typed answer that fails validation goes back to the model with the
    errors before `OutputValidationError`.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    system: str | None = None
    # A lead sees the team tools (team_spawn, team_send, …) once it has a
    # teammate; `team=True` offers them from the start so its model can spawn one.
    team: bool = False
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    max_rounds: int = Field(default=20, ge=1, le=1000)
    # Model calls per run of each teammate this agent spawns (a teammate works
    # through its mail on its own, so it gets more rounds than a lead's turn);
    # `spawn_teammate(..., max_rounds=N)` sets one teammate's.
    teammate_max_rounds: int = Field(default=50, ge=1, le=1000)
    tools: list[str] | None = None
    hidden_tools: list[str] = Field(default_factory=list)
    subagents: SubagentLimits | None = None
    auto_approve: list[str] = Field(default_factory=list)
    read_only: bool = False
    # Names of the runtime's MCP servers whose tools this agent sees (default: none).
    mcp_servers: list[str] = Field(default_factory=list)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens_total: int | None = Field(default=None, gt=0)
    prompt_cache: bool = True
    # How often a typed answer (`agent.send(..., output=Model)`) that fails
    # validation is sent back to the model with the errors before the run fails.
    output_retries: int = Field(default=2, ge=0, le=10)
    # The notebook's cell tools (runtime/cells), where a front end can edit cells:
    # None offers them to every model but the offline test model (which calls
    # every tool it is offered); True or False decides.
    cells: bool | None = None
    # Whether editing a cell the agent inserted itself asks too (a cell the user
    # wrote always asks).
    ask_to_edit_own_cells: bool = False

    @field_validator("subagents", mode="before")
    @classmethod
    def _subagents_switch(cls, value: Any) -> Any:
        # `subagents=True` is the common case: delegate with the default limits.
        if value is True:
            return SubagentLimits()
        return None if value is False else value

    def allows_tool(self, name: str) -> bool:
        if name in self.hidden_tools:
            return False
        # MCP tools are chosen by `mcp_servers`; `tools` narrows the runtime's own.
        return self.tools is None or name in self.tools or name.startswith("mcp__")
