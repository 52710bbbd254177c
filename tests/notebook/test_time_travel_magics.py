"""`%mentra fork / rewind / history / export / rm`: in an IPython shell, and in a
real kernel across a kernel restart."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError

from mentra_nb import AgentExists
from tests.notebook.conftest import mentra


def _conversation(ip, turns: int = 2):
    agent = mentra(ip, "spawn writer")
    for i in range(turns):
        mentra(ip, f"send writer --wait question {i}")
    return agent


def test_fork_makes_a_fork_and_a_rerun_attaches_to_it(ip, capsys):
    source = _conversation(ip)
    fork = mentra(ip, "fork writer alt --at 2")
    assert (fork.name, fork.forked_from, len(fork.history)) == ("alt", source.id, 2)
    assert "'alt' is a fork of 'writer' at message 2" in capsys.readouterr().out
    again = mentra(ip, "fork writer alt --at 2")  # a re-run cell
    assert again.id == fork.id
    assert "it was forked before: attached to it" in capsys.readouterr().out
    with pytest.raises(AgentExists, match="not a fork of 'writer' at 3.*--replace"):
        mentra(ip, "fork writer alt --at 3")
    with pytest.raises(AgentExists, match="not a fork"):
        mentra(ip, "fork alt writer")
    fresh = mentra(ip, "fork writer alt --at 3 --replace")
    assert fresh.id != fork.id and len(fresh.history) == 3
    assert "the earlier 'alt' is kept as 'alt.replaced-1'" in capsys.readouterr().out


def test_rewind_and_history_show_checkpoints_and_branches(ip, capsys):
    agent = _conversation(ip)
    capsys.readouterr()
    mentra(ip, "rewind writer 2")
    assert "goes on from its first 2 messages; the 2 after it stay a branch" in capsys.readouterr().out
    mentra(ip, "send writer --wait another")
    capsys.readouterr()
    mentra(ip, "history writer")
    out = capsys.readouterr().out
    assert out.startswith("writer: 4 messages\n")
    assert "     2  user       run 3 " in out and "another" in out
    assert "branches (2;" in out and f"head  {agent.branch_id[:12]}  from message 2" in out


def test_export_writes_each_format_beside_the_notebook(ip, tmp_path, capsys):
    _conversation(ip, 1)
    mentra(ip, "export writer")
    assert (tmp_path / "writer.md").read_text().startswith("# writer")
    mentra(ip, f"export writer --format json --out {tmp_path / 'out.json'}")
    assert len(json.loads((tmp_path / "out.json").read_text())["messages"]) == 2
    mentra(ip, "export writer --format ipynb")
    assert json.loads((tmp_path / "writer.ipynb").read_text())["nbformat"] == 4
    assert "wrote 2 messages of 'writer'" in capsys.readouterr().out


def test_rm_deletes_and_a_rerun_says_there_is_nothing_left(ip, session, capsys):
    source = _conversation(ip, 1)
    mentra(ip, "fork writer alt")
    mentra(ip, "fork writer other")
    capsys.readouterr()
    mentra(ip, "rm writer")
    assert "deleted 'writer' from" in capsys.readouterr().out
    mentra(ip, "list")
    listed = capsys.readouterr().out
    assert "alt" in listed and "other" in listed and "writer " not in listed
    assert "(fork of a deleted agent at 2)" in listed
    mentra(ip, "rm writer")
    assert "nothing to delete" in capsys.readouterr().out
    mentra(ip, "rm alt --with-forks")
    assert [r.name for r in session.records() if r.kind == "agent"] == ["other"]
    assert source.forked_from is None


@pytest.mark.parametrize(("line", "problem"), [
    ("fork writer", "NEW"),
    ("fork writer alt --at -1", "greater than or equal to 0"),
    ("rewind writer", "N"),
    ("rewind writer two", "integer"),
    ("export writer --format pdf", "markdown"),
    ("rm", "NAME"),
])
def test_bad_time_travel_lines_are_usage_errors(ip, line, problem):
    with pytest.raises(UsageError, match=problem):
        mentra(ip, line)


@pytest.mark.process
def test_time_travel_magics_in_a_real_kernel_survive_a_restart(kernels, tmp_path):
    first = kernels()
    first.run("%load_ext mentra_nb")
    first.run("%mentra spawn writer")
    first.run("%mentra send writer --wait first question")
    first.run("%mentra send writer --wait second question")
    assert "is a fork of 'writer' at message 2" in first.run("%mentra fork writer alt --at 2")
    first.run("%mentra send alt --wait a different second question")
    first.run("%mentra rewind writer 2")
    history = first.run("%mentra history writer")
    assert history.startswith("writer: 2 messages")
    assert "branches (2;" in history
    first.run("%mentra export alt --format json")
    exported = json.loads((tmp_path / "alt.json").read_text())
    assert [m["content"][0]["text"] for m in exported["messages"]][2:] == [
        "a different second question", "You said: a different second question"]
    first.close()

    second = kernels()
    second.run("%load_ext mentra_nb")
    second.run("%mentra resume")
    out = second.run("%mentra history alt")
    assert out.startswith("alt: 4 messages, forked from 'writer' at message 2")
    assert "branches (2;" in second.run("%mentra history writer")
    assert "deleted 'writer'" in second.run("%mentra rm writer")
    out = second.run("import mentra_nb.notebook as nb\n"
                     "print([m.text for m in nb.session().agent('alt').history])")
    assert "'first question', 'You said: first question', 'a different second question'" in out
    assert "forked from 'a deleted agent' at message 2" in second.run("%mentra history alt")
