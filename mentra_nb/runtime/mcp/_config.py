"""`MCPServer`: how to reach one MCP server, as persisted with the runtime.

    MCPServer.stdio("time", ["python", "-m", "mcp_server_time"])
    MCPServer.http("github", "https://example.com/mcp", headers={"Authorization": "Bearer $GITHUB_TOKEN"})

The configuration is stored (so a resumed runtime finds its servers again), so
it must never hold a secret: env and header values may name environment
variables (`"$GITHUB_TOKEN"`, `"Bearer ${GITHUB_TOKEN}"`), which are read from
the environment (or a `.env` beside the notebook) each time the server starts,
and a literal value under a name
that looks secret (Authorization, *token*, *key*, *secret*, *password*, cookie)
is refused with a message saying to use a variable instead. The same holds for
a stdio command's `--token VALUE` / `--api-key=VALUE` style arguments, which
may name variables too.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from mentra_nb.errors import ConfigError, MCPServerError
from mentra_nb.runtime._extension_fields import ExtensionFields

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "SERVER_NAME_PATTERN",
    "MCPConfig",
    "MCPServer",
    "expand_variables",
]

DEFAULT_START_TIMEOUT = 30.0
"""Seconds an MCP server has to start and list its tools, unless its configuration says otherwise.
"""
DEFAULT_CALL_TIMEOUT = 120.0
"""Seconds an MCP tool call may take, unless the server's configuration says otherwise."""
SERVER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$"
"""What an MCP server's name may be, as a regular expression."""
_SERVER_NAME_RULE = "1-48 letters, digits, '_', '.' or '-', starting with a letter or digit"

# Names under which a literal value is most likely a credential.
_SECRET_NAME = re.compile(r"auth|token|secret|passw|cookie|credential|api[-_]?key|(^|[-_])key($|[-_])",
                          re.IGNORECASE)
_VARIABLE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*)|(?P<dollar>\$))")
# The stdio command `python` means this kernel's interpreter: a notebook's `python` on
# PATH is often another environment, without the server the user just pip-installed.
_THIS_PYTHON = ("python", "python3")


# A command-line flag that takes a secret: --token, --api-key, --client-secret, --password.
_SECRET_FLAG = re.compile(r"(token|secret|passw(or)?d|api[-_]?key|access[-_]?key)$", re.IGNORECASE)


def _names_a_variable(value: str) -> bool:
    return any(m.group("braced") or m.group("plain") for m in _VARIABLE.finditer(value))


def _may_be_secret(value: str) -> bool:
    """A literal that could be a credential: not a variable, not a file's path
    (GOOGLE_APPLICATION_CREDENTIALS=/path/key.json names a file; it is not one)."""
    return bool(value) and not _names_a_variable(value) and not value.startswith(("/", "~", "./", "../"))


def expand_variables(value: str, environ: Mapping[str, str], *, server: str, where: str) -> str:
    """`value` with `$NAME` / `${NAME}` taken from `environ` (`$$` is a literal `$`)."""

    def substitute(match: re.Match[str]) -> str:
        if match.group("dollar"):
            return "$"
        name = match.group("braced") or match.group("plain")
        found = environ.get(name)
        if found is None:
            raise MCPServerError(
                f"MCP server '{server}': {where} names ${name}, which is not set in this "
                f"kernel's environment nor in a .env beside the notebook; set it there "
                f"(or os.environ['{name}'] = ...) and try again"
            )
        return found

    return _VARIABLE.sub(substitute, value)


