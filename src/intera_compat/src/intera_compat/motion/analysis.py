"""TrajectoryAnalysis: what was commanded (from the plan) and how the arm followed (measured)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..trajectory.spline import cubic_end_accelerations
from .joint_planner import JointPlan


@dataclass
class Analysis:
    planned_duration: float
    min_angle_command: np.ndarray
    max_angle_command: np.ndarray
    peak_speed_command: np.ndarray
    peak_accel_command: np.ndarray
    peak_jerk_command: np.ndarray
    measured_duration: float = 0.0
    min_time_rate: float = 1.0
    max_time_rate: float = 1.0
    max_position_error: np.ndarray = field(default_factory=lambda: np.zeros(0))
    max_velocity_error: np.ndarray = field(default_factory=lambda: np.zeros(0))


def planned(plan: JointPlan) -> Analysis:
    """The commanded extremes of a plan (its cubic Hermite knots, as the loop interpolates them)."""
    n = plan.q.shape[1]
    if len(plan.t) < 2:
        z = np.zeros(n)
        return Analysis(0.0, plan.q[0].copy(), plan.q[0].copy(), z, z.copy(), z.copy(), max_position_error=z.copy(),
                        max_velocity_error=z.copy())
    a0, a1 = cubic_end_accelerations(plan.t, plan.q, plan.v)
    jerk = np.abs(a1 - a0) / np.diff(plan.t)[:, None]
    return Analysis(plan.duration, plan.q.min(axis=0), plan.q.max(axis=0), np.abs(plan.v).max(axis=0),
                    np.maximum(np.abs(a0), np.abs(a1)).max(axis=0), jerk.max(axis=0),
                    max_position_error=np.zeros(n), max_velocity_error=np.zeros(n))


class Tracking:
    """Accumulates how the arm followed: commanded vs measured from the same loop cycle."""

    def __init__(self, analysis: Analysis):
        self.an = analysis
        self.rates_seen = False

    def sample(self, cmd_q, q, cmd_v, v) -> None:
        an = self.an
        np.maximum(an.max_position_error, np.abs(np.asarray(cmd_q) - q), out=an.max_position_error)
        np.maximum(an.max_velocity_error, np.abs(np.asarray(cmd_v) - v), out=an.max_velocity_error)

    def rate(self, r: float) -> None:
        an = self.an
        if not self.rates_seen:
            an.min_time_rate = an.max_time_rate = r
            self.rates_seen = True
        else:
            an.min_time_rate = min(an.min_time_rate, r)
            an.max_time_rate = max(an.max_time_rate, r)
