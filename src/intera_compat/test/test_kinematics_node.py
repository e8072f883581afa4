"""FK/IK services as intera_interface.Limb and ik_service_client.py call them."""
import numpy as np
import pytest
import rospy
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion
from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest, SolvePositionIK, SolvePositionIKRequest
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from ros_helpers import service

pytestmark = pytest.mark.node
NS = "/ExternalTools/right/PositionKinematicsNode"
ARM = [f"right_j{i}" for i in range(7)]
NEUTRAL = [0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161]


@pytest.fixture(scope="module")
def services(module_launch):
    """One kinematics_server for the module (its services keep no state between calls)."""
    module_launch("rosrun", "intera_compat", "kinematics_server", log_name="kin.log")
    return service(f"{NS}/FKService", SolvePositionFK), service(f"{NS}/IKService", SolvePositionIK)


def fk_pose(fk, positions, names=ARM, tip="right_hand"):
    req = SolvePositionFKRequest()
    req.configuration.append(JointState(name=list(names), position=list(positions)))
    req.tip_names.append(tip)
    return fk(req)


def sdk_ik_request(pose, tip="right_hand"):
    """Shaped exactly like Limb.ik_request (frame base, default seed mode)."""
    req = SolvePositionIKRequest()
    req.pose_stamp.append(PoseStamped(header=Header(stamp=rospy.Time.now(), frame_id="base"), pose=pose))
    req.tip_names.append(tip)
    return req


def test_fk_matches_model_and_fills_every_field(services):
    fk, _ = services
    # names in arbitrary order
    res = fk_pose(fk, list(reversed(NEUTRAL)), names=list(reversed(ARM)))
    assert res.isValid == [True] and res.inCollision == [False]
    p = res.pose_stamp[0].pose.position
    assert (p.x, p.y, p.z) == pytest.approx((0.4496, 0.1603, 0.2158), abs=1e-3)
    assert res.pose_stamp[0].header.frame_id == "base"


def test_fk_collision_flag_and_unknown_tip(services):
    fk, _ = services
    assert fk_pose(fk, [0.0, 2.0, 0.0, 2.5, 0.0, 0.0, 0.0]).inCollision == [True]
    bad = fk_pose(fk, NEUTRAL, tip="nope")
    assert bad.isValid == [False] and len(bad.pose_stamp) == 1 and bad.inCollision == [False]


def test_limb_style_ik_request_succeeds(services):
    fk, ik = services
    q = np.array(NEUTRAL) + [0.2, 0.1, -0.1, -0.2, 0.1, 0.2, 0.1]
    pose = fk_pose(fk, q).pose_stamp[0].pose
    res = ik(sdk_ik_request(pose))
    assert res.result_type[0] > 0
    sol = dict(zip(res.joints[0].name, res.joints[0].position))
    back = fk_pose(fk, [sol[n] for n in ARM]).pose_stamp[0].pose.position
    assert (back.x, back.y, back.z) == pytest.approx((pose.position.x, pose.position.y, pose.position.z), abs=1e-4)


def test_advanced_request_seed_user_with_nullspace(services):
    """ik_service_client.py's advanced request: SEED_USER + nullspace goal on right_j1..j3, gain 0.4."""
    _, ik = services
    pose = Pose(position=Point(0.450628752997, 0.161615832271, 0.217447307078),
                orientation=Quaternion(0.704020578925, 0.710172716916, 0.00244101361829, 0.00194372088834))
    req = sdk_ik_request(pose)
    req.seed_mode = req.SEED_USER
    req.seed_angles.append(JointState(name=ARM, position=[0.7, 0.4, -1.7, 1.4, -1.1, -1.6, -0.4]))
    req.use_nullspace_goal.append(True)
    req.nullspace_goal.append(JointState(name=["right_j1", "right_j2", "right_j3"], position=[0.5, -0.5, 0.5]))
    req.nullspace_gain.append(0.4)
    res = ik(req)
    assert res.result_type[0] == req.SEED_USER
    assert res.joints[0].name == ARM


def test_seed_modes_report_their_seed(services):
    fk, ik = services
    pose = fk_pose(fk, np.array(NEUTRAL) + 0.05).pose_stamp[0].pose
    req = sdk_ik_request(pose)
    req.seed_mode = req.SEED_CURRENT
    assert ik(req).result_type[0] == req.SEED_CURRENT
    req.seed_mode = req.SEED_NS_MAP
    assert ik(req).result_type[0] == req.SEED_NS_MAP
    req.seed_mode = req.SEED_AUTO
    req.seed_angles.append(JointState(name=ARM, position=NEUTRAL))
    assert ik(req).result_type[0] == req.SEED_USER


def test_unknown_tip_and_malformed_entries(services):
    fk, ik = services
    pose = fk_pose(fk, NEUTRAL).pose_stamp[0].pose
    req = sdk_ik_request(pose, tip="no_such_tip")
    assert list(ik(req).result_type) == [-3]
    bad_q = sdk_ik_request(Pose(position=Point(0.5, 0, 0.3), orientation=Quaternion(0, 0, 0, 0)))
    assert list(ik(bad_q).result_type) == [-1]
    nan = sdk_ik_request(Pose(position=Point(float("nan"), 0, 0.3), orientation=Quaternion(0, 1, 0, 0)))
    assert list(ik(nan).result_type) == [-1]
    seed_mismatch = sdk_ik_request(pose)
    seed_mismatch.seed_angles.append(JointState(name=ARM, position=[0.0]))
    assert list(ik(seed_mismatch).result_type) == [-1]
    # several entries in one request each get an answer, and the service survives all of the above
    multi = sdk_ik_request(pose)
    multi.pose_stamp.append(multi.pose_stamp[0])
    multi.tip_names.append("right_hand")
    assert all(r > 0 for r in ik(multi).result_type)


def test_in_collision_result(services):
    fk, ik = services
    pose = fk_pose(fk, [0.0, 2.0, 0.0, 2.5, 0.0, 0.0, 0.0]).pose_stamp[0].pose
    req = sdk_ik_request(pose)
    req.seed_mode = req.SEED_USER
    req.seed_angles.append(JointState(name=ARM, position=[0.0, 2.0, 0.0, 2.5, 0.0, 0.0, 0.0]))
    assert list(ik(req).result_type) == [-2]
