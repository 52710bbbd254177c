"""An extension plugs in through one class and one registration (runtime/_extensions.py):
its config fields, snapshot fields, agent and runtime API, runtime options, tools,
reserved tool names and `rt.post` delivery reach the core without the core naming
it. Stored agents of the schema from before extensions owned their fields still load.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from pydantic import Field

from mentra_nb import AgentConfig, AgentError, ConfigError, Runtime, SqliteStore
from mentra_nb.runtime import (
    AgentExtension,
    AgentHandle,
    CostConfig,
    ExtensionFields,
    RuntimeExtension,
    Services,
    SubagentConfig,
    TeamConfig,
    default_extensions,
    register_extension,
    tool,
    unregister_extension,
)
from mentra_nb.store import AgentRecord
from mentra_nb.testing import ScriptedProvider


class ReviewConfig(ExtensionFields):
    reviewer: str | None = None
    max_reviews: int = Field(default=3, ge=1)


class ReviewSnapshot(ExtensionFields):
    reviews: list[str] = Field(default_factory=list)


@tool(read_only=True)
async def review__note(text: str) -> str:
    """Note something for the reviewer."""
    return f"noted: {text}"


class AgentReviews(AgentExtension):
    def __init__(self, agent: AgentHandle) -> None:
        self.agent = agent
        self.requested: list[str] = []

    def tools(self) -> list[Any]:
        return [review__note]

    def snapshot_fields(self) -> dict[str, Any]:
        return {"reviews": list(self.requested)}


def request_review(agent: Any, what: str) -> str:
    """Ask the agent's reviewer to look at `what`."""
    reviews = agent.extension(AgentReviews)
    reviews.requested.append(what)
    return f"{ReviewConfig.of(agent.config).reviewer} will review {what}"


def reviews_of(agent: Any) -> list[str]:
    return list(agent.extension(AgentReviews).requested)


def review_board(runtime: Any) -> list[str]:
    return list(runtime.services.extension(ReviewExtension).board)


def set_board(runtime: Any, names: list[str]) -> None:
    runtime.services.extension(ReviewExtension).board = list(names)


class ReviewExtension(RuntimeExtension):
    config = ReviewConfig
    snapshot = ReviewSnapshot
    agent_api: ClassVar[dict[str, Any]] = {"request_review": request_review, "reviews": property(reviews_of)}
    runtime_api: ClassVar[dict[str, Any]] = {"review_board": review_board}
    runtime_options: ClassVar[dict[str, Any]] = {"reviewers": set_board}

    def __init__(self) -> None:
        self.board: list[str] = []
        self.mail: list[tuple[str, str, str]] = []

    def attach(self, agent: AgentHandle) -> AgentExtension | None:
        return AgentReviews(agent) if ReviewConfig.of(agent.config).reviewer else None

    def tool_names(self) -> tuple[str, ...]:
        return ("review__note",)

    def refuse_tool_name(self, name: str) -> str | None:
        return "review__ names belong to the review extension" if name.startswith("review__") else None

    def post_mail(self, services: Services, record: AgentRecord, sender: str, content: str) -> int | None:
        self.mail.append((record.name, sender, content))
        return len(self.mail)


@pytest.fixture
def reviews() -> Iterator[None]:
    register_extension(ReviewExtension)
    try:
        yield
    finally:
        unregister_extension(ReviewExtension)


def runtime(db_path, **kwargs: Any) -> Runtime:
    return Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider("anthropic", [])], **kwargs)


def test_a_registered_extension_adds_config_fields_validated_by_its_own_model(reviews):
    config = AgentConfig(reviewer="ann", max_rounds=4)
    assert ReviewConfig.of(config) == ReviewConfig(reviewer="ann", max_reviews=3)
    assert config.model_dump(mode="json")["reviewer"] == "ann"  # stored flat, like the core's
    with pytest.raises(ConfigError, match="max_reviews=0: input should be greater than or equal to 1"):
        AgentConfig(max_reviews=0)


def test_an_unknown_config_field_is_refused_with_the_known_ones(reviews):
    with pytest.raises(ConfigError, match="unknown config field 'reviewr'; AgentConfig takes: .*reviewer"):
        AgentConfig(reviewr="ann")
    unregister_extension(ReviewExtension)
    with pytest.raises(ConfigError, match="unknown config field 'reviewer'"):
        AgentConfig(reviewer="ann")


async def test_snapshot_fields_api_and_tools_reach_the_agent(reviews, db_path):
    rt = runtime(db_path)
    try:
        writer = rt.spawn("writer", "anthropic:m", config=AgentConfig(reviewer="ann"))
        plain = rt.spawn("plain", "anthropic:m")
        assert {"request_review", "reviews", "send"} <= set(dir(writer))  # tab completion
        assert writer.request_review("chapter 1") == "ann will review chapter 1"
        assert writer.reviews == ["chapter 1"]
        assert writer.snapshot.reviews == ["chapter 1"]
        assert ReviewSnapshot.of(writer.snapshot).reviews == ["chapter 1"]
        assert plain.snapshot.reviews == []  # the default: the extension did not attach
        assert [t.spec.name for t in writer.tools()] == ["review__note"]
        narrowed = rt.spawn("narrow", "anthropic:m", config=AgentConfig(reviewer="bo", tools=[]))
        assert narrowed.tools() == []  # AgentConfig.tools narrows an extension's tools
        with pytest.raises(AttributeError, match="'Agent' object has no attribute 'request_reveiw'"):
            writer.request_reveiw("typo")
    finally:
        await rt.aclose()


