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
FOLLOW_ACCEL = 0.8  # of the joints' acceleration limits: a command that follows an arm moving itself changes no faster
WALL_BAND = 0.1  # of a wall's distance: the outward push of an arm's force mode fades to nothing across it
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
    admittance_speed: tuple = (0.5, 1.5)  # m/s, rad/s: the virtual endpoint never moves faster than this
    admittance_max_lag: float = 0.1  # rad: the command never leads the measured joints by more (anti-windup)
    rotation_wall_torque: float = 30.0  # Nm: the rotational wall's push saturates here (it is damped, too)
    # N, Nm: the impedance's spring never pushes harder than this — the pose error K acts on is kept within
    # spring_wrench / K of the arm (the loop's default: collision detection's over-wrench thresholds) ...
    spring_wrench: tuple = (100.0, 15.0)
    reference_window: float = 0.1  # rad: ... and a moving reference (a stream, a trajectory) within this of each joint
    # an arm that senses no force (no joint torques, no wrist F/T) runs a max_impedance-everywhere command as its
    # position control only when this is set: rigid in contact, with nothing to bound its push (refused by default)
    rigid_without_force_sensing: bool = False

    def __post_init__(self):
        """Every figure finite and > 0 (a zero would divide by zero in the cycle); pairs are (linear, angular)."""
        pairs = ("k_cap", "k_top", "d_default", "d_cap", "f_cap", "motion_limit", "admittance_mass",
                 "admittance_speed", "spring_wrench")
        scalars = ("bandwidth_hz", "kns_cap", "torque_rate", "admittance_max_lag", "rotation_wall", "reference_window",
                   "rotation_wall_torque", "admittance_damping_ratio", "min_damping_ratio")
        for name in pairs + scalars:
            v = getattr(self, name)
            try:
                a = np.asarray(v, dtype=float)
                ok = a.shape == ((2,) if name in pairs else ()) and np.isfinite(a).all() and (a > 0.0).all()
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ValueError(f"control.interaction.{name} is {v!r}: must be "
                                 f"{'two numbers (linear, angular)' if name in pairs else 'a number'}, finite, > 0")

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
    if k is None:
        if np.isin(m, (IMPEDANCE, IMPEDANCE_WITH_FORCE_LIMIT)).any():  # (zeros would leave those axes limp)
            raise ValueError("K_impedance is empty: 6 values are needed for IMPEDANCE axes")
        k = np.zeros(6)
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
    K_ns = list(K_ns)
    if n < 7 and len(K_ns) == 7:  # (the SDK's InteractionOptions always sends a Sawyer's seven)
        notes.append(f"K_nullspace has 7 values (a Sawyer's) for this {n}-joint arm: ignored")
        K_ns = []
    ns = _vector("K_nullspace", K_ns, n)
    ns = np.zeros(n) if ns is None else ns
    if (ns < 0).any():
        i = int(np.argmax(ns < 0))
        raise ValueError(f"K_nullspace[{i}] is {ns[i]:g}: stiffness must be >= 0")
    for i in np.flatnonzero(ns > limits.kns_cap):
        notes.append(f"K_nullspace[{i}] {ns[i]:g} capped to {limits.kns_cap:g}")
    np.minimum(ns, limits.kns_cap, out=ns)
    f = _vector("force_command", force, 6)
    if f is None:
        if (m == IMPEDANCE_WITH_FORCE_LIMIT).any():  # (a zero limit would leave those axes limp)
            raise ValueError("force_command is empty: 6 values are needed for IMPEDANCE_WITH_FORCE_LIMIT axes")
        f = np.zeros(6)
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
    if p.any() and not in_endpoint_frame:
        notes.append("interaction_frame.position acts with in_endpoint_frame only (a point on the tool); in the "
                     "base frame only the orientation (the axes) is used")
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
        self.force_axes = np.isin(self.modes, (FORCE, FORCE_WITH_MOTION_LIMIT))
        self.spring_axes = ~self.force_axes  # (IMPEDANCE, IMPEDANCE_WITH_FORCE_LIMIT: K acts on the pose error)
        # the controlled point: the tip, or a point on the tool (endpoint-frame coordinates)
        self.offset = w[o + n + 6:o + n + 9] if self.in_endpoint_frame else np.zeros(3)
        self.has_offset = bool(self.offset.any())

    def same_as(self, other: "InteractionParams | None") -> bool:
        return other is not None and np.array_equal(self.words, other.words)


