"""Benchmarks against peers (not part of the default test run).

    python -m tests.benchmarks                 # all of them; writes RESULTS.md
    python -m tests.benchmarks storage resume  # some of them (RESULTS.md untouched)
    pytest tests/benchmarks -m benchmark -s    # the same through pytest
"""
