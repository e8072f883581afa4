"""``rosrun intera_compat doctor`` against a running sim (everything passes), no master (it says so), and a robot
with an interface missing (it names it); exit code 1 on a failure."""
import os
import subprocess

import pytest
from conftest import free_port

pytestmark = pytest.mark.node


def doctor(env=None):
    p = subprocess.run(["rosrun", "intera_compat", "doctor", "--wait", "5"], capture_output=True, text=True,
                       timeout=120, env=env or os.environ.copy())
    return p.returncode, p.stdout + p.stderr


def doctor_until(ok, seconds=90.0):
    """doctor run again (the robot's nodes still coming up) until ``ok(rc, out)``; the last (rc, out)."""
    import time
    end = time.time() + seconds
    while True:
        rc, out = doctor()
        if ok(rc, out) or time.time() > end:
            return rc, out
        time.sleep(3.0)


def test_doctor_passes_a_running_sim(sim):
    rc, out = doctor_until(lambda rc, out: rc == 0)
    assert rc == 0 and "all checks passed" in out, out
    assert "ok    pub /robot/state" in out and "md5 " in out and "ok    act /motion/motion_command" in out
    assert "ok    srv /ExternalTools/right/PositionKinematicsNode/IKService" in out


def test_doctor_names_a_master_that_is_down(ros_master):
    rc, out = doctor(dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{free_port()}"))
    assert rc == 1 and "FAIL  ROS master" in out and "does not answer" in out and "roslaunch" in out, out


def test_doctor_names_a_missing_interface(launch):
    from conftest import _start_robot
    robot = _start_robot(launch, "sim", "jtas:=false")
    next(robot)
    def robot_fails(out):  # (the robot's checks only: this machine's environment is another test's business)
        return [line for line in out.splitlines() if line.startswith("  FAIL  ") and line.split()[1] in
                ("pub", "sub", "srv", "act", "param")]
    rc, out = doctor_until(lambda rc, out: len(robot_fails(out)) == 1)
    assert rc == 1 and [f.split()[2] for f in robot_fails(out)] == ["/robot/limb/right/follow_joint_trajectory"], out
    robot.close()


def test_the_docs_troubleshooting_table_is_doctors():
    """docs/troubleshooting.md's table is ``doctor --troubleshooting``'s output (every problem, the fix it gives)."""
    import re

    from intera_compat.ros.doctor import troubleshooting
    page = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "troubleshooting.md")).read()
    block = re.search(r"<!-- doctor --troubleshooting -->\n(.*?)\n<!-- end doctor --troubleshooting -->", page, re.S)
    assert block and block.group(1) == troubleshooting()
