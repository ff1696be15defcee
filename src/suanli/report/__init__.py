"""suanli.report: renders the pipeline's results, nothing else: the terminal diagnosis, the JSON of
spec/diagnosis.md, the root-cause report (HTML, PDF), the latency heatmap and the CLI's tables."""

from suanli.report.heatmap import figure, write_heatmap
from suanli.report.json_doc import diagnosis_json
from suanli.report.rca import html_to_pdf, render_rca, write_rca
from suanli.report.terminal import print_diagnosis

__all__ = ["diagnosis_json", "figure", "html_to_pdf", "print_diagnosis", "render_rca", "write_heatmap", "write_rca"]
