"""The provider protocol: how the runtime asks a model for one streamed message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.errors import ConfigError
from mentra_nb.messages import Message
from mentra_nb.providers.events import ProviderEvent

__all__ = ["ModelInfo", "OutputFormat", "Provider", "ProviderRequest", "ProviderTraits", "ToolChoice",
           "ToolDefinition", "takes_tool_result_images"]


class ModelInfo(BaseModel):
    """A model a provider serves. `key` (`provider:id`) is how users name it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    provider: str
    display_name: str | None = None
    context_window: int | None = None

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.id}"

    @classmethod
    def parse(cls, model: str) -> ModelInfo:
        """`"anthropic:claude-x"` → ModelInfo(provider="anthropic", id="claude-x").

        Split on the first `:` only, so model ids may contain colons
        (`ollama:llama3:8b`). A bare `"test"` means the provider's default model.
        """
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(
                f"model must be a non-empty 'provider:model' string, got {model!r}; "
                "for example 'anthropic:claude-sonnet-4-5' or 'test'"
            )
        provider, sep, model_id = model.strip().partition(":")
        if not provider:
            raise ConfigError(f"model {model!r} has no provider before ':'; write 'provider:model'")
        return cls(provider=provider, id=model_id if sep and model_id else "default")


class ToolDefinition(BaseModel):
    """What a model is told about a tool: name, description and JSON schema of its input."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class OutputFormat(BaseModel):
    """The shape the model's final answer must have: a JSON object matching `json_schema`.

    Providers ask for it the native way where their API has one (OpenAI's
    `text.format` / `response_format`, Gemini's `responseJsonSchema`) and
    otherwise offer a tool named `OUTPUT_TOOL` whose call they turn back into
    the answer's text. Either way the final answer arrives as a text block
    holding JSON, which the runtime validates.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    json_schema: dict[str, Any]
    description: str = ""


ToolChoice = Literal["auto", "any", "none"] | str  # or the name of one tool
"""Whether the model may, must or must not call a tool (`auto`, `any`, `none`), or the name of the
one tool it must call.
"""


class ProviderRequest(BaseModel):
    """One request for a streamed reply: the model, the transcript, the system prompt, the tools
    and the options.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    model: str
    messages: list[Message]
    system: str | None = None
    tools: list[ToolDefinition] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    # The final answer must be JSON of this shape (`agent.send(..., output=Model)`).
    output: OutputFormat | None = None
    # Mark cache breakpoints where the provider needs them (Anthropic); providers
    # that cache on their own ignore it. Agents ask for it unless
    # AgentConfig(prompt_cache=False).
    prompt_cache: bool = False


@runtime_checkable
class Provider(Protocol):
    """A model backend. `name` is the prefix of model ids it serves (`anthropic`).

    `stream` yields `ProviderEvent`s for exactly one assistant message. Only
    opening the stream may be retried (announced with `RetryAttempt`); an error
    after the first event is raised to the turn loop, which rolls the run back.

    A provider that can show the model a tool result's images (inside Anthropic's
    `tool_result`, OpenAI Responses' `function_call_output`, Gemini's
    `functionResponse.parts`; after the `tool` messages for Chat Completions) says
    so with an attribute `tool_result_images = True`; without it the turn loop turns a tool result
    that carries images into an error result saying why (see
    `takes_tool_result_images`).

    What the rest of mentra-nb needs to know about a provider it reads from the
    provider's own (class) attributes, all optional, so that adding a provider
    touches its file and one registration (see `ProviderTraits`): `key_env`,
    `system`, `price_key` and `tool_result_images`.
    """

    name: str

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]: ...

    async def list_models(self) -> list[ModelInfo]: ...


def takes_tool_result_images(provider: object) -> bool:
    """Whether `provider`'s API takes images inside a tool result (its optional
    `tool_result_images` attribute; providers without it do not)."""
    return getattr(provider, "tool_result_images", False) is True


@dataclass(frozen=True)
class ProviderTraits:
    """What the runtime needs to know about a provider besides calling it.

    `key_env`: the environment variables its key is read from; their values are
    scrubbed from every cassette. `system`: its `gen_ai.provider.name` in traces
    (the OpenTelemetry GenAI value, e.g. `gcp.gemini`). `price_key`: the provider
    whose rows of the price table price its models (`openai-chat` serves
    `openai`'s models). `tool_result_images`: see `takes_tool_result_images`.
    """

    name: str
    key_env: tuple[str, ...] = ()
    system: str = ""
    price_key: str = ""
    tool_result_images: bool = False

    @classmethod
    def of(cls, source: object, name: str) -> ProviderTraits:
        """The traits `source` (a provider class or instance) declares, defaulting to `name`."""
        return cls(name=name, key_env=tuple(getattr(source, "key_env", None) or ()),
                   system=getattr(source, "system", None) or name,
                   price_key=getattr(source, "price_key", None) or name,
                   tool_result_images=takes_tool_result_images(source))
