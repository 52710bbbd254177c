"""Typed answers: the pydantic model a run must answer with, and checking the answer.

`agent.send(prompt, output=Invoice)` makes the run ask its provider for JSON
of `Invoice`'s schema (`ProviderRequest.output`) and validate the final answer
with pydantic. An answer that fails goes back to the model as a user message
listing the errors, up to `output_retries` times; then the run fails with
`OutputValidationError`. The attempts and the error messages are ordinary
messages of the transcript, so a resumed agent shows them.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from mentra_nb.errors import ConfigError
from mentra_nb.messages import Message, TextBlock
from mentra_nb.providers.base import OutputFormat

__all__ = ["OutputSpec", "OutputType", "RejectedAnswer", "RunResult", "describe_errors"]

OutputType = TypeVar("OutputType", bound=BaseModel)

# At most this many validation errors are read back to the model (a broken answer
# can have hundreds; the first ones say what is wrong).
_MAX_ERRORS = 20
_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n?```", re.DOTALL)


@dataclass(frozen=True)
class RunResult(Generic[OutputType]):
    """How a run ended (`agent.run(...)`): its final assistant `message` and, when
    it was asked for a typed answer, the validated `output` (else None)."""

    message: Message
    output: OutputType | None = None


class RejectedAnswer(Exception):
    """An answer that is not a valid instance; `errors` are pydantic's, JSON-safe."""

    def __init__(self, errors: list[dict[str, Any]], raw: str) -> None:
        super().__init__(f"{len(errors)} validation errors")
        self.errors = errors
        self.raw = raw


class OutputSpec(Generic[OutputType]):
    """The typed answer one run asks for: a pydantic model class and its schema."""

    def __init__(self, model: type[OutputType]) -> None:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ConfigError(
                f"output must be a pydantic model class (a subclass of pydantic.BaseModel), got "
                f"{model!r}; for a list or a single value, wrap it: class Answer(BaseModel): items: list[str]"
            )
        self.model = model
        self.format = _output_format(model)

    @property
    def name(self) -> str:
        return self.model.__name__

    def parse(self, message: Message) -> OutputType:
        """The final message's answer as a validated instance, or `RejectedAnswer`."""
        texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text.strip()]
        raw = "".join(texts)
        if not raw.strip():
            raise RejectedAnswer([{"loc": [], "msg": "the answer was empty; give the JSON object itself",
                                   "type": "empty"}], raw)
        problem: RejectedAnswer | None = None
        # The whole text first; then the last block alone (text said before a tool-style answer).
        for candidate in dict.fromkeys([raw, texts[-1]]):
            try:
                return self.model.model_validate_json(_json_part(candidate))
            except ValidationError as err:
                if problem is None:
                    problem = RejectedAnswer(_errors(err), raw)
        assert problem is not None
        raise problem

    def feedback(self, rejected: RejectedAnswer, attempt: int, retries: int) -> Message:
        """The user message that sends `rejected`'s errors back to the model."""
        lines = [f"- {_where(e)}: {e['msg']}" for e in rejected.errors[:_MAX_ERRORS]]
        if len(rejected.errors) > _MAX_ERRORS:
            lines.append(f"- … and {len(rejected.errors) - _MAX_ERRORS} more")
        # The schema goes along: a provider that ignores `ProviderRequest.output` (a
        # custom one) has not shown it to the model any other way.
        schema = json.dumps(self.format.json_schema, separators=(",", ":"))
        return Message.user(
            f"Your answer is not a valid {self.name} (attempt {attempt} of {retries + 1}):\n"
            + "\n".join(lines)
            + f"\nAnswer again with only the corrected JSON object for {self.name}, matching this "
            f"JSON schema:\n{schema}"
        )


# A model class's schema does not change once the class exists, and building it
# is most of the work of starting a typed run (a job over many rows starts one per row).
# Bounded: a notebook that redefines its model makes a new class each time.
@functools.lru_cache(maxsize=256)
def _output_format(model: type[BaseModel]) -> OutputFormat:
    try:
        schema = model.model_json_schema()
    except Exception as err:  # pydantic raises several kinds for types without a schema
        raise ConfigError(f"output model {model.__name__} has no JSON schema: {err}") from None
    schema = _resolve_top_ref(schema)
    if schema.get("type") != "object":
        raise ConfigError(f"output model {model.__name__} must be a JSON object (a RootModel is not)")
    return OutputFormat(
        name=re.sub(r"[^A-Za-z0-9_-]", "_", model.__name__)[:64] or "answer",
        json_schema=schema,
        description=(model.__doc__ or "").strip() if model.__doc__ != BaseModel.__doc__ else "",
    )


def _resolve_top_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """A recursive model's schema is only a reference into `$defs` (`{"$ref":
    "#/$defs/Node", "$defs": {...}}`); every API wants an object at the top, so
    the referenced definition is inlined there. `$defs` stays: the model's own
    fields still refer to it."""
    ref = schema.get("$ref")
    defs = schema.get("$defs")
    prefix = "#/$defs/"
    if not (isinstance(ref, str) and ref.startswith(prefix) and isinstance(defs, dict)):
        return schema
    target = defs.get(ref.removeprefix(prefix))
    if not isinstance(target, dict):
        return schema
    rest = {k: v for k, v in schema.items() if k not in ("$ref", "$defs")}
    return {**target, **rest, "$defs": defs}


def describe_errors(errors: list[dict[str, Any]], limit: int = 3) -> str:
    """A short one-line account of validation errors, for an exception message."""
    shown = "; ".join(f"{_where(e)}: {e['msg']}" for e in errors[:limit])
    return shown + (f"; and {len(errors) - limit} more" if len(errors) > limit else "")


def _where(error: dict[str, Any]) -> str:
    return ".".join(str(part) for part in error.get("loc") or ()) or "the answer"


def _json_part(text: str) -> str:
    """The JSON in an answer: as it is, or inside a ```json fence, or from its first
    `{` to its last `}` (a model without native JSON output likes to add prose)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        end = stripped.rfind("}")
        return stripped[: end + 1] if end > 0 else stripped  # cut JSON stays as it is, to be refused
    fenced = _FENCED.search(stripped)
    if fenced is not None:
        return fenced.group(1).strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    return stripped[start : end + 1] if 0 <= start < end else stripped


def _errors(err: ValidationError) -> list[dict[str, Any]]:
    # JSON-safe (no input values, no URLs, no exception objects): they go into a
    # message, an exception and maybe a log.
    return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in err.errors(include_url=False, include_context=False, include_input=False)]
