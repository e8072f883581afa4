#!/usr/bin/env python3
"""Where a cycle of ``LoopCycle.step`` goes, stage by stage: the same setup and streams as ``cycle_bench.py``
(the MuJoCo Sawyer, every safety plugin, a POSITION stream then a TRAJECTORY stream), no ROS.

The bench wraps the cycle's stages from outside (the library is not changed): the backend's read and write
(MuJoCo's ``mj_step`` apart), the safety chain's three passes and each plugin's ``on_state`` / ``on_setpoint`` /
``commit`` / ``on_output``, the intake (control record, ring), the safety events, the arbiter and each source's
update (ruckig apart), the control law, interaction, the result ring and the state record; and every pinocchio
call, wherever it is made. Each wrapper marks a boundary on entry and exit; what runs between two boundaries is
the exclusive cost of the stage on top of the stack (``step (own lines)``: LoopCycle.step's own code). The cost of a
boundary itself (calibrated on empty wrapped calls) is taken off each segment.

Two measures of the same attribution:

* wall time (default): ``perf_counter_ns`` at each boundary; per stage the mean µs per cycle over the window's
  cycles, those over 1.5 × the median left out (another process's preemption lands in a random stage). The
  boundaries cost ~1 µs each (~80 a cycle), calibrated on empty wrapped calls and taken off each segment: the
  shares hold, the profiled total is a rough figure (``cycle_bench.py`` times the cycle unwrapped);
* ``--instructions``: valgrind's callgrind, collecting only inside libffi's ``ffi_call`` (``--collect-atstart=no
  --toggle-collect=ffi_call``). The stepping runs under valgrind once; at each window's start it forks, per
  stage, a child that steps the window again with only that stage's calls made through a ctypes call (counted):
  the stage's inclusive instructions over exactly the same cycles (the channel's shared memory is restored after
  each child). Own cost = inclusive less what the stage's direct children take. The ctypes call (~1,100) and each
  wrapped call inside a counted one (~4,200: the wrapper's Python) are calibrated and taken off. Counts repeat
  run to run; the sum over the stages matches ``cycle_instructions.py`` within a few %. Takes ~20 min.

Windows (cycles from each stream's start; the move ends at cycle ~1040): ``position-move`` 100..600 (as
``cycle_instructions.py``: the arm on its way), ``position-hold`` the last 1000 (at rest on the target; ruckig
has nothing left to do), ``trajectory`` 500..5000; under callgrind ``--window`` cycles from the same starts (the
hold: the last ones). ``cycle_bench``'s POSITION p50 (cycles 500..5000) is a hold's cycle.

    python src/intera_compat/bench/cycle_profile.py [--cycles 5000] [--pythonpath DIR]
    python src/intera_compat/bench/cycle_profile.py --instructions [--window 200] [--pythonpath DIR]
"""
from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

OUTSIDE = "(outside the cycle)"
ROOT = "step"
CALIB_PARENT, CALIB_CHILD = "(calibration)", "(calibration) > (child)"
PIN_FUNCTIONS = ("rnea", "computeGeneralizedGravity", "computeCoriolisMatrix", "nonLinearEffects", "crba",
                 "forwardKinematics", "updateGeometryPlacements", "computeDistance", "computeDistances",
                 "computeJointJacobians", "computeFrameJacobian", "computeCollisions", "framesForwardKinematics",
                 "updateFramePlacements")


