"""The motion controller (/motion/motion_command) as the SDK's motion examples drive it. Waits for the robot are in
its time (``robot_sleep``: its joint states' stamps)."""
import json
import os
import signal
import time

import actionlib
import numpy as np
import pytest
import rospy
from geometry_msgs.msg import PoseStamped
from intera_core_msgs.msg import InteractionControlCommand, IOComponentCommand, JointCommand, RobotAssemblyState, SEAJointState
from intera_motion_msgs.msg import (InterpolatedPath, MotionCommandAction, MotionCommandGoal, MotionCommandResult,
                                    Trajectory, TrajectoryOptions, Waypoint, WaypointOptions)
from ros_helpers import ARM, Latest, arm_positions, publisher, send_positions, wait_for
from shared_robot import robot_sleep
from std_msgs.msg import Bool, Float64

pytestmark = pytest.mark.node
EXPRESS = [10.0, 8.0, 10.0, 10.0, 12.0, 12.0, 12.0]
NEUTRAL = [0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161]


def options(speed=0.3, accel=EXPRESS, **kw):
    return WaypointOptions(label="default", max_joint_speed_ratio=speed, joint_tolerances=[],
                           max_joint_accel=list(accel), max_linear_speed=0.6, max_linear_accel=0.6,
                           max_rotational_speed=1.57, max_rotational_accel=1.57, **kw)


def joint_goal(points, speed=0.3, label="default", command="start", **traj_kw):
    """As MotionTrajectory + MotionWaypoint build it: every waypoint carries joint angles and options."""
    wps = [Waypoint(joint_positions=list(q), active_endpoint="right_hand", pose=PoseStamped(), options=options(speed))
           for q in points]
    opts = TrajectoryOptions(interpolation_type="JOINT", **traj_kw)
    return MotionCommandGoal(command=command, trajectory=Trajectory(label=label, joint_names=ARM, waypoints=wps,
                                                                    trajectory_options=opts))


class Motion:
    def __init__(self):
        self.client = actionlib.SimpleActionClient("/motion/motion_command", MotionCommandAction)
        assert self.client.wait_for_server(rospy.Duration(60)), "motion controller did not come up"
        self.feedback = []

    def run(self, goal, timeout=60.0):
        self.feedback = []
        self.client.send_goal(goal, feedback_cb=lambda f: self.feedback.append(f.status))
        assert self.client.wait_for_result(rospy.Duration(timeout)), "no result"
        return self.client.get_result()


@pytest.fixture
def sim(sim_home):
    """One sawyer_sim.launch for the module, brought home (neutral, enabled, at rest) before each test."""
    return sim_home


@pytest.fixture
def motion(sim):
    return Motion()


def test_go_to_joint_angles(sim, motion):
    """go_to_joint_angles.py -q 0 -0.9 0 1.8 0 -0.9 0 -s 0.3: waypoint 0 = the current angles."""
    target = [0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0]
    res = motion.run(joint_goal([arm_positions(sim), target]))
    assert res.result and res.errorId == "" and res.last_successful_waypoint == 1
    assert np.abs(arm_positions(sim) - target).max() < 0.0087
    an = res.trajectory_analysis
    assert an.planned_duration > 0.5 and an.measured_duration >= an.planned_duration * 0.95
    assert max(an.peak_speed_command[i] / v for i, v in enumerate([1.74, 1.328, 1.957, 1.957, 3.485, 3.485, 4.545])) \
        <= 0.3 * 1.001
    assert max(an.max_position_error) < 0.01 and an.min_time_rate == pytest.approx(1.0)
    states = [f.motion_status for f in motion.feedback]
    # SimpleActionClient drops feedback that arrives before send_goal() has stored the goal handle, so the first
    # "pending" may be lost; and the final "done" feedback and the result travel on different topics (either may
    # arrive first). What must hold: running was reported, and nothing went back to pending after it.
    assert "running" in states and "pending" not in states[states.index("running"):]
    assert motion.feedback[-1].current_trajectory == "default"
    # send_traj_from_file.py with a minimal YAML: message defaults everywhere else ('' endpoint and
    # interpolation type, zero options): zeros mean the Intera defaults
    for kind in ("JOINT", ""):
        wps = [Waypoint(joint_positions=list(q), options=WaypointOptions(max_joint_speed_ratio=0.5))
               for q in (NEUTRAL, target)]
        goal = MotionCommandGoal(command="start", trajectory=Trajectory(
            label="from_file", joint_names=ARM, waypoints=wps,
            trajectory_options=TrajectoryOptions(interpolation_type=kind)))
        res = motion.run(goal)
        assert res.result and res.last_successful_waypoint == 1 and motion.feedback[-1].current_trajectory == "from_file"
        assert np.abs(arm_positions(sim) - target).max() < 0.0087


