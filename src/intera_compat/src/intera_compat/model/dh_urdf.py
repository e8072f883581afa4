"""Generate an arm's URDF from its Denavit–Hartenberg table (standard DH, as Universal Robots publish it).

An arm without a vendor URDF is described in its config by a ``dh:`` section (per joint ``d``, ``a``,
``alpha``; per link ``mass``, ``com`` — in DH frame *i*, the frame after joint *i*'s full
transform, as UR's tables give it — ``radius`` of its collision shell and optionally ``axis_offset``, how far
along its joint axis the link's ``a`` segment really runs; ``base`` radius/length).
The URDF carries Intera's names: ``base``, links ``right_l0..right_l{n-1}`` moving with joints named by
the config's ``joint_names`` and a fixed ``right_hand`` on the flange (DH frame *n*, UR's ``tool0``).

Link *i*'s URDF frame is DH frame *i−1* turned by joint *i*, so joint *i+1*'s origin in it is the
translation (a_i, 0, d_i) then the roll α_i. Collision shells are cylinders along the link's two DH
segments (``d`` along z, then ``a`` along x) with a sphere at the joint: coarser than the real shells,
which carry offsets along the joint axes that DH folds away. Inertias are those of a solid cylinder of
the link's radius along that segment, at the published centre of mass (UR: negligible for the
smaller arms, their own tables omit them).

Run ``python -m intera_compat.model.dh_urdf config/ur5e.yaml`` to write the config's ``urdf`` file, then
``python -m intera_compat.model.srdf_gen --config config/ur5e.yaml`` for its disabled collision pairs.
"""
from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ET

import numpy as np

from ..config import RobotConfig, load_config


def _fmt(v) -> str:
    return " ".join("%.9g" % float(x) for x in v)


def _rx(alpha: float) -> np.ndarray:
    c, s = math.cos(alpha), math.sin(alpha)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _cylinder_inertia(m: float, r: float, axis: np.ndarray, length: float) -> np.ndarray:
    u = axis / np.linalg.norm(axis) if np.linalg.norm(axis) > 0 else np.array([0.0, 0.0, 1.0])
    uu = np.outer(u, u)
    return m * ((r * r / 4.0 + length * length / 12.0) * (np.eye(3) - uu) + (r * r / 2.0) * uu)


def _check(dh: dict, n: int) -> None:
    for key in ("d", "a", "alpha", "mass", "radius", "axis_offset"):
        if len(dh.get(key, [0.0] * n)) != n:
            raise ValueError(f"dh.{key} needs {n} values (one per joint), has {len(dh[key])}")
    if len(dh["com"]) != n or any(len(c) != 3 for c in dh["com"]):
        raise ValueError(f"dh.com needs {n} points [x, y, z]")
    if min(dh["mass"]) <= 0.0 or min(dh["radius"]) <= 0.0:
        raise ValueError("dh.mass and dh.radius must be > 0")


