"""The blast-radius guard: it counts effects, not action names; it reads the cluster's state where
the executor can; its count lives in the audit log; and its circuit breaker trips over a sliding
window, stays open until a person resets it, and replays nothing stale.

Every expected number below is worked out by hand from the fleet in actions_support.py (40 nodes,
one GPU each unless said): ``max_drain_fraction`` 0.05 of 40 = 2 nodes out at once,
``breaker_fleet_fraction`` 0.5 of 40 = 20 distinct nodes per window.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.rules import ActionRunner, ActionsConfig, AuditLog
from suanli.rules.executors import KubernetesExecutor, ShellExecutor, SlurmExecutor
from suanli.rules.guard import reset_breaker
from suanli.rules.ids import expand_hostlist, node_members
from tests.rules.actions_support import (
    NODES,
    ApiState,
    FakeSlurm,
    Recorder,
    alert,
    fleet,
    k8s_node,
    make_fake_slurm,
    on_path,
    serve_api,
)

TEN = NODES[:10]
OPEN = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0)  # the breaker alone


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSlurm:
    fake = make_fake_slurm(tmp_path)
    monkeypatch.setenv("PATH", on_path(fake.bindir))
    return fake


def _decisions(out: list[dict[str, object]]) -> list[object]:
    return [r["decision"] for r in out]


def test_mark_degraded_through_slurm_counts_as_a_drain(tmp_path: Path, slurm: FakeSlurm) -> None:
    # issue 13: mark_degraded via Slurm sets State=DRAIN; 30 of 40 nodes were drained where 2 were allowed
    ex = SlurmExecutor()
    runner = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"mark_degraded": ex}, AuditLog(tmp_path / "a"))
    out = runner.handle([alert(n, "mark_degraded") for n in NODES[:30]], now=0.0)
    # 1-2 pass; 3-20 blocked at once (2 allowed); the 21st distinct node in 5 min trips the breaker (> 20)
    assert _decisions(out) == ["executed"] * 2 + ["blocked_by_guard"] * 18 + ["breaker_open"] * 10
    assert [r[1] for r in slurm.runs()] == ["NodeName=n00", "NodeName=n01"]
    assert "would have 3 of 40 nodes out of service" in str(out[2]["detail"])
    assert "tripped the circuit breaker" in str(out[20]["detail"])


def test_a_slurm_hostlist_counts_as_every_node_it_names(tmp_path: Path, slurm: FakeSlurm) -> None:
    # issue 13: node-[001-040] counted as one node but drains 40
    runner = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": SlurmExecutor()},
                          AuditLog(tmp_path / "a"))
    small, whole = runner.handle([alert("n[05-07]"), alert("n[00-39]")], now=0.0)
    assert small["decision"] == "blocked_by_guard" and "3 of 40 nodes" in str(small["detail"])
    assert small["effect"]["nodes"] == ["n05", "n06", "n07"]  # type: ignore[index]
    assert whole["decision"] == "breaker_open" and "40 of 40 nodes" in str(whole["detail"])
    assert slurm.runs() == []


def test_hostlist_expansion() -> None:
    assert expand_hostlist("node-[001-003,010]") == ["node-001", "node-002", "node-003", "node-010"]
    assert expand_hostlist("a[1-2]-b[08-10]") == ["a1-b08", "a1-b09", "a1-b10", "a2-b08", "a2-b09", "a2-b10"]
    assert expand_hostlist("n1,n[3-4]") == ["n1", "n3", "n4"]
    assert len(expand_hostlist("node-[001-040]")) == 40
    assert node_members("node-007") == ["node-007"]
    for bad in ("n[3-1]", "n[1-", "n[a-b]", "n[0-99999999]", "n]1[", "n,,m", "n[[1]]"):
        with pytest.raises(ValueError):
            expand_hostlist(bad)
    with pytest.raises(ValueError, match="not a node id"):
        node_members("n[1-2]?dryRun=All")


def test_retire_gpu_and_reschedule_job_are_guarded(tmp_path: Path, slurm: FakeSlurm) -> None:
    # issue 13: reschedule_job and retire_gpu were never guarded
    calls = tmp_path / "retired.txt"
    script = tmp_path / "retire"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {calls}\n')
    script.chmod(0o755)
    cfg = ActionsConfig(dry_run=False, breaker_max_gpus=4)
    runner = ActionRunner(cfg, fleet(NODES, gpus_per_node=8), {"retire_gpu": ShellExecutor([str(script), "{target}"])},
                          AuditLog(tmp_path / "gpus"))
    out = runner.handle([alert(f"n00/gpu{i}", "retire_gpu") for i in range(6)], now=0.0)
    assert _decisions(out) == ["executed"] * 4 + ["breaker_open"] * 2     # a 5th GPU is more than the cap of 4
    assert calls.read_text().split() == [f"n00/gpu{i}" for i in range(4)]

    ex = SlurmExecutor(job_ids={"a": "11", "b": "12", "c": "13"})
    jobs = ActionRunner(ActionsConfig(dry_run=False, breaker_max_jobs=2), fleet(), {"reschedule_job": ex},
                        AuditLog(tmp_path / "jobs"))
    out = jobs.handle([alert(j, "reschedule_job") for j in "abc"], now=0.0)
    assert _decisions(out) == ["executed", "executed", "breaker_open"]
    assert slurm.runs() == [["requeue", "11"], ["requeue", "12"]]


def test_a_drained_node_counts_its_gpus(tmp_path: Path) -> None:
    runner = ActionRunner(ActionsConfig(dry_run=False, max_drain_fraction=1.0, breaker_max_gpus=16),
                          fleet(NODES, gpus_per_node=8), {"drain_node": Recorder()}, AuditLog(tmp_path / "a"))
    out = runner.handle([alert(n) for n in ("n30", "n31", "n32")], now=0.0)
    assert _decisions(out) == ["executed", "executed", "breaker_open"]   # 24 GPUs > 16
    assert "24 GPUs, more than the cap of 16" in str(out[2]["detail"])


def test_guard_per_job(tmp_path: Path) -> None:
    # job 'small' has 4 nodes (n20..n23): 25 % = 1 at once; the fleet-wide share (50 %) is not the limit here
    rec = Recorder()
    runner = ActionRunner(ActionsConfig(dry_run=False, max_drain_fraction=0.5), fleet(), {"drain_node": rec},
                          AuditLog(tmp_path / "a"))
    out = runner.handle([alert("n20"), alert("n21"), alert("n30")], now=0.0)
    assert _decisions(out) == ["executed", "blocked_by_guard", "executed"]
    assert "job small's 4 nodes" in str(out[1]["detail"])


def test_the_guard_reads_slurm_node_states(tmp_path: Path, slurm: FakeSlurm) -> None:
    slurm.set_states(["n10 drained*", "n11 down", "n12 allocated", "n13 mixed", "n99 drained"])
    runner = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": SlurmExecutor()},
                          AuditLog(tmp_path / "a"))
    (rec,) = runner.handle([alert("n00")], now=0.0)
    # n10 and n11 are out already (n99 is not one of suanli's 40 nodes): a third is more than 2
    assert rec["decision"] == "blocked_by_guard" and "(2 already, as slurm reports them)" in str(rec["detail"])
    assert slurm.runs() == []


def test_the_guard_fails_closed_when_it_cannot_read_the_cluster(tmp_path: Path, slurm: FakeSlurm) -> None:
    (slurm.bindir / "sinfo").write_text("#!/bin/sh\necho 'slurm_load_node: Unable to contact slurm controller' >&2\n"
                                        "exit 1\n")
    runner = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": SlurmExecutor()},
                          AuditLog(tmp_path / "a"))
    (rec,) = runner.handle([alert("n00")], now=0.0)
    assert rec["decision"] == "blocked_by_guard" and "Unable to contact slurm controller" in str(rec["detail"])
    assert slurm.runs() == []


@pytest.fixture
def api() -> Iterator[tuple[str, ApiState]]:
    state = ApiState(nodes=[k8s_node(n) for n in NODES], page_size=16)
    state.nodes[3] = k8s_node("n03", unschedulable=True)
    state.nodes[4] = k8s_node("n04", taints=[{"key": "suanli.io/degraded", "effect": "NoSchedule"}])
    for url in serve_api(state):
        yield url, state


def test_the_guard_reads_cordoned_kubernetes_nodes(tmp_path: Path, api: tuple[str, ApiState]) -> None:
    url, state = api
    ex = KubernetesExecutor(url, token="t0ken")
    runner = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": ex}, AuditLog(tmp_path / "a"))
    (rec,) = runner.handle([alert("n05")], now=0.0)
    assert rec["decision"] == "blocked_by_guard" and "(2 already, as kubernetes reports them)" in str(rec["detail"])
    # 40 nodes in pages of 16: three GETs, no PATCH
    assert [(r.method, r.path, r.query) for r in state.seen] == [
        ("GET", "/api/v1/nodes", {"limit": ["500"]}),
        ("GET", "/api/v1/nodes", {"limit": ["500"], "continue": ["16"]}),
        ("GET", "/api/v1/nodes", {"limit": ["500"], "continue": ["32"]})]
    assert state.seen[0].headers["Authorization"] == "Bearer t0ken"


def test_breaker_trips_and_refuses_until_a_person_resets_it(tmp_path: Path) -> None:
    rec = Recorder()
    runner = ActionRunner(OPEN, fleet(TEN), {"drain_node": rec, "notify": rec}, AuditLog(tmp_path / "a"))
    # 10 nodes * 0.5 = 5 distinct nodes per 5 minutes
    out = runner.handle([alert(n, fired_at=float(i)) for i, n in enumerate(TEN[:6])], now=60.0)
    assert _decisions(out) == ["executed"] * 5 + ["breaker_open"]
    trip_id = str(out[5]["detail"]).split("(trip ")[1].split(")")[0]
    later = runner.handle([alert("n07", fired_at=100.0)], now=1000.0)[0]      # long after the window: still open
    assert later["decision"] == "breaker_open" and f"trip {trip_id}" in str(later["detail"])
    note = runner.handle([alert("n00/gpu0", "notify", fired_at=100.0)], now=1000.0)[0]
    assert note["decision"] == "executed"                                       # no effect: a person hears of it
    with pytest.raises(InputError, match="no open breaker trip"):
        runner.reset_breaker("00000000", by="alice", reason="rule fixed", now=1100.0)
    with pytest.raises(InputError, match="who resets it and why"):
        runner.reset_breaker(trip_id, by=" ", reason="rule fixed", now=1100.0)
    runner.reset_breaker(trip_id, by="alice", reason="rule fixed", now=1100.0)
    stale = runner.handle([alert("n05", fired_at=59.0), alert("n07", fired_at=100.0)], now=1200.0)
    assert _decisions(stale) == ["not_replayed", "not_replayed"]                 # fired before the reset
    fresh = runner.handle([alert(n, fired_at=1150.0) for n in TEN[5:]], now=1200.0)
    assert _decisions(fresh) == ["executed"] * 5                                 # the window started empty
    assert len(rec.calls) == 5 + 1 + 5


def test_breaker_window_slides(tmp_path: Path) -> None:
    def run(last_at: float) -> object:
        runner = ActionRunner(OPEN, fleet(TEN), {"drain_node": Recorder()}, AuditLog(tmp_path / f"{last_at}"))
        for i, n in enumerate(TEN[:5]):
            assert runner.handle([alert(n)], now=float(i))[0]["decision"] == "executed"
        return runner.handle([alert("n05")], now=last_at)[0]["decision"]
    assert run(299.0) == "breaker_open"   # n00..n04 (t 0..4) still within 300 s: 6 > 5
    assert run(302.0) == "executed"       # t 0, 1, 2 have left the window: n03, n04, n05 = 3


def test_the_count_survives_a_restart(tmp_path: Path) -> None:
    # issue 13: the count lived in memory, so a restarted runner started again from zero
    log = tmp_path / "a.jsonl"
    first = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": Recorder()}, AuditLog(log))
    assert _decisions(first.handle([alert("n00"), alert("n01")], now=0.0)) == ["executed", "executed"]
    rec = Recorder()
    second = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": rec}, AuditLog(log))
    out = second.handle([alert("n00"), alert("n02")], now=10.0)
    assert _decisions(out) == ["skipped_duplicate", "blocked_by_guard"]
    assert "(2 already, as suanli recorded them)" in str(out[1]["detail"]) and rec.calls == []
    second.release_node("n00", now=20.0)
    third = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": rec}, AuditLog(log))
    assert third.handle([alert("n02")], now=30.0)[0]["decision"] == "executed"


def test_an_open_breaker_survives_a_restart_and_a_person_resets_it_from_outside(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    first = ActionRunner(OPEN, fleet(TEN), {"drain_node": Recorder()}, AuditLog(log))
    first.handle([alert(n) for n in TEN[:6]], now=0.0)
    rec = Recorder()
    second = ActionRunner(OPEN, fleet(TEN), {"drain_node": rec}, AuditLog(log))
    assert second.handle([alert("n08", fired_at=5.0)], now=5.0)[0]["decision"] == "breaker_open"
    (trip,) = [json.loads(x) for x in log.read_text().splitlines() if '"trip"' in x]
    # the reset a person runs (the CLI verb calls this function) from another process
    code = ("import sys; from suanli.rules.guard import reset_breaker; "
            "reset_breaker(sys.argv[1], confirm=sys.argv[2], by='bob', reason='flapping exporter fixed', now=50.0)")
    subprocess.run([sys.executable, "-c", code, str(log), trip["trip_id"]], check=True)
    with pytest.raises(InputError, match="no open breaker trip"):       # the same trip cannot be reset twice
        reset_breaker(log, confirm=trip["trip_id"], by="bob", reason="again", now=51.0)
    assert second.handle([alert("n09", fired_at=60.0)], now=60.0)[0]["decision"] == "executed"
    assert rec.calls == [("drain_node", "n09")]


KILLER = """
import sys
from suanli.rules import ActionRunner, ActionsConfig, AuditLog
from suanli.rules.executors import ShellExecutor
from tests.rules.actions_support import alert, fleet
ex = ShellExecutor([sys.argv[2], "{target}"])
runner = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": ex}, AuditLog(sys.argv[1]))
runner.handle([alert("n00")], now=0.0)
print("not reached")
"""


def test_a_runner_killed_while_it_acts_still_counts_that_action(tmp_path: Path) -> None:
    # the drain program kills the runner (kill -9) while it runs: the intent was on disk before
    log, prog = tmp_path / "a.jsonl", tmp_path / "drain"
    prog.write_text('#!/bin/sh\nkill -9 $PPID\n')
    prog.chmod(0o755)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", KILLER, str(log), str(prog)], cwd=root, capture_output=True,
                          text=True, check=False)
    assert done.returncode == -9 and "not reached" not in done.stdout
    assert [json.loads(x)["decision"] for x in log.read_text().splitlines()] == ["executing"]
    rec = Recorder()
    again = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": rec}, AuditLog(log))
    out = again.handle([alert("n01"), alert("n02")], now=10.0)
    assert _decisions(out) == ["executed", "blocked_by_guard"]      # n00 counts: n00 + n01 = the 2 allowed
