"""The Cobot backend's bookkeeping without a PLC (its calls recorded, the PLC's state fed in): what it sends for a
trajectory, where the arm is along it, when it is done or failed, a reset's window, POSITION waypoints' pacing.
(Against the reference PLC over OPC UA: test_cobot_node.py.)"""
import asyncio

import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.data.faults import FAULT_CONTROLLER_ERROR, FAULT_LINK_LOST
from intera_compat.data.state import PROGRESS_ACTIVE, PROGRESS_DONE, PROGRESS_FAILED, HardwareState
from intera_compat.emulator.cobot_plc import default_config
from intera_compat.hardware.cobot import CobotBackend
from intera_compat.model import RobotModel

CFG = load_config(default_config())
IDLE, MOVING, ERROR = 0, 1, 2


class Clock:
    t = 100.0

    def __call__(self):
        return self.t


@pytest.fixture
def cobot():
    b = CobotBackend(RobotModel(CFG), {})
    b.calls = []
    b.monotonic = Clock()

    def posted(key, *args, make=None):  # (worked out and answered at once)
        b._calls += 1
        b.calls.append((key, args if make is None else make()))
        b._answer = (b._calls, b.monotonic())
        return b._calls
    b._posted_call = posted
    b._post = lambda coro: coro.close()  # (a reset's calls: never answered, unless a test runs them)
    b._enabled = b._link_ok = True
    yield b
    b._aio.close()


def feed(b, q, state, dt=0.01):
    """One state of the PLC, ``dt`` later, read by the loop."""
    b.monotonic.t += dt
    b._rx = (b.monotonic.t, np.asarray(q, float), np.zeros(7), state, 0 if state != ERROR else 9, "")
    hs = HardwareState.zeros(7)
    b.read(hs)
    return hs


def trajectory(k=41, T=4.0):
    t = np.linspace(0.0, T, k)
    s = 3 * (t / T) ** 2 - 2 * (t / T) ** 3
    q = np.outer(s, [0.8, 0.0, 0.4, 0.0, 0.0, 0.0, -0.6])
    v = np.gradient(q, t, axis=0)
    return t, q, v


def test_a_trajectory_goes_resampled_with_its_speeds_and_the_arm_time_follows_the_arm(cobot):
    t, q, v = trajectory()
    assert cobot.submit(t, q, v, np.zeros_like(q))
    key, (points, speed) = cobot.calls[-1]
    pts = np.reshape(points, (-1, 7))
    assert key == "execute_list" and 5 <= len(pts) <= 10  # 0.8 rad on j0 at 0.1 rad: ends kept
    assert pts[0] == pytest.approx(q[0]) and pts[-1] == pytest.approx(q[-1])
    assert speed[0] == pytest.approx(np.abs(v[:, 0]).max()) and speed[1] == pytest.approx(CFG.limits.velocity[1])
    times = []
    for s in np.linspace(0.0, 1.0, 50):  # the arm along the path (its own timing)
        feed(cobot, q[0] + s * (q[-1] - q[0]), MOVING)
        times.append(cobot.progress()[1])
    assert np.all(np.diff(times) >= 0.0) and times[-1] < t[-1]  # monotonic, short of the end until done
    assert cobot.progress()[0] == PROGRESS_ACTIVE
    feed(cobot, q[-1], IDLE)
    assert cobot.progress() == (PROGRESS_DONE, pytest.approx(t[-1]))


def test_a_trajectory_is_worked_out_in_the_clients_thread_not_the_loops_cycle(cobot):
    """The cycle only copies a submitted trajectory (resampling 10000 knots held it 28 ms); the client's thread
    resamples it. Until then the arm is nowhere along it; a later submission's path is never taken for an
    earlier one's."""
    posted, sent = [], []
    cobot._posted_call = CobotBackend._posted_call.__get__(cobot)  # (the real one, its coroutines kept here)
    cobot._post = posted.append

    async def call(key, *args, seq):
        sent.append((key, args))
        return True
    cobot._call = call
    t, q, v = trajectory()
    t0, q0 = t.copy(), q.copy()
    assert cobot.submit(t, q, v, np.zeros_like(q)) and len(posted) == 1 and not sent
    t[:], q[:] = 0.0, 0.0  # (the loop reuses its buffers)
    feed(cobot, q0[20], MOVING)
    assert cobot.progress() == (PROGRESS_ACTIVE, 0.0)  # (not worked out yet: nowhere along it)
    asyncio.run(posted[0])
    (key, (points, _)), = sent
    pts = np.reshape(points, (-1, 7))
    assert key == "execute_list" and pts[0] == pytest.approx(q0[0]) and pts[-1] == pytest.approx(q0[-1])
    feed(cobot, q0[20], MOVING)
    assert cobot.progress()[1] == pytest.approx(t0[20], abs=0.05)  # (halfway along its path)
    assert cobot.submit(t0, q0[::-1].copy(), v, np.zeros_like(q0))  # back the other way, not yet worked out:
    feed(cobot, q0[30], MOVING)  # the first path's progress is not this one's
    assert cobot.progress() == (PROGRESS_ACTIVE, 0.0)
    posted[1].close()


