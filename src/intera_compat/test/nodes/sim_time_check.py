#!/usr/bin/env python3
"""rostest node: with use_sim_time and speedup unlimited the sim runs faster than real time and the
arm still tracks a position command on /clock time."""
import time
import unittest

import rospy
import rostest
from intera_core_msgs.msg import JointCommand
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState


class SimTimeTest(unittest.TestCase):
    def test_faster_than_real_time_and_tracks(self):
        clocks = []
        rospy.Subscriber("/clock", Clock, lambda m: clocks.append(m.clock.to_sec()), queue_size=100)
        js = []
        rospy.Subscriber("/robot/joint_states", JointState, lambda m: js.append(m), queue_size=1)
        deadline = time.time() + 30
        while (len(clocks) < 10 or not js) and time.time() < deadline:
            time.sleep(0.05)
        self.assertTrue(clocks and js, "no /clock or joint_states")
        t0, w0 = clocks[-1], time.time()
        time.sleep(2.0)
        rtf = (clocks[-1] - t0) / (time.time() - w0)
        self.assertGreater(rtf, 1.5, f"real-time factor {rtf:.2f}")
        pub = rospy.Publisher("/robot/limb/right/joint_command", JointCommand, queue_size=1)
        while pub.get_num_connections() == 0 and time.time() < deadline:
            time.sleep(0.05)
        m = js[-1]
        target = [m.position[m.name.index(f"right_j{i}")] for i in range(7)]
        target[0] += 0.5
        pub.publish(JointCommand(mode=1, names=[f"right_j{i}" for i in range(7)], position=target))
        rospy.sleep(4.0)  # sim time
        m = js[-1]
        self.assertAlmostEqual(m.position[m.name.index("right_j0")], target[0], delta=0.0087)


if __name__ == "__main__":
    rospy.init_node("sim_time_check")
    rostest.rosrun("intera_compat", "sim_time_check", SimTimeTest)
