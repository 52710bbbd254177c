"""Approvals: tool calls that wait for the user's yes before they run.

A tool whose `ToolSpec.requires_approval` is set pauses the run on each call,
unless its name matches an entry of the agent's `AgentConfig.auto_approve` (a
name or a glob such as `files__*`) or the user chose
"always allow" for this agent. The user answers with `agent.approve(call_id,
always=False)` or `agent.deny(call_id, reason)` (the AgentView's buttons call
the same). A denied call goes back to the model as an error result with the
reason; an approved one runs.

The same pause serves questions that are not tool calls (`Approvals.ask`, e.g.
"start the server this state file brought, which runs `…`?"): they wait for
an explicit answer every time, never for `auto_approve` or "always allow".

An answer is bound to the agent (each agent has its own `Approvals`) and may be
bound to the run as well: `"<call id>@<run>"` (`PendingApproval.reference`,
what the notebook shows and `%mentra approve` takes) matches only that run's
call. Call ids alone can repeat: some OpenAI-compatible servers send none, and
a local server may number them from 0 in every reply, so re-running an old
`%mentra approve` cell must not approve a different call with the same id.

What the store keeps, under the agent's state key `approvals.v1`:
- `always_allow`: tool names this agent may call without asking (survives
  restarts and new runtimes);
- `pending`: the calls waiting right now. A pending call is written before it
  is announced, so a kernel that dies while waiting leaves a record, and
  recovery answers that call with `APPROVAL_INTERRUPTED_RESULT` instead of the
  generic "interrupted" text.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mentra_nb.errors import AgentError, MentraError
from mentra_nb.messages import ToolUseBlock
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime._snapshot import ApprovalDecision, PendingApproval
from mentra_nb.runtime.events import ToolApprovalRequested, ToolApprovalResolved
from mentra_nb.runtime.tools import ToolSpec
from mentra_nb.store.base import Store

__all__ = [
    "APPROVALS_STATE_KEY",
    "APPROVAL_INTERRUPTED_RESULT",
    "ApprovalDecision",
    "ApprovalState",
    "Approvals",
    "PendingApproval",
    "denial_result",
    "load_approval_state",
]

log = logging.getLogger("mentra_nb.runtime")

APPROVALS_STATE_KEY = "approvals.v1"
APPROVAL_INTERRUPTED_RESULT = "not run: it was waiting for approval when the kernel stopped"
"""The error result of a call that was waiting for approval when its kernel stopped."""


class ApprovalState(BaseModel):
    """The stored form (state key `approvals.v1`)."""

    model_config = ConfigDict(defer_build=True)

    always_allow: list[str] = Field(default_factory=list)
    pending: list[PendingApproval] = Field(default_factory=list)


def load_approval_state(store: Store, agent_id: str) -> ApprovalState:
    raw = store.load_state(agent_id, APPROVALS_STATE_KEY)
    if raw is None:
        return ApprovalState()
    try:
        return ApprovalState.model_validate(raw)
    except ValidationError:
        # A damaged record must not make the agent unloadable; forgetting
        # "always allow" only means the user is asked again.
        return ApprovalState()


def denial_result(tool_name: str, reason: str) -> str:
    why = reason.strip() or "no reason given"
    return (f"the user denied this call of '{tool_name}', so it was not run ({why}). Do not repeat "
            "it unchanged: change your approach, or ask the user what they want.")


class Approvals:
    """One agent's approval policy and the calls it is waiting on."""

    def __init__(self, agent: AgentHandle, state: ApprovalState) -> None:
        self._agent = agent
        self.always_allow: set[str] = set(state.always_allow)
        # call id -> (what is shown, the future the run awaits, the loop it belongs to)
        self._waiting: dict[str, tuple[PendingApproval, asyncio.Future[ApprovalDecision],
                                       asyncio.AbstractEventLoop]] = {}

    @property
    def pending(self) -> list[PendingApproval]:
        return [entry[0] for entry in self._waiting.values()]

    def required(self, spec: ToolSpec) -> bool:
        if not spec.requires_approval:
            return False
        if spec.name in self.always_allow:
            return False
        # Globs, so one entry can trust a whole family of tools: "time__*".
        return not any(fnmatch.fnmatchcase(spec.name, pattern) for pattern in self._agent.config.auto_approve)

    async def ask(self, name: str, input: dict[str, Any], run_generation: int) -> ApprovalDecision:
        """Wait for the user's answer to a question that is not a tool call: `name`
        says what would happen, `input` the details shown with it. It is shown and
        answered like a tool call, but always asked: `auto_approve` and "always
        allow" (both stored with the agent, so a state file could carry them) never
        answer it, and an "always" answer is not remembered."""
        question = ToolUseBlock(id=f"ask-{uuid.uuid4().hex[:12]}", name=name, input=input)
        return await self.wait(question, run_generation, remember_always=False)

    async def wait(self, use: ToolUseBlock, run_generation: int, *,
                   remember_always: bool = True) -> ApprovalDecision:
        """Persist the pending call, announce it, and wait for the user's answer."""
        agent = self._agent
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ApprovalDecision] = loop.create_future()
        pending = PendingApproval(tool_use_id=use.id, tool_name=use.name, input=dict(use.input),
                                  run_generation=run_generation, requested_at=time.time())
        self._waiting[use.id] = (pending, future, loop)
        fields = {"agent_id": agent.id, "run_generation": run_generation}
        try:
            self._persist()  # before anyone can see it: a crash from here on is recoverable
            agent.state.emit(ToolApprovalRequested(**fields, tool_use_id=use.id, name=use.name,
                                                   input=dict(use.input)))
            agent.state.changed()
            if not agent.state.watched:
                # A plain script: no view, no observer; waiting in silence looks like a hang.
                ref = pending.reference
                skip = (f"; AgentConfig(auto_approve=[{use.name!r}]) lets it run without asking"
                        if remember_always else "")  # (a question is always asked)
                log.warning("agent '%s' waits for your approval of %s (call %s): answer with "
                            "agent.approve(%r) or agent.deny(%r, reason)%s",
                            agent.name, use.name, ref, ref, ref, skip)
            decision = await future
        except BaseException:
            # Cancelled (the run rolls back) or the write failed: the store must
            # not keep announcing a call nobody waits for.
            self._waiting.pop(use.id, None)
            with contextlib.suppress(MentraError):
                self._persist()
            agent.state.changed()
            raise
        self._waiting.pop(use.id, None)
        if decision.approved and decision.always and remember_always:
            self.always_allow.add(use.name)
        self._persist()
        agent.state.emit(ToolApprovalResolved(**fields, tool_use_id=use.id, name=use.name,
                                              approved=decision.approved, always=decision.always,
                                              reason=decision.reason))
        agent.state.changed()
        return decision

    def answer(self, call_id: str, decision: ApprovalDecision) -> None:
        """Resolve a waiting call. Safe from any thread: the run wakes on its own loop."""
        bare, run = _split_reference(call_id)
        entry = self._waiting.get(bare)
        if entry is None or (run is not None and entry[0].run_generation != run):
            waiting = ", ".join(f"{p.reference} ({p.tool_name})" for p in self.pending) or "none"
            stale = (f" (call {bare!r} of run {run} is no longer waiting: it was answered, or "
                     "its run ended)" if entry is not None else "")
            raise AgentError(
                f"agent '{self._agent.name}' has no call {call_id!r} waiting for approval{stale} "
                f"(waiting: {waiting}); snapshot.pending_approvals lists them"
            )
        _pending, future, loop = entry
        if future.done():
            raise AgentError(f"call {call_id!r} of agent '{self._agent.name}' was already answered")

        def settle() -> None:
            if not future.done():
                future.set_result(decision)

        if _loop_thread_is_current(loop):
            settle()
        else:
            loop.call_soon_threadsafe(settle)

    def deny_all(self, reason: str) -> None:
        for call_id, (_pending, future, _loop) in list(self._waiting.items()):
            if not future.done():
                self.answer(call_id, ApprovalDecision(approved=False, reason=reason))

    def _persist(self) -> None:
        agent = self._agent
        state = ApprovalState(always_allow=sorted(self.always_allow), pending=self.pending)
        services = agent.services
        services.store.save_state(agent.id, APPROVALS_STATE_KEY, state.model_dump(mode="json"),
                                  token=services.token)


def _split_reference(reference: str) -> tuple[str, int | None]:
    """`"c1@3"` → ("c1", 3); a bare call id has no run. Only a trailing `@<digits>`
    counts, so a provider's id that contains '@' still works on its own."""
    call_id, sep, run = reference.rpartition("@")
    if sep and call_id and run.isdigit():
        return call_id, int(run)
    return reference, None


def _loop_thread_is_current(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # another thread (a cell, a widget callback): hand it to the loop
        return False
