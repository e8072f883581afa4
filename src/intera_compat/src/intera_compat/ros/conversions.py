"""Small message conversions shared by the nodes."""
from __future__ import annotations

import pinocchio as pin
from geometry_msgs.msg import Pose


def pose_msg(M: pin.SE3) -> Pose:
    p = Pose()
    p.position.x, p.position.y, p.position.z = M.translation
    q = pin.Quaternion(M.rotation)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = q.x, q.y, q.z, q.w
    return p
