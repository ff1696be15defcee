"""Headless Chromium, sandboxed, turning one of our HTML pages into a file (a PDF or a PNG
screenshot). The RCA report's ``--out r.pdf`` and ``--heatmap x.png`` share this one launch.

Chromium never runs with ``--no-sandbox``: the page holds telemetry someone else wrote. As root,
Chromium refuses its sandbox, so it runs as ``nobody`` on a copy of the page in a private folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from suanli.errors import InputError

__all__ = ["CHROMIUM_FLAGS", "UNPRIVILEGED", "render_with_chromium"]

CHROMIUM_FLAGS = ("--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")
"""Never ``--no-sandbox``: the page holds telemetry someone else wrote."""
UNPRIVILEGED = 65534
"""The uid and gid (``nobody``) Chromium runs as when suanli runs as root: Chromium refuses its
sandbox to root, and suanli will not print without it."""


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        raise InputError("this output needs Chromium on PATH (Debian package `chromium`)")
    return exe


def render_with_chromium(html_path: Path, out_path: Path, what: str, flags: Sequence[str],
                         timeout_s: float = 120.0) -> Path:
    """Open ``html_path`` in sandboxed headless Chromium with ``flags`` (each may name the output
    file as ``{out}``) after its scripts ran, and copy what it wrote to ``out_path``. ``what`` says
    what is being made ("print the report") in the one-line error where Chromium fails."""
    exe = _chromium()
    as_root = os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="suanli-chromium-") as work:
        folder = Path(work)
        page, out = folder / "page.html", folder / f"out{out_path.suffix}"
        shutil.copyfile(html_path, page)
        if as_root:
            for p in (folder, page):
                os.chown(p, UNPRIVILEGED, UNPRIVILEGED)
        who = {"user": UNPRIVILEGED, "group": UNPRIVILEGED, "extra_groups": []} if as_root else {}
        proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={folder / 'profile'}",
                               "--virtual-time-budget=10000", *(f.format(out=out) for f in flags),
                               page.as_uri()], capture_output=True, text=True, timeout=timeout_s,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder)},
                              check=False, **who)  # type: ignore[call-overload]
        if proc.returncode != 0 or not out.exists():
            why = proc.stderr.strip()[-200:]
            if "sandbox" in why.lower():
                raise InputError(f"{out_path}: Chromium's sandbox cannot start here ({why}); suanli does not "
                                 "render telemetry it did not write without it: open the HTML instead")
            raise InputError(f"{out_path}: Chromium could not {what} ({why})")
        shutil.copyfile(out, out_path)
    return out_path
