"""OpenMetrics / Prometheus text parser: formats, timestamps, escapes, rejects, DCGM sentinels."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from suanli.ingest.openmetrics import (
    LabelError,
    detect_format,
    parse_labels,
    parse_openmetrics,
    read_openmetrics,
)
from suanli.ingest.records import IngestReport, SeriesKey


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
    out, _rep = _parse("a 1\nb 2 5\n# EOF\n", arrival_ts=1234.0)
    assert out[("a", ())] == ([1234.0], [1.0])
    assert out[("b", ())] == ([5.0], [2.0])
    _, rep2 = _parse("a 1\n# EOF\n")                       # no arrival time: cannot place it
    assert rep2.rejected == 1


def test_escapes_special_values_and_exemplars() -> None:
    text = (
        'm{path="C:\\\\dir",quote="say \\"hi\\"",nl="a\\nb",sp="x y}#"} NaN 1\n'
        "m2 +Inf 2\n"
        "m3 -Inf 3 # {trace_id=\"abc\"} 1.0 3\n"
        "# EOF\n"
    )
    out, rep = _parse(text)
    assert rep.rejected == 0, rep.reasons
    labels = (("nl", "a\nb"), ("path", "C:\\dir"), ("quote", 'say "hi"'), ("sp", "x y}#"))
    ts, vals = out[("m", labels)]
    assert ts == [1.0] and math.isnan(vals[0])
    assert out[("m2", ())] == ([2.0], [math.inf])
    assert out[("m3", ())] == ([3.0], [-math.inf])


def test_bad_lines_are_counted_with_their_line_and_the_rest_loads() -> None:
    text = (
        "# TYPE g gauge\n"            # 1
        'g{a="1"} 1 10\n'            # 2
        'g{a="1" 2 11\n'             # 3 unterminated label set
        "g{a=1} 3 12\n"              # 4 unquoted value
        "g 1_000 13\n"               # 5 underscore is not a number here
        "9bad 1 14\n"                # 6 bad metric name
        'g{a="1"} 4 15 extra\n'      # 7 trailing junk
        'g{a="1"} 5 16\n'            # 8
        'g{a="1",a="2"} 6 17\n'      # 9 duplicate label
        "# EOF\n"                    # 10
        "g 7 18\n"                   # 11 after EOF
    )
    out, rep = _parse(text)
    assert out == {("g", (("a", "1"),)): ([10.0, 16.0], [1.0, 5.0])}
    assert rep.rejected == 7
    assert [r.split(":")[1] for r in rep.reasons] == ["3", "4", "5", "6", "7", "9", "11"]
    assert "after # EOF" in rep.reasons[-1]


def test_openmetrics_without_eof_is_noted() -> None:
    _, rep = _parse('x{a="b"} 1 1\n', fmt="openmetrics")
    assert rep.rejected == 1 and "EOF" in rep.reasons[0]


def test_dcgm_blank_sentinels_become_nan_only_for_dcgm() -> None:
    text = (
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0"} 9223372036854775794 1\n'   # int64 NOT_SUPPORTED
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0"} 2147483632 2\n'            # int32 BLANK 0x7ffffff0
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0"} 140737488355328.0 3\n'     # fp64 BLANK 2**47
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0"} 41 4\n'
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0"} 2147483631 5\n'            # just below the 32-bit range: real
        'node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0"} 140737488355328 6\n'
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
    lines = [f'c{{i="{i % 7}"}} {i} {1000 * i}' for i in range(5000)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from suanli.ingest.openmetrics import OpenMetricsConfig

    rep = IngestReport()
    got: dict[SeriesKey, list[float]] = {}
    for key, ts, values in read_openmetrics(path, None, rep, config=OpenMetricsConfig(batch_lines=333, read_chunk_bytes=1000)):
        got.setdefault(key, []).extend(values.tolist())
        assert np.all(ts == values)                 # value i at i*1000 ms = i s
    assert rep.rejected == 0
    assert sum(len(v) for v in got.values()) == 5000
    assert sorted(got[next(k for k in got if k.labels == (("i", "3"),))]) == [float(i) for i in range(3, 5000, 7)]