def refusal_without_force_sensing(p: InteractionParams, rigid_ok: bool = False) -> str | None:
    """Why an arm that senses no force (no joint torques, no wrist F/T) cannot carry ``p``; None when it can.

    Anything softer than every axis IMPEDANCE at ``max_impedance``, a force axis or a force limit needs a measured
    force: refused. Every axis at ``max_impedance`` (go_to_joint_angles_in_contact.py's defaults) would be the
    arm's position control — but a Sawyer's max_impedance is a bounded spring (``spring_wrench``, and collision
    detection watches it), while a position arm that cannot feel the contact pushes into it without bound, during
    the move and in the hold after it, until the hardware's own protection trips. So that is refused too unless
    the integrator says the arm may be rigid in contact (``rigid_ok``:
    ``control.interaction.rigid_without_force_sensing``)."""
    if not p.active:
        return None
    soft = [i for i in range(6) if p.modes[i] != IMPEDANCE or not p.max_k[i]]
    if not soft:
        return None if rigid_ok else (
            "this arm senses no force (no joint torques, no wrist F/T): max_impedance on every axis would run as "
            "position control, pushing into a contact without bound — refused (control.interaction."
            "rigid_without_force_sensing: true allows it)")
    i = soft[0]
    what = (f"interaction_control_mode[{i}] is {MODE_NAMES.get(int(p.modes[i]), p.modes[i])}"
            if p.modes[i] != IMPEDANCE else f"max_impedance[{i}] is False (K_impedance {p.K[i]:g})")
    return (f"{what}: this arm senses no force (no joint torques, no wrist F/T), so it can only be stiff — "
            "IMPEDANCE with max_impedance on every axis, run as position control, and only where "
            "control.interaction.rigid_without_force_sensing allows it")


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


def default_damping(p: InteractionParams, K, d0, k_lo, D) -> None:
    """D_impedance, or its default: d0 at the K cap, scaled with √K (a constant damping ratio); force axes
    (where K is not used) get d0 itself."""
    if p.d_given:
        D[:] = p.D
        return
    np.divide(K, k_lo, out=D)
    np.sqrt(D, out=D)
    D *= d0
    np.copyto(D, d0, where=p.force_axes)


def damping_floor(p: InteractionParams, floor: np.ndarray, D) -> None:
    """D at least ``floor`` (a damping ratio's worth of K) on the axes that have a spring; force axes (K unused:
    the SDK sends 1300 there) keep the default force-mode damping."""
    np.copyto(floor, 0.0, where=p.force_axes)
    np.maximum(D, floor, out=D)


def controlled_point(p: InteractionParams, x, J, r, Jp) -> np.ndarray:
    """The controlled point's position and (into ``Jp``, when there is a tool offset) its Jacobian, from the
    tip's placement ``x`` and world-aligned Jacobian ``J``; ``r`` receives the offset in base axes."""
    if not p.has_offset:
        r[:] = 0.0
        return J
    r[:] = x.rotation @ p.offset
    Jp[:] = J
    Jp[:3] -= pin.skew(r) @ J[3:]
    return Jp


