"""``suanli inventory discover``: an inventory.yaml from what the cluster already says (dcgm-exporter's
and node-exporter's label sets in a Prometheus-compatible TSDB, ``kubectl get pods -o json``,
``scontrol show job -d``), merged into a hand-written one; what it could not learn goes to stderr."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console

from suanli.cli.base import app, err, run_verb
from suanli.cli.diagnose import Backend, prom_config
from suanli.cli.window import flag_time
from suanli.errors import InputError

__all__ = ["DCGM_SERIES", "IB_SERIES", "discover", "discover_cmd", "inventory_app"]

inventory_app = typer.Typer(no_args_is_help=True, help="The cluster inventory: discover it.")
app.add_typer(inventory_app, name="inventory")

DCGM_SERIES = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")
"""dcgm-exporter metrics whose label sets name the GPUs (every default profile exports them)."""
IB_SERIES = ("node_infiniband_port_data_transmitted_bytes_total", "node_infiniband_info")
"""node-exporter's infiniband collector: one series per (instance, device, port)."""
LOOKBACK_S = 400 * 86400.0
"""Series seen within this long before ``--end`` (default now) count when ``--start`` is not given."""


@inventory_app.command("discover")
def discover(
    prometheus: Annotated[str, typer.Option(help="The Prometheus-compatible TSDB holding the exporters' series.")],
    out_file: Annotated[Path | None, typer.Option("--out", help="Write here (default: stdout).")] = None,
    existing: Annotated[Path | None, typer.Option(help="A hand-written inventory.yaml to merge into "
                                                       "(switches, links, prices, SLAs kept).")] = None,
    slurm: Annotated[Path | None, typer.Option(help="`scontrol show job -d` output: jobs, nodes, GPUs.")] = None,
    kube: Annotated[Path | None, typer.Option(help="`kubectl get pods -o json` output: pods as jobs.")] = None,
    cluster: Annotated[str | None, typer.Option(help="Cluster name (default: the existing file's).")] = None,
    start: Annotated[str | None, typer.Option(help="Series seen from (RFC 3339).")] = None,
    end: Annotated[str | None, typer.Option(help="Series seen until (RFC 3339; default now).")] = None,
    bearer_token_file: Annotated[Path | None, typer.Option(help="File holding the TSDB's bearer token.")] = None,
    basic_auth_file: Annotated[Path | None, typer.Option(help="File holding USER:PASSWORD for the TSDB.")] = None,
    metric_map: Annotated[list[str] | None, typer.Option(help="The TSDB's names and labels for the exporters' "
                                                              "series: a preset or a map file (repeatable).")] = None,
) -> None:
    """Write an inventory.yaml from dcgm-exporter and node-exporter series, Slurm and Kubernetes."""
    backend = Backend(prometheus, bearer_token_file=bearer_token_file, basic_auth_file=basic_auth_file,
                      metric_maps=tuple(metric_map or ()))
    run_verb(lambda: discover_cmd(err, backend, out_file, existing, slurm, kube, cluster, (start, end)))


def _read(path: Path, flag: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{flag} {path}: {getattr(exc, 'strerror', None) or exc}") from None


def _existing(path: Path | None) -> dict[str, Any] | None:
    """The hand-written file as YAML: it may lack what discovery fills in (UUIDs, whole nodes)."""
    if path is None:
        return None
    try:
        doc = yaml.safe_load(_read(path, "--existing"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"not YAML: {getattr(exc, 'problem', None) or exc}", file=str(path), line=line) from None
    if not isinstance(doc, dict):
        raise InputError("expected a mapping (an inventory)", file=str(path))
    return doc


def _window(bounds: tuple[str | None, str | None]) -> tuple[int, int]:
    lo, hi = flag_time("--start", bounds[0]), flag_time("--end", bounds[1])
    hi = hi if hi is not None else time.time()
    lo = lo if lo is not None else hi - LOOKBACK_S
    if lo > hi:
        raise InputError("--start is after --end")
    return int(lo * 1000), int(hi * 1000)


def _label_sets(backend: Backend, window: tuple[int, int]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    from suanli.store.promql.client import PromClient

    cfg = prom_config(backend)
    client = PromClient(cfg)
    try:
        def sets(metrics: tuple[str, ...]) -> list[dict[str, str]]:
            """The distinct label sets of ``metrics`` (under the TSDB's names), as suanli reads them."""
            by_source = {cfg.metric_map.source(m).name: m for m in metrics}
            found = client.series(f'{{__name__=~"{"|".join(sorted(by_source))}"}}', *window)
            unique = {tuple(sorted(cfg.metric_map.relabel(by_source.get(s.get("__name__", ""), ""),
                                                          {k: v for k, v in s.items() if k != "__name__"}).items()))
                      for s in found}
            return [dict(u) for u in sorted(unique)]

        return sets(DCGM_SERIES), sets(IB_SERIES)
    finally:
        client.close()


def discover_cmd(errors: Console, backend: Backend, out_file: Path | None, existing: Path | None,
                 slurm: Path | None, kube: Path | None, cluster: str | None,
                 bounds: tuple[str | None, str | None]) -> int:
    from suanli.inventory.discover import (
        NodeSeen,
        build_inventory,
        from_dcgm,
        from_infiniband,
        jobs_from_pods,
        jobs_from_slurm,
        pod_gpus,
    )

    base = _existing(existing)
    name = cluster or (str(base["cluster"]) if base and base.get("cluster") else None)
    if name is None:
        raise InputError("--cluster NAME is needed (no --existing inventory names one)")
    dcgm, ib = _label_sets(backend, _window(bounds))
    nodes: dict[str, NodeSeen] = {}
    notes: set[str] = set()
    from_dcgm(dcgm, nodes, notes)
    from_infiniband(ib, nodes, notes)
    jobs = jobs_from_slurm(_read(slurm, "--slurm"), str(slurm)) if slurm is not None else []
    if kube is not None:
        jobs += jobs_from_pods(_read(kube, "--kube"), pod_gpus(nodes), str(kube))
    found = build_inventory(name, nodes, jobs, existing=base)
    text = found.yaml()
    if out_file is None:
        print(text, end="")
    else:
        try:
            out_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--out {out_file}: {exc.strerror}") from None
    errors.print(f"discovered {len(nodes)} node(s), {sum(len(n.gpus) for n in nodes.values())} GPU(s), "
                 f"{len(jobs)} job(s) from {len(dcgm)} dcgm-exporter and {len(ib)} infiniband series",
                 markup=False, highlight=False)
    for line in [*sorted(notes), *found.unknown]:
        errors.print(f"unknown: {line}", markup=False, highlight=False)
    return 0
