#!/usr/bin/env python3
"""Interaction control benchmark, on the loop's own cycle (``OfflineLoop``: ``LoopCycle.step`` on the MuJoCo
Sawyer, sim time; the plant's joints have dry friction and viscous damping). Physical truths come from the plant:
the contact force is MuJoCo's (the bench top pushing on the arm), displacements are the plant's.

* ``force_err_pct``: FORCE mode on z pressing a bench top with f ∈ {5, 10, 20, 30} N (after a damped approach):
  |mean contact force over 0.5 s − f| / f, the worst;
* ``stiffness_err_pct``: IMPEDANCE with K ∈ {100, 400, 1300} N/m on x, y, z and {5, 15, 30} Nm/rad on rx, ry,
  rz: the slope between two loads in the same direction (an applied wrench of 50 % then 100 % of the load that
  moves it 5 cm / 0.12 rad: the plant's dry friction, up to 0.3 Nm a joint, holds the same way at both and drops
  out of the slope), |K_measured − K| / K, the worst;
* ``force_limit_overshoot_pct``: IMPEDANCE_WITH_FORCE_LIMIT with limits {8, 15, 25} N, the reference sinking 6 cm
  into the bench at 10 % speed: the largest 0.1 s mean contact force beyond the limit from 0.2 s after the first
  touch on, % of the limit (0: never beyond); the touch itself (momentum, not the controller) is shown beside;
* ``admittance_force_err_pct``, ``admittance_stiffness_err_pct``: the same two on the position-only arm
  (``SimPositionBackend``: the arm behind a stiff position servo with a wrist F/T; interaction runs as admittance);
* ``interaction_cycle_us``: wall time of ``LoopCycle.step`` with interaction control on (holding, then pressing),
  p50 / mean, beside the same cycle in POSITION hold (no interaction) in the same run.

    python src/intera_compat/bench/interaction_bench.py
"""
import time

import numpy as np
import pinocchio as pin

from intera_compat.config import load_config
from intera_compat.control.interaction import FORCE, IMPEDANCE, IMPEDANCE_WITH_FORCE_LIMIT, InteractionLimits, pack
from intera_compat.data.codes import POSITION_MODE
from intera_compat.hardware.sim import SimBackend, SimPositionBackend
from intera_compat.loop.layouts import MSG_INTERACTION
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
ARM = CFG.joint_names
LIM = InteractionLimits.from_config(CFG.control.get("interaction"))
BENCH = {"name": "bench", "type": "box", "size": [0.3, 0.5, 0.05], "pos": [0.65, 0.16, 0.10]}  # top at z = 0.15
RM = RobotModel(CFG)


def started(obstacles=(), backend=SimBackend):
    L = OfflineLoop(CFG, backend=backend(RobotModel(CFG), CFG.full_pose("neutral"), obstacles=list(obstacles)))
    L.run(0.1)
    return L


def interact(L, modes=(IMPEDANCE,) * 6, K=(1300, 1300, 1300, 30, 30, 30), D=(), force=(0,) * 6):
    w, _ = pack(True, modes, K, [False] * 6, D, [5, 10, 5, 10, 5, 10, 5], force, (0, 0, 0), (0, 0, 0, 1),
                "right_hand", False, False, False, False, 7, "right_hand", LIM)
    L.event(MSG_INTERACTION, *w)
    L.run(0.3)


def force_errors(backend=SimBackend):
    rows = []
    for f in (5.0, 10.0, 20.0, 30.0):
        L = started([BENCH], backend)
        interact(L, (IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE), D=(100, 100, 40 * f, 5, 5, 5),
                 force=(0, 0, -f, 0, 0, 0))
        L.run(2.0)
        fz = []
        for _ in range(50):
            L.run(0.01)
            fz.append(L.backend.scene_force()[2])
        det = L.cycle.detection
        rows.append((f, float(np.mean(fz)), 100.0 * abs(np.mean(fz) - f) / f, det.count if det else 0))
    return rows


def displacement(L, axis, x0) -> float:
    x = RM.fk(L.q, "right_hand")
    return float((x.translation - x0.translation)[axis] if axis < 3 else pin.log3(x.rotation @ x0.rotation.T)[axis - 3])


