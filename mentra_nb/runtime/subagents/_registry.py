"""`SubagentRegistry`: the subagent trees of the root agents one runtime drives.

Every change is persisted first and swapped into memory second, in one of
three ways (the names the spec's tests pin):

- **abort** (`_mutate`): a failed write raises and memory stays as it was, so
  a refused spawn leaves no ghost child behind;
- **commit anyway** (`_cleanup`): the change is swapped in even though the
  write failed, and the error is raised; used to forget a child that is gone
  either way (remove, rollback), where keeping it in memory would be a lie;
- **repair and retry** (`finished`): a child's terminal status that cannot be
  written is replaced by `errored` ("subagent state persistence failed: …"),
  written once more, and committed whatever that second write does; the
  frontend hears about it and waiters wake only after that commit, so no one
  acts on a state that was never on disk.

All methods except `wait` are synchronous: they run on the runtime's event
loop without awaiting, so two changes never interleave and no lock is needed.
Readers on other threads (`tree`, `picker`, `infos`) see committed, immutable
trees only.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import ValidationError

from mentra_nb.runtime.subagents._config import SubagentLimits
from mentra_nb.runtime.subagents._errors import (
    SubagentCheckpointError,
    SubagentError,
    SubagentLimitReached,
    UnknownSubagent,
)
from mentra_nb.runtime.subagents._events import (
    PickerRemoved,
    PickerUpdated,
    SubagentEvent,
    SubagentNotice,
)
from mentra_nb.runtime.subagents._mailbox import new_mail_id, send, unread_senders
from mentra_nb.runtime.subagents._picker import (
    SubagentInfo,
    SubagentPickerState,
    SubagentSummary,
    infos_for,
    picker_for,
    summaries_for,
)
from mentra_nb.runtime.subagents._tree import (
    ROOT_PATH,
    TREE,
    Mail,
    SubagentRecord,
    SubagentStatus,
    SubagentTree,
    TreeDraft,
    WaitingCall,
    bounded_text,
    legacy_mailbox,
    stored_tree,
)
from mentra_nb.runtime.subagents.mail import MAIL
from mentra_nb.store.base import Store

__all__ = ["LiveChild", "RegistryOwner", "SubagentRegistry"]

log = logging.getLogger("mentra_nb.runtime.subagents")

T = TypeVar("T")


class LiveChild(Protocol):
    """A child this process is driving right now (what the spec calls its sender)."""

    def interrupt(self) -> None: ...


@dataclass
class _Root:
    root_id: str
    store: Store
    token: str
    limits: SubagentLimits
    tree: SubagentTree
    summaries: list[SubagentSummary]
    live: dict[str, LiveChild] = field(default_factory=dict)
    subscribers: list[Callable[[SubagentEvent], None]] = field(default_factory=list)
    on_commit: Callable[[], None] | None = None


class _Unchanged(Generic[T]):
    """Returned by a change function that found nothing to change: no write."""

    def __init__(self, value: T) -> None:
        self.value = value


Change = Callable[[TreeDraft, dict[str, LiveChild]], Any]
# Given the draft and the first write's error, make the draft durable-safe and
# return (what to say if the retry fails too, the notice to show now).
Repair = Callable[[TreeDraft, Exception], tuple[str, SubagentNotice]]


class RegistryOwner:
    """What holds a runtime's registry (`SubagentsExtension`): the `_api` functions
    find the registry by this type, so they need not import the extension, which
    offers them as agent methods."""

    registry: SubagentRegistry


class SubagentRegistry:
    """Trees keyed by root agent id. One registry per runtime (installed by
    `SubagentsExtension`); tests may build one directly."""

    def __init__(self) -> None:
        self._roots: dict[str, _Root] = {}
        self._waiters: set[asyncio.Future[None]] = set()

    # --- roots ------------------------------------------------------------------

    def initialize(
        self, root_id: str, *, store: Store, token: str, limits: SubagentLimits,
        on_commit: Callable[[], None] | None = None,
    ) -> SubagentTree:
        """Open the tree of `root_id` (empty when nothing is stored).

        A child that was pending or running when the tree was stored was cut off
        by a crash or a closed runtime: it becomes `interrupted`, with no active
        turn, and that is written back before anyone sees the tree. A tree stored
        with its mail inside (before mail became records) has that mail queued as
        records in the same write.
        """
        existing = self._roots.get(root_id)
        if existing is not None:
            existing.store, existing.token, existing.limits = store, token, limits
            existing.on_commit = on_commit
            if existing.tree.agents:
                self._emit(existing, self._status_event(existing))
            return existing.tree
        raw = stored_tree(store, root_id)
        try:
            raw, legacy = legacy_mailbox(raw) if raw is not None else (None, [])
            tree = SubagentTree.model_validate(raw) if raw is not None else SubagentTree()
        except ValidationError as err:
            raise SubagentCheckpointError(
                f"the subagent state of agent {root_id} (record {TREE.name}) is unreadable: "
                f"{err.errors()[0]['msg']} at {'.'.join(map(str, err.errors()[0]['loc']))}"
            ) from err
        tree.validate_limits(max_agents=limits.max_agents, root_id=root_id)
        draft = tree.draft()
        draft.outbox.extend(legacy)
        cut_off = [path for path, record in draft.agents.items() if record.is_active]
        for path in cut_off:
            draft.update(path, status="interrupted", active_turn=None, awaiting_approval=[])
            # The calls were answered by crash recovery.
            self._withdraw_approval_notices(store, root_id, draft, path)
        tree = draft.freeze()
        if cut_off or legacy:
            self._write(store, root_id, token, tree, draft)
        root = _Root(root_id=root_id, store=store, token=token, limits=limits, tree=tree,
                     summaries=summaries_for(tree), on_commit=on_commit)
        self._roots[root_id] = root
        if tree.agents:
            self._emit(root, self._status_event(root))
        return tree

    def remove_root(self, root_id: str) -> None:
        """Forget `root_id` (its runtime is closing); waiters wake and find it gone."""
        self._roots.pop(root_id, None)
        self._notify()

    def has_root(self, root_id: str) -> bool:
        return root_id in self._roots

    def root_ids(self) -> list[str]:
        return list(self._roots)

    def _root(self, root_id: str) -> _Root:
        root = self._roots.get(root_id)
        if root is None:
            raise UnknownSubagent(
                f"unknown agent tree `{root_id}`: no root agent with that id is open in this "
                "runtime (resume it, or spawn it with AgentConfig(subagents=True))"
            )
        return root

    # --- reading (safe from any thread) ------------------------------------------

    def tree(self, root_id: str) -> SubagentTree:
        return self._root(root_id).tree

    def limits(self, root_id: str) -> SubagentLimits:
        return self._root(root_id).limits

    def picker(self, root_id: str) -> SubagentPickerState | None:
        return picker_for(self._root(root_id).tree)

    def summaries(self, root_id: str, prefix: str | None = None) -> list[SubagentSummary]:
        summaries = self._root(root_id).summaries
        return summaries if prefix is None else [s for s in summaries if s.path.startswith(prefix)]

    def infos(self, root_id: str, prefix: str | None = None) -> list[SubagentInfo]:
        return infos_for(self._root(root_id).tree, prefix)

    def list(self, root_id: str, prefix: str | None = None) -> list[dict[str, Any]]:
        """What the `list_agents` tool reports, in path order."""
        return [
            {"task_name": path, "status": record.status, "model": record.model,
             "last_message": record.last_message,
             # Only while a call waits, so the spec's four keys stay as they are otherwise.
             **({"waiting_for_approval": [w.tool for w in record.awaiting_approval]}
                if record.awaiting_approval else {})}
            for path, record in self._root(root_id).tree.agents.items()
            if prefix is None or path.startswith(prefix)
        ]

    def locate(self, agent_id: str) -> tuple[str, str] | None:
        """(root id, path) of the child agent `agent_id`, or of a root itself."""
        if agent_id in self._roots:
            return agent_id, ROOT_PATH
        # list(): a snapshot taken under the GIL, as widgets call this from their thread.
        for root_id, root in list(self._roots.items()):
            for path, record in root.tree.agents.items():
                if record.agent_id == agent_id:
                    return root_id, path
        return None

    def pending_mail(self, root_id: str, recipient: str | None = None) -> builtins.list[Mail]:
        """Mail of the tree not yet read (by `recipient`), oldest first."""
        return MAIL.pending(self._root(root_id).store, root_id, recipient)

    # --- observing ----------------------------------------------------------------

    def subscribe(
        self, root_id: str, callback: Callable[[SubagentEvent], None], *, replay: bool = True
    ) -> Callable[[], None]:
        """Call `callback` on the runtime's loop after every commit of `root_id`'s
        tree; with `replay`, at once with the current picker if the tree has
        children. Returns a function that unsubscribes."""
        root = self._root(root_id)
        root.subscribers.append(callback)
        if replay and root.tree.agents:
            self._emit_to(callback, self._status_event(root))

        def unsubscribe() -> None:
            if callback in root.subscribers:
                root.subscribers.remove(callback)

        return unsubscribe

    def next_change(self) -> asyncio.Future[None]:
        """A future that completes at the next commit (or root removal).

        Arm it *before* looking at the state you are waiting on, so a change in
        between is not missed.
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(future)
        future.add_done_callback(self._waiters.discard)
        return future

    # --- the tree's changes ----------------------------------------------------------

    def reserve(
        self, root_id: str, path: str, parent: str, agent_id: str | None, depth: int, model: str
    ) -> None:
        """Claim `path` for a new child (status pending_init), within the limits."""
        limits = self._root(root_id).limits

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> None:
            if path in draft.agents:
                raise SubagentError(f"agent `{path}` already exists")
            if len(draft.agents) >= limits.max_agents - 1:
                raise SubagentLimitReached(
                    f"subagent limit {limits.max_agents} (including root) reached"
                )
            draft.ensure_concurrency_available(limits.max_concurrency)
            draft.agents[path] = SubagentRecord(parent=parent, agent_id=agent_id, depth=depth,
                                                model=model)

        self._mutate(root_id, change)

    def remove(self, root_id: str, path: str) -> None:
        """Forget a child whose start failed (committed even if the write fails)."""

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> None:
            draft.agents.pop(path, None)
            live.pop(path, None)

        self._cleanup(root_id, change)

    def attach(
        self, root_id: str, path: str, child: LiveChild, *, turn: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """The reserved child runs: status running, its handle live, and `turn` its
        active turn (None until a turn has begun)."""

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> None:
            record = self._record(draft, path)
            draft.update(path, status="running", active_turn=turn,
                         agent_id=agent_id if agent_id is not None else record.agent_id)
            live[path] = child

        self._mutate(root_id, change)

    def restart(self, root_id: str, path: str, child: LiveChild, *, turn: str) -> None:
        """A completed or interrupted child takes up work again (a follow-up task)."""
        limits = self._root(root_id).limits

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> None:
            record = self._record(draft, path)
            if record.is_active:
                raise SubagentError(f"agent `{path}` is already {record.status}")
            draft.ensure_concurrency_available(limits.max_concurrency)
            # A new turn: the previous run's last message is no longer news.
            draft.update(path, status="running", active_turn=turn, last_message=None)
            live[path] = child

        self._mutate(root_id, change)

    def rollback(self, root_id: str, path: str, status: SubagentStatus) -> None:
        """Set a child's status without a notice (committed even if the write fails)."""

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> None:
            if path in draft.agents:
                draft.update(path, status=status, active_turn=None)
            live.pop(path, None)

        self._cleanup(root_id, change)

    def finished(
        self, root_id: str, path: str, status: SubagentStatus, last_message: str | None, *,
        notify_parent: bool = True,
    ) -> None:
        """A child's turn ended: record its terminal status and last message, and
        leave its parent a notice. See the module docstring for a failed write."""
        notice_id = new_mail_id()

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> Any:
            record = draft.agents.get(path)
            if record is None or not record.is_active:
                # Already ended (or forgotten): a second report must neither change its
                # status nor leave its parent a duplicate notice.
                return _Unchanged(None)
            text = bounded_text(last_message) if last_message is not None else record.last_message
            draft.update(path, status=status, active_turn=None, last_message=text,
                         awaiting_approval=[])
            self._withdraw_approval_notices(self._root(root_id).store, root_id, draft, path)
            live.pop(path, None)
            if notify_parent:
                send(draft, Mail(id=notice_id, sender=path, recipient=record.parent,
                                        kind="update", status=status, text=text or ""))

        def repair(draft: TreeDraft, error: Exception) -> tuple[str, SubagentNotice]:
            failure = bounded_text(f"subagent state persistence failed: {error}")
            draft.update(path, status="errored", last_message=failure)
            draft.outbox[:] = [
                m.model_copy(update={"status": "errored", "text": failure}) if m.id == notice_id else m
                for m in draft.outbox
            ]
            notice = SubagentNotice(root_id=root_id, path=path, text=f"`{path}`: {failure}")
            return f"`{path}`: retrying the errored state failed too", notice

        self._commit(root_id, change, on_failure="repair", repair=repair)

    def message(self, root_id: str, path: str, text: str) -> None:
        """A running child committed an assistant message with text: it is its
        `last_message` from now on (what `list_agents` shows while it works)."""

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> Any:
            record = draft.agents.get(path)
            bounded = bounded_text(text)
            if record is None or not record.is_active or record.last_message == bounded:
                return _Unchanged(None)
            draft.update(path, last_message=bounded)

        self._mutate(root_id, change)

    def approval_pending(self, root_id: str, path: str, call: str, tool: str) -> None:
        """A running child's call `call` of `tool` waits for the user: the tree says so
        and its parent gets an `approval` notice (which ends its `wait_agent`)."""

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> Any:
            record = draft.agents.get(path)
            if record is None or not record.is_active or any(w.call == call for w in record.awaiting_approval):
                return _Unchanged(None)
            draft.update(path, awaiting_approval=[*record.awaiting_approval, WaitingCall(call=call, tool=tool)])
            send(draft, Mail(id=new_mail_id(), sender=path, recipient=record.parent,
                             kind="approval", text=tool))

        self._mutate(root_id, change)

    def approval_resolved(self, root_id: str, path: str, call: str) -> None:
        """The call `call` of the child at `path` was answered (or its run ended)."""

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> Any:
            record = draft.agents.get(path)
            if record is None or not any(w.call == call for w in record.awaiting_approval):
                return _Unchanged(None)
            waiting = [w for w in record.awaiting_approval if w.call != call]
            draft.update(path, awaiting_approval=waiting)
            if not waiting:  # notices not read yet are no longer true
                self._withdraw_approval_notices(self._root(root_id).store, root_id, draft, path)

        self._mutate(root_id, change)

    def interrupt(self, root_id: str, target: str) -> SubagentStatus:
        """Interrupt `target`'s active turn; returns its status before.

        A child that is not live in this process (finished, or stopped by a
        restart) has nothing to interrupt: that is not an error.
        """
        if target == ROOT_PATH:
            raise SubagentError("the root agent cannot interrupt itself")
        root = self._root(root_id)
        record = root.tree.record(target)
        child = root.live.get(target)
        if child is not None:
            if record.active_turn is None:
                raise SubagentError(f"agent `{target}` has no active turn to interrupt")
            child.interrupt()
        return record.status

    # --- mail ----------------------------------------------------------------------

    def queue_message(self, root_id: str, sender: str, recipient: str, text: str) -> str:
        """Leave `text` for `recipient` (a path of the tree). Returns the mail id."""
        mail = Mail(id=new_mail_id(), sender=sender, recipient=recipient, text=text)

        def change(draft: TreeDraft, live: dict[str, LiveChild]) -> None:
            if recipient != ROOT_PATH:
                self._record(draft, recipient)
            send(draft, mail)

        self._mutate(root_id, change)
        return mail.id

    def mail_changed(self) -> None:
        """Mail was queued or requeued outside a tree commit: waiters look again."""
        self._notify()

    def _withdraw_approval_notices(self, store: Store, root_id: str, draft: TreeDraft, sender: str) -> None:
        """Forget `sender`'s approval notices that nobody read: its calls were
        answered, so a notice would only mislead its parent."""
        draft.outbox[:] = [m for m in draft.outbox if not (m.kind == "approval" and m.sender == sender)]
        draft.withdrawn.extend(m.id for m in MAIL.pending(store, root_id)
                               if m.kind == "approval" and m.sender == sender)

    async def wait(self, root_id: str, path: str, max_wait: float) -> builtins.list[str]:
        """Senders of unread mail for `path` (mail its running turn was handed is
        read), as soon as there is some; `[]` at once when no other agent of the
        tree is active, or when `max_wait` seconds pass without mail."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait
        while True:
            change = self.next_change()  # armed before checking, so no wake-up is lost
            try:
                tree = self._root(root_id).tree
                senders = unread_senders(self.pending_mail(root_id, path))
                if senders:
                    return senders
                if not any(r.is_active for p, r in tree.agents.items() if p != path):
                    return []
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return []
                try:
                    await asyncio.wait_for(change, remaining)
                except TimeoutError:
                    return []
            finally:
                change.cancel()

    # --- committing -------------------------------------------------------------------

    def _record(self, draft: TreeDraft, path: str) -> SubagentRecord:
        record = draft.agents.get(path)
        if record is None:
            raise UnknownSubagent(f"unknown agent `{path}`")
        return record

    def _mutate(self, root_id: str, change: Change) -> Any:
        return self._commit(root_id, change, on_failure="abort")

    def _cleanup(self, root_id: str, change: Change) -> Any:
        return self._commit(root_id, change, on_failure="commit")

    def _commit(self, root_id: str, change: Change, *, on_failure: str, repair: Repair | None = None) -> Any:
        root = self._root(root_id)
        draft = root.tree.draft()
        live = dict(root.live)
        output = change(draft, live)  # raises → nothing changed anywhere
        if isinstance(output, _Unchanged):
            return output.value
        candidate = draft.freeze()
        try:
            self._persist(root, candidate, draft)
        except Exception as error:
            if on_failure == "abort":
                raise
            if on_failure == "commit":
                self._swap(root, candidate, live)
                raise
            assert repair is not None
            retry_message, failure = repair(draft, error)
            candidate = draft.freeze()
            notices = [failure]
            try:
                self._persist(root, candidate, draft)
            except Exception as retry_error:
                log.error("subagent state of %s could not be saved: %s", root_id, retry_error)
                notices.append(SubagentNotice(root_id=root_id, text=f"{retry_message}: {retry_error}"))
            self._swap(root, candidate, live, notices)
            return output
        self._swap(root, candidate, live)
        return output

    def _persist(self, root: _Root, tree: SubagentTree, draft: TreeDraft) -> None:
        self._write(root.store, root.root_id, root.token, tree, draft)

    @staticmethod
    def _write(store: Store, root_id: str, token: str, tree: SubagentTree, draft: TreeDraft) -> None:
        """The tree and the mail its change sends or withdraws, in one transaction
        fenced by the root's lease."""
        store.write_records([
            TREE.put_op(root_id, tree),
            *(MAIL.queue_op(root_id, mail.recipient, mail, key=mail.id) for mail in draft.outbox),
            *(MAIL.withdraw_op(root_id, mail_id) for mail_id in draft.withdrawn),
        ], agent_id=root_id, token=token)

    def _swap(self, root: _Root, tree: SubagentTree, live: dict[str, LiveChild],
              notices: Sequence[SubagentNotice] = ()) -> None:
        root.tree = tree
        root.summaries = summaries_for(tree)
        root.live = live
        self._emit(root, self._status_event(root))
        for notice in notices:
            self._emit(root, notice)
        if root.on_commit is not None:
            try:
                root.on_commit()
            except Exception:
                log.exception("publishing the snapshot of root %s failed", root.root_id)
        # Last: whoever wakes up finds the committed tree and every notice sent.
        self._notify()

    def _status_event(self, root: _Root) -> SubagentEvent:
        picker = picker_for(root.tree)
        if picker is None:
            return PickerRemoved(root_id=root.root_id)
        return PickerUpdated(root_id=root.root_id, picker=picker)

    def _emit(self, root: _Root, event: SubagentEvent) -> None:
        for callback in list(root.subscribers):
            self._emit_to(callback, event)

    @staticmethod
    def _emit_to(callback: Callable[[SubagentEvent], None], event: SubagentEvent) -> None:
        try:
            callback(event)
        except Exception:  # a broken widget must not break the tree
            log.exception("a subagent subscriber failed")

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for future in waiters:
            if not future.done():
                future.set_result(None)
