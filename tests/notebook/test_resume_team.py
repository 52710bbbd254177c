"""`%mentra resume NAME` and `%mentra resume` go through the runtime's one load
path: a resumed lead's teammates are revived and its subagent tree is loaded."""

from __future__ import annotations

import pytest

import mentra_nb.notebook as notebook
from mentra_nb.runtime.subagents import list_subagents
from mentra_nb.testing import text_stream
from tests.conftest import until
from tests.notebook.conftest import mentra
from tests.subagents.helpers import RoutedProvider, call
from tests.teams.helpers import teammate


def store_a_team_with_a_subagent(ip) -> None:
    session = notebook.session(ip)
    session.runtime.providers.register(RoutedProvider(
        "scripted",
        root=[call("s1", "spawn_agent", task_name="research", message="Look it up",
                   model="scripted:child"),
              text_stream("spawned")],
        child=[text_stream("found it")],
        alice=[],
    ))
    lead = mentra(ip, "spawn lead --model scripted:root --subagents")
    mentra(ip, "send lead --wait Research it")
    until(lambda: [s.status for s in list_subagents(lead)] == ["completed"])
    mentra(ip, "teammate lead alice --role researcher --model scripted:alice")
    until(lambda: teammate(lead, "alice").alive)
    notebook.unload_ipython_extension(ip)  # what a kernel restart does to this process's state
    notebook.load_ipython_extension(ip)


@pytest.mark.parametrize("line", ["resume lead", "resume"])
def test_magic_resume_revives_teammates_and_loads_subagents(ip, line, capsys):
    store_a_team_with_a_subagent(ip)
    capsys.readouterr()
    mentra(ip, line)
    assert "mentra: resumed 'lead'" in capsys.readouterr().out
    lead = notebook.session(ip).agent("lead")
    assert teammate(lead, "alice").alive  # its actor was started by the resume itself
    assert [(s.path, s.status) for s in list_subagents(lead)] == [("/root/research", "completed")]
