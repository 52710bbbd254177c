"""`MCPServer` configurations: what is refused (and what to do instead), how
variables keep secrets out of the store, and the tool names models accept."""

from __future__ import annotations

import re

import pytest

from mentra_nb import ConfigError, MCPServer, MCPServerError
from mentra_nb.runtime.mcp import model_tool_name


def test_a_literal_secret_header_is_refused_saying_to_name_a_variable():
    with pytest.raises(ConfigError, match=r"header 'Authorization' looks secret.*\$"):
        MCPServer.http("gh", "https://example.com/mcp", headers={"Authorization": "Bearer abc123"})


def test_a_literal_secret_env_value_is_refused():
    with pytest.raises(ConfigError, match=r"env 'GITHUB_TOKEN' looks secret"):
        MCPServer.stdio("gh", ["server"], env={"GITHUB_TOKEN": "ghp_abc"})


def test_credentials_in_the_url_are_refused():
    with pytest.raises(ConfigError, match="user name or password"):
        MCPServer.http("gh", "https://me:pw@example.com/mcp")
    with pytest.raises(ConfigError, match="query parameter 'api_key' looks secret"):
        MCPServer.http("gh", "https://example.com/mcp?api_key=abc")


def test_variables_are_kept_as_names_and_read_when_the_server_starts():
    server = MCPServer.http("gh", "https://example.com/mcp",
                            headers={"Authorization": "Bearer ${GH_TOKEN}", "X-Team": "data"})
    assert server.model_dump()["headers"] == {"Authorization": "Bearer ${GH_TOKEN}", "X-Team": "data"}
    assert server.resolved_headers({"GH_TOKEN": "s3cret"}) == {"Authorization": "Bearer s3cret",
                                                               "X-Team": "data"}
    stdio = MCPServer.stdio("x", ["server"], env={"TOKEN": "$TOKEN", "PRICE": "$$5"})
    assert stdio.resolved_env({"TOKEN": "t"}) == {"TOKEN": "t", "PRICE": "$5"}


def test_a_missing_variable_names_the_server_the_header_and_the_variable():
    server = MCPServer.http("gh", "https://example.com/mcp", headers={"Authorization": "Bearer $GH_TOKEN"})
    with pytest.raises(MCPServerError, match=r"MCP server 'gh': header 'Authorization' names \$GH_TOKEN, "
                                             r"which is not set"):
        server.resolved_headers({})


@pytest.mark.parametrize(("build", "problem"), [
    (lambda: MCPServer.stdio("time", []), "needs a command"),
    (lambda: MCPServer.stdio("bad name", ["x"]), "not a usable server name"),
    (lambda: MCPServer.http("web", "ftp://example.com"), "not an http"),
    (lambda: MCPServer.stdio("time", ["x"], start_timeout=0), "start_timeout"),
])
def test_an_unusable_configuration_is_a_config_error_naming_the_problem(build, problem):
    with pytest.raises(ConfigError, match=problem):
        build()


def test_python_means_this_kernels_interpreter():
    import sys

    assert MCPServer.stdio("t", ["python", "-m", "mcp_server_time"]).program() == (
        sys.executable, ["-m", "mcp_server_time"])
    assert MCPServer.stdio("t", ["uvx", "mcp-server-time"]).program() == ("uvx", ["mcp-server-time"])


def test_tool_names_follow_the_providers_rules_and_stay_distinct():
    assert model_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert model_tool_name("my.server", "get-sum") == "mcp__my_server__get-sum"
    long = model_tool_name("a-server-with-a-long-name", "a_tool_whose_name_goes_on_and_on_and_on_and_on")
    assert len(long) == 64 and re.fullmatch(r"[A-Za-z0-9_-]+", long)
    assert long == model_tool_name("a-server-with-a-long-name", "a_tool_whose_name_goes_on_and_on_and_on_and_on")
    first = model_tool_name("s", "a.b")
    second = model_tool_name("s", "a_b", taken={first})
    assert first == "mcp__s__a_b" and second != first and len(second) <= 64


def test_a_literal_secret_on_the_command_line_is_refused_and_a_variable_is_expanded_at_start():
    with pytest.raises(ConfigError, match=r"the command's --api-key looks secret.*--api-key \"\$MY_API_KEY\""):
        MCPServer.stdio("x", ["server", "--api-key", "abc123"])
    with pytest.raises(ConfigError, match=r"the command's --token looks secret"):
        MCPServer.stdio("x", ["server", "--token=abc123"])
    ok = MCPServer.stdio("x", ["server", "--token", "$X_TOKEN", "--verbose", "--tz", "UTC"])
    assert ok.program({"X_TOKEN": "t0k"})[1] == ["--token", "t0k", "--verbose", "--tz", "UTC"]
    assert ok.command[2] == "$X_TOKEN"  # stored as written


def test_names_of_files_and_harmless_flags_are_not_mistaken_for_secrets():
    MCPServer.stdio("x", ["server", "--key-file", "/etc/keys/server.pem", "--auth-method", "oauth"],
                    env={"GOOGLE_APPLICATION_CREDENTIALS": "~/gcloud/key.json", "TZ": "UTC"})
    MCPServer.http("x", "https://example.com/mcp", headers={"Accept": "application/json"})
