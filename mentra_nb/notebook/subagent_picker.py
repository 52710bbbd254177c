"""`SubagentPickerView`: a root agent's subagents as a badge, a list and a preview.

The badge (count and tone) and the list follow every change of the tree as it
is committed; a click on a child opens a read-only preview of its transcript,
one turn at a time, with "load older" prepending the turn before. Previews
read the store, so they work while the root is running. A child's tool call
that waits for the user shows on its row ("waiting for approval: TOOL") and
gets Approve / Always allow / Deny, as a teammate's does in the TeamView.
A saved notebook keeps the list as static markdown above the widget, brought
up to date as the tree changes (see mentra_nb/notebook/_widget.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Annotated, Any, Literal

import traitlets
from pydantic import Field

from mentra_nb.errors import AgentError, MentraError
from mentra_nb.notebook._assets import static_file
from mentra_nb.notebook._markdown_html import render_markdown
from mentra_nb.notebook._rendering import md_cell, md_code, md_text, message_items
from mentra_nb.notebook._widget import BrowserMessage, BrowserMessages, MentraWidget
from mentra_nb.notebook.agent_view import approval_item
from mentra_nb.runtime import Agent, subagents
from mentra_nb.runtime.subagents import (
    PickerRemoved,
    PickerUpdated,
    SubagentEvent,
    SubagentNotice,
)

if TYPE_CHECKING:
    from mentra_nb.notebook._host import RuntimeHost
    from mentra_nb.runtime.subagents import PreviewPage

__all__ = ["SubagentPickerView"]

log = logging.getLogger("mentra_nb.notebook")

_PATH = Field(pattern=r"^/root(/[a-z0-9_]{1,64})+$", max_length=4096)


class _Open(BrowserMessage):
    kind: Literal["open"]
    path: Annotated[str, _PATH]


class _Older(BrowserMessage):
    kind: Literal["older"]


class _Close(BrowserMessage):
    kind: Literal["close"]


class _Interrupt(BrowserMessage):
    kind: Literal["interrupt"]
    path: Annotated[str, _PATH]


class _ApproveCall(BrowserMessage):
    kind: Literal["approve_call"]
    path: Annotated[str, _PATH]
    call_id: str = Field(min_length=1, max_length=200)
    always: bool = False


class _DenyCall(BrowserMessage):
    kind: Literal["deny_call"]
    path: Annotated[str, _PATH]
    call_id: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=2_000)


LIVE_INTERVAL = 0.25  # seconds between reads of the open child's streaming text
LIVE_PREVIEW_CHARS = 4_000


class SubagentPickerView(MentraWidget):
    """A root agent's subagents: a count badge, a row per child with status and model, its
    transcript on a click, Interrupt, and Approve / Deny for a child's waiting call
    (`%mentra subagents NAME`).
    """

    _esm = static_file("subagent_picker.js")
    _css = static_file("mentra.css")

    _mentra_view = traitlets.Unicode("picker").tag(sync=True)
    root_name = traitlets.Unicode("").tag(sync=True)
    badge = traitlets.Dict().tag(sync=True)  # {count, text, tone}
    options: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)  # [{label, status, model, path, agent_id}]
    preview = traitlets.Dict().tag(sync=True)  # {path, status, model, items, has_older, ...}
    approvals: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)  # children's calls waiting for the user
    notice = traitlets.Unicode("").tag(sync=True)
    # The open child's reply as it streams (its last LIVE_PREVIEW_CHARS), "" when it is
    # not streaming: a running subagent's preview shows more than its committed turns.
    preview_live = traitlets.Unicode("").tag(sync=True)

    def __init__(self, root: Agent, host: RuntimeHost) -> None:
        super().__init__()
        self._root = root
        self._host = host
        self._older: str | None = None  # cursor of the turn before the oldest one shown
        self._live_timer: asyncio.TimerHandle | None = None
        self.on_msg(self._on_browser_message)
        host.call(self._attach)

    def _attach(self) -> None:
        self.root_name = self._root.name
        self._unsubscribe = subagents.watch_subagents(self._root, self._on_tree_event)

    # --- runtime side ----------------------------------------------------------

    def _on_tree_event(self, event: SubagentEvent) -> None:
        if isinstance(event, PickerUpdated):
            with self.hold_sync():
                self.badge = {"count": event.picker.count, "text": event.picker.text,
                              "tone": event.picker.tone}
                self.options = [o.model_dump() for o in event.picker.options]
                self._refresh_approvals()
                open_path = self.preview.get("path")
                # Follow the open child's latest turn, unless the reader went back in time.
                if open_path and not self.preview.get("loaded_older"):
                    self._show(open_path)
        elif isinstance(event, PickerRemoved):
            with self.hold_sync():
                self.badge = {}
                self.options = []
                self.preview = {}
                self.approvals = []
        elif isinstance(event, SubagentNotice):
            self.notice = event.text
            return
        self._refresh_fallbacks()  # a child started, finished, failed or waits for approval

    def _show(self, path: str, *, older: bool = False) -> None:
        try:
            page = subagents.preview(self._root, path, before=self._older if older else None)
        except MentraError as err:
            self.notice = str(err)
            return
        items = self.preview.get("items", []) if older else []
        self.preview = self._page(page, prepend_to=items, loaded_older=older)
        self._older = page.older
        self._follow_live()

    def _follow_live(self) -> None:
        """Read the open child's streaming text now and again every LIVE_INTERVAL
        while it runs (a trait of its own: the preview's items are not resent)."""
        if self._live_timer is not None:
            self._live_timer.cancel()
            self._live_timer = None
        path = self.preview.get("path")
        child = subagents.subagent(self._root, path) if path else None
        text = child.snapshot.current_text[-LIVE_PREVIEW_CHARS:] if child is not None else ""
        if text != self.preview_live:
            self.preview_live = text
        if child is not None and child.is_running and self.comm is not None:
            self._live_timer = asyncio.get_running_loop().call_later(LIVE_INTERVAL, self._follow_live)

    @staticmethod
    def _page(page: PreviewPage, *, prepend_to: list[dict[str, Any]], loaded_older: bool) -> dict[str, Any]:
        items = [item for i, m in enumerate(page.messages) for item in message_items(m, i)]
        if page.interrupted is not None:  # its stopped turn was rolled back: say what it was
            end = len(page.messages)
            if page.rolled_back is not None:
                items += message_items(page.rolled_back, end)
            items.append({"index": end, "role": "user", "kind": "notice",
                          "html": render_markdown(f"*{md_text(page.interrupted)}*")})
        return {
            "path": page.path, "status": page.status, "model": page.model,
            "items": [*items, *prepend_to], "has_older": page.has_older,
            "truncated": page.truncated, "error": page.error, "loaded_older": loaded_older,
        }

    def _close_preview(self) -> None:
        self.preview = {}
        self._follow_live()  # stops following: no child is open

    def _refresh_approvals(self) -> None:
        # The tree records which children wait (each change commits and lands here);
        # the calls themselves are read from the live children.
        approvals = [{"path": path, **approval_item(call)}
                     for path, call in subagents.pending_approvals(self._root)]
        if approvals != self.approvals:
            self.approvals = approvals

    def _answer_call(self, message: _ApproveCall | _DenyCall) -> None:
        try:
            if isinstance(message, _ApproveCall):
                subagents.approve_call(self._root, message.path, message.call_id, always=message.always)
            else:
                subagents.deny_call(self._root, message.path, message.call_id, message.reason)
            self.notice = ""
        except (AgentError, MentraError) as err:  # answered twice, or the run ended meanwhile
            self.notice = str(err)
        self._refresh_approvals()
        self._refresh_fallbacks()

    def _interrupt(self, path: str) -> None:
        try:
            previous = subagents.interrupt_subagent(self._root, path)
            self.notice = f"interrupted {path} (was {previous})"
        except MentraError as err:
            self.notice = str(err)

    # --- browser side ----------------------------------------------------------

    def _on_open(self, message: _Open) -> None:
        self._host.call_soon(self._show, message.path)

    def _on_older(self, _message: _Older) -> None:
        if self.preview.get("path") and self._older is not None:
            self._host.call_soon(lambda: self._show(self.preview["path"], older=True))

    def _on_close(self, _message: _Close) -> None:
        self._host.call_soon(self._close_preview)

    def _on_interrupt(self, message: _Interrupt) -> None:
        self._host.call_soon(self._interrupt, message.path)

    def _on_call_answer(self, message: _ApproveCall | _DenyCall) -> None:
        self._host.call_soon(self._answer_call, message)

    browser_messages = BrowserMessages({
        _Open: _on_open, _Older: _on_older, _Close: _on_close, _Interrupt: _on_interrupt,
        _ApproveCall: _on_call_answer, _DenyCall: _on_call_answer,
    })

    # --- static outputs --------------------------------------------------------

    def _ipython_display_(self) -> None:
        """Displayed as its static markdown with the widget below it (mentra_nb/notebook/_widget.py)."""
        self._display_with_fallback(f"SubagentPickerView({self._root.name}) · live view; "
                                    "saved as the markdown above")

    def __repr__(self) -> str:
        return f"SubagentPickerView({self._root.name}, {len(self.options)} subagents)"

    def _markdown(self) -> str:
        rows = [f"| {md_code(str(o['path']), in_table=True)} | {md_cell(_status_label(o))} | "
                f"{md_code(str(o['model']), in_table=True)} |"
                for o in self.options]
        table = "\n".join(["| subagent | status | model |", "|---|---|---|", *rows]) if rows else ""
        waiting = "\n".join(f"- *{md_text(str(a['path']))} waits for approval:* {md_code(str(a['name']))} "
                            f"(`subagents.approve_call(root, {a['path']!r}, {a['ref']!r})`)"
                            for a in self.approvals)
        return "\n\n".join(part for part in (
            f"**{md_text(self._root.name)}** · {len(self.options)} subagents", table, waiting) if part)


def _status_label(option: dict[str, Any]) -> str:
    waiting = option.get("waiting_for_approval") or []
    return f"waiting for approval: {', '.join(waiting)}" if waiting else str(option["status"])
