"""The effort arm's dead-man hold (hardware/effort_hold.py), without ROS: the torque law, its fallbacks to zero effort,
when a holder may leave and its last word; and on the Sawyer's own dynamics (pinocchio's forward dynamics, the hold
sampled at a joint-state rate) that it brings a moving arm to rest where the commands stopped, where zero effort
lets it fall."""
import math
import os
import types

import numpy as np
import pinocchio as pin
import pytest

from intera_compat.config import load_config
from intera_compat.hardware.effort_hold import (HOLD, IDLE, LAST_WORD, NOT_FINITE, NO_STATE, QUIET, REST_SPAN, STALE,
                                                WAIT, EffortHold, exit_verdict, hold_omega)
from intera_compat.hardware.ros_control import JointStateMap, RosControlSettings
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config")
N = len(CFG.all_joints)
Q0 = CFG.full_pose("neutral")
RATE = 50.0


def make(rate=RATE, frequency=2.0, damping=1.0, on_exit=2.0, limit=None):
    return EffortHold(RobotModel(CFG), CFG.limits.effort if limit is None else limit, frequency, damping, rate,
                      3.0 / rate, on_exit)


def holding(h, q=Q0, v=None, t=10.0):
    """``h`` holding at ``q`` (sampled at ``t``, the last command there), its first torque computed."""
    h.observe(t, t, q, np.zeros(N) if v is None else v)
    h.mark()
    h.start(t)
    assert h.command(t) == HOLD
    return h


def test_at_the_hold_pose_at_rest_the_torque_is_gravity():
    h = holding(make())
    assert np.allclose(h.tau, RobotModel(CFG).gravity(Q0), atol=1e-9)
    assert np.abs(h.tau).max() > 5.0  # (the Sawyer's shoulder carries the arm: zero effort is no hold)


def test_a_displaced_arm_is_pushed_back_and_a_moving_one_braked():
    h = holding(make())
    g = RobotModel(CFG).gravity
    for k in range(7):  # every joint: its own push back and its own brake (Kp, Kd positive definite)
        dq = np.zeros(N)
        dq[k] = 0.02
        h.observe(10.02, 10.02, Q0 + dq, np.zeros(N))
        assert h.command(10.02) == HOLD
        assert dq @ (h.tau - g(Q0 + dq)) < 0.0, k
        v = np.zeros(N)
        v[k] = 0.3
        h.observe(10.04, 10.04, Q0, v)
        h.command(10.04)
        assert v @ (h.tau - g(Q0)) < 0.0, k


def test_the_gains_are_the_mass_matrix_times_the_frequency():
    h = holding(make(rate=1000.0, frequency=1.5, damping=0.8))
    rm = RobotModel(CFG)
    M = pin.crba(rm.model, rm.data, rm.to_pin(Q0))
    M = (np.triu(M) + np.triu(M, 1).T)[np.ix_(rm.perm, rm.perm)]
    w = 2 * math.pi * 1.5
    assert np.allclose(h.Kp, w * w * M) and np.allclose(h.Kd, 2 * 0.8 * w * M)
    assert np.allclose(h.Kp, h.Kp.T) and np.linalg.eigvalsh(h.Kp).min() > 0.0


def test_the_frequency_is_capped_by_the_joint_state_rate():
    assert hold_omega(2.0, 1.0, 500.0) == pytest.approx(2 * math.pi * 2.0)
    assert hold_omega(2.0, 1.0, 10.0) == pytest.approx(3.0)  # 2 zeta w = 0.6 rate
    assert make(rate=10.0).capped and not make(rate=100.0).capped


def test_the_torque_stays_within_the_effort_limits():
    limit = np.full(N, 3.0)
    h = holding(make(limit=limit), v=np.full(N, 5.0))
    assert h.status == HOLD and np.abs(h.tau).max() <= 3.0 and np.isclose(np.abs(h.tau).max(), 3.0)


def test_the_hold_pose_is_where_the_arm_was_at_the_last_command():
    h = make()
    h.observe(10.0, 10.0, Q0, np.zeros(N))
    h.mark()  # the loop's last command
    q_later = Q0 + 0.05  # the arm ran on under it before the silence was noticed
    h.observe(10.1, 10.1, q_later, np.zeros(N))
    h.start(10.1)
    assert h.command(10.1) == HOLD and np.array_equal(h.q_hold, Q0)
    h.stop()
    h.start(10.12)  # no command since: no pose marked, the hold starts where the arm is
    assert h.command(10.12) == HOLD and np.array_equal(h.q_hold, q_later)


@pytest.mark.parametrize("how", ["stale stamp", "no message", "non-finite position", "non-finite velocity",
                                 "no sample ever"])
