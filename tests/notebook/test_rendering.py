"""Transcripts for people: markdown for saved notebooks, mail as short notices."""

from __future__ import annotations

import json

from mentra_nb import ContentBlock, Message
from mentra_nb.notebook._rendering import mail_notices, message_items, transcript_markdown
from mentra_nb.runtime.teams import TeamMessage


def test_team_mail_reads_as_notices_without_timestamps():
    inbox = "<team-inbox>\n" + json.dumps([
        {"type": "message", "from": "alice", "content": "Found 3 sources", "timestamp": 1796060000.5},
        {"type": "protocol_request", "from": "bob", "content": "Plan: drop table", "timestamp": 1.0,
         "request_id": "r1", "protocol": "plan_approval"},
    ]) + "\n</team-inbox>"
    assert mail_notices(inbox) == ["*team message from alice*: Found 3 sources",
                                   "*team protocol request (plan_approval) from bob*: Plan: drop table"]
    markdown = transcript_markdown([Message.user(inbox)])
    assert "1796060000" not in markdown and "<team-inbox>" not in markdown


def test_a_protocol_response_says_approved_or_rejected_with_or_without_a_reason():
    """Issue 36.6: an approval with no reason read "team response (plan_approval) from lead:"
    and nothing after it."""
    def response(approve: bool, reason: str) -> str:
        message = TeamMessage(type="response", sender="lead", content=reason, timestamp=1,
                              request_id="req-1", protocol="plan_approval", approve=approve)
        return f"<team-inbox>\n{json.dumps([message.for_model()])}\n</team-inbox>"  # as format_inbox writes it

    assert mail_notices(response(True, "")) == ["*team response (plan_approval) from lead*: approved"]
    assert mail_notices(response(False, "too risky")) == [
        "*team response (plan_approval) from lead*: rejected: too risky"]
    [item] = message_items(Message.user(response(True, "")), 0)
    assert item["html"].strip().endswith("approved</p>")


def test_subagent_mail_reads_as_notices():
    update = '<subagent_update id="m1" agent="/root/alpha" status="completed">A is done</subagent_update>'
    message = '<subagent_message id="m2" from="/root/beta">need input</subagent_message>'
    assert mail_notices(update) == ["*update from /root/alpha (completed)*: A is done"]
    assert mail_notices(message) == ["*message from /root/beta*: need input"]
    assert mail_notices(update + message) is None  # one delivery is one envelope
    [item] = message_items(Message.user(update), 0)
    assert item["kind"] == "notice" and "<em>update from /root/alpha (completed)</em>" in item["html"]


def test_ordinary_text_that_mentions_mail_tags_stays_text():
    text = 'Please explain <subagent_update id="x" agent="/root/a" status="done">hi</subagent_update> to me'
    assert mail_notices(text) is None
    assert mail_notices("<team-inbox>not json</team-inbox>") is None


def test_the_markdown_shows_every_kind_of_block():
    messages = [
        Message.user("Sum it"),
        Message.assistant(ContentBlock.thinking("add them"), ContentBlock.tool_use("t1", "add", {"a": 1})),
        Message.user(ContentBlock.tool_result("t1", "boom", is_error=True)),
    ]
    assert transcript_markdown(messages) == (
        "**user**: Sum it\n\n**assistant** *(thinking)*: add them\n\n"
        '**assistant** calls `add`\n\n```json\n{\n  "a": 1\n}\n```\n\ntool error:\n\n```\nboom\n```'
    )
