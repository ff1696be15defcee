"""One Kineto trace file -> :class:`KinetoTrace`: its device events as columns, read in one pass.

What is kept (everything else, host operators included, is dropped as it streams past):

* stream events: complete (``ph: "X"``) events that name an integer stream >= 0 (HTA's device
  events: it drops stream -1), with ``ts``/``dur`` in microseconds, name (interned), category,
  stream, device and correlation id (-1 when absent). Which categories count as device work is
  the reader's choice (:meth:`KinetoTrace.device_mask`, ``KinetoConfig.device_cats``);
* launches: for each correlation id, the earliest start of a host event carrying it (the
  ``cudaLaunchKernel`` / ``hipLaunchKernel`` / ``mtia_runtime`` call that launched the work);
* profiler steps: the ``ProfilerStep#N`` annotations (start, duration, N).

The rank is ``distributedInfo.rank``; failing that, a rank in the file name (``rank-34``), with
``rank_source`` saying which; else both are None. ``fractional_ts`` records whether any event's
``ts`` is a JSON float (PyTorch >= 2.3 writes nanosecond-resolution traces that way), which is
when HTA rounds event times to whole microseconds.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from suanli.errors import InputError
from suanli.ingest.kineto.gunzip import GZIP_MAGIC, Gunzip
from suanli.ingest.kineto.jsonstream import ArrayStream, StreamError
from suanli.ingest.kineto.kinds import KinetoConfig
from suanli.ingest.kineto.sniff import rank_from_name

__all__ = ["KinetoTrace", "read_trace"]


@dataclass(frozen=True, eq=False)
class KinetoTrace:
    """The device activity of one trace file (times in microseconds on the trace's own clock)."""

    path: str
    rank: int | None
    rank_source: str | None            # "distributedInfo" | "file name" | None (unknown)
    world_size: int | None
    names: tuple[str, ...]             # stream event names, indexed by name_id
    cats: tuple[str, ...]              # stream event categories, indexed by cat_id
    ts_us: np.ndarray                  # float64, one per stream event, in file order
    dur_us: np.ndarray
    name_id: np.ndarray                # int32
    cat_id: np.ndarray                 # int32
    stream: np.ndarray                 # int64
    device: np.ndarray                 # int64 (-1 when absent)
    correlation: np.ndarray            # int64 (-1 when absent)
    event_no: np.ndarray               # int64: index in traceEvents
    launch_corr: np.ndarray            # int64, sorted: correlation ids of host events
    launch_ts_us: np.ndarray           # float64: earliest host start per launch_corr
    step_ts_us: np.ndarray             # float64: ProfilerStep starts, in file order
    step_dur_us: np.ndarray
    step_no: np.ndarray                # int64
    fractional_ts: bool
    events: int                        # elements of traceEvents read
    problems: tuple[str, ...] = ()     # one line each: "file:line: what"
    rejected: int = 0                  # events rejected (not JSON, bad ts/dur)
    meta: dict[str, Any] = field(default_factory=dict)   # the top-level keys but traceEvents

    def __len__(self) -> int:
        return len(self.ts_us)

    def device_mask(self, config: KinetoConfig | None = None) -> np.ndarray:
        """Per stream event, whether its category is device work (``config.device_cats``)."""
        wanted = {c.lower() for c in (config or KinetoConfig()).device_cats}
        by_cat = np.array([c.lower() in wanted for c in self.cats], dtype=bool)
        return by_cat[self.cat_id] if len(self.cats) else np.zeros(len(self), dtype=bool)

    def launch_ts(self) -> np.ndarray:
        """Per device event, the start of the host event with its correlation id (NaN when none)."""
        out = np.full(len(self), np.nan)
        if len(self.launch_corr) == 0:
            return out
        i = np.minimum(np.searchsorted(self.launch_corr, self.correlation), len(self.launch_corr) - 1)
        hit = (self.correlation >= 0) & (self.launch_corr[i] == self.correlation)
        out[hit] = self.launch_ts_us[i[hit]]
        return out

    def launch_steps(self) -> np.ndarray:
        """Per device event, the ProfilerStep whose host window ``[start, start + dur)`` holds its
        launch (HTA's ``add_iteration``: a later step wins where windows overlap), else -1."""
        t = self.launch_ts()
        out = np.full(len(self), -1, dtype=np.int64)
        for start, dur, number in zip(self.step_ts_us, self.step_dur_us, self.step_no, strict=True):
            out[(t >= start) & (t < start + dur)] = number
        return out


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


def _rank(meta: dict[str, Any], name: str) -> tuple[int | None, str | None, int | None]:
    info = meta.get("distributedInfo")
    info = info if isinstance(info, dict) else {}
    world = _as_int(info.get("world_size"))
    rank = _as_int(info.get("rank"))
    if rank is not None and rank >= 0:
        return rank, "distributedInfo", world
    rank = rank_from_name(name)
    return rank, ("file name" if rank is not None else None), world


class _Columns:
    """Accumulates the kept events while the stream goes by."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.cat_names: dict[str, int] = {}
        self.f64 = {k: array("d") for k in ("ts", "dur")}
        self.i64 = {k: array("q") for k in ("name", "cat", "stream", "device", "corr", "no")}
        self.count = 0
        self.launch: dict[int, float] = {}
        self.steps: list[tuple[float, float, int]] = []
        self.fractional = False
        self.rejected: list[tuple[int, str]] = []

    def add(self, i: int, ev: Any) -> str | None:
        """Take one element; a reason when it is rejected."""
        self.count += 1
        if not isinstance(ev, dict):
            return "an event that is not a JSON object"
        ts = ev.get("ts")
        if type(ts) is float:
            self.fractional = True
        if ev.get("ph") != "X":
            return None
        args = ev.get("args")
        args = args if isinstance(args, dict) else {}
        stream = _as_int(args.get("stream"))
        corr = _as_int(args.get("correlation"))
        cat = str(ev.get("cat", ""))
        if stream is not None and stream >= 0:
            return self._device(i, ev, cat, stream, corr, args)
        name = ev.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            return self._step(ev, name)
        if corr is not None and corr >= 0 and (stream is None or stream < 0):
            t = _finite(ts)
            if t is not None and t < self.launch.get(corr, math.inf):
                self.launch[corr] = t
        return None

    def _device(self, i: int, ev: dict[str, Any], cat: str, stream: int, corr: int | None,
                args: dict[str, Any]) -> str | None:
        ts, dur = _finite(ev.get("ts")), _finite(ev.get("dur"))
        if ts is None or dur is None or dur < 0:
            return f"stream event without a finite ts and non-negative dur ({ev.get('name')!r})"
        name = str(ev.get("name", ""))
        nid = self.names.setdefault(name, len(self.names))
        cid = self.cat_names.setdefault(cat, len(self.cat_names))
        device = _as_int(args.get("device"))
        self.f64["ts"].append(ts)
        self.f64["dur"].append(dur)
        for key, v in (("name", nid), ("cat", cid), ("stream", stream), ("no", i),
                       ("device", -1 if device is None else device), ("corr", -1 if corr is None else corr)):
            self.i64[key].append(v)
        return None

    def column(self, key: str) -> np.ndarray:
        if key in self.f64:
            return np.frombuffer(self.f64[key], dtype=np.float64).copy()
        return np.frombuffer(self.i64[key], dtype=np.int64).copy()

    def _step(self, ev: dict[str, Any], name: str) -> str | None:
        ts, dur = _finite(ev.get("ts")), _finite(ev.get("dur"))
        number = _as_int(name.split("#", 1)[1].strip())
        if ts is None or dur is None or number is None:
            return f"a {name} without a finite ts and dur"
        self.steps.append((ts, dur, number))
        return None


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _open(path: Path) -> IO[bytes] | Gunzip:
    fh = path.open("rb")
    magic = fh.read(2)
    fh.seek(0)
    return Gunzip(fh) if magic == GZIP_MAGIC else fh


def _stream(path: Path, cols: _Columns) -> ArrayStream:
    try:
        raw = _open(path)
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", file=str(path)) from None
    with raw:
        reader = ArrayStream(raw, "traceEvents")
        try:
            for i, ev in enumerate(reader.elements()):
                why = cols.add(i, ev)
                if why is not None:
                    cols.rejected.append((reader.line(), why))
        except StreamError as err:
            raise InputError(f"not a Kineto trace: {err.what}", file=str(path), line=err.line) from None
    if not reader.found_array:
        raise InputError("not a Kineto trace: no traceEvents array", file=str(path), key="traceEvents")
    return reader


def _problems(path: Path, reader: ArrayStream, cols: _Columns) -> tuple[str, ...]:
    out = [f"{path}:{line}: {what}" for line, what in sorted(reader.bad + cols.rejected)]
    if reader.truncated is not None:
        line, _, what = reader.truncated.partition(": ")
        out.insert(0, f"{path}:{line.removeprefix('line ')}: truncated: {what}; the events before it are kept")
    return tuple(out)


def read_trace(path: str | Path) -> KinetoTrace:
    """Read one trace (JSON or gzipped JSON, any size) in one streaming pass.

    InputError (one line naming the file and line) when it is not a JSON object with a
    ``traceEvents`` array. A truncated file, or events that are not JSON or lack a time, keep
    the good events and are listed in ``problems``.
    """
    p = Path(path)
    cols = _Columns()
    reader = _stream(p, cols)
    rank, source, world = _rank(reader.meta, p.name)
    launch = sorted(cols.launch.items())
    steps = np.array(cols.steps, dtype=np.float64).reshape(-1, 3)
    return KinetoTrace(
        path=str(p), rank=rank, rank_source=source, world_size=world,
        names=tuple(cols.names), cats=tuple(cols.cat_names),
        ts_us=cols.column("ts"), dur_us=cols.column("dur"),
        name_id=cols.column("name").astype(np.int32), cat_id=cols.column("cat").astype(np.int32),
        stream=cols.column("stream"), device=cols.column("device"), correlation=cols.column("corr"),
        event_no=cols.column("no"),
        launch_corr=np.array([c for c, _ in launch], dtype=np.int64),
        launch_ts_us=np.array([t for _, t in launch], dtype=np.float64),
        step_ts_us=steps[:, 0].copy(), step_dur_us=steps[:, 1].copy(), step_no=steps[:, 2].astype(np.int64),
        fractional_ts=cols.fractional, events=cols.count,
        problems=_problems(p, reader, cols), rejected=len(reader.bad) + len(cols.rejected),
        meta=dict(reader.meta))
