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

# (label, setup, statement, compared with): an int is another case's index; "own
# dependencies" is a case made at run time that imports exactly the third-party and
# standard modules the statement itself loads (found in a fresh interpreter), so the
# ratio is what mentra-nb's own code adds, not a comparison with a guessed list.
OWN = "own dependencies"
CASES: list[tuple[str, str, str, int | str | None]] = [
    ("import mentra_nb", "", "import mentra_nb", OWN),
    # The package imports its modules on first use; this is what a script that runs
    # agents pays in all (every model class defined, no schema built yet).
    ("import mentra_nb, then use Runtime and SqliteStore", "",
     "import mentra_nb; mentra_nb.Runtime, mentra_nb.SqliteStore", OWN),
    ("%load_ext mentra_nb (in an IPython shell)", _SHELL,
     "shell.run_line_magic('load_ext', 'mentra_nb')", OWN),
    # The extension loads the runtime and widgets with the first command that needs
    # them: this is what the first `%mentra spawn` cell pays on top of loading.
    ("%load_ext mentra_nb, then %mentra spawn writer", _SHELL,
     "shell.run_line_magic('load_ext', 'mentra_nb'); "
     "shell.run_line_magic('mentra', 'spawn writer --model test')", OWN),
    ("peer: import langgraph.graph + langgraph.checkpoint.sqlite", "",
     "import langgraph.graph, langgraph.checkpoint.sqlite", 1),
    ("peer: import agents (OpenAI Agents SDK)", "", "import agents", 1),
]

# Top-level packages the statement brings in that were not loaded before it, and
# that can be imported by name (not extension internals such as cython_runtime).
_LOADED = (
    "import sys\n{setup}\n_before = {{m.split('.')[0] for m in sys.modules}}\n{statement}\n"
    "_new = {{m.split('.')[0] for m in sys.modules}} - _before\n"
    "print(' '.join(sorted(m for m in _new if '__' not in m and not m.startswith('_')\n"
    "      and getattr(sys.modules.get(m), '__spec__', None) is not None)))\n"
)


def _own_dependencies(setup: str, statement: str) -> list[str]:
    """Top-level modules other than mentra_nb that `statement` imports."""
    code = _LOADED.format(setup=setup, statement=statement)
    with tempfile.TemporaryDirectory(prefix="mentra-bench-import-") as folder:
        done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode != 0:
        return []
    return [m for m in done.stdout.split() if m != "mentra_nb" and not m.startswith("_")]


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
    cases: list[tuple[str, str, str, int | None]] = []
    for label, setup, statement, base in CASES:
        if base == OWN and not (modules := _own_dependencies(setup, statement)):
            cases.append((f"{label}: loads no module besides its own", setup, statement, None))
        elif base == OWN:
            third_party = [m for m in modules if m not in sys.stdlib_module_names]
            shown = ", ".join(third_party[:4]) + (f" + {len(third_party) - 4} more"
                                                  if len(third_party) > 4 else "")
            cases.append((f"  its dependencies alone: {shown or 'none'} (+ standard library)", setup,
                          f"import {', '.join(modules)}", None))
            cases.append((label, setup, statement, len(cases) - 1))
        else:
            cases.append((label, setup, statement, None if base is None else int(base) * 2 + 1))
    runs: list[list[float]] = [[] for _ in cases]
    for _ in range(REPEAT):
        for index, (_label, setup, statement, _base) in enumerate(cases):
            seconds = _time(setup, statement)
            if seconds is not None:
                runs[index].append(seconds)
    best = [min(r) if r else None for r in runs]
    table = Table("Import and load (fresh interpreter each time)",
                  ["what", "ms", "compared with", "ratio"])
    for (label, _setup, _statement, base), seconds in zip(cases, best, strict=True):
        if seconds is None:
            table.add(label, "not installed", "", "")
        elif base is None or best[base] is None:
            table.add(label, seconds * 1000, "", "")
        else:
            table.add(label, seconds * 1000, cases[base][0].strip().split(":")[0].split(" (")[0],
                      ratio(best[base], seconds))  # type: ignore[arg-type]
    table.notes += [
        f"best of {REPEAT} interleaved runs; the interpreter's own start is not counted; "
        "ratio = this row's time ÷ the compared row's",
        "its dependencies alone: the modules (besides mentra_nb) that the row below it loads, "
        "found in a fresh interpreter and imported without mentra_nb; mentra_nb's bytecode is "
        "compiled before timing, as pip does on install",
    ]
    return [table]


if __name__ == "__main__":
    for table in run():
        print(table.text(), end="\n\n")
