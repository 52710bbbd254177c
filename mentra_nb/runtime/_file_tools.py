"""File tools confined to a workspace folder: `read_file`, `list_dir`, `glob`,
`grep`, `write_file` and `edit_file`.

    rt = Runtime(workspace="~/analysis")          # registers file_tools(workspace)
    tools = file_tools("/data/project")           # or build them yourself

Every path the model gives is resolved (`..` and every symlink on the way
followed) and refused unless the result lies inside the workspace root, so
neither `../../etc/passwd` nor a symlink pointing out of the folder reaches
another file. Walking tools do not descend into symlinked folders and skip
symlinked files that point outside. Outputs are bounded; a cut output ends
with a note saying how to get the rest. Refusals are error results that tell
the model what to do instead.

Files that hold credentials (`SECRET_FILES`: `.env*`, `*.pem`, `*.key`,
`id_rsa*`, `.netrc`, `.git-credentials`, cloud credential folders...) are
refused by every file tool, reading and writing, and left out of listings'
contents and searches: the default workspace is the notebook's folder, where
the API key's `.env` lives, and a prompt injection must not be able to read it.
Pass `Workspace(root, secret_files=[...])` to change the list (`()` turns the
rule off). Only regular files are opened, never blocking: a FIFO or a device
in the workspace is skipped by searches and refused by reads.

This guards against a model's mistakes, not against an attacker racing the
tool on the same machine (a path swapped for a symlink between the check and
the write would be followed), and a hard link to a secret file under another
name is not recognised as secret.
"""

from __future__ import annotations

import fnmatch
import io
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from functools import wraps
from pathlib import Path
from typing import IO, Annotated, Any

from pydantic import Field

from mentra_nb.errors import ConfigError
from mentra_nb.runtime._redaction import known_secrets, scrub
from mentra_nb.runtime.tools import Tool, ToolDurability, ToolOutput, tool

__all__ = ["FILE_TOOL_NAMES", "SECRET_FILES", "Workspace", "WorkspaceRefusal", "exact_replacement", "file_tools"]

FILE_TOOL_NAMES = ("read_file", "list_dir", "glob", "grep", "write_file", "edit_file")
"""The names of the built-in file tools."""

MAX_OUTPUT_CHARS = 40_000  # one tool result; roughly 10k tokens
MAX_LINE_CHARS = 2_000
DEFAULT_READ_LINES = 2_000
MAX_ENTRIES = 500  # list_dir and glob
MAX_MATCHES = 200  # grep
MAX_GREP_FILE_BYTES = 5_000_000
MAX_WRITE_BYTES = 5_000_000
BINARY_SNIFF_BYTES = 8_192
# Folders that are never what the user means and can hold huge trees.
SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules", ".ipynb_checkpoints", ".venv",
                          ".mypy_cache", ".ruff_cache", ".pytest_cache"})


# Files that hold credentials, refused by every file tool. A pattern without '/'
# matches any file or folder name on the path ('.env*' also refuses '.env.local');
# one ending in '/' matches a folder and everything under it; one with a '/'
# inside matches the end of the path ('.aws/credentials').
SECRET_FILES: tuple[str, ...] = (
    ".env", ".env.*", ".envrc", "*.env",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".ssh/",
    ".netrc", "_netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc",
    ".aws/", ".azure/", ".config/gcloud/", "application_default_credentials.json",
    "credentials.json", "service-account*.json", ".kube/config", ".docker/config.json",
)
"""The files the file tools refuse to read or write (see the Security guide for the matching
rules).
"""


class WorkspaceRefusal(Exception):
    """A request the file tools refuse; its message goes back to the model."""


