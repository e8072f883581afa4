"""The loop's ``ExecuteTrajectory`` action, served by the realtime_loop node (listener side).

A goal is validated and handed to the loop once through ``TrajectoryClient``; the loop samples it
on its speed-scaled time base. ``tick`` (the publisher thread, every loop tick) turns the loop's
results into terminal states with a filled result and publishes feedback. The keep-alive watchdog
(its own thread, every ``WATCHDOG_PERIOD``): a goal sent with ``keepalive_timeout`` > 0 is stopped
smoothly on its path when its sender's ``TrajectoryKeepAlive`` messages stop for that long (the
sender died or hangs), so no trajectory runs on without someone watching it. It runs on the wall
clock — keep-alives are sent on the wall clock too, whatever the loop's speed-up on simulated
time — and one check right after this process itself stalled is skipped (keep-alives may be
waiting in the socket, unread), never two in a row, so a hiccup here does not stop a healthy
sender's trajectory and a process that keeps stalling still gets checked. Goals are answered
outside ``self.lock`` (actionlib holds its own lock around ``_on_goal``, which takes ours).

A cancel (the client's, or the watchdog's for a silent sender) and a scaling count as sent only once
the channel took them (``TrajectoryClient.cancel`` / ``set_scaling`` return True): a goal is marked lost
only then, a cancel the channel could not take is retried at every watchdog check, and a scaling at the
next keep-alive.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import actionlib
import rospy
from intera_compat.msg import (ExecuteTrajectoryAction, ExecuteTrajectoryFeedback, ExecuteTrajectoryResult,
                               TrajectoryKeepAlive)

from ..control.interaction import InteractionParams, refusal_without_force_sensing
from ..data import codes as T
from ..loop.client import TrajectoryClient, TrajectoryError
from ..loop.lag import LATE_MOST
from .interaction import pack_message

WATCHDOG_PERIOD = 0.002  # s between keep-alive checks while goals run
WATCHDOG_STALL = 0.01  # s: a check this late means this process stalled: skip it


@dataclass
class _Goal:
    gh: object
    goal_id: str
    traj_id: int
    timeout: float
    last_alive: float
    scaling: float
    cols: list  # the goal's joints among the limb's, in its order
    lost: bool = False  # the watchdog's cancel is queued (its sender went silent)
    cancel_wanted: bool = False  # the client's cancel could not be queued yet: the watchdog retries it


def goal_arrays(traj):
    """trajectory_msgs/JointTrajectory → (names, times, positions, velocities|None, accelerations|None);
    TrajectoryError naming the field when the points are inconsistent."""
    names = list(traj.joint_names)
    m = len(names)
    pts = traj.points
    if not names:
        raise TrajectoryError("trajectory.joint_names is empty")
    if not pts:
        raise TrajectoryError("trajectory.points is empty")
    out = {}
    for fld in ("positions", "velocities", "accelerations"):
        given = [len(getattr(p, fld)) for p in pts]
        if fld != "positions" and not any(given):
            out[fld] = None
            continue
        for i, k in enumerate(given):
            if k != m:
                raise TrajectoryError(f"trajectory.points[{i}].{fld} has {k} values for {m} joint_names"
                                      + ("" if fld == "positions" else f" (give {fld} for every point or none)"))
        out[fld] = [list(getattr(p, fld)) for p in pts]
    times = [p.time_from_start.to_sec() for p in pts]
    return names, times, out["positions"], out["velocities"], out["accelerations"]


class ExecuteTrajectoryServer:
    def __init__(self, client: TrajectoryClient, ns: str, interaction=None):
        """``interaction``: the node's InteractionTopics (goals may switch interaction control on)."""
        self.client = client
        self.interaction = interaction
        self.lock = threading.Lock()
        self.goals: dict[int, _Goal] = {}  # by loop trajectory id
        self.by_goal_id: dict[str, _Goal] = {}
        self.server = actionlib.ActionServer(f"{ns}/execute_trajectory", ExecuteTrajectoryAction, self._on_goal,
                                             self._on_cancel, auto_start=False)
        rospy.Subscriber(f"{ns}/execute_trajectory_keepalive", TrajectoryKeepAlive, self._on_keepalive,
                         queue_size=10, tcp_nodelay=True)
        self.server.start()
        threading.Thread(target=self._watchdog, daemon=True).start()

    # ---- callbacks (validate and hand over; no waiting) ----------------------------------
    def _on_goal(self, gh) -> None:
        goal = gh.get_goal()
        gid = gh.get_goal_id().id
        try:
            timeout = goal.keepalive_timeout
            if not (math.isfinite(timeout) and timeout >= 0.0):
                raise TrajectoryError(f"keepalive_timeout is {timeout}: give seconds >= 0 (0: no watchdog)")
            names, t, q, v, a = goal_arrays(goal.trajectory)
            scaling = goal.time_scaling if 0.0 < goal.time_scaling <= 1.0 else 1.0
            kp = list(goal.velocity_kp) or None
            if kp is not None and len(kp) != len(names):
                raise TrajectoryError(f"velocity_kp has {len(kp)} values for {len(names)} joint_names")
            with self.lock:
                if goal.interaction.interaction_control_active:
                    self._interaction(goal.interaction)
                due = goal.trajectory.header.stamp.to_sec()  # (0: on arrival)
                late = rospy.get_time() - due if due > 0.0 else 0.0
                if late > LATE_MOST:
                    rospy.logwarn_throttle(10.0, f"ExecuteTrajectory goal stamped {late:.2f} s ago: the sender's "
                                                 "clock is not the robot's (use_sim_time on one side only?); it "
                                                 "starts now")
                traj_id = self.client.execute(t, q, v, a, names, scaling, goal.tracking, kp, late)
                gh.set_accepted()
                g = _Goal(gh, gid, traj_id, timeout, time.monotonic(), scaling,
                          [self.client.index[j] for j in names])
                self.goals[traj_id] = g
                self.by_goal_id[gid] = g
        except (TrajectoryError, ValueError) as e:
            rospy.logerr(f"ExecuteTrajectory goal rejected: {e}")
            gh.set_rejected(ExecuteTrajectoryResult(status=T.REJECTED, reason=T.R_INVALID, message=str(e)), str(e))

    def _interaction(self, msg) -> None:
        """A goal's interaction parameters to the loop before its trajectory. On an arm that senses no force
        (``interaction.available`` False) only a stiff command runs — as the position control it amounts to, the
        loop left without interaction — and only where ``control.interaction.rigid_without_force_sensing`` allows
        it; the rest is refused (TrajectoryError naming why)."""
        if self.interaction is None:
            raise TrajectoryError("interaction: this robot has no interaction controller")
        try:
            if not self.interaction.available:
                words, _ = pack_message(msg, self.interaction.n, self.interaction.endpoint, self.interaction.limits)
                why = refusal_without_force_sensing(InteractionParams(words, self.interaction.n),
                                                    self.interaction.limits.rigid_without_force_sensing)
                if why is not None:
                    raise ValueError(why)
                rospy.logwarn_once("ExecuteTrajectory: interaction control at max_impedance on every axis runs as "
                                   "this arm's position control (it senses no force: rigid in contact)")
                return
            self.interaction.apply(msg)
        except ValueError as e:
            raise TrajectoryError(f"interaction: {e}") from None

    def _on_cancel(self, gh) -> None:
        g = self.by_goal_id.get(gh.get_goal_id().id)
        if g is not None and not self.client.cancel(g.traj_id):
            g.cancel_wanted = True  # (the watchdog sends it as soon as the channel takes it)
            rospy.logwarn(f"ExecuteTrajectory goal {g.goal_id}: the loop's command ring is full; the cancel is "
                          "retried until it is queued")

    def _on_keepalive(self, msg: TrajectoryKeepAlive) -> None:
        g = self.by_goal_id.get(msg.goal_id)
        if g is None:
            return
        g.last_alive = time.monotonic()
        s = msg.time_scaling
        if s == s and s != g.scaling:  # NaN keeps the current scaling
            try:
                if self.client.set_scaling(s, g.traj_id):
                    g.scaling = s  # (not queued: the next keep-alive tries again)
            except TrajectoryError:
                pass

    # ---- publisher thread ------------------------------------------------------------------
    def tick(self, st, feedback: bool) -> None:
        """After ``client.poll()``: answer finished goals and publish feedback."""
        if not self.goals:
            return
        # answer outside self.lock: actionlib calls _on_goal holding its own lock, which set_* take too
        with self.lock:
            done = [(self.goals.pop(t), self.client.results.pop(t)) for t in list(self.goals)
                    if t in self.client.results]
            for g, _ in done:
                self.by_goal_id.pop(g.goal_id, None)
            g = self.goals.get(int(st.traj_id[0])) if feedback else None
        for finished, res in done:
            self._finish(finished, res)
        if g is not None:
            c = g.cols
            g.gh.publish_feedback(ExecuteTrajectoryFeedback(
                state=int(st.traj_state[0]), time=float(st.traj_time[0]), duration=float(st.traj_duration[0]),
                segment=int(st.traj_segment[0]), error=float(st.traj_error[0]), scaling=float(st.traj_scaling[0]),
                desired_positions=st.traj_position[c].tolist(), desired_velocities=st.traj_velocity[c].tolist(),
                desired_accelerations=st.traj_acceleration[c].tolist(), actual_positions=st.position[c].tolist(),
                actual_velocities=st.velocity[c].tolist()))

    def _watchdog(self) -> None:
        last, skipped = time.monotonic(), False
        while not rospy.is_shutdown():
            time.sleep(WATCHDOG_PERIOD if self.goals else 0.02)
            try:
                now = time.monotonic()
                stalled, last = now - last > WATCHDOG_STALL, now
                if stalled and not skipped:  # skip once after a stall of this process, never twice in a row
                    skipped = True
                    continue
                skipped = False
                if self.goals:
                    self._check_keepalives(now)
            except Exception as e:  # the watchdog must outlive any surprise
                rospy.logerr_throttle(1.0, f"ExecuteTrajectory keep-alive watchdog: {e!r}")

    def _check_keepalives(self, now: float) -> None:
        lost, unsent = [], []
        with self.lock:  # no actionlib call under it (only _on_goal's, which already holds actionlib's lock)
            for g in self.goals.values():
                if g.cancel_wanted and self.client.cancel(g.traj_id):
                    g.cancel_wanted = False
                if g.timeout > 0.0 and not g.lost and now - g.last_alive > g.timeout:
                    if self.client.cancel(g.traj_id):  # lost once its cancel is queued, else tried again next check
                        g.lost = True
                        lost.append((g.goal_id, now - g.last_alive, g.timeout))
                    else:
                        unsent.append(g.goal_id)
        for gid, silent, timeout in lost:
            rospy.logwarn(f"ExecuteTrajectory goal {gid}: no keep-alive for {silent:.3f} s (> {timeout:.3f} s); "
                          f"stopping the arm on its path")
        if unsent:
            rospy.logerr_throttle(1.0, f"ExecuteTrajectory goals {unsent}: no keep-alive, and the loop's command "
                                       "ring is full: their cancel is retried until it is queued")

    def _finish(self, g: _Goal, res) -> None:
        reason, message = res.reason, res.message
        if g.lost and res.status == T.CANCELLED:
            reason, message = T.R_CLIENT_LOST, f"{res.name}: {T.REASONS[T.R_CLIENT_LOST]}"
        p = self.client.progress()
        result = ExecuteTrajectoryResult(status=res.status, reason=reason, joint=res.joint, message=message,
                                         time=p.time if p.traj_id == g.traj_id else 0.0)
        if res.status == T.SUCCEEDED:
            g.gh.set_succeeded(result, message)
        elif res.status in (T.CANCELLED, T.PREEMPTED):
            g.gh.set_canceled(result, message)
        else:
            g.gh.set_aborted(result, message)
