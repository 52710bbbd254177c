"""`--output MODEL`: the pydantic class a typed turn answers with, found in the kernel."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["OutputModelError", "output_model"]


class OutputModelError(ValueError):
    """`--output` names no pydantic model class of the kernel."""


def output_model(name: str, user_ns: Mapping[str, Any]) -> type[BaseModel]:
    """The class `name` (or `module.Class`) from the kernel's variables, which must
    be a pydantic model class."""
    head, *rest = name.split(".")
    if head not in user_ns:
        classes = [k for k, v in user_ns.items()
                   if isinstance(v, type) and issubclass(v, BaseModel) and not k.startswith("_")]
        close = difflib.get_close_matches(head, classes, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else (
            f" (the pydantic models here: {', '.join(sorted(classes))})" if classes else "")
        raise OutputModelError(
            f"--output {name}: there is no '{head}' in the kernel{hint}; define the model in a cell "
            "first, e.g. class Answer(BaseModel): ...")
    value = user_ns[head]
    for part in rest:
        if not hasattr(value, part):
            raise OutputModelError(f"--output {name}: '{head}' has no attribute '{part}'")
        value = getattr(value, part)
    if not (isinstance(value, type) and issubclass(value, BaseModel)):
        what = (f"the class {value.__name__}" if isinstance(value, type)
                else f"an object of type {type(value).__name__}")
        raise OutputModelError(
            f"--output {name}: '{name}' is {what}, not a pydantic model class; give the name of a "
            "class that subclasses pydantic.BaseModel")
    return value