class Attribution:
    """Wraps the cycle's stages. Marked (wall time): ``mark(label)`` at every boundary closes the running segment
    and opens one for ``label``. Routed (instructions): the calls of one stage (``routed``, a path) go through
    ``counted`` (a ctypes call: callgrind counts only inside those), all others run as they are; ``seen`` counts the
    calls of every path."""

    def __init__(self, mark=None, counted=None):
        self.mark, self.counted = mark, counted
        self.stack = [OUTSIDE]
        self.routed = None
        self.seen: dict = {}
        self._paths: dict = {}
        self._wrapped: list = []

    def _path(self, parent: str, name: str) -> str:
        key = (parent, name)
        p = self._paths.get(key)
        if p is None:
            p = self._paths[key] = name if parent == OUTSIDE else f"{parent} > {name}"
        return p

    def wrap(self, obj, attr: str, name: str) -> None:
        """``obj.attr`` (a method or a module's function) becomes a wrapped call attributed to ``name``."""
        orig = getattr(obj, attr)
        self._wrapped.append((obj, attr, obj.__dict__.get(attr) if isinstance(obj, type(sys)) else None))
        stack, path = self.stack, self._path
        if self.mark is not None:
            mark = self.mark

            def wrapped(*args, **kwargs):
                p = path(stack[-1], name)
                stack.append(p)
                mark(p)
                try:
                    return orig(*args, **kwargs)
                finally:
                    stack.pop()
                    mark(stack[-1])
        else:
            counted, seen = self.counted, self.seen

            def wrapped(*args, **kwargs):
                p = path(stack[-1], name)
                stack.append(p)
                seen[p] = seen.get(p, 0) + 1
                try:
                    if p == self.routed:
                        return counted(orig, args, id(kwargs) if kwargs else None)
                    return orig(*args, **kwargs)
                finally:
                    stack.pop()

        setattr(obj, attr, wrapped)

    def unwrap_modules(self) -> None:
        """Put the modules' functions back (pinocchio's, MuJoCo's: no wrapper outlives the bench)."""
        for obj, attr, orig in reversed(self._wrapped):
            if orig is not None:
                setattr(obj, attr, orig)

    def calibrate(self, n: int, nested: bool = True) -> None:
        """``n`` empty wrapped calls (inside empty wrapped calls if ``nested``): their segments, or their routed
        calls, are the profiler's own cost."""
        class Empty:
            def parent(self):
                self.child()

            def child(self):
                pass

        e = Empty()
        self.wrap(e, "child", "(child)")
        self.wrap(e, "parent", CALIB_PARENT)
        call = e.parent if nested else e.child
        for _ in range(n):
            call()


# (object path from the LoopCycle, method, stage name): what is not there in this tree is skipped, so the bench runs
# on the base commit and on a redesigned cycle alike
STAGES = [
    ("", "step", ROOT),
    ("backend", "read", "backend.read"), ("adapter", "write", "backend.write"),
    ("chain", "on_state", "chain.on_state"), ("chain", "on_setpoint", "chain.on_setpoint"),
    ("chain", "on_output", "chain.on_output"), ("chain", "reset", "chain.reset"),
    ("", "_intake", "intake"), ("ch.control", "read", "control.read"), ("ch.to_loop", "pop", "ring.pop"),
    ("", "_command", "command"), ("", "_safety", "safety events"),
    ("arbiter", "update", "arbiter.update"), ("arbiter", "select", "arbiter.select"),
    ("law", "compute", "law.compute"), ("law", "reset", "law.reset"),
    ("", "_interact", "interaction"), ("", "_forward", "forwarding"), ("", "_results", "results"),
    ("", "_publish", "publish (state record)"), ("ch.state", "publish_local", "seqlock publish"),
    # (the same stages in the redesigned cycle: loop/intake.py, safety_events.py, records.py, the interaction stage)
    ("intake", "run", "intake"), ("intake", "_command", "command"), ("events", "update", "safety events"),
    ("interaction", "step", "interaction"), ("forwarder", "step", "forwarding"), ("records", "results", "results"),
    ("records", "publish", "publish (state record)"),
    ("rm", "rnea", "RobotModel.rnea"), ("rm", "gravity", "RobotModel.gravity"),
]
SOURCES = ("brake", "hold", "position", "velocity", "torque", "stream", "trajectory", "estop_hold", "collision_hold",
           "zero_g", "head")


def _get(obj, dotted: str):
    for part in filter(None, dotted.split(".")):
        obj = getattr(obj, part, None)
    return obj


def instrument(L, att: Attribution) -> list:
    """Wrap the cycle's stages (instance attributes: the classes are untouched); the names wrapped."""
    import mujoco
    import pinocchio as pin

    c = L.cycle
    done = []

    def w(obj, attr, name):
        if obj is not None and callable(getattr(obj, attr, None)):
            att.wrap(obj, attr, name)
            done.append(name)

    for where, attr, name in STAGES:
        w(_get(c, where), attr, name)
    w(mujoco, "mj_step", "mujoco.mj_step")
    for p in getattr(_get(c, "chain"), "plugins", []):
        for m in ("on_state", "on_setpoint", "commit", "on_output", "reset"):
            w(p, m, f"{p.name}.{m}")
    for name in SOURCES:
        s = getattr(c, name, None)
        for m in ("update", "activate", "accept", "rebase"):
            w(s, m, f"{name}.{m}")
        w(getattr(s, "interp", None), "update", "ruckig (interp.update)")
    for f in PIN_FUNCTIONS:
        w(pin, f, f"pin.{f}")
    return done


