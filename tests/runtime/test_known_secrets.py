"""The secrets masked in what a run stores follow the `.env` files as they change,
though a file that did not change is not read again on every run."""

from __future__ import annotations

import os
from pathlib import Path

from mentra_nb import Runtime, SqliteStore
from mentra_nb.runtime import _redaction, known_secrets

OLD = "sk-old-0123456789abcdefghij"
NEW = "sk-new-9876543210zyxwvutsrq"  # the same length: the file's size does not change
HOUR = 3600 * 10**9


def _save_backdated(path: Path, text: str, mtime: int) -> None:
    """`text` saved over `path` as an editor saves (a new file moved over the old
    one), its mtime set to `mtime` (as `cp -p` or an unpacked archive leave it)."""
    fresh = path.with_name(path.name + ".saving")
    fresh.write_text(text, encoding="utf-8")
    os.utime(fresh, ns=(mtime, mtime))
    os.replace(fresh, path)


async def test_a_dotenv_changed_between_two_runs_is_still_masked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the `.env` of the current folder
    dotenv = tmp_path / ".env"
    an_hour_ago = dotenv.parent.stat().st_mtime_ns - HOUR
    _save_backdated(dotenv, f"SERVICE_LOGIN={OLD}\n", an_hour_ago)
    rt = Runtime.empty(store=SqliteStore(tmp_path / "state.sqlite"))
    agent = rt.spawn("w", "test")
    await agent.send(f"the login is {OLD}")
    _save_backdated(dotenv, f"SERVICE_LOGIN={NEW}\n", an_hour_ago)  # same size, same mtime
    await agent.send(f"now it is {NEW}")
    assert [m.text for m in agent.history if m.role == "user"] == [
        "the login is [redacted]", "now it is [redacted]"]
    await rt.aclose()


def test_an_unchanged_dotenv_is_read_once_and_a_new_version_again(tmp_path):
    dotenv = tmp_path / ".env.local"  # a workspace `.env*` file
    an_hour_ago = tmp_path.stat().st_mtime_ns - HOUR
    _save_backdated(dotenv, f"SERVICE_LOGIN={OLD}\n", an_hour_ago)
    _redaction._dotenv_secrets.cache_clear()
    for _ in range(5):
        assert OLD in known_secrets(tmp_path)
    assert _redaction._dotenv_secrets.cache_info().misses == 1  # parsed once for five runs
    _save_backdated(dotenv, f"SERVICE_LOGIN={NEW}\n", an_hour_ago)
    secrets = known_secrets(tmp_path)
    assert NEW in secrets and OLD not in secrets


def test_a_dotenv_written_just_now_is_read_on_every_run(tmp_path):
    # Rewritten within one clock tick, its mtime and size could stay as they were.
    (tmp_path / ".env").write_text(f"SERVICE_LOGIN={OLD}\n", encoding="utf-8")
    _redaction._dotenv_secrets.cache_clear()
    assert OLD in known_secrets(tmp_path)
    (tmp_path / ".env").write_text(f"SERVICE_LOGIN={NEW}\n", encoding="utf-8")
    assert NEW in known_secrets(tmp_path)
    assert _redaction._dotenv_secrets.cache_info().currsize == 0


def test_a_dotenv_file_added_to_the_workspace_is_read(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing secret", encoding="utf-8")
    an_hour_ago = tmp_path.stat().st_mtime_ns - HOUR
    os.utime(tmp_path, ns=(an_hour_ago, an_hour_ago))  # a folder listed once, then kept
    assert OLD not in known_secrets(tmp_path)
    _save_backdated(tmp_path / ".env.production", f"SERVICE_LOGIN={OLD}\n", an_hour_ago)
    assert OLD in known_secrets(tmp_path)
