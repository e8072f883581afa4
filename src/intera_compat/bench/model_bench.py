#!/usr/bin/env python3
"""Model timings from Python: RNEA, frame Jacobian, full tight self-collision distance sweep.

    python src/intera_compat/bench/model_bench.py [--n 20000]
"""
import argparse
import time

import numpy as np
import pinocchio as pin

from intera_compat.config import load_config
from intera_compat.model import RobotModel


def timeit(fn, qs):
    for q in qs[:100]:
        fn(q)
    t0 = time.perf_counter()
    for q in qs:
        fn(q)
    return (time.perf_counter() - t0) / len(qs) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    cfg = load_config()
    rm = RobotModel(cfg)
    rng = np.random.default_rng(0)
    qs = [rm.to_pin(rng.uniform(cfg.limits.lower, cfg.limits.upper)) for _ in range(args.n)]
    model, data = rm.model, rm.data
    v = np.zeros(model.nv)
    a = np.zeros(model.nv)
    fid = rm.frame_id("right_hand")
    geom, gdata = rm.tight, rm.tight_data

    def sweep(q):
        pin.computeDistances(model, data, geom, gdata, q)

    rows = [
        ("rnea_us", "RNEA (8 dof, pinocchio order)", timeit(lambda q: pin.rnea(model, data, q, v, a), qs)),
        ("jacobian_us", "frame Jacobian right_hand", timeit(
            lambda q: pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED), qs)),
        ("collision_sweep_us", f"FK + distance, all {len(geom.collisionPairs)} enabled tight pairs",
         timeit(sweep, qs)),
    ]
    print(f"{'metric':<22}{'what':<48}{'µs/call':>10}")
    for key, what, us in rows:
        print(f"{key:<22}{what:<48}{us:>10.2f}")
    for key, _, us in rows:
        print(f"BENCH {key} {us:.2f} us")
    print(f"BENCH collision_pairs {len(geom.collisionPairs)} pairs")


if __name__ == "__main__":
    main()
