"""The progress of a batch job in a cell's output: counts, a bar, rows per minute,
tokens and cost, the time left, and the failed rows with their errors.

It is plain markdown (no widget), replaced in place from the runtime's thread
about twice a second while the job runs and once when it stops, so a saved
notebook, nbconvert and nbval read exactly what the cell last showed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mentra_nb import pricing
from mentra_nb.notebook._display import Shown, display, show

if TYPE_CHECKING:
    from mentra_nb.notebook._host import RuntimeHost
    from mentra_nb.runtime import BatchJob
    from mentra_nb.runtime.batch import JobProgress

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


def progress_markdown(job: BatchJob, progress: JobProgress | None = None) -> str:
    """The view's text (deterministic for a stopped job)."""
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
        failed = [r for r in job.rows() if r.state == "failed"]
        lines += ["", "Failed rows (`%mentra resume AGENT` then `%mentra show AGENT` opens one's "
                  "transcript; `job.retry_failed()` runs them again):"]
        for r in failed[:_MAX_FAILURES]:
            error = (r.value.error or "").splitlines()[0][:200] if r.value.error else ""
            lines.append(f"- row {r.value.index} (`{r.value.agent_name}`): {error}")
        if len(failed) > _MAX_FAILURES:
            lines.append(f"- … and {len(failed) - _MAX_FAILURES} more (`job.results()`)")
    return "\n".join(lines)


class BatchView:
    """One job's progress in the output of the cell that showed it."""

    def __init__(self, job: BatchJob, host: RuntimeHost) -> None:
        self.job = job
        self._host = host
        self._shown: Shown | None = None
        self._last = ""

    def __repr__(self) -> str:
        return f"<BatchView of job {self.job.name!r}>"

    def _bundle(self) -> dict[str, Any]:
        text = self._host.call(lambda: progress_markdown(self.job)) if not self._host.in_loop_thread \
            else progress_markdown(self.job)
        return {"text/plain": text, "text/markdown": text}

    def show(self) -> None:
        bundle = self._bundle()
        self._last = bundle["text/markdown"]
        self._shown = show(bundle)
        if self._shown is None:
            return
        self._host.call_soon(self._tick)
        self.job.on_stop(lambda _job: self._refresh())

    def _tick(self) -> None:
        self._refresh()
        if self.job.state == "running":
            self._host.loop.call_later(_REFRESH_S, self._tick)

    def _refresh(self) -> None:
        text = progress_markdown(self.job)
        if text != self._last and self._shown is not None:
            self._last = text
            self._shown.replace({"text/plain": text, "text/markdown": text})

    def _ipython_display_(self) -> None:
        display(self._bundle(), raw=True)
