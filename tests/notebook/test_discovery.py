"""Where a notebook's state file is found, and which runtime id it gets."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from mentra_nb import Runtime, SqliteStore
from mentra_nb.notebook._discovery import discover_store, migrate_store


def test_an_explicit_path_wins(tmp_path):
    found = discover_store({"__session__": str(tmp_path / "a.ipynb")}, explicit="state/x.sqlite",
                           cwd=tmp_path, environ={})
    assert found.path == tmp_path / "state" / "x.sqlite"
    assert found.runtime_id == "a" and found.source == "set with %mentra db"


def test_jupyter_server_sessions_put_the_file_beside_the_notebook(tmp_path):
    notebook = tmp_path / "work" / "sales analysis.ipynb"
    found = discover_store({}, cwd=tmp_path, environ={"JPY_SESSION_NAME": str(notebook)})
    assert found.path == tmp_path / "work" / ".mentra" / "sales analysis.sqlite"
    assert found.runtime_id == "sales_analysis"
    assert found.source == "beside the notebook (from JPY_SESSION_NAME)"


def test_ipython_session_and_vs_code_variables_are_read(tmp_path):
    assert discover_store({"__session__": "nb/one.ipynb"}, cwd=tmp_path, environ={}).path == \
        tmp_path / "nb" / ".mentra" / "one.sqlite"
    found = discover_store({"__vsc_ipynb_file__": str(tmp_path / "two.ipynb")}, cwd=tmp_path, environ={})
    assert found.path == tmp_path / ".mentra" / "two.sqlite" and "__vsc_ipynb_file__" in found.source
    # papermill's --inject-input-path (or parameters={"PAPERMILL_INPUT_PATH": ...} in Python)
    found = discover_store({"PAPERMILL_INPUT_PATH": "reports/q3.ipynb"}, cwd=tmp_path, environ={})
    assert found.path == tmp_path / "reports" / ".mentra" / "q3.sqlite" and found.runtime_id == "q3"
    assert discover_store({"PAPERMILL_INPUT_PATH": "s3://bucket/q3.ipynb"}, cwd=tmp_path,
                          environ={}).notebook is None  # no folder to keep state in


def test_two_notebooks_in_one_folder_never_share_agents(tmp_path):
    a = discover_store({"__session__": str(tmp_path / "a.ipynb")}, cwd=tmp_path, environ={})
    b = discover_store({"__session__": str(tmp_path / "b.ipynb")}, cwd=tmp_path, environ={})
    assert a.path != b.path and a.runtime_id != b.runtime_id


def test_without_a_notebook_path_the_current_folder_is_used(tmp_path):
    found = discover_store({"__session__": "not-a-notebook"}, cwd=tmp_path, environ={})
    assert found.path == tmp_path / ".mentra" / "mentra.sqlite"
    assert found.runtime_id == "notebook"


def test_a_dotenv_and_cassette_beside_a_vs_code_notebook_are_found_like_its_state_file(
    tmp_path, monkeypatch
):
    """One rule finds the notebook for everyone: VS Code names it only in the
    kernel's variables, and the providers (which have none) used to miss it."""
    from mentra_nb.notebook import NotebookSession
    from mentra_nb.providers._keys import resolve_key
    from mentra_nb.providers.replay import default_cassette_path

    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv-beside-the-vscode-notebook\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for name in ("OPENAI_API_KEY", "JPY_SESSION_NAME", "MENTRA_CASSETTE"):
        monkeypatch.delenv(name, raising=False)
    session = NotebookSession({"__vsc_ipynb_file__": str(project / "analysis.ipynb")}, environ={})
    try:
        assert session.location.path == project / ".mentra" / "analysis.sqlite"
        key = resolve_key(None, ["OPENAI_API_KEY"], provider="openai")
        assert key is not None and key.reveal() == "sk-from-dotenv-beside-the-vscode-notebook"
        assert key.source == f"{project / '.env'} (OPENAI_API_KEY)"
        assert default_cassette_path() == project / "analysis.cassette.jsonl"
    finally:
        session.close()
    assert resolve_key(None, ["OPENAI_API_KEY"], provider="openai", required=False) is None


def test_an_earlier_versions_state_file_moves_into_the_hidden_folder_with_its_wal(tmp_path):
    """Issue 15: three state files per notebook cluttered the file browser."""
    notebook = tmp_path / "report.ipynb"
    old = tmp_path / "report.mentra.sqlite"
    rt = Runtime.empty(store=SqliteStore(old), runtime_id="report")
    rt.spawn("writer", "test")
    # The agent row may still sit in the -wal: the move must carry it along.
    location = discover_store({"__session__": str(notebook)}, cwd=tmp_path, environ={})
    asyncio.run(rt.aclose())
    rt.store.close()
    assert migrate_store(location) == old
    assert not any(tmp_path.glob("report.mentra.sqlite*"))
    store = SqliteStore(location.path)
    assert [r.name for r in store.list_agents("report")] == ["writer"]
    store.close()
    assert migrate_store(location) is None  # once only; the new file is kept


