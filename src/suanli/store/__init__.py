"""suanli.store: the query interface (:class:`Store`), the DuckDB backend, the loader and ``check``.

>>> from suanli.store import DuckStore, load_paths
>>> store = DuckStore("run.duckdb")            # or DuckStore(None): in memory
>>> report = load_paths([Path("scenario/")], store)
>>> temps = store.series("DCGM_FI_DEV_GPU_TEMP", start=t0, end=t1)
"""

from suanli.store.api import Series, SpanFrame, Store
from suanli.store.check import CheckConfig, CheckReport, check
from suanli.store.duck import DuckStore, DuckStoreConfig
from suanli.store.loader import load_paths, missing_inputs, plan_paths

__all__ = [
    "CheckConfig",
    "CheckReport",
    "DuckStore",
    "DuckStoreConfig",
    "Series",
    "SpanFrame",
    "Store",
    "check",
    "load_paths",
    "missing_inputs",
    "plan_paths",
]
