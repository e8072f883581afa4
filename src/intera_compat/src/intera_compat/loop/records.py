"""What the cycle tells the listener: the state record every cycle, the safety record (100 Hz and on a change),
and the results ring (the arm's answers, trajectories' results)."""
from __future__ import annotations

import struct

import numpy as np

from ..data.codes import POSITION_MODE
from .layouts import MSG_ARM_RESULT, MSG_TRAJ_RESULT

# scalar blocks of the state record (layouts.state_layout), in record order
_HEAD_FIELDS = ("time", "cycle", "mode", "source")
_FLAG_FIELDS = ("enabled", "stopped", "error", "estop_button", "estop_source", "ready", "homed", "gravity_suppressed",
                "speed_scaling", "fault_code", "fault_joint", "faults",
                "traj_id", "traj_state", "traj_time", "traj_duration", "traj_segment", "traj_error", "traj_scaling",
                "commands", "commands_superseded", "commands_ignored", "timeouts",
                "limit_interventions", "following_interventions", "torque_guard_interventions", "clamped_effort")


class _Scalars:
    """Consecutive float64 fields of a record written from Python values in one C call (struct converts bools, ints
    and floats itself; numpy's assignment from a tuple of mixed scalars cost ~4x as much)."""

    def __init__(self, view: np.ndarray):
        self.view = view  # (kept: the memoryview below refers to its memory)
        self._mv = memoryview(view).cast("B")
        self._pack = struct.Struct(f"={len(view)}d").pack_into

    def write(self, *values) -> None:
        self._pack(self._mv, 0, *values)


class _Absent:
    """Stands in for a safety plugin the config leaves out: its counters read zero."""
    interventions = 0
    clamped = 0


