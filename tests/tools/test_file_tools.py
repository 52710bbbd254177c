"""The workspace-confined file tools: happy paths, paging, bounds and every refusal."""

from __future__ import annotations

import pytest

from mentra_nb import ConfigError, Runtime
from mentra_nb.runtime._file_tools import MAX_ENTRIES, MAX_MATCHES, MAX_OUTPUT_CHARS, file_tools
from tests.tools.helpers import by_name, call


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "data").mkdir()
    (root / "data" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\n")
    (root / "notes.md").write_text("# Notes\nfirst idea\nsecond idea\n")
    (tmp_path / "secret.txt").write_text("outside the workspace")
    return root


@pytest.fixture
def tools(ws):
    return by_name(file_tools(ws))


def test_the_specs_say_which_tools_read_and_which_need_approval(tools):
    assert {n for n, t in tools.items() if t.spec.read_only} == {"read_file", "list_dir", "glob", "grep"}
    assert {n for n, t in tools.items() if t.spec.requires_approval} == {"write_file", "edit_file"}


def test_a_default_runtime_registers_the_file_tools_in_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rt = Runtime()
    assert [t.spec.name for t in rt.tools] == ["read_file", "list_dir", "glob", "grep", "write_file", "edit_file"]
    assert rt.workspace.root == tmp_path.resolve()
    assert Runtime.empty().tools == []


def test_a_workspace_that_is_not_a_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="is not a folder"):
        Runtime(workspace=tmp_path / "missing")


# --- read_file -------------------------------------------------------------------

async def test_read_file_numbers_lines(tools):
    out = await call(tools["read_file"], path="notes.md")
    assert not out.is_error
    assert out.content == "     1\t# Notes\n     2\tfirst idea\n     3\tsecond idea"