async def test_runtime_options_api_and_reserved_tool_names(reviews, db_path):
    rt = runtime(db_path, reviewers=["ann", "bo"])
    try:
        assert rt.review_board() == ["ann", "bo"]
        assert "review_board" in dir(rt)
        with pytest.raises(ConfigError, match="review__ names belong to the review extension"):
            rt.register_tool(review__note)
    finally:
        await rt.aclose()
    with pytest.raises(ConfigError, match="unknown option 'reviewrs'; the registered extensions add these: "
                                          ".*reviewers"):
        runtime(db_path, reviewrs=["ann"])


async def test_rt_post_goes_to_the_first_extension_that_carries_mail(db_path):
    extension = ReviewExtension()
    rt = runtime(db_path, extensions=[extension])
    try:
        rt.spawn("writer", "anthropic:m")
        assert rt.post("writer", "hello", sender="ann") == 1
        assert extension.mail == [("writer", "ann", "hello")]
    finally:
        await rt.aclose()
    bare = runtime(db_path, extensions=[])
    try:
        with pytest.raises(AgentError, match="no extension of runtime 'default' carries mail for 'writer'"):
            bare.post("writer", "hello")
    finally:
        await bare.aclose()


class PairExtension(RuntimeExtension):
    """Starts a `reviewer` agent next to a lead: a kind of agent of its own."""

    agent_kinds = ("reviewer",)


async def test_an_extension_declares_the_kinds_of_agent_it_creates(db_path):
    rt = runtime(db_path, extensions=[PairExtension()])
    try:
        lead = rt.spawn("writer", "anthropic:m")
        critic = rt.services.create_agent("critic", "anthropic:m", kind="reviewer", parent_id=lead.id)
        assert (critic.kind, critic.parent_id) == ("reviewer", lead.id)
    finally:
        await rt.aclose()
    again = runtime(db_path, extensions=[PairExtension()])
    try:
        assert [(r.name, r.kind) for r in again.list_persisted_agents()] == [
            ("writer", "agent"), ("critic", "reviewer")]
    finally:
        await again.aclose()


async def test_a_runtime_refuses_an_agent_kind_none_of_its_extensions_declared(db_path):
    rt = runtime(db_path, extensions=[PairExtension()])
    try:
        lead = rt.spawn("writer", "anthropic:m")
        with pytest.raises(ConfigError, match="unknown agent kind 'teammate'; this runtime's extensions "
                                              "declare: agent, reviewer"):
            rt.services.create_agent("alice", "anthropic:m", kind="teammate", parent_id=lead.id)
        with pytest.raises(ConfigError, match="agent kind 'Re viewer' is not a lowercase word"):
            rt.services.create_agent("bo", "anthropic:m", kind="Re viewer", parent_id=lead.id)
        assert [r.name for r in rt.list_persisted_agents()] == ["writer"]
    finally:
        await rt.aclose()


def test_default_extensions_are_the_registered_ones_in_order(reviews):
    names = [type(e).__name__ for e in default_extensions()]
    assert names == ["CostExtension", "TeamExtension", "SubagentsExtension", "MCPExtension", "BatchExtension",
                     "CellsExtension",
                     "ReviewExtension"]


# What `AgentConfig(...).model_dump(mode="json")` stored before extensions owned their
# fields (every field flat, the built-in extensions' among them).
STORED_CONFIG = {
    "system": "Be brief.", "team": True, "temperature": None, "max_output_tokens": None,
    "max_rounds": 7, "teammate_max_rounds": 9, "tools": None, "hidden_tools": [],
    "subagents": {"max_agents": 5, "max_concurrency": 3, "max_depth": 2, "approvals": "deny"},
    "auto_approve": ["read_file"], "read_only": False, "mcp_servers": ["time"], "max_cost_usd": 1.5,
    "max_tokens_total": None, "prompt_cache": True, "output_retries": 2,
}


async def test_an_agent_stored_with_the_flat_config_of_before_loads_and_keeps_it(db_path):
    first = runtime(db_path)
    first.spawn("old", "anthropic:m")
    await first.aclose()
    with sqlite3.connect(db_path) as db:  # as a state file of the earlier schema holds it
        db.execute("UPDATE agents SET config = ? WHERE name = 'old'", (json.dumps(STORED_CONFIG),))
    rt = runtime(db_path)
    try:
        [old] = rt.resume()
        assert old.config.max_rounds == 7 and old.config.system == "Be brief."
        assert CostConfig.of(old.config).max_cost_usd == 1.5
        assert TeamConfig.of(old.config).teammate_max_rounds == 9 and old.config.team is True
        limits = SubagentConfig.of(old.config).subagents
        assert limits is not None and (limits.max_agents, limits.approvals) == (5, "deny")
        assert old.config.mcp_servers == ["time"]
        # Saved again, the same schema (plus the fields of an extension that came later, at their defaults).
        assert old.config.model_dump(mode="json") == {**STORED_CONFIG, "cells": None, "ask_to_edit_own_cells": False}
    finally:
        await rt.aclose()
