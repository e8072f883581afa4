"""The cycle's safety events: the suppression topics and the bypass into the safety context, the position range
kept around the arm, and the overrides that take the arm — the safety E-stop latch, a detected collision, the
cuff's zero-G. Each ends a running trajectory and interaction control; when one lets go the arm holds where it is
until a new command (a streaming client's next one resumes its mode)."""
from __future__ import annotations

from ..data.codes import R_COLLISION, R_NONE, R_SAFETY_STOP, R_ZERO_G, TRAJ_RUNNING, TRAJ_STOPPING
from .layouts import SUPPRESS_COLLISION_AVOIDANCE, SUPPRESS_CONTACT_SAFETY, SUPPRESS_CUFF


class SafetyEvents:
    def __init__(self, cycle):
        self.c = cycle
        self.changed = False  # a detection, E-stop or bypass began or ended: publish the safety record now
        self._zero_g_was = False

    def held_by(self) -> int:
        """The override holding the arm now, as a trajectory's reason (R_NONE: none)."""
        c = self.c
        if c.estop_hold.on:
            return R_SAFETY_STOP
        if c.collision_hold.on:
            return R_COLLISION
        if c.zero_g.engaged():
            return R_ZERO_G
        return R_NONE

    def stop(self, reason: int) -> None:
        """A safety hold takes the arm: a running trajectory ends with ``reason``; when the hold ends the arm holds
        where it is until a new command."""
        c = self.c
        t = c.trajectory
        if t.state in (TRAJ_RUNNING, TRAJ_STOPPING):
            t.deactivate(reason)
        c.arbiter.selected = c.hold

    def safety_estop(self, on: bool, now: float) -> None:
        """The safety E-stop latch (/realtime_loop/safety_estop) set or released: the arm brakes from where it is
        measured, the head stops dead, and neither takes a command while it holds; interaction control ends."""
        c = self.c
        if on == c.estop_hold.on:
            return
        c.estop_hold.on = on
        self.changed = True
        head = c.head
        if on:
            self.stop(R_SAFETY_STOP)
            self._end_interaction(now)
            if head is not None:
                head.hold_here(c.hw)
        elif head is not None:
            head.release(c.sp, c.hw, now)

    def _end_interaction(self, now: float) -> None:
        """Interaction control ends: the arm holds where it is and nothing re-engages it but a new command (the
        listener forgets the one it forwarded when it sees it off)."""
        stage = self.c.interaction
        if stage is not None and stage.params is not None:
            stage.params = None
            self.c.hold_here(now)

    def update(self, now: float) -> None:
        """This cycle's safety context and range, and the overrides the detection asks for."""
        c = self.c
        ctx, rng, sup = c.ctx, c.range, c.suppression
        active = ctx.active = c.robot_active
        # (the E-stop holds the measured position as it is, with no avoidance offsets: hector's latch)
        if rng.bypass_edge(now):  # (its timeout)
            self.changed = True
        if rng.narrowing:
            rng.narrow(c.sp.q)
        if not active or c.arbiter.active in c.measured_handover:
            rng.admit_measured(c.hw.position)  # (only where the arm is held as it is; never under a source driving it)
        on = not (sup.on(SUPPRESS_COLLISION_AVOIDANCE, now) or rng.bypass(now) or c.estop_hold.on)
        if on != ctx.avoidance:
            ctx.avoidance, self.changed = on, True
        zg = c.zero_g
        zg.allowed = not sup.on(SUPPRESS_CUFF, now)
        if zg.engaged() != self._zero_g_was:
            self._zero_g_was = not self._zero_g_was
            self.changed = True
            if self._zero_g_was:  # zero-G takes the arm: a trajectory ends; on release the arm holds where it was left
                self.stop(R_ZERO_G)
        # a hand on the cuff is not a collision
        on = not (sup.on(SUPPRESS_CONTACT_SAFETY, now) or zg.engaged())
        if on != ctx.detection:
            ctx.detection, self.changed = on, True
        det = c.detection
        if det is not None:
            if det.tripped:
                self.stop(R_COLLISION)
                self._end_interaction(now)
            if det.holding != c.collision_hold.on:
                c.collision_hold.on = c.brake.contact = c.estop_hold.contact = det.holding
                self.changed = True
