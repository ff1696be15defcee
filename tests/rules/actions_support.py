"""What the action tests share: a small fleet, alerts that plan one action, an in-memory executor
for the runner's own logic, and stand-ins at the process and network boundary for the real
executors.

Slurm cannot run here (it needs slurmctld and slurmd on real hosts), so ``FakeSlurm`` puts
executable ``scontrol`` and ``sinfo`` scripts first on PATH: suanli runs them exactly as it runs
Slurm's (a child process, an argument list, no shell), and they record their arguments. The
Kubernetes API server cannot run here either; ``ApiServer`` is a local HTTP server that stands in
for it: it records the method, path, query, headers and body of every request, exactly as an API
server would receive them, and serves ``GET /api/v1/nodes`` (with ``limit``/``continue`` paging,
as the real one) from a node list the test sets. A POST is answered as the API server answers an
Eviction it allows (201 and a Success Status), or with what ``ApiState.replies`` sets for its path
(a 429 with the Status a PodDisruptionBudget's refusal carries).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from suanli.rules import Alert, EntityIndex, PlannedAction
from suanli.rules.alerts import Delivery
from suanli.rules.executor_base import BaseExecutor

NODES = [f"n{i:02d}" for i in range(40)]


def fleet(nodes: list[str] | None = None, gpus_per_node: int = 1) -> EntityIndex:
    """40 nodes (n00..n39), one GPU each unless told; job 'big' on n00..n19, 'small' on n20..n23."""
    nodes = NODES if nodes is None else nodes
    gpus = {f"{n}/gpu{i}": n for n in nodes for i in range(gpus_per_node)}
    return EntityIndex(gpus=sorted(gpus), nodes=list(nodes), gpu_node=gpus, jobs=["big", "small"],
                       job_gpus={"big": [f"{n}/gpu0" for n in nodes[:20]],
                                 "small": [f"{n}/gpu0" for n in nodes[20:24]]})


KIND = {"drain_node": "node", "mark_degraded": "node", "reschedule_job": "job", "retire_gpu": "gpu",
        "open_ticket": "gpu", "notify": "gpu"}


def alert(target: str, action: str = "drain_node", rule: str = "xid79", fired_at: float = 0.0,
          kind: str | None = None, **params: Any) -> Alert:
    """A firing alert that plans one action on ``target``."""
    return Alert(name=rule, rule=rule, scope="gpu", entity_kind="gpu", entity_id=f"{target}/gpu0", labels={},
                 state="firing", active_at=fired_at, fired_at=fired_at,
                 actions=(PlannedAction(action, kind or KIND[action], target, dict(params)),))


class Recorder(BaseExecutor):
    """An executor that only records what it is asked to do (for the runner's own logic; every
    real executor is tested against a real process or server)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        self.calls.append((action.action, action.target))
        return "ok"


@dataclass
class FakeSlurm:
    bindir: Path
    calls: Path
    states: Path

    def runs(self) -> list[list[str]]:
        """Each scontrol call's arguments."""
        if not self.calls.exists():
            return []
        return [c.splitlines() for c in self.calls.read_text().split("---\n") if c]

    def set_states(self, lines: list[str]) -> None:
        """What sinfo --noheader --Node --format='%N %T' prints next."""
        self.states.write_text("".join(line + "\n" for line in lines))


def make_fake_slurm(tmp_path: Path, extra_scontrol: str = "") -> FakeSlurm:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    calls, states = tmp_path / "scontrol_calls.txt", tmp_path / "sinfo_states.txt"
    states.write_text("")
    scontrol = bindir / "scontrol"
    scontrol.write_text(f'#!/bin/sh\n{extra_scontrol}for a in "$@"; do printf "%s\\n" "$a" >> {calls}; done\n'
                        f"echo --- >> {calls}\n")
    sinfo = bindir / "sinfo"
    sinfo.write_text(f'#!/bin/sh\n[ "$*" = "--noheader --Node --format=%N %T" ] || exit 3\ncat {states}\n')
    for p in (scontrol, sinfo):
        p.chmod(0o755)
    return FakeSlurm(bindir, calls, states)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class ApiState:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    seen: list[Request] = field(default_factory=list)
    page_size: int = 500
    replies: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    """POST path -> (status code, body) instead of an allowed eviction."""


EVICTED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
PDB_REFUSED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Cannot evict pod as it would violate the pod's disruption budget.",
               "reason": "TooManyRequests", "code": 429,
               "details": {"causes": [{"reason": "DisruptionBudget",
                                       "message": "The disruption budget trainer-pdb needs 2 healthy pods and has 2 currently"}]}}


def _handler(state: ApiState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> Request:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            parts = urlsplit(self.path)
            req = Request(self.command, parts.path, parse_qs(parts.query), dict(self.headers),
                          json.loads(raw) if raw else None)
            state.seen.append(req)
            return req

        def _send(self, code: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            req = self._record()
            if req.path != "/api/v1/nodes":
                self._send(404, {"kind": "Status", "code": 404})
                return
            start = int(req.query.get("continue", ["0"])[0])
            limit = int(req.query.get("limit", [str(len(state.nodes))])[0])
            items = state.nodes[start:start + min(limit, state.page_size)]
            nxt = start + len(items)
            meta = {"continue": str(nxt)} if nxt < len(state.nodes) else {}
            self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": meta, "items": items})

        def do_PATCH(self) -> None:
            self._record()
            self._send(200, {"kind": "Node"})

        def do_POST(self) -> None:
            req = self._record()
            self._send(*state.replies.get(req.path, (201, EVICTED)))

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def serve_api(state: ApiState) -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    th = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    th.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def k8s_node(name: str, unschedulable: bool = False, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {"metadata": {"name": name}, "spec": spec}


GPU = "n07/gpu3"
UUID = "GPU-3f0c1e2a-0000-4000-8000-000000000007"
PODS = ("trainer-3", "team-a/trainer-3b")     # as inventory ranks write them: name, or namespace/name
EVICTION = "/api/v1/namespaces/{}/pods/{}/eviction"


def eviction(ns: str, name: str) -> dict[str, object]:
    """The policy/v1 Eviction body of kubernetes.io "API-initiated Eviction", written out here."""
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}


def drain_alert(how: Delivery | None = None, fired_at: float = 0.0) -> Alert:
    """A rule's drain of n07 for a fault on n07/gpu3 (``how``: what the cost decision said)."""
    return Alert(name="xid95", rule="xid95", scope="gpu", entity_kind="gpu", entity_id=GPU, labels={},
                 state="firing", active_at=fired_at, fired_at=fired_at,
                 actions=(PlannedAction("drain_node", "node", "n07", {}, how),))


def on_path(bindir: Path) -> str:
    return f"{bindir}{os.pathsep}{os.environ['PATH']}"
