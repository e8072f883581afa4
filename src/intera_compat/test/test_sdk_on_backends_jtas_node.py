"""Issue 33: joint_trajectory_client.py's goal after move_to_neutral(). The script reads the arm's angles as soon as
Limb.move_to_joint_positions returns (the measured arm within 0.0087 rad of the target, while the loop's setpoint
still brakes onto it at up to 0.2 rad/s) and sends them as the first point at t = 0. Our JTAS takes that point as
where the arm is, and the loop starts a trajectory only from its setpoint at rest (0.05 rad/s): the goal was refused
("INVALID_GOAL: the realtime loop refused it: the first point is too far from the current position or velocity
(right_j0)", seen on the UR emulator; reproduced offline on the sim and on a position arm). The JTAS now waits, as
the motion controller does, for the arm to come to rest (up to 2 s of robot time) before it takes the arm's angles.

The test makes the race certain: the goal goes while a slow POSITION_MODE move (0.17 rad/s) still runs, its first
point at t = 0 the angles read when the move began (within the path tolerance of where the move ends)."""
import actionlib
import numpy as np
import pytest
import rospy
from control_msgs.msg import FollowJointTrajectoryAction, FollowJointTrajectoryGoal, FollowJointTrajectoryResult
from intera_core_msgs.msg import JointCommand, SEAJointState
from ros_helpers import ARM, Latest, arm_positions, publisher, wait_for
from shared_robot import shared_launch
from std_msgs.msg import Float64
from trajectory_msgs.msg import JointTrajectoryPoint

pytestmark = pytest.mark.node
NS = "/robot/limb/right/follow_joint_trajectory"
shared = shared_launch("sdk_on_backends_jtas")


@pytest.mark.parametrize("ratio, stamped_now", [(0.1, False), (0.05, True)], ids=["unstamped", "stamped_now"])
def test_a_goal_starting_where_the_arm_is_waits_for_the_arm_to_finish_its_move(shared, ratio, stamped_now):
    """``stamped_now``: header.stamp = now on a goal shorter than the wait (0.15 rad at 0.087 rad/s, about 2 s; the
    goal 0.8 s): its time base moves with the wait (review: it was refused as OLD_HEADER_TIMESTAMP)."""
    js = shared.up("sawyer_sim.launch", "no_rt:=true", "cameras:=false")
    shared.home()
    client = actionlib.SimpleActionClient(NS, FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(60))
    arm_state = Latest("/robot/limb/right/gravity_compensation_torques", SEAJointState)
    speed = publisher("/robot/limb/right/set_speed_ratio", Float64, latch=True)
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    try:
        speed.publish(Float64(ratio))  # right_j0 at 0.17 (0.087) rad/s: a 0.15 rad move takes about 1 (2) s
        q0 = arm_positions(js)
        target = q0.copy()
        target[0] += 0.15
        cmd.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=ARM, position=list(target)))
        assert wait_for(lambda: abs(arm_state.wait().commanded_velocity[0]) > 0.05, 30), "the move did not start"
        g = FollowJointTrajectoryGoal()
        g.trajectory.joint_names = ARM
        end = 0.8 if stamped_now else 3.0
        for t, q in ((0.0, q0), (end / 3.0, q0), (end, q0 + np.r_[0.0, 0.02 if stamped_now else 0.1, 0, 0, 0, 0, 0])):
            g.trajectory.points.append(JointTrajectoryPoint(positions=list(q), time_from_start=rospy.Duration(t)))
        if stamped_now:
            g.trajectory.header.stamp = rospy.Time.now()
        client.send_goal(g)
        assert client.wait_for_result(rospy.Duration(120))
        res = client.get_result()
        # (before the fix: INVALID_GOAL, "the realtime loop refused it: the first point is too far from the current
        # position or velocity (right_j0)")
        assert res.error_code == FollowJointTrajectoryResult.SUCCESSFUL, res.error_string
        assert np.abs(arm_positions(js) - np.asarray(g.trajectory.points[-1].positions)).max() < 0.01
    finally:
        speed.publish(Float64(0.3))
        arm_state.close()
        for p in (speed, cmd):
            p.unregister()
