#!/usr/bin/env python3
"""Realtime loop benchmark: starts the sim stack on a private master and measures

* a no-ROS spin probe first: a bare hybrid-sleep 1 kHz loop on the loop's core (SCHED_FIFO when
  granted) — the VM's noise floor, ``probe_late_pct`` (cycles > 100 µs late), measured in the same run;
* loop compute per cycle measured inside the loop process (its /diagnostics), per mode: POSITION
  (a new target every 10 ms, like move_to_joint_positions) and TRAJECTORY (1 kHz stream);
  ``loop_late_pct`` (cycles > 100 µs late) and period jitter;
* command → state round trip in TRAJECTORY mode: the right_j6 target carries a unique key;
  joint_state_publish_rate 1000; time until a gravity_compensation_torques SEAJointState echoing
  that commanded_position arrives (the path's latency: the echo is at 100 Hz, so 1 key in 10 is timed);
* ``cmd_lost_pct``: sent but never seen by the listener; ``cmd_superseded_pct``: seen, but another
  command reached the loop in the same cycle (all are applied in order; only the last one shows);
* whole-stack real-time factor with use_sim_time and speedup unlimited;
* ``--backend ros_control``: then the same arm behind ros_control.launch (the fake gazebo_ros_control arm at
  ``--rate`` Hz, the loop paced by its joint states): the same keyed TRAJECTORY stream, timed to the loop's
  echo (``rc_roundtrip_*``) and to the Float64MultiArray reaching the arm's position controller
  (``rc_cmd_to_controller_*``: the extra hop; ``..._with_wait_*`` counts every command until it or a newer one
  gets there, the wait for the arm's next cycle included), beside the sim's round trip.

    python src/intera_compat/bench/loop_bench.py [--seconds 60] [--quick] [--backend ros_control [--rate 250]]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from intera_compat.testing.processes import free_port, kill_group


def start_master(node_name):
    """A private rosmaster on a free port, and this process a rospy node on it; returns (port, master process)."""
    port = free_port()
    os.environ.update(ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_HOSTNAME="127.0.0.1")
    os.environ.setdefault("ROS_HOME", tempfile.mkdtemp(prefix=f"{node_name}-"))
    master = subprocess.Popen(["rosmaster", "--core", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    import rosgraph
    import rospy
    from intera_compat.ros.node_init import init_node

    while not rosgraph.is_master_online():
        time.sleep(0.05)
    init_node(node_name, disable_signals=True)
    return port, master


def start_stack(port, extra, launch_file="sawyer_sim.launch"):
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_HOSTNAME="127.0.0.1")
    log = open(os.path.join(tempfile.gettempdir(), f"loop_bench_{port}_{launch_file}.log"), "w")
    return subprocess.Popen(["roslaunch", "-p", str(port), "intera_compat", launch_file, *extra], env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc):
    kill_group(proc, 15.0)


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


def loop_diagnostics(diags: list):
    """Subscribes /diagnostics: each "Realtime Control Loop" status is appended to ``diags`` as {key: float}."""
    import rospy
    from diagnostic_msgs.msg import DiagnosticArray

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
    return rospy.Subscriber("/diagnostics", DiagnosticArray, on_diag, queue_size=10)


def realtime_phase(seconds):
    import rospy
    from intera_core_msgs.msg import JointCommand, SEAJointState
    from sensor_msgs.msg import JointState
    from std_msgs.msg import UInt16

    diags, rtt, lock = [], {}, threading.Lock()
    sent = {}

    loop_diagnostics(diags)
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
    on_sea = key_timer(sent, lock, base6, rtt)
    rospy.Subscriber("/robot/limb/right/gravity_compensation_torques", SEAJointState,
                     lambda m: on_sea(m.commanded_position[6]), queue_size=100, tcp_nodelay=True)
    msg = keyed_command(pub, names, q, base6)
    time.sleep(1.2)
    d0 = len(diags)
    recv0, sup0 = diags[-1]["commands_received_total"], diags[-1]["commands_superseded_total"]
    n = stream_keys(pub, msg, base6, seconds / 2, sent, lock)
    time.sleep(2.5)
    trajectory = window(d0)
    recv = diags[-1]["commands_received_total"] - recv0
    sup = diags[-1]["commands_superseded_total"] - sup0
    p50, p99 = percentiles_ms(rtt)
    return {
        "position": position, "trajectory": trajectory, "rtt_p50_ms": p50, "rtt_p99_ms": p99,
        "rtt_samples": len(rtt), "sent": n, "received": recv,
        "lost_pct": 100.0 * max(0.0, n - recv) / n, "superseded_pct": 100.0 * sup / n,
        "fifo": diags[-1].get("sched_fifo", 0.0), "cpu": int(diags[-1].get("cpu", -1)),
        "idle_poll": diags[-1].get("idle_poll", 0.0),
        "faults": diags[-1].get("faults_total", 0.0),
    }


def keyed_command(pub, names, q, base6):
    """A TRAJECTORY_MODE command holding ``q`` with right_j6 walked onto the key base (at rest)."""
    from intera_core_msgs.msg import JointCommand

    msg = JointCommand(mode=JointCommand.TRAJECTORY_MODE, names=names, position=list(q), velocity=[0.0] * 7,
                       acceleration=[0.0] * 7)
    msg.position[6] = base6
    for _ in range(300):
        pub.publish(msg)
        time.sleep(0.002)
    return msg


def stream_keys(pub, msg, base6, seconds, sent, lock):
    """1 kHz stream whose right_j6 target carries key k (base6 + k·1e-5: walks 0.01 rad/s); ``sent[k]`` its
    send time. Returns the number sent."""
    n = int(seconds * 1000)
    nxt = time.monotonic()
    for k in range(1, n + 1):
        msg.position[6] = base6 + k * 1e-5
        with lock:
            sent[k] = time.monotonic()
        pub.publish(msg)
        nxt += 0.001
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
    return n


def key_timer(sent, lock, base6, out, carry=False):
    """A callback body timing into ``out[k]`` the first arrival of key k (decoded from a right_j6 value): the
    path's latency for the freshest command. ``carry``: a newer key carries the older ones forward (a loop
    slower than the stream takes only the newest command each cycle; the keys it passed over count with their
    wait for the next cycle) — what a streaming client sees, sampling included."""
    done = [0]

    def seen(x):
        t = time.monotonic()
        key = int(round((x - base6) * 1e5))
        with lock:
            if key not in sent or key <= done[0]:
                return
            for k in range(done[0] + 1, key + 1) if carry else (key,):
                if k in sent:
                    out[k] = t - sent[k]
            done[0] = key
    return seen


def percentiles_ms(d):
    r = np.array(sorted(d.values())) * 1e3
    return (float(np.percentile(r, 50)), float(np.percentile(r, 99))) if len(r) else (float("nan"), float("nan"))


def ros_control_phase(seconds, controller_topic, j6_index):
    """The keyed stream through ros_control.launch: times to the loop's echo and to the arm's controller."""
    import rospy
    from intera_core_msgs.msg import JointCommand, SEAJointState
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    js = rospy.wait_for_message("/robot/joint_states", JointState, 60)
    names = [f"right_j{i}" for i in range(7)]
    q = [js.position[js.name.index(n)] for n in names]
    base6 = q[6] - 0.2
    pub = rospy.Publisher("/robot/limb/right/joint_command", JointCommand, queue_size=1, tcp_nodelay=True)
    while pub.get_num_connections() == 0:
        time.sleep(0.05)
    time.sleep(1.0)
    msg = keyed_command(pub, names, q, base6)
    time.sleep(1.2)
    sent, echo, ctrl, wait, lock = {}, {}, {}, {}, threading.Lock()
    on_echo, on_ctrl = key_timer(sent, lock, base6, echo), key_timer(sent, lock, base6, ctrl)
    on_wait = key_timer(sent, lock, base6, wait, carry=True)

    def on_controller(m):
        on_ctrl(m.data[j6_index])
        on_wait(m.data[j6_index])

    subs = [rospy.Subscriber("/robot/limb/right/gravity_compensation_torques", SEAJointState,
                             lambda m: on_echo(m.commanded_position[6]), queue_size=100, tcp_nodelay=True),
            rospy.Subscriber(controller_topic, Float64MultiArray, on_controller, queue_size=100, tcp_nodelay=True)]
    n = stream_keys(pub, msg, base6, seconds, sent, lock)
    time.sleep(1.5)
    for sub in subs:
        sub.unregister()
    (e50, e99), (c50, c99), (w50, w99) = percentiles_ms(echo), percentiles_ms(ctrl), percentiles_ms(wait)
    return {"echo_p50": e50, "echo_p99": e99, "ctrl_p50": c50, "ctrl_p99": c99, "wait_p50": w50, "wait_p99": w99,
            "sent": n,
            "echo_samples": len(echo), "ctrl_samples": len(ctrl)}


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
    ap.add_argument("--backend", choices=("sim", "ros_control"), default="sim",
                    help="ros_control: also measure the arm behind ros_control.launch (fake gazebo_ros_control arm)")
    ap.add_argument("--rate", type=float, default=250.0, help="the ros_control arm's joint-state rate [Hz]")
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
        rc = None  # (before the sim-time phase: its /use_sim_time stays on the master)
        if args.backend == "ros_control":
            from intera_compat.hardware.ros_control import RosControlSettings

            settings = RosControlSettings.from_config(cfg, "position", args.rate)
            stack = start_stack(port, ["fake:=true", "interface:=position", f"rate:={args.rate:g}", *launch_cfg],
                                "ros_control.launch")
            try:
                rc = ros_control_phase(seconds / 2, settings.command_topics["position"],
                                       cfg.all_joints.index("right_j6"))  # (the controller takes config order)
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
    if rc is not None:  # beside the sim's cmd_roundtrip: the same stream through a ros_control arm
        rows += [
            ("rc_roundtrip_p50_ms", rc["echo_p50"], "ms", ""),
            ("rc_roundtrip_p99_ms", rc["echo_p99"], "ms", ""),
            ("rc_cmd_to_controller_p50_ms", rc["ctrl_p50"], "ms", ""),
            ("rc_cmd_to_controller_p99_ms", rc["ctrl_p99"], "ms", ""),
            ("rc_cmd_to_controller_with_wait_p50_ms", rc["wait_p50"], "ms", ""),
            ("rc_cmd_to_controller_with_wait_p99_ms", rc["wait_p99"], "ms", ""),
        ]
        print(f"ros_control arm at {args.rate:g} Hz: {rc['sent']} keyed commands, {rc['echo_samples']} echoed, "
              f"{rc['ctrl_samples']} seen at the controller (the loop samples the stream once per arm period)")
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
