"""ros_control.launch against the MuJoCo arm that offers gazebo_ros_control's interface (fake:=true): the
commands it cannot carry are refused once with the reason, a lost link stops the robot, and nothing moves on
reconnect until reset + enable."""
import time

import numpy as np
import pytest
import rospy
from intera_core_msgs.msg import JointCommand, RobotAssemblyState
from rosgraph_msgs.msg import Log
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64MultiArray
from std_srvs.srv import SetBool

from ros_helpers import ARM, TOL, Latest, arm_positions, publisher, send_positions, wait_for

pytestmark = pytest.mark.node


@pytest.fixture
def rc(launch):
    launch("roslaunch", "intera_compat", "ros_control.launch", "fake:=true", "rate:=50", "no_rt:=true",
           log_name="rc.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(60)
    yield js
    js.close()


def test_torque_mode_is_refused_once_with_the_reason_and_the_arm_holds(rc):
    logs = []
    sub = rospy.Subscriber("/rosout", Log, lambda m: logs.append(m.msg) if "JointCommand refused" in m.msg
                           else None, queue_size=100)
    assert wait_for(lambda: sub.get_num_connections() > 0, 10)  # (every node publishes its log there)
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    q0 = arm_positions(rc)
    for _ in range(100):
        cmd.publish(JointCommand(mode=JointCommand.TORQUE_MODE, names=ARM, effort=[5.0] * 7))
        time.sleep(0.01)
    time.sleep(0.5)
    sub.unregister()
    assert len(logs) == 1 and "TORQUE_MODE needs an arm that takes joint torques" in logs[0]
    assert np.abs(arm_positions(rc) - q0).max() < 2e-3


def test_positions_stream_to_the_group_controller(rc):
    sent = Latest("/joint_group_position_controller/command", Float64MultiArray)
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    target = arm_positions(rc) + np.array([0.3, -0.2, 0, 0.3, 0, 0, 0])
    assert wait_for(lambda: np.abs(arm_positions(rc) - target).max() < TOL, 20,
                    every=lambda: send_positions(cmd, target))
    assert len(sent.wait(1).data) == 8  # one per joint of the controller, head_pan included
    sent.close()


def test_a_lost_link_stops_the_robot_and_nothing_moves_until_reset_and_enable(rc):
    state = Latest("/robot/state", RobotAssemblyState)
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    rospy.wait_for_service("/fake_ros_control/pause_joint_states", 10)
    pause = rospy.ServiceProxy("/fake_ros_control/pause_joint_states", SetBool)
    q0 = arm_positions(rc)
    target = q0 + np.array([0, 0, 0, 0.5, 0, 0, 0])
    assert wait_for(lambda: np.abs(arm_positions(rc) - q0).max() > 0.05, 10, every=lambda: send_positions(cmd, target))
    pause(True)  # mid-motion
    assert wait_for(lambda: state.msg is not None and state.msg.stopped and state.msg.error, 5)
    assert not state.msg.enabled
    time.sleep(0.5)
    pause(False)
    time.sleep(0.3)
    q_back = arm_positions(rc)
    for _ in range(100):  # commands while stopped are not executed
        send_positions(cmd, target)
        time.sleep(0.01)
    assert np.abs(arm_positions(rc) - q_back).max() < 2e-3 and state.msg.stopped
    enable = publisher("/robot/set_super_enable", Bool)
    enable.publish(Bool(True))  # refused while stopped
    time.sleep(0.3)
    assert not state.msg.enabled
    reset = publisher("/robot/set_super_reset", Empty)
    assert wait_for(lambda: not state.msg.stopped and not state.msg.error, 5, every=reset.publish)
    assert wait_for(lambda: state.msg.enabled, 5, every=lambda: enable.publish(Bool(True)))
    assert np.abs(arm_positions(rc) - q_back).max() < 2e-3  # no jump on enable
    assert wait_for(lambda: np.abs(arm_positions(rc) - target).max() < TOL, 20,
                    every=lambda: send_positions(cmd, target))
    state.close()
