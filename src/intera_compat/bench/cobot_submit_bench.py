#!/usr/bin/env python3
"""How long the loop's cycle is held when it hands a trajectory to the Cobot backend (``CobotBackend.submit``: a copy;
the resampling runs in the OPC UA client's thread), and, beside it in the same run, that resampling itself (what
the cycle was held for before): a noisy 10000-knot recording.

    python src/intera_compat/bench/cobot_submit_bench.py [--knots 10000] [--repeat 10]

BENCH cobot_submit knots=… cycle_ms=… resample_ms=… (best of ``repeat``)
"""
import argparse
import time

import numpy as np

from intera_compat.config import load_config
from intera_compat.emulator.cobot_plc import default_config
from intera_compat.hardware.cobot import CobotBackend
from intera_compat.model import RobotModel
from intera_compat.trajectory.resample import resample


def best(fn, repeat: int) -> float:
    out = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--knots", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    b = CobotBackend(RobotModel(load_config(default_config())), {})
    b._enabled = b._link_ok = True  # (no PLC: the posted call is dropped unrun)
    b._post = lambda coro: coro.close()
    t = np.linspace(0.0, 100.0, args.knots)
    q = np.outer(np.sin(t / 10.0), np.ones(b.n)) + 1e-5 * np.random.default_rng(0).standard_normal((args.knots, b.n))
    v = np.gradient(q, t, axis=0)
    a = np.zeros_like(q)
    cycle = best(lambda: b.submit(t, q, v, a), args.repeat)
    work = best(lambda: resample(q, b.resampling_delta), args.repeat)
    print(f"BENCH cobot_submit knots={args.knots} cycle_ms={cycle:.3f} resample_ms={work:.2f}")


if __name__ == "__main__":
    main()
