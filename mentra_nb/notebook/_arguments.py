"""The `%mentra` command line: `shlex` words parsed into pydantic models.

Each command is a model whose fields are its arguments; positional order,
usage lines and `%mentra help` are all generated from the same models, so
help can never drift from what the parser accepts.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mentra_nb.runtime import AGENT_NAME_PATTERN, AGENT_NAME_RULE

__all__ = [
    "COMMANDS",
    "ApproveArgs",
    "CellArgs",
    "Command",
    "CostArgs",
    "DbArgs",
    "DenyArgs",
    "HelpArgs",
    "InterruptArgs",
    "ListAgentsArgs",
    "ModelsArgs",
    "ParseError",
    "ResumeArgs",
    "SendArgs",
    "SpawnArgs",
    "StopArgs",
    "SubagentsArgs",
    "TeamArgs",
    "TeammateArgs",
    "help_text",
    "parse_cell",
    "parse_line",
]

# The runtime's rule, checked while parsing so a bad name is a usage error.
AgentName = Annotated[str, Field(pattern=AGENT_NAME_PATTERN)]


class ParseError(ValueError):
    """Bad `%mentra` input; the message ends with the usage line."""


class Command(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    command: ClassVar[str]
    summary: ClassVar[str]
    positionals: ClassVar[tuple[str, ...]] = ()
    rest: ClassVar[str | None] = None  # the field that takes the rest of the line
    metavars: ClassVar[dict[str, str]] = {}

    @classmethod
    def usage(cls, prefix: str = "%mentra") -> str:
        words = [prefix, cls.command] if cls.command else [prefix]
        for name in cls.positionals:
            field = cls.model_fields[name]
            meta = cls.metavars.get(name, name.upper())
            words.append(meta if field.is_required() else f"[{meta}]")
        if cls.rest:
            words.append(cls.metavars.get(cls.rest, cls.rest.upper()))
        for name, field in cls.model_fields.items():
            if name in cls.positionals or name == cls.rest:
                continue
            flag = "--" + name.replace("_", "-")
            if field.annotation is bool:
                words.append(f"[{flag}]")
            else:
                words.append(f"[{flag} {cls.metavars.get(name, name.upper())}]")
        return " ".join(words)


def _split_commas(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class SpawnArgs(Command):
    command = "spawn"
    summary = ("create an agent and show its view (--subagents: it may delegate; --team: it may lead a team; "
               "--python/--shell: enable those tools, each call approved by you; --read-only: no tool that "
               "changes anything; --auto-approve: tools that run without asking)")
    positionals = ("agent",)
    metavars = {"agent": "NAME", "model": "PROVIDER:MODEL", "system": "TEXT", "tools": "A,B",
                "auto_approve": "A,B"}
    agent: AgentName
    model: str | None = None
    system: str | None = None
    tools: list[str] | None = None
    subagents: bool = False
    team: bool = False
    python: bool = False
    shell: bool = False
    read_only: bool = False
    auto_approve: list[str] | None = None

    _tools = field_validator("tools", "auto_approve", mode="before")(_split_commas)


class SendArgs(Command):
    command = "send"
    summary = "send NAME a message; returns a Turn at once (--wait blocks until it answers)"
    positionals = ("agent",)
    rest = "text"
    metavars = {"agent": "NAME"}
    agent: AgentName
    text: str = Field(min_length=1)
    wait: bool = False


class ListAgentsArgs(Command):
    command = "list"
    summary = "the agents stored for this notebook and whether they are live"


class ResumeArgs(Command):
    command = "resume"
    summary = ("bring stored agents back after a kernel restart (all, or NAME; --python/--shell: enable "
               "those tools again first)")
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName | None = None
    all: bool = False
    python: bool = False
    shell: bool = False


class InterruptArgs(Command):
    command = "interrupt"
    summary = "abort NAME's turn now (rolled back; agent.resume() replays it)"
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName


class StopArgs(Command):
    command = "stop"
    summary = "let NAME finish its current round, then stop, keeping the work"
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName


class ApproveArgs(Command):
    command = "approve"
    summary = ("let NAME's paused tool call CALL_ID run; CALL_ID@RUN as shown binds it to that run "
               "(--always: never ask about that tool again)")
    positionals = ("agent", "call_id")
    metavars = {"agent": "NAME", "call_id": "CALL_ID"}
    agent: AgentName
    call_id: str = Field(min_length=1)
    always: bool = False


class DenyArgs(Command):
    command = "deny"
    summary = "refuse NAME's paused tool call CALL_ID; the model reads the reason"
    positionals = ("agent", "call_id")
    metavars = {"agent": "NAME", "call_id": "CALL_ID", "reason": "TEXT"}
    agent: AgentName
    call_id: str = Field(min_length=1)
    reason: str = ""


class TeamArgs(Command):
    command = "team"
    summary = "show LEAD's team: teammates, their status and mail, requests waiting for LEAD"
    positionals = ("lead",)
    lead: AgentName


class TeammateArgs(Command):
    command = "teammate"
    summary = "give LEAD a persistent teammate NAME with a ROLE (--prompt: its first mail)"
    positionals = ("lead", "agent")
    metavars = {"agent": "NAME", "model": "PROVIDER:MODEL", "prompt": "TEXT"}
    lead: AgentName
    agent: AgentName
    role: str = Field(min_length=1)
    prompt: str | None = None
    model: str | None = None


class SubagentsArgs(Command):
    command = "subagents"
    summary = "show NAME's subagents: count, status, click one to read its transcript"
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName


class CostArgs(Command):
    command = "cost"
    summary = ("what NAME (or every agent) has cost: its own calls, its team's and its subagents', "
               "at the price table's prices")
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName | None = None


class DbArgs(Command):
    command = "db"
    summary = "show where this notebook's agents are stored, or move to PATH"
    positionals = ("path",)
    path: str | None = None


class ModelsArgs(Command):
    command = "models"
    summary = "list the models a provider offers"
    positionals = ("provider",)
    provider: str | None = None


class HelpArgs(Command):
    command = "help"
    summary = "this help, or one command's"
    positionals = ("topic",)
    metavars = {"topic": "COMMAND"}
    topic: str | None = None


class CellArgs(Command):
    """`%%mentra NAME [--wait] [--no-interpolate]`: the cell body is the prompt."""

    command = ""
    summary = "send the cell body to NAME ({var} takes a kernel variable)"
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName
    wait: bool = False
    no_interpolate: bool = False


COMMANDS: dict[str, type[Command]] = {
    c.command: c for c in (SpawnArgs, SendArgs, ListAgentsArgs, ResumeArgs, ApproveArgs, DenyArgs,
                           TeamArgs, TeammateArgs, SubagentsArgs, InterruptArgs, StopArgs, CostArgs,
                           DbArgs, ModelsArgs, HelpArgs)
}


def parse_line(line: str) -> Command:
    words = _split(line, "%mentra help")
    if not words:
        raise ParseError(f"say what to do; for example: {SpawnArgs.usage()}\n(%mentra help lists every command)")
    name, *args = words
    command = COMMANDS.get(name)
    if command is None:
        known = ", ".join(COMMANDS)
        raise ParseError(f"unknown command '{name}'; the commands are: {known}\nusage: %mentra help")
    return _build(command, args)


def parse_cell(line: str) -> CellArgs:
    return _build(CellArgs, _split(line, CellArgs.usage("%%mentra")), prefix="%%mentra")  # type: ignore[return-value]


def help_text(topic: str | None = None) -> str:
    if topic:
        command = COMMANDS.get(topic)
        if command is None:
            raise ParseError(f"no command '{topic}'; the commands are: {', '.join(COMMANDS)}")
        return f"{command.usage()}\n    {command.summary}"
    lines = ["mentra-nb magics (state lives in a SQLite file beside the notebook):", ""]
    for command in COMMANDS.values():
        lines += [f"  {command.usage()}", f"      {command.summary}"]
    lines += [f"  {CellArgs.usage('%%mentra')}", f"      {CellArgs.summary}", "",
              "  %config MentraMagics.default_model = 'anthropic:claude-sonnet-4-5'  sets the default model"]
    return "\n".join(lines)


def _split(line: str, usage: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as err:
        raise ParseError(f"cannot read the line ({err}); close your quotes\nusage: {usage}") from None


def _build(command: type[Command], words: list[str], prefix: str = "%mentra") -> Command:
    usage = command.usage(prefix)
    values: dict[str, Any] = {}
    positional: list[str] = []
    fields = command.model_fields
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--") and len(word) > 2:
            name = word[2:].replace("-", "_")
            field = fields.get(name)
            if field is None or name in command.positionals or name == command.rest:
                options = [f"--{n.replace('_', '-')}" for n in fields if n not in command.positionals and n != command.rest]
                raise ParseError(f"unknown option {word}; options: {', '.join(options) or 'none'}\nusage: {usage}")
            if field.annotation is bool:
                values[name] = True
            else:
                if i + 1 >= len(words):
                    raise ParseError(f"{word} needs a value\nusage: {usage}")
                values[name] = words[i + 1]
                i += 1
        else:
            positional.append(word)
        i += 1
    names = list(command.positionals)
    for name, word in zip(names, positional, strict=False):
        values[name] = word
    extra = positional[len(names):]
    if command.rest:
        if extra:
            values[command.rest] = " ".join(extra)
    elif extra:
        raise ParseError(f"unexpected {' '.join(extra)!r}\nusage: {usage}")
    try:
        return command.model_validate(values)
    except ValidationError as err:
        problems = []
        for e in err.errors(include_url=False):
            name = str(e["loc"][0]) if e["loc"] else "input"
            meta = command.metavars.get(name, name.upper())
            if e["type"] == "missing":
                problems.append(f"{meta} is missing")
            elif e["type"] == "string_pattern_mismatch":
                problems.append(f"{meta} {values.get(name)!r} is not a valid agent name "
                                f"({AGENT_NAME_RULE})")
            else:
                problems.append(f"{meta}: {e['msg']}")
        raise ParseError(f"{'; '.join(problems)}\nusage: {usage}") from None
