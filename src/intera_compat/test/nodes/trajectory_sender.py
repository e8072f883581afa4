#!/usr/bin/env python3
"""Test helper: sends one slow trajectory through the loop's ExecuteTrajectory action with
keep-alives, prints SENT, then waits; the test kills it mid-motion."""
import sys

import numpy as np
import rospy
from sensor_msgs.msg import JointState

from intera_compat.ros.loop_trajectory import LoopTrajectory
from intera_compat.ros.node_init import init_node

ARM = [f"right_j{i}" for i in range(7)]

init_node("trajectory_sender", anonymous=True)
js = rospy.wait_for_message("/robot/joint_states", JointState, 30)
q0 = np.array([js.position[js.name.index(n)] for n in ARM])
keepalive = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1  # s: the goal's keep-alive timeout
client = LoopTrajectory("/robot/limb/right", keepalive_timeout=keepalive)
assert client.wait_for_server(30)
delta = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
duration = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
goal = q0 + np.array([delta, 0, 0, 0, 0, 0, 0])
client.send(ARM, [duration], [goal])
print("SENT", flush=True)
client.wait()
print("RESULT", client.result.status, client.result.reason, flush=True)
rospy.spin()
