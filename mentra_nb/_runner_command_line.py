"""The notebooks a headless runner's command line runs (its inputs, not its outputs).

`jupyter nbconvert --to notebook --execute --output out.ipynb report.ipynb`
runs one notebook, `report.ipynb`: the word after `--output` is a value, not a
second notebook. So each runner's command line is read by its own parser's
rules, from the options it declares (a value-taking option's value is never an
input), instead of picking every `*.ipynb` word:

- nbconvert and `jupyter execute` (nbclient) are traitlets applications:
  `--name=value` is one word; an alias (`--output`, `--output-dir`, `--to`, …)
  or a `--Class.trait` takes the next word as its value; any other `--name` or
  `-x` is a flag (`--execute`, `--inplace`, `-y`); the rest are notebooks, which
  may name a glob or leave out `.ipynb` (both runners add it).
- papermill is a click command: `NOTEBOOK_PATH [OUTPUT_PATH]`, options before,
  between or after them; `-p`/`-r` take two values, its other value options one
  (`-kpython3` and `--kernel=python3` carry theirs in the same word), `--` ends
  the options.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

__all__ = ["RUNNERS", "runner_inputs"]

# What names a runner in its process's command line (the script's file name, or
# `-m nbconvert`), and the runner it is.
RUNNERS = {"nbconvert": "nbconvert", "papermill": "papermill", "jupyter-execute": "nbclient",
           "nbclient": "nbclient"}

# The aliases that take a value (`jupyter nbconvert --help-all`; jupyter_core adds
# log-level and config to every app). Spelt with '-': traitlets reads '_' alike.
_TRAITLETS_VALUE_ALIASES = {
    "nbconvert": {"to", "template", "template-file", "theme", "sanitize-html", "writer", "post",
                  "output", "output-dir", "reveal-prefix", "nbformat", "log-level", "config"},
    "nbclient": {"timeout", "startup-timeout", "kernel-name", "output", "log-level", "config"},
}

# papermill's options that take values, and how many (`papermill --help`).
_PAPERMILL_VALUES = {
    "-p": 2, "--parameters": 2, "-r": 2, "--parameters_raw": 2,
    "-f": 1, "--parameters_file": 1, "-y": 1, "--parameters_yaml": 1, "-b": 1, "--parameters_base64": 1,
    "--engine": 1, "--autosave-cell-every": 1, "-k": 1, "--kernel": 1, "-l": 1, "--language": 1,
    "--cwd": 1, "--stdout-file": 1, "--stderr-file": 1, "--log-level": 1, "--start-timeout": 1,
    "--start_timeout": 1, "--execution-timeout": 1,
}


def runner_inputs(argv: Sequence[str], cwd: Path, pwd: str | None = None) -> tuple[str, list[Path]] | None:
    """The runner whose command line `argv` is ("nbconvert", "papermill" or
    "nbclient") and the notebooks it runs, absolute (relative ones are read from
    `cwd`, the runner's folder now; `pwd`, its `PWD` variable, helps to find the
    folder it was started in after `papermill --cwd /abs/dir` moved it); None when
    `argv` is no runner's."""
    for index, word in enumerate(argv):
        name = Path(word).name
        if name == "jupyter" and index + 1 < len(argv):
            # `jupyter nbconvert …` as typed (on Windows the process keeps it so)
            name, index = f"jupyter-{argv[index + 1]}", index + 1
        runner = next((r for key, r in RUNNERS.items() if key in name), None)
        if runner is not None:
            break
    else:
        return None
    args = argv[index + 1:]
    if runner == "papermill":
        named, moved_to = _papermill_arguments(args)
        started_in = _before_chdir(cwd, moved_to, pwd) if moved_to else cwd
        if started_in is None:
            return runner, []
        # INPUT OUTPUT: the state belongs to the input ("-": a notebook piped in, no path)
        inputs = [started_in / n for n in named[:1] if n != "-"]
    else:
        inputs = [p for n in _traitlets_positionals(args, _TRAITLETS_VALUE_ALIASES[runner])
                  for p in _notebook_files(n, cwd)]
    return runner, list(dict.fromkeys(p.absolute() for p in inputs))


def _traitlets_positionals(args: Sequence[str], value_aliases: set[str]) -> list[str]:
    positionals: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--":
            positionals.extend(words)
        elif word.startswith("--") and "=" not in word:
            name = word[2:].replace("_", "-")
            if name in value_aliases or "." in name:
                next(words, None)
        elif not word.startswith("-"):
            positionals.append(word)
    return positionals


def _papermill_arguments(args: Sequence[str]) -> tuple[list[str], str | None]:
    """papermill's positionals, and its `--cwd` (the folder it moves into before it
    starts the kernel, so its own folder then is no longer the one it started in)."""
    positionals: list[str] = []
    moved_to: str | None = None
    words = iter(args)
    for word in words:
        if word == "--":
            positionals.extend(words)
            continue
        if not word.startswith("-") or word == "-":
            positionals.append(word)
            continue
        option, value = word.split("=", 1) if word.startswith("--") and "=" in word else (word, None)
        if not option.startswith("--") and len(option) > 2:  # `-kpython3`: the value in the word
            option, value = option[:2], option[2:]
        values = [value] if value is not None else []
        for _ in range(_PAPERMILL_VALUES.get(option, 0) - len(values)):
            values.append(next(words, ""))
        if option == "--cwd" and values:
            moved_to = values[0]
    return positionals, moved_to


def _before_chdir(now: Path, moved_to: str, pwd: str | None) -> Path | None:
    """The folder a process started in, from the folder it is in `now` after moving
    to `moved_to` (relative to where it started, or absolute); None if unknown."""
    target = Path(moved_to).expanduser()
    if not target.is_absolute() and ".." not in target.parts:
        start = now
        for _ in target.parts:
            start = start.parent
        if (start / target).resolve() == now.resolve():
            return start
    if pwd and (Path(pwd) / target).resolve() == now.resolve():
        return Path(pwd)
    return None


def _notebook_files(name: str, cwd: Path) -> list[Path]:
    """The notebooks one positional names, as nbconvert and nbclient read it: a glob
    (quoted past the shell) or a path, `.ipynb` added when it has none."""
    path = Path(name).expanduser()
    path = path if path.is_absolute() else cwd / path
    if glob.has_magic(name):
        return sorted(p for p in map(Path, glob.glob(str(path))) if p.suffix == ".ipynb")
    if path.suffix != ".ipynb":
        path = path.with_name(path.name + ".ipynb")
    return [path]
