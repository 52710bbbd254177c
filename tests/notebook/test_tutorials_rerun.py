"""Issue 15.1: the tutorials reran only because each deleted its own state file
first. Now they keep it, as a user's notebooks do: run twice in a row under nbval
(the second run finding the first run's agents), every checked cell matches."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"


@pytest.mark.timeout(1800)
def test_the_tutorials_rerun_twice_in_a_row_keeping_their_state(tmp_path):
    for source in [*NOTEBOOKS.glob("*.ipynb"), NOTEBOOKS / "conftest.py"]:
        shutil.copy(source, tmp_path / source.name)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            "--nbval-lax", "--rootdir", str(tmp_path), "-o", "addopts=", "-o", "timeout=300", str(tmp_path)]
    for run in (1, 2):
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, f"run {run} of the tutorials failed:\n{done.stdout[-6000:]}"
    # Each tutorial kept a state file of its own, beside it in the hidden folder.
    kept = sorted(p.name for p in (tmp_path / ".mentra").glob("*.sqlite"))
    assert kept == sorted(f"{p.stem}.sqlite" for p in NOTEBOOKS.glob("*.ipynb"))
