"""MkDocs hook: the rendered tutorials link to each other and have a true contents list.

docs/tutorials is a link to notebooks/, which mkdocs-jupyter renders with the outputs the
notebooks were saved with. Two things it leaves wrong are mended here: a notebook's link
to another (`05-restart-recovery.ipynb`, which works in Jupyter) is pointed at that
tutorial's page, and the page's contents list, which mkdocs-jupyter builds from the
notebook's text (taking `# NBVAL_CHECK_OUTPUT` comments in code for headings, and
slugging headings with code in them otherwise than the page does), is rebuilt from the
headings the page really has.
"""

from __future__ import annotations

import html
import re
from typing import Any

from mkdocs.structure.toc import get_toc

HEADING = re.compile(r'<h([1-3])[^>]*\bid="([^"]+)"[^>]*>(.*?)</h\1>', re.S)
NOTEBOOK_LINK = re.compile(r'href="(\d\d-[\w-]+)\.ipynb(#[^"]*)?"')


def on_page_content(content: str, page: Any, config: Any, files: Any) -> str:
    if not page.file.src_uri.startswith("tutorials/") or not page.file.src_uri.endswith(".ipynb"):
        return content
    content = NOTEBOOK_LINK.sub(lambda m: f'href="../{m.group(1)}/{m.group(2) or ""}"', content)
    tokens: list[dict[str, Any]] = []
    for level, anchor, inner in HEADING.findall(content):
        name = html.unescape(re.sub(r"<[^>]+>", "", inner)).strip().rstrip("¶").strip()
        token = {"level": int(level), "id": anchor, "name": name, "children": []}
        parent = tokens
        while parent and parent[-1]["level"] < token["level"]:
            parent = parent[-1]["children"]
        parent.append(token)
    page.toc = get_toc(tokens)
    return content
