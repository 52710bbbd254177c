"""Test doubles that ship with mentra-nb: the scripted provider, stream helpers
and the store conformance suite. Our own tests and tutorials use them too."""

from mentra_nb.testing.scripted import (
    ScriptedProvider,
    StreamControl,
    StreamScript,
    controlled_stream,
    error_stream,
    ok_stream,
    text_stream,
    tool_use_stream,
)

__all__ = [
    "ScriptedProvider",
    "StreamControl",
    "StreamScript",
    "controlled_stream",
    "error_stream",
    "ok_stream",
    "text_stream",
    "tool_use_stream",
]
