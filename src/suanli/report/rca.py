"""The root-cause report: one self-contained HTML file walking the seed's four steps.

1. business impact: the SLA's own metric (``suanli_sla_latency_seconds``) over the window;
2. framework: each rank's step phases over time (where the time went, rank by rank);
3. hardware: the suspect's own signals, and the fabric's latency heatmap (latency / baseline,
   the same figure as ``suanli diagnose --heatmap``);
4. conclusion: the incidents with their evidence and an impact matrix (jobs x SLAs).

It renders :class:`suanli.pipeline.rca.RcaData` and reads nothing else. Plotly.js is inlined from
the ``plotly`` package (no CDN: clusters are often air-gapped).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from suanli.pipeline.rca import SLA_METRIC, Line, RcaData
from suanli.report.chromium import render_with_chromium
from suanli.report.heatmap import figure, has_probes
from suanli.report.plotly_bundle import plotly_js
from suanli.report.rca_axes import (
    axis_of,
    band_shape,
    fault_marks,
    is_all_zero,
    steady_range,
    time_axis,
    y_axis,
)
from suanli.timefmt import to_rfc3339

__all__ = ["content_security_policy", "html_to_pdf", "plot_text", "render_rca", "script_json", "write_rca"]


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


def script_json(value: Any) -> str:
    """JSON that cannot end the ``<script>`` it sits in: ``<``, ``>``, ``&`` and the JavaScript line
    separators are written as ``\\u`` escapes (the same value to the parser)."""
    text = json.dumps(value)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def plot_text(value: Any) -> Any:
    """Every string of a figure with ``&``, ``<``, ``>`` as entities: Plotly.js renders names, titles
    and hover text as a subset of HTML (``<a href>`` among it), and shows entities as the characters."""
    if isinstance(value, str):
        return html.escape(value, quote=False)
    if isinstance(value, dict):
        return {k: plot_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plot_text(v) for v in value]
    return value


def _fig(div: str, data: list[dict[str, Any]], layout: dict[str, Any]) -> str:
    layout = _titled({"margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "height": 360, **layout})
    return (f'<div id="{div}" class="plot"></div><script>Plotly.newPlot("{div}", '
            f'{script_json(plot_text(data))}, {script_json(plot_text(layout))}, '
            '{"displaylogo": false, "responsive": true});</script>')


def _points(v: np.ndarray) -> list[float | None]:
    return [None if not np.isfinite(x) else float(x) for x in v]


def _lines(lines: tuple[Line, ...], zero_nan: bool = False) -> list[dict[str, Any]]:
    return [{"type": "scatter", "mode": "lines", "name": ln.name, "x": _iso(ln.ts),
             "y": np.nan_to_num(ln.values, nan=0.0).tolist() if zero_nan else _points(ln.values)} for ln in lines]


def _marks(d: RcaData) -> dict[str, Any]:
    inc = d.suspect
    return fault_marks(inc.start if inc else None, inc.detected_at if inc else None)


_LEGEND = {"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0}
"""Legends under the plot, so every time plot has the same width and their clocks line up."""


def _time_fig(div: str, data: list[dict[str, Any]], layout: dict[str, Any], d: RcaData) -> str:
    """A plot over time: x in UTC, the fault's start and detection marked, any extra shapes kept."""
    marks = _marks(d)
    start, end = d.window
    return _fig(div, data, {**layout, "xaxis": time_axis((start, end)), "legend": _LEGEND,
                            "shapes": layout.get("shapes", []) + marks["shapes"],
                            "annotations": layout.get("annotations", []) + marks["annotations"]})


def _business(d: RcaData) -> str:
    if not d.sla_id:
        return "<p>The job declares no SLA.</p>"
    if not d.sla_lines:
        return f"<p>No samples of <code>suanli_sla_latency_seconds{{sla_id=\"{html.escape(d.sla_id)}\"}}</code>.</p>"
    data = _lines(d.sla_lines, zero_nan=True)
    shapes = []
    if d.sla_threshold_s is not None:
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": d.sla_threshold_s,
                       "y1": d.sla_threshold_s, "line": {"color": "#7f8c8d", "dash": "dot"}})
        data.append({"type": "scatter", "mode": "lines", "name": f"SLA threshold {d.sla_threshold_s:g} s",
                     "x": data[0]["x"][:1] + data[0]["x"][-1:], "y": [d.sla_threshold_s] * 2,
                     "line": {"color": "#7f8c8d", "dash": "dot"}})
    return _time_fig("business", data, {"title": f"SLA {d.sla_id}: request latency",
                                        "yaxis": y_axis(axis_of(SLA_METRIC, False)), "shapes": shapes}, d)


