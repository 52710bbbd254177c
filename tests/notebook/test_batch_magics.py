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
