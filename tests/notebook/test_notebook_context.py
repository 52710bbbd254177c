"""The notebook as the agents' context, in real kernels: {In[n]}/{Out[n]}/{Err[n]},
%mentra explain, -f code (IPython's set_next_input payload), the notebook_cells
and view_figure tools, and a real matplotlib figure reaching each provider's
wire format as an image inside the tool result (or the prompt, with --figure)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from tests.kernels import Kernel
from tests.providers.conftest import Stream, WireServer, wire

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    k = Kernel(tmp_path)
    try:
        k.run("%load_ext mentra_nb")
        yield k
    finally:
        k.close()


def execute(kernel: Kernel, code: str, timeout: float = 60) -> tuple[str, dict[str, Any]]:
    """Run `code`: its text output and the execute_reply's content (payload included)."""
    chunks: list[str] = []

    def collect(msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            chunks.append(content["text"])
        elif kind in ("execute_result", "display_data"):
            chunks.append(content["data"].get("text/plain", "") + "\n")
        elif kind == "error":
            chunks.append(f"{content['ename']}: {content['evalue']}\n")

    reply = kernel.client.execute_interactive(code, timeout=timeout, output_hook=collect)
    return "".join(chunks), reply["content"]


# --- {In[n]}, {Out[n]}, {Err[n]} ------------------------------------------------------


def test_in_out_and_err_fill_a_prompt_with_cells_sources_values_and_tracebacks(kernel):
    kernel.run("total = 40 + 2\ntotal")  # In[2], Out[2]
    _, reply = execute(kernel, "rows = [1, 2]\nrows[5]")  # In[3] fails
    assert reply["status"] == "error"
    kernel.run("%mentra spawn helper")
    answer = kernel.run("%%mentra helper --wait\nsource: {In[2]} value: {Out[2]} error: {Err[3]}")
    assert "source: total = 40 + 2\ntotal value: 42 error:" in answer
    # The traceback as IPython showed it (the cell and its line), without ANSI colours.
    assert "Cell In[3], line 2" in answer and "IndexError: list index out of range" in answer
    assert "\x1b[" not in answer
    # %mentra send interpolates too.
    assert "value 42" in kernel.run("%mentra send helper --wait value {Out[2]}")
    # Negative numbers count back from the cell running now: In[-1] is the cell above.
    execute(kernel, "{}['missing']")
    answer = kernel.run("%mentra send helper --wait above: {In[-1]} / {Err[-1]}")
    assert "above: {}['missing'] /" in answer and "KeyError: 'missing'" in answer


def test_a_runner_that_stores_no_history_still_finds_cells_counted_back(kernel):
    """nbval runs cells with store_history=False: no cell has a number, In[-1] still works."""
    def run(code):
        chunks = []
        reply = kernel.client.execute_interactive(
            code, store_history=False, timeout=60,
            output_hook=lambda m: chunks.append(m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
        return "".join(chunks), reply["content"]

    run("%mentra spawn helper")
    _, reply = run("values = [1]\nvalues[3]")
    assert reply["status"] == "error"
    text, reply = run("reply = %mentra send helper --wait {In[-1]} {Err[-1]}\nprint(reply.text)")
    assert reply["status"] == "ok" and "values[3]" in text and "IndexError: list index out of range" in text
    text, _ = run("%mentra explain helper --wait")
    assert "'helper' explains the IndexError" in text
    _, reply = run("%mentra send helper look at {In[2]}")  # only %load_ext has a number here
    assert reply["status"] == "error" and "there is no cell In[2] in this kernel" in reply["evalue"]


def test_a_cell_without_output_or_error_or_beyond_the_history_is_a_usage_error(kernel):
    kernel.run("x = 1")  # In[2]: no value, no error
    kernel.run("%mentra spawn helper")
    for field, message in (("{Out[2]}", "cell In[2] has no output (Out[2])"),
                           ("{Err[2]}", "cell In[2] raised no exception"),
                           ("{In[99]}", "there is no cell In[99] in this kernel; cells run so far: 1 to"),
                           ("{Err[last]}", "write a cell number")):
        text, reply = execute(kernel, f"%%mentra helper\nlook at {field}")
        assert reply["status"] == "error" and "UsageError" in text and message in text, text
    # --no-interpolate sends the braces as written.
    assert "{Out[2]}" in kernel.run("%%mentra helper --wait --no-interpolate\nliteral {Out[2]}")


# --- %mentra explain ----------------------------------------------------------------------


def test_explain_sends_the_last_traceback_and_its_cell_to_the_agent_used_last(kernel):
    kernel.run("%mentra spawn first")
    kernel.run("%mentra spawn second")
    kernel.run("%mentra send second --wait hello")
    execute(kernel, "def ratio(a, b):\n    return a / b\nratio(1, 0)")  # In[5]
    text = kernel.run("%mentra explain --wait")
    assert "mentra: 'second' explains the ZeroDivisionError of In [5]" in text
    assert "def ratio(a, b):" in text and "ZeroDivisionError: division by zero" in text
    # The answer is in second's transcript, not first's.
    assert kernel.run("print(len(__import__('mentra_nb').notebook.session().agent('first').history))"
                      ).strip() == "0"
    assert "ZeroDivisionError" in kernel.run(
        "print(__import__('mentra_nb').notebook.session().agent('second').history[-2].text)")
    # NAME picks another agent.
    assert "'first' explains the ZeroDivisionError" in kernel.run("%mentra explain first --wait")


def test_explain_without_an_error_says_what_to_do(kernel):
    kernel.run("%mentra spawn helper")
    text, reply = execute(kernel, "%mentra explain helper")
    assert reply["status"] == "error"
    assert "no cell has raised an exception since %load_ext mentra_nb" in text


# --- secrets a cell displayed (issue 33, 4) ----------------------------------------------


def test_a_key_a_cell_displayed_reaches_no_prompt_answer_or_state_file_by_any_route(tmp_path, kernel):
    """{In[n]}, {Out[n]}, {Err[n]}, %mentra explain and notebook_cells all carry the key only
    as [redacted]: in the cell's output, the transcript and the SQLite file and its WAL."""
    key = "k3y-" + "q7Zx" * 8  # not shaped like a provider key: only the known-secret rule masks it
    kernel.run(f"import os\nos.environ['MENTRA_DEMO_API_KEY'] = {key!r}")  # In[2]: the key in a source
    kernel.run("headers = {'x-api-key': os.environ['MENTRA_DEMO_API_KEY']}\nheaders")  # In[3]: and a value
    _, reply = execute(kernel, "raise PermissionError('rejected ' + os.environ['MENTRA_DEMO_API_KEY'])")
    assert reply["status"] == "error"  # In[4]: and a traceback
    kernel.run("%mentra spawn helper")
    kernel.run("%mentra spawn reader --tools notebook_cells")
    answers = [kernel.run("%mentra send helper --wait what does {Out[3]} mean"),
               kernel.run("%%mentra helper --wait\nwhy did {In[2]} lead to {Err[4]}"),
               kernel.run("%mentra explain helper --wait"),
               kernel.run("%mentra send reader --wait read the cells")]
    assert "what does {'x-api-key': '[redacted]'} mean" in answers[0]
    assert "PermissionError: rejected [redacted]" in answers[1] and "os.environ['MENTRA_DEMO_API_KEY'] = '[redacted]'" \
        in answers[1]
    assert "explains the PermissionError of In [4]" in answers[2] and "rejected [redacted]" in answers[2]
    assert "notebook_cells returned" in answers[3]
    for answer in answers:
        assert key not in answer
    history = kernel.run("print([m.text for m in __import__('mentra_nb').notebook.session().agent('helper').history])")
    assert history.count("[redacted]") >= 4 and key not in history
    files = sorted((tmp_path / ".mentra").glob("analysis.sqlite*"))
    assert files and all(key.encode() not in f.read_bytes() for f in files)


# --- -f code --------------------------------------------------------------------------


def test_format_code_puts_the_answers_first_code_block_in_the_next_cell(kernel):
    kernel.run("%mentra spawn coder")
    # The offline model answers "You said: <prompt>", so the prompt's blocks come back.
    prompt = "%%mentra coder -f code\nTwo blocks:\n```python\nimport math\nprint(math.pi)\n```\n```\nsecond\n```"
    text, reply = execute(kernel, prompt)
    assert reply["status"] == "ok"
    assert reply["payload"] == [{"source": "set_next_input", "text": "import math\nprint(math.pi)",
                                 "replace": False}]
    assert "You said: Two blocks:" in text  # the answer is shown too
    # --format code is the same option.
    _, reply = execute(kernel, "%%mentra coder --format code\nHere:\n~~~\nx = 1\n~~~")
    assert [p["text"] for p in reply["payload"]] == ["x = 1"]


def test_format_code_without_a_code_block_adds_no_cell_and_says_so(kernel):
    kernel.run("%mentra spawn coder")
    text, reply = execute(kernel, "%%mentra coder -f code\njust words")
    assert reply["status"] == "ok" and reply["payload"] == []
    assert "the answer has no code block, so no cell was added" in text
    text, reply = execute(kernel, "%%mentra coder -f json\nx")
    assert reply["status"] == "error" and "Input should be 'markdown' or 'code'" in text
    text, reply = execute(kernel, "%%mentra coder -f code --output Plan\nx")
    assert reply["status"] == "error" and "-f code puts a code block of the answer in the next cell" in text


# --- notebook_cells ------------------------------------------------------------------------


def test_notebook_cells_reads_sources_outputs_errors_images_and_the_files_markdown(tmp_path, kernel):
    kernel.run("import matplotlib.pyplot as plt\nvalues = [3, 1, 2]\nprint('loaded', len(values), 'values')")  # In[2]
    kernel.run("sorted(values)")  # In[3]
    execute(kernel, "values['x']")  # In[4]
    kernel.run("plt.plot(values); plt.title('values')")  # In[5], displays a PNG
    # The notebook file as saved: markdown before the code cells that ran as In[3] and In[5].
    (tmp_path / "analysis.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Sorting\n", "We sort the values."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 3, "outputs": [], "source": "sorted(values)"},
        {"cell_type": "markdown", "metadata": {}, "source": "A plot of them."},
        {"cell_type": "code", "metadata": {}, "execution_count": 5, "outputs": [], "source": "plt.plot(values)"},
    ]}))
    kernel.run("print('x' * 5000, end='')")  # In[6]: printed more than a cell's output may show
    kernel.run("%mentra spawn reader --tools notebook_cells")
    answer = kernel.run("%mentra send reader --wait what happened")
    assert "\nPrinted by In [2]:\nloaded 3 values\n" in answer
    assert f"Printed by In [6]:\n{'x' * 4000}\n… [cut: 1,000 more characters]" in answer
    assert "notebook_cells returned In [1]:\n%load_ext mentra_nb\n\nIn [2]:\nimport matplotlib.pyplot as plt" in answer
    assert "Markdown cell (from the notebook file, before In [3]):\n# Sorting\nWe sort the values." in answer
    assert "In [3]:\nsorted(values)\n\nOut[3]:\n[1, 2, 3]" in answer
    assert "Error in In [4]:" in answer and "TypeError: list indices must be integers or slices, not str" in answer
    assert "Markdown cell (from the notebook file, before In [5]):\nA plot of them." in answer
    assert "[In [5] displayed 1 image: view_figure with figure='cell 5' shows it]" in answer


