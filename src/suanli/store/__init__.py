"""suanli.store: the query interface (:class:`Store`), the ingest sink it implements (:class:`Sink`,
declared by ``suanli.ingest.sink``), the DuckDB backend and ``check``.

>>> from suanli.ingest import load_paths
>>> from suanli.store import DuckStore
>>> store = DuckStore("run.duckdb")            # or DuckStore(None): in memory
>>> report = load_paths([Path("scenario/")], store)
>>> temps = store.series("DCGM_FI_DEV_GPU_TEMP", start=t0, end=t1)
"""

from suanli.store.api import Series, Sink, SpanFrame, Store, Transaction, missing_inputs
from suanli.store.check import CheckConfig, CheckReport, check
from suanli.store.duck import DuckStore, DuckStoreConfig

__all__ = [
    "CheckConfig",
    "CheckReport",
    "DuckStore",
    "DuckStoreConfig",
    "Series",
    "Sink",
    "SpanFrame",
    "Store",
    "Transaction",
    "check",
    "missing_inputs",
]
