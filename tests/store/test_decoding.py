"""How decoding a transcript treats the garbage collector (store/_decoding.py)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest

from mentra_nb.messages import Message
from mentra_nb.store._decoding import decode_messages

ROWS = [(Message.user(f"message {i}").model_dump_json().encode(),) for i in range(5000)]


@pytest.fixture
def collector():
    was_enabled = gc.isenabled()
    gc.enable()
    gc.collect()  # young counts from zero: no collection falls due before decoding starts
    yield
    gc.unfreeze()
    (gc.enable if was_enabled else gc.disable)()


class Cyclic:
    def __init__(self) -> None:
        self.me = self


def in_oldest_generation(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=2))


def test_a_long_transcript_goes_to_the_oldest_generation_without_a_walk(collector):
    collections = []
    gc.callbacks.append(lambda phase, info: collections.append(info) if phase == "start" else None)
    try:
        messages = decode_messages(ROWS)
    finally:
        gc.callbacks.pop()
    assert [m.text for m in messages[:2]] == ["message 0", "message 1"] and len(messages) == 5000
    assert collections == []  # no collection walked the new objects
    assert gc.isenabled() and gc.get_count()[0] < 100
    assert in_oldest_generation(messages[-1]) and in_oldest_generation(messages[-1].content)


def test_young_garbage_from_before_is_still_reclaimed(collector):
    cycle = Cyclic()
    gone = weakref.ref(cycle)
    del cycle
    decode_messages(ROWS)
    assert gone() is not None  # promoted with the rest, not collected yet
    gc.collect()
    assert gone() is None


def test_objects_the_application_froze_stay_frozen():
    # In a process of its own: freezing is process-wide, and a thread an earlier test
    # left decoding in this process could move the freeze count under the check.
    code = """
import gc
from mentra_nb.messages import Message
from mentra_nb.store._decoding import decode_messages
rows = [(Message.user(f"message {i}").model_dump_json().encode(),) for i in range(5000)]
gc.freeze()
frozen = gc.get_freeze_count()
messages = decode_messages(rows)
assert gc.get_freeze_count() == frozen and len(messages) == 5000, (gc.get_freeze_count(), frozen)
assert gc.isenabled()
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_a_collector_the_application_turned_off_stays_off(collector):
    gc.disable()
    decode_messages(ROWS)
    assert not gc.isenabled()
