"""Package-level promises: layering, the public API and the demo. (The docs' Python
examples run in tests/test_docs.py.)"""

from __future__ import annotations

import ast
import importlib
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


def test_the_names_imported_on_first_use_are_the_ones_type_checkers_see():
    tree = ast.parse((REPO / "mentra_nb" / "__init__.py").read_text())
    (guarded,) = [node for node in tree.body if isinstance(node, ast.If)
                  and ast.unparse(node.test) == "TYPE_CHECKING"]
    static = {alias.asname or alias.name: node.module
              for node in guarded.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert set(static) <= set(mentra_nb.__all__) and set(static) <= set(dir(mentra_nb))
    for name, module in static.items():  # each name resolves to what its static import names
        imported = getattr(importlib.import_module(module), name)
        assert getattr(mentra_nb, name) is imported, name


def test_importing_mentra_nb_imports_none_of_its_modules_until_a_name_is_used():
    code = ("import sys, mentra_nb\n"
            "print(sorted(m for m in sys.modules if m.startswith('mentra_nb')))\n"
            "mentra_nb.Runtime\n"
            "print('mentra_nb.runtime' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["['mentra_nb']", "True"]


def test_nothing_is_pickled():
    for path in (REPO / "mentra_nb").rglob("*.py"):
        text = path.read_text()
        assert "import pickle" not in text and "import dill" not in text, path


def test_the_demo_streams_then_a_second_process_resumes_the_agent(tmp_path):
    db = tmp_path / "demo.mentra.sqlite"
    out = subprocess.run([sys.executable, "-m", "mentra_nb", "demo", "--db", str(db)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    # Issue 15.8: the test model counted 7 words as 1 and "remembered" by echoing.
    assert "[tool call: word_count -> 7]" in out.stdout and "That sentence has 7 words." in out.stdout
    assert "process 2 resumed 'writer' from demo.mentra.sqlite: status finished" in out.stdout
    assert "  4 messages" in out.stdout
    # The second process answers from the first one's conversation, read from the file.
    assert ("You first asked: \u201cHow many words are in this sentence: the tide comes in twice a day.\u201d"
            in out.stdout)
    assert "now 6 messages" in out.stdout
    assert db.exists()


def test_the_demo_refuses_to_overwrite_an_existing_file(tmp_path):
    db = tmp_path / "x.sqlite"
    db.write_text("keep me")
    out = subprocess.run([sys.executable, "-m", "mentra_nb", "demo", "--db", str(db)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "already exists" in out.stderr
    assert db.read_text() == "keep me"


def test_load_ext_without_the_notebook_extra_says_what_to_install():
    # `sys.modules[name] = None` makes importing `name` fail as if it were not installed.
    code = (
        "import sys\n"
        "sys.modules['anywidget'] = None\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "try:\n"
        "    InteractiveShell.instance().run_line_magic('load_ext', 'mentra_nb')\n"
        "except ModuleNotFoundError as err:\n"
        "    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "needs mentra-nb's `notebook` extra, and anywidget is not installed" in out.stdout
    assert "%pip install 'mentra-nb[notebook]'" in out.stdout


def test_importing_mentra_nb_and_loading_the_extension_build_no_model_schema(tmp_path):
    """Loading the extension registers the magics and nothing more: the runtime, the
    widgets and pydantic's schemas load with the first `%mentra` command that needs them.
    (tests/benchmarks/bench_import.py prints what that saves.)"""
    code = (
        "import sys, pydantic, mentra_nb\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "def built():\n"
        "    todo, seen = [pydantic.BaseModel], []\n"
        "    while todo:\n"
        "        for sub in todo.pop().__subclasses__():\n"
        "            todo.append(sub)\n"
        "            if sub.__module__.startswith('mentra_nb') and sub.__pydantic_complete__:\n"
        "                seen.append(sub.__qualname__)\n"
        "    return seen\n"
        "print('import:', built())\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_line_magic('load_ext', 'mentra_nb')\n"
        "print('load_ext:', built(), 'mentra_nb.runtime._agent' in sys.modules)\n"
        "agent = shell.run_line_magic('mentra', 'spawn writer --model test')\n"
        "print('spawn:', 'mentra_nb.runtime._agent' in sys.modules)\n"
        "formatter = shell.display_formatter.ipython_display_formatter\n"
        "print('shown as a view:', formatter.lookup(agent) is not None)\n"
        "shell.run_line_magic('unload_ext', 'mentra_nb')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.splitlines()[:2] == ["import: []", "load_ext: [] False"]
    assert out.stdout.splitlines()[-2:] == ["spawn: True", "shown as a view: True"]


def test_loading_the_extension_does_not_import_pydantic(tmp_path):
    """`%load_ext` stays cheap: pydantic (about 90 ms) loads with the first command
    that needs it. A module-level `lazy_import` of a submodule still imports its
    package, which is how this regressed once."""
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'mentra_nb')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' or m == 'mentra_nb.providers'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == "[]"