class Workspace:
    """A folder the file tools may not leave, and the secret files in it they may not touch.

    `secret_files` are glob patterns (see `SECRET_FILES`, the default); `()`
    lets the tools read every file, credentials included.
    """

    def __init__(self, root: str | os.PathLike[str], *,
                 secret_files: Iterable[str] = SECRET_FILES) -> None:
        path = Path(root).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(f"the workspace {path} is not a folder; pass an existing folder as workspace=")
        self.root = path
        self.secret_files = tuple(secret_files)
        # Compared in lower case: on a case-insensitive disk '.ENV' opens '.env'.
        lowered = [p.lower() for p in self.secret_files]
        self._secret_names = [p for p in lowered if "/" not in p]
        self._secret_dirs = [p.rstrip("/") for p in lowered if p.endswith("/")]
        self._secret_paths = [p for p in lowered if "/" in p and not p.endswith("/")]

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str) -> Path:
        """`path` (relative to the root, or absolute inside it) resolved, or a refusal."""
        if not path or "\x00" in path:
            raise WorkspaceRefusal("the path is empty; give a path relative to the workspace root, e.g. 'data/sales.csv'")
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = candidate.resolve()  # follows '..' and every symlink on the way
        except (OSError, RuntimeError):  # a symlink loop is a RuntimeError before Python 3.13
            raise WorkspaceRefusal(
                f"'{path}' cannot be resolved (a symlink loop or an unreadable folder); use another path"
            ) from None
        if not resolved.is_relative_to(self.root):
            raise WorkspaceRefusal(
                f"'{path}' is outside the workspace {self.root} (through '..', an absolute path or a "
                "symlink), so it was refused; use a path inside the workspace, relative to its root"
            )
        # Both the name asked for and where it leads: a symlink 'notes.txt' -> '.env' is secret too.
        if self.is_secret(candidate) or self.is_secret(resolved):
            raise WorkspaceRefusal(
                f"'{path}' is a secret file (it matches the workspace's secret_files, e.g. .env or "
                "*.pem), so the file tools do not read or write it; ask the user for what you need "
                "from it instead"
            )
        return resolved

    def is_secret(self, path: Path) -> bool:
        """Whether `path` (inside the workspace) matches one of `secret_files`."""
        if not self.secret_files:
            return False
        try:
            parts = tuple(part.lower() for part in path.relative_to(self.root).parts)
        except ValueError:
            parts = tuple(part.lower() for part in path.parts)
        for index, part in enumerate(parts):
            if any(fnmatch.fnmatchcase(part, p) for p in self._secret_names):
                return True
            if index < len(parts) - 1 or path.is_dir():
                folder = "/".join(parts[: index + 1])
                if any(folder == d or folder.endswith("/" + d) for d in self._secret_dirs):
                    return True
        rel = "/".join(parts)
        return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(rel, "*/" + p)
                   for p in self._secret_paths)

    def leads_to_secret(self, path: Path) -> bool:
        """`path` is secret, or is a symlink to a secret file."""
        if self.is_secret(path):
            return True
        if not path.is_symlink():
            return False
        try:
            return self.is_secret(path.resolve())
        except (OSError, RuntimeError):
            return False

    def relative(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return display_name(rel or ".")

    def inside(self, path: Path) -> bool:
        try:
            return path.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            return False

    def walk_files(self, top: Path) -> Iterator[Path]:
        """Files under `top` in a stable order, never through a symlinked folder
        and never a symlinked file that points outside the workspace."""
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS
                                 and not self.is_secret(Path(dirpath) / d))
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if path.is_symlink() and not self.inside(path):
                    continue
                if not _is_regular(path) or self.leads_to_secret(path):
                    continue  # FIFOs, sockets, devices, broken links and loops; credentials
                yield path


