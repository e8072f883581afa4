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


def test_a_goal_starting_where_the_arm_is_waits_for_the_arm_to_finish_its_move(shared):
    js = shared.up("sawyer_sim.launch", "no_rt:=true", "cameras:=false")
    shared.home()
    client = actionlib.SimpleActionClient(NS, FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(60))
    arm_state = Latest("/robot/limb/right/gravity_compensation_torques", SEAJointState)
    ratio = publisher("/robot/limb/right/set_speed_ratio", Float64, latch=True)
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    try:
        ratio.publish(Float64(0.1))  # right_j0 at 0.17 rad/s: a 0.15 rad move takes about 1 s
        q0 = arm_positions(js)
        target = q0.copy()
        target[0] += 0.15
        cmd.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=ARM, position=list(target)))
        assert wait_for(lambda: abs(arm_state.wait().commanded_velocity[0]) > 0.1, 30), "the move did not start"
        g = FollowJointTrajectoryGoal()
        g.trajectory.joint_names = ARM
        for t, q in ((0.0, q0), (1.0, q0), (3.0, q0 + np.r_[0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0])):
            g.trajectory.points.append(JointTrajectoryPoint(positions=list(q), time_from_start=rospy.Duration(t)))
        client.send_goal(g)
        assert client.wait_for_result(rospy.Duration(120))
        res = client.get_result()
        # (before the fix: INVALID_GOAL, "the realtime loop refused it: the first point is too far from the current
        # position or velocity (right_j0)")
        assert res.error_code == FollowJointTrajectoryResult.SUCCESSFUL, res.error_string
        assert np.abs(arm_positions(js) - np.asarray(g.trajectory.points[-1].positions)).max() < 0.01
    finally:
        ratio.publish(Float64(0.3))
        arm_state.close()
        for p in (ratio, cmd):
            p.unregister()
