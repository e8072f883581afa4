"""MuJoCo Sawyer: a torque-driven plant stepped in lockstep with the loop (one ``mj_step`` per write).

The measured joint torque is what a joint-torque sensor between the drive and the link reads: the
motor's torque net of the joint's own friction, damping and limit stops — but not the forces of
contacts with the obstacle scene or of wrenches pushed onto links (``apply_wrench``): those are the
external torques collision detection and zero-G have to feel.
"""
from __future__ import annotations

import mujoco
import numpy as np

from ..data.faults import FAULT_CONTROLLER_ERROR, FAULT_HARDWARE_ESTOP, FAULT_LINK_LOST, FAULT_PROTECTIVE_STOP
from ..data.state import Capability, CommandMode, HardwareCommand, HardwareState
from ..model.mujoco_model import link_frames, load_mujoco
from ..model.robot_model import RobotModel
from . import sim_kernel
from .base import Backend


# beyond these a push is refused: a hand's or a payload's worth (the arm's joints hold ~80 Nm at most), for a while
PUSH_MAX_FORCE, PUSH_MAX_TORQUE, PUSH_MAX_SECONDS = 300.0, 100.0, 600.0  # N, Nm, s


def pushable_links(rm: RobotModel) -> tuple[list, set]:
    """Every link name in ``link_frames`` order (a push's index), and those fixed to the world (nothing to push)."""
    frames = link_frames(rm)
    return [f.name for f in frames], {f.name for f in frames if f.parentJoint == 0}


def push_words(links: list, link: str, wrench, duration: float, fixed=()) -> np.ndarray:
    """A push on a simulated arm's link checked and packed for the loop (``MSG_SIM_WRENCH``): ``links`` the link
    names in ``link_frames`` order, ``fixed`` those fixed to the world, ``wrench`` (fx, fy, fz, tx, ty, tz).
    ValueError naming the field otherwise."""
    if link not in links:
        raise ValueError(f"link: no link {link!r} in the simulated arm (links: {', '.join(links)})")
    if link in fixed:
        raise ValueError(f"link: {link} is fixed to the world (a push on it moves nothing)")
    w = np.asarray(wrench, float)
    fields = ("force.x", "force.y", "force.z", "torque.x", "torque.y", "torque.z")
    for name, v in zip(fields, w):
        if not np.isfinite(v):
            raise ValueError(f"wrench.{name} is {v}: not a finite number")
    if np.linalg.norm(w[:3]) > PUSH_MAX_FORCE:
        raise ValueError(f"wrench.force: {np.linalg.norm(w[:3]):.1f} N is more than {PUSH_MAX_FORCE:g} N")
    if np.linalg.norm(w[3:]) > PUSH_MAX_TORQUE:
        raise ValueError(f"wrench.torque: {np.linalg.norm(w[3:]):.1f} Nm is more than {PUSH_MAX_TORQUE:g} Nm")
    if not (np.isfinite(duration) and 0.0 <= duration <= PUSH_MAX_SECONDS):
        raise ValueError(f"duration: {duration} s is not within 0..{PUSH_MAX_SECONDS:g} s")
    return np.r_[links.index(link), duration, w]


SIM_FAULTS = {"link_lost": FAULT_LINK_LOST, "protective_stop": FAULT_PROTECTIVE_STOP,
              "controller_error": FAULT_CONTROLLER_ERROR, "hardware_estop": FAULT_HARDWARE_ESTOP}


def fault_words(fault: str, duration: float) -> np.ndarray:
    """A simulated fault checked and packed for the loop (``MSG_SIM_FAULT``); ValueError naming the field."""
    if fault not in SIM_FAULTS:
        raise ValueError(f"fault: {fault!r} is not one of {', '.join(SIM_FAULTS)}")
    if not (np.isfinite(duration) and 0.0 < duration <= PUSH_MAX_SECONDS):
        raise ValueError(f"duration: {duration} s is not within (0, {PUSH_MAX_SECONDS:g}] s")
    return np.array([SIM_FAULTS[fault], duration], float)


