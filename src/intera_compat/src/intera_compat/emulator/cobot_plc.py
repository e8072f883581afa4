"""A reference "cobot PLC" on OPC UA (asyncua server): the waypoint controller a Cobot's SPS is, backed by a
MuJoCo arm (the generic 7-axis cobot by default), for the Cobot backend's tests and ``cobot_emulator.launch``.

``python -m intera_compat.emulator.cobot_plc [--config cobot7.yaml] [--endpoint opc.tcp://127.0.0.1:4840/cobot]``

Address space (namespace ``NAMESPACE``; string node ids, the defaults of the ``cobot:`` config section):

=================================  ==========================================================================
``Robot.ActualPositions``           Double[n], rad (updated every ``PUBLISH_PERIOD``)
``Robot.ActualVelocities``          Double[n], rad/s
``Robot.State``                     Int32: 0 idle, 1 moving, 2 error
``Robot.ErrorCode`` / ``ErrorText``  Int32 / String of the error (0 / "" without one)
``Robot.SetRobotWaypoint``          (Double[n] positions, Double[n] max velocities) → Int32 0: go to one point
``Robot.ExecuteInstructionList``    (Double[k·n] positions, Double[n] max velocities) → Int32 0: through k points
``Robot.AcknowledgeError``          () → Int32 0: clears the error (the arm stays where it stopped)
``Robot.Abort``                     () → Int32 0: stops the motion (at the acceleration limit) and drops the rest
``Robot.Lifebit``                   Boolean, written by the client: its dead-man (below)
``Emulator.Inject``                 (String) → String: fault injection (below)
=================================  ==========================================================================

Dead-man: a client that toggles ``Robot.Lifebit`` arms the lifebit watch (from its first change on); when the value
stops changing for ``lifebit_timeout`` (0.2 s by default, ``--lifebit-timeout``; 0: no watch) of the PLC's own time
(``now``, ``clock``: ``emulated_arm.py``; the value is read every ``PUBLISH_PERIOD``: a stall of those reads is the
emulator's own and forgiven, up to one timeout) while it moves, the PLC stops
the motion as on an error (at the acceleration limit, the rest dropped) and goes to error ``LIFEBIT_ERROR``
(AcknowledgeError clears it); idle, the watch is disarmed (a client that went away in order leaves no error behind).
A client that never toggles it is not watched.

The PLC plans its own motion through the points it is given: jerk-limited (ruckig) from each point to the next,
stopping at each (its velocity limits: the arm's, or lower ones sent with the points), while a position servo
drives the MuJoCo arm at 1 kHz. A point out of the arm's joint limits, a wrong count or a non-finite value is
refused with Bad status (nothing moves); a command while in error is refused (BadInvalidState).

Fault injection (``Emulator.Inject``): ``method error`` (the next method call fails with BadInternalError),
``error CODE TEXT`` (the controller goes to error: the arm stops), ``drop S`` (the server goes away for S seconds:
every session ends), ``unsettled J`` (joint J never settles: it dithers about its target and the state stays
moving; ``unsettled off``); ``calls`` answers with the methods called and the last motion's point count;
``deadman`` with the lifebit watch and its last stop in the PLC's own time (``lifebit armed timeout 0.2 trips 1
now 12.345 changed 12.340 before 10.010 tripped 10.211 forgiven 0.0000 speed 0.512 rest 10.420``: s since the PLC
started — the lifebit's last change; the last stop's last change before it, its trip, the server's own stalls
forgiven in between, its leading joint's speed (rad/s) and the arm at rest; -1: none yet).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import threading
import time

import numpy as np
from asyncua import Server, ua
from ruckig import ControlInterface, InputParameter, OutputParameter, Result, Ruckig, RuckigError

from ..loop.scheduler import raise_priority, sleep_until_next
from .emulated_arm import EmulatedArm

NAMESPACE = "urn:intera_compat:cobot_plc"
ENDPOINT = "opc.tcp://127.0.0.1:4840/cobot"
IDLE, MOVING, ERROR = 0, 1, 2
PERIOD = 0.001  # s: the PLC's motion cycle
PUBLISH_PERIOD = 0.01  # s: the variables' update
FEED_STALL = 5 * PUBLISH_PERIOD  # s without a read of the lifebit's value: the server stalled (not the client)
SETTLED = 1e-4  # rad: a point is reached within this (and at rest)
DITHER = 0.01  # rad: how far an unsettled joint dithers about its target
LIFEBIT_TIMEOUT = 0.2  # s of the PLC's time without a change of the lifebit: the motion stops
LIFEBIT_ERROR = 300  # the error a lifebit stop leaves (ErrorCode)
SNAP = 1e-9  # rad, rad/s, rad/s²: a joint this close to its target and at rest is there (``_snap``)
AT_REST = 0.005  # rad/s: every joint slower than this is at rest (``deadman``'s rest time)


def default_config() -> str:
    return os.path.join(os.path.dirname(__file__), "..", "..", "..", "config", "cobot7.yaml")


class CobotPLC(EmulatedArm):
    """The controller's state and motion (a thread at ``PERIOD``); every public method is thread-safe."""

    def __init__(self, config: str | None = None, initial_pose: str = "neutral",
                 lifebit_timeout: float = LIFEBIT_TIMEOUT):
        self._init_arm(config or default_config(), initial_pose, "cobot-plc")
        n = self.n
        lim = self.cfg.limits
        self.lower, self.upper = np.asarray(lim.lower[:n], float), np.asarray(lim.upper[:n], float)
        self.vmax = np.asarray(lim.velocity[:n], float)
        self.amax = np.asarray(lim.accel[:n], float)
        self.lock = threading.Lock()
        self.mode = IDLE
        self.error_code, self.error_text = 0, ""
        self.points: list[np.ndarray] = []  # what is left to go through
        self.fail_next = False
        self.unsettled = -1
        self.calls: list[str] = []  # the methods called (name), for the tests
        self.last_points = 0  # how many points the last motion had
        self._otg = Ruckig(n, PERIOD)
        self._inp, self._out = InputParameter(n), OutputParameter(n)
        self._inp.current_position = self.cmd.position[:n].tolist()
        self._inp.current_velocity = [0.0] * n
        self._inp.current_acceleration = [0.0] * n
        self._inp.max_acceleration = self.amax.tolist()
        self._inp.max_jerk = (10.0 * self.amax).tolist()
        self._limit = self.vmax.copy()
        self._v_next = np.zeros(n)  # the velocity to pass the next point with
        self._stopping = False
        # the lifebit watch: the value last seen and when it changed (``now``); armed from a client's first change
        self.lifebit_timeout = float(lifebit_timeout)
        self._lifebit = None
        self._lifebit_at = 0.0
        self._fed_at = -1.0  # when the server last read the value (``clock``; -1: never)
        self._forgiven = 0.0  # s of the server's own stalls since the last change (not the client's silence)
        self.lifebit_armed = False
        self.lifebit_trips = 0
        self.trip = None  # the last lifebit stop: the last change, the trip, the leading joint's speed, the rest (-1)
        self._moved_at = 0.0  # the last time the arm moved (a joint at AT_REST or faster)

    # ---- the arm --------------------------------------------------------------------------------------
    def _loop(self) -> None:
        nxt = time.monotonic() + PERIOD
        steps = max(1, int(round(PERIOD / self.plant.period)))
        while self._run:
            with self.lock:
                self.now = nxt - PERIOD - self.t0  # (this cycle's slot)
                self._watch_lifebit()
                self._plan()
                for _ in range(steps):
                    self.plant.write(self.cmd)
                self.plant.read(self.state)
                if float(np.abs(self.state.velocity[:self.n]).max()) >= AT_REST:
                    self._moved_at = self.now
                elif self.trip is not None and self.trip["rest"] < 0 and not self._stopping:
                    self.trip["rest"] = self.now
            nxt = sleep_until_next(nxt, PERIOD)

    def feed_lifebit(self, value: bool) -> None:
        """The lifebit's value as the server has it now (its publisher reads it every ``PUBLISH_PERIOD``). A gap in
        those reads beyond ``FEED_STALL`` is a stall of the emulator's own (its server shares one interpreter and a
        loaded machine), not the client's silence: forgiven (``_forgiven``), up to one timeout."""
        with self.lock:
            now = self.clock()
            if self._fed_at >= 0.0 and now - self._fed_at > FEED_STALL:
                self._forgiven += now - self._fed_at - FEED_STALL
            self._fed_at = now
            value = bool(value)
            if self._lifebit is not None and value != self._lifebit:
                self._lifebit_at, self._forgiven = now, 0.0
                self.lifebit_armed = self.lifebit_timeout > 0
            self._lifebit = value

    def _silence(self) -> tuple[float, float]:
        """(s the lifebit has not changed, s of it forgiven: the server's own stalls, the one under way included —
        at most the timeout, so that a server that stopped reading still stops the motion, at twice the timeout)."""
        blind = max(0.0, self.now - self._fed_at - FEED_STALL) if self._fed_at >= 0.0 else 0.0
        return self.now - self._lifebit_at, min(self._forgiven + blind, self.lifebit_timeout)

    def _watch_lifebit(self) -> None:
        """The dead-man (under the lock): a lifebit that stopped changing stops a motion (an error), disarms idle."""
        silent, forgiven = self._silence()
        if not self.lifebit_armed or silent - forgiven <= self.lifebit_timeout:
            return
        self.lifebit_armed = False
        if self.mode != MOVING or self._stopping:
            return
        self.lifebit_trips += 1
        lead = float(np.abs(self.state.velocity[:self.n]).max())
        self.trip = {"before": self._lifebit_at, "tripped": self.now, "forgiven": forgiven, "speed": lead,
                     "rest": self._moved_at if lead < AT_REST else -1.0}
        self._fault(LIFEBIT_ERROR, f"lifebit lost: no change for {self.lifebit_timeout:g} s, the motion stopped")

    def _plan(self) -> None:
        """One cycle of the PLC's own motion: the next point, jerk-limited; at rest when none is left."""
        n, inp, out = self.n, self._inp, self._out
        if self._stopping:  # Abort / an error: brake to rest at the acceleration limit, where it is heading
            inp.control_interface = ControlInterface.Velocity
            inp.target_velocity = [0.0] * n
        elif self.points:
            inp.control_interface = ControlInterface.Position
            inp.target_position = self.points[0].tolist()
            inp.target_velocity = self._v_next.tolist()
            inp.max_velocity = self._limit.tolist()
        else:
            return self._hold()
        res = self._update()
        if res not in (Result.Working, Result.Finished) and any(inp.target_velocity):
            inp.target_velocity = [0.0] * n  # (not reachable at that speed: stop there instead)
            res = self._update()
        if res not in (Result.Working, Result.Finished) and self._snap():
            res = self._update()  # (a joint already there, but for round-off: ruckig's sync fails on it)
        if res not in (Result.Working, Result.Finished):
            self._fault(100, f"the motion could not be planned ({res})")
            print(f"cobot PLC: planning failed ({res}) from {list(inp.current_position)} at "
                  f"{list(inp.current_velocity)} / {list(inp.current_acceleration)} to {list(inp.target_position)} "
                  f"at {list(inp.target_velocity)}; points left {len(self.points)}", flush=True)
            return
        out.pass_to_input(inp)
        self.cmd.position[:n] = out.new_position
        self.cmd.velocity[:n] = out.new_velocity
        if res == Result.Finished:
            if self._stopping:
                self._stopping = False
                self.points = []
            elif self.points:
                self._next_segment(self.points.pop(0))
            if not self.points and self.mode == MOVING:
                self.mode = IDLE
        if self.unsettled >= 0 and self.mode != ERROR:  # a joint that never gets there
            self.cmd.position[self.unsettled] += DITHER * np.sin(2 * np.pi * 3.0 * time.monotonic())
            self.mode = MOVING

    def _snap(self) -> bool:
        """Joints within round-off of their target and at rest are put exactly there (a zero-length move is
        done, not planned: ruckig's synchronisation fails on one that differs by 1e-17 rad); whether any was."""
        inp = self._inp
        cur, tgt = np.asarray(inp.current_position), np.asarray(inp.target_position)
        vel, acc = np.asarray(inp.current_velocity), np.asarray(inp.current_acceleration)
        there = (np.abs(cur - tgt) < SNAP) & (np.abs(vel) < SNAP) & (np.abs(acc) < SNAP) & \
            (np.asarray(inp.target_velocity) == 0.0)
        if not there.any():
            return False
        inp.current_position = np.where(there, tgt, cur).tolist()
        inp.current_velocity = np.where(there, 0.0, vel).tolist()
        inp.current_acceleration = np.where(there, 0.0, acc).tolist()
        return True

    def _update(self):
        try:
            return self._otg.update(self._inp, self._out)
        except RuckigError as e:  # (the binding raises for an input it cannot reach)
            return str(e).strip().splitlines()[0] if str(e).strip() else "error"

    def _next_segment(self, start: np.ndarray) -> None:
        """The motion goes on from ``start`` (a point passed, or where the arm is) to ``points[0]``: the velocity to
        pass that point with (zero at the last): on each joint that keeps its direction, the slower of the speeds
        the segments before and after it allow at the limits, and what their lengths allow at the acceleration
        limit (no stop in between, no run-up); set once per point (re-planning every cycle would never end)."""
        self._v_next = np.zeros(self.n)
        if len(self.points) < 2:
            return
        a, b = self.points[0] - start, self.points[1] - self.points[0]
        t_in = max(float(np.max(np.abs(a) / self._limit)), 1e-3)
        t_out = max(float(np.max(np.abs(b) / self._limit)), 1e-3)
        v = np.minimum(np.abs(a) / t_in, np.abs(b) / t_out)
        # (no faster than it can reach from here and stop from within the next segment: ruckig would otherwise
        # back up for a run-up, the time-optimal answer to a speed the distance cannot give)
        np.minimum(v, 0.5 * np.sqrt(self.amax * np.minimum(np.abs(a), np.abs(b))), out=v)
        v *= np.sign(b)
        v[np.sign(a) != np.sign(b)] = 0.0
        self._v_next = v

    def _hold(self) -> None:
        if self.unsettled >= 0 and self.mode != ERROR:
            self.mode = MOVING
            q = np.asarray(self._inp.current_position)
            self.cmd.position[:self.n] = q
            self.cmd.position[self.unsettled] += DITHER * np.sin(2 * np.pi * 3.0 * time.monotonic())
        self.cmd.velocity[:] = 0.0

    def _fault(self, code: int, text: str) -> None:
        self.mode, self.error_code, self.error_text = ERROR, code, text
        self._stopping = bool(np.any(np.asarray(self._inp.current_velocity) != 0.0))
        self.points = []

    # ---- the methods ----------------------------------------------------------------------------------
    def _check_call(self, name: str) -> None:
        self.calls.append(name)
        if self.fail_next:
            self.fail_next = False
            raise ua.UaStatusCodeError(ua.StatusCodes.BadInternalError)

    def go(self, name: str, flat, vmax) -> int:
        """SetRobotWaypoint (one point) / ExecuteInstructionList (k points): through them, stopping at each."""
        with self.lock:
            self._check_call(name)
            if self.mode == ERROR:
                raise ua.UaStatusCodeError(ua.StatusCodes.BadInvalidState)
            q = np.asarray(flat, dtype=float)
            v = np.asarray(vmax, dtype=float)
            n = self.n
            if len(q) == 0 or len(q) % n or (name == "SetRobotWaypoint" and len(q) != n) or len(v) not in (0, n):
                raise ua.UaStatusCodeError(ua.StatusCodes.BadInvalidArgument)
            pts = q.reshape(-1, n)
            if not (np.isfinite(pts).all() and np.isfinite(v).all()) or (pts < self.lower).any() \
                    or (pts > self.upper).any() or (v < 0).any():
                raise ua.UaStatusCodeError(ua.StatusCodes.BadOutOfRange)
            self._limit = np.minimum(self.vmax, np.where(v > 0, v, self.vmax)) if len(v) else self.vmax.copy()
            self.points = [p for p in pts]
            self.last_points = len(pts)
            self._next_segment(np.asarray(self._inp.current_position))
            self._stopping = False
            self.mode = MOVING
            return 0

    def abort(self) -> int:
        with self.lock:
            self._check_call("Abort")
            if self.mode == MOVING:  # (it stays moving until it has braked to rest)
                self.points = []
                self._stopping = True
            return 0

    def acknowledge(self) -> int:
        with self.lock:
            self._check_call("AcknowledgeError")
            if self.mode == ERROR:  # (still braking: moving until at rest)
                self.mode = MOVING if self._stopping else IDLE
                self.error_code, self.error_text = 0, ""
            return 0

    def inject(self, what: str) -> str:
        words = what.split()
        with self.lock:
            if what == "method error":
                self.fail_next = True
            elif words[:1] == ["error"] and len(words) >= 2 and words[1].lstrip("-").isdigit():
                self._fault(int(words[1]), " ".join(words[2:]) or "injected")
            elif words[:1] == ["unsettled"] and len(words) == 2:
                self.unsettled = -1 if words[1] == "off" else int(words[1])
                if not -1 <= self.unsettled < self.n:
                    self.unsettled = -1
                    raise ValueError(what)
                if self.unsettled < 0 and self.mode == MOVING and not self.points:
                    self.mode = IDLE
            elif words[:1] == ["drop"] and len(words) == 2:
                return "drop"  # (the server does it)
            elif what == "calls":  # (the methods called, and the points of the last motion)
                return f"emulator: {' '.join(self.calls[-20:])}; points {self.last_points}"
            elif what == "deadman":
                t = self.trip or {}
                return (f"emulator: lifebit {'armed' if self.lifebit_armed else 'off'} timeout "
                        f"{self.lifebit_timeout:g} trips {self.lifebit_trips} now {self.now:.4f} changed "
                        f"{self._lifebit_at:.4f} before {t.get('before', -1.0):.4f} tripped "
                        f"{t.get('tripped', -1.0):.4f} forgiven {t.get('forgiven', 0.0):.4f} speed "
                        f"{t.get('speed', 0.0):.4f} rest {t.get('rest', -1.0):.4f}")
            else:
                raise ValueError(what)
        return f"emulator: {what}"

    def snapshot(self) -> tuple:
        with self.lock:
            return (self.state.position[:self.n].tolist(), self.state.velocity[:self.n].tolist(), self.mode,
                    self.error_code, self.error_text)