def random_walk(start, lower, upper, n=5, seed=1234, pad=0.1, dist=0.05):
    """send_random_trajectory.py's RandomWalk (Python's random, seeded), reproduced."""
    import random

    random.seed(seed)
    last, out = list(start), []
    for _ in range(n):
        point = []
        for lo, q, hi in zip(lower, last, upper):
            r = hi - lo
            a, b = max(lo + pad * r, q - dist * r), min(hi - pad * r, q + dist * r)
            if a > b:
                a, b = lo + pad * r, hi - pad * r
            point.append(a + (b - a) * random.random())
        out.append(point)
        last = point
    return out


def test_send_random_trajectory_passes_every_waypoint_then_a_new_goal_and_stop(sim, motion):
    """send_random_trajectory.py -n 5 -t JOINT -s 0.5 --rng_seed 1234, then stop_motion_trajectory.py mid-motion."""
    from intera_core_msgs.msg import JointLimits

    lim = Latest("/robot/joint_limits", JointLimits).wait(5)
    q0 = arm_positions(sim)
    walk = random_walk(q0, lim.position_lower[:7], lim.position_upper[:7])
    res = motion.run(joint_goal([q0] + walk, speed=0.5))
    assert res.result and res.last_successful_waypoint == 5, res
    assert np.abs(arm_positions(sim) - walk[-1]).max() < 0.0087
    assert sorted({f.current_waypoint for f in motion.feedback if f.motion_status == "running"})[-1] >= 4

    # a long slow motion, then stop_motion_trajectory.py from a second client: both goals answered
    far = np.array(NEUTRAL[:6] + [0.0]) + np.array([0.8, 0, 0, 0, 0, 0, 0])
    motion.client.send_goal(joint_goal([arm_positions(sim), far], speed=0.1))
    assert wait_for(lambda: np.abs(arm_positions(sim) - walk[-1]).max() > 0.05, 20)
    stopper = actionlib.SimpleActionClient("/motion/motion_command", MotionCommandAction)
    assert stopper.wait_for_server(rospy.Duration(10))
    stopper.send_goal(MotionCommandGoal(command="stop", trajectory=Trajectory()))
    assert stopper.wait_for_result(rospy.Duration(10)) and stopper.get_result().result
    assert motion.client.wait_for_result(rospy.Duration(10))
    first = motion.client.get_result()
    assert not first.result and first.last_successful_waypoint == 0  # waypoint 0 = where it started
    robot_sleep(sim, 0.5)
    held = arm_positions(sim)
    robot_sleep(sim, 0.5)
    assert np.abs(arm_positions(sim) - held).max() < 3e-3 and np.abs(held - far).max() > 0.1  # stopped on the way
    # stop when idle is answered too
    stopper.send_goal(MotionCommandGoal(command="stop", trajectory=Trajectory()))
    assert stopper.wait_for_result(rospy.Duration(10)) and stopper.get_result().result
    assert stopper.get_result().last_successful_waypoint == MotionCommandResult.HAVE_NOT_REACHED_FIRST_WAYPOINT

    # a new start during motion stops the first and plans the second from where the arm stopped
    motion.client.send_goal(joint_goal([arm_positions(sim), far], speed=0.1))
    assert wait_for(lambda: np.abs(arm_positions(sim) - held).max() > 0.05, 20)
    second = Motion()
    res = second.run(joint_goal([arm_positions(sim), NEUTRAL], speed=0.5))
    assert res.result and np.abs(arm_positions(sim) - NEUTRAL).max() < 0.0087
    assert motion.client.wait_for_result(rospy.Duration(5)) and not motion.client.get_result().result


