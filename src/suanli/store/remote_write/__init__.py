"""Remote write 1.0 (the Prometheus specification): :class:`RemoteWriter` sends suanli's derived
series, as ``(metric name, labels, [(ts, value)])``, to any remote-write receiver."""

from suanli.store.remote_write.sender import RemoteWriteConfig, RemoteWriter, WriteStats, encode_request

__all__ = ["RemoteWriteConfig", "RemoteWriter", "WriteStats", "encode_request"]