class PLCServer:
    """The OPC UA face of a ``CobotPLC``."""

    def __init__(self, plc: CobotPLC, endpoint: str = ENDPOINT):
        self.plc, self.endpoint = plc, endpoint
        self.server: Server | None = None
        self.vars: dict = {}
        self.lifebit = None  # (Robot.Lifebit, written by the client)
        self.ready = threading.Event()
        self._stop = None

    async def _build(self) -> None:
        plc = self.plc
        s = Server()
        await s.init()
        s.set_endpoint(self.endpoint)
        s.set_server_name("intera_compat reference cobot PLC")
        idx = await s.register_namespace(NAMESPACE)
        robot = await s.nodes.objects.add_object(ua.NodeId("Robot", idx), ua.QualifiedName("Robot", idx))
        q, v, mode, code, text = plc.snapshot()
        for name, value, vt in (("ActualPositions", q, ua.VariantType.Double), ("ActualVelocities", v,
                                ua.VariantType.Double), ("State", mode, ua.VariantType.Int32),
                                ("ErrorCode", code, ua.VariantType.Int32), ("ErrorText", text, ua.VariantType.String)):
            self.vars[name] = await robot.add_variable(ua.NodeId(f"Robot.{name}", idx), ua.QualifiedName(name, idx),
                                                       ua.Variant(value, vt))
        self.lifebit = await robot.add_variable(ua.NodeId("Robot.Lifebit", idx), ua.QualifiedName("Lifebit", idx),
                                                ua.Variant(False, ua.VariantType.Boolean))
        await self.lifebit.set_writable()
        doubles = ua.VariantType.Double
        out = [ua.VariantType.Int32]

        def method(fn):
            async def call(parent, *args):
                try:
                    return [ua.Variant(fn(*[a.Value for a in args]), ua.VariantType.Int32)]
                except ua.UaStatusCodeError:
                    raise
                except Exception as e:  # (a malformed argument)
                    raise ua.UaStatusCodeError(ua.StatusCodes.BadInvalidArgument) from e
            return call

        for name, fn, args in (
                ("SetRobotWaypoint", lambda p, v=(): plc.go("SetRobotWaypoint", p, v), [doubles, doubles]),
                ("ExecuteInstructionList", lambda p, v=(): plc.go("ExecuteInstructionList", p, v), [doubles, doubles]),
                ("AcknowledgeError", plc.acknowledge, []), ("Abort", plc.abort, [])):
            await robot.add_method(ua.NodeId(f"Robot.{name}", idx), ua.QualifiedName(name, idx), method(fn), args, out)
        emu = await s.nodes.objects.add_object(ua.NodeId("Emulator", idx), ua.QualifiedName("Emulator", idx))

        async def inject(parent, what):
            text = what.Value
            try:
                reply = plc.inject(text)
            except (ValueError, IndexError):
                return [ua.Variant(f"could not understand: {text!r}", ua.VariantType.String)]
            if reply == "drop":
                asyncio.get_running_loop().create_task(self._drop(float(text.split()[1])))
                reply = f"emulator: {text}"
            return [ua.Variant(reply, ua.VariantType.String)]
        await emu.add_method(ua.NodeId("Emulator.Inject", idx), ua.QualifiedName("Inject", idx), inject,
                             [ua.VariantType.String], [ua.VariantType.String])
        self.server = s

    async def _publish(self) -> None:
        names = ("ActualPositions", "ActualVelocities", "State", "ErrorCode", "ErrorText")
        types = (ua.VariantType.Double, ua.VariantType.Double, ua.VariantType.Int32, ua.VariantType.Int32,
                 ua.VariantType.String)
        while True:
            for name, value, vt in zip(names, self.plc.snapshot(), types):
                await self.vars[name].write_value(ua.Variant(value, vt))
            self.plc.feed_lifebit(await self.lifebit.read_value())
            await asyncio.sleep(PUBLISH_PERIOD)

    async def _drop(self, seconds: float) -> None:
        """The controller goes away (every session ends) and comes back after ``seconds``."""
        await self.server.stop()
        await asyncio.sleep(max(0.0, min(seconds, 60.0)))
        await self._build()
        await self.server.start()

    async def run(self) -> None:
        self._stop = asyncio.Event()
        await self._build()
        await self.server.start()
        publisher = asyncio.get_running_loop().create_task(self._publish())
        self.ready.set()
        await self._stop.wait()
        publisher.cancel()
        await self.server.stop()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None, help="robot config of the arm (default: config/cobot7.yaml)")
    ap.add_argument("--endpoint", default=ENDPOINT)
    ap.add_argument("--lifebit-timeout", type=float, default=LIFEBIT_TIMEOUT,
                    help="s without a change of Robot.Lifebit before a motion stops (0: no watch)")
    args = ap.parse_args(argv)
    raise_priority()  # (it stands in for a PLC with a CPU of its own; its threads inherit it)
    plc = CobotPLC(args.config, lifebit_timeout=args.lifebit_timeout)
    plc.start()
    server = PLCServer(plc, args.endpoint)
    loop = asyncio.new_event_loop()
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: server._stop.set() if server._stop else None)

    async def serve():
        task = loop.create_task(server.run())
        while not server.ready.is_set():
            if task.done():  # (it could not start: an endpoint in use)
                await task
                raise SystemExit(f"cobot PLC emulator: the server on {args.endpoint} did not start")
            await asyncio.sleep(0.05)
        print(f"cobot PLC emulator on {args.endpoint} (namespace {NAMESPACE})", flush=True)
        await task
    try:
        loop.run_until_complete(serve())
    finally:
        plc.stop()


if __name__ == "__main__":
    main()
