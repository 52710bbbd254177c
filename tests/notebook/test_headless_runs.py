"""Issue 15.1 and 15.7: notebooks run by nbconvert and papermill, for real.

Two notebooks in one folder, each run twice, alternating (a, b, a, b): every
run succeeds, each notebook keeps its own state file and runtime id under
`.mentra/`, the rerun's spawn cell attaches to the agent the first run made
(so the agent remembers), and the saved output of a `%%mentra --wait` cell is
the turn's transcript, readable without a kernel (and in nbconvert's HTML).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.conftest import missing

pytestmark = pytest.mark.process

RUN_TIMEOUT = 300


def _notebook(folder: Path, name: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext mentra_nb"),
        nbformat.v4.new_code_cell("writer = %mentra spawn writer"),
        nbformat.v4.new_code_cell(f"%%mentra writer --wait\nHello from {name}"),
        nbformat.v4.new_code_cell("print('messages:', len(writer.history))"),
        nbformat.v4.new_code_cell("%mentra db"),
        nbformat.v4.new_code_cell("%mentra show writer"),
    ]
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _run(argv: list[str], folder: Path) -> None:
    # The kernel must find this checkout's mentra_nb and nothing of the test runner's.
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert done.returncode == 0, f"{argv[:3]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def _outputs(path: Path) -> list[list[dict]]:
    nb = nbformat.read(path, as_version=4)  # joins the multi-line strings of the file
    # (without the cell of parameters papermill puts first)
    return [cell.get("outputs", []) for cell in nb.cells
            if "injected-parameters" not in cell.get("metadata", {}).get("tags", [])]


def _text(outputs: list[dict]) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)


def _runtime_ids(db: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {row[0] for row in conn.execute("SELECT runtime_id FROM agents")}
    finally:
        conn.close()


def _check_run(out: Path, name: str, messages: int, folder: Path) -> None:
    cells = _outputs(out)
    assert f"messages: {messages}" in _text(cells[3])
    db_text = _text(cells[4])
    assert f"state file: {folder / '.mentra' / (name + '.sqlite')}" in db_text
    assert f"runtime id: {name}" in db_text
    # The --wait cell's saved output is its turn, as markdown; no widget is left to
    # be "not found" by a reader without a kernel.
    [turn] = [o for o in cells[2] if o["output_type"] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" not in turn["data"]
    assert f"Hello from {name}" in turn["data"]["text/markdown"]
    assert f"You said: Hello from {name}" in turn["data"]["text/markdown"]
    # and the cell's result is the reply itself
    [result] = [o for o in cells[2] if o["output_type"] == "execute_result"]
    assert result["data"]["text/plain"] == f"You said: Hello from {name}"
    # A full view's cell keeps the whole conversation as markdown above the widget,
    # whose own output holds no second copy.
    fallback, widget = cells[5]
    assert fallback["data"]["text/markdown"].startswith("**writer**")
    assert f"You said: Hello from {name}" in fallback["data"]["text/markdown"]
    assert "application/vnd.jupyter.widget-view+json" in widget["data"]
    assert widget["data"]["text/markdown"] == ""


def _runner(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        missing(f"{name} is not installed (pip install -e '.[test]')")
    assert found is not None
    return found


def test_nbconvert_runs_two_notebooks_of_one_folder_twice_each(tmp_path):
    nbconvert = _runner("jupyter-nbconvert")
    for name in ("report_a", "report_b"):
        _notebook(tmp_path, name)
    for run in (1, 2):
        for name in ("report_a", "report_b"):
            _run([nbconvert, "--to", "notebook", "--execute", f"{name}.ipynb",
                  "--output", f"{name}-run{run}"], tmp_path)
            _check_run(tmp_path / f"{name}-run{run}.ipynb", name, 2 * run, tmp_path)
    assert sorted(p.name for p in (tmp_path / ".mentra").glob("*.sqlite")) == ["report_a.sqlite", "report_b.sqlite"]
    assert _runtime_ids(tmp_path / ".mentra" / "report_a.sqlite") == {"report_a"}
    assert not list(tmp_path.glob("*.mentra.sqlite*")) and not (tmp_path / "mentra.sqlite").exists()
    # nbconvert's HTML of an executed run shows the transcript.
    _run([nbconvert, "--to", "html", "--execute", "report_b.ipynb"], tmp_path)
    html = (tmp_path / "report_b.html").read_text()
    assert "You said: Hello from report_b" in html
    # ... and so does the full view's cell, as HTML from its markdown.
    fallback = html[html.index("<strong>writer</strong> · <code>test:default</code>"):]
    assert "You said: Hello from report_b" in fallback[:fallback.index("</div>")]


def test_papermill_runs_two_notebooks_of_one_folder_twice_each(tmp_path):
    papermill = _runner("papermill")
    for name in ("report_a", "report_b"):
        _notebook(tmp_path, name)
    (tmp_path / "out").mkdir()
    for run in (1, 2):
        for name in ("report_a", "report_b"):
            out = tmp_path / "out" / f"{name}-run{run}.ipynb"
            _run([papermill, f"{name}.ipynb", str(out.relative_to(tmp_path)), "--kernel", "python3"], tmp_path)
            _check_run(out, name, 2 * run, tmp_path)
    assert sorted(p.name for p in (tmp_path / ".mentra").glob("*.sqlite")) == ["report_a.sqlite", "report_b.sqlite"]


def _state_of(out: Path) -> str:
    """What `%mentra db` said in a run's saved notebook."""
    return _text(_outputs(out)[4])


