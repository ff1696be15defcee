"""Properties of the condition parser and durations (Hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.rules.conditions import parse_condition, parse_duration
from suanli.rules.export import prom_duration
from suanli.rules.names import METRICS
from tests.conftest import examples

_piece = st.sampled_from([*sorted(METRICS)[:8], "sudden_increase(", "xid(48)", "xid", "health_score",
                          ">", ">=", "<", "==", "!=", " ", "85", "1e3", "-2.5", "/min", "/s", "/fortnight",
                          " for 5m", " for 3x", " within 24h", ")", ","])
conditions = st.one_of(st.text(max_size=60), st.lists(_piece, max_size=8).map("".join))
KINDS = {"metric", "rate", "ratio", "sudden", "event", "analysis"}


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(conditions)
def test_a_condition_parses_to_a_fixed_point_or_says_why_not(text: str) -> None:
    # Any text either fails with one ValueError line that quotes what is wrong (the
    # whitespace-normalised condition or the part of it at fault), or parses into a condition of a known kind and comparison that parses again
    # from its own text to the same thing.
    norm = " ".join(text.split())
    try:
        c = parse_condition(text)
    except ValueError as e:
        msg = str(e)
        assert msg and "\n" not in msg
        assert any(tok in msg or repr(tok)[1:-1] in msg for tok in norm.split()) or norm == ""
        return
    assert c.kind in KINDS and c.op in (">=", "<=", "==", "!=", ">", "<")
    assert c.text == norm and c.name in norm and c.for_s >= 0
    assert parse_condition(c.text) == c


@given(st.integers(min_value=1, max_value=10 * 86400))
def test_prom_duration_round_trips(seconds: int) -> None:
    assert parse_duration(prom_duration(seconds)) == seconds


@given(st.sampled_from(sorted(METRICS)), st.sampled_from([">", ">=", "<", "<=", "==", "!="]),
       st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), st.integers(min_value=0, max_value=7200))
def test_threshold_conditions_round_trip(name: str, op: str, thr: float, for_s: int) -> None:
    text = f"{name} {op} {thr!r}" + (f" for {for_s}s" if for_s else "")
    c = parse_condition(text)
    assert (c.kind, c.name, c.op, c.threshold, c.for_s) == ("metric", name, op, thr, for_s)
