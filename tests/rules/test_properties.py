"""Properties of the condition parser and durations (Hypothesis)."""

from __future__ import annotations

import contextlib

from hypothesis import given
from hypothesis import strategies as st

from suanli.rules.conditions import parse_condition, parse_duration
from suanli.rules.export import prom_duration
from suanli.rules.names import METRICS


@given(st.text(max_size=60))
def test_parser_only_ever_raises_value_error(text: str) -> None:
    with contextlib.suppress(ValueError):
        parse_condition(text)


@given(st.integers(min_value=1, max_value=10 * 86400))
def test_prom_duration_round_trips(seconds: int) -> None:
    assert parse_duration(prom_duration(seconds)) == seconds


@given(st.sampled_from(sorted(METRICS)), st.sampled_from([">", ">=", "<", "<=", "==", "!="]),
       st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), st.integers(min_value=0, max_value=7200))
def test_threshold_conditions_round_trip(name: str, op: str, thr: float, for_s: int) -> None:
    text = f"{name} {op} {thr!r}" + (f" for {for_s}s" if for_s else "")
    c = parse_condition(text)
    assert (c.kind, c.name, c.op, c.threshold, c.for_s) == ("metric", name, op, thr, for_s)