class Records:
    def __init__(self, cycle):
        self.c = c = cycle
        n = c.n
        o = c.ch.state.local
        off = c.ch.state.layout.offsets()
        p0, c0 = off["position"][0], off["cmd_position"][0]
        assert off["effort"][0] == p0 + 2 * n and off["cmd_acceleration"][0] == c0 + 2 * n
        self._measured = o.buf[p0:p0 + 3 * n].reshape(3, n)  # position, velocity, effort
        self._setpoint = o.buf[c0:c0 + 3 * n].reshape(3, n)  # cmd_position, cmd_velocity, cmd_acceleration
        d0 = off["traj_position"][0]
        assert off["traj_acceleration"][0] == d0 + 2 * n
        self._traj = o.buf[d0:d0 + 3 * n].reshape(3, n)[:, :c.cfg.n_arm]  # the trajectory's sample (arm joints)
        # the scalar fields, written with one tuple assignment per block instead of ~30 separate stores
        for block in (_HEAD_FIELDS, _FLAG_FIELDS):  # each block: consecutive scalars in exactly this order
            if any(off[f] != (off[block[0]][0] + k, 1) for k, f in enumerate(block)):
                raise RuntimeError("the state record's layout and Records.publish disagree")
        self._head = _Scalars(o.buf[off["time"][0]:off["time"][0] + len(_HEAD_FIELDS)])
        self._flags = _Scalars(o.buf[off["enabled"][0]:off["enabled"][0] + len(_FLAG_FIELDS)])
        absent = _Absent()
        self._limits = c.chain.get("joint_limits") or absent
        self._following = c.following or absent
        self._torque_guard = c.chain.get("torque_guard") or absent
        self._out = np.zeros(4)
        self.cycles = 0

    def results(self) -> None:
        c, o = self.c, self._out
        answers, ring = c.backend.answers, c.ch.from_loop
        while answers:
            o[:3] = answers.popleft()
            ring.push(MSG_ARM_RESULT, o[:3])
        res = c.trajectory.results
        if res:
            for r in res:
                o[:] = r
                ring.push(MSG_TRAJ_RESULT, o)
            res.clear()

    def push(self, kind: int, *words: float) -> None:
        """A message on the results ring (rare: a fault)."""
        o = self._out
        o[:len(words)] = words
        self.c.ch.from_loop.push(kind, o[:len(words)])

    def publish(self, now: float) -> None:
        c = self.c
        rec = c.ch.state
        hw, sp, r, cnt, t, ready = c.hw, c.sp, c.robot, c.counts, c.trajectory, c.arm_ready
        active = c.arbiter.active
        self.cycles += 1
        self._head.write(now, self.cycles, c.mode_of.get(id(active), POSITION_MODE), c.source_ids.get(id(active), -1))
        self._measured[:] = hw.block
        self._setpoint[:] = sp.block[:3]
        self._traj[:] = t.sample
        o = rec.local
        o.cmd_effort[:] = c.adapter.command.effort
        self._flags.write(  # _FLAG_FIELDS, in that order
            r.enabled and ready, r.stopped, r.error, r.estop_button, r.estop_source, r.ready and ready, r.homed,
            not sp.gravity, t.speed, c.fault_code, c.fault_joint, cnt["faults"],
            t.traj_id, t.state, t.time, t.traj.duration, t.segment, t.error, t.applied_scaling,
            cnt["commands"], cnt["superseded"], cnt["ignored"], cnt["timeouts"],
            self._limits.interventions, self._following.interventions,
            self._torque_guard.interventions, self._torque_guard.clamped)
        stage = c.interaction
        o.interaction_on[0] = stage is not None and stage.params is not None
        if stage is not None and (stage.engaged or o.interaction_engaged[0]):
            o.interaction_engaged[0] = stage.engaged
            law = stage.law
            o.interaction_k[:] = law.K
            o.interaction_d[:] = law.D
            o.interaction_wrench[:] = law.F
            o.interaction_error[:] = law.e
        head = c.head
        if head is not None:  # (braked: heading nowhere)
            braked = active is c.brake
            o.head_target[0] = hw.position[c.n - 1] if braked else head.target  # (the head: the last joint)
            o.head_mode[0], o.head_blocked[0] = head.mode, head.blocked and not braked
        rec.publish_local()

    def publish_safety(self) -> None:
        """The safety record (100 Hz and when the events say it changed; not every cycle: it is P + n + 30 words)."""
        c = self.c
        rec = c.ch.safety
        o = rec.local
        now = o.time[0] = c.now
        ca, det, ctx = c.avoidance, c.detection, c.ctx
        if ca is not None:
            if not ca.engaged or ctx.trajectory:  # its distances were not kept up to date: refresh them
                ca.tight.update(c.sp.q)
            ca.tight.fill()
            d = ca.tight.d
            k = int(d.argmin())
            o.avoid_engaged[0] = ca.engaged and not ctx.trajectory
            o.min_distance[0], o.min_pair[0] = d[k], k
            o.distance_scale[0], o.effective_scale[0] = ca.distance_scale, ca.effective_scale
            o.worst_derivative[0], o.pairs_in_zone[0], o.repelling[0] = ca.worst_derivative, ca.in_zone, ca.repelling
            o.pair_active[:] = ca.active
        if det is not None:
            o.detect_engaged[0] = ctx.detection and ctx.active
            o.collision_state[0], o.collision_cause[0] = det.holding, det.state
            o.collision_joint[0], o.collision_value[0], o.collision_threshold[0] = det.joint, det.value, det.threshold
            o.collision_metric[0], o.collisions[0] = det.metric, det.count
            o.residual[:] = det.residual
            o.wrench[:] = det.wrench
        zg, until = c.zero_g, c.range.bypass_until
        o.estop[0], o.bypass[0], o.zero_g[0], o.cuff[0] = c.estop_hold.on, now < until, zg.engaged(), zg.squeezed
        o.bypass_remaining[0] = max(until - now, 0.0)
        rec.publish_local()
        c.events.changed = False
