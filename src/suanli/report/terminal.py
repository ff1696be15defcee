"""The readable diagnosis in a terminal: incidents, predictions, the efficiency ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from suanli.timefmt import to_rfc3339

if TYPE_CHECKING:
    from suanli.incidents.diagnose import Diagnosis

__all__ = ["print_diagnosis"]


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * float(x):.1f}%"


def _money(x: Any) -> str:
    if x is None:
        return "-"
    v = float(x)
    return f"{v:,.2f}" if abs(v) >= 1 else f"{v:.4g}"


def incidents_table(diag: Diagnosis) -> Table:
    table = Table("id", "category", "root cause", "conf.", "start", "alerts", "jobs", "lost GPU-h",
                  title=f"incidents ({len(diag.incidents)})")
    for inc in diag.incidents:
        imp = inc.impact
        table.add_row(inc.id, inc.category, f"{inc.root_kind} {inc.root_id}", f"{inc.confidence:.2f}",
                      to_rfc3339(inc.start) or "-", f"{inc.alert_count} ({max(inc.alert_count - 1, 0)} suppr.)",
                      ", ".join(imp.get("jobs") or []) or "-",
                      "-" if imp.get("lost_gpu_hours") is None else f"{imp['lost_gpu_hours']:.1f}")
    return table


def ledger_table(diag: Diagnosis) -> Table:
    table = Table("job", "MFU", "goodput", "compute", "comm.", "data", "ckpt", "failures", "other",
                  "$/eff. PFLOP", "finish", title="efficiency ledger")
    for job in diag.efficiency.get("jobs", []):
        split = job.get("time_split", {})
        fc = job.get("forecast") or {}
        table.add_row(str(job.get("id")), _pct(job.get("mfu")), _pct(job.get("goodput")),
                      _pct(split.get("compute")), _pct(split.get("communication")),
                      _pct(split.get("data_loading")), _pct(split.get("checkpoint")),
                      _pct(split.get("failures")), _pct(split.get("other")),
                      _money(job.get("cost_per_effective_pflop")), str(fc.get("finish") or "-"))
    return table


def predictions_table(diag: Diagnosis, limit: int = 10) -> Table:
    """The GPUs whose forecast asks for something (watch, retire, overridden), riskiest first."""
    risky = [p for p in diag.predictions if p.get("recommendation") != "ok" or p.get("override")]
    rows = sorted(risky, key=lambda p: -float(p.get("probability") or 0.0))[:limit]
    table = Table("gpu", "event", "P(within horizon)", "health", "recommendation",
                  title=f"failure forecasts: {len(risky)} of {len(diag.predictions)} GPUs need attention")
    for p in rows:
        table.add_row(str(p.get("id")), f"{p.get('event')} / {p.get('horizon_days')} d",
                      _pct(p.get("probability")), f"{float(p.get('health_score') or 0):.2f}",
                      str(p.get("recommendation")))
    return table


def print_diagnosis(out: Console, diag: Diagnosis) -> None:
    out.print(f"cluster {diag.cluster}, window {to_rfc3339(diag.window[0])} .. {to_rfc3339(diag.window[1])}")
    if diag.missing:
        out.print(f"missing inputs: {', '.join(diag.missing)}")
    if diag.incidents:
        out.print(incidents_table(diag))
        for inc in diag.incidents:
            out.print(f"[bold]{inc.id}[/bold] {inc.category} at {inc.root_id}:")
            for line in inc.evidence[:5]:
                out.print(f"    {line}", markup=False, highlight=False)
            for act in inc.actions[:4]:
                out.print(f"    action: {act.get('action')} {act.get('target')} ({act.get('status')})",
                          markup=False, highlight=False)
    else:
        out.print("no incidents: nothing is broken in this window")
    total = sum(i.alert_count for i in diag.incidents)
    if diag.incidents:
        out.print(f"alert compression: {total} alerts -> {len(diag.incidents)} incident(s)")
    if any(p.get("recommendation") != "ok" or p.get("override") for p in diag.predictions):
        out.print(predictions_table(diag))
    elif diag.predictions:
        out.print(f"failure forecasts: all {len(diag.predictions)} GPUs ok (no DBE risk worth acting on)")
    out.print(ledger_table(diag))
    for e in diag.analysis_errors:
        out.print(f"[red]analysis error[/red] {e}", highlight=False)
