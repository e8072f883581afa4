"""A waypoint-list Cobot (its PLC plans every motion itself) over OPC UA, through PyPI ``asyncua``.

The PLC takes no stream and no timing: a single point (``SetRobotWaypoint``) or a list of points
(``ExecuteInstructionList``) and moves through them on its own; its state is read back from variables. This
backend is trajectory-only (JointCommands are refused, but POSITION: one waypoint, ``waypoint``):

* ``submit``: a whole trajectory goes as its last point (``execution_mode: single_point``) or as its points,
  resampled (``full_trajectory``, ``resampling_delta``: ``trajectory/resample.py``: every joint counts, the ends
  kept), with the trajectory's largest joint speeds as the PLC's velocity limits (it is never faster than the
  trajectory asked). Both are settings the robot may change at run time (``request``: ARM_COBOT_SETTINGS).
* Progress: where the arm is along the submitted path (the measured joints projected onto it) is the time the
  arm has reached (``progress``); the loop paces its reference by it (``paced``), so the monitors compare the
  arm with the same point of the path. Done once the PLC is idle and the arm settled at the last point within
  ``settle_tolerance``; the arm stopped elsewhere, a refused call, or no settling within twice the trajectory's
  duration plus ``settle_timeout`` is a failure (a controller error).
* ``cancel``: ``Abort`` on the PLC (it brakes and drops the rest); a disable or stop aborts too; ``close`` aborts and
  waits for the answer before it disconnects.
* Dead-man: the loop toggles the PLC's ``lifebit`` (a Boolean variable) every ``lifebit_period`` s of its cycles
  (``write``: a cycle that completed), and the client's thread writes each new value; the PLC is to stop the point
  list it runs (and report an error) when the lifebit stops changing for its timeout (the reference PLC: 0.2 s). A
  loop process that dies or hangs, and a lost link, stop toggling it. ``lifebit_period: 0``: none (a PLC without
  that variable: nothing stops its motion when the loop dies).
* Faults: no state for ``link_timeout`` s or a broken session → link lost; the PLC in error → controller error
  (its code and text printed); reset reconnects a lost link and calls ``AcknowledgeError``.
* Threads: an asyncio event loop runs the OPC UA client in a thread of its own; the realtime loop only reads the
  latest state (a tuple swapped whole) and posts calls to it (``run_coroutine_threadsafe``): it never waits for
  the network. A submitted trajectory is copied in the cycle and worked out (its speeds, the resampling: 28 ms
  for 10000 knots) in the client's thread, which the loop's thread takes the interpreter back from every 0.5 ms.

Node ids and the state's numbers are configurable (the ``cobot:`` section of the robot config): a value with
``ns=`` or ``i=`` is a whole node id, otherwise a string id in ``namespace``.
"""
from __future__ import annotations

import asyncio
import math
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ..config import config_section
from ..data.codes import ARM_COBOT_SETTINGS, ARM_RESULT_FAILED, ARM_RESULT_OK
from ..data.faults import FAULT_CONTROLLER_ERROR, FAULT_LINK_LOST
from ..data.state import PROGRESS_ACTIVE, PROGRESS_DONE, PROGRESS_FAILED, PROGRESS_NONE, Capability, HardwareState
from ..trajectory.resample import resample
from .base import Backend

EXECUTION_MODES = ("single_point", "full_trajectory")
NODES = {"positions": "Robot.ActualPositions", "velocities": "Robot.ActualVelocities", "state": "Robot.State",
         "error_code": "Robot.ErrorCode", "error_text": "Robot.ErrorText", "object": "Robot",
         "set_waypoint": "Robot.SetRobotWaypoint", "execute_list": "Robot.ExecuteInstructionList",
         "acknowledge_error": "Robot.AcknowledgeError", "abort": "Robot.Abort", "lifebit": "Robot.Lifebit"}
