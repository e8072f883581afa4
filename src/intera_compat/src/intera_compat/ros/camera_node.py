"""IO node ``internal_camera`` (contract §1.12, §2.9): the robot's cameras rendered from the simulated world, in
their own process so that rendering never slows the realtime loop.

* ``/io/internal_camera/config`` (latched) lists each camera as a device and carries the plugin whose
  ``params.cameras`` intera_interface's Cameras reads (name, driver).
* Each camera is a device with ``camera_streaming`` (bool; one camera streams at a time: starting one while another
  streams is refused, as the client stops the other first), ``set_exposure`` and ``set_gain`` (-1: auto, colour
  camera only) and, on a Cognex, ``set_strobe``.
* While streaming, the camera's images go out at its configured rate on ``image_raw`` and ``image_rect_color``
  (colour: bgr8) or ``image_rect`` (mono8) — no lens distortion in the simulation, so raw and rectified agree —
  drawn for the arm and head where ``/robot/joint_states`` last put them. One thread owns the GL context.
"""
from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")  # (before mujoco is imported: headless rendering)

import json  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import rospy  # noqa: E402
from intera_core_msgs.msg import IOComponentConfiguration  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402

from ..config import load_config  # noqa: E402
from ..io.device import IODevice, Signal  # noqa: E402
from ..model.robot_model import RobotModel  # noqa: E402
from .conversions import JointPositions  # noqa: E402
from .io_server import IONodeServer  # noqa: E402
from .node_init import init_node  # noqa: E402

AUTO = -1


def camera_device(name: str, spec) -> IODevice:
    """The device intera_interface's Cameras drives: its signals and their ranges (auto where the driver has it)."""
    lo_e, hi_e = spec.exposure
    lo_g, hi_g = spec.gain
    w = dict(writable=True, role="output")
    sigs = [Signal("camera_streaming", "bool", **w),
            Signal("set_exposure", "float", value=float(AUTO if spec.color else hi_e / 2),
                   span=(AUTO if spec.color else lo_e, hi_e), **w),
            Signal("set_gain", "int", value=AUTO if spec.color else int(lo_g), span=(AUTO if spec.color else lo_g, hi_g),
                   **w)]
    if not spec.color:
        sigs.append(Signal("set_strobe", "bool", **w))
    return IODevice(name, sigs, {"type": "Camera", "driver": spec.driver, "width": spec.width,
                                 "height": spec.height, "rate_hz": spec.rate})


def exposure_factor(dev: IODevice, spec) -> float:
    """How bright the image comes out (1: nominal; auto: nominal): exposure and gain relative to mid-range."""
    e, g = dev.value("set_exposure"), dev.value("set_gain")
    f = 1.0
    if e != AUTO:
        f *= 2.0 * (e - spec.exposure[0]) / (spec.exposure[1] - spec.exposure[0])
    if g != AUTO:
        f *= 1.0 + (g - spec.gain[0]) / (spec.gain[1] - spec.gain[0])
    return float(min(max(f, 0.0), 4.0))


