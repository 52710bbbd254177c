"""5. Import and load: `import mentra_nb` and `%load_ext mentra_nb` vs importing
mentra-nb's own dependencies alone, each in a fresh interpreter.

Each case runs in its own `python -c` process that times only the statement
(the interpreter's start is not counted); cases are interleaved and repeated,
and the best run of each is kept.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.benchmarks.report import Table, ratio

__all__ = ["run"]

REPEAT = 9
REPO = Path(__file__).resolve().parents[2]

_TIMED = (
    "import time\n{setup}\n_t = time.perf_counter()\n{statement}\n"
    "print(time.perf_counter() - _t)\n"
)
_SHELL = ("from IPython.core.interactiveshell import InteractiveShell\n"
          "shell = InteractiveShell.instance()")

RUNTIME_DEPS = "import pydantic, httpx, psutil"
NOTEBOOK_DEPS = RUNTIME_DEPS + ", anywidget, ipywidgets, traitlets, markdown_it"

# (label, setup, statement, the label it is compared with)
CASES = [
    ("dependencies of the runtime: pydantic, httpx, psutil", "", RUNTIME_DEPS, None),
    ("import mentra_nb", "", "import mentra_nb", 0),
    # The package imports its modules on first use; this is what a script that runs
    # agents pays in all (every model class defined, no schema built yet).
    ("import mentra_nb, then use Runtime and SqliteStore", "",
     "import mentra_nb; mentra_nb.Runtime, mentra_nb.SqliteStore", 0),
    ("… and its notebook layer's: + anywidget, ipywidgets, traitlets, markdown_it "
     "(in an IPython shell)", _SHELL, NOTEBOOK_DEPS, None),
    ("%load_ext mentra_nb (in an IPython shell)", _SHELL,
     "shell.run_line_magic('load_ext', 'mentra_nb')", 3),
    # The extension loads the runtime and widgets with the first command that needs
    # them: this is what the first `%mentra spawn` cell pays on top of loading.
    ("%load_ext mentra_nb, then %mentra spawn writer", _SHELL,
     "shell.run_line_magic('load_ext', 'mentra_nb'); "
     "shell.run_line_magic('mentra', 'spawn writer --model test')", 3),
    ("peer: import langgraph.graph + langgraph.checkpoint.sqlite", "",
     "import langgraph.graph, langgraph.checkpoint.sqlite", 2),
    ("peer: import agents (OpenAI Agents SDK)", "", "import agents", 2),
]


def _time(setup: str, statement: str) -> float | None:
    code = _TIMED.format(setup=setup, statement=statement)
    # In a fresh folder, so a spawned agent's state file lands there, with the
    # checkout importable first.
    with tempfile.TemporaryDirectory(prefix="mentra-bench-import-") as folder:
        done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode != 0:
        return None
    return float(done.stdout.strip().splitlines()[-1])


def run() -> list[Table]:
    # Installed packages carry bytecode (pip compiles on install); a source checkout
    # under PYTHONDONTWRITEBYTECODE would not, and would time the compiler instead.
    compileall.compile_dir(REPO / "mentra_nb", quiet=1)
    runs: list[list[float]] = [[] for _ in CASES]
    for _ in range(REPEAT):
        for index, (_label, setup, statement, _base) in enumerate(CASES):
            seconds = _time(setup, statement)
            if seconds is not None:
                runs[index].append(seconds)
    best = [min(r) if r else None for r in runs]
    table = Table("Import and load (fresh interpreter each time)",
                  ["what", "ms", "compared with", "ratio"])
    for (label, _setup, _statement, base), seconds in zip(CASES, best, strict=True):
        if seconds is None:
            table.add(label, "not installed", "", "")
            continue
        if base is None or best[base] is None:
            table.add(label, seconds * 1000, "", "")
        else:
            table.add(label, seconds * 1000, CASES[base][0].split(":")[0].split(" (")[0],
                      ratio(best[base], seconds))  # type: ignore[arg-type]
    table.notes.append(f"best of {REPEAT} interleaved runs; the interpreter's own start is not "
                       "counted; ratio = this row's time ÷ the compared row's")
    return [table]


if __name__ == "__main__":
    for table in run():
        print(table.text(), end="\n\n")