def display_name(name: str) -> str:
    """A file name as valid UTF-8 text: bytes that are not UTF-8 (a Latin-1 name
    decodes to lone surrogates) become U+FFFD instead of breaking the result."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "replace")


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _open_regular(path: Path) -> IO[bytes]:
    """`path` opened for reading, or a refusal if it is not a regular file.

    O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer,
    forever, in a worker thread that then blocks interpreter exit."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise WorkspaceRefusal(f"cannot open '{display_name(path.name)}': {err.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WorkspaceRefusal(
                f"'{display_name(path.name)}' is not a regular file (a FIFO, socket or device); "
                "the file tools read regular files only"
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_text(path: Path) -> IO[str]:
    return io.TextIOWrapper(_open_regular(path), encoding="utf-8", errors="replace")


def _refusals_as_errors(func: Callable[..., str]) -> Callable[..., str | ToolOutput]:
    """A refusal becomes an error result the model can act on, not a traceback."""

    @wraps(func)
    def run(*args: Any, **kwargs: Any) -> str | ToolOutput:
        try:
            return func(*args, **kwargs)
        except WorkspaceRefusal as refusal:
            return ToolOutput(content=str(refusal), is_error=True)

    return run


def _is_binary(path: Path) -> bool:
    with _open_regular(path) as handle:
        return b"\x00" in handle.read(BINARY_SNIFF_BYTES)


def _existing_file(workspace: Workspace, path: str, tool_name: str) -> Path:
    target = workspace.resolve(path)
    if not target.exists():
        raise WorkspaceRefusal(f"there is no file '{path}' in the workspace; list_dir or glob shows what exists")
    if target.is_dir():
        raise WorkspaceRefusal(f"'{path}' is a folder, not a file; use list_dir to see what is in it")
    if not target.is_file():
        raise WorkspaceRefusal(f"'{path}' is not a regular file (a FIFO, socket or device); "
                               f"{tool_name} works on regular files only")
    if _is_binary(target):
        raise WorkspaceRefusal(
            f"'{path}' looks binary ({target.stat().st_size} bytes); {tool_name} works on text files only"
        )
    return target


def _masked_lines(path: Path, secrets: list[str]) -> list[str]:
    """The lines of a text file as a tool result would show them: with the secrets
    the runtime knows masked. grep matches these, never the raw text: a pattern that
    could match only inside a secret (`key=sk-a`, `key=sk-b`, ... one call a character)
    then matches nothing, so which calls match says nothing about the secret."""
    with _open_text(path) as handle:
        text = handle.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line
    masked = scrub(text, secrets).split("\n")[: len(lines)]
    if len(masked) != len(lines):  # a secret spanning lines: mask line by line, keeping the numbers
        masked = [scrub(line, secrets) for line in lines]
    return masked


def _clip_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} characters]"


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob (`*`, `?`, `[...]`, `**` for any depth) as a regex over '/'-separated paths."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def _check_pattern(pattern: str) -> None:
    if not pattern.strip():
        raise WorkspaceRefusal("the pattern is empty; for example '**/*.csv' or 'data/*.json'")
    if pattern.startswith(("/", "~")) or ".." in Path(pattern).parts:
        raise WorkspaceRefusal(
            f"the pattern '{pattern}' leaves the workspace; patterns are relative to the workspace "
            "root, e.g. '**/*.py'"
        )


