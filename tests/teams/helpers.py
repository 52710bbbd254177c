"""Small helpers the team tests share."""

from __future__ import annotations

import json

from mentra_nb import ProviderRequest, Runtime, TeamMemberStatus
from mentra_nb.testing import ScriptedProvider
from tests.conftest import wait_until
from tests.runtimes import scripted_runtime


def runtime(db_path, provider: ScriptedProvider, runtime_id: str = "team", **kwargs) -> Runtime:
    # Without the built-in file tools, so the tests can check exactly which team tools are offered.
    return scripted_runtime(db_path, provider=provider, runtime_id=runtime_id, **kwargs)


def latest_team_inbox_text(request: ProviderRequest) -> str | None:
    """The last `<team-inbox>` text of a request (what spec/000's helper finds)."""
    for message in reversed(request.messages):
        for block in message.content:
            text = getattr(block, "text", None)
            if isinstance(text, str) and "<team-inbox>" in text:
                return text
    return None


def inbox_items(text: str) -> list[dict]:
    body = text.split("<team-inbox>", 1)[1].rsplit("</team-inbox>", 1)[0]
    return json.loads(body)


def requests_of(provider: ScriptedProvider, name: str) -> list[ProviderRequest]:
    """The requests one teammate made (its system prompt starts with its name)."""
    return [r for r in provider.requests if (r.system or "").startswith(f"You are {name},")]


def teammate(lead, name: str):
    return next(t for t in lead.snapshot.teammates if t.name == name)


async def wait_for_teammate_status(lead, name: str, status: TeamMemberStatus):
    await wait_until(lambda: teammate(lead, name).status == status)


async def wait_for_requests(provider: ScriptedProvider, count: int) -> None:
    await wait_until(lambda: len(provider.requests) >= count)