def test_untrustworthy_joint_states_fall_back_to_zero_effort_once_and_say_so(how):
    h = holding(make())
    t = 10.0
    if how == "stale stamp":  # a message arrives, but it was stamped 0.1 s ago (3 periods: 0.06 s)
        h.observe(t + 0.1, t, Q0, np.zeros(N))
        st = h.command(t + 0.1)
        expected = STALE
    elif how == "no message":  # the timer between samples
        assert not h.check(t + 0.05)
        assert h.check(t + 0.07)
        st, expected = h.status, STALE
        assert not h.check(t + 0.2)  # once
    elif how == "no sample ever":
        h = make()
        h.start(t)
        st, expected = h.command(t), NO_STATE
    else:
        bad = Q0.copy()
        bad[2] = np.nan
        h.observe(t, t, bad if "position" in how else Q0, bad if "velocity" in how else np.zeros(N))
        st, expected = h.command(t), NOT_FINITE
    assert st == expected and h.status == expected and h.changed
    assert not h.tau.any()
    assert "zero effort sent" in h.describe()
    if how != "no message":
        h.command(t + 0.2)
        assert not h.changed  # (the log says it once)


def test_fresh_joint_states_after_a_fallback_hold_the_arm_from_where_it_is_then():
    h = holding(make())
    assert h.check(10.1) and h.status == STALE
    fallen = Q0 + np.array([0, 0.2, 0, 0.1, 0, 0, 0, 0])
    h.observe(11.0, 11.0, fallen, np.zeros(N))
    assert h.command(11.0) == HOLD and h.changed
    assert np.array_equal(h.q_hold, fallen)  # (not pulled back up to Q0)
    assert np.allclose(h.tau, RobotModel(CFG).gravity(fallen))


def test_velocities_missing_from_the_message_are_differenced_from_the_stamps():
    h = make()
    h.observe(1.0, 1.0, Q0, None)
    h.observe(1.02, 1.02, Q0 + 0.006, None)
    assert np.allclose(h.v, 0.3)
    h.observe(1.04, 0.0, Q0 + 0.006, None)  # (no stamp: the receipt time stands in)
    assert np.allclose(h.v, 0.0)


def test_rest_is_judged_on_the_arms_stamps():
    h = holding(make())
    t = 10.0
    for k in range(int(REST_SPAN * RATE)):  # slow for just under REST_SPAN
        h.observe(t + k / RATE, t + k / RATE, Q0, np.full(N, 0.005))
    assert not h.at_rest()
    h.observe(t + REST_SPAN + 0.001, t + REST_SPAN + 0.001, Q0, np.zeros(N))
    assert h.at_rest()
    h.observe(t + REST_SPAN + 0.02, t + REST_SPAN + 0.02, Q0, np.full(N, 0.05))
    assert not h.at_rest()


def simulate(policy, seconds=3.0, rate=RATE, v0=None):
    """The Sawyer's rigid-body dynamics (1 ms steps), ``policy(t, q, v) -> tau`` sampled at ``rate`` and held
    between samples. Returns (q at each step, v at each step, times)."""
    plant = RobotModel(CFG)
    q, v = Q0.copy(), np.zeros(N) if v0 is None else v0.copy()
    dt, per = 0.001, int(round(1.0 / (rate * 0.001)))
    qs, vs, ts = [], [], []
    tau = np.zeros(N)
    for k in range(int(seconds / dt)):
        t = k * dt
        if k % per == 0:
            tau = policy(t, q, v)
        a = plant.from_pin(pin.aba(plant.model, plant.data, plant.to_pin(q), plant.to_pin(v), plant.to_pin(tau)))
        v = v + a * dt
        q = q + v * dt
        qs.append(q.copy())
        vs.append(v.copy())
        ts.append(t + dt)
    return np.array(qs), np.array(vs), np.array(ts)


def test_the_hold_brings_a_moving_arm_to_rest_where_the_commands_stopped_and_zero_effort_does_not():
    v0 = np.array([0.3, 0.2, 0.0, -0.3, 0.0, 0.5, 1.0, 0.0])  # moving when the loop died
    h = make()
    h.observe(0.0, 1e-9, Q0, v0)
    h.mark()
    h.start(0.0)

    def hold(t, q, v):
        h.observe(t, t + 1e-9, q, v)
        assert h.command(t) == HOLD
        return h.tau.copy()
    qs, vs, ts = simulate(hold, v0=v0)
    rest = ts[np.argmax(np.all(np.abs(vs) < 0.01, axis=1) & (np.arange(len(ts)) > 10))]
    assert rest < 1.0  # (at 2 Hz, critically damped)
    assert np.abs(qs - Q0).max() < 0.05 and np.abs(qs[-1] - Q0).max() < 1e-3 and np.abs(vs[-1]).max() < 1e-3
    assert np.abs(qs[-500:] - qs[-1]).max() < 1e-4  # and it stays
    fall, _, _ = simulate(lambda t, q, v: np.zeros(N), seconds=1.0, v0=v0)
    assert np.abs(fall[-1] - Q0).max() > 0.3  # what the velocity arm's zeros do to an effort arm


