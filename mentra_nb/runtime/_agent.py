"""`Agent`: one conversation with a model, as its user drives and watches it.

What the agent *is* at any instant lives in its `AgentState` (`_state.py`),
changed only through named operations; a run is a `TurnLoop` (`_turn_loop.py`)
working on that state. The agent holds the `Services` handle of its runtime and
the extensions attached to it, and offers the public API: its own methods, and
those the registered extensions add (`RuntimeExtension.agent_api`), found by
name when the agent has no attribute of that name.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from pydantic import ValidationError

from mentra_nb.errors import (
    AgentBusy,
    AgentError,
    AgentNotFound,
    ConfigError,
    MentraError,
    NoResumableTurn,
    StoreError,
)
from mentra_nb.messages import ContentBlock, Message, Role, Usage
from mentra_nb.providers.base import ModelInfo
from mentra_nb.providers.registry import ProviderRegistry
from mentra_nb.runtime._approvals import ApprovalDecision, Approvals, load_approval_state
from mentra_nb.runtime._config import AgentConfig, config_error
from mentra_nb.runtime._export import ExportFormat, ExportHeader, export_transcript
from mentra_nb.runtime._extension_fields import snapshot_defaults
from mentra_nb.runtime._extensions import AgentExtension, RuntimeExtension, api_names, bind_api
from mentra_nb.runtime._output import OutputSpec, OutputType, RunResult
from mentra_nb.runtime._recovery import recover
from mentra_nb.runtime._services import Services
from mentra_nb.runtime._snapshot import AgentSnapshot
from mentra_nb.runtime._state import AgentState
from mentra_nb.runtime._time_travel import Branch, check_index
from mentra_nb.runtime._turn_loop import StopKind, TurnLoop
from mentra_nb.runtime.events import AgentEvent
from mentra_nb.runtime.tools import Tool
from mentra_nb.status import AgentStatus
from mentra_nb.store.base import AgentKind, AgentRecord, Checkpoint, PersistedAgent, Store

__all__ = ["Agent", "MessageInput", "OwningRuntime"]

MessageInput = str | ContentBlock | Sequence[ContentBlock] | Message
"""What `agent.send` takes: text, a content block, a list of blocks, or a user `Message`."""

E = TypeVar("E")


class OwningRuntime(Protocol):
    """The public face of the `Runtime` that drives an agent (`agent.runtime`)."""

    @property
    def runtime_id(self) -> str: ...
    @property
    def store(self) -> Store: ...
    @property
    def providers(self) -> ProviderRegistry: ...
    @property
    def services(self) -> Services: ...
    @property
    def tools(self) -> list[Tool]: ...
    @property
    def agents(self) -> list[Agent]: ...
    def register_tool(self, tool: Tool, *, replace: bool = False) -> None: ...
    def agent(self, name: str) -> Agent: ...
    def spawn(self, name: str, model: str | ModelInfo, config: AgentConfig | None = None) -> Agent: ...
    def fork_agent(self, source: Agent, new_name: str, at: int | None = None) -> Agent: ...
    def resume_agent(self, agent_id: str) -> Agent: ...
    async def release_agent(self, agent_id: str) -> None: ...
    async def delete_agent(self, name_or_id: str, *, with_forks: bool = False) -> list[str]: ...
    def resume(self, runtime_id: str | None = None) -> list[Agent]: ...
    def resume_all(self) -> list[Agent]: ...
    def list_persisted_agents(self, runtime_id: str | None = None) -> list[AgentRecord]: ...
    async def aclose(self) -> None: ...


class Agent:
    """An agent driven by a `Runtime`. Create it with `rt.spawn(...)` or
    `rt.resume_agent(...)`, never directly.

        reply = await agent.send("Summarise the data")
        async for snapshot in agent.watch(): ...
    """

    def __init__(self, runtime: OwningRuntime, persisted: PersistedAgent,
                 extensions: Sequence[RuntimeExtension] = (), config: AgentConfig | None = None) -> None:
        """`config`: the stored config already validated (a fork's, its source's copy),
        which is then not validated again; else it is read from `persisted`."""
        record = persisted.record
        # Weak: an agent (and every task driving it) must not keep alive a runtime its
        # user dropped; that runtime's finaliser closes it (see _closing.py).
        self._runtime = weakref.ref(runtime)
        self._services = runtime.services
        self.id = record.id
        self.name = record.name
        self.model = ModelInfo.parse(record.model)
        try:
            self.config = config if config is not None else AgentConfig.model_validate(record.config)
        except ValidationError as err:
            problem = err.errors(include_url=False, include_input=False)[0]
            raise StoreError(
                f"agent '{record.name}' ({record.id}) has a stored configuration this mentra-nb "
                f"cannot read ({'.'.join(map(str, problem['loc'])) or 'config'}: {problem['msg']}); "
                "a newer mentra-nb, or an extension not registered in this process, probably wrote it. "
                "Upgrade (pip install -U mentra-nb) or register that extension, or spawn the agent "
                "anew under another name"
            ) from None
        self.kind: AgentKind = record.kind
        self.parent_id = record.parent_id
        self.role = record.role
        # A fork's source agent (its id) and how many of its messages the fork began with.
        self.forked_from = record.forked_from
        self.fork_index = record.fork_index
        self._state = AgentState(self.id, self.name, self._services.store, self._services.token,
                                 persisted, lambda: self.snapshot, self._services.store_io)
        self._run_task: asyncio.Task[Message] | None = None
        self._stop_requested: StopKind | None = None
        self._stop_keeps_text: int | None = None  # Stop's cut of the reply being streamed, if any
        self._approvals = Approvals(self, load_approval_state(self._services.store, self.id))
        self._extensions: list[AgentExtension] = []
        for extension in extensions:
            attached = extension.attach(self)
            if attached is not None:
                self._extensions.append(attached)

    def __repr__(self) -> str:
        return f"<Agent {self.name} ({self.model.key}) {self.status}>"

    if not TYPE_CHECKING:  # type checkers see only the agent's own API; extensions' are typed functions
        def __getattr__(self, name: str) -> Any:
            """A method or property a registered extension adds (`RuntimeExtension.agent_api`)."""
            if name.startswith("_"):
                raise AttributeError(f"'Agent' object has no attribute '{name}'", name=name, obj=self)
            return bind_api("agent", self, name)

    def __dir__(self) -> list[str]:  # tab completion offers the extensions' names too
        return sorted({*super().__dir__(), *api_names("agent")})

    # --- what the agent is ---------------------------------------------------

    @property
    def runtime(self) -> OwningRuntime:
        runtime = self._runtime()
        if runtime is None:
            raise MentraError(
                f"the runtime of agent '{self.name}' was garbage collected, which closed it; keep a "
                "reference to the Runtime for as long as its agents work"
            )
        return runtime

    @property
    def services(self) -> Services:
        """The narrow handle of this agent's runtime (for tools and extensions)."""
        return self._services

    @property
    def state(self) -> AgentState:
        """Transcript, live stream, status and usage; read it freely, change it only
        through its named operations."""
        return self._state

    @property
    def extensions(self) -> tuple[AgentExtension, ...]:
        """The extensions attached to this agent, in the runtime's order."""
        return tuple(self._extensions)

    def extension(self, kind: type[E]) -> E | None:
        """The attached extension of type `kind`, if any."""
        for extension in self._extensions:
            if isinstance(extension, kind):
                return extension
        return None

    @property
    def history(self) -> list[Message]:
        """The committed transcript (a copy)."""
        return list(self._state.transcript)

    @property
    def last_message(self) -> Message | None:
        recent = self.recent_messages(1)
        return recent[0] if recent else None

    def recent_messages(self, count: int) -> list[Message]:
        """The last `count` committed messages; reads only those from the store
        when the transcript is not loaded (a resumed agent's, until first needed)."""
        return self._state.recent_messages(count)

    @property
    def status(self) -> AgentStatus:
        return self._state.status

    @property
    def usage(self) -> Usage:
        return self._state.usage

    @property
    def resumable_turn(self) -> Message | None:
        """The user message of a rolled-back run, which `resume()` would replay."""
        return self._state.resumable_turn

    @property
    def is_running(self) -> bool:
        return self._run_task is not None and not self._run_task.done()

    @property
    def current_run(self) -> asyncio.Task[Message] | None:
        """The task of the run in progress, if any (await it to wait for the run)."""
        return self._run_task if self.is_running else None

    @property
    def snapshot(self) -> AgentSnapshot:
        state = self._state
        # Every registered extension's fields, with its values where it attached.
        fields = snapshot_defaults()
        for extension in self._extensions:
            fields.update(extension.snapshot_fields())
        # model_construct: built on every change while someone watches (and by
        # every view's poll), so skip re-validating values that are already typed,
        # and give every field: a default_factory left to pydantic takes an
        # inspect.signature call per field, ~100 µs each (hence the extension
        # fields' defaults above).
        return AgentSnapshot.model_construct(
            agent_id=self.id,
            name=self.name,
            model=self.model.key,
            status=state.status,
            run_generation=state.run_generation,
            history_len=state.history_len,
            current_text=state.current_text,
            current_thinking=state.current_thinking,
            pending_tool_uses=list(state.pending_tool_uses),
            pending_approvals=self._approvals.pending,
            usage=state.usage,
            **fields,
        )

    def tools(self) -> list[Tool]:
        """The tools this agent may call: the runtime's and its extensions',
        filtered by its config (`tools`, `hidden_tools`, `read_only`). Tools an
        extension's own config chose (`own_tool_choice`) are not narrowed by `tools`."""
        config = self.config
        offered = [*((t, False) for t in self.runtime.tools),
                   *((t, e.own_tool_choice) for e in self._extensions for t in e.tools())]
        return [
            t for t, own_choice in offered
            if (config.allows_tool(t.spec.name) or (own_choice and t.spec.name not in config.hidden_tools))
            and (t.spec.read_only or not config.read_only)
        ]

    @property
    def always_allowed_tools(self) -> list[str]:
        """Tools the user chose to "always allow" for this agent (kept in the store)."""
        return sorted(self._approvals.always_allow)

    def update_profile(self, *, role: str | None, config: AgentConfig) -> None:
        """Give the agent another role and config (persisted first)."""
        self._services.store.update_agent_profile(
            self.id, role=role, config=config.model_dump(mode="json"), token=self._services.token
        )
        self.config = config
        self.role = role

    def configure(self, **changes: Any) -> AgentConfig:
        """Change some of the agent's config (persisted), e.g. give it more rounds:

            agent.configure(max_rounds=50)
            await agent.resume()
        """
        try:
            config = AgentConfig.model_validate({**self.config.model_dump(), **changes})
        except ValidationError as err:
            raise config_error(AgentConfig, err, f"invalid config for agent '{self.name}'") from None
        self.update_profile(role=self.role, config=config)
        return config

    # --- observing -----------------------------------------------------------

    def watch(self) -> AsyncIterator[AgentSnapshot]:
        """The current snapshot, then one per change, for as long as you iterate."""
        return self._state.snapshots.iterate(first=self.snapshot)

    def events(self) -> AsyncIterator[AgentEvent]:
        """Every event from now on, for as long as you iterate."""
        return self._state.events.iterate()

    def on_event(self, callback: Callable[[AgentEvent], None], *, deltas: bool = True) -> Callable[[], None]:
        """Call `callback` synchronously on the runtime's loop for every event;
        returns a function that unsubscribes.

        `deltas=False` leaves out `text_delta`, `reasoning_delta` and
        `tool_use_updated`: for listeners that read the live stream from
        `snapshot` at their own pace, which keeps the hot path free of them."""
        return (self._state.events if deltas else self._state.milestones).add_callback(callback)

    def on_snapshot(self, callback: Callable[[AgentSnapshot], None]) -> Callable[[], None]:
        return self._state.snapshots.add_callback(callback)

    # --- driving -------------------------------------------------------------

    @overload
    async def send(self, content: MessageInput) -> Message: ...
    @overload
    async def send(self, content: MessageInput, *, output: type[OutputType],
                   output_retries: int | None = None) -> OutputType: ...

    async def send(self, content: MessageInput, *, output: type[OutputType] | None = None,
                   output_retries: int | None = None) -> Message | OutputType:
        """Send a user message and run until the model answers without tools.

        Returns the final assistant message; with `output=Model` (a pydantic model
        class) the answer must be JSON of that model, and a validated `Model`
        instance is returned instead:

            invoice = await agent.send("Extract the invoice", output=Invoice)

        An answer that fails validation goes back to the model with the errors, up
        to `output_retries` times (default: `AgentConfig.output_retries`, 2), then
        `OutputValidationError`. Raises `AgentBusy` if a run is in progress; on a
        provider error the run is rolled back (the message stays available to
        `resume()`) and the error is raised.
        """
        result = await self.run(content, output=output, output_retries=output_retries)
        return result.message if output is None else _typed(self.name, result)

    async def run(self, content: MessageInput, *, output: type[OutputType] | None = None,
                  output_retries: int | None = None) -> RunResult[OutputType]:
        """`send`, returning both the final message and the validated output (if asked)."""
        return await self._start_run([_user_message(content)], output, output_retries)

    @overload
    async def resume(self) -> Message: ...
    @overload
    async def resume(self, *, output: type[OutputType], output_retries: int | None = None) -> OutputType: ...

    async def resume(self, *, output: type[OutputType] | None = None,
                     output_retries: int | None = None) -> Message | OutputType:
        """Replay the user turn that a crash, cancel or error rolled back, or
        continue a run whose last tool calls were interrupted.

        A typed answer is not stored with the turn (a Python class cannot be): pass
        `output=Model` again to have the resumed turn answer with one; without it
        the turn ends in a plain answer."""
        resumable = self._state.resumable_turn
        if resumable is not None:
            opening = [resumable]
        else:
            last = self.last_message
            if last is None or last.role is not Role.USER:
                raise NoResumableTurn(
                    f"agent '{self.name}' has no interrupted turn to resume; send it a new message instead"
                )
            opening = []
        result = await self._start_run(opening, output, output_retries)
        return result.message if output is None else _typed(self.name, result)

    async def start_run(self, opening: Sequence[Message] = ()) -> Message:
        """Run the turn loop with `opening` as the new messages (none: continue
        from the transcript, e.g. an agent woken by mail). `send` and `resume`
        are the usual ways in."""
        return (await self._start_run(opening, None, None)).message

    async def _start_run(self, opening: Sequence[Message], output: type[OutputType] | None,
                         output_retries: int | None) -> RunResult[OutputType]:
        spec = OutputSpec(output) if output is not None else None
        if output_retries is not None and not (isinstance(output_retries, int) and 0 <= output_retries <= 10):
            raise ConfigError(f"output_retries must be an integer from 0 to 10, got {output_retries!r}")
        if self._state.stale and not self.is_running:
            self.sync_with_store()
        if self.is_running:
            raise AgentBusy(
                f"agent '{self.name}' is still running (generation {self._state.run_generation}); "
                "wait for it, or call agent.stop() / agent.cancel()"
            )
        self._services.prepare_run()
        self._stop_requested = self._stop_keeps_text = None
        loop = TurnLoop(self, opening, approvals=self._approvals, extensions=self._extensions,
                        tools=self.tools, stop_requested=lambda: self._stop_requested,
                        stop_keeps_text=lambda: self._stop_keeps_text, output=spec,
                        output_retries=self.config.output_retries if output_retries is None else output_retries)
        self._run_task = asyncio.get_running_loop().create_task(
            loop.execute(), name=f"mentra-run-{self.name}-{loop.generation}"
        )
        message = await self._run_task
        return RunResult(message=message, output=loop.output_value)

    def stop(self, now: bool = False, *, keep_text: int | None = None) -> None:
        """Stop the current run, keeping its work.

        By default the run finishes its current round first (the model's reply
        and its tool calls). `now=True` ends it at once: a reply being streamed
        is committed as far as it got, marked `truncated` (with `keep_text`, only
        its first `keep_text` characters: what a reader was shown, so the kept
        reply is what they saw, not what streamed while the click travelled);
        running tool calls are cancelled and answered "stopped". Calls waiting for
        approval are denied."""
        if not self.is_running:
            return
        if now:
            self._stop_requested = "now"
            self._stop_keeps_text = keep_text
            if self._run_task is not None:
                self._run_task.cancel()
        elif self._stop_requested is None:
            self._stop_requested = "round"
        self._approvals.deny_all("the user stopped the run before answering")

    @property
    def stopping(self) -> StopKind | None:
        """How the running turn was asked to stop ("now" or "round"), or None."""
        return self._stop_requested if self.status.is_running else None

    def cancel(self) -> None:
        """Abort the current run now; it is rolled back (its message stays resumable)."""
        if self._run_task is not None and not self._run_task.done():
            self._run_task.cancel()

    def sync_with_store(self) -> None:
        """Bring memory back in line with the store after a run whose ending could
        not be written: apply the recovery matrix now that the store may accept it."""
        store = self._services.store
        persisted = store.load_agent(self.id)
        if persisted is None:
            raise AgentNotFound(f"agent {self.id} is no longer in {store!r}")
        self._state.reload(recover(store, persisted, token=self._services.token))

    # --- approvals (runtime/_approvals.py) --------------------------------------

    def approve(self, call_id: str, always: bool = False) -> None:
        """Let the paused tool call `call_id` run. `always=True` also lets this
        agent call that tool without asking from now on (remembered in the store).

        `call_id` may name the run too, `"<call id>@<run>"` (the pending call's
        `reference`), so an answer written for one run never approves another
        run's call that reuses the id. Raises `AgentError` if no such call is
        waiting. Safe from any thread.
        """
        self._approvals.answer(call_id, ApprovalDecision(approved=True, always=always))

    def deny(self, call_id: str, reason: str = "") -> None:
        """Refuse the paused tool call `call_id`; the model gets an error result
        saying it was not run, with `reason`."""
        self._approvals.answer(call_id, ApprovalDecision(approved=False, reason=reason))

    async def ask_approval(self, name: str, input: dict[str, Any]) -> ApprovalDecision:
        """Pause the running turn until the user approves or denies `name`, something
        that is not a tool call (an extension's question, e.g. starting a server
        that came from the state file); shown and answered like a paused call
        (`approve` / `deny` with its reference). Never answered by `auto_approve` or
        "always allow". An extension that refuses approvals (for an agent nobody watches)
        denies it at once."""
        refusal = next((text for e in self._extensions if (text := e.refuse_approval(name)) is not None), None)
        if refusal is not None:
            return ApprovalDecision(approved=False, reason=refusal)
        return await self._approvals.ask(name, input, self._state.run_generation)

    # --- time travel (runtime/_time_travel.py) ------------------------------------

    def checkpoints(self) -> list[Checkpoint]:
        """One `Checkpoint(index, role, preview, run_generation, created_at)` per
        committed message of the current branch; `index` is the number of messages
        before it (what `fork(at=...)`, `rewind(...)` and `edit(...)` take)."""
        return self._services.store.load_checkpoints(self.id)

    def fork(self, new_name: str, at: int | None = None) -> Agent:
        """A new persisted agent `new_name` whose history is this agent's first `at`
        committed messages (all when None), with the same model and config, its own
        id and lease. Nothing is copied: the fork reads this agent's stored messages.
        A running agent is forked at its last committed message. The agents it
        started, pending approvals and its mail are not part of a fork."""
        return self.runtime.fork_agent(self, new_name, at)

    def rewind(self, to: int) -> None:
        """Make the history its first `to` messages for the next turn. Nothing is
        deleted: what followed stays a branch (`branches()`, `switch_branch()`)."""
        self._ensure_at_rest("rewind")
        check_index(self.name, "rewind()", to, self._state.history_len)
        self._services.store.rewind(self.id, to, token=self._services.token)
        self._take_stored_history()

    def branches(self) -> list[Branch]:
        """This agent's branches in creation order, each with the checkpoints of its
        own messages (those after its fork point); one `is_head`."""
        store = self._services.store
        return [
            Branch(id=b.id, parent_id=b.parent_id, fork_index=b.fork_index, length=b.length,
                   is_head=b.is_head, created_at=b.created_at,
                   checkpoints=store.load_checkpoints(self.id, b.fork_index, branch_id=b.id))
            for b in store.list_branches(self.id)
        ]

    @property
    def branch_id(self) -> str:
        """The branch the agent reads and extends now."""
        return self._state.branch_id

    def switch_branch(self, branch_id: str) -> None:
        """Go back to another of this agent's branches (`branches()` lists them)."""
        self._ensure_at_rest("switch branches of")
        if not isinstance(branch_id, str) or branch_id not in {b.id for b in
                                                               self._services.store.list_branches(self.id)}:
            raise AgentError(
                f"agent '{self.name}' has no branch {branch_id!r}; agent.branches() lists its branches"
            )
        self._services.store.switch_branch(self.id, branch_id, token=self._services.token)
        self._take_stored_history()

    async def edit(self, index: int, new_text: str) -> Message:
        """Send `new_text` in place of the user message at `index`: the history is
        rewound to just before it (the old branch kept) and `new_text` is sent.
        Returns like `send`."""
        self._ensure_at_rest("edit")
        check_index(self.name, "edit()", index, self._state.history_len)
        found = self._services.store.load_messages(self.id, index, index + 1)
        if not found or found[0].role is not Role.USER or found[0].tool_results:
            what = ("nothing (it is the end of the history)" if not found
                    else "a tool result" if found[0].tool_results else "the model's reply")
            raise AgentError(
                f"message {index} of agent '{self.name}' is {what}, not a message you wrote; "
                "edit() takes the index of a user message (agent.checkpoints() shows each role)"
            )
        if not isinstance(new_text, str) or not new_text.strip():
            raise AgentError("edit() needs the new text of the message (a non-empty string)")
        self.rewind(index)
        return await self.send(new_text)

    def export(self, format: ExportFormat = "markdown",
               path: str | os.PathLike[str] | None = None) -> str:
        """The committed transcript as `"markdown"`, `"json"` or `"ipynb"` text,
        tool calls and results included (no config, no key); written to `path`
        too when given."""
        parent = None
        if self.forked_from is not None:
            stored = self._services.store.load_agent(self.forked_from, transcript=False)
            parent = stored.record.name if stored is not None else f"a deleted agent ({self.forked_from})"
        header = ExportHeader(name=self.name, agent_id=self.id, model=self.model.key,
                              forked_from=parent, fork_index=self.fork_index)
        return export_transcript(header, self.history, format, path)

    def _ensure_at_rest(self, what: str) -> None:
        if self._state.stale and not self.is_running:
            self.sync_with_store()
        if self.is_running:
            raise AgentBusy(
                f"cannot {what} agent '{self.name}' while it runs; wait for the run to end, "
                "or call agent.stop() / agent.cancel() first"
            )

    def _take_stored_history(self) -> None:
        persisted = self._services.store.load_agent(self.id, transcript=False)
        if persisted is None:
            raise AgentNotFound(f"agent {self.id} is no longer in {self._services.store!r}")
        self._state.replace_history(persisted)


def _typed(name: str, result: RunResult[OutputType]) -> OutputType:
    if result.output is None:
        raise AgentError(
            f"agent '{name}' was stopped before it gave a valid answer, so there is no output; its "
            "work is kept in the transcript (agent.resume(output=...) or a new send asks again)"
        )
    return result.output


def _user_message(content: MessageInput) -> Message:
    if isinstance(content, Message):
        if content.role is not Role.USER:
            raise ValueError("agent.send() takes a user message; got an assistant message")
        return content
    if isinstance(content, (str, ContentBlock)):
        return Message.user(content)
    blocks = list(content)
    if not blocks:
        raise ValueError("agent.send() needs some content: a string or content blocks")
    return Message.user(*blocks)

