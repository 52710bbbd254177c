"""Record kinds: a kind names its extension, is declared once, and refuses a
payload of another model before anything reaches the store."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from mentra_nb import SqliteStore
from mentra_nb.errors import ConfigError
from mentra_nb.store.records import RecordKind


class _Item(BaseModel):
    name: str


class _Other(BaseModel):
    name: str


@pytest.mark.parametrize("name", ["items", "Ext.items", "ext.", ".items", "ext.items-v1", "ext items"])
def test_a_kind_name_must_be_dotted_lowercase_starting_with_the_extension(name):
    with pytest.raises(ConfigError, match="dotted lowercase name"):
        RecordKind(name, _Item)


def test_a_kind_name_is_declared_once_per_model():
    kind = RecordKind("recordtest.items", _Item)
    assert RecordKind("recordtest.items", _Item).name == kind.name  # a module imported twice
    with pytest.raises(ConfigError, match="already declared with model _Item"):
        RecordKind("recordtest.items", _Other)


def test_a_payload_of_another_model_is_refused_before_the_store_is_written(tmp_path):
    kind = RecordKind("recordtest.refused", _Item)
    store = SqliteStore(tmp_path / "s.sqlite")
    try:
        with pytest.raises(ConfigError, match="holds a _Item, not a _Other"):
            kind.put(store, "nb", _Other(name="x"))  # type: ignore[arg-type]
        assert kind.list(store) == []
    finally:
        store.close()
