#!/usr/bin/env python3
"""IK benchmark: random reachable poses (FK of uniform in-limit configurations, fixed seed).

    python src/intera_compat/bench/ik_bench.py [--n 10000]

Case 1 seeds from the neutral pose (SEED_AUTO-like: the seed, then random restarts); case 2 is
tracking: the seed is the answer perturbed by ≤ 0.05 rad (SEED_CURRENT near the answer).
"""
import argparse
import time

import numpy as np

from intera_compat.config import load_config
from intera_compat.kinematics import IKSolver
from intera_compat.model import RobotModel


def run(rm, ik, goals, seeds, reference_fn):
    times, pos, rot, ok = [], [], [], 0
    for goal, seed in zip(goals, seeds):
        t0 = time.perf_counter()
        r = ik.solve("right_hand", goal, [seed], reference_fn(seed), check_collision=False)
        times.append(time.perf_counter() - t0)
        if r.success:
            ok += 1
            pos.append(r.pos_err)
            rot.append(r.rot_err)
    t = np.array(times) * 1e3
    return {"success_pct": 100.0 * ok / len(goals), "p50_ms": np.percentile(t, 50), "p99_ms": np.percentile(t, 99),
            "pos_err_max": max(pos) if pos else np.nan, "rot_err_max": max(rot) if rot else np.nan}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000)
    args = ap.parse_args()
    cfg = load_config()
    rm = RobotModel(cfg)
    ik = IKSolver(rm, seed=0)
    rng = np.random.default_rng(42)
    qs = [rng.uniform(cfg.limits.lower, cfg.limits.upper) for _ in range(args.n)]
    for q in qs:
        q[cfg.n_arm:] = 0.0
    goals = [rm.fk(q, "right_hand") for q in qs]
    neutral = cfg.named_pose(cfg.limb, "neutral")
    full = lambda s: np.r_[s, np.zeros(len(cfg.all_joints) - cfg.n_arm)]  # noqa: E731
    cold = run(rm, ik, goals, [neutral] * args.n, full)
    near = [q[: cfg.n_arm] + rng.uniform(-0.05, 0.05, cfg.n_arm) for q in qs]
    track = run(rm, ik, goals, near, full)
    print(f"{'case':<28}{'success %':>10}{'p50 ms':>9}{'p99 ms':>9}{'max pos err m':>15}{'max rot err rad':>17}")
    for name, r in (("seed neutral (+restarts)", cold), ("tracking (seed near answer)", track)):
        print(f"{name:<28}{r['success_pct']:>10.2f}{r['p50_ms']:>9.3f}{r['p99_ms']:>9.3f}"
              f"{r['pos_err_max']:>15.2e}{r['rot_err_max']:>17.2e}")
    print(f"BENCH ik_success_pct {cold['success_pct']:.2f} %")
    print(f"BENCH ik_p50_ms {cold['p50_ms']:.3f} ms")
    print(f"BENCH ik_p99_ms {cold['p99_ms']:.3f} ms")
    print(f"BENCH ik_track_success_pct {track['success_pct']:.2f} %")
    print(f"BENCH ik_track_p50_ms {track['p50_ms']:.3f} ms")


if __name__ == "__main__":
    main()
