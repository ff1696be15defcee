"""Latency matrix: window medians, robust baselines, node-level / directional / link-level."""

from __future__ import annotations

import numpy as np

from suanli.analysis.fabric.latency import LatencyConfig, build_matrix, classify, detect

NODES3 = ("node-a", "node-b", "node-c")
# the seed's matrix, in microseconds: a and the others ~1.2-1.3; b <-> c 25.6 both ways
SEED = np.array([[0, 1.2, 1.3], [1.2, 0, 25.6], [1.3, 25.6, 0]])


def _probes(n_nodes: int, level_us, windows: int = 10, fault_from: int = 5, per_window: int = 3):  # type: ignore[no-untyped-def]
    """Flat probe arrays: every ordered pair, `per_window` probes per 60 s window; before
    `fault_from` every pair is at its healthy level (1.2 us), after it at level_us[i, j]."""
    rng = np.random.default_rng(5)
    src, dst, ts, lat = [], [], [], []
    for w in range(windows):
        for i in range(n_nodes):
            for j in range(n_nodes):
                if i == j:
                    continue
                for k in range(per_window):
                    src.append(i)
                    dst.append(j)
                    ts.append(w * 60.0 + 10.0 * k + 1.0)
                    base = 1.2 if w < fault_from else level_us[i, j]
                    lat.append(base * 1e-6 * (1 + 0.01 * rng.standard_normal()))
    return (np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(ts), np.array(lat))


def test_window_median_by_hand() -> None:
    src = np.array([0, 0, 0, 0, 1])
    dst = np.array([1, 1, 1, 1, 0])
    ts = np.array([0.0, 10.0, 20.0, 70.0, 5.0])
    lat = np.array([3.0, 1.0, 2.0, 9.0, 4.0])
    m = build_matrix(NODES3[:2], src, dst, ts, lat, 60.0, 0.0)
    # pair (a->b): window 0 holds 3, 1, 2 -> median 2; window 1 holds 9. pair (b->a): 4, then none
    assert m.src.tolist() == [0, 1] and m.dst.tolist() == [1, 0]
    assert m.latency_s[0].tolist() == [2.0, 9.0]
    assert m.latency_s[1, 0] == 4.0 and np.isnan(m.latency_s[1, 1])
    assert m.window_start_s.tolist() == [0.0, 60.0]


def test_seed_matrix_is_a_link_level_fault_between_b_and_c() -> None:
    m = build_matrix(NODES3, *_probes(3, SEED), window_s=60.0, start_s=0.0)
    a = detect(m)
    bad = {(NODES3[s], NODES3[d]) for s, d, x in zip(m.src, m.dst, a.anomalous, strict=True) if x}
    assert bad == {("node-b", "node-c"), ("node-c", "node-b")}
    i = int(np.flatnonzero((m.src == 1) & (m.dst == 2))[0])
    assert abs(a.ratio[i] - 25.6 / 1.2) < 0.5          # 21.3x its baseline
    assert a.onset_s[i] == 300.0                        # window 5
    cls = classify(m, a)
    assert cls.node_level == {} and len(cls.directional) == 0 and len(cls.link_level) == 2


def test_one_way_pair_is_directional() -> None:
    level = SEED.copy()
    level[2, 1] = 1.2               # c -> b healthy, b -> c slow: one direction only
    m = build_matrix(NODES3, *_probes(3, level), window_s=60.0, start_s=0.0)
    cls = classify(m, detect(m))
    assert [(NODES3[m.src[i]], NODES3[m.dst[i]]) for i in cls.directional] == [("node-b", "node-c")]
    assert len(cls.link_level) == 0


def test_node_row_and_column_is_node_level() -> None:
    level = np.full((5, 5), 1.2)
    level[0, :] = level[:, 0] = 9.0  # every pair to or from node 0
    nodes = tuple(f"n{i}" for i in range(5))
    m = build_matrix(nodes, *_probes(5, level), window_s=60.0, start_s=0.0)
    cls = classify(m, detect(m))
    assert cls.node_level == {"n0": "both"}
    assert len(cls.directional) == 0 and len(cls.link_level) == 0


def test_noise_nan_and_a_short_blip_are_not_anomalies() -> None:
    src, dst, ts, lat = _probes(4, np.full((4, 4), 1.2))
    lat[5] = np.nan
    lat[6] = np.inf
    lat[(ts > 240) & (ts < 300) & (src == 1)] *= 5    # one window of congestion on node 1's row
    m = build_matrix(tuple("abcd"), src, dst, ts, lat, 60.0, 0.0)
    a = detect(m, LatencyConfig())
    assert not a.anomalous.any()


def test_sparse_sampling_keeps_only_probed_pairs() -> None:
    n = 1280
    rng = np.random.default_rng(1)
    src = np.repeat(np.arange(n), 4)
    dst = (src + rng.integers(1, n, len(src))) % n
    ts = rng.uniform(0, 600, len(src))
    m = build_matrix(tuple(str(i) for i in range(n)), src, dst, ts, np.full(len(src), 2e-6), 60.0, 0.0)
    assert m.latency_s.shape[0] == len(np.unique(src * n + dst)) <= 4 * n
    assert m.latency_s.shape[1] == 10
