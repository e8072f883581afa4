"""Robot configuration (``config/<robot>.yaml``) as typed, validated data."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np
import yaml

PACKAGE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_CONFIG = os.path.join(PACKAGE_DIR, "config", "sawyer.yaml")


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits, arrays ordered like ``RobotConfig.all_joints``."""

    lower: np.ndarray  # rad
    upper: np.ndarray  # rad
    velocity: np.ndarray  # rad/s
    effort: np.ndarray  # Nm
    accel: np.ndarray  # rad/s^2


@dataclass
class RobotConfig:
    path: str
    raw: dict  # the robot config file
    params_path: str  # the ROS parameter file (robot_config, manifest, named_poses)
    robot_class: str
    hlr_version: str
    urdf_path: str
    srdf_path: str
    limb: str
    base_frame: str
    joint_names: list[str]
    head_joint: str
    limits: JointLimits
    named_poses: dict
    tips: list[str]
    avoidance_margin: float
    armature: np.ndarray  # kg m^2 per joint (config order)
    rates: dict
    control: dict
    sim: dict = field(default_factory=dict)
    realtime: dict = field(default_factory=dict)  # scheduling of the loop process

    @property
    def all_joints(self) -> list[str]:
        """Arm joints then the head joint: the order of every per-joint array in the core."""
        return list(self.joint_names) + ([self.head_joint] if self.head_joint else [])

    @property
    def n_arm(self) -> int:
        return len(self.joint_names)

    def named_pose(self, group: str, name: str) -> np.ndarray:
        return np.array(self.named_poses[group]["poses"][name], dtype=float)

    def full_pose(self, name: str) -> np.ndarray:
        """Named pose for every joint in config order (the limb's pose, then the head's)."""
        q = self.named_pose(self.limb, name)
        return np.r_[q, self.named_pose("head", name)] if self.head_joint else q

    def start_pose(self, spec="") -> np.ndarray:
        """Where the simulated arm starts (every joint, config order): ``spec`` a named pose (``neutral``), the arm
        joints' angles (a list, or a string of numbers split by commas or spaces; the head at its neutral), or ""
        for the config's ``sim.initial_pose``. ValueError naming what is wrong."""
        head = "neutral"  # (a named pose's own head pose)
        if isinstance(spec, str) and not spec.strip():
            spec = self.sim.get("initial_pose", "neutral")  # (a name, or the angles as a list)
        if isinstance(spec, str):
            spec = spec.strip()
            try:
                q = np.array([float(w) for w in re.split(r"[\s,]+", spec)])
            except ValueError:  # not numbers: a named pose
                poses = self.named_poses[self.limb]["poses"]
                if spec not in poses:
                    raise ValueError(f"start pose {spec!r}: no such named pose (named poses: {', '.join(poses)})") \
                        from None
                q, head = self.named_pose(self.limb, spec), spec
        else:
            try:
                q = np.asarray(spec, float)
            except (TypeError, ValueError):
                raise ValueError(f"start pose {spec!r}: not {self.n_arm} numbers") from None
        if q.shape != (self.n_arm,) or not np.isfinite(q).all():
            raise ValueError(f"start pose {spec!r}: {self.n_arm} finite angles (rad) of {', '.join(self.joint_names)}")
        lo, hi = self.limits.lower[:self.n_arm], self.limits.upper[:self.n_arm]
        for name, v, a, b in zip(self.joint_names, q, lo, hi):
            if not a <= v <= b:
                raise ValueError(f"start pose: {name} = {v:g} is outside its limits [{a:g}, {b:g}]")
        return np.r_[q, self.named_pose("head", head)] if self.head_joint else q

    def scene_obstacles(self, scene: str = "") -> list:
        """The simulated world's obstacles: the config's ``sim.obstacles`` and those of scene ``scene`` of
        ``sim.scenes`` ("" for none; an unknown scene is a ValueError)."""
        scenes = self.sim.get("scenes") or {}
        if scene and scene not in scenes:
            raise ValueError(f"unknown sim scene {scene!r} (config sim.scenes: {sorted(scenes)})")
        return list(self.sim.get("obstacles") or []) + list(scenes.get(scene, []))

    def urdf_xml(self) -> str:
        with open(self.urdf_path) as f:
            return f.read()

    def srdf_xml(self) -> str:
        with open(self.srdf_path) as f:
            return f.read()


def _pkg_path(p: str) -> str:
    return p if os.path.isabs(p) else os.path.join(PACKAGE_DIR, p)


# the loop process's scheduling when the config has no ``realtime`` section: sleep until 150 µs before
# each deadline, leave the CPUs' idle states alone
REALTIME_DEFAULTS = {"spin_margin_us": 150.0, "idle_latency_us": -1}


