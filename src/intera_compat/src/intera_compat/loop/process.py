"""The realtime process: no rospy. Attaches the shared records, runs the backend at the loop rate.

Started by the ``realtime_loop`` node (``python -m intera_compat.loop.process …``); exits when
the control record asks it to, or when its parent dies.
"""
from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import time


from ..config import load_config
from ..hardware.sim import SimBackend
from ..model.robot_model import RobotModel
from .core import LoopCore
from .layouts import (HIST_BINS, TICK_DIAGNOSTICS, TICK_JOINT_STATES, TICK_STATE_100HZ, command_layout,
                      control_layout, state_layout)
from .scheduler import Scheduler, die_with_parent, setup_realtime
from .shm import SeqlockRecord

LATE_US = 100.0


def build_backend(kind: str, rm: RobotModel, initial_q):
    if kind == "sim":
        return SimBackend(rm, initial_q)
    raise ValueError(f"unknown backend {kind!r}")


def run(args) -> int:
    die_with_parent()
    cfg = load_config(args.config)
    rm = RobotModel(cfg)
    n = len(cfg.all_joints)
    command = SeqlockRecord(command_layout(n), args.command_shm)
    control = SeqlockRecord(control_layout(), args.control_shm)
    state = SeqlockRecord(state_layout(n), args.state_shm)
    backend = build_backend(args.backend, rm, cfg.full_pose(cfg.sim.get("initial_pose", "neutral")))
    backend.connect()
    dt = backend.period
    core = LoopCore(cfg, rm, command.local, control.local, state.shared, dt, start_enabled=args.start_enabled)
    rate = 1.0 / dt
    st = state.shared
    realtime = args.speedup == 1.0 and not args.sim_time
    info = setup_realtime() if (realtime and not args.no_rt) else {"cpu": -1, "fifo": False, "message": "not realtime"}
    st.rt_fifo[0] = info["fifo"]
    st.rt_cpu[0] = info["cpu"]
    st.realtime[0] = realtime
    print(f"[realtime_loop] backend={args.backend} dt={dt * 1e3:.3f} ms speedup="
          f"{'unlimited' if args.speedup <= 0 else args.speedup} cpu={info['cpu']} fifo={info['fifo']} "
          f"{info.get('message', '')}", flush=True)
    tick_fd = args.tick_fd
    os.set_blocking(tick_fd, False)
    period = dt / args.speedup if args.speedup > 0 else 0.0
    sched = Scheduler(period)
    js_count, s100_count, diag_count = 0, 0, 0
    s100_div = max(1, int(round(rate / float(cfg.rates.get("endpoint_hz", 100)))))
    diag_div = max(1, int(round(rate / float(cfg.rates.get("diagnostics_hz", 1)))))
    jitter_hist, compute_hist = st.jitter_hist, st.compute_hist
    tick = bytearray(1)
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    signal.signal(signal.SIGINT, lambda *_: stop.__setitem__(0, True))
    hs = core.hw_state
    backend.read(hs)
    gc.collect()
    gc.freeze()
    clock = time.monotonic
    last_start = clock()
    sim_time = 0.0
    while not stop[0]:
        lateness = sched.wait()
        t0 = clock()
        control.read()
        if control.local.shutdown[0] > 0.5:
            break
        command.read()
        backend.read(hs)
        state.begin_write()
        core.step(sim_time)
        backend.write(core.hw_cmd)
        sim_time += dt
        # --- statistics (no allocation: scalar arithmetic on preallocated arrays) ---
        period_dev_us = abs((t0 - last_start) - period) * 1e6 if period > 0 else 0.0
        last_start = t0
        b = int(period_dev_us)
        jitter_hist[b if b < HIST_BINS else HIST_BINS - 1] += 1
        st.stat_cycles[0] += 1
        if lateness * 1e6 > LATE_US:
            st.stat_late[0] += 1
        st.stat_skipped[0] = sched.skipped
        st.alive[0] = 1.0
        state.end_write()
        # --- ticks for the publishers ---
        flags = 0
        js_div = control.local.joint_state_decimation[0]
        js_count += 1
        if js_count >= js_div:
            js_count = 0
            flags |= TICK_JOINT_STATES
        s100_count += 1
        if s100_count >= s100_div:
            s100_count = 0
            flags |= TICK_STATE_100HZ
        diag_count += 1
        if diag_count >= diag_div:
            diag_count = 0
            flags |= TICK_DIAGNOSTICS
        if flags:
            tick[0] = flags
            try:
                os.write(tick_fd, tick)
            except (BlockingIOError, BrokenPipeError):
                pass
        compute_us = (clock() - t0) * 1e6
        b = int(compute_us)
        compute_hist[b if b < HIST_BINS else HIST_BINS - 1] += 1
        st.stat_compute_sum_us[0] += compute_us
        if compute_us > st.stat_compute_max_us[0]:
            st.stat_compute_max_us[0] = compute_us
        sched.advance()
    st.alive[0] = 0.0
    backend.close()
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="intera_compat realtime loop process (no ROS)")
    ap.add_argument("--config", default=None)
    ap.add_argument("--backend", default="sim")
    ap.add_argument("--command-shm", required=True)
    ap.add_argument("--control-shm", required=True)
    ap.add_argument("--state-shm", required=True)
    ap.add_argument("--tick-fd", type=int, required=True)
    ap.add_argument("--speedup", type=float, default=1.0, help="sim time / wall time; <= 0: as fast as possible")
    ap.add_argument("--sim-time", action="store_true", help="the ROS side runs on /clock")
    ap.add_argument("--start-enabled", type=int, default=1)
    ap.add_argument("--no-rt", action="store_true", help="do not pin or ask for SCHED_FIFO")
    args = ap.parse_args(argv)
    args.start_enabled = bool(args.start_enabled)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
