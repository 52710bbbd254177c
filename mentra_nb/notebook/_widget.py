"""What every mentra-nb widget shares: validated browser messages, unsubscribing
on close, and static `text/plain` + `text/markdown` outputs for saved notebooks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anywidget
from pydantic import TypeAdapter, ValidationError

if TYPE_CHECKING:
    from mentra_nb.notebook.host import RuntimeHost

__all__ = ["MentraWidget"]

log = logging.getLogger("mentra_nb.notebook")


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
            log.warning("ignored an invalid message from %r: %s", self, err.errors(include_url=False))
            return None

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