def dh_urdf(cfg: RobotConfig) -> str:
    """The URDF text of ``cfg``'s arm from its ``dh`` section (limits from ``joint_limits``)."""
    dh = cfg.raw["dh"]
    names = cfg.joint_names
    n = len(names)
    _check(dh, n)
    d, a, alpha = (np.asarray(dh[k], float) for k in ("d", "a", "alpha"))
    off = np.asarray(dh.get("axis_offset", [0.0] * n), float)
    lim = cfg.limits
    stem = cfg.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    robot = ET.Element("robot", name=stem)
    base = ET.SubElement(robot, "link", name=cfg.base_frame)
    b = dh.get("base", {"radius": 0.075, "length": 0.09})
    _collision(base, (0.0, 0.0, 0.5 * b["length"]), (0.0, 0.0, 0.0), "cylinder", radius=b["radius"], length=b["length"])
    parent = cfg.base_frame
    for i in range(n):
        link = f"{cfg.limb}_l{i}"
        j = ET.SubElement(robot, "joint", name=names[i], type="revolute")
        ET.SubElement(j, "parent", link=parent)
        ET.SubElement(j, "child", link=link)
        origin = (0.0, 0.0, 0.0) if i == 0 else (a[i - 1], 0.0, d[i - 1])
        ET.SubElement(j, "origin", xyz=_fmt(origin), rpy=_fmt((0.0 if i == 0 else alpha[i - 1], 0.0, 0.0)))
        ET.SubElement(j, "axis", xyz="0 0 1")
        ET.SubElement(j, "limit", lower="%.9g" % lim.lower[i], upper="%.9g" % lim.upper[i],
                      velocity="%.9g" % lim.velocity[i], effort="%.9g" % lim.effort[i])
        el = ET.SubElement(robot, "link", name=link)
        # the DH frame i in this link's frame: translate (a_i, 0, d_i), roll alpha_i
        end = np.array([a[i], 0.0, d[i]])
        com = end + _rx(alpha[i]) @ np.asarray(dh["com"][i], float)
        r, m = float(dh["radius"][i]), float(dh["mass"][i])
        inertial = ET.SubElement(el, "inertial")
        ET.SubElement(inertial, "origin", xyz=_fmt(com), rpy="0 0 0")
        ET.SubElement(inertial, "mass", value="%.9g" % m)
        I = _cylinder_inertia(m, r, end, float(np.linalg.norm(end)))
        ET.SubElement(inertial, "inertia", ixx="%.9g" % I[0, 0], ixy="%.9g" % I[0, 1], ixz="%.9g" % I[0, 2],
                      iyy="%.9g" % I[1, 1], iyz="%.9g" % I[1, 2], izz="%.9g" % I[2, 2])
        _collision(el, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), "sphere", radius=r)
        trim = _end_trim(d, a, dh["radius"], i, cfg.avoidance_margin)
        if abs(d[i]) > 1e-9:
            z = d[i] - math.copysign(trim, d[i]) if abs(a[i]) <= 1e-9 else d[i]
            _collision(el, (0.0, 0.0, 0.5 * z), (0.0, 0.0, 0.0), "cylinder", radius=r, length=abs(z))
        if abs(a[i]) > 1e-9:
            z = d[i] + off[i]  # the real link runs this far along the joint axis from the DH line
            x = a[i] - math.copysign(trim, a[i])
            _collision(el, (0.5 * x, 0.0, z), (0.0, 0.5 * math.pi, 0.0), "cylinder", radius=r, length=abs(x))
            if abs(off[i]) > 1e-9:  # the housings joining it to both joints
                for x in (0.0, a[i]):
                    _collision(el, (x, 0.0, d[i] + 0.5 * off[i]), (0.0, 0.0, 0.0), "cylinder", radius=r,
                               length=abs(off[i]))
        parent = link
    j = ET.SubElement(robot, "joint", name=f"{cfg.limb}_hand_joint", type="fixed")
    ET.SubElement(j, "parent", link=parent)
    ET.SubElement(j, "child", link=f"{cfg.limb}_hand")
    ET.SubElement(j, "origin", xyz=_fmt((a[-1], 0.0, d[-1])), rpy=_fmt((alpha[-1], 0.0, 0.0)))
    ET.SubElement(robot, "link", name=f"{cfg.limb}_hand")
    ET.indent(robot)
    return ('<?xml version="1.0"?>\n<!-- Generated by intera_compat.model.dh_urdf from the DH table in '
            f'{stem}.yaml: do not edit. -->\n' + ET.tostring(robot, encoding="unicode") + "\n")


def _end_trim(d, a, radius, i: int, margin: float) -> float:
    """How far short of joint i+1 link i's last segment ends: where links of zero length follow (a spherical
    wrist or shoulder: several joints at one point), the joint spheres of the links beyond them sit at that
    point too, and a segment reaching it would touch them in every pose — a pair the SRDF would then have to
    disable whole. It stops 1.1 sphere radii short of them, and twice the avoidance margin more (the inflated
    avoidance shells must not touch either); the sphere of link i+1 covers the joint."""
    trim, k = 0.0, i + 1
    while k < len(d) - 1 and abs(d[k]) <= 1e-9 and abs(a[k]) <= 1e-9:
        trim = max(trim, 1.1 * float(radius[k + 1]) + 2.0 * margin)
        k += 1
    return trim


def _collision(link, xyz, rpy, shape: str, **size) -> None:
    c = ET.SubElement(link, "collision")
    ET.SubElement(c, "origin", xyz=_fmt(xyz), rpy=_fmt(rpy))
    g = ET.SubElement(c, "geometry")
    ET.SubElement(g, shape, **{k: "%.9g" % v for k, v in size.items()})


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit("usage: python -m intera_compat.model.dh_urdf CONFIG.yaml")
    cfg = load_config(argv[0])
    with open(cfg.urdf_path, "w") as f:
        f.write(dh_urdf(cfg))
    print(f"wrote {cfg.urdf_path}")


if __name__ == "__main__":
    main()
