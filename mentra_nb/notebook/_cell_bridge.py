"""The notebook bridge: how an agent's cell tools reach the notebook's real cells.

One `CellBridge` widget per kernel, never displayed: JupyterLab 4 and Notebook 7
create its model in the page as soon as the kernel opens its comm, and its front
end (js/cell_bridge.js) reaches the notebook through the widget manager's
document context, the route our views already use to save the notebook's
metadata (js/saved_state.js). Through it the page reads the live cells (unsaved
edits included), inserts, edits and deletes them in the notebook's shared model,
and runs a cell as Shift-Enter does: an execute request on the notebook's own
kernel connection, whose In [n] and outputs go into the cell.

Why this and not a JupyterLab extension of our own: it needs no second package,
no build against one JupyterLab version and no page reload after install; it
works wherever the widget manager has the document (JupyterLab 4, Notebook 7).
Where it has none (VS Code, Colab, a static page) the page says so, and where no
page answers at all (nbconvert, papermill, a kernel driven by jupyter_client,
a plain IPython shell) nothing says hello: in both cases `unavailable()` is not
None and the cell tools are not offered.

Requests go to the page that spoke last (a notebook open in two tabs acts once)
and are answered over the same comm. An answer is a comm message, which the
kernel reads when no cell holds it (or while a cell waits for a turn: such a
cell handles comm messages, notebook/_waiting.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import threading
from typing import Any, Literal

import anywidget
from pydantic import BaseModel, ConfigDict, ValidationError

from mentra_nb.notebook._assets import static_file
from mentra_nb.notebook._waiting import cell_is_waiting, pump_comms_until
from mentra_nb.runtime.cell_tools import (
    CellKind,
    CellMark,
    CellRun,
    NotebookCell,
    WorkspaceUnavailable,
)

__all__ = ["ANSWER_SECONDS", "NO_FRONT_END", "CellBridge"]

log = logging.getLogger("mentra_nb.notebook")

# How long a request waits for the page (a read, an insert, an edit): the page
# answers in milliseconds, unless a running cell holds the kernel's messages.
ANSWER_SECONDS = 30.0
RUN_SECONDS = 3_600.0
NO_FRONT_END = ("no notebook front end has answered: cells can be edited from JupyterLab 4 or "
                "Notebook 7, not from nbconvert, papermill, VS Code or a plain kernel client")


class _Hello(BaseModel):
    model_config = ConfigDict(extra="ignore")

    kind: Literal["hello"]
    page: str
    available: bool
    reason: str = ""


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    kind: Literal["reply"]
    id: int
    ok: bool
    error: str = ""
    result: Any = None


class CellBridge(anywidget.AnyWidget):
    """The kernel's end of the bridge; also the `NotebookWorkspace` the cell tools use."""

    _esm = static_file("cell_bridge.js")

    def __init__(self) -> None:
        super().__init__()
        self._page: str | None = None  # the page that answers
        self._reason = NO_FRONT_END
        self._heard = concurrent.futures.Future[bool]()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._waiting: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self.on_msg(self._on_page_message)

    def __repr__(self) -> str:
        return f"CellBridge({'connected' if self._page else 'no page'})"

    # --- what the page says --------------------------------------------------------

    def _on_page_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        kind = content.get("kind") if isinstance(content, dict) else None
        try:
            if kind == "hello":
                hello = _Hello.model_validate(content)
                self._page = hello.page if hello.available else None
                self._reason = hello.reason or NO_FRONT_END
                if not self._heard.done():
                    self._heard.set_result(hello.available)
            elif kind == "reply":
                self._settle(_Reply.model_validate(content))
        except ValidationError as err:
            log.warning("ignored an invalid message from the notebook bridge: %s", err.error_count())

    def _settle(self, reply: _Reply) -> None:
        with self._lock:
            entry = self._waiting.pop(reply.id, None)
        if entry is None:
            return  # answered too late: its request already gave up
        loop, future = entry

        def settle() -> None:
            if future.done():
                return
            if reply.ok:
                future.set_result(reply.result)
            else:
                future.set_exception(WorkspaceUnavailable(reply.error or "the page could not do it"))

        loop.call_soon_threadsafe(settle)

    def wait_for_page(self, timeout: float) -> bool:
        """Whether a page can edit cells, waiting up to `timeout` seconds for the first
        word from one (a cell that just created the bridge; its comm messages are
        read meanwhile). Later calls answer at once."""
        if not self._heard.done() and not _in_a_kernel():
            self._heard.set_result(False)  # a plain IPython shell: no page can answer
        if not self._heard.done():
            try:
                pump_comms_until(self._heard, timeout)
            except concurrent.futures.TimeoutError:
                self._heard.set_result(False)  # no page: asking again would wait again
        return self._page is not None

    # --- NotebookWorkspace ---------------------------------------------------------

    def unavailable(self) -> str | None:
        return None if self._page is not None else self._reason

    def run_blocked(self) -> str | None:
        if cell_is_waiting():
            return ("run_cell cannot run a cell now: a cell of the notebook is waiting for this turn to "
                    "end (--wait, turn.result()), and the kernel runs cells one at a time, so the run "
                    "would start only after the turn. Finish the turn without running cells, and say "
                    "which cell to run; or the user can run it, or not make the cell wait")
        return None

    async def _request(self, op: str, within: float = ANSWER_SECONDS, **args: Any) -> Any:
        page = self._page
        if page is None:
            raise WorkspaceUnavailable(self._reason)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            request_id = next(self._ids)
            self._waiting[request_id] = (loop, future)
        try:
            self.send({"kind": "request", "id": request_id, "page": page, "op": op, "args": args})
            return await asyncio.wait_for(future, within)
        except TimeoutError:
            raise WorkspaceUnavailable(
                f"the notebook page did not answer within {within:g} s: a cell that is still running "
                "holds the kernel's messages until it ends, or the page was closed; try again once the "
                "notebook is idle") from None
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)

    async def cells(self) -> list[NotebookCell]:
        raw = await self._request("read")
        return [NotebookCell.model_validate(cell) for cell in raw]

    async def insert(self, after: str | None, source: str, kind: CellKind, mark: CellMark) -> NotebookCell:
        raw = await self._request("insert", after=after, source=source, kind=kind, mark=mark.model_dump())
        return NotebookCell.model_validate(raw)

    async def replace_source(self, cell_id: str, source: str, mark: CellMark) -> NotebookCell:
        raw = await self._request("edit", cell=cell_id, source=source, mark=mark.model_dump())
        return NotebookCell.model_validate(raw)

    async def delete(self, cell_id: str) -> NotebookCell:
        return NotebookCell.model_validate(await self._request("delete", cell=cell_id))

    async def run(self, cell_id: str, mark: CellMark) -> CellRun:
        raw = await self._request("run", RUN_SECONDS, cell=cell_id, mark=mark.model_dump())
        return CellRun.model_validate(raw)


def _in_a_kernel() -> bool:
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None
