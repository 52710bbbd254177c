"""Every resume path runs the same recovery and the same extension hooks.

A lead with a teammate and a finished subagent is stored by one runtime; a
second runtime brings it back through `rt.resume_agent(id)`, `rt.resume()` or
`rt.resume_all()`. Each path must revive the teammate (its actor runs again)
and open the subagent tree. Before the runtime core had one load path,
`resume_agent` (and so `%mentra resume NAME`) skipped the extensions'
`after_resume`, and the lead's teammates stayed dead.
"""

from __future__ import annotations

import pytest

from mentra_nb import AgentConfig, Runtime, SqliteStore
from mentra_nb.runtime.subagents import list_subagents
from mentra_nb.testing import text_stream
from tests.conftest import clear_leases, wait_until
from tests.subagents.helpers import RoutedProvider, call
from tests.teams.helpers import teammate

RUNTIME_ID = "resume-paths"


async def store_a_lead_with_a_teammate_and_a_subagent(db_path) -> str:
    provider = RoutedProvider(
        root=[call("s1", "spawn_agent", task_name="research", message="Look it up",
                   model="anthropic:child"),
              text_stream("spawned")],
        child=[text_stream("found it")],
        alice=[],
    )
    rt = Runtime(store=SqliteStore(db_path), providers=[provider], runtime_id=RUNTIME_ID)
    lead = rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True))
    await lead.send("Research it")
    await wait_until(lambda: [s.status for s in list_subagents(lead)] == ["completed"])
    await lead.spawn_teammate("alice", "researcher", model="anthropic:alice")
    assert teammate(lead, "alice").alive
    lead_id = lead.id
    await rt.aclose()
    clear_leases(db_path)
    return lead_id


@pytest.mark.parametrize("path", ["resume_agent", "resume", "resume_all"])
async def test_every_resume_path_revives_teammates_and_loads_subagents(db_path, path):
    lead_id = await store_a_lead_with_a_teammate_and_a_subagent(db_path)
    rt = Runtime(store=SqliteStore(db_path), providers=[RoutedProvider()], runtime_id=RUNTIME_ID)
    if path == "resume_agent":
        lead = rt.resume_agent(lead_id)
    elif path == "resume":
        [lead] = rt.resume(RUNTIME_ID)
    else:
        [lead] = rt.resume_all()
    assert lead.id == lead_id
    assert teammate(lead, "alice").alive
    assert lead.teammate("alice").name == "alice"
    assert [(s.path, s.status) for s in list_subagents(lead)] == [("/root/research", "completed")]
    assert [s.path for s in lead.snapshot.subagents] == ["/root/research"]
    await rt.aclose()


async def test_resuming_a_live_lead_by_id_wakes_its_teammates_again(db_path):
    lead_id = await store_a_lead_with_a_teammate_and_a_subagent(db_path)
    rt = Runtime(store=SqliteStore(db_path), providers=[RoutedProvider()], runtime_id=RUNTIME_ID)
    [lead] = rt.resume()
    assert rt.resume_agent(lead_id) is lead
    assert teammate(lead, "alice").alive
    assert [a.name for a in rt.agents] == ["lead", "alice"]
    await rt.aclose()
