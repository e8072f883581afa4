"""The realtime process: no rospy. Attaches the channel, runs ``LoopCycle.step`` at the backend's rate.

Started by the ``realtime_loop`` node (``python -m intera_compat.loop.process …``); exits when
the control record asks it to, or when its parent dies. Around the cycle it keeps the schedule
(hybrid sleep, skipped ticks), the timing statistics (published at 100 Hz) and the publisher
ticks, which are decimated on loop time (so rates stay right whatever the loop's period).

Whatever ends the loop, the backend is braked and closed on the way out (``finish``): the control record's
shutdown, SIGTERM or SIGINT (Ctrl-C on the launch reaches this process too), the parent's death (the kernel's
SIGTERM, ``die_with_parent``; a tick pipe whose reader is gone says so too), or an exception in a cycle (it is
raised on afterwards: the exit code and the traceback say what happened). A signal before the loop runs (while
the backend connects) ends the process at once, through the same way out.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import time

from ..config import load_config
from ..hardware.registry import build_backend
from ..model.robot_model import RobotModel
from .channel import Channel
from .cycle import LoopCycle
from .lag import count_skipped, wall_clock_lags
from .layouts import HIST_BINS, TICK_DIAGNOSTICS, TICK_JOINT_STATES, TICK_SAFETY, TICK_STATE_100HZ
from .scheduler import Scheduler, die_with_parent, hold_idle_latency, raise_priority, setup_realtime
from .warm import SLOW, warm_kernels

LATE_US = 100.0


class BackendClock:
    """The Scheduler's interface for an arm that is the clock: a cycle per sample, none without one until
    ``timeout`` (the cycle then runs anyway and the backend reports the lost link in it). A sample that comes
    periods after the last one, on an arm that ran on meanwhile, is due that many cycles (``Backend.wait``), run
    back to back so that the loop's time keeps the arm's; the backend steers those on the arm's state between the
    two samples and sends only the last one's command (``RosControlBackend.read``, ``write``)."""

    def __init__(self, backend, timeout: float):
        self.backend, self.timeout = backend, timeout
        self.skipped = 0
        self.owed = 0  # cycles still due for the last sample
        self.caught_up = 0  # cycles run to catch up, in all

    def wait(self) -> float:
        if self.owed > 0:
            self.owed -= 1
        else:
            due = int(self.backend.wait(self.timeout))  # (0: the timeout)
            self.owed = due - 1 if due > 1 else 0
            self.caught_up += self.owed
        return 0.0

    def advance(self) -> int:
        return 0


PUBLISH_LEAD = 0.05  # s of loop time an unpaced simulation may run ahead of what the listener published
PUBLISH_PATIENCE = 0.5  # s of wall time it waits for the listener before running on (a listener gone or stalled)


class ListenerPace:
    """Speedup 0 (as fast as possible): the simulation waits for the listener to have published the robot's state up
    to ``PUBLISH_LEAD`` before now, so its topics (and the scripts reading them) never fall behind a simulation racing
    ahead. A listener that does not keep up for ``PUBLISH_PATIENCE`` of wall time (gone, stalled, still starting) is
    no longer waited for until it publishes again; ``given_up`` counts those times."""

    def __init__(self, ctl_record, stop):
        self.ctl_record, self.stop = ctl_record, stop  # stop(): True when the loop is to end
        self.lost_at = -1.0  # the published time when the listener was given up (-1: it keeps up)
        self.given_up = 0

    def wait(self, now: float) -> None:
        rec, ctl = self.ctl_record, self.ctl_record.local
        rec.refresh()
        if self.lost_at >= 0.0:
            if ctl.published_time[0] == self.lost_at:
                return  # (still silent: run on)
            self.lost_at = -1.0
        end = time.monotonic() + PUBLISH_PATIENCE
        while ctl.published_time[0] < now - PUBLISH_LEAD:
            if self.stop() or time.monotonic() > end:
                if not self.stop():
                    self.lost_at = ctl.published_time[0]
                    self.given_up += 1
                return
            time.sleep(5e-5)
            rec.refresh()


class Ticker:
    """Fires every ``1/hz`` seconds of loop time (never more than once per cycle)."""

    def __init__(self, hz: float):
        self.next = 0.0
        self.hz = hz

    def due(self, now: float) -> bool:
        if now + 1e-9 < self.next:
            return False
        period = 1.0 / self.hz
        self.next += period
        if self.next <= now:  # fell behind (skipped ticks, rate change): restart from now
            self.next = now + period
        return True


