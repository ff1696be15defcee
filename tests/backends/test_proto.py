"""The committed remote-write modules are what proto/generate.py makes from the committed proto files."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_generated_modules_are_up_to_date() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "proto" / "generate.py"), "--check"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_gogoproto_options_are_all_stripped() -> None:
    sys.path.insert(0, str(ROOT / "proto"))
    try:
        from generate import strip_gogo
    finally:
        sys.path.pop(0)
    text = (ROOT / "proto" / "prometheus" / "types.proto").read_text()
    assert "[(gogoproto.nullable) = false]" in text
    stripped = strip_gogo(text)
    assert "gogoproto" not in stripped
    assert "repeated Label labels         = 1;" in stripped
