"""The robot model: URDF + SRDF → pinocchio model with tight and avoidance collision geometry (coal).

Arrays handed to and returned from this class are in *config order*: the arm joints
(``RobotConfig.joint_names``) followed by the head joint. Pinocchio's own order (depth-first
over the kinematic tree) is an internal detail hidden behind ``to_pin`` / ``from_pin``.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

from ..config import RobotConfig


def inflate_urdf_collisions(urdf: str, margin: float) -> str:
    """Return the URDF with every primitive collision shape grown by ``margin`` metres.

    Spheres and cylinders gain ``margin`` of radius, cylinders ``2*margin`` of length and boxes
    ``2*margin`` on every side: the shape's surface moves out by ``margin`` everywhere. This is
    the larger "armnav" model that collision avoidance keeps apart.
    """
    if margin < 0:
        raise ValueError("avoidance margin must be >= 0")
    root = ET.fromstring(urdf)
    for geom in root.iter("geometry"):
        for shape in geom:
            if shape.tag == "sphere":
                shape.set("radius", repr(float(shape.get("radius")) + margin))
            elif shape.tag == "cylinder":
                shape.set("radius", repr(float(shape.get("radius")) + margin))
                shape.set("length", repr(float(shape.get("length")) + 2 * margin))
            elif shape.tag == "box":
                size = [float(s) + 2 * margin for s in shape.get("size").split()]
                shape.set("size", " ".join(repr(s) for s in size))
    for link in root.iter("link"):  # only collisions are inflated: drop visuals from the copy
        for vis in link.findall("visual"):
            link.remove(vis)
    return ET.tostring(root, encoding="unicode")


def _geometry(model: pin.Model, urdf: str, srdf: str) -> pin.GeometryModel:
    geom = pin.buildGeomFromUrdfString(model, urdf, pin.GeometryType.COLLISION)
    geom.addAllCollisionPairs()
    pin.removeCollisionPairsFromXML(model, geom, srdf, False)
    return geom


class RobotModel:
    """Kinematics, dynamics and collision queries for one robot (not thread-safe: one per thread)."""

    def __init__(self, cfg: RobotConfig, urdf: str | None = None, srdf: str | None = None):
        self.cfg = cfg
        self.urdf = urdf if urdf is not None else cfg.urdf_xml()
        self.srdf = srdf if srdf is not None else cfg.srdf_xml()
        self.model = pin.buildModelFromXML(self.urdf)
        self.data = self.model.createData()
        self.joint_names = cfg.all_joints
        missing = [j for j in self.joint_names if not self.model.existJointName(j)]
        if missing:
            raise ValueError(f"URDF has no joints named {missing}")
        if self.model.nq != len(self.joint_names):
            extra = [n for n in self.model.names[1:] if n not in self.joint_names]
            raise ValueError(f"URDF joints not in the config: {extra}")
        # config index i <-> pinocchio q index perm[i]
        self.perm = np.array([self.model.joints[self.model.getJointId(j)].idx_q for j in self.joint_names])
        self.model.armature[self.perm] = cfg.armature  # rotor inertia: RNEA/CRBA include it
        self._q = np.zeros(self.model.nq)
        self._Mrows = np.zeros((len(self.perm), self.model.nv))
        self._v = np.zeros(self.model.nv)
        self._a = np.zeros(self.model.nv)
        self.avoidance_urdf = inflate_urdf_collisions(self.urdf, cfg.avoidance_margin)
        self.tight = _geometry(self.model, self.urdf, self.srdf)
        self.tight_data = pin.GeometryData(self.tight)
        self._batch_pool = None  # first_collision's broad-phase pool, built on first use
        self.avoid = _geometry(self.model, self.avoidance_urdf, self.srdf)
        self.avoid_data = pin.GeometryData(self.avoid)

    # ---- ordering -------------------------------------------------------------------------
    def to_pin(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Config-ordered vector → pinocchio-ordered (written into ``out`` when given)."""
        if out is None:
            out = np.empty(self.model.nq)
        out[self.perm] = x
        return out

    def from_pin(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty(self.model.nq)
        x.take(self.perm, out=out)
        return out

    # ---- frames -------------------------------------------------------------------------
    def has_frame(self, name: str) -> bool:
        return self.model.existFrame(name, pin.BODY)

    def frame_id(self, name: str) -> int:
        if not self.model.existFrame(name, pin.BODY):
            raise KeyError(f"no frame named {name!r} in the model")
        return self.model.getFrameId(name, pin.BODY)

    def link_names(self) -> list[str]:
        return [f.name for f in self.model.frames if f.type == pin.BODY]

    def fk(self, q: np.ndarray, frame: str) -> pin.SE3:
        """Pose of ``frame`` in the base (universe) frame for config-ordered ``q``."""
        fid = self.frame_id(frame)
        self.to_pin(q, self._q)
        pin.forwardKinematics(self.model, self.data, self._q)
        return pin.updateFramePlacement(self.model, self.data, fid).copy()

    def frame_velocity(self, q: np.ndarray, v: np.ndarray, frame: str) -> pin.Motion:
        """Spatial velocity of ``frame`` expressed in the base frame axes (LOCAL_WORLD_ALIGNED)."""
        fid = self.frame_id(frame)
        self.to_pin(q, self._q)
        self.to_pin(v, self._v)
        pin.forwardKinematics(self.model, self.data, self._q, self._v)
        pin.updateFramePlacement(self.model, self.data, fid)
        return pin.getFrameVelocity(self.model, self.data, fid, pin.LOCAL_WORLD_ALIGNED)

    def jacobian(self, q: np.ndarray, frame: str) -> np.ndarray:
        """6×n Jacobian (LOCAL_WORLD_ALIGNED), columns in config order."""
        fid = self.frame_id(frame)
        self.to_pin(q, self._q)
        J = pin.computeFrameJacobian(self.model, self.data, self._q, fid, pin.LOCAL_WORLD_ALIGNED)
        return J[:, self.perm]

    # ---- dynamics -----------------------------------------------------------------------
    def rnea(self, q: np.ndarray, v: np.ndarray, a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Inverse dynamics τ = M(q)a + C(q,v)v + g(q), config order."""
        self.to_pin(q, self._q)
        self.to_pin(v, self._v)
        self.to_pin(a, self._a)
        tau = pin.rnea(self.model, self.data, self._q, self._v, self._a)
        return self.from_pin(tau, out)

    def mass_matrix(self, q: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The joint-space inertia M(q) (composite rigid body algorithm), config order, into ``out``."""
        self.to_pin(q, self._q)
        M = pin.crba(self.model, self.data, self._q)  # (a symmetric copy: pinocchio's Python binding fills it whole)
        np.take(M, self.perm, axis=0, out=self._Mrows)
        np.take(self._Mrows, self.perm, axis=1, out=out)
        return out

    def gravity(self, q: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        self.to_pin(q, self._q)
        return self.from_pin(pin.computeGeneralizedGravity(self.model, self.data, self._q), out)

    # ---- collision ----------------------------------------------------------------------
    def pair_names(self, avoidance: bool = False) -> list[tuple[str, str]]:
        geom = self.avoid if avoidance else self.tight
        frames = self.model.frames
        out = []
        for cp in geom.collisionPairs:
            a, b = geom.geometryObjects[cp.first], geom.geometryObjects[cp.second]
            out.append((frames[a.parentFrame].name, frames[b.parentFrame].name))
        return out

    def _update_geometry(self, q: np.ndarray, avoidance: bool):
        geom, gdata = (self.avoid, self.avoid_data) if avoidance else (self.tight, self.tight_data)
        self.to_pin(q, self._q)
        pin.updateGeometryPlacements(self.model, self.data, geom, gdata, self._q)
        return geom, gdata

    def in_collision(self, q: np.ndarray, avoidance: bool = False) -> bool:
        """True when any enabled pair intersects (tight model unless ``avoidance``)."""
        geom, gdata = self._update_geometry(q, avoidance)
        return bool(pin.computeCollisions(geom, gdata, True))

    def first_collision(self, qs: np.ndarray) -> int:
        """Index of the first configuration (rows of ``qs``, config order) in self-collision on the tight
        model, or -1: one batched call with coal's broad phase (about 2× faster than ``in_collision``
        per configuration, which matters for a path sampled every 0.01 rad)."""
        if self._batch_pool is None:
            self._batch_pool = pin.BroadPhaseManagerPool_DynamicAABBTreeCollisionManager(self.model, self.tight, 1)
        Q = np.empty((self.model.nq, len(qs)))
        Q[self.perm] = np.asarray(qs, float).T
        hit = np.asarray(pin.computeCollisionsInParallel(1, self._batch_pool, Q, True, True), bool)
        return int(np.argmax(hit)) if hit.any() else -1

    def colliding_pairs(self, q: np.ndarray, avoidance: bool = False) -> list[tuple[str, str]]:
        geom, gdata = self._update_geometry(q, avoidance)
        pin.computeCollisions(geom, gdata, False)
        names = self.pair_names(avoidance)
        return [names[k] for k, r in enumerate(gdata.collisionResults) if r.isCollision()]

    def distances(self, q: np.ndarray, avoidance: bool = False) -> np.ndarray:
        """Signed minimum distance of every enabled pair [m] (negative = penetration)."""
        geom, gdata = self._update_geometry(q, avoidance)
        pin.computeDistances(geom, gdata)
        return np.array([r.min_distance for r in gdata.distanceResults])
