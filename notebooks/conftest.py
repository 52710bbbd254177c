"""The tutorials run under nbval: each notebook is a test module, each code cell a test."""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A random-order run (`pytest -p randomly`) may move whole notebooks but must not
    shuffle or interleave their cells: each cell needs the ones above it, and pytest
    tears a notebook's kernel down whenever the next test belongs elsewhere. Each
    notebook's cells run together, in order, where the first of them landed."""
    cells: dict[str, list[pytest.Item]] = {}
    for item in items:
        if hasattr(item, "cell_num"):  # an nbval cell
            cells.setdefault(str(item.path), []).append(item)
    if not cells:
        return
    reordered: list[pytest.Item] = []
    for item in items:
        if not hasattr(item, "cell_num"):
            reordered.append(item)
        elif (notebook := cells.pop(str(item.path), None)) is not None:
            reordered.extend(sorted(notebook, key=lambda cell: cell.cell_num))
    items[:] = reordered


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tell each tutorial's kernel which notebook it runs, as a Jupyter server does
    (`JPY_SESSION_NAME`): nbval starts kernels without saying, and every tutorial
    would then share one state file and runtime id. Set before the notebook's
    kernel starts (in its first cell's setup)."""
    if hasattr(item, "cell_num"):
        os.environ["JPY_SESSION_NAME"] = str(item.path)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    if hasattr(item, "cell_num"):
        os.environ.pop("JPY_SESSION_NAME", None)  # the kernel has it; no other test should
