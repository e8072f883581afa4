"""Interaction control over ROS, as the SDK's scripts drive it: set_interaction_options.py (InteractionPublisher at
10 Hz, then its exit message), constrained_zeroG.py (one shot, -r 0: latched in the robot) and
go_to_joint_angles_in_contact.py (a motion whose trajectory_options carry interaction_params)."""
import time

import actionlib
import numpy as np
import pytest
import rospy
from geometry_msgs.msg import Pose, PoseStamped
from intera_core_msgs.msg import (CollisionDetectionState, EndpointState, InteractionControlCommand,
                                  InteractionControlState)
from intera_motion_msgs.msg import (MotionCommandAction, MotionCommandGoal, Trajectory, TrajectoryOptions, Waypoint,
                                    WaypointOptions)
from sensor_msgs.msg import JointState

from ros_helpers import ARM, Latest, arm_positions, publisher, wait_for

pytestmark = pytest.mark.node
L = "/robot/limb/right"
IMPEDANCE, FORCE = InteractionControlCommand.IMPEDANCE_MODE, InteractionControlCommand.FORCE_MODE


def sdk_options(**kw) -> InteractionControlCommand:
    """intera_interface.InteractionOptions' defaults (its to_msg()), with ``kw`` changed."""
    frame = Pose()
    frame.orientation.w = 1.0
    msg = InteractionControlCommand(interaction_control_active=True, K_impedance=[1300, 1300, 1300, 30, 30, 30],
                                    max_impedance=[True] * 6, D_impedance=[], K_nullspace=[5, 10, 5, 10, 5, 10, 5],
                                    force_command=[0] * 6, interaction_frame=frame, endpoint_name="right_hand",
                                    interaction_control_mode=[IMPEDANCE] * 6)
    msg.header.frame_id = "base"
    msg.header.seq = 1
    msg.header.stamp = rospy.Time.now()
    for k, v in kw.items():
        setattr(msg, k, v)
    return msg


def test_set_interaction_options_at_10_hz_then_its_exit_message(sim):
    state = Latest(f"{L}/interaction_control_state", InteractionControlState)
    pub = publisher(f"{L}/interaction_control_command", InteractionControlCommand)
    q0 = arm_positions(sim)
    msg = sdk_options()
    assert wait_for(lambda: state.msg is not None and state.msg.interaction_control_active, 10,
                    period=0.1, every=lambda: pub.publish(msg))
    s = state.msg
    assert all(1300 <= k <= 3000 for k in s.K_impedance[:3]) and all(30 <= k <= 300 for k in s.K_impedance[3:])
    assert all(d > 0 for d in s.D_impedance) and s.endpoint_name == "right_hand"
    wait_for(lambda: False, 1.0, period=0.1, every=lambda: pub.publish(msg))  # re-sent unchanged: nothing moves
    assert np.abs(arm_positions(sim) - q0).max() < 0.005
    # the exit message (interaction_control_active False): position mode, holding; the state stops
    pub.publish(sdk_options(interaction_control_active=False))
    time.sleep(0.5)
    n = state.count
    time.sleep(0.5)
    assert state.count == n
    assert np.abs(arm_positions(sim) - q0).max() < 0.005


def test_constrained_zero_g_once_stays_and_a_bad_command_changes_nothing(sim):
    state = Latest(f"{L}/interaction_control_state", InteractionControlState)
    pub = publisher(f"{L}/interaction_control_command", InteractionControlCommand, latch=False)
    # a malformed one first: refused (the log names the field), nothing happens
    wait_for(lambda: False, 0.5, period=0.1, every=lambda: pub.publish(sdk_options(K_impedance=[1300] * 5)))
    assert state.msg is None
    # constrained_zeroG.py -r 0: one message, then the publisher is gone
    one = sdk_options(K_impedance=[0, 0, 1300, 30, 30, 30], max_impedance=[False, False, True, True, True, True],
                      K_nullspace=[10, 10, 7, 0, 0, 0, 0], rotations_for_constrained_zeroG=True)
    wait_for(lambda: pub.get_num_connections() > 0, 5)
    time.sleep(0.3)
    pub.publish(one)
    assert wait_for(lambda: state.msg is not None and state.msg.interaction_control_active, 5)
    pub.unregister()
    time.sleep(1.0)
    n = state.count
    time.sleep(0.5)
    assert state.count > n and state.msg.interaction_control_active  # latched in the robot
    assert state.msg.K_impedance[0] == 0 and state.msg.K_impedance[2] >= 1300
    assert state.msg.rotations_for_constrained_zeroG


