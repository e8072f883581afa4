"""ros_control.launch against the MuJoCo arm that offers gazebo_ros_control's interface (fake:=true): the
commands it cannot carry are refused once with the reason, a lost link stops the robot, and nothing moves on
reconnect until reset + enable; a trajectory-only arm (interface:=trajectory) gets whole trajectories on its
FollowJointTrajectory controller, and that controller vanishing stops the robot with an error; a velocity-controlled
arm follows commands."""
import time

import actionlib
import numpy as np
import pytest
import rospy
from actionlib_msgs.msg import GoalStatus
from control_msgs.msg import FollowJointTrajectoryAction, FollowJointTrajectoryActionGoal, FollowJointTrajectoryGoal
from intera_core_msgs.msg import JointCommand, RobotAssemblyState
from rosgraph_msgs.msg import Log
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64, Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectoryPoint

from intera_compat.config import load_config
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


@pytest.fixture
def jtc(launch):
    """ros_control.launch on a trajectory-only arm: the fake offers a FollowJointTrajectory controller only."""
    launch("roslaunch", "intera_compat", "ros_control.launch", "fake:=true", "rate:=50", "no_rt:=true",
           "interface:=trajectory", log_name="jtc.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(60)
    client = actionlib.SimpleActionClient("/robot/limb/right/follow_joint_trajectory", FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(60))
    yield client, js
    js.close()


def jtas_goal(q0, q1, duration=2.0):
    g = FollowJointTrajectoryGoal()
    g.trajectory.joint_names = ARM
    for t, q in ((0.0, q0), (duration, q1)):
        g.trajectory.points.append(JointTrajectoryPoint(positions=list(q), velocities=[0.0] * 7,
                                                        time_from_start=rospy.Duration.from_sec(t)))
    return g


def test_a_trajectory_only_arm_runs_whole_trajectories_and_refuses_streaming(jtc):
    client, js = jtc
    arm_goals = Latest("/pos_joint_traj_controller/follow_joint_trajectory/goal", FollowJointTrajectoryActionGoal)
    assert wait_for(lambda: arm_goals.sub.get_num_connections() > 0, 10)  # (the bridge's goal publisher found)
    q0 = arm_positions(js)
    target = q0 + np.array([0.3, -0.2, 0.1, 0.3, 0.0, 0.2, 0.4])
    client.send_goal(jtas_goal(q0, target))
    assert client.wait_for_result(rospy.Duration(30))
    assert client.get_state() == GoalStatus.SUCCEEDED and client.get_result().error_code == 0
    assert np.abs(arm_positions(js) - target).max() < TOL
    sent = arm_goals.wait(1)  # it went to the arm's controller whole, joints by the arm's names
    assert sent.goal.trajectory.joint_names == ARM and len(sent.goal.trajectory.points) >= 2
    assert "/joint_group_position_controller/command" not in {t for t, _ in rospy.get_published_topics()}
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)  # streaming: refused, the arm holds
    for _ in range(50):
        send_positions(cmd, q0)
        time.sleep(0.01)
    time.sleep(0.3)
    assert np.abs(arm_positions(js) - target).max() < 2e-3
    arm_goals.close()


def test_a_trajectory_controller_that_vanishes_mid_motion_stops_the_robot_with_an_error(jtc):
    client, js = jtc
    state = Latest("/robot/state", RobotAssemblyState)
    rospy.wait_for_service("/fake_ros_control/drop_trajectory_action", 10)
    drop = rospy.ServiceProxy("/fake_ros_control/drop_trajectory_action", SetBool)
    q0 = arm_positions(js)
    client.send_goal(jtas_goal(q0, q0 + np.array([0.0, 0.0, 0.0, 0.6, 0.0, 0.0, 0.0]), 3.0))
    assert wait_for(lambda: np.abs(arm_positions(js) - q0).max() > 0.05, 10)
    drop(True)
    assert wait_for(lambda: state.msg is not None and state.msg.stopped and state.msg.error, 5)
    assert client.wait_for_result(rospy.Duration(10))
    assert client.get_state() == GoalStatus.ABORTED and client.get_result().error_code != 0
    q_stop = arm_positions(js)
    time.sleep(1.0)
    assert np.abs(arm_positions(js) - q_stop).max() < 2e-3  # it stopped (the fake's controller holds)
    # the fault is one event: reset and enable work (the controller is still gone: the next goal fails again)
    reset, enable = publisher("/robot/set_super_reset", Empty), publisher("/robot/set_super_enable", Bool)
    assert wait_for(lambda: not state.msg.stopped and not state.msg.error, 5, every=reset.publish)
    assert wait_for(lambda: state.msg.enabled, 5, every=lambda: enable.publish(Bool(True)))
    time.sleep(0.5)
    assert state.msg.enabled and not state.msg.error
    client.send_goal(jtas_goal(q_stop, q_stop + np.array([0.2, 0, 0, 0, 0, 0, 0])))
    assert client.wait_for_result(rospy.Duration(10)) and client.get_state() == GoalStatus.ABORTED
    assert wait_for(lambda: state.msg.stopped and state.msg.error, 5)  # no server: a controller error again
    assert np.abs(arm_positions(js) - q_stop).max() < 2e-3
    state.close()