def stiffness_errors(backend=SimBackend):
    rows = []
    for axis in range(6):
        for k in ((100.0, 400.0, 1300.0) if axis < 3 else (5.0, 15.0, 30.0)):
            L = started(backend=backend)
            K = [1300.0, 1300.0, 1300.0, 30.0, 30.0, 30.0]
            K[axis] = k
            D = [2.0 * np.sqrt(k * 4.0) if i == axis and axis < 3 else (60.0 if i < 3 else 2.0) for i in range(6)]
            interact(L, K=K, D=D)
            load = k * (0.05 if axis < 3 else 0.12)
            x0 = RM.fk(L.q, "right_hand")
            at = []
            for share in (0.5, 1.0):
                w = np.zeros(6)
                w[axis] = share * load
                L.backend.apply_wrench("right_hand", w, 4.0)
                L.run(3.0)
                at.append(displacement(L, axis, x0))
            measured = 0.5 * load / (at[1] - at[0])
            rows.append((axis, k, measured, 100.0 * abs(measured - k) / k))
    return rows


def force_limit_overshoot():
    rows = []
    for f in (8.0, 15.0, 25.0):
        L = started([BENCH])
        interact(L, (IMPEDANCE_WITH_FORCE_LIMIT,) * 6, D=(200, 200, 200, 5, 5, 5), force=(f, f, f, 5, 5, 5))
        L.set(speed_ratio=0.1)
        target = L.arm_q + np.array([0, 0.15, 0, 0, 0, 0, 0])
        fz = []
        for _ in range(300):
            L.send(POSITION_MODE, ARM, position=target)
            L.run(0.01)
            fz.append(L.backend.scene_force()[2])
        means = np.convolve(fz, np.ones(10) / 10, mode="valid")
        touch = int(np.argmax(np.asarray(fz) > 0.0))
        worst = float(means[touch + 20:].max())
        touch_peak = float(means[touch:touch + 20].max())
        rows.append((f, worst, max(0.0, 100.0 * (worst - f) / f), touch_peak))
    return rows


def cycle_times():
    L = started([BENCH])
    step = L.cycle.step

    def timed(seconds):
        out = []
        for _ in range(int(seconds / L.dt)):
            t = time.perf_counter()
            step()
            out.append(time.perf_counter() - t)
            L.cycle.publish_safety()
            L.state.read()
        return np.array(out) * 1e6

    hold = timed(2.0)
    interact(L, (IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE), D=(100, 100, 400, 5, 5, 5),
             force=(0, 0, -10, 0, 0, 0))
    inter = timed(4.0)
    return hold, inter


def main():
    t0 = time.time()
    fe = force_errors()
    print(f"{'force N':>8}{'measured N':>12}{'err %':>8}{'detections':>12}")
    for f, m, e, d in fe:
        print(f"{f:8.1f}{m:12.2f}{e:8.2f}{d:12d}")
    se = stiffness_errors()
    print(f"\n{'axis':>5}{'K':>8}{'measured':>10}{'err %':>8}")
    for a, k, m, e in se:
        print(f"{'xyz'[a] if a < 3 else 'r' + 'xyz'[a - 3]:>5}{k:8.1f}{m:10.1f}{e:8.2f}")
    fl = force_limit_overshoot()
    print(f"\n{'limit N':>8}{'peak 0.1 s mean N':>19}{'overshoot %':>13}{'touch peak N':>14}")
    for f, w, o, tp in fl:
        print(f"{f:8.1f}{w:19.2f}{o:13.2f}{tp:14.2f}")
    afe, ase = force_errors(SimPositionBackend), stiffness_errors(SimPositionBackend)
    print(f"\nposition-only arm (admittance): force err % {[round(float(e), 2) for *_, e, _ in afe]}, "
          f"stiffness err % worst {max(e for *_, e in ase):.2f}")
    hold, inter = cycle_times()
    print(f"\ncycle µs p50/mean: hold {np.median(hold):.0f}/{hold.mean():.0f}, "
          f"interaction {np.median(inter):.0f}/{inter.mean():.0f}  ({time.time() - t0:.0f} s)")
    print(f"BENCH force_err_pct {max(e for *_, e, _ in fe):.2f} %")
    print(f"BENCH stiffness_err_pct {max(e for *_, e in se):.2f} %")
    print(f"BENCH force_limit_overshoot_pct {max(o for _, _, o, _ in fl):.2f} %")
    print(f"BENCH admittance_force_err_pct {max(e for *_, e, _ in afe):.2f} %")
    print(f"BENCH admittance_stiffness_err_pct {max(e for *_, e in ase):.2f} %")
    print(f"BENCH interaction_cycle_us_p50 {np.median(inter):.1f} us")
    print(f"BENCH interaction_cycle_us_mean {inter.mean():.1f} us")
    print(f"BENCH hold_cycle_us_p50 {np.median(hold):.1f} us")


if __name__ == "__main__":
    main()
