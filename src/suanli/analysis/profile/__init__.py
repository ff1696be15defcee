"""``suanli profile``: the time split of PyTorch profiler (Kineto) traces, per rank, as HTA does it.

>>> from suanli.analysis.profile import ProfileConfig, profile_traces, profile_json
>>> result = profile_traces(["rank-0.pt.trace.json.gz", "traces/"], ProfileConfig())
>>> profile_json(result)["ranks"][0]["fractions"]      # compute, communication, exposed, other, idle
>>> print(format_profile_table(result))                 # plain text; profile_table() gives the rows

Definitions, and how each figure relates to Holistic Trace Analysis: docs/profile.md.
"""

from suanli.analysis.profile.breakdown import launched_before_last_step, rank_profile
from suanli.analysis.profile.config import ProfileConfig
from suanli.analysis.profile.intervals import intersection_length, merge, union_length
from suanli.analysis.profile.result import (
    FRACTION_KEYS,
    TABLE_COLUMNS,
    ProfileResult,
    RankProfile,
    format_profile_table,
    profile_json,
    profile_table,
)
from suanli.analysis.profile.run import profile, profile_traces, trace_files

__all__ = [
    "FRACTION_KEYS",
    "TABLE_COLUMNS",
    "ProfileConfig",
    "ProfileResult",
    "RankProfile",
    "format_profile_table",
    "intersection_length",
    "launched_before_last_step",
    "merge",
    "profile",
    "profile_json",
    "profile_table",
    "profile_traces",
    "rank_profile",
    "trace_files",
    "union_length",
]
