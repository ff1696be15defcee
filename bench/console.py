"""The console at 10,240 GPUs: API answer time and size, and page render time in real Chromium.

``python bench/console.py [--nodes 1280]``; writes ``bench/results/console.md`` and regathers
``bench/RESULTS.md``.

A real ``serve`` app (uvicorn on a loopback port) over a synthetic 1,280-node inventory (10,240
GPUs, 5,120 NICs; ``suanli.inventory.synth``) with the last step's results set to what a step
at that size would hold: a prediction for every GPU (health scores and P(DBE) drawn as a fleet's
are: most near 1, a tail of risky cards) and a 1,280 x 1,280 one-way latency matrix with one slow
node. No analysis runs (its cost is measured by bench/diagnosis.py and bench/live.py).

The peer is what the pages did before they were paged by the server: fetch the whole list
(``/api/v1/health``, every GPU) and the whole node-level matrix (``/api/v1/fabric?by=node``) and
let the browser sort and draw them. Both are measured in the same run, as ratios.
Chromium is Debian's, driven by Playwright; render time is from ``goto`` to the page's
"updated" mark with its last plot drawn.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
RESULT = ROOT / "bench" / "results" / "console.md"
TOKEN = "bench-console-token"


def _predictions(gpu_ids: list[str], rng: np.random.Generator) -> list[dict[str, Any]]:
    score = np.clip(1.0 - rng.exponential(0.02, len(gpu_ids)), 0.0, 1.0)
    risky = rng.choice(len(gpu_ids), size=max(1, len(gpu_ids) // 200), replace=False)
    score[risky] = rng.uniform(0.2, 0.6, len(risky))
    p = np.clip((1.0 - score) ** 2, 1e-4, 1.0)
    return [{"kind": "gpu", "id": g, "event": "dbe", "horizon_days": 30, "probability": round(float(p[i]), 6),
             "health_score": round(float(score[i]), 4),
             "recommendation": "retire" if score[i] < 0.4 else "watch" if score[i] < 0.6 else "ok"}
            for i, g in enumerate(gpu_ids)]


def _fabric(inv: Any, rng: np.random.Generator) -> Any:
    from suanli.analysis.fabric import FabricResult, Heatmap

    pairs = sorted((n.rack, n.id) for n in inv.nodes.values())
    nodes, racks = tuple(p[1] for p in pairs), tuple(p[0] for p in pairs)
    n = len(nodes)
    base = rng.uniform(8e-6, 12e-6, (n, n))
    lat = base * rng.uniform(0.98, 1.05, (n, n))
    lat[:, 7] *= 3.0                                   # one slow node, as the tomography would see it
    np.fill_diagonal(lat, np.nan)
    marks = tuple((nodes[i], nodes[7], "node") for i in range(n) if i != 7)
    values = {c: {"crc_ratio": float(rng.exponential(1e-9)), "pre_fec_ber": float(rng.exponential(1e-12))}
              for c in list(inv.nics)}
    return FabricResult([], Heatmap(nodes, racks, lat, base, marks, (f"{nodes[7]}: node-level latency",)), [], values)


def _service(work: Path, nodes: int) -> Any:
    from suanli.inventory.synth import synthetic_inventory_yaml
    from suanli.web.service import Service
    from suanli.web.settings import Backend, ServeConfig

    (work / "inventory.yaml").write_text(synthetic_inventory_yaml(nodes=nodes))
    cfg = ServeConfig(backend=Backend(path=str(work / "bench.duckdb")), inventory=str(work / "inventory.yaml"))
    svc = Service(cfg, {"SUANLI_TOKEN": TOKEN}, say=lambda _l: None)
    rng = np.random.default_rng(7)
    svc.stepper.stats.diagnosis = {"cluster": "synth", "window": {}, "missing": [], "incidents": [],
                                   "predictions": _predictions(sorted(svc.inventory.gpus), rng),
                                   "efficiency": {"jobs": []}}
    svc.stepper.stats.steps = 1
    svc.stepper.last = SimpleNamespace(results=SimpleNamespace(fabric=_fabric(svc.inventory, rng)))
    return svc


def _serve(app: Any) -> tuple[str, Any, threading.Thread, socket.socket]:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread, sock


def _api(url: str, path: str, repeat: int = 5) -> tuple[float, int]:
    """Median seconds and bytes of GET ``path``."""
    times, size = [], 0
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as c:
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = c.get(url + path)
            times.append(time.perf_counter() - t0)
            r.raise_for_status()
            size = len(r.content)
    return statistics.median(times), size


def _render(url: str, paths: list[str], repeat: int = 3) -> dict[str, float]:
    from playwright import sync_api

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("chromium is not installed (make test installs Debian's chromium)")
    out: dict[str, float] = {}
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True)
        for path in paths:
            times = []
            for _ in range(repeat):
                ctx = browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"},
                                          viewport={"width": 1400, "height": 1000})
                page = ctx.new_page()
                t0 = time.perf_counter()
                page.goto(url + path)
                page.locator("#status", has_text="updated").wait_for(timeout=120_000)
                n = page.locator(".plot").count()
                page.locator(".plot .main-svg").nth(n - 1).wait_for(state="attached", timeout=120_000)
                times.append(time.perf_counter() - t0)
                ctx.close()
            out[path] = statistics.median(times)
        browser.close()
    return out


def _report(api: dict[str, tuple[float, int]], pages: dict[str, float], nodes: int, gpus: int) -> str:
    def row(label: str, path: str, peer: str) -> str:
        (t, b), (pt, pb) = api[path], api[peer]
        return f"| {label} | `{path}` | {t * 1000:,.0f} ms | {b / 1024:,.0f} KiB | {pt / t:,.1f}x | {pb / b:,.0f}x |"

    lines = [
        "## console", "",
        "What: bench/console.py. A real `serve` app over a synthetic inventory of "
        f"{nodes:,} nodes ({gpus:,} GPUs), its last step holding a prediction for every GPU and a "
        f"{nodes:,} x {nodes:,} latency matrix; API answers over loopback (median of 5) and pages in Debian's "
        "Chromium through Playwright (median of 3, from `goto` to the last plot drawn). The peer is the "
        "whole list the pages fetched before server-side paging (`/api/v1/health`, every GPU; "
        "`/api/v1/fabric?by=node`, the whole matrix), measured in the same run.",
        f"Machine: {os.cpu_count()} cores (shared with other jobs), Python {sys.version.split()[0]}.", "",
        "| answer | route | time | size | faster than the peer | smaller than the peer |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
        row("one page of GPUs, riskiest first", "/api/v1/gpus?limit=100&sort=probability&desc=true", "/api/v1/health"),
        row("health by rack", "/api/v1/gpus/racks?limit=1000", "/api/v1/health"),
        row("latency heatmap by rack", "/api/v1/fabric", "/api/v1/fabric?by=node"),
        row("one page of ports and NICs", "/api/v1/fabric/ports?limit=100&sort=crc_ratio&desc=true", "/api/v1/fabric?by=node"),
        "", "| page | render time |", "| --- | ---: |",
        *[f"| `{p}` | {t:.2f} s |" for p, t in pages.items()],
        "", f"Peers: `/api/v1/health` {api['/api/v1/health'][0] * 1000:,.0f} ms and "
        f"{api['/api/v1/health'][1] / 1024:,.0f} KiB; `/api/v1/fabric?by=node` {api['/api/v1/fabric?by=node'][0] * 1000:,.0f} ms "
        f"and {api['/api/v1/fabric?by=node'][1] / 2 ** 20:,.1f} MiB. A page of GPUs costs the server about "
        "what the whole list costs (both come from one table built once per step); what paging buys there is "
        "the smaller answer and a browser that draws 100 rows instead of every GPU. The matrix by rack is "
        "what makes the fabric page possible at this size at all.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1280)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        svc = _service(Path(tmp), args.nodes)
        url, server, thread, sock = _serve(svc.build_app())
        try:
            paths = ["/api/v1/gpus?limit=100&sort=probability&desc=true", "/api/v1/gpus/racks?limit=1000",
                     "/api/v1/fabric", "/api/v1/fabric/ports?limit=100&sort=crc_ratio&desc=true",
                     "/api/v1/health", "/api/v1/fabric?by=node"]
            api = {p: _api(url, p) for p in paths}
            pages = _render(url, ["/console/health", "/console/fabric", "/console"])
            gpus = len(svc.inventory.gpus)
        finally:
            server.should_exit = True
            thread.join(30)
            sock.close()
            svc.close()
    text = _report(api, pages, args.nodes, gpus)
    RESULT.write_text(text, encoding="utf-8")
    print(text)
    _gather()
    return text


def _gather() -> None:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    if spec is None or spec.loader is None:
        return
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    print(f"wrote {run.gather()}")


if __name__ == "__main__":
    main()
