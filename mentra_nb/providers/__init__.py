"""Model providers: the protocol, its events, and the built-in providers."""

from mentra_nb.providers._keys import Secret, find_dotenv_files, read_dotenv, redact
from mentra_nb.providers.base import (
    ModelInfo,
    OutputFormat,
    Provider,
    ProviderRequest,
    ProviderTraits,
    ToolDefinition,
)
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    ProviderEvent,
    RetryAttempt,
)
from mentra_nb.providers.registry import BUILTIN_PROVIDERS, ProviderRegistry, register_provider
from mentra_nb.providers.test import TestProvider

__all__ = [
    "BUILTIN_PROVIDERS",
    "ContentBlockDelta",
    "ContentBlockStarted",
    "ContentBlockStopped",
    "MessageDelta",
    "MessageStarted",
    "MessageStopped",
    "ModelInfo",
    "OutputFormat",
    "Provider",
    "ProviderEvent",
    "ProviderRegistry",
    "ProviderRequest",
    "ProviderTraits",
    "RetryAttempt",
    "Secret",
    "TestProvider",
    "ToolDefinition",
    "find_dotenv_files",
    "read_dotenv",
    "redact",
    "register_provider",
]
