"""What real fleets do to the fabric counters: background CRC errors on busy and idle ports,
counters cleared at the end of the window, faults that rise and recover, faults already running,
ramps; and storage read by one job without its latency series. Numbers worked by hand in each test."""

from __future__ import annotations

import numpy as np

from suanli.analysis.fabric.counters import CounterConfig, ber_episode, crc_episode, episode
from suanli.analysis.fabric.storage import judge_storage
from suanli.store.counters import counter_rate
from suanli.store.duck import DuckStore
from tests.analysis.fabric.test_fabric import FAULT, TS, N, _key, _run

PPS_40GBS = 40e9 / 4096          # 40 GB/s of 4 KiB packets = 9.77e6 packets/s


def _rates(errors: np.ndarray, pps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ts, errors/s, packets/s) of counters holding ``errors`` per scrape on a port at ``pps``."""
    crc = np.cumsum(errors)
    pk = np.cumsum(np.full(N, pps * 15.0))
    t, e = counter_rate(TS, crc)
    _, p = counter_rate(TS, pk)
    return t, e, p


def test_three_crc_errors_an_hour_on_a_busy_port_are_no_episode() -> None:
    # 3/h over 15 min is about one error; put three anyway, in three scrapes: ratio 1/15/9.77e6 = 7e-9
    errors = np.zeros(N)
    errors[[10, 30, 50]] = 1
    assert crc_episode("leaf-01/p1", *_rates(errors, PPS_40GBS)) is None


def test_a_few_errors_on_an_idle_port_have_a_big_ratio_but_cost_nothing() -> None:
    # 300 packets/s of management traffic, 12 errors/h: one error in a scrape smooths to
    # 1/15/4 = 0.017 errors/s, a ratio of 5.6e-5 (over 1e-6), but under 0.05 errors/s: no episode
    errors = np.zeros(N)
    errors[[5, 12, 20, 41]] = 1
    t, e, p = _rates(errors, 300.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        assert np.nanmax(e / p) > 1e-5
    assert crc_episode("leaf-01/p1", t, e, p) is None


def test_an_error_burst_that_recovers_is_a_strong_episode() -> None:
    # 5 minutes (20 scrapes, 20..39) of 1e-4 of 2.44e6 packets/s = 244 errors/s; cost
    # 244 x 1 ms = 24 % of the crossing collective's time (>= 0.1 %): strong
    pps = 10e9 / 4096
    errors = np.zeros(N)
    errors[20:40] = 1e-4 * pps * 15.0
    a = crc_episode("leaf-01/p1", *_rates(errors, pps))
    assert a is not None and not a.weak
    assert a.onset_s == TS[20]
    assert abs(a.after / 1e-4 - 1) < 0.01 and abs(a.errors_per_s / 244.1 - 1) < 0.01
    assert a.before == 0.0


def test_a_fault_running_before_the_window_has_no_baseline_and_is_still_found() -> None:
    pps = 10e9 / 4096
    a = crc_episode("leaf-01/p1", *_rates(np.full(N, 1e-4 * pps * 15.0), pps))
    assert a is not None and a.onset_s == TS[1]


def test_a_moderate_rate_is_a_weak_episode() -> None:
    # 0.3 errors/s on 1e5 packets/s: ratio 3e-6 (>= 1e-6), cost 0.3 x 1 ms = 0.03 % (< 0.1 %): weak
    errors = np.where(np.arange(N) >= FAULT, 0.3 * 15.0, 0.0)
    a = crc_episode("leaf-01/p1", *_rates(errors, 1e5))
    assert a is not None and a.weak and abs(a.after / 3e-6 - 1) < 0.01


def test_episode_is_the_longest_run_and_needs_its_length() -> None:
    bad = np.array([0, 1, 1, 0, 1, 1, 1, 1, 0, 1], dtype=bool)
    assert episode(bad, 4) == (4, 8)
    assert episode(bad, 5) is None


def test_ber_already_high_is_judged_against_the_other_ports() -> None:
    cfg = CounterConfig()
    ber = np.full(N, 1e-8)
    # own early level 1e-8, peers' median 5e-13: bar = max(1e-10, 5e-13 x 10^1.5 = 1.6e-11) = 1e-10
    a = ber_episode("switch_port", "leaf-01/p2", TS, ber, 5e-13, cfg)
    assert a is not None and a.before == 5e-13 and a.after == 1e-8
    assert ber_episode("switch_port", "leaf-01/p2", TS, np.full(N, 5e-13), 5e-13, cfg) is None


def test_ber_ramp_is_found_once_it_passes_the_bar() -> None:
    # log-linear ramp 1e-12 -> 1e-8 over samples 20..44: BER = 1e-12 x 10^(4 (i-20)/24) passes
    # 1e-10 at i = 20 + 12 = 32
    i = np.arange(N)
    ber = 1e-12 * 10 ** (4 * np.clip((i - 20) / 24, 0, 1))
    a = ber_episode("switch_port", "leaf-01/p2", TS, ber, 1e-12)
    assert a is not None and a.onset_s == TS[32]


def _port(store: DuckStore, port: str, errors_per_s: float, pps: float, clear_at: int | None = None,
          history: float = 0.0) -> None:
    inc = np.where(np.arange(N) >= FAULT, errors_per_s * 15.0, 0.0)
    crc = history + np.cumsum(inc)
    pk = 5e11 + np.cumsum(np.full(N, pps * 15.0))
    if clear_at is not None:                 # the switch's counters cleared, 3 s into the scrape
        crc[clear_at:] = np.cumsum(inc[clear_at:]) - inc[clear_at] * 0.2
        pk[clear_at:] = np.cumsum(np.full(N - clear_at, pps * 15.0)) - pps * 3.0
    store.add_samples(_key("suanli_switch_port_crc_errors_total", "switch_port", port), TS, crc)
    store.add_samples(_key("suanli_switch_port_packets_total", "switch_port", port), TS, pk)


def test_weak_crc_is_no_finding_unless_the_crossing_job_retransmits() -> None:
    def quiet(store: DuckStore, rng: np.random.Generator) -> None:
        _port(store, "leaf-02/p1", 0.3, 1e5)

    def felt(store: DuckStore, rng: np.random.Generator) -> None:
        quiet(store, rng)
        inc = np.where(np.arange(N) >= FAULT, 40.0 * 15.0, 0.0)       # node-003/mlx5_0 sits behind leaf-02/p1
        store.add_samples(_key("suanli_rdma_retransmits_total", "nic", "node-003/mlx5_0"), TS, np.cumsum(inc))

    assert _run(quiet).findings == []
    got = _run(felt).findings
    assert [(f.category, f.entity_id) for f in got] == [("switch_port_errors", "leaf-02/p1")]
    assert [s.entity_id for s in got[0].symptoms] == ["node-003/mlx5_0"]


def test_counters_cleared_in_the_last_two_minutes_give_no_rate_spike() -> None:
    # leaf-01/p1 holds 50 errors from before the window and a busy 1e6 packets/s; the switch clears
    # its counters at sample 54 (75 s before the end). The reset rule counts what the counters show
    # after the clear (12 s of the interval), never the 50 old errors as new ones.
    def cleared(store: DuckStore, rng: np.random.Generator) -> None:
        _port(store, "leaf-01/p1", 0.0, 1e6, clear_at=N - 6, history=50.0)

    res = _run(cleared)
    assert res.findings == []
    assert res.values()["leaf-01/p1"]["crc_ratio"] == 0.0


def _steps(factor: float, slow: slice | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """40 steps of 20 s, data_load 0.1 s (+-2 %), ``factor`` x over the ``slow`` steps."""
    v = 0.1 * (1 + 0.02 * np.random.default_rng(seed).standard_normal(40))
    if slow is not None:
        v[slow] *= factor
    return np.arange(40) * 20.0, v


def test_one_reader_without_latency_series_slowed_fourfold_is_the_storage() -> None:
    v = judge_storage("nfs", {"a": _steps(4.0, slice(20, None))}, None)
    assert v.slow and v.jobs_slowed == ("a",) and v.onset_s == 400.0


def test_one_reader_slowed_by_half_without_latency_is_not_enough() -> None:
    # 1.5x >= min_increase 1.3, but alone and unmeasured it must reach 2x
    assert not judge_storage("nfs", {"a": _steps(1.5, slice(20, None))}, None).slow


def test_a_slowdown_that_recovers_is_an_episode_against_the_job_s_past() -> None:
    # steps 15..24 (200 s) at 5x, then back: the job's fast steps (20 % quantile) are 0.1 s
    v = judge_storage("nfs", {"a": _steps(5.0, slice(15, 25))}, None)
    assert v.slow and v.onset_s == 300.0


def test_a_reader_waiting_for_data_all_window_long_is_a_slow_storage() -> None:
    # data_load 8 s of every 20 s step = 40 % (>= 25 %; healthy jobs: 1-4 %), no past to compare with
    t, v = _steps(80.0, slice(None))
    verdict = judge_storage("nfs", {"a": (t, v)}, None)
    assert verdict.slow and verdict.jobs_slowed == () and abs(verdict.load_share["a"] - 0.4) < 0.02
    assert not judge_storage("nfs", {"a": _steps(1.0)}, None).slow      # 0.1 s of 20 s = 0.5 %
