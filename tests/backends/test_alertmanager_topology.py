"""suanli's topology inhibition kept by a real Alertmanager: a real Prometheus 2.42 runs the exported
rules over switch_port_errors (its port, NIC and info series, backfilled by promtool and shifted
so the scenario plays at the wall clock, as the rule manager only evaluates "now") and sends its
alerts to a real Alertmanager loaded with the exported configuration. Alertmanager's API
(``/api/v2/alerts?inhibited=false``) must inhibit exactly the alerts suanli's evaluator and
inhibition stage mute at the same evaluation: the NIC alerts of the NIC cabled to the faulty port
(read off inventory.yaml here) and the SLA alert of the job whose traffic crosses it (truth.json),
and nothing else: not the port's own alerts, not the NICs elsewhere.

The rules are the shipped pack's port, NIC and SLA rules and its two topology inhibitions, without
``for`` (a ``for`` would need minutes of wall clock), evaluated every second, plus a rule that
fires on every NIC that retransmitted within the hour (the NICs not behind the port, which must
stay un-inhibited by the port)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path

import httpx
import pytest
import yaml

from suanli.incidents.inhibit import apply_inhibitions
from suanli.incidents.reach import Reach
from suanli.ingest.load import load_paths
from suanli.inventory import Inventory, load_inventory
from suanli.rules import EntityIndex, Evaluator, RulesConfig, parse_rules
from suanli.rules.export import to_alertmanager, to_prometheus
from suanli.rules.export_topology import INHIBITOR, INHIBITOR_RECEIVER
from suanli.rules.names import METRICS
from suanli.store.duck import DuckStore
from suanli.store.remote_write import info_series
from tests.backends.servers import Server, backfill_prometheus, start_prometheus
from tests.conftest import shared_path
from tests.web._serve import start_alertmanager

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIO, PORT = "switch_port_errors", "leaf-02/p16"     # truth.json's root cause
RULES = """rules:
  - name: switch_port_crc_ratio_high
    scope: switch_port
    category: switch_port_errors
    severity: critical
    conditions: {all: [crc_ratio > 1e-6, crc_errors > 1/s]}
  - name: switch_port_crc_sudden
    scope: switch_port
    category: switch_port_errors
    conditions: {all: [sudden_increase(crc_errors)]}
  - name: nic_symbol_errors
    scope: nic
    category: optical_degradation
    conditions: {all: [symbol_errors > 10/min]}
  - name: nic_rdma_retransmits_sudden
    scope: nic
    conditions: {all: [sudden_increase(rdma_retransmits)]}
  - name: nic_retransmitting
    scope: nic
    conditions: {all: [rdma_retransmits > 1/h]}
  - name: sla_latency_high
    scope: job
    conditions: {all: [sla_latency > 30]}
inhibit_rules:
  - name: port_crc_mutes_nics_behind
    topology: upstream
    source_matchers: ['alertname=~"switch_port_crc_ratio_high|switch_port_crc_sudden"']
    target_matchers: ['alertname=~"nic_.*"']
  - name: hardware_mutes_job_slow
    topology: upstream
    source_matchers: ['scope=~"gpu|nic|switch_port|storage"', 'severity=~"critical|warning"']
    target_matchers: ['alertname=~"sla_latency_high|nccl_collective_timeout"']
