"""Comparisons (`rt.compare`) on offline models over a real SQLite file: the
side-by-side table, agreement, judges (a function, an agent), attaching, bad input,
and going on after the runtime closed mid-way."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

from mentra_nb.errors import ConfigError, InvalidRequest
from mentra_nb.providers.base import ProviderRequest
from mentra_nb.providers.events import ProviderEvent
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime import Runtime
from mentra_nb.runtime.batch import COMPARE, JOB, ROW, VERDICT, Comparison, Verdict, compare_rows
from mentra_nb.store.records import DONE
from mentra_nb.store.sqlite import SqliteStore
from mentra_nb.testing.scripted import text_stream


class Label(BaseModel):
    label: str
    stars: int


class Offline(TestProvider):
    """The test model; refuses prompts containing `refuse`. As `contra`, it labels
    awful reviews "negative" (where `test` answers the smallest value, "a")."""

    def __init__(self, name: str = "test", chunk_delay: float = 0.0) -> None:
        super().__init__(name=name, chunk_delay=chunk_delay)
        self.refuse: str | None = None

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        last = request.messages[-1].text
        if self.refuse is not None and self.refuse in last:
            raise InvalidRequest(f"the server refused {last!r}", status_code=400)
        if self.name == "contra" and request.output is not None and "awful" in last:
            async for event in text_stream('{"label": "negative", "stars": 1}').play():
                yield event
            return
        async for event in super().stream(request):
            yield event


REVIEWS = pd.DataFrame({"text": ["great", "awful", "fine"]})


def runtime(path: Path, runtime_id: str = "nb", chunk_delay: float = 0.0) -> Runtime:
    return Runtime.empty(store=SqliteStore(path), runtime_id=runtime_id,
                         providers=[Offline(chunk_delay=chunk_delay), Offline("contra", chunk_delay)])


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime_ = runtime(tmp_path / "nb.sqlite")
    yield runtime_
    await runtime_.aclose()
    runtime_.store.close()


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.01)


async def test_results_are_side_by_side_with_agreement_and_cost_per_agent(rt: Runtime) -> None:
    a, b = rt.spawn("a", "test"), rt.spawn("b", "contra:default")
    cmp = await compare_rows(rt, REVIEWS, [a, b], "Review: {text}", output=Label, name="cmp").wait()
    frame = cmp.results()
    assert list(frame.columns) == ["a_label", "a_stars", "a_status", "a_error", "a_cost_usd",
                                   "b_label", "b_stars", "b_status", "b_error", "b_cost_usd", "agree"]
    assert list(frame["b_label"]) == ["a", "negative", "a"]
    assert list(frame["agree"]) == [True, False, True]
    assert str(frame["a_stars"].dtype) == "Int64" and str(frame["agree"].dtype) == "boolean"
    assert list(frame["a_status"]) == list(frame["b_status"]) == ["done"] * 3
    # `test` is free; `contra` is in no price table, so its cost is unknown, not a guess.
    assert cmp.state == "finished" and cmp.costs() == {"a": 0.0, "b": None}
    # Each agent ran the rows as an ordinary job of its own, its rows forks of that agent.
    assert sorted(j.value.name for j in JOB.list(rt.store, "nb")) == ["cmp.a", "cmp.b"]
    forks = {r.name: r.forked_from for r in rt.list_persisted_agents() if r.forked_from}
    assert forks == {**{f"cmp.a-{i}": a.id for i in range(3)}, **{f"cmp.b-{i}": b.id for i in range(3)}}


async def test_a_failed_row_leaves_agreement_empty_and_is_not_judged(rt: Runtime) -> None:
    provider = rt.providers.get("contra")
    assert isinstance(provider, Offline)
    provider.refuse = "fine"
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def judge(row: dict[str, Any], outputs: dict[str, Any]) -> float:
        seen.append((row, outputs))
        return 1.0 if outputs["a"] == outputs["b"] else 0.0

    a, b = rt.spawn("a", "test"), rt.spawn("b", "contra:default")
    cmp = await compare_rows(rt, REVIEWS, [a, b], "Review: {text}", output=Label, judge=judge,
                             name="f").wait()
    frame = cmp.results()
    assert list(frame["b_status"]) == ["done", "done", "failed"]
    assert "the server refused 'Review: fine'" in frame["b_error"][2]
    assert frame["agree"].tolist()[:2] == [True, False] and pd.isna(frame["agree"][2])
    assert [row["text"] for row, _ in seen] == ["great", "awful"]  # the rows every agent answered
    assert seen[1][1] == {"a": Label(label="a", stars=0), "b": Label(label="negative", stars=1)}
    assert frame["judge"].tolist()[:2] == [1.0, 0.0] and pd.isna(frame["judge"][2])


async def test_a_judge_function_judges_each_row_once_and_a_rerun_attaches(rt: Runtime) -> None:
    calls: list[str] = []

    async def judge(row: dict[str, Any], outputs: dict[str, Any]) -> Verdict:
        calls.append(row["text"])
        if row["text"] == "fine":
            raise ValueError("cannot tell")
        return Verdict(winner="b" if outputs["b"].label != "a" else "tie", reason="by label")

    a, b = rt.spawn("a", "test"), rt.spawn("b", "contra:default")
    cmp = await compare_rows(rt, REVIEWS, [a, b], "Review: {text}", output=Label, judge=judge,
                             name="j").wait()
    frame = cmp.results()
    assert list(frame["judge_winner"][:2]) == ["tie", "b"] and pd.isna(frame["judge_winner"][2])
    assert frame["judge_error"][2] == "ValueError: cannot tell"
    assert len(VERDICT.list(rt.store, cmp.id)) == 3
    again = await compare_rows(rt, REVIEWS, [a, b], "Review: {text}", output=Label, judge=judge,
                               name="j").wait()
    assert again is cmp and calls == ["great", "awful", "fine"]  # nothing judged twice
    with pytest.raises(ConfigError, match="replace=True"):
        compare_rows(rt, REVIEWS.head(2), [a, b], "Review: {text}", output=Label, judge=judge, name="j")
    replaced = await compare_rows(rt, REVIEWS.head(2), [a, b], "Review: {text}", output=Label,
                                  judge=judge, name="j", replace=True).wait()
    assert replaced.id != cmp.id and len(replaced.results()) == 2
    assert VERDICT.list(rt.store, cmp.id) == [] and len(VERDICT.list(rt.store, replaced.id)) == 2


async def test_a_judge_agent_answers_a_typed_verdict_on_each_answered_row(rt: Runtime) -> None:
    a, b = rt.spawn("a", "test"), rt.spawn("b", "contra:default")
    referee = rt.spawn("referee", "test")
    cmp = await compare_rows(rt, REVIEWS, [a, b], "Review: {text}", output=Label, judge=referee,
                             name="ag").wait()
    frame = cmp.results()
    assert cmp.state == "finished"
    assert list(frame.columns[-3:]) == ["agree", "judge_winner", "judge_reason"]
    assert frame["judge_winner"].notna().all()  # what it says is the model's; that it said is ours
    assert set(cmp.costs()) == {"a", "b", "judge"}
    judge_job = JOB.get(rt.store, "nb", "ag.judge")
    assert judge_job is not None and judge_job.value.agent_id == referee.id
    prompts = [r.value.prompt for r in ROW.list(rt.store, judge_job.value.job_id)]
    assert len(prompts) == 3
    assert "Review: awful" in prompts[1] and '"label":"negative"' in prompts[1] and "'b'" in prompts[1]


class _Other(BaseModel):
    x: int


@pytest.mark.parametrize(("agents", "kwargs", "message"), [
    ([], {}, "got no agents"),
    (["a", "a"], {}, "agent 'a' is named twice"),
    (["a", "other"], {}, "agent 'z' belongs to another runtime"),
    (["a", "b"], {"judge": "best"}, "judge must be None, a function"),
    (["a", "b"], {"judge": _Other}, "judge must be None, a function"),
    (["a", "b"], {"judge": "other"}, "judge agent 'z' belongs to another runtime"),
    (["a", "b"], {"judge_output": _Other}, "give judge= an agent too"),
    (["a", "b"], {"judge": len, "judge_output": _Other}, "a judge function returns its verdict"),
    (["a", "b"], {"concurrency": 0}, "concurrency must be"),
    (["a", "b"], {"name": "n" * 47}, "the job name of comparison"),
    ("a", {}, "agents must be a list of agents"),
])
async def test_bad_input_is_a_clear_error_and_stores_nothing(rt: Runtime, tmp_path: Path, agents: Any,
                                                            kwargs: dict[str, Any], message: str) -> None:
    other = runtime(tmp_path / "other.sqlite", "elsewhere")
    try:
        made = {"a": rt.spawn("a", "test"), "b": rt.spawn("b", "test"), "other": other.spawn("z", "test")}
        pick: Callable[[Any], Any] = lambda x: made.get(x, x) if isinstance(x, str) else x  # noqa: E731
        given = agents if isinstance(agents, str) and agents not in ("a",) else (
            made[agents] if isinstance(agents, str) else [pick(x) for x in agents])
        if agents == "a":
            given = "a"
        args = {k: pick(v) if k == "judge" else v for k, v in kwargs.items()}
        with pytest.raises(ConfigError, match=message):
            compare_rows(rt, REVIEWS, given, "Review: {text}", **args)
        assert rt.store.read_records(COMPARE.name) == [] and rt.store.read_records(JOB.name) == []
    finally:
        await other.aclose()
        other.store.close()


async def test_rt_resume_goes_on_with_a_comparison_the_runtime_left_midway(tmp_path: Path) -> None:
    db = tmp_path / "nb.sqlite"
    first = runtime(db, chunk_delay=0.005)
    a, b = first.spawn("a", "test"), first.spawn("b", "contra:default")
    referee = first.spawn("referee", "test")
    rows = [{"text": f"review {i}"} for i in range(12)]
    cmp: Comparison = first.compare(rows, agents=[a, b], prompt="Review: {text}", output=Label,
                                    judge=referee, concurrency=2, name="later")
    await until(lambda: cmp.jobs["a"].progress().done >= 2, "two rows done")
    await first.aclose()
    first.store.close()

    again = runtime(db)
    try:
        stored = COMPARE.get(again.store, "nb", "later")
        assert stored is not None and stored.value.state == "running"
        assert sorted(x.name for x in again.resume()) == ["a", "b", "referee"]

        def finished() -> bool:
            stored = COMPARE.get(again.store, "nb", "later")
            return stored is not None and stored.value.state == "finished"

        await until(finished, "the comparison finished after rt.resume()")
        stored = COMPARE.get(again.store, "nb", "later")
        assert stored is not None and stored.value.judged == list(range(12))
        for member in stored.value.contestants:
            job = JOB.get(again.store, "nb", member.job_name)
            assert job is not None
            done = ROW.list(again.store, job.value.job_id)
            assert sorted(r.value.index for r in done) == list(range(12))
            assert all(r.state == DONE for r in done)
    finally:
        await again.aclose()
        again.store.close()
