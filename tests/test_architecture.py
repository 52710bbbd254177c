"""The package's internal contract, checked on its source (docs/maintainers/architecture.md).

- No module reads or writes another object's `_private` attribute: `x._name` is
  allowed only on `self` / `cls` / `super()`, or for a name the same module
  defines (a class reaching into another instance of itself, say). Collaborators
  get a public method or a narrow handle instead.
- No module imports a `_private` name from another module.
- The modules of `mentra_nb.runtime` (and of every other layer) import each
  other without a cycle. Every import counts: module level, inside functions and
  under `TYPE_CHECKING`, since those are the ways a cycle is usually hidden; an
  import of `a.b.c` also runs `a.b`'s `__init__`, so it counts as an import of
  that package too (unless the importer lives inside it).
- Layers import only the layers below them (notebook → runtime → providers,
  store), the runtime never imports Jupyter, and the notebook layer reaches the
  layers below only through their public modules.
- Every module declares `__all__`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mentra_nb"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, tuple[Path, ast.Module]]:
    return {
        _module_name(path): (path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


SOURCES = _sources()


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_names(tree: ast.Module) -> set[str]:
    """Private names this module defines: attributes set on self/cls, methods,
    classes, functions and module-level names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in ("self", "cls"):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
    # __slots__ = ("_a", "_b") defines those attributes too.
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ) and isinstance(node.value, (ast.Tuple, ast.List)):
            names.update(e.value for e in node.value.elts
                         if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return {n for n in names if _is_private(n)}


def _foreign_private_uses(tree: ast.Module) -> Iterator[tuple[int, str]]:
    own = _own_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            target = node.value
            if isinstance(target, ast.Name) and target.id in ("self", "cls"):
                continue
            if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) \
                    and target.func.id == "super":
                continue
            if node.attr in own:
                continue
            yield node.lineno, f".{node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and _is_private(node.args[1].value) \
                and node.args[1].value not in own:
            yield node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                # A private module is how a package hides its internals; a private
                # name inside a module is that module's own business.
                if _is_private(alias.name) and f"{node.module}.{alias.name}" not in SOURCES:
                    yield node.lineno, f"from {node.module} import {alias.name}"


def test_no_module_touches_another_objects_private_attributes() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for path, tree in SOURCES.values()
        for line, what in _foreign_private_uses(tree)
    ]
    assert found == [], "private attributes used across modules:\n" + "\n".join(found)


# --- import cycles ---------------------------------------------------------------


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(name: str, path: Path, tree: ast.Module) -> set[str]:
    """Every mentra_nb module this module imports, wherever the import stands."""
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(name, path.name == "__init__.py", node)
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                targets.add(submodule if submodule in SOURCES else module)
    edges: set[str] = set()
    for target in targets:
        if target not in SOURCES:
            continue
        # Importing a.b.c runs a/__init__ and a/b/__init__ first, unless the
        # importer is inside that package (then it is already being imported).
        parts = target.split(".")
        for depth in range(1, len(parts) + 1):
            ancestor = ".".join(parts[:depth])
            if ancestor in SOURCES and not (name == ancestor or name.startswith(ancestor + ".")):
                edges.add(ancestor)
    edges.discard(name)
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _layer_graph(layer: str) -> dict[str, set[str]]:
    return {
        name: {t for t in _imports(name, path, tree) if t == layer or t.startswith(layer + ".")}
        for name, (path, tree) in SOURCES.items()
        if name == layer or name.startswith(layer + ".")
    }


@pytest.mark.parametrize(
    "layer",
    ["mentra_nb.runtime", "mentra_nb.store", "mentra_nb.providers", "mentra_nb.notebook"],
)
def test_the_modules_of_a_layer_import_each_other_without_a_cycle(layer: str) -> None:
    cycles = _cycles(_layer_graph(layer))
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_runtime_never_imports_jupyter_or_the_notebook_layer() -> None:
    forbidden = ("IPython", "ipykernel", "ipywidgets", "anywidget", "traitlets", "mentra_nb.notebook")
    found = []
    for name, (path, tree) in SOURCES.items():
        if not name.startswith(("mentra_nb.runtime", "mentra_nb.store", "mentra_nb.providers")):
            continue
        for node in ast.walk(tree):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{name}: {m}" for m in modules if m.split(".")[0] in forbidden
                      or m.startswith("mentra_nb.notebook")]
    assert found == []


@pytest.mark.parametrize(
    "layer", ["mentra_nb.notebook", "mentra_nb.runtime", "mentra_nb.providers", "mentra_nb.store"]
)
def test_a_layer_reaches_another_only_through_its_public_modules(layer: str) -> None:
    """E.g. the notebook layer imports `mentra_nb.runtime` (and its public
    `teams`, `subagents`, `events`, `tools`), never `mentra_nb.runtime._agent`."""
    layers = ("runtime", "store", "providers", "notebook")
    found = []
    for name, (path, tree) in SOURCES.items():
        if not (name == layer or name.startswith(layer + ".")):
            continue
        for node in ast.walk(tree):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for module in modules:
                parts = module.split(".")
                if parts[:1] == ["mentra_nb"] and len(parts) > 1 and parts[1] in layers \
                        and f"mentra_nb.{parts[1]}" != layer \
                        and any(p.startswith("_") for p in parts[2:]):
                    found.append(f"{name}: {module}")
    assert found == []


