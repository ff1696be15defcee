"""Strategies aimed at the numeric edges of issue 13: int64's bounds, Python's 4,300-digit limit,
non-finite floats, years past 9999."""

from __future__ import annotations

from hypothesis import strategies as st

INT64_MAX = 2**63 - 1
EDGE_INTS = st.sampled_from([0, 1, 9, 79, 2**31 - 1, 2**32 - 1, 2**32, INT64_MAX, INT64_MAX + 1, 2**64,
                             10**19, 10**20, 10**400])
digits = st.one_of(
    EDGE_INTS.map(str),
    st.integers(min_value=0, max_value=2**70).map(str),
    st.integers(min_value=1, max_value=5000).map(lambda n: "9" * n),      # up to past the 4,300-digit limit
    st.integers(min_value=1, max_value=30).map(lambda n: "0" * n + "7"),  # leading zeros
)
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([2.0**63, -(2.0**63), 1e400, 1e19, 0.5, 3.0]))
float_texts = st.one_of(floats.map(repr), st.sampled_from(["Infinity", "-Infinity", "NaN", "1e400", "inf", "1e-400"]))
years = st.sampled_from(["1969", "1970", "2000", "2026", "2099", "2300", "9999", "0000"])
