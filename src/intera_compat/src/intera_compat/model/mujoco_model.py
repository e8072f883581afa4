"""Build the MuJoCo plant (MJCF) from the same pinocchio model the controllers use.

Bodies, joint placements, axes, limits and (fixed-link-merged) inertias come straight from the
pinocchio model, so the plant and the controllers' dynamics agree to rounding. Every link frame
becomes a site named after the link (FK checks, endpoint sensors); collision shapes become
non-colliding geoms (for viewers); each movable joint gets a torque motor limited to its effort.
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


def build_mjcf(rm: RobotModel) -> str:
    model, cfg = rm.model, rm.cfg
    sim = cfg.sim
    cfg_index = {n: i for i, n in enumerate(rm.joint_names)}
    root = ET.Element("mujoco", model=cfg.robot_class)
    ET.SubElement(root, "compiler", angle="radian", autolimits="true")
    opt = ET.SubElement(root, "option", timestep=str(sim.get("timestep", 0.001)), integrator="implicitfast",
                        gravity="0 0 -9.81")
    ET.SubElement(opt, "flag", contact="disable")
    world = ET.SubElement(root, "worldbody")
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
        ET.SubElement(body, "joint", name=name, type="hinge", axis=_fmt(_axis(model.joints[jid])),
                      range=_fmt([model.lowerPositionLimit[idx], model.upperPositionLimit[idx]]),
                      damping="%.6g" % sim["damping"][i], frictionloss="%.6g" % sim["frictionloss"][i],
                      armature="%.6g" % cfg.armature[i])
    for f in model.frames:  # a site for every link frame, named after the link
        if f.type != pin.BODY or f.name in ("universe",):
            continue
        ET.SubElement(bodies[f.parentJoint], "site", name=f.name, pos=_fmt(f.placement.translation),
                      quat=_quat(f.placement.rotation), size="0.005")
    for obj in rm.tight.geometryObjects:
        attrs = _geom_attrs(obj)
        if attrs is None:
            continue
        P = obj.placement
        ET.SubElement(bodies[obj.parentJoint], "geom", name=obj.name, pos=_fmt(P.translation), quat=_quat(P.rotation),
                      contype="0", conaffinity="0", group="1", rgba="0.75 0.1 0.1 1", **attrs)
    act = ET.SubElement(root, "actuator")
    for i, name in enumerate(rm.joint_names):
        eff = cfg.limits.effort[i]
        ET.SubElement(act, "motor", name=name, joint=name, gear="1", ctrlrange=_fmt([-eff, eff]))
    return ET.tostring(root, encoding="unicode")


def load_mujoco(rm: RobotModel) -> mujoco.MjModel:
    """Compile the plant; actuator i and the joint addresses follow config order."""
    return mujoco.MjModel.from_xml_string(build_mjcf(rm))
