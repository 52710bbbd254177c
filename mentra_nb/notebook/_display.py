"""IPython's `display`, behind one annotated door (IPython ships it untyped), and
displays that can be replaced later from the runtime's thread.

Replacing an output from another thread needs care about whose output it is:
JupyterLab routes an `update_display_data` to the cell whose request is its
parent, and nbclient (nbconvert, papermill) reads only messages whose parent
is the cell running now. An update is therefore sent with the parent of the
cell that showed the output and, when another cell runs by then, once more
with that cell's parent: each front end acts on the one it can route.
"""

from __future__ import annotations

import uuid
from typing import Any

from IPython.display import display as _ipython_display

__all__ = ["Shown", "display", "show"]


def display(value: object, *, raw: bool = False) -> None:
    """Show `value` in the cell's output, as IPython's `display` does (`raw`: `value`
    is a mime bundle, shown as it is)."""
    _ipython_display(value, raw=raw)  # type: ignore[no-untyped-call]


class Shown:
    """An output that `show` made, which `replace` can change in place later."""

    def __init__(self, display_id: str, parent: dict[str, Any]) -> None:
        self.display_id = display_id
        self.parent = parent

    def replace(self, bundle: dict[str, Any]) -> bool:
        """Replace the output with the mime `bundle`; False when this kernel
        cannot route the update (no kernel, or an ipykernel without per-thread
        parents), so the caller keeps the live output."""
        publisher, kernel = _publisher()
        set_parent = getattr(publisher, "set_thread_parent", None)
        reset_parent = getattr(publisher, "reset_thread_parent", None)
        if publisher is None or set_parent is None or reset_parent is None:
            return False
        parents = [self.parent]
        current = kernel.get_parent() if kernel is not None and hasattr(kernel, "get_parent") else None
        current_header = (current or {}).get("header", {})
        if current_header.get("msg_id") not in (None, self.parent.get("msg_id")):
            parents.append(current_header)
        for parent in parents:
            token = set_parent(parent)
            try:
                publisher.publish(data=bundle, metadata={}, transient={"display_id": self.display_id},
                                  update=True)
            finally:
                reset_parent(token)
        return True


def show(bundle: dict[str, Any]) -> Shown | None:
    """Display the mime `bundle` so that it can be replaced later; None outside a kernel."""
    publisher, _kernel = _publisher()
    display_id = uuid.uuid4().hex
    _ipython_display(bundle, raw=True, display_id=display_id)  # type: ignore[no-untyped-call]
    if publisher is None:
        return None
    return Shown(display_id, dict(publisher.parent_header))


def _publisher() -> tuple[Any, Any]:
    """The kernel's display publisher and the kernel (None, None outside one)."""
    from IPython import get_ipython

    shell = get_ipython()
    publisher = getattr(shell, "display_pub", None)
    if publisher is None or not hasattr(publisher, "parent_header"):
        return None, None
    return publisher, getattr(shell, "kernel", None)
