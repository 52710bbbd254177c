"""Errors from the store and the HTTP layer speak to any caller; the notebook
layer adds what to type in a notebook."""

from __future__ import annotations

import pytest

from mentra_nb import ModelNotFound, SqliteStore, StoreError
from mentra_nb.notebook import magic_hint


def test_the_store_says_what_is_wrong_without_naming_a_magic(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_text("these are notes, not a database\n" * 10)
    with pytest.raises(StoreError) as caught:
        SqliteStore(path)
    assert "not a SQLite file" in str(caught.value) and "%mentra" not in str(caught.value)
    assert magic_hint(caught.value) == "%mentra db PATH keeps this notebook's agents in another state file"
    assert magic_hint(ModelNotFound("no such model")) == "%mentra models lists the models each provider offers"


def test_a_cell_that_hits_a_store_error_shows_the_magic_to_use(ip, tmp_path, capsys):
    (tmp_path / "notes.sqlite").write_text("these are notes, not a database\n" * 10)
    ip.run_cell("%mentra db notes.sqlite")
    out = capsys.readouterr().out
    assert "StoreError:" in out and "not a SQLite file" in out
    assert "mentra: %mentra db PATH keeps this notebook's agents in another state file" in out
