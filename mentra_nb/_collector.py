"""Pausing the cyclic garbage collector while long-lived objects are made.

Some work allocates many GC-tracked objects, none of them garbage: decoding a
transcript (a few objects per message), or `%mentra resume` (the modules and
classes its first command imports, fifty agents and their views). With the
collector on, those allocations trigger collection after collection, each
walking the growing heap; a full collection among them walks everything the
kernel holds (`%mentra resume` of fifty agents spent about a third of its time
so: 0.16 s in one full collection, 0.06 s in 130 young ones).

Resumed, the collector would still walk the new objects in young collections,
which can find nothing among them, before they reach the oldest generation
(where full collections walk them like any long-lived object). A large batch
is moved there at once instead, by `gc.freeze()` then `gc.unfreeze()`, whose
documented effect together is to put every tracked object in the oldest
generation, without a walk (a tenth of a long read-back's time, plus the cache
it spoiled). Young garbage of the rest of the process, if any, is then reclaimed
by the next full collection rather than a young one. An application that froze
objects of its own keeps them frozen: the young generations are collected
instead.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (if it runs) for the block; if the block
    left more young objects than ten young collections hold, move them to the
    oldest generation before resuming (see the module's docstring). Nested or in
    two threads at once, the collector runs again when the block that paused it
    ends, never later."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            young, middle, _ = gc.get_threshold()
            if young and gc.get_count()[0] >= young * max(middle, 1):
                _age_young_objects()
            gc.enable()


def _age_young_objects() -> None:
    if gc.get_freeze_count():  # not ours to unfreeze
        gc.collect(1)
        return
    gc.freeze()
    gc.unfreeze()
