"""The DuckDB backend: :class:`DuckStore` is both the ingest sink and the query store.

>>> store = DuckStore("run.duckdb")             # or DuckStore(None): in memory
>>> load_paths([Path("scenario/")], store)        # suanli.ingest.load
>>> temps = store.series("DCGM_FI_DEV_GPU_TEMP", start=t0, end=t1)
"""

from suanli.store.duck.store import DuckStore, DuckStoreConfig

__all__ = ["DuckStore", "DuckStoreConfig"]