"""
CONFIG = RulesConfig(promql_v2=True, eval_interval_s=1.0)
LEAD_S = 180
"""The scenario time at the wall clock's "now" is its end minus this: inside the fault, with data
ahead for the whole test."""


def _labels(labels: Mapping[str, str]) -> str:
    esc = {k: v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for k, v in labels.items()}
    return ",".join(f'{k}="{v}"' for k, v in sorted(esc.items()))


def _shifted_om(folder: Path, inv: Inventory, shift_s: int, out: Path) -> None:
    """The metrics the rules read, and the info series every 60 s, ``shift_s`` later."""
    names = {METRICS[n].metric for n in ("crc_errors", "port_packets", "symbol_errors", "rdma_retransmits",
                                         "sla_latency")}
    lo = hi = None
    with (folder / "metrics.om").open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for line in src:
            name = line.split("{", 1)[0].split(" ", 1)[0]
            if name not in names:
                continue
            body, _, ts = line.rstrip("\n").rpartition(" ")
            t = float(ts)
            lo, hi = min(lo or t, t), max(hi or t, t)
            dst.write(f"{body} {t + shift_s:.3f}\n")
        assert lo is not None and hi is not None
        for t in range(int(lo), int(hi) + 60, 60):
            for metric, labels, _ in info_series(inv, float(t + shift_s)):
                dst.write(f"{metric}{{{_labels(labels)}}} 1 {t + shift_s}\n")
        dst.write("# EOF\n")


@pytest.fixture(scope="module")
def scenario() -> tuple[DuckStore, Inventory]:
    folder = shared_path("scenarios", SCENARIO)
    store = DuckStore(None)
    load_paths([folder / "metrics.om", folder / "inventory.yaml"], store)
    return store, load_inventory(folder / "inventory.yaml")


@pytest.fixture(scope="module")
def servers(scenario: tuple[DuckStore, Inventory], tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[Server, Server, int]]:
    """Alertmanager with the exported config, Prometheus with the exported rules and shifted data."""
    store, inv = scenario
    rs = parse_rules(RULES)
    work = tmp_path_factory.mktemp("am-topology")
    rules_text, notes = to_prometheus(rs, CONFIG)
    am_text, am_notes = to_alertmanager(rs, config=CONFIG)
    assert notes == [] and am_notes == []
    (work / "rules.yml").write_text(rules_text)
    extent = store.time_range()
    assert extent is not None
    shift_s = int(time.time()) - int(extent[1]) + LEAD_S
    _shifted_om(shared_path("scenarios", SCENARIO), inv, shift_s, work / "metrics.om")
    backfill_prometheus(work / "metrics.om", work / "data")
    am = start_alertmanager(work / "am", am_text)
    try:
        # resent every second: the first evaluations run before Prometheus has found the Alertmanager
        prom = start_prometheus(work, work / "data", [work / "rules.yml"], alertmanager=am.url,
                                extra_args=("--rules.alert.resend-delay=1s",))
        try:
            yield am, prom, shift_s
        finally:
            prom.stop()
    finally:
        am.stop()


def _am_alerts(am: Server, query: str = "") -> list[dict[str, object]]:
    resp = httpx.get(f"{am.url}/api/v2/alerts{query}", timeout=10)
    resp.raise_for_status()
    return resp.json()  # type: ignore[no-any-return]


def _key(alert: dict[str, object]) -> tuple[str, str]:
    """(alertname, suanli's entity id): the canonical id under the scope's name, a job's ``job_id``."""
    labels = alert["labels"]
    assert isinstance(labels, dict)
    return labels["alertname"], labels["job_id" if labels["scope"] == "job" else labels["scope"]]


def _split(alerts: list[dict[str, object]]) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(the rules' alerts, the inhibitor twins')."""
    twin = [a for a in alerts if a["labels"]["alertname"] == INHIBITOR]  # type: ignore[index]
    return [a for a in alerts if a not in twin], twin


def _settled(am: Server, timeout_s: float = 40.0) -> list[dict[str, object]]:
    """Alertmanager's alerts once all six rules' have arrived and two polls a second apart agree."""
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        now = sorted(map(_key, _split(_am_alerts(am))[0]))
        if now == last and len({name for name, _ in now}) == 6:
            return _am_alerts(am)
        last = now
        time.sleep(1.0)
    raise AssertionError(f"Alertmanager did not settle: {last}")


def _epoch(rfc3339: str) -> float:
    """Prometheus' evaluation time (ns precision) as the millisecond its queries ran at."""
    head, _, frac = rfc3339.rstrip("Z").partition(".")
    whole = datetime.fromisoformat(head + "+00:00").timestamp()
    return whole + int((frac + "000")[:3]) / 1000.0


def test_alertmanager_inhibits_what_suanli_inhibits(scenario: tuple[DuckStore, Inventory],
                                                    servers: tuple[Server, Server, int]) -> None:
    store, inv = scenario
    am, _, shift_s = servers
    everything, twins = _split(_settled(am))
    assert twins and {r["name"] for a in twins for r in a["receivers"]} == {INHIBITOR_RECEIVER}  # type: ignore[attr-defined]
    assert {r["name"] for a in everything for r in a["receivers"]} == {"default"}  # type: ignore[attr-defined]
    kept = {_key(a) for a in _split(_am_alerts(am, "?inhibited=false"))[0]}
    inhibited = {_key(a) for a in everything} - kept
    assert all(a["status"]["inhibitedBy"] for a in everything if _key(a) in inhibited)  # type: ignore[index]
    # suanli at the evaluation the latest alert started at (every alert was firing then)
    t = max(_epoch(str(a["startsAt"])) for a in everything) - shift_s
    rs = parse_rules(RULES)
    alerts = Evaluator(rs, EntityIndex.from_inventory(inv), CONFIG).step(t, store)
    muted = apply_inhibitions(alerts, rs.inhibit_rules, Reach(inv).downstream).muted
    suanli_all = {(a.rule, a.entity_id) for a in alerts}
    suanli_muted = {(a.rule, a.entity_id) for a in alerts if a.key in muted}
    assert {_key(a) for a in everything} == suanli_all
    assert inhibited == suanli_muted
    # worked out from inventory.yaml: the NIC cabled to the port, every NIC alert on it
    doc = yaml.safe_load((shared_path("scenarios", SCENARIO) / "inventory.yaml").read_text())
    behind = {f"{n['id']}/{c['name']}" for r in doc["racks"] for n in r["nodes"] for c in n.get("nics", [])
              if c.get("switch_port") == PORT}
    assert len(behind) == 1
    (job,) = json.loads((shared_path("scenarios", SCENARIO) / "truth.json").read_text())["faults"][0]["jobs"]
    assert inhibited == {(name, e) for name, e in suanli_all if name.startswith("nic_") and e in behind} | \
        {("sla_latency_high", job)}
    assert {name for name, _ in inhibited} == {"nic_symbol_errors", "nic_rdma_retransmits_sudden",
                                              "nic_retransmitting", "sla_latency_high"}
    assert ("switch_port_crc_ratio_high", PORT) in kept and ("switch_port_crc_sudden", PORT) in kept
    assert len({e for name, e in kept if name == "nic_retransmitting"}) == len(inv.nics) - 1
