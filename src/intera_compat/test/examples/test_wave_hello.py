"""How a lab tests its own Intera script without a robot, here ``wave_hello.py``: the simulated Sawyer as a pytest
fixture, the script run unmodified, its outcome checked in the robot's time.

In your package: ``conftest.py`` holds ``pytest_plugins = ["intera_compat.testing.pytest_plugin"]``; each test asks
for the ``sawyer`` fixture (``@pytest.mark.sawyer(...)``: sawyer_test.launch's arguments) and checks with
``intera_compat.testing``. The same suite as a rostest: ``wave_hello.test``.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import rospy

from intera_compat import testing as T

SCRIPT = os.path.join(os.path.dirname(__file__), "wave_hello.py")

pytestmark = pytest.mark.node


def wave_hello(*args, background=False):
    """The user's script, as they run it (rosrun works too); the fixture's ROS environment is this process's."""
    argv = [sys.executable, SCRIPT, *args]
    if background:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


@pytest.mark.sawyer(initial_pose="neutral")
def test_wave_hello_waves_and_comes_back_to_neutral(sawyer):
    events = T.EventLog()
    with T.JointRecorder() as rec:
        run = wave_hello()
    assert run.returncode == 0, run.stdout
    T.assert_reached(rospy.get_param("/named_poses/right/poses/neutral"), tol=0.01)
    assert rec.q[:, 0].max() > 0.45 and rec.q[:, 0].min() < -0.45  # it waved, both ways
    assert rec.t[-1] - rec.t[0] > 3.0  # (robot time: a few seconds of waving, however fast the machine ran it)
    assert not [e for e in events.sequence() if e[0] == "collision"]
    events.close()


@pytest.mark.sawyer(start_enabled=False)
def test_wave_hello_enables_a_robot_that_booted_disabled(sawyer):
    assert not T.robot_state().enabled
    run = wave_hello("--waves", "1")
    assert run.returncode == 0, run.stdout
    assert T.robot_state().enabled


@pytest.mark.sawyer()
def test_wave_hello_gives_up_when_the_estop_is_pressed_and_the_arm_holds(sawyer):
    script = wave_hello(background=True)
    try:
        # it is waving (the script's start-up is the machine's, not the robot's: on a loaded machine the simulated
        # robot lives tens of seconds before a new Python process has imported rospy; the bound is only a guard)
        assert T.wait_until(lambda: abs(T.joint_positions()[0]) > 0.2 or script.poll() is not None, 600)
        assert script.poll() is None, script.communicate()[0]
        T.press_estop()
        # it brakes: at rest within a moment of robot time (how far it ran on is the loop's tests' business: here
        # the button is pressed from a process that may lag the robot by a good part of a wave)
        assert T.wait_until(lambda: np.abs(T.joint_velocities()).max() < 0.01, 5.0)
        stopped_at = T.joint_positions()
        out, _ = script.communicate(timeout=300)
    finally:
        script.kill()
    assert script.returncode == 1 and "not reached" in out  # (its 15 s timeout, in robot time)
    T.assert_reached(stopped_at, tol=0.005)  # and it held there while the script kept asking
    T.release_estop()
    T.reset()
    T.enable()
    assert wave_hello("--waves", "0").returncode == 0  # and after a reset it works again