def test_every_module_declares_all() -> None:
    missing = [
        name for name, (path, tree) in SOURCES.items()
        if name != "mentra_nb.__main__"
        and not any(
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and any(isinstance(t, ast.Name) and t.id == "__all__"
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
            for node in tree.body
        )
    ]
    assert missing == []


# What each layer may import of the others: data flows down (docs/maintainers/architecture.md).
ALLOWED_LAYERS = {
    "mentra_nb.store": set(),
    "mentra_nb.providers": set(),
    "mentra_nb.runtime": {"mentra_nb.store", "mentra_nb.providers"},
    "mentra_nb.notebook": {"mentra_nb.store", "mentra_nb.providers", "mentra_nb.runtime"},
}


@pytest.mark.parametrize("layer", sorted(ALLOWED_LAYERS))
def test_a_layer_imports_only_the_layers_below_it(layer: str) -> None:
    others = set(ALLOWED_LAYERS) - {layer} - ALLOWED_LAYERS[layer]
    found = sorted(
        f"{name} imports {target}"
        for name, (path, tree) in SOURCES.items()
        if name == layer or name.startswith(layer + ".")
        for target in _imports(name, path, tree)
        if any(target == other or target.startswith(other + ".") for other in others)
    )
    assert found == []


# --- the core names no feature ------------------------------------------------------

# The core is every module directly in runtime/: agents, their state and config,
# snapshots, approvals, the turn loop, the runtime, the extension interface, the
# built-in tools. Features (budgets, teams, subagents, MCP, …) are extensions under
# runtime/ that plug in through `RuntimeExtension`; the core never names one, not
# even in a comment, so that a feature can be added, changed or left out without
# touching it. The exceptions, and why:
NOT_CORE = {
    "mentra_nb.runtime": "the public face: it re-exports and registers the built-in extensions",
    "mentra_nb.runtime._envelopes": "the mail envelopes the team and subagent extensions share",
    "mentra_nb.runtime._tracing": "spans carry each usage's cost_usd and follow team mail",
}
# The store's contract, SQL layer and records API serve every feature, so they name
# none either: an agent's kind is an open string each extension declares.
CORE_MODULES = [
    *sorted(name for name, (path, _tree) in SOURCES.items()
            if path.parent == PACKAGE / "runtime" and name not in NOT_CORE),
    "mentra_nb.store.base",
    "mentra_nb.store._sql_store",
    "mentra_nb.store.records",
]
# Each extension package's name, and the words of what it is about.
FEATURE_WORDS = sorted({
    *(path.name for path in (PACKAGE / "runtime").iterdir()
      if path.is_dir() and (path / "__init__.py").exists()),
    "team", "teammate", "subagent", "mcp", "cost", "budget", "inbox",
})


def feature_names(source: str) -> list[tuple[int, str]]:
    """(line, word) for every feature word in `source`: in identifiers (split at `_`
    and at camel case: `is_teammate`, `BudgetExceeded`), strings and comments, in
    the singular or plural."""
    singular = sorted({w[:-1] if w.endswith("s") else w for w in FEATURE_WORDS})
    pattern = re.compile(rf"\b({'|'.join(singular)})(s|es)?\b")
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        words = re.sub(r"([a-z0-9])([A-Z])|([A-Z])([A-Z][a-z])", r"\1\3 \2\4", line)
        words = words.replace("_", " ").lower()
        found += [(number, match.group(0)) for match in pattern.finditer(words)]
    return found


def test_the_feature_word_check_sees_identifiers_strings_and_comments() -> None:
    assert [w for _, w in feature_names("def is_teammate(self): ...")] == ["teammate"]
    assert [w for _, w in feature_names("except BudgetExceeded:")] == ["budget"]
    assert [w for _, w in feature_names("MCPExtension, TeamMCPConfig")] == ["mcp", "team", "mcp"]
    assert [w for _, w in feature_names('prefix = "mcp__"  # for MCP servers')] == ["mcp", "mcp"]
    assert [w for _, w in feature_names("# spawns subagents, sums costs")] == ["subagents", "costs"]
    assert feature_names("# steam, accost, budgeting and teamwork are other words") == []


@pytest.mark.parametrize("module", CORE_MODULES)
def test_a_core_module_names_no_feature(module: str) -> None:
    path, _tree = SOURCES[module]
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {word}"
             for line, word in feature_names(path.read_text(encoding="utf-8"))]
    assert found == [], ("the core names a feature; move it into the feature's extension "
                         "(RuntimeExtension in runtime/_extensions.py):\n" + "\n".join(found))


def test_the_turn_loop_traces_on_one_path() -> None:
    """With tracing off a run gets spans that record nothing (`RunTrace`), so the
    turn loop never asks whether tracing is on: `if trace is None` would be a
    second path through every run, model call and tool call."""
    path, tree = SOURCES["mentra_nb.runtime._turn_loop"]

    def names_trace(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and "trace" in node.id) or \
            (isinstance(node, ast.Attribute) and "trace" in node.attr)

    found = [
        node.lineno for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
        and any(names_trace(side) for side in [node.left, *node.comparators])
    ]
    assert found == [], f"{path.name} branches on tracing at lines {found}"
