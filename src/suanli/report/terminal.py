"""The readable diagnosis in a terminal: incidents, predictions, the efficiency ledger."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from suanli.analysis.decisions import Decided, savings
from suanli.analysis.decisions.text import duration, money
from suanli.analysis.health import GpuHealth, HealthResult
from suanli.analysis.ledger import JobLedger
from suanli.pipeline import Diagnosis
from suanli.timefmt import to_rfc3339

__all__ = ["incidents_table", "ledger_table", "predictions_table", "print_diagnosis"]


def _pct(x: float | None) -> str:
    return "-" if x is None or x != x else f"{100 * float(x):.1f}%"


def _money(x: float | None) -> str:
    if x is None or x != x:
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
                      ", ".join(imp.jobs) or "-",
                      "-" if imp.lost_gpu_hours is None else f"{imp.lost_gpu_hours:.1f}")
    return table


def _ledger_row(job: JobLedger) -> tuple[str, ...]:
    split = job.time_split()
    fc = job.forecast
    return (job.job_id, _pct(job.mfu), _pct(job.goodput),
            *(_pct(split.get(k)) for k in ("compute", "communication", "data_loading", "checkpoint",
                                            "failures", "other")),
            _money(job.cost_per_effective_pflop()), (to_rfc3339(fc.finish_s[1]) if fc is not None else None) or "-")


def ledger_table(diag: Diagnosis) -> Table:
    table = Table("job", "MFU", "goodput", "compute", "comm.", "data", "ckpt", "failures", "other",
                  "$/eff. PFLOP", "finish", title="efficiency ledger")
    for job in diag.results.ledger.jobs if diag.results.ledger is not None else []:
        table.add_row(*_ledger_row(job))
    return table


def _needs_attention(h: GpuHealth) -> bool:
    return h.recommendation != "ok" or h.override is not None


def predictions_table(health: HealthResult, limit: int = 10) -> Table:
    """The GPUs whose forecast asks for something (watch, retire, overridden), riskiest first."""
    risky = [h for h in health.gpus.values() if _needs_attention(h)]
    rows = sorted(risky, key=lambda h: (-h.p_dbe, h.gpu_id))[:limit]
    horizon = int(health.horizon_days) if float(health.horizon_days).is_integer() else health.horizon_days
    table = Table("gpu", "event", "P(within horizon)", "health", "recommendation",
                  title=f"failure forecasts: {len(risky)} of {len(health.gpus)} GPUs need attention")
    for h in rows:
        table.add_row(h.gpu_id, f"dbe / {horizon} d", _pct(h.p_dbe), f"{h.health_score:.2f}", h.recommendation)
    return table


def _print_incidents(out: Console, diag: Diagnosis) -> None:
    out.print(incidents_table(diag))
    for inc in diag.incidents:
        out.print(f"[bold]{inc.id}[/bold] {inc.category} at {inc.root_id}:")
        for line in inc.evidence[:5]:
            out.print(f"    {line}", markup=False, highlight=False)
        decided = diag.decided.get(inc.id)
        lines = _decision_lines(decided) if decided is not None else \
            [f"action: {a.action} {a.target} ({a.status})" for a in inc.actions[:4]]
        for line in lines:
            out.print(f"    {line}", markup=False, highlight=False)
    total = sum(i.alert_count for i in diag.incidents)
    out.print(f"alert compression: {total} alerts -> {len(diag.incidents)} incident(s)")
    s = savings((d.decision for d in diag.decided.values()), diag.currency)
    if s.incidents:
        out.print(f"economics: the chosen actions save {money(s.total_saving, s.currency)} against doing nothing "
                  f"over {duration(s.horizon_s)} ({money(s.total_stay, s.currency)} -> "
                  f"{money(s.total_chosen, s.currency)}, {len(s.incidents)} incident(s))", markup=False, highlight=False)


_SHOWN = ("stay degraded:", "escalation:", "chosen:")


def _decision_lines(d: Decided) -> list[str]:
    """The decision's evidence a reader acts on: staying, the first ranked actions, the choice."""
    ranked = [x for x in d.decision.evidence if x[:1].isdigit() and ". " in x[:5]][:4]
    keep = [x for x in d.decision.evidence if x.startswith(_SHOWN)]
    out = keep[:1] + ranked + keep[1:]
    return out + ([f"superseded by {d.superseded_by} (another incident's remediation)"] if d.superseded_by else [])


def print_diagnosis(out: Console, diag: Diagnosis) -> None:
    out.print(f"cluster {diag.cluster}, window {to_rfc3339(diag.window[0])} .. {to_rfc3339(diag.window[1])}")
    if diag.missing:
        out.print(f"missing inputs: {', '.join(diag.missing)}")
    if diag.incidents:
        _print_incidents(out, diag)
    else:
        out.print("no incidents: nothing is broken in this window")
    health = diag.results.health
    if health is not None and any(_needs_attention(h) for h in health.gpus.values()):
        out.print(predictions_table(health))
    elif health is not None and health.gpus:
        out.print(f"failure forecasts: all {len(health.gpus)} GPUs ok (no DBE risk worth acting on)")
    out.print(ledger_table(diag))
    for e in diag.analysis_errors:
        out.print(f"[red]analysis error[/red] {e}", highlight=False)
