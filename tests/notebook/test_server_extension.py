"""The server extension's pre-save hook (issue 36.3): whoever saves a notebook
(real-time collaboration's server autosave included), our views' widget outputs
are left out of the file and their markdown stands for them."""

from __future__ import annotations

import copy

from mentra_nb.server_extension import STATE_MIME, VIEW_MIME, pre_save_hook

COPY = {"output_type": "display_data", "metadata": {},
        "data": {"text/plain": "**writer** · idle", "text/markdown": "**writer** · idle"}}
FULL_VIEW = {"output_type": "display_data", "metadata": {}, "data": {
    VIEW_MIME: {"model_id": "m1", "version_major": 2, "version_minor": 1}, "text/markdown": "",
    "text/plain": "AgentView(writer) · live view; saved as the markdown above"}}
TURN_VIEW = {"output_type": "display_data", "metadata": {}, "data": {
    VIEW_MIME: {"model_id": "m2", "version_major": 2, "version_minor": 1},
    "text/markdown": "**writer** · turn 1 · *running…*", "text/plain": "AgentView(writer, turn 1, running)"}}
SLIDER = {"output_type": "display_data", "metadata": {}, "data": {
    VIEW_MIME: {"model_id": "s1", "version_major": 2, "version_minor": 1}, "text/plain": "IntSlider(value=3)"}}


def _saved(cells: list[list[dict]], widgets: dict | None = None) -> dict:
    notebook = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": copy.deepcopy(o)}
                          for o in cells], "metadata": {"widgets": widgets} if widgets else {}}
    model = {"type": "notebook", "content": notebook}
    pre_save_hook(model=model, path="a.ipynb", contents_manager=None)
    return model["content"]


def test_a_full_view_is_saved_as_its_markdown_copy_keeping_the_widget_output_in_its_metadata():
    [cell] = _saved([[COPY, FULL_VIEW]])["cells"]
    assert [o["data"] for o in cell["outputs"]] == [COPY["data"]]
    assert cell["outputs"][0]["metadata"]["mentra"]["view"] == FULL_VIEW


def test_a_batch_view_is_saved_as_its_markdown_copy():
    progress = {"output_type": "display_data", "metadata": {}, "data": {
        "text/plain": "**Batch job `reviews`**", "text/markdown": "**Batch job `reviews`**"}}
    view = {"output_type": "display_data", "metadata": {}, "data": {
        VIEW_MIME: {"model_id": "b1", "version_major": 2, "version_minor": 1}, "text/markdown": "",
        "text/plain": "BatchView(reviews) · live view; saved as the markdown above"}}
    [cell] = _saved([[progress, view]])["cells"]
    assert [o["data"] for o in cell["outputs"]] == [progress["data"]]
    assert cell["outputs"][0]["metadata"]["mentra"]["view"] == view


def test_a_running_turn_keeps_its_markdown_and_loses_its_widget():
    [cell] = _saved([[TURN_VIEW]])["cells"]
    [output] = cell["outputs"]
    assert VIEW_MIME not in output["data"]
    assert output["data"]["text/markdown"] == TURN_VIEW["data"]["text/markdown"]
    assert output["metadata"]["mentra"]["view"] == TURN_VIEW


def test_other_widgets_and_their_state_are_kept_and_ours_dropped():
    placeholder = {"model_module": "anywidget", "state": {"_esm": "// mentra-nb: this view was live"}}
    live = {"model_module": "anywidget", "state": {"_mentra_view": "agent"}}
    slider = {"model_module": "@jupyter-widgets/controls", "state": {"value": 3}}
    saved = _saved([[SLIDER]], {STATE_MIME: {"state": {"p": placeholder, "l": live, "s": slider}}})
    assert saved["cells"][0]["outputs"] == [SLIDER]
    assert saved["metadata"]["widgets"][STATE_MIME]["state"] == {"s": slider}


def test_saving_twice_changes_nothing_more_and_other_files_are_left_alone():
    once = _saved([[COPY, FULL_VIEW], [TURN_VIEW]])
    model = {"type": "notebook", "content": copy.deepcopy(once)}
    pre_save_hook(model=model, path="a.ipynb")
    assert model["content"] == once
    text = {"type": "file", "content": "AgentView(writer) · live view; "}
    pre_save_hook(model=text, path="a.txt")
    assert text["content"] == "AgentView(writer) · live view; "
