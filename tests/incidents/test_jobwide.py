"""Job-wide alerts fold into the job's incident (the switch_port_errors scenario's inventory: job
llama-34b-continual, 56 ranks, tp 4, eight GPUs on each of seven nodes): the same GPU alert on
most of a GPU's peers at once is the job's symptom; on one GPU among steady peers it is a fault."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.analysis.findings import Finding
from suanli.incidents.correlate import correlate
from suanli.incidents.jobwide import JobWideConfig, fold_job_wide
from suanli.incidents.model import Signal
from suanli.incidents.signals import finding_signals
from suanli.inventory import Inventory, load_inventory
from tests.conftest import shared_path

T0 = 1_773_106_800.0
JOB = "llama-34b-continual"
RULE = "nvlink_bandwidth_low"


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


def _nvl(gpu: str, start: float = T0 + 60, end: float | None = None) -> Signal:
    return Signal("rule", RULE, "gpu", gpu, start, end, start + 300, "nvlink_degradation", 0.6, (f"{RULE} {gpu}",),
                  direct=True, ref=f"{RULE}@{gpu}")


def _gpus(inv: Inventory) -> list[str]:
    return [r.gpu for r in inv.jobs[JOB].ranks]


def _hang() -> Finding:
    return Finding("collective_hang", "job", JOB, T0, None, 0.8, ("NCCL watchdog timeouts",), "job_events")


def test_alert_on_every_gpu_of_a_hung_job_is_counted_in_the_hang(inv: Inventory) -> None:
    sigs = finding_signals([_hang()]) + [_nvl(g) for g in _gpus(inv)]
    incidents, left = correlate(sigs, inv)
    assert [(i.category, i.root_id) for i in incidents] == [("collective_hang", JOB)]
    assert left == []
    assert incidents[0].alert_count == 1 + 56           # the hang, and 56 GPUs' alerts, once each
    assert f"{RULE} fired on 56 parts of {JOB} together: job-wide symptoms of this incident, not 56 faults" \
        in incidents[0].evidence


def test_job_wide_alert_with_no_incident_opens_none(inv: Inventory) -> None:
    incidents, left = correlate([_nvl(g) for g in _gpus(inv)], inv)
    assert incidents == []
    assert len(left) == 56 and all(s.job_wide == JOB and not s.direct for s in left)


def test_one_gpu_among_steady_peers_is_its_own_incident(inv: Inventory) -> None:
    gpu = _gpus(inv)[13]
    incidents, _ = correlate([_nvl(gpu)], inv)
    assert [(i.category, i.root_id) for i in incidents] == [("nvlink_degradation", gpu)]


def test_half_of_the_peers_is_the_bar(inv: Inventory) -> None:
    # node-001's eight GPUs of the job: each has 7 peers; 5 firing -> each sees 4 of 7 >= 3.5 (job-wide),
    # 4 firing -> each sees 3 of 7 < 3.5 (each its own)
    node1 = [g for g in _gpus(inv) if g.startswith("node-001/")]
    assert len(node1) == 8
    five = fold_job_wide([_nvl(g) for g in node1[:5]], inv)
    assert [s.direct for s in five] == [False] * 5
    four = fold_job_wide([_nvl(g) for g in node1[:4]], inv)
    assert [s.direct for s in four] == [True] * 4


def test_alerts_at_different_times_are_not_together(inv: Inventory) -> None:
    node1 = [g for g in _gpus(inv) if g.startswith("node-001/")]
    apart = [_nvl(g, T0 + 1000 * i, T0 + 1000 * i + 300) for i, g in enumerate(node1)]
    assert all(s.direct for s in fold_job_wide(apart, inv))


def test_nics_of_the_job_going_quiet_together_fold(inv: Inventory) -> None:
    nics = sorted({n for g in _gpus(inv) if (n := inv.topology.nic_for_gpu(g)) is not None})
    sigs = [Signal("rule", "nic_rx_quiet", "nic", n, T0, None, T0 + 60, "nic_down", 0.6, (), direct=True)
            for n in nics]
    assert all(not s.direct and s.job_wide == JOB for s in fold_job_wide(sigs, inv))
    assert fold_job_wide(sigs[:1], inv)[0].direct


def test_a_nics_peers_are_its_jobs_other_nics_and_half_of_them_is_the_bar(inv: Inventory) -> None:
    # n NICs of the job: each has n - 1 peers (never itself); k firing -> each sees k - 1 of n - 1
    nics = sorted({n for g in _gpus(inv) if (n := inv.topology.nic_for_gpu(g)) is not None})
    peers = len(nics) - 1

    def quiet(n: str) -> Signal:
        return Signal("rule", "nic_rx_quiet", "nic", n, T0, None, T0 + 60, "nic_down", 0.6, (), direct=True)

    over = next(k for k in range(1, len(nics) + 1) if k - 1 >= 0.5 * peers)      # the fewest that fold
    assert all(not s.direct for s in fold_job_wide([quiet(n) for n in nics[:over]], inv))
    assert all(s.direct for s in fold_job_wide([quiet(n) for n in nics[:over - 1]], inv))


def _by_brute_force(sigs: list[Signal], inv: Inventory) -> list[int]:
    """Each NIC signal's peers firing with it, by testing every peer NIC's alerts for overlap (the
    rule the module states, without its bisection)."""
    nics = sorted({n for g in _gpus(inv) if (n := inv.topology.nic_for_gpu(g)) is not None})

    def overlap(a: Signal, b: Signal) -> bool:
        inf = float("inf")
        return a.start <= (b.end if b.end is not None else inf) and b.start <= (a.end if a.end is not None else inf)

    out = []
    for s in sigs:
        mates = [n for n in nics if n != s.entity_id]
        firing = sum(1 for p in mates if any(o.entity_id == p and o.name == s.name and overlap(s, o) for o in sigs))
        out.append(firing)
    return out


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_nic_alert_storms_fold_as_the_brute_force_rule_says(inv: Inventory, data: st.DataObject) -> None:
    """Random NIC alerts of two names (several per NIC, gaps, open ends, touching, inverted) give
    the verdicts of testing every peer at every bar from 0 to all peers, so the count of firing
    peers itself agrees: the bisection and its fallback both."""
    nics = sorted({n for g in _gpus(inv) if (n := inv.topology.nic_for_gpu(g)) is not None})
    times = st.integers(0, 20).map(lambda t: T0 + 10.0 * t)
    alert = st.tuples(st.sampled_from(nics), st.sampled_from(["nic_rx_quiet", "nic_tx_quiet"]), times,
                      st.one_of(st.none(), st.integers(-2, 12)))
    sigs = [Signal("rule", name, "nic", nic, start, None if d is None else start + 10.0 * d, start, "nic_down", 0.6,
                   (), direct=True)
            for nic, name, start, d in data.draw(st.lists(alert, min_size=1, max_size=3 * len(nics)))]
    want = _by_brute_force(sigs, inv)
    peers = len(nics) - 1
    for bar in range(peers + 1):
        got = [not s.direct for s in fold_job_wide(sigs, inv, JobWideConfig(share=(bar - 0.5) / peers))]
        assert got == [n >= bar for n in want], bar
