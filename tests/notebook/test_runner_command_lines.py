"""Issue 30.5: how a headless run finds its notebook, from the runner's command line.

`jupyter nbconvert --to notebook --execute --output out.ipynb report.ipynb` was
read as two notebooks of one folder, so the run fell back to the shared
`.mentra/mentra.sqlite`. Each row below is a real invocation in its common form;
each is run with the real runner, and the notebook's agents must land in
`.mentra/report.sqlite` under the runtime id `report`, and nowhere else.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import nbformat
import pytest

from mentra_nb._runner_command_line import runner_inputs
from tests.notebook.test_headless_runs import _run, _runner

# The command lines, with the runner's executable as typed.
INVOCATIONS = [
    pytest.param(["jupyter", "nbconvert", "--to", "notebook", "--execute", "--output", "out.ipynb",
                  "report.ipynb"], id="nbconvert --output NAME.ipynb"),
    pytest.param(["jupyter", "nbconvert", "--to", "notebook", "--execute", "report.ipynb",
                  "--output=out.ipynb"], id="nbconvert --output=NAME.ipynb after the notebook"),
    pytest.param(["jupyter", "nbconvert", "--execute", "--to", "notebook", "--output-dir", "runs",
                  "--output", "out.ipynb", "report.ipynb"], id="nbconvert --output-dir DIR --output NAME"),
    pytest.param(["jupyter", "nbconvert", "--execute", "--inplace", "report.ipynb"], id="nbconvert --inplace"),
    pytest.param(["jupyter", "nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout",
                  "600", "--output", "out.ipynb", "report"], id="nbconvert --Class.trait VALUE, no .ipynb"),
    pytest.param(["jupyter", "execute", "--output", "out.ipynb", "report.ipynb"], id="jupyter execute --output"),
    pytest.param(["papermill", "report.ipynb", "out.ipynb"], id="papermill IN OUT"),
    pytest.param(["papermill", "-p", "template", "other.ipynb", "report.ipynb", "out.ipynb"],
                 id="papermill -p NAME VALUE.ipynb IN OUT"),
    pytest.param(["papermill", "report.ipynb", "runs/out.ipynb", "-k", "python3", "--cwd", "runs",
                  "--log-output"], id="papermill IN OUT -k KERNEL --cwd DIR"),
    pytest.param(["papermill", "--kernel=python3", "-y", "a: 1", "-r", "x", "y.ipynb", "report.ipynb",
                  "out.ipynb"], id="papermill --kernel=K -y YAML -r NAME VALUE IN OUT"),
]


def _folder(tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("%load_ext mentra_nb"),
                nbformat.v4.new_code_cell("%mentra spawn writer")]
    nbformat.write(nb, tmp_path / "report.ipynb")
    (tmp_path / "runs").mkdir()
    return tmp_path


@pytest.mark.parametrize("argv", INVOCATIONS)
def test_the_command_line_names_the_notebook_it_runs(argv, tmp_path):
    # (papermill --cwd DIR moves into DIR before it starts the kernel)
    now = tmp_path / argv[argv.index("--cwd") + 1] if "--cwd" in argv else tmp_path
    found = runner_inputs(argv, now)
    assert found is not None and found[1] == [tmp_path / "report.ipynb"]


@pytest.mark.process
@pytest.mark.parametrize("argv", INVOCATIONS)
def test_a_real_run_keeps_its_agents_beside_its_notebook(argv, tmp_path):
    folder = _folder(tmp_path)
    _run([_runner(argv[0]), *argv[1:]], folder)
    state = folder / ".mentra"
    assert sorted(p.name for p in state.glob("*.sqlite")) == ["report.sqlite"]
    conn = sqlite3.connect(f"file:{state / 'report.sqlite'}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT runtime_id, name FROM agents").fetchall() == [("report", "writer")]
    finally:
        conn.close()
