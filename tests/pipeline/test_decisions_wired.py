"""The costs stage wired into the pipeline: each incident's inputs read from a real DuckDB store's
spans and the inventory, priced, written into the diagnosis JSON, and the history written back to
the store so that the next run learns from it.

The job is simulated as a step timeline (spans in the store): a healthy step b = 10 s, then one
slow rank stretches steps to 12.5 s (pace f = 0.8); a checkpoint every K = 144 steps (I = 1,440 s
of work) and a restart that took R = 300 s (init span to first step). 16 GPUs at 2 EUR/GPU-hour:
one second of the job costs D = 16·2/3600 EUR. node-003 runs nothing: 8 spare GPUs, as many as the
job has on the suspect node-001. Clearing, escalation and fix priors are set to nothing
(Beta(0, 1)) unless a test says, so the costs are plain arithmetic (docs/decisions.md, requeue
Q = 300 s, horizon H = 14,400 s, u = steps since the checkpoint × 10 s):

* stay degraded:                       (1 - f)·D·H          = 2,880·D = 25.60 EUR
* restart without node-001 now:        D·(u + R + Q)        = (u + 600)·D
* restart after the next checkpoint:   (1 - f)·D·(I - u)/f + D·(R + Q) = (0.25·(1,440 - u) + 600)·D
* reboot node-001 (fixes for sure):    D·(u + R + 600)      (the reboot's own 600 s)
* reset the GPU (fixes for sure):      D·(u + R + 60)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from suanli.analysis.decisions import CategoryPrior, Decided, DecisionConfig
from suanli.analysis.window import Window
from suanli.incidents.model import ActionDecision, Impact, Incident
from suanli.ingest.records import SeriesKey, Span
from suanli.inventory import Inventory, parse_inventory
from suanli.pipeline import AnalysisResults, Diagnosis, stages
from suanli.report import diagnosis_json
from suanli.store.duck import DuckStore
from suanli.store.history import load_history

B, F, K, R = 10.0, 0.8, 144, 300.0
D = 16 * 2.0 / 3600
NOTHING = (0.0, 1.0)
SURE = (1.0, 0.0)
CFG = DecisionConfig(priors={"gpu_straggler": CategoryPrior(NOTHING, 1800.0, NOTHING, NOTHING, NOTHING)})
GPU = "node-001/gpu3"
T0 = 1_773_100_000.0


def _inventory() -> Inventory:
    def node(n: int) -> str:
        gpus = ", ".join(f"{{index: {i}, uuid: GPU-{n:02d}{i:02d}aaaa-0000-0000-0000-000000000000, model: H100-SXM}}"
                         for i in range(8))
        return f"      - id: node-00{n}\n        gpus: [{gpus}]\n"
    ranks = "\n".join(f"      - {{rank: {r}, gpu: node-00{1 + r // 8}/gpu{r % 8}, pod: llama-w{r}}}" for r in range(16))
    text = ("cluster: c\ncurrency: EUR\ngpu_models:\n  H100-SXM: {bf16_tflops: 989, gpu_hour_price: 2.0}\n"
            "racks:\n  - id: rack-01\n    nodes:\n" + "".join(node(n) for n in (1, 2, 3)) +
            "jobs:\n  - id: llama\n    ranks:\n" + ranks + "\n")
    return parse_inventory(text, "inventory.yaml")


def _span(name: str, start: float, end: float, step: int | None = None) -> Span:
    return Span("t", f"{name}{step}{start}", None, name, start, end, "llama", 0, step, None, None)


def _store(steps_since_ckpt: int, path: Path | None = None, t0: float = T0, slow: int = 60,
           first: int = 0) -> tuple[DuckStore, float, float]:
    """Two checkpoint cycles of steps (numbered from ``first``), then ``steps_since_ckpt`` more; the
    last ``slow`` at 12.5 s. Returns the store, the onset and now."""
    n = 2 * K + steps_since_ckpt
    spans, t = [_span("init", t0, t0 + 5.0)], t0 + R
    ends = []
    for i in range(n):
        d = B / F if i >= n - slow else B
        spans.append(_span("train_step", t, t + d, first + i))
        t += d
        ends.append(t)
        if i + 1 in (K, 2 * K):
            spans.append(_span("checkpoint_save", t + 1e-3, t + 2e-3))
    store = DuckStore(path)
    store.add_spans(spans)
    store.flush()
    return store, ends[n - slow - 1], ends[-1] + 0.5


def _incident(onset: float, root: str = GPU, *actions: tuple[str, str]) -> Incident:
    inc = Incident("gpu_straggler", "gpu", root, 0.9, onset, onset + 30, None,
                   evidence=[f"{root} compute phases 25% slower than its peers"])
    inc.impact = Impact(jobs=["llama"], gpus=16)
    acts = actions or (("reschedule_job", "llama"), ("mark_degraded", root))
    inc.actions = [ActionDecision(a, t, "dry_run") for a, t in acts]
    return inc


def _priced(steps: int, cfg: DecisionConfig = CFG, *acts: tuple[str, str]) -> tuple[Decided, Incident]:
    store, onset, now = _store(steps)
    inc = _incident(onset, GPU, *acts)
    decided = stages.costs([inc], store, _inventory(), now, cfg, load_history(store.con, 0.0))
    store.close()
    return decided[inc.id], inc


def test_a_fresh_checkpoint_restarts_now_in_the_diagnosis_json() -> None:
    d, inc = _priced(6)                                   # u = 60 s < (1 - f)·I = 288 s
    diag = Diagnosis("c", Window(T0, T0 + 5000), [], [inc], [], AnalysisResults(), decided={inc.id: d},
                     currency="EUR")
    doc = json.loads(json.dumps(diagnosis_json(diag), allow_nan=False))
    (out,) = doc["incidents"]
    first, second = out["actions"]
    assert (first["action"], first["target"], first["status"], first["rank"]) == ("reschedule_job", "llama", "dry_run", 1)
    assert first["expected_cost"] == round(660 * D, 2) == 5.87 and first["mode"] == "immediate"
    assert first["horizon_s"] == 14_400 and first["chosen"] is True and first["scope"] == "job"
    assert (second["action"], second["expected_cost"], second["chosen"]) == ("mark_degraded", 25.6, False)
    dec = out["decision"]
    assert dec["currency"] == "EUR" and dec["stay_cost"] == round(2880 * D, 2) == 25.6
    assert dec["stay_rate_per_h"] == round(0.2 * D * 3600, 2) == 6.4
    assert dec["chosen"] == {"action": "reschedule_job", "target": "llama", "mode": "immediate", "delay_s": 0.0}
    assert dec["saving"] == round(25.6 - 5.87, 2) and dec["superseded_by"] is None
    assert doc["economics"] == {"currency": "EUR", "horizon_s": 14_400, "stay_cost": 25.6, "chosen_cost": 5.87,
                                "saving": 19.73, "other_currencies": [],
                                "incidents": [{"id": inc.id, "category": "gpu_straggler",
                                               "chosen": "reschedule_job llama (immediate)", "stay_cost": 25.6,
                                               "chosen_cost": 5.87, "saving": 19.73}]}


def test_far_from_the_checkpoint_it_waits_for_it() -> None:
    d, _ = _priced(40)                                    # u = 400 s > 288 s
    top = d.decision.ranked[0]
    assert top.best.mode == "after_checkpoint"
    assert top.best.delay_s == pytest.approx((1440 - 400) / F, abs=0.1)      # 1,300 s
    assert round(top.expected_cost, 2) == round((0.25 * 1040 + 600) * D, 2) == 7.64
    now = next(o for o in top.options if o.mode == "immediate")
    assert round(now.expected_cost, 2) == round(1000 * D, 2) == 8.89


def test_reset_and_reboot_are_priced_and_the_reboot_supersedes_the_reset() -> None:
    sure = DecisionConfig(priors={"gpu_straggler": CategoryPrior(NOTHING, 1800.0, NOTHING, SURE, NOTHING)})
    store, onset, now = _store(6)
    a = _incident(onset, GPU, ("reset_gpu", GPU), ("open_ticket", GPU))
    b = _incident(onset + 1, "node-001/gpu5", ("reboot_node", "node-001"), ("open_ticket", "node-001/gpu5"))
    out = stages.costs([a, b], store, _inventory(), now, sure, load_history(store.con, 0.0))
    store.close()
    reset, reboot = out[a.id].decision.chosen, out[b.id].decision.chosen
    assert reset is not None and reboot is not None
    assert round(reset.expected_cost, 2) == round((60 + 300 + 60) * D, 2) == 3.73
    assert round(reboot.expected_cost, 2) == round((60 + 300 + 600) * D, 2) == 8.53
    assert out[a.id].superseded_by == "reboot_node node-001" and out[b.id].superseded_by is None


def test_the_history_written_by_one_run_escalates_the_third_repeat(tmp_path: Path) -> None:
    """Three runs on one database file, reopened each time: incidents on the same GPU 8 h apart.
    The third escalates to retirement (3 within 24 h): the pack allows no retire_gpu or drain_node
    here, so the ticket (hardware inspection) goes first although restarting costs less; the same
    three spread over a month do not escalate."""
    def runs(gap_s: float, db: Path) -> list[Decided]:
        got = []
        for k in range(3):
            store, onset, now = _store(6, db, T0 + k * gap_s, first=1000 * k)
            inc = _incident(onset, GPU, ("reschedule_job", "llama"), ("open_ticket", GPU))
            got.append(stages.decide_and_record([inc], store, _inventory(), now, CFG, [], {})[inc.id])
            store.close()
        return got

    near = runs(8 * 3600.0, tmp_path / "near.duckdb")
    assert [d.decision.escalation is not None for d in near] == [False, False, True]
    third = near[2].decision
    assert third.escalation is not None and third.escalation.level == "retire"
    assert [d.decision.chosen.allowed.action for d in near if d.decision.chosen] == \
        ["reschedule_job", "reschedule_job", "open_ticket"]
    assert third.saving == pytest.approx(0.0) and near[0].decision.saving == pytest.approx((2880 - 660) * D)
    assert any("had 2 earlier incident(s) within 24 h" in line for line in third.evidence)
    far = runs(15 * 86400.0, tmp_path / "far.duckdb")
    assert all(d.decision.escalation is None for d in far)
    con = DuckStore(tmp_path / "near.duckdb")
    hist = load_history(con.con, 0.0)
    con.close()
    assert len(hist.incidents) == 3 and {i.entity_id for i in hist.incidents} == {GPU}
    assert sorted((r.kind, r.executed) for r in hist.remediations) == \
        [("open_ticket", False), ("reschedule_job", False), ("reschedule_job", False)]


def test_running_the_same_window_twice_changes_nothing(tmp_path: Path) -> None:
    store, onset, now = _store(6, tmp_path / "h.duckdb")
    key = SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("Hostname", "node-001"), ("gpu", "3")), "gpu", GPU, None)
    store.add_samples(key, np.array([onset, now]), np.array([70.0, 71.0]))
    store.flush()
    inc = _incident(onset)
    costs = []
    for _ in range(2):
        d = stages.decide_and_record([inc], store, _inventory(), now, CFG, [], {})[inc.id]
        costs.append((d.decision.stay_cost, d.decision.chosen_cost, d.decision.evidence))
    temps = store.series("DCGM_FI_DEV_GPU_TEMP")                 # the store's own reads still work after
    steps = store.spans(job_id="llama", names=["train_step"])
    hist = load_history(store.con, 0.0)
    store.close()
    assert costs[0] == costs[1] and len(hist.incidents) == 1 and len(hist.remediations) == 1
    assert len(steps.step) == 2 * K + 6 and [list(t.values) for t in temps] == [[70.0, 71.0]]
