"""Time a clock backend's arm ran that the loop's cycles did not, made up by the trajectory that runs.

A ros_control position or effort arm gets one cycle per joint-state sample: a gap in its samples (the loop process,
the bridge or the arm's publisher stalled) is arm time the loop's clock never ran (``Backend.lag``); so are the ticks
the scheduler skipped on a simulated arm on the wall clock (``wall_clock_lags``, ``count_skipped``: the simulated
world stood still while its clients' wall clock ran on — a real arm's controller never stops). A client keeps
its own schedule — the SDK's joint_trajectory_client waits for its result for exactly the trajectory's duration and
cancels it then, and the SDK's own action server samples the trajectory at ``now - stamp`` — so a trajectory under
way makes the lost time up: its time base runs faster, 1 + lag / ``TAU``, until it is back on schedule, changes of
the factor ramped within the acceleration and jerk limits as any change of the time base (``TrajectorySource``).

At most ``PACE_MAX`` ×, and no faster than keeps the whole path within ``MARGIN`` of every joint's velocity limit
and (the path's accelerations grow with the factor's square) its acceleration limit: the path's peaks are found
once, when the trajectory starts (``path_peaks``: every segment's polynomial at 9 points, vectorized, as
``prepare``'s limit check does), and ``TrajectorySource`` keeps each cycle's path velocity and acceleration within
the limits as well; a path planned at the limits gets no catch-up. Only what is lost while the trajectory runs at
full speed counts: a new trajectory starts with what it came late by (``TrajectorySource.late``: its sender's
stamp, the planning and the hop to the loop), taken first off a hold it starts with (``skip_hold``), and none of what
was lost before it. Later than ``LATE_MOST`` is a clock mismatch between the sender and the robot (unsynchronised
hosts, ``use_sim_time`` on one side only): such a trajectory starts when it comes. One that starts slowed, or while
its sender, the backend or the operator slows it (a pause, the speed override), keeps no schedule: the lag is
dropped. Nothing runs ahead without a trajectory. Not a jump: the position arm's controller held its last target
through the gap (a step of the target by the time lost drove a review's arm at 1.85× the speed asked).
"""
from __future__ import annotations

import numpy as np

from ..data.codes import TRAJ_RUNNING
from ..data.state import Capability
from ..trajectory.spline import path_peaks

SKIPPED_MOST = 0.5  # s of skipped ticks a simulated arm on the wall clock counts at most (a link timeout's worth)
LATE_MOST = 0.5  # s a trajectory that came late (its sender's stamp) starts behind at most (later: on arrival)
PACE_MAX = 1.5  # the fastest a trajectory's time base runs to make up lost time (× its own)
TAU = 0.25  # s: the time base runs 1 + lag / TAU (a 0.05 s lag: 1.2 ×), so that lost time decays with TAU
MARGIN = 0.9  # of the joints' velocity and acceleration limits, the most the faster path may use


class LagCatchUp:
    def __init__(self, backend, trajectory, dt: float):
        self.backend, self.trajectory, self.dt = backend, trajectory, dt
        self._traj = None  # the trajectory the factor's cap is for
        self._top = 1.0
        if backend.lags:
            trajectory.speed_max = max(trajectory.speed_max, PACE_MAX)

    def pace(self, driving, speed: float) -> float:
        """This cycle's factor of the time base (1: on schedule, or nothing to make up); what the last cycle ran
        beyond 1 is taken off the lag first. ``driving``: the source that drives the arm; ``speed``: the rest of
        the time base's factor (the backend's × the operator's override)."""
        b, t = self.backend, self.trajectory
        if not b.lags:
            return 1.0
        running, full = driving is t and t.state == TRAJ_RUNNING, t.scaling * speed >= 1.0
        if running and t.traj_id != self._traj:  # a new trajectory: its own schedule, from the time its sender was
            self._traj, self._top = t.traj_id, self._peak_pace()  # late by (one that starts slowed keeps none) —
            late = t.late if full and t.late <= LATE_MOST else 0.0  # first off a hold it starts with, as the
            b.lag = late - t.skip_hold(late)  # SDK's server samples at now − stamp (nothing moves: no speed-up)
            return 1.0
        if not running or not full:
            b.lag = 0.0
            return 1.0
        lag = b.lag - max(t.applied_scaling - 1.0, 0.0) * self.dt
        b.lag = lag = lag if lag > 0.0 else 0.0
        return 1.0 + min(lag / TAU, self._top - 1.0)

    def _peak_pace(self) -> float:
        """The largest factor that keeps the whole path within ``MARGIN`` of the limits (at least 1)."""
        t = self.trajectory
        tr, k = t.traj, t.traj.k
        pv, pa = path_peaks(tr.t[:k], tr.q[:k], tr.v[:k], tr.a[:k], tr.order)
        with np.errstate(divide="ignore"):
            top = min(float(np.min(MARGIN * t.vmax / pv)), float(np.min(MARGIN * t.amax / pa)) ** 0.5)
        return min(max(top, 1.0), PACE_MAX)


def wall_clock_lags(backend, realtime: bool) -> None:
    """Before the cycle is built: a simulated arm whose loop runs on the wall clock at real time (``realtime``: its
    clients keep that clock's schedule) counts the ticks its scheduler skips as lost time."""
    if realtime and not backend.clock and backend.has(Capability.SIM_TIME):
        backend.lags = True


def count_skipped(backend, ticks: int) -> None:
    """``ticks`` the scheduler skipped (a stall of the loop process) join the lag of a backend that counts them."""
    if ticks and backend.lags and not backend.clock:
        p = (ticks + 1) * backend.period
        backend.add_lag(p, p, SKIPPED_MOST)
