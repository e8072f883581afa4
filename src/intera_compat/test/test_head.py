"""The head pan's source (targets at a speed ratio, the joint's reach, active cancellation against j0) and the ROS
side's checks (a bad HeadPanCommand named and refused, the head display's screen). No master needed."""
import math

import numpy as np
import pytest
from intera_core_msgs.msg import HeadPanCommand
from sensor_msgs.msg import Image

from intera_compat.config import load_config
from intera_compat.data.setpoint import Setpoint
from intera_compat.data.state import HardwareState
from intera_compat.model.robot_model import RobotModel
from intera_compat.ros.head import SCREEN_H, SCREEN_W, head_command_problem, screen_image
from intera_compat.sources.head import ACTIVE, ACTIVE_CANCELLATION, NO_MODE_CHANGE, HeadSource, head_cancellation

CFG = load_config()
N = len(CFG.all_joints)
H = N - 1  # the head pan: the last joint
DT = 0.001


@pytest.fixture
def head():
    lim = CFG.limits
    offset, j0 = head_cancellation(RobotModel(CFG), CFG)
    src = HeadSource(slice(H, N), lim.lower, lim.upper, lim.velocity, lim.accel, DT, offset, j0)
    hw, sp = HardwareState.zeros(N), Setpoint.zeros(N)
    src.activate(sp, hw, 0.0)
    return src, hw, sp


def run(src, hw, sp, seconds, j0=None):
    """``seconds`` of cycles, the plant following the setpoint (j0 moved along ``j0(t)`` if given)."""
    peak = 0.0
    for k in range(int(round(seconds / DT))):
        if j0 is not None:
            hw.position[0] = j0(k * DT)
        assert src.update(k * DT, hw, sp) == 0
        hw.position[H], hw.velocity[H] = sp.q[H], sp.v[H]
        peak = max(peak, abs(sp.v[H]))
    return peak


def test_a_target_is_reached_at_the_speed_ratio_and_clamped_to_the_joints_reach(head):
    src, hw, sp = head
    src.command(-1.0, 0.5, ACTIVE)
    peak = run(src, hw, sp, 3.0)
    assert hw.position[H] == pytest.approx(-1.0, abs=1e-6)
    assert peak == pytest.approx(0.5 * CFG.limits.velocity[H], rel=0.02)  # at half speed, not faster
    src.command(0.95, 1.0, NO_MODE_CHANGE)  # head_wobbler's largest target: beyond the 0.9064 limit
    run(src, hw, sp, 3.0)
    assert hw.position[H] == pytest.approx(CFG.limits.upper[H]) and abs(0.95 - hw.position[H]) < 0.1
    assert src.mode == ACTIVE and not src.blocked


def test_active_cancellation_keeps_the_heads_yaw_while_j0_turns(head):
    src, hw, sp = head
    src.command(0.3, 1.0, ACTIVE_CANCELLATION)  # a yaw in the base frame
    run(src, hw, sp, 2.0)
    assert hw.position[H] == pytest.approx(0.3, abs=1e-4)
    lag = []
    for k in range(8):  # j0 swings (up to 0.5 rad/s): the head turns against it, a few hundredths behind
        run(src, hw, sp, 0.5, j0=lambda t, k=k: 0.5 * math.sin(0.5 * k + t))
        lag.append(abs(hw.position[0] + hw.position[H] - 0.3))
    assert max(lag) < 0.05  # (Head.set_pan's success tolerance: 0.1 rad)
    run(src, hw, sp, 1.0, j0=lambda t: hw.position[0])  # j0 stops: the yaw is exact again
    assert hw.position[0] + hw.position[H] == pytest.approx(0.3, abs=1e-4)
    assert src.mode == ACTIVE_CANCELLATION and not src.blocked
    hw.position[0] = -2.0
    src.command(-1.0, 1.0, NO_MODE_CHANGE)  # a pan of 1.0 (or -5.28) would do: out of reach, as near as it goes
    run(src, hw, sp, 4.0, j0=lambda t: -2.0)
    assert src.blocked and hw.position[H] == pytest.approx(CFG.limits.upper[H])
    for k in range(200):  # j0 jitters about the gap's middle: the head stays at the limit it is at (no sweep)
        hw.position[0] = -2.0 - 0.14 + (-1) ** k * 1e-3
        run(src, hw, sp, 0.005)
    assert src.blocked and hw.position[H] == pytest.approx(CFG.limits.upper[H])
    src.command(-0.5, 1.0, ACTIVE)  # back to a pan angle
    run(src, hw, sp, 3.0)
    assert hw.position[H] == pytest.approx(-0.5, abs=1e-6) and not src.blocked


def test_after_the_brakes_the_head_stays_where_it_is_whatever_its_mode(head):
    src, hw, sp = head
    src.command(0.3, 1.0, ACTIVE_CANCELLATION)
    run(src, hw, sp, 2.0)
    hw.position[0] = 0.5  # (j0 moved while the robot was disabled)
    src.activate(sp, hw, 0.0)
    sp.q[H] = hw.position[H]
    pan = hw.position[H]
    run(src, hw, sp, 1.0, j0=lambda t: 0.5)
    assert hw.position[H] == pytest.approx(pan, abs=1e-6)  # the yaw it has now is the one it keeps
    run(src, hw, sp, 2.0, j0=lambda t: 0.2)
    assert hw.position[0] + hw.position[H] == pytest.approx(0.5 + pan, abs=1e-4)


@pytest.mark.parametrize("fields, words", [
    (dict(target=float("nan")), "target is nan"),
    (dict(target=0.1, speed_ratio=1.5), "speed_ratio is 1.5"),
    (dict(target=0.1, speed_ratio=float("inf")), "speed_ratio is inf"),
    (dict(target=0.1, speed_ratio=0.5, pan_mode=7), "pan_mode is 7"),
])
def test_a_bad_pan_command_is_named(fields, words):
    assert words in head_command_problem(HeadPanCommand(**fields))


def test_a_good_pan_command_passes():
    assert head_command_problem(HeadPanCommand(target=-2.0, speed_ratio=0.0, pan_mode=2)) == ""


def test_the_screen_shows_the_image_top_left_in_bgr():
    rgb = np.zeros((700, 1200, 3), np.uint8)
    rgb[..., 0] = 200  # red, in RGB
    img = Image(height=700, width=1200, encoding="rgb8", step=1200 * 3, data=rgb.tobytes())
    out = screen_image(img)
    px = np.frombuffer(out.data, np.uint8).reshape(SCREEN_H, SCREEN_W, 3)
    assert out.encoding == "bgr8" and (out.width, out.height) == (SCREEN_W, SCREEN_H)
    assert (px[..., 2] == 200).all() and (px[..., :2] == 0).all()  # cropped to the screen
    small = Image(height=2, width=3, encoding="mono8", step=4, data=bytes([7] * 8))  # (padded rows)
    px = np.frombuffer(screen_image(small).data, np.uint8).reshape(SCREEN_H, SCREEN_W, 3)
    assert (px[:2, :3] == 7).all() and px[2:].sum() == 0 and px[:, 3:].sum() == 0


@pytest.mark.parametrize("img, words", [
    (Image(height=2, width=2, encoding="yuv422", step=4, data=bytes(8)), "encoding is 'yuv422'"),
    (Image(height=2, width=2, encoding="bgr8", step=6, data=bytes(5)), "data has 5 bytes"),
    (Image(height=0, width=2, encoding="bgr8", step=6, data=b""), "width × height"),
])
def test_an_image_the_screen_cannot_show_is_named(img, words):
    with pytest.raises(ValueError, match=words):
        screen_image(img)
