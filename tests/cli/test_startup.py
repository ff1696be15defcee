"""Every verb pays for ``import suanli.cli`` before it runs: SciPy and networkx (about a second
and a third of one) are imported only by the analyses and graphs that use them, every analysis'
settings (``suanli.config``, 0.24 s) and uvicorn only by the verbs that run them, and the lazy
package exports still hand out what they name."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_cli_starts_without_scipy_or_networkx() -> None:
    loaded = _loaded_after("import suanli.cli")
    assert "suanli" in loaded and "duckdb" in loaded
    assert not loaded & {"scipy", "networkx", "uvicorn"}


def test_the_cli_starts_without_every_analysis_settings() -> None:
    probe = "import suanli.cli, sys\nprint(sorted(m for m in sys.modules if m.startswith(('suanli.config', 'suanli.analysis.'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "suanli.config" not in out.stdout and "suanli.analysis.ledger" not in out.stdout, out.stdout


def test_lazy_exports_resolve_to_their_modules() -> None:
    import suanli.analysis
    import suanli.pipeline
    import suanli.report
    from suanli.analysis.health.adapter import HealthConfig
    from suanli.pipeline.batch import diagnose
    from suanli.report.json_doc import diagnosis_json

    assert suanli.analysis.HealthConfig is HealthConfig
    assert suanli.pipeline.diagnose is diagnose
    assert suanli.report.diagnosis_json is diagnosis_json
    for package in (suanli.analysis, suanli.pipeline, suanli.report):
        assert all(getattr(package, name) is not None for name in package.__all__)


def test_a_name_not_exported_is_an_attribute_error() -> None:
    import suanli.pipeline

    with pytest.raises(AttributeError, match=r"module 'suanli\.pipeline' has no attribute 'nothing_here'"):
        suanli.pipeline.nothing_here  # type: ignore[attr-defined]  # noqa: B018
