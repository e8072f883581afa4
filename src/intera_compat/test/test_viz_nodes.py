"""What a new user looks at, started as they would under Xvfb: ``sawyer_sim.launch rviz:=true`` (RViz comes up,
stays up, and nothing at start-up prints an error line: Debian's RViz used to log "[rospack] Error: no such package
media_export") and ``viewer:=true`` (MuJoCo's viewer draws the arm). Skipped without RViz / Xvfb (./setup.sh
installs both; ./setup.sh --minimal leaves them out)."""
import shutil
import time

import numpy as np
import pytest
from intera_compat.testing.processes import kill_group, start_xvfb
from ros_helpers import wait_for

pytestmark = [pytest.mark.node,
              pytest.mark.skipif(not shutil.which("Xvfb"),
                                 reason="Xvfb not installed here (./setup.sh --minimal): ./setup.sh installs it")]


@pytest.fixture
def display(monkeypatch):
    """A private X server (Xvfb) as DISPLAY."""
    xvfb = start_xvfb(timeout=60.0)
    assert xvfb is not None, "Xvfb is installed but did not come up (a failure, not a skip: ./setup.sh installs it)"
    monkeypatch.setenv("DISPLAY", xvfb[1])
    yield xvfb[1]
    kill_group(xvfb[0])


def node_up(name: str) -> bool:
    import rosgraph
    try:
        rosgraph.Master("/pytest").lookupNode(name)
        return True
    except rosgraph.MasterError:
        return False


def error_lines(path: str) -> list:
    log = open(path, errors="replace").read()
    return [line for line in log.splitlines() if "error" in line.lower() or "has died" in line]


@pytest.mark.skipif(not shutil.which("rviz"),
                    reason="RViz not installed here (./setup.sh --minimal): ./setup.sh installs it")
def test_rviz_comes_up_with_the_sawyer_and_no_error_lines(display, launch):
    from conftest import _start_robot
    robot = _start_robot(launch, "sim", "rviz:=true")
    js = next(robot)
    assert wait_for(lambda: node_up("/rviz"), 60, period=0.5)
    time.sleep(10.0)  # (RViz loads the model, its displays subscribe)
    assert node_up("/rviz")  # still up
    errors = error_lines(js.log_path)
    assert not errors, "\n".join(errors)
    robot.close()


class FakeInput:
    """Mouse and keyboard on an X display through the XTEST extension (libXtst, as xdotool does)."""

    def __init__(self, display: str):
        import ctypes
        import ctypes.util
        self.x11 = ctypes.CDLL(ctypes.util.find_library("X11"))
        self.xtst = ctypes.CDLL(ctypes.util.find_library("Xtst"))
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        for f in (self.x11.XFlush, self.x11.XCloseDisplay, self.x11.XKeysymToKeycode, self.xtst.XTestFakeMotionEvent,
                  self.xtst.XTestFakeButtonEvent, self.xtst.XTestFakeKeyEvent):
            f.argtypes = [ctypes.c_void_p] + (f.argtypes or [])
        self.dpy = self.x11.XOpenDisplay(display.encode())
        assert self.dpy, f"cannot open {display}"
        self.ctrl = self.x11.XKeysymToKeycode(ctypes.c_void_p(self.dpy), ctypes.c_ulong(0xFFE3))  # Control_L

    def _do(self, f, *args):
        f(self.dpy, *args, 0)
        self.x11.XFlush(self.dpy)

    def move(self, x: int, y: int):
        self._do(self.xtst.XTestFakeMotionEvent, -1, int(x), int(y))

    def button(self, b: int, down: bool):
        self._do(self.xtst.XTestFakeButtonEvent, b, down)

    def key(self, code: int, down: bool):
        self._do(self.xtst.XTestFakeKeyEvent, code, down)

    def close(self):
        self.x11.XCloseDisplay(self.dpy)


def screen(display: str) -> np.ndarray:
    from PIL import ImageGrab
    return np.asarray(ImageGrab.grab(xdisplay=display).convert("RGB")).astype(int)


def arm_pixels(img: np.ndarray) -> np.ndarray:
    """(y, x) of the pixels in the arm's lit red (the viewer's own panels are a darker red)."""
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return np.argwhere((r > 170) & (g < 60) & (b < 60))


def test_the_mujoco_viewer_draws_the_arm_and_a_mouse_drag_pushes_the_simulated_arm(display, launch):
    """viewer:=true as a user works it: the window shows the red arm; with the cuff squeezed (zero-G), a double-click
    on a link and a Ctrl + right-drag pull the *simulated* arm (the loop's plant) along; no error lines."""
    import json

    from intera_compat.msg import SafetyStatus
    from intera_core_msgs.msg import IOComponentCommand

    from conftest import _start_robot
    from ros_helpers import Latest, arm_positions, publisher
    robot = _start_robot(launch, "sim", "viewer:=true", "cameras:=false")
    js = next(robot)
    # (the window, not the node's log: a node's stdout reaches the log file only when its buffer fills)
    assert wait_for(lambda: node_up("/plant_viewer") and len(arm_pixels(screen(display))) > 1000, 60, period=0.5), \
        f"{len(arm_pixels(screen(display)))} red pixels on the screen: the arm is not drawn"
    time.sleep(2.0)
    red = arm_pixels(screen(display))
    status = Latest("/robot/limb/right/safety_status", SafetyStatus)
    press = publisher("/robot/sim/io/cuff", IOComponentCommand)
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [1]}}})))
    assert wait_for(lambda: status.msg is not None and status.msg.zero_g, 5)
    q0 = arm_positions(js)
    y, x = red[np.argmin(np.abs(red - np.median(red, axis=0)).sum(axis=1))]  # a red pixel amid the red: a link
    ui = FakeInput(display)
    ui.move(x, y)
    for _ in range(2):  # double-click: select the link
        ui.button(1, True)
        ui.button(1, False)
    time.sleep(0.5)
    ui.key(ui.ctrl, True)
    ui.button(3, True)  # Ctrl + right-drag: pull
    for k in range(1, 21):
        ui.move(x + 8 * k, y - 4 * k)
        time.sleep(0.05)
    moved = wait_for(lambda: np.abs(arm_positions(js) - q0).max() > 0.05, 5)
    ui.button(3, False)
    ui.key(ui.ctrl, False)
    ui.close()
    assert moved, f"the arm did not follow the drag: {np.abs(arm_positions(js) - q0).max():.4f} rad"
    assert node_up("/plant_viewer")
    errors = error_lines(js.log_path)
    assert not errors, "\n".join(errors)
    status.close()
    robot.close()
