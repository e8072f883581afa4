#!/usr/bin/env python3
"""Safety plugins benchmark, on the loop's own cycle (``OfflineLoop``: ``LoopCycle.step`` on the
MuJoCo Sawyer, sim time, as fast as the machine goes — every figure is in sim time except the
per-cycle cost, which is wall time inside the cycle):

* ``impact_detect_ms``: first arm–obstacle contact in the plant → collision detected, over
  ``--impacts`` drives at random speeds (0.2–1 rad/s) from random poses toward a table and a post,
  so different links hit; p50 and max;
* ``detect_false_positive``: detections during ``--free-minutes`` of random motion (POSITION targets
  at random speed ratios, VELOCITY sweeps) with no obstacle: goal 0;
* ``avoidance_min_clearance_mm``: the smallest tight-model distance of the *measured* arm over
  ``--approaches`` randomized self-approach motions (toward a random self-colliding configuration,
  half in POSITION, half in VELOCITY mode): goal ≥ the padding;
* ``avoidance_check_us``: wall time of the avoidance plugin per cycle (step limit + repulsion),
  p50 / mean / p99 / max over the approaches (where it works hardest) and over free motion;
* ``suppress_reengage_ms``: last suppress_* message → that safety back on, per topic (loop time).

    python src/intera_compat/bench/safety_bench.py [--impacts 24] [--free-minutes 10] [--approaches 100]
"""
import argparse
import time

import numpy as np

from intera_compat.config import load_config
from intera_compat.data.codes import POSITION_MODE, VELOCITY_MODE
from intera_compat.hardware.sim import SimBackend
from intera_compat.loop.layouts import (MSG_CUFF, MSG_SUPPRESS, SUPPRESS_COLLISION_AVOIDANCE, SUPPRESS_CONTACT_SAFETY,
                                        SUPPRESS_CUFF, SUPPRESS_GRAVITY)
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
ARM = CFG.joint_names
SCENE = [{"name": "table", "type": "box", "size": [0.3, 0.5, 0.05], "pos": [0.65, 0.16, 0.0]},
         {"name": "post", "type": "cylinder", "size": [0.04, 0.3], "pos": [0.15, 0.55, 0.3]}]


def loop(obstacles=(), pose="neutral"):
    L = OfflineLoop(CFG, backend=SimBackend(RobotModel(CFG), CFG.full_pose(pose), obstacles=list(obstacles)))
    L.step()
    return L


class Timed:
    """Wraps the avoidance plugin's two hooks and records their wall time per cycle."""

    def __init__(self, plugin):
        self.p, self.samples = plugin, []
        self._set, self._out = plugin.on_setpoint, plugin.on_output
        self._t = 0.0
        plugin.on_setpoint, plugin.on_output = self.on_setpoint, self.on_output

    def on_setpoint(self, hw, sp):
        t = time.perf_counter()
        r = self._set(hw, sp)
        self._t = time.perf_counter() - t
        return r

    def on_output(self, hw, sp, cmd):
        t = time.perf_counter()
        r = self._out(hw, sp, cmd)
        self.samples.append((self._t + time.perf_counter() - t) * 1e6)
        return r


def impacts(n, rng):
    """Random drives into the scene; (delay ms, link, speed) per detected impact, and misses."""
    out, missed = [], 0
    lo, hi = CFG.limits.lower[:7], CFG.limits.upper[:7]
    while len(out) < n and missed < 10 * n:
        L = loop(SCENE)
        start = CFG.full_pose("neutral")[:7] + rng.normal(0, 0.25, 7)
        start = np.clip(start, lo, hi)
        for _ in range(250):  # get there slowly, contact safety on (a start inside the scene is skipped)
            L.send(POSITION_MODE, ARM, position=start)
            L.run(0.01)
        if L.backend.scene_contact() or L.cycle.detection.count:
            missed += 1
            continue
        speed = rng.uniform(0.2, 1.0)
        # alternately down onto the table (shoulder) and sideways into the post (base joint), with some of
        # the other joints mixed in so different links lead
        direction = rng.normal(0, 0.3, 7) * np.array([1, 1, 0.5, 1, 0.3, 0.3, 0])
        direction[1 if (len(out) + missed) % 2 == 0 else 0] = 1.0
        vel = speed * direction / np.abs(direction).max()
        det, contact, trip, link = L.cycle.detection, None, None, None
        for k in range(3000):
            if k % 10 == 0:
                L.send(VELOCITY_MODE, ARM, velocity=vel)
            L.step()
            if contact is None:
                link = L.backend.scene_contact()
                if link is not None:
                    contact = L.cycle.now
            if det.tripped:
                trip = L.cycle.now
                break
        if contact is None or trip is None or trip < contact:
            missed += 1  # no contact in 3 s (or a detection before any contact: counted below)
            if trip is not None and contact is None:
                out.append((np.inf, "false", speed))
            continue
        out.append(((trip - contact) * 1e3, link, speed))
    return out, missed


