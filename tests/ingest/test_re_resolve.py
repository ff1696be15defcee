"""Series stored before the inventory knew them are resolved again when an inventory is ingested
(issue 14: "no way to drop series that never resolved once the inventory is fixed"): metrics first,
the inventory after, and the store holds what inventory-then-metrics would have, each sample once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from suanli.ingest.load import load_paths
from suanli.store.duck import DuckStore
from tests.conftest import shared_path

STRAY = ('# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n'
         'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-00000000-0000-0000-0000-00000000dead",Hostname="node-999"} '
         '50 1773769200\n# EOF\n')


def _series_count(folder: Path) -> int:
    """Distinct series in metrics.om, counted from the text (name and label set)."""
    return len({ln.rsplit(" ", 2)[0] for ln in (folder / "metrics.om").read_text().splitlines()
                if ln and not ln.startswith("#")})


def test_inventory_after_the_metrics_resolves_what_was_stored(tmp_path: Path) -> None:
    folder = shared_path("scenarios", "pcie_riser")
    stray = tmp_path / "stray.om"
    stray.write_text(STRAY)
    n = _series_count(folder)

    late = DuckStore(tmp_path / "late.duckdb")
    load_paths([folder / "metrics.om", stray], late)
    assert len(late.unresolved_series()) == n + 1                    # no inventory yet: nothing resolves
    report = load_paths([folder / "inventory.yaml"], late)
    assert report.loaded["series_re_resolved"] == n                  # node-999 is in no inventory
    assert [k.label("Hostname") for k in late.unresolved_series()] == ["node-999"]
    load_paths([folder / "inventory.yaml", folder / "metrics.om"], late)   # loaded again, resolved
    late.close()

    ref = DuckStore(tmp_path / "ref.duckdb")
    load_paths([folder / "inventory.yaml", folder / "metrics.om"], ref)
    late = DuckStore(tmp_path / "late.duckdb", read_only=True)       # what was written, reopened
    try:
        assert len(late.unresolved_series()) == 1
        for metric, gpu in (("DCGM_FI_DEV_GPU_TEMP", "node-002/gpu5"), ("suanli_pcie_aer_errors_total", "node-002/gpu5")):
            got, want = late.series(metric, [gpu]), ref.series(metric, [gpu])
            assert len(got) == len(want) > 0
            for g, w in zip(sorted(got, key=lambda s: s.key.labels), sorted(want, key=lambda s: s.key.labels),
                            strict=True):
                assert g.key == w.key
                np.testing.assert_array_equal(g.ts, w.ts)            # each sample once, not twice
                np.testing.assert_array_equal(g.values, w.values)
    finally:
        late.close()
        ref.close()
