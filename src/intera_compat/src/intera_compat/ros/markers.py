"""RViz markers of the collision avoidance (hector's debug visualisation), computed in the listener
from the published joint state, never in the loop:

* ``collision_geometry``: every tight-model shape, grey, red while one of its pairs is active;
* ``distance_lines_zone``: the nearest-point line of every pair closer than the zone + braking
  band: red for pairs the loop slowed or repelled in its last cycle, green otherwise;
* ``distance_lines_collision``: pairs in contact (d ≤ 0), bright red and thicker;
* ``obstacles``: the sim's obstacle scene.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from ..model.robot_model import RobotModel

GREY, RED, GREEN, BRIGHT, BROWN = ((0.6, 0.6, 0.6, 0.35), (0.9, 0.1, 0.1, 0.6), (0.1, 0.8, 0.2, 1.0),
                                   (1.0, 0.0, 0.0, 1.0), (0.6, 0.5, 0.3, 0.8))


def _pose(M: pin.SE3) -> Pose:
    q = pin.Quaternion(M.rotation)
    t = M.translation
    return Pose(position=Point(*t), orientation=Quaternion(q.x, q.y, q.z, q.w))


def _shape(marker: Marker, geometry) -> bool:
    kind = type(geometry).__name__
    if kind == "Sphere":
        marker.type = Marker.SPHERE
        marker.scale = Vector3(*([2 * geometry.radius] * 3))
    elif kind == "Cylinder":
        marker.type = Marker.CYLINDER
        marker.scale = Vector3(2 * geometry.radius, 2 * geometry.radius, 2 * geometry.halfLength)
    elif kind == "Box":
        marker.type = Marker.CUBE
        marker.scale = Vector3(*(2 * np.asarray(geometry.halfSide)))
    else:
        return False
    return True


def _mujoco_euler(e) -> np.ndarray:
    """MuJoCo's default ``euler`` (sequence "xyz", about the moving axes): R = Rx·Ry·Rz."""
    c, s = np.cos(e), np.sin(e)
    rx = np.array([[1, 0, 0], [0, c[0], -s[0]], [0, s[0], c[0]]])
    ry = np.array([[c[1], 0, s[1]], [0, 1, 0], [-s[1], 0, c[1]]])
    rz = np.array([[c[2], -s[2], 0], [s[2], c[2], 0], [0, 0, 1]])
    return rx @ ry @ rz


class CollisionMarkers:
    def __init__(self, rm: RobotModel, frame: str, band: float, obstacles=()):
        self.rm, self.frame, self.band = rm, frame, band
        self.obstacles = list(obstacles)
        pairs = rm.tight.collisionPairs
        self.pairs = [(cp.first, cp.second) for cp in pairs]

    def build(self, q: np.ndarray, active: np.ndarray, stamp) -> MarkerArray:
        rm = self.rm
        geom, gdata = rm._update_geometry(q, False)
        pin.computeDistances(geom, gdata)
        hot = set()
        out = MarkerArray()
        lines = {"distance_lines_zone": [], "distance_lines_collision": []}
        for k, (a, b) in enumerate(self.pairs):
            r = gdata.distanceResults[k]
            d = r.min_distance
            if d > self.band:
                continue
            if active[k] > 0.5:
                hot.update((a, b))
            ns = "distance_lines_collision" if d <= 0.0 else "distance_lines_zone"
            colour = BRIGHT if d <= 0.0 else (RED if active[k] > 0.5 else GREEN)
            lines[ns].append((r.getNearestPoint1(), r.getNearestPoint2(), colour))
        for i, obj in enumerate(geom.geometryObjects):
            m = Marker(ns="collision_geometry", id=i, action=Marker.ADD)
            if not _shape(m, obj.geometry):
                continue
            m.header.frame_id, m.header.stamp = self.frame, stamp
            m.pose = _pose(gdata.oMg[i])
            m.color = ColorRGBA(*(RED if i in hot else GREY))
            out.markers.append(m)
        for ns, segs in lines.items():
            m = Marker(ns=ns, id=0, type=Marker.LINE_LIST, action=Marker.ADD if segs else Marker.DELETE)
            m.header.frame_id, m.header.stamp = self.frame, stamp
            m.pose.orientation.w = 1.0
            m.scale.x = 0.006 if ns == "distance_lines_collision" else 0.003
            for p1, p2, colour in segs:
                m.points += [Point(*p1), Point(*p2)]
                m.colors += [ColorRGBA(*colour)] * 2
            out.markers.append(m)
        for i, ob in enumerate(self.obstacles):
            m = Marker(ns="obstacles", id=i, action=Marker.ADD)
            kind = ob.get("type", "box")
            size = np.asarray(ob["size"], float)
            m.type = {"box": Marker.CUBE, "sphere": Marker.SPHERE}.get(kind, Marker.CYLINDER)
            m.scale = Vector3(*(2 * size)) if kind == "box" else (
                Vector3(*([2 * size[0]] * 3)) if kind == "sphere" else Vector3(2 * size[0], 2 * size[0], 2 * size[1]))
            m.header.frame_id, m.header.stamp = self.frame, stamp
            m.pose = _pose(pin.SE3(_mujoco_euler(ob.get("euler", [0, 0, 0])), np.asarray(ob.get("pos", [0, 0, 0]), float)))
            m.color = ColorRGBA(*BROWN)
            out.markers.append(m)
        return out
