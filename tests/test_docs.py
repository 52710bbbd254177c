"""The documentation: the README stays short and runs the same tests as CI, the docs site
builds offline with warnings as errors, every internal link and anchor resolves, every
public name has an API entry with its docstring, and the examples marked runnable run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[1]
# A site build takes 10 to 40 s on 2 shared cores; one test makes five.
pytestmark = pytest.mark.timeout(900)
RUNNABLE = "<!-- runnable -->"
# Notebook cells: every block so marked on a page runs, in order, in one IPython shell.
RUNNABLE_IPYTHON = "<!-- runnable: ipython -->"
# The Markdown files GitHub shows at the top of the repository; the site's pages are
# checked in the built HTML instead.
TOP_LEVEL = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")


def docs_env() -> dict[str, str]:
    # This checkout's package; Material's banner about its successor is not a warning.
    return {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `mkdocs build --strict` writes it (mkdocs.yml has `strict: true` too)."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                           cwd=REPO, env=docs_env(), capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    return out


def markdown_pages() -> list[Path]:
    return [REPO / name for name in TOP_LEVEL] + sorted((REPO / "docs").rglob("*.md"))


# ---------------------------------------------------------------- README

def test_the_readme_is_at_most_200_lines():
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


def test_the_readmes_test_command_is_the_one_ci_runs():
    ci = [line.strip() for line in (REPO / ".ci/run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    readme = (REPO / "README.md").read_text().split("## Run the tests", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", readme, re.S).group(1)
    assert command.split(" && ")[-1] == ci[-1] == "pytest"


def test_the_readme_says_how_to_build_the_docs_with_warnings_as_errors():
    readme = (REPO / "README.md").read_text().split("## Documentation", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", readme, re.S).group(1)
    assert command.endswith("mkdocs build --strict") and "'.[docs]'" in command


# ---------------------------------------------------------------- the site

def test_the_docs_build_offline_with_warnings_as_errors(site):
    assert (site / "index.html").is_file()
    for notebook in sorted((REPO / "notebooks").glob("*.ipynb")):  # every tutorial, rendered
        page = site / "tutorials" / notebook.stem / "index.html"
        assert page.is_file(), f"{notebook.name} is not in the site (add it to mkdocs.yml's nav)"


def test_a_broken_link_a_missing_api_object_or_a_broken_tutorial_fails_the_build(tmp_path):
    """The strict build is what catches drift: a link to a missing page or anchor, an
    API entry for a name that does not exist, and a tutorial that cannot be rendered
    each fail it."""
    copy = tmp_path / "checkout"
    shutil.copytree(REPO / "docs", copy / "docs", symlinks=True)
    shutil.copy(REPO / "mkdocs.yml", copy)
    for name in ("mentra_nb", "notebooks", "tests", "CONTRIBUTING.md", "CHANGELOG.md"):
        (copy / name).symlink_to(REPO / name)
    index = (copy / "docs/index.md").read_text()

    def build() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(tmp_path / "out")],
                              cwd=copy, env=docs_env(), capture_output=True, text=True, timeout=600)

    intact = build()  # the copy itself builds: each failure below is the change's
    assert intact.returncode == 0, intact.stderr
    for broken in ("[gone](nowhere.md)", "[gone](guide/teams.md#no-such-heading)",
                   "::: mentra_nb.runtime.NoSuchName"):
        (copy / "docs/index.md").write_text(f"{index}\n{broken}\n")
        failed = build()
        assert failed.returncode != 0, f"{broken} built without an error"
    # A tutorial that cannot be rendered (here: a damaged file) fails it too.
    (copy / "docs/index.md").write_text(index)
    (copy / "notebooks").unlink()
    shutil.copytree(REPO / "notebooks", copy / "notebooks", ignore=shutil.ignore_patterns(".*"))
    damaged = copy / "notebooks/01-quickstart.ipynb"
    damaged.write_text(damaged.read_text()[:2000])
    assert build().returncode != 0, "a damaged tutorial built without an error"


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if name in ("href", "src") and value and tag in ("a", "img"):
                self.links.append(value)


def test_every_internal_link_and_anchor_of_the_site_resolves(site):
    pages: dict[Path, _Anchors] = {}
    for html in site.rglob("*.html"):
        if html.name == "404.html":
            continue  # its links are absolute on purpose: it is served at any path
        parser = _Anchors()
        parser.feed(html.read_text())
        pages[html] = parser
    broken = []
    for html, parser in pages.items():
        for link in parser.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "data:")):
                continue  # external: not followed (the build has no network)
            target = (html.parent / unquote(parts.path)).resolve() if parts.path else html
            if target.is_dir():
                target = target / "index.html"
            if not target.exists() or target.name == "404.html":
                broken.append(f"{html.relative_to(site)}: {link}")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in pages[target].ids:
                broken.append(f"{html.relative_to(site)}: {link} (no such anchor)")
    assert not broken, "\n".join(broken)


def _github_anchor(heading: str) -> str:
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_the_top_level_markdown_links_resolve():
    """README, CONTRIBUTING and CHANGELOG as GitHub shows them: relative links name files
    that exist, and their anchors headings that exist."""
    broken = []
    for page in [REPO / name for name in TOP_LEVEL]:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            parts = urlsplit(target)
            if parts.scheme:
                continue
            path = (page.parent / parts.path).resolve() if parts.path else page
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif parts.fragment and path.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", path.read_text(), flags=re.S), re.M)
                if parts.fragment not in {_github_anchor(h) for h in headings}:
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


# ---------------------------------------------------------------- the API reference

def _api_hook():
    spec = importlib.util.spec_from_file_location("api_reference", REPO / "docs/hooks/api_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_an_api_entry(site):
    hook = _api_hook()
    where = hook.documented_at()
    for module in hook.public_modules():  # every public name of every public module
        for name in hook.public_names(module):
            assert (module, name) in where, f"{module}.{name}"
    ids = set()
    for html in (site / "reference").rglob("*.html"):
        parser = _Anchors()
        parser.feed(html.read_text())
        ids |= parser.ids
    missing = sorted({path for path in where.values() if path not in ids})
    assert not missing, f"public names without an API entry: {missing}"


def test_every_public_name_has_a_docstring():
    import griffe

    package = griffe.load("mentra_nb", search_paths=[str(REPO)], resolve_aliases=True,
                          resolve_external=False)
    undocumented = []
    for path in sorted(set(_api_hook().documented_at().values())):
        obj = package[path.removeprefix("mentra_nb.")]
        if not (obj.docstring and obj.docstring.value.strip()):
            undocumented.append(path)
    assert not undocumented, f"public names without a docstring: {undocumented}"


# ---------------------------------------------------------------- runnable examples

def python_blocks(marker: str) -> list[tuple[str, str]]:
    """(where, code) of every ```python block that `marker` precedes."""
    found = []
    for page in markdown_pages():
        text = page.read_text()
        for match in re.finditer(r"^([^\n]*)\n```python\n(.*?)^```", text, re.M | re.S):
            if match.group(1).strip() == marker:
                line = text[:match.start()].count("\n") + 2
                found.append((f"{page.relative_to(REPO)}:{line}", match.group(2)))
    return found


def runnable_blocks() -> list[tuple[str, str]]:
    """(where, code) of every ```python block that `<!-- runnable -->` precedes: an example
    that needs no key, network or notebook, run as written (top-level `await` allowed)."""
    return python_blocks(RUNNABLE)


def test_every_whole_program_in_the_docs_is_marked_runnable():
    """A block that runs its own `main()` is a whole program: it must run in the test."""
    unmarked = []
    for page in markdown_pages():
        text = page.read_text()
        for match in re.finditer(r"^([^\n]*)\n```python\n(.*?)^```", text, re.M | re.S):
            if "asyncio.run(" in match.group(2) and match.group(1).strip() != RUNNABLE:
                unmarked.append(f"{page.relative_to(REPO)}:{text[:match.start()].count(chr(10)) + 2}")
    assert not unmarked, unmarked


# What the examples that print something print (pages whose runnable examples print).
PRINTS = {
    "README.md": r"^You said: .* finished$",
    "docs/guide/mcp.md": r"'mcp__time__get_current_time'",
}

# Runs an example as a notebook cell runs it: `await` at the top level works (IPython's
# autoawait), in an event loop that asyncio.run() opens for the whole example.
RUNNER = """
import ast, asyncio, sys
code = compile(open(sys.argv[1]).read(), sys.argv[1], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


def run_example(code: str, folder: Path, where: str) -> str:
    folder.mkdir()
    (folder / "example.py").write_text(code)
    try:
        out = subprocess.run([sys.executable, "-c", RUNNER, "example.py"], capture_output=True, text=True,
                             timeout=120, cwd=folder, env={**os.environ, "PYTHONPATH": str(REPO)})
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"the example at {where} never returned:\n{code}") from err
    assert out.returncode == 0, f"the example at {where} failed:\n{out.stderr}"
    return out.stdout


