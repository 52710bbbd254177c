"""Two kernels on one notebook file: one driver per agent (the other kernel's
`%mentra send` leaves it mail), and a dead driver's agents are taken over at once.

Both kernels run in the same folder with `JPY_SESSION_NAME` naming the same
notebook, exactly as two browser tabs on one notebook would (or a notebook
server that lost track of a kernel), so both find the same state file.
"""

from __future__ import annotations

import time

import pytest

from tests.children import integrity
from tests.kernels import Kernel
from tests.reliability.oracle import read_agents

pytestmark = [pytest.mark.reliability, pytest.mark.process]


def run_cell(kernel: Kernel, code: str) -> tuple[str, str]:
    """(everything the cell printed, displayed or raised, as text; the reply's status)."""
    text, errors, status = kernel.execute(code)
    return text + "".join("\n".join(e["traceback"]) for e in errors), status


def test_a_second_kernel_is_refused_by_name_and_takes_over_when_the_first_dies(kernels, tmp_path):
    db = tmp_path / ".mentra" / "analysis.sqlite"
    first = kernels()
    first.run("%load_ext mentra_nb")
    first.run("%mentra spawn writer")
    first.run("%mentra send writer --wait hello")
    first_pid = int(first.run("import os; print(os.getpid())").strip())

    second = kernels()
    second.run("%load_ext mentra_nb")
    before = read_agents(db)["writer"]
    out, status = run_cell(second, "%mentra resume")
    assert "LeaseUnavailable" in out and f"pid {first_pid}" in out, out
    assert "Traceback" not in out, out  # one clear line, not a stack
    assert status == "error"
    after = read_agents(db)["writer"]
    assert (after.raw, after.run, after.status) == (before.raw, before.run, before.status)
    # Sending from the second kernel leaves mail, which the first kernel runs.
    out, _ = run_cell(second, "%mentra send writer hi")
    assert "driven by another kernel" in out and f"pid {first_pid}" in out, out
    deadline = time.monotonic() + 30
    while "4 False" not in first.run(
            "import mentra_nb.notebook as nb; w = nb.session().agent('writer');"
            " print(len(w.history), w.is_running)"):
        assert time.monotonic() < deadline, "the first kernel never ran the mail"
        time.sleep(0.1)
    assert "hi" in first.run("print(w.history[2].text)")

    first.kill_hard()
    started = time.monotonic()
    out, status = run_cell(second, "%mentra resume")
    took = time.monotonic() - started
    assert status == "ok" and "mentra: resumed 'writer', 4 messages" in out, out
    assert took < 10, f"taking over a dead kernel's agent took {took:.1f} s"  # no lease TTL wait
    assert "You said: again" in second.run(
        "%mentra send writer --wait again\n"
        "import mentra_nb.notebook as nb; print(nb.session().agent('writer').history[-1].text)")
    assert integrity(db) == "ok"