def file_tools(workspace: str | os.PathLike[str] | Workspace) -> list[Tool]:
    """The six file tools, bound to `workspace`. `write_file` and `edit_file`
    require approval; the other four are read-only. None of them touches a
    file that matches the workspace's `secret_files`."""
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)

    @tool(read_only=True)
    @_refusals_as_errors
    def read_file(
        path: Annotated[str, Field(description="File path relative to the workspace root")],
        offset: Annotated[int, Field(ge=1, description="First line to show (1-based)")] = 1,
        limit: Annotated[int, Field(ge=1, le=5_000, description="How many lines to show")] = DEFAULT_READ_LINES,
    ) -> str:
        """Read a text file of the workspace, with line numbers (`offset`/`limit` page through long files)."""
        target = _existing_file(ws, path, "read_file")
        shown: list[str] = []
        used = 0
        total = 0
        last = offset - 1
        with _open_text(target) as handle:
            for number, line in enumerate(handle, start=1):
                total = number
                if number < offset or number >= offset + limit:
                    continue
                text = f"{number:>6}\t{_clip_line(line.rstrip(chr(10)))}"
                if shown and used + len(text) + 1 > MAX_OUTPUT_CHARS:
                    limit = number - offset  # the limit ends here; count on to report the total
                    continue
                shown.append(text)
                used += len(text) + 1
                last = number
        if total == 0:
            return f"'{path}' is empty"
        if offset > total:
            raise WorkspaceRefusal(f"offset {offset} is past the end: '{path}' has {total} lines")
        if last < total:
            shown.append(f"[showing lines {offset}-{last} of {total}; call read_file with "
                         f"offset={last + 1} to read on]")
        return "\n".join(shown)

    @tool(read_only=True)
    @_refusals_as_errors
    def list_dir(
        path: Annotated[str, Field(description="Folder relative to the workspace root")] = ".",
        depth: Annotated[int, Field(ge=1, le=5, description="How many levels to show")] = 1,
    ) -> str:
        """List a workspace folder: subfolders end with '/', files show their size."""
        top = ws.resolve(path)
        if not top.exists():
            raise WorkspaceRefusal(f"there is no folder '{path}' in the workspace; try list_dir with path='.'")
        if not top.is_dir():
            raise WorkspaceRefusal(f"'{path}' is a file; use read_file to read it")
        lines: list[str] = []
        cut = False

        def visit(folder: Path, level: int) -> None:
            nonlocal cut
            try:
                entries = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name))
            except OSError as err:
                lines.append(f"{'  ' * level}[cannot list: {err.strerror}]")
                return
            for entry in entries:
                if len(lines) >= MAX_ENTRIES:
                    cut = True
                    return
                indent = "  " * level
                name = display_name(entry.name)
                if ws.leads_to_secret(entry):
                    lines.append(f"{indent}{name}  (secret file: the file tools do not open it)")
                elif entry.is_symlink():
                    where = "inside" if ws.inside(entry) else "outside the workspace, not followed"
                    lines.append(f"{indent}{name} -> symlink ({where})")
                elif entry.is_dir():
                    skipped = " (skipped)" if entry.name in SKIPPED_DIRS else ""
                    lines.append(f"{indent}{name}/{skipped}")
                    if level + 1 < depth and not skipped:
                        visit(entry, level + 1)
                elif not _is_regular(entry):
                    lines.append(f"{indent}{name}  (not a regular file)")
                else:
                    lines.append(f"{indent}{name}  ({entry.stat().st_size} bytes)")

        visit(top, 0)
        if not lines:
            return f"'{path}' is empty"
        if cut:
            lines.append(f"[stopped after {MAX_ENTRIES} entries; list a subfolder or use a smaller depth]")
        return "\n".join(lines)

    @tool(read_only=True)
    @_refusals_as_errors
    def glob(
        pattern: Annotated[str, Field(description="Glob relative to the workspace root, e.g. '**/*.csv'")],
    ) -> str:
        """Find workspace files whose path matches a glob ('*' within a folder, '**' across folders)."""
        _check_pattern(pattern)
        regex = _glob_regex(pattern)
        found: list[str] = []
        for path in ws.walk_files(ws.root):
            rel = ws.relative(path)
            if regex.fullmatch(rel):
                found.append(rel)
                if len(found) > MAX_ENTRIES:
                    break
        if not found:
            return f"no files match '{pattern}'"
        found.sort()
        if len(found) > MAX_ENTRIES:
            return "\n".join(found[:MAX_ENTRIES]) + (
                f"\n[stopped after {MAX_ENTRIES} files; use a narrower pattern]")
        return "\n".join(found)

    @tool(read_only=True)
    @_refusals_as_errors
    def grep(
        pattern: Annotated[str, Field(description="Python regular expression to search for")],
        path: Annotated[str, Field(description="File or folder to search, relative to the root")] = ".",
        glob: Annotated[str | None, Field(description="Only files matching this glob, e.g. '*.py'")] = None,
    ) -> str:
        """Search workspace text files for a regular expression; prints path:line: text for each match.
        Secrets are masked as [redacted] before matching, so a pattern never matches inside one."""
        try:
            regex = re.compile(pattern)
        except re.error as err:
            raise WorkspaceRefusal(f"the pattern is not a valid regular expression ({err}); "
                                   "escape special characters such as ( [ . * with a backslash") from None
        top = ws.resolve(path)
        if not top.exists():
            raise WorkspaceRefusal(f"there is no '{path}' in the workspace; list_dir shows what exists")
        name_filter = None
        if glob is not None:
            _check_pattern(glob)
            name_filter = _glob_regex(glob)
        if not top.is_dir() and not top.is_file():
            raise WorkspaceRefusal(f"'{path}' is not a regular file (a FIFO, socket or device); "
                                   "grep searches regular files only")
        files = [top] if top.is_file() else ws.walk_files(top)
        secrets = known_secrets(ws.root)
        matches: list[str] = []
        used = 0
        cut = False
        for file in files:
            rel = ws.relative(file)
            if name_filter is not None and not name_filter.fullmatch(rel if "/" in glob else file.name):  # type: ignore[operator]
                continue
            try:
                if file.stat().st_size > MAX_GREP_FILE_BYTES or _is_binary(file):
                    continue
                for number, text in enumerate(_masked_lines(file, secrets), start=1):
                    if regex.search(text):
                        if len(text) > 300:
                            text = text[:300] + "…"
                        entry = f"{rel}:{number}: {text}"
                        if len(matches) >= MAX_MATCHES or used + len(entry) > MAX_OUTPUT_CHARS:
                            cut = True
                            break
                        matches.append(entry)
                        used += len(entry) + 1
            except (OSError, WorkspaceRefusal):
                continue
            if cut:
                break
        if not matches:
            return f"no matches for /{pattern}/ in '{path}'"
        if cut:
            matches.append(f"[stopped after {len(matches)} matches; narrow the search with path=, glob= "
                           "or a more specific pattern]")
        return "\n".join(matches)

    @tool(requires_approval=True)
    @_refusals_as_errors
    def write_file(
        path: Annotated[str, Field(description="File path relative to the workspace root")],
        content: Annotated[str, Field(description="The whole new content of the file")],
    ) -> str:
        """Create a file, or replace its whole content, inside the workspace (folders are created)."""
        target = ws.resolve(path)
        if target.is_dir():
            raise WorkspaceRefusal(f"'{path}' is a folder; give a file path")
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise WorkspaceRefusal(f"the content is {len(data)} bytes; write_file takes at most "
                                   f"{MAX_WRITE_BYTES} bytes, so split it into several files")
        existed = target.exists()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        verb = "replaced" if existed else "created"
        return f"{verb} '{ws.relative(target)}' ({lines} lines, {len(data)} bytes)"

    @tool(requires_approval=True, durability=ToolDurability.NOT_REPLAYABLE)
    @_refusals_as_errors
    def edit_file(
        path: Annotated[str, Field(description="File path relative to the workspace root")],
        old: Annotated[str, Field(description="Exact text to replace (whitespace matters)")],
        new: Annotated[str, Field(description="Text to put in its place")],
        replace_all: Annotated[bool, Field(description="Replace every occurrence, not just one")] = False,
    ) -> str:
        """Replace exact text in a workspace file; `old` must match once unless replace_all is true."""
        target = _existing_file(ws, path, "edit_file")
        if not old:
            raise WorkspaceRefusal("old is empty; to create or overwrite a whole file use write_file")
        if old == new:
            raise WorkspaceRefusal("old and new are the same text, so there is nothing to change")
        try:
            with _open_regular(target) as handle:
                text = handle.read().decode("utf-8")
        except UnicodeDecodeError:
            raise WorkspaceRefusal(f"'{path}' is not UTF-8 text; edit_file edits UTF-8 files only") from None
        updated, count, first_line = exact_replacement(text, old, new, where=f"'{path}'", reader="read_file",
                                                       replace_all=replace_all)
        target.write_bytes(updated.encode("utf-8"))
        times = f"{count} occurrences" if replace_all and count > 1 else "1 occurrence"
        return f"replaced {times} in '{ws.relative(target)}' (first at line {first_line})"

    return [read_file, list_dir, glob, grep, write_file, edit_file]


