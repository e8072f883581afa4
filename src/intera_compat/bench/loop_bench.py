#!/usr/bin/env python3
"""Realtime loop benchmark: starts the sim stack on a private master and measures

* loop compute per cycle (mean, p99), period jitter p99 and cycles > 100 µs late (from the loop's
  own /diagnostics, real-time mode);
* command → state round trip: a client streams TRAJECTORY_MODE JointCommands at 1 kHz (zero
  velocity/acceleration, so the commanded position *is* the target) whose right_j6 target carries
  a unique key; joint_state_publish_rate 1000; time until a gravity_compensation_torques
  SEAJointState echoing that commanded_position arrives;
* JointCommand transport drops at 1 kHz (sent vs received by the node);
* whole-stack real-time factor with use_sim_time and speedup unlimited.

    python src/intera_compat/bench/loop_bench.py [--seconds 60] [--quick]
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_stack(port, extra):
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_HOSTNAME="127.0.0.1")
    log = open(os.path.join(tempfile.gettempdir(), f"loop_bench_{port}.log"), "w")
    return subprocess.Popen(["roslaunch", "-p", str(port), "intera_compat", "sawyer_sim.launch", *extra], env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def realtime_phase(seconds):
    import rospy
    from diagnostic_msgs.msg import DiagnosticArray
    from intera_core_msgs.msg import JointCommand, SEAJointState
    from sensor_msgs.msg import JointState
    from std_msgs.msg import UInt16

    diags, rtt, lock = [], {}, threading.Lock()
    sent = {}

    def on_diag(m):
        for s in m.status:
            if s.name == "Realtime Control Loop":
                diags.append({kv.key: float(kv.value) for kv in s.values})

    def on_sea(m):
        t = time.monotonic()
        key = int(round((m.commanded_position[6] - base6) * 1e5))
        with lock:
            if key in sent and key not in rtt:
                rtt[key] = t - sent[key]

    rospy.Subscriber("/diagnostics", DiagnosticArray, on_diag, queue_size=10)
    js = rospy.wait_for_message("/robot/joint_states", JointState, 30)
    q = [js.position[js.name.index(f"right_j{i}")] for i in range(7)]
    base6 = q[6] - 0.2
    rate = rospy.Publisher("/robot/joint_state_publish_rate", UInt16, queue_size=1, latch=True)
    rate.publish(UInt16(1000))
    rospy.Subscriber("/robot/limb/right/gravity_compensation_torques", SEAJointState, on_sea, queue_size=100,
                     tcp_nodelay=True)
    pub = rospy.Publisher("/robot/limb/right/joint_command", JointCommand, queue_size=1, tcp_nodelay=True)
    while pub.get_num_connections() == 0:
        time.sleep(0.05)
    msg = JointCommand(mode=JointCommand.TRAJECTORY_MODE, names=[f"right_j{i}" for i in range(7)],
                       position=list(q), velocity=[0.0] * 7, acceleration=[0.0] * 7)
    time.sleep(1.0)
    d0 = len(diags)
    recv0 = diags[-1]["commands_received_total"] if diags else 0.0
    n = int(seconds * 1000)
    nxt = time.monotonic()
    for k in range(1, n + 1):
        msg.position[6] = base6 + k * 1e-5  # walks 0.01 rad per s: a changing target with a key
        with lock:
            sent[k] = time.monotonic()
        pub.publish(msg)
        nxt += 0.001
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
    time.sleep(2.5)
    window = diags[d0 + 1:]
    recv = diags[-1]["commands_received_total"] - recv0
    r = np.array(sorted(rtt.values())) * 1e3
    cycles = sum(w["cycles"] for w in window)
    return {
        "compute_mean_us": float(np.mean([w["compute_mean_us"] for w in window])),
        "compute_p99_us": float(np.median([w["compute_p99_us"] for w in window])),
        "jitter_p99_us": float(np.median([w["jitter_p99_us"] for w in window])),
        "overruns_pct": 100.0 * sum(w["overruns"] for w in window) / max(cycles, 1),
        "rtt_p50_ms": float(np.percentile(r, 50)) if len(r) else float("nan"),
        "rtt_p99_ms": float(np.percentile(r, 99)) if len(r) else float("nan"),
        "rtt_samples": len(r), "sent": n, "received": recv,
        "drop_pct": 100.0 * max(0.0, n - recv) / n,
        "fifo": window[-1]["sched_fifo"] if window else 0.0,
    }


def rtf_phase(seconds):
    import rospy
    from rosgraph_msgs.msg import Clock

    clocks = []
    sub = rospy.Subscriber("/clock", Clock, lambda m: clocks.append((time.monotonic(), m.clock.to_sec())))
    end = time.monotonic() + 30
    while len(clocks) < 10 and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(0.5)
    w0, s0 = clocks[-1]
    time.sleep(seconds)
    w1, s1 = clocks[-1]
    sub.unregister()
    return (s1 - s0) / (w1 - w0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="≈10 s of measurement, for CI smoke runs")
    args = ap.parse_args()
    seconds = 8.0 if args.quick else args.seconds
    port = free_port()
    os.environ.update(ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_HOSTNAME="127.0.0.1")
    os.environ.setdefault("ROS_HOME", tempfile.mkdtemp(prefix="loop-bench-"))
    master = subprocess.Popen(["rosmaster", "--core", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    import rosgraph
    import rospy

    while not rosgraph.is_master_online():
        time.sleep(0.05)
    rospy.init_node("loop_bench", disable_signals=True)
    try:
        stack = start_stack(port, [])
        try:
            rt = realtime_phase(seconds)
        finally:
            stop(stack)
        stack = start_stack(port, ["use_sim_time:=true", "speedup:=0"])
        try:
            rtf = rtf_phase(min(seconds, 10.0))
        finally:
            stop(stack)
    finally:
        rospy.signal_shutdown("done")
        stop(master)
    rows = [
        ("loop_compute_mean_us", rt["compute_mean_us"], "us", "≤ 100"),
        ("loop_compute_p99_us", rt["compute_p99_us"], "us", ""),
        ("loop_jitter_p99_us", rt["jitter_p99_us"], "us", "≤ 50"),
        ("loop_overruns_pct", rt["overruns_pct"], "%", "≤ 0.5"),
        ("cmd_roundtrip_p50_ms", rt["rtt_p50_ms"], "ms", "≤ 1.5"),
        ("cmd_roundtrip_p99_ms", rt["rtt_p99_ms"], "ms", "≤ 3"),
        ("cmd_drop_pct", rt["drop_pct"], "%", "≤ 0.1"),
        ("sim_rtf", rtf, "x", "≥ 5"),
    ]
    print(f"window {seconds:.0f} s, SCHED_FIFO {bool(rt['fifo'])}, {rt['sent']} commands sent, "
          f"{rt['received']:.0f} received, {rt['rtt_samples']} round-trip samples")
    print(f"{'metric':<24}{'value':>10}  {'unit':<5}{'goal':>8}")
    for name, v, unit, goal in rows:
        print(f"{name:<24}{v:>10.3f}  {unit:<5}{goal:>8}")
    for name, v, unit, _ in rows:
        print(f"BENCH {name} {v:.3f} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
