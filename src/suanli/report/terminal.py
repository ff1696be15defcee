"""The readable diagnosis in a terminal: incidents (evidence first), the alerts no incident
explains, predictions, the efficiency ledger.

Every string that came from telemetry or the inventory (host names, labels, log text) is printed
as plain :class:`rich.text.Text`: never read as Rich markup or ``:emoji:`` codes. When the
ledger table would not fit the terminal uncut it is stacked (one block per job), so no cell is cut
at 80 columns.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table
from rich.text import Text

from suanli.analysis.decisions import Decided, savings
from suanli.analysis.decisions.text import duration, money
from suanli.analysis.health import GpuHealth, HealthResult
from suanli.analysis.ledger import JobLedger
from suanli.incidents.model import Incident, Signal
from suanli.pipeline import Diagnosis
from suanli.timefmt import to_rfc3339

__all__ = ["cost_per_eflop", "ledger_table", "predictions_table", "print_diagnosis"]

UNEXPLAINED_SHOWN = 8
"""Groups of unexplained alerts listed (all are counted)."""
SPLIT_KEYS = (("compute", "compute"), ("communication", "comm."), ("data_loading", "data"),
              ("checkpoint", "ckpt"), ("failures", "failures"), ("other", "other"))


def _pct(x: float | None) -> str:
    return "-" if x is None or x != x else f"{100 * float(x):.1f}%"


def cost_per_eflop(per_pflop: float | None) -> str:
    """Dollars per effective EFLOP (1,000 PFLOP): ``$2.87`` reads at a glance where
    ``0.002869 $/PFLOP`` does not. The JSON keeps the spec's ``cost_per_effective_pflop``."""
    if per_pflop is None or per_pflop != per_pflop:
        return "-"
    v = 1000.0 * float(per_pflop)
    return f"${v:,.2f}" if v >= 0.01 else f"${v:.2g}"


def _t(text: str, style: str = "") -> Text:
    return Text(text, style=style)


def _incident_block(out: Console, inc: Incident, decided: Decided | None = None) -> None:
    head = Text.assemble((inc.id, "bold"), "  ", (inc.category, "bold"), f"  confidence {inc.confidence:.2f}")
    out.print(head)
    imp = inc.impact
    lost = "" if imp.lost_gpu_hours is None else f" ({imp.lost_gpu_hours:.1f} GPU-h lost)"
    rows = [("root cause", f"{inc.root_kind} {inc.root_id}"),
            ("since", to_rfc3339(inc.start) or "-"),
            ("alerts", f"{inc.alert_count} ({max(inc.alert_count - 1, 0)} folded in, {inc.muted} muted)"),
            ("jobs", (", ".join(imp.jobs) or "-") + lost)]
    for line in inc.evidence[:5]:
        out.print(_t(f"    {line}"))
    if len(inc.evidence) > 5:
        out.print(_t(f"    (+{len(inc.evidence) - 5} more in --json)"))
    for key, value in rows:
        out.print(_t(f"  {key:<11} {value}"))
    if decided is not None:
        for line in _decision_lines(decided):
            out.print(_t(f"    {line}"))
        return
    for act in inc.actions[:4]:
        out.print(_t(f"  {'action':<11} {act.action} {act.target} ({act.status})"))


_SHOWN = ("stay degraded:", "escalation:", "chosen:")


def _decision_lines(d: Decided) -> list[str]:
    """The decision's evidence a reader acts on: staying, the first ranked actions, the choice."""
    ranked = [x for x in d.decision.evidence if x[:1].isdigit() and ". " in x[:5]][:4]
    keep = [x for x in d.decision.evidence if x.startswith(_SHOWN)]
    out = keep[:1] + ranked + keep[1:]
    return out + ([f"superseded by {d.superseded_by} (another incident's remediation)"] if d.superseded_by else [])


def _economics(out: Console, diag: Diagnosis) -> None:
    s = savings((d.decision for d in diag.decided.values()), diag.currency)
    if s.incidents:
        out.print(_t(f"economics: {money(s.total_saving, s.currency)} saved over {duration(s.horizon_s)} "
                     f"({money(s.total_stay, s.currency)} staying -> {money(s.total_chosen, s.currency)} chosen)"))


