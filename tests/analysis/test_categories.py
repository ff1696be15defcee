"""The category table against spec/diagnosis.md's taxonomy, and the one order health and
correlation both follow."""

from __future__ import annotations

import pytest

from suanli.analysis.categories import CATEGORIES, CATEGORY_ORDER, POLICIES, policy, priority
from suanli.analysis.findings import CATEGORIES as FINDING_CATEGORIES
from suanli.analysis.findings import Finding
from suanli.incidents.correlate import correlate
from suanli.incidents.signals import finding_signals
from suanli.inventory import Inventory, load_inventory
from tests.cli.shape import TAXONOMY
from tests.conftest import shared_path

T0 = 1_773_106_800.0


def test_every_category_of_the_spec_and_its_root_kinds() -> None:
    assert set(CATEGORIES) == set(TAXONOMY) == set(POLICIES) == set(CATEGORY_ORDER)
    assert FINDING_CATEGORIES == CATEGORIES
    for name, kinds in TAXONOMY.items():
        assert set(policy(name).root_kinds) == kinds, name


def test_the_cause_ranks_before_its_consequences() -> None:
    # a bad riser heats its GPU and can drop it off the bus; heat throttles NVLink; all slow a rank
    assert priority("pcie_riser") > priority("gpu_lost") > priority("gpu_thermal")
    assert priority("gpu_thermal") > priority("nvlink_degradation") > priority("gpu_straggler")
    assert priority("gpu_memory_failure") > priority("gpu_memory_degradation")
    assert priority("no_such_category") == 0 and policy("no_such_category").default_actions == ("notify",)


def test_confidences_are_probabilities_and_strong_is_not_below_weak() -> None:
    for p in POLICIES.values():
        assert 0.0 < p.confidence.weak <= p.confidence.strong <= p.confidence.cap <= 1.0, p.name


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


def test_correlation_names_a_gpu_by_the_same_order_as_health(inv: Inventory) -> None:
    # two analyses' findings on one GPU: correlation keeps the category health would have kept
    gpu = inv.jobs["llama-34b-continual"].ranks[0].gpu
    sigs = finding_signals([Finding("gpu_lost", "gpu", gpu, T0, None, 0.95, (), "a"),
                            Finding("pcie_riser", "gpu", gpu, T0 + 10, None, 0.75, (), "b")])
    incidents, _ = correlate(sigs, inv)
    assert [(i.category, i.root_id) for i in incidents] == [("pcie_riser", gpu)]