def test_error_ids_of_requests_the_controller_cannot_carry_out(sim, motion):
    q0 = arm_positions(sim)
    # inconsistent message: nothing moves
    bad = joint_goal([q0, NEUTRAL])
    bad.trajectory.waypoints[1].joint_positions = NEUTRAL[:6]
    res = motion.run(bad)
    assert not res.result and res.errorId == "INVALID_TRAJECTORY_MESSAGE"
    assert res.last_successful_waypoint == MotionCommandResult.GENERAL_TRAJECTORY_FAILURE
    # interaction along a trajectory with a malformed interaction_params: refused before anything moves
    bad = InteractionControlCommand(interaction_control_active=True, K_impedance=[1300.0] * 5)
    res = motion.run(joint_goal([q0, NEUTRAL], interaction_control=True, interaction_params=bad))
    assert not res.result and res.errorId == "INVALID_TRAJECTORY_MESSAGE"
    assert np.abs(arm_positions(sim) - q0).max() < 0.005
    # a path through a self-collision
    fold = list(NEUTRAL)
    fold[3] = 3.0
    res = motion.run(joint_goal([q0, fold]))
    assert not res.result and res.errorId == "PLANNED_MOTION_COLLISION"
    # more distinct waypoints than the loop's trajectory (10 000 knots) can hold
    zigzag = [np.array(q0) + np.array([0.01 * (k % 2), 0, 0, 0, 0, 0, 0]) for k in range(5001)]
    res = motion.run(joint_goal(zigzag))
    assert not res.result and res.errorId == "FAILED_TO_PARAMETERIZE"
    assert np.abs(arm_positions(sim) - q0).max() < 1e-3
    # a goal tolerance the arm cannot settle into within the settling time
    from intera_motion_msgs.msg import TrackingOptions

    target = np.array(q0) + np.array([0, 0, 0, 0, 0, 0, 0.3])
    tight = TrackingOptions(goal_joint_tolerance=[1e-7], use_settling_time_at_goal=True, settling_time_at_goal=0.01)
    res = motion.run(joint_goal([q0, target], tracking_options=tight))
    assert not res.result and res.errorId == "FINAL_POSE_NOT_WITHIN_TOLERANCE" and res.last_successful_waypoint == 1
    # generate: planned, not run; the interpolated path on /motion/interpolated_path
    path = Latest("/motion/interpolated_path", InterpolatedPath)
    res = motion.run(joint_goal([arm_positions(sim), NEUTRAL], command="generate", path_interpolation_step=0.1))
    assert res.result and res.trajectory_analysis.planned_duration > 0.2
    p = path.wait(5)
    assert p.joint_names == ARM and len(p.interpolated_path) >= 3
    assert np.allclose(p.interpolated_path[-1].joint_positions, NEUTRAL, atol=1e-6)
    assert p.interpolated_path[-1].time == pytest.approx(res.trajectory_analysis.planned_duration)
    assert np.abs(arm_positions(sim) - target).max() < 0.01  # generate did not move the arm


def test_cancel_and_disable_mid_motion(sim, motion):
    state = Latest("/robot/state", RobotAssemblyState)
    en = publisher("/robot/set_super_enable", Bool)
    q0 = np.array(arm_positions(sim))
    far = q0 + np.array([0.8, 0, 0, 0, 0, 0, 0])
    # cancel (actionlib's cancel_goal): the arm stops short of the goal and the goal ends preempted
    motion.client.send_goal(joint_goal([q0, far], speed=0.1))
    assert wait_for(lambda: abs(arm_positions(sim)[0] - q0[0]) > 0.05, 20)
    motion.client.cancel_goal()
    assert motion.client.wait_for_result(rospy.Duration(10))
    assert motion.client.get_state() == actionlib.GoalStatus.PREEMPTED and not motion.client.get_result().result
    robot_sleep(sim, 0.5)
    assert abs(arm_positions(sim)[0] - far[0]) > 0.3
    motion.client.send_goal(joint_goal([arm_positions(sim), far], speed=0.1))
    assert wait_for(lambda: motion.client.get_state() == actionlib.GoalStatus.ACTIVE, 10)
    robot_sleep(sim, 0.5)
    en.publish(False)
    assert motion.client.wait_for_result(rospy.Duration(10))
    res = motion.client.get_result()
    assert not res.result and res.errorId == "CONTROLLER_NOT_FOLLOWING"
    # disabled: a new goal is refused the same way, without moving
    res = motion.run(joint_goal([arm_positions(sim), far]))
    assert not res.result and res.errorId == "CONTROLLER_NOT_FOLLOWING"
    assert wait_for(lambda: state.msg.enabled, 5, every=lambda: en.publish(True))
    state.close()


