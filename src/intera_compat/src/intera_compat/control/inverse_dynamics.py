"""Torque arms: inverse dynamics (pinocchio RNEA) with PID feedback.

    a_cmd = a_d + kp (q_d − q) + kd (v_d − v) + ki ∫(q_d − q)
    τ     = RNEA(q, v, a_cmd) + b v_d + f_c sat(v_d / v_ε)   (rigid body + identified joint friction)

Gains are per joint in acceleration units (1/s², 1/s, 1/s³), so the same numbers suit heavy
shoulder and light wrist joints. The integral (clamped) removes friction-induced offset so
position commands settle far inside Intera's 0.5° tolerance. It learns only model errors (anti-windup, as an
industrial servo's conditional integration): a joint learns an error within the integral's own authority
(|kp e| ≤ integral_limit), and a larger one only while it follows its reference's velocity (|v_d − v| ≤
``STEADY_SPEED``: a load, a contact it is held against, a push that lasts — at rest or on the move); a joint whose
torque was at its limit last cycle learns nothing, and nothing is learnt (the integral keeps its value) while the
brakes stop the arm (``freeze``) or while a torque-driven joint (``torque_only``) moves: the law takes such a joint
to stand still, and the coupling of its real motion, which the torque guard shapes after the law, is no model error
(one held at rest by its client's torque leaves the others learning: a load that comes or goes meanwhile).
Fuzz runs' finds: wound up by a 47 mrad transient, and by the coupling of right_j3 driven by its torque, the
integral sat at its clamp, and held through the brakes it pulled a stopped wrist back 3.3 mrad. The friction
feed-forward (viscous ``b``,
Coulomb ``f_c`` smoothed over ``v_ε``, on the desired velocity so measurement noise does not reach
it) takes the velocity-dependent share off the feedback, which is what keeps light wrist joints on
a fast trajectory. Joints flagged ``torque_only``
get gravity compensation plus the commanded torque and no feedback; ``gravity`` False removes
gravity compensation from every joint (``suppress_gravity_compensation``).

A joint whose torque would pass its limit (``effort_limit``) gets its limit, and the other joints' torques are
worked out for the acceleration it really gets (``_within``), not clipped joint by joint: a clip drops the coupling
torques the others needed, and they move by them (a fuzz run's find: a collision hold stopping right_j3 dead at
2 rad/s drove right_j4, at rest at its limit, 35 mrad past it). The others keep their feedback: the arm never goes
limp for one joint at its limit.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState
from ..model.robot_model import RobotModel
from . import id_kernel
from .base import ControlLaw


STEADY_SPEED = id_kernel.STEADY_SPEED  # rad/s: joints this near their reference's velocity learn any error


class InverseDynamicsLaw(ControlLaw):
    def __init__(self, rm: RobotModel, kp, kd, ki, integral_limit, dt: float, viscous=None, coulomb=None,
                 friction_velocity: float = 0.02, effort_limit=None):
        self.rm = rm
        n = len(rm.joint_names)  # (the compiled kernel checks no bounds: every gain row is one per joint, or refused)
        for name, x in (("kp", kp), ("kd", kd), ("ki", ki), ("integral_limit", integral_limit), ("viscous", viscous),
                        ("coulomb", coulomb)):
            if x is not None and np.shape(x) != (n,):
                raise ValueError(f"control.{name}: {n} values, one per joint (got shape {np.shape(x)})")
        # the gains, one row each of the matrix the compiled kernel reads (``kp`` … are views: set in place)
        self._gains = g = np.zeros((id_kernel.ROWS, n))
        g[id_kernel.KP] = kp
        g[id_kernel.KD] = kd
        g[id_kernel.KI_DT] = np.asarray(ki, float) * dt
        g[id_kernel.ILIM] = integral_limit
        g[id_kernel.NILIM] = -g[id_kernel.ILIM]
        if viscous is not None:
            g[id_kernel.VISCOUS] = viscous
        if coulomb is not None:
            g[id_kernel.COULOMB] = coulomb
        self.kp, self.kd, self.ki_dt = g[id_kernel.KP], g[id_kernel.KD], g[id_kernel.KI_DT]
        self.ilim, self._nilim = g[id_kernel.ILIM], g[id_kernel.NILIM]
        self.viscous, self.coulomb = g[id_kernel.VISCOUS], g[id_kernel.COULOMB]
        self.integral = np.zeros(n)  # rad/s² contribution
        self.a_cmd = np.zeros(n)
        self.gravity = np.zeros(n)  # of the last cycle where it was computed
        self._e = np.zeros(n)
        self._inv_vf = 1.0 / friction_velocity
        self.friction = bool(np.any(self.viscous) or np.any(self.coulomb))
        self._f = np.zeros(n)
        self.effort_limit = None if effort_limit is None else np.asarray(effort_limit, float)[:n]
        self._no_limit = np.full(n, np.inf)
        self._h, self._zero = np.zeros(n), np.zeros(n)
        self._M = np.zeros((n, n))
        self._asked, self._side, self._sat = np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
        g[id_kernel.BAND] = self.ilim / np.maximum(self.kp, 1e-9)  # rad: the errors the integral learns from
        self._band = g[id_kernel.BAND]
        self._learn = np.zeros(n, dtype=bool)
        self._x = np.zeros(n)
        self._dv = np.zeros(n)
        self._steady = np.zeros(n, dtype=bool)
        self._at_limit = np.zeros(n, dtype=bool)  # last cycle: the joint's torque at its limit (no integration)
        self.scaled = 0  # cycles with a joint's torque at its limit (the others' worked out for its real motion)
        # RNEA's inputs in pinocchio's order (the kernel writes them), and the model it runs on
        self._perm = np.ascontiguousarray(rm.perm, dtype=np.int64)
        self._qp, self._vp, self._ap = np.zeros(rm.model.nq), np.zeros(rm.model.nv), np.zeros(rm.model.nv)
        self._pin_rnea = pin.rnea
        id_kernel.warm()

    def reset(self) -> None:
        self.integral[:] = 0.0
        self._at_limit[:] = False

    def _within(self, q, v, a, tau, lim, free, x) -> None:
        """τ = M·a + h + x (``x``: the friction feed-forward, less gravity where suppressed) with a joint over its
        limit: such a joint gets its limit (as it would anyway: the chain clips it) and the acceleration that torque
        gives it; the other joints keep their accelerations, and their torques are worked out for the saturated
        joints' real motion. Joints join one at a time, the greatest excess first, and one that its limit torque would
        drive beyond its own demand leaves again (a review's find: taken in all at once, a wrist over its limit only
        through the coupling got its full limit torque and ran 100 rad/s² past its position limit). Clipped one by
        one instead, the coupling torques the saturated joints no longer take are missing, and the others move by them
        (a fuzz run's find: a saturated stop drove a wrist at rest 35 mrad past its limit). Torque-driven joints
        (``free``) are not among them: the torque guard changes their torques after the law (speed cap, soft limits),
        and a coupling worked out for the motion their client's torque alone would give pushed a review's tracked
        joints 384 mrad off. An RNEA, a CRBA and small solves."""
        n = len(a)
        h, M = self._h, self._M
        self.rm.rnea(q, v, self._zero, out=h)  # Coriolis and gravity
        h += x
        self.rm.mass_matrix(q, M)
        asked = self._asked
        asked[:] = a
        sat, side = self._sat, self._side  # the joints at their limits, and the side (+1 / -1)
        sat[:] = False
        side[:] = 0.0
        for _ in range(4 * n):  # one joint in or out per pass (the greatest excess first): SNS-like, it converges
            past = sat & (side * (a - asked) > 1e-12)  # at its limit, yet driven beyond its own demand: let it go
            if past.any():
                k = int(np.argmax(np.where(past, side * (a - asked), -np.inf)))
                sat[k], side[k] = False, 0.0
            else:
                ratio = np.where(free | sat, 0.0, np.abs(tau) / lim)
                k = int(np.argmax(ratio))
                if ratio[k] <= 1.0 + 1e-9:
                    break
                sat[k], side[k] = True, np.sign(tau[k])
            rest = ~sat
            a[:] = asked
            if sat.any():
                a[sat] = np.linalg.solve(M[np.ix_(sat, sat)],
                                         side[sat] * lim[sat] - h[sat] - M[np.ix_(sat, rest)] @ asked[rest])
            np.dot(M, a, out=tau)
            tau += h
        self.scaled += 1

    def compute(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> None:
        q, v, free = hw.position, hw.velocity, sp.torque_only
        a, x, tau = self.a_cmd, self._x, cmd.effort
        # the integral (anti-windup), a = a_d + kp e + kd ė + ∫, x = the friction feed-forward, RNEA's inputs
        any_free = id_kernel.before_rnea(sp.q, sp.v, sp.a, free, q, v, self._gains, self.integral, self._at_limit, a,
                                         x, self._qp, self._vp, self._ap, self._perm, self.freeze, self.friction,
                                         self._inv_vf)
        # what the law adds to the rigid body's torque: the friction feed-forward, less gravity where it is suppressed
        # (the torque limits hold for the sum: a saturated joint's limit leaves room for them)
        g = self.gravity
        if any_free or not sp.gravity:
            self.rm.gravity(q, out=g)
            if not sp.gravity:
                x -= g
        rm = self.rm
        lim = self.effort_limit
        if id_kernel.after_rnea(self._pin_rnea(rm.model, rm.data, self._qp, self._vp, self._ap), self._perm, x,
                                self._no_limit if lim is None else lim, tau, self._at_limit):
            self._within(q, v, a, tau, lim, free, x)
            self._at_limit[:] = self._sat
        if any_free:  # a torque-driven joint gets gravity compensation (unless suppressed) and the client's torque
            e = self._e
            np.add(sp.tau, g, out=e) if sp.gravity else np.copyto(e, sp.tau)
            tau[free] = e[free]