@pytest.mark.parametrize("where,code", runnable_blocks(), ids=[where for where, _ in runnable_blocks()])
def test_the_runnable_examples_run_as_written_in_an_empty_folder(where, code, tmp_path):
    out = run_example(code, tmp_path / "example", where)
    page = where.split(":")[0]
    if page in PRINTS:  # what the example says it prints
        assert re.search(PRINTS[page], out, re.M), f"{where} printed:\n{out}"


def test_the_python_guides_first_example_calls_its_tool_and_resumes(tmp_path):
    """Issue 36.1: "Using the runtime from Python" never returned: the offline test
    model called every tool it was offered, the built-in write_file among them, and
    waited for an approval nobody could give."""
    guide = REPO / "docs/guide/python-api.md"
    [(where, code)] = [(where, code) for where, code in runnable_blocks()
                       if where.startswith(str(guide.relative_to(REPO)) + ":")][:1]
    out = run_example(code, tmp_path / "example", where)
    # It calls the tool it registered, and nothing else (the test model makes up the
    # text it counts); the second runtime resumes the four messages.
    assert re.match(r"Tool results: word_count returned \d+ finished ", out), out
    assert out.splitlines()[-1] == "4"


def test_the_maintainer_recipes_name_files_that_exist():
    """The "where to change what" recipes and the architecture page name files by path;
    a renamed or removed file fails here instead of leaving a recipe that misleads."""
    missing = []
    for page in sorted((REPO / "docs/maintainers").glob("*.md")):
        for path in re.findall(r"`([\w./<>-]+\.(?:py|js|css|toml|json))`", page.read_text()):
            if "<" in path:
                continue  # a pattern: providers/<name>.py
            if not any((base / path).exists() for base in (REPO, REPO / "mentra_nb")):
                missing.append(f"{page.name}: {path}")
    assert not missing, missing