async def test_read_file_pages_with_offset_and_limit_and_says_how_to_read_on(tools, ws):
    (ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    out = await call(tools["read_file"], path="long.txt", offset=10, limit=5)
    assert out.content.splitlines()[:5] == [f"{n:>6}\tline {n}" for n in range(10, 15)]
    assert out.content.splitlines()[-1] == "[showing lines 10-14 of 100; call read_file with offset=15 to read on]"
    last = await call(tools["read_file"], path="long.txt", offset=98)
    assert "[showing" not in last.content and last.content.endswith("line 100")


async def test_read_file_bounds_a_huge_file_and_cuts_long_lines(tools, ws):
    (ws / "huge.txt").write_text(("x" * 5_000 + "\n") * 200)
    out = await call(tools["read_file"], path="huge.txt")
    assert len(out.content) < MAX_OUTPUT_CHARS + 500
    assert "[line cut: 5000 characters]" in out.content
    assert "of 200; call read_file with offset=" in out.content.splitlines()[-1]


async def test_read_file_refuses_missing_folders_binary_and_past_the_end(tools, ws):
    (ws / "blob.bin").write_bytes(b"\x89PNG\x00\x00data")
    cases = {
        "nope.txt": "there is no file 'nope.txt'",
        "data": "is a folder, not a file; use list_dir",
        "blob.bin": "looks binary",
    }
    for path, message in cases.items():
        out = await call(tools["read_file"], path=path)
        assert out.is_error and message in out.content, out.content
    out = await call(tools["read_file"], path="notes.md", offset=50)
    assert out.is_error and "offset 50 is past the end: 'notes.md' has 3 lines" in out.content


async def test_dot_dot_and_absolute_paths_out_of_the_workspace_are_refused(tools, ws, tmp_path):
    for path in ["../secret.txt", "data/../../secret.txt", str(tmp_path / "secret.txt"), "/etc/passwd"]:
        out = await call(tools["read_file"], path=path)
        assert out.is_error, path
        assert f"'{path}' is outside the workspace" in out.content
    inside = await call(tools["read_file"], path=str(ws / "notes.md"))  # absolute but inside: fine
    assert not inside.is_error


async def test_symlinks_that_point_outside_are_refused_for_reads_and_writes(tools, ws, tmp_path):
    (ws / "escape.txt").symlink_to(tmp_path / "secret.txt")
    (ws / "outdir").symlink_to(tmp_path)
    for tool, input in [("read_file", {"path": "escape.txt"}), ("read_file", {"path": "outdir/secret.txt"}),
                        ("write_file", {"path": "outdir/planted.txt", "content": "x"}),
                        ("edit_file", {"path": "escape.txt", "old": "outside", "new": "inside"}),
                        ("list_dir", {"path": "outdir"}), ("grep", {"pattern": "x", "path": "outdir"})]:
        out = await call(tools[tool], **input)
        assert out.is_error and "is outside the workspace" in out.content, (tool, out.content)
    assert not (tmp_path / "planted.txt").exists()
    assert (tmp_path / "secret.txt").read_text() == "outside the workspace"


async def test_a_symlink_inside_the_workspace_is_followed(tools, ws):
    (ws / "alias.md").symlink_to(ws / "notes.md")
    out = await call(tools["read_file"], path="alias.md")
    assert not out.is_error and "first idea" in out.content


# --- list_dir, glob, grep -------------------------------------------------------------

async def test_list_dir_shows_folders_sizes_and_depth(tools, ws):
    out = await call(tools["list_dir"])
    assert out.content == "data/\nnotes.md  (31 bytes)"
    deeper = await call(tools["list_dir"], depth=2)
    assert deeper.content == "data/\n  sales.csv  (32 bytes)\nnotes.md  (31 bytes)"


async def test_list_dir_marks_symlinks_without_following_them_out(tools, ws, tmp_path):
    (ws / "outdir").symlink_to(tmp_path)
    out = await call(tools["list_dir"], depth=3)
    assert "outdir -> symlink (outside the workspace, not followed)" in out.content
    assert "secret.txt" not in out.content


async def test_list_dir_stops_at_its_bound_and_says_what_to_do(tools, ws):
    many = ws / "many"
    many.mkdir()
    for i in range(MAX_ENTRIES + 20):
        (many / f"f{i:04}.txt").write_text("")
    out = await call(tools["list_dir"], path="many")
    lines = out.content.splitlines()
    assert len(lines) == MAX_ENTRIES + 1
    assert lines[-1].startswith(f"[stopped after {MAX_ENTRIES} entries; list a subfolder")


async def test_glob_matches_across_folders_and_refuses_patterns_that_leave(tools, ws):
    (ws / "data" / "deep").mkdir()
    (ws / "data" / "deep" / "more.csv").write_text("a\n")
    assert (await call(tools["glob"], pattern="**/*.csv")).content == "data/deep/more.csv\ndata/sales.csv"
    assert (await call(tools["glob"], pattern="data/*.csv")).content == "data/sales.csv"
    assert (await call(tools["glob"], pattern="*.md")).content == "notes.md"
    assert (await call(tools["glob"], pattern="*.parquet")).content == "no files match '*.parquet'"
    for pattern in ["../*.txt", "/etc/*"]:
        out = await call(tools["glob"], pattern=pattern)
        assert out.is_error and "leaves the workspace" in out.content


async def test_grep_finds_lines_with_paths_and_numbers(tools, ws):
    out = await call(tools["grep"], pattern=r"idea$")
    assert out.content == "notes.md:2: first idea\nnotes.md:3: second idea"
    only_csv = await call(tools["grep"], pattern="north|idea", glob="*.csv")
    assert only_csv.content == "data/sales.csv:2: north,10"
    one_file = await call(tools["grep"], pattern="second", path="notes.md")
    assert one_file.content == "notes.md:3: second idea"
    none = await call(tools["grep"], pattern="zebra")
    assert not none.is_error and none.content == "no matches for /zebra/ in '.'"


async def test_grep_refuses_a_bad_regex_and_bounds_huge_output(tools, ws):
    bad = await call(tools["grep"], pattern="(unclosed")
    assert bad.is_error and "not a valid regular expression" in bad.content
    (ws / "big.log").write_text("match here\n" * (MAX_MATCHES * 3))
    out = await call(tools["grep"], pattern="match")
    lines = out.content.splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[-1] == (f"[stopped after {MAX_MATCHES} matches; narrow the search with path=, glob= "
                         "or a more specific pattern]")


async def test_grep_skips_binary_files(tools, ws):
    (ws / "blob.bin").write_bytes(b"idea\x00\x01")
    out = await call(tools["grep"], pattern="idea")
    assert "blob.bin" not in out.content


# --- write_file, edit_file ------------------------------------------------------------

async def test_write_file_creates_folders_and_replaces(tools, ws):
    out = await call(tools["write_file"], path="reports/q1.md", content="# Q1\ntotal: 30\n")
    assert out.content == "created 'reports/q1.md' (2 lines, 15 bytes)"
    assert (ws / "reports" / "q1.md").read_text() == "# Q1\ntotal: 30\n"
    again = await call(tools["write_file"], path="reports/q1.md", content="new")
    assert again.content == "replaced 'reports/q1.md' (1 lines, 3 bytes)"


async def test_write_file_refuses_a_folder(tools):
    out = await call(tools["write_file"], path="data", content="x")
    assert out.is_error and "is a folder" in out.content


async def test_edit_file_replaces_one_exact_match(tools, ws):
    out = await call(tools["edit_file"], path="notes.md", old="second idea", new="better idea")
    assert out.content == "replaced 1 occurrence in 'notes.md' (first at line 3)"
    assert (ws / "notes.md").read_text() == "# Notes\nfirst idea\nbetter idea\n"


async def test_edit_file_refuses_an_ambiguous_match_and_names_the_lines(tools, ws):
    out = await call(tools["edit_file"], path="notes.md", old="idea", new="plan")
    assert out.is_error
    assert "old matches 2 times in 'notes.md' (lines 2, 3)" in out.content
    assert "set replace_all=true" in out.content
    assert (ws / "notes.md").read_text() == "# Notes\nfirst idea\nsecond idea\n"  # untouched
    everywhere = await call(tools["edit_file"], path="notes.md", old="idea", new="plan", replace_all=True)
    assert everywhere.content == "replaced 2 occurrences in 'notes.md' (first at line 2)"
    assert (ws / "notes.md").read_text() == "# Notes\nfirst plan\nsecond plan\n"


async def test_edit_file_refuses_missing_empty_and_no_op_edits(tools, ws):
    missing = await call(tools["edit_file"], path="notes.md", old="third idea", new="x")
    assert missing.is_error and "old was not found in 'notes.md'" in missing.content
    spaces = await call(tools["edit_file"], path="notes.md", old="  first idea  ", new="x")
    assert spaces.is_error and "copy the exact whitespace" in spaces.content
    empty = await call(tools["edit_file"], path="notes.md", old="", new="x")
    assert empty.is_error and "use write_file" in empty.content
    same = await call(tools["edit_file"], path="notes.md", old="first", new="first")
    assert same.is_error and "nothing to change" in same.content
    no_file = await call(tools["edit_file"], path="ghost.md", old="a", new="b")
    assert no_file.is_error and "there is no file 'ghost.md'" in no_file.content


async def test_edit_file_keeps_windows_line_endings(tools, ws):
    (ws / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    await call(tools["edit_file"], path="crlf.txt", old="b", new="c")
    assert (ws / "crlf.txt").read_bytes() == b"a\r\nc\r\n"


def test_file_tool_specs_have_schemas_a_provider_accepts(tools):
    schema = tools["edit_file"].spec.input_schema
    assert schema["required"] == ["path", "old", "new"]
    assert schema["properties"]["replace_all"]["default"] is False
    assert tools["read_file"].spec.description.startswith("Read a text file of the workspace, with line numbers")
