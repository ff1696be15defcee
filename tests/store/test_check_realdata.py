"""``suanli check`` on node-exporter's own test fixture (prometheus/node_exporter, see
../shared/realdata/third-party/SOURCE.md): the saturated 32-bit counter in it, and its NUMA
``node`` labels, which are no host names."""

from __future__ import annotations

from suanli.ingest.load import load_paths
from suanli.inventory import parse_inventory
from suanli.store.check import check
from suanli.store.duck import DuckStore
from tests.conftest import shared_path

_INV = "cluster: t\nracks:\n  - id: r1\n    nodes: [{id: node-001}]\n"


def test_counter_stuck_at_2_pow_32_minus_1_is_flagged_and_numa_nodes_are_not_hosts() -> None:
    path = shared_path("realdata", "third-party", "metrics", "node_exporter-e2e-output.txt")
    # the file's one value of 4294967295 (printed 4.294967295e+09): mlx4_0 port 1's port_xmit_wait
    stuck_lines = [ln for ln in path.read_text().splitlines() if ln.endswith(" 4.294967295e+09")]
    assert stuck_lines == ['node_infiniband_port_transmit_wait_total{device="mlx4_0",port="1"} 4.294967295e+09']
    store = DuckStore(None)
    load_paths([path], store)
    report = check(store, parse_inventory(_INV))
    stuck = [p for p in report.problems if "2^32-1" in p]
    assert stuck == ["1 series of node_infiniband_port_transmit_wait_total stuck at 2^32-1 (a saturated 32-bit "
                     "counter: its rate reads 0, reset or read the 64-bit counter): "
                     'node_infiniband_port_transmit_wait_total{device="mlx4_0",port="1"}']
    # node="0" of node_zoneinfo_* / node_memory_numa_* is a NUMA node: not a host name to fix
    assert not [p for p in report.problems if "host label values" in p and "node=" in p]
