"""A cell that waits for a turn never deadlocks the agent (issue 29.4), in a real
ipykernel through jupyter_client.

The view's Approve button sends a comm message on the shell channel, where the
kernel queues it behind the running cell. Each test sends exactly that message
while a cell waits (`--wait`, `turn.result()`, `--output`, `-f code`) and expects
the cell to end with the answer; before the fix the cell waited for the click and
the click for the cell, so these ran into their 30 s limit.
"""

from __future__ import annotations

import queue
import time
from typing import Any

import pytest

from tests.kernels import Kernel

pytestmark = pytest.mark.process

LIMIT = 30.0  # seconds a cell may take to answer once it can

MODEL = """
import mentra_nb.notebook as nb
from pydantic import BaseModel
from mentra_nb import tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

published, ran = [], []

class Report(BaseModel):
    title: str

@tool(requires_approval=True)
def publish(title: str) -> str:
    '''Publish a report.'''
    published.append(title)
    return f"published {title}"

session = nb.session()
session.host.call(lambda: session.runtime.register_tool(publish))
session.runtime.providers.register(ScriptedProvider("s", [
    tool_use_stream("c1", "publish", '{"title": "Q1"}'), text_stream(%r)]))
"""

VIEW = "application/vnd.jupyter.widget-view+json"


class Frontend:
    """What a front end does with a kernel: sends cells without waiting for them,
    files what comes back under the cell it belongs to, and clicks in views."""

    def __init__(self, kernel: Kernel) -> None:
        self.client = kernel.client
        self.outputs: dict[str, list[dict[str, Any]]] = {}
        self.replies: dict[str, dict[str, Any]] = {}

    def execute(self, code: str) -> str:
        return self.client.execute(code, stop_on_error=True)

    def click(self, model_id: str, content: dict[str, Any]) -> None:
        """The message a view's `model.send(content)` puts on the shell channel."""
        self.client.shell_channel.send(self.client.session.msg(
            "comm_msg", {"comm_id": model_id, "data": {"method": "custom", "content": content}}))

    def _collect(self) -> None:
        for get, into in ((self.client.get_iopub_msg, None), (self.client.get_shell_msg, self.replies)):
            while True:
                try:
                    msg = get(timeout=0.05)
                except queue.Empty:
                    break
                parent = msg["parent_header"].get("msg_id", "")
                if into is None:
                    self.outputs.setdefault(parent, []).append(msg)
                else:
                    into[parent] = msg["content"]

    def until(self, what: str, found: Any, limit: float = LIMIT) -> Any:
        deadline = time.monotonic() + limit
        while True:
            self._collect()
            value = found()
            if value:
                return value
            assert time.monotonic() < deadline, f"timed out after {limit:.0f} s waiting for {what}"

    def view_of(self, cell: str) -> str:
        """The model id of the (first) live view a cell showed."""
        return str(self.until("the cell's view", lambda: next(
            (m["content"]["data"][VIEW]["model_id"] for m in self.outputs.get(cell, [])
             if m["msg_type"] == "display_data" and VIEW in m["content"]["data"]), None)))

    def asking_view(self, cell: str) -> str:
        """The model id of the cell's view, once it shows a call waiting for approval
        (its `approvals` trait): when a person could click."""
        model_id = self.view_of(cell)
        self.until("the view to ask for approval", lambda: any(
            m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == model_id
            and m["content"]["data"].get("state", {}).get("approvals")
            for messages in self.outputs.values() for m in messages))
        return model_id

    def reply(self, cell: str, limit: float = LIMIT) -> dict[str, Any]:
        """The cell's reply, once its outputs are in too (they come on another channel)."""
        return dict(self.until("the cell to finish", lambda: any(
            m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
            for m in self.outputs.get(cell, [])) and self.replies.get(cell), limit))

    def result(self, cell: str) -> str:
        return "".join(m["content"]["data"]["text/plain"] for m in self.outputs.get(cell, [])
                       if m["msg_type"] == "execute_result")

    def printed(self, cell: str) -> str:
        return "".join(m["content"]["text"] for m in self.outputs.get(cell, []) if m["msg_type"] == "stream")

    def error(self, cell: str) -> dict[str, Any]:
        [error] = [m["content"] for m in self.outputs.get(cell, []) if m["msg_type"] == "error"]
        return dict(error)


def approve(call_id: str) -> dict[str, Any]:
    return {"kind": "approve", "call_id": call_id, "always": False}


def agent_with_a_call_to_approve(kernels: Any, final_answer: str) -> tuple[Kernel, Frontend]:
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    kernel.run(MODEL % final_answer)
    kernel.run("%mentra spawn writer --model s:m --tools publish")
    return kernel, Frontend(kernel)


