"""JupyterLab and Notebook 7 from the installed wheel's venv (no source checkout on
its path) render a live AgentView: the front end shipped inside the wheel works."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import open_notebook, serve


@pytest.fixture(scope="module", params=["jupyterlab", "notebook"])
def wheel_server(request: pytest.FixtureRequest, installed_wheel: Path,
                 tmp_path_factory: pytest.TempPathFactory, artifacts: Path):
    base = tmp_path_factory.mktemp(f"wheel-{request.param}")
    with serve(base, app=request.param, python=str(installed_wheel)) as server:
        yield server


@pytest.fixture
def wheel_notebook(page, wheel_server, request: pytest.FixtureRequest):
    yield from open_notebook(page, wheel_server, request)


def test_an_agent_view_streams_from_the_installed_wheel(wheel_notebook, installed_wheel):
    nb = wheel_notebook.open(["%load_ext mentra_nb\nimport mentra_nb\nprint(mentra_nb.__file__)",
                              "%mentra spawn writer", "%%mentra writer\nA reply from the *wheel*"])
    nb.run_all(3)
    venv = installed_wheel.parent.parent
    expect(nb.output(0)).to_contain_text(str(venv))  # the kernel imports the installed copy
    view = nb.agent_view(1)
    expect(view.locator(".mentra-badge")).to_have_attribute("data-status", "finished",
                                                            timeout=30_000)
    answer = view.locator('.mentra-transcript .mentra-item[data-role="assistant"]')
    expect(answer.locator("em")).to_have_text("wheel")
