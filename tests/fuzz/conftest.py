"""The fuzz suite's Hypothesis settings: a fixed seed (every test carries ``@SEED``, so CI runs the
same examples every time) and a replay database kept in the repository (``tests/fuzz/examples/``):
any example that ever failed is replayed first on every later run, on every machine. Each test asserts
real properties, not only "no crash": rejects name ``file:line``, good records are kept and counted."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase

REPLAY_DB = Path(__file__).with_name("examples")

SEED = seed(20261302)
"""The fixed seed of every fuzz test."""
FUZZ = settings(max_examples=150, deadline=None, database=DirectoryBasedExampleDatabase(REPLAY_DB),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
"""Fast, pure-Python parsers."""
FUZZ_DUCK = settings(FUZZ, max_examples=25)
"""Examples that each open a DuckDB store or write a file."""
FUZZ_YAML = settings(FUZZ, max_examples=60)
"""Whole inventory and rule files (a few hundred lines of YAML each)."""
