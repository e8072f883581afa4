"""Runs conformance cases against the running robot: for each, its requirements (a SKIP with the reason when the
robot lacks one), the robot enabled and at its neutral pose, the joints recorded while it runs, its check."""
from __future__ import annotations

import os
import tempfile
import time
import traceback
from dataclasses import dataclass, field

import numpy as np
import rospy

from .. import testing as T
from . import robot as R
from .script import Script

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


class CaseFailed(Exception):
    """What a check found (the measured error, the script's output tail)."""


@dataclass
class Plot:
    t: np.ndarray  # robot time (s) from the case's start
    q: np.ndarray  # one column per joint
    names: list
    marks: dict = field(default_factory=dict)  # label → joint angles drawn as dashed lines (targets)


@dataclass
class Outcome:
    case: str
    result: str  # PASS | FAIL | SKIP
    detail: str
    robot_s: float = 0.0  # robot time it took
    wall_s: float = 0.0
    plot: Plot | None = None


class Ctx:
    """What a case works with: the robot (``info``), its time, the SDK's scripts, the arm's joints."""

    def __init__(self, info: R.RobotInfo, workdir: str):
        self.info, self.workdir = info, workdir
        self.marks: dict = {}
        self.cache: dict = {}  # (files one case leaves for another: a recording)
        self._scripts: list = []
        self._motion = None

    # ---- time --------------------------------------------------------------------------------------------------
    def now(self) -> float:
        return R.now(self.info.clock)

    def wait_until(self, cond, seconds: float) -> bool:
        return R.wait_until(cond, seconds, self.info.clock)

    def sleep(self, seconds: float) -> None:
        R.sleep(seconds, self.info.clock)

    # ---- the arm -----------------------------------------------------------------------------------------------
    def q(self) -> np.ndarray:
        return T.joint_positions(self.info.joints)

    def target(self, scale: float = 1.0) -> np.ndarray:
        """The neutral pose moved by a step on every joint (within the limits, 0.1 rad inside them)."""
        step = np.array([0.25, -0.2, 0.25, 0.2, -0.25, 0.2, 0.25] * 2)[:self.info.n] * scale
        lo, hi = self.info.lower + 0.1, self.info.upper - 0.1
        return np.clip(self.info.neutral + step, lo, hi)

    def settled_at(self, target, tol: float, seconds: float) -> float:
        """Waits up to ``seconds`` of robot time for the arm to be within ``tol`` of ``target``; the largest joint
        error then."""
        target = np.asarray(target, float)
        self.wait_until(lambda: np.abs(self.q() - target).max() <= tol, seconds)
        return float(np.abs(self.q() - target).max())

    def move_to(self, q, speed: float = 0.6, seconds: float = 60.0) -> None:
        """The motion controller takes the arm to ``q`` (a JOINT move, as the SDK's MotionTrajectory sends it)."""
        import actionlib
        from intera_motion_msgs.msg import (MotionCommandAction, MotionCommandGoal, Trajectory,
                                            TrajectoryOptions, Waypoint, WaypointOptions)
        if self._motion is None:
            self._motion = actionlib.SimpleActionClient("/motion/motion_command", MotionCommandAction)
            if not self._motion.wait_for_server(rospy.Duration(30.0)):
                raise CaseFailed("no motion controller (/motion/motion_command)")
        opts = WaypointOptions(max_joint_speed_ratio=speed)
        tip = rospy.get_param("/robot/limb/right/tip_name", "right_hand")
        wps = [Waypoint(joint_positions=list(map(float, p)), active_endpoint=tip, options=opts)
               for p in (self.q(), q)]
        goal = MotionCommandGoal(command="start", trajectory=Trajectory(
            label="conformance", joint_names=self.info.joints, waypoints=wps,
            trajectory_options=TrajectoryOptions(interpolation_type="JOINT")))
        self._motion.send_goal(goal)
        end = time.monotonic() + R.WALL_GUARD + seconds
        if not self.wait_until(lambda: self._motion.get_result() is not None or time.monotonic() > end, seconds):
            self._motion.cancel_goal()
            raise CaseFailed(f"moving to {np.round(q, 3).tolist()}: no result within {seconds:g} s")
        r = self._motion.get_result()
        if r is None or not r.result:
            raise CaseFailed(f"moving to {np.round(q, 3).tolist()} failed: {getattr(r, 'errorId', 'no result')}")
        err = self.settled_at(q, 0.02, 5.0)
        if err > 0.02:
            raise CaseFailed(f"moving to {np.round(q, 3).tolist()}: {err:.3f} rad off after the motion")

    def to_neutral(self) -> None:
        """The arm back at neutral between cases (a setup, not a check: a failed move is tried once more, after a
        reset if the robot stopped; the second failure fails the case)."""
        try:
            self.move_to(self.info.neutral)
        except CaseFailed as e:
            rospy.logwarn(f"conformance: back to neutral: {e}; trying once more")
            self.ready()
            self.move_to(self.info.neutral)

    def ready(self) -> None:
        """The robot enabled (after a reset if it is stopped), interaction control off (a case may leave it on,
        as a script does: the arm then stays compliant until a client sends position mode)."""
        self.interaction_off()
        st = T.robot_state()
        if st.stopped or st.error:
            self._until_state(lambda s: not s.stopped and not s.error, "/robot/set_super_reset", "reset")
        if not T.robot_state().enabled:
            from std_msgs.msg import Bool
            self._until_state(lambda s: s.enabled, "/robot/set_super_enable", "enable", Bool(True))

    def interaction_off(self) -> None:
        """What the SDK's ``InteractionPublisher.send_position_mode_cmd`` does (a script that moved in contact leaves
        interaction control on, and the arm compliant, until a client sends this; its state topic is not a sign: the
        robot publishes it only for interaction_control_command's own sessions)."""
        if not self.info.interaction:
            return
        from intera_core_msgs.msg import InteractionControlCommand
        pub = rospy.Publisher("/robot/limb/right/interaction_control_command", InteractionControlCommand,
                              queue_size=1, latch=False)
        end = time.monotonic() + 5.0
        while pub.get_num_connections() == 0 and time.monotonic() < end:
            time.sleep(0.01)
        pub.publish(InteractionControlCommand(interaction_control_active=False))
        self.sleep(0.3)
        pub.unregister()

    def _until_state(self, pred, topic: str, what: str, msg=None) -> None:
        from std_msgs.msg import Bool, Empty
        pub = rospy.Publisher(topic, Bool if isinstance(msg, Bool) else Empty, queue_size=1)
        msg = msg if msg is not None else Empty()
        if not self.wait_until(lambda: pred(T.robot_state()) or pub.publish(msg), 10.0):
            raise CaseFailed(f"the robot did not {what}: {T.robot_state()}")

    # ---- scripts -----------------------------------------------------------------------------------------------
    def start(self, pkg: str, name: str, *args, keys: bool = False, stdin: str | None = None) -> Script:
        s = Script(pkg, name, *args, keys=keys, stdin=stdin, logdir=self.workdir)
        self._scripts.append(s)
        return s

    def run(self, pkg: str, name: str, *args, budget: float, stdin: str | None = None, ok_text: str | None = None,
            status: int | None = 0) -> Script:
        """Runs a script to its end within ``budget`` s of robot time; fails if it does not end, ends with another
        ``status``, or did not print ``ok_text``."""
        s = self.start(pkg, name, *args, stdin=stdin)
        self.ended(s, budget)
        if status is not None and s.proc.returncode != status:
            raise CaseFailed(f"{name} exited with {s.proc.returncode}:\n{s.tail()}")
        if ok_text and not s.printed(ok_text):
            said = [ln for ln in s.output().splitlines() if "[ERROR]" in ln or "[FATAL]" in ln]
            raise CaseFailed(f"{name} did not print {ok_text!r}" + (f": {said[-1][-150:]}" if said else "")
                             + f"\n{s.tail()}")
        return s

    def ended(self, s: Script, budget: float) -> None:
        # (a script's first seconds are Python importing the SDK, not robot time: a robot on /clock that runs
        #  faster than the wall would use the budget up before the script said anything)
        start = time.monotonic()
        self.wait_until(lambda: not s.running(), budget)
        if s.running() and time.monotonic() - start < 30.0:
            s.wait(30.0 - (time.monotonic() - start))
        if s.running():
            s.interrupt(20.0)
            raise CaseFailed(f"{s.name} still ran after {budget:g} s of robot time:\n{s.tail()}")

    def printed(self, s: Script, text: str, wall: float = 90.0) -> None:
        """Until the script printed ``text`` (its start: imports and waits are wall time), or fails."""
        from .script import wait_printed
        if not wait_printed(s, text, wall):
            raise CaseFailed(f"{s.name} did not print {text!r}:\n{s.tail()}")

    def heard(self, s: Script, node: str, topic: str, wall: float = 60.0) -> None:
        """Until ``node`` (the script's) has a subscriber connected on ``topic`` (its publisher's side of the
        connection, from the node's bus info): a message it publishes before that is lost, on a real robot too, and
        a script that sends one message a key press (joint_position_keyboard) would have pressed in vain."""
        import xmlrpc.client

        import rosgraph
        master = rosgraph.Master(rospy.get_name())
        end = time.monotonic() + wall
        while time.monotonic() < end and s.running():
            try:
                code, _, links = xmlrpc.client.ServerProxy(master.lookupNode(node)).getBusInfo(rospy.get_name())
                if code == 1 and any(c[2] == "o" and c[4] == topic and c[5] for c in links):
                    return
            except (rosgraph.MasterError, OSError, xmlrpc.client.Error):
                pass  # (not registered yet, or between its registration and its server's start)
            time.sleep(0.05)
        raise CaseFailed(f"{s.name}: no subscriber connected to {node}'s {topic}:\n{s.tail()}")

    def close_scripts(self) -> None:
        for s in self._scripts:
            s.close()
        self._scripts = []