def test_nbconvert_with_several_notebooks_in_one_command(tmp_path):
    """Each kernel nbconvert starts runs in its notebook's folder: notebooks of
    different folders are told apart; two of one folder cannot be, and say how to
    pin their state."""
    nbconvert = _runner("jupyter-nbconvert")
    for folder in ("east", "west", "shared"):
        (tmp_path / folder).mkdir()
    _notebook(tmp_path / "east", "report_a")
    _notebook(tmp_path / "west", "report_b")
    _run([nbconvert, "--to", "notebook", "--execute", "east/report_a.ipynb", "west/report_b.ipynb"], tmp_path)
    for folder, name in (("east", "report_a"), ("west", "report_b")):
        _check_run(tmp_path / folder / f"{name}.nbconvert.ipynb", name, 2, tmp_path / folder)

    _notebook(tmp_path / "shared", "report_a")
    _notebook(tmp_path / "shared", "report_b")
    _run([nbconvert, "--to", "notebook", "--execute", "shared/report_a.ipynb", "shared/report_b.ipynb"],
         tmp_path)
    for name in ("report_a", "report_b"):
        cells = _outputs(tmp_path / "shared" / f"{name}.nbconvert.ipynb")
        notice = _text(cells[1])
        assert "this kernel does not know its notebook's path" in notice
        assert "%mentra db NAME.sqlite" in notice and "JPY_SESSION_NAME=PATH" in notice
        assert f"state file: {tmp_path / 'shared' / '.mentra' / 'mentra.sqlite'}" in _text(cells[4])


DRIVER_NBCLIENT = """
import os, sys, nbformat
from nbclient import NotebookClient
for name in sys.argv[1:]:
    nb = nbformat.read(name + ".ipynb", as_version=4)
    # The driver names the notebook to the kernel, as a Jupyter server does.
    NotebookClient(nb, kernel_name="python3").execute(env={**os.environ, "JPY_SESSION_NAME": name + ".ipynb"})
    nbformat.write(nb, name + "-out.ipynb")
"""

DRIVER_PAPERMILL = """
import sys, papermill
inject = sys.argv[1] == "inject"
for name in sys.argv[2:]:
    papermill.execute_notebook(name + ".ipynb", name + "-out.ipynb", kernel_name="python3",
                               parameters={"PAPERMILL_INPUT_PATH": name + ".ipynb"} if inject else {},
                               progress_bar=False)
"""


def test_nbclient_and_papermill_driven_from_python_keep_each_notebooks_state_apart(tmp_path):
    """From Python, nbclient and papermill start the kernel from the driver's own
    process, whose command line names no notebook: the driver names it (nbclient:
    JPY_SESSION_NAME in the kernel's environment; papermill: the
    PAPERMILL_INPUT_PATH parameter), or the notice says how to."""
    for name in ("report_a", "report_b"):
        _notebook(tmp_path, name)
    for run in (1, 2):
        _run([sys.executable, "-c", DRIVER_NBCLIENT, "report_a", "report_b"], tmp_path)
        for name in ("report_a", "report_b"):
            _check_run(tmp_path / f"{name}-out.ipynb", name, 2 * run, tmp_path)
    for run in (3, 4):
        _run([sys.executable, "-c", DRIVER_PAPERMILL, "inject", "report_a", "report_b"], tmp_path)
        for name in ("report_a", "report_b"):
            _check_run(tmp_path / f"{name}-out.ipynb", name, 2 * run, tmp_path)
    assert sorted(p.name for p in (tmp_path / ".mentra").glob("*.sqlite")) == ["report_a.sqlite", "report_b.sqlite"]

    # Not named: one shared file, and a notice of where and how to pin it.
    _run([sys.executable, "-c", DRIVER_PAPERMILL, "plain", "report_a"], tmp_path)
    notice = _text(_outputs(tmp_path / "report_a-out.ipynb")[1])
    assert "this kernel does not know its notebook's path" in notice and "PAPERMILL_INPUT_PATH" in notice
    assert f"state file: {tmp_path / '.mentra' / 'mentra.sqlite'}" in _state_of(tmp_path / "report_a-out.ipynb")


def test_a_saved_notebooks_markdown_export_reads_as_clean_markdown(tmp_path):
    """Issue 36.6: `nbconvert --to markdown` kept each live view's `<div class=
    "mentra-fallback">` wrapper and its widget's "live view; saved as the markdown
    above" line. The export holds the transcripts as plain markdown, and nothing of
    the widgets."""
    nbconvert = _runner("jupyter-nbconvert")
    path = _notebook(tmp_path, "report")
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("lead = %mentra spawn lead --team --subagents\n"
                                              "%mentra team lead\n%mentra subagents lead"))
    nbformat.write(nb, path)
    _run([nbconvert, "--to", "notebook", "--execute", "report.ipynb", "--output", "saved"], tmp_path)
    _run([nbconvert, "--to", "markdown", "saved.ipynb"], tmp_path)
    markdown = (tmp_path / "saved.md").read_text()
    assert "**assistant**: You said: Hello from report" in markdown  # the turn, and the full view
    assert markdown.count("**writer** · `test:default` · finished") == 1
    assert "**team of lead**" in markdown and "**lead** · 0 subagents" in markdown
    assert "<div" not in markdown and "</div>" not in markdown and "mentra-fallback" not in markdown
    assert "live view" not in markdown and "View(" not in markdown
