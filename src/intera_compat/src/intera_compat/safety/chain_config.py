"""The safety chain a robot's config asks for: the plugins named in ``control.safety_chain``, in that order, each
built from its own section of ``control`` and the joint limits."""
from __future__ import annotations

from ..config import RobotConfig
from ..model.robot_model import RobotModel
from .base import SafetyChain, SafetyContext
from .collision_avoidance import CollisionAvoidance
from .collision_detection import CollisionDetection
from .finite_guard import FiniteGuard
from .following_error import FollowingError
from .joint_limits import JointLimits
from .torque_guard import TorqueGuard


def build_safety_chain(cfg: RobotConfig, dt: float, rm: RobotModel, ctx: SafetyContext, torque: bool,
                       effort: bool) -> SafetyChain:
    """The plugins named in ``control.safety_chain`` (config), in that order; ``torque``: the
    backend takes joint torques (repulsive avoidance torques); ``effort``: it measures them
    (collision detection is left out of the chain without)."""
    lim, c, n = cfg.limits, cfg.control, len(cfg.all_joints)
    fe = c.get("following_error", {})
    ca = c.get("collision_avoidance", {})
    cd = c.get("collision_detection", {})
    factories = {
        "finite_guard": lambda: FiniteGuard(n, lim.effort),
        "following_error": lambda: FollowingError(n, fe.get("window", 0.1), fe.get("fault_window", 0.5),
                                                  lim.velocity, lim.accel),
        "joint_limits": lambda: JointLimits(lim.lower, lim.upper, lim.velocity, lim.accel, dt),
        "torque_guard": lambda: TorqueGuard(lim.lower, lim.upper, lim.velocity, lim.effort),
        "collision_avoidance": lambda: CollisionAvoidance(
            rm, ctx, dt, lim.velocity, float(ca.get("padding", 0.01)), float(ca.get("safety_zone", 0.05)),
            float(ca.get("block_velocity_scaling", 1.5)), bool(ca.get("directional", True)),
            float(ca.get("slack", 0.05)), float(ca.get("repulsion_stiffness", 300.0)),
            float(ca.get("repulsion_damping", 10.0)), torque, float(ca.get("tracking_margin", 0.006)),
            float(ca.get("closing_decel", 5.0)), float(ca.get("braking_band", 0.05))),
        "collision_detection": lambda: CollisionDetection(
            rm, ctx, dt, cfg.tips[0], cfg.n_arm, cd["impact"], cd["squish"], float(cd.get("force", 100.0)),
            float(cd.get("torque", 15.0)), float(cd.get("observer_gain", 100.0)), float(cd.get("impact_filter", 0.05)),
            float(cd.get("impact_hold", 0.5)), float(cd.get("squish_hold", 0.1)), float(cd.get("wrench_hold", 0.5))),
    }
    names = c.get("safety_chain", ["finite_guard", "joint_limits", "following_error", "torque_guard"])
    unknown = [x for x in names if x not in factories]
    if unknown:
        raise ValueError(f"control.safety_chain: unknown plugins {unknown} (known: {sorted(factories)})")
    if not names or names[0] != "finite_guard":  # (it repairs or faults a non-finite value before any plugin reads it)
        raise ValueError(f"control.safety_chain must begin with finite_guard (got {names})")
    return SafetyChain([factories[x]() for x in names if effort or x != "collision_detection"])
