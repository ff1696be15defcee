"""The fabric, the stragglers and the storage (docs/fabric.md). :func:`analyze` is the unit; the
modules beside it are its pure parts."""

from suanli.analysis.fabric.adapter import FabricConfig, FabricResult, Heatmap, analyze, fabric_graph

__all__ = ["FabricConfig", "FabricResult", "Heatmap", "analyze", "fabric_graph"]
