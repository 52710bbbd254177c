"""The `%mentra` command line: `shlex` words parsed into pydantic models.

Each command is a model whose fields are its arguments; positional order,
usage lines and `%mentra help` are all generated from the same models, so
help can never drift from what the parser accepts.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from mentra_nb.runtime import AGENT_NAME_PATTERN, AGENT_NAME_RULE
from mentra_nb.runtime.mcp import DEFAULT_START_TIMEOUT, SERVER_NAME_PATTERN

__all__ = [
    "COMMANDS",
    "AdoptArgs",
    "AliasArgs",
    "ApproveArgs",
    "CellArgs",
    "Command",
    "CompareArgs",
    "CostArgs",
    "DbArgs",
    "DenyArgs",
    "ExplainArgs",
    "ExportArgs",
    "ForkArgs",
    "HelpArgs",
    "HistoryArgs",
    "InterruptArgs",
    "ListAgentsArgs",
    "MapArgs",
    "McpAddArgs",
    "McpListArgs",
    "McpRemoveArgs",
    "McpToolsArgs",
    "ModelsArgs",
    "ParseError",
    "ResumeArgs",
    "RewindArgs",
    "RmArgs",
    "SendArgs",
    "ShowArgs",
    "SpawnArgs",
    "StopArgs",
    "SubagentsArgs",
    "TeamArgs",
    "TeammateArgs",
    "UndoArgs",
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

    command: ClassVar[str]  # one word, or two for a group's subcommand ("mcp add")
    summary: ClassVar[str]
    positionals: ClassVar[tuple[str, ...]] = ()
    rest: ClassVar[str | None] = None  # the field that takes the rest of the line
    argv: ClassVar[str | None] = None  # the field that takes the words after `--`, as a list
    repeatable: ClassVar[tuple[str, ...]] = ()  # options that may be given more than once
    short: ClassVar[dict[str, str]] = {}  # one-letter options: "f" -> "format" (-f code)
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
            if name in cls.positionals or name in (cls.rest, cls.argv):
                continue
            flag = "--" + name.replace("_", "-")
            if field.annotation is bool:
                words.append(f"[{flag}]")
            else:
                again = "..." if name in cls.repeatable else ""
                words.append(f"[{flag} {cls.metavars.get(name, name.upper())}]{again}")
        if cls.argv:
            words.append(f"[-- {cls.metavars.get(cls.argv, cls.argv.upper())}]")
        return " ".join(words)


def _split_commas(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class SpawnArgs(Command):
    command = "spawn"
    summary = ("create an agent and show its view; rerun, it attaches to the stored agent of that name "
               "(--replace: start over, the stored one kept renamed) (--subagents: it may delegate; --team: it may lead a team; "
               "--python/--shell: enable those tools, each call approved by you; --read-only: no tool that "
               "changes anything; --auto-approve: tools that run without asking, globs like mcp__time__*; "
               "--mcp: the MCP servers whose tools it gets; --max-cost/--max-tokens: its budget in dollars "
               "and in tokens; --cells/--no-cells: whether it reads, writes and runs the notebook's cells, "
               "in JupyterLab and Notebook 7 (default: yes, except on the offline test model))")
    positionals = ("agent",)
    metavars = {"agent": "NAME", "model": "PROVIDER:MODEL", "system": "TEXT", "tools": "A,B",
                "auto_approve": "A,B", "mcp": "SERVER,SERVER", "max_cost": "USD", "max_tokens": "N"}
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

    mcp: list[str] | None = None
    # Checked by AgentConfig (max_cost_usd, max_tokens_total), which says what is allowed.
    max_cost: float | None = None
    max_tokens: int | None = None
    replace: bool = False
    cells: bool = False
    no_cells: bool = False

    _tools = field_validator("tools", "auto_approve", "mcp", mode="before")(_split_commas)

    @model_validator(mode="after")
    def _cells_or_not(self) -> SpawnArgs:
        if self.cells and self.no_cells:
            raise ValueError("--cells and --no-cells contradict each other; give one")
        return self

    @property
    def cells_setting(self) -> bool | None:
        """AgentConfig.cells: True, False, or None (the default: decided by the model)."""
        return True if self.cells else False if self.no_cells else None


class SendArgs(Command):
    command = "send"
    summary = ("send NAME a message; shows that turn and returns a Turn at once (--wait blocks and returns "
               "the reply, a Message whose .turn is the Turn; --output MODEL: the answer is a validated "
               "instance of that pydantic class, turn.output, or the result of --wait)")
    positionals = ("agent",)
    rest = "text"
    metavars = {"agent": "NAME", "output": "MODEL"}
    agent: AgentName
    text: str = Field(min_length=1)
    wait: bool = False
    no_interpolate: bool = False
    output: str | None = None


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
    summary = ("let NAME finish its current round, then stop, keeping the work (--now: end the reply "
               "where it is, kept and marked as cut)")
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName
    now: bool = False


class ShowArgs(Command):
    command = "show"
    summary = "show NAME's whole conversation, live (a %%mentra cell shows its own turn only)"
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


class MapArgs(Command):
    command = "map"
    summary = ("run NAME over the rows of DF (a DataFrame or list of dicts in the kernel), each row a fork "
               "of NAME: --prompt is a template of the columns ({column}); --output MODEL: typed answers; "
               "shows the job's progress and returns the job; --into VAR: its results DataFrame goes into "
               "VAR whenever it stops; rerun, it attaches to the stored job (--replace: start over)")
    positionals = ("agent", "rows")
    metavars = {"agent": "NAME", "rows": "DF", "prompt": "TEXT", "output": "MODEL", "concurrency": "N",
                "max_cost": "USD", "into": "VAR", "name": "JOB"}
    agent: AgentName
    rows: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    prompt: str = Field(min_length=1)
    output: str | None = None
    concurrency: int = Field(default=16, ge=1)
    max_cost: float | None = Field(default=None, ge=0)
    into: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    name: str | None = None
    replace: bool = False


class CompareArgs(Command):
    command = "compare"
    summary = ("run the same rows of DF through each of the agents A,B,... (each its own job, each row a "
               "fork), side by side: --prompt and --output as for map; --judge NAME: an agent judges "
               "the rows every agent answered; --max-cost is shared by all the jobs; shows each job's "
               "progress and returns the comparison; --into VAR: its side-by-side DataFrame goes into VAR "
               "when it stops; rerun, it attaches (--replace: start over)")
    positionals = ("agents", "rows")
    metavars = {"agents": "A,B", "rows": "DF", "prompt": "TEXT", "output": "MODEL", "judge": "NAME",
                "concurrency": "N", "max_cost": "USD", "into": "VAR", "name": "NAME"}
    agents: list[AgentName]
    rows: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    prompt: str = Field(min_length=1)
    output: str | None = None
    judge: AgentName | None = None

    _agents = field_validator("agents", mode="before")(_split_commas)

    @field_validator("agents")
    @classmethod
    def _two_or_more(cls, agents: list[str]) -> list[str]:
        if len(agents) < 2:
            raise ValueError("compare takes two or more agents separated by commas, such as a,b")
        return agents
    concurrency: int = Field(default=16, ge=1)
    max_cost: float | None = Field(default=None, ge=0)
    into: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    name: str | None = None
    replace: bool = False


# --- time travel ------------------------------------------------------------------


class ForkArgs(Command):
    command = "fork"
    summary = ("a new agent NEW whose history is NAME's first N messages (all without --at); "
               "nothing is copied, NAME is unchanged; a rerun attaches to the fork it made "
               "(--replace: start over, a stored NEW kept renamed)")
    positionals = ("agent", "new")
    metavars = {"agent": "NAME", "new": "NEW", "at": "N"}
    agent: AgentName
    new: AgentName
    at: int | None = Field(default=None, ge=0)
    replace: bool = False


class RewindArgs(Command):
    command = "rewind"
    summary = ("NAME's history becomes its first N messages for the next turn; what followed is kept "
               "as a branch (agent.branches(), agent.switch_branch(id)); --with-cells: the cell changes "
               "it made after message N are reverted too")
    positionals = ("agent", "to")
    metavars = {"agent": "NAME", "to": "N"}
    agent: AgentName
    to: int = Field(ge=0)
    with_cells: bool = False


class UndoArgs(Command):
    command = "undo"
    summary = ("undo NAME's last turn (--to N: everything after message N): the cell changes it made are "
               "reverted, a cell you changed since is left alone and named, and the conversation is "
               "rewound (what followed is kept as a branch)")
    positionals = ("agent",)
    metavars = {"agent": "NAME", "to": "N"}
    agent: AgentName
    to: int | None = Field(default=None, ge=0)


class HistoryArgs(Command):
    command = "history"
    summary = "NAME's checkpoints (one per committed message, N to fork or rewind at) and branches"
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName


class ExportArgs(Command):
    command = "export"
    summary = ("write NAME's transcript, tool calls included, as markdown (default), json or ipynb "
               "to PATH (default: NAME.md / .json / .ipynb here)")
    positionals = ("agent",)
    metavars = {"agent": "NAME", "format": "F", "out": "PATH"}
    agent: AgentName
    format: Literal["markdown", "json", "ipynb"] = "markdown"
    out: str | None = None


class RmArgs(Command):
    command = "rm"
    summary = ("delete NAME from the state file with its teammates and subagents (--with-forks: its "
               "forks too; forks left keep the messages they use)")
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName
    with_forks: bool = False


class DbArgs(Command):
    command = "db"
    summary = "show where this notebook's agents are stored, or move to PATH (or a postgresql:// URL)"
    positionals = ("path",)
    path: str | None = None


class AdoptArgs(Command):
    command = "adopt"
    summary = ("make the agents stored under RUNTIME_ID in PATH this notebook's and bring them back (they "
               "follow the notebook from then on; %mentra resume lists what is stored nearby)")
    positionals = ("path", "runtime_id")
    path: str = Field(min_length=1)
    runtime_id: str = Field(min_length=1)


class ModelsArgs(Command):
    command = "models"
    summary = "list the models a provider offers"
    positionals = ("provider",)
    provider: str | None = None


class AliasArgs(Command):
    command = "alias"
    summary = ("name a model: NAME stands for PROVIDER:MODEL in --model and default_model (no arguments: "
               "list the aliases; --remove: forget NAME)")
    positionals = ("name", "target")
    metavars = {"name": "NAME", "target": "PROVIDER:MODEL"}
    name: str | None = None
    target: str | None = None
    remove: bool = False


class HelpArgs(Command):
    command = "help"
    summary = "this help, or one command's"
    positionals = ("topic",)
    metavars = {"topic": "COMMAND"}
    topic: str | None = None


# MCP server names follow the runtime's rule, checked while parsing.
ServerName = Annotated[str, Field(pattern=SERVER_NAME_PATTERN)]


class McpAddArgs(Command):
    command = "mcp add"
    summary = ("give this notebook's agents an MCP server: a command after -- (stdio; `python` is this "
               "kernel's; --env K=V for its environment), or --url for streamable HTTP with --header K=V "
               "(write a secret as $VARIABLE)")
    positionals = ("name",)
    argv = "command_line"
    repeatable = ("header", "env")
    metavars = {"name": "NAME", "url": "URL", "header": "K=V", "env": "K=V",
                "command_line": "COMMAND [ARGS...]", "start_timeout": "SECONDS"}
    name: ServerName
    url: str | None = None
    header: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    start_timeout: float = Field(default=DEFAULT_START_TIMEOUT, gt=0)
    command_line: list[str] = Field(default_factory=list)

    @field_validator("header", "env")
    @classmethod
    def _key_equals_value(cls, pairs: list[str], info: ValidationInfo) -> list[str]:
        for pair in pairs:
            key, equals, _value = pair.partition("=")
            if not equals or not key.strip():
                raise ValueError(f"--{info.field_name} takes KEY=VALUE, got {pair!r}")
        return pairs

    @model_validator(mode="after")
    def _one_transport(self) -> McpAddArgs:
        if bool(self.url) == bool(self.command_line):
            raise ValueError("give the server's command after -- or its --url, one of the two")
        if self.header and not self.url:
            raise ValueError("--header is for a --url server; a command's server takes --env K=V")
        if self.env and self.url:
            raise ValueError("--env is for a command's server; a --url server takes --header K=V")
        return self

    def headers(self) -> dict[str, str]:
        return dict(h.partition("=")[::2] for h in self.header)

    def environment(self) -> dict[str, str]:
        return dict(e.partition("=")[::2] for e in self.env)


class McpListArgs(Command):
    command = "mcp list"
    summary = "this notebook's MCP servers: how they are reached, running or not, how many tools"


class McpToolsArgs(Command):
    command = "mcp tools"
    summary = "start MCP server NAME if needed and list its tools as agents see them"
    positionals = ("name",)
    metavars = {"name": "NAME"}
    name: ServerName


class McpRemoveArgs(Command):
    command = "mcp remove"
    summary = "forget MCP server NAME and stop it"
    positionals = ("name",)
    metavars = {"name": "NAME"}
    name: ServerName


class ExplainArgs(Command):
    command = "explain"
    summary = ("send the last exception's traceback and its cell to NAME (default: the agent used last) "
               "and show the answer")
    positionals = ("agent",)
    metavars = {"agent": "NAME"}
    agent: AgentName | None = None
    wait: bool = False


class CellArgs(Command):
    """`%%mentra NAME [--wait] [--no-interpolate] [--figure] [-f code] [--output MODEL]`: the cell
    body is the prompt."""

    command = ""
    summary = ("send the cell body to NAME ({var} takes a kernel variable; {In[n]}, {Out[n]}, {Err[n]} "
               "cell n's source, value, traceback); --figure attaches the current figure; -f code puts "
               "the answer's first code block in the next cell; --output MODEL: the answer is a "
               "validated instance of that pydantic class, turn.output, or the result of --wait")
    positionals = ("agent",)
    short = {"f": "format"}
    metavars = {"agent": "NAME", "format": "markdown|code", "output": "MODEL"}
    agent: AgentName
    wait: bool = False
    no_interpolate: bool = False
    figure: bool = False
    format: Literal["markdown", "code"] = "markdown"
    output: str | None = None


COMMANDS: dict[str, type[Command]] = {
    c.command: c for c in (SpawnArgs, SendArgs, ListAgentsArgs, ResumeArgs, ApproveArgs, DenyArgs,
                           ShowArgs, TeamArgs, TeammateArgs, SubagentsArgs, InterruptArgs, StopArgs, CostArgs,
                           ExplainArgs, MapArgs, CompareArgs,
                           ForkArgs, RewindArgs, UndoArgs, HistoryArgs, ExportArgs, RmArgs,
                           DbArgs, AdoptArgs, McpAddArgs, McpListArgs, McpToolsArgs, McpRemoveArgs, ModelsArgs,
                           AliasArgs, HelpArgs)
}


def _groups() -> dict[str, list[str]]:
    """Commands that take a subcommand ("mcp" → add, list, tools, remove)."""
    groups: dict[str, list[str]] = {}
    for name in COMMANDS:
        group, _, sub = name.partition(" ")
        if sub:
            groups.setdefault(group, []).append(sub)
    return groups


def _command_words() -> str:
    return ", ".join(dict.fromkeys(name.partition(" ")[0] for name in COMMANDS))


def parse_line(line: str) -> Command:
    words = _split(line, "%mentra help")
    if not words:
        raise ParseError(f"say what to do; for example: {SpawnArgs.usage()}\n(%mentra help lists every command)")
    name, *args = words
    subcommands = _groups().get(name)
    if subcommands is not None:
        if not args or f"{name} {args[0]}" not in COMMANDS:
            given = f" '{args[0]}'" if args else ""
            raise ParseError(f"%mentra {name} needs a subcommand{given and ' other than' + given}: "
                             f"{', '.join(subcommands)}\nusage: %mentra help {name}")
        name, args = f"{name} {args[0]}", args[1:]
    command = COMMANDS.get(name)
    if command is None:
        raise ParseError(f"unknown command '{name}'; the commands are: {_command_words()}\n"
                         "usage: %mentra help")
    if _takes_comments(command):
        args = _split(line, command.usage(), comments=True)[len(words) - len(args):]
    return _build(command, args)


def parse_cell(line: str) -> CellArgs:
    words = _split(line, CellArgs.usage("%%mentra"), comments=True)
    return _build(CellArgs, words, prefix="%%mentra")  # type: ignore[return-value]


def _takes_comments(command: type[Command]) -> bool:
    """Whether a `# comment` ends the line, as in Python: IPython passes it to a line
    magic with the rest, and `%mentra spawn writer  # the drafter` is how people write.
    Not where the rest of the line is free text (a message may say 'see #42') or a
    command line of its own."""
    return command.rest is None and command.argv is None


def help_text(topic: str | None = None) -> str:
    if topic:
        group = _groups().get(topic)
        if group is not None:
            return "\n".join(f"{COMMANDS[f'{topic} {sub}'].usage()}\n    {COMMANDS[f'{topic} {sub}'].summary}"
                             for sub in group)
        command = COMMANDS.get(topic)
        if command is None:
            raise ParseError(f"no command '{topic}'; the commands are: {_command_words()}")
        return f"{command.usage()}\n    {command.summary}"
    lines = ["mentra-nb magics (state lives in a SQLite file beside the notebook):", ""]
    for command in COMMANDS.values():
        lines += [f"  {command.usage()}", f"      {command.summary}"]
    lines += [f"  {CellArgs.usage('%%mentra')}", f"      {CellArgs.summary}", "",
              "  %config MentraMagics.default_model = 'anthropic:claude-sonnet-4-5'  sets the default model",
              "  %config MentraMagics.aliases = {'fast': 'anthropic:claude-haiku-4-5'}  names models"]
    return "\n".join(lines)


def _split(line: str, usage: str, *, comments: bool = False) -> list[str]:
    try:
        return shlex.split(line, comments=comments)
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
        if len(word) == 2 and word[0] == "-" and word[1] in command.short:
            word = f"--{command.short[word[1]]}"
        if word == "--" and command.argv:
            values[command.argv] = words[i + 1:]
            break
        if word.startswith("--") and len(word) > 2:
            name = word[2:].replace("-", "_")
            field = fields.get(name)
            if field is None or name in command.positionals or name in (command.rest, command.argv):
                options = [f"--{n.replace('_', '-')}" for n in fields
                           if n not in command.positionals and n not in (command.rest, command.argv)]
                raise ParseError(f"unknown option {word}; options: {', '.join(options) or 'none'}\nusage: {usage}")
            if field.annotation is bool:
                values[name] = True
            else:
                if i + 1 >= len(words):
                    raise ParseError(f"{word} needs a value\nusage: {usage}")
                if name in command.repeatable:
                    values.setdefault(name, []).append(words[i + 1])
                else:
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
            elif e["type"] == "string_pattern_mismatch" and command.command.startswith("mcp "):
                problems.append(f"{meta} {values.get(name)!r} is not a valid MCP server name "
                                "(letters, digits, '_', '.' or '-', at most 48)")
            elif e["type"] == "string_pattern_mismatch":
                problems.append(f"{meta} {values.get(name)!r} is not a valid agent name "
                                f"({AGENT_NAME_RULE})")
            elif not e["loc"]:
                problems.append(str(e["msg"]).removeprefix("Value error, "))
            else:
                problems.append(f"{meta}: {str(e['msg']).removeprefix('Value error, ')}")
        raise ParseError(f"{'; '.join(problems)}\nusage: {usage}") from None
