"""The cycle's numba kernels compiled — or, as they normally are, loaded from numba's cache — before a robot process
connects to its arm: a cold cache (a fresh checkout or pull, another CPU, a numba upgrade, an unwritable
``__pycache__``) costs a compile of a minute or two, which must not pass with an arm connected and no cycle running
(a PLC's lifebit would go silent, a UR's watchdog trip). ``./setup.sh`` runs this once (``python -m
intera_compat.loop.warm``); every loop process runs it before ``Backend.connect``."""
from __future__ import annotations

import sys
import time

from ..control import id_kernel
from ..hardware import sim_kernel
from ..safety import kernels as safety_kernels
from ..sources import stream_kernel

SLOW = 2.0  # s: a warm-up this long compiled (a cache load takes well under a second)


def warm_kernels() -> float:
    """Every kernel of the cycle ready for its argument types; the seconds it took."""
    t0 = time.monotonic()
    for module in (id_kernel, stream_kernel, sim_kernel, safety_kernels):
        module.warm()
    return time.monotonic() - t0


def main() -> int:
    took = warm_kernels()
    print(f"intera_compat: the cycle's kernels ready in {took:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
