#!/usr/bin/env python3
"""rostest node for wave_hello.test: waits for the robot (/robot/ready), runs the user's script as they would, and
checks what it did in the robot's time."""
import os
import subprocess
import sys
import unittest

import rospy
import rostest

from intera_compat import testing as T

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wave_hello.py")


class WaveHello(unittest.TestCase):
    def test_waves_and_comes_back_to_neutral(self):
        T.wait_for_ready()
        events = T.EventLog()
        with T.JointRecorder() as rec:
            run = subprocess.run([sys.executable, SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, timeout=200)
        self.assertEqual(run.returncode, 0, run.stdout)
        T.assert_reached(rospy.get_param("/named_poses/right/poses/neutral"), tol=0.01)
        self.assertGreater(rec.q[:, 0].max(), 0.45)
        self.assertLess(rec.q[:, 0].min(), -0.45)
        self.assertFalse([e for e in events.sequence() if e[0] == "collision"])
        events.close()


if __name__ == "__main__":
    rospy.init_node("wave_hello_check")
    rostest.rosrun("intera_compat", "wave_hello_check", WaveHello)
