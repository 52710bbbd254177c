"""Widget modules are single ES modules: local imports are inlined for anywidget."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mentra_nb.notebook.assets import JS_DIR, widget_module


@pytest.mark.parametrize("name", ["agent_view.js", "team_view.js", "subagent_picker.js"])
def test_each_widget_module_is_self_contained(name, tmp_path):
    source = widget_module(name)
    assert 'from "./' not in source
    assert source.count("export function element(") == 1
    assert "export default { render }" in source
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    # Node parses it as a module: no unresolved import, no duplicate declaration.
    module = tmp_path / name.replace(".js", ".mjs")
    module.write_text(source)
    checked = subprocess.run([node, "--check", str(module)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_the_js_folder_holds_the_shared_helpers():
    assert (JS_DIR / "dom.js").is_file()
