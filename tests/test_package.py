"""Package-level promises: layering, the public API, and the README's demo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mentra_nb

REPO = Path(__file__).resolve().parents[1]
JUPYTER_MODULES = ("IPython", "ipykernel", "ipywidgets", "anywidget", "jupyter_client", "traitlets")


def test_the_runtime_imports_no_jupyter_package():
    code = (
        "import sys, mentra_nb, mentra_nb.runtime, mentra_nb.store, mentra_nb.providers, mentra_nb.testing\n"
        f"loaded = [m for m in {JUPYTER_MODULES!r} if m in sys.modules]\n"
        "print(','.join(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_runtime_source_never_names_a_jupyter_package():
    for path in (REPO / "mentra_nb").rglob("*.py"):
        if "notebook" in path.parts:
            continue
        text = path.read_text()
        for module in JUPYTER_MODULES:
            assert f"import {module}" not in text and f"from {module}" not in text, path


def test_everything_in_all_is_importable_from_the_top():
    for name in mentra_nb.__all__:
        assert getattr(mentra_nb, name) is not None


def test_nothing_is_pickled():
    for path in (REPO / "mentra_nb").rglob("*.py"):
        text = path.read_text()
        assert "import pickle" not in text and "import dill" not in text, path


def test_the_demo_streams_then_a_second_process_resumes_the_agent(tmp_path):
    db = tmp_path / "demo.mentra.sqlite"
    out = subprocess.run([sys.executable, "-m", "mentra_nb", "demo", "--db", str(db)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "[tool call: word_count -> 1]" in out.stdout
    assert "process 2 resumed 'writer' from demo.mentra.sqlite: status finished" in out.stdout
    assert "  4 messages" in out.stdout
    assert "now 6 messages" in out.stdout
    assert db.exists()


def test_the_demo_refuses_to_overwrite_an_existing_file(tmp_path):
    db = tmp_path / "x.sqlite"
    db.write_text("keep me")
    out = subprocess.run([sys.executable, "-m", "mentra_nb", "demo", "--db", str(db)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "already exists" in out.stderr
    assert db.read_text() == "keep me"
