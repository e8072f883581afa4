#!/usr/bin/env python3
"""IK benchmark: random reachable poses (FK of uniform in-limit configurations, fixed seed).

    python src/intera_compat/bench/ik_bench.py [--n 10000] [--seed 0]

Case 1 seeds from the neutral pose (SEED_AUTO-like: the seed, then seed-map restarts); case 2 is
tracking: the seed is the answer perturbed by ≤ 0.05 rad (SEED_CURRENT near the answer).
``--seed`` is the solver's (it draws the seed map); the poses always come from seed 42.
"""
import argparse
import time

import numpy as np

from intera_compat.config import load_config
from intera_compat.kinematics import IKSolver
from intera_compat.model import RobotModel


def run(rm, ik, goals, seeds, reference_fn):
    times, pos, rot, ok, restarted = [], [], [], 0, 0
    for goal, seed in zip(goals, seeds):
        t0 = time.perf_counter()
        r = ik.solve("right_hand", goal, [seed], reference_fn(seed), check_collision=False)
        times.append(time.perf_counter() - t0)
        if r.success:
            ok += 1
            restarted += r.seed_index < 0
            pos.append(r.pos_err)
            rot.append(r.rot_err)
    t = np.array(times) * 1e3
    p50, p90, p99 = np.percentile(t, [50, 90, 99])
    return {"success_pct": 100.0 * ok / len(goals), "restart_pct": 100.0 * restarted / len(goals),
            "p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "max_ms": t.max(),
            "pos_err_max": max(pos) if pos else np.nan, "rot_err_max": max(rot) if rot else np.nan}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cfg = load_config()
    rm = RobotModel(cfg)
    t0 = time.perf_counter()
    ik = IKSolver(rm, seed=args.seed)
    init_ms = (time.perf_counter() - t0) * 1e3
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
    print(f"{'case':<28}{'success %':>10}{'restart %':>10}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}"
          f"{'max pos err m':>15}{'max rot err rad':>17}")
    for name, r in (("seed neutral (+restarts)", cold), ("tracking (seed near answer)", track)):
        print(f"{name:<28}{r['success_pct']:>10.2f}{r['restart_pct']:>10.2f}{r['p50_ms']:>9.3f}{r['p90_ms']:>9.3f}"
              f"{r['p99_ms']:>9.3f}{r['max_ms']:>9.3f}{r['pos_err_max']:>15.2e}{r['rot_err_max']:>17.2e}")
    print(f"solver construction (seed map of {len(ik.seed_map)}): {init_ms:.1f} ms")
    print(f"BENCH ik_success_pct {cold['success_pct']:.2f} %")
    print(f"BENCH ik_restart_pct {cold['restart_pct']:.2f} %")
    print(f"BENCH ik_p50_ms {cold['p50_ms']:.3f} ms")
    print(f"BENCH ik_p90_ms {cold['p90_ms']:.3f} ms")
    print(f"BENCH ik_p99_ms {cold['p99_ms']:.3f} ms")
    print(f"BENCH ik_max_ms {cold['max_ms']:.3f} ms")
    print(f"BENCH ik_track_success_pct {track['success_pct']:.2f} %")
    print(f"BENCH ik_track_p50_ms {track['p50_ms']:.3f} ms")
    print(f"BENCH ik_track_p99_ms {track['p99_ms']:.3f} ms")
    print(f"BENCH ik_init_ms {init_ms:.1f} ms")


if __name__ == "__main__":
    main()
