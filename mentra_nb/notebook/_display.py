"""IPython's `display`, behind one annotated door (IPython ships it untyped)."""

from __future__ import annotations

from IPython.display import display as _ipython_display

__all__ = ["display"]


def display(value: object) -> None:
    """Show `value` in the cell's output, as IPython's `display` does."""
    _ipython_display(value)  # type: ignore[no-untyped-call]
