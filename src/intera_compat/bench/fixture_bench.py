#!/usr/bin/env python3
"""Test fixture benchmark: how fast a user's scripted scenario runs on ``sawyer_test.launch`` (simulated time, as fast
as the robot's own topics keep up).

* ``test_fixture_rtf``: a scripted motion of exactly 10 s of robot time (a client streaming position commands at
  ~500 Hz wall through five poses, 2 s of robot time each), 10 s over the wall seconds it took, median of
  ``--runs`` (goal ≥ 5: ≤ 2 s); ``test_fixture_wall_per_10s_s`` those wall seconds;
* ``test_fixture_script_rtf``: robot seconds per wall second over the example script ``wave_hello.py --waves 3``,
  its own Python start-up included (what a user's suite sees per script);
* ``test_fixture_idle_rtf``: the same with nothing running (the robot holding);
* ``test_fixture_ready_s``: wall seconds from roslaunch to /robot/ready;
* the no-ROS probe, measured in the same run: ``test_fixture_probe_rtf``, the loop's own cycle (``OfflineLoop``,
  the same MuJoCo Sawyer and position moves, no ROS) — what this machine allows at most.

    python src/intera_compat/bench/fixture_bench.py [--runs 5]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loop_bench import start_master, start_stack, stop  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "examples", "wave_hello.py")


def probe_rtf(seconds: float = 10.0) -> float:
    """The bare loop cycle (no ROS) moving the arm like the script: robot seconds per wall second."""
    from intera_compat.data.codes import POSITION_MODE
    from intera_compat.loop.offline import OfflineLoop
    L = OfflineLoop()
    L.step()
    names, q0 = L.cfg.joint_names, L.arm_q
    t0 = time.perf_counter()
    for k in range(int(seconds / 2)):
        target = q0 + np.array([0.5 if k % 2 == 0 else -0.5, 0, 0, 0, 0, 0.3, 0])
        L.run(2.0, every=lambda t=target: L.send(POSITION_MODE, names, position=t))
    return (int(seconds / 2) * 2.0) / (time.perf_counter() - t0)


ARM = [f"right_j{i}" for i in range(7)]
POSES = [[0.5, -1.18, 0.0, 2.18, 0.0, 0.2, 3.3161], [-0.5, -1.0, 0.2, 2.0, 0.0, 0.9, 3.0],
         [0.3, -1.3, -0.2, 2.3, 0.3, 0.4, 3.5], [-0.3, -1.1, 0.0, 2.1, -0.3, 0.7, 3.2],
         [0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161]]


def scripted_motion(seconds: float = 10.0) -> float:
    """Wall seconds for ``seconds`` of robot time of streamed position commands through ``POSES``."""
    import rospy
    from intera_core_msgs.msg import JointCommand

    from intera_compat import testing as T
    pub = rospy.Publisher("/robot/limb/right/joint_command", JointCommand, queue_size=1, tcp_nodelay=True)
    while pub.get_num_connections() == 0:
        time.sleep(0.01)
    T.enable()
    t0, w0 = T.sim_time(), time.monotonic()
    while (t := T.sim_time()) - t0 < seconds:
        pose = POSES[min(int((t - t0) / (seconds / len(POSES))), len(POSES) - 1)]
        pub.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=ARM, position=pose))
        time.sleep(0.002)
    return time.monotonic() - w0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    probe = probe_rtf()
    port, master = start_master("fixture_bench")
    from intera_compat import testing as T
    w0 = time.monotonic()
    stack = start_stack(port, ["initial_pose:=neutral"], "sawyer_test.launch")
    try:
        T.wait_for_ready()
        ready_s = time.monotonic() - w0
        t0, w = T.sim_time(), time.monotonic()
        time.sleep(3.0)
        idle = (T.sim_time() - t0) / (time.monotonic() - w)
        walls = []
        for _ in range(args.runs):
            walls.append(scripted_motion())
            print(f"  10 s of robot time in {walls[-1]:.2f} s ({10.0 / walls[-1]:.1f}x)", flush=True)
        rtfs = []
        for _ in range(args.runs):
            t0, w = T.sim_time(), time.monotonic()
            run = subprocess.run([sys.executable, SCRIPT, "--waves", "3"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, timeout=300)
            wall, robot = time.monotonic() - w, T.sim_time() - t0
            if run.returncode != 0:
                print(run.stdout)
                return 1
            rtfs.append(robot / wall)
            print(f"  run: {robot:.2f} s of robot time in {wall:.2f} s ({robot / wall:.1f}x)", flush=True)
    finally:
        stop(stack)
        stop(master)
    wall = float(np.median(walls))
    rows = (("test_fixture_probe_rtf", probe, "x"), ("test_fixture_ready_s", ready_s, "s"),
            ("test_fixture_idle_rtf", idle, "x"), ("test_fixture_rtf", 10.0 / wall, "x"),
            ("test_fixture_wall_per_10s_s", wall, "s"), ("test_fixture_script_rtf", float(np.median(rtfs)), "x"))
    print(f"{'measure':<34}{'value':>10}")
    for name, value, unit in rows:
        print(f"{name:<34}{value:>10.2f} {unit}")
    for name, value, unit in rows:
        print(f"BENCH {name} {value:.3f} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