def test_a_cuff_squeeze_mid_motion_ends_it_with_zero_g_activated(sim, motion):
    press = publisher("/robot/sim/io/cuff", IOComponentCommand)
    q0 = np.array(arm_positions(sim))
    motion.client.send_goal(joint_goal([q0, q0 + np.array([0.8, 0, 0, 0, 0, 0, 0])], speed=0.1))
    assert wait_for(lambda: abs(arm_positions(sim)[0] - q0[0]) > 0.05, 20)
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [1]}}})))
    try:
        assert motion.client.wait_for_result(rospy.Duration(10))
        res = motion.client.get_result()
        assert not res.result and res.errorId == "ZERO_G_ACTIVATED_DURING_TRAJECTORY"
    finally:
        press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [0]}}})))


def test_a_request_refused_at_once_still_reaches_a_slow_simple_action_client(sim, motion):
    """SimpleActionClient drops transitions that arrive before send_goal() stored its goal handle; a client
    thread preempted right after publishing the goal (a loaded machine) must still get the refusal."""
    inner = motion.client.action_client
    publish_then_stall = inner.send_goal

    def slow_send_goal(*args, **kw):
        gh = publish_then_stall(*args, **kw)
        time.sleep(0.02)  # preempted before SimpleActionClient stores gh
        return gh

    inner.send_goal = slow_send_goal
    try:
        res = motion.run(cart_goal([tip_pose()], [arm_positions(sim)], tip="right_gripper_tip"), timeout=10.0)
    finally:
        inner.send_goal = publish_then_stall
    assert not res.result and res.errorId == "ENDPOINT_DOES_NOT_EXIST"


class SetpointLog:
    """Every gravity_compensation_torques message: the loop's arm setpoint at 100 Hz."""

    def __init__(self):
        self.q, self.v, self.t = [], [], []
        self.sub = rospy.Subscriber("/robot/limb/right/gravity_compensation_torques", SEAJointState, self._cb,
                                    queue_size=1000)

    def _cb(self, m):
        self.q.append(m.commanded_position)
        self.v.append(m.commanded_velocity)
        self.t.append(m.header.stamp.to_sec())

    def largest_velocity_step(self):
        """Largest change of any joint's setpoint velocity per 10 ms of robot time (the messages' stamps: a listener
        that fell behind under load publishes the newest state, a tick or two later), rad/s."""
        self.sub.unregister()
        dv = np.abs(np.diff(np.array(self.v), axis=0)).max(axis=1)
        ticks = np.maximum(np.round(np.diff(np.array(self.t)) / 0.01), 1.0)
        return float((dv / ticks).max())


def test_a_start_while_another_source_moves_the_arm_waits_for_rest_or_refuses(sim, motion):
    """A plan from a moving arm would leave the path it was checked on (or step the velocity): the controller
    waits for the setpoint to come to rest, and refuses if it does not within 2 s."""
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    ratio = publisher("/robot/limb/right/set_speed_ratio", Float64, latch=True)
    q0 = arm_positions(sim)
    log = SetpointLog()
    send_positions(cmd, q0 + [0, 0, 0, 0, 0.4, 0, 0])  # one command: tracked to its target (about 0.6 s)
    assert wait_for(lambda: log.v and max(map(abs, log.v[-1])) > 0.3, 5)
    target = q0 + [0.3, 0, 0, 0, 0.4, 0, 0]  # j4 where the position command takes it
    res = motion.run(joint_goal([q0, target]))
    assert res.result, res.errorId
    assert np.abs(arm_positions(sim) - target).max() < 0.0087
    # the position command finished first, then the motion ran from rest: no velocity step between
    assert log.largest_velocity_step() < 0.2  # 20 rad/s² over a 10 ms tick; a restart from rest would be ~100×
    # a source that keeps the arm moving: refused after REST_WAIT, and the arm goes on with that source
    ratio.publish(Float64(0.05))
    try:
        send_positions(cmd, target - [0, 0, 0, 0, 0.8, 0, 0])  # 0.8 rad at 0.17 rad/s: about 5 s
        assert wait_for(lambda: abs(arm_positions(sim)[4] - target[4]) > 0.02, 5)
        t0 = time.monotonic()
        res = motion.run(joint_goal([arm_positions(sim), q0]))
        assert not res.result and res.errorId == "CONTROLLER_NOT_FOLLOWING"
        assert time.monotonic() - t0 > 1.9  # (motion_node's REST_WAIT: 2 s of its clock, the wall's)
        assert "still moving" in motion.client.get_goal_status_text()
        assert wait_for(lambda: abs(arm_positions(sim)[4] - (target[4] - 0.8)) < 0.0087, 15)
    finally:
        ratio.publish(Float64(0.3))


