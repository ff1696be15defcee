"""The other inputs a person hands suanli, fuzzed: the bounded-number helper against Python's own
integers, Alertmanager payloads (any JSON), OpenMetrics lines with edge numbers, inventory and rule
files built from YAML fragments. Each returns or raises the one-line InputError, nothing else."""

from __future__ import annotations

import json
import math
import re
import tempfile
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from suanli.errors import InputError
from suanli.incidents.signals import alertmanager_signals
from suanli.ingest.bounded import OutOfBounds, bounded_int
from suanli.ingest.openmetrics import parse_openmetrics
from suanli.ingest.records import IngestReport
from suanli.inventory import parse_inventory
from suanli.pipeline.inputs import read_alert_payloads
from suanli.rules.language import parse_rules
from tests.cli.helpers import INVENTORY
from tests.fuzz.conftest import FUZZ, FUZZ_YAML, SEED
from tests.fuzz.strategies import INT64_MAX, digits, float_texts

signs = st.sampled_from(["", "+", "-"])


@SEED
@FUZZ
@given(signs, digits)
def test_bounded_int_is_python_int_within_int64(sign: str, text: str) -> None:
    number = sign + text
    significant = len(text.lstrip("0"))
    fits = significant <= 19 and -(2**63) <= int(number) <= INT64_MAX if significant <= 4300 else False
    if fits:
        assert bounded_int(number) == int(number)
    else:
        with pytest.raises(OutOfBounds, match=re.escape(text.lstrip("0")[:10])):
            bounded_int(number)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=30)
    | st.sampled_from(["2026-03-13T11:06:40Z", "yesterday", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["alerts", "labels", "annotations", "startsAt", "endsAt", "status", "fingerprint",
                         "alertname", "Hostname", "gpu", "x"]), inner, max_size=6),
    max_leaves=25)


@SEED
@FUZZ
@given(st.lists(json_values, min_size=1, max_size=3), st.booleans())
def test_alert_payloads_are_read_or_refused_in_one_line(items: list[Any], lines: bool) -> None:
    inventory = parse_inventory(INVENTORY)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "alerts.json"
        path.write_text("\n".join(json.dumps(i) for i in items) if lines else json.dumps(items))
        try:
            payloads = read_alert_payloads(path)
        except InputError as exc:
            assert str(exc).startswith(str(path)) and "\n" not in str(exc)
            return
    for payload in payloads:
        for sig in alertmanager_signals(payload, inventory):
            assert math.isfinite(sig.start)


metric_lines = st.builds(lambda v, t, g: f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}"}} {v} {t}', float_texts | digits,
                         float_texts | digits, digits)


@SEED
@FUZZ
@given(st.lists(metric_lines, min_size=1, max_size=8))
def test_openmetrics_lines_with_edge_numbers(lines: list[str]) -> None:
    report = IngestReport()
    batches = list(parse_openmetrics([*lines, "# EOF"], source="m.om", report=report))
    for reason in report.reasons:
        m = re.match(r"m\.om:(\d+): ", reason)
        assert m and 1 <= int(m.group(1)) <= len(lines), reason
    kept = sum(len(ts) for _, ts, _ in batches)
    assert kept + report.rejected == len(lines)
    for _, ts, _ in batches:
        assert all(946_684_800.0 <= t <= 4_102_444_800.0 for t in ts)


yaml_scalars = st.one_of(digits, float_texts, st.sampled_from(["~", ".nan", ".inf", "[]", "{}", "'x'", "node-001",
                                                                  "- a", "&a x", "*a", "!!binary AAA", "? x"]))


def _mutate(text: str, at: int, value: str) -> str:
    """``text`` with the value of its ``at``-th ``key: value`` line replaced."""
    lines = text.splitlines()
    spots = [i for i, ln in enumerate(lines) if re.search(r":\s*\S", ln)]
    i = spots[at % len(spots)]
    key = lines[i].split(":", 1)[0]
    lines[i] = f"{key}: {value}"
    return "\n".join(lines) + "\n"


@SEED
@FUZZ_YAML
@given(st.integers(min_value=0, max_value=200), yaml_scalars)
def test_inventory_files_parse_or_refuse_in_one_line(at: int, value: str) -> None:
    try:
        parse_inventory(_mutate(INVENTORY, at, value), source="inv.yaml")
    except InputError as exc:
        assert str(exc).startswith("inv.yaml") and "\n" not in str(exc)


RULES = (files("suanli.rules") / "default_rules.yaml").read_text()
"""The shipped pack: every section (rules, inhibitions, actions, executors) is reached."""


@SEED
@FUZZ_YAML
@given(st.integers(min_value=0, max_value=400), yaml_scalars)
def test_rule_files_parse_or_refuse_in_one_line(at: int, value: str) -> None:
    try:
        parse_rules(_mutate(RULES, at, value), source="rules.yaml")
    except InputError as exc:
        assert str(exc).startswith("rules.yaml") and "\n" not in str(exc)
