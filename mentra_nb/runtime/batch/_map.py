"""`agent.map(rows, prompt=...)`: make a job of rows, or attach to the stored one.

Prompts are rendered here, once, and stored with the rows: a resumed job needs
neither the DataFrame nor the prompt function again, and a rerun of the same cell
(same rows, same prompt, same output model) finds its job by name and attaches.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from mentra_nb.errors import ConfigError
from mentra_nb.runtime.batch._job import model_path
from mentra_nb.runtime.batch._records import (
    JOB,
    PENDING,
    ROW,
    TOTALS,
    JobSpec,
    RowState,
    row_key,
    tool_fingerprints,
)
from mentra_nb.runtime.batch._source import RowAgent
from mentra_nb.runtime.batch._totals import base_totals_op
from mentra_nb.store.records import Delete

__all__ = ["JOB_NAME_RULE", "Prompt", "check_job_name", "check_options", "fingerprint_of", "make_job", "render_prompts",
           "row_values"]

Prompt = str | Callable[[dict[str, Any]], str]
"""A row's prompt: a template of its columns (`"Classify: {text}"`) or a function of the row."""

# A row's fork is "<job>-<index>", which must be an agent name (at most 64 characters).
_JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,47}")
JOB_NAME_RULE = "1-48 letters, digits, '_', '.' or '-', starting with a letter or digit"
"""What a job's name may be (each row's fork is named `<job>-<index>`)."""


def make_job(agent: RowAgent, rows: Any, prompt: Prompt, *, output: type[BaseModel] | None,
             concurrency: int, max_cost_usd: float | None, name: str | None,
             replace: bool) -> tuple[JobSpec, str | None]:
    """The stored job `map_rows` (in `_extension.py`) drives: made and stored now, or
    the one stored under its name; and the id of the job it replaced, if any."""
    check_options(concurrency, max_cost_usd, output)
    prompts = render_prompts(row_values(rows), prompt)
    fingerprint = fingerprint_of([model_path(output) if output else "", *prompts])
    name = check_job_name(name if name is not None else f"map-{fingerprint[:8]}")
    services = agent.services
    store, runtime_id = services.store, services.runtime_id
    stored = JOB.get(store, runtime_id, name)
    if stored is not None and not replace:
        spec = stored.value
        if spec.agent_id != agent.id or spec.fingerprint != fingerprint:
            whose = "another agent's" if spec.agent_id != agent.id else "other rows' (or another prompt's or output's)"
            raise ConfigError(
                f"a job named '{name}' is stored with {whose}; pass replace=True (--replace) to start "
                "it over, or give this one another name")
        return spec, None
    spec = JobSpec(job_id=uuid.uuid4().hex, name=name, agent_id=agent.id, agent_name=agent.name,
                   fork_index=agent.state.history_len, output=model_path(output) if output else None,
                   concurrency=concurrency,
                   max_cost_usd=None if max_cost_usd is None else float(max_cost_usd),
                   total=len(prompts), fingerprint=fingerprint, created_at=time.time(),
                   tools=tool_fingerprints(agent.tools()))
    ops: list[Any] = []
    if stored is not None:
        # The old job's rows go; their forks are deleted as the new rows of their names run.
        ops.append(Delete(kind=ROW.name, scope=stored.value.job_id, key=None))
        ops.append(Delete(kind=TOTALS.name, scope=stored.value.job_id, key=None))
    ops.append(JOB.put_op(runtime_id, spec, name))
    ops.append(base_totals_op(spec.job_id))
    ops.extend(ROW.put_op(spec.job_id, RowState(index=i, prompt=p, agent_name=f"{name}-{i}"),
                          row_key(i), state=PENDING, replace=False)
               for i, p in enumerate(prompts))
    store.write_records(ops, agent_id=agent.id, token=services.token)
    return spec, None if stored is None else stored.value.job_id


def check_options(concurrency: object, max_cost_usd: object, output: object) -> None:
    """A `ConfigError` for a concurrency, budget or output model that cannot be."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be a whole number of rows at once (1 or more), not {concurrency!r}")
    if max_cost_usd is not None and (isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, (int, float))
                                     or max_cost_usd < 0):
        raise ConfigError(f"max_cost_usd must be a number of dollars (0 or more) or None, not {max_cost_usd!r}")
    if output is not None and not (isinstance(output, type) and issubclass(output, BaseModel)):
        raise ConfigError(f"output must be a pydantic model class, not {output!r}")


def check_job_name(name: object, what: str = "job name") -> str:
    """`name` if it is an allowed job name, else a `ConfigError` saying the rule."""
    if not isinstance(name, str) or not _JOB_NAME.fullmatch(name):
        raise ConfigError(f"{what} {name!r} is not allowed: use {JOB_NAME_RULE}")
    return name


def fingerprint_of(parts: Iterable[str]) -> str:
    """What a rerun of the same call must match to attach to the stored job."""
    digest = hashlib.sha256()
    for text in parts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def row_values(rows: Any) -> list[dict[str, Any]]:
    """Each row as a dict of its columns (`{"row": value}` for a row that is not a
    mapping), read once (a generator is consumed here)."""
    return [dict(row) if isinstance(row, Mapping) else (
        row.model_dump() if isinstance(row, BaseModel) else {"row": row}) for row in _records_of(rows)]


def render_prompts(values: list[dict[str, Any]], prompt: Prompt) -> list[str]:
    """Each row's prompt; a `ConfigError` naming the row whose prompt cannot be made."""
    if not values:
        raise ConfigError("agent.map() got no rows: give a DataFrame, a list of dicts or an iterable of rows")
    return [_render(prompt, row, i) for i, row in enumerate(values)]


def _records_of(rows: Any) -> Iterable[Any]:
    to_dict = getattr(rows, "to_dict", None)
    if callable(to_dict) and hasattr(rows, "columns"):  # a pandas DataFrame
        records: list[Any] = to_dict("records")
        return records
    if isinstance(rows, (str, bytes, Mapping)):
        raise ConfigError("agent.map() takes many rows (a DataFrame, a list of dicts, an iterable); "
                          f"got one {type(rows).__name__}")
    try:
        found: Iterable[Any] = iter(rows)
    except TypeError:
        raise ConfigError(f"agent.map() takes a DataFrame, a list of dicts or an iterable of rows, "
                          f"not {type(rows).__name__}") from None
    return found


def _render(prompt: Prompt, values: dict[str, Any], index: int) -> str:
    if callable(prompt):
        text = prompt(values)
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"the prompt function returned {text!r} for row {index}; it must return "
                              "the prompt's text")
        return text
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError("prompt must be a template such as 'Classify: {text}' or a function of the row")
    try:
        return prompt.format_map(values)
    except KeyError as err:
        columns = ", ".join(map(str, values)) or "none"
        raise ConfigError(f"the prompt names {{{err.args[0]}}}, which row {index} does not have "
                          f"(its columns: {columns})") from None
    except (ValueError, IndexError, AttributeError) as err:
        raise ConfigError(f"the prompt {prompt!r} is not a valid template ({err}); write a column "
                          "as {column} and a literal brace as {{ or }}") from None
