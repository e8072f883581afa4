"""Build the MuJoCo plant (MJCF) from the same pinocchio model the controllers use.

Bodies, joint placements, axes, limits and (fixed-link-merged) inertias come straight from the
pinocchio model, so the plant and the controllers' dynamics agree to rounding. Every link frame
becomes a site named after the link (FK checks, endpoint sensors); collision shapes become
geoms that collide with the obstacle scene (``sim.obstacles``) and with each other exactly for the
self-collision pairs the SRDF leaves enabled (neighbouring links' coarse primitives overlap at rest,
so contype/conaffinity alone would not do); each movable joint gets a torque motor limited to its effort.
Armature (rotor inertia) is the config's ``armature`` (shared with the controller model); joint
damping and dry friction come from its ``sim`` section (the plant only).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pinocchio as pin

from .robot_model import RobotModel


def _fmt(v) -> str:
    return " ".join("%.12g" % x for x in np.ravel(v))


def _quat(R: np.ndarray) -> str:
    q = pin.Quaternion(R)  # x y z w
    return _fmt([q.w, q.x, q.y, q.z])


def _axis(jmodel) -> np.ndarray:
    short = jmodel.shortname()
    if short.startswith("JointModelR") and short[-1] in "XYZ" and "Unaligned" not in short:
        return np.eye(3)["XYZ".index(short[-1])]
    if hasattr(jmodel, "axis"):
        return np.asarray(jmodel.axis)
    raise ValueError(f"unsupported joint type {short} (revolute joints only)")


def _geom_attrs(obj) -> dict | None:
    g = obj.geometry
    name = type(g).__name__
    if name == "Sphere":
        return {"type": "sphere", "size": _fmt([g.radius])}
    if name == "Cylinder":
        return {"type": "cylinder", "size": _fmt([g.radius, g.halfLength])}
    if name == "Box":
        return {"type": "box", "size": _fmt(g.halfSide)}
    return None


_OBSTACLE_TYPES = {"box": 3, "sphere": 1, "cylinder": 2, "capsule": 2}  # number of MuJoCo size values


def _obstacle(world: ET.Element, ob: dict) -> None:
    """A static obstacle: ``{name, type: box|sphere|cylinder|capsule, size: MuJoCo half-sizes [m],
    pos: [x, y, z] in the base frame, euler: [r, p, y] rad (optional)}``."""
    kind = ob.get("type", "box")
    size = [float(x) for x in np.ravel(ob.get("size", ()))]
    if kind not in _OBSTACLE_TYPES or len(size) != _OBSTACLE_TYPES[kind] or min(size, default=0) <= 0:
        raise ValueError(f"sim obstacle {ob.get('name', '?')!r}: type must be one of {sorted(_OBSTACLE_TYPES)} "
                         f"with {_OBSTACLE_TYPES.get(kind, '?')} positive half-sizes, got {kind} {size}")
    attrs = {"name": str(ob.get("name", f"obstacle_{len(world)}")), "type": kind, "size": _fmt(size),
             "pos": _fmt(ob.get("pos", [0, 0, 0])), "contype": "0", "conaffinity": "1", "group": "2",
             "rgba": "0.6 0.5 0.3 1"}
    if "euler" in ob:
        attrs["euler"] = _fmt(ob["euler"])
    ET.SubElement(world, "geom", **attrs)


DEFAULT_RGBA = "0.75 0.1 0.1 1"


def link_colors(urdf: str) -> dict[str, str]:
    """link → "r g b a" of its first visual's material (named materials resolved), from the URDF: the plant looks
    like RViz's robot."""
    root = ET.fromstring(urdf)
    named = {m.get("name"): m.find("color").get("rgba") for m in root.findall("material")
             if m.find("color") is not None}
    out = {}
    for link in root.findall("link"):
        for vis in link.findall("visual"):
            mat = vis.find("material")
            if mat is None:
                continue
            color = mat.find("color")
            rgba = color.get("rgba") if color is not None else named.get(mat.get("name"))
            if rgba:
                out[link.get("name")] = rgba
                break
    return out


