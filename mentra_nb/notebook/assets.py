"""The widgets' front-end files (`js/` at the top of the project) as anywidget modules.

anywidget loads one ES module per widget from a string, where a relative
import cannot resolve; so a widget's `import ... from "./dom.js"` line is
replaced by that file's text here. The files stay plain modules that vitest
and `tsc --checkJs` read as they are.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["JS_DIR", "asset", "widget_module"]

JS_DIR = Path(__file__).resolve().parents[2] / "js"
_LOCAL_IMPORT = re.compile(r'^import \{[^}]*\} from "\./([a-z_]+\.js)";\n', re.M)


def asset(name: str) -> Path:
    path = JS_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"mentra-nb's front-end file {path} is missing; install mentra-nb from its source "
            "folder (pip install -e .) so the widgets can load js/"
        )
    return path


@cache
def widget_module(name: str) -> str:
    """The source of widget module `name` with its local imports inlined (once each)."""
    inlined: set[str] = set()

    def inline(match: re.Match[str]) -> str:
        dependency = match.group(1)
        if dependency in inlined:
            return ""
        inlined.add(dependency)
        return asset(dependency).read_text() + "\n"

    return _LOCAL_IMPORT.sub(inline, asset(name).read_text())
