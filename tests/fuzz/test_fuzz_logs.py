"""Every log head and record kind with numbers at the edges: the parser never raises, a bad number
is one reject naming ``file:line``, and the good records around it are kept with their times."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from suanli.ingest.logs import parse_log_lines
from suanli.ingest.records import IngestReport
from suanli.ingest.sink import EventBatch
from tests.fuzz.conftest import FUZZ, SEED
from tests.fuzz.strategies import digits, float_texts, years

HEADS = ("2026-03-13T11:07:{s:02d}.000000+00:00 node-001 kernel: ", "Mar 13 11:07:{s:02d} node-001 kernel: ",
         "{y}-03-13T11:07:{s:02d}+00:00 node-001 kernel: ", "[{n}.{n}] ", "6,{n},{n},-;", "<6>[ {n}.5] ",
         "[{n}] [rank{n}]:[E0313 11:07:{s:02d}.000000 ProcessGroupNCCL.cpp:1] ", "node-001:{n}:{n} [{n}] NCCL WARN ",
         "2026-03-13T11:07:{s:02d}.000000+00:00 node-001 python[{n}]: ", "[Fri Mar 13 11:07:{s:02d} {y}] ")
BODIES = ("NVRM: Xid (PCI:0000:18:00): {n}, pid={n}, x", "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): {n}, Fatal Link {n}",
          "pcieport 0000:00:01.0: AER: {n} Correctable errors suppressed", "[Rank {n}] NCCL WARN timeout",
          "ProcessGroupNCCL detected by watchdog at work: {n}, last enqueued NCCL work: {n}, last completed NCCL work: {n}",
          "[Rank {n}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, "
          "NumelIn={n}, NumelOut={n}, Timeout(ms)={n}) ran for {n} milliseconds",
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {f} MiB. GPU {n} has a total capacity of {f} GiB",
          "saving checkpoint at iteration {n} to /ckpt", " iteration {n}/ {n} | loss: {f} |",
          "NET/IB : Got completion with error {n}, vendor err {n}", "hello {n}")
GOOD_CODES = (13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95)

hostile = st.builds(lambda h, b, n, f, y: h.replace("{y}", y).format(s=30, n=n) + b.format(n=n, f=f),
                    st.sampled_from(HEADS), st.sampled_from(BODIES), digits, float_texts, years)


def _good(i: int) -> str:
    return f"2026-03-13T11:07:{i:02d}.000000+00:00 node-001 kernel: NVRM: Xid (PCI:0000:18:00): {GOOD_CODES[i]}, pid=1, ok"


@SEED
@FUZZ
@given(st.lists(st.tuples(st.booleans(), hostile), min_size=1, max_size=12))
def test_log_lines_with_edge_numbers(plan: list[tuple[bool, str]]) -> None:
    lines: list[str] = []
    good: dict[int, tuple[int, float]] = {}                      # line -> (code, epoch seconds)
    for i, (with_good, bad) in enumerate(plan):
        if with_good and len(good) < len(GOOD_CODES):
            lines.append(_good(len(good)))
            good[len(lines)] = (GOOD_CODES[len(good)], 1773400020.0 + len(good))
        lines.append(bad)
        del i
    report = IngestReport()
    events = list(parse_log_lines(lines, "k.log", None, report))
    EventBatch.from_events(events)                                # every field fits its column (int64)
    for reason in report.reasons:
        m = re.match(r"k\.log:(\d+): ", reason)
        assert m and 1 <= int(m.group(1)) <= len(lines), reason
        assert int(m.group(1)) not in good, reason                # never a good line
    assert report.rejected <= len(lines) - len(good)
    xids = {ev.source: (ev.code, ev.ts) for ev in events if ev.kind == "xid" and ev.code in GOOD_CODES}
    for lineno, want in good.items():
        assert xids.get(f"k.log:{lineno}") == want, (lineno, want, xids)
    assert all(not math.isinf(ev.ts) for ev in events)
    assert report.loaded.get("log_lines") == len(lines)
