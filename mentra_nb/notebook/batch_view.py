"""`BatchView`: the progress of a batch job in a cell's output — done / running /
failed / waiting counts, a bar, rows per minute, tokens and cost, the time left,
and the failed rows with their errors; a click on a failed row opens its fork's
transcript. Read from the store about twice a second while the job runs and once
when it stops. A saved notebook keeps `progress_markdown` (see _widget.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal

import traitlets
from pydantic import Field

from mentra_nb import pricing
from mentra_nb.notebook._assets import static_file
from mentra_nb.notebook._markdown_html import render_markdown
from mentra_nb.notebook._rendering import md_text, message_items
from mentra_nb.notebook._widget import BrowserMessage, BrowserMessages, MentraWidget

if TYPE_CHECKING:
    from mentra_nb.notebook._host import RuntimeHost
    from mentra_nb.runtime import BatchJob
    from mentra_nb.runtime.batch import JobProgress, RowState
    from mentra_nb.store.records import Record

__all__ = ["BatchView", "progress_markdown"]

_REFRESH_S = 0.5
_BAR = 24  # characters
_MAX_FAILURES = 10  # listed; the rest are counted


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def progress_markdown(job: BatchJob, progress: JobProgress | None = None,
                      failed: list[Record[RowState]] | None = None) -> str:
    """The view's text (deterministic for a stopped job); `failed`: the first failed rows,
    if already read with `progress`."""
    p = progress or job.progress()
    filled = round(_BAR * p.finished / p.total) if p.total else _BAR
    lines = [
        f"**Batch job `{p.name}`** of `{job.spec.agent_name}`: {p.state}",
        "",
        f"`{'█' * filled}{'░' * (_BAR - filled)}` {p.done} done · {p.running} running · "
        f"{p.failed} failed · {p.waiting} waiting"
        + (f" · {p.cancelled} cancelled" if p.cancelled else "") + f" · of {p.total}",
        "",
        f"{p.input_tokens + p.output_tokens:,} tokens · {pricing.format_cost(p.cost_usd)}"
        + (f" · {p.rows_per_minute:,.0f} rows/min" if p.state == "running" and p.rows_per_minute else "")
        + (f" · about {_duration(p.eta_s)} left" if p.eta_s is not None else "")
        + (f" · slowed {p.throttled} times by the provider's rate limit" if p.throttled else ""),
    ]
    if p.note:
        lines += ["", p.note]
    if p.failed:
        shown = failed if failed is not None else job.failed_rows(_MAX_FAILURES)
        lines += ["", "Failed rows (`%mentra resume AGENT` then `%mentra show AGENT` opens one's "
                  "transcript; `job.retry_failed()` runs them again):"]
        for r in shown:
            error = (r.value.error or "").splitlines()[0][:200] if r.value.error else ""
            lines.append(f"- row {r.value.index} (`{r.value.agent_name}`): {error}")
        if p.failed > len(shown):
            lines.append(f"- … and {p.failed - len(shown)} more (`job.results()`)")
    return "\n".join(lines)


class _OpenRow(BrowserMessage):
    kind: Literal["open_row"]
    index: int = Field(ge=0)


class _CloseRow(BrowserMessage):
    kind: Literal["close_row"]


class BatchView(MentraWidget):
    """One job's progress, live: counts, a bar, throughput, cost, time left, and the
    failed rows; a click on one shows its fork's transcript (read from the store,
    its lease left alone). Saved as `progress_markdown` above the widget."""

    _esm = static_file("batch_view.js")
    _css = static_file("mentra.css")

    _mentra_view = traitlets.Unicode("batch").tag(sync=True)
    job_name = traitlets.Unicode("").tag(sync=True)
    progress = traitlets.Dict().tag(sync=True)
    failures: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    row = traitlets.Dict().tag(sync=True)  # the opened row: {index, agent, items} ({} when none)
    notice = traitlets.Unicode("").tag(sync=True)

    def __init__(self, job: BatchJob, host: RuntimeHost) -> None:
        super().__init__()
        self.job = job
        self._host = host
        self._timer: asyncio.TimerHandle | None = None
        self._reading: set[asyncio.Task[None]] = set()
        self.on_msg(self._on_browser_message)
        host.call(self._attach)

    def __repr__(self) -> str:
        return f"BatchView({self.job.name}, {self.progress.get('state', '')})"

    def _attach(self) -> None:
        self.job_name = self.job.name
        self.job.on_stop(lambda _job: self._update(tick=False))
        self._tick()

    # --- runtime side ----------------------------------------------------------------

    def _tick(self) -> None:
        self._timer = None
        self._update()

    def _update(self, tick: bool = True) -> None:
        """Show where the job stands; with `tick`, look again in a moment while it runs.
        A network store is read off the loop (`read_progress`): a view refreshing twice a
        second must not stall every agent's stream for its round trips."""
        if not self.job.reads_off_loop:
            p = self.job.progress()
            self._show(p, self.job.failed_rows(_MAX_FAILURES) if p.failed else [], tick)
            return
        task = asyncio.get_running_loop().create_task(self._update_off_loop(tick))
        self._reading.add(task)
        task.add_done_callback(self._reading.discard)

    async def _update_off_loop(self, tick: bool) -> None:
        p, failed = await self.job.read_progress(_MAX_FAILURES)
        self._show(p, failed, tick)

    def _show(self, p: JobProgress, failed: list[Record[RowState]], tick: bool) -> None:
        if tick and self.job.state == "running":
            self._timer = asyncio.get_running_loop().call_later(_REFRESH_S, self._tick)
        progress = {"state": p.state, "agent": self.job.spec.agent_name, "total": p.total, "done": p.done,
                    "running": p.running, "failed": p.failed, "waiting": p.waiting,
                    "cancelled": p.cancelled, "tokens": p.input_tokens + p.output_tokens,
                    "cost": pricing.format_cost(p.cost_usd),
                    "rows_per_minute": round(p.rows_per_minute) if p.state == "running" else 0,
                    "eta": _duration(p.eta_s) if p.eta_s is not None else "", "note": p.note,
                    "throttled": p.throttled}
        failures = [{"index": r.value.index, "agent": r.value.agent_name, "error": r.value.error or ""}
                    for r in failed]
        with self.hold_sync():
            if progress != self.progress:
                self.progress = progress
            if failures != self.failures:
                self.failures = failures
        self._markdown_text = progress_markdown(self.job, p, failed)
        self._refresh_fallbacks()

    def _open_row(self, index: int) -> None:
        row = next((r for r in self.job.rows() if r.value.index == index), None)
        if row is None:
            self.notice = f"job {self.job.name} has no row {index}"
            return
        store = self.job.source.services.store
        record = next((a for a in self.job.source.runtime.list_persisted_agents()
                       if a.name == row.value.agent_name and a.forked_from == self.job.spec.agent_id), None)
        persisted = store.load_agent(record.id) if record is not None else None
        if persisted is None:
            self.notice = f"row {index} has no transcript (it has not run yet)"
            return
        first = self.job.spec.fork_index  # the row's own messages, after the agent's history
        items = [item for i, m in enumerate(persisted.transcript[first:], start=first)
                 for item in message_items(m, i)]
        end = max(first, len(persisted.transcript))
        if persisted.resumable_turn is not None:  # a failed run was rolled back: show what it was
            items += message_items(persisted.resumable_turn, end)
        if row.value.error:
            items.append({"index": end, "role": "user", "kind": "notice",
                          "html": render_markdown(f"*failed: {md_text(row.value.error)}*")})
        self.notice = ""
        self.row = {"index": index, "agent": row.value.agent_name, "items": items}

    # --- browser side ----------------------------------------------------------------

    def _on_open_row(self, message: _OpenRow) -> None:
        self._host.call_soon(self._open_row, message.index)

    def _on_close_row(self, _message: _CloseRow) -> None:
        self._host.call_soon(lambda: setattr(self, "row", {}))

    browser_messages = BrowserMessages({_OpenRow: _on_open_row, _CloseRow: _on_close_row})

    # --- static outputs ----------------------------------------------------------------

    _markdown_text = ""

    def _markdown(self) -> str:
        return self._markdown_text or progress_markdown(self.job)

    def _ipython_display_(self) -> None:
        """Displayed as its static markdown with the widget below it (mentra_nb/notebook/_widget.py)."""
        self._display_with_fallback(f"BatchView({self.job.name}) · live view; saved as the markdown above")
