"""Safety across features (issue 32, items 1–5): what an override, a stop or a stream's end leaves behind never
moves the arm by itself — each case the sequence that used to, stepped through the real cycle (OfflineLoop)."""
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.control.interaction import FORCE, IMPEDANCE, InteractionLimits, pack
from intera_compat.data import codes as T
from intera_compat.data.codes import POSITION_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from intera_compat.hardware.sim import SimBackend
from intera_compat.loop.layouts import (MSG_CUFF, MSG_ENABLE, MSG_HEAD, MSG_INTERACTION, MSG_RESET, MSG_SAFETY_ESTOP,
                                        MSG_STOP, MSG_SUPPRESS, SUPPRESS_CONTACT_SAFETY)
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel
from intera_compat.safety.collision_detection import IMPACT, NONE
from test_trajectory import min_jerk

CFG = load_config()
ARM = CFG.joint_names
LIM = InteractionLimits.from_config(CFG.control.get("interaction"))
TABLE = {"name": "table", "type": "box", "size": [0.3, 0.5, 0.05], "pos": [0.65, 0.16, 0.0]}  # top at z = 0.05


def started(obstacles=()):
    L = OfflineLoop(backend=SimBackend(RobotModel(CFG), CFG.full_pose("neutral"), obstacles=obstacles))
    L.run(0.1)
    return L


def interaction_words(active=True, modes=(IMPEDANCE,) * 6, K=(1300, 1300, 1300, 30, 30, 30), force=(0.0,) * 6,
                      D=()):
    w, _ = pack(active, modes, K, (False,) * 6, D, (5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0), force, (0, 0, 0),
                (0, 0, 0, 1), "right_hand", False, False, False, False, 7, "right_hand", LIM)
    return w


def hold_on(L, kind):
    """Engage the safety E-stop latch or zero-G; returns the trajectory reason it names."""
    if kind == "safety_estop":
        L.event(MSG_SAFETY_ESTOP, 1)
        L.run(0.05)
        assert L.cycle.arbiter.active is L.cycle.estop_hold
        return T.R_SAFETY_STOP
    L.event(MSG_CUFF, 1)
    L.run(0.05)
    assert L.cycle.arbiter.active is L.cycle.zero_g
    return T.R_ZERO_G


def hold_off(L, kind):
    L.event(MSG_SAFETY_ESTOP if kind == "safety_estop" else MSG_CUFF, 0)


class PinnedCollision:
    """A detected impact held for as long as the test says (``on``), through the detection's own trip."""

    def __init__(self, L):
        det = L.cycle.detection
        self.on = False
        real = det.on_state

        def on_state(hw):
            code = real(hw)
            if self.on:
                if det.state == NONE:
                    det._trip(IMPACT, 0, 1.0, 1.0, 1.0, L.cycle.now + 1e9)
            elif det.hold_until > L.cycle.now + 1e8:
                det.hold_until = L.cycle.now  # (released: its own rules end the hold now)
            return code
        det.on_state = on_state


# ---- 1: a goal sent while the arm is held -------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["safety_estop", "cuff", "collision"])
def test_a_trajectory_sent_while_an_override_holds_the_arm_is_refused_and_nothing_moves_after(kind):
    L = started()
    pin = PinnedCollision(L)
    if kind == "collision":
        pin.on = True
        L.run(0.01)
        assert L.cycle.arbiter.active is L.cycle.collision_hold
        reason = T.R_COLLISION
    else:
        reason = hold_on(L, kind)
    q0 = L.arm_q
    tid = L.trajectories.execute(*min_jerk(q0, q0 + np.array([0.4, 0, 0, 0, 0, 0, 0]), 1.0, 21))
    L.run(0.05)
    res = L.trajectories.results.get(tid)
    assert res is not None and res.status == T.REJECTED and res.reason == reason  # at once, naming the cause
    if kind == "collision":
        pin.on = False
    else:
        hold_off(L, kind)
    L.run(1.5)  # longer than the trajectory
    assert np.abs(L.arm_q - q0).max() < 0.01
    assert L.cycle.arbiter.active is L.cycle.hold


@pytest.mark.parametrize("kind", ["safety_estop", "cuff"])
def test_a_position_target_given_before_an_override_is_not_resumed_after_it(kind):
    L = started()
    q0 = L.arm_q
    L.send(POSITION_MODE, ARM, position=q0 + np.array([0.5, 0, 0, 0, 0, 0, 0]))  # POSITION_MODE, once
    L.run(0.05)
    hold_on(L, kind)
    moved = L.arm_q
    hold_off(L, kind)
    L.run(1.0)
    assert np.abs(L.arm_q - moved).max() < 0.02  # the stop's own settling, not the 0.5 rad move


