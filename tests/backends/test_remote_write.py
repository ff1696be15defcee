"""Remote write 1.0 into a real Prometheus 2.42 (remote-write receiver on) and a real
VictoriaMetrics 1.79, read back through PromStore; retries and the bounded buffer against a
fault-injecting proxy in front of the real receiver."""

from __future__ import annotations

import time

import cramjam
import httpx
import pytest

from suanli.errors import InputError
from suanli.store.promql import PromConfig, PromStore
from suanli.store.remote_write import RemoteWriteConfig, RemoteWriter, encode_request
from suanli.store.remote_write.prompb import remote_pb2
from tests.backends.fault_proxy import fault_proxy
from tests.backends.servers import Server, free_port


def _read_back(server: Server, metric: str, t0: float, t1: float) -> dict[tuple[tuple[str, str], ...],
                                                                         list[tuple[float, float]]]:
    if "8428" in server.url or server.name == "victoria-metrics":
        httpx.get(server.url + "/internal/force_flush", timeout=30).raise_for_status()
    store = PromStore(PromConfig(server.url), None, window=(t0, t1))
    try:
        return {s.key.labels: list(zip(s.ts.tolist(), s.values.tolist(), strict=True)) for s in store.series(metric)}
    finally:
        store.close()


def _write_url(server: Server) -> str:
    return server.url + "/api/v1/write"


def test_request_bytes_follow_the_proto_by_hand() -> None:
    # WriteRequest{timeseries(1): TimeSeries{labels(1): Label{name(1) "__name__", value(2) "x"},
    # samples(2): Sample{value(1) double 1.5, timestamp(2) varint 10}}}, encoded by the protobuf rules:
    # 0a 1c | 0a 0d 0a 08 "__name__" 12 01 "x" | 12 0b 09 <1.5 little-endian> 10 0a
    want = bytes.fromhex("0a1c" "0a0d0a08" + b"__name__".hex() + "1201" + b"x".hex()
                         + "120b09" + "000000000000f83f" + "100a")
    got = encode_request([((("__name__", "x"),), 10, 1.5)])
    assert got == want
    framed = bytes(cramjam.snappy.compress_raw(got))
    assert framed[0] == len(got)                 # snappy block format: the uncompressed length first
    assert bytes(cramjam.snappy.decompress_raw(framed)) == got


def test_labels_sorted_and_samples_by_time() -> None:
    body = encode_request([((("Hostname", "n1"), ("__name__", "m"), ("job", "j")), t, float(t)) for t in (30, 10, 20, 10)])
    req = remote_pb2.WriteRequest.FromString(body)
    (series,) = req.timeseries
    assert [lb.name for lb in series.labels] == ["Hostname", "__name__", "job"]
    assert [(s.timestamp, s.value) for s in series.samples] == [(10, 10.0), (20, 20.0), (30, 30.0)]


def test_bad_names_are_refused() -> None:
    writer = RemoteWriter(RemoteWriteConfig("http://127.0.0.1:9/api/v1/write"))
    with pytest.raises(InputError, match="metric name"):
        writer.add("suanli job mfu", {}, [(1.0, 1.0)])
    with pytest.raises(InputError, match="label name"):
        writer.add("suanli_job_mfu", {"bad-label": "x"}, [(1.0, 1.0)])
    writer.close()


@pytest.mark.integration
@pytest.mark.parametrize("which", ["prometheus", "victoriametrics"])
def test_writes_land_and_are_queryable(which: str, empty_prometheus: Server, empty_vm: Server) -> None:
    server = empty_prometheus if which == "prometheus" else empty_vm
    now = float(int(time.time()))
    samples = [(now - 240 + 15 * i, 0.25 + 0.01 * i) for i in range(12)]
    metric = f"suanli_job_mfu_{which}"
    with fault_proxy(server.url, []) as (url, state):
        writer = RemoteWriter(RemoteWriteConfig(url + "/api/v1/write"))
        stats = writer.write([(metric, {"job": "llama", "cluster": "c1"}, samples),
                              (metric, {"job": "gpt", "cluster": "c1"}, samples[:3])])
        writer.close()
    assert stats.sent == 15 and stats.requests == 1 and stats.errors == []
    _, headers, status = state.seen[0]
    assert 200 <= status < 300
    assert headers["Content-Encoding"] == "snappy" and headers["Content-Type"] == "application/x-protobuf"
    assert headers["X-Prometheus-Remote-Write-Version"] == "0.1.0"
    got = _read_back(server, metric, now - 600, now + 60)
    want = {(("cluster", "c1"), ("job", "llama")): samples, (("cluster", "c1"), ("job", "gpt")): samples[:3]}
    if which == "prometheus":
        assert got == want                   # float64 kept bit for bit
    else:                                    # VictoriaMetrics keeps 12 significant digits (0.30000000000000004 -> 0.3)
        assert {k: [t for t, _ in v] for k, v in got.items()} == {k: [t for t, _ in v] for k, v in want.items()}
        for k, v in want.items():
            assert [x for _, x in got[k]] == pytest.approx([x for _, x in v], rel=1e-12)


