"""A state file written by mentra-nb before records (SQLite schema 7, made by that
code: tests/store/fixtures/schema7.mentra.sqlite) opens, and what teams, subagents
and MCP kept in tables and keys of their own reads back through their records.

The fixture was written by the schema-7 `SqliteStore` (main before records): a
lead and its teammate alice, a turn of the lead, team mail in every state (acked,
inflight at transcript position 3, pending), a pending and a rejected protocol
request, a subagent tree, alice's team state, the lead's approvals state and the
runtime's MCP servers."""

from __future__ import annotations

import shutil
from pathlib import Path

from mentra_nb import SqliteStore
from mentra_nb.runtime import mcp
from mentra_nb.runtime.subagents import stored_tree
from mentra_nb.runtime.teams import MEMBERS
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.store.sqlite import SCHEMA_VERSION

FIXTURE = Path(__file__).parent / "fixtures" / "schema7.mentra.sqlite"


def test_a_schema_7_file_opens_and_its_feature_rows_become_records(tmp_path):
    path = tmp_path / "old.mentra.sqlite"
    shutil.copy(FIXTURE, path)
    store = SqliteStore(path)
    try:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert [(a.name, a.kind) for a in store.list_agents("nb")] == [("lead", "agent"), ("alice", "teammate")]
        assert [m.text for m in store.load_messages("lead0001")] == ["hello", "hi there"]

        mail = team_mail.MAIL.list(store, "lead0001")
        assert [(m.recipient, m.message.content, m.state, m.claimed_by, m.transcript_seq) for m in mail] == [
            ("alice", "first", "done", "alice001", 3),
            ("alice", "second", "claimed", "alice001", 3),
            ("lead", "pending for lead", "pending", None, None),
            ("lead", "plan A", "pending", None, None),
            ("alice", "stop", "pending", None, None),
            ("lead", "no", "pending", None, None),
        ]
        assert mail[3].message.request_id == "req-open" and mail[5].message.approve is False
        assert [m.id for m in team_mail.MAIL.inflight(store, "alice001")] == [mail[1].id]
        assert team_mail.MAIL.count(store, "lead0001", "lead") == 3

        requests = team_mail.list_requests(store, "lead0001")
        assert [(r.id, r.protocol, r.status, r.reason) for r in requests] == [
            ("req-open", "plan_approval", "pending", None), ("req-done", "shutdown", "rejected", "busy")]
        assert requests[0].created_at == 1700000001.0 and requests[1].resolved_at is not None

        member = MEMBERS.get(store, "alice001")
        assert member is not None
        assert (member.value.status, member.value.spawned_at) == ({"name": "idle", "error": None}, 1700000000.0)
        assert stored_tree(store, "lead0001") == {"agents": {}, "mailbox": []}
        servers = mcp.SERVERS.get(store, "nb")
        assert servers is not None
        assert servers.value.servers == [{"name": "time", "command": ["python", "-m", "time_server"]}]
        # What stays core stays where it was; what moved is gone from the old places.
        assert store.load_state("lead0001", "approvals.v1") == {"approved": []}
        assert store.load_state("lead0001", "subagents.v1") is None
        assert store.load_state("alice001", "team.member.v1") is None
        tables = {r[0] for r in store._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not tables & {"team_mail", "team_requests", "runtime_state"}
    finally:
        store.close()


def test_mail_of_a_migrated_file_is_claimed_settled_and_answered_as_new_mail_is(tmp_path):
    path = tmp_path / "old.mentra.sqlite"
    shutil.copy(FIXTURE, path)
    store = SqliteStore(path)
    try:
        from mentra_nb.testing.store_conformance import _claim

        claim = _claim("nb")
        store.acquire_lease("alice001", claim, ttl=30)
        [inflight] = team_mail.MAIL.inflight(store, "alice001")
        # Its transcript does not hold it: back to pending.
        assert team_mail.MAIL.settle(store, "alice001", token=claim.token,
                                     delivered=lambda letters: []) == (0, 1)
        claimed = team_mail.MAIL.claim(store, "lead0001", "alice", claimer="alice001", transcript_seq=4,
                                       token=claim.token)
        assert [m.message.content for m in claimed] == ["second", "stop"]
        from mentra_nb.runtime.teams import TeamMessage

        answer = TeamMessage(type="response", sender="lead", content="ok", request_id="req-open", approve=True)
        resolved = team_mail.resolve_request(store, "lead0001", "req-open", approve=True, reason=None,
                                             response=answer)
        assert resolved is not None and resolved.status == "approved"
        assert team_mail.resolve_request(store, "lead0001", "req-open", approve=False, reason=None,
                                         response=answer) is None
    finally:
        store.close()
