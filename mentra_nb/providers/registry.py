"""Which provider serves a model id: explicit instances first, then built-ins made on first use."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from mentra_nb.errors import ConfigError, UnknownProvider
from mentra_nb.providers.base import ModelInfo, Provider, ProviderTraits

__all__ = ["BUILTIN_PROVIDERS", "ProviderRegistry", "key_variables", "provider_traits", "register_provider"]


@dataclass(frozen=True)
class Registration:
    """How a provider name is served: its class, imported on first use, made with `args`.

    A class may declare `traits(*args)` (a classmethod returning `ProviderTraits`)
    when its traits depend on `args`, as the OpenAI-compatible presets do;
    otherwise its class attributes are read (`ProviderTraits.of`).
    """

    load: Callable[[], type[Any]]
    args: tuple[Any, ...] = ()
    constructor: str | None = None  # a classmethod making the instance, instead of the class itself

    def create(self) -> Provider:
        cls = self.load()
        make = cls if self.constructor is None else getattr(cls, self.constructor)
        provider: Provider = make(*self.args)
        return provider

    def traits(self, name: str) -> ProviderTraits:
        cls = self.load()
        own = getattr(cls, "traits", None)
        if callable(own):
            traits: ProviderTraits = own(*self.args)
            return traits
        return ProviderTraits.of(cls, name)


def _builtin(module: str, cls: str, *args: Any, constructor: str | None = None) -> Registration:
    def load() -> type[Any]:
        loaded: type[Any] = getattr(importlib.import_module(f"mentra_nb.providers.{module}"), cls)
        return loaded

    return Registration(load, args, constructor)


# Built-in providers are created from the environment the first time a model id
# names them, so `rt.spawn("w", "test")` works with no provider object passed.
# Their modules are imported only then, which keeps `import mentra_nb` fast; keys
# are looked up at the first request, so a provider exists before its key does.
# Everything else about a provider (key variables, tracing name, price key) comes
# from its class: this table is the only place that lists them.
BUILTIN_PROVIDERS: dict[str, Registration] = {
    "test": _builtin("test", "TestProvider"),
    "anthropic": _builtin("anthropic", "AnthropicProvider"),
    "openai": _builtin("openai", "OpenAIProvider"),
    "gemini": _builtin("gemini", "GeminiProvider"),
    **{preset: _builtin("openai_chat", "OpenAIChatProvider", preset) for preset in
       ("openai-chat", "openrouter", "ollama", "lmstudio", "vllm", "llamacpp")},
    "local": _builtin("local", "LocalProvider"),
    "replay": _builtin("replay", "ReplayProvider", constructor="from_environment"),
}
"""The built-in providers by name; each is imported and created on first use."""


def register_provider(name: str, cls: type[Any], *args: Any) -> None:
    """Serve `name:*` model ids with `cls(*args)` in every runtime, made on first use
    (replacing a built-in of that name). Its key variables, tracing name and price
    key are read from the class (`ProviderTraits`)."""
    if not isinstance(name, str) or not name or ":" in name:
        raise ConfigError(f"provider name {name!r} must be a non-empty string without ':'")
    BUILTIN_PROVIDERS[name] = Registration(lambda: cls, args)


def provider_traits(name: str) -> ProviderTraits | None:
    """The traits of the registered provider `name`, or None for a name nobody registered."""
    registration = BUILTIN_PROVIDERS.get(name)
    return None if registration is None else registration.traits(name)


def key_variables() -> tuple[str, ...]:
    """Every environment variable a registered provider reads a key from."""
    names = (var for name, r in list(BUILTIN_PROVIDERS.items()) for var in r.traits(name).key_env)
    return tuple(dict.fromkeys(names))


class ProviderRegistry:
    """Which provider serves a model id: the runtime's own provider objects first, then the built-
    ins, created from the environment on first use.
    """

    def __init__(self, providers: Iterable[Provider] = ()) -> None:
        self._instances: dict[str, Provider] = {}
        self._created: list[str] = []
        for provider in providers:
            self.register(provider)

    def register(self, provider: Provider) -> None:
        """Serve `provider.name:*` model ids with `provider` (replacing any built-in)."""
        name = getattr(provider, "name", None)
        if not isinstance(name, str) or not name:
            raise ConfigError(
                f"provider {provider!r} has no `name`; set it to the prefix of the "
                "model ids it serves, e.g. 'anthropic'"
            )
        self._instances[name] = provider

    def known(self) -> list[str]:
        return sorted(set(self._instances) | set(BUILTIN_PROVIDERS))

    def get(self, name: str) -> Provider:
        provider = self._instances.get(name)
        if provider is not None:
            return provider
        registration = BUILTIN_PROVIDERS.get(name)
        if registration is None:
            known = self.known()
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else "."
            raise UnknownProvider(f"unknown provider '{name}'{hint} Known: {', '.join(known)}")
        provider = registration.create()
        self._instances[name] = provider
        self._created.append(name)
        return provider

    def traits(self, name: str) -> ProviderTraits:
        """What is known about provider `name` without calling it: what the instance
        serving it declares, else what its registered class does. (A recording or a
        replay of `gemini` declares no `system` but is traced as Gemini's.)"""
        registered = provider_traits(name) or ProviderTraits(name=name, system=name, price_key=name)
        instance = self._instances.get(name)
        if instance is None:
            return registered
        own = ProviderTraits.of(instance, name)
        return replace(own, key_env=own.key_env or registered.key_env,
                       system=getattr(instance, "system", None) or registered.system,
                       price_key=getattr(instance, "price_key", None) or registered.price_key)

    def taking_tool_result_images(self) -> list[str]:
        """The known providers that can show a model a tool result's images (their
        `tool_result_images`), for the error that says where to go instead."""
        return [name for name in self.known() if self.traits(name).tool_result_images]

    async def aclose(self) -> None:
        """Close the built-in providers this registry created (they hold HTTP
        connections); providers passed in belong to the caller and stay open."""
        for name in self._created:
            closer = getattr(self._instances.get(name), "aclose", None)
            if closer is not None:
                await closer()
        self._created.clear()

    def resolve(self, model: str | ModelInfo) -> tuple[Provider, ModelInfo]:
        info = model if isinstance(model, ModelInfo) else ModelInfo.parse(model)
        return self.get(info.provider), info
