#!/usr/bin/env python3
"""rostest node: with use_sim_time and speedup unlimited (or the suite's bound) the sim runs on its own clock (/clock: loop time from 0, the
joint states stamped with it) and the arm tracks a position command on /clock time. How fast that clock runs against
the wall is the machine's business (a loaded machine may run it slower than real time): nothing here reads the wall
clock but as a guard against a sim that does not run at all."""
import time
import unittest

import rospy
import rostest
from intera_core_msgs.msg import JointCommand
from rosgraph_msgs.msg import Clock
from intera_compat.ros.node_init import init_node
from sensor_msgs.msg import JointState

GUARD = 120.0  # s of wall time


def wait(cond, guard: float = GUARD) -> bool:
    end = time.monotonic() + guard
    while not cond():
        if time.monotonic() > end:
            return bool(cond())
        time.sleep(0.02)
    return True


class SimTimeTest(unittest.TestCase):
    def test_on_its_own_clock_and_tracks(self):
        clocks = []
        rospy.Subscriber("/clock", Clock, lambda m: clocks.append(m.clock.to_sec()), queue_size=100)
        js = []
        rospy.Subscriber("/robot/joint_states", JointState, js.append, queue_size=1)
        self.assertTrue(wait(lambda: len(clocks) >= 10 and js), "no /clock or joint_states")
        # the sim's clock: it starts at 0 (not the wall clock's 1.7e9 s) and runs; the states are stamped with it
        self.assertLess(clocks[0], 1e6)
        t0 = clocks[-1]
        self.assertTrue(wait(lambda: clocks[-1] > t0 + 1.0), f"/clock stood still at {t0:.3f}")
        self.assertTrue(wait(lambda: js[-1].header.stamp.to_sec() > t0), "joint_states not stamped with /clock")
        self.assertLess(abs(js[-1].header.stamp.to_sec() - clocks[-1]), 1.0)
        pub = rospy.Publisher("/robot/limb/right/joint_command", JointCommand, queue_size=1)
        self.assertTrue(wait(lambda: pub.get_num_connections() > 0), "no realtime loop on joint_command")
        m = js[-1]
        target = [m.position[m.name.index(f"right_j{i}")] for i in range(7)]
        target[0] += 0.5
        pub.publish(JointCommand(mode=1, names=[f"right_j{i}" for i in range(7)], position=target))
        sent = clocks[-1]
        # 4 s of the robot's time later (a joint state stamped then: this process may lag the clock) it is there
        self.assertTrue(wait(lambda: js[-1].header.stamp.to_sec() >= sent + 4.0), "the sim's clock stopped")
        m = js[-1]
        self.assertAlmostEqual(m.position[m.name.index("right_j0")], target[0], delta=0.0087)


if __name__ == "__main__":
    init_node("sim_time_check")
    rostest.rosrun("intera_compat", "sim_time_check", SimTimeTest)
