"""view_figure's choices in a real IPython shell: open figures by number or label,
a variable holding a Figure, Axes or PIL image, a cell's value, and what it says
when nothing matches; and what models without images in tool results get."""

from __future__ import annotations

import base64
import io
import re

import matplotlib
import pytest
from PIL import Image

from mentra_nb import AgentConfig, Runtime
from mentra_nb.messages import ContentBlock
from mentra_nb.notebook._kernel_tools import kernel_tools
from mentra_nb.providers.anthropic import wire_messages as anthropic_messages
from mentra_nb.providers.gemini import wire_contents as gemini_contents
from mentra_nb.providers.openai import wire_input as openai_input
from mentra_nb.providers.openai_chat import wire_messages as chat_messages
from mentra_nb.runtime import ToolOutput, tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

matplotlib.use("agg")
import matplotlib.pyplot as plt


@pytest.fixture
def figures(ip):
    plt.close("all")
    yield ip
    plt.close("all")


async def _view(ip, figure=None):
    [view] = [t for t in kernel_tools(ip.user_ns, notebook_cells(ip)) if t.spec.name == "view_figure"]
    return await view.run(None, {} if figure is None else {"figure": figure})


def notebook_cells(ip):
    import mentra_nb.notebook as nb

    return nb.session(ip).cells


def _size(image) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(image.data))).size


async def test_no_argument_shows_every_open_figure_and_keeps_the_current_one(figures):
    first = plt.figure(figsize=(2, 1))
    plt.figure(figsize=(3, 2)).suptitle("second")
    plt.figure(first.number)
    out = await _view(figures)
    assert [_size(i) for i in out.images] == [(200, 100), (300, 200)]
    assert out.content == "matplotlib figure 1: 200x100 px; matplotlib figure 2: 'second', 300x200 px"
    assert plt.gcf() is first  # looking did not change which figure is current


async def test_a_number_a_label_or_a_variable_picks_one_figure(figures):
    plt.figure(figsize=(2, 2))
    fig, ax = plt.subplots(num="sales", figsize=(4, 2))
    ax.set_title("by month")
    figures.user_ns.update(fig=fig, ax=ax, photo=Image.new("RGB", (3000, 1500), "red"))
    assert _size((await _view(figures, "1")).images[0]) == (200, 200)
    by_label = await _view(figures, "sales")
    assert _size(by_label.images[0]) == (400, 200) and "'sales'" in by_label.content
    assert _size((await _view(figures, "ax")).images[0]) == (400, 200)
    # A big PIL image is scaled to 1568 px on its long side.
    photo = await _view(figures, "photo")
    assert _size(photo.images[0]) == (1568, 784) and photo.content == (
        "'photo': PIL image 3000x1500 px, scaled down to 1568x784 px")


async def test_looking_never_makes_a_figure_current(figures, monkeypatch):
    # view_figure runs on the runtime's thread while a cell may be drawing: pyplot's
    # figure() would redirect that cell's plt calls (or open a figure just closed).
    plt.figure(figsize=(2, 1))
    plt.figure(num="sales", figsize=(3, 1))

    def refused(*args, **kwargs):
        raise AssertionError("view_figure called plt.figure()")

    monkeypatch.setattr(plt, "figure", refused)
    assert len((await _view(figures)).images) == 2
    assert _size((await _view(figures, "1")).images[0]) == (200, 100)
    assert _size((await _view(figures, "sales")).images[0]) == (300, 100)
    assert "no open matplotlib figure 7" in (await _view(figures, "7")).content


async def test_a_cells_value_that_is_a_figure_is_shown(figures):
    figures.run_cell("import matplotlib.pyplot as plt\nplt.figure(figsize=(1, 1))", store_history=True)
    count = figures.execution_count - 1
    plt.close("all")
    out = await _view(figures, f"Out[{count}]")
    assert isinstance(out, ToolOutput) and not out.is_error and _size(out.images[0]) == (100, 100)