def freedrive_axes(p: InteractionParams, k_cap: np.ndarray) -> np.ndarray | None:
    """The free axes (bool, interaction frame) when ``p`` is a constrained zero-G an arm's freedrive carries out
    exactly — every axis IMPEDANCE, either free (K 0) or held (max_impedance, or K at the cap), at least one
    free, a frame fixed in the base (not ``in_endpoint_frame``), free rotations only with
    ``rotations_for_constrained_zeroG`` (freedrive knows no ±82.5° wall) — else None."""
    if not p.active or p.in_endpoint_frame or (p.modes != IMPEDANCE).any():
        return None
    free = (p.K == 0.0) & ~p.max_k
    held = p.max_k | (p.K >= k_cap)
    if not (free | held).all() or not free.any() or (free[3:].any() and not p.rotations_cz):
        return None
    return free


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
        self._ke = np.zeros(6)
        self._spring = limits.spring_wrench
        self._d_cap = np.repeat(limits.d_cap, 3)
        self._r, self._Jp = np.zeros(3), np.zeros((6, n))
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

    def _bound_error(self, p: InteractionParams, K: np.ndarray, e: np.ndarray) -> None:
        """The spring's pose error, shortened (along itself) so that its force |K e| stays within ``spring_wrench``
        (translation and rotation apart): an arm held back — a wall, a hand, the table — is pressed with a
        bounded force however far its reference went."""
        ke = self._ke
        np.multiply(K, e, out=ke)
        np.copyto(ke, 0.0, where=p.force_axes)
        for s, top in ((slice(0, 3), self._spring[0]), (slice(3, 6), self._spring[1])):
            f = math.sqrt(float(ke[s] @ ke[s]))
            if f > top:
                np.multiply(e[s], top / f, out=e[s], where=p.spring_axes[s])

    def bound(self, F_world: np.ndarray) -> float:
        """The share (≤ 1) of the wrench ``F_world`` that is within ``spring_wrench``: what collision detection
        may take as the controller's own push."""
        f = math.sqrt(float(F_world[:3] @ F_world[:3]))
        t = math.sqrt(float(F_world[3:] @ F_world[3:]))
        r = 1.0
        if f > self._spring[0]:
            r = self._spring[0] / f
        if t > self._spring[1]:
            r = min(r, self._spring[1] / t)
        return r

    def compute(self, q: np.ndarray, v: np.ndarray, q_ref: np.ndarray, v_ref: np.ndarray) -> bool:
        """Fill ``self.tau`` (arm joints); False if the inputs or the result are not finite, or the
        configuration is singular (the caller holds instead)."""
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            return False
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
        J = controlled_point(p, x, J, self._r, self._Jp)
        xd = J @ v[arm]
        # errors in the base frame: position, rotation vector taking the actual orientation to the reference
        e_w, xr = self._e_w, self._x_ref
        e_w[:3] = xr.translation - x.translation - self._r
        xd_ref = self._xd_ref
        if p.has_offset:  # the reference's point on the tool, and its velocity
            r_ref = xr.rotation @ p.offset
            e_w[:3] += r_ref
            xd_ref = xd_ref.copy()
            xd_ref[:3] += np.cross(xd_ref[3:], r_ref)
        e_w[3:] = pin.log3(xr.rotation @ x.rotation.T)
        # the interaction frame's axes
        Ra = x.rotation @ p.frame_rotation if p.in_endpoint_frame else p.frame_rotation
        R6 = self._R6
        R6[:3, :3] = Ra
        R6[3:, 3:] = Ra
        e = self.e
        e[:] = R6.T @ e_w
        ed = R6.T @ (xd_ref - xd)
        xd_a = R6.T @ xd
        # apparent endpoint inertia along each of those axes alone (1 / diag Λ⁻¹: the others left free)
        try:
            MiJt = np.linalg.solve(M, J.T)  # M⁻¹ Jᵀ
            lam_inv = J @ MiJt + self._reg
            lam = np.linalg.inv(lam_inv)
        except np.linalg.LinAlgError:
            return False
        lam_a = np.clip(1.0 / np.diag(R6.T @ lam_inv @ R6), 0.0, self._lam_cap)
        K, D = self.K, self.D
        np.copyto(K, np.clip(lam_a * self._w2, self._k_lo, self._k_hi), where=p.max_k)
        np.copyto(K, p.K, where=~p.max_k)
        default_damping(p, K, self._d0, self._k_lo, D)
        damping_floor(p, 2.0 * lim.min_damping_ratio * np.sqrt(K * lam_a), D)
        np.minimum(D, self._d_cap, out=D)
        self._bound_error(p, K, e)
        axis_wrench(p, K, D, e, ed, xd_a, self._mlim, self._k_hi, self.F)
        Fw = self.F_world
        Fw[:] = R6 @ self.F
        if not p.rotations_cz:
            theta = float(np.linalg.norm(e_w[3:]))
            if theta > lim.rotation_wall:  # a damped wall, its push saturated (near 180° the axis is ill-defined)
                u = e_w[3:] / theta
                push = min(self._k_hi[3] * (theta - lim.rotation_wall), lim.rotation_wall_torque)
                d_wall = max(self._d_cap[3] - float(D[3:].max()), 0.0)  # (axis + wall damping within the cap)
                Fw[3:] += (push + d_wall * max(-float(u @ xd[3:]), 0.0)) * u
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
    joints in the nullspace). Damping is there from the start: never below ``admittance_damping_ratio``, and a
    floor even where force-mode damping is disabled. The step is bounded by the joints' speed and position
    limits and the command never leads the measured joints by more than ``admittance_max_lag``; when a bound
    cuts the step, δ is recomputed from the pose actually commanded (no wind-up against a blocked arm).
    δ is kept in base axes, so a change of the interaction frame does not move the arm.

    An arm whose own controller regulates force (``hand_force``: a UR's force mode) is handed the FORCE axes;
    there (``delegated``) the offset follows the measured endpoint instead of the virtual mass, so the command
    agrees with the arm and nothing jumps when the axis comes back — at the arm's own pace, catching up on what a
    stalled loop finds it moved meanwhile within the joints' acceleration limits (``_smooth``: the safety chain
    has nothing to cut). The motion limit and rotation walls are forces handed to the arm as well (the outward
    push fading across the last ``WALL_BAND`` before them, judged where the arm is); every axis is taken back once
    a joint limit or the safety chain cut the command, or the arm itself left a joint's range, until interaction
    restarts or its parameters change (``hold_back``: the loop's limits stop what the arm moves itself). An
    arm with freedrive is put in it for a constrained zero-G it carries out exactly (``free``)."""

    def __init__(self, rm, tip: str, arm: slice, limits: InteractionLimits, dt: float, lower=None, upper=None):
        """``lower``/``upper``: the loop's position range in force for the arm's joints (views: the safety bypass
        widens it in place); without them, the model's."""
        self.rm, self.arm, self.lim, self.dt = rm, arm, limits, dt
        self.model, self.data = rm.model, rm.data
        self.fid = rm.frame_id(tip)
        self.cols = rm.perm[arm]
        n = self.n = len(self.cols)
        self.params: InteractionParams | None = None
        self.K, self.D, self.F, self.F_world, self.e = (np.zeros(6) for _ in range(5))
        self.delta = np.zeros(6)  # the endpoint's offset from the reference, base axes
        self.delta_v = np.zeros(6)
        self.q_cmd = np.zeros(n)
        self.v_cmd = np.zeros(n)
        self._mass = np.repeat(limits.admittance_mass, 3)
        self._k_lo, self._k_hi = np.repeat(limits.k_cap, 3), np.repeat(limits.k_top, 3)
        self._d0 = np.repeat(limits.d_default, 3)
        self._mlim = np.repeat(limits.motion_limit, 3)
        # free axes (K = 0) still get a tenth of the K cap's damping: a position arm has no friction to stop a drift
        self._d_min = 0.2 * limits.admittance_damping_ratio * np.sqrt(self._k_lo * self._mass)
        self._speed = limits.admittance_speed
        vmax = np.asarray(rm.model.velocityLimit, float)[self.cols]
        vmax = np.where(np.isfinite(vmax) & (vmax > 0.0), vmax, 1.0)
        self._dq_max = vmax * dt
        if lower is not None and upper is not None:  # (a config's range tighter than the URDF's is the one in force)
            self._q_lo, self._q_hi = lower, upper
        else:
            lo, hi = (np.asarray(a, float)[self.cols] for a in (rm.model.lowerPositionLimit,
                                                                rm.model.upperPositionLimit))
            bounded = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
            self._q_lo, self._q_hi = np.where(bounded, lo, -np.inf), np.where(bounded, hi, np.inf)
        self._lag = limits.admittance_max_lag
        self._cut = False  # a bound cut the last step: recompute δ from the commanded pose
        self._q = np.zeros(rm.model.nq)
        self._R6 = np.zeros((6, 6))
        self._err = np.zeros(6)
        self._da, self._dva, self._acc, self._tmp = (np.zeros(6) for _ in range(4))
        self._r, self._Jp = np.zeros(3), np.zeros((6, n))
        self._q_new = np.zeros(n)
        self._q_prev = np.zeros(n)  # the command before the last step, ...
        self._J_last = np.zeros((6, n))  # ... the Jacobian it was taken with ...
        self._xd_ref = np.zeros(6)  # ... and the reference's velocity then (differenced, base axes)
        self._p_ref_prev, self._R_ref_prev, self._has_ref = np.zeros(3), np.eye(3), False
        self._w = np.zeros(6)
        self._lam2 = 1e-4 * np.eye(6)
        self._ns_rate = limits.admittance_nullspace_rate * dt / limits.kns_cap
        self.delegated = np.zeros(6, dtype=bool)  # interaction-frame axes the arm's force mode regulates
        self._meas = np.zeros(6)  # the measured endpoint's offset from the reference (base axes) ...
        self._meas_prev, self._meas_ok = np.zeros(6), False  # ... last cycle's, when it was measured then
        self._pace = np.zeros(6)  # the arm's own rate along the delegated axes (interaction axes)
        self._vt = np.zeros(6)  # the target's velocity (base axes) ...
        self._qt, self._sg, self._sw = np.zeros(n), np.zeros(n), np.zeros(n)  # (the smoothing's work arrays)
        # ... and the most a command that follows the arm changes its step in a cycle (the joints' acceleration
        # limits, a margin within the safety chain's: it has nothing to shape)
        amax = np.asarray(rm.cfg.limits.accel, float)[arm]
        self._dstep = FOLLOW_ACCEL * np.where(np.isfinite(amax) & (amax > 0.0), amax, 1.0) * dt * dt
        self._pos, self._Ra = np.zeros(3), np.eye(3)  # the controlled point and the interaction frame, last cycle
        self._f_cap = np.repeat(limits.f_cap, 3)
        self._held_back = False  # no axis is handed out until interaction restarts or its parameters change
        self.free: np.ndarray | None = None  # freedrive's free axes for these parameters (None: not a freedrive)

    def set(self, params: InteractionParams) -> None:
        self.params = params
        self.free = freedrive_axes(params, self._k_lo)
        self._held_back = False

    def start(self, q: np.ndarray) -> None:
        """Interaction takes the arm (or its reference was reset) at measured joint positions ``q`` (arm
        joints): no offset, at rest."""
        self.delegated[:] = False
        self._held_back = False
        self._meas_ok = False
        self.delta[:] = 0.0
        self.delta_v[:] = 0.0
        self.q_cmd[:] = q
        self._q_prev[:] = q
        self.v_cmd[:] = 0.0
        self._cut = False
        self._has_ref = False

    def reference_moved(self, reset: bool) -> None:
        """New parameters: δ is recomputed next cycle from the command as it stands (its lead over the arm —
        a contact's force — is kept; a changed tool point or frame moves nothing); ``reset``: the reference
        was put where the arm is, the offset starts at rest."""
        self._cut = True
        self._has_ref = False
        self._meas_ok = False
        if reset:
            self.delta_v[:] = 0.0

    def rebase(self, q: np.ndarray) -> None:
        """The safety chain let only ``q`` (arm joints) through of the last command: continue from there, δ
        recomputed from it next cycle, its rate from what the chain let through (no wind-up while held)."""
        if np.array_equal(q, self.q_cmd):
            return
        self.q_cmd[:] = q
        np.subtract(q, self._q_prev, out=self.v_cmd)
        self.v_cmd /= self.dt
        np.dot(self._J_last, self.v_cmd, out=self.delta_v)
        self.delta_v -= self._xd_ref
        self._cut = True

    def hold(self) -> None:
        """No new command this cycle: the last one, at rest."""
        self.v_cmd[:] = 0.0
        self.delta_v[:] = 0.0

    def hand_force(self, axes: np.ndarray, wrench: np.ndarray, frame: np.ndarray) -> None:
        """Fill an arm's force-mode request (``HardwareCommand`` rows: compliant axes, wrench, task frame) from
        this cycle's parameters and offset; the axes handed out are ``delegated`` from the next cycle on. The
        walls stay the arm's too: beyond FORCE_WITH_MOTION_LIMIT's limit, or the ±82.5° rotation, the outward push
        is dropped and the wall pushes back (the stiffest impedance, within the force caps); as a force the
        controller regulates, it settles without the overshoot an admittance behind a servo's delay has."""
        p, d = self.params, self.delegated
        np.copyto(d, p.force_axes)
        if self._held_back:
            d[:] = False
        axes[:] = d
        np.multiply(p.force, d, out=wrench)
        da = self._da
        for i in range(6):
            if d[i] and p.modes[i] == FORCE_WITH_MOTION_LIMIT:
                lim = self._mlim[i]
                self._wall(wrench, i, abs(da[i]) - lim, math.copysign(1.0, da[i]), self._k_hi[i], WALL_BAND * lim)
        theta = float(np.linalg.norm(da[3:]))
        wall = self.lim.rotation_wall
        if not p.rotations_cz and theta > (1.0 - WALL_BAND) * wall:
            for i in range(3, 6):
                if d[i]:
                    self._wall(wrench, i, theta - wall, da[i] / theta, self._k_hi[i], WALL_BAND * wall)
        np.clip(wrench, -self._f_cap, self._f_cap, out=wrench)
        frame[:3] = self._pos
        frame[3:] = pin.log3(self._Ra)

    @staticmethod
    def _wall(wrench: np.ndarray, i: int, over: float, out: float, k: float, band: float) -> None:
        """Axis ``i`` is ``over`` beyond a wall in direction ``out`` (its share of the outward direction): the
        outward push fades to nothing across ``band`` before the wall (no step), beyond it the wall pushes back."""
        if wrench[i] * out > 0.0:
            wrench[i] *= min(max(-over / band, 0.0), 1.0)
        if over > 0.0:
            wrench[i] -= out * k * over

    def hold_back(self) -> None:
        """A joint limit or the safety chain cut the command: no axis is handed to the arm until interaction
        restarts or its parameters change (what the arm's force mode moves must stop, and stay stopped)."""
        self._held_back = True
        self.delegated[:] = False

    def hand_freedrive(self, axes: np.ndarray, frame: np.ndarray) -> None:
        """Fill an arm's freedrive request (``HardwareCommand`` rows: free axes, feature frame: the interaction
        frame's axes at the base's origin)."""
        axes[:] = self.free
        frame[:3] = 0.0
        frame[3:] = pin.log3(self.params.frame_rotation)

    def _follow_arm(self, R6: np.ndarray, da: np.ndarray, dva: np.ndarray) -> None:
        """The delegated axes' offset ``da`` is where the arm is (it moves them itself), its rate ``dva`` the arm's
        own since last cycle (interaction axes; within ``admittance_speed``: a loop that stalled finds the arm
        further on, a gap ``_smooth`` closes rather than a pace)."""
        d, pace, w = self.delegated, self._pace, self._tmp
        np.copyto(da, R6.T @ self._meas, where=d)
        if self._meas_ok:
            np.subtract(self._meas, self._meas_prev, out=w)
            w /= self.dt
            self._cap_norm(w[:3], self._speed[0])
            self._cap_norm(w[3:], self._speed[1])
            np.dot(R6.T, w, out=pace)
        else:
            pace[:] = 0.0
        np.copyto(dva, pace, where=d)

    def _smooth(self, qn: np.ndarray, J: np.ndarray, R6: np.ndarray, dva: np.ndarray, xd_ref: np.ndarray) -> None:
        """The command ``qn`` (arm joints) of an arm that moves axes itself, as one step from the last command that
        changes the last step by at most the joints' acceleration (``FOLLOW_ACCEL`` of their limits): at the
        target's own pace (``dva``, the reference's ``xd_ref``), closing the rest of the way — what a stalled loop
        finds the arm moved meanwhile, a correction of the last cycle — no faster than it still arrives at that
        pace (a square-root law), in place. The arm's measured motion is no command: followed as it is, a stall's
        jump would be a step the safety chain cuts, and each cut rebases the offsets of the axes the loop holds
        (the command would drift about the arm, out to the following window)."""
        dt, qt, g, w, ds = self.dt, self._qt, self._sg, self._sw, self._dstep
        vt = self._vt
        np.dot(R6, dva, out=vt)
        vt += xd_ref
        qt[:] = J.T @ np.linalg.solve(J @ J.T + self._lam2, vt)  # the target's pace (rad/s) ...
        qt *= dt
        np.subtract(qn, self.q_cmd, out=g)  # ... and the gap beyond it (rad)
        g -= qt
        np.abs(g, out=w)  # the most of it one cycle closes: from steps shrinking by ds, still stopping on it
        w *= 8.0 * ds
        w += ds * ds
        np.sqrt(w, out=w)
        w -= ds
        w *= 0.5
        np.minimum(w, np.abs(g), out=w)
        np.copysign(w, g, out=w)
        w += qt  # the step: within the last one ± ds, and the joints' speed limits
        np.multiply(self.v_cmd, dt, out=g)
        np.clip(w, g - ds, g + ds, out=w)
        np.clip(w, -self._dq_max, self._dq_max, out=w)
        np.add(self.q_cmd, w, out=qn)

    def _fk(self, q_arm: np.ndarray, q_full: np.ndarray):
        self._q[:] = 0.0
        self.rm.to_pin(q_full, self._q)
        self._q[self.cols] = q_arm
        J = pin.computeFrameJacobian(self.model, self.data, self._q, self.fid, pin.LOCAL_WORLD_ALIGNED)[:, self.cols]
        return self.data.oMf[self.fid], J

    @staticmethod
    def _cap_norm(v: np.ndarray, top: float) -> None:
        s = float(np.linalg.norm(v))
        if s > top:
            v *= top / s

    def compute(self, q: np.ndarray, wrench: np.ndarray, q_ref: np.ndarray) -> bool:
        """Advance one cycle: ``q`` measured (all joints), ``wrench`` the measured external wrench at the tip
        (base axes), ``q_ref`` the reference (all joints). Results in ``q_cmd`` / ``v_cmd`` (arm joints). False
        (and nothing changed) when an input or the step is not finite."""
        if not (np.isfinite(q).all() and np.isfinite(wrench).all() and np.isfinite(q_ref).all()):
            return False
        p, lim, arm = self.params, self.lim, self.arm
        x_ref, J = self._fk(q_ref[arm], q_ref)
        R_ref = x_ref.rotation.copy()
        p_ref = x_ref.translation.copy()
        if p.has_offset:
            p_ref += R_ref @ p.offset
        xd_ref = self._xd_ref  # the reference's velocity (a moving reference: a stream, a trajectory)
        if self._has_ref:
            np.subtract(p_ref, self._p_ref_prev, out=xd_ref[:3])
            xd_ref[3:] = pin.log3(R_ref @ self._R_ref_prev.T)
            xd_ref /= self.dt
        else:
            xd_ref[:] = 0.0
        self._p_ref_prev[:], self._R_ref_prev[:], self._has_ref = p_ref, R_ref, True
        delegating = bool(self.delegated.any())
        if delegating:  # where the arm's endpoint is (the delegated axes' offset follows it)
            xm = self._fk(q[arm], q)[0]
            self._meas[:3] = xm.translation - p_ref
            if p.has_offset:
                self._meas[:3] += xm.rotation @ p.offset
            self._meas[3:] = pin.log3(xm.rotation @ R_ref.T)
        x, J = self._fk(self.q_cmd, q)
        J = controlled_point(p, x, J, self._r, self._Jp)
        pos = x.translation + self._r
        if self._cut:  # back-calculation: δ is where the last (cut) command put the endpoint
            self.delta[:3] = pos - p_ref
            self.delta[3:] = pin.log3(x.rotation @ R_ref.T)
            self._cut = False
        Ra = x.rotation @ p.frame_rotation if p.in_endpoint_frame else p.frame_rotation
        self._pos[:], self._Ra[:] = pos, Ra
        R6 = self._R6
        R6[:3, :3] = Ra
        R6[3:, 3:] = Ra
        K, D = self.K, self.D
        np.copyto(K, self._k_hi, where=p.max_k)
        np.copyto(K, p.K, where=~p.max_k)
        default_damping(p, K, self._d0, self._k_lo, D)
        damping_floor(p, 2.0 * lim.admittance_damping_ratio * np.sqrt(K * self._mass), D)
        np.maximum(D, self._d_min, out=D)
        # the controller's wrench at the offset (e = reference − virtual pose = −δ), plus the measured one,
        # in the interaction frame's axes
        da, dva = self._da, self._dva
        np.dot(R6.T, self.delta, out=da)
        np.dot(R6.T, self.delta_v, out=dva)
        np.negative(da, out=self.e)
        np.negative(dva, out=self._tmp)
        axis_wrench(p, K, D, self.e, self._tmp, dva, self._mlim, self._k_hi, self.F)
        if p.disable_damping:  # (a position arm has no friction: the floor stays)
            np.multiply(self._d_min, dva, out=self._tmp)
            self._tmp *= p.force_axes
            self.F -= self._tmp
        acc, w = self._acc, self._w
        w[:] = wrench
        if p.has_offset:  # the measured moment about the tool point
            w[3:] -= np.cross(self._r, wrench[:3])
        np.dot(R6.T, w, out=acc)
        acc += self.F
        acc /= self._mass
        acc *= self.dt
        dva += acc
        self._cap_norm(dva[:3], self._speed[0])
        self._cap_norm(dva[3:], self._speed[1])
        np.multiply(dva, self.dt, out=self._tmp)
        da += self._tmp
        if delegating:
            self._follow_arm(R6, da, dva)
        if not p.rotations_cz:
            theta = float(np.linalg.norm(da[3:]))
            if theta > lim.rotation_wall:  # the wall: the offset goes no further
                da[3:] *= lim.rotation_wall / theta
                dva[3:] = 0.0
        self._meas_prev[:], self._meas_ok = self._meas, delegating
        self.F_world[:] = R6 @ self.F
        # the target pose and one damped least-squares step toward it from the last command
        d_w = R6 @ da
        err = self._err
        err[:3] = p_ref + d_w[:3] - pos
        err[3:] = pin.log3(pin.exp3(d_w[3:]) @ R_ref @ x.rotation.T)
        dq = J.T @ np.linalg.solve(J @ J.T + self._lam2, err)
        # nullspace drift toward the reference's joints (K_nullspace sets its rate)
        pull = p.K_ns * self._ns_rate * (q_ref[arm] - self.q_cmd)
        dq += pull - J.T @ np.linalg.solve(J @ J.T + self._lam2, J @ pull)
        if not np.isfinite(dq).all():
            return False
        # the joints' speed limits and the lead over the measured joints (the step scaled as a whole: its
        # direction stays; an arm that moves axes itself: the step smoothed, ``_smooth``), then their position
        # limits (and a joint already beyond the lead band: back into it)
        q_meas = q[arm]
        qn = self._q_new
        if delegating:
            np.add(self.q_cmd, dq, out=qn)
            self._smooth(qn, J, R6, dva, xd_ref)
            cut = False
        else:
            scale = 1.0 / max(1.0, float(np.max(np.abs(dq) / self._dq_max)))
            room = self._q_new
            for sign in (1.0, -1.0):  # how far each joint may go toward +/- before it leads by admittance_max_lag
                np.multiply(sign, q_meas, out=room)
                room += self._lag
                room -= sign * self.q_cmd
                moving = sign * dq > 0.0
                if moving.any():
                    allowed = float(np.min(np.maximum(room[moving], 0.0) / (sign * dq[moving])))
                    scale = min(scale, allowed)
            cut = scale < 1.0
            np.multiply(dq, scale, out=qn)
            qn += self.q_cmd
        if (np.abs(qn - q_meas) > self._lag + 1e-12).any():
            np.clip(qn, q_meas - self._lag, q_meas + self._lag, out=qn)
            cut = True
        if (qn < self._q_lo).any() or (qn > self._q_hi).any():
            np.clip(qn, self._q_lo, self._q_hi, out=qn)
            cut = True
            if self.delegated.any():
                self.hold_back()
        if delegating and ((q_meas < self._q_lo).any() or (q_meas > self._q_hi).any()):
            self.hold_back()  # (the arm's own force mode took a joint beyond its range: the loop takes over)
        self._q_prev[:] = self.q_cmd
        self._J_last[:] = J
        np.subtract(qn, self.q_cmd, out=self.v_cmd)
        self.v_cmd /= self.dt
        self.q_cmd[:] = qn
        np.dot(R6, da, out=self.delta)
        if cut:  # the offset moves only as fast as the cut step lets it (δ itself: next cycle)
            np.dot(J, self.v_cmd, out=self.delta_v)
            self.delta_v -= xd_ref
            self._cut = True
        else:
            np.dot(R6, dva, out=self.delta_v)
        return True
