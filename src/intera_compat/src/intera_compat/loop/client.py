"""Hand whole joint trajectories to the realtime loop and follow them (listener side, no ROS).

The loop samples a trajectory every cycle on its own time base; nothing is streamed. This
client validates a trajectory (names, shapes, finiteness, increasing times, position,
velocity and acceleration limits of knots and segments — errors name the field), sends it
once over the channel's ring, and turns the loop's progress (state record) and results
(return ring) into plain data. The motion controller and the joint trajectory action server
are its users.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from ..config import RobotConfig
from ..data.codes import (END_ACCEL, END_SPEED, MAX_KP, REASONS, R_FAULT, STATUS_NAMES, TRACK_FEEDFORWARD,
                          TRACK_POSITION, TRACK_VELOCITY)
from ..data.faults import describe
from ..trajectory.spline import limit_violation
from .channel import Channel
from .layouts import MSG_ARM_RESULT, MSG_FAULT, MSG_TRAJ_CANCEL, MSG_TRAJ_EXECUTE, MSG_TRAJ_RESULT, MSG_TRAJ_SCALING


class TrajectoryError(ValueError):
    """A trajectory the client refuses to send (the message names the field)."""


@dataclass
class TrajectoryResult:
    traj_id: int
    status: int  # sources.trajectory SUCCEEDED / CANCELLED / PREEMPTED / ABORTED / REJECTED
    reason: int
    joint: str
    detail: str = ""  # what the loop said of the fault that ended it (reason R_FAULT)

    @property
    def name(self) -> str:
        return STATUS_NAMES.get(self.status, str(self.status))

    @property
    def message(self) -> str:
        why = REASONS.get(self.reason, "")
        return (f"{self.name}" + (f": {why}" if why else "") + (f" ({self.joint})" if self.joint else "")
                + (f": {self.detail}" if self.detail else ""))


@dataclass
class TrajectoryProgress:
    traj_id: int
    state: int  # sources.trajectory TRAJ_IDLE / RUNNING / STOPPING / DONE
    time: float  # s along the trajectory (its own time base)
    duration: float
    segment: int
    error: float  # max |setpoint − measured| over its joints, rad
    scaling: float  # applied time scaling (sender × backend)


class TrajectoryClient:
    def __init__(self, channel: Channel, cfg: RobotConfig):
        self.ch = channel
        self.names = list(cfg.joint_names)  # limb joints (a trajectory may name any subset)
        self.n = len(cfg.all_joints)
        self.index = {j: i for i, j in enumerate(self.names)}
        lim = cfg.limits
        self.lower, self.upper, self.vmax, self.amax = lim.lower, lim.upper, lim.velocity, lim.accel
        self.max_knots = int(cfg.control.get("max_trajectory_knots", 10000))
        self._ids = itertools.count(1)
        self.results: dict[int, TrajectoryResult] = {}
        self.faults: list = []  # (code, joint index, loop time)
        self._faults_told = 0  # faults already named in a result
        self.arm_answers: dict = {}  # request id → (ARM_RESULT_*, value) (Backend.request)
        self._buf = np.zeros(64)

    def execute(self, times, positions, velocities=None, accelerations=None, joint_names=None,
                scaling: float = 1.0, tracking: int = TRACK_FEEDFORWARD, kp=None, late: float = 0.0) -> int:
        """Send a trajectory; returns its id. ``times`` (k,) s from the start; ``positions`` (k, m)
        for ``joint_names`` (default: every limb joint); velocities/accelerations pick the
        interpolation (linear / cubic / quintic); ``scaling`` is the sender's initial time scaling
        (outside (0, 1]: 1); ``tracking`` how the loop follows it (sources.trajectory TRACK_*) with
        ``kp`` (m,) the position gains of TRACK_VELOCITY, 1/s; ``late`` the seconds it is behind its sender's
        schedule as it is sent (made up on the way where the loop counts lost time: loop/lag.py)."""
        names = list(joint_names) if joint_names is not None else self.names
        t = np.asarray(times, float)
        k = len(t)
        if k == 0:
            raise TrajectoryError("times is empty")
        if k > self.max_knots:
            raise TrajectoryError(f"{k} points: the loop holds at most {self.max_knots}")
        cols = []
        for j, name in enumerate(names):
            i = self.index.get(name)
            if i is None:
                raise TrajectoryError(f"joint_names[{j}] '{name}' is not a joint of this limb")
            if i in cols:
                raise TrajectoryError(f"joint_names[{j}] '{name}' appears twice")
            cols.append(i)
        arrays = {}
        for fld, data in (("positions", positions), ("velocities", velocities), ("accelerations", accelerations)):
            if data is None:
                continue
            a = np.asarray(data, float)
            if a.shape != (k, len(names)):
                raise TrajectoryError(f"{fld} has shape {a.shape}, expected ({k}, {len(names)})")
            bad = np.argwhere(~np.isfinite(a))
            if len(bad):
                raise TrajectoryError(f"{fld}[{bad[0][0]}][{bad[0][1]}] ({names[bad[0][1]]}) is {a[tuple(bad[0])]}")
            arrays[fld] = a
        if tracking not in (TRACK_FEEDFORWARD, TRACK_POSITION, TRACK_VELOCITY):
            raise TrajectoryError(f"tracking is {tracking}: give 0 (feed-forward), 1 (position) or 2 (velocity)")
        gains = np.zeros(len(names)) if kp is None else np.asarray(kp, float)
        if gains.shape != (len(names),) or not np.all((gains >= 0.0) & (gains <= MAX_KP)):
            raise TrajectoryError(f"kp must be {len(names)} gains in [0, {MAX_KP:g}] 1/s, got {kp}")
        if "positions" not in arrays:
            raise TrajectoryError("positions are required")
        if not np.isfinite(t).all() or t[0] < 0.0 or np.any(np.diff(t) <= 0.0):
            raise TrajectoryError("times must be finite, >= 0 and strictly increasing")
        if "accelerations" in arrays and "velocities" not in arrays:
            raise TrajectoryError("accelerations given without velocities")
        cols = np.array(cols)
        p = arrays["positions"]
        lo, hi = self.lower[cols], self.upper[cols]
        bad = np.argwhere((p < lo) | (p > hi))
        if len(bad):
            r, c = bad[0]
            raise TrajectoryError(f"positions[{r}][{c}] ({names[c]}) = {p[r, c]:.4g} rad is outside "
                                  f"[{lo[c]:.4g}, {hi[c]:.4g}]")
        order = 5 if "accelerations" in arrays else 3 if "velocities" in arrays else 1
        zeros = np.zeros_like(p)
        bad = limit_violation(t, p, arrays.get("velocities", zeros), arrays.get("accelerations", zeros), order,
                              self.vmax[cols], self.amax[cols])
        if bad is not None:
            what, r, c, value, limit = bad
            unit = "rad/s" if "speed" in what or what == "velocities" else "rad/s²"
            where = f"{what}[{r}][{c}]" if what in arrays else f"{what} of points {r}→{r + 1}"
            raise TrajectoryError(f"{where} ({names[c]}) = {value:.4g} {unit} exceeds the limit {limit:.4g} {unit}")
        for fld, lim in (("velocities", END_SPEED), ("accelerations", END_ACCEL)):
            last = arrays.get(fld, np.zeros((1, len(names))))[-1]
            if np.any(np.abs(last) > lim):
                c = int(np.argmax(np.abs(last)))
                raise TrajectoryError(f"{fld}[{k - 1}][{c}] ({names[c]}) = {last[c]:.4g}: a trajectory must end at rest "
                                      f"(the arm holds its last point)")
        n = self.n
        full = {f: np.zeros((k, n)) for f in ("positions", "velocities", "accelerations")}
        for f, a in arrays.items():
            full[f][:, cols] = a
        mask, full_kp = np.zeros(n), np.zeros(n)
        mask[cols] = 1.0
        full_kp[cols] = gains
        traj_id = next(self._ids)
        late = float(late) if late == late and late > 0.0 else 0.0  # (NaN, negative: on time)
        head = np.array([traj_id, order, k, scaling, tracking, late], float)
        if not self.ch.post(MSG_TRAJ_EXECUTE, head, mask, full_kp, t, full["positions"].ravel(),
                            full["velocities"].ravel(), full["accelerations"].ravel()):
            raise TrajectoryError("the loop's command ring is full (is the realtime loop running?)")
        return traj_id

    def cancel(self, traj_id: int = 0, patience: float = 0.0) -> bool:
        """Decelerate ``traj_id`` (0: whatever runs) to rest along its path; its result follows once stopped.
        True: queued (the loop gets it in order, even if the ring is full now: ``Channel.STOP_CLASS``); False:
        not even the channel's backlog had room for ``patience`` s — nothing was sent, call again."""
        return self.ch.post(MSG_TRAJ_CANCEL, np.array([traj_id], float), patience=patience)

    def set_scaling(self, factor: float, traj_id: int = 0, patience: float = 0.0) -> bool:
        """The sender's time scaling in [0, 1] (0 pauses on the path) for ``traj_id`` (0: whatever runs).
        True: queued; False: not queued (as ``cancel``), call again. TrajectoryError: not a number."""
        if not np.isfinite(factor):
            raise TrajectoryError(f"scaling is {factor}")
        return self.ch.post(MSG_TRAJ_SCALING, np.array([traj_id, min(max(float(factor), 0.0), 1.0)]),
                            patience=patience)

    def _joint_name(self, j: int) -> str:
        return self.names[j] if 0 <= j < len(self.names) else ""  # (-1: the arm, no joint)

    def poll(self) -> None:
        """Hand the loop what waits in the channel's backlog (stop-class messages a full ring could not take yet),
        then collect the results and faults it sent back."""
        self.ch.flush()
        ring, buf = self.ch.from_loop, self._buf
        while True:
            k = ring.pop(buf)
            if k < 0:
                return
            if ring.kind == MSG_TRAJ_RESULT:
                tid = int(buf[0])
                reason = int(buf[2])
                detail = ""
                if reason == R_FAULT and len(self.faults) > self._faults_told:  # (a fault comes before the
                    self._faults_told = len(self.faults)  # results it ends; each is told once)
                    code, fj, _ = self.faults[-1]
                    detail = describe(code, self._joint_name(fj))
                self.results[tid] = TrajectoryResult(tid, int(buf[1]), reason, self._joint_name(int(buf[3])), detail)
            elif ring.kind == MSG_ARM_RESULT:
                self.arm_answers[int(buf[0])] = (int(buf[1]), float(buf[2]))
            elif ring.kind == MSG_FAULT:
                self.faults.append((int(buf[0]), int(buf[1]), float(buf[2])))

    def progress(self) -> TrajectoryProgress:
        """From the last state snapshot the caller read (``channel.state.read()``)."""
        s = self.ch.state.local
        return TrajectoryProgress(int(s.traj_id[0]), int(s.traj_state[0]), float(s.traj_time[0]),
                                  float(s.traj_duration[0]), int(s.traj_segment[0]), float(s.traj_error[0]),
                                  float(s.traj_scaling[0]))

    def wait(self, traj_id: int, timeout: float, step=None, dt: float = 0.001) -> TrajectoryResult | None:
        """Poll until ``traj_id`` has a result, for at most ``timeout`` s: wall time, or when
        ``step()`` advances an offline loop by ``dt`` per call, loop time."""
        end = time.monotonic() + timeout
        steps = int(round(timeout / dt))
        while traj_id not in self.results:
            if step is None:
                if time.monotonic() > end:
                    return None
                time.sleep(0.001)
            else:
                if steps <= 0:
                    return None
                steps -= 1
                step()
            self.poll()
        return self.results[traj_id]
