"""``suanli profile TRACE...``: files and folders -> read each Kineto trace -> one RankProfile each."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from suanli.analysis.profile.breakdown import rank_profile
from suanli.analysis.profile.config import ProfileConfig
from suanli.analysis.profile.result import ProfileResult, RankProfile
from suanli.errors import InputError
from suanli.ingest.kineto import KinetoTrace, is_kineto_trace, read_trace

__all__ = ["profile", "profile_traces", "trace_files"]


def trace_files(paths: Sequence[str | Path]) -> list[Path]:
    """The files to profile: each file as given, and the Kineto traces of each folder (sorted).

    InputError for a path that does not exist, or a folder that holds no Kineto trace.
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and is_kineto_trace(f))
            if not found:
                raise InputError("no Kineto trace here (*.pt.trace.json[.gz], or JSON with traceEvents)",
                                 file=str(p))
            out += found
        elif p.exists():
            out.append(p)
        else:
            raise InputError("no such file or folder", file=str(p))
    return out


def _flag_shared_ranks(ranks: list[RankProfile]) -> list[RankProfile]:
    by_rank: dict[int, list[str]] = {}
    for r in ranks:
        if r.rank is not None:
            by_rank.setdefault(r.rank, []).append(r.trace)
    out = []
    for r in ranks:
        others = [t for t in by_rank.get(r.rank, []) if t != r.trace] if r.rank is not None else []
        if others:
            more = f" and {len(others) - 1} more" if len(others) > 1 else ""
            note = f"{r.trace}: rank {r.rank} is also claimed by {others[0]}{more}"
            r = RankProfile(**{**r.__dict__, "problems": (*r.problems, note)})
        out.append(r)
    return out


def profile(traces: Sequence[KinetoTrace], config: ProfileConfig | None = None) -> ProfileResult:
    """Profiles of traces already read, ordered by rank (unknown ranks last), then file."""
    cfg = config or ProfileConfig()
    ranks = [rank_profile(t, cfg) for t in traces]
    ranks.sort(key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.trace))
    return ProfileResult(ranks=tuple(_flag_shared_ranks(ranks)), errors=(), config=cfg)


def profile_traces(paths: Sequence[str | Path], config: ProfileConfig | None = None) -> ProfileResult:
    """Read and profile the traces at ``paths`` (files or folders).

    A trace that cannot be read is one line in ``errors`` and the others are profiled; when none
    can be read, the first one's InputError is raised (the CLI prints it and exits 2).
    """
    cfg = config or ProfileConfig()
    traces: list[KinetoTrace] = []
    errors: list[InputError] = []
    for path in trace_files(paths):
        try:
            traces.append(read_trace(path))
        except InputError as err:
            errors.append(err)
    if not traces and errors:
        raise errors[0]
    result = profile(traces, cfg)
    return ProfileResult(ranks=result.ranks, errors=tuple(str(e) for e in errors), config=cfg)