# --- view_figure and --figure through each provider's wire format --------------------------


def _anthropic_tool_call() -> bytes:
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_01", "name": "view_figure", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def _openai_tool_call() -> bytes:
    item = {"id": "fc_01", "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": "call_01", "name": "view_figure"}
    events = [
        {"type": "response.created", "response": {"id": "resp_01", "status": "in_progress",
                                                  "model": "gpt-5", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_01", "output_index": 0, "delta": "{}"},
        {"type": "response.function_call_arguments.done", "item_id": "fc_01", "output_index": 0,
         "arguments": "{}"},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {**item, "status": "completed", "arguments": "{}"}},
        {"type": "response.completed", "response": {"id": "resp_01", "status": "completed", "model": "gpt-5",
                                                    "output": [], "usage": {"input_tokens": 10,
                                                                            "output_tokens": 5,
                                                                            "total_tokens": 15}}},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _gemini_tool_call() -> bytes:
    chunk = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "view_figure", "args": {}}}],
                                         "role": "model"}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
             "modelVersion": "gemini-3-pro-preview"}
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _chat_tool_call() -> bytes:
    base = {"id": "chatcmpl-01", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}
    chunks = [
        {**base, "choices": [{"index": 0, "finish_reason": None, "delta": {
            "role": "assistant", "content": None, "tool_calls": [{
                "index": 0, "id": "call_01", "type": "function",
                "function": {"name": "view_figure", "arguments": "{}"}}]}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def _png(data: str) -> bytes:
    raw = base64.b64decode(data)
    assert raw.startswith(PNG_MAGIC)
    return raw


def _anthropic_images(body: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
    """(images inside tool results, images in the prompt) of a Messages request."""
    in_results, in_prompt = [], []
    for message in body["messages"]:
        for block in message["content"]:
            if block["type"] == "tool_result" and isinstance(block["content"], list):
                in_results += [_png(b["source"]["data"]) for b in block["content"] if b["type"] == "image"]
            elif block["type"] == "image":
                in_prompt.append(_png(block["source"]["data"]))
    return in_results, in_prompt


def _openai_images(body: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
    in_results, in_prompt = [], []
    for item in body["input"]:
        if item.get("type") == "function_call_output" and isinstance(item["output"], list):
            in_results += [_png(p["image_url"].split(",", 1)[1]) for p in item["output"]
                           if p["type"] == "input_image"]
        elif item.get("role") == "user":
            in_prompt += [_png(p["image_url"].split(",", 1)[1]) for p in item["content"]
                          if p["type"] == "input_image"]
    return in_results, in_prompt


def _chat_images(body: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
    """A `tool` message takes text only: a tool's images are the user message right
    after the tool messages; any other user message's images are the prompt's."""
    in_results, in_prompt = [], []
    messages = body["messages"]
    for before, message in zip([None, *messages], messages, strict=False):
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        images = [_png(p["image_url"]["url"].split(",", 1)[1]) for p in message["content"]
                  if p["type"] == "image_url"]
        (in_results if before is not None and before["role"] == "tool" else in_prompt).extend(images)
    return in_results, in_prompt


def _gemini_images(body: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
    in_results, in_prompt = [], []
    for content in body["contents"]:
        for part in content["parts"]:
            if "functionResponse" in part:
                in_results += [_png(p["inlineData"]["data"]) for p in part["functionResponse"].get("parts", [])]
            elif "inlineData" in part:
                in_prompt.append(_png(part["inlineData"]["data"]))
    return in_results, in_prompt


PROVIDERS = {
    "anthropic": ("anthropic:claude-sonnet-4-5", {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": "{url}"},
                  _anthropic_tool_call, "anthropic_text.sse", _anthropic_images),
    "openai": ("openai:gpt-5", {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "{url}/v1"},
               _openai_tool_call, "openai_text.sse", _openai_images),
    "openai-chat": ("openai-chat:gpt-4o", {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "{url}/v1"},
                    _chat_tool_call, "chat_text.sse", _chat_images),
    "gemini": ("gemini:gemini-3-pro-preview", {"GEMINI_API_KEY": "test-key", "GEMINI_BASE_URL": "{url}"},
               _gemini_tool_call, "gemini_text.sse", _gemini_images),
}


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_a_real_matplotlib_figure_reaches_the_provider_inside_the_tool_result(name, tmp_path, monkeypatch):
    model, env, tool_call, final, images_of = PROVIDERS[name]
    server = WireServer()
    try:
        for var, value in env.items():
            monkeypatch.setenv(var, value.format(url=server.url))
        monkeypatch.setenv("MPLBACKEND", "agg")  # a figure stays open: view_figure renders it itself
        k = Kernel(tmp_path)
        try:
            k.run("%load_ext mentra_nb")
            k.run("import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 3))\n"
                  "ax.bar(['a', 'b'], [3, 5]); ax.set_title('counts')")
            k.run(f"%mentra spawn viewer --model {model} --tools view_figure")
            server.queue(Stream(tool_call()), Stream(wire(final)))
            k.run("%mentra send viewer --wait what does the plot show")
            result_images, _ = images_of(server.requests[1].json())
            [png] = result_images
            # 4x3 inches at the figure's 100 dpi: the figure as drawn, not a placeholder.
            assert png[16:24] == (400).to_bytes(4, "big") + (300).to_bytes(4, "big")
            stored = k.run("print(__import__('mentra_nb').notebook.session().agent('viewer')"
                           ".history[2].tool_results[0].content)")
            assert "matplotlib figure 1: 'counts', 400x300 px" in stored

            # --figure attaches the same figure to the prompt itself.
            server.queue(Stream(wire(final)))
            text = k.run("%%mentra viewer --figure --wait\nand now?")
            assert "mentra: attached matplotlib figure 1: 'counts', 400x300 px" in text
            _, prompt_images = images_of(server.requests[2].json())
            assert len(prompt_images) == 1 and prompt_images[0] == png
        finally:
            k.close()
    finally:
        server.close()


def test_view_figure_shows_the_plot_a_cell_displayed_under_the_inline_backend(kernel):
    # The inline backend closes a figure once shown: its displayed PNG is what is left.
    kernel.run("import matplotlib.pyplot as plt\nplt.plot([1, 4, 9]); plt.title('squares')")  # In[2]
    assert kernel.run("import matplotlib.pyplot as plt\nprint(plt.get_fignums())").strip() == "[]"
    kernel.run("%mentra spawn viewer --tools view_figure")
    answer = kernel.run("%mentra send viewer --wait look")
    assert re.search(r"view_figure returned 1 image displayed by cell In\[2\]: \d+x\d+ px \[image image/png,",
                     answer)
    text, reply = execute(kernel, "%%mentra viewer --figure\nwhat is it?")
    assert reply["status"] == "ok" and "mentra: attached 1 image displayed by cell In[2]" in text


def test_figure_without_any_figure_is_a_usage_error(kernel):
    kernel.run("%mentra spawn viewer")
    text, reply = execute(kernel, "%%mentra viewer --figure\nwhat is it?")
    assert reply["status"] == "error"
    assert "--figure: there is no figure to show: no matplotlib figure is open" in text


def test_the_widget_snapshot_of_a_tool_result_with_an_image_names_it(kernel):
    kernel.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])")
    kernel.run("%mentra spawn viewer --tools view_figure")
    kernel.run("%mentra send viewer --wait look")
    markdown = kernel.run("from mentra_nb.notebook._rendering import transcript_markdown\n"
                          "import mentra_nb.notebook as nb\n"
                          "print(transcript_markdown(nb.session().agent('viewer').history))")
    assert "tool result:" in markdown and "*\\[image image/png\\]*" in markdown


def test_view_figure_bounds_the_pngs_a_cell_displayed_and_says_their_sizes(kernel, tmp_path):
    from tests.notebook.test_figures import _blank_png

    (tmp_path / "huge.png").write_bytes(_blank_png(20000, 20000))  # a few KB, 400 million pixels
    (tmp_path / "big.png").write_bytes(_blank_png(4000, 3000))
    kernel.run("from IPython.display import Image, display\n"
               f"display(Image(filename={str(tmp_path / 'huge.png')!r}))\n"
               f"display(Image(filename={str(tmp_path / 'big.png')!r}))")  # In[2]
    kernel.run("%mentra spawn viewer --tools view_figure")
    answer = kernel.run("%mentra send viewer --wait look")
    assert ("view_figure returned 2 images displayed by cell In[2]: left out: 20000x20000 px is too large to "
            "scale down safely; scaled down from 4000x3000 px to 1568x1176 px PNG [image image/png,") in answer
    # What the model was given, and the state file holds: one image, scaled.
    sizes = kernel.run(
        "import base64, io\nimport mentra_nb.notebook as nb\nfrom PIL import Image as PILImage\n"
        "[result] = [r for m in nb.session().agent('viewer').history for r in m.tool_results]\n"
        "print([PILImage.open(io.BytesIO(base64.b64decode(i.data))).size for i in result.images])")
    assert sizes.strip() == "[(1568, 1176)]"
