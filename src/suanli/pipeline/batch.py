"""The pipeline over one window (what ``suanli diagnose`` does): every stage once, in order."""

from __future__ import annotations

from collections.abc import Sequence

from suanli.analysis.decisions import Decided
from suanli.analysis.window import Window, resolve_window
from suanli.config import Config
from suanli.incidents.reach import Reach
from suanli.inventory import Inventory
from suanli.pipeline import stages
from suanli.pipeline.deliveries import deliveries
from suanli.pipeline.inputs import Inputs
from suanli.pipeline.model import Diagnosis, RuleAlerts
from suanli.rules import ActionRunner, EntityIndex, Evaluator, load_rules
from suanli.store.api import Store

__all__ = ["diagnose"]


def diagnose(store: Store, inventory: Inventory, window: Window | None = None, config: Config | None = None,
             inputs: Inputs | None = None, missing: Sequence[str] = ()) -> Diagnosis:
    """analyses -> rule alerts -> inhibition -> correlation -> impact -> costs -> actions over ``window``
    (None: the data's extent). ``inputs`` default to the shipped rule pack and no webhooks."""
    cfg = config if config is not None else Config()
    inp = inputs if inputs is not None else Inputs(load_rules(None))
    win = resolve_window(store, window) or Window(0.0, 0.0)
    extent = store.time_range()
    has_data = extent is not None and win.overlaps(*extent)
    results = stages.analyses(store, inventory, win, cfg)
    index, reach = EntityIndex.from_inventory(inventory), Reach(inventory)
    alerts = RuleAlerts()
    if inp.ruleset is not None:
        alerts = stages.rule_alerts(Evaluator(inp.ruleset, index, cfg.rules), store, win, results.values())
    sigs = stages.signals(results, alerts, inp.alert_payloads, inventory, index)
    sigs = stages.inhibition(sigs, inp.ruleset, reach)
    found = stages.correlation(sigs, reach, cfg.correlation)
    stages.impact(found.incidents, store, inventory, win.end, cfg.impact)
    stages.actions(found.incidents, stages.planned_actions(alerts.alerts, sigs))
    runner = ActionRunner.from_ruleset(inp.ruleset, index, dry_run=True) if inp.ruleset is not None else None

    def act(decided: dict[str, Decided]) -> None:
        """The dry run of the planned actions, as the costs say to carry them out."""
        if runner is not None:
            how = deliveries(found.incidents, decided)
            stages.actions(found.incidents, stages.action_decisions(runner, alerts.alerts, sigs, how))

    errors = [*results.errors, *([alerts.error] if alerts.error else [])]
    timings = {**results.timings_s, **({"rules": alerts.seconds} if inp.ruleset is not None else {})}
    decided = stages.decide_and_record(found.incidents, store, inventory, win.end, cfg.decisions, errors, timings,
                                       act)
    return Diagnosis(inventory.cluster, win, list(missing), found.incidents, found.unexplained, results,
                     errors, timings, has_data, decided, inventory.currency)
