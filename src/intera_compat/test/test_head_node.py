"""The head on the simulated Sawyer, as intera_interface's Head and HeadDisplay use it (head_wobbler.py,
head_display_image.py): head_state within 5 s, set_pan's 100 Hz re-sends until within 0.1 rad (up to head_wobbler's
0.95, past the joint's limit), a bad command refused with the head holding, active cancellation checked through TF
base → head as the SDK does, and the display's image on the screen topic."""
import math

import numpy as np
import pytest
import rospy
from intera_core_msgs.msg import HeadPanCommand, HeadState, JointCommand
from ros_helpers import ARM, Latest, arm_positions, publisher, send_positions, wait_for
from sensor_msgs.msg import Image
from shared_robot import HEAD_KEYS, LoopCounters, delta, shared_launch

pytestmark = pytest.mark.node
HEAD_UPPER = 0.9064
# one launch of the simulated Sawyer (without its cameras) for the module; each test begins with the robot reset,
# enabled, the arm back where it started and the head at 0 in active mode
shared = shared_launch("head_sim")


@pytest.fixture
def head(shared):
    """(joint_states, head_state, command_head_pan publisher) of the simulated Sawyer, enabled."""
    js = shared.up("sawyer_sim.launch", "no_rt:=true", "cameras:=false")
    shared.home()
    state = Latest("/robot/head/head_state", HeadState)
    assert state.wait(5.0)  # Head(): one within 5 s
    pub = publisher("/robot/head/command_head_pan", HeadPanCommand)
    if not js.fresh:
        zero = HeadPanCommand(target=0.0, speed_ratio=1.0, pan_mode=HeadPanCommand.SET_ACTIVE_MODE)
        assert wait_for(lambda: abs(state.msg.pan) < 1e-3 and not state.msg.isTurning
                        and state.msg.panMode == HeadState.ACTIVE_MODE, 60, every=lambda: pub.publish(zero))
    yield js, state, pub
    state.close()


def set_pan(state, pub, target, mode=HeadPanCommand.SET_ACTIVE_MODE, speed=1.0, timeout=10.0):
    """Head.set_pan: re-sent at 100 Hz until within 0.1 rad (HEAD_PAN_ANGLE_TOLERANCE) or ``timeout``."""
    cmd = HeadPanCommand(target=target, speed_ratio=speed, pan_mode=mode)
    return wait_for(lambda: abs(state.msg.pan - target) < 0.1, timeout, every=lambda: pub.publish(cmd))


def head_pan(js):
    return js.msg.position[js.msg.name.index("head_pan")]


def test_the_head_turns_to_set_pan_targets_and_refuses_a_bad_one(head):
    js, state, pub = head
    for target in (0.6, -1.2, 0.95):  # (head_wobbler draws up to 0.95: the limit is 0.9064, within 0.1)
        assert set_pan(state, pub, target, timeout=60)
    assert wait_for(lambda: not state.msg.isTurning, 60)
    assert state.msg.pan == pytest.approx(HEAD_UPPER, abs=1e-3) and head_pan(js) == pytest.approx(HEAD_UPPER, abs=1e-3)
    assert state.msg.panMode == HeadState.ACTIVE_MODE and not state.msg.isBlocked
    assert set_pan(state, pub, -0.4, speed=0.2, timeout=60)
    moving = Latest("/robot/head/head_state", HeadState)
    pub.publish(HeadPanCommand(target=0.5, speed_ratio=0.3, pan_mode=HeadPanCommand.NO_MODE_CHANGE))
    assert wait_for(lambda: moving.msg is not None and moving.msg.isTurning, 60)
    moving.close()
    assert wait_for(lambda: abs(state.msg.pan - 0.5) < 1e-3 and not state.msg.isTurning, 60)
    # bad ones: they arrive (the head's own diagnostics status counts them), each is refused, the head holds
    bad = (HeadPanCommand(target=float("nan"), speed_ratio=1.0, pan_mode=1),
           HeadPanCommand(target=-1.0, speed_ratio=2.0, pan_mode=1),
           HeadPanCommand(target=-1.0, speed_ratio=1.0, pan_mode=9))
    counts = LoopCounters(HEAD_KEYS)
    before = counts.next()

    def send():
        for m in bad:
            pub.publish(m)
    after = counts.until(lambda c: delta(c, before, "received", "head_commands") >= 60, every=send, period=0.01)
    counts.close()
    assert delta(after, before, "refused", "head_commands") == delta(after, before, "received", "head_commands")
    assert delta(after, before, "posted", "head_commands") == 0
    assert state.msg.pan == pytest.approx(0.5, abs=1e-3) and not state.msg.isTurning  # held


