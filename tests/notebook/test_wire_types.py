"""The widgets' wire contract: js/wire.d.ts is made from the kernel's own definitions
(each view's browser-message models and mentra_nb/notebook/_wire.py), is never stale,
and `tsc` holds the front end to it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mentra_nb.notebook import _wire_ts
from mentra_nb.notebook._widget import MentraWidget
from tests.conftest import missing

JS_SOURCE = Path(__file__).resolve().parents[2] / "js"


def test_wire_d_ts_is_what_the_generator_makes_from_the_kernels_definitions():
    assert (JS_SOURCE / "wire.d.ts").read_text(encoding="utf-8") == _wire_ts.generate(), (
        "js/wire.d.ts is stale: run `python -m mentra_nb.notebook._wire_ts` and commit it")


@pytest.mark.parametrize(("wire", "view"), _wire_ts.VIEWS, ids=[view.__name__ for _, view in _wire_ts.VIEWS])
def test_each_views_wire_traits_are_exactly_its_synced_traits(wire, view):
    own = set(view.class_traits(sync=True)) - set(MentraWidget.class_traits(sync=True))
    typed = set(wire.traits.__required_keys__) | set(wire.traits.__optional_keys__)
    assert own == typed, f"add or remove {sorted(own ^ typed)} in _wire.py's {wire.traits.__name__}"


def _tsc(folder: Path) -> subprocess.CompletedProcess[str]:
    npx = shutil.which("npx")
    if npx is None or not (JS_SOURCE / "node_modules").is_dir():
        missing("npx and js/node_modules (run `npm ci` in js/) are missing")
    return subprocess.run([npx, "--no-install", "tsc", "--noEmit", "-p", "."], cwd=folder,
                          capture_output=True, text=True, timeout=300)


# A message the kernel would refuse, a trait no view has: each is a type error.
BREAKAGES = [
    ("agent_view.js", 'model.send({ kind: "interrupt" })', 'model.send({ kind: "interupt" })'),
    ("agent_view.js", 'model.send({ kind: "send", text })', 'model.send({ kind: "send", message: text })'),
    ("team_view.js", '{ kind: "close", view: this.viewId }', '{ kind: "close", name: this.viewId }'),
    ("subagent_picker.js", 'model.get("preview_live")', 'model.get("preview_text")'),
    ("batch_view.js", 'model.send({ kind: "close_row" })', 'model.send({ kind: "close_rows" })'),
]


def test_the_front_end_type_checks_against_the_wire_types_and_a_wrong_message_does_not(tmp_path):
    checked = _tsc(JS_SOURCE)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    copy = tmp_path / "js"
    shutil.copytree(JS_SOURCE, copy, ignore=shutil.ignore_patterns("node_modules"))
    (copy / "node_modules").symlink_to((JS_SOURCE / "node_modules").resolve())
    originals = {name: (copy / name).read_text() for name, _, _ in BREAKAGES}
    for name, right, wrong in BREAKAGES:
        assert right in originals[name], f"{name} no longer has {right!r}: update this test"
        (copy / name).write_text(originals[name].replace(right, wrong, 1))
        broken = _tsc(copy)
        (copy / name).write_text(originals[name])
        assert broken.returncode != 0 and f"{name}(" in broken.stdout, (wrong, broken.stdout)
