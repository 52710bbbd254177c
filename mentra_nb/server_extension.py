"""A Jupyter server extension: notebooks are saved with our views in their
saved form, whoever saves them (issue 36.3).

The page saves a notebook without our widget outputs (js/saved_state.js
`withoutLiveViews`): a live view's markdown copy stands for it, so a notebook
reopened with a new kernel shows no "model not found". With real-time
collaboration (jupyter-collaboration) the server saves the shared document
itself, on its own after each change and at Ctrl+S, and the page's hook never
runs. So the server does the same before it writes any notebook: a pre-save
hook of the contents manager, registered by this extension. It knows our views
by their outputs' `text/plain` line (the server has no kernel to ask); the shared
document is left as it is, so every open page keeps its live views.

It also turns Nagle's algorithm off on the kernels' websockets (TCP_NODELAY).
jupyter_server leaves it on, and tornado's documentation warns what that costs:
a small message that follows another waits for the browser's delayed ACK, 40 ms
on Linux. The page↔kernel traffic of an agent is just that (a view's live text,
then a cell-tool request; a cell's reply after its outputs): measured in
JupyterLab, a `run_cell` round trip fell from 129 to 64 ms with it off
(tests/benchmarks/bench_cells.py). The connection class the server is configured
with is kept; a subclass of it sets the flag once the socket is open.

Enabled by the `jupyter_server_config.d/mentra_nb.json` the package installs (or
`jupyter server extension enable mentra_nb.server_extension`). Imports nothing
of Jupyter or the notebook layer: the server loads it in its own process.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["pre_save_hook", "without_live_views"]

VIEW_MIME = "application/vnd.jupyter.widget-view+json"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
TAG = "mentra"  # the metadata key keeping the widget output a markdown output stands for
# The `text/plain` line of a live view's widget output, under its markdown copy
# (mentra_nb/notebook/_widget.py `_display_with_fallback`), and of a turn view's:
# the same patterns as js/saved_state.js.
COPIED_LABEL = re.compile(r"^(AgentView|TeamView|SubagentPickerView|BatchView)\(.*\) · live view; ")
TURN_LABEL = re.compile(r"^AgentView\([^)]*, turn \d+")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _view_kind(output: dict[str, Any]) -> str:
    """"copied" (a full view, team or picker, whose markdown copy is just above
    it), "turn" (a turn view, whose own bundle holds its markdown) or ""."""
    data = output.get("data") or {}
    if VIEW_MIME not in data:
        return ""
    plain = _text(data.get("text/plain"))
    return "copied" if COPIED_LABEL.match(plain) else "turn" if TURN_LABEL.match(plain) else ""


def without_live_views(notebook: dict[str, Any]) -> bool:
    """Put `notebook` (nbformat JSON, changed in place) in its saved form: each
    widget output of a live view of ours left out and kept in the metadata of
    the markdown that stands for it, and our views' saved widget state dropped
    (other widgets' is kept). Returns whether anything changed."""
    changed = False
    for cell in notebook.get("cells") or []:
        outputs = cell.get("outputs")
        if not isinstance(outputs, list):
            continue
        kept: list[dict[str, Any]] = []
        for output in outputs:
            kind = _view_kind(output) if isinstance(output, dict) else ""
            above = kept[-1] if kept else None
            if kind == "copied" and above is not None and VIEW_MIME not in (above.get("data") or {}):
                above["metadata"] = {**(above.get("metadata") or {}), TAG: {"view": output}}
            elif kind == "turn":
                data = {mime: value for mime, value in output["data"].items() if mime != VIEW_MIME}
                kept.append({**output, "data": data,
                             "metadata": {**(output.get("metadata") or {}), TAG: {"view": output}}})
            else:
                kept.append(output)
                continue
            changed = True
        cell["outputs"] = kept
    return _drop_our_widget_state(notebook) or changed


def _drop_our_widget_state(notebook: dict[str, Any]) -> bool:
    """No saved widget state of our views (a file saved by an earlier version
    kept placeholders: js/saved_state.js `isOurs`)."""
    saved = ((notebook.get("metadata") or {}).get("widgets") or {}).get(STATE_MIME) or {}
    state = saved.get("state")
    if not isinstance(state, dict):
        return False
    ours = [id for id, model in state.items() if _is_ours(model)]
    for id in ours:
        del state[id]
    return bool(ours)


def _is_ours(model: Any) -> bool:
    state = model.get("state") if isinstance(model, dict) else None
    if not isinstance(state, dict) or model.get("model_module") != "anywidget":
        return False
    view = state.get("_mentra_view")
    return (isinstance(view, str) and view != "") or str(state.get("_esm", "")).startswith("// mentra-nb:")


def pre_save_hook(model: dict[str, Any], **_: Any) -> None:
    """The contents manager's pre-save hook: a notebook is written in its saved form."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        without_live_views(model["content"])


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "mentra_nb.server_extension"}]


def _without_nagle(connection_class: type) -> type:
    """`connection_class` (the server's kernel websocket connection) with TCP_NODELAY
    set on its websocket when it connects."""

    class WithoutNagle(connection_class):  # type: ignore[misc]
        def connect(self) -> Any:
            self.websocket_handler.set_nodelay(True)
            return super().connect()

    WithoutNagle.__name__ = WithoutNagle.__qualname__ = f"{connection_class.__name__}WithoutNagle"
    return WithoutNagle


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.contents_manager.register_pre_save_hook(pre_save_hook)
    settings = serverapp.web_app.settings
    connection_class = settings.get("kernel_websocket_connection_class")
    if isinstance(connection_class, type):  # the kernel websocket handler reads it per connection
        settings["kernel_websocket_connection_class"] = _without_nagle(connection_class)
