"""The cameras as intera_interface's Cameras and camera_display.py use them: the node config's camera plugin, each
camera's device, exposure and gain set and acknowledged, streaming one camera at a time, images of the configured
size and encoding on image_rect_color (head, bgr8) / image_rect (hand, mono8) and image_raw, rendered from the
simulated world (the head camera's view turns with the head)."""
import json

import numpy as np
import pytest
import rospy
from intera_core_msgs.msg import HeadPanCommand, HeadState, IONodeConfiguration
from ros_helpers import IOClient, Latest, publisher, wait_for
from sensor_msgs.msg import Image

pytestmark = pytest.mark.node
CAM = "/io/internal_camera"


def status(state, name):
    return next(x for x in state.signals if x.name == name).status.tag


def frame(img):
    ch = 3 if img.encoding == "bgr8" else 1
    return np.frombuffer(img.data, np.uint8).reshape(img.height, img.width, ch).astype(float)


class Recorder:
    """The stamps of every image on ``topic`` while open (``msgs``)."""

    def __init__(self, topic):
        self.msgs = []
        self.sub = rospy.Subscriber(topic, Image, self.msgs.append, queue_size=100, buff_size=2 ** 26)

    def close(self):
        self.sub.unregister()


def test_camera_display_streams_the_head_camera_then_the_hand_camera(sim):
    assert set(rospy.get_param("/robot_config/camera_config")) == {"head_camera", "right_hand_camera"}
    node = Latest(f"{CAM}/config", IONodeConfiguration)
    cams = {c["name"]: c for p in node.wait(20).plugins for c in json.loads(p.config)["params"]["cameras"]}
    assert set(cams) == {"head_camera", "right_hand_camera"}  # Cameras(): _get_camera_launch_config
    head, hand = IOClient("internal_camera", "head_camera", 20), IOClient("internal_camera", "right_hand_camera", 20)
    assert head.set("set_exposure", 50.0, "float") == "" and head.get("set_exposure") == 50.0  # -x 50
    assert head.set("set_gain", 10, "int") == "" and head.get("set_gain") == 10  # -g 10
    assert "must lie in" in hand.set("set_gain", 300, "int")  # (a Cognex: 0..255) ...
    assert status(hand.state.msg, "set_gain") == "error"  # ... which Cameras.set_gain reads as a failure
    assert hand.set("set_gain", 100, "int") == "" and status(hand.state.msg, "set_gain") == "ready"
    assert "auto" in head.set("set_exposure", -0.5, "float") and head.get("set_exposure") == 50.0
    color = Latest(f"{CAM}/head_camera/image_rect_color", Image)
    raw = Latest(f"{CAM}/head_camera/image_raw", Image)
    assert head.set("camera_streaming", True, "bool") == "" and head.get("camera_streaming") is True
    img = color.wait(20)
    assert (img.encoding, img.width, img.height) == ("bgr8", 960, 600) and raw.wait(5).encoding == "bgr8"
    before = frame(img)
    assert before.std() > 5.0  # a scene, not a blank
    n = color.count
    assert wait_for(lambda: color.count >= n + 10, 120)  # streaming
    pan = publisher("/robot/head/command_head_pan", HeadPanCommand)
    cmd = HeadPanCommand(target=-1.0, speed_ratio=1.0, pan_mode=HeadPanCommand.SET_ACTIVE_MODE)
    head_state = Latest("/robot/head/head_state", HeadState)
    assert wait_for(lambda: head_state.msg is not None and abs(head_state.msg.pan + 1.0) < 0.01
                    and not head_state.msg.isTurning, 120, every=lambda: pan.publish(cmd))
    n = color.count
    assert wait_for(lambda: color.count >= n + 2, 120)  # (an image rendered after the head got there)
    assert np.abs(frame(color.msg) - before).mean() > 5.0  # the head turned: so did its view
    head_state.close()
    # one camera at a time: the hand camera is refused while the head camera streams (the client stops it first)
    assert "one camera at a time" in hand.set("camera_streaming", True, "bool")
    after = Recorder(f"{CAM}/head_camera/image_rect_color")
    assert head.set("camera_streaming", False, "bool") == ""  # acknowledged: the node took the stop
    t_stop = head.state.msg.time.to_sec()  # (the acknowledging state's time: the camera node's clock, as its stamps)
    assert wait_for(lambda: sim.msg.header.stamp.to_sec() >= t_stop + 0.5, 60)  # (0.5 s of the robot's time)
    after.close()
    late = [m for m in after.msgs if m.header.stamp.to_sec() > t_stop]
    assert len(late) <= 1, f"{len(late)} images stamped after the stop"  # stopped (one may have been rendering)
    mono = Latest(f"{CAM}/right_hand_camera/image_rect", Image)
    assert hand.set("camera_streaming", True, "bool") == ""
    img = mono.wait(20)
    assert (img.encoding, img.width, img.height) == ("mono8", 752, 480) and frame(img).std() > 1.0
    assert hand.set("camera_streaming", False, "bool") == ""
    for holder in (node, color, raw, mono, head.config, head.state, hand.config, hand.state):
        holder.close()
