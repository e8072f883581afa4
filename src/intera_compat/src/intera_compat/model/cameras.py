"""The robot's cameras in the simulated world (no ROS): the config's ``cameras`` section, the plant's MJCF with a
floor, lights and a MuJoCo camera at each camera's link frame, and an offscreen renderer that draws what a camera
sees for joint positions in config order.

A camera looks along +z of its link frame, image x along +x, image y along +y (the optical-frame convention); MuJoCo
cameras look along their −z with +y up, hence the half turn about x. Rendering needs a headless GL: MUJOCO_GL=egl
(Mesa's EGL, installed by setup.sh) must be set before mujoco is imported — the camera node does it.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import mujoco
import numpy as np

from .mujoco_model import _fmt, build_mjcf

COLOR_DRIVERS = ("ienso_ethernet",)  # intera_interface: colour (image_rect_color); the others are mono (image_rect)
HALF_TURN_X = np.array([0.0, 1.0, 0.0, 0.0])  # w x y z


@dataclass
class CameraSpec:
    frame: str  # the link the camera sits on
    driver: str  # cognex (mono) | ienso_ethernet (colour)
    width: int = 752
    height: int = 480
    fovy: float = 45.0  # deg
    rate: float = 10.0  # Hz while streaming
    exposure: tuple = (0.01, 100.0)  # the set_exposure signal's range (-1: auto, where the driver has it)
    gain: tuple = (0, 255)

    @property
    def color(self) -> bool:
        return self.driver in COLOR_DRIVERS


def camera_specs(cfg) -> dict[str, CameraSpec]:
    """``cameras`` of the robot config: {name: CameraSpec}; ValueError naming the file and key."""
    out = {}
    for name, raw in (cfg.raw.get("cameras") or {}).items():
        try:
            spec = CameraSpec(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
        except TypeError as e:
            raise ValueError(f"{cfg.path}: cameras.{name}: {e}") from None
        if spec.width <= 0 or spec.height <= 0 or not 1.0 <= spec.fovy <= 170.0 or spec.rate <= 0:
            raise ValueError(f"{cfg.path}: cameras.{name}: width/height > 0, fovy 1..170 deg, rate > 0")
        out[name] = spec
    return out


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def camera_mjcf(rm, cameras: dict[str, CameraSpec], obstacles=(), floor_z: float = -0.93) -> str:
    """The plant with a floor (``floor_z`` in the base frame), lights and the cameras."""
    root = ET.fromstring(build_mjcf(rm, obstacles))
    w = max([c.width for c in cameras.values()] + [64])
    h = max([c.height for c in cameras.values()] + [64])
    visual = ET.SubElement(root, "visual")
    ET.SubElement(visual, "global", offwidth=str(w), offheight=str(h))
    ET.SubElement(visual, "headlight", ambient="0.3 0.3 0.3", diffuse="0.4 0.4 0.4")
    asset = ET.SubElement(root, "asset")
    ET.SubElement(asset, "texture", name="floor", type="2d", builtin="checker", width="256", height="256",
                  rgb1="0.55 0.55 0.55", rgb2="0.35 0.35 0.35")
    ET.SubElement(asset, "material", name="floor", texture="floor", texrepeat="8 8")
    world = root.find("worldbody")
    ET.SubElement(world, "light", pos="1 0 3", dir="-0.3 0 -1", diffuse="0.7 0.7 0.7")
    ET.SubElement(world, "geom", name="floor", type="plane", size="5 5 0.1", pos=_fmt([0, 0, floor_z]),
                  material="floor", contype="0", conaffinity="0", group="0")
    sites = {s.get("name"): (body, s) for body in root.iter("body") for s in body.findall("site")}
    for name, spec in cameras.items():
        if spec.frame not in sites:
            raise ValueError(f"camera {name}: the model has no link {spec.frame!r}")
        body, site = sites[spec.frame]
        q = _quat_mul(np.array([float(x) for x in site.get("quat").split()]), HALF_TURN_X)
        ET.SubElement(body, "camera", name=name, pos=site.get("pos"), quat=_fmt(q), fovy="%.6g" % spec.fovy)
    return ET.tostring(root, encoding="unicode")


class CameraRenderer:
    """Draws the cameras (one GL context: use it from one thread only). ``render(name, q)`` → an (h, w, 3) RGB
    array, or (h, w) for a mono camera; ``exposure`` scales the light the sensor gets (1: nominal)."""

    def __init__(self, rm, cameras: dict[str, CameraSpec], obstacles=()):
        self.cameras = cameras
        self.model = mujoco.MjModel.from_xml_string(camera_mjcf(rm, cameras, obstacles))
        self.data = mujoco.MjData(self.model)
        self._qadr = np.array([self.model.joint(n).qposadr[0] for n in rm.joint_names])  # (tree order ≠ config's)
        self._renderers = {name: mujoco.Renderer(self.model, c.height, c.width) for name, c in cameras.items()}

    def render(self, name: str, q: np.ndarray, exposure: float = 1.0) -> np.ndarray:
        self.data.qpos[self._qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)
        r = self._renderers[name]
        r.update_scene(self.data, camera=name)
        img = r.render()
        if exposure != 1.0:
            img = np.clip(img.astype(np.float32) * exposure, 0, 255).astype(np.uint8)
        if not self.cameras[name].color:
            img = (img @ np.array([0.299, 0.587, 0.114], np.float32)).astype(np.uint8)
        return img

    def close(self) -> None:
        for r in self._renderers.values():
            r.close()
        self._renderers = {}
