"""Where the widgets' front-end files are: `js/` at the top of the project."""

from __future__ import annotations

from pathlib import Path

__all__ = ["JS_DIR", "asset"]

JS_DIR = Path(__file__).resolve().parents[2] / "js"


def asset(name: str) -> Path:
    path = JS_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"mentra-nb's front-end file {path} is missing; install mentra-nb from its source "
            "folder (pip install -e .) so the widgets can load js/"
        )
    return path
