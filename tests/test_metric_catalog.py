"""The metric catalogue: DCGM field ids as dcgm_fields.h numbers them, every metric the code
names is catalogued, and DCGM's blank sentinels."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from suanli.metric_catalog import METRICS, by_friendly, dcgm_blank_to_nan, is_counter, is_dcgm_blank
from suanli.store.remote_write.derived import DERIVED

SRC = Path(__file__).resolve().parents[1] / "src" / "suanli"


@pytest.mark.parametrize(("name", "field"), [
    # dcgm_fields.h (DCGM 3.x/4.x): #define DCGM_FI_DEV_SM_CLOCK 100, ... DCGM_FI_PROF_PIPE_TENSOR_ACTIVE 1004
    ("DCGM_FI_DEV_SM_CLOCK", 100), ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 112),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 112), ("DCGM_FI_DEV_MEMORY_TEMP", 140), ("DCGM_FI_DEV_GPU_TEMP", 150),
    ("DCGM_FI_DEV_POWER_USAGE", 155), ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 202), ("DCGM_FI_DEV_GPU_UTIL", 203),
    ("DCGM_FI_DEV_XID_ERRORS", 230), ("DCGM_FI_DEV_FB_USED", 252), ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 310),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 311), ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 393),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 394), ("DCGM_FI_DEV_ROW_REMAP_FAILURE", 395),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 449), ("DCGM_FI_PROF_SM_ACTIVE", 1002),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004),
])
def test_dcgm_field_ids(name: str, field: int) -> None:
    assert METRICS[name].dcgm_field == field
    assert METRICS[name].entity_kind == "gpu"


def test_every_metric_the_code_names_is_catalogued() -> None:
    names = re.compile(r"[\"'](DCGM_FI_[A-Z0-9_]+|node_infiniband_[a-z_]+_total|suanli_[a-z_]+_(?:total|seconds|ber))[\"']")
    used = {m for path in SRC.rglob("*.py") for m in names.findall(path.read_text(encoding="utf-8"))}
    assert len(used) >= 25
    # suanli's own derived series (what it writes and exposes) are not inputs: DERIVED lists them
    assert sorted(used - set(METRICS) - set(DERIVED)) == []


def test_kinds_units_and_friendly_names() -> None:
    # counters are cumulative: every *_total name and DCGM's error / replay / remap counts
    assert is_counter("suanli_switch_port_crc_errors_total") and is_counter("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    assert not is_counter("DCGM_FI_DEV_GPU_TEMP") and not is_counter("suanli_port_pre_fec_ber")
    assert is_counter("foo_total") and not is_counter("foo")               # not catalogued: by name
    assert by_friendly("gpu_temp").unit == "celsius"
    assert by_friendly("pcie_aer_errors").entity_labels == ("node", "pci_bus_id")
    assert by_friendly("ib_rx_errors").name == "node_infiniband_port_errors_received_total"
    with pytest.raises(KeyError):
        by_friendly("no_such_name")


def test_dcgm_blank_ranges() -> None:
    # 0x7ffffff0 = 2147483632 .. 0x7fffffff = 2147483647 (32-bit); 2**47 = 140737488355328 and up (float)
    assert is_dcgm_blank(2147483632.0) and is_dcgm_blank(2147483647.0) and not is_dcgm_blank(2147483631.0)
    assert not is_dcgm_blank(2147483648.0)
    assert is_dcgm_blank(140737488355328.0) and not is_dcgm_blank(140737488355327.0)
    assert is_dcgm_blank(float(0x7FFFFFFFFFFFFFF0))
    values = np.array([1.0, 2147483632.0, math.nan, -math.inf, 9.3e18])
    dcgm_blank_to_nan(values)
    assert np.isnan(values).tolist() == [False, True, True, False, True]
