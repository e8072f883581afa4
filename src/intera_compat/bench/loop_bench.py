#!/usr/bin/env python3
"""Realtime loop benchmark: starts the sim stack on a private master and measures

* a no-ROS spin probe first: a bare hybrid-sleep 1 kHz loop on the loop's core (SCHED_FIFO when
  granted) — the VM's noise floor, ``probe_late_pct`` (cycles > 100 µs late), measured in the same run;
* loop compute per cycle measured inside the loop process (its /diagnostics), per mode: POSITION
  (a new target every 10 ms, like move_to_joint_positions) and TRAJECTORY (1 kHz stream);
  ``loop_late_pct`` (cycles > 100 µs late) and period jitter;
* command → state round trip in TRAJECTORY mode: the right_j6 target carries a unique key;
  joint_state_publish_rate 1000; time until a gravity_compensation_torques SEAJointState echoing
  that commanded_position arrives;
* ``cmd_lost_pct``: sent but never seen by the listener; ``cmd_superseded_pct``: seen, but another
  command reached the loop in the same cycle (all are applied in order; only the last one shows);
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


def start_master(node_name):
    """A private rosmaster on a free port, and this process a rospy node on it; returns (port, master process)."""
    port = free_port()
    os.environ.update(ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_HOSTNAME="127.0.0.1")
    os.environ.setdefault("ROS_HOME", tempfile.mkdtemp(prefix=f"{node_name}-"))
    master = subprocess.Popen(["rosmaster", "--core", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    import rosgraph
    import rospy

    while not rosgraph.is_master_online():
        time.sleep(0.05)
    rospy.init_node(node_name, disable_signals=True)
    return port, master


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


def spin_probe(seconds, cpu, rt):
    """No-ROS hybrid-sleep 1 kHz loop pinned and scheduled like the realtime loop (same spin margin and
    idle latency, from the config's ``realtime`` section); returns % of cycles > 100 µs late."""
    code = f"""
import os, sys, time
sys.path[:0] = {sys.path!r}
from intera_compat.loop.scheduler import Scheduler, hold_idle_latency, setup_realtime
info = setup_realtime({cpu})
fd, _ = hold_idle_latency({int(rt["idle_latency_us"])})
s = Scheduler(0.001, {float(rt["spin_margin_us"]) * 1e-6!r}); late = n = 0
end = time.monotonic() + {seconds}
while time.monotonic() < end:
    if s.wait() > 100e-6: late += 1
    n += 1; s.advance()
print(100.0 * late / max(n, 1), info["fifo"], s.skipped)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), out[1] == "True"


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
                d = {}
                for kv in s.values:
                    try:
                        d[kv.key] = float(kv.value)
                    except ValueError:
                        pass
                diags.append(d)

    def on_sea(m):
        t = time.monotonic()
        key = int(round((m.commanded_position[6] - base6) * 1e5))
        with lock:
            if key in sent and key not in rtt:
                rtt[key] = t - sent[key]

    rospy.Subscriber("/diagnostics", DiagnosticArray, on_diag, queue_size=10)
    js = rospy.wait_for_message("/robot/joint_states", JointState, 30)
    q = [js.position[js.name.index(f"right_j{i}")] for i in range(7)]
    names = [f"right_j{i}" for i in range(7)]
    pub = rospy.Publisher("/robot/limb/right/joint_command", JointCommand, queue_size=1, tcp_nodelay=True)
    while pub.get_num_connections() == 0:
        time.sleep(0.05)
    time.sleep(1.5)

    def window(d0):
        w = diags[d0 + 1:]
        cycles = sum(x["cycles"] for x in w) or 1.0
        return {
            "mean": sum(x["compute_mean_us"] * x["cycles"] for x in w) / cycles,
            "p50": float(np.median([x["compute_p50_us"] for x in w])),
            "p99": float(np.median([x["compute_p99_us"] for x in w])),
            "late": 100.0 * sum(x["overruns"] for x in w) / cycles,
            "jitter_p99": float(np.median([x["jitter_p99_us"] for x in w])),
        }

    # --- POSITION: a new target every 10 ms (move_to_joint_positions style), a slow sweep of j0
    d0 = len(diags)
    pos = JointCommand(mode=JointCommand.POSITION_MODE, names=names, position=list(q))
    end = time.monotonic() + seconds / 2
    k = 0
    while time.monotonic() < end:
        pos.position[0] = q[0] + 0.3 * np.sin(k * 0.01 * 0.5)
        pub.publish(pos)
        k += 1
        time.sleep(0.01)
    time.sleep(1.2)
    position = window(d0)
    # --- TRAJECTORY: 1 kHz stream with a key in right_j6 (round trip, loss)
    rate = rospy.Publisher("/robot/joint_state_publish_rate", UInt16, queue_size=1, latch=True)
    rate.publish(UInt16(1000))
    js = rospy.wait_for_message("/robot/joint_states", JointState, 5)
    q = [js.position[js.name.index(n)] for n in names]
    base6 = q[6] - 0.2
    rospy.Subscriber("/robot/limb/right/gravity_compensation_torques", SEAJointState, on_sea, queue_size=100,
                     tcp_nodelay=True)
    msg = JointCommand(mode=JointCommand.TRAJECTORY_MODE, names=names, position=list(q), velocity=[0.0] * 7,
                       acceleration=[0.0] * 7)
    msg.position[6] = base6
    for _ in range(300):  # walk j6 onto the key base at rest
        pub.publish(msg)
        time.sleep(0.002)
    time.sleep(1.2)
    d0 = len(diags)
    recv0, sup0 = diags[-1]["commands_received_total"], diags[-1]["commands_superseded_total"]
    n = int(seconds / 2 * 1000)
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
    trajectory = window(d0)
    recv = diags[-1]["commands_received_total"] - recv0
    sup = diags[-1]["commands_superseded_total"] - sup0
    r = np.array(sorted(rtt.values())) * 1e3
    return {
        "position": position, "trajectory": trajectory,
        "rtt_p50_ms": float(np.percentile(r, 50)) if len(r) else float("nan"),
        "rtt_p99_ms": float(np.percentile(r, 99)) if len(r) else float("nan"),
        "rtt_samples": len(r), "sent": n, "received": recv,
        "lost_pct": 100.0 * max(0.0, n - recv) / n, "superseded_pct": 100.0 * sup / n,
        "fifo": diags[-1].get("sched_fifo", 0.0), "cpu": int(diags[-1].get("cpu", -1)),
        "idle_poll": diags[-1].get("idle_poll", 0.0),
        "faults": diags[-1].get("faults_total", 0.0),
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
    ap.add_argument("--config", default=None, help="robot config (default: the package's sawyer.yaml)")
    args = ap.parse_args()
    from intera_compat.config import load_config

    cfg = load_config(args.config)
    launch_cfg = [f"config:={os.path.abspath(cfg.path)}"]
    seconds = 8.0 if args.quick else args.seconds
    port, master = start_master("loop_bench")
    import rospy

    from intera_compat.loop.scheduler import keep_off_cpu, loop_cpu

    keep_off_cpu(loop_cpu())  # the client stays off the loop's core, like the listener process
    try:
        probe_late, probe_fifo = spin_probe(min(seconds, 20.0), (os.cpu_count() or 1) - 1, cfg.realtime)
        stack = start_stack(port, launch_cfg)
        try:
            rt = realtime_phase(seconds)
        finally:
            stop(stack)
        stack = start_stack(port, ["use_sim_time:=true", "speedup:=0", *launch_cfg])
        try:
            rtf = rtf_phase(min(seconds, 10.0))
        finally:
            stop(stack)
    finally:
        rospy.signal_shutdown("done")
        stop(master)
    P, T = rt["position"], rt["trajectory"]
    late_goal = 1.5 * probe_late + 0.1
    rows = [
        ("probe_late_pct", probe_late, "%", "(floor)"),
        ("loop_late_pct", max(P["late"], T["late"]), "%", f"≤ {late_goal:.2f}"),
        ("loop_compute_p50_us", max(P["p50"], T["p50"]), "us", "≤ 50"),
        ("loop_compute_mean_us", max(P["mean"], T["mean"]), "us", "≤ 100"),
        ("loop_compute_position_p50_us", P["p50"], "us", ""),
        ("loop_compute_position_mean_us", P["mean"], "us", ""),
        ("loop_compute_position_p99_us", P["p99"], "us", ""),
        ("loop_compute_trajectory_p50_us", T["p50"], "us", ""),
        ("loop_compute_trajectory_mean_us", T["mean"], "us", ""),
        ("loop_compute_trajectory_p99_us", T["p99"], "us", ""),
        ("loop_jitter_p99_us", max(P["jitter_p99"], T["jitter_p99"]), "us", ""),
        ("cmd_roundtrip_p50_ms", rt["rtt_p50_ms"], "ms", "≤ 1.5"),
        ("cmd_roundtrip_p99_ms", rt["rtt_p99_ms"], "ms", ""),
        ("cmd_lost_pct", rt["lost_pct"], "%", "≤ 0.1"),
        ("cmd_superseded_pct", rt["superseded_pct"], "%", ""),
        ("sim_rtf", rtf, "x", "≥ 5"),
    ]
    print(f"window {seconds:.0f} s (half POSITION, half TRAJECTORY), loop on CPU {rt['cpu']}, SCHED_FIFO "
          f"{bool(rt['fifo'])} (probe {probe_fifo}), spin margin {cfg.realtime['spin_margin_us']} us, "
          f"idle poll {bool(rt['idle_poll'])}, {rt['sent']} commands sent, {rt['received']:.0f} received, "
          f"{rt['rtt_samples']} round-trip samples, {rt['faults']:.0f} faults")
    print(f"{'metric':<34}{'value':>10}  {'unit':<5}{'goal':>10}")
    for name, v, unit, goal in rows:
        print(f"{name:<34}{v:>10.3f}  {unit:<5}{goal:>10}")
    for name, v, unit, _ in rows:
        print(f"BENCH {name} {v:.3f} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
