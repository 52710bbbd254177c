"""The `%mentra mcp` magics in an in-process IPython shell."""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError

from mentra_nb import MCPServerError
from mentra_nb.runtime import mcp
from tests.notebook.conftest import ip, mentra, session  # noqa: F401  (fixtures)


def test_add_with_a_url_keeps_a_header_variable_as_written(ip, session, capsys, monkeypatch):  # noqa: F811
    # Even with a kernel variable of that name: IPython must not put its value in the line.
    # (monkeypatch removes it again: the test shell's namespace outlives this test.)
    monkeypatch.setitem(ip.user_ns, "DOCS_TOKEN", "s3cret-in-a-kernel-variable")
    result = ip.run_cell("%mentra mcp add docs --url http://127.0.0.1:9/mcp "
                         "--header 'Authorization=Bearer $DOCS_TOKEN' --header X-Api-Key=$DOCS_TOKEN "
                         "--header X-Team=data")
    assert result.success
    assert "MCP server 'docs' added (http://127.0.0.1:9/mcp)" in capsys.readouterr().out
    [server] = session.call(lambda: session.runtime.services.extension(mcp.MCPExtension)
                            .servers(session.runtime.services))
    assert server.headers == {"Authorization": "Bearer $DOCS_TOKEN", "X-Api-Key": "$DOCS_TOKEN",
                              "X-Team": "data"}
    mentra(ip, "mcp list")
    assert re.search(r"docs +http +stopped +\? tools +http://127.0.0.1:9/mcp", capsys.readouterr().out)


def test_add_with_a_command_then_spawn_with_mcp_then_remove(ip, session, capsys):  # noqa: F811
    mentra(ip, "mcp add time --env GITHUB_TOKEN=$GITHUB_TOKEN --env TZ=UTC "
               "-- python -m mcp_server_time --local-timezone UTC")
    [server] = session.call(lambda: session.runtime.services.extension(mcp.MCPExtension)
                            .servers(session.runtime.services))
    assert server.env == {"GITHUB_TOKEN": "$GITHUB_TOKEN", "TZ": "UTC"}
    agent = mentra(ip, "spawn clock --mcp time")
    assert agent.config.mcp_servers == ["time"]
    mentra(ip, "mcp add time -- python -m mcp_server_time --local-timezone Europe/Paris")
    assert "MCP server 'time' replaced" in capsys.readouterr().out
    mentra(ip, "mcp remove time")
    assert "removed and stopped" in capsys.readouterr().out
    assert session.mcp_servers() == []


@pytest.mark.parametrize(("line", "said"), [
    ("mcp", "needs a subcommand: add, list, tools, remove"),
    ("mcp add time", "give the server's command after -- or its --url"),
    ("mcp add 'a b' -- x", "not a valid MCP server name"),
    ("mcp add t --header X=1 -- x", "--header is for a --url server"),
    ("mcp add t --env X=1 --url http://h/mcp", "--env is for a command's server"),
    ("mcp add t --env X -- x", "--env takes KEY=VALUE"),
    ("mcp add t --url http://h/mcp --header nonsense", "--header takes KEY=VALUE"),
])
def test_bad_mcp_lines_are_usage_errors_with_the_usage_line(ip, line, said):  # noqa: F811
    with pytest.raises(UsageError, match=re.escape(said)) as caught:
        mentra(ip, line)
    assert "usage: %mentra" in str(caught.value)


def test_unknown_servers_are_named_with_what_to_do(ip):  # noqa: F811
    with pytest.raises(MCPServerError, match=r"no MCP server named 'nope' in this notebook.*mcp add nope"):
        mentra(ip, "spawn a --mcp nope")
    with pytest.raises(MCPServerError, match=r"no MCP server named 'nope'.*%mentra mcp add nope"):
        mentra(ip, "mcp remove nope")


def test_help_mcp_lists_the_subcommands(ip, capsys):  # noqa: F811
    mentra(ip, "help mcp")
    out = capsys.readouterr().out
    for sub in ("add NAME [--url URL] [--header K=V]...", "list", "tools NAME", "remove NAME"):
        assert f"%mentra mcp {sub}" in out
