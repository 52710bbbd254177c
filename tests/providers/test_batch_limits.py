"""A batch job against a real HTTP server on 127.0.0.1 speaking Anthropic's wire
format: a storm of 429s slows the whole job and fails no row; a budget stops the
job before it could pass it."""

from __future__ import annotations

from pathlib import Path

from mentra_nb.messages import Role
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.runtime.batch import BatchJob

from .conftest import FAST_RETRY, Reply, Stream, wire
from .helpers import runtime_with

RATE_LIMITED = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}}
MODEL = "anthropic:claude-sonnet-4-5"


def anthropic(server, client) -> AnthropicProvider:
    return AnthropicProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)


async def test_a_429_storm_slows_the_whole_job_and_fails_no_row(server, client, tmp_path: Path) -> None:
    rows = [{"n": i} for i in range(24)]
    storm = [Reply(429, RATE_LIMITED, headers={"retry-after": "0.05"}) for _ in range(36)]
    server.queue(*storm, *(Stream(wire("anthropic_text.sse")) for _ in rows))
    async with runtime_with(anthropic(server, client), tmp_path / "s.sqlite") as rt:
        agent = rt.spawn("clf", MODEL)
        job = await agent.map(rows, prompt="Row {n}", concurrency=8, name="storm").wait()
        frame = job.results()
        assert list(frame["status"]) == ["done"] * 24 and frame["error"].isna().all()
        assert list(frame["answer"]) == ["Hello!"] * 24
        # The provider's refusals reached the job's one limiter, which ran fewer rows at once.
        assert job.limiter.throttled >= 1 and job.limiter.lowest < 8
        assert job.progress().throttled == job.limiter.throttled
        # Each request was a 429 or one row's one answer: no row was answered twice.
        assert len(server.requests) == 36 + 24
        for name in frame["agent"]:
            fork = rt.resume_agent(next(r.id for r in rt.list_persisted_agents() if r.name == name))
            assert [m.role for m in fork.history] == [Role.USER, Role.ASSISTANT]


async def test_a_budget_stops_starting_rows_that_could_pass_it(server, client, tmp_path: Path) -> None:
    server.queue(*(Stream(wire("anthropic_text.sse")) for _ in range(11)))
    async with runtime_with(anthropic(server, client), tmp_path / "s.sqlite") as rt:
        agent = rt.spawn("clf", MODEL)
        probe = await agent.map([{"n": -1}], prompt="Row {n}", name="probe").wait()
        row_cost = probe.results()["cost_usd"][0]
        assert row_cost > 0
        job: BatchJob = agent.map([{"n": i} for i in range(10)], prompt="Row {n}", concurrency=4,
                                  max_cost_usd=row_cost * 3.5, name="budgeted")
        await job.wait()
        progress = job.progress()
        assert progress.state == "budget"
        assert (progress.done, progress.waiting, progress.failed, progress.running) == (3, 7, 0, 0)
        assert progress.cost_usd is not None and progress.cost_usd <= row_cost * 3.5
        assert "3 of 10 rows finished, 7 not started" in progress.note
        assert len(server.requests) == 1 + 3
        # Raising the budget lets it go on from where it stopped.
        job.set_budget(None)
        await job.resume().wait()
        assert job.progress().done == 10 and job.state == "finished"