def node_pid(name):
    """The pid of a node registered with this test's own master (never another session's)."""
    import xmlrpc.client

    import rosgraph

    uri = rosgraph.Master("/pytest").lookupNode(name)
    code, _, pid = xmlrpc.client.ServerProxy(uri).getPid("/pytest")
    assert code == 1
    return int(pid)


def test_killing_the_controller_mid_motion_holds_the_arm_and_it_serves_again(sim, motion):
    q0 = arm_positions(sim)
    far = q0 + np.array([1.0, 0, 0, 0, 0, 0, 0])
    motion.client.send_goal(joint_goal([q0, far], speed=0.2))
    assert wait_for(lambda: abs(arm_positions(sim)[0] - q0[0]) > 0.1, 20)
    os.kill(node_pid("/motion_controller"), signal.SIGKILL)
    killed = arm_positions(sim)

    def at_rest() -> bool:  # (still over 0.3 s of the robot's stamps)
        q, t = arm_positions(sim), sim.msg.header.stamp.to_sec()
        assert wait_for(lambda: sim.msg.header.stamp.to_sec() >= t + 0.3, 60)
        return np.abs(arm_positions(sim) - q).max() < 1e-4
    assert wait_for(at_rest, 120), "the arm never came to rest after the controller was killed"
    held = arm_positions(sim)
    # stopped by the listener's keep-alive watchdog: j0 (at most 0.2 x 1.74 rad/s) runs on for the keep-alive timeout
    # (control.trajectory_keepalive_timeout, 0.5 s of the listener's wall clock, and any stall of that process: 0.185
    # rad seen) and brakes on its path — far short of the goal 1 rad away
    assert abs(held[0] - far[0]) > 0.3, f"ran on {held[0] - killed[0]:.3f} rad after the controller was killed"
    again = Motion()  # respawned by the launch file
    res = again.run(joint_goal([arm_positions(sim), q0], speed=0.5))
    assert res.result and np.abs(arm_positions(sim) - q0).max() < 0.0087


FAST = [7.0, 5.0, 8.0, 8.0, 8.0, 8.0, 8.0]


def cart_goal(poses, biases, tip="right_hand", corner=0.0, **opt_kw):
    """As go_to_cartesian_pose.py builds it: CARTESIAN, speed ratio 1, the "fast" accelerations, header empty."""
    wps = []
    for (p, o), q in zip(poses, biases):
        ps = PoseStamped()
        ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = p
        ps.pose.orientation.x, ps.pose.orientation.y, ps.pose.orientation.z, ps.pose.orientation.w = o
        o = options(1.0, FAST, corner_distance=corner)
        for k, v in opt_kw.items():
            setattr(o, k, v)
        wps.append(Waypoint(joint_positions=list(q), active_endpoint=tip, pose=ps, options=o))
    opts = TrajectoryOptions(interpolation_type="CARTESIAN")
    return MotionCommandGoal(command="start", trajectory=Trajectory(label="default", joint_names=ARM, waypoints=wps,
                                                                    trajectory_options=opts))


def tip_pose(tip="right_hand"):
    from intera_core_msgs.msg import EndpointState

    m = rospy.wait_for_message(f"/robot/limb/right/endpoint_state", EndpointState, 5)
    p, o = m.pose.position, m.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def close_pose(a, b, pos_tol=0.002, rot_tol=0.01):
    (pa, qa), (pb, qb) = a, b
    return np.linalg.norm(pa - pb) < pos_tol and 2 * np.arccos(min(1.0, abs(float(np.dot(qa, qb))))) < rot_tol


