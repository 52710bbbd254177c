"""MkDocs hook: the API reference documents every public name, each once.

A public module is one whose dotted path has no `_`-prefixed part; its public names
are its `__all__`. PAGES says which page shows which modules. Each page's own
Markdown is its introduction; this hook appends a mkdocstrings block per module that
lists the names not already shown on an earlier module (a package face re-exports
its modules' names: `Runtime` is shown once, as `mentra_nb.runtime.Runtime`, and
`mentra_nb.Runtime` links there). The API index lists every name of `mentra_nb` and
of each public module with a link to its entry, so a missing one fails the strict
build. A public module that no page lists fails the build too.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PAGES: dict[str, tuple[str, ...]] = {
    "reference/runtime.md": ("mentra_nb.runtime", "mentra_nb.runtime.events",
                             "mentra_nb.runtime.tools", "mentra_nb.runtime.images",
                             "mentra_nb.runtime.mail"),
    "reference/extensions.md": ("mentra_nb.runtime.cost", "mentra_nb.runtime.teams",
                                "mentra_nb.runtime.teams.mail",
                                "mentra_nb.runtime.subagents", "mentra_nb.runtime.subagents.mail",
                                "mentra_nb.runtime.mcp", "mentra_nb.runtime.cell_tools",
                                "mentra_nb.runtime.batch"),
    "reference/notebook.md": ("mentra_nb.notebook", "mentra_nb.notebook.turn",
                              "mentra_nb.notebook.agent_view", "mentra_nb.notebook.team_view",
                              "mentra_nb.notebook.subagent_picker", "mentra_nb.notebook.batch_view",
                              "mentra_nb.server_extension"),
    "reference/store.md": ("mentra_nb.store", "mentra_nb.store.base", "mentra_nb.store.records",
                           "mentra_nb.store.sqlite", "mentra_nb.store.postgres",
                           "mentra_nb.store.locations"),
    "reference/providers.md": ("mentra_nb.providers", "mentra_nb.providers.base",
                               "mentra_nb.providers.events", "mentra_nb.providers.registry",
                               "mentra_nb.providers.test", "mentra_nb.providers.anthropic",
                               "mentra_nb.providers.openai", "mentra_nb.providers.openai_chat",
                               "mentra_nb.providers.gemini", "mentra_nb.providers.local",
                               "mentra_nb.providers.replay"),
    "reference/core.md": ("mentra_nb.errors", "mentra_nb.messages", "mentra_nb.status",
                          "mentra_nb.pricing"),
    "reference/testing.md": ("mentra_nb.testing", "mentra_nb.testing.scripted",
                             "mentra_nb.testing.store_conformance"),
}
INDEX = "reference/index.md"


def on_config(config: Any) -> Any:
    """Document the checkout's package, not an installed copy of another version."""
    root = str(Path(config.config_file_path).parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def public_modules() -> list[str]:
    """Every public module of the package, `mentra_nb` first."""
    import mentra_nb

    found = ["mentra_nb"]
    for info in pkgutil.walk_packages(mentra_nb.__path__, "mentra_nb."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return found


def public_names(module: str) -> tuple[str, ...]:
    return tuple(importlib.import_module(module).__all__)


def _objects() -> Iterator[tuple[str, str, object]]:
    for page in PAGES.values():
        for module in page:
            mod = importlib.import_module(module)
            for name in public_names(module):
                yield module, name, getattr(mod, name)


def documented_at() -> dict[tuple[str, str], str]:
    """(module, name) -> the dotted path of the entry that documents it, for every
    public name of every public module; raises if a public module is on no page."""
    listed = [module for page in PAGES.values() for module in page]
    missing = sorted(set(public_modules()) - set(listed) - {"mentra_nb"})
    if missing:
        raise RuntimeError(f"public modules on no API page (add them to PAGES in {__file__}): {missing}")
    first: dict[object, str] = {}
    where: dict[tuple[str, str], str] = {}
    for module, name, obj in _objects():
        key = ("object", id(obj)) if _is_definition(obj) else ("name", module, name)
        first.setdefault(key, f"{module}.{name}")
        where[(module, name)] = first[key]
    import mentra_nb

    for source, names in mentra_nb._EXPORTS.items():  # where each top-level name comes from
        for name in names:
            where[("mentra_nb", name)] = where[(source, name)]
    unplaced = sorted(set(public_names("mentra_nb")) - {name for module, name in where if module == "mentra_nb"})
    if unplaced:
        raise RuntimeError(f"mentra_nb exports names no API page shows: {unplaced}")
    return where


def _is_definition(obj: object) -> bool:
    """Classes, functions, type aliases and other objects are one object wherever they
    are exported; values (strings, numbers, tuples), which equal values may share, are
    documented where each module names them."""
    return not isinstance(obj, (str, bytes, int, float, complex, tuple, frozenset, type(None)))


def _module_block(module: str, names: list[str]) -> str:
    members = "[" + ", ".join(names) + "]" if names else "false"
    return f"::: {module}\n    options:\n      members: {members}\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    src = page.file.src_uri
    if src in PAGES:
        where = documented_at()
        blocks = []
        for module in PAGES[src]:
            own = [name for name in public_names(module) if where[(module, name)] == f"{module}.{name}"]
            others = [name for name in public_names(module) if name not in own]
            block = _module_block(module, own)
            if others:
                links = ", ".join(f"[`{name}`][{where[(module, name)]}]" for name in others)
                block += f"\n`{module}` also exports {links}.\n"
            blocks.append(block)
        return markdown.rstrip() + "\n\n" + "\n".join(blocks)
    if src == INDEX:
        where = documented_at()
        rows = ["| module | public names |", "|---|---|"]
        for module in public_modules():
            links = ", ".join(f"[`{name}`][{where[(module, name)]}]" for name in public_names(module))
            rows.append(f"| `{module}` | {links} |")
        return markdown.replace("<!-- public names -->", "\n".join(rows))
    return markdown
