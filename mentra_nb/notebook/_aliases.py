"""Model aliases: short names for `provider:model` specs, kept by the kernel's magics.

    %mentra alias fast anthropic:claude-haiku-4-5
    %config MentraMagics.aliases = {"smart": "openai:gpt-5"}
    %mentra spawn writer --model fast

An alias stands for its target wherever the magics take a model (`--model`,
`MentraMagics.default_model`, `%mentra teammate --model`). It is resolved when
the agent is spawned, so the state file records the real model and a restarted
kernel needs no alias to resume. An alias may not be named like a provider:
`openai` must always mean OpenAI, so the clash is an error, never a silent win.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping

__all__ = ["ALIAS_PATTERN", "AliasError", "check_alias", "describe_aliases", "resolve_model"]

ALIAS_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"


class AliasError(ValueError):
    """A bad alias or model spec; the message says what to write instead."""


def check_alias(name: object, target: object, providers: Collection[str]) -> None:
    """Raise `AliasError` unless `name` may stand for `target` (a `provider:model` spec)."""
    if not isinstance(name, str) or not re.match(ALIAS_PATTERN, name):
        raise AliasError(f"alias name {name!r} is not valid: a letter, then letters, digits, '_', '.' or "
                         "'-' (no ':', which separates provider and model)")
    if name in providers:
        raise AliasError(f"'{name}' is a provider's name, so an alias '{name}' would hide it; choose "
                         f"another name (providers: {', '.join(sorted(providers))})")
    if not isinstance(target, str) or not target.strip():
        raise AliasError(f"alias '{name}' needs a model as PROVIDER:MODEL, e.g. anthropic:claude-sonnet-4-5")
    provider, sep, model = target.strip().partition(":")
    if provider not in providers:
        close = difflib.get_close_matches(provider, sorted(providers), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise AliasError(f"alias '{name}' → {target!r}: unknown provider '{provider}'{hint} "
                         f"(providers: {', '.join(sorted(providers))})")
    if not sep or not model:
        raise AliasError(f"alias '{name}' → {target!r} names no model; write {provider}:MODEL "
                         f"(%mentra models {provider} lists them)")


def resolve_model(spec: str, aliases: Mapping[str, str], providers: Collection[str]) -> str:
    """The `provider:model` spec that `spec` stands for: an alias's target, or `spec`
    itself. A bare word that is neither an alias nor a provider is an `AliasError`."""
    spec = spec.strip()
    if spec in aliases:
        if spec in providers:  # a provider registered after the alias was made
            raise AliasError(f"'{spec}' is both an alias and a provider; remove the alias "
                             f"(%mentra alias {spec} --remove) or rename it")
        return aliases[spec].strip()
    if ":" not in spec and spec not in providers:
        names = sorted({*aliases, *providers})
        close = difflib.get_close_matches(spec, names, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise AliasError(f"model '{spec}' is neither an alias nor a provider; {hint}Write PROVIDER:MODEL, "
                         f"or an alias ({', '.join(sorted(aliases)) or 'none yet: %mentra alias NAME PROVIDER:MODEL'})")
    return spec


def describe_aliases(aliases: Mapping[str, str]) -> str:
    """The `%mentra alias` listing."""
    if not aliases:
        return ("no model aliases yet: %mentra alias NAME PROVIDER:MODEL, or "
                "%config MentraMagics.aliases = {'NAME': 'PROVIDER:MODEL'}")
    width = max(len(name) for name in aliases)
    return "model aliases:\n" + "\n".join(f"  {name:<{width}}  {aliases[name]}" for name in sorted(aliases))