@pytest.mark.parametrize(("cell", "final_answer", "shown"), [
    ("%%mentra writer --wait\nPublish Q1.", "Published Q1.", "Published Q1."),
    ("turn = %mentra send writer Publish Q1.\nturn.result().text", "Published Q1.", "'Published Q1.'"),
    ("%%mentra writer --wait --output Report\nPublish Q1.", '{"title": "Q1"}', "Report(title='Q1')"),
], ids=["--wait", "turn.result()", "--output"])
def test_approve_clicked_in_the_view_while_the_cell_waits_runs_the_call_and_the_cell_gets_the_answer(
        kernels: Any, cell: str, final_answer: str, shown: str) -> None:
    kernel, frontend = agent_with_a_call_to_approve(kernels, final_answer)
    waiting = frontend.execute(cell)
    frontend.click(frontend.asking_view(waiting), approve("c1"))
    assert frontend.reply(waiting)["status"] == "ok"
    assert frontend.result(waiting) == shown
    assert kernel.run("print(published)").strip() == "['Q1']"


def test_a_code_answer_waited_for_with_f_code_after_an_approval_goes_into_the_next_cell(kernels: Any) -> None:
    kernel, frontend = agent_with_a_call_to_approve(kernels, "Here:\n```python\nprint('Q1 is out')\n```")
    waiting = frontend.execute("%%mentra writer -f code\nPublish Q1, then give me code to announce it.")
    frontend.click(frontend.asking_view(waiting), approve("c1"))
    reply = frontend.reply(waiting)
    assert reply["status"] == "ok"
    [payload] = reply["payload"]
    assert payload["source"] == "set_next_input" and payload["text"] == "print('Q1 is out')"


def test_deny_clicked_while_the_cell_waits_sends_the_reason_to_the_model(kernels: Any) -> None:
    kernel, frontend = agent_with_a_call_to_approve(kernels, "Not published, as you asked.")
    waiting = frontend.execute("%%mentra writer --wait\nPublish Q1.")
    frontend.click(frontend.asking_view(waiting), {"kind": "deny", "call_id": "c1", "reason": "numbers not final"})
    assert frontend.reply(waiting)["status"] == "ok"
    assert frontend.result(waiting) == "Not published, as you asked."
    assert kernel.run("print(published)").strip() == "[]"
    sent = kernel.run("print(session.runtime.providers.get('s').requests[1].messages[-1].tool_results[0].content)")
    assert "(numbers not final)" in sent


def test_cells_queued_behind_a_waiting_cell_run_after_it_in_their_order(kernels: Any) -> None:
    """Run All: the next cells reach the kernel while this one waits. The waiting cell
    takes the click from behind them, and never runs them itself."""
    kernel, frontend = agent_with_a_call_to_approve(kernels, "Published Q1.")
    waiting = frontend.execute("%%mentra writer --wait\nPublish Q1.")
    model_id = frontend.asking_view(waiting)
    queued = [frontend.execute(f"ran.append(({n}, list(published)))") for n in (1, 2, 3)]
    frontend.click(model_id, approve("c1"))
    assert frontend.reply(waiting)["status"] == "ok"
    assert [frontend.reply(cell)["status"] for cell in queued] == ["ok", "ok", "ok"]
    # Each queued cell ran after the call was approved and run, and in its order.
    assert kernel.run("print(ran)").strip() == "[(1, ['Q1']), (2, ['Q1']), (3, ['Q1'])]"
    counts = [frontend.reply(cell)["execution_count"] for cell in [waiting, *queued]]
    assert counts == sorted(counts) and len(set(counts)) == 4


def test_interrupting_a_waiting_cell_stops_the_wait_and_the_turn_goes_on(kernels: Any) -> None:
    kernel, frontend = agent_with_a_call_to_approve(kernels, "Published Q1.")
    waiting = frontend.execute("%%mentra writer --wait\nPublish Q1.")
    queued = frontend.execute("ran.append('queued')")
    model_id = frontend.asking_view(waiting)
    kernel.manager.interrupt_kernel()
    assert frontend.reply(waiting)["status"] == "error"
    error = frontend.error(waiting)
    assert error["ename"] == "KeyboardInterrupt"
    assert "the cell stopped waiting; 'writer' goes on with run 1" in error["evalue"]
    # As after any failed cell, the one queued behind it was not run (and nothing was lost).
    assert frontend.reply(queued)["status"] == "aborted"
    assert kernel.run("print(ran, session.agent('writer').status)").strip() == "[] executing_tool(publish)"
    # The call still waits; the view answers it now the kernel is free.
    frontend.click(model_id, approve("c1"))
    frontend.until("the turn to finish", lambda: "finished" in kernel.run(
        "print(session.agent('writer').status)"))
    assert kernel.run("print(published, session.agent('writer').history[-1].text)").strip() \
        == "['Q1'] Published Q1."