async def test_nothing_matching_is_an_error_naming_what_there_is(figures):
    plt.figure(num="kept")
    figures.user_ns["n"] = 3
    missing = await _view(figures, "7")
    assert missing.is_error and "there is no open matplotlib figure 7; open figures: 1 (labels: kept)" in missing.content
    wrong_type = await _view(figures, "n")
    assert wrong_type.is_error and "'n' is a int, not a matplotlib Figure or Axes or a PIL image" in wrong_type.content
    plt.close("all")
    nothing = await _view(figures)
    assert nothing.is_error and "there is no figure to show" in nothing.content
    figures.run_cell("x = 1", store_history=True)
    cell = await _view(figures, f"cell {figures.execution_count - 1}")
    assert cell.is_error and "displayed no image; cells that did: none yet" in cell.content


# --- images in tool results, provider by provider ------------------------------------------

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
RESULT = ContentBlock.tool_result("call_1", "a plot", images=[ContentBlock.image("image/png", PNG)])
CALL = ContentBlock.tool_use("call_1", "view_figure", {})


def _transcript(result):
    from mentra_nb.messages import Message

    return [Message.user("look"), Message.assistant(CALL), Message.user(result)]


def test_each_api_gets_the_image_inside_the_result_and_a_plain_result_as_before():
    assert anthropic_messages(_transcript(RESULT))[2]["content"][0]["content"] == [
        {"type": "text", "text": "a plot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]
    assert [i for i in openai_input(_transcript(RESULT)) if i.get("type") == "function_call_output"] == [
        {"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "a plot"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}]}]
    assert gemini_contents(_transcript(RESULT))[2]["parts"][0]["functionResponse"] == {
        "name": "view_figure", "id": "call_1", "response": {"result": "a plot"},
        "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG, "displayName": "image-1"}}]}
    plain = ContentBlock.tool_result("call_1", "text only")
    assert anthropic_messages(_transcript(plain))[2]["content"][0]["content"] == "text only"
    assert openai_input(_transcript(plain))[-1]["output"] == "text only"
    assert "parts" not in gemini_contents(_transcript(plain))[2]["parts"][0]["functionResponse"]
    assert chat_messages(_transcript(plain), None)[-1] == {"role": "tool", "tool_call_id": "call_1",
                                                           "content": "text only"}
    # Chat Completions' tool messages are text: the images follow in a user message.
    assert chat_messages(_transcript(RESULT), None)[-2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "a plot"},
        {"role": "user", "content": [
            {"type": "text", "text": "The images tool call call_1 returned:"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}]


def test_a_result_stored_before_images_existed_loads_and_stores_as_it_was():
    from mentra_nb.messages import Message

    old = '{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"4","is_error":false}]}'
    message = Message.model_validate_json(old)
    assert message.tool_results[0].images == [] and message.model_dump_json() == old


@tool(read_only=True)
def snapshot() -> ToolOutput:
    """Show a picture."""
    return ToolOutput(content="a red dot", images=[ContentBlock.image("image/png", PNG)])


async def test_a_model_whose_api_takes_no_images_in_results_gets_an_error_result_saying_so():
    provider = ScriptedProvider("chat", [tool_use_stream("c1", "snapshot", "{}"), text_stream("ok")])
    provider.tool_result_images = False  # as the local provider and llama.cpp's server
    rt = Runtime.empty(providers=[provider], tools=[snapshot])
    try:
        agent = rt.spawn("a", "chat:m", AgentConfig())
        await agent.send("look")
        [result] = agent.history[2].tool_results
        assert result.is_error and not result.images
        assert result.content == ("a red dot\n[this tool returned 1 image, but chat:m cannot take images in "
                                  "tool results, so the model was not shown them; use a vision model through "
                                  "a provider that takes them (anthropic, openai, gemini, openai-chat, "
                                  "openrouter, ollama)]")
    finally:
        await rt.aclose()


# --- the pixel cap on every path (issue 33) ------------------------------------------------


async def test_a_tight_bounding_box_is_measured_and_drawn_within_the_cap(figures, monkeypatch):
    monkeypatch.setitem(plt.rcParams, "savefig.bbox", "tight")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([1, 2, 3])
    # A label far to the right: the tight box grows to ~30 inches wide (3000 px at the figure's dpi).
    ax.text(5.0, 0.5, "a note far out", transform=ax.transAxes)
    out = await _view(figures)
    width, height = _size(out.images[0])
    assert max(width, height) <= 1568 and width > 2 * height  # the whole wide area, scaled
    assert out.content == f"matplotlib figure 1: {width}x{height} px"  # the size it really is


async def test_an_artist_far_outside_the_axes_shows_the_figures_own_area(figures, monkeypatch):
    monkeypatch.setitem(plt.rcParams, "savefig.bbox", "tight")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([1, 2, 3])
    ax.text(1e4, 1e4, "far away")  # data coordinates: a tight box of ~20,000 inches
    out = await _view(figures)
    assert not out.is_error and _size(out.images[0]) == (600, 400)
    assert out.content.startswith("matplotlib figure 1: 600x400 px (its tight bounding box is ")
    assert "an artist far outside the axes; the figure's own area is shown)" in out.content


async def test_a_huge_figure_is_drawn_within_the_cap_or_refused_saying_why(figures):
    fig = plt.figure(figsize=(40, 30))  # 4000x3000 px at its dpi
    fig.add_subplot().plot([1, 2])
    out = await _view(figures, "1")
    assert _size(out.images[0]) == (1568, 1176) and out.content == "matplotlib figure 1: 1568x1176 px"
    # At 1568 px for 400 inches its labels would be under a pixel: FreeType refuses them.
    plt.figure(figsize=(400, 100)).add_subplot().plot([1, 2])
    refused = await _view(figures, "2")
    assert refused.is_error and refused.content.startswith(
        "the figure (400x100 in) cannot be drawn within 1568 px (RuntimeError: ")
    assert refused.content.endswith("make it smaller (fig.set_size_inches(...))")
    both = await _view(figures)  # the one that can be drawn is shown, the other named
    assert len(both.images) == 1 and both.content.startswith(
        "matplotlib figure 1: 1568x1176 px; matplotlib figure 2: left out: the figure (400x100 in)")


def _blank_png(width: int, height: int) -> bytes:
    """A black 1-bit PNG of any size, built row by row: 20000x20000 is a few KB."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer = zlib.compressobj(6)
    row = b"\x00" + bytes((width + 7) // 8)
    body = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0))
            + chunk(b"IDAT", body) + chunk(b"IEND", b""))


def test_displayed_pngs_above_the_cap_are_scaled_down_or_left_out_saying_their_size():
    from mentra_nb.notebook._figures import _cell_images

    huge = _blank_png(20000, 20000)
    assert len(huge) < 200_000  # small enough that the 5 MB check alone let it through
    buffer = io.BytesIO()
    Image.new("RGB", (4000, 3000), "red").save(buffer, format="PNG")
    small = io.BytesIO()
    Image.new("RGB", (640, 480), "blue").save(small, format="PNG")
    blocks = [ContentBlock.image("image/png", base64.b64encode(data).decode())
              for data in (huge, buffer.getvalue(), small.getvalue())]
    shown = _cell_images(blocks, "In[3]")
    assert [_size(i) for i in shown.images] == [(1568, 1176), (640, 480)]
    assert shown.images[1].data == blocks[2].data  # within the caps: sent as it was
    assert shown.description == (
        "3 images displayed by cell In[3]: left out: 20000x20000 px is too large to scale down safely; "
        "scaled down from 4000x3000 px to 1568x1176 px PNG; 640x480 px")
    from mentra_nb.notebook._figures import FigureNotFound

    with pytest.raises(FigureNotFound, match=re.escape("nothing to show: 1 image displayed by cell In[4]: left out: 20000x20000")):
        _cell_images(blocks[:1], "In[4]")
