"""Reapply each of issue 20's nine surviving bugs (bench/mutation/bugs/*.patch) and check the suite fails on it.

    .venv/bin/python bench/mutation/bugs.py            # each bug against the tests that should kill it
    .venv/bin/python bench/mutation/bugs.py --full     # each bug against the whole suite (slow)

Each patch is applied to the work tree with ``git apply``, pytest runs, and the patch is reverted
(``git apply -R``) whatever happens. Exit 1 if some bug survives, or if a patch no longer applies
(the code moved: rewrite the patch).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUGS = ROOT / "bench" / "mutation" / "bugs"

#: bug patch -> the tests written to kill it (issue 20, "Deliver" item 1)
KILLERS: dict[str, list[str]] = {
    "01_mfu_mean_of_steps": ["tests/analysis/ledger/test_catch_ledger.py", "tests/analysis/ledger/test_props.py"],
    "02_tokens_no_tp_pp": ["tests/analysis/ledger/test_catch_ledger.py"],
    "03_union_last_end": ["tests/analysis/ledger/test_catch_ledger.py"],
    "03b_profile_union_last_end": ["tests/analysis/ledger/test_catch_ledger.py"],
    "04_cusum_fixed_2sigma": ["tests/analysis/test_catch_changepoint.py"],
    "05_seeds_downstream_first": ["tests/incidents/test_catch_roots.py"],
    "06_host_by_confidence": ["tests/incidents/test_catch_roots.py"],
    "07_nhpp_95_as_90": ["tests/analysis/health/test_catch_nhpp.py"],
    "08_xid_pid_quotes": ["tests/ingest/test_catch_xid.py"],
    "09_xid63_degradation": ["tests/ingest/test_catch_xid.py"],
}


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def _run_one(patch: Path, full: bool) -> bool:
    """True when the suite fails with the bug in (the bug is caught)."""
    got = _git("apply", str(patch))
    if got.returncode != 0:
        print(f"{patch.name}: does not apply: {got.stderr.strip()}")
        return False
    try:
        tests = [] if full else KILLERS.get(patch.stem, [])
        missing = [t for t in tests if not (ROOT / t).exists()]
        if missing or (not full and not tests):
            print(f"{patch.stem}: no killing tests named, or missing: {missing}")
            return False
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        failed = [ln for ln in res.stdout.splitlines() if ln.startswith("FAILED")]
        print(f"{patch.stem}: {'caught' if res.returncode != 0 else 'SURVIVED'} "
              f"(rc {res.returncode}) {failed[:1]}")
        return res.returncode != 0
    finally:
        _git("apply", "-R", str(patch))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="run the whole suite per bug")
    ap.add_argument("only", nargs="*", help="patch names (default: all)")
    args = ap.parse_args()
    patches = sorted(BUGS.glob("*.patch"))
    if args.only:
        patches = [p for p in patches if any(p.stem.startswith(o) for o in args.only)]
    if _git("diff", "--quiet", "--", "src").returncode != 0:
        print("src/ has uncommitted changes: commit or stash them first")
        return 2
    caught = [_run_one(p, args.full) for p in patches]
    print(f"{sum(caught)}/{len(caught)} bugs caught")
    return 0 if all(caught) else 1


if __name__ == "__main__":
    sys.exit(main())
