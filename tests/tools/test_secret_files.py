"""Issue 14.1: the file tools refuse credential files, and tool results never
carry the value of a key the runtime knows."""

from __future__ import annotations

import os
import secrets

import pytest

from mentra_nb import Message, Runtime, SqliteStore
from mentra_nb.runtime._file_tools import SECRET_FILES, Workspace, file_tools
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.tools.helpers import by_name, call

KEY = f"sk-mentra-CANARY-{secrets.token_hex(12)}"


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    (root / ".env.local").write_text(f"OTHER_TOKEN={KEY}\n")
    (root / "server.pem").write_text(f"-----BEGIN PRIVATE KEY-----\n{KEY}\n")
    (root / ".aws").mkdir()
    (root / ".aws" / "credentials").write_text(f"[default]\naws_secret_access_key = {KEY}\n")
    (root / "gcloud").mkdir()
    (root / "gcloud" / "application_default_credentials.json").write_text(f'{{"k": "{KEY}"}}')
    (root / "notes.md").write_text("API_KEY is read from the environment\n")
    (root / "link.txt").symlink_to(root / ".env")
    return root


@pytest.fixture
def tools(ws):
    return by_name(file_tools(ws))


@pytest.mark.parametrize("path", [".env", ".env.local", "server.pem", ".aws/credentials",
                                  "gcloud/application_default_credentials.json", "link.txt",
                                  "./data/../.env"])
async def test_read_file_refuses_a_secret_file(tools, path):
    out = await call(tools["read_file"], path=path)
    assert out.is_error and "secret file" in out.content
    assert KEY not in out.content


async def test_grep_glob_and_list_dir_never_show_a_secret_files_content(tools):
    grep = await call(tools["grep"], pattern="API_KEY|sk-mentra|secret")
    assert KEY not in grep.content and grep.content == "notes.md:1: API_KEY is read from the environment"
    found = await call(tools["glob"], pattern="**/*")
    assert found.content.splitlines() == ["notes.md"]
    listing = await call(tools["list_dir"], path=".", depth=3)
    assert ".env  (secret file: the file tools do not open it)" in listing.content
    assert "  credentials" not in listing.content  # a secret folder is not entered
    assert "link.txt  (secret file" in listing.content  # a symlink to .env is secret too
    assert KEY not in listing.content
    refused = await call(tools["list_dir"], path=".aws")
    assert refused.is_error and "secret file" in refused.content


async def test_writing_a_secret_file_is_refused_too(tools, ws):
    out = await call(tools["write_file"], path=".git-credentials", content="https://u:p@host")
    assert out.is_error and "secret file" in out.content
    assert not (ws / ".git-credentials").exists()
    out = await call(tools["edit_file"], path=".env", old="OPENAI", new="X")
    assert out.is_error and (ws / ".env").read_text().startswith("OPENAI")


async def test_the_secret_list_is_documented_and_can_be_changed(ws):
    assert ".env" in SECRET_FILES and "id_rsa*" in SECRET_FILES and ".netrc" in SECRET_FILES
    only_pem = by_name(file_tools(Workspace(ws, secret_files=["*.pem"])))
    assert not (await call(only_pem["read_file"], path=".env.local")).is_error
    assert (await call(only_pem["read_file"], path="server.pem")).is_error
    rt = Runtime(workspace=Workspace(ws, secret_files=()))
    assert rt.workspace.secret_files == ()
    await rt.aclose()


@pytest.mark.parametrize("name", ["id_rsa", "id_ed25519.pub", ".netrc", "my.key", ".ssh/config", ".ENV",
                                  "Server.PEM", ".AWS/credentials",
                                  ".azure/accessTokens.json", ".config/gcloud/credentials.db"])
def test_the_default_list_covers_keys_and_cloud_credentials(tmp_path, name):
    ws = Workspace(tmp_path)
    assert ws.is_secret(tmp_path / name)
    assert not ws.is_secret(tmp_path / "notes" / "keys.md")


async def test_a_tool_result_is_scrubbed_of_every_known_key_before_it_is_stored(tmp_path, monkeypatch):
    """A tool that prints the environment (or a .env) must not put the key in the
    transcript, the state file or the next request to the provider."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    dotenv_value = f"dotenv-{secrets.token_hex(10)}"
    (tmp_path / ".env").write_text(f"DATABASE_URL=postgres://u:{dotenv_value}@db/x\nDEBUG=true\n")
    monkeypatch.chdir(tmp_path)
    from mentra_nb import tool

    @tool(read_only=True)
    def environment() -> str:
        """Print the environment and the .env file."""
        return "\n".join(f"{k}={v}" for k, v in os.environ.items()) + (tmp_path / ".env").read_text()

    provider = ScriptedProvider("scripted", [tool_use_stream("call_1", "environment", "{}"),
                                             text_stream("done")])
    store = SqliteStore(tmp_path / "s.sqlite")
    rt = Runtime.empty(store=store, providers=[provider], tools=[environment], workspace=tmp_path)
    agent = rt.spawn("w", "scripted:m")
    await agent.send("show the environment")
    result = agent.history[2].content[0]
    assert "ANTHROPIC_API_KEY=[redacted]" in result.content and "DEBUG=true" in result.content
    second_request = provider.recorded_requests()[1]
    assert KEY not in str(second_request.messages) and dotenv_value not in str(second_request.messages)
    await rt.aclose()
    store.close()
    raw = (tmp_path / "s.sqlite").read_bytes()
    assert KEY.encode() not in raw and dotenv_value.encode() not in raw
    assert isinstance(agent.history[-1], Message)