def test_go_to_joint_angles_in_contact_presses_the_table(launch):
    launch("roslaunch", "intera_compat", "sawyer_sim.launch", "no_rt:=true", "scene:=table", log_name="sim.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(30)
    detect = Latest(f"{L}/collision_detection_state", CollisionDetectionState)
    endpoint = Latest(f"{L}/endpoint_state", EndpointState)
    state = Latest(f"{L}/interaction_control_state", InteractionControlState)
    client = actionlib.SimpleActionClient("/motion/motion_command", MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(60))
    q0 = arm_positions(js)
    down = q0 + np.array([0, 0.15, 0, 0, 0, 0, 0])
    wpo = WaypointOptions(label="default", max_joint_speed_ratio=0.3, max_joint_accel=[10, 8, 10, 10, 12, 12, 12],
                          max_linear_speed=0.6, max_linear_accel=0.6, max_rotational_speed=1.57,
                          max_rotational_accel=1.57)
    # the script's shape: impedance everywhere but z, where it pushes 10 N down (with damping for the approach)
    params = sdk_options(interaction_control_mode=[IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE],
                         force_command=[0, 0, -10, 0, 0, 0], D_impedance=[50, 50, 200, 5, 5, 5])
    goal = MotionCommandGoal(command="start", trajectory=Trajectory(
        label="in_contact", joint_names=ARM,
        trajectory_options=TrajectoryOptions(interpolation_type="JOINT", interaction_control=True,
                                             interaction_params=params),
        waypoints=[Waypoint(joint_positions=list(q), active_endpoint="right_hand", pose=PoseStamped(), options=wpo)
                   for q in (q0, down)]))
    client.send_goal(goal)
    assert client.wait_for_result(rospy.Duration(30))
    res = client.get_result()
    assert res.result, res.errorId
    assert state.wait(5).interaction_control_active  # it stays on after the motion (the script just exits)
    # down through free space onto the table top, then pressing with 10 N (the estimate at the tip: what the table
    # pushes back with), without a collision stop
    assert wait_for(lambda: endpoint.msg.pose.position.z < 0.1, 15)  # the wrist on the table top (z = 0.05)
    time.sleep(1.0)
    forces = []
    for _ in range(10):
        forces.append(endpoint.msg.wrench.force.z)
        time.sleep(0.1)
    assert abs(np.mean(forces) - 10.0) < 2.0
    assert not detect.msg.collision_state and state.msg.interaction_control_active


def test_interaction_on_a_position_only_arm_runs_as_admittance(launch):
    launch("roslaunch", "intera_compat", "sawyer_sim.launch", "no_rt:=true", "backend:=sim_position",
           log_name="sim.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(30)
    state = Latest(f"{L}/interaction_control_state", InteractionControlState)
    pub = publisher(f"{L}/interaction_control_command", InteractionControlCommand)
    q0 = arm_positions(js)
    msg = sdk_options(K_impedance=[0, 0, 1300, 30, 30, 30], max_impedance=[False, False, True, True, True, True])
    assert wait_for(lambda: state.msg is not None and state.msg.interaction_control_active, 10,
                    period=0.1, every=lambda: pub.publish(msg))
    assert state.msg.K_impedance[2] == 3000 and state.msg.K_impedance[0] == 0  # max_impedance: the position arm's top
    wait_for(lambda: False, 1.0, period=0.1, every=lambda: pub.publish(msg))
    assert np.abs(arm_positions(js) - q0).max() < 0.005  # nothing pushes: it holds


def test_a_stop_ends_interaction_and_the_same_command_sent_again_begins_it(sim):
    """Issue 32 (4): the old interaction re-engaged by itself after stop, reset, enable; and the listener's de-dup of
    identical commands must forget the command the stop ended (or the same one could not begin it again)."""
    from intera_core_msgs.msg import RobotAssemblyState
    from ros_helpers import reset_and_enable
    from std_msgs.msg import Empty
    state = Latest(f"{L}/interaction_control_state", InteractionControlState)
    robot = Latest("/robot/state", RobotAssemblyState)
    pub = publisher(f"{L}/interaction_control_command", InteractionControlCommand)
    msg = sdk_options()
    assert wait_for(lambda: pub.get_num_connections() > 0, 10)
    assert wait_for(lambda: state.msg is not None and state.msg.interaction_control_active, 10,
                    period=0.5, every=lambda: pub.publish(msg))
    stop = publisher("/robot/set_super_stop", Empty)
    assert wait_for(lambda: robot.msg is not None and robot.msg.stopped, 10, period=0.2, every=stop.publish)
    reset_and_enable(robot)
    n = state.count
    js = sim.msg.header.stamp.to_sec()
    assert wait_for(lambda: sim.msg.header.stamp.to_sec() > js + 1.0, 30)  # a second of robot time, enabled
    assert state.count == n  # no interaction state: it did not come back by itself (its state is 100 Hz while on)
    pub.publish(msg)  # the same command once more: it begins again
    assert wait_for(lambda: state.count > n and state.msg.interaction_control_active, 10)
    pub.publish(sdk_options(interaction_control_active=False))
    robot.close()
    state.close()
