"""The opt-in shell tool: output, exit codes, timeouts that kill the process
group, bounded output, cwd confinement, and that it always needs approval."""

from __future__ import annotations

import asyncio
import time

import pytest

from mentra_nb.runtime._shell_tool import BoundedOutput, shell_tool
from tests.tools.helpers import call


@pytest.fixture
def shell(tmp_path):
    (tmp_path / "sub").mkdir()
    return shell_tool(tmp_path)


def test_shell_always_requires_approval_and_is_not_read_only(shell):
    assert shell.spec.name == "shell"
    assert shell.spec.requires_approval and not shell.spec.read_only


async def test_a_command_returns_its_exit_code_and_output(shell, tmp_path):
    out = await call(shell, command="echo hello; echo oops >&2; pwd")
    assert not out.is_error
    assert out.content == f"exit code 0\nhello\noops\n{tmp_path.resolve()}"


async def test_a_failing_command_is_an_error_result_with_its_code(shell):
    out = await call(shell, command="echo partial; exit 3")
    assert out.is_error and out.content == "exit code 3\npartial"


async def test_cwd_is_relative_to_the_workspace_and_cannot_leave_it(shell, tmp_path):
    out = await call(shell, command="pwd", cwd="sub")
    assert out.content.endswith(str((tmp_path / "sub").resolve()))
    refused = await call(shell, command="pwd", cwd="..")
    assert refused.is_error and "is outside the workspace" in refused.content
    missing = await call(shell, command="pwd", cwd="nowhere")
    assert missing.is_error and "is not a folder in the workspace" in missing.content


async def test_a_timeout_kills_the_command_and_its_children(shell, tmp_path):
    marker = tmp_path / "survived"
    started = time.monotonic()
    # The child sleeps in the background; killing only /bin/sh would leave it to write the marker.
    out = await call(shell, command=f"echo started; (sleep 1.5; touch {marker}) & sleep 30", timeout_ms=300)
    assert time.monotonic() - started < 5
    assert out.is_error
    assert out.content.startswith("timed out after 300 ms and was killed (with its child processes)")
    assert "started" in out.content and "larger timeout_ms" in out.content
    await asyncio.sleep(2)  # longer than the background child would have slept
    assert not marker.exists()


async def test_huge_output_keeps_the_head_and_tail_and_says_what_was_left_out(tmp_path):
    shell = shell_tool(tmp_path, max_output_chars=2_000)
    out = await call(shell, command="seq 1 200000")
    lines = out.content.splitlines()
    assert lines[:3] == ["exit code 0", "1", "2"]
    assert lines[-1] == "200000"
    assert len(out.content) < 2_500
    assert "bytes of output left out; redirect to a file" in out.content


async def test_timeout_ms_is_validated(shell):
    with pytest.raises(Exception, match="timeout_ms"):
        await call(shell, command="true", timeout_ms=1)


def test_bounded_output_keeps_small_streams_whole():
    out = BoundedOutput(10)
    for piece in (b"ab", b"cd"):
        out.feed(piece)
    assert out.text() == "abcd"
    out.feed(b"0123456789")
    assert out.total == 14
    assert out.text().startswith("abcd0") and out.text().endswith("56789")
