"""cobot_emulator.launch: the Cobot backend through asyncua to the reference cobot PLC (on conftest's EMULATOR_HOST) —
JTAS goals as resampled point lists (or single points), a cancel mid-motion that stops the arm and ends the goal
preempted, the PLC's error (stopped + error, reset acknowledges it), a refused call, a dropped connection, an axis that
never settles, and POSITION commands as single waypoints. (The Limb-level suite runs against it too: conftest
"cobot".)"""
import time

import numpy as np
import pytest
import rospy
from conftest import EMULATOR_HOST
from actionlib_msgs.msg import GoalStatus
from control_msgs.msg import FollowJointTrajectoryGoal, FollowJointTrajectoryResult
from ros_helpers import arm_positions, enabled, held, joint_motion, publisher, reset_and_enable, wait_for
from std_msgs.msg import Empty
from trajectory_msgs.msg import JointTrajectoryPoint

pytest.importorskip("asyncua")
pytestmark = pytest.mark.node
ARM7 = [f"right_j{i}" for i in range(7)]
R = FollowJointTrajectoryResult


def plc(what: str) -> str:
    """The PLC's fault injection / queries (its Emulator.Inject method)."""
    from asyncua import ua
    from asyncua.sync import Client, ThreadLoop

    with ThreadLoop(timeout=10) as tloop:  # (its thread is not a daemon: stopped however the call ends)
        c = Client(f"opc.tcp://{EMULATOR_HOST}:4840/cobot", timeout=5, tloop=tloop)
        c.connect()
        try:
            ns = c.get_namespace_index("urn:intera_compat:cobot_plc")
            emu = c.get_node(ua.NodeId("Emulator", ns))
            return emu.call_method(ua.NodeId("Emulator.Inject", ns), what)
        finally:
            c.disconnect()


@pytest.fixture
def cobot(launch):
    """(JTAS client, joint_states, /robot/state) of cobot_emulator.launch, the robot enabled."""
    from conftest import _start_robot
    yield from enabled(_start_robot(launch, "cobot", "settle_timeout:=2.0"))


def goal(q0, dq, duration, k=21):
    """A MoveIt-like trajectory: ``k`` points (dense), positions and velocities."""
    g = FollowJointTrajectoryGoal()
    g.trajectory.joint_names = ARM7
    for s in np.linspace(0.0, 1.0, k):
        blend = 3 * s * s - 2 * s ** 3
        rate = (6 * s - 6 * s * s) / duration
        g.trajectory.points.append(JointTrajectoryPoint(positions=list(q0 + blend * dq),
                                                        velocities=list(rate * dq),
                                                        time_from_start=rospy.Duration.from_sec(s * duration)))
    return g


def under_way(client, js, dq, duration: float, moved: float) -> np.ndarray:
    """A goal ``dq`` away over ``duration`` s sent, and the arm ``moved`` rad on its way; where it started."""
    q0 = arm_positions(js)
    client.send_goal(goal(q0, dq, duration))
    assert wait_for(lambda: np.abs(arm_positions(js) - q0).max() > moved, 10)
    return q0


def reachable() -> bool:
    try:
        plc("calls")
        return True
    except Exception:
        return False


def test_goals_go_as_resampled_point_lists_or_single_points(cobot):
    from rosgraph_msgs.msg import Log
    client, js, _ = cobot
    said = []  # the loop node's log lines: its settings taken
    logs = rospy.Subscriber("/rosout", Log, lambda m: said.append(m.msg) if m.name == "/realtime_loop" else None)
    assert wait_for(lambda: any(c.callerid_pub == "/realtime_loop" for c in logs.impl.connections), 30)
    q0 = arm_positions(js)
    dq = np.array([0.4, -0.3, 0.2, 0.5, -0.2, 0.3, 0.6])
    client.send_goal(goal(q0, dq, 3.0))
    assert client.wait_for_result(rospy.Duration(20))
    assert client.get_result().error_code == R.SUCCESSFUL, client.get_result().error_string
    assert np.abs(arm_positions(js) - (q0 + dq)).max() < 0.01
    calls = plc("calls")
    assert calls.split(";")[0].split()[-1] == "ExecuteInstructionList"
    points = int(calls.rsplit(" ", 1)[1])
    assert 3 <= points <= 8  # 21 points, 0.6 rad on the largest joint: resampled at 0.1 rad (ends kept)
    rospy.set_param("/robot/cobot/execution_mode", "single_point")  # (at run time, as the seed's panel does)
    rospy.set_param("/robot/cobot/resampling_delta", -1.0)  # refused: set back, nothing changes
    # (the watcher looks twice a second: the bad value set back, the mode taken for the next trajectory)
    assert wait_for(lambda: rospy.get_param("/robot/cobot/resampling_delta") == pytest.approx(0.1) and
                    any("execution_mode single_point, resampling_delta 0.1 rad" in m for m in said), 30), said
    client.send_goal(goal(q0 + dq, -dq, 3.0))
    assert client.wait_for_result(rospy.Duration(20))
    assert client.get_result().error_code == R.SUCCESSFUL, client.get_result().error_string
    assert np.abs(arm_positions(js) - q0).max() < 0.01
    calls = plc("calls")
    assert calls.split(";")[0].split()[-1] == "SetRobotWaypoint" and calls.endswith("points 1")
    logs.unregister()


