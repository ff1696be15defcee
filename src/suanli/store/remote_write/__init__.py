"""Remote write 1.0 (the Prometheus specification): :class:`RemoteWriter` sends suanli's derived
series, as ``(metric name, labels, [(ts, value)])``, to any remote-write receiver; :func:`diagnosis_series`
and :func:`info_series` are what ``suanli diagnose --remote-write URL`` sends."""

from suanli.store.remote_write.derived import diagnosis_series, info_series
from suanli.store.remote_write.sender import RemoteWriteConfig, RemoteWriter, WriteStats, encode_request

__all__ = ["RemoteWriteConfig", "RemoteWriter", "WriteStats", "diagnosis_series", "encode_request", "info_series"]