def test_a_submission_stopped_before_it_was_worked_out_never_reaches_the_plc(cobot):
    """A disable (its abort) between a submission and the client's thread working it out: the PLC gets the abort
    only, never the list after it (review: it got ['execute_list', 'abort'])."""
    posted, sent = [], []
    cobot._posted_call = CobotBackend._posted_call.__get__(cobot)
    cobot._post = posted.append

    async def call(key, *args, seq):
        sent.append(key)
        return True
    cobot._call = call
    cobot._enabled = True
    t, q, v = trajectory()
    assert cobot.submit(t, q, v, np.zeros_like(q))
    cobot.brake()

    async def run():
        for c in posted:
            await c
    asyncio.run(run())
    assert sent == ["abort"]


def test_idle_away_from_the_end_or_no_progress_is_a_failure_and_a_controller_error(cobot):
    t, q, v = trajectory()
    cobot.submit(t, q, v, np.zeros_like(q))
    feed(cobot, q[5], MOVING)
    hs = feed(cobot, q[10], IDLE)  # it stopped short
    assert cobot.progress()[0] == PROGRESS_FAILED and hs.fault == FAULT_CONTROLLER_ERROR
    cobot.reset()
    cobot.submit(t, q, v, np.zeros_like(q))
    feed(cobot, q[3], MOVING)
    feed(cobot, q[3], MOVING, dt=2 * t[-1] + cobot.settings.settle_timeout + 1.0)  # stuck: no progress
    assert cobot.progress()[0] == PROGRESS_FAILED


def test_a_reset_clears_the_plcs_error_within_its_window_and_not_for_ever(cobot):
    assert feed(cobot, np.zeros(7), ERROR).fault == FAULT_CONTROLLER_ERROR
    cobot.reset()  # (its calls: not answered)
    assert feed(cobot, np.zeros(7), ERROR).fault == 0  # acknowledging: not reported again meanwhile
    assert feed(cobot, np.zeros(7), ERROR, dt=11.0).fault == FAULT_CONTROLLER_ERROR  # never acknowledged
    cobot._link_ok = False
    assert feed(cobot, np.zeros(7), IDLE).fault == FAULT_LINK_LOST


def test_the_plcs_state_just_after_a_reset_was_answered_may_predate_it(cobot):
    assert feed(cobot, np.zeros(7), ERROR).fault == FAULT_CONTROLLER_ERROR
    posted = []
    cobot._post = posted.append

    async def answered(key, *args, seq=0):
        cobot.calls.append((key, args))
        return True
    cobot._call = answered
    cobot.reset()
    assert feed(cobot, np.zeros(7), ERROR).fault == 0
    asyncio.run(posted.pop())  # the PLC answers: aborted, acknowledged
    assert [key for key, _ in cobot.calls] == ["abort", "acknowledge_error"]
    assert feed(cobot, np.zeros(7), ERROR, dt=0.1).fault == 0  # (its variables, published before it took)
    assert feed(cobot, np.zeros(7), IDLE, dt=0.1).fault == 0
    assert feed(cobot, np.zeros(7), ERROR, dt=cobot.settings.reset_settle).fault == FAULT_CONTROLLER_ERROR  # new
    seq = cobot._answer[0]
    cobot._answered(seq - 1)  # an earlier call answering late: the latest answered stays
    assert cobot._answer[0] == seq


