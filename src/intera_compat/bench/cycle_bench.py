#!/usr/bin/env python3
"""The loop's cycle alone: ``LoopCycle.step`` on the MuJoCo Sawyer, stepped back to back in one
process (no ROS, no listener, no scheduler), per mode. It separates the pipeline's own cost from
what the running stack adds around it (``loop_bench.py`` measures that, inside the loop process).

    python src/intera_compat/bench/cycle_bench.py [--cycles 5000]
"""
import argparse
import gc
import time

import numpy as np

from intera_compat.data.codes import POSITION_MODE, TRAJECTORY_MODE
from intera_compat.loop.offline import OfflineLoop


def timed(L, n, every=None):
    step, clock, ts = L.cycle.step, time.perf_counter, np.zeros(n)
    for k in range(n):
        if every is not None and k % 10 == 0:
            every(k)
        t = clock()
        step()
        ts[k] = clock() - t
    return ts[n // 10:] * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=5000)
    n = ap.parse_args().cycles
    L = OfflineLoop()
    L.step()
    names = L.cfg.joint_names
    q0 = L.arm_q
    gc.collect()
    gc.freeze()
    gc.disable()
    rows = []
    target = q0 + np.array([0.4, -0.3, 0.3, -0.4, 0.3, 0.3, 0.3])
    L.send(POSITION_MODE, names, position=target)  # a move, then holding the reached target
    rows.append(("position", timed(L, n, lambda k: L.send(POSITION_MODE, names, position=target))))
    v = np.array([0.0, 0.0, 0.0, -0.3, 0.0, 0.0, 0.0])
    here = L.arm_q
    t0 = L.cycle.now
    rows.append(("trajectory", timed(L, n, lambda k: L.send(
        TRAJECTORY_MODE, names, position=here + v * (L.cycle.now - t0), velocity=v, acceleration=np.zeros(7)))))
    print(f"{'mode':12s} {'p50 µs':>8s} {'mean µs':>8s} {'p99 µs':>8s}   ({n} cycles, MuJoCo step included)")
    for name, ts in rows:
        print(f"{name:12s} {np.percentile(ts, 50):8.1f} {ts.mean():8.1f} {np.percentile(ts, 99):8.1f}")
    for name, ts in rows:
        print(f"BENCH cycle_{name}_p50_us {np.percentile(ts, 50):.1f} us")
        print(f"BENCH cycle_{name}_mean_us {ts.mean():.1f} us")
    print(f"BENCH cycle_faults {L.cycle.counts['faults']} count")
    gc.unfreeze()
    gc.enable()


if __name__ == "__main__":
    main()