def test_go_to_cartesian_pose_absolute_relative_and_from_joint_angles(sim, motion):
    import pinocchio as pin
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest
    from sensor_msgs.msg import JointState

    # -p 0.45 0.16 0.21 -o 0 1 0 0 -t right_hand: the current angles ride along as the nullspace bias
    goal = (np.array([0.45, 0.16, 0.21]), np.array([0.0, 1.0, 0.0, 0.0]))
    res = motion.run(cart_goal([goal], [arm_positions(sim)]))
    assert res.result and res.errorId == "" and res.last_successful_waypoint == 0
    robot_sleep(sim, 0.2)
    assert close_pose(tip_pose(), goal)
    # -R 0 0 0.05 0 0 0 -T: 5 cm along the tool's z from where it is, along a straight line
    p, o = tip_pose()
    R = pin.Quaternion(o[3], o[0], o[1], o[2]).toRotationMatrix()
    goal = (p + R @ np.array([0, 0, 0.05]), o)
    res = motion.run(cart_goal([goal], [arm_positions(sim)]))
    assert res.result
    robot_sleep(sim, 0.2)
    assert close_pose(tip_pose(), goal)
    # -q 0 -0.9 0 1.8 0 -0.9 0: the pose comes from the FK service, the angles are the bias
    q = [0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0]
    fk = rospy.ServiceProxy("/ExternalTools/right/PositionKinematicsNode/FKService", SolvePositionFK)
    out = fk(SolvePositionFKRequest(configuration=[JointState(name=ARM, position=q)], tip_names=["right_hand"]))
    fp, fo = out.pose_stamp[0].pose.position, out.pose_stamp[0].pose.orientation
    goal = (np.array([fp.x, fp.y, fp.z]), np.array([fo.x, fo.y, fo.z, fo.w]))
    res = motion.run(cart_goal([goal], [q]))
    assert res.result
    robot_sleep(sim, 0.2)
    assert close_pose(tip_pose(), goal)  # along a straight line: the joints stay on the branch they started on


def test_cartesian_random_trajectory_and_its_error_ids(sim, motion):
    from intera_core_msgs.msg import JointLimits
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest
    from sensor_msgs.msg import JointState

    # send_random_trajectory.py -t CARTESIAN: joint random walk, every waypoint FK'd into a pose (waypoint 0 = here)
    lim = Latest("/robot/joint_limits", JointLimits).wait(5)
    q0 = arm_positions(sim)
    walk = [q0] + random_walk(q0, lim.position_lower[:7], lim.position_upper[:7], n=3, seed=7, dist=0.02)
    fk = rospy.ServiceProxy("/ExternalTools/right/PositionKinematicsNode/FKService", SolvePositionFK)
    poses = []
    for q in walk:
        out = fk(SolvePositionFKRequest(configuration=[JointState(name=ARM, position=list(q))],
                                        tip_names=["right_hand"]))
        fp, fo = out.pose_stamp[0].pose.position, out.pose_stamp[0].pose.orientation
        poses.append((np.array([fp.x, fp.y, fp.z]), np.array([fo.x, fo.y, fo.z, fo.w])))
    res = motion.run(cart_goal(poses, walk))
    assert res.result and res.last_successful_waypoint == 3, res.errorId
    robot_sleep(sim, 0.2)
    assert close_pose(tip_pose(), poses[-1])
    here = tip_pose()
    # an endpoint the model does not have
    res = motion.run(cart_goal([here], [arm_positions(sim)], tip="right_gripper_tip"))
    assert not res.result and res.errorId == "ENDPOINT_DOES_NOT_EXIST"
    # out of reach
    res = motion.run(cart_goal([(here[0] + [1.5, 0, 0], here[1])], [arm_positions(sim)]))
    assert not res.result and res.errorId == "CARTESIAN_INTERPOLATION_FAILED"
    # Cartesian speeds the joints cannot follow
    res = motion.run(cart_goal([(here[0] + [0, -0.3, 0], here[1])], [arm_positions(sim)], max_linear_speed=20.0,
                               max_linear_accel=200.0))
    assert not res.result and res.errorId == "PLANNED_JOINT_ACCEL_LIMIT"
    assert close_pose(tip_pose(), here)  # none of them moved the arm
