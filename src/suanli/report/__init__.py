"""suanli.report: renders the pipeline's results, nothing else: the terminal diagnosis, the JSON of
spec/diagnosis.md, the root-cause report (HTML, PDF), the latency heatmap and the CLI's tables."""

from typing import TYPE_CHECKING

from suanli.lazy import lazy_exports

if TYPE_CHECKING:
    from suanli.report.heatmap import figure, write_heatmap
    from suanli.report.json_doc import diagnosis_json
    from suanli.report.rca import html_to_pdf, render_rca, write_rca
    from suanli.report.terminal import print_diagnosis

__all__ = ["diagnosis_json", "figure", "html_to_pdf", "print_diagnosis", "render_rca", "write_heatmap", "write_rca"]

__getattr__ = lazy_exports(__name__, {
    "figure": "heatmap",
    "write_heatmap": "heatmap",
    "diagnosis_json": "json_doc",
    "html_to_pdf": "rca",
    "render_rca": "rca",
    "write_rca": "rca",
    "print_diagnosis": "terminal",
})