def run_cases(cases: list, info: R.RobotInfo, workdir: str | None = None, echo=print) -> list:
    """Each case in turn: SKIP with the reason when the robot cannot do it, else its check (PASS / FAIL)."""
    workdir = workdir or tempfile.mkdtemp(prefix="conformance-")
    os.makedirs(workdir, exist_ok=True)
    ctx = Ctx(info, workdir)
    outcomes = []
    for case in cases:
        reason = case.needs(info)
        if reason:
            out = Outcome(case.name, SKIP, reason)
        else:
            out = _run_one(case, ctx)
        outcomes.append(out)
        echo(f"{out.result:4s}  {case.name}: {out.detail.splitlines()[0] if out.detail else ''}"
             + (f"  ({out.robot_s:.1f} s robot, {out.wall_s:.1f} s wall)" if out.result != SKIP else ""))
    return outcomes


def _run_one(case, ctx: Ctx) -> Outcome:
    wall0 = time.monotonic()
    ctx.marks = {}
    rec = None
    t0 = ctx.now()
    log = T.EventLog()  # (a failure says what the robot did meanwhile: a fault, a stop)
    try:
        ctx.ready()
        if case.motion and float(np.abs(ctx.q() - ctx.info.neutral).max()) > 0.005:
            ctx.to_neutral()
        t0 = ctx.now()
        if case.motion:
            rec = T.JointRecorder(ctx.info.joints).start()
        detail = case.run(ctx) or "ok"
        result = PASS
    except CaseFailed as e:
        result, detail = FAIL, str(e)
    except Exception as e:  # (a broken case or a dead robot: said, and the next case runs)
        result, detail = FAIL, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
    finally:
        ctx.close_scripts()
        log.close()
    faults = [d for k, d in log.sequence() if k == "state" and ("error" in d or "stopped" in d)]
    if result == FAIL and faults:  # (on the first line: the table shows it)
        first, _, rest = detail.partition("\n")
        detail = (f"{first} — the robot stopped with an error {len(faults)}× meanwhile\n{rest}\n"
                  f"(its states: {', '.join(faults)}; the robot's log says why)")
    plot = None
    if rec is not None:
        rec.stop()
        if len(rec.t):
            plot = Plot(rec.t - rec.t[0], rec.q, list(ctx.info.joints), dict(ctx.marks))
    return Outcome(case.name, result, detail, ctx.now() - t0, time.monotonic() - wall0, plot)
