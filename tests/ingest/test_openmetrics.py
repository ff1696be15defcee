"""OpenMetrics / Prometheus text parser: formats, timestamps, escapes, rejects, DCGM sentinels."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from suanli.ingest.load import load_metrics
from suanli.ingest.openmetrics import LabelError, detect_format, parse_labels, parse_openmetrics
from suanli.ingest.openmetrics_file import read_openmetrics
from suanli.ingest.records import IngestReport, SeriesKey

T = 1_700_000_000  # 2023-11-14T22:13:20Z: sample timestamps must lie in 2000..2100


def _parse(text: str, **kw: object) -> tuple[dict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[float], list[float]]], IngestReport]:
    rep = IngestReport()
    out: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[float], list[float]]] = {}
    for key, ts, values in parse_openmetrics(text, report=rep, **kw):  # type: ignore[arg-type]
        t, v = out.setdefault((key.metric, key.labels), ([], []))
        t.extend(ts.tolist())
        v.extend(values.tolist())
    return out, rep


def test_openmetrics_seconds_counters_and_created() -> None:
    text = (
        "# HELP req Requests.\n"
        "# TYPE req counter\n"
        'req_total{code="200"} 10 1700000000.5\n'
        'req_created{code="200"} 1699999000 1700000000.5\n'
        'req_total{code="200"} 12 1700000015.5\n'
        "# EOF\n"
    )
    out, rep = _parse(text)
    # req_created is the creation time of the counter, not a sample: only the two _total samples stay
    assert out == {("req_total", (("code", "200"),)): ([1700000000.5, 1700000015.5], [10.0, 12.0])}
    assert rep.rejected == 0
    assert rep.loaded == {"created": 1, "samples": 2}


def test_prometheus_text_timestamps_are_milliseconds() -> None:
    out, _rep = _parse('up{job="a"} 1 1700000000123\n', fmt="prometheus")
    # 1700000000123 ms = 1700000000.123 s
    ((ts, vals),) = out.values()
    assert ts == [pytest.approx(1700000000.123)]
    assert vals == [1.0]
    assert detect_format(["# TYPE x gauge", "x 1"]) == "prometheus"
    assert detect_format(["x 1", "# EOF"]) == "openmetrics"
    assert detect_format(["# TYPE x unknown"]) == "openmetrics"


def test_samples_without_timestamp_take_the_arrival_time() -> None:
    out, _rep = _parse(f"a 1\nb 2 {T + 5}\n# EOF\n", arrival_ts=T + 1234.0)
    assert out[("a", ())] == ([T + 1234.0], [1.0])
    assert out[("b", ())] == ([T + 5.0], [2.0])
    _, rep2 = _parse("a 1\n# EOF\n")                       # no arrival time: cannot place it
    assert rep2.rejected == 1


def test_escapes_special_values_and_exemplars() -> None:
    text = (
        f'm{{path="C:\\\\dir",quote="say \\"hi\\"",nl="a\\nb",sp="x y}}#"}} NaN {T + 1}\n'
        f"m2 +Inf {T + 2}\n"
        f"m3 -Inf {T + 3} # {{trace_id=\"abc\"}} 1.0 3\n"
        "# EOF\n"
    )
    out, rep = _parse(text)
    assert rep.rejected == 0, rep.reasons
    labels = (("nl", "a\nb"), ("path", "C:\\dir"), ("quote", 'say "hi"'), ("sp", "x y}#"))
    ts, vals = out[("m", labels)]
    assert ts == [T + 1.0] and math.isnan(vals[0])
    assert out[("m2", ())] == ([T + 2.0], [math.inf])
    assert out[("m3", ())] == ([T + 3.0], [-math.inf])


def test_bad_lines_are_counted_with_their_line_and_the_rest_loads() -> None:
    text = (
        "# TYPE g gauge\n"                  # 1
        f'g{{a="1"}} 1 {T + 10}\n'          # 2
        f'g{{a="1" 2 {T + 11}\n'            # 3 unterminated label set
        f"g{{a=1}} 3 {T + 12}\n"            # 4 unquoted value
        f"g 1_000 {T + 13}\n"               # 5 underscore is not a number here
        f"9bad 1 {T + 14}\n"                # 6 bad metric name
        f'g{{a="1"}} 4 {T + 15} extra\n'    # 7 trailing junk
        f'g{{a="1"}} 5 {T + 16}\n'          # 8
        f'g{{a="1",a="2"}} 6 {T + 17}\n'    # 9 duplicate label
        "# EOF\n"                           # 10
        f"g 7 {T + 18}\n"                   # 11 after EOF
    )
    out, rep = _parse(text)
    assert out == {("g", (("a", "1"),)): ([T + 10.0, T + 16.0], [1.0, 5.0])}
    assert rep.rejected == 7
    assert [r.split(":")[1] for r in rep.reasons] == ["3", "4", "5", "6", "7", "9", "11"]
    assert "after # EOF" in rep.reasons[-1]


def test_openmetrics_without_eof_is_noted() -> None:
    _, rep = _parse(f'x{{a="b"}} 1 {T}\n', fmt="openmetrics")
    assert rep.rejected == 1 and "EOF" in rep.reasons[0]


def test_dcgm_blank_sentinels_become_nan_only_for_dcgm() -> None:
    text = (
        f'DCGM_FI_DEV_MEMORY_TEMP{{gpu="0"}} 9223372036854775794 {T + 1}\n'   # int64 NOT_SUPPORTED
        f'DCGM_FI_DEV_MEMORY_TEMP{{gpu="0"}} 2147483632 {T + 2}\n'            # int32 BLANK 0x7ffffff0
        f'DCGM_FI_DEV_MEMORY_TEMP{{gpu="0"}} 140737488355328.0 {T + 3}\n'     # fp64 BLANK 2**47
        f'DCGM_FI_DEV_MEMORY_TEMP{{gpu="0"}} 41 {T + 4}\n'
        f'DCGM_FI_DEV_MEMORY_TEMP{{gpu="0"}} 2147483631 {T + 5}\n'            # just below the 32-bit range: real
        f'node_infiniband_port_data_transmitted_bytes_total{{device="mlx5_0"}} 140737488355328 {T + 6}\n'
        "# EOF\n"
    )
    out, _ = _parse(text)
    _, vals = out[("DCGM_FI_DEV_MEMORY_TEMP", (("gpu", "0"),))]
    assert [math.isnan(v) for v in vals] == [True, True, True, False, False]
    assert vals[3:] == [41.0, 2147483631.0]
    ((_, ib),) = [v for k, v in out.items() if k[0].startswith("node_")]
    assert ib == [140737488355328.0]


def test_parse_labels_positions_and_errors() -> None:
    labels, end = parse_labels('x{a="1", b="2",} 5', 1)
    assert labels == {"a": "1", "b": "2"} and end == 16
    for bad in ('{a="1"', '{a="\\q"}', '{1a="x"}', '{a="1" b="2"}'):
        with pytest.raises(LabelError):
            parse_labels(bad, 0)


def test_file_reading_streams_in_chunks(tmp_path: Path) -> None:
    path = tmp_path / "m.prom"
    lines = [f'c{{i="{i % 7}"}} {i} {1000 * (T + i)}' for i in range(5000)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from suanli.ingest.openmetrics import OpenMetricsConfig

    rep = IngestReport()
    got: dict[SeriesKey, list[float]] = {}
    for key, ts, values in read_openmetrics(path, None, rep, config=OpenMetricsConfig(batch_lines=333, read_chunk_bytes=1000)):
        got.setdefault(key, []).extend(values.tolist())
        assert np.all(ts == T + values)             # value i at (T + i) * 1000 ms = T + i s
    assert rep.rejected == 0
    assert sum(len(v) for v in got.values()) == 5000
    assert sorted(got[next(k for k in got if k.labels == (("i", "3"),))]) == [float(i) for i in range(3, 5000, 7)]


def _both(path: Path, **kw: object) -> tuple[list[float], IngestReport, list[float], IngestReport]:
    """(timestamps, report) of the streaming parser and of the DuckDB bulk path, one series."""
    from suanli.store.duck import DuckStore

    stream, bulk = IngestReport(), IngestReport()
    ts_s = [t for _, ts, _ in read_openmetrics(path, None, stream, **kw) for t in ts.tolist()]  # type: ignore[arg-type]
    store = DuckStore(None)
    load_metrics(path, store, None, bulk, **kw)  # type: ignore[arg-type]
    got = [t for m in store.metrics() for s in store.series(m) for t in s.ts.tolist()]
    store.close()
    return ts_s, stream, got, bulk


def test_timestamp_range_bounds_in_both_paths(tmp_path: Path) -> None:
    # 946684800 = 2000-01-01T00:00:00Z and 4102444800 = 2100-01-01T00:00:00Z are accepted, one
    # second outside is not; 17734 s is a timestamp cut to its first 5 digits (1970)
    stamps = ["946684799", "946684800", "17734", "4102444800", "4102444801", "1e300", "-1773400000"]
    path = tmp_path / "m.om"
    path.write_text("".join(f"g {i} {t}\n" for i, t in enumerate(stamps)) + "# EOF\n")
    stream_ts, stream, bulk_ts, bulk = _both(path)
    assert stream_ts == bulk_ts == [946684800.0, 4102444800.0]
    expected = [f"m.om:{n}: timestamp out of range" for n in (1, 3, 5, 6, 7)]
    assert stream.reasons == bulk.reasons == expected


def test_a_label_set_never_closed_is_rejected_in_both_paths(tmp_path: Path) -> None:
    # line 2 opens a label set and never closes it: the same series text as line 1 once a "}" is
    # added, so the bulk reader's grouping must not take it for a sample of that series
    path = tmp_path / "m.om"
    path.write_text(f'g{{a="1"}} 1 {T}\ng{{a="1" 2 {T + 1}\ng{{a="1"}} 3 {T + 2}\n# EOF\n')
    stream_ts, stream, bulk_ts, bulk = _both(path)
    assert stream_ts == bulk_ts == [T, T + 2.0]
    assert stream.reasons == bulk.reasons and len(stream.reasons) == 1 and stream.reasons[0].startswith("m.om:2: ")


def test_prometheus_timestamp_range_is_checked_after_ms_to_s(tmp_path: Path) -> None:
    # 946684800000 ms = 2000-01-01 (kept); 1773400000 ms = 1970-01-21 (a seconds value written as ms)
    path = tmp_path / "m.prom"
    path.write_text("g 1 946684800000\ng 2 1773400000\n")
    stream_ts, stream, bulk_ts, bulk = _both(path)
    assert stream_ts == bulk_ts == [946684800.0]
    assert stream.reasons == bulk.reasons == ["m.prom:2: timestamp out of range"]


def test_stray_timestamps_are_reported_but_do_not_stretch_the_time_range(tmp_path: Path) -> None:
    from suanli.store.duck import DuckStore

    path = tmp_path / "m.om"
    path.write_text(f"g 1 17734\ng 2 {T}\ng 3 1e300\n# EOF\n")
    stray: list[float] = []
    list(read_openmetrics(path, None, IngestReport(), stray_ts=stray))
    assert stray == [17734.0, 1e300]
    store = DuckStore(None)
    load_metrics(path, store, None, IngestReport())
    assert store.time_range() == (float(T), float(T))       # rejected stamps are not data
    assert [s.ts.tolist() for s in store.series("g")] == [[float(T)]]
    store.close()


@pytest.mark.parametrize(("tail", "rejects"), [
    (f"g 9 {T + 9}\n", []),                                  # complete last line
    (f"g 9 {T}"[:-5], ["m.om:3: truncated line"]),           # cut inside the timestamp: 1970
    (f"g 9 {T + 9}", ["m.om:3: truncated line"]),            # cut right before its newline
    ("g 9", ["m.om:3: truncated line"]),                     # cut before the timestamp
    ("   ", []),                                             # blank, no newline
    ("# EOF", []),                                           # the end marker without its newline
])
def test_a_last_line_without_newline_is_truncated_in_both_paths(tmp_path: Path, tail: str,
                                                                rejects: list[str]) -> None:
    path = tmp_path / "m.om"
    path.write_text(f"g 1 {T}\ng 2 {T + 1}\n{tail}")
    stream_ts, stream, bulk_ts, bulk = _both(path)
    eof = [] if tail == "# EOF" else ["m.om: OpenMetrics input does not end in # EOF"]  # noted once at the end
    assert stream.reasons == bulk.reasons == [*rejects, *eof]
    assert stream_ts == bulk_ts == [T, T + 1.0, *([T + 9.0] if tail.endswith("\n") else [])]


def test_a_cut_gzip_keeps_its_first_lines_and_rejects_the_rest(tmp_path: Path) -> None:
    import gzip
    import zlib

    lines = "".join(f"g {i} {T + i}\n" for i in range(2000)).encode()
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)             # gzip framing
    head = comp.compress(lines) + comp.flush(zlib.Z_SYNC_FLUSH)  # all lines decodable, no end marker
    path = tmp_path / "m.om.gz"
    path.write_bytes(head)
    with pytest.raises(EOFError):                            # what gzip itself says: cut short
        gzip.decompress(head)
    stream_ts, stream, bulk_ts, bulk = _both(path)
    assert stream_ts == bulk_ts == [T + i for i in range(2000)]
    assert stream.reasons == bulk.reasons
    assert stream.reasons[0].startswith("m.om.gz:2001: unreadable")
    (tmp_path / "bad.om.gz").write_bytes(b"not gzip at all\n")
    _, stream, _, bulk = _both(tmp_path / "bad.om.gz")
    assert stream.rejected == bulk.rejected == 1 and "bad.om.gz:1: unreadable" in stream.reasons[0]
