"""The wheel a user installs works with no source checkout anywhere near it:
a real kernel on the installed package's venv, started in a folder outside the
source tree, loads the extension, streams a reply, and sends the browser an
AgentView whose front-end module comes from the installed package."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.installed_wheel import REPO

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _site_packages(python: Path) -> Path:
    printed = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True)
    return Path(printed.stdout.strip())


def test_the_installed_wheel_streams_a_reply_and_shows_its_agent_view(installed_wheel, kernels,
                                                                         tmp_path):
    site = _site_packages(installed_wheel)
    kernel = kernels(python=str(installed_wheel))
    assert REPO not in tmp_path.parents and REPO not in site.parents

    where = json.loads(kernel.run(
        "import json, mentra_nb, mentra_nb.notebook._assets as assets\n"
        "print(json.dumps([mentra_nb.__file__, str(assets.STATIC_DIR)]))"))
    assert all(Path(path).is_relative_to(site / "mentra_nb") for path in where), where

    kernel.run("%load_ext mentra_nb")
    opened: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []

    def collect(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "comm_open":
            opened.append(msg["content"]["data"]["state"])
        elif msg["msg_type"] == "display_data":
            shown.append(msg["content"]["data"])

    reply = kernel.client.execute_interactive("%mentra spawn writer", timeout=60,
                                              output_hook=collect)
    assert reply["content"]["status"] == "ok"
    # (The kernel's notebook bridge, never displayed, opens its comm with the first spawn.)
    views = [state for state in opened if state.get("_view_name") == "AnyView"
             and state.get("_anywidget_id") != "mentra_nb.notebook._cell_bridge.CellBridge"]
    assert len(views) == 1 and any(WIDGET_MIME in data for data in shown)
    module = (site / "mentra_nb" / "static" / "agent_view.js").read_text()
    assert "render" in module and views[0]["_esm"] == module
    assert views[0]["_css"] == (site / "mentra_nb" / "static" / "mentra.css").read_text()

    kernel.run(
        "import mentra_nb.notebook as nb\n"
        "from mentra_nb.runtime.events import TextDelta\n"
        "writer = nb.session().agent('writer')\n"
        "deltas = []\n"
        "nb.session().call(lambda: writer.on_event(\n"
        "    lambda e: deltas.append(e.text) if isinstance(e, TextDelta) else None))")
    kernel.run("%%mentra writer --wait\nHello from an installed wheel, word by word")
    streamed = json.loads(kernel.run("print(json.dumps([deltas, writer.history[-1].text]))"))
    deltas, reply_text = streamed
    assert len(deltas) > 1 and "".join(deltas) == reply_text
    assert "Hello from an installed wheel" in reply_text


def test_the_installed_wheel_enables_its_jupyter_server_extension(installed_wheel, tmp_path):
    """Issue 36.3: the server saves notebooks with our views in their saved form
    (mentra_nb/server_extension.py), so the wheel must enable it on install."""
    import os
    import re

    bin_dir = installed_wheel.parent  # (`jupyter server` is looked up on PATH)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_PREFER_ENV_PATH": "1",
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": ""}
    env.pop("VIRTUAL_ENV", None)
    listed = subprocess.run([str(installed_wheel), "-m", "jupyter", "server", "extension", "list"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    assert str(bin_dir.parent / "etc" / "jupyter") in text, text
    assert "mentra_nb.server_extension enabled" in text, text
    assert re.search(r"mentra_nb\.server_extension +OK", text), text
