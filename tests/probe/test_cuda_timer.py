"""The arithmetic that places CUDA-event times on the host clock (pure, checked by hand), and the
timer chosen on this machine."""

from __future__ import annotations

from suanli.probe.records import WallClock
from tests.probe._need import need


def test_anchor_is_the_host_start_unless_the_previous_step_ends_later() -> None:
    from suanli.probe.torch.cuda import anchored_ns

    # host start 1,000 ns; marks 0.5 ms and 2.25 ms after the step's first event
    assert anchored_ns(1_000, 0, [0.5, 2.25]) == (1_000, [501_000, 2_251_000])
    # the GPU is behind: the previous step ended at 5,000,000 ns, after this step's host start
    assert anchored_ns(1_000, 5_000_000, [0.0, 1.0]) == (5_000_000, [5_000_000, 6_000_000])


def test_without_cuda_the_wall_clock_is_used() -> None:
    torch = need("torch")
    from suanli.probe.torch import CudaEventTimer, default_timer

    timer = default_timer()
    if torch.cuda.is_available():
        assert isinstance(timer, CudaEventTimer)
    else:
        assert isinstance(timer, WallClock)
