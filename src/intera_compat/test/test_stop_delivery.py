"""Stop-class messages are never lost to a full command ring (issue 32 item 8): stop, reset, enable, the E-stops,
trajectory cancels and scalings wait in the channel's backlog, in order, until the loop has drained the ring;
nothing overtakes them; ``TrajectoryClient.cancel`` / ``set_scaling`` say whether they were queued; the keep-alive
watchdog marks a goal lost only once its cancel is queued, and retries until it is. Pure: the offline loop steps the
real cycle; "the loop stalls" is "the test does not step it"."""
import threading

import numpy as np
import pytest
import rospy

from intera_compat.data import codes as T
from intera_compat.data.codes import POSITION_MODE
from intera_compat.loop.channel import BACKLOG_MAX, Channel
from intera_compat.loop.layouts import MSG_ENABLE, MSG_RESET, MSG_SAFETY_ESTOP, MSG_STOP, MSG_TRAJ_SCALING
from intera_compat.loop.offline import OfflineLoop
from intera_compat.ros.trajectory_server import ExecuteTrajectoryServer, _Goal
from test_trajectory import min_jerk

ARM = [f"right_j{i}" for i in range(7)]
JUNK = 99  # a kind the loop reads and ignores: stands for whole trajectories filling the ring
MAX_STEPS = 3000  # loop cycles (3 s of robot time): a bound for waits on the loop's state, never a timing claim


@pytest.fixture
def loop():
    L = OfflineLoop()
    L.step()
    return L


def fill(ch: Channel) -> None:
    """Fill the listener → loop ring until not even an empty message fits (as a stalled loop would leave it)."""
    for size in (100_000, 1000, 1, 0):
        while ch.to_loop.push(JUNK, np.zeros(size)):
            pass
    assert not ch.to_loop.push(MSG_STOP)


def fill_backlog(ch: Channel) -> None:
    for _ in range(BACKLOG_MAX - ch.waiting):
        assert ch.post(MSG_TRAJ_SCALING, np.array([999_999.0, 1.0]))  # a trajectory long gone: ignored
    assert ch.waiting == BACKLOG_MAX


def step_until(L: OfflineLoop, done) -> bool:
    for _ in range(MAX_STEPS):
        if done():
            return True
        L.step()
    return done()


def state(L):
    s = L.state.local
    return int(s.enabled[0]), int(s.stopped[0]), int(s.error[0])


def test_a_stop_posted_into_a_full_ring_reaches_the_loop(loop):
    assert state(loop)[:2] == (1, 0)
    fill(loop.channel)
    assert loop.channel.post(MSG_STOP, np.zeros(1))  # queued (was: refused, and the stop lost)
    assert loop.channel.waiting == 1 and loop.channel.backlogged == 1
    assert step_until(loop, lambda: state(loop)[1] == 1)
    assert loop.channel.waiting == 0 and state(loop)[0] == 0


def test_waiting_messages_keep_their_order_and_nothing_overtakes_them(loop):
    loop.event(MSG_STOP)
    loop.run(0.01)
    assert state(loop)[1] == 1
    fill(loop.channel)
    for kind, value in ((MSG_RESET, 0.0), (MSG_ENABLE, 1.0), (MSG_STOP, 0.0)):
        assert loop.channel.post(kind, np.array([value]))
    target = loop.arm_q + 0.3
    v = loop.validator.check(POSITION_MODE, ARM, {"position": list(target)}, loop.cycle.now)
    assert v.ok and not loop.channel.post_command(v.mode, v.mask, v.arrays)  # it would overtake the stop: refused
    assert loop.channel.waiting == 3
    loop.step()  # the loop drains the ring; the listener's poll moves the backlog
    assert loop.channel.waiting == 0
    assert step_until(loop, lambda: loop.channel.to_loop.pending_words() == 0)
    # reset, enable, stop in that order: the robot ends stopped, not enabled (a stop taken first would enable it)
    assert state(loop) == (0, 1, 0)


def test_the_safety_estop_latch_is_not_lost_to_a_full_ring(loop):
    fill(loop.channel)
    assert loop.channel.post(MSG_SAFETY_ESTOP, np.array([1.0]))
    assert step_until(loop, lambda: loop.cycle.estop_hold.on)


def test_a_full_backlog_refuses_and_says_so_then_takes_it_once_drained(loop):
    ch = loop.channel
    fill(ch)
    fill_backlog(ch)
    refused = ch.refused
    assert not ch.post(MSG_STOP, np.zeros(1))  # nothing written: the caller must retry
    assert ch.refused == refused + 1 and ch.waiting == BACKLOG_MAX
    loop.step()
    loop.step()
    assert ch.waiting == 0
    assert ch.post(MSG_STOP, np.zeros(1))
    assert step_until(loop, lambda: state(loop)[1] == 1)