class SimBackend(Backend):
    capabilities = frozenset({Capability.TORQUE, Capability.EFFORT, Capability.SIM_TIME})

    def __init__(self, rm: RobotModel, initial_q: np.ndarray | None = None, obstacles=None):
        super().__init__(rm.joint_names)
        self.rm = rm
        self.period = float(rm.cfg.sim.get("timestep", 0.001))
        self.initial_q = None if initial_q is None else np.asarray(initial_q, float)
        self.obstacles = list(rm.cfg.sim.get("obstacles") or []) if obstacles is None else list(obstacles)
        self.fault_code, self.fault_until = 0, -1.0  # a simulated fault of the arm's (simulate_fault)
        self.m = None
        self.d = None

    def connect(self) -> None:
        self.m = load_mujoco(self.rm, self.obstacles)
        self.d = mujoco.MjData(self.m)
        names = self.joint_names
        self._qadr = np.array([self.m.joint(n).qposadr[0] for n in names])
        self._dadr = np.array([self.m.joint(n).dofadr[0] for n in names])
        if self.initial_q is not None:
            self.d.qpos[self._qadr] = self.initial_q
        mujoco.mj_forward(self.m, self.d)
        self._lo = self.m.actuator_ctrlrange[:, 0].copy()
        self._hi = self.m.actuator_ctrlrange[:, 1].copy()
        self._tmp = np.zeros(len(self.joint_names))
        # MjData's arrays, fetched once (each attribute access builds a new array object)
        d = self.d
        self._qpos, self._qvel, self._ctrl = d.qpos, d.qvel, d.ctrl
        self._qfrc_act, self._qfrc_con, self._qfrc_pas = d.qfrc_actuator, d.qfrc_constraint, d.qfrc_passive
        self._xfrc = d.xfrc_applied
        self._n_obstacles = len(self.obstacles)  # the scene's geoms come first in the model
        self._contact = np.zeros(self.m.nv)
        self._qadr64, self._dadr64 = self._qadr.astype(np.int64), self._dadr.astype(np.int64)  # (the kernels' type)
        sim_kernel.warm()
        # pushes (apply_wrench / push): one per body, each a wrench at a link frame's origin, re-applied at the
        # body's centre of mass every step (the frame turns with the body) until its end (sim time)
        self._links, self._fixed = pushable_links(self.rm)
        self._link_sites = [mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_SITE, n) for n in self._links]
        if min(self._link_sites) < 0:
            raise RuntimeError("the plant lacks a site for a link frame")
        self._site_body = [int(b) for b in self.m.site_bodyid]
        self._site_xpos, self._xipos = d.site_xpos, d.xipos
        nb = self.m.nbody
        self._push_w = np.zeros((nb, 6))
        self._push_site = [-1] * nb
        self._push_until = [-1.0] * nb
        self._pushed: list = []  # bodies pushed now
        self._push_end = float("inf")  # the earliest end of a push

    @property
    def time(self) -> float:
        return float(self.d.time)

    def contacts(self) -> int:
        """Contacts right now (the arm with the obstacle scene or with itself)."""
        return int(self.d.ncon)

    def scene_contact(self) -> str | None:
        """The link (body) of the first contact between the arm and an obstacle, or None."""
        d, m = self.d, self.m
        for k in range(d.ncon):
            g1, g2 = int(d.contact[k].geom1), int(d.contact[k].geom2)
            if g1 < self._n_obstacles or g2 < self._n_obstacles:
                arm = g2 if g1 < self._n_obstacles else g1
                return mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, int(m.geom_bodyid[arm])) or "base"
        return None

    def scene_force(self) -> np.ndarray:
        """The total force (N, base axes) the obstacle scene exerts on the arm right now: what a force plate
        under the obstacles would read (tests and benchmarks of force control)."""
        d, m = self.d, self.m
        total, f6 = np.zeros(3), np.zeros(6)
        for k in range(d.ncon):
            c = d.contact[k]
            g1, g2 = int(c.geom1), int(c.geom2)
            if (g1 < self._n_obstacles) == (g2 < self._n_obstacles):
                continue  # arm-arm or obstacle-obstacle
            mujoco.mj_contactForce(m, d, k, f6)
            f = c.frame.reshape(3, 3).T @ f6[:3]  # contact frame → world: the force geom1 exerts on geom2
            total += f if g1 < self._n_obstacles else -f
        return total

    def apply_wrench(self, link: str, wrench, duration: float) -> None:
        """Push on ``link`` (any link frame not fixed to the world: force N, torque Nm, base axes, at the frame's
        origin) for ``duration`` s of sim time (0: end the push on that link's body now); replaces a push on the
        same body. ValueError (as ``push_words``) for what the loop's listener would refuse."""
        words = push_words(self._links, link, wrench, duration, self._fixed)
        self.push(int(words[0]), words[2:], words[1])

    def push(self, link: int, wrench: np.ndarray, duration: float) -> None:
        """``apply_wrench`` from the loop (``MSG_SIM_WRENCH``, checked by the listener): ``link`` indexes
        ``link_frames``."""
        if not 0 <= link < len(self._link_sites):
            return
        sid = self._link_sites[link]
        b = self._site_body[sid]
        if b == 0:
            return  # (fixed to the world)
        if duration > 0.0:
            if self._push_until[b] < 0.0:
                self._pushed.append(b)
            self._push_w[b] = wrench
            self._push_site[b] = sid
            self._push_until[b] = end = self.d.time + duration
            self._push_end = min(self._push_end, end)
        elif self._push_until[b] >= 0.0:
            self._push_until[b] = self.d.time  # ends at this step
            self._push_end = self.d.time
        self._apply_pushes()

    def _apply_pushes(self) -> None:
        """The pushes acting now onto ``xfrc_applied`` (at each body's centre of mass); those over removed.
        Called before each step while any acts (a handful of scalar operations per pushed body)."""
        xfrc, t = self._xfrc, self.d.time
        if t >= self._push_end:
            for b in [b for b in self._pushed if self._push_until[b] <= t]:
                self._pushed.remove(b)
                self._push_until[b] = -1.0
                xfrc[b] = 0.0
            self._push_end = min([self._push_until[b] for b in self._pushed], default=float("inf"))
        sx, xi = self._site_xpos, self._xipos
        for b in self._pushed:
            w, p, c, out = self._push_w[b], sx[self._push_site[b]], xi[b], xfrc[b]
            rx, ry, rz = p[0] - c[0], p[1] - c[1], p[2] - c[2]  # frame origin − centre of mass
            out[0], out[1], out[2] = w[0], w[1], w[2]
            out[3] = w[3] + ry * w[2] - rz * w[1]
            out[4] = w[4] + rz * w[0] - rx * w[2]
            out[5] = w[5] + rx * w[1] - ry * w[0]

    def simulate_fault(self, code: int, duration: float) -> None:
        self.fault_code, self.fault_until = code, self.d.time + duration

    def _report_fault(self, state: HardwareState) -> None:
        if self.fault_code:
            on = self.d.time < self.fault_until
            state.fault = self.fault_code if on else 0
            state.estop = on and self.fault_code == FAULT_HARDWARE_ESTOP
            if not on:
                self.fault_code = 0

    def set_state(self, q: np.ndarray, v: np.ndarray | None = None) -> None:
        """Teleport the plant (tests, resets)."""
        self.d.qpos[self._qadr] = q
        self.d.qvel[self._dadr] = 0.0 if v is None else v
        mujoco.mj_forward(self.m, self.d)

    def read(self, state: HardwareState) -> None:
        # measured joint torque: what the motor delivers net of the constraint forces (dry friction,
        # joint-limit stops) — not the command
        con = self._qfrc_con
        d = self.d
        if d.ncon:  # leave the contacts' share out: the sensor sits inside the joint
            start = d.ne + d.nf + d.nl
            J = d.efc_J.reshape(d.nefc, self.m.nv)  # dense (the plant's option says so)
            np.dot(d.efc_force[start:d.nefc], J[start:], out=self._contact)
            np.subtract(con, self._contact, out=self._contact)
            con = self._contact
        sim_kernel.read(self._qpos, self._qvel, self._qfrc_act, self._qfrc_pas, con, self._qadr64, self._dadr64,
                        state.position, state.velocity, state.effort)
        self._report_fault(state)

    def write(self, command: HardwareCommand) -> None:
        if command.mode != CommandMode.TORQUE:
            raise ValueError("the MuJoCo Sawyer is torque-driven")
        sim_kernel.clip(command.effort, self._lo, self._hi, self._ctrl)
        if self._pushed:
            self._apply_pushes()
        mujoco.mj_step(self.m, self.d)


