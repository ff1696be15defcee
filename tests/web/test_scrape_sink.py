"""Scrapes reach serve's store in shared transactions: pending ones are committed when enough
samples wait, when the oldest has waited long enough, or when asked (before each analysis step,
at stop); none is counted twice, and a failed commit is counted as an ingest error (its scrapes
are not retried, as a failed per-scrape transaction was not)."""

from __future__ import annotations

from pathlib import Path

import pytest

import suanli.web.sinks as sinks_mod
from suanli.ingest.records import IngestReport
from suanli.ingest.scrape import ScrapeTarget, TargetScraper
from suanli.store.duck import DuckStore
from suanli.web.sinks import StoreSinks


def _page(n: int) -> str:
    return "".join(f'gpu_temp{{gpu="{g}"}} {40 + g + n}\n' for g in range(4))


def _results(targets: int, ts: float) -> list:
    out = []
    for t in range(targets):
        sc = TargetScraper(ScrapeTarget(f"dcgm-{t}", f"node-{t}:9400", "http://x"))
        rep = IngestReport()
        out.append(sc._result(ts, 0.01, sc.parse(_page(t), "text/plain", ts, rep), rep, None))
    return out


def _stored(store: DuckStore) -> int:
    return store.stats()["samples"]


def test_scrapes_wait_for_the_flush_then_are_all_there(tmp_path: Path) -> None:
    store = DuckStore(tmp_path / "s.duckdb")
    sinks = StoreSinks(store)
    results = _results(10, 100.0)                   # 4 samples + up, duration, samples scraped each
    for r in results:
        sinks.scrape(r)
    assert sinks.counts["samples"] == 0 and sinks.store.commits == 0
    sinks.flush_scrapes()
    assert sinks.counts["samples"] == 70 == _stored(store) and store.commits == 1
    sinks.flush_scrapes()                           # nothing pending: no empty transaction
    assert store.commits == 1
    temps = store.series("gpu_temp")
    assert len(temps) == 40 and sorted(float(s.values[0]) for s in temps if dict(s.key.labels)["job"] == "dcgm-3") \
        == [43.0, 44.0, 45.0, 46.0]
    store.close()


def test_enough_samples_or_an_old_scrape_commit_without_being_asked(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = DuckStore(tmp_path / "s.duckdb")
    sinks = StoreSinks(store)
    monkeypatch.setattr(sinks_mod, "SCRAPE_BATCH_SAMPLES", 21)
    for r in _results(5, 200.0):                     # 7 samples each: the third reaches 21
        sinks.scrape(r)
    assert sinks.counts["samples"] == 21 and store.commits == 1
    monkeypatch.setattr(sinks_mod, "SCRAPE_BATCH_SAMPLES", 10**9)
    monkeypatch.setattr(sinks_mod, "SCRAPE_BATCH_S", 0.0)
    sinks.scrape(_results(1, 215.0)[0])              # the two pending and this one, now
    assert sinks.counts["samples"] == 42 == _stored(store) and store.commits == 2
    store.close()


def test_a_failed_commit_is_an_ingest_error_and_the_next_scrapes_still_land(tmp_path: Path) -> None:
    store = DuckStore(tmp_path / "s.duckdb")
    sinks = StoreSinks(store)
    txn = store.transaction("someone else's")        # one transaction at a time: the flush fails
    sinks.scrape(_results(1, 300.0)[0])
    with pytest.raises(RuntimeError, match="is open already"):
        sinks.flush_scrapes()
    txn.abort()
    assert sinks.errors["samples"] == 1 and sinks.counts["samples"] == 0
    sinks.scrape(_results(1, 315.0)[0])
    sinks.flush_scrapes()
    assert sinks.counts["samples"] == 7 == _stored(store)
    store.close()
