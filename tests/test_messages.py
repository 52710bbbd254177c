"""Messages: what may be in their text, whichever way they are built."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from mentra_nb.messages import ContentBlock, Message, TextBlock, ThinkingBlock, ToolResultBlock


def test_lone_surrogates_built_in_python_become_replacement_characters():
    # A tool's bytes decoded with surrogateescape, a provider's stray escape.
    assert TextBlock(text="a\udc80b").text == "a\ufffdb"
    assert ThinkingBlock(thinking="\ud800").thinking == "\ufffd"
    assert ToolResultBlock(tool_use_id="t", content="x\udfff").content == "x\ufffd"
    built = Message.model_validate({"role": "user", "content": [{"type": "text", "text": "\ud800"}]})
    assert built.text == "\ufffd"
    assert built.model_dump_json().encode("utf-8")  # storable


def test_json_cannot_carry_a_lone_surrogate_so_reading_it_needs_no_check():
    with pytest.raises(ValidationError, match="surrogate|hex escape"):
        Message.model_validate_json('{"role": "user", "content": [{"type": "text", "text": "\\ud800"}]}')
    text = "emoji 😀, accents é, CJK 中"
    assert Message.model_validate_json(Message.user(text).model_dump_json()).text == text


@pytest.mark.parametrize("block", [{"type": "text"}, {"type": "thinking", "signature": "s"}])
def test_a_text_or_thinking_block_without_its_text_is_refused(block):
    # Both fields shadow a ContentBlock constructor, which pydantic once took for
    # their default: a row missing its text loaded with a function as its text.
    raw = {"role": "assistant", "content": [block]}
    with pytest.raises(ValidationError, match="Field required"):
        Message.model_validate(raw)
    with pytest.raises(ValidationError, match="Field required"):
        Message.model_validate_json(json.dumps(raw))
    assert ContentBlock.text("still a constructor") == TextBlock(text="still a constructor")
