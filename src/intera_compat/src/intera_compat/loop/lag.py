"""Time a clock backend's arm ran that the loop's cycles did not, made up by the trajectory that runs.

A ros_control position or effort arm gets one cycle per joint-state sample: a gap in its samples (the loop process,
the bridge or the arm's publisher stalled) is arm time the loop's clock never ran (``Backend.lag``). A client keeps
its own schedule — the SDK's joint_trajectory_client waits for its result for exactly the trajectory's duration and
cancels it then, and the SDK's own action server samples the trajectory at ``now - stamp`` — so a trajectory under
way makes the lost time up: its time base runs up to ``PACE_MAX`` × faster until it is back on schedule, the
factor falling with what is left (``TAU``), within every joint's velocity limit and ramped within the acceleration
and jerk limits as any change of the time base (``TrajectorySource``). Nothing runs ahead: there is no schedule to
keep without a trajectory, and lag counted then is dropped. Not a jump: the position arm's controller held its
last target through the gap (a step of the target by the time lost drove a review's arm at 1.85× the speed asked).
"""
from __future__ import annotations

from ..data.codes import TRAJ_RUNNING

PACE_MAX = 1.5  # the fastest a trajectory's time base runs to make up lost time (× its own)
TAU = 0.25  # s: the time base runs 1 + lag / TAU (a 0.05 s lag: 1.2 ×), so that lost time decays with TAU


class LagCatchUp:
    def __init__(self, backend, trajectory, dt: float):
        self.backend, self.trajectory, self.dt = backend, trajectory, dt
        if backend.lags:
            trajectory.speed_max = max(trajectory.speed_max, PACE_MAX)

    def pace(self, driving) -> float:
        """This cycle's factor of the time base (1: on schedule, or nothing to make up); what the last cycle ran
        beyond 1 is taken off the lag first. ``driving``: the source that drives the arm."""
        b, t = self.backend, self.trajectory
        if not b.lags:
            return 1.0
        if driving is not t or t.state != TRAJ_RUNNING:
            b.lag = 0.0
            return 1.0
        lag = b.lag - max(t.applied_scaling - 1.0, 0.0) * self.dt
        b.lag = lag = lag if lag > 0.0 else 0.0
        return 1.0 + min(lag / TAU, PACE_MAX - 1.0)