PROJECTION_WINDOW = 32  # path segments searched ahead of the last one the arm was on
SAME_PLACE = 0.01  # rad: segments this much further from the arm than the nearest are as near (a path over itself)
AT_REST_SPEED = 0.01  # rad/s: an arm slower on every joint has no direction to tell such segments apart
WAYPOINT_MOVED = 1e-4  # rad: a POSITION target that moved less is not sent again
END_MARGIN = 0.01  # s: the arm's time stays this short of a trajectory's end until the arm is done there
RESET_GRACE = 10.0  # s a reset may take to reconnect and have the PLC's error acknowledged (a loaded machine)
WAYPOINT_PERIOD = 0.1  # s: POSITION targets go at most this often
START_GRACE = 0.5  # s an idle PLC is given after it took a motion before idle means it ended (its variables lag)
MAX_LIFEBIT_PERIOD = 0.05  # s: the longest lifebit period (the reference PLC stops after 0.2 s without a change)


@dataclass
class CobotSettings:
    """``cobot`` in the robot config (launch arguments may override ``endpoint``, ``execution_mode``,
    ``settle_timeout``)."""

    endpoint: str = "opc.tcp://127.0.0.1:4840/cobot"
    namespace: str = "urn:intera_compat:cobot_plc"
    nodes: dict = field(default_factory=dict)  # NODES overridden
    state_values: dict = field(default_factory=lambda: {"idle": 0, "moving": 1, "error": 2})
    execution_mode: str = "full_trajectory"
    resampling_delta: float = 0.1  # rad
    rate: float = 250.0  # Hz: the loop (the arm's state arrives at ``poll_rate``)
    poll_rate: float = 100.0  # Hz the PLC's variables are read at
    link_timeout: float = 0.5  # s without the PLC's state: the link is lost
    settle_tolerance: float = 0.005  # rad: done when the arm is this close to the last point, the PLC idle
    settle_timeout: float = 5.0  # s beyond twice a trajectory's duration before it is a failure
    call_timeout: float = 2.0  # s a method call may take
    startup_timeout: float = 20.0  # s to reach the PLC and read its state
    reset_settle: float = 1.0  # s after a reset was answered in which the PLC's variables may still predate it
    lifebit_period: float = 0.02  # s of the loop's cycles between toggles of the PLC's lifebit (0: no lifebit)

    @classmethod
    def from_config(cls, cfg, overrides: dict | None = None) -> "CobotSettings":
        s = config_section(cfg, "cobot", cls, overrides)
        bad_nodes = sorted(set(s.nodes) - set(NODES))
        if bad_nodes:
            raise ValueError(f"{cfg.path}: cobot.nodes has unknown keys {bad_nodes}: use {sorted(NODES)}")
        s.nodes = {**NODES, **s.nodes}
        s.state_values = {**{"idle": 0, "moving": 1, "error": 2}, **dict(s.state_values)}
        check_mode(s.execution_mode)
        s.resampling_delta = check_delta(s.resampling_delta)
        for name in ("rate", "poll_rate", "link_timeout", "settle_tolerance", "settle_timeout", "call_timeout",
                     "startup_timeout", "reset_settle"):
            v = float(getattr(s, name))
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{cfg.path}: cobot.{name} {getattr(s, name)!r}: a number > 0")
            setattr(s, name, v)
        s.lifebit_period = float(s.lifebit_period)
        if not (math.isfinite(s.lifebit_period) and 0.0 <= s.lifebit_period <= MAX_LIFEBIT_PERIOD):
            raise ValueError(f"{cfg.path}: cobot.lifebit_period {s.lifebit_period!r}: 0 (none) or a period up to "
                             f"{MAX_LIFEBIT_PERIOD:g} s (the PLC's timeout must span several)")
        return s


def cobot_settings(cfg, options: dict) -> tuple[str, float]:
    """(execution mode, resampling delta) a Cobot starts with (its config and the launch's overrides)."""
    s = CobotSettings.from_config(cfg, options)
    return s.execution_mode, s.resampling_delta


