"""What every mentra-nb widget shares: validated browser messages, unsubscribing
on close, custom messages without a parent header, and static `text/plain` +
`text/markdown` outputs for saved notebooks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anywidget
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

if TYPE_CHECKING:
    from mentra_nb.notebook._host import RuntimeHost

__all__ = ["BrowserMessage", "MentraWidget", "browser_messages"]

log = logging.getLogger("mentra_nb.notebook")


class BrowserMessage(BaseModel):
    """A message a widget's front end may send; each kind is a subclass.

    Validators are built on the first message, not when `%load_ext` imports the
    widgets: most sessions never click most buttons."""

    model_config = ConfigDict(defer_build=True)


def browser_messages(union: Any) -> TypeAdapter[Any]:
    """The validator of a widget's browser messages (a discriminated union), built lazily."""
    return TypeAdapter(union, config=ConfigDict(defer_build=True))


class MentraWidget(anywidget.AnyWidget):
    """Subclasses set `_host`, may set `_unsubscribe`, and implement
    `__repr__` (deterministic) and `_markdown()`."""

    _host: RuntimeHost
    _unsubscribe: Callable[[], None] | None = None

    def _accept(self, adapter: TypeAdapter[Any], content: Any) -> Any | None:
        """The browser's message as a model, or None (logged) if it is invalid."""
        try:
            return adapter.validate_python(content)
        except ValidationError as err:
            # A summary, never the message: a browser can send megabytes, and the
            # errors quote the whole input back.
            log.warning("ignored an invalid message from %r: %s", self, _summary(content, err))
            return None

    def send(self, content: Any, buffers: Any = None) -> None:
        """A custom message to the browser, published without a parent header.

        ipykernel gives every comm message the header of a cell as its parent:
        for a message sent from the runtime thread, the cell that started the
        run (or whichever ran last), about 200 of a delta's ~620 bytes. Custom
        messages need none: the front ends route comm messages by `comm_id`
        whatever their parent (JupyterLab's and Notebook 7's KernelConnection),
        and only this widget's own code reads them. (State updates keep theirs:
        headless runners such as nbclient keep a widget's state from the
        updates a running cell caused.) Outside ipykernel (no session to
        publish on, or buffers to send) the message goes the usual way."""
        comm = self.comm
        kernel = getattr(comm, "kernel", None)
        session = getattr(kernel, "session", None)
        topic = getattr(comm, "topic", None)
        if buffers or kernel is None or session is None or not isinstance(topic, bytes):
            super().send(content, buffers)
            return
        session.send(kernel.iopub_socket, "comm_msg",
                     {"data": {"method": "custom", "content": content}, "comm_id": comm.comm_id},
                     parent={}, ident=topic)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._host.call_soon(self._unsubscribe)
            self._unsubscribe = None
        super().close()

    def _markdown(self) -> str:
        """The widget as a saved notebook shows it; widgets override this."""
        return repr(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if data is not None:
            data["text/plain"] = repr(self)
            data["text/markdown"] = self._markdown()
        return bundle


MAX_LOGGED_ERRORS = 3
MAX_LOGGED_CHARS = 200


def _summary(content: Any, err: ValidationError) -> str:
    """A bounded description of an invalid message: its shape and the first few problems."""
    kind = content.get("kind") if isinstance(content, dict) else None
    shape = f"a {type(content).__name__}"
    if isinstance(content, dict):
        shape += f" with keys {sorted(map(str, content))[:10]}"
    if isinstance(kind, str):
        shape += f", kind {kind[:40]!r}"
    problems = "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}"
        for e in err.errors(include_url=False, include_input=False, include_context=False)[:MAX_LOGGED_ERRORS]
    )
    more = err.error_count() - MAX_LOGGED_ERRORS
    text = f"{shape}: {problems}" + (f" (and {more} more)" if more > 0 else "")
    return text if len(text) <= MAX_LOGGED_CHARS * 2 else text[: MAX_LOGGED_CHARS * 2] + "…"