def exact_replacement(text: str, old: str, new: str, *, where: str, reader: str,
                      replace_all: bool = False, offers_replace_all: bool = True) -> tuple[str, int, int]:
    """`text` with `old` replaced by `new`, how many times it matched and the line of
    the first match; refuses (`WorkspaceRefusal`) when `old` matches nowhere, or more
    than once without `replace_all`. `where` names the text and `reader` the tool
    that shows it, for the model. (edit_file's rule; edit_cell's too.)"""
    count = text.count(old)
    if count == 0:
        hint = ""
        if old.strip() and old.strip() in text:
            hint = " (it matches once leading/trailing whitespace is removed: copy the exact whitespace)"
        raise WorkspaceRefusal(f"old was not found in {where}{hint}; {reader} shows the current text, "
                               "copy it exactly")
    if count > 1 and not replace_all:
        lines = _match_lines(text, old)
        shown = ", ".join(str(n) for n in lines[:10]) + (", …" if len(lines) > 10 else "")
        more = ", or set replace_all=true to change all" if offers_replace_all else ""
        raise WorkspaceRefusal(
            f"old matches {count} times in {where} (lines {shown}), so the edit is ambiguous; add "
            f"surrounding lines to old so it matches once{more}"
        )
    first_line = text[: text.index(old)].count("\n") + 1
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return updated, count, first_line


def _match_lines(text: str, old: str) -> list[int]:
    lines = []
    start = text.find(old)
    while start != -1:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(old, start + 1)
    return lines
