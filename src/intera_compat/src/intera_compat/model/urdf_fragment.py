"""URDF fragments (``/robot/urdf``, intera_core_msgs/URDFConfiguration; send_urdf_fragment.py): a tool's links
attached to a link of the robot, merged into the robot's URDF so that its links become tips for FK / IK /
tip_states / the motion controller. No ROS here.

* ``link``: the robot's link to attach to (e.g. right_hand). ``joint``: the fragment's root — a joint of the
  fragment whose parent is ``link``, or a root link of the fragment, attached to ``link`` by a fixed joint of that
  name (send_urdf_fragment.py's "-j right_gripper_base"). ``urdf``: the fragment (a ``<robot>``); empty: the
  fragment attached by ``joint`` is removed.
* A fragment sent again with the same ``joint`` replaces the previous one.
* Kinematics only: the fragment's joints are fixed at their zero position (the arm's joint set never changes), its
  visuals and collision shapes are left out (a tool's meshes are not ours to load, and an unchecked shape would
  collide with the wrist at rest), and its masses are not added to the arm's dynamics (the simulated plant does
  not carry the tool either).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET


def _parse(xml: str, what: str) -> ET.Element:
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise ValueError(f"{what} is not XML: {e}") from None
    if root.tag != "robot":
        raise ValueError(f"{what}'s root element is <{root.tag}>, not <robot>")
    return root


def fragment_elements(robot_links: set, link: str, joint: str, urdf: str) -> tuple[list[ET.Element], list[str]]:
    """The fragment's ``<link>`` / ``<joint>`` elements to add (rooted at ``link``) and its link names; ValueError
    naming the field otherwise."""
    if link not in robot_links:
        raise ValueError(f"link {link!r} is not a link of the robot")
    if not joint:
        raise ValueError("joint is empty (the fragment's root joint or link)")
    frag = _parse(urdf, "urdf")
    links = [e for e in frag.findall("link")]
    names = [e.get("name") for e in links]
    if not names or any(not n for n in names):
        raise ValueError("urdf has no named <link>")
    clash = sorted(set(names) & robot_links)
    if clash:
        raise ValueError(f"urdf's links {clash} are links of the robot already")
    joints = frag.findall("joint")
    out = []
    for e in links:
        out.append(ET.Element("link", name=e.get("name")))  # (kinematics only: no visual, collision, inertial)
    children = {j.find("child").get("link") if j.find("child") is not None else None for j in joints}
    root_joint = next((j for j in joints if j.get("name") == joint), None)
    if root_joint is not None:
        parent = root_joint.find("parent")
        if parent is None or parent.get("link") != link:
            raise ValueError(f"joint {joint!r}'s parent is {parent.get('link') if parent is not None else None!r}, "
                             f"not link {link!r}")
    elif joint in names and joint not in children:  # a root link: attached by a fixed joint of the same name
        j = ET.Element("joint", name=joint, type="fixed")
        ET.SubElement(j, "parent", link=link)
        ET.SubElement(j, "child", link=joint)
        out.append(j)
    else:
        raise ValueError(f"joint {joint!r} is neither a joint of the fragment nor its root link")
    known = set(names) | {link}
    for j in joints:
        parent, child = j.find("parent"), j.find("child")
        if parent is None or child is None or child.get("link") not in names or parent.get("link") not in known:
            raise ValueError(f"urdf's joint {j.get('name')!r} does not join two of its links (or {link!r})")
        fixed = ET.Element("joint", name=j.get("name"), type="fixed")
        ET.SubElement(fixed, "parent", link=parent.get("link"))
        ET.SubElement(fixed, "child", link=child.get("link"))
        origin = j.find("origin")
        if origin is not None:
            ET.SubElement(fixed, "origin", {k: v for k, v in origin.attrib.items() if k in ("xyz", "rpy")})
        out.append(fixed)
    return out, names


class Fragments:
    """The fragments attached so far (by root joint, in order) and the robot's URDF with them."""

    def __init__(self, base_urdf: str):
        self.base = base_urdf
        self.base_links = {e.get("name") for e in _parse(base_urdf, "the robot's URDF").findall("link")}
        self.attached: dict[str, tuple[str, str, list[str]]] = {}  # joint → (link, urdf, its links)

    def links(self) -> list[str]:
        return [n for _, _, names in self.attached.values() for n in names]

    def apply(self, link: str, joint: str, urdf: str) -> bool:
        """Attach (or replace, or with an empty ``urdf`` remove) a fragment; False when nothing changed;
        ValueError (nothing changes) for a bad one."""
        if not urdf.strip():
            return self.attached.pop(joint, None) is not None
        old = self.attached.get(joint)
        if old is not None and old[:2] == (link, urdf):
            return False  # (send_urdf_fragment.py re-sends it at 5 Hz)
        others = self.base_links | {n for j, (_, _, ns) in self.attached.items() if j != joint for n in ns}
        _, names = fragment_elements(others, link, joint, urdf)
        self.attached[joint] = (link, urdf, names)
        return True

    def merged(self) -> str:
        """The robot's URDF with every fragment."""
        root = _parse(self.base, "the robot's URDF")
        links = set(self.base_links)
        for joint, (link, urdf, names) in self.attached.items():
            elements, _ = fragment_elements(links, link, joint, urdf)
            root.extend(elements)
            links |= set(names)
        return ET.tostring(root, encoding="unicode")
