"""FK, Jacobians and IK (seeds, nullspace bias, joint limits, collision flag) on pinocchio."""
from .ik import IKResult, IKSolver  # noqa: F401
