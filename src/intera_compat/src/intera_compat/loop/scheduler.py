"""Fixed-rate scheduling for a Python 1 kHz loop (measured in shared/reference/loop_timing_study.md).

* absolute deadlines (``next += period``), hybrid sleep: ``time.sleep`` until ``margin`` before
  the deadline, then spin on the monotonic clock;
* ticks missed by more than a period are skipped and counted, never replayed in a burst;
* ``setup_realtime`` pins the process to one core and asks for SCHED_FIFO and a 1 ns timer slack,
  reporting what it got (falls back cleanly without privileges);
* ``hold_idle_latency`` keeps the CPUs out of deep idle states while the loop runs (the PM QoS
  request ``cyclictest`` makes): on this VM a halted vCPU wakes with cold caches and the cycle
  after a sleep costs up to twice its back-to-back time; polling idle removes part of that.
  The request lasts as long as the process holds the file open, so a crash releases it.
"""
from __future__ import annotations

import ctypes
import os
import time

PR_SET_TIMERSLACK = 29
PR_SET_PDEATHSIG = 1


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(sig: int = 15) -> None:
    """Ask the kernel to signal us when the parent (the listener process) dies."""
    _prctl(PR_SET_PDEATHSIG, sig)


def setup_realtime(cpu: int | None = None, priority: int = 50) -> dict:
    """Pin to ``cpu`` (default: the last core) and try SCHED_FIFO; returns what was granted."""
    got = {"cpu": -1, "fifo": False, "slack": _prctl(PR_SET_TIMERSLACK, 1), "message": ""}
    ncpu = os.cpu_count() or 1
    if ncpu > 1:
        cpu = ncpu - 1 if cpu is None else cpu
        try:
            os.sched_setaffinity(0, {cpu})
            got["cpu"] = cpu
        except OSError as e:
            got["message"] += f"affinity to CPU {cpu} refused ({e.strerror}); "
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        got["fifo"] = True
    except (OSError, AttributeError) as e:
        got["message"] += f"SCHED_FIFO refused ({getattr(e, 'strerror', e)}), running SCHED_OTHER; "
    return got


TIMED_NICE = -10  # the niceness of a process that keeps time without SCHED_FIFO (the loop, a stand-in controller)


def raise_priority(nice: int = TIMED_NICE) -> str:
    """Without realtime scheduling, the next best thing for a process that keeps a robot's time: this process (every
    thread of it) at ``nice``, where the caller may (root, or CAP_SYS_NICE); what it got. Nice values count among the
    processes of one scheduling group — in a cpu cgroup of their own (the test suite's workers, a container) or in
    one session — while the kernel's autogroups share the CPU between sessions whatever their nice values."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        for tid in os.listdir("/proc/self/task"):  # (threads started before this: their own nice values)
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        return f"nice {nice}"
    except OSError as e:
        return f"nice {nice} refused ({e.strerror})"


def hold_idle_latency(us: int) -> tuple[int | None, str]:
    """Ask the kernel for at most ``us`` µs of idle exit latency (0: poll, never halt) via
    ``/dev/cpu_dma_latency``; returns (fd to keep open, message). ``us < 0`` leaves it alone."""
    if us < 0:
        return None, "idle latency untouched"
    try:
        fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
    except OSError as e:
        return None, f"/dev/cpu_dma_latency refused ({e.strerror}); CPUs may idle deeply"
    try:
        os.write(fd, int(us).to_bytes(4, "little", signed=True))
    except OSError as e:
        os.close(fd)
        return None, f"/dev/cpu_dma_latency write refused ({e.strerror})"
    return fd, f"idle exit latency held at {us} us"


def loop_cpu() -> int:
    """The core ``setup_realtime`` pins the loop to by default (the last one), -1 on one core."""
    n = os.cpu_count() or 1
    return n - 1 if n > 1 else -1


def keep_off_cpu(cpu: int) -> bool:
    """Move every thread of this process off ``cpu`` (the loop's core), so their work does not
    evict the loop's caches while it sleeps. Threads created later inherit the mask."""
    n = os.cpu_count() or 1
    if cpu < 0 or n < 2:
        return False
    others = set(range(n)) - {cpu}
    ok = True
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), others)
        except OSError:
            ok = False
    return ok


def sleep_until_next(deadline: float, period: float) -> float:
    """Plain-sleep pacing for threads that are not the realtime loop (simulated arms, emulators, streams):
    sleep until ``deadline``, return the next one a ``period`` later. After a stall of more than 0.1 s the
    schedule restarts from now (the missed cycles are not replayed at full speed)."""
    delay = deadline - time.monotonic()
    if delay > 0.0:
        time.sleep(delay)
    elif delay < -0.1:
        deadline = time.monotonic()
    return deadline + period


class Scheduler:
    """Deadline keeper. ``period`` is in wall seconds; ``period <= 0`` runs as fast as possible."""

    def __init__(self, period: float, margin: float = 150e-6):
        self.period = period
        self.margin = margin
        self.next = time.monotonic()
        self.skipped = 0

    def wait(self) -> float:
        """Sleep until the next deadline; returns the lateness (s) of this wake-up."""
        if self.period <= 0:
            return 0.0
        nxt = self.next
        clock = time.monotonic
        remaining = nxt - clock()
        if remaining > self.margin:
            time.sleep(remaining - self.margin)
        while clock() < nxt:
            pass
        return clock() - nxt

    def advance(self) -> int:
        """Move to the next deadline, skipping ticks that are already in the past; returns skips."""
        if self.period <= 0:
            return 0
        self.next += self.period
        behind = time.monotonic() - self.next
        if behind > self.period:
            k = int(behind / self.period)
            self.next += k * self.period
            self.skipped += k
            return k
        return 0
