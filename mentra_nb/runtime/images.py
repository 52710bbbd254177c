"""Images bounded for a model's context and the state file.

An image from a tool goes into the transcript (so into the state file) and into
every later request of the conversation: one server's result of eight 6.7 MB
images made a 53 MB state file and a 53 MB request. So an image is at most
`MAX_SIDE` pixels on its long side (what vision models read without scaling down
themselves) and `MAX_IMAGE_BASE64` bytes of base64 (Anthropic's limit per
image), and a result holds at most `MAX_IMAGES`: `view_figure`'s limits.

The size is read from the image's header (PNG, JPEG, GIF, WebP) without
decoding it. A larger image is scaled down with Pillow when it is installed
(not a dependency; the `test` extra has it); otherwise, or when it is too large
to decode safely, it is left out. Each bounded image comes with a note saying
what was done, for the tool result the model reads.
"""

from __future__ import annotations

import base64
import binascii
import io
import struct
from dataclasses import dataclass
from typing import Any

from mentra_nb.messages import ImageBlock

__all__ = ["MAX_IMAGES", "MAX_IMAGE_BASE64", "MAX_SIDE", "BoundedImage", "bound_image", "image_size"]

MAX_IMAGES = 4  # per tool result
"""The most images one tool result carries."""
MAX_SIDE = 1568  # pixels on the long side
"""The longest side, in pixels, of an image sent to a model."""
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
"""The most bytes of base64 one image may take; a larger one is scaled down or left out."""
# Larger images are not decoded to be scaled: a 20000x20000 PNG is 1.6 GB of pixels
# (a "decompression bomb" that compresses to a few megabytes).
MAX_DECODED_PIXELS = 50_000_000


@dataclass(frozen=True)
class BoundedImage:
    """An image within the limits (None: left out), and what was done to it
    ("" when it was kept as it came)."""

    image: ImageBlock | None
    note: str


def bound_image(media_type: str, data: str) -> BoundedImage:
    """The base64 image `data` within `MAX_SIDE` and `MAX_IMAGE_BASE64`."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return BoundedImage(None, "left out: its data is not valid base64")
    size = image_size(raw)
    if size is None:
        if len(data) <= MAX_IMAGE_BASE64:
            return BoundedImage(ImageBlock(media_type=media_type, data=data), "")
        return BoundedImage(None, f"left out: {_megabytes(len(data))} of base64, over the "
                                  f"{_megabytes(MAX_IMAGE_BASE64)} limit, in a format that cannot be scaled")
    width, height = size
    if max(width, height) <= MAX_SIDE and len(data) <= MAX_IMAGE_BASE64:
        return BoundedImage(ImageBlock(media_type=media_type, data=data), "")
    why = (f"{width}x{height} px" if max(width, height) > MAX_SIDE
           else f"{_megabytes(len(data))} of base64")
    if width * height > MAX_DECODED_PIXELS:
        return BoundedImage(None, f"left out: {width}x{height} px is too large to scale down safely")
    try:
        from PIL import Image
    except ImportError:
        return BoundedImage(None, f"left out: {why}, over the limits ({MAX_SIDE} px on the long side, "
                                  f"{_megabytes(MAX_IMAGE_BASE64)}), and Pillow is not installed to "
                                  "scale it down (pip install pillow)")
    try:
        scaled = _scaled(Image, raw)
    except Exception as err:  # any image Pillow cannot read is left out, not a failed call
        return BoundedImage(None, f"left out: {why}, and it could not be scaled down ({type(err).__name__})")
    if scaled is None:
        return BoundedImage(None, f"left out: {why}, and still over {_megabytes(MAX_IMAGE_BASE64)} "
                                  "when scaled down")
    block, (new_width, new_height) = scaled
    fmt = block.media_type.removeprefix("image/").upper()
    if (new_width, new_height) != (width, height):
        return BoundedImage(block, f"scaled down from {why} to {new_width}x{new_height} px {fmt}")
    return BoundedImage(block, f"re-encoded as {fmt}: {why} was over the {_megabytes(MAX_IMAGE_BASE64)} "
                               f"limit, now {_megabytes(len(block.data))}")


def _scaled(image_module: Any, raw: bytes) -> tuple[ImageBlock, tuple[int, int]] | None:
    """The image at most MAX_SIDE pixels on its long side, as PNG, or as JPEG when
    its PNG is over the byte limit (a photograph); None if both are."""
    image = image_module.open(io.BytesIO(raw))
    image.draft("RGB", (MAX_SIDE, MAX_SIDE))  # a JPEG is decoded at a fraction of its size
    image.thumbnail((MAX_SIDE, MAX_SIDE))
    if image.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        image = image.convert("RGBA")
    for fmt in ("PNG", "JPEG"):
        buffer = io.BytesIO()
        (image.convert("RGB") if fmt == "JPEG" else image).save(buffer, format=fmt, quality=85)
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        if len(data) <= MAX_IMAGE_BASE64:
            return ImageBlock(media_type=f"image/{fmt.lower()}", data=data), image.size
    return None


def image_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, JPEG, GIF or WebP header; None for anything else."""
    try:
        if raw.startswith(b"\x89PNG\r\n\x1a\n") and raw[12:16] == b"IHDR":
            width, height = struct.unpack(">II", raw[16:24])
            return int(width), int(height)
        if raw[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", raw[6:10])
            return int(width), int(height)
        if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
            return _webp_size(raw)
        if raw[:2] == b"\xff\xd8":
            return _jpeg_size(raw)
    except struct.error:  # cut short
        return None
    return None


def _webp_size(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", raw[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(raw[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(raw[24:27], "little") + 1, int.from_bytes(raw[27:30], "little") + 1
    return None


# Start-of-frame markers (those that give a frame's size), not DHT (C4), JPG (C8) or DAC (CC).
_JPEG_FRAMES = frozenset((0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF))


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(raw):
        if raw[at] != 0xFF:
            return None
        marker = raw[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        length = int.from_bytes(raw[at + 2:at + 4], "big")
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", raw[at + 5:at + 9])
            return int(width), int(height)
        at += 2 + length
    return None


def _megabytes(count: int) -> str:
    return f"{count / 1024 / 1024:.1f} MB"
