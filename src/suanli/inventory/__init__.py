"""suanli.inventory: the metadata model every record is joined to (spec/inventory.md).

``load_inventory(path)`` reads and validates inventory.yaml; ``inv.resolver`` maps exporter labels,
span attributes and log fields to canonical ids; ``inv.topology`` answers path, collective-group and
blast-radius questions over the physical, logical and dataflow graphs.
"""

from suanli.inventory.catalog import Inventory
from suanli.inventory.fabric import FabricConfig
from suanli.inventory.gpus import BUILTIN_GPU_MODELS
from suanli.inventory.groups import CollectiveGroup, megatron_groups
from suanli.inventory.loader import load_inventory, parse_inventory
from suanli.inventory.model import (
    EntityKind,
    Gpu,
    GpuModelSpec,
    Job,
    Link,
    ModelShape,
    Nic,
    Node,
    NvSwitch,
    Rack,
    Rank,
    Storage,
    Switch,
    gpu_id,
    link_id,
    nic_id,
    nvswitch_id,
    rank_id,
)
from suanli.inventory.normalize import mac_key, normalise_pci, pci_key
from suanli.inventory.resolver import Resolver
from suanli.inventory.topology import Topology

__all__ = [
    "BUILTIN_GPU_MODELS",
    "CollectiveGroup",
    "EntityKind",
    "FabricConfig",
    "Gpu",
    "GpuModelSpec",
    "Inventory",
    "Job",
    "Link",
    "ModelShape",
    "Nic",
    "Node",
    "NvSwitch",
    "Rack",
    "Rank",
    "Resolver",
    "Storage",
    "Switch",
    "Topology",
    "gpu_id",
    "link_id",
    "load_inventory",
    "mac_key",
    "megatron_groups",
    "nic_id",
    "normalise_pci",
    "nvswitch_id",
    "parse_inventory",
    "pci_key",
    "rank_id",
]
