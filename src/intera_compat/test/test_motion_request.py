"""Motion requests: every inconsistency refused with INVALID_TRAJECTORY_MESSAGE naming the field; zeros = defaults."""
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.model.robot_model import RobotModel
from intera_compat.motion import errors as E
from intera_compat.motion.errors import MotionError
from intera_compat.motion.request import (DEFAULT_GOAL_TOLERANCE, DEFAULT_LINEAR_SPEED, DEFAULT_SETTLING_TIME,
                                          DEFAULT_SPEED_RATIO, TrajectoryRequest, WaypointRequest, validate)

CFG = load_config()
RM = RobotModel(CFG)
ARM = list(CFG.joint_names)
ACC = CFG.limits.accel[:7]
Q0 = CFG.full_pose("neutral")


def check(req):
    return validate(req, ARM, ACC, CFG.tips, RM.has_frame, lambda f: RM.fk(Q0, f))


def joint_wp(q=(0, -0.9, 0, 1.8, 0, -0.9, 0), **kw):
    return WaypointRequest(joint_positions=list(q), **kw)


def cart_wp(p=(0.45, 0.16, 0.21), o=(0, 1, 0, 0), **kw):
    return WaypointRequest(position=p, orientation=o, **kw)


def refused(req, words, error=E.INVALID_TRAJECTORY_MESSAGE):
    with pytest.raises(MotionError) as e:
        check(req)
    assert e.value.error_id == error and words in e.value.detail, e.value.detail


def test_sdk_joint_request_gets_the_defaults_for_every_zero():
    m = check(TrajectoryRequest("default", ARM, [joint_wp(max_joint_speed_ratio=0.3, max_joint_accel=[7, 5, 8, 8, 8,
                                                                                                           8, 8])]))
    w = m.waypoints[0]
    assert m.interpolation == "JOINT" and m.tip == "right_hand" and w.speed_ratio == 0.3
    assert w.accel.tolist() == [7, 5, 8, 8, 8, 8, 8] and np.allclose(w.tolerance, DEFAULT_GOAL_TOLERANCE)
    assert m.min_time_rate == m.max_time_rate == 1.0 and m.settling_time == DEFAULT_SETTLING_TIME
    assert np.allclose(m.goal_tolerance, DEFAULT_GOAL_TOLERANCE) and m.path_interpolation_step == 0.0
    w = check(TrajectoryRequest(waypoints=[joint_wp()])).waypoints[0]  # hand-built: nothing set at all
    assert w.speed_ratio == DEFAULT_SPEED_RATIO and np.allclose(w.accel, ACC) and w.linear_speed == DEFAULT_LINEAR_SPEED


def test_joint_names_in_any_order_are_mapped_to_the_limb_order():
    q = np.arange(7) * 0.1
    perm = [3, 0, 6, 1, 5, 2, 4]
    m = check(TrajectoryRequest(joint_names=[ARM[i] for i in perm], waypoints=[joint_wp(q[perm])]))
    assert np.allclose(m.waypoints[0].q, q)


@pytest.mark.parametrize("req, words", [
    (TrajectoryRequest(joint_names=ARM), "waypoints is empty"),
    (TrajectoryRequest(joint_names=ARM[:6], waypoints=[joint_wp()]), "missing right_j6"),
    (TrajectoryRequest(joint_names=ARM[:6] + ["elbow"], waypoints=[joint_wp()]), "'elbow'"),
    (TrajectoryRequest(joint_names=ARM[:6] + ["right_j0"], waypoints=[joint_wp()]), "twice"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp(), joint_wp((0,) * 6)]), "waypoints[1].joint_positions has 6"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp((0, 0, float("nan"), 0, 0, 0, 0))]),
     "waypoints[0].joint_positions[2] is nan"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[cart_wp()]), "waypoints[0].joint_positions is empty"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp()], interpolation_type="SPLINE"), "'SPLINE'"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp(active_endpoint="right_hand"),
                                                   joint_wp(active_endpoint="right_l6")]), "different active_endpoints"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[cart_wp(o=(0, 0, 0, 0))], interpolation_type="CARTESIAN"),
     "zero quaternion"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[cart_wp(p=(0.4, float("inf"), 0.2))], interpolation_type="CARTESIAN"),
     "waypoints[0].pose.pose.position has a non-finite value (y = inf)"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[cart_wp(frame_id="elbow")], interpolation_type="CARTESIAN"),
     "frame_id 'elbow'"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp(max_joint_speed_ratio=-0.5)]), "max_joint_speed_ratio is -0.5"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp(max_joint_accel=[1, 2])]), "max_joint_accel has 2 values"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp(corner_distance=float("nan"))]), "corner_distance is nan"),
    (TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp()], use_min_time_rate=True, min_time_rate=0.8,
                       use_max_time_rate=True, max_time_rate=0.5), "min_time_rate 0.8 > max_time_rate 0.5"),
])
def test_inconsistent_requests_are_refused_naming_the_field(req, words):
    refused(req, words)


