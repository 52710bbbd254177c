"""The benchmarks through pytest: `pytest tests/benchmarks -m benchmark -s`.

They print tables and never assert on time (the machine is shared and noisy);
they only check that each benchmark ran and measured something.
"""

from __future__ import annotations

import pytest

from tests.benchmarks.__main__ import BENCHMARKS

pytestmark = [pytest.mark.benchmark, pytest.mark.timeout(900)]


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_benchmark_runs_and_prints_its_tables(name: str) -> None:
    tables = BENCHMARKS[name]()
    assert tables and all(table.rows for table in tables)
    for table in tables:
        print("\n" + table.text())
