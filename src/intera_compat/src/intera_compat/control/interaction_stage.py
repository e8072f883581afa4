"""Interaction control as a stage of the cycle, between the arbiter and the safety chain's setpoint pass.

It drives the arm joints around the reference of whichever source is active (its q, v in this cycle's setpoint),
except under the brakes, the safety holds, zero-G and TORQUE_MODE (the cycle says when it may engage). Two laws:

* ``ImpedanceStage`` — a torque arm: the Cartesian impedance's joint torques go to the setpoint (torque-only
  joints); what it pushes with, within its bound, is not a collision for the detection;
* ``AdmittanceStage`` — an arm that takes positions and measures the endpoint wrench: the admittance's joint
  command becomes the setpoint; an arm with freedrive carries a constrained zero-G itself, one with force mode
  regulates the FORCE axes itself.

The InteractionControlCommand is latched (``params``; None: off): the SDK re-sends the same one at 10 Hz and only
changes act.
"""
from __future__ import annotations

import abc
import math

import numpy as np

from ..config import RobotConfig
from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState
from .interaction import CartesianAdmittance, CartesianImpedance, InteractionLimits, InteractionParams

# rad: a safety-chain cut this large while an arm's force mode moves axes of its own stops that (``rebase``; smaller
# ones are the chain's shaping of an arm in motion)
FORCE_MODE_CUT = 0.01
# the edges ``InteractionStage.step`` returns
ENGAGED, RELEASED = 1, -1
# what ``InteractionStage.command`` made of a command
UNCHANGED, IGNORED, KEPT_REFERENCE, NEW_REFERENCE = 0, 1, 2, 3


def interaction_limits(cfg: RobotConfig) -> InteractionLimits:
    """``control.interaction``; its ``spring_wrench`` defaults to collision detection's over-wrench thresholds
    (the impedance's own push never reaches what would count as a collision)."""
    c = dict(cfg.control.get("interaction") or {})
    cd = cfg.control.get("collision_detection") or {}
    if "spring_wrench" not in c and cd:
        c["spring_wrench"] = (float(cd.get("force", 100.0)), float(cd.get("torque", 15.0)))
    return InteractionLimits.from_config(c)


class InteractionStage(abc.ABC):
    def __init__(self, law, n_arm: int):
        self.law = law  # the Cartesian law (its K, D, F, e go to the state record)
        self.n_arm = n_arm
        self.params: InteractionParams | None = None
        self.engaged = False
        self.failures = 0  # cycles whose law gave nothing usable (a singular configuration, a bad wrench)

    def command(self, words: np.ndarray, may_begin: bool) -> int:
        """A new InteractionControlCommand; ``may_begin``: the robot is active and no safety hold has the arm.
        Turning it on, changing its parameters (unless ``disable_reference_resetting``) and turning it off put the
        reference where the arm is (NEW_REFERENCE: the cycle holds there)."""
        p = InteractionParams(words, self.n_arm)
        old = self.params
        if p.same_as(old) or (old is None and not p.active):
            return UNCHANGED
        if p.active and not may_begin:
            return IGNORED  # (stopped, disabled, faulted, held: interaction ends and cannot begin)
        self.params = p if p.active else None
        if p.active:
            self.law.set(p)
        return NEW_REFERENCE if not p.active or not p.disable_reset or old is None else KEPT_REFERENCE

    def moved(self, reset: bool) -> None:
        """The reference was put where the arm is (``reset``) or kept, after a command."""

    def step(self, on: bool, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand, source, holding: bool,
             detection) -> int:
        """This cycle's interaction on the setpoint (``on``: it may engage; ``source``: the active one, which a
        bounded reference rebases; ``holding``: that source is the hold). Returns ENGAGED / RELEASED on an edge."""
        engaged = on and self.params is not None
        edge = 0
        if engaged != self.engaged:
            self.engaged = engaged
            edge = ENGAGED if engaged else RELEASED
            if engaged:
                self._start(hw)
            elif detection is not None:
                detection.allow[:] = 0.0
                detection.allow_force = detection.allow_torque = 0.0
        self._clear(cmd)
        if engaged:
            self._apply(hw, sp, cmd, source, holding, detection)
        return edge

    def rebase(self, sp: Setpoint, source, cmd: HardwareCommand) -> None:
        """The safety chain held this cycle's setpoint back: the source continues from what got through."""
        source.rebase(sp)

    def commanded(self, cmd: HardwareCommand) -> None:
        """The command that went out after the law and the safety chain."""

    @abc.abstractmethod
    def _start(self, hw: HardwareState) -> None:
        """Engaged: the law starts from where the arm is."""

    def _clear(self, cmd: HardwareCommand) -> None:
        """Each cycle before the law: command rows the law asks for anew each cycle go back to off."""

    @abc.abstractmethod
    def _apply(self, hw, sp, cmd, source, holding, detection) -> None:
        """The law on this cycle's setpoint."""