def test_cartesian_poses_normalised_and_in_robot_frames():
    m = check(TrajectoryRequest(joint_names=ARM, interpolation_type="CARTESIAN",
                                waypoints=[cart_wp(o=(0, 2, 0, 0)), cart_wp(p=(0, 0, 0.1), o=(0, 0, 0, 1),
                                                                            frame_id="right_hand")]))
    assert np.allclose(m.waypoints[0].pose.rotation, np.diag([-1, 1, -1]), atol=1e-12)
    assert m.warnings and "norm was 2" in m.warnings[0]
    hand = RM.fk(Q0, "right_hand")
    assert np.allclose(m.waypoints[1].pose.translation, hand.act(np.array([0, 0, 0.1])))
    assert m.waypoints[0].q is None  # no joint angles: no bias


def test_unknown_cartesian_endpoint():
    refused(TrajectoryRequest(joint_names=ARM, interpolation_type="CARTESIAN",
                              waypoints=[cart_wp(active_endpoint="right_gripper_tip")]), "right_gripper_tip",
            E.ENDPOINT_DOES_NOT_EXIST)


def test_tracking_options_and_clamps():
    m = check(TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp(max_joint_speed_ratio=3.0,
                                                                     max_joint_accel=[100] * 7, corner_distance=2.0)],
                                use_min_time_rate=True, min_time_rate=0.25, use_max_time_rate=True, max_time_rate=4.0,
                                goal_joint_tolerance=[0.02], use_settling_time_at_goal=True,
                                settling_time_at_goal=2.5))
    w = m.waypoints[0]
    assert w.speed_ratio == 1.0 and np.allclose(w.accel, ACC) and w.corner_distance == 0.5
    assert (m.min_time_rate, m.max_time_rate, m.settling_time) == (0.25, 1.0, 2.5)
    assert np.allclose(m.goal_tolerance, 0.02) and len(m.warnings) == 3
    m = check(TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp()], path_interpolation_step=1e-9))
    assert m.path_interpolation_step == 0.001 and "path_interpolation_step" in m.warnings[0]


def test_interpolated_path_points_are_capped():
    from intera_compat.config import load_config
    from intera_compat.motion.planner import MAX_PATH_POINTS, MotionPlanner

    planner = MotionPlanner(load_config(None))
    q0 = np.array([0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0])
    m = check(TrajectoryRequest(joint_names=ARM, waypoints=[joint_wp(q0), joint_wp(q0 + 1.0,
                                                                                   max_joint_speed_ratio=0.05)]))
    plan = planner.plan(m, np.r_[q0, 0.0], check_collision=False)  # the arm and the head
    assert plan.duration > 15.0  # > MAX_PATH_POINTS ms
    path = planner.interpolated_path(plan, 0.001)
    assert len(path) <= MAX_PATH_POINTS + 1 and path[-1].t == pytest.approx(plan.duration)
    assert np.allclose(path[-1].q, q0 + 1.0)


def test_a_six_axis_arm_takes_the_sdks_seven_value_presets_and_refuses_other_lengths():
    """MotionWaypointOptions always sends Sawyer's 7-value acceleration presets: on a 6-axis arm the first six
    apply; any other wrong length is still refused."""
    six = ARM[:6]

    def check6(**kw):
        req = TrajectoryRequest(joint_names=six, waypoints=[joint_wp(q=(0, -0.9, 0, 1.8, 0, -0.9), **kw)])
        return validate(req, six, ACC[:6], CFG.tips, RM.has_frame)

    assert check6(max_joint_accel=[7, 5, 8, 8, 8, 8, 8]).waypoints[0].accel.tolist() == [7, 5, 8, 8, 8, 8]
    assert check6(joint_tolerances=[0.05] * 7).waypoints[0].tolerance.tolist() == [0.05] * 6
    with pytest.raises(MotionError, match="has 8 values"):
        check6(max_joint_accel=[1.0] * 8)
    with pytest.raises(MotionError, match="has 5 values"):
        check6(max_joint_accel=[1.0] * 5)