def test_the_last_word_is_gravity_at_the_arms_pose_or_zeros_without_a_fresh_sample():
    h = holding(make())
    q = Q0 + 0.1
    h.observe(10.02, 10.02, q, np.zeros(N))
    assert h.gravity_word(10.02) and np.allclose(h.tau, RobotModel(CFG).gravity(q))
    assert not h.gravity_word(11.0) and not h.tau.any()


def test_a_holder_leaves_once_the_arm_rests_or_its_time_is_up():
    h = holding(make(on_exit=1.0))
    assert exit_verdict(h, False, 0.0, 0.1) == WAIT  # moving under the hold (its first samples)
    for k in range(1, 12):  # at rest for REST_SPAN of stamps
        h.observe(10.0 + k * 0.02, 10.0 + k * 0.02, Q0, np.zeros(N))
        h.command(10.0 + k * 0.02)
    assert exit_verdict(h, False, 0.3, 0.1) == LAST_WORD
    h2 = holding(make(on_exit=1.0), v=np.full(N, 0.2))
    for k in range(1, 60):  # never at rest: leaves after on_exit of its stamps
        t = 10.0 + k * 0.02
        h2.observe(t, t, Q0, np.full(N, 0.2))
        h2.command(t)
        assert exit_verdict(h2, False, 0.0, 0.1) == (WAIT if t - 10.0 < 1.0 - 1e-9 else LAST_WORD)
    h2.check(20.0)  # fell back to zeros: nothing better to leave
    assert exit_verdict(h2, False, 0.0, 0.1) == QUIET


def test_a_holder_not_holding_waits_for_a_moving_stream_to_stop_or_to_go_on():
    h = make(on_exit=1.0)
    h.observe(10.0, 10.0, Q0, np.zeros(N))
    assert exit_verdict(h, False, 0.0, 0.1) == QUIET  # nothing moving was heard (or its last word was zeros)
    assert exit_verdict(h, True, 0.5, 0.1) == WAIT  # heard moving: the silence may start a hold
    assert exit_verdict(h, True, 1.2, 0.1) == QUIET  # the stream went on: its sender lives
    h.start(10.0)
    assert h.status == IDLE and exit_verdict(h, False, 0.5, 0.1) == WAIT  # started, no sample yet


def test_the_settings_carry_the_hold_and_refuse_bad_gains_naming_the_field():
    cfg = types.SimpleNamespace(raw=dict(CFG.raw, ros_control={"interface": "effort", "rate": 50}), path="x.yaml",
                                all_joints=CFG.all_joints)
    s = RosControlSettings.from_config(cfg)
    assert (s.hold_frequency, s.hold_damping, s.hold_on_exit) == (2.0, 1.0, 2.0)
    assert s.stale_after == pytest.approx(0.15) and not s.hold_capped  # (the silence: 0.1 s + 2.5 periods)
    assert RosControlSettings.from_config(cfg, rate=10).stale_after == pytest.approx(0.55)
    h = s.effort_hold(RobotModel(CFG))
    assert h.omega == pytest.approx(4 * math.pi) and h.stale_after == pytest.approx(0.15)
    for key, bad in (("hold_frequency", 0.0), ("hold_damping", float("nan")), ("hold_on_exit", -1.0),
                     ("hold_frequency", "2")):
        cfg.raw = dict(CFG.raw, ros_control={key: bad})
        with pytest.raises(ValueError, match=f"ros_control.{key}"):
            RosControlSettings.from_config(cfg)


def test_every_arm_config_gives_the_dead_man_settings():
    for arm in ("sawyer", "ur5e", "ur10e", "cobot7"):
        cfg = load_config(os.path.join(CONFIG_DIR, f"{arm}.yaml"))
        s = RosControlSettings.from_config(cfg, "effort")
        assert s.stop_timeout == 0.1 and s.hold_frequency == 2.0
        h = s.effort_hold(RobotModel(cfg))
        h.observe(1.0, 1.0, cfg.full_pose("neutral"), np.zeros(len(cfg.all_joints)))
        h.start(1.0)
        assert h.command(1.0) == HOLD and np.isfinite(h.tau).all()


def test_joint_state_names_map_to_config_order():
    m = JointStateMap(["a", "b", "c"])
    first = m(["c", "x", "a", "b"])
    assert first[0].tolist() == [2, 3, 0] and not len(first[1])
    assert m(["a", "c"])[1].tolist() == [1]
    assert m(["c", "x", "a", "b"]) is first  # (built once per name list)
