"""Images from MCP servers are bounded as `view_figure`'s are (at most 4 a result,
1568 px on the long side, 5 MB of base64 each), and the result says what was done:
one server's result of eight 6.7 MB images once went whole into the state file
(53 MB) and into every later request. An in-process server written with the
official SDK returns real PNGs; `mentra_nb.runtime.images` reads real PNG, JPEG,
GIF and WebP headers."""

from __future__ import annotations

import base64
import io
import os
import re
import struct
import sys
import zlib

import pytest
from mcp.server.mcpserver import Image as SdkImage
from mcp.server.mcpserver import MCPServer as SdkServer
from mcp_types import ToolAnnotations
from PIL import Image

from mentra_nb import AgentConfig, MCPServer, Runtime
from mentra_nb.runtime.images import MAX_IMAGE_BASE64, MAX_IMAGES, MAX_SIDE, bound_image, image_size
from mentra_nb.store import SqliteStore
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def noise_png(width: int, height: int) -> bytes:
    """A PNG that does not compress: about width x height x 3 bytes."""
    return png(Image.frombytes("RGB", (width, height), os.urandom(width * height * 3)))


def gradient_png(width: int, height: int) -> bytes:
    """A large but small-in-bytes PNG."""
    return png(Image.linear_gradient("L").resize((width, height)))


def bomb_png(side: int) -> bytes:
    """A 1-bit PNG of side x side pixels, all black: a few tens of KB that decode to
    side² pixels (never decoded here, as it must not be by the code under test)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" * (1 + (side + 7) // 8)
    pixels = zlib.compressobj(9)
    idat = b"".join(pixels.compress(row) for _ in range(side)) + pixels.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0))
            + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def album_server() -> SdkServer:
    server = SdkServer("album")
    photo = noise_png(1500, 1200)  # about 7 MB of base64, like the images that flooded the state file
    assert len(base64.b64encode(photo)) > MAX_IMAGE_BASE64

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def photos() -> list[SdkImage]:
        """Eight large photographs."""
        return [SdkImage(data=photo, format="png") for _ in range(8)]

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def posters() -> list[SdkImage]:
        """A 4000x3000 poster and a 20000x20000 one."""
        return [SdkImage(data=gradient_png(4000, 3000), format="png"),
                SdkImage(data=bomb_png(20_000), format="png")]

    return server


def pixels(data: str) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(data))).size


async def run_tool(tmp_path, tool: str):
    provider = ScriptedProvider("s", [tool_use_stream("c1", f"mcp__album__{tool}", "{}"), text_stream("seen")])
    db = tmp_path / "state.sqlite"
    rt = Runtime.empty(store=SqliteStore(db), providers=[provider],
                       mcp_servers=[MCPServer.in_process("album", album_server())])
    try:
        agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["album"]))
        await agent.send("look")
        [result] = agent.history[-2].tool_results
        [sent] = provider.recorded_requests()[1].messages[-1].tool_results
    finally:
        await rt.aclose()
    return result, sent, db


async def test_eight_huge_images_become_four_within_the_limits_and_the_result_says_so(tmp_path):
    result, sent, db = await run_tool(tmp_path, "photos")
    assert len(result.images) == MAX_IMAGES
    for image in result.images:
        assert len(image.data) <= MAX_IMAGE_BASE64 and max(pixels(image.data)) <= MAX_SIDE
    print(f"\n{len(result.images)} images kept, {sum(len(i.data) for i in result.images)} bytes of base64; "
          f"state file {db.stat().st_size} bytes")
    assert len(re.findall(r"re-encoded as JPEG: \d+\.\d MB of base64 was over the 5\.0 MB limit, now "
                          r"\d+\.\d MB, shown to you", result.content)) == MAX_IMAGES
    assert result.content.count("left out: more than 4 images") == 8 - MAX_IMAGES
    assert [i.data for i in sent.images] == [i.data for i in result.images]  # the next request carries the same
    # The state file holds the bounded images, not eight of 7 MB each.
    assert db.stat().st_size < MAX_IMAGES * MAX_IMAGE_BASE64 + 1_000_000


async def test_an_image_over_the_pixel_limit_is_scaled_down_and_a_pixel_bomb_left_out(tmp_path):
    result, _sent, _db = await run_tool(tmp_path, "posters")
    [poster] = result.images
    assert pixels(poster.data) == (MAX_SIDE, MAX_SIDE * 3 // 4)
    assert f"scaled down from 4000x3000 px to {MAX_SIDE}x{MAX_SIDE * 3 // 4} px PNG" in result.content
    assert "left out: 20000x20000 px is too large to scale down safely" in result.content


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
@pytest.mark.parametrize("size", [(1, 1), (640, 480), (3000, 17)])
def test_the_size_is_read_from_the_header_of_each_format_vision_models_take(fmt, size):
    buffer = io.BytesIO()
    Image.new("RGB", size, "white").save(buffer, format=fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    assert image_size(buffer.getvalue()) == size
    if fmt == "WEBP":  # the lossy and extended (VP8X, with alpha) forms too
        for mode, options in (("RGB", {"quality": 50}), ("RGBA", {"quality": 50})):
            lossy = io.BytesIO()
            Image.new(mode, size, "white").save(lossy, format="WEBP", **options)
            assert image_size(lossy.getvalue()) == size


def test_an_image_within_the_limits_is_kept_as_it_came():
    data = base64.b64encode(gradient_png(800, 600)).decode()
    bounded = bound_image("image/png", data)
    assert bounded.image is not None and bounded.image.data == data and bounded.note == ""


def test_without_pillow_an_image_over_the_limits_is_left_out_saying_why(monkeypatch):
    data = base64.b64encode(gradient_png(4000, 3000)).decode()
    monkeypatch.setitem(sys.modules, "PIL", None)  # as if Pillow were not installed
    bounded = bound_image("image/png", data)
    assert bounded.image is None
    assert bounded.note == ("left out: 4000x3000 px, over the limits (1568 px on the long side, 5.0 MB), "
                            "and Pillow is not installed to scale it down (pip install pillow)")


def test_data_that_is_not_base64_is_left_out():
    bounded = bound_image("image/png", "not base64 at all!")
    assert bounded.image is None and bounded.note == "left out: its data is not valid base64"
