"""A Voila server on 127.0.0.1 serving one notebook as an app, isolated from the
machine like `LabServer` (its own Jupyter config, data and runtime folders), and
stopped with every kernel it started, pass or fail."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.browser.lab_server import _free_port, stop_process_tree


class VoilaServer:
    """`voila NOTEBOOK` on a free port; `get()` renders a page as a visitor would."""

    def __init__(self, notebook: Path, state: Path, log_path: Path) -> None:
        self.notebook = notebook
        self.state = state
        self.log_path = log_path
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 60) -> None:
        folders = {name: self.state / name for name in ("config", "data", "runtime")}
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(folders["config"]),
               "JUPYTER_DATA_DIR": str(folders["data"]), "JUPYTER_RUNTIME_DIR": str(folders["runtime"]),
               "JUPYTER_PREFER_ENV_PATH": "1"}
        env.pop("JPY_SESSION_NAME", None)
        command = [sys.executable, "-m", "voila", self.notebook.name, "--no-browser",
                   "--Voila.ip=127.0.0.1", f"--Voila.port={self.port}", "--Voila.port_retries=0",
                   "--show_tracebacks=True"]
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(command, cwd=self.notebook.parent, env=env, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"voila exited with {self.process.returncode}:\n{self.log_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}voila/static/voila.js", timeout=5):
                    return
            except urllib.error.HTTPError:
                return  # it answers
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        raise RuntimeError(f"voila did not answer within {timeout} s; see {self.log_path}")

    def get(self, timeout: float = 120) -> str:
        """The page a visitor gets: Voila runs the whole notebook before the last byte."""
        with urllib.request.urlopen(self.url, timeout=timeout) as response:
            return response.read().decode()

    def stop(self) -> None:
        """Stop the server and kill every kernel it started. Safe to call twice."""
        if self.process is None:
            return
        stop_process_tree(self.process)
        self.process = None
        if self._log is not None:
            self._log.close()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""
