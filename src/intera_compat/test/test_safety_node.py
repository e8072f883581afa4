"""The safety plugins over ROS: collision_detection_state as the SDK's Limb.has_collided() sees it,
the suppression topics as `rostopic pub -r 10 ... std_msgs/Empty` drives them, SafetyStatus,
~safety_estop and ~bypass_safety_checks; the cuff, navigator and lights of IO node "robot"."""
import json
import time

import actionlib
import numpy as np
import pytest
import rospy
from intera_compat.config import load_config
from intera_compat.msg import SafetyStatus
from intera_motion_msgs.msg import (MotionCommandAction, MotionCommandGoal, Trajectory, TrajectoryOptions, Waypoint,
                                    WaypointOptions)
from intera_core_msgs.msg import (CollisionAvoidanceState, CollisionDetectionState, IOComponentCommand,
                                  IODeviceConfiguration, IODeviceStatus, IONodeConfiguration, JointCommand,
                                  SEAJointState)
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty
from std_srvs.srv import SetBool

from ros_helpers import ARM, Latest, arm_positions, publisher, send_positions, wait_for

pytestmark = pytest.mark.node
L = "/robot/limb/right"
SQUISH = np.array(load_config().control["collision_detection"]["squish"])  # Nm per arm joint


@pytest.fixture
def table_sim(launch):
    launch("roslaunch", "intera_compat", "sawyer_sim.launch", "no_rt:=true", "scene:=table", log_name="sim.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(30)
    yield js
    js.close()


def velocity(pub, j1):
    pub.publish(JointCommand(mode=JointCommand.VELOCITY_MODE, names=ARM, velocity=[0, j1, 0, 0, 0, 0, 0]))


def test_driving_into_the_table_is_seen_as_has_collided_and_suppression_turns_it_off(table_sim):
    detect = Latest(f"{L}/collision_detection_state", CollisionDetectionState)
    status = Latest(f"{L}/safety_status", SafetyStatus)
    assert detect.wait(10).collision_state is False
    assert status.wait(10).collision_detection_active
    cmd = publisher(f"{L}/joint_command", JointCommand)
    # down onto the table top: impact → collision_state true (what Limb.has_collided() reads)
    assert wait_for(lambda: detect.msg.collision_state, 10, every=lambda: velocity(cmd, 0.8))
    assert wait_for(lambda: status.msg.collision_detected and status.msg.collision_cause == "impact", 2)
    assert status.msg.collisions >= 1 and status.msg.collision_joint in ARM
    on_table = arm_positions(table_sim)[1]
    # the hold ends (~0.5 s) once nothing pushes: back up and it clears
    assert wait_for(lambda: not detect.msg.collision_state, 5, every=lambda: velocity(cmd, -0.3))
    wait_for(lambda: False, 0.5, every=lambda: velocity(cmd, -0.3))
    assert arm_positions(table_sim)[1] < on_table - 0.05  # clear of the table again
    # suppress_contact_safety at 10 Hz: driving down again does not trip
    sup = publisher(f"{L}/suppress_contact_safety", Empty)
    n0 = status.msg.collisions
    pushed = 0.0
    t_end = time.time() + 3.0
    while time.time() < t_end:
        sup.publish(Empty())
        velocity(cmd, 0.8)
        time.sleep(0.05)
        assert not detect.msg.collision_state
        pushed = max(pushed, (np.abs(status.msg.external_torque[:7]) / SQUISH).max())
    assert status.msg.collisions == n0 and not status.msg.collision_detection_active
    # it did reach the table and press on it (what would have tripped the detection)
    assert arm_positions(table_sim)[1] > on_table - 0.02 and pushed > 1.0
    # the stream stops: detection is back 0.2 s after the last message (sim-time boundary: test_collision_safety;
    # here with room for the VM's stalls)
    t_last = time.time()
    sup.publish(Empty())
    assert wait_for(lambda: status.msg.collision_detection_active, 2.0, every=lambda: velocity(cmd, 0.0))
    assert time.time() - t_last < 0.6


def test_avoidance_suppression_estop_and_bypass(sim):
    status = Latest(f"{L}/safety_status", SafetyStatus)
    avoid = Latest(f"{L}/collision_avoidance_state", CollisionAvoidanceState)
    assert status.wait(10).collision_avoidance_active and avoid.wait(10).other_arm is False
    cmd = publisher(f"{L}/joint_command", JointCommand)
    fold = arm_positions(sim)
    fold[3] = 3.0  # the forearm onto the upper arm
    # avoidance stops it short; collision_avoidance_state names the pair it slows
    wait_for(lambda: False, 3.0, every=lambda: send_positions(cmd, fold))
    assert arm_positions(sim)[3] < 2.79
    assert status.msg.min_collision_distance > 0.01
    seen = wait_for(lambda: len(avoid.msg.collision_object) > 0, 2.0, every=lambda: send_positions(cmd, fold))
    assert seen and all(":" in p for p in avoid.msg.collision_object)
    # rostopic pub -r 10 suppress_collision_avoidance: it folds further
    sup = publisher(f"{L}/suppress_collision_avoidance", Empty)

    def suppressed_fold():
        sup.publish(Empty())
        send_positions(cmd, fold)

    assert wait_for(lambda: not status.msg.collision_avoidance_active, 2.0, every=suppressed_fold)
    assert wait_for(lambda: status.msg.min_collision_distance < 0.005, 5.0, every=suppressed_fold)
    # the stream stops: avoidance re-engages by itself, 0.2 s after the last message
    t_last = time.time()
    sup.publish(Empty())
    assert wait_for(lambda: status.msg.collision_avoidance_active, 2.0, every=lambda: send_positions(cmd, fold))
    assert time.time() - t_last < 0.6
    # ~safety_estop latches a hold and ignores commands; releasing it leaves the arm holding
    back = arm_positions(sim)
    back[3] = 2.0
    estop = publisher("/realtime_loop/safety_estop", Bool)
    estop.publish(True)
    assert wait_for(lambda: status.msg.safety_estop, 2.0)
    here = arm_positions(sim)
    wait_for(lambda: False, 1.0, every=lambda: send_positions(cmd, back))
    assert np.abs(arm_positions(sim) - here).max() < 0.02
    estop.publish(False)
    assert wait_for(lambda: not status.msg.safety_estop, 2.0)
    assert wait_for(lambda: abs(arm_positions(sim)[3] - 2.0) < 0.01, 10.0, every=lambda: send_positions(cmd, back))
    # ~bypass_safety_checks: on (with its remaining time), then off
    rospy.wait_for_service("/realtime_loop/bypass_safety_checks", 5)
    bypass = rospy.ServiceProxy("/realtime_loop/bypass_safety_checks", SetBool)
    assert bypass(True).success
    assert wait_for(lambda: status.msg.bypass and 50.0 < status.msg.bypass_remaining <= 60.0, 2.0)
    assert not status.msg.collision_avoidance_active
    assert bypass(False).success
    assert wait_for(lambda: not status.msg.bypass and status.msg.collision_avoidance_active, 2.0)


def signal(state_msg, name):
    s = next(x for x in state_msg.signals if x.name == name)
    return json.loads(s.data)[0]


def test_cuff_squeeze_enters_zero_g_and_lights_are_acknowledged(sim):
    cfg = Latest("/io/robot/cuff/config", IODeviceConfiguration)
    cuff = Latest("/io/robot/cuff/state", IODeviceStatus)
    lights = Latest("/io/robot/robot/state", IODeviceStatus)
    nav = Latest("/io/robot/navigator/config", IODeviceConfiguration)
    node = Latest("/io/robot/config", IONodeConfiguration)
    status = Latest(f"{L}/safety_status", SafetyStatus)
    assert cfg.wait(10).device.name == "cuff" and cfg.msg.time.secs != 0
    assert nav.wait(10).time.secs != 0 and {d.name for d in node.wait(10).devices} == {"cuff", "navigator", "robot"}
    assert signal(cuff.wait(10), "right_cuff") == 0 and not status.wait(10).zero_g
    # the sim squeezes the cuff: the state shows it (new time) and the loop floats the arm
    press = publisher("/robot/sim/io/cuff", IOComponentCommand)
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [1]}}})))
    assert wait_for(lambda: signal(cuff.msg, "right_cuff") == 1, 5)
    assert wait_for(lambda: status.msg.zero_g, 5)
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [0]}}})))
    assert wait_for(lambda: not status.msg.zero_g and signal(cuff.msg, "right_cuff") == 0, 5)
    # suppress_cuff_interaction at 10 Hz: a squeeze does not take the arm; the stream stops → zero-G
    sup = publisher(f"{L}/suppress_cuff_interaction", Empty)
    wait_for(lambda: False, 0.5, every=lambda: sup.publish(Empty()))
    t_cuff = cuff.msg.time
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [1]}}})))
    assert wait_for(lambda: signal(cuff.msg, "right_cuff") == 1, 5, every=lambda: sup.publish(Empty()))
    assert cuff.msg.time > t_cuff  # a new time per change (the SDK's IO client drops repeated ones)
    wait_for(lambda: False, 1.0, every=lambda: sup.publish(Empty()))
    assert not status.msg.zero_g
    assert wait_for(lambda: status.msg.zero_g, 2.0)
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [0]}}})))
    assert wait_for(lambda: not status.msg.zero_g, 5)
    # suppress_gravity_compensation at 10 Hz: gravity_compensation_torques report none while it lasts
    grav = Latest(f"{L}/gravity_compensation_torques", SEAJointState)
    assert np.abs(grav.wait(10).gravity_only).max() > 1.0
    gsup = publisher(f"{L}/suppress_gravity_compensation", Empty)
    assert wait_for(lambda: not any(grav.msg.gravity_only), 2.0, every=lambda: gsup.publish(Empty()))
    assert wait_for(lambda: np.abs(grav.msg.gravity_only).max() > 1.0, 2.0)
    # lights, as intera_interface.Lights does it: re-send until the command's time is acknowledged
    cmd = publisher("/io/robot/robot/command", IOComponentCommand)
    t = rospy.Time.now()
    msg = IOComponentCommand(time=t, op="set", args=json.dumps(
        {"signals": {"head_green_light": {"format": {"type": "bool"}, "data": [True]}}}))
    assert wait_for(lambda: t in lights.msg.commands, 5, period=0.1, every=lambda: cmd.publish(msg))
    assert signal(lights.msg, "head_green_light") is True  # already in the acknowledging state
    # a malformed one: acknowledged with its error, nothing changes
    t2 = rospy.Time.now()
    bad = IOComponentCommand(time=t2, op="set", args='{"signals": {"head_green_light": {"data": ["on"]}}}')
    assert wait_for(lambda: t2 in lights.msg.commands, 5, period=0.1, every=lambda: cmd.publish(bad))
    i = list(lights.msg.commands).index(t2)
    assert "is bool" in lights.msg.responses[i] and signal(lights.msg, "head_green_light") is True


