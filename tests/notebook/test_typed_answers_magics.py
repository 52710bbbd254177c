"""`--output` in an in-process IPython shell: what a typed turn returns and refuses."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from mentra_nb import AgentNotFound, OutputValidationError
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.notebook.conftest import mentra, mentra_cell


class Answer(BaseModel):
    value: int


def test_a_typed_send_to_an_agent_not_in_this_kernel_is_not_left_as_mail(ip, session):
    ip.user_ns["Answer"] = Answer
    with pytest.raises(AgentNotFound, match="no live agent named 'ghost'"):
        mentra(ip, "send ghost --output Answer What is it?")


def test_a_typed_cell_that_never_validates_raises_output_validation_error(ip, session):
    ip.user_ns["Answer"] = Answer
    session.runtime.providers.register(ScriptedProvider("scripted", [text_stream("seven")] * 3))
    mentra(ip, "spawn counter --model scripted:m")
    with pytest.raises(OutputValidationError, match="answered 3 times without a valid Answer"):
        mentra_cell(ip, "counter --wait --output Answer", "How many?")
    agent = session.agent("counter")
    assert agent.snapshot.history_len == 6  # the prompt, three attempts and two error messages
    assert agent.status.name == "failed"


def test_a_dotted_output_name_reaches_a_class_inside_a_module(ip, session):
    import types

    module = types.ModuleType("schemas")
    module.Answer = Answer  # type: ignore[attr-defined]
    ip.user_ns["schemas"] = module
    session.runtime.providers.register(ScriptedProvider("scripted", [text_stream('{"value": 7}')]))
    mentra(ip, "spawn counter --model scripted:m")
    assert mentra_cell(ip, "counter --wait --output schemas.Answer", "How many?") == Answer(value=7)