def test_the_operators_speed_override_stops_a_forwarded_trajectory(jtc):
    """The arm's controller runs on its own clock: a pause (speed_override 0) cannot slow it, so it stops it."""
    client, js = jtc
    override = publisher("/realtime_loop/speed_override", Float64, latch=True)
    q0 = arm_positions(js)
    target = q0 + np.array([0.0, 0.0, 0.0, 0.8, 0.0, 0.0, 0.0])
    client.send_goal(jtas_goal(q0, target, 4.0))
    assert wait_for(lambda: np.abs(arm_positions(js) - q0).max() > 0.05, 10)
    override.publish(Float64(0.0))
    assert client.wait_for_result(rospy.Duration(10)) and client.get_state() != GoalStatus.SUCCEEDED
    q_stop = arm_positions(js)
    time.sleep(1.0)
    assert np.abs(arm_positions(js) - q_stop).max() < 2e-3 and np.abs(q_stop - target).max() > 0.2
    override.publish(Float64(1.0))


def test_an_arm_controller_that_takes_a_goal_but_does_not_run_it_is_a_controller_error(jtc):
    client, js = jtc
    state = Latest("/robot/state", RobotAssemblyState)
    rospy.wait_for_service("/fake_ros_control/stall_trajectory", 10)
    rospy.ServiceProxy("/fake_ros_control/stall_trajectory", SetBool)(True)
    q0 = arm_positions(js)
    client.send_goal(jtas_goal(q0, q0 + np.array([0.0, 0.0, 0.0, 0.4, 0.0, 0.0, 0.0]), 3.0))
    assert wait_for(lambda: state.msg is not None and state.msg.stopped and state.msg.error, 6)  # > 1 s behind
    assert client.wait_for_result(rospy.Duration(10)) and client.get_state() == GoalStatus.ABORTED
    assert np.abs(arm_positions(js) - q0).max() < 2e-3
    state.close()


# ---- a velocity-controlled arm ---------------------------------------------------------------------------------

def test_a_velocity_controlled_arm_follows_velocity_and_position_commands(launch):
    """(It did not move at all: until the loop's first command the fake's velocity controller took the arm's angles
    for its velocity command, so its integrated reference ran away for seconds, pressing the arm out of its pose and
    past right_j6's limit, and never came back: the loop's limit and following-error stages then held the loop's
    reference at the arm, ~0 rad/s commanded.)"""
    launch("roslaunch", "intera_compat", "ros_control.launch", "fake:=true", "rate:=50", "no_rt:=true",
           "interface:=velocity", "jtas:=false", log_name="rcv.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(60)
    state = Latest("/robot/state", RobotAssemblyState)
    assert wait_for(lambda: state.msg is not None and state.msg.enabled, 30)
    q0 = arm_positions(js)
    assert np.abs(q0 - load_config().full_pose("neutral")[:7]).max() < 0.01  # it stayed where it was put
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    assert wait_for(lambda: arm_positions(js)[0] - q0[0] > 0.2, 20, every=lambda: cmd.publish(JointCommand(
        mode=JointCommand.VELOCITY_MODE, names=["right_j0"], velocity=[0.3])))
    q1 = arm_positions(js)
    target = q1 + np.array([0.0, 0.0, 0.0, 0.4, 0.0, 0.0, 0.0])
    assert wait_for(lambda: np.abs(arm_positions(js) - target).max() < TOL, 20,
                    every=lambda: send_positions(cmd, target))
    js.close()
    state.close()
