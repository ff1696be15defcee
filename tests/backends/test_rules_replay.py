"""The exported Prometheus rules, evaluated by a real rule engine over a real Prometheus 2.42 that
promtool backfilled with a public scenario, fire the same alerts at the same evaluation times as
suanli's evaluator on the DuckDB store of the same folder.

Prometheus' own rule manager evaluates only at wall-clock "now", never over a backfilled past, so
the rules run in vmalert's replay mode (Debian ``victoria-metrics``): it evaluates each rule as a
query_range against the Prometheus (every 15 s, the group's interval, so PromQL is computed by
Prometheus' engine), applies ``for`` and writes ``ALERTS{alertstate=pending|firing}`` at each
evaluation into a VictoriaMetrics, where the test reads them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from suanli.ingest.resolve import series_key
from suanli.inventory import load_inventory
from suanli.rules import EntityIndex, Evaluator, RulesConfig, load_rules, parse_rules, to_prometheus
from suanli.store.duck import DuckStore
from suanli.timefmt import parse_time, to_rfc3339
from tests.backends.servers import Server, need
from tests.conftest import shared_path
from tests.rules.export_cases import METRIC_OF, RULES, STEP_S, prometheus_2x_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _replay(rules: Path, prometheus: Server, vm: Server, start: float, end: float) -> None:
    """vmalert -replay of ``rules`` over [start, end] against ``prometheus``, ALERTS into ``vm`` (emptied first)."""
    httpx.post(vm.url + "/api/v1/admin/tsdb/delete_series", data={"match[]": '{__name__="ALERTS"}'},
               timeout=30).raise_for_status()
    out = subprocess.run([need("vmalert"), f"-rule={rules}", f"-datasource.url={prometheus.url}",
                          f"-remoteWrite.url={vm.url}", f"-replay.timeFrom={to_rfc3339(start)}",
                          f"-replay.timeTo={to_rfc3339(end)}", "-replay.disableProgressBar",
                          "-replay.rulesDelay=0s", f"-datasource.queryStep={int(STEP_S)}s"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "replay finished" in out.stdout + out.stderr, out.stderr[-2000:]
    httpx.get(vm.url + "/internal/force_flush", timeout=30).raise_for_status()


def _entity(labels: dict[str, str], inventory: Any) -> str | None:
    """The suanli entity an ALERTS series is about: the canonical id label the export adds, the
    job of an SLA, else the series resolved as ingest resolves it."""
    scope = labels.get("scope", "")
    if "/" in labels.get(scope, ""):
        return labels[scope]
    if scope == "job" and "sla_id" in labels:
        (job,) = [j for j, spec in inventory.jobs.items() if spec.sla_id == labels["sla_id"]]
        return str(job)
    return series_key(METRIC_OF[labels["alertname"]], labels, inventory.resolver).entity_id


def _alerts_in(vm: Server, inventory: Any) -> dict[tuple[str, str | None, str], list[float]]:
    """(alertname, suanli entity id, state) -> evaluation times, from the ALERTS series."""
    resp = httpx.post(vm.url + "/api/v1/export", data={"match[]": '{__name__="ALERTS"}'}, timeout=30)
    resp.raise_for_status()
    out: dict[tuple[str, str | None, str], list[float]] = {}
    for line in resp.text.splitlines():
        item = json.loads(line)
        key = (item["metric"]["alertname"], _entity(item["metric"], inventory), item["metric"]["alertstate"])
        out[key] = sorted(out.get(key, []) + [t / 1000.0 for t in item["timestamps"]])
    return out


def _evaluations(a: object, end: float) -> dict[str, list[float]]:
    """The evaluation times at which suanli says the alert was pending and firing."""
    active, fired, resolved = a.active_at, a.fired_at, a.resolved_at  # type: ignore[attr-defined]
    stop = resolved if resolved is not None else end + STEP_S
    times = [active + STEP_S * k for k in range(int((stop - active) / STEP_S + 0.5))]
    cut = fired if fired is not None else stop
    return {"pending": [t for t in times if t < cut], "firing": [t for t in times if t >= cut]}


def test_exported_rules_fire_as_suanlis_evaluator(prometheus_for: Callable[[str], Server], empty_vm: Server,
                                                  duck_for: Callable[[str], tuple[DuckStore, object]],
                                                  tmp_path: Path) -> None:
    scenario = "pcie_riser"
    duck, _ = duck_for(scenario)
    inv = load_inventory(shared_path("scenarios", scenario, "inventory.yaml"))
    start, end = parse_time("2026-03-17T17:39:15Z"), parse_time("2026-03-17T17:54:15Z")   # truth.json's window
    assert start % STEP_S == 0                                    # both engines evaluate on the same grid
    rs = parse_rules(RULES)
    cfg = prometheus_2x_config()      # Prometheus 2.x edges
    text, notes = to_prometheus(rs, cfg)
    assert notes == []
    (tmp_path / "rules.yml").write_text(text)
    _replay(tmp_path / "rules.yml", prometheus_for(scenario), empty_vm, start, end)
    got = _alerts_in(empty_vm, inv)
    alerts = Evaluator(rs, EntityIndex.from_inventory(inv), cfg).run(duck, start, end)
    want: dict[tuple[str, str | None, str], list[float]] = {}
    for a in alerts:
        for state, times in _evaluations(a, end).items():
            if times:
                want[(a.rule, a.entity_id, state)] = times
    assert {r for r, _, s in want if s == "firing"} == {"gpu_hot", "gpu_hot_and_busy", "aer_storm", "retx_jump"}
    assert got == want


def test_default_pack_exported_rules_fire_at_the_same_times(prometheus_for: Callable[[str], Server],
                                                            empty_vm: Server, tmp_path: Path,
                                                            duck_for: Callable[[str], tuple[DuckStore, object]]
                                                            ) -> None:
    """The shipped pack on switch_port_errors: every exported rule that is not an approximation
    (the notes name those) fires on the same entities at the same evaluations. suanli reports a
    pending alert only while it is pending at the window's end (one Prometheus drops is not kept),
    so firing times are compared."""
    scenario = "switch_port_errors"
    duck, _ = duck_for(scenario)
    inv = load_inventory(shared_path("scenarios", scenario, "inventory.yaml"))
    lo, hi = duck.time_range() or (0.0, 0.0)
    start = (lo // STEP_S + 1) * STEP_S
    end = start + (hi - start) // STEP_S * STEP_S
    rs, cfg = load_rules(None), RulesConfig(promql_v2=True)
    text, notes = to_prometheus(rs, cfg)
    approximated = {n.split()[1].rstrip(":") for n in notes if "approximated" in n}
    (tmp_path / "rules.yml").write_text(text)
    _replay(tmp_path / "rules.yml", prometheus_for(scenario), empty_vm, start, end)
    got = {(r, e): t for (r, e, s), t in _alerts_in(empty_vm, inv).items() if s == "firing" and r not in approximated}
    want = {(a.rule, a.entity_id): _evaluations(a, end)["firing"]
            for a in Evaluator(rs, EntityIndex.from_inventory(inv), cfg).run(duck, start, end)
            if a.fired_at is not None and a.rule not in approximated}
    assert {r for r, _ in want} >= {"switch_port_crc_ratio_high", "switch_port_crc_sudden", "sla_latency_high"}
    assert got == want
