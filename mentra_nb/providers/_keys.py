"""API keys: where they come from, and how they stay out of sight.

A key is looked up in this order: an explicit argument, the provider's
environment variables (in order), then a `.env` file beside the working
notebook or in the current directory. The `.env` file is read, never loaded
into `os.environ`, so other code in the kernel does not see its contents.

A `Secret` never shows its value: its repr and str name only where it came
from, and `redact()` scrubs a key out of any text before it reaches an error
message, a log line, the store or a cassette.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from mentra_nb._notebook_path import notebook_path
from mentra_nb.errors import ProviderAuthError

__all__ = ["Secret", "find_dotenv_files", "read_dotenv", "redact", "resolve_key"]


class Secret:
    """A key that does not print. `reveal()` is the only way to read it."""

    __slots__ = ("_source", "_value")

    def __init__(self, value: str, source: str = "an explicit argument") -> None:
        self._value = value
        self._source = source

    def reveal(self) -> str:
        return self._value

    @property
    def source(self) -> str:
        """Where the key came from, e.g. `OPENAI_API_KEY` or `/work/.env (OPENAI_API_KEY)`."""
        return self._source

    def __repr__(self) -> str:
        return f"Secret(from {self._source}, {len(self._value)} chars)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a Secret cannot be pickled; keys stay in the environment")


# Shapes of provider keys, scrubbed even when they are not the key we hold: an
# error body may quote a key the user pasted somewhere else.
# The lookbehind keeps ordinary words ("task-management-...") intact.
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_\-])"
    r"(sk-ant-[A-Za-z0-9_\-]{8,}|sk-(?:proj-|or-v1-)?[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,})"
)


# A key shown half-masked, as some providers echo it ("sk-proj-abc1****wxyz").
_MASKED_KEYS = re.compile(r"(?<![A-Za-z0-9_\-])(?:sk-|AIza)[A-Za-z0-9_\-]*[*•.…]{3,}[A-Za-z0-9_\-]*")
# A value that looks like a key (one token, long); only those are matched by fragment.
_KEY_LIKE = re.compile(r"[A-Za-z0-9_\-.+/=]{16,}")
_TOKEN = re.compile(r"[A-Za-z0-9_\-]{10,}")
MIN_FRAGMENT_CHARS = 10


def redact(text: str, secrets: Iterable[Secret | str | None] = ()) -> str:
    """`text` with every given secret, and anything shaped like a provider key, masked.

    A fragment of 10 or more characters of a key-like secret is masked too: an
    error body may quote the first characters of the key it rejected."""
    keys: list[str] = []
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value and len(value) >= 4:
            text = text.replace(value, "[redacted]")
            if _KEY_LIKE.fullmatch(value):
                keys.append(value)
    text = _MASKED_KEYS.sub("[redacted]", text)
    if keys:
        text = _TOKEN.sub(
            lambda m: "[redacted]" if any(m.group(0) in key for key in keys) else m.group(0), text)
    return _KEY_SHAPES.sub("[redacted]", text)


def find_dotenv_files() -> list[Path]:
    """`.env` beside the working notebook (when the kernel knows it), then in the cwd."""
    places: list[Path] = []
    notebook = notebook_path()
    if notebook is not None:
        places.append(notebook[0].parent / ".env")
    places.append(Path.cwd() / ".env")
    unique: list[Path] = []
    for place in places:
        if place not in unique:
            unique.append(place)
    return unique


_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def read_dotenv(path: Path) -> dict[str, str]:
    """The `NAME=value` pairs of a `.env` file (quotes, `export` and comments allowed)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    values: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _DOTENV_LINE.match(line)
        if match is None:
            continue
        name, raw = match.groups()
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            raw = raw[1:-1]
        else:
            raw = raw.split(" #", 1)[0].strip()
        values[name] = raw
    return values


def resolve_key(
    explicit: str | Secret | None,
    env_vars: Sequence[str],
    *,
    provider: str,
    required: bool = True,
) -> Secret | None:
    """Find the key for `provider`, or raise `ProviderAuthError` naming where to put it.

    With `required=False` (local servers that need no key) a missing key is `None`.
    """
    if isinstance(explicit, Secret):
        return explicit
    if explicit:
        return Secret(explicit)
    for name in env_vars:
        value = os.environ.get(name, "").strip()
        if value:
            return Secret(value, name)
    for path in find_dotenv_files():
        values = read_dotenv(path)
        for name in env_vars:
            value = values.get(name, "").strip()
            if value:
                return Secret(value, f"{path} ({name})")
    if not required:
        return None
    names = " or ".join(env_vars) if env_vars else "an api_key argument"
    raise ProviderAuthError(
        f"no API key for provider '{provider}': set {names} in the environment or in a .env "
        "file beside the notebook, or pass api_key=... to the provider"
    )