def _alerts_summary(out: Console, diag: Diagnosis) -> None:
    folded = sum(i.alert_count for i in diag.incidents)
    loose = diag.unexplained
    if folded + len(loose) == 0:
        out.print(_t("alerts: none fired"))
        return
    out.print(_t(f"alerts: {folded + len(loose)} in all; {folded} folded into {len(diag.incidents)} "
                 f"incident(s), {len(loose)} that no incident explains"))
    groups = Counter((s.name, s.entity_kind) for s in loose)
    first: dict[tuple[str, str], Signal] = {}
    for s in loose:
        first.setdefault((s.name, s.entity_kind), s)
    for (name, kind), n in groups.most_common(UNEXPLAINED_SHOWN):
        s = first[(name, kind)]
        where = s.entity_id if n == 1 else f"{n} {kind}s, first {s.entity_id}"
        out.print(_t(f"    unexplained: {name} on {where} since {to_rfc3339(s.start) or '-'}"))
    if len(groups) > UNEXPLAINED_SHOWN:
        out.print(_t(f"    (+{len(groups) - UNEXPLAINED_SHOWN} more kinds in --json alerts.unexplained)"))


def _ledger_cells(job: JobLedger) -> list[str]:
    split = job.time_split()
    fc = job.forecast
    return [job.job_id, _pct(job.mfu), _pct(job.goodput), *(_pct(split.get(k)) for k, _ in SPLIT_KEYS),
            cost_per_eflop(job.cost_per_effective_pflop()),
            ((to_rfc3339(fc.finish_s[1]) or "-")[:10] if fc is not None else "-")]   # the day is enough


def ledger_table(diag: Diagnosis) -> Table:
    table = Table("job", "MFU", "goodput", *(h for _, h in SPLIT_KEYS), "$/eff. EFLOP", "finish (median)",
                  title="efficiency ledger")
    for job in _jobs(diag):
        table.add_row(*(_t(c) for c in _ledger_cells(job)))
    return table


def _jobs(diag: Diagnosis) -> list[JobLedger]:
    return diag.results.ledger.jobs if diag.results.ledger is not None else []


def _ledger_stacked(out: Console, diag: Diagnosis) -> None:
    out.print(_t("efficiency ledger", "italic"))
    for job in _jobs(diag):
        c = _ledger_cells(job)
        out.print(Text.assemble((c[0], "bold")))
        out.print(_t(f"  MFU {c[1]}  goodput {c[2]}  $/eff. EFLOP {c[9]}  finish (median) {c[10]}"))
        out.print(_t("  " + "  ".join(f"{h} {v}" for (_, h), v in zip(SPLIT_KEYS, c[3:9], strict=True))))


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
        ov = h.override
        rec = h.recommendation if ov is None else f"{h.recommendation} (override: {ov.state} by {ov.who})"
        table.add_row(_t(h.gpu_id), f"dbe / {horizon} d", _pct(h.p_dbe), f"{h.health_score:.2f}", _t(rec))
    return table


def print_diagnosis(out: Console, diag: Diagnosis) -> None:
    out.print(_t(f"cluster {diag.cluster}, window {to_rfc3339(diag.window[0])} .. {to_rfc3339(diag.window[1])}"))
    if diag.missing:
        out.print(_t(f"missing inputs: {', '.join(diag.missing)}"))
    if not diag.has_data:
        out.print(_t("no data in this window: nothing to judge (see `suanli check` for the data's extent)"))
    elif diag.incidents:
        out.print(_t(f"incidents ({len(diag.incidents)})", "italic"))
        for inc in diag.incidents:
            _incident_block(out, inc, diag.decided.get(inc.id))
        _economics(out, diag)
    else:
        out.print(_t("no incidents: nothing is broken in this window"))
    if diag.has_data:
        _alerts_summary(out, diag)
    health = diag.results.health
    if health is not None and any(_needs_attention(h) for h in health.gpus.values()):
        out.print(predictions_table(health))
    elif health is not None and health.gpus and diag.has_data:
        out.print(_t(f"failure forecasts: all {len(health.gpus)} GPUs ok (no DBE risk worth acting on)"))
    if _jobs(diag):
        table = ledger_table(diag)
        if out.measure(table, options=out.options.update_width(10_000)).maximum <= out.width:
            out.print(table)
        else:
            _ledger_stacked(out, diag)
    elif diag.has_data:
        out.print(_t("efficiency ledger: no training spans in this window"))
    for e in diag.analysis_errors:
        out.print(Text.assemble(("analysis error ", "red"), e))
