"""``suanli inventory discover``'s logic: an inventory from dcgm-exporter and node-exporter label
sets, Kubernetes pods and Slurm jobs, merged into a hand-written inventory (the CLI fetches the
label sets from the TSDB's ``/api/v1/series`` and writes ``Discovery.yaml()``)."""

from suanli.inventory.discover.build import Discovery, build_inventory
from suanli.inventory.discover.exporters import GpuSeen, NodeSeen, from_dcgm, from_infiniband, pod_gpus
from suanli.inventory.discover.schedulers import JobSeen, expand_hostlist, jobs_from_pods, jobs_from_slurm

__all__ = ["Discovery", "GpuSeen", "JobSeen", "NodeSeen", "build_inventory", "expand_hostlist", "from_dcgm",
           "from_infiniband", "jobs_from_pods", "jobs_from_slurm", "pod_gpus"]
