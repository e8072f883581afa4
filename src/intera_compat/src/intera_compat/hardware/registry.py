"""Backends by name: the one place to add an arm.

To add an arm: write a ``Backend`` subclass (``hardware/base.py`` says what each method must do), give it a
``declared(cfg, options)`` if its capabilities depend on its config, and add one line to ``BACKENDS`` below. The
realtime_loop node's ``~backend`` parameter (launch argument ``backend``) picks it; ``options`` is what the node
hands the loop process for it (JSON: scene names, the ros_control bridge's record names and pipe ends, ...).
"""
from __future__ import annotations

from ..model.robot_model import RobotModel
from .base import Backend
from .cobot import CobotBackend
from .ros_control import RosControlBackend
from .sim import SimBackend, SimPositionBackend
from .ur import URBackend


def _sim(cls):
    def build(rm: RobotModel, options: dict) -> Backend:
        cfg = rm.cfg
        obstacles = cfg.scene_obstacles(options.get("scene", ""))
        return cls(rm, cfg.start_pose(options.get("initial_pose", "")), obstacles)
    return build


BACKENDS = {
    # name: (class, factory(rm, options) -> Backend)
    "sim": (SimBackend, _sim(SimBackend)),  # the MuJoCo Sawyer, joint torques, lockstep
    "sim_position": (SimPositionBackend, _sim(SimPositionBackend)),  # the same arm behind a position interface
    "ros_control": (RosControlBackend, lambda rm, options: RosControlBackend(rm, options)),  # Gazebo, UR driver
    "ur": (URBackend, lambda rm, options: URBackend(rm, options)),  # a UR through ur_rtde (RTDE, dashboard)
    "cobot": (CobotBackend, lambda rm, options: CobotBackend(rm, options)),  # a waypoint-list Cobot (OPC UA)
}


def _entry(kind: str):
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r} (known: {', '.join(BACKENDS)})")
    return BACKENDS[kind]


def build_backend(kind: str, rm: RobotModel, options: dict | None = None) -> Backend:
    return _entry(kind)[1](rm, dict(options or {}))


def declared_requests(kind: str) -> frozenset:
    """The requests to its own controller the arm serves (``Backend.requests``: the listener's services)."""
    return _entry(kind)[0].requests


def declared_capabilities(kind: str, cfg, options: dict | None = None) -> frozenset:
    """What the backend will be able to do, known before it is built (the listener needs it to refuse commands
    the arm cannot carry and to say why)."""
    return _entry(kind)[0].declared(cfg, dict(options or {}))