def test_a_post_with_patience_waits_for_room(loop):
    ch = loop.channel
    fill(ch)
    fill_backlog(ch)
    draining = threading.Event()

    def drain():  # the loop catching up while the caller waits
        draining.set()
        out = np.zeros(ch.to_loop.capacity)
        while ch.to_loop.pop(out) >= 0:
            pass

    t = threading.Timer(0.05, drain)
    t.start()
    try:
        assert ch.post(MSG_STOP, np.zeros(1), patience=600.0)  # (returns as soon as there is room)
        assert draining.is_set()  # (room came from the drain: the post waited for it)
    finally:
        t.cancel()
        t.join()


def test_cancel_and_scaling_report_whether_they_were_queued(loop):
    q0 = loop.arm_q
    tid = loop.trajectories.execute(*min_jerk(q0, q0 + np.array([0.6, 0, 0, 0, 0, 0, 0]), 2.0))
    loop.run(0.3)
    fill(loop.channel)
    assert loop.trajectories.set_scaling(0.5, tid) is True
    assert loop.trajectories.cancel(tid) is True  # queued behind the scaling, in the backlog
    fill_backlog(loop.channel)
    assert loop.trajectories.cancel(tid) is False  # no room anywhere: the caller knows, and retries
    res = loop.trajectories.wait(tid, MAX_STEPS * loop.dt, step=loop.step)
    assert res is not None and res.status == T.CANCELLED  # (was: the cancel dropped, the trajectory ran on)


class FakeHandle:
    def __init__(self, gid):
        self.gid = gid


def bare_server(client) -> ExecuteTrajectoryServer:
    s = ExecuteTrajectoryServer.__new__(ExecuteTrajectoryServer)
    s.client, s.interaction, s.lock = client, None, threading.Lock()
    s.goals, s.by_goal_id = {}, {}
    return s


def add_goal(server, tid, gid="g1", timeout=0.1, last_alive=0.0) -> _Goal:
    g = _Goal(FakeHandle(gid), gid, tid, timeout, last_alive, 1.0, list(range(7)))
    server.goals[tid], server.by_goal_id[gid] = g, g
    return g


@pytest.fixture
def quiet_rospy(monkeypatch):
    said = []
    for name in ("logwarn", "logerr"):
        monkeypatch.setattr(rospy, name, lambda msg, *a, **k: said.append(msg))
    monkeypatch.setattr(rospy, "logerr_throttle", lambda period, msg, *a, **k: said.append(msg))
    return said


def test_the_watchdog_marks_a_goal_lost_only_once_its_cancel_is_queued(loop, quiet_rospy):
    q0 = loop.arm_q
    tid = loop.trajectories.execute(*min_jerk(q0, q0 + np.array([0.6, 0, 0, 0, 0, 0, 0]), 2.0))
    loop.run(0.3)
    server = bare_server(loop.trajectories)
    g = add_goal(server, tid)
    fill(loop.channel)
    fill_backlog(loop.channel)
    server._check_keepalives(now=10.0)  # silent for 10 s, but the cancel cannot be queued
    assert not g.lost
    assert any("retried" in m for m in quiet_rospy)
    loop.step()  # the loop drains, the backlog moves
    server._check_keepalives(now=10.002)  # the next check retries
    assert g.lost
    res = loop.trajectories.wait(tid, MAX_STEPS * loop.dt, step=loop.step)
    assert res is not None and res.status == T.CANCELLED


def test_a_client_cancel_the_ring_could_not_take_is_retried_by_the_watchdog(loop, quiet_rospy):
    q0 = loop.arm_q
    tid = loop.trajectories.execute(*min_jerk(q0, q0 + np.array([0.6, 0, 0, 0, 0, 0, 0]), 2.0))
    loop.run(0.3)
    server = bare_server(loop.trajectories)
    g = add_goal(server, tid, timeout=0.0)  # (no keep-alive watchdog for this goal)

    class CancelRequest:
        def get_goal_id(self):
            return type("GoalID", (), {"id": "g1"})()

    fill(loop.channel)
    fill_backlog(loop.channel)
    server._on_cancel(CancelRequest())
    assert g.cancel_wanted
    loop.step()
    server._check_keepalives(now=0.0)
    assert not g.cancel_wanted
    res = loop.trajectories.wait(tid, MAX_STEPS * loop.dt, step=loop.step)
    assert res is not None and res.status == T.CANCELLED


def test_a_scaling_the_ring_could_not_take_is_sent_again_with_the_next_keepalive(loop):
    q0 = loop.arm_q
    tid = loop.trajectories.execute(*min_jerk(q0, q0 + np.array([0.6, 0, 0, 0, 0, 0, 0]), 2.0))
    loop.run(0.1)
    server = bare_server(loop.trajectories)
    g = add_goal(server, tid)
    fill(loop.channel)
    fill_backlog(loop.channel)
    alive = type("KeepAlive", (), {"goal_id": "g1", "time_scaling": 0.0})()
    server._on_keepalive(alive)
    assert g.scaling == 1.0  # not queued: not taken as sent
    loop.step()
    server._on_keepalive(alive)
    assert g.scaling == 0.0
    assert step_until(loop, lambda: loop.trajectories.progress().scaling == 0.0)