def test_commands_during_a_collision_hold_are_ignored_and_not_run_when_it_ends():
    L = started()
    pin = PinnedCollision(L)
    pin.on = True
    L.run(0.01)
    ignored = L.state.local.commands_ignored[0]
    q0 = L.arm_q
    L.send(POSITION_MODE, ARM, position=q0 + np.array([0.4, 0, 0, 0, 0, 0, 0]))
    L.run(0.05)
    assert L.state.local.commands_ignored[0] == ignored + 1  # it arrived, and was not executed
    pin.on = False
    L.run(1.0)
    assert np.abs(L.arm_q - q0).max() < 0.01


# ---- 2: a stream that stops on a braking point --------------------------------------------------------------
def test_a_stream_ending_on_a_decelerating_point_never_reverses():
    L = started()
    j = 1
    # a stream moving right_j1 at 0.2 rad/s, then one last point braking at 8 rad/s²
    q0, v = L.arm_q, np.zeros(7)
    v[j] = 0.2
    for k in range(30):  # (it starts from rest: joint_limits brings the reference up to speed)
        L.send(TRAJECTORY_MODE, ARM, position=q0 + v * 0.01 * k, velocity=v, acceleration=np.zeros(7))
        L.run(0.01)
    q = q0 + v * 0.3
    a = np.zeros(7)
    v[j], a[j] = 0.2, -8.0
    L.send(TRAJECTORY_MODE, ARM, position=q, velocity=v, acceleration=a)
    lowest = np.inf
    seen = []
    for _ in range(600):
        L.step()
        seen.append(L.state.local.cmd_position[j])
        lowest = min(lowest, L.state.local.position[j])
    # where it comes to rest: 2.5 mm on at 8 rad/s², a little more where joint_limits brakes at the joint's limit
    stop = q[j] + 0.2 * 0.2 / (2 * min(8.0, CFG.limits.accel[j]))
    assert q[j] < max(seen) <= stop + 1e-4
    assert min(seen) >= q[j] - 1e-4  # never back against the direction of motion (it went 0.24 rad back)
    assert seen[-1] == pytest.approx(max(seen), abs=1e-6)  # and it rests where it stopped
    assert lowest >= q[j] - 0.005
    assert L.state.local.timeouts[0] >= 1  # (the stream did end: the timeout's hold took over)


# ---- 3: impedance is bounded --------------------------------------------------------------------------------
def test_impedance_driven_into_the_table_presses_with_a_bounded_force_and_the_reference_does_not_wind_up():
    L = started([TABLE])
    L.event(MSG_INTERACTION, *interaction_words())
    L.run(0.3)
    peak, worst_ref = 0.0, 0.0
    window = LIM.reference_window
    for k in range(3000):  # 3 s of driving down into the table at 0.3 rad/s on right_j1
        if k % 10 == 0:
            L.send(VELOCITY_MODE, ARM, velocity=[0, 0.3, 0, 0, 0, 0, 0])
            L.event(MSG_SUPPRESS, SUPPRESS_CONTACT_SAFETY)  # (no collision hold to end it: the bound must hold)
        L.step()
        peak = max(peak, float(np.linalg.norm(L.backend.scene_force()[:3])))
        worst_ref = max(worst_ref, float(np.abs(L.state.local.cmd_position[:7] - L.state.local.position[:7]).max()))
    force = CFG.control["collision_detection"]["force"]
    assert 20.0 < peak < 1.2 * force  # it pressed with 176 N and more, unbounded
    assert L.cycle.interaction_engaged and L.state.local.error[0] == 0
    assert worst_ref <= window + 1e-9  # the streamed reference stays within the window of the arm


def test_collision_detection_allows_only_the_bounded_push():
    L = started()
    imp = L.cycle.impedance
    F = np.array([300.0, 0, 0, 0, 0, 0])
    r = imp.bound(F)
    assert r * 300.0 == pytest.approx(CFG.control["collision_detection"]["force"])
    assert imp.bound(np.array([10.0, 0, 0, 1.0, 0, 0])) == 1.0


# ---- 4: interaction ends with stop, disable, fault, E-stop --------------------------------------------------
def hand_z(L, rm):
    return rm.fk(L.q, "right_hand").translation[2]


