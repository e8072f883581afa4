"""URDF fragments merged into the robot's model (no ROS): attached by a root link or a root joint, replaced,
removed, refused by name when they cannot be attached; the new links are frames at the right place, the arm's joints
unchanged."""
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.model.robot_model import RobotModel
from intera_compat.model.urdf_fragment import Fragments

CFG = load_config()
GRIPPER = """<robot name="example_end_effector">
  <link name="right_gripper_base"><visual><geometry><mesh filename="package://nowhere/base.stl"/></geometry></visual>
    <inertial><mass value="0.3"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="right_gripper"/>
  <link name="right_gripper_tip"/>
  <link name="right_gripper_l_finger"/>
  <joint name="right_gripper_base_joint" type="fixed"><parent link="right_gripper_base"/><child link="right_gripper"/>
    <origin xyz="0 0 0.02" rpy="0 0 0"/></joint>
  <joint name="right_endpoint" type="fixed"><parent link="right_gripper"/><child link="right_gripper_tip"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/></joint>
  <joint name="right_gripper_l_finger_joint" type="prismatic"><parent link="right_gripper"/>
    <child link="right_gripper_l_finger"/><axis xyz="0 1 0"/><limit lower="0" upper="0.02" effort="20" velocity="1"/>
  </joint>
</robot>"""


def test_a_fragment_by_its_root_link_adds_its_links_as_frames_at_their_place():
    f = Fragments(CFG.urdf_xml())
    assert f.apply("right_hand", "right_gripper_base", GRIPPER)
    assert not f.apply("right_hand", "right_gripper_base", GRIPPER)  # (re-sent at 5 Hz: nothing new)
    rm = RobotModel(CFG, urdf=f.merged())
    assert rm.model.nq == len(CFG.all_joints)  # the finger's joint is fixed: the arm's joints only
    q = CFG.full_pose("neutral")
    hand, tip = rm.fk(q, "right_hand"), rm.fk(q, "right_gripper_tip")
    assert np.allclose(hand.actInv(tip).translation, [0, 0, 0.12]) and rm.has_frame("right_gripper_l_finger")
    assert f.links() == ["right_gripper_base", "right_gripper", "right_gripper_tip", "right_gripper_l_finger"]


def test_a_fragment_by_its_root_joint_replaced_and_removed():
    frag = """<robot name="t"><link name="probe"/><joint name="probe_mount" type="fixed"><parent link="right_hand"/>
      <child link="probe"/><origin xyz="0.05 0 0"/></joint></robot>"""
    f = Fragments(CFG.urdf_xml())
    assert f.apply("right_hand", "probe_mount", frag)
    q = CFG.full_pose("neutral")
    rm = RobotModel(CFG, urdf=f.merged())
    assert np.allclose(rm.fk(q, "right_hand").actInv(rm.fk(q, "probe")).translation, [0.05, 0, 0])
    assert f.apply("right_hand", "probe_mount", frag.replace("0.05 0 0", "0.08 0 0"))  # replaced
    rm = RobotModel(CFG, urdf=f.merged())
    assert np.allclose(rm.fk(q, "right_hand").actInv(rm.fk(q, "probe")).translation, [0.08, 0, 0])
    assert f.apply("right_hand", "probe_mount", "")  # removed
    assert not RobotModel(CFG, urdf=f.merged()).has_frame("probe") and f.links() == []


@pytest.mark.parametrize("link, joint, urdf, words", [
    ("right_palm", "right_gripper_base", GRIPPER, "link 'right_palm' is not a link of the robot"),
    ("right_hand", "nowhere", GRIPPER, "joint 'nowhere' is neither"),
    ("right_hand", "right_gripper", GRIPPER, "joint 'right_gripper' is neither"),  # (not a root link)
    ("right_hand", "x", "<robot><link name='right_l6'/></robot>", "links of the robot already"),
    ("right_hand", "x", "<robot", "not XML"),
    ("right_hand", "x", "<model/>", "not <robot>"),
    ("right_hand", "m", "<robot><link name='p'/><joint name='m' type='fixed'><parent link='right_l5'/>"
                        "<child link='p'/></joint></robot>", "parent is 'right_l5'"),
])
def test_a_fragment_that_cannot_be_attached_is_refused_by_name(link, joint, urdf, words):
    f = Fragments(CFG.urdf_xml())
    with pytest.raises(ValueError, match=words):
        f.apply(link, joint, urdf)
    assert f.attached == {}
