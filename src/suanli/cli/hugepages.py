"""NumPy's transparent-huge-page advice, off unless the user asks for it (issue 18).

NumPy advises the kernel to back every array of 4 MiB or more with transparent huge pages
(``madvise(MADV_HUGEPAGE)``). suanli's big arrays are short-lived temporaries (a job's spans as
columns, masks and sort orders over them), each freed back to the kernel and faulted in afresh by
the next, and with the advice each of those faults clears and maps 2 MiB. Measured on the
128-node hour (``suanli diagnose --db``, two runs each, alternating): with the advice 40-46 s wall,
16-17 s of it system time; without it 27-32 s, 5 s system time, the same diagnosis and 5 % less
peak memory.

``NUMPY_MADVISE_HUGEPAGE`` set by the user wins (NumPy read it at import).
"""

from __future__ import annotations

import os

__all__ = ["avoid_hugepage_faults"]


def avoid_hugepage_faults() -> bool:
    """Turn NumPy's huge-page advice off unless ``NUMPY_MADVISE_HUGEPAGE`` is set; True if turned off."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return False
    from numpy._core import multiarray
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    if setter is None:                   # a NumPy without the switch: nothing to turn off
        return False
    setter(False)
    return True
