#!/usr/bin/env python3
"""The README's pictures, made from the current code (so they stay true): headless, under Xvfb.

* ``docs/img/rviz.png``: ``sawyer_sim.launch rviz:=true`` on a private master, RViz's window grabbed from Xvfb once
  the robot is up and enabled;
* ``docs/img/viewer.png``: ``sawyer_sim.launch viewer:=true scene:=table``, MuJoCo's viewer on the plant (the same
  colours, the obstacle scene), grabbed the same way.

Needs RViz and Xvfb (``./setup.sh`` installs them, ``--minimal`` does not). Run from the repository root
after ``. ./env.sh``:

    python tools/screenshots.py
"""
import os
import subprocess
import sys
import tempfile
import time

from intera_compat.testing.processes import free_port, kill_group, start_xvfb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "img")


def launch_shot(display: str, path: str, *args: str) -> None:
    """``sawyer_sim.launch`` with ``args`` on a private master; the screen grabbed once the robot is up and enabled
    and its windows have drawn (cropped to them: no window manager places them)."""
    from PIL import ImageGrab
    port = free_port()
    env = dict(os.environ, DISPLAY=display, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_HOSTNAME="127.0.0.1",
               ROS_HOME=tempfile.mkdtemp(prefix="screenshots-"))
    launch = subprocess.Popen(["roslaunch", "-p", str(port), "intera_compat", "sawyer_sim.launch", "no_rt:=true",
                               *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            probe = subprocess.run(["rostopic", "echo", "-n1", "/robot/state/enabled"], env=env,
                                   capture_output=True, text=True, timeout=30)
            if "True" in probe.stdout:
                break
            time.sleep(1.0)
        time.sleep(12.0)
        img = ImageGrab.grab(xdisplay=display)
        img.crop(img.convert("L").getbbox() or (0, 0, *img.size)).save(path)
    finally:
        kill_group(launch, 15.0)


def main() -> int:
    os.makedirs(OUT, exist_ok=True)
    xvfb = start_xvfb("1280x900x24")
    if xvfb is None:
        raise SystemExit("Xvfb did not start (./setup.sh installs it; --minimal does not)")
    proc, display = xvfb
    try:
        launch_shot(display, os.path.join(OUT, "rviz.png"), "rviz:=true")
        launch_shot(display, os.path.join(OUT, "viewer.png"), "viewer:=true", "scene:=table", "cameras:=false")
    finally:
        kill_group(proc, 15.0)
    print(f"wrote {OUT}/rviz.png, {OUT}/viewer.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
