#!/usr/bin/env python3
"""The UR path without ROS: the real ur_rtde client against the UR controller emulator (a subprocess on 127.0.0.1,
MuJoCo UR5e at 500 Hz), then our UR backend (``hardware/ur.py``) driven as the realtime loop drives it.

* ``ur_servo_round_trip_ms_{p50,p99,max}``: from a ``servoJ`` call with a new target until the RTDE stream
  reports that target as the controller's ``target_q`` (client → RTDE input → control-script cycle → RTDE
  output → client), over ``--steps`` targets.
* ``ur_track_err_max_rad`` / ``ur_track_err_rms_rad``: the backend at the arm's 500 Hz (``wait`` for each
  RTDE sample, ``read``, ``write`` = servoJ) streaming a 0.5 Hz, 0.2 rad sine on every joint for ``--seconds``;
  the error is |reference − measured| at each sample (servoJ's lookahead delays the arm by design: the
  lag-free error ``ur_track_err_lagfree_max_rad`` compares with the reference shifted by the best-fit delay,
  reported as ``ur_track_delay_ms``: whole cycles of 2 ms, one per sample).
* ``ur_samples_pct``: RTDE samples the backend cycled on / samples the controller's 500 Hz would give;
  ``ur_wait_timeouts``: cycles that found no new sample within 1.5 periods.
* ``probe_sleep_late_{max_ms,pct}``: beside it, in a process of its own, a bare 2 ms sleep loop (the VM's own
  stalls).

    python src/intera_compat/bench/ur_bench.py [--steps 500] [--seconds 10]
"""
import argparse
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import numpy as np

HOST = "127.0.0.1"
PERIOD = 0.002


def probe(stop, out):
    """A plain 2 ms sleep loop in a process of its own (ur_rtde's calls hold this process's interpreter at
    times): how late this machine wakes a Python process meanwhile; the lateness list goes to ``out``."""
    late = []
    nxt = time.monotonic() + PERIOD
    while not stop.is_set():
        time.sleep(max(nxt - time.monotonic(), 0.0))
        late.append(time.monotonic() - nxt)
        nxt += PERIOD
    out.send(late)


