"""The root-cause report: one self-contained HTML file walking the seed's four steps.

1. business impact: the SLA's own metric (``suanli_sla_latency_seconds``) over the window;
2. framework: each rank's step phases over time (where the time went, rank by rank);
3. hardware: the suspect's own signals, and the one-way latency heatmap of the fabric;
4. conclusion: the incidents with their evidence and an impact matrix (jobs x SLAs).

Plotly.js is inlined from the ``plotly`` package (no CDN: clusters are often air-gapped).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from suanli.inventory import Inventory
from suanli.store.api import Store
from suanli.timefmt import to_rfc3339

if TYPE_CHECKING:
    from suanli.incidents.diagnose import Diagnosis
    from suanli.incidents.model import Incident

__all__ = ["write_rca"]

PHASES = ("data_load", "forward", "backward", "allreduce", "optimizer")
_HW_METRICS: dict[str, tuple[str, ...]] = {
    "gpu": ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
            "suanli_pcie_aer_errors_total", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"),
    "switch_port": ("suanli_switch_port_crc_errors_total", "suanli_port_pre_fec_ber"),
    "nic": ("suanli_rdma_retransmits_total", "suanli_port_pre_fec_ber", "node_infiniband_link_downed_total"),
    "storage": ("suanli_storage_read_latency_seconds",),
}

_COUNTERS = frozenset({"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "suanli_pcie_aer_errors_total",
                       "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "suanli_switch_port_crc_errors_total",
                       "suanli_rdma_retransmits_total", "node_infiniband_link_downed_total"})


def _iso(ts: np.ndarray) -> list[str]:
    return [np.datetime_as_string(np.datetime64(int(t * 1000), "ms"), unit="s") for t in ts]


def _titled(layout: dict[str, Any]) -> dict[str, Any]:
    """Plotly.js 3 wants ``{"text": ...}`` titles on the figure and its axes."""
    out = dict(layout)
    if isinstance(out.get("title"), str):
        out["title"] = {"text": out["title"]}
    for axis in ("xaxis", "yaxis"):
        ax = dict(out.get(axis) or {})
        if isinstance(ax.get("title"), str):
            ax["title"] = {"text": ax["title"]}
        if ax:
            out[axis] = ax
    return out


def _fig(div: str, data: list[dict[str, Any]], layout: dict[str, Any]) -> str:
    layout = _titled({"margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "height": 360, **layout})
    return (f'<div id="{div}" class="plot"></div><script>Plotly.newPlot("{div}", '
            f'{json.dumps(data)}, {json.dumps(layout)}, {{"displaylogo": false, "responsive": true}});</script>')


def _business(store: Store, sla: str | None, start: float, end: float) -> str:
    if not sla:
        return "<p>The job declares no SLA.</p>"
    series = store.series("suanli_sla_latency_seconds", entity_ids=[sla], start=start, end=end)
    if not series:
        return f"<p>No samples of <code>suanli_sla_latency_seconds{{sla_id=\"{html.escape(sla)}\"}}</code>.</p>"
    data = [{"type": "scatter", "mode": "lines", "name": s.key.entity_id, "x": _iso(s.ts),
             "y": np.nan_to_num(s.values, nan=0.0).tolist()} for s in series]
    return _fig("business", data, {"title": f"SLA {sla}: latency (s)", "yaxis": {"title": "seconds"}})


def _framework(store: Store, job: str, start: float, end: float) -> str:
    frame = store.spans(job_id=job, start=start, end=end)
    if len(frame) == 0:
        return "<p>No training spans for this job in the window.</p>"
    steps = frame.step[frame.step >= 0]
    if len(steps) == 0:
        return "<p>Spans carry no step numbers.</p>"
    uniq = np.unique(steps)
    traces = []
    for phase in PHASES:
        sel = frame.name == phase
        if not sel.any():
            continue
        dur = frame.end_s[sel] - frame.start_s[sel]
        st = frame.step[sel]
        med = [float(np.median(dur[st == s])) if (st == s).any() else 0.0 for s in uniq]
        traces.append({"type": "bar", "name": phase, "x": uniq.tolist(), "y": med})
    step_sel = frame.name == "train_step"
    ranks = np.unique(frame.rank[step_sel & (frame.rank >= 0)])
    z = np.full((len(ranks), len(uniq)), np.nan)
    r_index = {int(r): i for i, r in enumerate(ranks)}
    s_index = {int(s): i for i, s in enumerate(uniq)}
    for r, s, a, b in zip(frame.rank[step_sel], frame.step[step_sel], frame.start_s[step_sel],
                          frame.end_s[step_sel], strict=True):
        if int(r) in r_index and int(s) in s_index:
            z[r_index[int(r)], s_index[int(s)]] = b - a
    stacked = _fig("phases", traces, {"barmode": "stack", "title": "median phase time per step (s)",
                                      "xaxis": {"title": "step", "tickformat": "d"}, "yaxis": {"title": "seconds"}})
    heat = _fig("ranks", [{"type": "heatmap", "x": uniq.tolist(), "y": [f"rank{int(r)}" for r in ranks],
                           "z": [[None if np.isnan(v) else round(float(v), 4) for v in row] for row in z],
                           "colorscale": "Viridis", "colorbar": {"title": "step s"}}],
                 {"title": "step time per rank", "height": max(300, 12 * len(ranks) + 120),
                  "xaxis": {"title": "step", "tickformat": "d"}})
    return stacked + heat


def _hardware(store: Store, inc: Incident | None, start: float, end: float) -> str:
    if inc is None:
        return "<p>No incident touches this job in the window: no suspect to show.</p>"
    parts = []
    for i, metric in enumerate(_HW_METRICS.get(inc.root_kind, ())):
        counter = metric in _COUNTERS
        read = store.rate if counter else store.series
        series = read(metric, entity_ids=[inc.root_id], start=start, end=end)
        if not series:
            continue
        data = [{"type": "scatter", "mode": "lines", "name": "/".join(f"{k}={v}" for k, v in s.key.labels
                                                                       if k in ("severity", "port", "nic")) or metric,
                 "x": _iso(s.ts), "y": [None if not np.isfinite(v) else float(v) for v in s.values]}
                for s in series]
        unit = " (per second)" if counter else ""
        parts.append(_fig(f"hw{i}", data, {"title": f"{inc.root_id}: {metric}{unit}", "height": 280}))
    return "".join(parts) or f"<p>No metric series of {html.escape(inc.root_id)} in the window.</p>"


def _latency_heatmap(store: Store, inv: Inventory, start: float, end: float) -> str:
    series = store.series("suanli_link_latency_seconds", start=start, end=end)
    if not series:
        return "<p>No latency probes (suanli_link_latency_seconds).</p>"
    order = [n.id for r in inv.racks for n in r.nodes]
    idx = {n: i for i, n in enumerate(order)}
    z = np.full((len(order), len(order)), np.nan)
    for s in series:
        a, b = s.key.entity_id, s.key.peer_id
        if a in idx and b in idx and np.isfinite(s.values).any():
            z[idx[a], idx[b]] = float(np.nanmax(s.values)) * 1e6
    data = [{"type": "heatmap", "x": order, "y": order, "colorscale": "Reds", "colorbar": {"title": "µs"},
             "z": [[None if np.isnan(v) else round(float(v), 2) for v in row] for row in z]}]
    return _fig("latency", data, {"title": "one-way latency, worst in window (µs), rows = source, sorted by rack",
                                  "height": max(360, 14 * len(order) + 140)})


def _conclusion(diag: Diagnosis, incidents: list[Incident], inv: Inventory) -> str:
    if not incidents:
        return "<p>No incident in this window touches the job.</p>"
    rows = []
    for inc in incidents:
        ev = "".join(f"<li>{html.escape(e)}</li>" for e in inc.evidence[:8])
        acts = ", ".join(f"{a.get('action')} {a.get('target')}" for a in inc.actions)
        rows.append(f"<h3>{inc.id}: {html.escape(inc.category)} at <code>{html.escape(inc.root_id)}</code> "
                    f"(confidence {inc.confidence:.2f})</h3><p>from {to_rfc3339(inc.start)}; "
                    f"{inc.alert_count} alerts compressed into this incident; actions: {html.escape(acts)}</p>"
                    f"<ul>{ev}</ul>")
    jobs = sorted({j for inc in incidents for j in inc.impact.get("jobs", [])})
    slas = sorted({sla for j in jobs if j in inv.jobs and (sla := inv.jobs[j].sla_id)})
    head = "".join(f"<th>{html.escape(s)}</th>" for s in slas)
    body = "".join(
        f"<tr><th>{html.escape(j)}</th>" + "".join(
            f"<td>{'&#9679;' if inv.jobs[j].sla_id == s else ''}</td>" for s in slas) + "</tr>"
        for j in jobs if j in inv.jobs)
    matrix = f"<table class='matrix'><tr><th>job \\ SLA</th>{head}</tr>{body}</table>"
    return "".join(rows) + "<h3>Impact matrix</h3>" + matrix


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.plot{width:100%}code{background:#f3f3f3;padding:0 .2em}table.matrix{border-collapse:collapse}
table.matrix td,table.matrix th{border:1px solid #ccc;padding:.3em .8em;text-align:center}
.kpi{display:inline-block;margin-right:2em}.kpi b{font-size:1.4em;display:block}"""