@pytest.mark.parametrize("end", ["stop", "disable", "safety_estop", "fault"])
def test_interaction_ends_with_a_stop_and_does_not_come_back_by_itself(end):
    L = started()
    rm = L.rm
    L.event(MSG_INTERACTION, *interaction_words(modes=(IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE),
                                                force=(0, 0, -15.0, 0, 0, 0), D=(100, 100, 300, 5, 5, 5)))
    L.run(0.05)
    assert L.cycle.interaction.params is not None and L.state.local.interaction_on[0] == 1
    if end == "stop":
        L.event(MSG_STOP)
    elif end == "disable":
        L.event(MSG_ENABLE, 0)
    elif end == "safety_estop":
        L.event(MSG_SAFETY_ESTOP, 1)
    else:
        L.backend.simulate_fault(3, 0.05)  # (controller_error for 50 ms, as /robot/sim/inject_fault does)
    L.run(0.2)
    assert L.cycle.interaction.params is None and L.state.local.interaction_on[0] == 0
    L.event(MSG_SAFETY_ESTOP, 0)
    L.event(MSG_RESET)
    L.run(0.05)
    L.event(MSG_ENABLE, 1)
    L.run(0.2)
    assert L.state.local.enabled[0] == 1
    z = hand_z(L, rm)
    L.run(1.0)
    assert abs(hand_z(L, rm) - z) < 0.005  # it dropped 0.135 m with the old FORCE −15 N
    assert not L.cycle.interaction_engaged


def test_an_interaction_command_while_disabled_is_ignored():
    L = started()
    L.event(MSG_ENABLE, 0)
    L.run(0.05)
    ignored = L.state.local.commands_ignored[0]
    L.event(MSG_INTERACTION, *interaction_words())
    L.run(0.05)
    assert L.state.local.commands_ignored[0] == ignored + 1 and L.cycle.interaction.params is None


# ---- 5: the head under the safety E-stop latch --------------------------------------------------------------
def test_the_head_does_not_turn_under_the_safety_estop_latch():
    L = started()
    h = len(CFG.all_joints) - 1
    L.event(MSG_HEAD, L.q[h] + 0.6, 1.0, 1)  # turning ...
    L.run(0.05)
    L.event(MSG_SAFETY_ESTOP, 1)  # ... latched: stops dead
    L.run(0.02)
    at = L.q[h]
    ignored_before = L.cycle.head.target
    L.event(MSG_HEAD, at - 0.6, 1.0, 1)  # a command while latched is not taken
    L.run(1.0)
    assert abs(L.q[h] - at) < 0.01 and L.cycle.head.target == ignored_before
    L.event(MSG_SAFETY_ESTOP, 0)
    L.run(1.0)
    assert abs(L.q[h] - at) < 0.01  # released: it stays until a new command
    L.event(MSG_HEAD, at + 0.3, 1.0, 1)
    L.run(2.0)
    assert abs(L.q[h] - (at + 0.3)) < 0.01


# ---- a waypoint arm (the Cobot) under the latch -------------------------------------------------------------
class WaypointPLC:
    """The Cobot backend against a PLC stand-in that moves toward the last waypoint at 0.3 rad/s until aborted (the
    backend's OPC UA calls recorded instead of sent)."""

    def __init__(self):
        from intera_compat.emulator.cobot_plc import default_config
        from intera_compat.hardware.cobot import CobotBackend
        self.cfg = load_config(default_config())
        b = self.backend = CobotBackend(RobotModel(self.cfg), {})
        self.calls, self.t, self.q, self.target = [], [100.0], np.zeros(7), None
        b.monotonic = lambda: self.t[0]
        b._post = lambda coro: coro.close()
        b.connect = lambda: None
        b._enabled = b._link_ok = True
        read = b.read

        def posted(key, *args):
            b._calls += 1
            self.calls.append(key)
            b._answer = (b._calls, b.monotonic())
            if key == "set_waypoint":
                self.target = np.array(args[0])
            elif key == "abort":
                self.target = None

        def plc_read(hs):
            if self.target is not None:
                self.q += np.clip(self.target - self.q, -0.0003, 0.0003)
            moving = self.target is not None and np.abs(self.target - self.q).max() > 1e-6
            b._rx = (self.t[0], self.q.copy(), np.zeros(7), int(moving), 0, "")
            read(hs)
            self.t[0] += 0.001
        b._posted_call = posted
        b.read = plc_read


@pytest.mark.parametrize("kind", ["safety_estop", "disable"])
def test_a_waypoint_the_arm_runs_is_aborted_when_the_latch_or_the_brakes_take_the_arm(kind):
    plc = WaypointPLC()
    L = OfflineLoop(plc.cfg, backend=plc.backend)
    L.run(0.2)
    L.send(POSITION_MODE, plc.cfg.joint_names, position=[0.5] + [0.0] * 6)
    L.run(0.3)
    assert plc.calls == ["set_waypoint"] and plc.q[0] > 0.01  # on its way
    L.event(MSG_SAFETY_ESTOP, 1) if kind == "safety_estop" else L.event(MSG_ENABLE, 0)
    L.run(0.05)
    at = plc.q[0]
    L.run(2.0)
    assert "abort" in plc.calls and plc.q[0] == pytest.approx(at, abs=1e-3)  # it ran on 0.45 rad under the latch
