"""Which trace events are device activity, and what kind each is (HTA's ``get_kernel_type``, widened).

Holistic Trace Analysis (``hta/utils/utils.py``) sorts GPU events by name, first match wins:
communication (``^nccl.*Kernel``), memory (``^Memcpy``, ``^Memset``, ``^dma``), *other* (a name
that contains ``Memcpy`` or ``Sync`` past its start), and compute (the rest). suanli keeps those
rules, so its figures match HTA's, and widens two of them:

* communication also covers Ascend HCCL collectives (``hcom_allReduce__612_0_1``), names starting
  ``hccl``, and DeepEP's expert-parallel all-to-all kernels (``deep_ep::intranode::dispatch<...>``,
  ``deep_ep::internode_ll::combine<...>``, DeepEP v2's ``deep_ep::elastic::dispatch_impl<...>``).
  RCCL (ROCm) keeps NCCL's kernel names (``ncclDevKernel_Generic_4``), so HTA's rule covers it.
* *wait* is a kind of its own: an event whose name says the stream is waiting (MTIA's
  ``event_wait``) is not work; HTA counts it as compute.

Patterns are Python regular expressions tried with :func:`re.search` (anchor with ``^``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["KINDS", "KIND_CODES", "KinetoConfig", "kernel_kind"]

KINDS = ("compute", "communication", "memory", "other", "wait")
"""Kinds of device events; an event's kind code is its index here."""
KIND_CODES = {k: i for i, k in enumerate(KINDS)}

COMM_PATTERNS = (
    r"^nccl.*Kernel",                                       # NCCL, RCCL (HTA's rule)
    r"^hcom_",                                              # Ascend HCCL: hcom_allReduce__612_0_1
    r"^(?i:hccl)",                                          # HCCL kernels named after the library
    r"\bdeep_ep::(intranode|internode|internode_ll)::",     # DeepEP: dispatch, combine, notify_*
    r"\bdeep_ep::(?!layout::)\w+::\w*(dispatch|combine)",   # DeepEP v2 JIT kernels (elastic::)
)
MEMORY_PATTERNS = (r"^Memcpy", r"^Memset", r"^dma")
OTHER_PATTERNS = (r"Memcpy", r"Sync")
WAIT_PATTERNS = (r"^event_wait$",)


@dataclass(frozen=True)
class KinetoConfig:
    """How a Kineto trace's events are read: which are device activity, and each one's kind."""

    device_cats: tuple[str, ...] = ("kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events")
    """Categories (case-insensitive) of device activity. HTA takes any event with a stream, which
    adds ``cuda_sync`` (CUPTI's records of the host waiting: Stream Sync, Event Sync, Stream Wait
    Event, Context Sync) and the odd host event that carries a ``stream`` argument."""
    comm_patterns: tuple[str, ...] = COMM_PATTERNS
    """Collective-communication kernels (NCCL/RCCL, HCCL, DeepEP all-to-all)."""
    memory_patterns: tuple[str, ...] = MEMORY_PATTERNS
    """Copies and fills (HTA's memory kernels; ``dma`` covers MTIA's ``dma_request``)."""
    other_patterns: tuple[str, ...] = OTHER_PATTERNS
    """Neither compute nor communication nor memory (HTA's OTHER: ``Memcpy`` or ``Sync`` inside a name)."""
    wait_patterns: tuple[str, ...] = WAIT_PATTERNS
    """A stream waiting, not working: left out of busy time (HTA counts ``event_wait`` as compute)."""

    @cached_property
    def _rules(self) -> tuple[tuple[int, re.Pattern[str]], ...]:
        groups = (("communication", self.comm_patterns), ("memory", self.memory_patterns),
                  ("wait", self.wait_patterns), ("other", self.other_patterns))
        return tuple((KIND_CODES[kind], re.compile(p)) for kind, pats in groups for p in pats)

    def kind_code(self, name: str) -> int:
        """The index in :data:`KINDS` of a device event called ``name``."""
        for code, rx in self._rules:
            if rx.search(name):
                return code
        return KIND_CODES["compute"]

    def kind_codes(self, names: Sequence[str]) -> np.ndarray:
        """Kind codes (int8) of a list of distinct names (classify each name once, not each event)."""
        return np.fromiter((self.kind_code(n) for n in names), dtype=np.int8, count=len(names))


def kernel_kind(name: str, config: KinetoConfig | None = None) -> str:
    """``compute`` | ``communication`` | ``memory`` | ``other`` | ``wait`` for a device event's name."""
    return KINDS[(config or KinetoConfig()).kind_code(name)]
