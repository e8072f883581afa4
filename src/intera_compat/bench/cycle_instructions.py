#!/usr/bin/env python3
"""Instructions per cycle of ``LoopCycle.step``, counted by valgrind's callgrind: a number that does not swing
with the machine's load the way the wall time of ``cycle_bench.py`` does (±30 % on a shared VM).

The setup is cycle_bench's: the MuJoCo Sawyer (default sim backend, every safety plugin of the default config),
a POSITION stream (a 0.3-0.4 rad move, re-sent every 10 cycles; the arm is there at cycle ~1040) and, after
``--settle`` cycles of it (1500: at rest on the target, as in cycle_bench after its 5000), a TRAJECTORY stream
(right_j3 at -0.3 rad/s from where the arm rests, re-sent every 10 cycles). Per mode, one process steps N1
cycles uncounted, then N2 - N1 counted, and the count is reported per cycle: (I(N2) - I(N1)) / (N2 - N1), the
issue's measure with the start-up and the stream's first cycles left out: POSITION 100..600 (the arm on its way),
TRAJECTORY 500..1000 (as cycle_bench, which drops its first 500: the stream's first ~390 cycles, joint_limits
shapes the reference up to the stream's speed, at ~370 k instructions more a cycle).
Counted are the calls of ``LoopCycle.step`` alone: each goes through a ctypes call (``PyObject_CallNoArgs``), and
callgrind collects only inside libffi's ``ffi_call`` (``--collect-atstart=no --toggle-collect=ffi_call``; the
cycle makes no ctypes call of its own). That adds ~650 instructions of call overhead a cycle (0.1 %); the
commands sent between cycles are not counted (``--whole`` counts everything, them included: ~1 % more). Other
ctypes calls are collected too (llvmlite's, as numba loads the cycle's kernels — or compiles them: under valgrind's
CPU numba's cache misses): a second run of the same process with no cycle counted is taken off.

    python src/intera_compat/bench/cycle_instructions.py [--cycles 100 600] [--trajectory-cycles 500 1000]
        [--runs 1] [--settle 1500] [--modes position trajectory]
        [--pythonpath DIR]   # another tree's package first on the path (e.g. a base commit, see docs/benchmarks.md)
        [--whole]            # cross-check: the difference of two whole-process runs (N1 and N2 cycles)

Prints ``BENCH cycle_instructions mode=position per_cycle=<instructions>`` (and mode=trajectory) per run, and
the runs' spread (0.0-0.1 % over 3 runs). A run takes 1-3 minutes a mode (the model loads under valgrind).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

TOGGLE = "ffi_call"  # callgrind collects only inside it: the ctypes call of each counted step
MODES = ("position", "trajectory")


# ---- the child: runs under valgrind -------------------------------------------------------------------------
def _child(mode: str, n1: int, n2: int, settle: int, whole: bool) -> None:
    """Steps ``mode``'s stream: cycles [0, n1) plain, [n1, n2) through the counted call (``whole``: all plain,
    n1 of them); the trajectory stream comes after ``settle`` plain cycles of the position stream."""
    import ctypes
    import gc

    import numpy as np

    try:
        from intera_compat.data.codes import POSITION_MODE, TRAJECTORY_MODE
    except ImportError:  # (a tree from before the data/ floor: the base commit)
        from intera_compat.loop.layouts import POSITION_MODE, TRAJECTORY_MODE
    from intera_compat.loop.offline import OfflineLoop

    counted = ctypes.pythonapi.PyObject_CallNoArgs
    counted.restype = ctypes.py_object
    counted.argtypes = [ctypes.py_object]

    L = OfflineLoop()
    L.step()
    names, step = L.cfg.joint_names, L.cycle.step
    gc.collect()
    gc.freeze()
    gc.disable()

    def run(k0: int, k1: int, send, count: bool) -> None:
        for k in range(k0, k1):
            if k % 10 == 0:
                send()
            if count:
                counted(step)
            else:
                step()

    target = L.arm_q + np.array([0.4, -0.3, 0.3, -0.4, 0.3, 0.3, 0.3])
    v, zeros = np.array([0.0, 0.0, 0.0, -0.3, 0.0, 0.0, 0.0]), np.zeros(7)
    here, t0 = None, 0.0

    def send_position():
        L.send(POSITION_MODE, names, position=target)

    def send_trajectory():
        L.send(TRAJECTORY_MODE, names, position=here + v * (L.cycle.now - t0), velocity=v, acceleration=zeros)

    send_position()  # (as cycle_bench: a move, then holding the reached target)
    send = send_position
    if mode == "trajectory":
        run(0, settle, send_position, False)
        here, t0 = L.arm_q, L.cycle.now
        send = send_trajectory
    if whole:
        run(0, n1, send, False)
    else:
        run(0, n1, send, False)
        run(n1, n2, send, True)
    faults = L.cycle.counts["faults"]
    print(f"faults {faults}", flush=True)


# ---- the parent ----------------------------------------------------------------------------------------------
def _instructions(mode: str, n1: int, n2: int, settle: int, env: dict, whole: bool) -> int:
    """One valgrind run of the child; its collected instruction count."""
    with tempfile.TemporaryDirectory(prefix="cycle_instructions_") as d:
        out = os.path.join(d, "callgrind.out")
        opts = [] if whole else ["--collect-atstart=no", f"--toggle-collect={TOGGLE}"]
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *opts, sys.executable,
               os.path.abspath(__file__), "--child", mode, str(n1), str(n2), "--settle", str(settle),
               *(["--whole"] if whole else [])]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0 or "faults 0" not in r.stdout:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode} (a fault in the cycle, or valgrind failed)\n"
                               f"{r.stdout}\n{r.stderr[-3000:]}")
        with open(out) as f:
            for line in f:
                if line.startswith("totals:"):
                    return int(line.split()[1])
        raise RuntimeError(f"{out}: no totals line")


def per_cycle(mode: str, n1: int, n2: int, settle: int, env: dict, whole: bool) -> float:
    if whole:
        return (_instructions(mode, n2, n2, settle, env, True) - _instructions(mode, n1, n2, settle, env, True)) \
            / (n2 - n1)
    # (less the same run with no cycle counted: every other ctypes call is collected too — llvmlite's, as numba loads
    # or, under valgrind's CPU, compiles the cycle's kernels at construction)
    return (_instructions(mode, n1, n2, settle, env, False) - _instructions(mode, n1, n1, settle, env, False)) \
        / (n2 - n1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, nargs=2, default=(100, 600), metavar=("N1", "N2"), help="POSITION")
    ap.add_argument("--trajectory-cycles", type=int, nargs=2, default=(500, 1000), metavar=("N1", "N2"))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--settle", type=int, default=1500, help="POSITION cycles before the TRAJECTORY stream")
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--pythonpath", default=None, help="this directory first on the child's PYTHONPATH")
    ap.add_argument("--whole", action="store_true", help="the difference of two whole-process runs (cross-check)")
    ap.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        _child(a.child[0], int(a.child[1]), int(a.child[2]), a.settle, a.whole)
        return
    windows = {"position": tuple(a.cycles), "trajectory": tuple(a.trajectory_cycles)}
    if not all(0 <= n1 < n2 for n1, n2 in windows.values()):
        ap.error("--cycles N1 N2 needs 0 <= N1 < N2")
    env = dict(os.environ, PYTHONHASHSEED="0")  # (set and dict orders as in every run)
    if a.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.abspath(a.pythonpath), env.get("PYTHONPATH")) if p)
    where = subprocess.run([sys.executable, "-c", "import intera_compat.loop as m; print(m.__file__)"], env=env,
                           capture_output=True, text=True).stdout.strip()
    how = "whole-process difference" if a.whole else f"{TOGGLE} toggled"
    print(f"intera_compat: {where}; cycles {'; '.join(f'{m} {w[0]}..{w[1]}' for m, w in windows.items())} "
          f"(the trajectory after {a.settle} POSITION cycles); {how}", flush=True)
    # numba's cache is keyed on the CPU, and valgrind's is another: the kernels are compiled for it once here, in a
    # run that is not counted (else the first counted run would compile and the next load: the difference skewed)
    warm = subprocess.run(["valgrind", "--tool=none", sys.executable, "-c",
                           "import importlib.util as u, intera_compat.loop as l\n"
                           "if u.find_spec('intera_compat.loop.warm'):\n"
                           "    from intera_compat.loop.warm import warm_kernels; warm_kernels()"],
                          env=env, capture_output=True, text=True)
    if warm.returncode != 0:
        raise RuntimeError(f"the kernels' warm-up under valgrind failed:\n{warm.stderr[-3000:]}")
    runs = {m: [] for m in a.modes}
    for _ in range(a.runs):
        for mode in a.modes:
            x = per_cycle(mode, *windows[mode], a.settle, env, a.whole)
            runs[mode].append(x)
            print(f"BENCH cycle_instructions mode={mode} per_cycle={x:.0f}", flush=True)
    if a.runs > 1:
        for mode, xs in runs.items():
            mean = sum(xs) / len(xs)
            print(f"{mode}: mean {mean:.0f} instructions/cycle over {len(xs)} runs, "
                  f"spread (max - min) / mean {100 * (max(xs) - min(xs)) / mean:.2f} %")


if __name__ == "__main__":
    main()
