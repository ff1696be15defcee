"""suanli.report: the terminal diagnosis, the root-cause report (HTML) and the latency heatmap."""

from suanli.report.heatmap import write_heatmap
from suanli.report.rca import write_rca
from suanli.report.terminal import print_diagnosis

__all__ = ["print_diagnosis", "write_heatmap", "write_rca"]
