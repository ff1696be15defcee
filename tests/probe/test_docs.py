"""Every probe option and environment variable is documented in docs/probe.md."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from suanli.probe import config
from suanli.probe.config import ProbeConfig

DOC = (Path(__file__).resolve().parents[2] / "docs" / "probe.md").read_text(encoding="utf-8")


def test_every_option_and_variable_is_documented() -> None:
    missing = [f.name for f in fields(ProbeConfig) if f"`{f.name}`" not in DOC]
    envs = [getattr(config, n) for n in config.__all__ if n.startswith("ENV_")]
    missing += [e for e in envs if f"`{e}" not in DOC]
    assert not missing, f"undocumented in docs/probe.md: {missing}"
    assert len(envs) == 13
