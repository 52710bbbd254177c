"""Modules imported on first attribute access, for entry points that must stay cheap
(`%load_ext mentra_nb` registers the magics; the runtime loads on the first command).

This is the recipe from the `importlib` documentation (`importlib.util.LazyLoader`):
the module object exists at once and its code runs when an attribute is first read.
Callers import the same module under `if TYPE_CHECKING:` so type checkers see it whole.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_import"]


def lazy_import(name: str) -> ModuleType:
    """`name`, already imported or to be imported when an attribute is first read."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