def free_motion(minutes, rng, timer_list):
    L = loop()
    t = Timed(L.cycle.avoidance)
    lo, hi = CFG.limits.lower[:7], CFG.limits.upper[:7]
    end = minutes * 60.0
    self_contacts = 0
    while L.cycle.now < end:
        if rng.random() < 0.6:
            L.set(speed_ratio=rng.uniform(0.3, 1.0))
            target = rng.uniform(lo * 0.8, hi * 0.8)
            for _ in range(int(rng.uniform(1.0, 3.0) / 0.01)):
                L.send(POSITION_MODE, ARM, position=target)
                L.run(0.01)
        else:
            w = rng.uniform(0.5, 2.0, 7)
            amp = rng.uniform(0.2, 1.0, 7) * CFG.limits.velocity[:7] * 0.6
            t0 = L.cycle.now
            for _ in range(int(rng.uniform(1.0, 3.0) / 0.01)):
                L.send(VELOCITY_MODE, ARM, velocity=amp * np.sin(w * (L.cycle.now - t0)))
                L.run(0.01)
        self_contacts += L.backend.contacts() > 0
    timer_list.extend(t.samples)
    return L.cycle.detection.count, L.cycle.now, self_contacts


def approaches(n, rng, rm, timer_list):
    """Drive toward random self-colliding configurations; min measured tight distance per run."""
    lo, hi = CFG.limits.lower[:7], CFG.limits.upper[:7]
    mins = []
    L = loop()
    t = Timed(L.cycle.avoidance)
    while len(mins) < n:
        q = np.r_[rng.uniform(lo, hi), 0.0]
        if not rm.in_collision(q):
            continue
        mode = POSITION_MODE if len(mins) % 2 == 0 else VELOCITY_MODE
        L.set(speed_ratio=1.0)
        dmin = np.inf
        for k in range(300):
            here = L.arm_q
            if mode == POSITION_MODE:
                L.send(POSITION_MODE, ARM, position=q[:7])
            else:
                L.send(VELOCITY_MODE, ARM, velocity=np.clip(2.0 * (q[:7] - here), -1.5, 1.5))
            for _ in range(10):
                L.step()
                dmin = min(dmin, rm.distances(L.q).min())
        mins.append(dmin)
        # back to a free pose for the next run
        for _ in range(200):
            L.send(POSITION_MODE, ARM, position=CFG.full_pose("neutral")[:7])
            L.run(0.01)
    timer_list.extend(t.samples)
    return np.array(mins)


def reengage():
    """Loop time from the last suppress_* message (10 Hz stream) to that safety being on again."""
    L = loop()
    checks = {SUPPRESS_COLLISION_AVOIDANCE: lambda c: c.ctx.avoidance,
              SUPPRESS_CONTACT_SAFETY: lambda c: c.ctx.detection,
              SUPPRESS_GRAVITY: lambda c: c.sp.gravity,
              SUPPRESS_CUFF: lambda c: c.zero_g.engaged()}
    out = {}
    for key, on in checks.items():
        if key == SUPPRESS_CUFF:
            L.event(MSG_CUFF, 1)  # squeezed: zero-G is what the suppression holds off
        last = None
        for k in range(50):
            if k % 10 == 0:
                last = L.cycle.now  # the message is read by the next cycle, at this loop time
                L.event(MSG_SUPPRESS, key)
            L.step()
        if on(L.cycle):
            raise RuntimeError(f"suppression {key} had no effect")
        while not on(L.cycle):
            L.step()
        out[key] = (L.cycle.now - L.dt - last) * 1e3  # the cycle that ran with it on again
    return out


