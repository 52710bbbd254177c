"""A real ipykernel through jupyter_client, started the way a Jupyter server
starts one: in a folder, with `JPY_SESSION_NAME` naming a notebook there, so
the state file is found beside the notebook."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

__all__ = ["Kernel"]


class Kernel:
    def __init__(self, folder: Path) -> None:
        env = {**os.environ, "JPY_SESSION_NAME": str(folder / "analysis.ipynb")}
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(folder), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def execute(self, code: str, timeout: float = 60) -> tuple[str, list[dict[str, Any]], str]:
        """Execute `code`: (its text output, the errors it raised, the reply's status)."""
        chunks: list[str] = []
        errors: list[dict[str, Any]] = []

        def collect(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                chunks.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                chunks.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                errors.append(content)

        reply = self.client.execute_interactive(code, timeout=timeout, output_hook=collect)
        return "".join(chunks), errors, reply["content"]["status"]

    def run(self, code: str, timeout: float = 60) -> str:
        """Execute `code`; return its text output, or raise with the kernel's error."""
        text, errors, status = self.execute(code, timeout)
        if status != "ok" or errors:
            raised = [f"{e['ename']}: {e['evalue']}" for e in errors]
            raise AssertionError(f"kernel error in {code!r}: {raised or status}")
        return text

    def kill_hard(self) -> None:
        os.kill(self.manager.provisioner.pid, signal.SIGKILL)
        self.manager.provisioner.process.wait(timeout=10)

    def close(self) -> None:
        self.client.stop_channels()
        if self.manager.is_alive():
            self.manager.shutdown_kernel(now=True)
        self.manager.cleanup_resources()
