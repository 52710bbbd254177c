"""mentra-nb as a user gets it: built as a wheel from the checkout's files and
installed (not editable) with its `notebook` extra into a fresh venv outside the
source tree, where nothing of the checkout is importable."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["REPO", "install_wheel"]

REPO = Path(__file__).resolve().parents[1]


def _checkout_files() -> list[str]:
    """The files a clean clone would have, plus new ones not ignored (never build/ leftovers)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.splitlines() if (REPO / name).is_file()]


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def install_wheel(base: Path, extras: list[str]) -> Path:
    """Build the wheel under `base`, install it into `base/venv`; the venv's python."""
    source = base / "source"
    for name in _checkout_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    wheels = base / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels),
          str(source)], cwd=base)
    (wheel,) = wheels.glob("mentra_nb-*.whl")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=base)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", f"{wheel}[notebook]", *extras], cwd=base)
    return python
