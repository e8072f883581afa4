#!/usr/bin/env python3
"""The README's pictures, made from the current code (so they stay true): headless, under Xvfb.

* ``docs/img/rviz.png``: ``sawyer_sim.launch rviz:=true`` on a private master, RViz's window grabbed from Xvfb once
  the robot is up and enabled;
* ``docs/img/plant.png``: the MuJoCo plant as the simulator has it (the same colours, the obstacle scene ``table``),
  drawn offscreen (EGL) from a camera looking at the arm in its neutral pose.

Needs ``./setup.sh --with-viz`` (RViz, Xvfb). Run from the repository root after ``. ./env.sh``:

    python tools/screenshots.py
"""
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "img")


def xvfb():
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x900x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(w,),
                            start_new_session=True)
    os.close(w)
    ready, _, _ = select.select([r], [], [], 10.0)
    n = os.read(r, 16).decode().strip() if ready else ""
    if not n.isdigit():
        raise SystemExit("Xvfb did not start (./setup.sh --with-viz installs it)")
    return proc, f":{n}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(15)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def rviz_shot(display: str, path: str) -> None:
    from PIL import ImageGrab
    port = free_port()
    env = dict(os.environ, DISPLAY=display, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_HOSTNAME="127.0.0.1",
               ROS_HOME=tempfile.mkdtemp(prefix="screenshots-"))
    launch = subprocess.Popen(["roslaunch", "-p", str(port), "intera_compat", "sawyer_sim.launch", "rviz:=true",
                               "no_rt:=true"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:  # (the robot up and enabled, RViz drawing)
            probe = subprocess.run(["rostopic", "echo", "-n1", "/robot/state/enabled"], env=env,
                                   capture_output=True, text=True, timeout=30)
            if "True" in probe.stdout:
                break
            time.sleep(1.0)
        time.sleep(12.0)
        ImageGrab.grab(xdisplay=display).save(path)
    finally:
        stop(launch)


def plant_shot(path: str) -> None:
    os.environ.setdefault("MUJOCO_GL", "egl")
    import mujoco
    import numpy as np
    from PIL import Image

    from intera_compat.config import load_config
    from intera_compat.model.cameras import camera_mjcf
    from intera_compat.model.robot_model import RobotModel

    cfg = load_config()
    rm = RobotModel(cfg)
    scene = (cfg.sim.get("scenes") or {}).get("table", [])
    model = mujoco.MjModel.from_xml_string(camera_mjcf(rm, {}, list(cfg.sim.get("obstacles") or []) + list(scene)))
    model.vis.global_.offwidth, model.vis.global_.offheight = 1280, 900
    data = mujoco.MjData(model)
    for name, q in zip(rm.joint_names, cfg.full_pose("neutral")):
        data.qpos[model.joint(name).qposadr[0]] = q
    mujoco.mj_forward(model, data)
    cam = mujoco.MjvCamera()
    cam.lookat[:] = (0.35, 0.0, 0.1)
    cam.distance, cam.azimuth, cam.elevation = 2.6, 150.0, -22.0
    with mujoco.Renderer(model, 900, 1280) as r:
        r.update_scene(data, camera=cam)
        Image.fromarray(np.asarray(r.render())).save(path)


def main() -> int:
    os.makedirs(OUT, exist_ok=True)
    plant_shot(os.path.join(OUT, "plant.png"))
    proc, display = xvfb()
    try:
        rviz_shot(display, os.path.join(OUT, "rviz.png"))
    finally:
        stop(proc)
    print(f"wrote {OUT}/plant.png, {OUT}/rviz.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
