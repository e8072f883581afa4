"""Trajectory forwarding: the backend adapter's path for a trajectory-only arm (waypoint controllers, a
FollowJointTrajectory controller), which takes no stream.

A trajectory the loop's trajectory source starts goes to the arm whole (the source keeps playing it on the same
time base: the reference the monitors compare the arm with); its stop (a cancel) and its end by anything else
(preemption, a fault, a disable) stop the arm's; an arm that runs more than ``FORWARD_LAG`` behind the reference by
its controller's feedback is a controller error. The arm's controller runs on its own clock (the UR driver's scaled
controller follows its speed slider as the loop does): a sender's time scaling below 1 or the operator's speed
override below 1 (a pause) stops the motion instead. A paced arm (a Cobot's PLC, which times the motion itself) sets
the reference's pace instead: it follows the arm (``PACE_TAU`` behind at full speed), never runs ahead of it, and
catches up (up to ``PACE_MAX`` × its speed, within the joints' limits) with an arm ahead of it — a PLC honours no
hold or slow part of the timing (the source's ``time_cap``: its braking never passes the arm); the arm's time
reaches the end only once the arm is done there, so the trajectory ends then. An arm that takes single waypoints
gets the POSITION source's target as one.
"""
from __future__ import annotations

import numpy as np

from ..data.codes import R_FAULT, SUCCEEDED, TRAJ_DONE, TRAJ_RUNNING, TRAJ_STOPPING
from ..data.faults import FAULT_CONTROLLER_ERROR
from ..data.state import PROGRESS_ACTIVE, Capability
from ..hardware.base import Backend
from ..sources.position import PositionSource
from ..sources.trajectory import TrajectorySource

FORWARD_LAG = 1.0  # s a trajectory-only arm may run behind the loop's reference (its controller's feedback)
PACE_TAU = 0.1  # s: the reference of a paced arm (Backend.paced) runs at 1 this far behind the arm, stops level with it
PACE_MAX = 10.0  # ... and up to this many times faster (within the joints' limits) when the arm is further ahead


class Forwarder:
    def __init__(self, backend: Backend, trajectory: TrajectorySource, position: PositionSource):
        self.backend, self.trajectory, self.position = backend, trajectory, position
        self.paced = backend.paced  # the reference follows the arm's own timing
        self.pace = 1.0  # the reference's time base factor it asks for
        if self.paced:
            trajectory.speed_max, trajectory.time_capped = PACE_MAX, True
        self.waypoints = backend.has(Capability.WAYPOINT)  # POSITION targets go as single waypoints
        self._wp_speed = np.zeros(len(position.interp.vmax))
        self._waypoint_out = False  # a POSITION target went to the arm as a waypoint (cancelled when it stops driving)
        self._forwarded = 0.0  # the id of the trajectory the arm runs (0: none)
        self._stopping = False

    def step(self, driving, robot_active: bool, speed_override: float) -> int:
        """One cycle, after the setpoint stage: ``driving`` the source that drives the arm. Returns a fault code
        (the arm's controller runs behind the reference) or 0."""
        t = self.trajectory
        running = robot_active and driving is t and t.state in (TRAJ_RUNNING, TRAJ_STOPPING)
        if running and t.traj_id != self._forwarded:
            tr, k = t.traj, t.traj.k
            self._forwarded, self._stopping = t.traj_id, False
            if not self.backend.submit(tr.t[:k], tr.q[:k], tr.v[:k], tr.a[:k], tr.order):
                t.deactivate(R_FAULT)
        if running and t.state == TRAJ_RUNNING:
            if t.scaling < 1.0 or speed_override < 1.0:
                t.cancel(0.0)  # the arm's controller keeps its own clock: a slowed or paused time base is a stop
            state, arm_time = self.backend.progress()
            if self.paced:  # (the arm times its motion itself: the reference follows it, ahead or behind)
                active = state == PROGRESS_ACTIVE
                self.pace = min(max((arm_time - t.time) / PACE_TAU, 0.0), PACE_MAX) if active else 1.0
                t.time_cap = arm_time if active else np.inf  # (a fast catch-up's braking never passes the arm)
            elif state == PROGRESS_ACTIVE and t.time - arm_time > FORWARD_LAG:  # (no feedback at all: arm_time 0)
                return FAULT_CONTROLLER_ERROR  # the arm's controller runs behind the reference
        if running and t.state == TRAJ_STOPPING and not self._stopping:
            self._stopping = True
            self.backend.cancel()
        elif not running and self._forwarded:
            if not (t.state == TRAJ_DONE and t.last_status == SUCCEEDED):
                self.backend.cancel()
            self._forwarded = 0.0
        if not running:
            self.pace, t.time_cap = 1.0, np.inf
            if not self.waypoints:
                return 0
            if robot_active and driving is self.position:
                it = self.position.interp  # (at the loop's own speed: the ratio × the joints' limits)
                np.multiply(it.vmax, max(it.ratio, 0.0), out=self._wp_speed)
                self.backend.waypoint(it.target, self._wp_speed)
                self._waypoint_out = True
            elif self._waypoint_out:  # the POSITION source no longer drives the arm (an override, a hold, the
                self._waypoint_out = False  # brakes, another mode): the arm's controller drops the point it was
                self.backend.cancel()  # given and brakes — it must not run on to it under a latch
        return 0
