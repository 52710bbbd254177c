"""What every mentra-nb widget shares: validated browser messages, unsubscribing
on close, custom messages without a parent header, and static outputs for saved
notebooks.

A view that stays live (a full AgentView, a TeamView, a subagent picker) is
displayed as two outputs: its static markdown, replaced in place when what it
shows changes (`_refresh_fallbacks`), and the widget just below it, whose output
holds an empty `text/markdown` (what markdown readers show of it: nothing) and
one short `text/plain` line for consoles. While the widget is live, its style
sheet hides the output just above it (mentra.css); every reader without the live
widget (a saved notebook reopened, GitHub, nbconvert) reads the markdown
instead, which is plain markdown with no wrapper (so `nbconvert --to markdown`
exports clean markdown), and the page saves the notebook without the widget's
output, so that a reopened notebook shows no "model not found" or "Loading
widget…" (js/saved_state.js, which knows our views by the `_mentra_view` trait).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Union

import anywidget
import traitlets
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mentra_nb.notebook._display import Shown, display, show

if TYPE_CHECKING:
    from mentra_nb.notebook._host import RuntimeHost

__all__ = ["COMM_TOPIC", "MAX_FALLBACKS", "BrowserMessage", "BrowserMessages", "MentraWidget"]

log = logging.getLogger("mentra_nb.notebook")

MAX_FALLBACKS = 20  # places a live view's markdown copy is kept up to date in
# The IOPub topic (the ZeroMQ routing frame before the message) of a widget's comm
# messages. ipykernel's is "comm-" and the comm's 32-character id, the same id the
# message's content carries; nothing reads it (Jupyter servers subscribe to every
# topic and drop the frame before a message reaches a browser, which routes comm
# messages by the content's comm_id), and a live stream sends a few messages a
# second, each ~380 bytes besides its text with this topic, ~410 with ipykernel's
# (tests/benchmarks/bench_wire.py).
COMM_TOPIC = b"comm"


class BrowserMessage(BaseModel):
    """A message a widget's front end may send; each kind is a subclass.

    Validators are built on the first message, not when `%load_ext` imports the
    widgets: most sessions never click most buttons."""

    model_config = ConfigDict(defer_build=True)


class BrowserMessages:
    """A widget's dispatch table: each kind of browser message (a `BrowserMessage`
    subclass with a `kind` literal) and the widget method that handles it. The
    validator is the union of the table's kinds, so a kind the kernel accepts always
    has a handler; js/wire.d.ts is generated from the same models (mentra_nb/notebook/_wire_ts.py)."""

    def __init__(self, handlers: Mapping[type[BrowserMessage], Callable[[Any, Any], object]]) -> None:
        self.handlers = dict(handlers)
        union: Any = Union[tuple(self.handlers)]  # noqa: UP007 (a union built from a tuple at run time)
        # Built on the first message (see BrowserMessage).
        self.adapter: TypeAdapter[Any] = TypeAdapter(Annotated[union, Field(discriminator="kind")],
                                                     config=ConfigDict(defer_build=True))

    @property
    def models(self) -> list[type[BrowserMessage]]:
        return list(self.handlers)


class MentraWidget(anywidget.AnyWidget):
    """Subclasses set `_host`, may set `_unsubscribe`, and implement
    `__repr__` (deterministic) and `_markdown()`."""

    _host: RuntimeHost
    _unsubscribe: Callable[[], None] | None = None
    # The messages this widget's front end may send, and their handlers.
    browser_messages: ClassVar[BrowserMessages]
    # Which of our views this is ("agent", "team", "picker"): how the browser knows
    # our models among a notebook's widgets when it saves the notebook.
    _mentra_view = traitlets.Unicode("").tag(sync=True)
    # No Layout widget: our views style themselves (mentra.css), and ipywidgets'
    # default opens a second comm for one with every view (fifty more comm_opens when
    # a notebook of fifty agents resumes). Front ends read None as "no layout".
    layout = traitlets.Any(None, allow_none=True).tag(sync=True)
    # The output a saved notebook keeps for this view (a full view's markdown copy, an
    # ended turn): the page writes it in when the notebook is saved, where the kernel's
    # display updates no longer reach (outputs loaded by a page reload carry no
    # display id). Set when the copy changes, never per streamed token, and only once
    # a page has spoken to the view (a headless run has none to write it).
    saved_copy = traitlets.Dict().tag(sync=True)
    _page_seen = False
    # The last markdown made and what it was made of (`_markdown_key`): a display
    # asks for it three times (the bundle, the copy above, the refresh after).
    _markdown_memo: tuple[object, str] | None = None

    # anywidget gives each instance its `_esm`, `_css` and id as traits of its own, and
    # traitlets makes a new class for every instance that adds traits, walking every
    # attribute (about a millisecond a view: a tenth of the time `%mentra resume`
    # took to show 50 views). The views of one class add the same traits, so the
    # class made for the first is kept and given to the others.
    _classes_with_traits: ClassVar[dict[tuple[Any, ...], type]] = {}

    def add_traits(self, **traits: Any) -> None:
        key = (type(self), *((name, type(trait), trait.default_value, tuple(sorted(trait.metadata.items())))
                             for name, trait in sorted(traits.items())))
        made = MentraWidget._classes_with_traits.get(key)
        if made is None:
            super().add_traits(**traits)
            MentraWidget._classes_with_traits[key] = type(self)
            return
        # What traitlets' and ipywidgets' add_traits do, with the kept class's traits.
        self.__class__ = made
        for name in traits:
            trait = made.__dict__[name]
            trait.instance_init(self)
            if "sync" in trait.metadata:
                self.keys.append(name)
                self.send_state(name)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Every message of this widget's comm after its opening goes with a short
        # topic (see COMM_TOPIC).
        comm = self.comm
        if comm is not None and isinstance(getattr(comm, "topic", None), bytes):
            comm.topic = COMM_TOPIC
        # The static markdown above each display, with what it shows (the newest places;
        # a dict keeps their order). Displays (shell thread) and refreshes (runtime
        # thread) take the lock.
        self._fallbacks: dict[Shown, str] = {}
        self._fallbacks_lock = threading.Lock()

    def _on_browser_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """A message from the front end (on the kernel's shell thread): validated, then
        handed to its kind's handler; an invalid one is logged and ignored."""
        table = self.browser_messages
        message = self._accept(table.adapter, content)
        if message is not None:
            table.handlers[type(message)](self, message)

    def _accept(self, adapter: TypeAdapter[Any], content: Any) -> Any | None:
        """The browser's message as a model, or None (logged) if it is invalid."""
        if not self._page_seen:
            self._page_seen = True
            self._host.call_soon(self._keep_saved_copy)
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

    def _markdown_key(self) -> object | None:
        """What `_markdown()` is made of, compared by equality, or None when a widget
        does not say (its markdown is made every time); widgets override this."""
        return None

    def _current_markdown(self) -> str:
        """`_markdown()`, made again only when its key changed."""
        key = self._markdown_key()
        memo = self._markdown_memo
        if key is not None and memo is not None and memo[0] == key:
            return memo[1]
        markdown = self._markdown()
        if key is not None:
            self._markdown_memo = (key, markdown)
        return markdown

    def _displayed(self) -> None:
        """The widget is being displayed (runtime thread); widgets that send their
        browser what it needs then (an AgentView's transcript) override this."""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        self._host.call_soon(self._displayed)
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if data is not None:
            data["text/plain"] = repr(self)
            data["text/markdown"] = self._current_markdown()
        return bundle

    # --- a live view's static markdown (for readers without the live widget) -------

    def _display_with_fallback(self, label: str) -> None:
        """Display the widget below its static markdown (see the module's docstring);
        `label`: the widget output's text/plain, which must not go stale."""
        def prepare() -> str:
            # One trip to the runtime's thread per display, and its work done while
            # this thread waits: a busy runtime thread makes every hand-off between
            # threads (each display's flush of stdout) wait for the GIL.
            self._displayed()
            return self._current_markdown()

        markdown = self._host.call(prepare)
        fallback = show(_fallback_bundle(markdown))
        view: Any = anywidget.AnyWidget._repr_mimebundle_(self)  # the widget's view, nothing else
        data = {**(view[0] if isinstance(view, tuple) else view), "text/plain": repr(self),
                "text/markdown": markdown}
        if fallback is not None:  # in a kernel: the markdown is the output above
            with self._fallbacks_lock:
                # The newest places only: a cell run again drops its old output, whose
                # copy would be updated for nothing at every change.
                places = [*self._fallbacks.items()][-(MAX_FALLBACKS - 1):]
                self._fallbacks = {**dict(places), fallback: markdown}
            # A change between reading the markdown and keeping the place reaches it too.
            self._host.call_soon(self._refresh_fallbacks)
            # No second copy of the markdown, and no line in a markdown export.
            data["text/markdown"] = ""
            data["text/plain"] = label
        display(data, raw=True)

    def _widget_bundle(self) -> dict[str, Any]:
        bundle: Any = self._repr_mimebundle_()
        return dict(bundle[0] if isinstance(bundle, tuple) else bundle)

    def _keep_saved_copy(self) -> None:
        """A page spoke to this view: from now on it keeps the saved copy current
        (runtime thread); widgets whose copy is not a fallback override this."""
        self._refresh_fallbacks()

    def _refresh_fallbacks(self) -> None:
        """What the view shows changed: bring each static copy up to date (runtime
        thread; a copy that already shows the markdown is left alone)."""
        with self._fallbacks_lock:
            places = dict(self._fallbacks)
        if not places:
            return
        markdown = self._current_markdown()
        bundle = _fallback_bundle(markdown)
        if self._page_seen:
            self.saved_copy = bundle
        for place, shown in places.items():
            if shown != markdown:
                place.replace(bundle)
        with self._fallbacks_lock:
            for place in places:
                if place in self._fallbacks:
                    self._fallbacks[place] = markdown


def _fallback_bundle(markdown: str) -> dict[str, Any]:
    # No wrapper to mark it: the live widget's style sheet finds it as the output just
    # above the widget, and a markdown export reads as markdown.
    return {"text/plain": markdown, "text/markdown": markdown}


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
