"""What the subagent tests share: a store that fails chosen state writes, a
provider that scripts each model separately, and a root agent to hang a
registry on."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mentra_nb import (
    AgentConfig,
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    Message,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    ProviderRequest,
    Runtime,
    SqliteStore,
    StoreError,
    ToolContext,
    Usage,
)
from mentra_nb.runtime.subagents import SubagentLimits, SubagentRegistry
from mentra_nb.store.records import RecordOp
from mentra_nb.testing import ScriptedProvider, StreamScript, tool_use_stream


class FaultyStore:
    """A real store whose record writes (the subagent tree's checkpoints) can be
    made to fail.

    `fail_state_saves(1)` fails the next such write; `before_state_save` runs a
    hook (with the call's number) before each goes through. Everything else goes
    straight to the wrapped store.
    """

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self.state_saves = 0
        self._failures: set[int] = set()
        self.before_state_save: Callable[[int], None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def fail_state_saves(self, *offsets: int) -> None:
        """Fail the state writes that come `offsets` calls from now (1 = the next)."""
        self._failures |= {self.state_saves + offset for offset in offsets}

    def write_records(self, ops: Sequence[RecordOp], *, agent_id: str | None = None,
                      token: str | None = None) -> list[Any]:
        self.state_saves += 1
        number = self.state_saves
        if self.before_state_save is not None:
            self.before_state_save(number)
        if number in self._failures:
            raise StoreError("forced state save failure")
        return self.inner.write_records(ops, agent_id=agent_id, token=token)


class RoutedProvider:
    """One scripted conversation per model id, so agents running in parallel
    each get their own scripts in order (`anthropic:child_a` plays `routes["child_a"]`)."""

    def __init__(self, name: str = "anthropic", **routes: list[StreamScript]) -> None:
        self.name = name
        self.routes = {model: ScriptedProvider(name, scripts) for model, scripts in routes.items()}

    def add(self, model: str, *scripts: StreamScript) -> None:
        self.routes.setdefault(model, ScriptedProvider(self.name)).add(*scripts)

    def requests(self, model: str) -> list[ProviderRequest]:
        return self.routes[model].requests if model in self.routes else []

    async def list_models(self) -> list:
        return []

    def stream(self, request: ProviderRequest):
        return self.routes[request.model].stream(request)


def call(tool_id: str, name: str, **input: Any) -> StreamScript:
    """A model step that calls one tool."""
    return tool_use_stream(tool_id, name, json.dumps(input))


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def tool_results(request: ProviderRequest) -> dict[str, Any]:
    """tool_use_id → content of every tool result the request carries."""
    return {r.tool_use_id: r.content for m in request.messages for r in m.tool_results}


def standalone_registry(db_path, limits: SubagentLimits | None = None):
    """A registry of its own over a real SQLite file, with a root agent whose
    lease is held (so state writes pass the store's fencing)."""
    store = FaultyStore(SqliteStore(db_path))
    runtime = Runtime.empty(store=store, providers=[ScriptedProvider("anthropic")])
    root = runtime.spawn("root", "anthropic:model", config=AgentConfig())
    registry = SubagentRegistry()
    events: list = []
    registry.initialize(root.id, store=store, token=runtime._leases.token,
                        limits=limits or SubagentLimits(max_concurrency=2, max_agents=2))
    registry.subscribe(root.id, events.append)
    return registry, root.id, store, events, runtime


def start_text(control, text: str) -> None:
    """Stream the beginning of a text reply through a controlled stream."""
    control.send(MessageStarted(id="msg", model="model"))
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, text))


def finish_text(control, text: str = "", *, started: bool = False) -> None:
    """Complete a text reply through a controlled stream (starting it unless `started`)."""
    if not started:
        start_text(control, text)
    elif text:
        control.send(ContentBlockDelta.text(0, text))
    control.send(ContentBlockStopped(index=0))
    control.send(MessageDelta(stop_reason="end_turn", usage=Usage(input_tokens=5, output_tokens=1)))
    control.send(MessageStopped())


def mail_texts(request: ProviderRequest) -> list[str]:
    """The delivered-mail messages a request carries, in order."""
    return [m.text for m in request.messages
            if m.text.startswith(("<subagent_update", "<subagent_message", "<subagent_approval"))]


async def run_tool(caller, name: str, /, **input: Any):
    """Call one of `caller`'s tools directly, as the turn loop would."""
    tool = next(t for t in caller.tools() if t.spec.name == name)
    return await tool.run(ToolContext(caller, "call-1", name), input)
