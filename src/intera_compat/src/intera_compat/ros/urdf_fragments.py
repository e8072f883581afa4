"""``/robot/urdf`` in each process that needs the robot's links (kinematics services, motion controller, tip_states):
a fragment checked and merged (``model.urdf_fragment``), the kinematic model rebuilt with it, handed over whole.
Every process hears the same messages and merges them the same way, so they agree on the tips."""
from __future__ import annotations

import rospy
from intera_core_msgs.msg import URDFConfiguration

from ..model.robot_model import RobotModel
from ..model.urdf_fragment import Fragments


class UrdfFragmentWatcher:
    """``on_model(rm, links)``: the robot's model with every fragment, and the fragments' links (tips now), after
    each change; ``log`` False: the refusals are another process's to log (one log per bad fragment)."""

    def __init__(self, cfg, on_model, log: bool = True):
        self.cfg, self.on_model, self.log = cfg, on_model, log
        self.fragments = Fragments(cfg.urdf_xml())
        self._seen: set = set()
        rospy.Subscriber("/robot/urdf", URDFConfiguration, self._on_fragment, queue_size=10)

    def _on_fragment(self, msg: URDFConfiguration) -> None:
        key = (msg.time.secs, msg.time.nsecs, msg.link, msg.joint)
        if key in self._seen:  # (the client re-sends it at 5 Hz, the same time each)
            return
        self._seen.add(key)
        before = dict(self.fragments.attached)
        try:
            if not self.fragments.apply(msg.link, msg.joint, msg.urdf):
                return
            rm = RobotModel(self.cfg, urdf=self.fragments.merged())
        except Exception as e:  # (a bad fragment, or one the model builder refuses: as before)
            self.fragments.attached = before
            if self.log:
                rospy.logerr(f"/robot/urdf refused (the model is unchanged): {e}")
            return
        links = self.fragments.links()
        if self.log:
            rospy.loginfo(f"/robot/urdf: {msg.joint} on {msg.link}; the fragments' links {links} are tips now"
                          if msg.urdf.strip() else f"/robot/urdf: the fragment at {msg.joint} removed")
        self.on_model(rm, links)
