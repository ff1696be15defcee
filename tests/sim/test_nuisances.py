"""Each nuisance of ``suanli.sim.Nuisances`` is in the written files with the numbers its parameters
give, and truth.json never lists it as a fault. Files are read with the small readers of _read.py,
not with the project's ingest."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import yaml

from suanli.sim import FaultRequest, JobRequest, NoiseConfig, Nuisances, Scenario, simulate, simulate_custom
from suanli.sim.nuisances import COUNTER_NOISE
from suanli.timefmt import parse_time
from tests.sim._read import growth, metrics, series_by_entity, truth

QUIET = NoiseConfig(missed_scrape=0.0, nan=0.0, duplicate=0.0, out_of_order=0.0, sentinel=0.0, exporter_restart=False)
HEALTHY = Scenario("healthy_one", "", jobs=(JobRequest(),), nodes=8)


def _run(tmp: Path, name: str, nz: Nuisances, sc: Scenario = HEALTHY, minutes: float = 6, seed: int = 4,
         nodes: int = 8) -> Path:
    return simulate_custom(sc, tmp / name, seed=seed, nodes=nodes, minutes=minutes, nuisances=nz)


def _values(samples: list[tuple[float, float]]) -> list[float]:
    return [v for _, v in sorted(samples) if not math.isnan(v)]


def test_counter_history_is_a_constant_count_on_some_series(tmp_path: Path) -> None:
    d = _run(tmp_path, "h", Nuisances(noise=QUIET, counter_history=True))
    tr = truth(d)
    assert tr["faults"] == []
    listed = tr["nuisances"]["counter_history"]
    n_series = n_listed = 0
    for fam, spec in COUNTER_NOISE.items():
        series = series_by_entity(metrics(d, fam))
        n_series += len(series)
        n_listed += len(listed[fam])
        for entity, samples in series.items():
            vals = _values(samples)
            want = listed[fam].get(entity, 0.0)
            assert all(v == want for v in vals), (fam, entity, want, vals[:3])   # no growth, no fault
            assert 0 <= want <= spec.history_max
    # 8 nodes: each family's share of series with a history, binomial around the weighted share
    expect = sum(COUNTER_NOISE[f].history_share * len(series_by_entity(metrics(d, f))) for f in COUNTER_NOISE)
    assert abs(n_listed - expect) < 4 * math.sqrt(expect), (n_listed, expect, n_series)


def test_background_errors_grow_at_their_listed_rates_and_nowhere_else(tmp_path: Path) -> None:
    minutes = 20
    d = _run(tmp_path, "b", Nuisances(noise=QUIET, background_errors=True), minutes=minutes)
    tr = truth(d)
    assert tr["faults"] == []
    rates = tr["nuisances"]["background_errors"]
    for fam, spec in COUNTER_NOISE.items():
        if spec.rate_share == 0:
            assert fam not in rates
            continue
        got = {e: growth(s) for e, s in series_by_entity(metrics(d, fam)).items()}
        assert all(got[e] == 0 for e in got if e not in rates[fam]), fam
        assert all(spec.rate_low_per_h <= r <= spec.rate_high_per_h for r in rates[fam].values())
        # the listed series together: Poisson with mean sum(rate) x (window - the first scrape interval)
        mean = sum(rates[fam].values()) * (minutes * 60 - 15) / 3600.0
        total = sum(got[e] for e in rates[fam])
        assert abs(total - mean) <= 4 * math.sqrt(mean) + 1, (fam, total, mean)
    crc = series_by_entity(metrics(d, "suanli_switch_port_crc_errors_total"))
    assert len(rates["suanli_switch_port_crc_errors_total"]) >= 0.1 * len(crc)   # share 0.25 of the ports


def test_a_cleared_leaf_restarts_its_counters_at_the_clear(tmp_path: Path) -> None:
    plain = _run(tmp_path, "p", Nuisances(noise=QUIET))
    d = _run(tmp_path, "c", Nuisances(noise=QUIET, switch_clear=True))
    tr = truth(d)
    assert tr["faults"] == []
    leaf, at = tr["nuisances"]["switch_clear"]["switch"], parse_time(tr["nuisances"]["switch_clear"]["at"])
    for fam in ("suanli_switch_port_packets_total", "suanli_switch_port_crc_errors_total"):
        before = metrics(plain, fam)
        for lab, samples in metrics(d, fam).items():
            ref = sorted(before[lab])
            if dict(lab)["switch"] != leaf:
                assert sorted(samples) == ref
                continue
            j = next(i for i, (t, _) in enumerate(ref) if t > at)
            inc = ref[j][1] - ref[j - 1][1]
            frac = (at - ref[j - 1][0]) / (ref[j][0] - ref[j - 1][0])
            for (t, v), (_, r) in zip(sorted(samples), ref, strict=True):
                if t < at:
                    assert v == r
                else:   # counting again from 0 at the clear: what came after it, within a second's worth
                    cleared_at = ref[j - 1][1] + frac * inc
                    assert abs(v - (r - cleared_at)) <= inc / 15.0 + 1.0, (lab, t, v, r - cleared_at)


def test_agent_restart_in_the_last_minutes_resets_its_counters(tmp_path: Path) -> None:
    plain = _run(tmp_path, "p", Nuisances(noise=QUIET))
    restarts = NoiseConfig(missed_scrape=0.0, nan=0.0, duplicate=0.0, out_of_order=0.0, sentinel=0.0)
    d = _run(tmp_path, "r", Nuisances(noise=restarts, restart_anywhere=True, end_bias=1.0))
    tr = truth(d)
    assert tr["faults"] == []
    node, at = tr["nuisances"]["agent_restart"]["node"], parse_time(tr["nuisances"]["agent_restart"]["at"])
    t_end = parse_time(tr["window"]["end"])
    assert t_end - 180 <= at < t_end
    before = metrics(plain, "suanli_rdma_retransmits_total")
    for lab, samples in metrics(d, "suanli_rdma_retransmits_total").items():
        ref = sorted(before[lab])
        if dict(lab)["node"] != node:
            assert sorted(samples) == ref
            continue
        got = dict(sorted(samples))
        gap = [t for t, _ in ref if at <= t < at + 30]
        assert gap and not any(t in got for t in gap)          # two scrapes missing (fewer at the very end)
        after = [(t, v) for t, v in ref if t >= at + 30]
        if after:                                               # the new process counts from 0
            base = next(v for t, v in ref if t >= at + 15)
            assert [got[t] for t, _ in after] == [max(v - base, 0.0) for _, v in after]


def test_dcgm_gap_and_node_outage_take_their_scrapes_off_a_node_no_fault_sits_on(tmp_path: Path) -> None:
    sc = Scenario("thermal_one", "", (FaultRequest("gpu_thermal"),), (JobRequest(),), nodes=8)
    d = _run(tmp_path, "g", Nuisances(noise=QUIET, dcgm_gap_s=(120.0, 135.0), node_outage_s=(60.0, 180.0), end_bias=0.0),
             sc=sc, minutes=10)
    tr = truth(d)
    assert [f["category"] for f in tr["faults"]] == ["gpu_thermal"]
    root_node = tr["faults"][0]["root_cause"]["id"].split("/")[0]
    gap_nodes = {tr["nuisances"][k]["node"] for k in ("dcgm_gap", "node_outage")}
    for key, span, families in (("dcgm_gap", (120, 135), ("DCGM_FI_DEV_GPU_TEMP",)),
                                ("node_outage", (60, 180), ("DCGM_FI_DEV_GPU_TEMP", "node_infiniband_link_downed_total",
                                                            "suanli_rdma_retransmits_total"))):
        gap = tr["nuisances"][key]
        node, a, b = gap["node"], parse_time(gap["from"]), parse_time(gap["to"])
        assert node != root_node
        assert span[0] - 15 <= b - a <= span[1] + 15 or b >= parse_time(tr["window"]["end"])
        for fam in families:
            scraped = {_host(lab) for lab, samples in metrics(d, fam).items()
                       for t, _ in samples if a <= t - t % 15 < b}           # scrape time: the 15 s grid
            assert node not in scraped, (key, fam)
            hosts = {_host(lab) for lab in metrics(d, fam)}
            assert hosts - gap_nodes <= scraped, (key, fam)
    # the dcgm-exporter gap leaves that node's node-exporter alone
    gap = tr["nuisances"]["dcgm_gap"]
    if gap["node"] != tr["nuisances"]["node_outage"]["node"]:
        a, b = parse_time(gap["from"]), parse_time(gap["to"])
        ib = [t for lab, s in metrics(d, "node_infiniband_link_downed_total").items()
              if _host(lab) == gap["node"] for t, _ in s if a <= t - t % 15 < b]
        assert ib


def _host(lab: tuple[tuple[str, str], ...]) -> str:
    d = dict(lab)
    return d.get("Hostname") or d.get("node") or d["instance"].split(":")[0]


def test_gauge_spikes_are_lone_samples_three_to_ten_times_the_level(tmp_path: Path) -> None:
    p = 0.05
    d = _run(tmp_path, "s", Nuisances(noise=QUIET, gauge_spikes=p), minutes=10)
    n = hits = 0
    for samples in metrics(d, "suanli_link_latency_seconds").values():
        vals = _values(samples)
        med = statistics.median(vals)
        n += len(vals)
        for v in vals:
            if v > 2.0 * med:                        # the level's 8 % lognormal noise never gets there
                hits += 1
                assert v < 14 * med                  # factor 3..10 on that noise
    assert abs(hits - p * n) < 4 * math.sqrt(p * n), (hits, p * n)


def test_power_capped_samples_show_reason_0x4_and_a_lower_clock(tmp_path: Path) -> None:
    p = 0.2
    d = _run(tmp_path, "pc", Nuisances(noise=QUIET, job_state_telemetry=True, power_cap=p))
    reasons = _by_scrape(d, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
    clocks = _by_scrape(d, "DCGM_FI_DEV_SM_CLOCK")
    busy = capped = 0
    for gpu, rs in reasons.items():
        for t, r in rs.items():
            if r == 1:              # GPU_IDLE: a spare node, not a busy sample
                continue
            busy += 1
            if int(r) & 0x4:
                capped += 1
                assert 1980 - 75 - 15 <= clocks[gpu][t] <= 1980 - 15
    assert abs(capped - p * busy) < 4 * math.sqrt(p * busy * (1 - p)), (capped, busy)


def _by_scrape(d: Path, family: str) -> dict[str, dict[float, float]]:
    """entity -> scrape time (the 15 s grid; stamps carry an exporter offset and jitter) -> value."""
    return {k: {t - t % 15: v for t, v in s} for k, s in series_by_entity(metrics(d, family)).items()}


def test_int64_sentinels_land_on_integer_dcgm_fields(tmp_path: Path) -> None:
    rate = 0.01
    noise = NoiseConfig(missed_scrape=0.0, nan=0.0, duplicate=0.0, out_of_order=0.0, sentinel=rate, exporter_restart=False)
    d = _run(tmp_path, "i", Nuisances(noise=noise, int64_sentinel=True))
    counts: dict[str, list[int]] = {}
    for line in (d / "metrics.om").read_text().splitlines():
        if line.startswith("DCGM"):
            c = counts.setdefault(line.split("{", 1)[0], [0, 0])
            c[0] += 1
            c[1] += " 9.223372036854776e+18 " in line
    want = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"}
    for fam, (n, hits) in counts.items():
        if fam in want:
            assert abs(hits - rate * n) < 4 * math.sqrt(rate * n) + 1, (fam, hits, n)
        else:
            assert hits == 0, fam
    assert truth(d)["faults"] == []


def test_log_noise_adds_unrelated_lines_and_no_event(tmp_path: Path) -> None:
    minutes, nodes = 10, 8
    d = _run(tmp_path, "l", Nuisances(noise=QUIET, log_noise=True, long_checkpoint_s=(30.0, 30.0)), minutes=minutes)
    kernel = (d / "kernel.log").read_text().splitlines()
    assert len(kernel) == int(minutes * nodes * 0.7)             # 0.7 lines per node-minute (0.35 without)
    assert not [x for x in kernel if "Xid" in x or "AER" in x]
    assert [x for x in kernel if "nvCheckOkFailedNoLog" in x or "fork rejected" in x or "xfs filesystem" in x]
    trainer = (d / "trainer.log").read_text().splitlines()
    warn = [i for i, x in enumerate(trainer) if "UserWarning: TypedStorage" in x]
    assert warn and all(trainer[i + 1].startswith("  if tensor.storage()") for i in warn)   # continuation line
    assert truth(d)["faults"] == []


def test_label_spellings_vary(tmp_path: Path) -> None:
    d = _run(tmp_path, "v", Nuisances(noise=QUIET, host_label="hostname", gpu_id_attr="canonical"), minutes=3)
    dcgm = [x for x in (d / "metrics.om").read_text().splitlines() if x.startswith("DCGM")]
    assert dcgm and all(',hostname="node-' in x and "Hostname=" not in x for x in dcgm)
    text = (d / "traces.otlp.jsonl").read_text()
    assert '"resource.gpu.id","value":{"stringValue":"node-0' in text and '"stringValue":"GPU-' not in text


def test_classic_library_writes_none_of_the_new_nuisances(tmp_path: Path) -> None:
    d = simulate("healthy", tmp_path / "c", seed=4, nodes=8, minutes=6)
    tr = truth(d)
    assert set(tr["nuisances"]) == {"agent_restart"}
    assert "9.223372036854776e+18" not in (d / "metrics.om").read_text()
    crc = {e: growth(s) for e, s in series_by_entity(metrics(d, "suanli_switch_port_crc_errors_total")).items()}
    assert set(crc.values()) == {0.0}


def test_idle_ports_carry_only_management_traffic(tmp_path: Path) -> None:
    low, high = 300.0, 1500.0
    d = _run(tmp_path, "pps", Nuisances(noise=QUIET, idle_port_pps=(low, high)))
    tr = truth(d)
    inv = yaml.safe_load((d / "inventory.yaml").read_text())
    spare = set(tr["cluster"]["spare_nodes"])
    idle = {nic["switch_port"] for r in inv["racks"] for n in r["nodes"] if n["id"] in spare for nic in n["nics"]}
    assert idle
    pkts = series_by_entity(metrics(d, "suanli_switch_port_packets_total"))
    for port, samples in pkts.items():
        s = sorted(samples)
        rate = (s[-1][1] - s[0][1]) / (s[-1][0] - s[0][0])
        if port in idle:
            assert low * 0.98 <= rate <= high * 1.02, (port, rate)     # no job's ring crosses a spare node's port
    assert max((s[-1][1] - s[0][1]) for s in map(sorted, pkts.values())) > 1e8    # ring ports carry the jobs


def test_gaps_anywhere_may_land_on_a_fault_s_node() -> None:
    from dataclasses import replace

    import numpy as np

    from suanli.sim.cluster import ClusterSpec, build_cluster
    from suanli.sim.faults import Fault
    from suanli.sim.nuisances import plan_nuisances

    c = build_cluster(ClusterSpec(nodes=4), np.random.default_rng(0), "t")
    # a fault on each of three of the four nodes: without gaps_anywhere every gap is on the fourth
    faults = [Fault("gpu_thermal", f"{n.id}/gpu0", 0.0, 0.7) for n in c.nodes[:3]]
    ts = 15.0 * np.arange(40)
    nz = Nuisances(dcgm_gap_s=(120.0, 135.0), node_outage_s=(60.0, 180.0))
    quiet = {plan_nuisances(nz, c, faults, ts, s, set()).dcgm_gap[0] for s in range(20)}  # type: ignore[index]
    anywhere = {plan_nuisances(replace(nz, gaps_anywhere=True), c, faults, ts, s, set()).dcgm_gap[0]  # type: ignore[index]
                for s in range(20)}
    assert quiet == {3}
    assert {0, 1, 2} & anywhere