def write_rca(path: Path, diag: Diagnosis, store: Store, inv: Inventory, job: str,
              sla_id: str | None) -> Path:
    from plotly.offline import get_plotlyjs

    start, end = diag.window
    sla = sla_id or inv.jobs[job].sla_id
    incidents = [i for i in diag.incidents if job in (i.impact.get("jobs") or []) or i.root_id == job]
    suspect = max(incidents, key=lambda i: i.confidence, default=None)
    ledger: dict[str, Any] = next((j for j in diag.efficiency.get("jobs", []) if j.get("id") == job), {})
    kpis = "".join(f"<span class='kpi'>{k}<b>{v}</b></span>" for k, v in (
        ("MFU", f"{100 * ledger['mfu']:.1f}%" if ledger.get("mfu") is not None else "-"),
        ("goodput", f"{100 * ledger['goodput']:.1f}%" if ledger.get("goodput") is not None else "-"),
        ("incidents", str(len(incidents))),
        ("lost GPU-hours", f"{sum(i.impact.get('lost_gpu_hours') or 0 for i in incidents):.1f}")))
    body = (f"<h1>Root-cause report: {html.escape(job)}</h1><p>cluster {html.escape(inv.cluster)}, "
            f"window {to_rfc3339(start)} .. {to_rfc3339(end)}</p>{kpis}"
            f"<h2>1. Business impact</h2>{_business(store, sla, start, end)}"
            f"<h2>2. Framework: where each rank's time went</h2>{_framework(store, job, start, end)}"
            f"<h2>3. Hardware: the suspect's own signals</h2>{_hardware(store, suspect, start, end)}"
            f"{_latency_heatmap(store, inv, start, end)}"
            f"<h2>4. Conclusion</h2>{_conclusion(diag, incidents, inv)}")
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>suanli RCA {html.escape(job)}</title>"
           f"<style>{_CSS}</style><script>{get_plotlyjs()}</script></head><body>{body}</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc, encoding="utf-8")
    return path


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


def html_to_pdf(html_path: Path, pdf_path: Path, timeout_s: float = 120.0) -> Path:
    """Print the report to PDF with headless Chromium (its scripts run first, so the plots are in)."""
    import shutil
    import subprocess
    import tempfile

    from suanli.errors import InputError

    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        raise InputError("PDF output needs Chromium on PATH (Debian package `chromium`); the HTML is written")
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=10000",
                               "--no-pdf-header-footer", f"--print-to-pdf={pdf_path.resolve()}",
                               html_path.resolve().as_uri()], capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0 or not pdf_path.exists():
        raise InputError(f"{pdf_path}: Chromium could not print the report ({proc.stderr.strip()[-200:]})")
    return pdf_path