class CameraNode:
    def __init__(self, cfg, obstacles=()):
        from ..model.cameras import camera_specs
        self.cfg = cfg
        self.rm = RobotModel(cfg)
        self.specs = camera_specs(cfg)
        self.obstacles = obstacles
        self.devices = {name: camera_device(name, spec) for name, spec in self.specs.items()}
        self._stream_lock = threading.Lock()
        self._streamer = None  # the camera streaming (or claimed by a set being applied)
        for dev in self.devices.values():
            dev.writer = lambda changes, dev=dev: self._check(dev, changes)
        plugin = IOComponentConfiguration(name="camera_plugin", config=json.dumps(
            {"type": "CameraPlugin", "params": {"cameras": [{"name": n, "driver": s.driver, "cameraType": s.driver}
                                                            for n, s in self.specs.items()]}}, sort_keys=True))
        self.server = IONodeServer("internal_camera", list(self.devices.values()), sim=False, plugins=[plugin])
        base = "/io/internal_camera"
        self.pubs = {name: (rospy.Publisher(f"{base}/{name}/image_raw", Image, queue_size=1),
                            rospy.Publisher(f"{base}/{name}/image_rect_color" if spec.color else
                                            f"{base}/{name}/image_rect", Image, queue_size=1))
                     for name, spec in self.specs.items()}
        self.joints = JointPositions(cfg.all_joints, cfg.full_pose("neutral"))
        self.server.publish_node()
        self._thread = threading.Thread(target=self._render_loop, daemon=True, name="camera-render")
        self._thread.start()

    def _check(self, dev: IODevice, changes) -> None:
        """A set before it is applied: auto (-1) or a value in the driver's range; one camera streams at a time
        (the client stops the other first) — claimed here, under one lock for every camera."""
        spec = self.specs[dev.name]
        for sig, v in changes:
            if sig.name in ("set_exposure", "set_gain") and spec.color and v != AUTO:
                lo = spec.exposure[0] if sig.name == "set_exposure" else spec.gain[0]
                if v < lo:
                    raise ValueError(f"signal '{sig.name}' is {AUTO} (auto) or at least {lo:g}, got {v!r}")
        for sig, v in changes:
            if sig.name == "camera_streaming":
                with self._stream_lock:
                    if v and self._streamer not in (None, dev.name):
                        raise ValueError(f"camera_streaming: {self._streamer} streams (one camera at a time: stop "
                                         f"it first)")
                    self._streamer = dev.name if v else (None if self._streamer == dev.name else self._streamer)

    def _streaming(self) -> list[str]:
        return [n for n, d in self.devices.items() if d.value("camera_streaming")]

    def _render_loop(self) -> None:
        from ..model.cameras import CameraRenderer
        while not self._streaming():  # (the GL context and the world are made when first needed)
            if rospy.is_shutdown():
                return
            time.sleep(0.05)
        try:
            renderer = CameraRenderer(self.rm, self.specs, self.obstacles)
        except Exception as e:  # (no headless GL: say so, the cameras stay down)
            rospy.logerr(f"internal_camera: cannot render ({e!r}); MUJOCO_GL={os.environ.get('MUJOCO_GL')}")
            for srv in self.server.devices:
                srv.dev.tag = "down"
                srv.publish_state()
            self.server.publish_node()
            return
        due = {name: 0.0 for name in self.specs}
        while not rospy.is_shutdown():
            now = time.monotonic()
            streaming = self._streaming()
            for name in streaming:
                if now >= due[name]:
                    due[name] = max(due[name] + 1.0 / self.specs[name].rate, now)
                    exposure = exposure_factor(self.devices[name], self.specs[name])
                    self._publish(name, renderer.render(name, self.joints.q, exposure))
            wait = min([due[n] for n in streaming], default=now + 0.05) - time.monotonic()
            time.sleep(min(max(wait, 0.001), 0.05))
        renderer.close()

    def _publish(self, name: str, img: np.ndarray) -> None:
        spec = self.specs[name]
        msg = Image(height=spec.height, width=spec.width, is_bigendian=0)
        msg.header.stamp = rospy.Time.now()
        msg.header.frame_id = spec.frame
        if spec.color:
            msg.encoding, msg.step, msg.data = "bgr8", spec.width * 3, np.ascontiguousarray(img[..., ::-1]).tobytes()
        else:
            msg.encoding, msg.step, msg.data = "mono8", spec.width, img.tobytes()
        for pub in self.pubs[name]:
            pub.publish(msg)


def main() -> None:
    init_node("io_internal_camera")
    cfg = load_config(rospy.get_param("~config", None) or None)
    CameraNode(cfg, cfg.scene_obstacles(rospy.get_param("~scene", "")))
    rospy.spin()
