"""Poses as clients send them (position + x, y, z, w quaternion in a named frame) → pin.SE3 in the base
frame, with errors that name the field. Shared by the IK service and the motion controller."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pinocchio as pin

BASE_FRAMES = ("", "base", "/base")
NORM_WARN = 1e-3  # a quaternion further than this from unit length is worth a warning


def se3(position, orientation_xyzw, what: str) -> tuple[pin.SE3, float]:
    """The pose and its quaternion's norm before normalising (ValueError naming ``what``)."""
    p = np.asarray(position, float)
    quat = np.asarray(orientation_xyzw, float)
    for name, a in (("position", p), ("orientation", quat)):
        bad = np.flatnonzero(~np.isfinite(a))
        if len(bad):
            raise ValueError(f"{what}.{name} has a non-finite value ({'xyzw'[bad[0]]} = {a[bad[0]]})")
    norm = float(np.linalg.norm(quat))
    if norm < 1e-6:
        raise ValueError(f"{what}.orientation is not a rotation (zero quaternion)")
    x, y, z, w = quat / norm
    return pin.SE3(pin.Quaternion(w, x, y, z).toRotationMatrix(), p), norm


def in_base(pose: pin.SE3, frame_id: str, has_frame: Callable[[str], bool],
            frame_pose: Callable[[str], pin.SE3], what: str) -> pin.SE3:
    """``pose`` given in ``frame_id`` (a robot frame at the current angles, or the base)."""
    if frame_id in BASE_FRAMES:
        return pose
    frame = frame_id.lstrip("/")
    if not has_frame(frame):
        raise ValueError(f"{what}.header.frame_id '{frame_id}' is not a frame of the robot")
    return frame_pose(frame) * pose
