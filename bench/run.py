"""Run benchmarks and gather their results.

``python bench/run.py``            runs every ``bench/*.py`` module's ``main()``;
``python bench/run.py ingest ...`` runs only the named ones. Each writes ``bench/results/<name>.md``;
all of ``bench/results/*.md`` are then concatenated into ``bench/RESULTS.md``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _modules(names: list[str]) -> list[Path]:
    found = sorted(p for p in HERE.glob("*.py") if p.stem not in ("run", "__init__") and not p.stem.startswith("_"))
    if not names:
        return found
    by_name = {p.stem: p for p in found}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise SystemExit(f"no such benchmark: {', '.join(missing)} (have: {', '.join(by_name)})")
    return [by_name[n] for n in names]


def run(path: Path) -> None:
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module           # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    entry = getattr(module, "main", None)
    if entry is None:
        print(f"{path.name}: no main(), skipped")
        return
    print(f"== {path.stem}")
    entry([])


def gather() -> Path:
    parts = [p.read_text(encoding="utf-8").strip() for p in sorted((HERE / "results").glob("*.md"))]
    out = HERE / "RESULTS.md"
    out.write_text("# Benchmark results\n\n" + "\n\n".join(parts) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> None:
    for path in _modules(list(sys.argv[1:] if argv is None else argv)):
        run(path)
    print(f"wrote {gather()}")


if __name__ == "__main__":
    main()