class ImpedanceStage(InteractionStage):
    def __init__(self, law: CartesianImpedance, n_arm: int, limits: InteractionLimits, torque_loop: bool):
        super().__init__(law, n_arm)
        self._window = limits.reference_window
        self._dev, self._out = np.zeros(n_arm), np.zeros(n_arm, dtype=bool)
        self._torque_loop = torque_loop  # link-side torques measured: the impedance closes a torque loop

    def _start(self, hw: HardwareState) -> None:
        self.law.start()

    def _apply(self, hw, sp, cmd, source, holding, detection) -> None:
        imp = self.law
        i = imp.arm
        if not holding:
            self._bound_reference(hw, sp, source, i)
        if self._torque_loop:
            imp.compensate(hw.effort[i])
        if not imp.compute(hw.position, hw.velocity, sp.q, sp.v):
            self.failures += 1  # (a singular configuration): position control holds this cycle
            return
        np.add(imp.tau, imp.comp, out=sp.tau[i])
        sp.torque_only[i] = True
        sp.fixed[i] = False
        if detection is not None:  # what the controller pushes with, within its bound, is not a collision (the
            w = imp.F_world  # next cycle's detection)
            r = imp.bound(w)
            np.abs(imp.tau, out=detection.allow[i])
            detection.allow[i] *= r
            detection.allow_force = r * math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
            detection.allow_torque = r * math.sqrt(w[3] * w[3] + w[4] * w[4] + w[5] * w[5])

    def _bound_reference(self, hw: HardwareState, sp: Setpoint, source, i: slice) -> None:
        """A moving reference under impedance (a stream, a POSITION target, a trajectory) is kept within
        ``interaction.reference_window`` of each measured joint, and the source pulled back with it: the safety
        chain's own window does not see joints driven by torque, and a reference running on against an obstacle
        would wind up the spring (the force is bounded apart, by ``spring_wrench``)."""
        q, out, w, dev = hw.position[i], self._out, self._window, self._dev
        np.subtract(sp.q[i], q, out=dev)
        np.abs(dev, out=dev)
        np.greater(dev, w, out=out)
        if not np.count_nonzero(out):
            return
        np.subtract(sp.q[i], q, out=dev)
        np.clip(dev, -w, w, out=dev)
        dev += q
        np.copyto(sp.q[i], dev, where=out)
        np.copyto(sp.v[i], 0.0, where=out)
        np.copyto(sp.a[i], 0.0, where=out)
        source.rebase(sp)

    def commanded(self, cmd: HardwareCommand) -> None:
        if self.engaged and self._torque_loop:
            self.law.commanded(cmd.effort[self.law.arm])


class AdmittanceStage(InteractionStage):
    def __init__(self, law: CartesianAdmittance, n_arm: int, force_mode: bool, freedrive: bool):
        super().__init__(law, n_arm)
        self._force_mode, self._freedrive = force_mode, freedrive
        self._cartesian_on = False  # the command's force-mode / freedrive rows are set
        n = law.n
        self._source_q, self._source_v, self._cut, self._kept_q, self._kept_v = (np.zeros(n) for _ in range(5))

    def moved(self, reset: bool) -> None:
        if self.params is not None and self.engaged:
            self.law.reference_moved(reset)  # the offset is recomputed against the (new) reference

    def _start(self, hw: HardwareState) -> None:
        self.law.start(hw.position[self.law.arm])

    def _clear(self, cmd: HardwareCommand) -> None:
        if self._cartesian_on:  # (the arm's force mode / freedrive: asked anew each cycle they stay on)
            cmd.cartesian[:] = 0.0
            self._cartesian_on = False

    def _apply(self, hw, sp, cmd, source, holding, detection) -> None:
        ad = self.law
        if ad.free is not None and self._freedrive:
            ad.start(hw.position[ad.arm])  # (at rest where the arm is: nothing jumps when freedrive ends)
            ad.hand_freedrive(cmd.free_axes, cmd.free_frame)
            self._cartesian_on = True
            sp.track(ad.arm, ad.q_cmd, ad.v_cmd, 0.0)
            return
        if not ad.compute(hw.position, hw.wrench, sp.q):
            self.failures += 1  # (a bad wrench, a singular step): the last command holds
            ad.hold()
        if self._force_mode:  # (after a failed step too: as last cycle, not a stop and a start)
            ad.hand_force(cmd.force_axes, cmd.force_wrench, cmd.force_frame)
            self._cartesian_on = True
        self._source_q[:] = sp.q[ad.arm]  # the source's own reference, for a rebase by the safety chain's cut
        self._source_v[:] = sp.v[ad.arm]
        sp.track(ad.arm, ad.q_cmd, ad.v_cmd, 0.0)

    def rebase(self, sp: Setpoint, source, cmd: HardwareCommand) -> None:
        """The admittance continues from what got through, and the source's own reference moves by the chain's cut
        only (not by the admittance's offset, which would feed the offset back into the reference), so a velocity
        stream or trajectory does not wind up."""
        ad = self.law
        i, cut = ad.arm, self._cut
        np.subtract(sp.q[i], sp.source_q[i], out=cut)
        ad.rebase(sp.q[i])
        if ad.delegated.any() and np.abs(cut).max() > FORCE_MODE_CUT:
            ad.hold_back()  # (the arm's force mode took it beyond what the chain allows: the loop takes over)
            cmd.cartesian[:2] = 0.0
        if not cut.any():
            return
        kept_q, kept_v = self._kept_q, self._kept_v
        kept_q[:], kept_v[:] = sp.q[i], sp.v[i]
        np.add(self._source_q, cut, out=sp.q[i])
        sp.v[i] = self._source_v
        source.rebase(sp)
        sp.q[i], sp.v[i] = kept_q, kept_v