def link_frames(rm: RobotModel) -> list:
    """The arm's link frames (each a site of the plant, named after it; MuJoCo numbers sites in body-tree order, so
    find a site by its name)."""
    return [f for f in rm.model.frames if f.type == pin.BODY and f.name != "universe"]


def build_mjcf(rm: RobotModel, obstacles=()) -> str:
    model, cfg = rm.model, rm.cfg
    sim = cfg.sim
    cfg_index = {n: i for i, n in enumerate(rm.joint_names)}
    root = ET.Element("mujoco", model=cfg.robot_class)
    ET.SubElement(root, "compiler", angle="radian", autolimits="true")
    ET.SubElement(root, "option", timestep=str(sim.get("timestep", 0.001)), integrator="implicitfast",
                  gravity="0 0 -9.81", jacobian="dense")
    stop = float(sim.get("hard_stop_margin", 0.05))  # the mechanical stops lie beyond the software limits
    world = ET.SubElement(root, "worldbody")
    for ob in obstacles:
        _obstacle(world, ob)
    bodies = {0: world}
    for jid in range(1, model.njoints):
        name = model.names[jid]
        M = model.jointPlacements[jid]
        parent = bodies[model.parents[jid]]
        link = next(f.name for f in model.frames
                    if f.type == pin.BODY and f.parentJoint == jid and f.parentFrame == model.getFrameId(name, pin.JOINT))
        body = ET.SubElement(parent, "body", name=link, pos=_fmt(M.translation), quat=_quat(M.rotation))
        bodies[jid] = body
        I = model.inertias[jid]
        Ic = I.inertia
        ET.SubElement(body, "inertial", pos=_fmt(I.lever), mass="%.12g" % I.mass,
                      fullinertia=_fmt([Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]]))
        i = cfg_index[name]
        idx = model.joints[jid].idx_q
        lo, hi = model.lowerPositionLimit[idx], model.upperPositionLimit[idx]
        ET.SubElement(body, "joint", name=name, type="hinge", axis=_fmt(_axis(model.joints[jid])),
                      range=_fmt([lo - stop * (hi - lo), hi + stop * (hi - lo)]),
                      damping="%.6g" % sim["damping"][i], frictionloss="%.6g" % sim["frictionloss"][i],
                      armature="%.6g" % cfg.armature[i])
    for f in link_frames(rm):  # a site for every link frame, named after the link
        ET.SubElement(bodies[f.parentJoint], "site", name=f.name, pos=_fmt(f.placement.translation),
                      quat=_quat(f.placement.rotation), size="0.005")
    colors = link_colors(rm.urdf)
    for obj in rm.tight.geometryObjects:
        attrs = _geom_attrs(obj)
        if attrs is None:
            continue
        P = obj.placement
        rgba = colors.get(model.frames[obj.parentFrame].name, DEFAULT_RGBA)
        ET.SubElement(bodies[obj.parentJoint], "geom", name=obj.name, pos=_fmt(P.translation), quat=_quat(P.rotation),
                      contype="1", conaffinity="0", group="1", rgba=rgba, **attrs)
    contact = ET.SubElement(root, "contact")
    for cp in rm.tight.collisionPairs:
        a, b = rm.tight.geometryObjects[cp.first], rm.tight.geometryObjects[cp.second]
        if _geom_attrs(a) is not None and _geom_attrs(b) is not None and (a.parentJoint or b.parentJoint):
            ET.SubElement(contact, "pair", geom1=a.name, geom2=b.name)
    act = ET.SubElement(root, "actuator")
    for i, name in enumerate(rm.joint_names):
        eff = cfg.limits.effort[i]
        ET.SubElement(act, "motor", name=name, joint=name, gear="1", ctrlrange=_fmt([-eff, eff]))
    return ET.tostring(root, encoding="unicode")


def load_mujoco(rm: RobotModel, obstacles=()) -> mujoco.MjModel:
    """Compile the plant; actuator i follows config order, joint addresses the body tree (map them by name)."""
    return mujoco.MjModel.from_xml_string(build_mjcf(rm, obstacles))
