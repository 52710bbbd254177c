"""Postgres connection strings as mentra-nb reads them, without ever echoing a password.

A DSN is a URL (`postgresql://alice@db/mentra?sslmode=require`) or libpq's
keyword form (`host=db dbname=mentra user=alice`). Both may carry mentra-nb's
own options, which libpq would refuse ("invalid URI query parameter"), so they
are taken out before psycopg sees the string:

- `prepare_threshold=N`: use server-side prepared statements after N runs of a
  query (psycopg's setting; off by default, which a transaction pooler needs);
- `listen_url=DSN`: where to LISTEN for mail (a session: the server itself,
  when the store's DSN goes through PgBouncer in transaction mode).

libpq's own messages about a malformed string quote the offending part, which
may be the password (`invalid percent-encoded token: "PW%zz"`) or the whole
URL: `scrub` takes every form of the password out of any text before it is
shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = ["MENTRA_OPTIONS", "ParsedDsn", "has_password", "is_dsn", "parse_dsn", "redact_dsn", "scrub"]

_SCHEMES = ("postgresql://", "postgres://")
# mentra-nb's options, taken out of a DSN before psycopg reads it.
MENTRA_OPTIONS = ("prepare_threshold", "listen_url")
# libpq's connection keywords (PostgreSQL 17's list): a string starting with one
# of them and "=" is a keyword DSN, never a file name.
_LIBPQ_KEYWORDS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
    "channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode",
    "sslnegotiation", "requiressl", "sslcompression", "sslcert", "sslkey", "sslpassword",
    "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer",
    "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib",
    "gssdelegation", "service", "target_session_attrs", "load_balance_hosts",
})
_KEYWORD_START = re.compile(r"\s*([A-Za-z_]+)\s*=")
_SECRET_KEYS = ("password", "sslpassword")
_HIDDEN = "***"


def is_dsn(location: object) -> bool:
    """Whether `location` names a Postgres database (a URL, or libpq's keyword
    form) rather than a SQLite file."""
    if not isinstance(location, str):
        return False
    if location.lower().startswith(_SCHEMES):
        return True
    start = _KEYWORD_START.match(location)
    return start is not None and start.group(1).lower() in _LIBPQ_KEYWORDS | set(MENTRA_OPTIONS)


@dataclass(frozen=True)
class _Pair:
    key: str
    value: str  # unquoted
    raw: str  # as written (a URL's percent-encoded, a keyword DSN's quoted form)
    start: int  # the pair's span in the string
    end: int


@dataclass(frozen=True)
class ParsedDsn:
    """A DSN split into what libpq reads and mentra-nb's own options."""

    libpq: str
    options: dict[str, str]


def parse_dsn(dsn: str) -> ParsedDsn:
    """`dsn` without mentra-nb's options, and those options (unquoted)."""
    pairs = _pairs(dsn)
    ours = [p for p in pairs if p.key in MENTRA_OPTIONS]
    if not ours:
        return ParsedDsn(dsn, {})
    options = {p.key: p.value for p in ours}
    if _is_url(dsn):
        base, _, query = dsn.partition("?")
        query, hash_mark, fragment = query.partition("#")
        kept = [item for item in query.split("&")
                if item and item.split("=", 1)[0] not in MENTRA_OPTIONS]
        libpq = base + ("?" + "&".join(kept) if kept else "") + hash_mark + fragment
    else:
        libpq, cut = "", 0
        for pair in ours:
            libpq += dsn[cut:pair.start]
            cut = pair.end
        libpq += dsn[cut:]
    return ParsedDsn(libpq.strip(), options)


def redact_dsn(dsn: str) -> str:
    """`dsn` without its password, for messages and `repr`: user@host:port/database."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = {key: str(value) for key, value in conninfo_to_dict(parse_dsn(dsn).libpq).items()}
    except Exception:  # not a DSN psycopg can read: show nothing of it
        return "<unreadable DSN>"
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


def has_password(dsn: str) -> bool:
    """Whether `dsn` (or its `listen_url`) carries a password."""
    return bool(_secrets(dsn))


def scrub(text: str, *dsns: str) -> str:
    """`text` (a message of libpq's, say) without any password of `dsns`, in any
    form it may appear (as written, percent-decoded, unquoted), nor any DSN whole."""
    secrets: set[str] = set()
    for dsn in dsns:
        secrets |= _secrets(dsn)
    for dsn in dsns:  # a whole DSN quoted in the text: shown without its password
        if _secrets(dsn):
            text = text.replace(dsn, redact_dsn(dsn))
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, _HIDDEN)
    return text


# --- parsing ---------------------------------------------------------------------


def _is_url(dsn: str) -> bool:
    return dsn.lower().startswith(_SCHEMES)


def _secrets(dsn: str) -> set[str]:
    """Every form of the passwords in `dsn`, as libpq would find them (also in a
    malformed string, where libpq stops with an error quoting them)."""
    found: set[str] = set()
    if _is_url(dsn):
        rest = dsn.split("://", 1)[1]
        # libpq: the credentials end at the first '@' before any '/'.
        authority = re.match(r"[^@/]*@", rest)
        if authority is not None:
            _, colon, password = authority.group(0)[:-1].partition(":")
            if colon and password:
                found |= {password, unquote(password)}
    found |= {form for pair in _pairs(dsn) if pair.key in _SECRET_KEYS and pair.value
              for form in (pair.value, pair.raw)}
    # A URL inside a listen_url option holds its own password.
    for pair in _pairs(dsn):
        if pair.key == "listen_url" and pair.value != dsn:
            found |= _secrets(pair.value)
    return {s for s in found if s}


def _pairs(dsn: str) -> list[_Pair]:
    return _url_pairs(dsn) if _is_url(dsn) else _keyword_pairs(dsn)


def _url_pairs(dsn: str) -> list[_Pair]:
    """A URL's query parameters (`?key=value&…`), percent-decoded."""
    head, question, query = dsn.partition("?")
    if not question:
        return []
    query = query.partition("#")[0]
    pairs: list[_Pair] = []
    at = len(head) + 1
    for item in query.split("&"):
        key, _, raw = item.partition("=")
        pairs.append(_Pair(unquote(key), unquote(raw), raw, at, at + len(item)))
        at += len(item) + 1
    return pairs


def _keyword_pairs(dsn: str) -> list[_Pair]:
    """libpq's `key = value` pairs: a value is a single-quoted string (backslash
    escapes a quote or a backslash) or runs to the next blank. A string libpq
    would refuse yields the pairs up to the damage, and a value left open runs to
    the end, so its secret is still found."""
    pairs: list[_Pair] = []
    i, n = 0, len(dsn)
    while i < n:
        while i < n and dsn[i].isspace():
            i += 1
        start = i
        while i < n and dsn[i] != "=" and not dsn[i].isspace():
            i += 1
        key = dsn[start:i]
        while i < n and dsn[i].isspace():
            i += 1
        if not key or i >= n or dsn[i] != "=":
            break
        i += 1
        while i < n and dsn[i].isspace():
            i += 1
        value_start, value = i, []
        if i < n and dsn[i] == "'":
            i += 1
            while i < n and dsn[i] != "'":
                if dsn[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(dsn[i])
                i += 1
            i = min(i + 1, n)
        else:
            while i < n and not dsn[i].isspace():
                if dsn[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(dsn[i])
                i += 1
        pairs.append(_Pair(key.lower(), "".join(value), dsn[value_start:i], start, i))
    return pairs