def test_a_headless_runners_command_line_names_the_notebook(tmp_path):
    """Issue 15.1: nbconvert and papermill tell the kernel nothing, so every notebook
    in a folder shared one state file and runtime id; their command lines name it."""
    from mentra_nb._notebook_path import runner_notebook

    code = ("import psutil, sys; from mentra_nb._notebook_path import runner_notebook; "
            "print(runner_notebook())")

    def seen_by_child_of(argv0: str, *args: str, child_cwd: str = ".") -> str:
        # A parent whose command line reads like the runner's starts the "kernel".
        parent = [sys.executable, "-c", "import subprocess, sys; "
                  f"subprocess.run([sys.executable, '-c', {code!r}], cwd={child_cwd!r})", argv0, *args]
        return subprocess.run(parent, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()

    assert seen_by_child_of("jupyter-nbconvert", "--to", "html", "--execute", "report_a.ipynb") == \
        f"({tmp_path / 'report_a.ipynb'!r}, 'the nbconvert command line')"
    assert seen_by_child_of("papermill", "report_b.ipynb", "out/report_b-run.ipynb") == \
        f"({tmp_path / 'report_b.ipynb'!r}, 'the papermill command line')"
    # Two notebooks in one nbconvert call: which one this kernel runs is not said.
    assert seen_by_child_of("jupyter-nbconvert", "--execute", "a.ipynb", "b.ipynb") == "None"
    # ... unless they live in different folders: nbconvert starts each notebook's kernel
    # in that notebook's folder.
    (tmp_path / "east").mkdir()
    (tmp_path / "west").mkdir()
    assert seen_by_child_of("jupyter-nbconvert", "--execute", "east/a.ipynb", "west/b.ipynb",
                            child_cwd="west") == \
        f"({tmp_path / 'west' / 'b.ipynb'!r}, \"the nbconvert command line and the kernel's folder\")"
    # Anything else (a server started with a notebook to open, say) is no runner.
    assert seen_by_child_of("jupyter-lab", "a.ipynb") == "None"
    assert runner_notebook() is None  # pytest is no runner


def test_each_voila_page_gets_agents_of_its_own_in_the_apps_state_file(tmp_path):
    """Issue 36.2: Voila starts a kernel per page load and keeps it after the tab
    closes; pages that shared runtime id 'notebook' waited for each other's leases."""
    page = {"SERVER_SOFTWARE": "voila/0.5.13", "SCRIPT_NAME": "/voila/render/apps/app.ipynb",
            "VOILA_KERNEL_ID": "9f3c21c4-ceb7"}
    one = discover_store({}, cwd=tmp_path, environ=page)
    other = discover_store({}, cwd=tmp_path, environ={**page, "VOILA_KERNEL_ID": "4a73"})
    # Voila starts the kernel in the notebook's folder; its page names the notebook.
    assert one.path == other.path == tmp_path / ".mentra" / "app.sqlite"
    assert "Voila's SCRIPT_NAME" in one.source
    assert (one.runtime_id, other.runtime_id) == ("app/voila-9f3c21c4-ceb7", "app/voila-4a73")
    # `voila app.ipynb` serves it at "/": the command line names it (the browser test runs that).
    single = discover_store({}, cwd=tmp_path, environ={**page, "SCRIPT_NAME": "/"})
    assert single.runtime_id == "notebook/voila-9f3c21c4-ceb7"
    # Outside Voila the same variables mean nothing.
    assert discover_store({}, cwd=tmp_path, environ={"SCRIPT_NAME": "/x/app.ipynb"}).runtime_id == "notebook"


def test_voila_serving_one_notebook_is_read_from_its_command_line(tmp_path):
    """`voila app.ipynb` serves the notebook at "/": only its command line names it."""
    child = ("import os; from mentra_nb._voila import voila_notebook; "
             "print(voila_notebook({'SERVER_SOFTWARE': 'voila/0.5', 'SCRIPT_NAME': '/'}))")
    (tmp_path / "voila").write_text(f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {child!r}])\n")
    out = subprocess.run([sys.executable, str(tmp_path / "voila"), "dash.ipynb", "--no-browser"],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert out == f"({tmp_path / 'dash.ipynb'!r}, 'the voila command line')"
    # Another server naming a notebook is not Voila.
    (tmp_path / "jupyter-lab").write_text((tmp_path / "voila").read_text())
    out = subprocess.run([sys.executable, str(tmp_path / "jupyter-lab"), "dash.ipynb"],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert out == "None"
