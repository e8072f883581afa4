"""Small message conversions shared by the nodes."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import rospy
from geometry_msgs.msg import Pose
from sensor_msgs.msg import JointState


def pose_msg(M: pin.SE3) -> Pose:
    p = Pose()
    p.position.x, p.position.y, p.position.z = M.translation
    q = pin.Quaternion(M.rotation)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = q.x, q.y, q.z, q.w
    return p


class JointPositions:
    """The robot's joint positions and velocities in config order (``names``) and their stamp (s), as
    /robot/joint_states last gave them; ``q`` starts at ``q0``, ``v`` at rest (``state`` is replaced whole per
    message: readers in other threads take it as one)."""

    def __init__(self, names: list, q0: np.ndarray):
        self.names = list(names)
        self.state = (np.asarray(q0, float).copy(), np.zeros(len(self.names)), 0.0)
        self._index = None
        self.sub = rospy.Subscriber("/robot/joint_states", JointState, self._on_js, queue_size=1)

    def _on_js(self, msg: JointState) -> None:
        if self._index is None:
            try:
                self._index = [msg.name.index(j) for j in self.names]
            except ValueError:
                return
        try:
            q = np.array([msg.position[i] for i in self._index])
            v = np.array([msg.velocity[i] for i in self._index]) if msg.velocity else np.zeros(len(q))
        except IndexError:
            self._index = None
            return
        self.state = (q, v, msg.header.stamp.to_sec())

    @property
    def q(self) -> np.ndarray:
        return self.state[0]
