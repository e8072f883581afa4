#!/usr/bin/env python3
"""The joint trajectory action server on the running simulated Sawyer (sawyer_sim.launch with
``jtas_mode:=<mode>``, as a user starts it), in each of its modes.

Random MoveIt-like 7-joint trajectories (a quintic spline from where the arm is through 1–2 random
via points near the neutral pose to a random goal, 2–6 s, sampled at 50 points with positions,
velocities and accelerations, within 80 % of the velocity and acceleration limits) are sent to
/robot/limb/right/follow_joint_trajectory one after the other.

* ``jtas_err_max_rad_<mode>``: the largest |desired − actual| of any joint in any feedback message
  (the server's feedback: the loop's sample and the measured position of the same cycle).
* ``jtas_success_pct``: goals of position_w_id that ended SUCCESSFUL (the other modes' in the table).
* ``jtas_overrun_pct``: (wall time from sending the goal to its result − the trajectory's duration) /
  duration, mean over the position_w_id goals that succeeded (``jtas_overrun_pct_max``: the largest).
* ``probe_sleep_late_max_ms``: beside it, in this process, the largest overshoot of a 2 ms sleep
  (the VM's stalls, which show in the overrun too).

    python src/intera_compat/bench/jtas_bench.py [--count 30] [--modes position_w_id,position,velocity] [--seed 1]
"""
import argparse
import sys
import threading
import time

import numpy as np
from scipy.interpolate import make_interp_spline

from loop_bench import start_master, start_stack, stop

ARM = [f"right_j{i}" for i in range(7)]
NEUTRAL = np.array([0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161])
SPREAD = np.array([0.6, 0.4, 0.6, 0.5, 0.6, 0.5, 0.8])  # rad around neutral: far from self-contact
POINTS = 50


def random_trajectory(rng, q0, vmax, amax, lower, upper):
    """(t, q, v, a) of a feasible random trajectory from ``q0``."""
    while True:
        vias = [np.clip(NEUTRAL + rng.uniform(-1, 1, 7) * SPREAD, lower + 0.1, upper - 0.1)
                for _ in range(int(rng.integers(2, 4)))]
        path = np.vstack([q0, *vias])
        seg = np.linalg.norm(np.diff(path, axis=0), axis=1)
        if seg.min() < 0.1:
            continue
        u = np.r_[0.0, np.cumsum(seg)] / seg.sum()
        rest = [(1, np.zeros(7)), (2, np.zeros(7))]
        spline = make_interp_spline(u, path, k=5, bc_type=(rest, rest), axis=0)
        dense = np.linspace(0.0, 1.0, 400)
        dv, da = np.abs(spline(dense, 1)).max(axis=0), np.abs(spline(dense, 2)).max(axis=0)
        need = max(np.max(dv / (0.8 * vmax)), np.sqrt(np.max(da / (0.8 * amax))))  # shortest feasible duration
        duration = max(need, rng.uniform(2.0, 6.0))
        if duration > 6.0:
            continue
        s = np.linspace(0.0, 1.0, POINTS)
        q, v, a = spline(s), spline(s, 1) / duration, spline(s, 2) / duration ** 2
        v[[0, -1]] = a[[0, -1]] = 0.0
        return s * duration, q, v, a


class Probe(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.late_max = 0.0
        self.running = True

    def run(self):
        while self.running:
            t = time.monotonic()
            time.sleep(0.002)
            self.late_max = max(self.late_max, time.monotonic() - t - 0.002)


def run_mode(port, mode, count, rng, limits):
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction, FollowJointTrajectoryGoal, \
        FollowJointTrajectoryResult
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectoryPoint

    stack = start_stack(port, [f"jtas_mode:={mode}"])
    try:
        client = actionlib.SimpleActionClient("/robot/limb/right/follow_joint_trajectory",
                                              FollowJointTrajectoryAction)
        if not client.wait_for_server(rospy.Duration(90)):
            raise RuntimeError("no follow_joint_trajectory server")
        time.sleep(2.0)  # the arm settles after enabling
        errs, overruns, ok, codes = [], [], 0, {}
        for i in range(count):
            js = rospy.wait_for_message("/robot/joint_states", JointState, 5)
            q0 = np.array([js.position[js.name.index(j)] for j in ARM])
            t, q, v, a = random_trajectory(rng, q0, *limits)
            g = FollowJointTrajectoryGoal()
            g.trajectory.joint_names = ARM
            g.trajectory.points = [JointTrajectoryPoint(positions=q[k].tolist(), velocities=v[k].tolist(),
                                                        accelerations=a[k].tolist(),
                                                        time_from_start=rospy.Duration.from_sec(t[k]))
                                   for k in range(len(t))]
            worst = [0.0]
            t0 = time.monotonic()
            client.send_goal(g, feedback_cb=lambda fb: worst.__setitem__(
                0, max(worst[0], float(np.abs(fb.error.positions).max()))))
            if not client.wait_for_result(rospy.Duration(t[-1] + 30)):
                raise RuntimeError(f"goal {i}: no result")
            took = time.monotonic() - t0
            res = client.get_result()
            codes[res.error_code] = codes.get(res.error_code, 0) + 1
            if res.error_code == FollowJointTrajectoryResult.SUCCESSFUL:
                ok += 1
            else:
                print(f"  {mode} goal {i}: error {res.error_code} {res.error_string}", file=sys.stderr)
            errs.append(worst[0])
            if res.error_code == FollowJointTrajectoryResult.SUCCESSFUL:  # an aborted goal ends early
                overruns.append(100.0 * (took - t[-1]) / t[-1])
        return dict(err=max(errs), err_mean=float(np.mean(errs)), success=100.0 * ok / count,
                    over=float(np.mean(overruns)) if overruns else float("nan"),
                    over_max=max(overruns, default=float("nan")), codes=codes)
    finally:
        stop(stack)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--modes", default="position_w_id,position,velocity")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    from intera_compat.config import load_config

    lim = load_config(None).limits
    limits = (lim.velocity[:7], lim.accel[:7], lim.lower[:7], lim.upper[:7])
    port, master = start_master("jtas_bench")
    probe = Probe()
    probe.start()
    rows = {}
    try:
        for mode in args.modes.split(","):
            rows[mode] = run_mode(port, mode, args.count, np.random.default_rng(args.seed), limits)
    finally:
        probe.running = False
        master.terminate()
    print(f"{'mode':<15}{'goals':>6}{'err max rad':>13}{'err mean':>10}{'success %':>11}{'overrun %':>11}"
          f"{'max %':>8}  codes")
    for mode, r in rows.items():
        print(f"{mode:<15}{args.count:>6}{r['err']:>13.5f}{r['err_mean']:>10.5f}{r['success']:>11.1f}"
              f"{r['over']:>11.2f}{r['over_max']:>8.2f}  {r['codes']}")
    for mode, r in rows.items():
        print(f"BENCH jtas_err_max_rad_{mode} {r['err']:.5f} rad")
    if "position_w_id" in rows:
        r = rows["position_w_id"]
        print(f"BENCH jtas_success_pct {r['success']:.1f} %")
        print(f"BENCH jtas_overrun_pct {r['over']:.2f} %")
        print(f"BENCH jtas_overrun_pct_max {r['over_max']:.2f} %")
    print(f"BENCH probe_sleep_late_max_ms {probe.late_max * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
