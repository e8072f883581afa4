"""Interaction control (Intera 5.2's impedance / force controller at the endpoint), ROS-free.

A command (``InteractionControlCommand``) is validated and packed by the listener (``pack``) into one ring
message; the loop unpacks it (``InteractionParams``) and, while it is active, drives the arm joints with
``CartesianImpedance`` (torque arms) around the reference the active setpoint source produces (a hold where
interaction began, a POSITION stream, a whole trajectory: ``go_to_joint_angles_in_contact``).

Per axis of the interaction frame (x y z translations, then rotations; the frame's axes are
``interaction_frame``'s orientation in the base frame, or in the endpoint frame with ``in_endpoint_frame``):

=============================  ===========================================================================
IMPEDANCE                       F = K e + D ė            (e: reference − actual pose, ė: their velocities)
FORCE                           F = f − D ẋ              (no damping with ``disable_damping_in_force_control``)
IMPEDANCE_WITH_FORCE_LIMIT      F = clip(K e + D ė, ±|f|)
FORCE_WITH_MOTION_LIMIT         F = f − D ẋ within 0.12 m / 0.2618 rad of the reference; beyond it the push
                                outward is dropped and a wall (the stiffest impedance) holds the arm there
=============================  ===========================================================================

then τ = Jᵀ F + N (K_ns (q_ref − q) − D_ns q̇) with N the dynamically consistent nullspace projector
(nullspace stiffness changes no endpoint force), rate limited, plus gravity compensation by the law.
Rotations beyond ±82.5° of the reference meet a wall unless ``rotations_for_constrained_zeroG``.
Stiffness is capped at 1300 N/m / 30 Nm/rad; ``max_impedance`` takes the stiffest stable value for the
configuration (the endpoint's apparent inertia Λ at ``bandwidth_hz``, within 1300–3000 N/m and 30–300 Nm/rad);
damping left empty defaults to 8 Ns/m / 2 Nms/rad at those caps, scaled with √K (a constant damping ratio).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

IMPEDANCE, FORCE, IMPEDANCE_WITH_FORCE_LIMIT, FORCE_WITH_MOTION_LIMIT = 1, 2, 3, 4
MODE_NAMES = {IMPEDANCE: "IMPEDANCE", FORCE: "FORCE", IMPEDANCE_WITH_FORCE_LIMIT: "IMPEDANCE_WITH_FORCE_LIMIT",
              FORCE_WITH_MOTION_LIMIT: "FORCE_WITH_MOTION_LIMIT"}


@dataclass(frozen=True)
class InteractionLimits:
    """Intera's documented limits (seed: Interaction Control Mode) and our controller's tuning."""

    k_cap: tuple = (1300.0, 30.0)  # N/m, Nm/rad: K_impedance is capped here
    k_top: tuple = (3000.0, 300.0)  # max_impedance never exceeds these ...
    bandwidth_hz: float = 8.0  # ... nor Λ (2π bandwidth)² (and never goes below k_cap)
    d_default: tuple = (8.0, 2.0)  # Ns/m, Nms/rad at k_cap when D_impedance is empty
    d_cap: tuple = (1000.0, 10.0)  # Ns/m, Nms/rad: D_impedance is capped here (beyond, D·dt/Λ nears the 1 kHz
    # loop's stability bound of 2 for a wrist's ~0.01 kg m²: the damping would chatter instead of damp)
    min_damping_ratio: float = 0.3  # the plant's own damping (a Sawyer's joint servos): never less than this
    kns_cap: float = 10.0  # Nm/rad
    nullspace_damping: float = 0.5  # Nms/rad per joint in the nullspace, plus 2√(K_ns·0.05)
    f_cap: tuple = (50.0, 5.0)  # N, Nm
    motion_limit: tuple = (0.12, 0.2618)  # m, rad: FORCE_WITH_MOTION_LIMIT
    rotation_wall: float = math.radians(82.5)
    torque_rate: float = 2000.0  # Nm/s per joint: the interaction torque's slew limit
    torque_loop_rate: float = 50.0  # 1/s: the joint-torque loop's integral rate (0: off) ...
    torque_loop_cap: float = 1.0  # Nm: ... and the most it adds per joint (it takes the joints' friction off)
    admittance_mass: tuple = (10.0, 1.0)  # kg, kg m²: position arms' virtual endpoint inertia ...
    admittance_damping_ratio: float = 0.7  # ... and its least damping ratio (a position servo adds none)
    admittance_nullspace_rate: float = 1.0  # 1/s at K_nullspace 10: how fast the joints drift to the reference

    @classmethod
    def from_config(cls, c: dict | None) -> "InteractionLimits":
        c = dict(c or {})
        if "rotation_wall_deg" in c:
            c["rotation_wall"] = math.radians(float(c.pop("rotation_wall_deg")))
        fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in c.items()}
        return cls(**fields)


def command_words(n: int) -> int:
    """Ring words of one packed command for an ``n``-joint arm."""
    return _O_NS + n + 6 + 7 + 4


# packed layout: [active, mode(6), K(6), max_k(6), D(6), d_given, K_ns(n), f(6), frame pos(3) quat xyzw(4),
#                 in_endpoint, disable_damping, disable_reset, rotations_cz]
_O_MODE, _O_K, _O_MAXK, _O_D, _O_DGIVEN, _O_NS = 1, 7, 13, 19, 25, 26


def _vector(name: str, x, length: int, allow_empty: bool = True) -> np.ndarray | None:
    a = np.asarray(list(x), dtype=float)
    if len(a) == 0 and allow_empty:
        return None
    if len(a) != length:
        raise ValueError(f"{name} has {len(a)} values, expected {length}")
    bad = np.flatnonzero(~np.isfinite(a))
    if len(bad):
        raise ValueError(f"{name}[{bad[0]}] is {a[bad[0]]}: not a finite number")
    return a


def pack(active: bool, modes, K, max_k, D, K_ns, force, frame_position, frame_orientation, endpoint_name: str,
         in_endpoint_frame: bool, disable_damping: bool, disable_reset: bool, rotations_cz: bool, n: int,
         endpoint: str, limits: InteractionLimits) -> tuple[np.ndarray, list[str]]:
    """One command as ring words, and notes on values that were capped. Raises ValueError naming the field
    (the command is then refused as a whole and nothing changes). ``frame_orientation`` is x, y, z, w.

    Empty ``max_impedance``, ``K_nullspace``, ``force_command`` mean all False / zeros; empty
    ``interaction_control_mode`` means IMPEDANCE on every axis; empty ``D_impedance`` means the defaults.
    An inactive command is packed without looking at the rest (the SDK's exit message carries defaults).
    """
    out = np.zeros(command_words(n))
    notes: list[str] = []
    out[0] = 1.0 if active else 0.0
    if not active:
        return out, notes
    if endpoint_name not in ("", endpoint):
        raise ValueError(f"endpoint_name {endpoint_name!r}: interaction control acts at {endpoint!r} only")
    m = _vector("interaction_control_mode", modes, 6)
    m = np.full(6, float(IMPEDANCE)) if m is None else m
    bad = [i for i, x in enumerate(m) if x not in MODE_NAMES]
    if bad:
        raise ValueError(f"interaction_control_mode[{bad[0]}] is {m[bad[0]]:g}: use 1 IMPEDANCE, 2 FORCE, "
                         f"3 IMPEDANCE_WITH_FORCE_LIMIT or 4 FORCE_WITH_MOTION_LIMIT")
    k = _vector("K_impedance", K, 6)
    k = np.zeros(6) if k is None else k
    if (k < 0).any():
        i = int(np.argmax(k < 0))
        raise ValueError(f"K_impedance[{i}] is {k[i]:g}: stiffness must be >= 0")
    cap = np.repeat(limits.k_cap, 3)
    for i in np.flatnonzero(k > cap):
        notes.append(f"K_impedance[{i}] {k[i]:g} capped to {cap[i]:g}")
    np.minimum(k, cap, out=k)
    mk = np.asarray(list(max_k), dtype=bool) if len(max_k) else np.zeros(6, dtype=bool)
    if len(mk) != 6:
        raise ValueError(f"max_impedance has {len(mk)} values, expected 6")
    d = _vector("D_impedance", D, 6)
    if d is not None:
        if (d < 0).any():
            i = int(np.argmax(d < 0))
            raise ValueError(f"D_impedance[{i}] is {d[i]:g}: damping must be >= 0")
        dcap = np.repeat(limits.d_cap, 3)
        for i in np.flatnonzero(d > dcap):
            notes.append(f"D_impedance[{i}] {d[i]:g} capped to {dcap[i]:g}")
        np.minimum(d, dcap, out=d)
    ns = _vector("K_nullspace", K_ns, n)
    ns = np.zeros(n) if ns is None else ns
    if (ns < 0).any():
        i = int(np.argmax(ns < 0))
        raise ValueError(f"K_nullspace[{i}] is {ns[i]:g}: stiffness must be >= 0")
    for i in np.flatnonzero(ns > limits.kns_cap):
        notes.append(f"K_nullspace[{i}] {ns[i]:g} capped to {limits.kns_cap:g}")
    np.minimum(ns, limits.kns_cap, out=ns)
    f = _vector("force_command", force, 6)
    f = np.zeros(6) if f is None else f
    fcap = np.repeat(limits.f_cap, 3)
    for i in np.flatnonzero(np.abs(f) > fcap):
        notes.append(f"force_command[{i}] {f[i]:g} capped to {math.copysign(fcap[i], f[i]):g}")
    np.clip(f, -fcap, fcap, out=f)
    p = _vector("interaction_frame.position", frame_position, 3, allow_empty=False)
    quat = _vector("interaction_frame.orientation", frame_orientation, 4, allow_empty=False)
    norm = float(np.linalg.norm(quat))
    if norm == 0.0:
        quat = np.array([0.0, 0.0, 0.0, 1.0])  # an unset Pose(): the base frame's axes
        notes.append("interaction_frame.orientation is all zeros: taken as identity")
    elif abs(norm - 1.0) > 0.01:
        raise ValueError(f"interaction_frame.orientation has norm {norm:.4f}: not a unit quaternion")
    else:
        quat = quat / norm
    out[_O_MODE:_O_MODE + 6] = m
    out[_O_K:_O_K + 6] = k
    out[_O_MAXK:_O_MAXK + 6] = mk
    if d is not None:
        out[_O_D:_O_D + 6] = d
        out[_O_DGIVEN] = 1.0
    o = _O_NS
    out[o:o + n] = ns
    out[o + n:o + n + 6] = f
    out[o + n + 6:o + n + 9] = p
    out[o + n + 9:o + n + 13] = quat
    out[o + n + 13:o + n + 17] = (in_endpoint_frame, disable_damping, disable_reset, rotations_cz)
    return out, notes


class InteractionParams:
    """A packed command, unpacked (views into a private copy)."""

    def __init__(self, words: np.ndarray, n: int):
        w = self.words = np.array(words, dtype=float)
        self.n = n
        self.active = bool(w[0] > 0.5)
        self.modes = w[_O_MODE:_O_MODE + 6].astype(int)
        self.K = w[_O_K:_O_K + 6]
        self.max_k = w[_O_MAXK:_O_MAXK + 6] > 0.5
        self.D = w[_O_D:_O_D + 6]
        self.d_given = bool(w[_O_DGIVEN] > 0.5)
        o = _O_NS
        self.K_ns = w[o:o + n]
        self.force = w[o + n:o + n + 6]
        x, y, z, qw = w[o + n + 9:o + n + 13]
        self.frame_rotation = pin.Quaternion(qw, x, y, z).toRotationMatrix() if self.active else np.eye(3)
        flags = w[o + n + 13:o + n + 17] > 0.5
        self.in_endpoint_frame, self.disable_damping, self.disable_reset, self.rotations_cz = (bool(b) for b in flags)

    def same_as(self, other: "InteractionParams | None") -> bool:
        return other is not None and np.array_equal(self.words, other.words)


def axis_wrench(p: InteractionParams, K, D, e, ed, xd, motion_limit, k_wall, F) -> None:
    """The controller's wrench per axis of the interaction frame (into ``F``): ``e`` reference − actual pose,
    ``ed`` their velocity difference, ``xd`` the actual velocity (what force-mode damping brakes)."""
    for i in range(6):
        mode = p.modes[i]
        if mode == IMPEDANCE:
            F[i] = K[i] * e[i] + D[i] * ed[i]
        elif mode == IMPEDANCE_WITH_FORCE_LIMIT:
            f = abs(p.force[i])
            F[i] = min(max(K[i] * e[i] + D[i] * ed[i], -f), f)
        else:  # FORCE, FORCE_WITH_MOTION_LIMIT
            F[i] = p.force[i] - (0.0 if p.disable_damping else D[i] * xd[i])
            if mode == FORCE_WITH_MOTION_LIMIT:
                over = abs(e[i]) - motion_limit[i]  # e: reference − actual, so −e is the displacement
                if over > 0.0:
                    out = -math.copysign(1.0, e[i])  # the direction the arm went
                    if F[i] * out > 0.0:
                        F[i] = 0.0  # no more push outward
                    F[i] -= out * (k_wall[i] * over + D[i] * max(xd[i] * out, 0.0))


class CartesianImpedance:
    """τ for the arm joints (``arm``: a slice of the config order) of a torque-controlled arm, from the
    measured state and the reference (``q_ref``, ``v_ref``), under ``params``. Uses the loop's RobotModel
    (its pinocchio data) and a second data for the reference pose."""

    def __init__(self, rm, tip: str, arm: slice, limits: InteractionLimits, dt: float):
        self.rm, self.arm, self.lim, self.dt = rm, arm, limits, dt
        self.model = rm.model
        self.fid = rm.frame_id(tip)
        self.data = rm.data
        self.data_ref = rm.model.createData()
        self.cols = rm.perm[arm]  # pinocchio velocity indices of the arm joints (revolute: idx_v = idx_q)
        n = self.n = len(self.cols)
        self.params: InteractionParams | None = None
        self._fresh = True
        self.K = np.zeros(6)  # in effect this cycle (max_impedance resolved)
        self.D = np.zeros(6)
        self.F = np.zeros(6)  # the commanded endpoint wrench, interaction-frame axes
        self.F_world = np.zeros(6)
        self.e = np.zeros(6)  # reference − actual, interaction-frame axes
        self.tau = np.zeros(n)  # the interaction torque (before gravity), rate limited
        self._ref_key = b""
        self._x_ref = pin.SE3.Identity()
        self._xd_ref = np.zeros(6)
        self._q, self._v = np.zeros(rm.model.nq), np.zeros(rm.model.nv)
        self._R6 = np.zeros((6, 6))
        self._k_lo = np.repeat(limits.k_cap, 3)
        self._k_hi = np.repeat(limits.k_top, 3)
        self._d0 = np.repeat(limits.d_default, 3)
        self._mlim = np.repeat(limits.motion_limit, 3)
        self._w2 = (2.0 * math.pi * limits.bandwidth_hz) ** 2
        self._dstep = limits.torque_rate * dt
        self._ix = np.ix_(self.cols, self.cols)
        self._lower = np.tril_indices(n, -1)
        self._reg = 1e-4 * np.eye(6)  # (1/kg: Sawyer's Λ⁻¹ is ~0.1–10; near a singularity Λ stays finite)
        # apparent inertia used for max_impedance and the damping floor, at most this (kg, kg m²): near a
        # singularity Λ grows without bound along the lost direction, the damping with it
        self._lam_cap = np.array([30.0, 30.0, 30.0, 3.0, 3.0, 3.0])
        self._e_w = np.zeros(6)
        # the joint-torque loop (a Sawyer's series-elastic joints close one): the link-side torque the joint
        # sensors measure is driven to the torque asked for, integrating their difference — what the joints'
        # own friction and damping take away is added back (bounded by torque_loop_cap)
        self.comp = np.zeros(n)
        self._ki = limits.torque_loop_rate * dt
        self._cap = limits.torque_loop_cap
        self._asked = np.zeros(n)
        self._te = np.zeros(n)

    def set(self, params: InteractionParams) -> None:
        self.params = params

    def start(self) -> None:
        """Interaction takes the arm now: the torque ramps from zero."""
        self.tau[:] = 0.0
        self.comp[:] = 0.0
        self._fresh = True
        self._ref_key = b""

    def commanded(self, effort: np.ndarray) -> None:
        """After the law and the safety chain: this cycle's joint torques (arm joints). Less the torque loop's
        own share, that is what the links should feel next cycle."""
        np.subtract(effort, self.comp, out=self._asked)

    def compensate(self, measured: np.ndarray) -> None:
        """Before ``compute``: the link-side torques the joints measure now (what last cycle's command gave)."""
        if self._ki <= 0.0 or self._fresh:
            self._fresh = False
            return
        e = self._te
        np.subtract(self._asked, measured, out=e)
        e *= self._ki
        self.comp += e
        np.clip(self.comp, -self._cap, self._cap, out=self.comp)

    def _reference(self, q_ref: np.ndarray, v_ref: np.ndarray) -> None:
        key = q_ref.tobytes() + v_ref.tobytes()
        if key == self._ref_key:
            return  # a hold: the same reference pose every cycle
        self._ref_key = key
        self.rm.to_pin(q_ref, self._q)
        self.rm.to_pin(v_ref, self._v)
        d = self.data_ref
        pin.forwardKinematics(self.model, d, self._q, self._v)
        self._x_ref = pin.updateFramePlacement(self.model, d, self.fid).copy()
        self._xd_ref[:] = pin.getFrameVelocity(self.model, d, self.fid, pin.LOCAL_WORLD_ALIGNED).vector

    def compute(self, q: np.ndarray, v: np.ndarray, q_ref: np.ndarray, v_ref: np.ndarray) -> bool:
        """Fill ``self.tau`` (arm joints); False if the result is not finite (the caller holds instead)."""
        p, lim, arm = self.params, self.lim, self.arm
        self._reference(q_ref, v_ref)
        m, d = self.model, self.data
        rm = self.rm
        rm.to_pin(q, self._q)
        rm.to_pin(v, self._v)
        M = pin.crba(m, d, self._q)[self._ix]  # (upper triangle filled)
        M[self._lower] = M.T[self._lower]
        J = pin.computeFrameJacobian(m, d, self._q, self.fid, pin.LOCAL_WORLD_ALIGNED)[:, self.cols]
        x = d.oMf[self.fid]
        xd = J @ v[arm]
        # errors in the base frame: position, rotation vector taking the actual orientation to the reference
        e_w = self._e_w
        e_w[:3] = self._x_ref.translation - x.translation
        e_w[3:] = pin.log3(self._x_ref.rotation @ x.rotation.T)
        # the interaction frame's axes
        Ra = x.rotation @ p.frame_rotation if p.in_endpoint_frame else p.frame_rotation
        R6 = self._R6
        R6[:3, :3] = Ra
        R6[3:, 3:] = Ra
        e = self.e
        e[:] = R6.T @ e_w
        ed = R6.T @ (self._xd_ref - xd)
        xd_a = R6.T @ xd
        # apparent endpoint inertia in those axes (for max_impedance and the damping floor)
        MiJt = np.linalg.solve(M, J.T)  # M⁻¹ Jᵀ
        lam = np.linalg.inv(J @ MiJt + self._reg)
        lam_a = np.clip(np.diag(R6.T @ lam @ R6), 0.0, self._lam_cap)
        K, D = self.K, self.D
        np.copyto(K, np.clip(lam_a * self._w2, self._k_lo, self._k_hi), where=p.max_k)
        np.copyto(K, p.K, where=~p.max_k)
        if p.d_given:
            D[:] = p.D
        else:
            D[:] = self._d0 * np.sqrt(K / self._k_lo)
        np.maximum(D, 2.0 * lim.min_damping_ratio * np.sqrt(K * lam_a), out=D)
        axis_wrench(p, K, D, e, ed, xd_a, self._mlim, self._k_hi, self.F)
        Fw = self.F_world
        Fw[:] = R6 @ self.F
        if not p.rotations_cz:
            theta = float(np.linalg.norm(e_w[3:]))
            if theta > lim.rotation_wall:
                Fw[3:] += (self._k_hi[3] * (theta - lim.rotation_wall) / theta) * e_w[3:]
        tau_task = J.T @ Fw
        # nullspace stiffness through the dynamically consistent projector
        dq = q_ref[arm] - q[arm]
        d_ns = lim.nullspace_damping + 2.0 * np.sqrt(p.K_ns * 0.05)
        t0 = p.K_ns * dq - d_ns * v[arm]
        Jbar = MiJt @ lam
        tau_ns = t0 - J.T @ (Jbar.T @ t0)
        target = tau_task + tau_ns
        if not np.isfinite(target).all():
            return False
        # slew-rate limit
        step = np.clip(target - self.tau, -self._dstep, self._dstep)
        self.tau += step
        return True


class CartesianAdmittance:
    """Interaction control on an arm that takes joint positions (and measures the endpoint wrench): a virtual
    mass-spring-damper offset δ of the endpoint from the reference, driven by the measured wrench and the
    controller's own per-axis wrench (the same laws as the torque arms'), integrated every cycle and turned into
    joint positions by one damped-least-squares step from the last command (plus a drift toward the reference's
    joints in the nullspace). Damping is there from the start: never below ``admittance_damping_ratio``."""

    def __init__(self, rm, tip: str, arm: slice, limits: InteractionLimits, dt: float):
        self.rm, self.arm, self.lim, self.dt = rm, arm, limits, dt
        self.model, self.data = rm.model, rm.data
        self.fid = rm.frame_id(tip)
        self.cols = rm.perm[arm]
        n = self.n = len(self.cols)
        self.params: InteractionParams | None = None
        self.K, self.D, self.F, self.F_world, self.e = (np.zeros(6) for _ in range(5))
        self.delta = np.zeros(6)  # the endpoint's offset from the reference, interaction-frame axes
        self.delta_v = np.zeros(6)
        self.q_cmd = np.zeros(n)
        self.v_cmd = np.zeros(n)
        self._mass = np.repeat(limits.admittance_mass, 3)
        self._k_lo, self._k_hi = np.repeat(limits.k_cap, 3), np.repeat(limits.k_top, 3)
        self._d0 = np.repeat(limits.d_default, 3)
        self._mlim = np.repeat(limits.motion_limit, 3)
        self._q = np.zeros(rm.model.nq)
        self._R6 = np.zeros((6, 6))
        self._err = np.zeros(6)
        self._lam2 = 1e-4 * np.eye(6)
        self._ns_rate = limits.admittance_nullspace_rate * dt / limits.kns_cap

    def set(self, params: InteractionParams) -> None:
        self.params = params

    def start(self, q: np.ndarray) -> None:
        """Interaction takes the arm at measured joint positions ``q`` (arm joints)."""
        self.delta[:] = 0.0
        self.delta_v[:] = 0.0
        self.q_cmd[:] = q
        self.v_cmd[:] = 0.0

    def _fk(self, q_arm: np.ndarray, q_full: np.ndarray):
        self._q[:] = 0.0
        self.rm.to_pin(q_full, self._q)
        self._q[self.cols] = q_arm
        J = pin.computeFrameJacobian(self.model, self.data, self._q, self.fid, pin.LOCAL_WORLD_ALIGNED)[:, self.cols]
        return self.data.oMf[self.fid], J

    def compute(self, q: np.ndarray, wrench: np.ndarray, q_ref: np.ndarray) -> bool:
        """Advance one cycle: ``q`` measured (all joints), ``wrench`` the measured external wrench at the tip
        (base axes), ``q_ref`` the reference (all joints). Results in ``q_cmd`` / ``v_cmd`` (arm joints)."""
        p, lim, arm = self.params, self.lim, self.arm
        x_ref, _ = self._fk(q_ref[arm], q_ref)
        x_ref = x_ref.copy()
        x, J = self._fk(self.q_cmd, q)
        Ra = x.rotation @ p.frame_rotation if p.in_endpoint_frame else p.frame_rotation
        R6 = self._R6
        R6[:3, :3] = Ra
        R6[3:, 3:] = Ra
        K, D = self.K, self.D
        np.copyto(K, self._k_hi, where=p.max_k)
        np.copyto(K, p.K, where=~p.max_k)
        D[:] = p.D if p.d_given else self._d0 * np.sqrt(K / self._k_lo)
        np.maximum(D, 2.0 * lim.admittance_damping_ratio * np.sqrt(K * self._mass), out=D)
        # (free axes, K = 0, still get a tenth of the K cap's: a position arm has no friction to stop a drift)
        np.maximum(D, 0.2 * lim.admittance_damping_ratio * np.sqrt(self._k_lo * self._mass), out=D)
        # the controller's wrench at the offset (e = reference − virtual pose = −δ), plus the measured one
        self.e[:] = -self.delta
        axis_wrench(p, K, D, self.e, -self.delta_v, self.delta_v, self._mlim, self._k_hi, self.F)
        f_ext = R6.T @ wrench
        acc = (self.F + f_ext) / self._mass
        self.delta_v += acc * self.dt
        self.delta += self.delta_v * self.dt
        if not p.rotations_cz:
            theta = float(np.linalg.norm(self.delta[3:]))
            if theta > lim.rotation_wall:  # the wall: the offset goes no further
                self.delta[3:] *= lim.rotation_wall / theta
                self.delta_v[3:] = 0.0
        self.F_world[:] = R6 @ self.F
        # the target pose and one damped least-squares step toward it from the last command
        d_w = R6 @ self.delta
        err = self._err
        err[:3] = x_ref.translation + d_w[:3] - x.translation
        err[3:] = pin.log3(pin.exp3(d_w[3:]) @ x_ref.rotation @ x.rotation.T)
        dq = J.T @ np.linalg.solve(J @ J.T + self._lam2, err)
        # nullspace drift toward the reference's joints (K_nullspace sets its rate)
        pull = p.K_ns * self._ns_rate * (q_ref[arm] - self.q_cmd)
        dq += pull - J.T @ np.linalg.solve(J @ J.T + self._lam2, J @ pull)
        if not np.isfinite(dq).all():
            return False
        self.q_cmd += dq
        np.divide(dq, self.dt, out=self.v_cmd)
        return True
