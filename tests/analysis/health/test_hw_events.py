"""Hardware-event primitives: counters with resets, sentinels, throttle bits, Xid categories."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from suanli.analysis.health import events as hw
from suanli.ingest.records import Event


def test_counter_delta_follows_prometheus_reset_rule() -> None:
    ts = np.arange(6, dtype=float) * 15
    # 10 -> 12 (+2) -> 15 (+3) -> reset to 4 (+4, the new value) -> NaN (skipped) -> 6 (+2): 11
    v = np.array([10, 12, 15, 4, np.nan, 6], dtype=float)
    cd = hw.counter_delta(ts, v)
    assert cd.total == 11.0
    assert cd.resets == 1
    assert list(cd.increments) == [0, 2, 3, 4, 0, 2]
    assert cd.onset_s == 15.0


def test_counter_reset_to_zero_is_not_an_error_burst() -> None:
    cd = hw.counter_delta(np.array([0.0, 15, 30]), np.array([37.0, 37, 0]))
    assert cd.total == 0.0 and cd.resets == 1 and cd.onset_s is None


def test_dcgm_blank_sentinels_are_no_data() -> None:
    v = np.array([55.0, 2147483632.0, 2147483647.0, 140737488355328.0, 9.223372036854775e18, np.inf, 56.0])
    out = hw.clean(v)
    assert np.isnan(out[1:6]).all()
    assert out[0] == 55.0 and out[6] == 56.0
    # the int32 blanks are 0x7FFFFFF0..0x7FFFFFFF (2147483632..2147483647): one either side is a
    # reading; the 64-bit ones start at DCGM_FP64_BLANK = 2^47 = 140737488355328: one below reads
    edges = np.array([2147483631.0, 2147483648.0, 140737488355327.0])
    assert hw.clean(edges).tolist() == edges.tolist()
    # an NVLink bandwidth of 45 GB/s is above 2^31 but is a reading, not a sentinel
    assert hw.clean(np.array([4.5e10]))[0] == 4.5e10


def test_sentinel_in_counter_does_not_count_as_increase() -> None:
    cd = hw.counter_delta(np.array([0.0, 15, 30]), np.array([5.0, 2147483632.0, 5.0]))
    assert cd.total == 0.0


def test_throttle_bits_per_nvml() -> None:
    assert hw.decode_throttle(0x60) == ["sw_thermal_slowdown", "hw_thermal_slowdown"]
    assert hw.decode_throttle(0x4) == ["sw_power_cap"]
    assert hw.decode_throttle(0x88) == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert hw.decode_throttle(float("nan")) == []


def test_event_times_spread_inside_scrape_interval() -> None:
    # 0 -> 2 between t=0 and t=10: two events at 2.5 and 7.5 (midpoints of two halves)
    t = hw.event_times_from_counter(np.array([0.0, 10.0, 20.0]), np.array([0.0, 2.0, 2.0]))
    assert np.allclose(t, [2.5, 7.5])


def test_sustained_onset_bridges_missing_scrapes() -> None:
    ts = np.array([0.0, 15, 30, 45, 60, 75, 90, 105, 120, 135])
    flag = np.array([0, 0, 1, 1, 0, 1, 1, 1, 1, 1], dtype=bool)
    # with a 30 s gap allowed, the run 30..135 is one run of 105 s + one step (15 s) = 120 s
    onset, total = hw.sustained_onset(ts, flag, 120.0, 30.0)
    assert onset == 30.0 and total == 120.0
    onset, _ = hw.sustained_onset(ts, flag, 120.0, 10.0)   # no bridging: no run reaches 120 s
    assert onset is None


def test_xid_categories_follow_catalogue() -> None:
    assert hw.xid_category(79) == "gpu_lost"
    assert hw.xid_category(48) == "gpu_memory_failure"
    assert hw.xid_category(95) == "gpu_memory_failure"
    assert hw.xid_category(74) == "nvlink_degradation"
    assert hw.xid_category(92) == "gpu_memory_degradation"
    assert hw.xid_category(13) is None            # graphics engine exception: application, not hardware
    assert hw.xid_category(31) is None            # MMU fault: usually the application


def test_isolated_flags_far_apart_are_not_sustained() -> None:
    ts = np.arange(80, dtype=float) * 15
    flag = np.zeros(80, dtype=bool)
    flag[[40, 79]] = True                       # two single samples 585 s apart: 2 x 15 s flagged
    onset, total = hw.sustained_onset(ts, flag, 120.0, 45.0)
    assert onset is None and total == 30.0


def test_every_throttle_bit_of_nvml_h() -> None:
    # nvml.h nvmlClocksThrottleReason*: GpuIdle 0x1, ApplicationsClocksSetting 0x2, SwPowerCap 0x4,
    # HwSlowdown 0x8, SyncBoost 0x10, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40,
    # HwPowerBrakeSlowdown 0x80, DisplayClockSetting 0x100.
    nvml = ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
            "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting"]
    assert [hw.decode_throttle(1 << i) for i in range(9)] == [[n] for n in nvml]
    assert hw.decode_throttle(0x1FF) == nvml
    assert hw.decode_throttle(0x200) == [] and hw.decode_throttle(0) == [] and hw.decode_throttle(-1) == []


def _aer(ts: float, severity: str = "fatal", meaning: str = "SDES") -> hw.HwEvent:
    return hw.HwEvent(ts, "h/gpu0", "aer", 1.0, None, severity, meaning, "log")


def test_fatal_aers_count_from_600_s_before_the_loss_to_the_loss() -> None:
    # lost at 1000: AERs at 400 (600 s before: in), 399.5 (out), 1000 (in), 1000.5 (after: out);
    # a non-fatal one and another kind at 900 are not evidence.
    evs = [_aer(399.5), _aer(400.0), _aer(1000.0, meaning=""), _aer(1000.5), _aer(900.0, "nonfatal"),
           hw.HwEvent(900.0, "h/gpu0", "xid", 1.0, 79, "fatal", "", "log")]
    assert hw.fatal_aer_before(evs, 1000.0) == ["h/gpu0 fatal PCIe AER (SDES) 600 s before it was lost [log]",
                                                "h/gpu0 fatal PCIe AER 0 s before it was lost [log]"]


def test_event_times_stop_at_max_events() -> None:
    # 0 -> 2 -> 4 over 0, 10, 20 s with at most 3 events: 2.5 and 7.5 in the first interval, then
    # only 1 of the next 2, at the middle of the whole second interval: 15.
    t = hw.event_times_from_counter(np.array([0.0, 10.0, 20.0]), np.array([0.0, 2.0, 4.0]), max_events=3)
    assert t.tolist() == [2.5, 7.5, 15.0]
    # the default cap is 10,000 events: a jump of 20,000 gives 10,000
    assert len(hw.event_times_from_counter(np.array([0.0, 10.0]), np.array([0.0, 20_000.0]))) == 10_000
    # uncapped: 4 events, two per interval
    assert hw.event_times_from_counter(np.array([0.0, 10.0, 20.0]), np.array([0.0, 2.0, 4.0])).tolist() == [
        2.5, 7.5, 12.5, 17.5]


def test_counter_edges_one_unit_and_a_drop_of_one() -> None:
    # 5 -> 5 -> 6: an increase of 1 at 30 s is the onset; 5 -> 4, a drop of 1, is a reset (the
    # counter restarted and counted 4), not an increase of -1.
    assert hw.counter_delta(np.array([0.0, 15, 30]), np.array([5.0, 5, 6])).onset_s == 30.0
    cd = hw.counter_delta(np.array([0.0, 15]), np.array([5.0, 4]))
    assert (cd.total, cd.resets) == (4.0, 1)


def test_no_increase_no_event_times() -> None:
    assert hw.event_times_from_counter(np.array([0.0, 10.0]), np.array([3.0, 3.0])).tolist() == []


def test_sustained_onset_edge_cases() -> None:
    # nothing flagged: (None, 0 s); one flagged sample and no interval to read: 0 s flagged
    assert hw.sustained_onset(np.array([0.0, 15.0]), np.array([False, False]), 60.0, 30.0) == (None, 0.0)
    assert hw.sustained_onset(np.array([0.0]), np.array([True]), 60.0, 30.0) == (None, 0.0)
    # two runs that both last 60 s (45 s + one 15 s step), far apart: the onset is the first's
    ts = np.arange(20, dtype=float) * 15
    flag = np.zeros(20, dtype=bool)
    flag[[2, 3, 4, 5, 14, 15, 16, 17]] = True
    onset, total = hw.sustained_onset(ts, flag, 60.0, 20.0)
    assert onset == 30.0 and total == 120.0


def test_only_xids_get_an_xid_meaning() -> None:
    # An SXid's code is an NVSwitch code, not an Xid: no Xid meaning for SXid 12028.
    ev = Event(100.0, "h", "gpu", "h/gpu0", "sxid", "SXid (PCI:0000:05:00.0): 12028, ...", code=12028)
    assert hw.hw_event(ev, "h/gpu0").meaning == ""


def test_dcgm_last_code_and_active_series_edges() -> None:
    ts = np.array([0.0, 15.0, 30.0, 45.0, 60.0])
    # the last-code series moving 0 -> 1: one Xid 1
    got = hw.dcgm_xid_events(hw.XID_ERRORS, lambda _: None, "g", ts[:2], np.array([0.0, 1.0]))
    assert [(e.ts, e.code) for e in got] == [(15.0, 1)]
    # active 0, 1, 1, 0, 1: rises at 15 s and 60 s only
    got = hw.dcgm_xid_events(hw.XID_ACTIVE, {"xid": "79"}.get, "g", ts, np.array([0.0, 1.0, 1.0, 0.0, 1.0]))
    assert [(e.ts, e.count) for e in got] == [(15.0, 1.0), (60.0, 1.0)]


def test_single_events_and_quiet_intervals_between() -> None:
    # 0 -> 1 over 0..10 s: one event at the middle, 5; 0 -> 0 -> 2: nothing in the first interval,
    # two in the second (12.5, 17.5)
    assert hw.event_times_from_counter(np.array([0.0, 10.0]), np.array([0.0, 1.0])).tolist() == [5.0]
    assert hw.event_times_from_counter(np.array([0.0, 10.0, 20.0]), np.array([0.0, 0.0, 2.0])).tolist() == [12.5, 17.5]


def test_a_counter_delta_is_an_immutable_value() -> None:
    cd = hw.counter_delta(np.array([0.0, 15.0]), np.array([1.0, 2.0]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cd.total = 0.0  # type: ignore[misc]


def test_an_aers_meaning_and_a_records_source() -> None:
    # No error bits (an empty list): the meaning is the bus error type; with bits, the bits.
    # A record without its file:line is from a log.
    bare = Event(1.0, "h", "gpu", "h/gpu0", "aer", "AER ...", severity="fatal",
                 attrs={"errors": [], "error_type": "Transaction Layer"})
    bits = Event(1.0, "h", "gpu", "h/gpu0", "aer", "AER ...", severity="fatal", source="kern.log:7",
                 attrs={"errors": ["SDES", "CmpltTO"], "error_type": "Transaction Layer"})
    nothing = Event(1.0, "h", "gpu", "h/gpu0", "aer", "AER ...")
    got = [hw.hw_event(e, "h/gpu0") for e in (bare, bits, nothing)]
    assert [(h.meaning, h.source) for h in got] == [("Transaction Layer", "log"), ("SDES, CmpltTO", "kern.log:7"),
                                                    ("", "log")]
    # an event is one event unless a count says more, and a value
    ev = hw.HwEvent(1.0, "h/gpu0", "dbe")
    assert ev.count == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.count = 2.0  # type: ignore[misc]


def test_a_lone_flagged_sample_is_one_scrape_interval() -> None:
    # 0, 15, 30 s with only 15 flagged: 15 s flagged (one interval); it lasts 15 s, so it is the
    # onset of a 15 s condition and not of a 60 s one.
    ts, flag = np.array([0.0, 15.0, 30.0]), np.array([False, True, False])
    assert hw.sustained_onset(ts, flag, 60.0, 30.0) == (None, 15.0)
    assert hw.sustained_onset(ts, flag, 15.0, 30.0) == (15.0, 15.0)
    # two samples, both flagged: 15 s between them + the 15 s scrape interval = 30 s
    assert hw.sustained_onset(ts[:2], np.array([True, True]), 30.0, 30.0) == (0.0, 30.0)


def test_dcgm_windowed_series_need_a_decimal_code_label() -> None:
    ts, v = np.array([0.0, 15.0]), np.array([0.0, 2.0])
    assert hw.dcgm_xid_events(hw.XID_COUNT, {"err_code": "n/a"}.get, "g", ts, v) == []
    assert hw.dcgm_xid_events(hw.XID_COUNT, {}.get, "g", ts, v) == []
    assert [e.count for e in hw.dcgm_xid_events(hw.XID_COUNT, {"err_code": "79"}.get, "g", ts, v)] == [2.0]
    # the windowed series count from their first sample: one sample of 3 is 3 Xids
    one = hw.dcgm_xid_events(hw.XID_COUNT, {"err_code": "79"}.get, "g", ts[:1], np.array([3.0]))
    assert [(e.ts, e.count) for e in one] == [(0.0, 3.0)]