def test_the_motion_controller_moves_the_cobot_as_go_to_joint_angles_does(cobot):
    _, js, _ = cobot
    joint_motion(js, ARM7, [0.3, -0.2, 0.2, 0.4, 0.3, -0.4, 0.5])


def test_cancel_mid_motion_stops_the_arm_and_the_goal_ends_preempted(cobot):
    client, js, state = cobot
    dq = np.array([0.8, 0.0, 0.0, 0.8, 0.0, 0.0, 0.8])
    q0 = under_way(client, js, dq, 4.0, 0.2)
    client.cancel_goal()
    q_cancel = arm_positions(js)
    assert client.wait_for_result(rospy.Duration(10))
    assert client.get_state() == GoalStatus.PREEMPTED
    time.sleep(0.5)
    q_stop = held(js)  # stopped within 0.5 s (the PLC aborted and braked), not going on
    assert np.abs(q_stop - q_cancel).max() < 0.15  # (braking from ≤ 0.6 rad/s)
    assert np.abs(q_stop - (q0 + dq)).max() > 0.1 and "Abort" in plc("calls")
    assert state.msg.enabled and not state.msg.error


def test_a_plc_error_stops_the_robot_with_an_error_and_reset_acknowledges_it(cobot):
    client, js, state = cobot
    dq = np.array([0.6, 0.0, 0.3, 0.0, 0.0, 0.0, 0.6])
    under_way(client, js, dq, 3.0, 0.1)
    plc("error 42 axis 3 overload")
    assert wait_for(lambda: state.msg.stopped and state.msg.error, 5)
    assert client.wait_for_result(rospy.Duration(10))
    assert client.get_state() == GoalStatus.ABORTED and client.get_result().error_string
    time.sleep(0.5)
    held(js, 0.5)
    publisher("/robot/set_super_reset", Empty).publish()  # one message (rostopic pub -1) acknowledges it ...
    assert wait_for(lambda: not state.msg.stopped and not state.msg.error, 5)
    time.sleep(1.0)
    assert not state.msg.stopped  # ... for good
    reset_and_enable(state)
    assert "AcknowledgeError" in plc("calls")
    client.send_goal(goal(arm_positions(js), -0.5 * dq, 2.0))  # it moves again
    assert client.wait_for_result(rospy.Duration(20))
    assert client.get_result().error_code == R.SUCCESSFUL, client.get_result().error_string


def test_a_refused_call_an_unsettled_axis_and_a_dropped_link_are_errors_reset_recovers(cobot):
    client, js, state = cobot
    q0 = arm_positions(js)
    dq = np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    plc("method error")  # the next call fails
    client.send_goal(goal(q0, dq, 2.0))
    assert client.wait_for_result(rospy.Duration(10))
    assert client.get_state() == GoalStatus.ABORTED and wait_for(lambda: state.msg.error, 3)
    reset_and_enable(state)
    plc("unsettled 2")  # joint 2 never settles: the goal ends after 2 x 2 s + 2 s with an error
    client.send_goal(goal(arm_positions(js), dq, 2.0))
    assert client.wait_for_result(rospy.Duration(20))
    assert client.get_state() == GoalStatus.ABORTED and wait_for(lambda: state.msg.error, 3)
    plc("unsettled off")
    reset_and_enable(state)
    q1 = arm_positions(js)
    client.send_goal(goal(q1, np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5]), 6.0))  # a long motion, and mid-way ...
    assert wait_for(lambda: np.abs(arm_positions(js) - q1).max() > 0.1, 10)
    plc("drop 2")  # ... the PLC goes away for 2 s: link lost (no lifebit: the PLC stops), reset reconnects, aborts
    assert wait_for(lambda: state.msg.stopped and state.msg.error, 5)
    assert client.wait_for_result(rospy.Duration(10)) and client.get_state() == GoalStatus.ABORTED
    assert wait_for(reachable, 15, period=0.5)  # (back)
    reset_and_enable(state)
    time.sleep(0.5)
    held(js)  # (the list it ran on with is aborted: the arm stands)
    client.send_goal(goal(arm_positions(js), -dq, 2.0))
    assert client.wait_for_result(rospy.Duration(20))
    assert client.get_result().error_code == R.SUCCESSFUL, client.get_result().error_string
