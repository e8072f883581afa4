"""send_urdf_fragment.py's shape against the simulated Sawyer: a gripper fragment published at 5 Hz with one time;
its links become tips of tip_states, the FK and IK services and the motion controller's Cartesian motions; a
fragment that cannot be attached is refused and changes nothing."""
import time

import numpy as np
import pytest
import rospy
from intera_core_msgs.msg import EndpointStates, URDFConfiguration
from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest, SolvePositionIK, SolvePositionIKRequest
from ros_helpers import ARM, Latest, arm_positions, publisher, service, wait_for
from sensor_msgs.msg import JointState
from test_motion_node import Motion, cart_goal
from test_urdf_fragment import GRIPPER

pytestmark = pytest.mark.node
NS = "/ExternalTools/right/PositionKinematicsNode"


def send_fragment(link, joint, urdf, duration=2.0):
    """send_urdf_fragment.py: the same message (one time) at 5 Hz for ``duration`` s."""
    pub = publisher("/robot/urdf", URDFConfiguration)
    msg = URDFConfiguration(time=rospy.Time.now(), link=link, joint=joint, urdf=urdf)
    end = time.time() + duration
    while time.time() < end:
        pub.publish(msg)
        time.sleep(0.2)


def fk(js, tip):
    req = SolvePositionFKRequest(configuration=[JointState(name=ARM, position=list(arm_positions(js)))],
                                 tip_names=[tip])
    res = service(f"{NS}/FKService", SolvePositionFK)(req)
    return res.isValid[0], res.pose_stamp[0]


def test_a_fragments_links_become_tips_everywhere(sim_shared):
    js = sim_shared  # (sawyer_sim.launch without its cameras: nothing here looks)
    tips = Latest("/robot/limb/right/tip_states", EndpointStates)
    assert "right_gripper_tip" not in tips.wait(10).names and not fk(js, "right_gripper_tip")[0]
    send_fragment("right_palm", "right_gripper_base", GRIPPER)  # no such link: refused, nothing changes
    assert not fk(js, "right_gripper_tip")[0] and "right_gripper_tip" not in tips.msg.names
    send_fragment("right_hand", "right_gripper_base", GRIPPER)
    assert wait_for(lambda: "right_gripper_tip" in tips.msg.names, 10)
    hand = tips.msg.states[tips.msg.names.index("right_hand")].pose
    tip = tips.msg.states[tips.msg.names.index("right_gripper_tip")].pose
    d = np.array([tip.position.x - hand.position.x, tip.position.y - hand.position.y, tip.position.z - hand.position.z])
    assert np.linalg.norm(d) == pytest.approx(0.12, abs=1e-3)  # 2 cm + 10 cm out of the hand
    valid, ps = fk(js, "right_gripper_tip")
    assert valid and ps.pose.position.z == pytest.approx(tip.position.z, abs=2e-3)
    # IK for the new tip: 3 cm higher than it is
    ps.pose.position.z += 0.03
    req = SolvePositionIKRequest(pose_stamp=[ps], tip_names=["right_gripper_tip"])
    res = rospy.ServiceProxy(f"{NS}/IKService", SolvePositionIK)(req)
    assert res.result_type[0] > 0 and len(res.joints[0].position) == 7
    # go_to_cartesian_pose.py -t right_gripper_tip: the new tip goes there
    target = np.array([ps.pose.position.x, ps.pose.position.y, ps.pose.position.z])
    o = ps.pose.orientation
    here = list(arm_positions(js))
    res = Motion().run(cart_goal([(target, (o.x, o.y, o.z, o.w))] * 1, [here], tip="right_gripper_tip"))
    assert res.result, res.errorId
    assert wait_for(lambda: abs(tips.msg.states[tips.msg.names.index("right_gripper_tip")].pose.position.z
                                - target[2]) < 0.003, 5)
    tips.close()