@pytest.mark.integration
def test_retries_5xx_and_429_with_backoff_then_lands(empty_vm: Server) -> None:
    sleeps: list[float] = []
    with fault_proxy(empty_vm.url, [503, 429, 500]) as (url, state):
        writer = RemoteWriter(RemoteWriteConfig(url + "/api/v1/write"), sleep=sleeps.append)
        stats = writer.write([("suanli_retry_test", {"job": "a"}, [(1773106425.0, 1.0), (1773106440.0, 2.0)])])
        writer.close()
    assert [s for _, _, s in state.seen][:3] == [503, 429, 500] and len(state.seen) == 4
    assert stats.retries == 3 and stats.requests == 4 and stats.sent == 2 and stats.rejected == 0
    assert sleeps == pytest.approx([0.03, 0.06, 0.12])      # 30 ms doubling (Retry-After: 0 is shorter)
    assert _read_back(empty_vm, "suanli_retry_test", 1773106000, 1773107000) == {
        (("job", "a"),): [(1773106425.0, 1.0), (1773106440.0, 2.0)]}


@pytest.mark.integration
def test_never_retries_other_4xx(empty_prometheus: Server) -> None:
    sleeps: list[float] = []
    with fault_proxy(empty_prometheus.url, [400]) as (url, state):
        writer = RemoteWriter(RemoteWriteConfig(url + "/api/v1/write"), sleep=sleeps.append)
        stats = writer.write([("suanli_rejected_test", {"job": "a"}, [(time.time(), 1.0)])])
    assert len(state.seen) == 1 and stats.retries == 0 and stats.rejected == 1 and sleeps == []
    # a real 400: Prometheus refuses a sample far older than what its head already holds
    now = time.time()
    writer = RemoteWriter(RemoteWriteConfig(_write_url(empty_prometheus)), sleep=sleeps.append)
    assert writer.write([("suanli_old_test", {"job": "a"}, [(now, 1.0)])]).sent == 1
    stats = writer.write([("suanli_old_test", {"job": "a"}, [(now - 6 * 3600, 2.0)])])
    writer.close()
    assert stats.requests == 2 and stats.retries == 0 and stats.rejected == 1 and sleeps == []
    assert "HTTP 400" in stats.errors[0] and "out of bounds" in stats.errors[0]


@pytest.mark.integration
def test_buffer_is_bounded_and_drops_the_oldest(empty_vm: Server) -> None:
    writer = RemoteWriter(RemoteWriteConfig(_write_url(empty_vm), max_buffer_samples=10, max_samples_per_request=4))
    t0 = 1773200000.0
    writer.add("suanli_buffer_test", {"job": "a"}, [(t0 + i, float(i)) for i in range(25)])
    assert writer.pending == 10 and writer.stats.dropped == 15
    stats = writer.flush()
    writer.close()
    assert stats.sent == 10 and stats.requests == 3            # 4 + 4 + 2
    assert _read_back(empty_vm, "suanli_buffer_test", t0 - 60, t0 + 60) == {
        (("job", "a"),): [(t0 + i, float(i)) for i in range(15, 25)]}


def test_receiver_down_keeps_the_batch_for_the_next_flush() -> None:
    sleeps: list[float] = []
    writer = RemoteWriter(RemoteWriteConfig(f"http://127.0.0.1:{free_port()}/api/v1/write", max_retries=2,
                                            max_buffer_samples=5), sleep=sleeps.append)
    writer.add("suanli_down_test", {"job": "a"}, [(1.0 + i, float(i)) for i in range(3)])
    stats = writer.flush()
    assert writer.pending == 3 and stats.sent == 0 and stats.retries == 2 and sleeps == pytest.approx([0.03, 0.06])
    assert "ConnectError" in stats.errors[0]
    writer.add("suanli_down_test", {"job": "a"}, [(10.0 + i, float(i)) for i in range(4)])
    assert writer.pending == 5 and writer.stats.dropped == 2      # the two oldest went
    writer.close()
