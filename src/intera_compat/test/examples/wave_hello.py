#!/usr/bin/env python3
"""Wave hello: enable the robot, wave the arm through a few poses and bring it back to neutral.

An example of the kind of script a lab tests with intera_compat's fixture, written like the Intera SDK's examples
(argparse, a Limb-like helper, ``move_to_joint_positions``); it talks to the robot on the topics intera_interface
uses, so it runs with or without the SDK installed. Exit code 0 when every pose was reached.
"""
import argparse
import sys

import rospy
from intera_core_msgs.msg import JointCommand, RobotAssemblyState
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

NAMES = [f"right_j{i}" for i in range(7)]
NEUTRAL = [0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161]
WAVE = [[0.5, -1.18, 0.0, 2.18, 0.0, 0.2, 3.3161],
        [-0.5, -1.18, 0.0, 2.18, 0.0, 0.9, 3.3161],
        [0.5, -1.18, 0.0, 2.18, 0.0, 0.2, 3.3161]]


class Limb:
    """What intera_interface.Limb does for this script: joint angles in, position commands out."""

    def __init__(self):
        self._angles = None
        self._state = None
        rospy.Subscriber("/robot/joint_states", JointState, self._on_joint_states, queue_size=1)
        rospy.Subscriber("/robot/state", RobotAssemblyState, self._on_state, queue_size=1)
        self._command = rospy.Publisher("/robot/limb/right/joint_command", JointCommand, queue_size=1,
                                        tcp_nodelay=True)
        self._enable = rospy.Publisher("/robot/set_super_enable", Bool, queue_size=1)

    def _on_joint_states(self, msg):
        if all(n in msg.name for n in NAMES):
            self._angles = [msg.position[msg.name.index(n)] for n in NAMES]

    def _on_state(self, msg):
        self._state = msg

    def enable(self, timeout=5.0):
        end = rospy.get_time() + timeout
        while not rospy.is_shutdown() and rospy.get_time() < end:
            if self._state is not None and self._state.enabled:
                return True
            self._enable.publish(True)
            rospy.sleep(0.1)
        return False

    def move_to_joint_positions(self, target, timeout=15.0, threshold=0.008726646):
        cmd = JointCommand(mode=JointCommand.POSITION_MODE, names=NAMES, position=list(target))
        rate = rospy.Rate(100)
        end = rospy.get_time() + timeout
        while not rospy.is_shutdown() and rospy.get_time() < end:
            if self._angles is not None and max(abs(a - t) for a, t in zip(self._angles, target)) < threshold:
                return True
            cmd.header.stamp = rospy.Time.now()
            self._command.publish(cmd)
            rate.sleep()
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-w", "--waves", type=int, default=len(WAVE), help="how many wave poses")
    args = parser.parse_args(rospy.myargv()[1:])
    rospy.init_node("wave_hello")
    limb = Limb()
    rospy.loginfo("Enabling the robot...")
    if not limb.enable():
        rospy.logerr("The robot did not enable")
        return 1
    for i, pose in enumerate((WAVE * args.waves)[:args.waves] + [NEUTRAL]):
        if not limb.move_to_joint_positions(pose):
            rospy.logerr(f"Pose {i} not reached")
            return 1
        rospy.loginfo(f"Pose {i} reached")
    rospy.loginfo("Done waving")
    return 0


if __name__ == "__main__":
    sys.exit(main())
