"""Fields extensions add to the core's models: `ExtensionFields`, and who declared which.

`AgentConfig` and `AgentSnapshot` keep extension fields flat beside their own
(`AgentConfig(reviewer="ann")`, `snapshot.reviews`), so user code reads as
if they were built in. The core validates them with the model that declared
them (`RuntimeExtension.config` / `.snapshot`, registered with
`register_extension`) and never names one. This module imports no other part
of the runtime, so the core models can use it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Self, cast

from pydantic import BaseModel, ConfigDict

__all__ = [
    "ExtensionFields",
    "config_fields",
    "declare_config_fields",
    "declare_snapshot_fields",
    "forget_fields",
    "snapshot_defaults",
]

class ExtensionFields(BaseModel):
    """Fields an extension adds to `AgentConfig` or `AgentSnapshot`, declared as a
    pydantic model (`RuntimeExtension.config` / `.snapshot`). They sit flat on the
    core model (`config.reviewer`); `Fields.of(model)` reads them typed:

        class ReviewConfig(ExtensionFields):
            reviewer: str | None = None

        ReviewConfig.of(agent.config).reviewer
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    @classmethod
    def of(cls, model: BaseModel) -> Self:
        """This extension's fields of `model` (a config or snapshot), typed; defaults
        for any it does not carry."""
        extra = model.model_extra or {}
        # model_construct: the values were validated when the model was built.
        fields = cls.model_construct(**{name: extra[name] for name in cls.model_fields if name in extra})
        return cast(Self, fields)



_CONFIG_FIELDS: dict[str, type[ExtensionFields]] = {}  # field name -> the model declaring it
_SNAPSHOT_DEFAULTS: dict[str, Any] = {}


def declare_config_fields(model: type[ExtensionFields]) -> None:
    _CONFIG_FIELDS.update(dict.fromkeys(model.model_fields, model))


def declare_snapshot_fields(model: type[ExtensionFields]) -> None:
    defaults = model.model_construct()
    _SNAPSHOT_DEFAULTS.update({name: getattr(defaults, name) for name in model.model_fields})


def forget_fields(model: type[ExtensionFields]) -> None:
    """Undo `declare_config_fields` / `declare_snapshot_fields` of `model`."""
    for name in model.model_fields:
        if _CONFIG_FIELDS.get(name) is model:
            del _CONFIG_FIELDS[name]
        _SNAPSHOT_DEFAULTS.pop(name, None)


def config_fields() -> Mapping[str, type[ExtensionFields]]:
    """Each config field an extension declared, with the model declaring it."""
    return _CONFIG_FIELDS


def snapshot_defaults() -> dict[str, Any]:
    """Every extension snapshot field with its default (fresh containers each call:
    snapshots are handed out and must not share a list)."""
    return {name: copy.copy(value) for name, value in _SNAPSHOT_DEFAULTS.items()}
