"""The live twin's log replay: records appended as the simulated clock passes them, their times
moved onto the twin's clock (worked out here by hand), continuation lines kept with their record."""

from __future__ import annotations

from pathlib import Path

from suanli.sim.live_logs import LogReplay, shifted_line
from suanli.timefmt import parse_time

KERNEL = """\
untimed preamble before any stamp
2026-03-17T10:00:00.000000+00:00 node-001 kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
    continuation of that record
2026-03-17T10:01:00.500000+00:00 node-002 kernel: second record
2099-01-01T00:00:00+00:00 node-003 kernel: a stray clock
"""
T0 = parse_time("2026-03-17T10:00:00Z")


def test_records_are_appended_as_their_time_passes(tmp_path: Path) -> None:
    src = tmp_path / "sc"
    src.mkdir()
    (src / "kernel.log").write_text(KERNEL)
    replay = LogReplay(src, tmp_path / "out", offset_s=1000.0)
    out = tmp_path / "out" / "kernel.log"
    assert out.read_text() == "" and replay.log_config() == [{"path": str(out), "from_start": True}]
    assert replay.advance(T0 + 30) == 2                 # the first record and its continuation
    # 10:00:00 + 1000 s = 10:16:40
    assert out.read_text().splitlines() == [
        "2026-03-17T10:16:40.000000+00:00 node-001 kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.",
        "    continuation of that record"]
    assert not replay.done(T0 + 60.5)
    assert replay.advance(T0 + 60.5) == 1               # 10:01:00.5 + 1000 s = 10:17:40.5
    assert out.read_text().splitlines()[-1] == "2026-03-17T10:17:40.500000+00:00 node-002 kernel: second record"
    assert replay.done(T0 + 60.5)                        # the 2099 line does not hold the twin up
    assert replay.advance(T0 + 3600) == 0


def test_a_line_without_a_leading_time_is_left_as_it_is() -> None:
    assert shifted_line("[12345.678] NVRM: raw dmesg", 5.0) == "[12345.678] NVRM: raw dmesg"
    assert shifted_line("2026-03-17T10:00:00Z host x", 1.5) == "2026-03-17T10:00:01.500000+00:00 host x"
