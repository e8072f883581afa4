"""The cycle's intake: the control record and every message on the ring to the loop — commands, robot and
safety events, trajectories, interaction, the arm's own requests — applied to the cycle's parts in arrival order."""
from __future__ import annotations

import numpy as np

from ..control.interaction_stage import IGNORED, NEW_REFERENCE, UNCHANGED
from ..data.codes import ARM_RESULT_ENABLED, ARM_WHILE_DISABLED
from .channel import TO_LOOP_WORDS
from .layouts import (MSG_ARM_REQUEST, MSG_BYPASS, MSG_COMMAND, MSG_CUFF, MSG_ENABLE, MSG_ESTOP, MSG_HEAD,
                      MSG_INTERACTION, MSG_RESET, MSG_SAFETY_ESTOP, MSG_SIM_FAULT, MSG_SIM_WRENCH, MSG_STOP,
                      MSG_SUPPRESS, MSG_TRAJ_CANCEL, MSG_TRAJ_EXECUTE, MSG_TRAJ_SCALING)


class Intake:
    def __init__(self, cycle):
        self.c = cycle
        n = cycle.n
        # preallocated views onto one message buffer
        self.msg = m = np.zeros(TO_LOOP_WORDS)
        self._mask_words, self._pos = m[1:1 + n], m[1 + n:1 + 2 * n]
        self._vel, self._acc, self._eff = m[1 + 2 * n:1 + 3 * n], m[1 + 3 * n:1 + 4 * n], m[1 + 4 * n:1 + 5 * n]
        self._mask = np.zeros(n, dtype=bool)
        self.last_command = 0.0  # loop time of the last command executed

    def run(self, now: float) -> None:
        c = self.c
        ch = c.ch
        ch.control.refresh()
        c.position.set_ratio(ch.control.local.speed_ratio[0])
        ring, msg, robot = ch.to_loop, self.msg, c.robot
        was_active = c.robot_active
        n_cmd = 0
        while True:
            k = ring.pop(msg)
            if k < 0:
                break
            kind = ring.kind
            if kind == MSG_COMMAND:
                self._command(now)
                n_cmd += 1
            elif kind == MSG_SUPPRESS:
                c.suppression.arrived(int(msg[0]), now)
            elif kind == MSG_ENABLE:
                robot.set_enable(msg[0] > 0.5)
            elif kind == MSG_STOP:
                robot.stop()
            elif kind == MSG_RESET:
                if robot.reset():
                    c.fault_code, c.fault_joint = 0, -1
                    c.backend.reset()
            elif kind == MSG_ESTOP:
                robot.buttons(hardware=robot.hardware_button, user=msg[0] > 0.5)
            elif kind == MSG_TRAJ_EXECUTE:
                self._execute_trajectory(k, now)
            elif kind == MSG_TRAJ_CANCEL:
                c.trajectory.cancel(msg[0])
            elif kind == MSG_TRAJ_SCALING:
                c.trajectory.set_scaling(msg[0], msg[1])
            elif kind == MSG_SAFETY_ESTOP:
                c.events.safety_estop(msg[0] > 0.5, now)
            elif kind == MSG_CUFF:
                c.zero_g.squeezed = msg[0] > 0.5
            elif kind == MSG_HEAD:  # (not while the brakes or the safety E-stop latch hold: the client re-sends
                if c.head is not None and c.robot_active and not c.estop_hold.on:  # until it is there)
                    c.head.command(msg[0], msg[1], int(msg[2]))
            elif kind == MSG_ARM_REQUEST:
                if int(msg[1]) in ARM_WHILE_DISABLED and c.robot_wanted:  # (the controller would stop
                    c.backend.answers.append((msg[0], float(ARM_RESULT_ENABLED), 0.0))  # taking our stream)
                else:
                    c.backend.request(msg[0], int(msg[1]), msg[2:k].copy())  # (rare: a copy is fine)
            elif kind == MSG_INTERACTION:
                self._interaction(k, now)
            elif kind == MSG_SIM_WRENCH:  # (rare: the viewer's mouse, a test's push)
                c.backend.push(int(msg[0]), msg[2:8], msg[1])
            elif kind == MSG_SIM_FAULT:
                c.backend.simulate_fault(int(msg[0]), msg[1])
            elif kind == MSG_BYPASS:
                if c.range.request_bypass(now, msg[0]):
                    c.events.changed = True
        if n_cmd > 1:
            c.counts["superseded"] += n_cmd - 1
        if c.robot_active != was_active:
            c.law.reset()  # the integral restarts with the robot (switches between sources are bumpless)
        if not c.robot_active and c.interaction is not None:
            c.interaction.params = None  # (stopped, disabled, faulted, E-stopped: it ends; a new command begins it)

    def _command(self, now: float) -> None:
        c = self.c
        if not c.robot_active or c.events.held_by():
            # disabled, safety E-stop, collision hold, zero-G: commands are not executed, and none is kept for
            # when the hold ends (a streaming client's next command after it resumes its mode)
            c.counts["ignored"] += 1
            return
        src = c.by_mode.get(int(self.msg[0]))
        if src is None or not c.adapter.supports(src.requires):
            c.counts["ignored"] += 1
            return
        mask = self._mask
        np.greater(self._mask_words, 0.5, out=mask)
        c.arbiter.select(src, c.sp, c.hw, now)
        if src is c.position:
            src.accept(mask, self._pos)
        elif src is c.velocity:
            src.accept(mask, self._vel)
        elif src is c.torque:
            src.accept(mask, self._eff)
        else:
            src.accept(mask, self._pos, self._vel, self._acc, now)
        self.last_command = now
        c.counts["commands"] += 1

    def _execute_trajectory(self, k_words: int, now: float) -> None:
        c, m, n = self.c, self.msg, self.c.n
        traj_id, order, k, scaling, tracking, late = m[0], int(m[1]), int(m[2]), m[3], int(m[4]), m[5]
        if 6 + 2 * n + k + 3 * k * n != k_words:
            c.trajectory.results.append((traj_id, 5, 2, -1))  # REJECTED, R_INVALID (malformed)
            return
        o = 6
        mask = m[o:o + n] > 0.5
        kp = m[o + n:o + 2 * n]
        o += 2 * n
        t = m[o:o + k]
        o += k
        q, v, a = (m[o + j * k * n:o + (j + 1) * k * n].reshape(k, n) for j in range(3))
        held = c.events.held_by()
        if held and c.robot_active:  # (a Sawyer refuses motion while an override holds the arm: nothing
            c.trajectory.refuse(traj_id, held)  # is kept to start by itself when the hold ends)
            return
        if c.trajectory.prepare(traj_id, order, mask, t, q, v, a, c.sp, c.robot_active, scaling, tracking, kp,
                                late):
            c.arbiter.select(c.trajectory, c.sp, c.hw, now)

    def _interaction(self, k: int, now: float) -> None:
        """A new InteractionControlCommand: an arm that can do neither impedance nor admittance ignores it (the
        listener refuses it there)."""
        c = self.c
        stage = c.interaction
        if stage is None:
            if self.msg[0] > 0.5:  # (an active one; "off" to an arm without interaction is nothing)
                c.counts["ignored"] += 1
            return
        may_begin = c.robot_active and not c.estop_hold.on and not c.collision_hold.on
        r = stage.command(self.msg[:k], may_begin)
        if r == UNCHANGED:
            return
        if r == IGNORED:
            c.counts["ignored"] += 1
            return
        reset = r == NEW_REFERENCE
        if reset:
            c.hold_here(now)
        stage.moved(reset)