def _framework(d: RcaData) -> str:
    p = d.phases
    if p is None:
        return f"<p>{html.escape(d.phases_note)}</p>"
    when, steps = _iso(p.step_start_s), p.steps.tolist()
    hover = "step %{customdata}<br>%{x}<br>%{y:.3f} s<extra>%{fullData.name}</extra>"
    traces = [{"type": "bar", "name": phase, "x": when, "y": med, "customdata": steps, "hovertemplate": hover}
              for phase, med in p.phase_median_s.items()]
    stacked = _time_fig("phases", traces, {"barmode": "stack", "title": "median phase time per step (bars at "
                                           "each step's start)", "yaxis": {"title": "phase time (s)"}}, d)
    heat = _time_fig("ranks", [{"type": "heatmap", "x": when, "y": [f"rank{int(r)}" for r in p.ranks],
                                "z": [[None if np.isnan(v) else round(float(v), 4) for v in row]
                                      for row in p.rank_step_s],
                                "customdata": [steps] * len(p.ranks), "colorscale": "Viridis",
                                "hovertemplate": "%{y} step %{customdata}<br>%{x}<br>%{z:.3f} s<extra></extra>",
                                "colorbar": {"title": {"text": "step time (s)", "side": "right"}, "orientation": "h",
                                             "y": -0.35, "yanchor": "top", "thickness": 12}}],
                     {"title": "step time per rank", "height": max(320, 12 * len(p.ranks) + 160)}, d)
    return stacked + heat


def _hardware(d: RcaData) -> str:
    inc = d.suspect
    if inc is None:
        return "<p>No incident touches this job in the window: no suspect to show.</p>"
    parts = []
    for i, panel in enumerate(d.hardware):
        ax = axis_of(panel.metric, panel.per_second)
        who = html.escape(panel.entity or inc.root_id)
        if is_all_zero([ln.values for ln in panel.lines]):
            parts.append(f"<p class='zero'>{who}: {html.escape(ax.title)}: 0 in window</p>")
            continue
        lines = tuple(Line(ln.name, ln.ts, ln.values * ax.scale) for ln in panel.lines)
        data = _lines(lines)
        yaxis = y_axis(ax)
        shapes, notes = [], []
        if ax.log:      # a log axis cannot show 0: a clean link's samples are gaps, not -inf
            for tr in data:
                tr["y"] = [y if y is not None and y > 0 else None for y in tr["y"]]
        else:
            band = (panel.band[0] * ax.scale, panel.band[1] * ax.scale) if panel.band else None
            yaxis["range"] = steady_range([ln.values for ln in lines], band, panel.per_second)
        if panel.band is not None and not (ax.log and panel.band[0] <= 0):
            shapes.append(band_shape(panel.band, ax.scale))
            top = panel.band[1] * ax.scale     # Plotly places annotations on a log axis by exponent
            notes.append({"xref": "paper", "x": 1, "xanchor": "right", "yref": "y",
                          "y": float(np.log10(top)) if ax.log else top,
                          "yanchor": "bottom", "text": "normal band (before the fault, 5th-95th pct)"
                          if panel.band[1] > panel.band[0] else f"normal: {panel.band[0] * ax.scale:g} before the fault",
                          "showarrow": False, "font": {"color": "#27ae60", "size": 10}})
        parts.append(_time_fig(f"hw{i}", data, {"title": f"{panel.entity or inc.root_id}: {ax.title}",
                                                "height": 300, "yaxis": yaxis, "shapes": shapes,
                                                "annotations": notes}, d))
    return "".join(parts) or f"<p>No metric series of {html.escape(inc.root_id)} in the window.</p>"


def _latency_heatmap(d: RcaData) -> str:
    if d.heatmap is None or not has_probes(d.heatmap):
        return "<p>No latency probes (suanli_link_latency_seconds).</p>"
    data, layout = figure(d.heatmap)
    n = len(d.heatmap.nodes)
    sized = {k: v for k, v in layout.items() if k != "width"}
    return _fig("latency", data, {**sized, "height": max(360, 14 * n + 140)})


