"""The conversation every storage benchmark stores: the same words for every store.

Each turn is four messages: the user asks, the assistant calls the `lookup`
tool, the tool answers, the assistant replies. Sizes are typical of a data
question in a notebook (a few hundred bytes each) and fixed by a seed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

__all__ = ["Turn", "conversation"]

_WORDS = ["revenue", "region", "quarter", "growth", "churn", "cohort", "median", "outlier", "customer", "forecast", "sales", "table", "column", "index", "null", "merge", "pivot", "mean", "trend", "weekly", "share", "margin", "segment", "plot"]


@dataclass(frozen=True)
class Turn:
    index: int
    user: str
    call_id: str
    tool_input: dict[str, str]
    tool_result: str
    answer: str

    @property
    def tool_input_json(self) -> str:
        return json.dumps(self.tool_input)


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def conversation(turns: int = 200, seed: int = 9) -> list[Turn]:
    rng = random.Random(seed)
    return [
        Turn(
            index=i,
            user=f"Turn {i}: " + _sentence(rng, 30),
            call_id=f"call_{i:04d}",
            tool_input={"query": _sentence(rng, 8)},
            tool_result=" ".join(_sentence(rng, 12) for _ in range(6)),
            answer=" ".join(_sentence(rng, 14) for _ in range(4)),
        )
        for i in range(turns)
    ]