class StopRequest:
    """SIGTERM / SIGINT as an orderly end: before the loop runs (``looping`` False) a signal raises ``SystemExit``
    where the process is (the way out brakes and closes the backend); once it runs, ``set`` is raised and the loop
    ends after its cycle (a cycle is never cut in half)."""

    def __init__(self):
        self.set = False
        self.looping = False

    def __call__(self, signum, frame) -> None:
        self.set = True
        if not self.looping:
            raise SystemExit(0)

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self)
        signal.signal(signal.SIGINT, self)


def finish(backend, ch) -> None:
    """The way out: ``brake`` (the arm holds by its own means, or its controller stops it), then ``close`` (stop
    streaming, release the arm) — each tried though the other failed — and the loop reported not alive."""
    for what in ("brake", "close"):
        try:
            getattr(backend, what)()
        except BaseException as e:  # (the other must still run; the exit code tells of the cycle's error)
            print(f"[realtime_loop] backend {what} on exit failed: {e!r}", file=sys.stderr, flush=True)
    ch.stats.local.alive[0] = 0.0
    ch.stats.publish_local()


def run(args) -> int:
    stop = StopRequest()
    stop.install()  # (first: the parent's death signal asked for below must find it)
    die_with_parent()
    cfg = load_config(args.config)
    rm = RobotModel(cfg)
    ch = Channel(len(cfg.all_joints), json.loads(args.channel), pairs=len(rm.tight.collisionPairs))
    options = json.loads(args.backend_options)
    if args.scene:
        options["scene"] = args.scene
    backend = build_backend(args.backend, rm, options)
    try:
        return serve(args, cfg, rm, ch, backend, stop)
    finally:
        stop.looping = True  # (a second signal must not cut the way out short)
        finish(backend, ch)


def serve(args, cfg, rm, ch, backend, stop: StopRequest) -> int:
    """Connect the backend and run the cycle until ``stop`` is set or the control record asks for the end."""
    took = warm_kernels()  # (before the arm is connected: a cold cache compiles for a minute or two)
    if took > SLOW:
        print(f"realtime loop: the cycle's numba kernels took {took:.0f} s to compile (their cache was cold; "
              "./setup.sh fills it, NUMBA_CACHE_DIR moves it)", file=sys.stderr, flush=True)
    backend.connect()
    realtime = args.speedup == 1.0 and not args.sim_time
    wall_clock_lags(backend, realtime)
    cycle = LoopCycle(cfg, rm, backend, ch, start_enabled=args.start_enabled)
    dt = cycle.dt
    stats = ch.stats.local
    rt = cfg.realtime
    margin = float(rt["spin_margin_us"]) * 1e-6
    if not 0.0 <= margin <= 0.8 * dt:  # a margin near the period spins it whole: RT throttling under SCHED_FIFO
        raise ValueError(f"realtime.spin_margin_us = {margin * 1e6:g} must lie in [0, {0.8 * dt * 1e6:g}]")
    idle_fd = None
    if realtime and not args.no_rt:
        info = setup_realtime()
        idle_fd, msg = hold_idle_latency(int(rt["idle_latency_us"]))
        info["message"] += msg + ("" if info["fifo"] else f"; {raise_priority()}")
        stats.idle_poll[0] = idle_fd is not None
    elif realtime:  # (on the wall clock without SCHED_FIFO: the next best; a simulation on its own time needs none)
        info = {"cpu": -1, "fifo": False, "message": f"realtime scheduling off (--no-rt), {raise_priority()}"}
    else:
        info = {"cpu": -1, "fifo": False, "message": "realtime scheduling off (sim time / speedup)"}
    try:
        stats.rt_fifo[0] = info["fifo"]
        stats.rt_cpu[0] = info["cpu"]
        stats.realtime[0] = realtime
        print(f"[realtime_loop] backend={args.backend} dt={dt * 1e3:.3f} ms speedup="
              f"{'unlimited' if args.speedup <= 0 else args.speedup} cpu={info['cpu']} fifo={info['fifo']} "
              f"spin_margin={margin * 1e6:.0f} us {info.get('message', '')}", flush=True)
        loop(args, cfg, ch, backend, cycle, stop, realtime, margin)
    finally:
        if idle_fd is not None:
            os.close(idle_fd)
    return 0


