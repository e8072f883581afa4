#!/usr/bin/env python3
"""Motion controller planning and execution, over random feasible requests (no ROS).

* ``plan_joint10_ms``: JOINT request through 10 waypoints (random walk in the padded joint range), planned
  as the motion controller plans it (``MotionPlanner.plan``: TOPP-RA timing and the path's self-collision
  check); walks that collide are refused (fast) and drawn again, so only complete plans are timed.
* ``plan_cart1m_ms``: CARTESIAN plan of a 1 m path with two blended corners, collision check included.
* ``time_optimality``: a JOINT plan's duration / TOPP-RA's on the same chord-length spline with the same
  limits and no planning margin (fine grid): what the margins, knot sampling and time stretch cost.
* ``exec_duration_ratio`` and ``track_err_max_rad``: each JOINT plan run by the loop's cycle on the MuJoCo
  Sawyer (``OfflineLoop``, loop time): executed duration (send → SUCCEEDED) / planned, and the largest
  |setpoint − measured| of any arm joint in any cycle while it ran.

    python src/intera_compat/bench/motion_bench.py [--requests 50] [--seed 1]
"""
import argparse
import time

import numpy as np
import pinocchio as pin
import toppra
import toppra.algorithm
import toppra.constraint

from intera_compat.config import load_config
from intera_compat.data import codes as T
from intera_compat.loop.offline import OfflineLoop
from intera_compat.motion.errors import MotionError
from intera_compat.motion.joint_planner import SAME_POINT, plan_joint
from intera_compat.motion.planner import MotionPlanner
from intera_compat.motion.request import CARTESIAN, JOINT, Motion, Waypoint

EXPRESS = np.array([10.0, 8.0, 10.0, 10.0, 12.0, 12.0, 12.0])


def random_walk(rng, start, lower, upper, count, step=0.25, pad=0.1):
    r = upper - lower
    out, last = [], start
    while len(out) < count:
        lo, hi = np.maximum(lower + pad * r, last - step * r), np.minimum(upper - pad * r, last + step * r)
        p = rng.uniform(np.minimum(lo, hi), np.maximum(lo, hi))
        if np.abs(p - last).max() > 2 * SAME_POINT:
            out.append(p)
            last = p
    return np.array(out)


def toppra_reference(start, pts, vmax, amax):
    P = np.vstack((start, pts))
    s = np.concatenate(([0.0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))))
    path = toppra.SplineInterpolator(s, P)
    cons = [toppra.constraint.JointVelocityConstraint(np.vstack((-vmax, vmax)).T),
            toppra.constraint.JointAccelerationConstraint(np.vstack((-amax, amax)).T)]
    inst = toppra.algorithm.TOPPRA(cons, path, gridpoints=np.linspace(0.0, s[-1], 1001), solver_wrapper="seidel")
    traj = inst.compute_trajectory(0.0, 0.0)
    return None if traj is None else float(traj.duration)