# sections an inheriting config replaces whole (they describe the arm, not settings of the loop): another arm's
# joints, DH table or obstacle scenes must not leak in
WHOLE_SECTIONS = {("joint_limits",), ("dh",), ("sim", "scenes"), ("sim", "obstacles"), ("sim", "position_servo")}


def _merged(base: dict, over: dict, path: tuple = ()) -> dict:
    """``over`` on top of ``base``: nested sections merge key by key (but ``WHOLE_SECTIONS`` and an empty
    mapping replace), any other value (lists too) replaces."""
    out = dict(base)
    for k, v in over.items():
        here = (*path, k)
        merge = isinstance(v, dict) and v and isinstance(base.get(k), dict) and here not in WHOLE_SECTIONS
        out[k] = _merged(base[k], v, here) if merge else v
    return out


def _read_raw(path: str, seen=()) -> dict:
    """A config file's mapping; ``inherit: other.yaml`` (next to it) supplies every key it leaves out."""
    with open(path) as f:
        raw = yaml.safe_load(f)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not a mapping")
    parent = raw.pop("inherit", None)
    if parent is None:
        return raw
    parent = parent if os.path.isabs(parent) else os.path.join(os.path.dirname(os.path.abspath(path)), parent)
    if parent in seen:
        raise ValueError(f"{path}: inherit loops back to {parent}")
    return _merged(_read_raw(parent, (*seen, path)), raw)


def load_config(path: str | None = None) -> RobotConfig:
    """Load and validate a robot config; raises ValueError naming the offending key."""
    path = path or DEFAULT_CONFIG
    raw = _read_raw(path)
    params_path = _pkg_path(raw["ros_params"])
    with open(params_path) as f:
        params = yaml.safe_load(f)
    names = list(raw["joint_names"])
    head = raw.get("head_joint") or ""
    all_joints = names + ([head] if head else [])
    lim = raw["joint_limits"]
    missing = [j for j in all_joints if j not in lim]
    if missing:
        raise ValueError(f"{path}: joint_limits has no entry for {missing}")

    def col(key):
        return np.array([float(lim[j][key]) for j in all_joints])

    limits = JointLimits(col("lower"), col("upper"), col("velocity"), col("effort"), col("accel"))
    if np.any(limits.lower >= limits.upper):
        raise ValueError(f"{path}: joint_limits lower >= upper")
    ctrl = raw["control"]
    for key in ("kp", "kd", "ki", "integral_limit"):
        if len(ctrl[key]) != len(all_joints):
            raise ValueError(f"{path}: control.{key} needs {len(all_joints)} values")
    if len(raw.get("armature", all_joints)) != len(all_joints):
        raise ValueError(f"{path}: armature needs {len(all_joints)} values")
    extra = sorted(set(lim) - set(all_joints))
    if extra:
        raise ValueError(f"{path}: joint_limits names {extra}, which are not joints of this arm")
    sim = raw.get("sim", {})
    for key, values in (("damping", sim.get("damping")), ("frictionloss", sim.get("frictionloss")),
                        *((f"position_servo.{g}", (sim.get("position_servo") or {}).get(g)) for g in ("kp", "kd"))):
        if values is not None and len(values) != len(all_joints):
            raise ValueError(f"{path}: sim.{key} needs {len(all_joints)} values")
    return RobotConfig(
        path=path,
        raw=raw,
        params_path=params_path,
        robot_class=params["manifest"]["robot_class"],
        hlr_version=str(params["manifest"]["robot_software"]["version"]["HLR_VERSION_STRING"]),
        urdf_path=_pkg_path(raw["urdf"]),
        srdf_path=_pkg_path(raw["srdf"]),
        limb=raw["limb"],
        base_frame=raw["base_frame"],
        joint_names=names,
        head_joint=head,
        limits=limits,
        named_poses=params["named_poses"],
        tips=list(raw["tips"]),
        avoidance_margin=float(raw["avoidance_margin"]),
        armature=np.array(raw.get("armature", [0.0] * len(all_joints)), dtype=float),
        rates=dict(raw["rates"]),
        control=dict(ctrl),
        sim=dict(raw.get("sim", {})),
        realtime={**REALTIME_DEFAULTS, **raw.get("realtime", {})},
    )


def config_section(cfg: RobotConfig, name: str, cls, overrides: dict | None = None):
    """The dataclass ``cls`` built from the config's ``name`` section, with ``overrides`` (launch arguments; ""
    and None mean "the config's") over it; a key ``cls`` does not have is refused, naming the file."""
    raw = {**dict(cfg.raw.get(name) or {}), **{k: v for k, v in (overrides or {}).items() if v not in ("", None)}}
    unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
    if unknown:
        raise ValueError(f"{cfg.path}: {name} has unknown keys {unknown}")
    return cls(**raw)
