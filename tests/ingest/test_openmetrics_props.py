"""Properties of the metrics parsers (streaming and DuckDB bulk): never raise, round-trip, agree."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suanli.ingest.load import load_metrics
from suanli.ingest.openmetrics import parse_openmetrics
from suanli.ingest.openmetrics_file import read_openmetrics
from suanli.ingest.records import IngestReport, SeriesKey
from suanli.store.duck import DuckStore

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DUCK_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,12}", fullmatch=True)
label_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True)
label_values = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
values = st.floats(allow_nan=True, allow_infinity=True)
MIN_TS_S, MAX_TS_S = 946_684_800.0, 4_102_444_800.0    # 2000-01-01Z, 2100-01-01Z: the accepted range
ARRIVAL_S = 1_700_000_007.0
stamps = st.floats(min_value=MIN_TS_S, max_value=MAX_TS_S, allow_nan=False)
far_stamps = st.one_of(st.floats(min_value=-1e300, max_value=MIN_TS_S, exclude_max=True),
                       st.floats(min_value=MAX_TS_S, max_value=1e300, exclude_min=True))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return repr(x)


def _write(series: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float, float]]]) -> str:
    """The tiny reference writer: OpenMetrics text with timestamps in seconds."""
    out: list[str] = []
    for (name, labels), points in series.items():
        text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
        head = f"{name}{{{text}}}" if labels else name
        out.extend(f"{head} {_number(v)} {_number(t)}" for t, v in points)
    return "\n".join([*out, "# EOF", ""])


series_sets = st.dictionaries(
    st.tuples(names.filter(lambda n: not n.endswith("_created")),
              st.dictionaries(label_names, label_values, max_size=3).map(lambda d: tuple(sorted(d.items())))),
    st.dictionaries(stamps, values, min_size=1, max_size=4).map(lambda d: sorted(d.items())),
    min_size=1, max_size=5)


def _same(a: list[float], b: list[float]) -> bool:
    return bool(np.array_equal(np.array(a), np.array(b), equal_nan=True))


@SETTINGS
@given(series_sets)
def test_round_trip_streaming(series: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float, float]]]) -> None:
    rep = IngestReport()
    got: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float, float]]] = {}
    for key, ts, vals in parse_openmetrics(_write(series), report=rep):
        got.setdefault((key.metric, key.labels), []).extend(zip(ts.tolist(), vals.tolist(), strict=True))
    assert rep.rejected == 0, rep.reasons
    assert got.keys() == series.keys()
    for k, pts in series.items():
        assert [t for t, _ in got[k]] == [t for t, _ in pts]
        assert _same([v for _, v in got[k]], [v for _, v in pts])


@DUCK_SETTINGS
@given(series_sets)
def test_round_trip_through_duckdb_bulk_load(series: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float, float]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.om"
        path.write_text(_write(series), encoding="utf-8")
        store = DuckStore(None)
        rep = IngestReport()
        load_metrics(path, store, None, rep)
        assert rep.rejected == 0, rep.reasons
        got = {(s.key.metric, s.key.labels): s for m in store.metrics() for s in store.series(m)}
        assert got.keys() == series.keys()
        for k, pts in series.items():
            assert got[k].ts.tolist() == [t for t, _ in pts]
            assert _same(got[k].values.tolist(), [v for _, v in pts])
        store.close()


junk_lines = st.one_of(
    st.text(max_size=40),
    st.builds(lambda n, v: f'{n}{{a="{v}"}} 1 2', names, label_values),
    st.sampled_from(["# TYPE x counter", "# EOF", "x_total 1 2", "x_created 1 2", "y{a=\"1\"} 1 2 3",
                     "y 1_0 2", "z NaN 1", 'z{b="}"} 1 2', "\r", "  ", "#", "m{} 3 4",
                     "x_total 1 1700000000000", "z 2 1700000001500", 'w{a="b"} 3 1700000002000', "w 4"]),
)


@SETTINGS
@given(st.lists(junk_lines, max_size=12))
def test_any_text_gives_samples_or_counted_rejects(lines: list[str]) -> None:
    rep = IngestReport()
    text = "\n".join(lines)
    n = sum(len(ts) for _, ts, _ in parse_openmetrics(text, report=rep, arrival_ts=ARRIVAL_S))
    assert rep.loaded.get("samples", 0) == n
    # each physical line is at most one sample or one reject, and a reject names its line
    n_lines = len(text.split("\n"))
    assert n + rep.rejected <= n_lines
    for reason in rep.reasons:
        where, _, what = reason.partition(": ")
        src, _, lineno = where.rpartition(":")
        assert src == "<text>" and 1 <= int(lineno) <= n_lines and what and "\n" not in reason


@DUCK_SETTINGS
@given(st.lists(junk_lines, max_size=12))
def test_bulk_and_streaming_paths_agree(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.prom"
        path.write_text("\n".join(lines), encoding="utf-8")
        stream_rep, bulk_rep = IngestReport(), IngestReport()
        expected: dict[SeriesKey, list[tuple[float, float]]] = {}
        for key, ts, vals in read_openmetrics(path, None, stream_rep, arrival_ts=ARRIVAL_S):
            expected.setdefault(key, []).extend(zip(ts.tolist(), vals.tolist(), strict=True))
        store = DuckStore(None)
        load_metrics(path, store, None, bulk_rep, arrival_ts=ARRIVAL_S)
        got = {s.key: s for m in store.metrics() for s in store.series(m)}
        assert set(got) == set(expected)
        for key, pts in expected.items():
            last = dict(pts)                                   # the store keeps the last write per ts
            assert got[key].ts.tolist() == sorted(last)
            assert _same(got[key].values.tolist(), [last[t] for t in sorted(last)])
        assert bulk_rep.rejected == stream_rep.rejected
        assert bulk_rep.reasons == stream_rep.reasons
        store.close()


@DUCK_SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes_never_raise(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.om"
        path.write_bytes(data)
        rep = IngestReport()
        n = sum(len(ts) for _, ts, _ in read_openmetrics(path, None, rep, arrival_ts=ARRIVAL_S))
        assert n == rep.loaded.get("samples", 0)
        store = DuckStore(None)
        bulk = IngestReport()
        load_metrics(path, store, None, bulk, arrival_ts=ARRIVAL_S)
        assert bulk.rejected == rep.rejected
        store.close()


@DUCK_SETTINGS
@given(series_sets, st.lists(far_stamps, min_size=1, max_size=3), st.booleans())
def test_out_of_range_timestamps_are_rejected_alike(series: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float, float]]],
                                                    far: list[float], prometheus: bool) -> None:
    """Stray stamps after valid lines: both paths keep exactly the valid samples, reject each stray
    line as ``timestamp out of range`` at its line number, report the strays' extremes, and keep
    them out of the store's time range."""
    if prometheus:                          # Prometheus text: ms; one valid line at 1.7e12 ms = 1.7e9 s
        body, good_ts, far_s = ["good 1 1700000000000"], [1.7e9], [t * 1000 * 1e-3 for t in far]
        far_text = [_number(t * 1000) for t in far]
    else:
        body = _write(series).removesuffix("# EOF\n").split("\n")[:-1]
        good_ts, far_s, far_text = [t for pts in series.values() for t, _ in pts], far, [_number(t) for t in far]
    n_good = len(body)
    body += [f"stray_metric {i} {t}" for i, t in enumerate(far_text)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("m.prom" if prometheus else "m.om")
        path.write_text("\n".join(body) + ("\n" if prometheus else "\n# EOF\n"), encoding="utf-8")
        stream, stray = IngestReport(), list[float]()
        n = sum(len(ts) for _, ts, _ in read_openmetrics(path, None, stream, arrival_ts=ARRIVAL_S, stray_ts=stray))
        store = DuckStore(None)
        bulk = IngestReport()
        load_metrics(path, store, None, bulk, arrival_ts=ARRIVAL_S)
        expected = [f"{path.name}:{n_good + 1 + i}: timestamp out of range" for i in range(len(far))]
        assert stream.reasons == expected and bulk.reasons == expected
        assert n == bulk.loaded["samples"] == len(good_ts)
        assert "stray_metric" not in store.metrics()
        assert stray == [min(far_s), max(far_s)]
        assert store.time_range() == ((min(good_ts), max(good_ts)) if good_ts else None)
        store.close()