class SimPositionBackend(SimBackend):
    """The same MuJoCo arm behind a position interface, as an industrial arm's controller offers one (a UR's
    servoJ): it takes joint position setpoints, tracks them with its own stiff servo and gravity compensation,
    takes no torques, and reads an endpoint wrench from a wrist force/torque sensor (the contact and applied
    forces on the links from the sensor's link outward, at the tip, base axes). Interaction control runs as
    admittance here; collision detection has no joint torques to work with."""

    capabilities = frozenset({Capability.POSITION, Capability.WRENCH, Capability.SIM_TIME})

    def __init__(self, rm: RobotModel, initial_q: np.ndarray | None = None, obstacles=None,
                 sensor_link: str | None = None, tip: str | None = None):
        """``sensor_link``: the link the wrist force/torque sensor sits on (default: the last arm joint's)."""
        super().__init__(rm, initial_q, obstacles)
        c = rm.cfg.sim.get("position_servo") or {}
        self.kp = np.asarray(c.get("kp", [10000.0, 10000.0, 5000.0, 5000.0, 1000.0, 1000.0, 300.0, 50.0]), float)
        self.kd = np.asarray(c.get("kd", [200.0, 200.0, 100.0, 100.0, 20.0, 20.0, 6.0, 2.0]), float)
        self.sensor_link = sensor_link
        self.tip = tip or rm.cfg.tips[0]

    def connect(self) -> None:
        super().connect()
        m = self.m
        n = len(self._qadr)
        for name, g in (("kp", self.kp), ("kd", self.kd)):
            if len(g) != n:
                raise ValueError(f"sim.position_servo.{name} has {len(g)} values: the arm (and head) has {n} joints")
        if self.sensor_link is None:
            root = int(m.jnt_bodyid[m.joint(self.rm.cfg.joint_names[-1]).id])
        else:
            root = m.body(self.sensor_link).id
        self._sensed = np.array([b for b in range(m.nbody) if self._descends(b, root)])
        self._tip_site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, self.tip)
        self._f6 = np.zeros(6)
        self._held = self._qpos[self._qadr].copy()  # where its brakes hold it
        self.braked = False

    def brake(self) -> None:
        """Its own brakes (as an industrial arm's controller has): hold where it is, ignore commands."""
        if not self.braked:
            self._qpos.take(self._qadr, out=self._held)
            self.braked = True

    def enable(self) -> None:
        self.braked = False

    def _descends(self, b: int, root: int) -> bool:
        while b > 0:
            if b == root:
                return True
            b = int(self.m.body_parentid[b])
        return False

    def read(self, state: HardwareState) -> None:
        super().read(state)
        self._sense(state.wrench)

    def _sense(self, out: np.ndarray) -> None:
        """The wrench the world exerts on the links beyond the sensor, at the tip (force N, torque Nm, base axes)."""
        d, m = self.d, self.m
        p = d.site_xpos[self._tip_site]
        out[:] = 0.0
        sensed = self._sensed
        for k in range(d.ncon):
            c = d.contact[k]
            b1, b2 = int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])
            in1, in2 = b1 in sensed, b2 in sensed
            if in1 == in2:
                continue
            mujoco.mj_contactForce(m, d, k, self._f6)
            f = c.frame.reshape(3, 3).T @ self._f6[:3]  # on geom2, from geom1
            if in1:
                f = -f
            out[:3] += f
            out[3:] += np.cross(c.pos - p, f)
        for b in sensed:
            w = self._xfrc[b]
            if w.any():  # applied at the body's centre of mass
                out[:3] += w[:3]
                out[3:] += w[3:] + np.cross(d.xipos[b] - p, w[:3])

    def write(self, command: HardwareCommand) -> None:
        if command.mode != CommandMode.POSITION:
            raise ValueError("this arm takes joint positions")
        q = self._qpos[self._qadr]
        v = self._qvel[self._dadr]
        bias = self.d.qfrc_bias[self._dadr]  # gravity and Coriolis: the controller's own model
        if self.braked:
            np.multiply(self.kp, self._held - q, out=self._tmp)
            self._tmp -= self.kd * v
        else:
            np.multiply(self.kp, command.position - q, out=self._tmp)
            self._tmp += self.kd * (command.velocity - v)
        self._tmp += bias
        np.maximum(self._tmp, self._lo, out=self._ctrl)
        np.minimum(self._ctrl, self._hi, out=self._ctrl)
        if self._pushed:
            self._apply_pushes()
        mujoco.mj_step(self.m, self.d)
