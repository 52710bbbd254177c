"""What the worker processes of tests/hosts/test_batch_workers.py import
(`--providers tests.hosts.batch_worker_setup`, `--tools ...:TOOLS`): the offline
`test` model, a slow one (so a killed worker has rows in flight), the jobs'
output model, and a tool."""

from __future__ import annotations

from pydantic import BaseModel

from mentra_nb import tool
from mentra_nb.providers.test import TestProvider

PROVIDERS = [TestProvider(chunk_delay=0.002)]
SLOW = [TestProvider(chunk_delay=0.05)]


class Label(BaseModel):
    label: str
    confidence: int


@tool
async def lookup(word: str) -> str:
    """Look a word up."""
    return f"{word}: a word"


TOOLS = [lookup]
