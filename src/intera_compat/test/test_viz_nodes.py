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
    """Mouse and keyboard on an X display through the XTEST extension (libXtst, as xdotool does). Each gesture goes
    out in one flush, so the X server hands the window its events together."""

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

    def send(self, *events):
        """``("move", x, y)``, ``("button", b, down)``, ``("key", code, down)`` in order, then one flush."""
        fake = {"move": lambda x, y: self.xtst.XTestFakeMotionEvent(self.dpy, -1, int(x), int(y), 0),
                "button": lambda b, down: self.xtst.XTestFakeButtonEvent(self.dpy, b, down, 0),
                "key": lambda code, down: self.xtst.XTestFakeKeyEvent(self.dpy, code, down, 0)}
        for kind, *args in events:
            fake[kind](*args)
        self.x11.XFlush(self.dpy)

    def close(self):
        self.x11.XCloseDisplay(self.dpy)


def screen(display: str) -> np.ndarray:
    from PIL import ImageGrab
    return np.asarray(ImageGrab.grab(xdisplay=display).convert("RGB")).astype(int)


def arm_pixels(img: np.ndarray) -> np.ndarray:
    """(y, x) of the pixels in the arm's lit red (the viewer's own panels are a darker red)."""
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return np.argwhere((r > 170) & (g < 60) & (b < 60))


class ViewerStatus:
    """The plant viewer's own status on /diagnostics ("MuJoCo viewer"): the link selected, the grab, the key
    presses the viewer has handled (its acknowledgement: the mouse events sent before a key press are handled and
    resolved when the count includes it) and the pushes sent."""

    def __init__(self):
        import rospy
        from diagnostic_msgs.msg import DiagnosticArray
        self.vals = None
        self.sub = rospy.Subscriber("/diagnostics", DiagnosticArray, self._cb, queue_size=50)

    def _cb(self, m) -> None:
        for st in m.status:
            if st.name == "MuJoCo viewer":
                self.vals = {x.key: x.value for x in st.values}

    def until(self, pred, what: str, timeout: float = 120.0) -> dict:
        """The first status satisfying ``pred(values)`` (``timeout``: a generous wall-clock guard)."""
        assert wait_for(lambda: self.vals is not None and pred(self.vals), timeout, period=0.02), \
            f"the viewer's status never showed {what} in {timeout:g} s (last: {self.vals})"
        return dict(self.vals)

    def close(self) -> None:
        self.sub.unregister()


def test_the_mujoco_viewer_draws_the_arm_and_a_mouse_drag_pushes_the_simulated_arm(display, launch):
    """viewer:=true as a user works it: the window shows the red arm; with the cuff squeezed (zero-G), a double-click
    on a link and a Ctrl + right-drag pull the *simulated* arm (the loop's plant) along; no error lines.

    Each step waits for the viewer to have taken the last one (its UI thread handles the window's events between
    frames, and a Ctrl + right press only grabs a link the viewer has already selected): the Ctrl press that starts
    the drag is also the fence after the double-click (the viewer's status counts it once everything before it is
    handled), the drag starts once the status shows the grab."""
    import json

    from intera_compat.msg import SafetyStatus
    from intera_core_msgs.msg import IOComponentCommand

    from conftest import _start_robot
    from ros_helpers import Latest, arm_positions, publisher
    robot = _start_robot(launch, "sim", "viewer:=true", "cameras:=false")
    js = next(robot)
    viewer = ViewerStatus()
    viewer.until(lambda v: int(v["viewer_frames_total"]) > 0, "a frame drawn")
    # (the window, not the node's log: a node's stdout reaches the log file only when its buffer fills)
    assert wait_for(lambda: len(arm_pixels(screen(display))) > 1000, 120, period=0.5), \
        f"{len(arm_pixels(screen(display)))} red pixels on the screen: the arm is not drawn"
    status = Latest("/robot/limb/right/safety_status", SafetyStatus)
    press = publisher("/robot/sim/io/cuff", IOComponentCommand)
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [1]}}})))
    assert wait_for(lambda: status.msg is not None and status.msg.zero_g, 60)
    q0 = arm_positions(js)
    ui = FakeInput(display)
    tries = []
    for _ in range(3):  # (a double-click split by a slow frame is two clicks; a new picture, a new point)
        red = arm_pixels(screen(display))
        y, x = red[np.argmin(np.abs(red - np.median(red, axis=0)).sum(axis=1))]  # a red pixel amid the red: a link
        keys = int(viewer.vals["viewer_keys_total"])
        ui.send(("move", x, y), ("button", 1, True), ("button", 1, False), ("button", 1, True), ("button", 1, False),
                ("key", ui.ctrl, True))  # double-click: select the link; Ctrl down (and the fence)
        v = viewer.until(lambda v: int(v["viewer_keys_total"]) > keys, "the Ctrl press handled")
        tries.append(((int(x), int(y)), v["viewer_selected"]))
        if v["viewer_selected"].startswith("right_l"):
            break
        ui.send(("key", ui.ctrl, False))
    assert v["viewer_selected"].startswith("right_l"), f"no arm link selected by double-clicks at {tries}"
    ui.send(("button", 3, True))  # Ctrl + right press: grab the selected link
    viewer.until(lambda v: v["viewer_grab"] == "pull", "the link grabbed")
    for k in range(1, 21):  # Ctrl + right-drag: pull
        ui.send(("move", x + 8 * k, y - 4 * k))
        time.sleep(0.02)
    moved = wait_for(lambda: np.abs(arm_positions(js) - q0).max() > 0.05, 120)
    pushes = viewer.vals
    ui.send(("button", 3, False), ("key", ui.ctrl, False))
    viewer.until(lambda v: v["viewer_grab"] == "", "the link let go")
    ui.close()
    assert moved, f"the arm did not follow the drag: {np.abs(arm_positions(js) - q0).max():.4f} rad (the viewer: " \
                  f"{pushes})"
    assert node_up("/plant_viewer")
    errors = error_lines(js.log_path)
    assert not errors, "\n".join(errors)
    viewer.close()
    status.close()
    robot.close()
