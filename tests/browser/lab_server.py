"""A JupyterLab (or Jupyter Notebook 7) server on 127.0.0.1 for the browser tests,
isolated from the machine.

It serves a temporary copy of `notebooks/` with its own settings, workspace,
config, data and runtime folders, so nothing the developer configured (or a
previous run left) changes what the tests see, and it makes no request off
this machine: the news and update checks are switched off in its settings.
`stop()` shuts the kernels down through the REST API, stops the server and
kills whatever it left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import psutil

REPO = Path(__file__).resolve().parents[2]

# JupyterLab's own settings for a quiet, offline, deterministic UI.
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabServer:
    """`jupyter lab` (or, with `app="notebook"`, Notebook 7) serving `root`;
    `url(path)` opens a notebook with the token. `python` is the interpreter
    whose Jupyter (and kernel) serves: this venv's, or an installed wheel's.
    `collaborative`: real-time collaboration (jupyter-collaboration) on."""

    def __init__(self, root: Path, state: Path, log_path: Path, *,
                 app: Literal["jupyterlab", "notebook"] = "jupyterlab",
                 python: str = sys.executable, collaborative: bool = False) -> None:
        self.root = root
        self.collaborative = collaborative
        self.app = app
        self.python = python
        self.state = state
        self.log_path = log_path
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    # --- lifecycle ----------------------------------------------------------------

    def start(self, timeout: float = 60) -> None:
        settings = self.state / "settings"
        for plugin, values in LAB_SETTINGS.items():
            path = settings / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        folders = {name: self.state / name for name in ("workspaces", "config", "data", "runtime")}
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        # The server extension an installed mentra-nb enables (its config file lands in
        # the environment's etc/jupyter; an editable install does not put it there).
        extension = "jupyter_server_config.d/mentra_nb.json"
        (folders["config"] / extension).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / "jupyter-config" / extension, folders["config"] / extension)
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(folders["config"]),
            "JUPYTER_DATA_DIR": str(folders["data"]),
            "JUPYTER_RUNTIME_DIR": str(folders["runtime"]),
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(folders["workspaces"]),
            # Only the interpreter's own kernelspec (the venv's), never a user-wide one.
            "JUPYTER_PREFER_ENV_PATH": "1",
        }
        env.pop("JPY_SESSION_NAME", None)
        # Notebook 7 is a JupyterLab-based app: the same options, on its own class.
        app_class = "LabApp" if self.app == "jupyterlab" else "JupyterNotebookApp"
        command = [
            self.python, "-m", self.app,
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root}",
            f"--IdentityProvider.token={self.token}",
            "--ServerApp.open_browser=False",
            "--ServerApp.allow_root=True",  # CI runs as root
            "--ServerApp.terminals_enabled=False",
            f"--{app_class}.expose_app_in_browser=True",
            f"--{app_class}.user_settings_dir={settings}",
            f"--{app_class}.workspaces_dir={folders['workspaces']}",
            # Kernels must not outlive the test run, even if it is interrupted.
            "--MappingKernelManager.cull_idle_timeout=0",
        ]
        # jupyter-collaboration (the test extra) turns real-time collaboration on in
        # every server; only the RTC tests want it (tests/browser/test_collaboration.py).
        if not self.collaborative:
            command.append("--YDocExtension.disable_rtc=True")
        if self.app == "jupyterlab":
            command += [
                "--LabApp.extension_manager=readonly",  # the PyPI-backed one would search the registry
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ]
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(command, cwd=self.root, env=env, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.process.returncode}; "
                                   f"see {self.log_path}:\n{self.log_text()[-3000:]}")
            try:
                self.api("GET", "status")
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        raise RuntimeError(f"jupyter lab did not answer within {timeout} s; see {self.log_path}")

    def stop(self) -> None:
        """Shut kernels down, stop the server, kill anything left. Safe to call twice."""
        if self.process is None:
            return

        def shut_kernels_down() -> None:
            try:
                for kernel in self.api("GET", "kernels"):
                    self.api("DELETE", f"kernels/{kernel['id']}")
            except Exception:  # the server may be wedged; the kills below still run
                pass

        stop_process_tree(self.process, shut_kernels_down)
        self.process = None
        if self._log is not None:
            self._log.close()

    # --- REST ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """The notebook `path` open (in JupyterLab, in a fresh single-document workspace)."""
        if self.app == "notebook":
            return f"{self.base_url}/notebooks/{path}?token={self.token}"
        return f"{self.base_url}/lab/tree/{path}?reset&token={self.token}"

    def api(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.base_url}/api/{path}", data=data, method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def kernel_for(self, notebook: str) -> dict[str, Any]:
        """The kernel model of the session that runs `notebook`."""
        for session in self.api("GET", "sessions"):
            if session["path"] == notebook and session.get("kernel"):
                return session["kernel"]
        raise LookupError(f"no kernel runs {notebook}")

    def connection_file(self, kernel_id: str) -> Path:
        return self.state / "runtime" / f"kernel-{kernel_id}.json"

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def stop_process_tree(process: subprocess.Popen[bytes], first: Callable[[], None] | None = None) -> None:
    """Stop a server started with `start_new_session=True` and everything it started:
    `first` (a polite shutdown) while it still runs, SIGTERM, SIGKILL to its process
    group after 15 s, then a kill for each child it had (kernels) that is left."""
    leftovers: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        leftovers = psutil.Process(process.pid).children(recursive=True)
    if process.poll() is None:
        if first is not None:
            first()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    for proc in leftovers:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(leftovers, timeout=10)


def copy_notebooks(source: Path, target: Path) -> None:
    """The tutorials and their cassettes, without state files a local run left behind."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(
        "*.mentra.sqlite*", "mentra.sqlite*", ".mentra", ".ipynb_checkpoints", "__pycache__"))