def test_a_refused_acknowledgement_is_an_error_at_once_and_a_late_reset_does_not_end_a_newer_ones_window(cobot):
    feed(cobot, np.zeros(7), ERROR)
    posted = []
    cobot._post = posted.append

    async def refused(key, *args, seq=0):
        if key == "acknowledge_error":
            cobot._failure = "AcknowledgeError refused"  # (what _call records for a call after the reset)
            return False
        return True
    cobot._call = refused
    cobot.reset()
    first = posted.pop()
    cobot.reset()  # a second reset before the first answered
    asyncio.run(first)  # the first answers late (refused): the second's window stays open ...
    cobot._failure = ""
    assert feed(cobot, np.zeros(7), ERROR, dt=2.0).fault == 0
    asyncio.run(posted.pop())  # ... the second's acknowledgement is refused: reported at once
    assert feed(cobot, np.zeros(7), ERROR, dt=0.01).fault == FAULT_CONTROLLER_ERROR


def test_position_targets_go_at_the_loops_speed_and_at_most_ten_a_second(cobot):
    speed = np.full(7, 0.3)
    feed(cobot, np.zeros(7), IDLE)
    for k in range(50):  # a target moving every 4 ms for 0.2 s
        cobot.monotonic.t += 0.004
        cobot.waypoint(np.full(7, 0.01 * k), speed)
    sent = [a for key, a in cobot.calls if key == "set_waypoint"]
    assert 2 <= len(sent) <= 3 and sent[0][1] == pytest.approx(list(speed))
    cobot.monotonic.t += 0.2
    cobot.waypoint(np.full(7, 0.49), speed)
    assert cobot.calls[-1][1][0] == pytest.approx([0.49] * 7)  # the latest
    n = len(cobot.calls)
    cobot.waypoint(np.full(7, 0.49), speed)  # unchanged: not again
    assert len(cobot.calls) == n
    assert not cobot.waypoint(np.full(7, np.nan), speed)


def test_the_lifebit_toggles_with_the_loops_cycles_and_stops_with_them(cobot):
    from intera_compat.data.state import CommandMode, HardwareCommand
    cmd = HardwareCommand.zeros(7, CommandMode.POSITION)
    every = int(round(cobot.settings.lifebit_period * cobot.settings.rate))  # (20 ms at 250 Hz: 5 cycles)
    bits = []
    for _ in range(4 * every):
        cobot.write(cmd)  # (a cycle that completed)
        bits.append(cobot.lifebit)
    assert every == 5 and sum(a != b for a, b in zip(bits, bits[1:])) == 4 and bits[every - 1] != bits[every - 2]
    off = CobotBackend(RobotModel(CFG), {"lifebit_period": 0})
    for _ in range(20):
        off.write(cmd)
    assert not off.lifebit  # (none: a PLC without the variable)
    off._aio.close()
    with pytest.raises(ValueError, match="lifebit_period"):
        CobotBackend(RobotModel(CFG), {"lifebit_period": 0.5})  # (the PLC's 0.2 s must span several)


def test_a_path_over_itself_follows_the_pass_the_arm_is_on_not_a_later_one(cobot):
    """Conformance on cobot_emulator.launch (joint_trajectory_client.py: 0.6, 0.3, 0.6, 0.3 of the start): the
    arm's place on one pass was as near on a later one, the reference ran ahead to it and the path error reached
    0.2 rad. The arm is on the first segment it moves along."""
    legs = [0.0, 0.4, 0.1, 0.4, 0.1]  # right_j3, one leg per 2 s
    t = np.linspace(0.0, 8.0, 161)
    x = np.interp(t, np.arange(len(legs)) * 2.0, legs)
    q = np.zeros((len(t), 7))
    q[:, 3] = x
    assert cobot.submit(t, q, np.gradient(q, t, axis=0), np.zeros_like(q))

    def at(pos, speed):
        cobot.monotonic.t += 0.01
        qq, vv = np.zeros(7), np.zeros(7)
        qq[3], vv[3] = pos, speed
        cobot._rx = (cobot.monotonic.t, qq, vv, MOVING, 0, "")
        cobot.read(HardwareState.zeros(7))
        return cobot.progress()[1]
    times = [at(p, 0.2) for p in np.linspace(0.0, 0.3, 30)]  # out along the first leg
    assert times[-1] == pytest.approx(1.5, abs=0.1)  # (not 4.5: the third leg passes there the same way)
    times += [at(p, 0.2) for p in np.linspace(0.3, 0.4, 10)]
    times += [at(p, -0.2) for p in np.linspace(0.4, 0.2, 20)]  # back along the second
    assert times[-1] == pytest.approx(3.33, abs=0.1)  # (not 7.33: the fourth)
    assert np.all(np.diff(times) >= 0.0)
