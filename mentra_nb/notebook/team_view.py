"""`TeamView`: a lead and its teammates, with what waits for the user.

Members show role, status, whether their actor is alive in this kernel, unread
mail and when they last did something; protocol requests addressed to the lead
(a teammate's plan, a shutdown) get Approve / Reject buttons, and a teammate's
tool call that needs approval gets Approve / Always allow / Deny, so a paused
teammate is seen (and answered) where the team is. The view follows the lead's
snapshot but refreshes only when the team part of it changes, plus the
approval events of the teammates alive in this kernel, so a streaming agent
costs it nothing. A click on a teammate opens its committed transcript (read
from the store, so a teammate that is not running reads too), newest messages
first in pages, "load older" for the rest. A saved notebook keeps the team as
static markdown above the widget, brought up to date whenever the view refreshes
(see mentra_nb/notebook/_widget.py). What is open is each view's own (a
team shown in two cells can read two teammates): a view names itself in its
requests, and transcripts travel as `preview` messages that each view keeps
for the teammate it has open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import traitlets
from pydantic import Field

from mentra_nb.errors import AgentError, MentraError
from mentra_nb.notebook._assets import static_file
from mentra_nb.notebook._rendering import md_cell, md_code, md_text, message_items
from mentra_nb.notebook._widget import BrowserMessage, BrowserMessages, MentraWidget
from mentra_nb.notebook.agent_view import approval_item
from mentra_nb.runtime import Agent, AgentEvent, AgentSnapshot, teams
from mentra_nb.runtime.teams import TeamSnapshot, team_of

if TYPE_CHECKING:
    from mentra_nb.notebook._host import RuntimeHost

__all__ = ["TeamView"]

log = logging.getLogger("mentra_nb.notebook")


class _Approve(BrowserMessage):
    kind: Literal["approve"]
    request_id: str = Field(min_length=1, max_length=200)


class _Reject(BrowserMessage):
    kind: Literal["reject"]
    request_id: str = Field(min_length=1, max_length=200)
    reason: str = Field(min_length=1, max_length=4000)


class _ApproveCall(BrowserMessage):
    kind: Literal["approve_call"]
    agent: str = Field(min_length=1, max_length=200)
    call_id: str = Field(min_length=1, max_length=200)
    always: bool = False


class _DenyCall(BrowserMessage):
    kind: Literal["deny_call"]
    agent: str = Field(min_length=1, max_length=200)
    call_id: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=2_000)


class _Open(BrowserMessage):
    kind: Literal["open"]
    name: str = Field(min_length=1, max_length=200)
    view: str = Field(min_length=1, max_length=100)  # which view of the team asks


class _Older(BrowserMessage):
    kind: Literal["older"]
    view: str = Field(min_length=1, max_length=100)


class _Close(BrowserMessage):
    kind: Literal["close"]
    view: str = Field(min_length=1, max_length=100)


PREVIEW_PAGE = 20  # messages of a teammate's transcript shown at a time
_APPROVAL_EVENTS = ("tool_approval_requested", "tool_approval_resolved", "run_finished", "run_failed",
                    "run_cancelled")


class TeamView(MentraWidget):
    """A lead and its teammates: their statuses, a teammate's transcript on a click, the requests
    and tool calls waiting for the user, with their buttons (`%mentra team LEAD`).
    """

    _esm = static_file("team_view.js")
    _css = static_file("mentra.css")

    _mentra_view = traitlets.Unicode("team").tag(sync=True)
    lead = traitlets.Dict().tag(sync=True)  # {name, status, unread}
    members: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    requests: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)  # pending, addressed to the lead
    approvals: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)  # teammates' tool calls waiting for the user
    notice = traitlets.Unicode("").tag(sync=True)

    def __init__(self, lead: Agent, host: RuntimeHost) -> None:
        super().__init__()
        self._lead = lead
        self._host = host
        self._team_key: object = None
        self._watched: dict[str, Callable[[], None]] = {}  # teammate agent id -> unsubscribe
        # What each view has open (view id -> teammate, pages), and the message count
        # of each transcript last sent, so a refresh resends only what changed
        # (runtime thread only).
        self._open: dict[str, tuple[str, int]] = {}
        self._sent: dict[tuple[str, int], int] = {}
        self.on_msg(self._on_browser_message)
        host.call(self._attach)

    # --- runtime side ----------------------------------------------------------

    def _attach(self) -> None:
        self._refresh()
        stop_lead = self._lead.on_snapshot(self._on_snapshot)

        def unsubscribe() -> None:
            stop_lead()
            for stop in self._watched.values():
                stop()
            self._watched.clear()

        self._unsubscribe = unsubscribe

    def _on_teammate_event(self, event: AgentEvent) -> None:
        if event.type in _APPROVAL_EVENTS:
            self._refresh()

    def _live_teammates(self, snapshot: AgentSnapshot) -> list[Agent]:
        """The teammates alive in this kernel, each watched for approval events."""
        try:
            team = team_of(self._lead)
        except MentraError:
            return []
        agents = [a for a in (team.live_agent(t.name) for t in TeamSnapshot.of(snapshot).teammates) if isinstance(a, Agent)]
        for agent in agents:
            if agent.id not in self._watched:
                self._watched[agent.id] = agent.on_event(self._on_teammate_event, deltas=False)
        return agents

    def _on_snapshot(self, snapshot: AgentSnapshot) -> None:
        key = (snapshot.status, TeamSnapshot.of(snapshot).pending_team_messages, tuple(TeamSnapshot.of(snapshot).teammates))
        if key != self._team_key:
            self._refresh(snapshot)

    def _refresh(self, snapshot: AgentSnapshot | None = None) -> None:
        lead = self._lead
        snapshot = snapshot or lead.snapshot
        self._team_key = (snapshot.status, TeamSnapshot.of(snapshot).pending_team_messages, tuple(TeamSnapshot.of(snapshot).teammates))
        records = {r.id: r for r in lead.runtime.store.list_agents(lead.runtime.runtime_id)}
        try:
            pending = [r for r in teams.team_requests(lead, "pending") if r.recipient == lead.name]
        except MentraError as err:  # no team yet
            log.debug("no team requests for %s: %s", lead.name, err)
            pending = []
        approvals = [{"agent": agent.name, **approval_item(p)}
                     for agent in self._live_teammates(snapshot) for p in agent.snapshot.pending_approvals]
        with self.hold_sync():
            if approvals != self.approvals:
                self.approvals = approvals
            self.lead = {"name": lead.name, "status": str(snapshot.status),
                         "unread": TeamSnapshot.of(snapshot).pending_team_messages}
            self.members = [
                {"name": t.name, "role": t.role, "model": t.model, "status": t.status.name,
                 "error": t.status.error, "alive": t.alive, "unread": t.unread,
                 "last_active": records[t.agent_id].updated_at if t.agent_id in records else None}
                for t in TeamSnapshot.of(snapshot).teammates
            ]
            self.requests = [
                {"id": r.id, "protocol": r.protocol, "sender": r.sender, "content": r.content,
                 "created_at": r.created_at}
                for r in pending
            ]
        for name, pages in set(self._open.values()):
            self._show(name, pages, records, snapshot)
        self._refresh_fallbacks()  # a teammate joined, finished, failed or waits for an answer

    def _show(self, name: str, pages: int, records: dict[str, Any] | None = None,
              snapshot: AgentSnapshot | None = None, *, again: bool = False) -> None:
        """Send `name`'s transcript (its last `pages` pages of messages) to the views,
        unless the one sent last is still current (`again`: send it anyway)."""
        lead = self._lead
        snapshot = snapshot or lead.snapshot
        member = next((t for t in TeamSnapshot.of(snapshot).teammates if t.name == name), None)
        if member is None:
            self.send({"kind": "preview", "name": name, "pages": pages, "items": [], "has_older": False,
                       "count": 0, "error": f"'{name}' is not on {lead.name}'s team"})
            return
        if records is None:
            records = {r.id: r for r in lead.runtime.store.list_agents(lead.runtime.runtime_id)}
        record = records.get(member.agent_id)
        count = record.message_count if record is not None else 0
        if not again and self._sent.get((name, pages)) == count:
            return  # nothing new
        self._sent[(name, pages)] = count
        start = max(0, count - PREVIEW_PAGE * pages)
        messages = lead.runtime.store.load_messages(member.agent_id, start, count)
        self.send({"kind": "preview", "name": name, "count": count, "pages": pages, "has_older": start > 0,
                   "items": [item for i, m in enumerate(messages, start) for item in message_items(m, i)]})

    def _open_preview(self, view: str, name: str | None) -> None:
        """View `view` opens `name`'s transcript (None: one page more of what it has open)."""
        if name is None:
            if view not in self._open:
                return
            name, pages = self._open[view][0], self._open[view][1] + 1
        else:
            pages = 1
        self._open[view] = (name, pages)
        self._show(name, pages, again=True)  # a view that just opened it has nothing yet

    def _close_preview(self, view: str) -> None:
        self._open.pop(view, None)
        still = set(self._open.values())
        self._sent = {key: count for key, count in self._sent.items() if key in still}

    def _answer(self, request_id: str, approve: bool, reason: str | None) -> None:
        try:
            if approve:
                teams.approve_request(self._lead, request_id, reason)
            else:
                teams.reject_request(self._lead, request_id, reason or "rejected")
            self.notice = ""
        except MentraError as err:
            self.notice = str(err)
        self._refresh()

    def _answer_call(self, message: _ApproveCall | _DenyCall) -> None:
        agent = next((a for a in self._live_teammates(self._lead.snapshot) if a.name == message.agent), None)
        try:
            if agent is None:
                raise AgentError(f"teammate '{message.agent}' is not running in this kernel")
            if isinstance(message, _ApproveCall):
                agent.approve(message.call_id, always=message.always)
            else:
                agent.deny(message.call_id, message.reason)
            self.notice = ""
        except MentraError as err:
            self.notice = str(err)
        self._refresh()

    # --- browser side ----------------------------------------------------------

    def _on_open(self, message: _Open) -> None:
        self._host.call_soon(self._open_preview, message.view, message.name)

    def _on_older(self, message: _Older) -> None:
        self._host.call_soon(self._open_preview, message.view, None)

    def _on_close(self, message: _Close) -> None:
        self._host.call_soon(self._close_preview, message.view)

    def _on_call_answer(self, message: _ApproveCall | _DenyCall) -> None:
        self._host.call_soon(self._answer_call, message)

    def _on_approve(self, message: _Approve) -> None:
        self._host.call_soon(self._answer, message.request_id, True, None)

    def _on_reject(self, message: _Reject) -> None:
        self._host.call_soon(self._answer, message.request_id, False, message.reason)

    browser_messages = BrowserMessages({
        _Approve: _on_approve, _Reject: _on_reject, _ApproveCall: _on_call_answer, _DenyCall: _on_call_answer,
        _Open: _on_open, _Older: _on_older, _Close: _on_close,
    })

    # --- static outputs --------------------------------------------------------

    def _ipython_display_(self) -> None:
        """Displayed as its static markdown with the widget below it (mentra_nb/notebook/_widget.py)."""
        self._display_with_fallback(f"TeamView({self._lead.name}) · live view; saved as the markdown above")

    def __repr__(self) -> str:
        return f"TeamView({self._lead.name}, {len(self.members)} teammates, {len(self.requests)} pending requests)"

    def _markdown(self) -> str:
        rows = [f"| {md_cell(m['name'])} | {md_cell(m['role'])} | {md_cell(m['status'])} | {md_cell(m['unread'])} |"
                for m in self.members]
        table = "\n".join(["| teammate | role | status | unread |", "|---|---|---|---|", *rows])
        requests = "\n".join(f"- {md_text(str(r['protocol']))} from {md_text(str(r['sender']))}: "
                             f"{md_cell(r['content'])}" for r in self.requests)
        waiting = "\n".join(f"- *{md_text(str(a['agent']))} waits for approval:* {md_code(str(a['name']))} "
                            f"(`%mentra approve` {md_code(str(a['agent']))} "
                            f"{md_code(str(a['ref']))})" for a in self.approvals)
        return "\n\n".join(
            part for part in (f"**team of {md_text(self._lead.name)}**", table if rows else "", requests, waiting) if part)
