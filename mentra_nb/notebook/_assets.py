"""Where the widgets' front end lives in the installed package.

`js/` at the top of the project is the front end's source; `npm run build`
(esbuild) bundles each widget with its shared helpers into one ES module in
`mentra_nb/static/`, which the wheel ships as package data. The widgets point
`_esm`/`_css` at these files as paths, not strings, so a plain `pip install`
needs no Node, and with `ANYWIDGET_HMR=1` anywidget reloads them in the browser
whenever `npm run dev` rebuilds (an editable install only: anywidget never
watches files inside site-packages).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["STATIC_DIR", "static_file"]

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"


def static_file(name: str) -> Path:
    """The path of a built front-end file, or a clear error if the package lacks it."""
    path = STATIC_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"mentra-nb's front-end file {path} is missing: this installation is incomplete. "
            "Reinstall mentra-nb; from a source checkout, run `npm run build` in js/ first."
        )
    return path