class Streams:
    """cycle_bench's streams, a cycle at a time: POSITION (a move, then holding the reached target) re-sent every
    10 cycles, then TRAJECTORY (right_j3 at -0.3 rad/s) re-sent every 10 cycles."""

    def __init__(self, L):
        try:
            from intera_compat.data.codes import POSITION_MODE, TRAJECTORY_MODE
        except ImportError:  # (a tree from before the data/ floor: the base commit)
            from intera_compat.loop.layouts import POSITION_MODE, TRAJECTORY_MODE

        self.L, self.names, self.step = L, L.cfg.joint_names, L.cycle.step
        self.modes = {"position": POSITION_MODE, "trajectory": TRAJECTORY_MODE}
        self.target = L.arm_q + np.array([0.4, -0.3, 0.3, -0.4, 0.3, 0.3, 0.3])
        self.v, self.zeros = np.array([0.0, 0.0, 0.0, -0.3, 0.0, 0.0, 0.0]), np.zeros(7)
        self.here, self.t0 = None, 0.0
        L.send(POSITION_MODE, self.names, position=self.target)

    def cycle(self, stream: str, k: int) -> None:
        L = self.L
        if stream == "trajectory" and self.here is None:
            self.here, self.t0 = L.arm_q, L.cycle.now
        if k % 10 == 0:
            if stream == "position":
                L.send(self.modes[stream], self.names, position=self.target)
            else:
                L.send(self.modes[stream], self.names, position=self.here + self.v * (L.cycle.now - self.t0),
                       velocity=self.v, acceleration=self.zeros)
        self.step()


def windows(n: int, w: int = 0) -> list:
    """(name, stream, first cycle, end) of the reported windows; ``w``: that many cycles each (callgrind's)."""
    if w:
        return [("position-move", "position", 100, 100 + w), ("position-hold", "position", n - w, n),
                ("trajectory", "trajectory", 500, 500 + w)]
    return [("position-move", "position", 100, min(600, n)), ("position-hold", "position", max(n - 1000, 600), n),
            ("trajectory", "trajectory", 500, n)]


def setup():
    from intera_compat.loop.offline import OfflineLoop

    L = OfflineLoop()
    L.step()
    return L


# ---- wall time -------------------------------------------------------------------------------------------------
def run_wall(n: int) -> tuple:
    """Per window: (labels, µs per cycle and label, segments per cycle and label); a boundary's cost (ns)."""
    labels: dict = {}
    acc: list = []
    seg: list = []
    state = {"label": 0, "t": 0}
    clock = time.perf_counter_ns

    def mark(label: str) -> None:
        t = clock()
        i = labels.get(label)
        if i is None:
            i = labels[label] = len(acc)
            acc.append(0)
            seg.append(0)
        acc[state["label"]] += t - state["t"]
        seg[i] += 1
        state["label"], state["t"] = i, clock()

    att = Attribution(mark=mark)
    mark(OUTSIDE)
    L = setup()
    gc.collect()
    gc.freeze()
    gc.disable()
    instrument(L, att)
    S = Streams(L)
    wins = windows(n)
    rows: dict = {w[0]: [] for w in wins}
    for stream in ("position", "trajectory"):
        for k in range(n):
            win = next((w for w, s, a, b in wins if s == stream and a <= k < b), None)
            acc[:] = [0] * len(acc)
            seg[:] = [0] * len(seg)
            S.cycle(stream, k)
            mark(OUTSIDE)  # (closes the cycle's last segment)
            if win is not None:
                rows[win].append((list(acc), list(seg)))
    # the boundary's cost: the least of 40 batches (a batch another process preempts costs more)
    batches = []
    for _ in range(40):
        acc[:] = [0] * len(acc)
        seg[:] = [0] * len(seg)
        att.calibrate(500)
        mark(OUTSIDE)
        cal = [labels[x] for x in (CALIB_PARENT, CALIB_CHILD)]
        batches.append(sum(acc[i] for i in cal) / sum(seg[i] for i in cal))
    cal_ns = min(batches)
    att.unwrap_modules()
    gc.unfreeze()
    gc.enable()
    names = sorted(labels, key=labels.get)
    out = {}
    for win, rs in rows.items():
        A = np.zeros((len(rs), len(names)))
        G = np.zeros_like(A)
        for r, (x, g) in enumerate(rs):
            A[r, :len(x)] = x
            G[r, :len(g)] = g
        out[win] = (names, np.maximum(A - cal_ns * G, 0.0) / 1e3, G)
    return out, cal_ns


# ---- instructions ----------------------------------------------------------------------------------------------
def _shm_snapshot(ch) -> list:
    segs = [x.shm for x in (ch.control, ch.state, ch.stats, ch.safety, ch.to_loop, ch.from_loop)]
    return [(m, bytes(m.buf)) for m in segs]


