"""The loop's ExecuteTrajectory action (served by realtime_loop) and its keep-alive watchdog."""
import os
import signal

import actionlib
import numpy as np
import pytest
import rospy
from intera_compat.msg import ExecuteTrajectoryAction, ExecuteTrajectoryGoal, ExecuteTrajectoryResult
from ros_helpers import ARM, Latest, arm_positions, wait_for
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from intera_compat.msg import ExecuteTrajectoryActionResult

pytestmark = pytest.mark.node
NS = "/robot/limb/right/execute_trajectory"
SENDER = os.path.join(os.path.dirname(__file__), "nodes", "trajectory_sender.py")


@pytest.fixture
def sim(sim_home):
    """One sawyer_sim.launch for the module, brought home (neutral, enabled, at rest) before each test."""
    return sim_home


def goal(names, times, positions, **kw):
    jt = JointTrajectory(joint_names=names)
    for t, q in zip(times, positions):
        jt.points.append(JointTrajectoryPoint(positions=list(q), time_from_start=rospy.Duration.from_sec(t)))
    return ExecuteTrajectoryGoal(trajectory=jt, **kw)


def test_a_trajectory_runs_with_feedback_and_bad_ones_are_rejected_by_name(sim):
    client = actionlib.SimpleActionClient(NS, ExecuteTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(20))
    q0 = arm_positions(sim)
    target = q0 + np.array([0, 0.2, 0, -0.2, 0, 0, 0.3])
    feedback = []
    client.send_goal(goal(ARM, [1.0], [target]), feedback_cb=feedback.append)
    assert client.wait_for_result(rospy.Duration(20))
    res = client.get_result()
    assert res.status == ExecuteTrajectoryResult.SUCCEEDED and res.time == pytest.approx(1.0, abs=0.01)
    assert np.abs(arm_positions(sim) - target).max() < 0.01
    assert feedback and max(f.time for f in feedback) > 0.5 and feedback[-1].duration == pytest.approx(1.0)
    for bad, words in ((goal(ARM, [1.0], [list(target[:6])]), "points[0].positions has 6 values"),
                       (goal(ARM[:1] + ["elbow"], [1.0], [[0.0, 0.0]]), "'elbow' is not a joint"),
                       (goal(ARM, [1.0], [list(target[:6]) + [float("nan")]]), "is nan"),
                       (goal(ARM, [0.01], [target]), None),  # reachable (already there)
                       (goal(ARM, [0.01], [q0]), "exceeds the joint velocity"),
                       (goal(ARM, [1.0], [target], keepalive_timeout=float("inf")), "keepalive_timeout")):
        client.send_goal(bad)
        assert client.wait_for_result(rospy.Duration(10))
        res = client.get_result()
        if words is None:
            assert res.status == ExecuteTrajectoryResult.SUCCEEDED
            continue
        # refused by the listener's checks: REJECTED; by the loop (from where the arm is): ABORTED
        assert client.get_state() == (actionlib.GoalStatus.ABORTED if "exceeds" in words else
                                      actionlib.GoalStatus.REJECTED)
        assert res.status == ExecuteTrajectoryResult.REJECTED and words in res.message
    assert np.abs(arm_positions(sim) - target).max() < 0.01


def test_the_loop_stops_the_arm_when_the_sender_dies(sim, launch):
    """The sender is SIGKILLed mid-motion: no goodbye, only the keep-alives stop."""
    results = Latest(NS + "/result", ExecuteTrajectoryActionResult)
    q0 = arm_positions(sim)
    # j0 +1 rad in 4 s (0.25 rad/s), a keep-alive timeout of 0.3 s (0.1 s: a CPU hog's stall of the sender lost a
    # run its goal before it had moved 0.2 rad — the watchdog doing its work, on a sender that was alive)
    sender = launch(SENDER, "1.0", "4.0", "0.3", log_name="sender.log")
    assert wait_for(lambda: abs(arm_positions(sim)[0] - q0[0]) > 0.2, 30)
    os.killpg(sender.pid, signal.SIGKILL)
    killed_at = arm_positions(sim)[0]
    res = results.wait(5).result
    assert res.status == ExecuteTrajectoryResult.CANCELLED and res.reason == ExecuteTrajectoryResult.R_CLIENT_LOST

    def at_rest() -> bool:  # (still over 0.3 s of the robot's stamps)
        q, t = arm_positions(sim)[0], sim.msg.header.stamp.to_sec()
        assert wait_for(lambda: sim.msg.header.stamp.to_sec() >= t + 0.3, 60)
        return abs(arm_positions(sim)[0] - q) < 1e-4
    assert wait_for(at_rest, 60), "the arm never came to rest after the sender died"
    held = arm_positions(sim)[0]
    # the keep-alive timeout at 0.25 rad/s (0.075 rad; 0.138 rad with the 0.5 s default; the watchdog runs on the
    # listener's wall clock, so a stall of it adds to that), then a stop on the path: short of the goal
    assert held - killed_at < 0.2 and held - q0[0] < 0.6
    results.close()
