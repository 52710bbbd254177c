"""`%mentra map` in an in-process IPython shell: the job runs on the runtime's
thread while the cell returns, its results land in a variable, a rerun attaches."""

from __future__ import annotations

import pandas as pd
import pytest
from IPython.core.error import UsageError
from pydantic import BaseModel

from mentra_nb.notebook.batch_view import progress_markdown
from mentra_nb.runtime import BatchJob
from tests.notebook.conftest import mentra


class Label(BaseModel):
    label: str
    stars: int


REVIEWS = pd.DataFrame({"text": ["great", "awful", "fine"]})


def test_map_runs_the_rows_and_puts_the_results_into_a_variable(ip, session):
    ip.user_ns.update(Label=Label, reviews=REVIEWS)
    mentra(ip, "spawn clf")
    job = mentra(ip, 'map clf reviews --prompt "Classify: {text}" --output Label --concurrency 2 '
                     "--into labels --name reviews")
    assert isinstance(job, BatchJob)
    job.join(timeout=30)
    assert job.state == "finished"
    labels = ip.user_ns["labels"]
    assert list(labels.columns[:3]) == ["label", "stars", "status"]
    assert list(labels["status"]) == ["done"] * 3
    assert list(labels["agent"]) == ["reviews-0", "reviews-1", "reviews-2"]
    text = progress_markdown(job)
    assert "**Batch job `reviews`** of `clf`: finished" in text
    assert "3 done · 0 running · 0 failed · 0 waiting · of 3" in text and "░" not in text


def test_rerunning_the_map_cell_attaches_and_replace_starts_over(ip, session):
    ip.user_ns.update(reviews=REVIEWS)
    mentra(ip, "spawn clf")
    line = 'map clf reviews --prompt "Classify: {text}" --name again'
    first = mentra(ip, line).join(timeout=30)
    assert mentra(ip, line).join(timeout=30) is first
    replaced = mentra(ip, line + " --replace").join(timeout=30)
    assert replaced.id != first.id and replaced.progress().done == 3


@pytest.mark.parametrize(("line", "message"), [
    ('map clf nothing --prompt "x {text}"', "no kernel variable 'nothing'"),
    ('map clf reviews --prompt "x {txt}"', r"names \{txt\}, which row 0 does not have"),
    ('map clf reviews --prompt "x {text}" --concurrency 0', "concurrency"),
    ("map clf reviews", "prompt"),
])
def test_bad_map_lines_are_usage_errors(ip, session, line, message):
    ip.user_ns.update(reviews=REVIEWS)
    mentra(ip, "spawn clf")
    with pytest.raises(UsageError, match=message):
        mentra(ip, line)


def test_the_view_follows_the_job_lists_a_failure_and_opens_its_transcript(ip, session):
    from mentra_nb.errors import InvalidRequest
    from mentra_nb.notebook.batch_view import BatchView
    from mentra_nb.testing import ScriptedProvider, error_stream, text_stream
    from tests.conftest import until

    ip.user_ns.update(reviews=REVIEWS)
    # One row at a time, so the scripts go to the rows in order: row 1 is refused.
    session.runtime.providers.register(ScriptedProvider("scripted", [
        text_stream("positive"), error_stream([], InvalidRequest("refused: too rude", status_code=400)),
        text_stream("neutral")]))
    mentra(ip, "spawn clf --model scripted:m")
    job = mentra(ip, 'map clf reviews --prompt "Review: {text}" --concurrency 1 --name judged').join(timeout=30)
    view = session.batch_view(job)
    assert isinstance(view, BatchView)
    until(lambda: view.progress.get("state") == "finished")
    assert (view.progress["done"], view.progress["failed"], view.progress["total"]) == (2, 1, 3)
    assert view.failures == [{"index": 1, "agent": "judged-1", "error": "refused: too rude"}]
    assert "- row 1 (`judged-1`): refused: too rude" in view._markdown()
    view._on_browser_message(view, {"kind": "open_row", "index": 1}, [])
    until(lambda: bool(view.row))
    assert view.row["agent"] == "judged-1"
    # Its run was rolled back: the prompt it was sent, then why it failed.
    assert [(i["role"], i["kind"]) for i in view.row["items"]] == [("user", "text"), ("user", "notice")]
    assert "Review: awful" in view.row["items"][0]["html"]
    assert "refused: too rude" in view.row["items"][1]["html"]
    view._on_browser_message(view, {"kind": "open_row", "index": -1}, [])  # invalid: ignored
    view._on_browser_message(view, {"kind": "close_row"}, [])
    until(lambda: view.row == {})
    view.close()


def test_compare_runs_the_rows_through_each_agent_and_puts_the_side_by_side_table_into_a_variable(
        ip, session):
    from mentra_nb.runtime.batch import Comparison

    ip.user_ns.update(Label=Label, reviews=REVIEWS)
    for name in ("a", "b", "referee"):
        mentra(ip, f"spawn {name}")
    line = ('compare a,b reviews --prompt "Classify: {text}" --output Label --judge referee '
            "--concurrency 2 --into side --name cmp")
    found = mentra(ip, line)
    assert isinstance(found, Comparison)
    found.join(timeout=30)
    assert found.state == "finished"
    side = ip.user_ns["side"]
    assert list(side.columns[:5]) == ["a_label", "a_stars", "a_status", "a_error", "a_cost_usd"]
    assert list(side["a_status"]) == list(side["b_status"]) == ["done"] * 3
    assert list(side["agree"]) == [True] * 3  # the same offline model, the same smallest answer
    assert side["judge_winner"].notna().all()
    del ip.user_ns["side"]
    assert mentra(ip, line) is found and ip.user_ns["side"] is not None  # a rerun attaches


@pytest.mark.parametrize(("line", "message"), [
    ('compare a reviews --prompt "x {text}"', "two or more agents separated by commas"),
    ('compare a,b nothing --prompt "x {text}"', "no kernel variable 'nothing'"),
    ('compare a,a reviews --prompt "x {text}"', "agent 'a' is named twice"),
    ('compare a,b reviews --prompt "x {txt}"', r"names \{txt\}"),
])
def test_bad_compare_lines_are_usage_errors(ip, session, line, message):
    ip.user_ns.update(reviews=REVIEWS)
    for name in ("a", "b"):
        mentra(ip, f"spawn {name}")
    with pytest.raises(UsageError, match=message):
        mentra(ip, line)
