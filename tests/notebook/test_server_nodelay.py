"""The server extension turns Nagle's algorithm off on kernel websockets: a real
JupyterLab server (with this repository's extension config, as an installed
wheel has it), a real websocket to a real kernel, and the flag read back from
the server's own socket by a probe extension (tests/notebook/nodelay_probe.py)."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tornado.websocket import websocket_connect

from tests.browser.lab_server import REPO, LabServer
from tests.conftest import wait_until


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LabServer]:
    root = tmp_path / "root"
    root.mkdir()
    probe = tmp_path / "state" / "config" / "jupyter_server_config.d" / "nodelay_probe.json"
    probe.parent.mkdir(parents=True)
    probe.write_text(json.dumps({"ServerApp": {"jpserver_extensions": {"tests.notebook.nodelay_probe": True}}}))
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the server imports the probe from tests/
    lab = LabServer(root, tmp_path / "state", tmp_path / "lab.log")
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


def _flags(lab: LabServer) -> list[int]:
    request = urllib.request.Request(f"{lab.base_url}/mentra-test/nodelay",
                                     headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return list(json.loads(response.read()))


def test_a_kernel_websocket_has_nagles_algorithm_off(server: LabServer) -> None:
    kernel = server.api("POST", "kernels", {"name": "python3"})
    url = f"{server.base_url.replace('http', 'ws', 1)}/api/kernels/{kernel['id']}/channels?token={server.token}"

    async def connected_flags() -> list[int]:
        websocket = await websocket_connect(url)
        seen: list[int] = []

        def connected() -> bool:  # the server adds the connection once the kernel answers
            seen[:] = _flags(server)
            return bool(seen)

        try:
            await wait_until(connected)
            return seen
        finally:
            websocket.close()

    assert asyncio.run(connected_flags()) == [1]