def check_mode(mode) -> str:
    if mode not in EXECUTION_MODES:
        raise ValueError(f"execution_mode {mode!r}: use {' or '.join(EXECUTION_MODES)}")
    return mode


def check_delta(delta) -> float:
    try:
        d = float(delta)
    except (TypeError, ValueError):
        d = float("nan")
    if not (math.isfinite(d) and d >= 0.0):
        raise ValueError(f"resampling_delta {delta!r}: a number >= 0 (rad; 0 keeps every point)")
    return d


class CobotBackend(Backend):
    """A Cobot's PLC; ``options`` may override the config's ``cobot`` section."""

    capabilities = frozenset({Capability.TRAJECTORY_ONLY, Capability.WAYPOINT})
    paced = True
    requests = frozenset({"cobot_settings"})

    def __init__(self, rm, options: dict):
        super().__init__(rm.cfg.all_joints)
        self.settings = s = CobotSettings.from_config(rm.cfg, options)
        self.period = 1.0 / s.rate
        self.n = rm.cfg.n_arm
        self.execution_mode, self.resampling_delta = s.execution_mode, s.resampling_delta
        self.monotonic = time.monotonic
        self._aio = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._aio.run_forever, daemon=True, name="cobot-opcua")
        self._client = None
        self._nodes: dict = {}
        self._poller = None
        # the PLC's latest state (one tuple, swapped whole by the client's thread): (monotonic, positions,
        # velocities, state, error code, error text); None before the first
        self._rx = None
        self._link_ok = False
        self._enabled = False
        self._error_told = ""
        self._failure = ""  # a refused call or an unsettled arm (a controller error until reset)
        # the submitted trajectory: the path the PLC was given — (submission, knot times, points), swapped whole by
        # the client's thread once worked out — and (loop thread) its last point, where the arm is along it, its
        # state
        self._path = (0, np.zeros(0), np.zeros((0, self.n)))
        self._submitted = 0  # the call of the latest submission
        self._goal = np.zeros(self.n)
        self._seg = 0
        self._arm_time = 0.0
        self._state = PROGRESS_NONE
        self._deadline = 0.0
        self._seen_moving = False
        self._calls = 0  # calls posted; (the last one answered, when): done only once the PLC answered the last
        self._answer = (0, 0.0)
        self._reset_calls = 0  # calls posted before the last reset (their failures no longer count)
        self._resetting_until = 0.0  # monotonic() until which a reset may still clear the PLC's error / the link
        self._reset_answered = 0.0  # monotonic() the last reset was answered (inf while under way)
        self._reset_seq = 0  # the last reset's call (an earlier one answering late does not end its window)
        self._last_stamp = -1.0
        self._last_waypoint = 0.0
        self._sent_waypoint = np.full(self.n, np.nan)
        self._vmax = np.asarray(rm.cfg.limits.velocity[:self.n], float)
        # the lifebit: toggled by the loop's thread every ``_lifebit_every`` cycles, written by the client's
        self._lifebit_every = max(1, int(round(s.lifebit_period * s.rate))) if s.lifebit_period > 0 else 0
        self._cycles = 0
        self.lifebit = False
        self.lifebit_writes = 0  # values the PLC took

    @classmethod
    def declared(cls, cfg, options: dict) -> frozenset:
        CobotSettings.from_config(cfg, options)
        return cls.capabilities

    # ---- the client's thread ------------------------------------------------------------------------
    def _node_id(self, key: str, ns: int) -> str:
        v = self.settings.nodes[key]
        return v if v.startswith(("ns=", "i=")) else f"ns={ns};s={v}"

    async def _open(self) -> None:
        from asyncua import Client

        s = self.settings
        client = Client(s.endpoint, timeout=s.call_timeout)
        await client.connect()
        try:
            ns = await client.get_namespace_index(s.namespace)
            self._nodes = {k: client.get_node(self._node_id(k, ns)) for k in NODES}
            self._client = client
            await self._read_once()
        except BaseException:
            await client.disconnect()
            raise
        self._link_ok = True
        self._poller = asyncio.ensure_future(self._poll())

    async def _read_once(self) -> None:
        nd = self._nodes
        q, v, state, code, text = await self._client.read_values(
            [nd["positions"], nd["velocities"], nd["state"], nd["error_code"], nd["error_text"]])
        q, v = np.asarray(q, float), np.asarray(v, float)
        if q.shape != (self.n,) or v.shape != (self.n,) or not (np.isfinite(q).all() and np.isfinite(v).all()):
            raise ValueError(f"the PLC's positions / velocities are not {self.n} finite numbers: {q}, {v}")
        self._rx = (self.monotonic(), q, v, int(state), int(code), str(text))

    async def _poll(self) -> None:
        """The PLC's state every ``1 / poll_rate`` s, and the lifebit's new value when the loop toggled it."""
        from asyncua import ua

        period = 1.0 / self.settings.poll_rate
        node = self._nodes["lifebit"] if self._lifebit_every else None
        written = None
        try:
            while True:
                await self._read_once()
                bit = self.lifebit
                if node is not None and bit != written:
                    await node.write_value(ua.DataValue(ua.Variant(bit, ua.VariantType.Boolean)))
                    written = bit
                    self.lifebit_writes += 1
                await asyncio.sleep(period)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # (a dropped session: the link is lost until a reset reconnects it)
            self._link_ok = False
            print(f"[realtime_loop] Cobot: the PLC's state could not be read or its lifebit written: {e!r}",
                  file=sys.stderr, flush=True)

    async def _close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
        if self._client is not None:
            try:
                await self._client.disconnect()
            except Exception:
                pass
        self._client = None

    async def _call(self, key: str, *args, seq: int = 0) -> bool:
        """Method ``key`` on the PLC's object; a refusal (Bad status, a timeout, anything) is a failure, unless a
        reset came after the call was posted (``seq``)."""
        from asyncua import ua

        try:
            values = [ua.Variant(a, ua.VariantType.Double) if isinstance(a, list) else a for a in args]
            out = await self._nodes["object"].call_method(self._nodes[key], *values)
            if isinstance(out, (int, np.integer)) and out != 0:
                raise RuntimeError(f"answered {out}")
            return True
        except Exception as e:  # (whatever it was: the loop must hear of it, never wait for ever)
            if seq > self._reset_calls:
                self._failure = f"{self.settings.nodes[key]} refused: {e!r}"
                print(f"[realtime_loop] Cobot: {self._failure}", file=sys.stderr, flush=True)
            return False

    def _post(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._aio)

    def _posted_call(self, key: str, *args, make=None) -> int:
        """Call ``key`` with ``args`` (or what ``make()`` returns: worked out in the client's thread) in the
        client's thread; returns the call's number."""
        self._calls += 1
        seq = self._calls

        async def call():
            try:
                try:
                    values = args if make is None else make()
                except Exception as e:  # (a defect of ours: a controller error, never a call half worked out)
                    if seq > self._reset_calls:  # (unless a reset came since: it no longer counts)
                        self._failure = f"{self.settings.nodes[key]} not called: {e!r}"
                        print(f"[realtime_loop] Cobot: {self._failure}", file=sys.stderr, flush=True)
                    return
                if make is not None and self._calls != seq:
                    return  # a later call (an abort, a reset, another submission) replaced it while worked out
                await self._call(key, *values, seq=seq)
            finally:
                self._answered(seq)
        self._post(call())
        return seq

    def _answered(self, seq: int) -> None:
        """Call ``seq`` was answered (the client's thread): the latest one answered, and when, as one tuple (the loop
        never sees a seq with an old time, nor an earlier call that answered late)."""
        if seq > self._answer[0]:
            self._answer = (seq, self.monotonic())

    # ---- connection ---------------------------------------------------------------------------------
    def connect(self) -> None:
        s = self.settings
        sys.setswitchinterval(0.0005)  # (the OPC UA client shares the interpreter: it yields it to the loop often)
        self._thread.start()
        end = time.monotonic() + s.startup_timeout
        while True:
            fut = self._post(self._open())
            try:
                fut.result(s.call_timeout + 1.0)
                return
            except Exception as e:
                fut.cancel()  # (never two clients)
                if time.monotonic() > end:
                    raise RuntimeError(f"no cobot PLC at {s.endpoint} (namespace {s.namespace}) within "
                                       f"{s.startup_timeout:g} s: {e!r}") from e
            time.sleep(0.5)

    def close(self) -> None:
        """Abort what the PLC runs and wait for its answer (``call_timeout``: the orderly stop, before the lifebit
        goes quiet), then disconnect."""
        self._enabled = False
        self._lifebit_every = 0
        if self._state == PROGRESS_ACTIVE:
            self._state = PROGRESS_NONE
        if not self._thread.is_alive():
            return
        timeout = self.settings.call_timeout + 1.0
        if self._link_ok:
            try:
                if not self._post(self._call("abort")).result(timeout):
                    raise RuntimeError("refused")
            except Exception as e:  # (the PLC's lifebit timeout stops it)
                print(f"[realtime_loop] Cobot: Abort on close: {e!r}", file=sys.stderr, flush=True)
        try:
            self._post(self._close()).result(timeout)
        except Exception:
            pass
        self._aio.call_soon_threadsafe(self._aio.stop)
        self._thread.join(2.0)

    # ---- the cycle ----------------------------------------------------------------------------------
    def read(self, state: HardwareState) -> None:
        rx = self._rx
        if rx is None:
            state.fault, state.fault_joint = FAULT_LINK_LOST, -1
            return
        stamp, q, v, plc_state, code, text = rx
        n = self.n
        state.position[:n] = q[:n]
        state.velocity[:n] = v[:n]
        state.effort[:] = 0.0
        now = self.monotonic()
        if self._state == PROGRESS_ACTIVE and stamp != self._last_stamp:
            self._last_stamp = stamp
            self._follow(q[:n], v[:n], plc_state, stamp, now)
        if self._failure:  # (a refused acknowledgement too: at once)
            state.fault = FAULT_CONTROLLER_ERROR
        elif now < min(self._resetting_until, self._reset_answered + self.settings.reset_settle):
            state.fault = 0  # (a reset under way: its reconnect / acknowledgement, and the PLC's state after it)
        elif not self._link_ok or now - stamp > self.settings.link_timeout:
            state.fault = FAULT_LINK_LOST
        elif plc_state == self.settings.state_values["error"]:
            if text != self._error_told:
                self._error_told = text
                print(f"[realtime_loop] Cobot: the PLC is in error {code}: {text}", file=sys.stderr, flush=True)
            state.fault = FAULT_CONTROLLER_ERROR
        else:
            state.fault = 0
        state.fault_joint = -1

    def _follow(self, q: np.ndarray, v: np.ndarray, plc_state: int, stamp: float, now: float) -> None:
        """Where the arm is along the submitted path (its time there), and whether it is done. A path that goes
        back over itself (joint_trajectory_client.py: 0.6, 0.3, 0.6, 0.3 of the start) is as near on several
        segments: the arm is on the first of them (from the last one it was on) that it moves along (``v``, the
        PLC's measured velocities; at rest: the first) — not on a later pass, which would run the reference ahead."""
        seq, t, Q = self._path
        k = len(t) if seq == self._submitted else 0  # (not yet worked out: nowhere along it)
        if k >= 2:
            lo = self._seg
            hi = min(lo + PROJECTION_WINDOW, k - 1)
            a, b = Q[lo:hi], Q[lo + 1:hi + 1]
            d = b - a
            dd = np.einsum("ij,ij->i", d, d)
            u = np.where(dd > 0.0, np.einsum("ij,ij->i", q - a, d) / np.where(dd > 0.0, dd, 1.0), 1.0)
            np.clip(u, 0.0, 1.0, out=u)
            dist = np.linalg.norm(a + u[:, None] * d - q, axis=1)
            near = dist <= dist.min() + SAME_PLACE
            if float(np.abs(v).max()) > AT_REST_SPEED:
                near &= d @ v >= 0.0  # (the segments it moves along; if none, the nearest)
            j = int(np.argmax(near)) if near.any() else int(np.argmin(dist))
            self._seg = lo + j
            reached = min(t[lo + j] + u[j] * (t[lo + j + 1] - t[lo + j]), t[-1] - END_MARGIN)  # (the end: once done)
            if reached > self._arm_time:
                self._arm_time = float(reached)  # (the arm gets on: a slow PLC is not a failure)
                self._deadline = max(self._deadline, now + self.settings.settle_timeout + 1.0)
        seq, answered_at = self._answer
        if seq == self._calls and stamp > answered_at:  # (the PLC answered, and this state is newer)
            if plc_state == self.settings.state_values["moving"]:
                self._seen_moving = True
            elif plc_state == self.settings.state_values["idle"] and (self._seen_moving or
                                                                      stamp > answered_at + START_GRACE):
                off = float(np.abs(q - self._goal).max())
                if off <= self.settings.settle_tolerance:
                    self._state, self._arm_time = PROGRESS_DONE, float(t[-1])
                    return
                self._failure = f"the arm stopped {off:.4f} rad from the trajectory's last point"
        if not self._failure and now > self._deadline:
            self._failure = f"the arm did not settle at the trajectory's last point within {self._allowed:.1f} s"
        if self._failure:
            self._state = PROGRESS_FAILED
            print(f"[realtime_loop] Cobot: {self._failure}", file=sys.stderr, flush=True)

    def write(self, command) -> None:
        """Nothing is streamed (whole trajectories and waypoints go through ``submit`` / ``waypoint``); the cycle
        completed: the lifebit is toggled when it is due."""
        if self._lifebit_every:
            self._cycles += 1
            if self._cycles >= self._lifebit_every:
                self._cycles = 0
                self.lifebit = not self.lifebit

    # ---- robot state --------------------------------------------------------------------------------
    def enable(self) -> None:
        self._enabled = True

    def brake(self) -> None:
        """Stop what the PLC runs (Abort); nothing more is sent until enabled again."""
        self._enabled = False
        self.cancel()

    def reset(self) -> None:
        """Reconnect a lost link, abort what the PLC may still run (a list it went on with while the link was down),
        acknowledge its error; a failure of ours is forgotten. Until the acknowledgement is answered and
        ``reset_settle`` s of the PLC's state after it (at most ``RESET_GRACE`` s), the PLC's error and the link are
        not reported (a refused acknowledgement is, at once)."""
        self._failure, self._error_told = "", ""
        self._reset_calls = self._calls
        self._resetting_until = self.monotonic() + RESET_GRACE
        self._reset_answered = math.inf
        self._calls += 1
        seq = self._reset_seq = self._calls

        async def reset():
            try:
                if not self._link_ok:
                    await self._close()
                    await self._open()
                await self._call("abort", seq=0)  # (a PLC in error may refuse it: no failure of ours)
                await self._call("acknowledge_error", seq=seq)
            except Exception as e:  # (the reconnect failed: the link stays lost)
                print(f"[realtime_loop] Cobot: reset: {e!r}", file=sys.stderr, flush=True)
            finally:
                if seq == self._reset_seq:
                    self._reset_answered = self.monotonic()
                self._answered(seq)
        self._post(reset())

    def request(self, rid: float, code: int, args) -> None:
        """ARM_COBOT_SETTINGS (execution mode: 0 single_point, 1 full_trajectory; resampling delta, rad): for the
        next trajectory."""
        if code != ARM_COBOT_SETTINGS:
            return super().request(rid, code, args)
        try:
            mode = EXECUTION_MODES[int(args[0])]
            self.resampling_delta, self.execution_mode = check_delta(args[1]), mode
            self.answers.append((rid, float(ARM_RESULT_OK), 0.0))
        except (ValueError, IndexError, OverflowError):
            self.answers.append((rid, float(ARM_RESULT_FAILED), 0.0))

    # ---- trajectories and waypoints -----------------------------------------------------------------
    def submit(self, t, q, v, a, order: int = 5) -> bool:
        """The trajectory's last point, or its points resampled, with its largest joint speeds as the PLC's
        limits. False (nothing sent) while disabled or without a link. (The loop's cycle: a copy; the rest is
        worked out in the client's thread.)"""
        if not self._enabled or not self._link_ok or len(t) == 0:
            return False
        t = np.array(t, float)  # (copies: the loop reuses its trajectory's buffers)
        q = np.array(q, float).reshape(len(t), -1)[:, :self.n]
        v = np.array(v, float).reshape(len(t), -1)[:, :self.n]
        if not (np.isfinite(t).all() and np.isfinite(q).all()):
            return False
        self._goal[:] = q[-1]
        self._seg, self._arm_time, self._state, self._seen_moving = 0, 0.0, PROGRESS_ACTIVE, False
        self._allowed = 2.0 * float(t[-1] - t[0]) + self.settings.settle_timeout
        self._deadline = self.monotonic() + self._allowed
        single = self.execution_mode == "single_point"
        delta = self.resampling_delta
        seq = self._calls + 1

        def make():
            keep = [0, len(t) - 1] if single else resample(q, delta)
            self._path = (seq, t[keep], q[keep])  # (where the arm is along the path the PLC is given)
            return (q[-1] if single else q[keep]).ravel().tolist(), self._speeds(t, q, v).tolist()
        self._submitted = self._posted_call("set_waypoint" if single else "execute_list", make=make)
        return True

    def _speeds(self, t: np.ndarray, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The PLC's joint speed limits for a trajectory: its largest joint speeds (a trajectory without velocities:
        its steepest secant); a joint that does not move: no limit of ours."""
        speed = np.abs(v).max(axis=0) if np.isfinite(v).all() else np.zeros(self.n)
        if len(t) >= 2:
            speed = np.maximum(speed, (np.abs(np.diff(q, axis=0)) / np.maximum(np.diff(t)[:, None], 1e-6)).max(0))
        return np.where(speed > 1e-6, speed, self._vmax)

    def waypoint(self, q: np.ndarray, speed: np.ndarray) -> bool:
        """POSITION mode: one point (SetRobotWaypoint) at ``speed`` (the loop's: speed ratio × limits) when the
        target moved; at most every ``WAYPOINT_PERIOD`` s and one call at a time (a moving target: its latest)."""
        q = np.asarray(q, float)[:self.n]
        if not self._enabled or not self._link_ok or not np.isfinite(q).all():
            return False
        now = self.monotonic()
        if np.abs(q - self._sent_waypoint).max() <= WAYPOINT_MOVED or self._answer[0] != self._calls \
                or now - self._last_waypoint < WAYPOINT_PERIOD:  # (NaN: never sent)
            return True
        self._sent_waypoint, self._last_waypoint = q.copy(), now
        self._state = PROGRESS_NONE  # (a trajectory it ran is replaced)
        self._posted_call("set_waypoint", q.tolist(), np.asarray(speed, float)[:self.n].tolist())
        return True

    def cancel(self) -> None:
        """Abort what the PLC runs (it brakes and drops the rest); without a link, the reset that reconnects
        aborts."""
        self._sent_waypoint[:] = np.nan
        if self._state == PROGRESS_ACTIVE:
            self._state = PROGRESS_NONE
        if self._link_ok:
            self._posted_call("abort")

    def progress(self) -> tuple[int, float]:
        return self._state, self._arm_time