def _shm_restore(snap: list) -> None:
    for m, data in snap:
        m.buf[:] = data


def _driver(n: int, w: int, out_dir: str) -> None:
    """Under callgrind (``--collect-atstart=no --toggle-collect=ffi_call``): steps the streams; at each window's start
    forks children that step the window's cycles — one to find the stages' paths (and the instructions inherited
    from before the fork: none), one per path with that path's calls routed through ctypes (counted), and two that
    calibrate a routed call and a wrapped call inside one — then steps the window itself and goes on. Each child
    writes ``<window>.<k>.json`` (path, calls, its pid: its callgrind file) and leaves (``os._exit``: no finalizer
    closes the parent's shared memory). The shared memory (the channel's rings and records) is restored after
    each child."""
    import ctypes
    import json

    counted = ctypes.pythonapi.PyObject_Call
    counted.restype = ctypes.py_object
    counted.argtypes = [ctypes.py_object, ctypes.py_object, ctypes.c_void_p]
    att = Attribution(counted=counted)
    L = setup()
    gc.collect()
    gc.freeze()
    gc.disable()
    instrument(L, att)
    S = Streams(L)
    wins = windows(n, w)
    first = {(s, a): (name, b) for name, s, a, b in wins}

    def child(win: str, tag: str, routed, run) -> dict:
        snap = _shm_snapshot(L.channel)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                att.seen.clear()
                att.routed = routed
                cycles = run()
                with open(os.path.join(out_dir, f"{win}.{tag}.json"), "w") as f:
                    json.dump({"window": win, "routed": routed, "cycles": cycles, "seen": att.seen,
                               "pid": os.getpid(), "faults": L.cycle.counts["faults"]}, f)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        _shm_restore(snap)
        with open(os.path.join(out_dir, f"{win}.{tag}.json")) as f:
            return json.load(f)

    for stream in ("position", "trajectory"):
        for k in range(n):
            if (stream, k) in first:
                win, end = first[(stream, k)]

                def window(k0=k, k1=end, s=stream):
                    for j in range(k0, k1):
                        S.cycle(s, j)
                    return k1 - k0

                found = child(win, "discover", None, window)
                for i, p in enumerate(sorted(found["seen"])):
                    child(win, str(i), p, window)
                child(win, "calibrate_routed", "(child)", lambda: att.calibrate(1000, nested=False) or 1000)
                child(win, "calibrate_nested", CALIB_PARENT, lambda: att.calibrate(1000) or 1000)
            S.cycle(stream, k)
    print(f"faults {L.cycle.counts['faults']}", flush=True)


def _totals(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    return 0  # (a process that collected nothing may write no totals)


def run_instructions(n: int, w: int, env: dict) -> tuple:
    """Per window: {path: (inclusive instructions per cycle, calls per cycle)}; the calibrated costs."""
    import json

    with tempfile.TemporaryDirectory(prefix="cycle_profile_") as d:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg.%p", "--collect-atstart=no",
               "--toggle-collect=ffi_call", sys.executable, os.path.abspath(__file__), "--driver", str(n), str(w), d]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0 or "faults 0" not in r.stdout:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}")
        runs: dict = {}
        for name in os.listdir(d):
            if name.endswith(".json"):
                with open(os.path.join(d, name)) as f:
                    x = json.load(f)
                if x["faults"]:
                    raise RuntimeError(f"{name}: a fault in the profiled window")
                x["instructions"] = _totals(os.path.join(d, f"cg.{x['pid']}"))
                runs.setdefault(x["window"], {})[name.split(".")[1]] = x
    out, cal = {}, {}
    for win, xs in runs.items():
        base = xs["discover"]["instructions"]  # (inherited from before the fork)
        routed = (xs["calibrate_routed"]["instructions"] - base) / 1000
        nested = (xs["calibrate_nested"]["instructions"] - base) / 1000 - routed
        cal[win] = (routed, nested)
        seen, cycles = xs["discover"]["seen"], xs["discover"]["cycles"]
        res = {}
        for tag, x in xs.items():
            p = x["routed"]
            if tag.startswith("calibrate") or p is None:
                continue
            inner = sum(c for q, c in seen.items() if q.startswith(p + " > "))  # wrapped calls inside it
            inc = x["instructions"] - base - routed * seen[p] - nested * inner
            res[p] = (max(inc, 0.0) / cycles, seen[p] / cycles)
        out[win] = res
    return out, cal


# ---- report ------------------------------------------------------------------------------------------------------
def _tree(labels) -> list:
    """The labels in tree order: each stage followed by what it nests."""
    return sorted(labels, key=lambda p: p.split(" > "))


