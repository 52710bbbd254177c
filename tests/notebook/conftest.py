"""An in-process IPython shell with mentra-nb loaded into a fresh folder per test."""

from __future__ import annotations

import os

import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython

import mentra_nb.notebook as notebook


@pytest.fixture
def ip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    shell = start_ipython() or get_ipython()
    # One shell serves every test: each starts with the empty namespace of a fresh kernel,
    # so no test sees another's variables, whatever order they run in.
    shell.reset(new_session=False)
    notebook.load_ipython_extension(shell)
    yield shell
    notebook.unload_ipython_extension(shell)
    shell.config.pop("MentraMagics", None)  # %config in one test must not leak into the next
    os.chdir(tmp_path)


@pytest.fixture
def session(ip):
    return notebook.session(ip)


def mentra(ip, line):
    return ip.run_line_magic("mentra", line)


def mentra_cell(ip, line, body):
    return ip.run_cell_magic("mentra", line, body)


_held_runtimes: list = []


@pytest.fixture(autouse=True)
def _release_held_runtimes():
    yield
    _held_runtimes.clear()


def open_runtime(host, factory):
    """`factory()` run on `host`'s loop, the runtime kept until the test ends: helpers
    that hand out only an agent must still hold its runtime, as a notebook's session
    does (a runtime nobody holds is closed when it is collected)."""
    runtime = host.call(factory)
    _held_runtimes.append(runtime)
    return runtime