def test_a_motion_into_the_table_ends_with_a_collision(table_sim):
    """The motion controller's trajectory runs into the table: the loop's detection stops it and the SDK's
    MotionControllerActionClient gets CONTROLLER_NOT_FOLLOWING (Sawyer: "stopped because the arm detected a
    collision"); the arm then holds, it does not keep pushing."""
    client = actionlib.SimpleActionClient("/motion/motion_command", MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(60))
    q0 = arm_positions(table_sim)
    down = q0 + np.array([0, 0.6, 0, 0, 0, 0, 0])  # the hand goes through the table top
    wpo = WaypointOptions(label="default", max_joint_speed_ratio=0.5, max_joint_accel=[10, 8, 10, 10, 12, 12, 12],
                          max_linear_speed=0.6, max_linear_accel=0.6, max_rotational_speed=1.57,
                          max_rotational_accel=1.57)
    goal = MotionCommandGoal(command="start", trajectory=Trajectory(
        joint_names=ARM, trajectory_options=TrajectoryOptions(interpolation_type="JOINT"),
        waypoints=[Waypoint(joint_positions=list(q), active_endpoint="right_hand", options=wpo) for q in (q0, down)]))
    client.send_goal(goal)
    assert client.wait_for_result(rospy.Duration(30))
    res = client.get_result()
    assert not res.result and res.errorId == "CONTROLLER_NOT_FOLLOWING"
    here = arm_positions(table_sim)
    assert here[1] < down[1] - 0.1  # stopped on the table, well short of the goal
    time.sleep(1.0)
    assert np.abs(arm_positions(table_sim) - here).max() < 0.02
