"""The exceptions mentra-nb raises, in one tree.

    MentraError
    ├── ConfigError               bad arguments to a public API (names, limits, models)
    │   └── UnknownProvider       a model id names a provider nobody registered
    ├── ProviderError             a model provider failed
    │   ├── ProviderAuthError     401/403: the key is missing or wrong
    │   ├── ModelNotFound         404: the provider does not serve that model
    │   ├── InvalidRequest        400: the provider rejected the request
    │   ├── TransientProviderError  408/429/5xx or a dropped connection
    │   └── StreamError           the stream broke, ended early or made no sense
    ├── StoreError                the state file cannot be used as asked
    │   ├── DatabaseError         the Postgres store cannot be reached or used
    │   ├── RecordConflict        a records write found a record other than it expected
    │   └── LeaseLost             another runtime took this agent over
    ├── LeaseUnavailable          a live runtime elsewhere drives the agent
    ├── AgentError                an agent cannot do what was asked
    │   ├── AgentNotFound
    │   ├── AgentExists
    │   ├── AgentBusy             a run is already in progress
    │   ├── NoResumableTurn       `agent.resume()` with nothing to resume
    │   ├── RunHalted             a run hit a limit; its work is kept (agent.resume() goes on)
    │   │   ├── MaxRoundsExceeded     the turn loop hit `AgentConfig.max_rounds`
    │   │   ├── OutputValidationError the answers never matched the requested output type
    │   │   └── BudgetExceeded        the next model call would pass the agent's budget
    │   └── AwaitingApproval      a waiting cell stopped: the turn waits for your approval
    ├── ToolError                 a tool definition is unusable
    └── MCPServerError            an MCP server cannot be started, reached or configured

Every message says what was wrong and what to do about it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentBusy",
    "AgentError",
    "AgentExists",
    "AgentNotFound",
    "AwaitingApproval",
    "BudgetExceeded",
    "ConfigError",
    "DatabaseError",
    "InvalidRequest",
    "LeaseLost",
    "LeaseUnavailable",
    "MCPServerError",
    "MaxRoundsExceeded",
    "MentraError",
    "ModelNotFound",
    "NoResumableTurn",
    "OutputValidationError",
    "ProviderAuthError",
    "ProviderError",
    "RecordConflict",
    "RunHalted",
    "StoreError",
    "StreamError",
    "ToolError",
    "TransientProviderError",
    "UnknownProvider",
]


class MentraError(Exception):
    """Root of every error mentra-nb raises on purpose."""


class ConfigError(MentraError, ValueError):
    """An argument to a public API is invalid."""


class UnknownProvider(ConfigError):
    """A model id names a provider that is neither built in nor registered."""


class ProviderError(MentraError):
    """A model provider failed. `retryable` says whether trying again may help."""

    retryable: bool = False

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ProviderAuthError(ProviderError):
    """The provider refused the key (HTTP 401 or 403); the message names the variable to set."""


class ModelNotFound(ProviderError):
    """The provider does not know the model (HTTP 404); the message names close model ids."""


class InvalidRequest(ProviderError):
    """The provider refused the request as malformed (HTTP 400), with its own message."""


class TransientProviderError(ProviderError):
    """A failure worth retrying (HTTP 408, 429 or 5xx); opening a stream is retried with backoff."""

    retryable = True

    def __init__(
        self, message: str, *, status_code: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.retry_after = retry_after


class StreamError(ProviderError):
    """A stream broke after the reply began: dropped, cut before its final event, or past a time
    limit.
    """


class StoreError(MentraError):
    """The state file is not usable as asked (foreign, newer, corrupt, failing writes)."""


class DatabaseError(StoreError):
    """The Postgres store cannot be reached or used (connection, role, schema, pooler);
    the message names the server, never the password."""


class RecordConflict(StoreError):
    """A `write_records` batch was refused whole: a `Put` found its key taken, or an
    `Update` found the record missing or in another state than it expected."""


class LeaseLost(StoreError):
    """This runtime no longer holds the agent's lease, so it must not write for it."""


class LeaseUnavailable(MentraError):
    """Another live runtime holds the agent's lease. The message names the holder.

    `expires_in`: seconds until the lease runs out if its holder stays silent, for
    a holder on another host (None for one on this host, which holds it while its
    process runs)."""

    def __init__(self, message: str, *, holder: Any = None, expires_in: float | None = None) -> None:
        super().__init__(message)
        self.holder = holder  # the store's LeaseRecord of whoever holds the lease
        self.expires_in = expires_in


class AgentError(MentraError):
    """Something about an agent: not found, already there, busy, out of rounds or budget."""


class AgentNotFound(AgentError, LookupError):
    """No agent of that name or id, stored or live."""


class AgentExists(AgentError):
    """An agent of that name is already stored under this runtime id."""


class AgentBusy(AgentError):
    """The agent is running; this needs it idle (a second send, a fork point mid-run, a rewind)."""


class NoResumableTurn(AgentError):
    """`agent.resume()` found nothing to replay or continue."""


class RunHalted(AgentError):
    """A run stopped at a round boundary because it hit a limit; unlike other
    failures it is not rolled back: its work so far is kept, and `agent.resume()`
    continues once the limit allows. An extension raises a subclass from
    `before_round` to halt a run this way."""


class MaxRoundsExceeded(RunHalted):
    """A run reached `AgentConfig.max_rounds` model calls; its work so far is kept."""


class OutputValidationError(RunHalted):
    """A run asked for a typed answer (`agent.send(..., output=Model)`) and the
    model's answers failed validation `output_retries + 1` times. Every attempt
    and the validation errors sent back stay in the transcript.

    `errors` holds pydantic's errors for the last attempt (dicts with `loc`,
    `msg`, `type`), `raw` the text of that attempt."""

    def __init__(self, message: str, *, errors: list[dict[str, Any]], raw: str) -> None:
        super().__init__(message)
        self.errors = errors
        self.raw = raw


class BudgetExceeded(RunHalted):
    """A run stopped at a round boundary because its next model call would pass
    `AgentConfig.max_cost_usd` or `max_tokens_total`. The work so far is kept;
    raise the budget and call `agent.resume()` to continue."""


class AwaitingApproval(AgentError):
    """A cell that waited for a turn (`turn.result()`, `--wait`) stopped because the
    turn waits for the user's approval of a tool call and nothing could answer it
    while the cell held the kernel (no ipykernel 7, or a plain IPython shell). The
    turn goes on: approve it in the agent's view or with `%mentra approve`, then
    `turn.result()` again."""


class ToolError(MentraError):
    """A tool is defined in a way the runtime cannot use."""


class MCPServerError(MentraError):
    """An MCP server failed to start, stopped answering, or is configured in a way
    that cannot work. The message names the server (and, for a stdio server, ends
    with the last lines it wrote to stderr)."""
