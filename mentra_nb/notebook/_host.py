"""The runtime host: one daemon thread per kernel owns an asyncio loop and the Runtime.

Agents stream on that loop while cells run, block or finish; a cell only
waits when it asks to (`turn.result()`, `--wait`). Widget clicks arrive on
the kernel's shell thread and are handed to this loop; nothing here ever
blocks the shell thread for longer than a store call.

Public (`mentra_nb.notebook.RuntimeHost`): any Python UI that shows widgets
without IPython's magics (marimo, a Voila or Solara app, a script serving
ipywidgets) drives its runtime on a host and shows an agent with
`AgentView(agent, host)`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["RuntimeHost"]

T = TypeVar("T")


class RuntimeHost:
    """An event loop on a daemon thread, with thread-safe ways in. Agents live on
    it, so they stream while the UI's own thread runs code or waits, and a view's
    clicks reach them. In marimo:

        host = RuntimeHost()
        rt = host.call(lambda: Runtime(store=SqliteStore("app.sqlite"), runtime_id="app"))
        writer = host.call(lambda: rt.spawn("writer", "anthropic:claude-sonnet-4-5"))
        mo.ui.anywidget(AgentView(writer, host))   # in Jupyter: display(AgentView(writer, host))
        host.submit(writer.send("Hello"))          # streams into the view; a Future of the reply
    """

    def __init__(self, name: str = "mentra-runtime") -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(ready.set)
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, name=name, daemon=True)
        self.thread.start()
        ready.wait()

    @property
    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self.thread.ident

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop; returns at once with a future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, fn: Callable[[], T], timeout: float | None = 60.0) -> T:
        """Run `fn` on the loop thread and wait for its result (for quick, sync work)."""
        if self.in_loop_thread:
            return fn()

        async def invoke() -> T:
            return fn()

        return self.submit(invoke()).result(timeout)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` on the loop thread, without waiting."""
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 10.0) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()
