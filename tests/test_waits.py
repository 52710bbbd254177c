"""Waits give a slow machine 30 s: a test that waits for a condition polls for it
with a generous limit and returns as soon as it holds, so a machine busy with other
work (a CI runner, two other CPU-bound processes) gets time and a fast one pays
nothing. A wait of 5 s once failed the suite under load (issue 31)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tests import conftest
from tests.teams import helpers as team_helpers

TESTS = Path(__file__).resolve().parent
WAITS = {"until", "wait_until", "poll", "wait_for", "wait_for_status", "wait_for_teammate_status",
         "wait_for_requests"}


def _number(node: ast.AST | None) -> float | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int | float) else None


def _short_waits(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each wait in `tree` with a literal limit under 30 s."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            on_asyncio = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "asyncio"
            limits = [k.value for k in node.keywords if k.arg == "timeout"]
            if ((on_asyncio and name == "wait_for") or name in {"until", "wait_until", "poll"}) and len(node.args) > 1:
                limits.append(node.args[1])
            elif on_asyncio and name == "timeout" and node.args:
                limits.append(node.args[0])
            elif not (on_asyncio and name in {"wait_for", "timeout"}) and name not in WAITS:
                continue
            for limit in limits:
                seconds = _number(limit)
                if seconds is not None and seconds < conftest.WAIT_LIMIT:
                    found.append((node.lineno, f"{ast.unparse(func)}(…{seconds}…)"))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.lstrip("_") in WAITS:
            arguments = node.args.args + node.args.kwonlyargs
            defaults = [*[None] * (len(node.args.args) - len(node.args.defaults)), *node.args.defaults,
                        *node.args.kw_defaults]
            for argument, default in zip(arguments, defaults, strict=True):
                seconds = _number(default)
                if argument.arg == "timeout" and seconds is not None and seconds < conftest.WAIT_LIMIT:
                    found.append((node.lineno, f"def {node.name}(timeout={seconds})"))
    return found


def test_the_shared_waits_give_a_condition_30_seconds():
    assert conftest.WAIT_LIMIT >= 30
    for wait in (conftest.until, conftest.wait_until):
        assert inspect.signature(wait).parameters["timeout"].default == conftest.WAIT_LIMIT
    for wait in (team_helpers.wait_for_teammate_status, team_helpers.wait_for_requests):
        assert "timeout" not in inspect.signature(wait).parameters  # they use wait_until's


@pytest.mark.parametrize("path", sorted(p for p in TESTS.rglob("*.py")
                                        if "benchmarks" not in p.parts and "node_modules" not in p.parts),
                         ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_waits_less_than_30_seconds_for_a_condition(path):
    short = _short_waits(ast.parse(path.read_text(encoding="utf-8")))
    assert not short, f"{path.name}: waits under {conftest.WAIT_LIMIT:.0f} s: {short}"


def test_the_check_finds_a_short_wait():
    tree = ast.parse("async def f():\n    await wait_until(ready, timeout=5)\n"
                     "    await asyncio.wait_for(task, 2)\n"
                     "def wait_for(predicate, timeout=10.0): ...\n"
                     "until(ready, 10)\n")
    assert sorted(line for line, _ in _short_waits(tree)) == [2, 3, 4, 5]