class MCPServer(BaseModel):
    """One MCP server an agent may use. Build it with `MCPServer.stdio(...)`,
    `MCPServer.http(...)` or (for a server object in this process, which is not
    persisted) `MCPServer.in_process(...)`.

    `start_timeout` bounds starting the server and listing its tools;
    `call_timeout` bounds one tool call (None: no limit).
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str = Field(pattern=SERVER_NAME_PATTERN)
    transport: Literal["stdio", "http", "in_process"]
    command: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    start_timeout: float = Field(default=DEFAULT_START_TIMEOUT, gt=0)
    call_timeout: float | None = Field(default=DEFAULT_CALL_TIMEOUT, gt=0)

    # An in-process SDK server object: Python code, so it is never persisted.
    _server: Any = PrivateAttr(default=None)

    @classmethod
    def stdio(cls, name: str, command: list[str], env: Mapping[str, str] | None = None,
              cwd: str | os.PathLike[str] | None = None, *,
              start_timeout: float = DEFAULT_START_TIMEOUT,
              call_timeout: float | None = DEFAULT_CALL_TIMEOUT) -> MCPServer:
        """A server started as a child process speaking MCP over stdin/stdout.

        `command` is the program and its arguments (`python` means this kernel's
        interpreter). The child gets a minimal environment (PATH, HOME, …) plus
        `env`, whose values may name variables: `{"GITHUB_TOKEN": "$GITHUB_TOKEN"}`.
        """
        return cls._build(name=name, transport="stdio", command=list(command), env=dict(env or {}),
                          cwd=None if cwd is None else os.fspath(cwd), start_timeout=start_timeout,
                          call_timeout=call_timeout)

    @classmethod
    def http(cls, name: str, url: str, headers: Mapping[str, str] | None = None, *,
             start_timeout: float = DEFAULT_START_TIMEOUT,
             call_timeout: float | None = DEFAULT_CALL_TIMEOUT) -> MCPServer:
        """A server reached over streamable HTTP at `url`. Header values may name
        variables: `{"Authorization": "Bearer $GITHUB_TOKEN"}`."""
        return cls._build(name=name, transport="http", url=url, headers=dict(headers or {}),
                          start_timeout=start_timeout, call_timeout=call_timeout)

    @classmethod
    def in_process(cls, name: str, server: Any, *, start_timeout: float = DEFAULT_START_TIMEOUT,
                   call_timeout: float | None = DEFAULT_CALL_TIMEOUT) -> MCPServer:
        """A server object of the `mcp` SDK (`mcp.server.mcpserver.MCPServer`) running
        in this process. It lives as long as this runtime and is not persisted."""
        config = cls._build(name=name, transport="in_process", start_timeout=start_timeout,
                            call_timeout=call_timeout)
        config._server = server
        return config

    @classmethod
    def _build(cls, **fields: Any) -> MCPServer:
        try:
            return cls(**fields)
        except ValidationError as err:
            raise ConfigError(_describe(fields.get("name"), err)) from None

    @model_validator(mode="after")
    def _usable_and_without_secrets(self) -> MCPServer:
        if self.transport == "stdio" and (not self.command or not all(self.command)):
            raise ValueError("a stdio server needs a command: a non-empty list of words, "
                             "e.g. ['python', '-m', 'mcp_server_time']")
        for flag, value in _flag_values(self.command):
            if _SECRET_FLAG.search(flag) and _may_be_secret(value):
                raise ValueError(
                    f"the command's {flag} looks secret and the configuration is stored: put the "
                    f"value in an environment variable and give its name, e.g. {flag} "
                    f"\"$MY_{_slug(flag)}\""
                )
        if self.transport == "http":
            parts = urlsplit(self.url or "")
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"{self.url!r} is not an http(s) URL, e.g. http://127.0.0.1:3001/mcp")
            if parts.username or parts.password:
                raise ValueError("the URL carries a user name or password, which would be stored; "
                                 "send it as a header naming a variable, e.g. "
                                 "{'Authorization': 'Bearer $TOKEN'}")
            for key, value in parse_qsl(parts.query):
                if _SECRET_NAME.search(key) and _may_be_secret(value):
                    raise ValueError(f"the URL's query parameter {key!r} looks secret and would be "
                                     "stored; send it as a header naming a variable instead")
        for kind, values in (("env", self.env), ("header", self.headers)):
            for key, value in values.items():
                if _SECRET_NAME.search(key) and _may_be_secret(value):
                    raise ValueError(
                        f"{kind} {key!r} looks secret and the configuration is stored: put the value "
                        f"in an environment variable and give its name, e.g. {key}=\"$MY_{_slug(key)}\""
                    )
        return self

    # --- what the connection needs ------------------------------------------------

    @property
    def persistable(self) -> bool:
        return self.transport != "in_process"

    @property
    def sdk_server(self) -> Any:
        """The in-process SDK server object (None for stdio and http servers)."""
        return self._server

    def describe(self) -> str:
        """How the server is reached, for messages and `%mentra mcp list`."""
        if self.transport == "stdio":
            return " ".join(self.command)
        if self.transport == "http":
            return str(self.url)
        return f"in-process {type(self._server).__name__}"

    def program(self, environ: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
        """The executable and its arguments for a stdio server (with `$NAME` in the
        arguments taken from `environ`, when given)."""
        first, *rest = self.command
        if environ is not None:
            rest = [expand_variables(word, environ, server=self.name, where=f"argument {word!r}")
                    for word in rest]
        return (sys.executable if first in _THIS_PYTHON else first), rest

    def variable_values(self, environ: Mapping[str, str]) -> list[str]:
        """The values of the variables the configuration names that are set in
        `environ`: what a start puts into the child's arguments, environment or
        headers, and so what its errors may echo."""
        words = [*self.command[1:], *self.env.values(), *self.headers.values()]
        names = {m.group("braced") or m.group("plain") for word in words for m in _VARIABLE.finditer(word)}
        return [environ[name] for name in sorted(n for n in names if n) if name in environ]

    def resolved_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {key: expand_variables(value, environ, server=self.name, where=f"env {key!r}")
                for key, value in self.env.items()}

    def resolved_headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {key: expand_variables(value, environ, server=self.name, where=f"header {key!r}")
                for key, value in self.headers.items()}


def _flag_values(words: list[str]) -> list[tuple[str, str]]:
    """`--flag value` and `--flag=value` pairs of a command line."""
    pairs = []
    for index, word in enumerate(words[1:], start=1):
        if not word.startswith("-") or word in ("-", "--"):
            continue
        flag, equals, value = word.partition("=")
        if equals:
            pairs.append((flag, value))
        elif index + 1 < len(words) and not words[index + 1].startswith("-"):
            pairs.append((flag, words[index + 1]))
    return pairs


def _slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_").upper() or "SECRET"


def _describe(name: object, err: ValidationError) -> str:
    problems = []
    for e in err.errors(include_url=False):
        field = ".".join(str(p) for p in e["loc"])
        if field == "name":
            problems.append(f"{name!r} is not a usable server name ({_SERVER_NAME_RULE})")
        else:
            message = str(e["msg"]).removeprefix("Value error, ")
            problems.append(f"{field}: {message}" if field else message)
    return f"MCP server {name!r}: " + "; ".join(problems)


class MCPConfig(ExtensionFields):
    """`AgentConfig(mcp_servers=[...])`: names of the runtime's MCP servers whose tools
    the agent sees (default: none)."""

    mcp_servers: list[str] = Field(default_factory=list)