def stats(x):
    x = np.asarray(x, float)
    return np.percentile(x, 50), x.mean(), np.percentile(x, 99) if len(x) else np.nan, x.max()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    cfg = load_config()
    planner = MotionPlanner(cfg)
    n = cfg.n_arm
    lim = cfg.limits
    lower, upper, vmax, amax = lim.lower[:n], lim.upper[:n], lim.velocity[:n], lim.accel[:n]
    q_home = cfg.full_pose("neutral")

    # ---- JOINT, 10 waypoints: planning time
    t_plan10, joint_refused = [], 0
    while len(t_plan10) < args.requests:
        pts = random_walk(rng, q_home[:n], lower, upper, 10)
        ratio = rng.uniform(0.3, 1.0)
        wps = [Waypoint(p, None, "", ratio, EXPRESS.copy(), np.full(n, 0.0087), 0.6, 0.6, 1.57, 1.57, 0.0)
               for p in pts]
        motion = Motion("bench", JOINT, "right_hand", wps, 1.0, 1.0, np.full(n, 0.0087), 1.0, 0.0)
        t0 = time.perf_counter()
        try:
            planner.plan(motion, q_home)
        except MotionError:
            joint_refused += 1
            continue
        t_plan10.append((time.perf_counter() - t0) * 1e3)

    # ---- CARTESIAN, 1 m with two corners: planning time
    t_cart, cart_fail = [], 0
    hand = planner.rm.fk(q_home, "right_hand")
    for _ in range(args.requests):
        # a 1 m polyline in front of the robot: 0.4 + 0.3 + 0.3 m, corners blended 5–10 cm
        x0 = hand.translation + rng.uniform(-0.03, 0.03, 3)
        corners = [x0 + [0.0, -0.2, 0.0], x0 + [0.0, 0.2, 0.0], x0 + [0.0, 0.2, -0.3], x0 + [0.0, -0.1, -0.3]]
        wps = [Waypoint(None, pin.SE3(hand.rotation, np.array(c)), "", 1.0, EXPRESS.copy(), np.full(n, 0.0087),
                        0.6, 0.6, 1.57, 1.57, 0.0 if k in (0, 3) else rng.uniform(0.05, 0.1))
               for k, c in enumerate(corners)]
        motion = Motion("bench", CARTESIAN, "right_hand", wps, 1.0, 1.0, np.full(n, 0.0087), 1.0, 0.0)
        q = q_home.copy()
        try:  # start at the first corner: the timed request is the 1 m polyline from there
            q = _at(planner, motion, q)
            motion.waypoints = wps[1:]
            t0 = time.perf_counter()
            planner.plan(motion, q)
            t_cart.append((time.perf_counter() - t0) * 1e3)
        except MotionError:
            cart_fail += 1

    # ---- JOINT, 1–5 waypoints: optimality and execution on the sim
    loop = OfflineLoop()
    loop.step()
    ratios, optimality, track, skipped = [], [], [], 0
    arm = slice(0, n)
    while len(ratios) < args.requests:
        q0 = loop.arm_q
        W = int(rng.integers(1, 6))
        pts = random_walk(rng, q0, lower, upper, W)
        ratio = float(rng.uniform(0.3, 1.0))
        try:
            plan = plan_joint(q0, pts, np.full(W, ratio), np.tile(EXPRESS, (W, 1)), lower, upper, vmax, amax)
            full = loop.q
            planner.check_collisions(plan, full)
        except MotionError:
            skipped += 1
            continue
        ref = toppra_reference(q0, pts, ratio * vmax, np.minimum(EXPRESS, amax))
        if ref:
            optimality.append(plan.duration / ref)
        tid = loop.trajectories.execute(plan.t, plan.q, plan.v)
        t_start, err = loop.cycle.now, 0.0
        while tid not in loop.trajectories.results:
            loop.step()
            st = loop.state.local
            err = max(err, float(np.abs(st.cmd_position[arm] - st.position[arm]).max()))
            if loop.cycle.now - t_start > plan.duration * 2 + 5:
                break
        res = loop.trajectories.results.get(tid)
        if res is None or res.status != T.SUCCEEDED:
            raise SystemExit(f"execution failed: {res and res.message}")
        ratios.append((loop.cycle.now - t_start) / plan.duration)
        track.append(err)
        loop.run(0.3)  # settle before the next request

    rows = [("plan_joint10_ms", "ms", t_plan10), ("plan_cart1m_ms", "ms", t_cart),
            ("time_optimality", "ratio", optimality), ("exec_duration_ratio", "ratio", ratios),
            ("track_err_max_rad", "rad", track)]
    print(f"{'metric':22s} {'p50':>9s} {'mean':>9s} {'p99':>9s} {'max':>9s}  n   ({args.requests} requests each; "
          f"{joint_refused} colliding 10-waypoint walks and {skipped} colliding execution requests redrawn, "
          f"{cart_fail} CARTESIAN failures)")
    for name, unit, x in rows:
        print(f"{name:22s} " + " ".join(f"{v:9.4f}" for v in stats(x)) + f"  {len(x)}")
    for name, unit, x in rows:
        p50, mean, p99, mx = stats(x)
        print(f"BENCH {name} {p50:.4f} {unit}")
        if name in ("exec_duration_ratio", "track_err_max_rad", "time_optimality"):
            print(f"BENCH {name}_max {mx:.4f} {unit}")


def _at(planner, motion, q):
    """The configuration with the tip on the first waypoint (IK from ``q``)."""
    res = planner.ik.solve(motion.tip, motion.waypoints[0].pose, [q[:planner.n]], q)
    if res is None or not res.success:
        raise MotionError("CARTESIAN_INTERPOLATION_FAILED", "bench start pose unreachable")
    return res.q


if __name__ == "__main__":
    main()
