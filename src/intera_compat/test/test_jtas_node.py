"""The robot-side joint trajectory action server (/robot/limb/right/follow_joint_trajectory) on the sim:
every mode, every error code, preemption, cancel, start time, speed-override pause and resume."""
import importlib.util
import json

import actionlib
import numpy as np
import pytest
import rospy
from actionlib_msgs.msg import GoalStatus
from control_msgs.msg import FollowJointTrajectoryAction, FollowJointTrajectoryGoal, FollowJointTrajectoryResult, \
    JointTolerance
from intera_compat.msg import SafetyStatus
from intera_core_msgs.msg import IOComponentCommand, RobotAssemblyState
from ros_helpers import ARM, Latest, arm_positions, publisher, wait_for
from sensor_msgs.msg import JointState
from shared_robot import Progress, robot_sleep, shared_launch
from std_msgs.msg import Bool, Float64
from trajectory_msgs.msg import JointTrajectoryPoint

pytestmark = pytest.mark.node
R = FollowJointTrajectoryResult
NS = "/robot/limb/right/follow_joint_trajectory"


# one launch per JTAS mode for the module (tests of the same mode share it, each from the robot reset, enabled and
# back at its start pose); the sim runs on wall time: the joint states' stamps are the robot's clock
shared = shared_launch("jtas_sim")


@pytest.fixture
def launch(shared, launch):
    """conftest's, the shared launch stopped first (the same node names)."""
    shared.stop()
    yield launch


@pytest.fixture(params=["position_w_id"])
def jtas(request, shared):
    """The sim with its JTAS in ``request.param`` mode; yields (client, joint_states)."""
    js = shared.up("sawyer_sim.launch", "no_rt:=true", "cameras:=false", f"jtas_mode:={request.param}")
    shared.home()
    client = actionlib.SimpleActionClient(NS, FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(60))
    yield client, js


def stamp(js) -> float:
    """The robot's time: its newest joint state's stamp."""
    return js.msg.header.stamp.to_sec()


def goal(names, times, positions, velocities=None, accelerations=None, stamp=0.0, **kw):
    g = FollowJointTrajectoryGoal(**kw)
    g.trajectory.joint_names = list(names)
    g.trajectory.header.stamp = rospy.Time.from_sec(stamp)
    for i, t in enumerate(times):
        p = JointTrajectoryPoint(positions=list(positions[i]), time_from_start=rospy.Duration.from_sec(t))
        if velocities is not None:
            p.velocities = list(velocities[i])
        if accelerations is not None:
            p.accelerations = list(accelerations[i])
        g.trajectory.points.append(p)
    return g


def run(client, g, timeout=60.0, feedback=None):
    client.send_goal(g, feedback_cb=None if feedback is None else feedback.append)
    assert client.wait_for_result(rospy.Duration(timeout))
    return client.get_state(), client.get_result()


def min_jerk(q0, q1, duration, k):
    t = np.linspace(0.0, duration, k)
    s = t / duration
    d = q1 - q0
    p = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
    dp = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / duration
    ddp = (60 * s - 180 * s ** 2 + 120 * s ** 3) / duration ** 2
    return t, q0 + np.outer(p, d), np.outer(dp, d), np.outer(ddp, d)