def _conclusion(d: RcaData) -> str:
    if not d.incidents:
        return "<p>No incident in this window touches the job.</p>"
    rows = []
    for inc in d.incidents:
        ev = "".join(f"<li>{html.escape(e)}</li>" for e in inc.evidence[:8])
        acts = ", ".join(f"{a.action} {a.target}" for a in inc.actions)
        rows.append(f"<h3>{html.escape(inc.id)}: {html.escape(inc.category)} at <code>{html.escape(inc.root_id)}</code> "
                    f"(confidence {inc.confidence:.2f})</h3><p>from {to_rfc3339(inc.start)}; "
                    f"{inc.alert_count} alerts compressed into this incident; actions: {html.escape(acts)}</p>"
                    f"<ul>{ev}</ul>")
    slas = sorted({s for s in d.sla_of.values() if s})
    head = "".join(f"<th>{html.escape(s)}</th>" for s in slas)
    body = "".join(
        f"<tr><th>{html.escape(j)}</th>" + "".join(
            f"<td>{'&#9679;' if sla == s else ''}</td>" for s in slas) + "</tr>"
        for j, sla in d.sla_of.items())
    matrix = f"<table class='matrix'><tr><th>job \\ SLA</th>{head}</tr>{body}</table>"
    return "".join(rows) + "<h3>Impact matrix</h3>" + matrix


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.plot{width:100%}code{background:#f3f3f3;padding:0 .2em}table.matrix{border-collapse:collapse}
table.matrix td,table.matrix th{border:1px solid #ccc;padding:.3em .8em;text-align:center}
.kpi{display:inline-block;margin-right:2em}.kpi b{font-size:1.4em;display:block}"""


def _kpis(d: RcaData) -> str:
    led = d.ledger
    mfu = f"{100 * led.mfu:.1f}%" if led is not None and led.mfu is not None and np.isfinite(led.mfu) else "-"
    good = f"{100 * led.goodput:.1f}%" if led is not None and np.isfinite(led.goodput) else "-"
    lost = sum(i.impact.lost_gpu_hours or 0 for i in d.incidents)
    return "".join(f"<span class='kpi'>{k}<b>{v}</b></span>" for k, v in (
        ("MFU", mfu), ("goodput", good), ("incidents", str(len(d.incidents))), ("lost GPU-hours", f"{lost:.1f}")))


_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def content_security_policy(page: str) -> str:
    """The page's policy: nothing loads from anywhere, and only its own inline scripts run (each by
    its SHA-256), so a script a value smuggled in would not run even if escaping missed it."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(m.encode()).digest()).decode()}'"
                      for m in _SCRIPT.findall(page))
    return (f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data: blob:; "
            "font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'")


def render_rca(d: RcaData) -> str:
    """The report as one HTML document (the cartesian plotly.js bundle inlined). Every value from telemetry is escaped
    (HTML text, inline JSON, Plotly's HTML-like labels) and a Content-Security-Policy lets only the
    report's own scripts run."""
    start, end = d.window
    body = (f"<h1>Root-cause report: {html.escape(d.job)}</h1><p>cluster {html.escape(d.cluster)}, "
            f"window {to_rfc3339(start)} .. {to_rfc3339(end)}</p>{_kpis(d)}"
            f"<h2>1. Business impact</h2>{_business(d)}"
            f"<h2>2. Framework: where each rank's time went</h2>{_framework(d)}"
            f"<h2>3. Hardware: the suspect's own signals</h2>{_hardware(d)}{_latency_heatmap(d)}"
            f"<h2>4. Conclusion</h2>{_conclusion(d)}")
    scripts = f"<script>{plotly_js()}</script>"
    csp = html.escape(content_security_policy(scripts + body))
    return (f"<!doctype html><html><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">"
            f"<title>suanli RCA {html.escape(d.job)}</title>"
            f"<style>{_CSS}</style>{scripts}</head><body>{body}</body></html>")


def write_rca(path: Path, data: RcaData) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_rca(data), encoding="utf-8")
    return path


def html_to_pdf(html_path: Path, pdf_path: Path, timeout_s: float = 120.0) -> Path:
    """Print the report to PDF with sandboxed headless Chromium (its scripts run first, so the
    plots are in); where the sandbox cannot start (no user namespaces) this is an InputError."""
    return render_with_chromium(html_path, pdf_path, "print the report",
                                ("--no-pdf-header-footer", "--print-to-pdf={out}"), timeout_s)
