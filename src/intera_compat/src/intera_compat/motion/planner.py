"""The motion controller's planning step: a checked ``Motion`` + the arm's configuration → a ``JointPlan``.

JOINT and CARTESIAN interpolation, then the pre-motion self-collision check of the path on the
tight collision model (PLANNED_MOTION_COLLISION), and the interpolated path that ``generate``
returns. No ROS; the node runs it in its own process, never in the loop.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import RobotConfig
from ..kinematics.ik import IKSolver
from ..model.robot_model import RobotModel
from ..trajectory.spline import KnotTrajectory
from .cartesian_planner import CartesianWaypoint, plan_cartesian
from .errors import PLANNED_MOTION_COLLISION, MotionError
from .joint_planner import JointPlan, plan_joint
from .request import CARTESIAN, Motion

COLLISION_STEP = 0.01  # rad: the path is checked at configurations at most this far apart (max over joints)
MAX_PATH_POINTS = 10000  # points of an interpolated path at most


@dataclass
class PathPoint:
    t: float
    q: np.ndarray  # (n_arm,)
    segment: int  # index of the waypoint the point is heading to (0 = the first requested waypoint)


class MotionPlanner:
    def __init__(self, cfg: RobotConfig, rm: RobotModel | None = None, ik: IKSolver | None = None, seed: int = 0):
        """``seed``: the IK solver's seed-map draw (its only randomness)."""
        self.cfg = cfg
        self.rm = rm or RobotModel(cfg)
        self.ik = ik or IKSolver(self.rm, seed=seed)
        n = self.n = cfg.n_arm
        lim = cfg.limits
        self.lower, self.upper = lim.lower[:n], lim.upper[:n]
        self.vmax, self.amax = lim.velocity[:n], lim.accel[:n]
        self.max_knots = int(cfg.control.get("max_trajectory_knots", 10000))

    def plan(self, motion: Motion, q_now: np.ndarray, check_collision: bool = True) -> JointPlan:
        """``q_now``: the full configuration (config order) the motion starts from."""
        n = self.n
        wps = motion.waypoints
        if motion.interpolation == CARTESIAN:
            cart = [CartesianWaypoint(w.pose, w.q, w.linear_speed, w.linear_accel, w.rotational_speed,
                                      w.rotational_accel, w.corner_distance, w.speed_ratio, w.accel) for w in wps]
            plan = plan_cartesian(self.rm, self.ik, motion.tip, q_now, cart, self.lower, self.upper, self.vmax,
                                  self.amax, max_knots=self.max_knots)
        else:
            plan = plan_joint(q_now[:n], np.array([w.q for w in wps]), np.array([w.speed_ratio for w in wps]),
                              np.array([w.accel for w in wps]), self.lower, self.upper, self.vmax, self.amax,
                              max_knots=self.max_knots)
        if check_collision:
            self.check_collisions(plan, q_now)
        return plan

    def check_collisions(self, plan: JointPlan, q_now: np.ndarray) -> None:
        """Self-collision of the tight model anywhere along the path: the polyline through the knots,
        sampled every COLLISION_STEP of its length (max over joints, so no joint moves more than that
        between two checked configurations), start and end included, checked in one batch."""
        n, q = self.n, plan.q
        qs = np.tile(q_now, (1, 1))
        qs[0, :n] = q[0]
        seg = np.zeros(1, int)
        if len(q) > 1:
            d = np.abs(np.diff(q, axis=0)).max(axis=1)
            c = np.r_[0.0, np.cumsum(d)]
            u = np.r_[np.arange(0.0, c[-1], COLLISION_STEP), c[-1]]
            seg = np.clip(np.searchsorted(c, u, side="left") - 1, 0, len(q) - 2)  # c[seg] < u <= c[seg + 1]
            frac = (u - c[seg]) / np.maximum(d[seg], 1e-12)
            qs = np.tile(q_now, (len(u), 1))
            qs[:, :n] = q[seg] + (q[seg + 1] - q[seg]) * np.minimum(frac, 1.0)[:, None]
        i = self.rm.first_collision(qs)
        if i >= 0:
            t = float(plan.t[seg[i] + 1]) if i > 0 else 0.0
            pairs = ", ".join(f"{a}–{b}" for a, b in self.rm.colliding_pairs(qs[i])[:3])
            raise MotionError(PLANNED_MOTION_COLLISION, f"the planned path collides ({pairs}) about {t:.2f} s into "
                                                        f"the motion, at {np.round(qs[i, :n], 3).tolist()}")

    def interpolated_path(self, plan: JointPlan, step: float) -> list[PathPoint]:
        """The plan sampled every ``step`` s (and at its end), as ``generate`` returns it; never more than
        ``MAX_PATH_POINTS`` points (the step grows for a long plan)."""
        step = max(step, plan.duration / MAX_PATH_POINTS)
        traj = KnotTrajectory(self.n, len(plan.t))
        traj.load(plan.t, plan.q, plan.v, plan.a, plan.order)
        times = np.arange(0.0, plan.duration, step)
        times = np.r_[times, plan.duration] if len(times) == 0 or times[-1] < plan.duration else times
        q, v, a = np.zeros(self.n), np.zeros(self.n), np.zeros(self.n)
        out, seg = [], 0
        for t in times:
            seg = traj.sample(float(t), q, v, a, seg)
            heading = int(np.searchsorted(plan.point_times[1:], t, side="left"))
            out.append(PathPoint(float(t), q.copy(), min(heading, len(plan.point_times) - 2)))
        return out