def test_every_error_code_with_its_message(jtas):
    client, js = jtas
    q0 = arm_positions(js)
    target = q0 + np.array([0.3, 0, 0, 0.3, 0, 0, 0])

    state, res = run(client, goal(ARM[:6] + ["right_j9"], [0.0, 1.0], [q0, target]))
    assert (state, res.error_code) == (GoalStatus.ABORTED, R.INVALID_JOINTS) and "'right_j9'" in res.error_string
    state, res = run(client, goal(ARM, [], []))
    assert (state, res.error_code) == (GoalStatus.ABORTED, R.INVALID_GOAL) and "points is empty" in res.error_string
    far = q0.copy()
    far[0] += 0.5
    state, res = run(client, goal(ARM, [0.0, 1.0], [far, far]))
    assert res.error_code == R.INVALID_GOAL and "(right_j0)" in res.error_string and "from the arm" in res.error_string
    state, res = run(client, goal(ARM, [0.0, 1.0], [q0, target], stamp=rospy.get_time() - 100.0))
    assert res.error_code == R.OLD_HEADER_TIMESTAMP and "header.stamp" in res.error_string
    state, res = run(client, goal(ARM, [0.0, 0.05], [q0, target]))  # far too fast for the joints
    assert res.error_code == R.INVALID_GOAL and "exceeds the limit" in res.error_string
    rospy.set_param("/joint_trajectory_action_server/right_j3_trajectory", float("nan"))
    state, res = run(client, goal(ARM, [0.0, 1.5], [q0, target]))  # a NaN tolerance would pass every check
    rospy.set_param("/joint_trajectory_action_server/right_j3_trajectory", 0.2)
    assert res.error_code == R.INVALID_GOAL and "right_j3_trajectory" in res.error_string
    assert np.abs(arm_positions(js) - q0).max() < 0.01  # none of these moved the arm

    tight = [JointTolerance(name="right_j3", position=1e-5)]
    state, res = run(client, goal(ARM, [0.0, 1.5], [q0, target], path_tolerance=tight))
    assert (state, res.error_code) == (GoalStatus.ABORTED, R.PATH_TOLERANCE_VIOLATED)
    assert "path error of right_j3" in res.error_string
    assert wait_for(lambda: np.abs(js.msg.velocity[:7]).max() < 0.02, 3)  # stopped, not at the target
    assert np.abs(arm_positions(js) - target).max() > 0.1

    exact = [JointTolerance(name="right_j0", position=1e-12)]
    q0 = arm_positions(js)
    state, res = run(client, goal(ARM, [0.0, 1.0], [q0, q0 + 0.05], goal_tolerance=exact, goal_time_tolerance=rospy.Duration(0.01)))
    assert (state, res.error_code) == (GoalStatus.ABORTED, R.GOAL_TOLERANCE_VIOLATED)
    assert "goal error of right_j0" in res.error_string

    # disabled mid-motion (its feedback 0.5 s into a 4 s goal): the loop stops the arm, the goal ends
    # PATH_TOLERANCE_VIOLATED saying why
    enable = publisher("/robot/set_super_enable", Bool)
    robot = Latest("/robot/state", RobotAssemblyState)
    q0 = arm_positions(js)
    mid = Progress(0.5)
    client.send_goal(goal(ARM, [0.0, 4.0], [q0, q0 + np.array([0, 0, 0, 0.3, 0, 0, 0])]), feedback_cb=mid)
    mid.wait()
    enable.publish(Bool(False))
    assert client.wait_for_result(rospy.Duration(60))
    res = client.get_result()
    assert res.error_code == R.PATH_TOLERANCE_VIOLATED and "disabled" in res.error_string
    assert wait_for(lambda: robot.msg is not None and robot.msg.enabled, 60, period=0.2,
                    every=lambda: enable.publish(Bool(True)))
    robot.close()
    # the cuff squeezed mid-motion: zero-G takes the arm
    q0 = arm_positions(js)
    press = publisher("/robot/sim/io/cuff", IOComponentCommand)
    mid = Progress(0.5)
    client.send_goal(goal(ARM, [0.0, 4.0], [q0, q0 + np.array([0, 0, 0, -0.3, 0, 0, 0])]), feedback_cb=mid)
    mid.wait()
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [1]}}})))
    assert client.wait_for_result(rospy.Duration(60))
    res = client.get_result()
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [0]}}})))
    assert res.error_code == R.PATH_TOLERANCE_VIOLATED and "zero-G" in res.error_string


