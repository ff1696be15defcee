"""Shared bits of the CLI tests: running the real console script, a small hand-written cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from suanli.cli import app

# A pipe, not a terminal: no colour forced on by the environment of whoever runs the tests.
_FORCING = ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS")
ENV = {k: v for k, v in os.environ.items() if k not in _FORCING} | {"NO_COLOR": "1"}


def suanli_argv() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m suanli.cli``."""
    script = Path(sys.executable).parent / "suanli"
    return [str(script)] if script.exists() else [sys.executable, "-m", "suanli.cli"]


def run(*args: str | Path, cwd: Path | None = None, timeout_s: float = 120.0,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``suanli ARGS`` as a subprocess with stdout/stderr captured (pipes, not a terminal)."""
    return subprocess.run([*suanli_argv(), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s, env=env or ENV, check=False)


def invoke(*args: str | Path) -> Result:
    """Run a verb in-process (faster than a subprocess; the same ``_run`` error handling)."""
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_one_line_error(rc: int, stderr: str, *needles: str) -> str:
    """Exit 2, exactly one stderr line, no traceback, and the line names every needle."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert rc == 2, f"exit {rc}, stderr: {stderr!r}"
    assert "Traceback" not in stderr
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


UUID0 = "GPU-00000000-0000-0000-0000-000000000001"
UUID1 = "GPU-00000000-0000-0000-0000-000000000002"
T0 = 1773400000.0  # 2026-03-13T11:06:40Z

INVENTORY = f"""\
cluster: tiny-a
racks:
  - id: rack-01
    nodes:
      - id: node-001
        gpus:
          - {{index: 0, uuid: {UUID0}, pci_bus_id: "00000000:18:00.0", model: H100-SXM}}
          - {{index: 1, uuid: {UUID1}, pci_bus_id: "00000000:2A:00.0", model: H100-SXM}}
        nics:
          - {{name: mlx5_0, mac: "b8:ce:f6:00:00:01", gpu: 0, switch_port: leaf-01/p1}}
switches:
  - {{id: leaf-01, tier: leaf, rack: rack-01}}
jobs:
  - id: tiny-job
    sla_id: tiny_sla
    model: {{params: 1.0e9, layers: 16, hidden: 2048, seq_len: 2048, vocab: 32000}}
    precision: bf16
    parallelism: {{dp: 2, tp: 1, pp: 1}}
    ranks:
      - {{rank: 0, gpu: node-001/gpu0}}
      - {{rank: 1, gpu: node-001/gpu1}}
    tokens_per_step: 4096
"""

GPU0_LABELS = f'gpu="0",UUID="{UUID0}",Hostname="node-001"'


def temp_line(value: str, ts: float, labels: str = GPU0_LABELS) -> str:
    """One DCGM temperature sample line (OpenMetrics: timestamp in seconds)."""
    return f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} {value} {ts:.0f}"


def make_folder(root: Path, name: str, *, inventory: str | bytes | None = INVENTORY,
                files: dict[str, str | bytes] | None = None) -> Path:
    """A scenario folder under ``root`` with the given inventory text and files."""
    folder = root / name
    folder.mkdir(parents=True)
    if inventory is not None:
        _write(folder / "inventory.yaml", inventory)
    for fname, content in (files or {}).items():
        _write(folder / fname, content)
    return folder


def _write(path: Path, content: str | bytes) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def otlp_line(rank: int, step: int, start_s: float, step_s: float = 10.0) -> str:
    """One ExportTraceServiceRequest (JSON) with a rank's ``train_step`` and its ``forward`` child."""
    def attr(key: str, value: Any) -> dict[str, Any]:
        kind = "intValue" if isinstance(value, int) else "stringValue"
        return {"key": key, "value": {kind: str(value)}}

    def ns(t: float) -> str:
        return str(round(t * 1e9))

    trace, parent = f"{step + 1:032x}", f"{rank + 1:04x}{step:012x}"
    spans = [
        {"traceId": trace, "spanId": parent, "name": "train_step", "kind": 1,
         "startTimeUnixNano": ns(start_s), "endTimeUnixNano": ns(start_s + step_s),
         "attributes": [attr("train.step", step)]},
        {"traceId": trace, "spanId": f"{rank + 9:04x}{step:012x}", "parentSpanId": parent,
         "name": "forward", "kind": 1, "startTimeUnixNano": ns(start_s),
         "endTimeUnixNano": ns(start_s + 0.6 * step_s)},
    ]
    resource = {"attributes": [attr("job.id", "tiny-job"), attr("framework.pytorch.rank", rank),
                               attr("host.name", "node-001"), attr("resource.gpu.id", f"node-001/gpu{rank}")]}
    return json.dumps({"resourceSpans": [{"resource": resource,
                                          "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
