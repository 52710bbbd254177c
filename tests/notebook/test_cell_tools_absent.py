"""Issue 29.3: where no front end can edit cells, an agent is not offered the cell
tools and `%mentra spawn` says so in one line; everything else works.

Run for real: nbconvert and papermill execute a notebook (no page ever answers
the bridge), and a kernel driven by jupyter_client alone does the same. The
scripted model's recorded requests show which tools it was offered.
"""

from __future__ import annotations

import nbformat
import pytest

from tests.kernels import Kernel
from tests.notebook.test_headless_runs import _outputs, _run, _runner, _text

pytestmark = pytest.mark.process

CELL_TOOLS = {"read_notebook", "insert_cell", "edit_cell", "run_cell", "delete_cell"}

SETUP = """
%load_ext mentra_nb
import mentra_nb.notebook as nb
from mentra_nb.testing import ScriptedProvider, text_stream
provider = ScriptedProvider("scripted", [text_stream("Done.")])
nb.session().runtime.providers.register(provider)
"""
OFFERED = "print('offered:', sorted(t.name for t in provider.requests[0].tools))"


def _cells() -> list[str]:
    return [SETUP, "%mentra spawn writer --model scripted:m", "%%mentra writer --wait\nHello", OFFERED]


def _check(outputs: list[list[dict]]) -> None:
    notice = [line for line in _text(outputs[1]).splitlines() if "cell tools" in line]
    assert len(notice) == 1, _text(outputs[1])
    assert notice[0].startswith("mentra: 'writer' gets no cell tools here (")
    assert "Done." in _text(outputs[2])
    offered = _text(outputs[3])
    assert "offered:" in offered and "read_file" in offered
    assert not any(name in offered for name in CELL_TOOLS), offered


def _notebook(folder, name="cells.ipynb"):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in _cells()]
    nbformat.write(nb, folder / name)
    return name


def test_under_nbconvert_the_cell_tools_are_absent_and_spawn_says_so(tmp_path):
    name = _notebook(tmp_path)
    _run([_runner("jupyter-nbconvert"), "--to", "notebook", "--execute", name, "--output", "out"], tmp_path)
    _check(_outputs(tmp_path / "out.ipynb"))


def test_under_papermill_the_cell_tools_are_absent_and_spawn_says_so(tmp_path):
    name = _notebook(tmp_path)
    _run([_runner("papermill"), name, "out.ipynb", "--kernel", "python3"], tmp_path)
    _check(_outputs(tmp_path / "out.ipynb"))


def test_a_kernel_driven_by_jupyter_client_alone_offers_no_cell_tools(tmp_path):
    kernel = Kernel(tmp_path)
    try:
        outputs = []
        for source in _cells():
            text, errors, status = kernel.execute(source)
            assert status == "ok" and not errors, (source, errors)
            outputs.append([{"text": text}])
        _check(outputs)
        # Asked again, the kernel does not wait for a page a second time: no second notice wait.
        text, _errors, _status = kernel.execute("print(nb.session().cells_available(), "
                                                "nb.session().cell_bridge.unavailable() is not None)")
        assert text.strip() == "False True"
    finally:
        kernel.close()


def test_no_cells_is_silent_and_cells_with_no_cells_is_a_usage_error(tmp_path):
    kernel = Kernel(tmp_path)
    try:
        kernel.run(SETUP)
        text, _errors, _status = kernel.execute("%mentra spawn quiet --model scripted:m --no-cells")
        assert "cell tools" not in text
        text, errors, _status = kernel.execute("%mentra spawn both --model scripted:m --cells --no-cells")
        assert "--cells and --no-cells contradict each other" in text + str(errors)
    finally:
        kernel.close()