def test_start_time_preemption_and_cancel_stop_smoothly(jtas):
    client, js = jtas
    q0 = arm_positions(js)
    a = q0 + np.array([0.4, 0, 0, 0.4, 0, 0, 0.4])
    # a start time 1 s ahead: nothing moves before it (the joint states' stamps: the robot's clock, as is the
    # goal's stamp here, the sim being on wall time)
    rec = []
    sub = rospy.Subscriber("/robot/joint_states", JointState, rec.append, queue_size=10000)
    assert wait_for(lambda: rec, 30)
    start = rospy.get_time() + 1.0
    client.send_goal(goal(ARM, [0.0, 1.0], [q0, a], stamp=start))
    assert client.wait_for_result(rospy.Duration(60)) and client.get_result().error_code == R.SUCCESSFUL
    sub.unregister()
    moved = [m.header.stamp.to_sec() for m in rec if np.abs(np.subtract(
        [m.position[m.name.index(n)] for n in ARM], q0)).max() > 1e-3]
    assert moved and moved[0] > start - 0.011  # (a joint state of the tick that starts it: 10 ms)
    assert moved[-1] - start > 0.95  # and it took its second from there
    # a new goal mid-motion (1.5 s into a 3 s one): the running one stops on its path (preempted), then the new
    # one runs
    peak = [0.0]
    sub = rospy.Subscriber("/robot/joint_states", JointState,
                           lambda m: peak.__setitem__(0, max(peak[0], np.abs(m.velocity[:7]).max())))
    first = actionlib.SimpleActionClient(NS, FollowJointTrajectoryAction)
    assert first.wait_for_server(rospy.Duration(5))
    mid = Progress(1.5)
    first.send_goal(goal(ARM, [0.0, 3.0], [a, q0]), feedback_cb=mid)
    mid.wait()
    b = q0 + np.array([0.2, 0.1, 0, 0.2, 0, 0, 0.8])
    state, res = run(client, goal(ARM, [0.0, 2.5], [arm_positions(js), b]))
    assert (state, res.error_code) == (GoalStatus.SUCCEEDED, R.SUCCESSFUL), res.error_string
    assert first.get_state() == GoalStatus.PREEMPTED and "stopped on its path" in first.get_result().error_string
    assert np.abs(arm_positions(js) - b).max() < 0.01
    assert peak[0] < 1.5  # no jump at the switch (the moves themselves stay below ~0.6 rad/s)
    # cancel (0.8 s into a 4 s goal): preempted, the arm comes to rest between start and target
    mid = Progress(0.8)
    client.send_goal(goal(ARM, [0.0, 4.0], [b, q0]), feedback_cb=mid)
    mid.wait()
    client.cancel_goal()
    assert client.wait_for_result(rospy.Duration(60)) and client.get_state() == GoalStatus.PREEMPTED
    assert wait_for(lambda: np.abs(js.msg.velocity[:7]).max() < 0.01, 60)
    here = arm_positions(js)
    assert np.abs(here - b).max() > 0.05 and np.abs(here - q0).max() > 0.05
    sub.unregister()


def test_a_speed_override_of_zero_pauses_the_goal_and_one_resumes_it(jtas):
    client, js = jtas
    q0 = arm_positions(js)
    target = q0 + np.array([0.5, 0, 0, 0.3, 0, 0, 0.6])
    override = publisher("/realtime_loop/speed_override", Float64)
    mid = Progress(1.0)
    t0 = stamp(js)
    client.send_goal(goal(ARM, [0.0, 6.0], [q0, target]), feedback_cb=mid)
    mid.wait()
    override.publish(Float64(0.0))
    # it slows along the path and holds: the goal's time stands still for 1 s of the robot's time
    def standing() -> bool:
        d = mid.fb[-1].desired.time_from_start.to_sec()
        robot_sleep(js, 1.0)
        return mid.fb[-1].desired.time_from_start.to_sec() == d
    assert wait_for(standing, 120, period=0.0)
    paused = mid.fb[-1].desired.time_from_start.to_sec()
    held = arm_positions(js)
    robot_sleep(js, 2.0)
    assert client.get_state() == GoalStatus.ACTIVE  # slowed, not aborted
    assert mid.fb[-1].desired.time_from_start.to_sec() == pytest.approx(paused, abs=1e-6)
    assert np.abs(arm_positions(js) - held).max() < 2e-3 and 1.0 < paused < 5.5
    override.publish(Float64(1.0))
    assert client.wait_for_result(rospy.Duration(60))
    assert client.get_result().error_code == R.SUCCESSFUL and stamp(js) - t0 > 6.0 + 3.0  # (held 3 s and more)
    assert np.abs(arm_positions(js) - target).max() < 0.01


def test_a_goal_sent_under_the_safety_estop_is_refused_and_nothing_moves_when_it_is_released(jtas):
    """Issue 32 (1): it stayed ACTIVE and ran its whole 0.4 rad on release."""
    client, js = jtas
    safety = Latest("/robot/limb/right/safety_status", SafetyStatus)
    estop = publisher("/realtime_loop/safety_estop", Bool)
    assert wait_for(lambda: safety.msg is not None and safety.msg.safety_estop, 30.0,
                    every=lambda: estop.publish(True))
    q0 = arm_positions(js)
    t, q, v, a = min_jerk(q0, q0 + np.array([0.4, 0, 0, 0, 0, 0, 0]), 2.0, 11)
    state, res = run(client, goal(ARM, t, q, v, a))
    assert state == GoalStatus.ABORTED and res.error_code == R.PATH_TOLERANCE_VIOLATED
    assert "safety E-stop" in res.error_string
    estop.publish(False)
    assert wait_for(lambda: not safety.msg.safety_estop, 30.0)
    released = js.msg.header.stamp.to_sec()
    assert wait_for(lambda: js.msg.header.stamp.to_sec() > released + 3.0, 60.0)  # (robot time: longer than the goal)
    assert np.abs(arm_positions(js) - q0).max() < 0.01
    safety.close()