def loop(args, cfg, ch, backend, cycle, stop: StopRequest, realtime: bool, margin: float) -> None:
    """The cycles, until ``stop`` is set, the control record asks for the end, or the node is gone (its end of the
    tick pipe closed)."""
    dt = cycle.dt
    stats = ch.stats.local
    tick_fd = args.tick_fd
    os.set_blocking(tick_fd, False)
    period = dt / args.speedup if args.speedup > 0 else 0.0
    # (as fast as the listener keeps up: ListenerPace)
    pace = ListenerPace(ch.control, lambda: stop.set or ch.control.local.shutdown[0] > 0.5) \
        if args.sim_time and args.speedup <= 0 else None
    if backend.clock:
        if not realtime:
            raise ValueError(f"backend {args.backend} is paced by the arm: no sim time or speed-up")
        sched = BackendClock(backend, backend.sample_timeout(dt))
    else:
        sched = Scheduler(period, margin)
    ctl = ch.control.local
    js = Ticker(float(cfg.rates.get("joint_states_hz", 100)))
    s100 = Ticker(float(cfg.rates.get("endpoint_hz", 100)))
    stat_tick = Ticker(100.0)
    diag = Ticker(float(cfg.rates.get("diagnostics_hz", 1)))
    jitter_hist, compute_hist = stats.jitter_hist, stats.compute_hist
    tick = bytearray(1)
    gc.collect()
    gc.freeze()
    gc.disable()  # nothing in the cycle makes reference cycles; a collection would be a stall
    clock = time.monotonic
    last_start = clock()
    stop.looping = True
    while not stop.set:
        lateness = sched.wait()
        t0 = clock()
        cycle.step()  # reads the control record first
        if ctl.shutdown[0] > 0.5:
            break
        now = cycle.now
        # --- statistics (no allocation: scalar arithmetic on preallocated arrays) ---
        period_dev_us = abs((t0 - last_start) - period) * 1e6 if period > 0 else 0.0
        last_start = t0
        b = int(period_dev_us)
        jitter_hist[b if b < HIST_BINS else HIST_BINS - 1] += 1
        stats.stat_cycles[0] += 1
        if lateness * 1e6 > LATE_US:
            stats.stat_late[0] += 1
        # --- ticks for the publishers, on loop time ---
        hz = ctl.joint_state_hz[0]
        if hz > 0.0:
            js.hz = hz
        flags = TICK_JOINT_STATES if js.due(now) else 0
        if s100.due(now):
            flags |= TICK_STATE_100HZ
            cycle.publish_safety()
        elif cycle.safety_changed:
            flags |= TICK_SAFETY
            cycle.publish_safety()
        if diag.due(now):
            flags |= TICK_DIAGNOSTICS
        if flags:
            tick[0] = flags
            try:
                os.write(tick_fd, tick)
            except BlockingIOError:
                pass
            except BrokenPipeError:  # the node is gone (its death signal may not have come): the end
                stop.set = True
            if pace is not None and flags & TICK_STATE_100HZ:
                pace.wait(now)
        compute_us = (clock() - t0) * 1e6
        b = int(compute_us)
        compute_hist[b if b < HIST_BINS else HIST_BINS - 1] += 1
        stats.stat_compute_sum_us[0] += compute_us
        if compute_us > stats.stat_compute_max_us[0]:
            stats.stat_compute_max_us[0] = compute_us
        if stat_tick.due(now):
            stats.stat_skipped[0] = sched.skipped
            stats.ring_full[0] = ch.from_loop.full_rejects
            stats.pace_given_up[0] = pace.given_up if pace is not None else 0
            stats.alive[0] = 1.0
            ch.stats.publish_local()
        count_skipped(backend, sched.advance())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="intera_compat realtime loop process (no ROS)")
    ap.add_argument("--config", default=None)
    ap.add_argument("--backend", default="sim")
    ap.add_argument("--scene", default="", help="sim only: an obstacle scene of the config's sim.scenes")
    ap.add_argument("--backend-options", default="{}", help="JSON: what the backend needs (hardware/registry.py)")
    ap.add_argument("--channel", required=True, help="JSON: shared-memory names of the channel (Channel.names)")
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
