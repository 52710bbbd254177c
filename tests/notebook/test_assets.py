"""The widgets' front end ships inside the package, built from js/ and never stale."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
from pathlib import Path

import pytest
from anywidget._file_contents import FileContents

from mentra_nb.notebook._assets import STATIC_DIR, static_file
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.notebook.subagent_picker import SubagentPickerView
from mentra_nb.notebook.team_view import TeamView
from tests.conftest import missing

JS_SOURCE = Path(__file__).resolve().parents[2] / "js"
WIDGET_MODULES = ["agent_view.js", "team_view.js", "subagent_picker.js"]


def _needs(tool: str | None, why: str) -> str:
    """The tool's path, or a skip (a failure under CI) if it is missing."""
    if tool is None:
        missing(f"{why} is missing")
    return tool


@pytest.mark.parametrize("name", WIDGET_MODULES)
def test_each_widget_module_is_one_self_contained_es_module(name, tmp_path):
    source = static_file(name).read_text()
    assert 'from "./' not in source
    # The shared helpers of dom.js, bundled once (names are minified; a string of theirs is not).
    assert source.count("jp-Button jp-mod-minimal jp-mod-small") == 1
    assert "as default" in source
    node = _needs(shutil.which("node"), "node")
    # Node parses it as a module: no unresolved import, no duplicate declaration.
    module = tmp_path / name.replace(".js", ".mjs")
    module.write_text(source)
    checked = subprocess.run([node, "--check", str(module)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize(
    ("widget", "module"),
    [(AgentView, "agent_view.js"), (TeamView, "team_view.js"),
     (SubagentPickerView, "subagent_picker.js")],
)
def test_widgets_load_their_front_end_from_files_inside_the_package(widget, module):
    # anywidget turns a path (not a string of code) into FileContents, which it
    # watches for hot reload under ANYWIDGET_HMR=1.
    assert isinstance(widget._esm, FileContents) and isinstance(widget._css, FileContents)
    assert str(widget._esm) == (STATIC_DIR / module).read_text()
    assert str(widget._css) == (STATIC_DIR / "mentra.css").read_text()


def test_a_missing_front_end_file_says_how_to_fix_the_installation():
    with pytest.raises(FileNotFoundError, match="npm run build"):
        static_file("no_such_widget.js")


def test_the_shipped_bundles_are_what_npm_run_build_makes_from_js_now(tmp_path):
    """A stale copy of the front end fails here (and CI), not in a user's browser."""
    _needs(shutil.which("npm"), "npm")
    _needs(
        str(JS_SOURCE / "node_modules") if (JS_SOURCE / "node_modules").is_dir() else None,
        "js/node_modules (run `npm ci` in js/)",
    )
    built = subprocess.run(
        ["npm", "run", "build", "--silent", "--", f"--outdir={tmp_path}"],
        cwd=JS_SOURCE, capture_output=True, text=True,
    )
    assert built.returncode == 0, built.stderr
    fresh = sorted(p.name for p in tmp_path.iterdir())
    shipped = sorted(p.name for p in STATIC_DIR.iterdir() if p.suffix in {".js", ".css"})
    assert fresh == shipped
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, STATIC_DIR, fresh, shallow=False)
    assert not mismatch and not errors, (
        f"mentra_nb/static/ is stale for {mismatch + errors}: run `npm run build` in js/ and commit"
    )