# (last but one: its first mode is the launch the tests above share, the next two start their own)
@pytest.mark.parametrize("jtas", ["position_w_id", "position", "velocity"], indirect=True)
def test_client_and_moveit_shaped_trajectories_succeed_in_each_mode(jtas, request):
    client, js = jtas
    mode = request.node.callspec.params["jtas"]
    q0 = arm_positions(js)
    # joint_trajectory_client.py's shape: positions only, the current angles at 0 and 1 s, then scaled angles
    times = [0.0, 1.0, 3.0, 5.0, 7.0]
    shape = [q0, q0, q0 * 0.9, q0 * 0.8, q0]
    feedback = []
    state, res = run(client, goal(ARM, times, shape), feedback=feedback)
    assert (state, res.error_code, res.error_string) == (GoalStatus.SUCCEEDED, R.SUCCESSFUL, "")
    assert np.abs(arm_positions(js) - q0).max() < 0.01
    fb = feedback[len(feedback) // 2]
    assert fb.joint_names == ARM and len(fb.desired.positions) == len(fb.actual.positions) == len(fb.error.positions) == 7
    assert np.allclose(fb.error.positions, np.subtract(fb.desired.positions, fb.actual.positions))
    stamps = [f.desired.time_from_start.to_sec() for f in feedback]
    assert stamps[-1] > 6.5 and all(b >= a for a, b in zip(stamps, stamps[1:]))
    # at the JTAS's 100 Hz of the goal's time: the feedback's most common spacing (a server behind under load skips
    # some, which moves neither this nor the order)
    d, n = np.unique(np.round(np.diff(stamps), 3), return_counts=True)
    assert d[np.argmax(n)] == pytest.approx(0.01, abs=1.1e-3), dict(zip(d.tolist(), n.tolist()))
    worst = max(np.abs(f.error.positions).max() for f in feedback)
    assert worst < (0.01 if mode == "position_w_id" else 0.05)
    # MoveIt's shape: positions, velocities, accelerations at many points; joints in another order
    q1 = q0 + np.array([0.3, -0.2, 0.25, 0.3, -0.3, 0.2, 0.5])
    t, q, v, a = min_jerk(q0, q1, 2.5, 40)
    order = [3, 0, 6, 1, 5, 2, 4]
    state, res = run(client, goal([ARM[i] for i in order], t, q[:, order], v[:, order], a[:, order]))
    assert (state, res.error_code) == (GoalStatus.SUCCEEDED, R.SUCCESSFUL), res.error_string
    assert np.abs(arm_positions(js) - q1).max() < 0.01


@pytest.mark.skipif(importlib.util.find_spec("intera_interface") is None,
                    reason="Intera SDK not built here (./setup.sh --minimal leaves it out): ./setup.sh installs it")
@pytest.mark.parametrize("mode", ["position_w_id", "position"])
def test_the_sdks_own_streaming_jtas_drives_the_sim(launch, mode):
    """intera_interface's joint_trajectory_action_server.py (a client-side server streaming JointCommands)."""
    launch("roslaunch", "intera_compat", "sawyer_sim.launch", "no_rt:=true", "jtas:=false", "cameras:=false",
           log_name="sim.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(120)
    launch("rosrun", "intera_interface", "joint_trajectory_action_server.py", "-m", mode, log_name="sdk_jtas.log")
    client = actionlib.SimpleActionClient(NS, FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(60))
    q0 = arm_positions(js)
    # joint_trajectory_client.py's shape, shorter
    state, res = run(client, goal(ARM, [0.0, 1.0, 4.0, 7.0], [q0, q0, q0 * 0.9, q0]), timeout=120)
    assert (state, res.error_code) == (GoalStatus.SUCCEEDED, R.SUCCESSFUL)
    assert np.abs(arm_positions(js) - q0).max() < 0.02
    js.close()