IPYTHON_RUNNER = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "mentra_nb")  # as the guide's pages assume
for where, cell in json.load(open(sys.argv[1])):
    result = shell.run_cell(cell)
    if not result.success:
        sys.exit(f"the cell at {where} failed: {result.error_before_exec or result.error_in_exec!r}")
"""


def notebook_pages() -> dict[str, list[tuple[str, str]]]:
    pages: dict[str, list[tuple[str, str]]] = {}
    for where, code in python_blocks(RUNNABLE_IPYTHON):
        pages.setdefault(where.split(":")[0], []).append((where, code))
    return pages


@pytest.mark.parametrize("page", sorted(notebook_pages()))
def test_the_notebook_examples_run_as_cells_in_order(page, tmp_path):
    """A page's cells marked `<!-- runnable: ipython -->`, run as a notebook runs them
    (one shell with the extension loaded, in order, in an empty folder): magics, `{var}`
    prompts, the offline model."""
    (tmp_path / "cells.json").write_text(json.dumps(notebook_pages()[page]))
    # Spawning with a real provider only checks that its key is set; no model is called.
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "placeholder-not-a-key",
           "OPENAI_API_KEY": "placeholder-not-a-key"}
    out = subprocess.run([sys.executable, "-c", IPYTHON_RUNNER, "cells.json"], capture_output=True,
                         text=True, timeout=180, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr


def test_no_magic_line_in_the_docs_ends_in_a_comment():
    """A line magic takes the rest of its line as arguments, `#` included:
    `%mentra spawn writer  # a note` is a UsageError (it was, in the README's quick start)."""
    offending = []
    for page in markdown_pages():
        for block in re.findall(r"^```python\n(.*?)^```", page.read_text(), re.M | re.S):
            for line in block.splitlines():
                code = line.split("=", 1)[1] if re.match(r"\w+ = %", line) else line
                if code.lstrip().startswith("%") and not code.lstrip().startswith("%%") and " #" in code:
                    offending.append(f"{page.relative_to(REPO)}: {line}")
    assert not offending, offending
