"""Which provider serves a model id: explicit instances first, then built-ins made on first use."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

from mentra_nb.errors import ConfigError, UnknownProvider
from mentra_nb.providers.base import ModelInfo, Provider

__all__ = ["BUILTIN_PROVIDERS", "ProviderRegistry"]


def _test_provider() -> Provider:
    from mentra_nb.providers.test import TestProvider

    return TestProvider()


def _anthropic() -> Provider:
    from mentra_nb.providers.anthropic import AnthropicProvider

    return AnthropicProvider()


def _openai() -> Provider:
    from mentra_nb.providers.openai import OpenAIProvider

    return OpenAIProvider()


def _gemini() -> Provider:
    from mentra_nb.providers.gemini import GeminiProvider

    return GeminiProvider()


def _chat(preset: str) -> Callable[[], Provider]:
    def make() -> Provider:
        from mentra_nb.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(preset)

    return make


def _local() -> Provider:
    from mentra_nb.providers.local import LocalProvider

    return LocalProvider()


def _replay() -> Provider:
    from mentra_nb.providers.replay import ReplayProvider

    return ReplayProvider.from_environment()


# Built-in providers are created from the environment the first time a model id
# names them, so `rt.spawn("w", "test")` works with no provider object passed.
# Their modules are imported only then, which keeps `import mentra_nb` fast; keys
# are looked up at the first request, so a provider exists before its key does.
BUILTIN_PROVIDERS: dict[str, Callable[[], Provider]] = {
    "test": _test_provider,
    "anthropic": _anthropic,
    "openai": _openai,
    "gemini": _gemini,
    **{preset: _chat(preset) for preset in
       ("openai-chat", "openrouter", "ollama", "lmstudio", "vllm", "llamacpp")},
    "local": _local,
    "replay": _replay,
}


class ProviderRegistry:
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
        factory = BUILTIN_PROVIDERS.get(name)
        if factory is None:
            known = self.known()
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else "."
            raise UnknownProvider(f"unknown provider '{name}'{hint} Known: {', '.join(known)}")
        provider = factory()
        self._instances[name] = provider
        self._created.append(name)
        return provider

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
