"""Interaction control over ROS, as the SDK's scripts drive it: set_interaction_options.py (InteractionPublisher at
10 Hz, then its exit message), constrained_zeroG.py (one shot, -r 0: latched in the robot) and
go_to_joint_angles_in_contact.py (a motion whose trajectory_options carry interaction_params).

One launch per scene / backend for the module (the plain sim is the table-scene sim: the table is out of reach of the
tests without it); each test begins with the robot reset, enabled, interaction off and the arm back where it started.
The sim runs on wall time: its joint states' stamps are the robot's clock."""
import actionlib
import numpy as np
import pytest
import rospy
from geometry_msgs.msg import Pose, PoseStamped
from intera_core_msgs.msg import (CollisionDetectionState, EndpointState, InteractionControlCommand,
                                  InteractionControlState)
from intera_motion_msgs.msg import (MotionCommandAction, MotionCommandGoal, Trajectory, TrajectoryOptions, Waypoint,
                                    WaypointOptions)
from ros_helpers import ARM, Latest, arm_positions, publisher, wait_for
from shared_robot import INTERACTION_KEYS, LoopCounters, delta, shared_launch

pytestmark = pytest.mark.node
L = "/robot/limb/right"
IMPEDANCE, FORCE = InteractionControlCommand.IMPEDANCE_MODE, InteractionControlCommand.FORCE_MODE
TABLE = ("sawyer_sim.launch", "no_rt:=true", "cameras:=false", "scene:=table")
POSITION_ONLY = ("sawyer_sim.launch", "no_rt:=true", "cameras:=false", "backend:=sim_position")
shared = shared_launch("interaction_sim")


def homed(shared, argv):
    """The launch ``argv`` (shared), interaction off (its state stopped), reset, enabled, the arm where it started."""
    js = shared.up(*argv)
    if not js.fresh:
        off = publisher(f"{L}/interaction_control_command", InteractionControlCommand)
        state = Latest(f"{L}/interaction_control_state", InteractionControlState)
        off.publish(sdk_options(interaction_control_active=False))
        robot_sleep(js, 0.3)
        n = state.count
        robot_sleep(js, 0.3)
        assert state.count == n, "interaction stays on after interaction_control_active False"
        state.close()
        off.unregister()
    shared.home()
    return js


@pytest.fixture
def sim(shared):
    return homed(shared, TABLE)


def robot_sleep(js, seconds: float) -> None:
    """``seconds`` of the robot's time (its joint states' stamps; a generous wall-clock guard)."""
    t = js.msg.header.stamp.to_sec()
    assert wait_for(lambda: js.msg.header.stamp.to_sec() >= t + seconds, 60 + 10 * seconds)


def counted(counts, before, n: int, every) -> dict:
    """``every()`` until the interaction listener's status counts ``n`` more commands received; that status."""
    return counts.until(lambda c: delta(c, before, "received", "interaction_commands") >= n, every=every,
                        period=0.1)


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
    # re-sent unchanged (each one arrives: the listener counts it as the command already in force): nothing moves
    counts = LoopCounters(INTERACTION_KEYS)
    before = counts.next()
    t = sim.msg.header.stamp.to_sec()
    after = counted(counts, before, 10, every=lambda: pub.publish(msg))
    robot_sleep(sim, max(0.0, t + 1.0 - sim.msg.header.stamp.to_sec()))  # (a second of the robot's time at least)
    assert delta(after, before, "unchanged", "interaction_commands") == delta(after, before, "received",
                                                                               "interaction_commands")
    assert np.abs(arm_positions(sim) - q0).max() < 0.005
    # the exit message (interaction_control_active False): position mode, holding; the state stops
    before = counts.next()
    exit_msg = sdk_options(interaction_control_active=False)
    after = counts.until(lambda c: delta(c, before, "forwarded", "interaction_commands") >= 1,
                         every=lambda: pub.publish(exit_msg), period=0.5)
    counts.close()
    robot_sleep(sim, 0.5)
    n = state.count
    robot_sleep(sim, 0.5)
    assert state.count == n
    assert np.abs(arm_positions(sim) - q0).max() < 0.005


def test_constrained_zero_g_once_stays_and_a_bad_command_changes_nothing(sim):
    state = Latest(f"{L}/interaction_control_state", InteractionControlState)
    pub = publisher(f"{L}/interaction_control_command", InteractionControlCommand, latch=False)
    # a malformed one first: it arrives and is refused (the log names the field), nothing happens
    counts = LoopCounters(INTERACTION_KEYS)
    before = counts.next()
    wait_for(lambda: pub.get_num_connections() > 0, 30)
    after = counted(counts, before, 5, every=lambda: pub.publish(sdk_options(K_impedance=[1300] * 5)))
    assert delta(after, before, "refused", "interaction_commands") == delta(after, before, "received",
                                                                             "interaction_commands")
    counts.close()
    assert state.msg is None
    # constrained_zeroG.py -r 0: one message, then the publisher is gone
    one = sdk_options(K_impedance=[0, 0, 1300, 30, 30, 30], max_impedance=[False, False, True, True, True, True],
                      K_nullspace=[10, 10, 7, 0, 0, 0, 0], rotations_for_constrained_zeroG=True)
    pub.publish(one)
    assert wait_for(lambda: state.msg is not None and state.msg.interaction_control_active, 60)
    pub.unregister()
    robot_sleep(sim, 1.0)
    n = state.count
    assert wait_for(lambda: state.count > n + 10, 60)
    assert state.msg.interaction_control_active  # latched in the robot
    assert state.msg.K_impedance[0] == 0 and state.msg.K_impedance[2] >= 1300
    assert state.msg.rotations_for_constrained_zeroG


def test_go_to_joint_angles_in_contact_presses_the_table(sim):
    js = sim
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
    assert wait_for(lambda: endpoint.msg.pose.position.z < 0.1, 60)  # the wrist on the table top (z = 0.05)
    robot_sleep(js, 1.0)
    forces = []
    for _ in range(10):
        forces.append(endpoint.msg.wrench.force.z)
        robot_sleep(js, 0.1)
    assert abs(np.mean(forces) - 10.0) < 2.0
    assert not detect.msg.collision_state and state.msg.interaction_control_active
    for holder in (detect, endpoint, state):
        holder.close()


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


# (last: a launch of its own)
def test_interaction_on_a_position_only_arm_runs_as_admittance(shared):
    js = homed(shared, POSITION_ONLY)
    state = Latest(f"{L}/interaction_control_state", InteractionControlState)
    pub = publisher(f"{L}/interaction_control_command", InteractionControlCommand)
    q0 = arm_positions(js)
    msg = sdk_options(K_impedance=[0, 0, 1300, 30, 30, 30], max_impedance=[False, False, True, True, True, True])
    assert wait_for(lambda: state.msg is not None and state.msg.interaction_control_active, 10,
                    period=0.1, every=lambda: pub.publish(msg))
    assert state.msg.K_impedance[2] == 3000 and state.msg.K_impedance[0] == 0  # max_impedance: the position arm's top
    t = js.msg.header.stamp.to_sec()
    assert wait_for(lambda: js.msg.header.stamp.to_sec() > t + 1.0, 60, period=0.1, every=lambda: pub.publish(msg))
    assert np.abs(arm_positions(js) - q0).max() < 0.005  # nothing pushes: it holds
    pub.publish(sdk_options(interaction_control_active=False))
    state.close()