def pct(x, p):
    return float(np.percentile(x, p)) if len(x) else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impacts", type=int, default=24)
    ap.add_argument("--free-minutes", type=float, default=10.0)
    ap.add_argument("--approaches", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    rm = RobotModel(CFG)
    w0 = time.time()
    hits, missed = impacts(a.impacts, rng)
    delays = np.array([d for d, _, _ in hits])
    links = sorted({link for _, link, _ in hits})
    false_in_impacts = int(np.sum(~np.isfinite(delays)))
    delays = delays[np.isfinite(delays)]
    appr_us, free_us = [], []
    mins = approaches(a.approaches, rng, rm, appr_us)
    trips, free_s, self_contacts = free_motion(a.free_minutes, rng, free_us)
    re = reengage()
    names = {SUPPRESS_COLLISION_AVOIDANCE: "collision_avoidance", SUPPRESS_CONTACT_SAFETY: "contact_safety",
             SUPPRESS_GRAVITY: "gravity_compensation", SUPPRESS_CUFF: "cuff_interaction"}
    pad = CFG.control["collision_avoidance"]["padding"]
    print(f"{'metric':46s} {'value':>12s}   goal")
    print(f"{'impacts detected / drives without contact':46s} {len(delays):>8d} / {missed:<3d}  ≥ 20 impacts")
    print(f"{'links that hit':46s} {', '.join(links)}")
    print(f"{'impact_detect_ms p50 / max':46s} {pct(delays, 50):6.1f} / {delays.max() if len(delays) else np.nan:5.1f}"
          f"   ≤ 20 / ≤ 50")
    print(f"{'detections before any contact (impact drives)':46s} {false_in_impacts:>12d}   0")
    print(f"{'detect_false_positive ({:.1f} min free motion)'.format(free_s / 60):46s} {trips:>12d}   0")
    print(f"{'  cycles with a self-contact in the plant':46s} {self_contacts:>12d}")
    print(f"{'avoidance_min_clearance_mm ({} approaches)'.format(len(mins)):46s} {mins.min() * 1e3:12.2f}"
          f"   ≥ {pad * 1e3:.0f}")
    for label, x in (("approaches", appr_us), ("free motion", free_us)):
        print(f"{'avoidance_check_us ' + label + ' p50/mean/p99/max':46s} {pct(x, 50):5.1f} / {np.mean(x):5.1f} / "
              f"{pct(x, 99):5.1f} / {np.max(x):6.1f}   ≤ 30")
    for key, ms in re.items():
        print(f"{'suppress_' + names[key] + ' re-engage ms':46s} {ms:12.1f}   ≤ 200")
    print(f"(wall time {time.time() - w0:.0f} s)")
    print(f"BENCH impact_detect_ms_p50 {pct(delays, 50):.2f} ms")
    print(f"BENCH impact_detect_ms_max {delays.max():.2f} ms")
    print(f"BENCH impacts {len(delays)} count")
    print(f"BENCH detect_false_positive {trips + false_in_impacts} count")
    print(f"BENCH free_motion_minutes {free_s / 60:.2f} min")
    print(f"BENCH avoidance_min_clearance_mm {mins.min() * 1e3:.2f} mm")
    print(f"BENCH avoidance_check_us_p50 {pct(appr_us + free_us, 50):.2f} us")
    print(f"BENCH avoidance_check_us_mean {np.mean(appr_us + free_us):.2f} us")
    print(f"BENCH avoidance_check_us_approach_p99 {pct(appr_us, 99):.2f} us")
    print(f"BENCH suppress_reengage_ms_max {max(re.values()):.1f} ms")


if __name__ == "__main__":
    main()