def start_emulator():
    proc = subprocess.Popen([sys.executable, "-m", "intera_compat.emulator"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    line = proc.stdout.readline().decode()
    if "UR controller emulator" not in line:
        raise RuntimeError(f"the emulator did not start: {line}")
    return proc


def round_trip(steps: int) -> np.ndarray:
    import dashboard_client
    import rtde_control
    import rtde_receive

    db = dashboard_client.DashboardClient(HOST)
    db.connect()
    db.powerOn()
    db.brakeRelease()
    rr = rtde_receive.RTDEReceiveInterface(HOST, 500.0, ["timestamp", "target_q", "actual_q"])
    rc = rtde_control.RTDEControlInterface(HOST, 500.0)
    q0 = np.array(rr.getActualQ())
    out = []
    for k in range(steps):
        q = q0.copy()
        q[5] += 0.002 * ((k % 50) - 25)  # a new target each time (within a few degrees of the wrist)
        t0 = time.perf_counter()
        rc.servoJ(list(q), 0.0, 0.0, PERIOD, 0.1, 300)
        while abs(rr.getTargetQ()[5] - q[5]) > 1e-9:
            if time.perf_counter() - t0 > 1.0:
                raise RuntimeError(f"target {k} not reported within 1 s")
            time.sleep(5e-5)
        out.append(time.perf_counter() - t0)
        time.sleep(0.004)
    rc.servoStop()
    rc.stopScript()
    rc.disconnect()
    rr.disconnect()
    db.disconnect()
    return np.array(out)


def tracking(seconds: float):
    from intera_compat.config import load_config
    from intera_compat.data.state import CommandMode, HardwareCommand, HardwareState
    from intera_compat.emulator.ur_controller import default_config
    from intera_compat.hardware.ur import URBackend
    from intera_compat.model.robot_model import RobotModel

    rm = RobotModel(load_config(default_config()))
    be = URBackend(rm, {"robot_ip": HOST, "link_timeout": 0.5})
    be.connect()
    hw, cmd = HardwareState.zeros(6), HardwareCommand.zeros(6, CommandMode.POSITION)
    be.read(hw)
    be.enable()
    end = time.monotonic() + 20.0
    while not be.ready():
        if time.monotonic() > end:
            raise RuntimeError(f"the UR backend did not become ready: {be.chore_error or be.worker.last_error}")
        be.wait(0.01)
        be.read(hw)
        be.write(cmd)
    be.read(hw)
    q0 = hw.position.copy()
    cmd.position[:] = q0
    ref, meas, stamps = [], [], []
    timeouts = 0
    t0 = time.monotonic()
    while (now := time.monotonic()) - t0 < seconds:
        if not be.wait(1.5 * PERIOD):
            timeouts += 1
        be.read(hw)
        t = now - t0
        s = min(t / 1.0, 1.0)  # a 1 s fade-in (no step at the start)
        cmd.position[:] = q0 + s * 0.2 * np.sin(2 * np.pi * 0.5 * t)
        be.write(cmd)
        ref.append(cmd.position.copy())
        meas.append(hw.position.copy())
        stamps.append(be._stamp)
        if hw.fault:
            raise RuntimeError(f"fault {hw.fault} during the run")
    be.brake()
    time.sleep(0.2)
    be.close()
    ref, meas = np.array(ref), np.array(meas)
    err = np.abs(ref - meas)
    best = (np.inf, 0)
    for lag in range(0, 150):  # the delay (in samples) that best explains the measured motion
        e = np.abs(ref[:len(ref) - lag] - meas[lag:]).max()
        best = min(best, (e, lag))
    samples = len(set(stamps))
    return dict(err_max=err.max(), err_rms=np.sqrt((err ** 2).mean()), lagfree=best[0], delay=best[1] * PERIOD,
                samples_pct=100.0 * samples / (seconds / PERIOD), timeouts=timeouts, cycles=len(ref))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    stop = multiprocessing.Event()
    ours, theirs = multiprocessing.Pipe()
    prober = multiprocessing.Process(target=probe, args=(stop, theirs), daemon=True)
    prober.start()
    emu = start_emulator()
    try:
        rt = round_trip(args.steps) * 1e3
        tr = tracking(args.seconds)
    finally:
        os.killpg(emu.pid, signal.SIGTERM)
        emu.wait(10)
        stop.set()
    late = np.array(ours.recv()) * 1e3
    prober.join(5)
    rows = [
        ("ur_servo_round_trip_ms_p50", np.percentile(rt, 50), "ms"),
        ("ur_servo_round_trip_ms_p99", np.percentile(rt, 99), "ms"),
        ("ur_servo_round_trip_ms_max", rt.max(), "ms"),
        ("ur_track_err_max_rad", tr["err_max"], "rad"),
        ("ur_track_err_rms_rad", tr["err_rms"], "rad"),
        ("ur_track_delay_ms", tr["delay"] * 1e3, "ms"),
        ("ur_track_err_lagfree_max_rad", tr["lagfree"], "rad"),
        ("ur_samples_pct", tr["samples_pct"], "%"),
        ("ur_wait_timeouts", tr["timeouts"], "cycles"),
        ("probe_sleep_late_max_ms", late.max(), "ms"),
        ("probe_sleep_late_pct", 100.0 * np.mean(late > 0.1), "% > 0.1 ms"),
    ]
    print(f"UR path: {args.steps} servoJ round trips, then {args.seconds:g} s of 500 Hz servoJ streaming by the "
          f"UR backend ({tr['cycles']} cycles)")
    print(f"{'name':34s} {'value':>10s}  unit")
    for name, v, unit in rows:
        print(f"{name:34s} {v:10.4f}  {unit}")
    for name, v, unit in rows:
        print(f"BENCH {name} {v:.4f} {unit.split()[0]}")


if __name__ == "__main__":
    main()
