#!/usr/bin/env python3
"""Camera benchmark: the simulated Sawyer's head camera streaming beside the realtime loop.

Rendering runs in the camera node's own process; this measures what that costs the loop and what the camera
delivers, in one run:

* ``cam_probe_late_pct``: a no-ROS 1 kHz spin probe on the loop's core first (the VM's noise floor);
* ``cam_loop_late_pct_off`` / ``_on``: the loop's cycles > 100 µs late (its /diagnostics) with no camera streaming,
  then with the head camera streaming (the arm holding, the same for both windows); ``cam_loop_compute_p99_us_*``;
* ``cam_head_fps`` (configured rate in the config's ``cameras`` section) and ``cam_head_latency_p50_ms`` (image
  stamp → receipt here: the stamp is taken when the image is drawn, so this is the transport of a 1.7 MB image).

    python src/intera_compat/bench/camera_bench.py [--seconds 20]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loop_bench import loop_diagnostics, spin_probe, start_master, start_stack, stop  # noqa: E402


def diag_window(diags, d0):
    w = diags[d0 + 1:]
    cycles = sum(x["cycles"] for x in w) or 1.0
    return {"late": 100.0 * sum(x["overruns"] for x in w) / cycles,
            "p99": float(np.median([x["compute_p99_us"] for x in w])) if w else float("nan")}


def wait_until(cond, seconds, what):
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            raise SystemExit(f"camera_bench: no {what} within {seconds:g} s")
        time.sleep(0.05)


def phases(seconds):
    import rospy
    from intera_core_msgs.msg import IOComponentCommand, IODeviceStatus
    from sensor_msgs.msg import Image

    diags, frames = [], []

    loop_diagnostics(diags)
    rospy.Subscriber("/io/internal_camera/head_camera/image_rect_color", Image,
                     lambda m: frames.append((time.time(), m.header.stamp.to_sec())), queue_size=5,
                     buff_size=2 ** 24)
    rospy.wait_for_message("/io/internal_camera/head_camera/state", IODeviceStatus, 60)
    time.sleep(3.0)  # (the stack settles)
    d0 = len(diags)
    time.sleep(seconds)
    off = diag_window(diags, d0)
    pub = rospy.Publisher("/io/internal_camera/head_camera/command", IOComponentCommand, queue_size=1)
    wait_until(lambda: pub.get_num_connections() > 0, 30, "the camera node's command subscriber")
    cmd = IOComponentCommand(time=rospy.Time.now(), op="set", args=json.dumps(
        {"signals": {"camera_streaming": {"format": {"type": "bool"}, "data": [True]}}}))
    for _ in range(5):  # (re-sent like the SDK; de-duplicated by its time)
        pub.publish(cmd)
        time.sleep(0.1)
    wait_until(lambda: frames, 60, "a head camera image")
    time.sleep(1.0)  # (the renderer warmed up)
    d0, f0, t0 = len(diags), len(frames), time.time()
    time.sleep(seconds)
    on = diag_window(diags, d0)
    got = frames[f0:]
    fps = len(got) / (time.time() - t0)
    lat = np.array([1e3 * (recv - stamp) for recv, stamp in got])
    return off, on, fps, float(np.median(lat)) if len(lat) else float("nan"), \
        float(np.percentile(lat, 99)) if len(lat) else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0, help="each window (camera off, then on)")
    args = ap.parse_args()
    from intera_compat.config import load_config
    from intera_compat.loop.scheduler import keep_off_cpu, loop_cpu
    from intera_compat.model.cameras import camera_specs

    cfg = load_config()
    port, master = start_master("camera_bench")
    import rospy

    keep_off_cpu(loop_cpu())
    try:
        probe_late, _ = spin_probe(min(args.seconds, 20.0), (os.cpu_count() or 1) - 1, cfg.realtime)
        stack = start_stack(port, [])
        try:
            off, on, fps, lat50, lat99 = phases(args.seconds)
        finally:
            stop(stack)
    finally:
        rospy.signal_shutdown("done")
        stop(master)
    spec = camera_specs(cfg)["head_camera"]
    rows = [("cam_probe_late_pct", probe_late, "%", "(floor)"),
            ("cam_loop_late_pct_off", off["late"], "%", ""),
            ("cam_loop_late_pct_on", on["late"], "%", f"≤ off + {0.5 * probe_late + 0.1:.2f}"),
            ("cam_loop_compute_p99_us_off", off["p99"], "us", ""),
            ("cam_loop_compute_p99_us_on", on["p99"], "us", ""),
            ("cam_head_fps", fps, "Hz", f"{spec.rate:g}"),
            ("cam_head_latency_p50_ms", lat50, "ms", ""),
            ("cam_head_latency_p99_ms", lat99, "ms", "")]
    print(f"head camera {spec.width}x{spec.height} at {spec.rate:g} Hz configured; windows of {args.seconds:g} s")
    print(f"{'metric':<30}{'value':>10}  {'unit':<5}{'goal':>14}")
    for name, v, unit, goal in rows:
        print(f"{name:<30}{v:>10.3f}  {unit:<5}{goal:>14}")
    for name, v, unit, _ in rows:
        print(f"BENCH {name} {v:.3f} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
