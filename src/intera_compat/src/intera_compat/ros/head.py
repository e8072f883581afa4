"""The head (contract §1.9, §2.8): ``/robot/head/command_head_pan`` validated and handed to the loop, whose head
source turns the pan joint of the plant; ``/robot/head/head_state`` from the loop's state record;
``/robot/head_display`` kept and shown on ``/robot/head_display/screen`` (what the 1024×600 screen displays,
latched: image_view or RViz's Image display shows it); a "Head" status on ``/diagnostics`` once a second of loop
time counts the pan commands received, refused, handed to the loop and dropped (the loop's ring full: what shows
that a command arrived)."""
from __future__ import annotations

import math


import numpy as np
import rospy
from intera_core_msgs.msg import HeadPanCommand, HeadState
from sensor_msgs.msg import Image

from ..sources.head import ACTIVE, NO_MODE_CHANGE
from .command_counts import CommandCounts

SCREEN_W, SCREEN_H = 1024, 600
CHANNELS = {"bgr8": 3, "rgb8": 3, "mono8": 1, "bgra8": 4, "rgba8": 4}
TURNING = 0.01  # rad, rad/s: the head is turning while it is this far from its target or this fast
STATUS_PERIOD = 1.0  # s of loop time between two "Head" diagnostics statuses


def head_command_problem(msg: HeadPanCommand) -> str:
    """'' for a command the loop may take; else what is wrong with it, naming the field."""
    if not math.isfinite(msg.target):
        return f"target is {msg.target}"
    if not math.isfinite(msg.speed_ratio) or not 0.0 <= msg.speed_ratio <= 1.0:
        return f"speed_ratio is {msg.speed_ratio} (0..1)"
    if msg.pan_mode > NO_MODE_CHANGE:
        return f"pan_mode is {msg.pan_mode} (0..3)"
    return ""


def screen_image(msg: Image) -> Image:
    """The head screen showing ``msg``: bgr8, 1024×600, the image at its top-left corner (cropped to the screen),
    the rest black. ValueError naming the field when the image cannot be shown."""
    ch = CHANNELS.get(msg.encoding)
    if ch is None:
        raise ValueError(f"encoding is {msg.encoding!r} (one of {sorted(CHANNELS)})")
    if msg.width == 0 or msg.height == 0:
        raise ValueError(f"width × height is {msg.width} × {msg.height}")
    if msg.step < msg.width * ch or len(msg.data) < msg.step * msg.height:
        raise ValueError(f"data has {len(msg.data)} bytes for step {msg.step} × height {msg.height} "
                         f"(width {msg.width} × {ch} channels)")
    raw = np.frombuffer(msg.data, np.uint8, msg.step * msg.height).reshape(msg.height, msg.step)
    px = raw[:, :msg.width * ch].reshape(msg.height, msg.width, ch)
    h, w = min(msg.height, SCREEN_H), min(msg.width, SCREEN_W)
    px = px[:h, :w]
    if msg.encoding.startswith("rgb"):
        px = px[..., 2::-1]
    elif msg.encoding.startswith("bgr"):
        px = px[..., :3]
    else:
        px = np.repeat(px, 3, axis=2)
    screen = np.zeros((SCREEN_H, SCREEN_W, 3), np.uint8)
    screen[:h, :w] = px
    return Image(header=msg.header, height=SCREEN_H, width=SCREEN_W, encoding="bgr8", is_bigendian=0,
                 step=SCREEN_W * 3, data=screen.tobytes())


def boot_screen() -> Image:
    """What the screen shows until a client sends an image: dark, with a band in the arm's red."""
    screen = np.full((SCREEN_H, SCREEN_W, 3), 38, np.uint8)
    screen[SCREEN_H // 2 - 6:SCREEN_H // 2 + 6, SCREEN_W // 8:SCREEN_W - SCREEN_W // 8] = (30, 30, 200)  # (BGR)
    return Image(height=SCREEN_H, width=SCREEN_W, encoding="bgr8", is_bigendian=0, step=SCREEN_W * 3,
                 data=screen.tobytes())


class HeadTopics:
    """``post(target, ratio, mode)`` hands a valid command to the loop; ``publish(st)`` at 100 Hz."""

    def __init__(self, post, head_index: int):
        self.post, self.i = post, head_index
        self.pub_state = rospy.Publisher("/robot/head/head_state", HeadState, queue_size=1, tcp_nodelay=True)
        self.pub_screen = rospy.Publisher("/robot/head_display/screen", Image, queue_size=1, latch=True)
        self.pub_screen.publish(boot_screen())
        rospy.Subscriber("/robot/head/command_head_pan", HeadPanCommand, self._on_pan, queue_size=1,
                         tcp_nodelay=True)
        rospy.Subscriber("/robot/head_display", Image, self._on_display, queue_size=1, buff_size=2 ** 24)
        self._state = HeadState(panMode=ACTIVE)
        self.counts = CommandCounts("Head", "head_pan", "head", ("refused", "posted", "dropped"), what="pan commands")
        self._next_status = None

    def _on_pan(self, msg: HeadPanCommand) -> None:
        problem = head_command_problem(msg)
        if problem:
            self.counts.count("refused")
            rospy.logerr_throttle(1.0, f"command_head_pan refused (the head holds): {problem}")
            return
        posted = self.post(np.array([msg.target, msg.speed_ratio, msg.pan_mode], float))
        self.counts.count("posted" if posted else "dropped")  # (dropped: the loop's ring full, or shutting down)

    def _on_display(self, msg: Image) -> None:
        try:
            self.pub_screen.publish(screen_image(msg))
        except ValueError as e:
            rospy.logerr(f"head_display image not shown: {e}")

    def publish(self, st) -> None:
        s, i = self._state, self.i
        s.pan = float(st.position[i])
        s.isTurning = bool(abs(st.head_target[0] - st.position[i]) > TURNING or abs(st.velocity[i]) > TURNING)
        s.panMode = int(st.head_mode[0])
        s.isBlocked = bool(st.head_blocked[0])
        self.pub_state.publish(s)
        t = float(st.time[0])
        if self._next_status is None or t >= self._next_status:
            self._next_status = t + STATUS_PERIOD
            self.counts.publish()