def test_active_cancellation_holds_the_heads_yaw_in_base_while_the_arm_turns(head):
    import tf2_ros
    js, state, pub = head
    tf = tf2_ros.Buffer()
    listener = tf2_ros.TransformListener(tf)

    def yaw():  # what Head.set_pan(active_cancellation=True) checks
        r = tf.lookup_transform("base", "head", rospy.Time(0), rospy.Duration(1.0)).transform.rotation
        return math.atan2(2 * (r.w * r.z + r.x * r.y), 1 - 2 * (r.y * r.y + r.z * r.z))

    target = 0.2
    cancel = HeadPanCommand(target=target, speed_ratio=1.0, pan_mode=HeadPanCommand.SET_ACTIVE_CANCELLATION_MODE)
    assert wait_for(lambda: abs(yaw() - target) < 0.1, 60, every=lambda: pub.publish(cancel))
    assert state.msg.panMode == HeadState.ACTIVE_CANCELLATION_MODE
    limb = publisher("/robot/limb/right/joint_command", JointCommand)
    q = arm_positions(js)
    q[0] += 0.6
    send_positions(limb, q)  # j0 turns 0.6 rad: the head turns back against it
    assert wait_for(lambda: abs(arm_positions(js)[0] - q[0]) < 0.01, 60)
    assert wait_for(lambda: abs(yaw() - target) < 0.01 and not state.msg.isTurning, 60)
    assert head_pan(js) == pytest.approx(target - arm_positions(js)[0], abs=0.01)
    listener.unregister()


def test_the_display_shows_a_head_display_image_on_the_screen(head):
    screen = Latest("/robot/head_display/screen", Image)

    def shown():
        return np.frombuffer(screen.msg.data, np.uint8).reshape(600, 1024, 3)

    # the screen is on from the start (latched; no test before this one shows an image): dark, a red band
    screen.wait(10)
    assert shown()[0, 0].max() < 60 and tuple(shown()[300, 512]) == (30, 30, 200)
    img = np.zeros((600, 1024, 3), np.uint8)
    img[:, :, 1] = 255  # green (bgr8, as HeadDisplay sends what cv_bridge made of a file)
    pub = publisher("/robot/head_display", Image, latch=True)
    pub.publish(Image(height=600, width=1024, encoding="bgr8", step=1024 * 3, data=img.tobytes()))
    assert wait_for(lambda: (shown()[..., 1] == 255).all(), 60)
    assert shown()[..., [0, 2]].sum() == 0
    screen.close()
    pub.unregister()


def test_arm_commands_never_move_the_head(head):
    js, state, _ = head
    pan = head_pan(js)
    limb = publisher("/robot/limb/right/joint_command", JointCommand)
    wrong = JointCommand(mode=JointCommand.POSITION_MODE, names=ARM + ["head_pan"],
                         position=list(arm_positions(js)) + [pan + 0.5])  # refused: head_pan is no limb joint
    loop = LoopCounters()
    before = loop.next()
    loop.until(lambda c: delta(c, before, "received") >= 5, every=lambda: limb.publish(wrong), period=0.05)
    after = loop.next()  # (a status the loop wrote after: anything posted by then is counted)
    loop.close()
    assert delta(after, before, "applied") == 0  # they arrived, none was applied ...
    assert head_pan(js) == pytest.approx(pan, abs=1e-3)  # ... and the head did not move
