"""An MCP `CallToolResult` as a tool result the model reads.

Text blocks are kept as text; structured content becomes JSON text (once: a
server that also sends the same JSON as a text block, as the spec suggests for
older clients, is not repeated); images become image blocks the model sees,
bounded as `view_figure`'s are (runtime/images.py: at most 4, each scaled
down to 1568 px and 5 MB of base64 or left out, the text saying which);
embedded text resources are inlined with their URI; other binary content and
resource links are named, not inlined; content whose annotations say its
audience is only the user is left out. `is_error` makes an error result. The
text is bounded like the built-in tools' output: the head and the tail are
kept and the middle is counted.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mentra_nb.messages import ImageBlock
from mentra_nb.runtime._file_tools import MAX_OUTPUT_CHARS
from mentra_nb.runtime.images import MAX_IMAGES, bound_image
from mentra_nb.runtime.tools import ToolOutput

if TYPE_CHECKING:
    from mcp_types import CallToolResult

__all__ = ["tool_output"]


def tool_output(result: CallToolResult, *, limit: int = MAX_OUTPUT_CHARS) -> ToolOutput:
    from mcp_types import (
        AudioContent,
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
    )

    parts: list[str] = []
    images: list[ImageBlock] = []
    texts: list[str] = []

    def image(media_type: str, data: str, what: str) -> None:
        if len(images) >= MAX_IMAGES:
            parts.append(f"[{what}: {media_type}, left out: more than {MAX_IMAGES} images]")
            return
        bounded = bound_image(media_type, data)
        if bounded.image is None:
            parts.append(f"[{what}: {media_type}, {bounded.note}]")
            return
        images.append(bounded.image)
        note = f", {bounded.note}" if bounded.note else ""
        parts.append(f"[{what}: {media_type}{note}, shown to you after the tool results]")

    for block in result.content:
        annotations = block.annotations
        if annotations is not None and annotations.audience and "assistant" not in annotations.audience:
            # The server meant this for the user's eyes only (annotations.audience).
            parts.append(f"[{block.type} content meant for the user only, not shown to you]")
            continue
        if isinstance(block, TextContent):
            parts.append(block.text)
            texts.append(block.text)
        elif isinstance(block, ImageContent):
            image(block.mime_type, block.data, "image")
        elif isinstance(block, AudioContent):
            parts.append(f"[audio: {block.mime_type}, {len(block.data) * 3 // 4} bytes, not shown]")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            media_type = resource.mime_type or "unknown type"
            if isinstance(resource, BlobResourceContents):
                if media_type.startswith("image/"):
                    image(media_type, resource.blob, f"image resource {resource.uri}")
                else:
                    parts.append(f"[resource {resource.uri}: {media_type}, "
                                 f"{len(resource.blob) * 3 // 4} bytes, not shown]")
            else:
                parts.append(f"[resource {resource.uri} ({media_type})]\n{resource.text}")
        elif isinstance(block, ResourceLink):
            described = f" — {block.description}" if block.description else ""
            parts.append(f"[resource link {block.name}: {block.uri}{described}]")
    structured = result.structured_content
    if structured is not None and not any(_same_json(text, structured) for text in texts):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2, default=str))
    text = "\n".join(parts) if parts else "(the tool returned no content)"
    return ToolOutput(content=_bounded(text, limit), is_error=bool(result.is_error), images=images)


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    dropped = len(text) - 2 * half
    return (f"{text[:half]}\n[… {dropped} characters of this result left out; ask the tool for "
            f"less (a narrower query, a page) to see them …]\n{text[-half:]}")


def _same_json(text: str, value: Any) -> bool:
    """Whether `text` already says what the structured `value` says: the same JSON,
    or the `{"result": ...}` wrapper SDK servers put around a plain return value."""
    candidates = [value]
    if isinstance(value, dict) and list(value) == ["result"]:
        candidates.append(value["result"])
    if text in candidates:
        return True
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return any(parsed == candidate for candidate in candidates)