def _inclusive(d: dict) -> dict:
    return {k: sum(v for j, v in d.items() if j == k or j.startswith(k + " > ")) for k in d}


def _calls(segments: dict) -> dict:
    """Calls per label from segments per label: a stage's segments are its calls plus one per call it made."""
    calls = {}
    for k in sorted(segments, key=lambda p: -p.count(" > ")):  # the deepest first
        children = sum(calls[j] for j in calls if j.startswith(k + " > ") and j.count(" > ") == k.count(" > ") + 1)
        calls[k] = segments[k] - children
    return calls


def _row(label: str) -> str:
    parts = label.split(" > ")
    name = parts[-1] + (" (own lines)" if label == ROOT else "")
    return "  " * (len(parts) - 1) + name


def report_wall(out: dict, cal_ns: float) -> dict:
    res = {}
    for win, (names, A, S) in out.items():
        cols = [i for i, x in enumerate(names) if x != OUTSIDE and not x.startswith("(calibration")]
        tot = A[:, cols].sum(axis=1)
        keep = tot <= 1.5 * np.median(tot)
        mean = dict(zip(names, A[keep].mean(axis=0)))
        calls = _calls({names[i]: S[keep, i].mean() for i in cols})
        d = {names[i]: mean[names[i]] for i in cols}
        inc = _inclusive(d)
        total = sum(d.values())
        res[win] = d
        print(f"\n== {win}: {int(keep.sum())} cycles (those over 1.5 × the median left out): profiled cycle mean "
              f"{total:.1f} µs, "
              f"p50 {np.percentile(tot[keep], 50):.1f} µs ({cal_ns:.0f} ns taken off each of the "
              f"{S[keep][:, cols].sum(axis=1).mean():.0f} segments a cycle)")
        print(f"{'stage (nested: indented)':52s} {'own µs':>7s} {'share':>6s} {'incl µs':>8s} {'calls':>6s}")
        for k in _tree(d):
            if d[k] < 0.05 and calls[k] < 0.01:
                continue
            print(f"{_row(k):52s} {d[k]:7.2f} {100 * d[k] / total:5.1f}% {inc[k]:8.2f} {calls[k]:6.2f}")
    return res


def _exclusive(inc: dict) -> dict:
    """Own cost: a stage's inclusive cost less its direct children's (a child absent from ``inc`` stays in it)."""
    return {k: v - sum(x for j, x in inc.items() if j.startswith(k + " > ") and j.count(" > ") == k.count(" > ") + 1)
            for k, v in inc.items()}


def report_instructions(out: dict, cal: dict) -> None:
    for win, res in out.items():
        inc = {k: v for k, (v, _) in res.items()}
        calls = {k: c for k, (_, c) in res.items()}
        own = _exclusive(inc)
        total = inc.get(ROOT, sum(own.values()))
        routed, nested = cal[win]
        print(f"\n== {win}: {total:,.0f} instructions a cycle ({routed:.0f} taken off each counted call, {nested:.0f} "
              f"off each wrapped call inside it)")
        print(f"{'stage (nested: indented)':52s} {'own instr':>10s} {'share':>6s} {'incl instr':>11s} {'calls':>6s}")
        for k in _tree(inc):
            print(f"{_row(k):52s} {own[k]:10,.0f} {100 * own[k] / total:5.1f}% {inc[k]:11,.0f} {calls[k]:6.2f}")
        print(f"BENCH cycle_profile window={win} instructions_per_cycle={total:.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=5000, help="cycles per stream (as cycle_bench)")
    ap.add_argument("--instructions", action="store_true", help="callgrind instruction counts per stage")
    ap.add_argument("--pythonpath", default=None, help="this directory first on PYTHONPATH (--instructions)")
    ap.add_argument("--window", type=int, default=200, help="cycles per window under callgrind")
    ap.add_argument("--driver", nargs=3, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.driver is not None:
        _driver(int(a.driver[0]), int(a.driver[1]), a.driver[2])
        return
    if a.instructions:
        env = dict(os.environ, PYTHONHASHSEED="0")
        if a.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(x for x in (os.path.abspath(a.pythonpath), env.get("PYTHONPATH"))
                                                if x)
        out, cal = run_instructions(a.cycles, a.window, env)
        report_instructions(out, cal)
        return
    if a.pythonpath:
        sys.path.insert(0, os.path.abspath(a.pythonpath))
    out, cal_ns = run_wall(a.cycles)
    report_wall(out, cal_ns)


if __name__ == "__main__":
    main()
