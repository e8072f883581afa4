"""One case per SDK script (or per pair of scripts that need each other): what it runs, what the robot needs for it,
what it must achieve. Targets are relative to the arm's neutral pose (``Ctx.target``), so they exist on every arm.

Scripts not run: camera_display.py (an OpenCV window: not headless), joint_trajectory_action_server.py (the robot
serves the action itself; the SDK's server would take its name), io_config_editor.py (an interactive editor of the
end effector's config), joint_position_waypoints.py, navigator_io.py and gripper_cuff_control.py (they wait for a
person's presses on the arm's buttons), send_urdf_fragment.py and calibrate_arm.py (robot configuration, not
motion; covered by the robot's own tests).
"""
from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np
import rospy

from .robot import RobotInfo
from .runner import CaseFailed, Ctx

EX, IF = "intera_examples", "intera_interface"
TOL = 0.01  # rad: a motion's final joint error


@dataclass
class Case:
    name: str
    scripts: tuple  # the SDK scripts it runs
    what: str  # what it checks (the docs' and the report's words)
    run: Callable[[Ctx], str]  # the check: a short detail, or CaseFailed
    needs: Callable[[RobotInfo], str | None] = lambda info: None  # the reason to skip, or None
    motion: bool = True  # starts from neutral, its joints recorded and plotted


def _fmt(q) -> list:
    return [f"{x:.4f}" for x in q]


def _err(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


def _streaming(info: RobotInfo) -> str | None:
    return None if info.streaming else "trajectory-only arm: streamed JointCommands are refused"


# ---- cases ----------------------------------------------------------------------------------------------------
def enable_robot(ctx: Ctx) -> str:
    import intera_compat.testing as T
    ctx.run(IF, "enable_robot.py", "-d", budget=20)
    if not ctx.wait_until(lambda: not T.robot_state().enabled, 5.0):
        raise CaseFailed("enable_robot.py -d ended but /robot/state still says enabled")
    ctx.run(IF, "enable_robot.py", "-e", budget=20)
    if not ctx.wait_until(lambda: T.robot_state().enabled, 5.0):
        raise CaseFailed("enable_robot.py -e ended but /robot/state says disabled")
    return "disabled, then enabled (/robot/state)"


def go_to_joint_angles(ctx: Ctx) -> str:
    target = ctx.target()
    ctx.marks["target"] = target
    ctx.run(EX, "go_to_joint_angles.py", "-q", *_fmt(target), "-s", "0.5", budget=40,
            ok_text="successfully finished")
    err = ctx.settled_at(target, TOL, 2.0)
    if err > TOL:
        raise CaseFailed(f"final joint error {err:.4f} rad > {TOL}")
    return f"result ok, final joint error {err:.4f} rad"


def go_to_joint_angles_in_contact(ctx: Ctx) -> str:
    target = ctx.target()
    ctx.marks["target"] = target
    kn = ["5.0", "10.0"] * 4
    ctx.run(EX, "go_to_joint_angles_in_contact.py", "-q", *_fmt(target), "-s", "0.3", "-kn", *kn[:ctx.info.n],
            budget=60, ok_text="successfully finished")
    err = ctx.settled_at(target, 0.05, 2.0)
    if err > 0.05:  # (impedance: a stiffness, not a position loop)
        raise CaseFailed(f"final joint error {err:.4f} rad > 0.05")
    return f"result ok, final joint error {err:.4f} rad (impedance)"


def go_to_cartesian_pose(ctx: Ctx) -> str:
    from intera_core_msgs.msg import EndpointState
    topic = "/robot/limb/right/endpoint_state"
    z0 = rospy.wait_for_message(topic, EndpointState, 10.0).pose.position.z
    ctx.run(EX, "go_to_cartesian_pose.py", "-R", "0", "0", "0.05", "0", "0", "0", budget=40,
            ok_text="successfully finished")
    ctx.sleep(0.5)
    z = rospy.wait_for_message(topic, EndpointState, 10.0).pose.position.z
    if abs(z - z0 - 0.05) > 0.005:
        raise CaseFailed(f"the endpoint rose {1000 * (z - z0):.1f} mm, not 50 mm")
    return f"result ok, the endpoint rose {1000 * (z - z0):.1f} mm (asked 50)"


def _random_trajectory(ctx: Ctx) -> tuple[str, np.ndarray]:
    """send_random_trajectory.py's trajectory from neutral (seeded), saved as YAML; where it ends."""
    import yaml
    path = os.path.join(ctx.workdir, "random_trajectory.yaml")
    ctx.run(EX, "send_random_trajectory.py", "-n", "3", "-d", "0.08", "--rng_seed", "7", "-s", "0.5", "-o", path,
            budget=60, stdin="\n", ok_text="successfully finished")
    with open(path) as f:
        doc = yaml.safe_load(f)
    end = np.array(doc["waypoints"][-1]["joint_positions"], float)
    return path, end


def send_random_trajectory(ctx: Ctx) -> str:
    path, end = _random_trajectory(ctx)
    ctx.cache["random_trajectory"] = (path, end)
    ctx.marks["last waypoint"] = end
    err = ctx.settled_at(end, TOL, 2.0)
    if err > TOL:
        raise CaseFailed(f"final joint error {err:.4f} rad > {TOL} to the trajectory's last waypoint")
    return f"result ok, at its last waypoint within {err:.4f} rad"


def send_traj_from_file(ctx: Ctx) -> str:
    if "random_trajectory" not in ctx.cache:
        ctx.cache["random_trajectory"] = _random_trajectory(ctx)
        ctx.to_neutral()
    path, end = ctx.cache["random_trajectory"]
    ctx.marks["last waypoint"] = end
    ctx.run(EX, "send_traj_from_file.py", "-f", path, budget=60, ok_text="successfully finished")
    err = ctx.settled_at(end, TOL, 2.0)
    if err > TOL:
        raise CaseFailed(f"final joint error {err:.4f} rad > {TOL} to the file's last waypoint")
    return f"result ok, at the file's last waypoint within {err:.4f} rad"


def stop_motion_trajectory(ctx: Ctx) -> str:
    target = ctx.target(2.0)
    q0 = ctx.q()
    ctx.marks["target"] = target
    # slow enough that the stop script is up (its imports: seconds of wall time) long before the move would end
    # (the SDK clamps the speed ratio to 0.05, not the acceleration ratio: 0.001 makes a long slow start)
    go = ctx.start(EX, "go_to_joint_angles.py", "-q", *_fmt(target), "-s", "0.05", "-a", "0.001")
    if not ctx.wait_until(lambda: _err(ctx.q(), q0) > 0.005 or not go.running(), 60.0):
        raise CaseFailed(f"go_to_joint_angles.py -s 0.05 -a 0.001 did not move the arm:\n{go.tail()}")
    ctx.run(EX, "stop_motion_trajectory.py", budget=20, ok_text="successfully stopped")
    ctx.ended(go, 20.0)
    if not go.printed("failed to complete"):
        raise CaseFailed(f"go_to_joint_angles.py did not report its motion stopped:\n{go.tail()}")
    q1 = ctx.q()
    ctx.sleep(1.0)
    drift, left = _err(ctx.q(), q1), _err(ctx.q(), target)
    if drift > 0.005 or left < 0.002:
        raise CaseFailed(f"after the stop the arm moved {drift:.4f} rad in 1 s, {left:.3f} rad from the target")
    return f"stopped {left:.3f} rad short of the target, at rest (go_to_joint_angles: motion failed, as it must)"


def joint_trajectory_client(ctx: Ctx) -> str:
    import intera_compat.testing as T
    from actionlib_msgs.msg import GoalStatus
    from control_msgs.msg import FollowJointTrajectoryActionResult
    n = ctx.info.neutral
    ctx.marks["0.3 × neutral"] = 0.3 * n
    # (a cancel answers error_code 0 too: the script cancels its goal when it stops waiting, the trajectory's length)
    ended = []
    sub = rospy.Subscriber("/robot/limb/right/follow_joint_trajectory/result", FollowJointTrajectoryActionResult,
                           lambda m: ended.append(m.status.status))
    with T.EventLog() as log:
        rec = T.JointRecorder(ctx.info.joints).start()
        ctx.run(EX, "joint_trajectory_client.py", budget=60, ok_text="Test Complete")
        rec.stop()
        ctx.wait_until(lambda: any(k == "trajectory" for k, _ in log.sequence()), 5.0)
        results = [d for k, d in log.sequence() if k == "trajectory"]
    sub.unregister()
    cancelled = " (its goal was cancelled: the script stopped waiting before the arm's trajectory ended)" \
        if GoalStatus.PREEMPTED in ended else ""
    if results != ["error_code 0"]:
        raise CaseFailed(f"follow_joint_trajectory results {results}, not one SUCCESSFUL (error_code 0)")
    closest = float(np.abs(rec.q - 0.3 * n).max(axis=1).min()) if len(rec.t) else np.inf
    if closest > 0.05:
        raise CaseFailed(f"the arm came no closer than {closest:.3f} rad to 0.3 × neutral (the trajectory's "
                         f"lowest point)")
    err = ctx.settled_at(n, TOL, 2.0)
    if err > TOL:
        raise CaseFailed(f"final joint error {err:.4f} rad to the trajectory's last point (neutral){cancelled}")
    return f"SUCCEEDED; passed 0.3 × neutral within {closest:.3f} rad, ended {err:.4f} rad from neutral"


def _recording(ctx: Ctx) -> tuple[str, np.ndarray]:
    """joint_recorder.py while the arm moves from neutral to a target; the file and its last row's angles."""
    if "recording" in ctx.cache:
        return ctx.cache["recording"]
    path = os.path.join(ctx.workdir, "recording.csv")
    rec = ctx.start(EX, "joint_recorder.py", "-f", path, "-r", "50")
    ctx.printed(rec, "Recording")
    ctx.wait_until(lambda: os.path.exists(path) and os.path.getsize(path) > 200, 10.0)
    ctx.sleep(0.5)
    ctx.move_to(ctx.target(), speed=0.4)
    ctx.sleep(0.5)
    rec.interrupt()
    with open(path) as f:
        rows = list(csv.reader(f))
    header, last = rows[0], rows[-1]
    end = np.array([float(last[header.index(j)]) for j in ctx.info.joints])
    if len(rows) < 20 or _err(end, ctx.target()) > 0.02:
        raise CaseFailed(f"joint_recorder.py: {len(rows) - 1} rows, the last {_err(end, ctx.target()):.3f} rad "
                         f"from where the arm went")
    ctx.to_neutral()
    ctx.cache["recording"] = (path, end)
    return path, end


def joint_position_file_playback(ctx: Ctx) -> str:
    path, end = _recording(ctx)
    ctx.marks["recorded end"] = end
    ctx.run(EX, "joint_position_file_playback.py", "-f", path, budget=60, ok_text="Exiting example")
    err = ctx.settled_at(end, 0.02, 3.0)
    if err > 0.02:
        raise CaseFailed(f"the playback ended {err:.4f} rad from the recording's last point")
    return f"recorded, played back: {err:.4f} rad from the recording's last point"


def joint_trajectory_file_playback(ctx: Ctx) -> str:
    import intera_compat.testing as T
    path, end = _recording(ctx)
    ctx.marks["recorded end"] = end
    with T.EventLog() as log:
        ctx.run(EX, "joint_trajectory_file_playback.py", "-f", path, budget=60)
        ctx.wait_until(lambda: any(k == "trajectory" for k, _ in log.sequence()), 5.0)
        results = [d for k, d in log.sequence() if k == "trajectory"]
    if "error_code 0" not in results:
        raise CaseFailed(f"follow_joint_trajectory results {results}, none SUCCESSFUL")
    err = ctx.settled_at(end, TOL, 3.0)
    if err > TOL:
        raise CaseFailed(f"ended {err:.4f} rad from the recording's last point")
    return f"SUCCEEDED, {err:.4f} rad from the recording's last point"


def joint_position_keyboard(ctx: Ctx) -> str:
    kb = ctx.start(EX, "joint_position_keyboard.py", keys=True)
    ctx.printed(kb, "Press ? for help")
    ctx.heard(kb, "/sdk_joint_position_keyboard", "/robot/limb/right/joint_command")
    j0 = ctx.q()[0]
    name = ctx.info.joints[0]

    def press(k: str, what: str) -> None:
        """``k`` typed until the script printed ``what`` once more (each key it reads: its effect follows) — and
        only once: a key read twice would have moved the arm twice."""
        seen = kb.output().count(what)
        if not kb.press(k, lambda: kb.output().count(what) > seen):
            raise CaseFailed(f"key {k!r} was never read\n{kb.tail()}")
        if kb.output().count(what) != seen + 1:
            raise CaseFailed(f"key {k!r} was read {kb.output().count(what) - seen} times\n{kb.tail()}")

    def moved(k: str, q0: float, step: float) -> float:
        """Until right_j0 moved ``step`` (within 20 %) from ``q0`` and stays there for 0.5 s; where it is."""
        def near() -> bool:
            return abs(ctx.q()[0] - q0 - step) < 0.2 * abs(step)
        came = ctx.wait_until(near, 10.0)
        ctx.sleep(0.5)
        if not (came and near()):
            raise CaseFailed(f"key {k!r}: {name} moved {ctx.q()[0] - q0:+.3f} rad, not {step:+.1f}\n{kb.tail()}")
        return ctx.q()[0]
    press("1", f"{name} increase")  # right_j0 +0.1 rad
    up = moved("1", j0, 0.1)
    press("q", f"{name} decrease")  # right_j0 -0.1 rad from where it is
    moved("q", up, -0.1)
    press("?", "key bindings")
    if not kb.press("\x1b", lambda: not kb.running()):
        raise CaseFailed(f"Esc did not end it\n{kb.tail()}")
    ctx.ended(kb, 20.0)
    return f"'1' turned {ctx.info.joints[0]} +{up - j0:.3f} rad, 'q' back; '?' helped, Esc ended it"


def joint_position_joystick(ctx: Ctx) -> str:
    from sensor_msgs.msg import Joy
    pub = rospy.Publisher("/joy", Joy, queue_size=10)
    js = ctx.start(EX, "joint_position_joystick.py", "-j", "xbox")
    ctx.printed(js, "Press Ctrl-C to stop")

    def stick(x: float) -> Joy:
        axes = [0.0] * 8
        axes[0], axes[2], axes[5] = x, 1.0, 1.0  # left stick horizontal; triggers released
        return Joy(axes=axes, buttons=[0] * 11)
    j0 = ctx.q()[0]
    # left stick left: right_j0 +0.1 rad from where it is, every cycle while held
    if not ctx.wait_until(lambda: ctx.q()[0] > j0 + 0.15 or pub.publish(stick(-1.0)), 10.0):
        raise CaseFailed(f"left stick left: {ctx.info.joints[0]} moved {ctx.q()[0] - j0:+.3f} rad\n{js.tail()}")
    if not ctx.wait_until(lambda: ctx.q()[0] < j0 + 0.05 or pub.publish(stick(1.0)), 10.0):
        raise CaseFailed(f"left stick right: {ctx.info.joints[0]} did not come back ({ctx.q()[0] - j0:+.3f} rad)")
    pub.publish(stick(0.0))
    js.interrupt()
    return f"left stick turned {ctx.info.joints[0]} up and back (/joy, xbox)"


def joint_velocity_wobbler(ctx: Ctx) -> str:
    n = ctx.info.neutral
    ctx.marks["neutral"] = n
    wb = ctx.start(EX, "joint_velocity_wobbler.py")
    ctx.printed(wb, "Wobbling")
    moved = 0.0

    def far() -> bool:
        nonlocal moved
        moved = max(moved, _err(ctx.q(), n))
        return moved > 0.05
    if not ctx.wait_until(far, 5.0):
        raise CaseFailed(f"wobbling for 5 s moved the arm {moved:.3f} rad from neutral")
    ctx.sleep(2.0)
    wb.interrupt()  # its shutdown: control modes reset, back to neutral
    ctx.ended(wb, 40.0)
    err = ctx.settled_at(n, 0.02, 3.0)
    if err > 0.02:
        raise CaseFailed(f"after Ctrl-C it ended {err:.3f} rad from neutral (it moves back there)")
    return f"wobbled ({moved:.3f} rad from neutral), Ctrl-C took it back within {err:.4f} rad"


def joint_torque_springs(ctx: Ctx) -> str:
    import intera_compat.testing as T
    q0 = ctx.q()
    sp = ctx.start(EX, "joint_torque_springs.py")
    ctx.printed(sp, "Running. Ctrl-c to quit")
    t0 = ctx.now()
    worst = 0.0

    def watch() -> bool:
        nonlocal worst
        worst = max(worst, _err(ctx.q(), q0))
        return not sp.running() or T.robot_state().error
    ctx.wait_until(watch, 3.0)
    if not sp.running() or T.robot_state().error:
        raise CaseFailed(f"after {ctx.now() - t0:.1f} s: script running {sp.running()}, robot state "
                         f"{T.robot_state()}\n{sp.tail()}")
    sp.interrupt()
    if worst > 0.1:
        raise CaseFailed(f"the springs let the arm move {worst:.3f} rad from where they started")
    return f"held by the springs for 3 s (within {worst:.3f} rad), Ctrl-C ended it"


def head_wobbler(ctx: Ctx) -> str:
    from intera_core_msgs.msg import HeadState
    pans = []
    sub = rospy.Subscriber("/robot/head/head_state", HeadState, lambda m: pans.append(m.pan), queue_size=100)
    try:
        ctx.run(EX, "head_wobbler.py", budget=90)  # (10 s of wobbling, each pan awaited until reached)
    finally:
        sub.unregister()
    span = max(pans) - min(pans) if pans else 0.0
    if span < 0.3:
        raise CaseFailed(f"the head's pan spanned {span:.3f} rad (it wobbles between -2.0 and 0.95)")
    return f"the head panned over {span:.2f} rad, back to {pans[-1]:+.3f}"


def head_display_image(ctx: Ctx) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sensor_msgs.msg import Image
    path = os.path.join(ctx.workdir, "face.png")
    img = np.zeros((60, 100, 3))
    img[:, :50, 0] = 1.0
    plt.imsave(path, img)
    got = []
    sub = rospy.Subscriber("/robot/head_display", Image, got.append, queue_size=10)
    try:
        ctx.run(EX, "head_display_image.py", "-f", path, budget=20)
        ctx.wait_until(lambda: bool(got), 5.0)
    finally:
        sub.unregister()
    if not got or (got[-1].width, got[-1].height) != (100, 60):
        raise CaseFailed(f"/robot/head_display got {[(m.width, m.height) for m in got]}, not the 100×60 image")
    return f"the display got the {got[-1].width}×{got[-1].height} image ({got[-1].encoding})"


def lights_blink(ctx: Ctx) -> str:
    import json

    from intera_core_msgs.msg import IODeviceStatus
    seen = []

    def on_state(m):
        for s in m.signals:
            if s.name == "head_green_light":
                v = json.loads(s.data)[0]
                if not seen or seen[-1] != v:
                    seen.append(v)
    sub = rospy.Subscriber("/io/robot/robot/state", IODeviceStatus, on_state, queue_size=100)
    try:
        ctx.run(EX, "lights_blink.py", budget=30, ok_text="Final state")
    finally:
        sub.unregister()
    if len(seen) < 4:
        raise CaseFailed(f"head_green_light states the IO node reported: {seen} (asked: toggle 3 times, restore)")
    return f"head_green_light acknowledged {' → '.join(map(str, seen))}"


def fk_service_client(ctx: Ctx) -> str:
    ctx.run(EX, "fk_service_client.py", budget=20, ok_text="SUCCESS - Valid Cartesian Solution Found")
    return "SUCCESS - Valid Cartesian Solution Found"


def ik_service_client(ctx: Ctx) -> str:
    s = ctx.run(EX, "ik_service_client.py", budget=20, ok_text="Simple IK call passed!")
    if not s.printed("Advanced IK call passed!"):
        raise CaseFailed(f"the advanced IK call did not pass:\n{s.tail()}")
    return "simple and advanced IK calls passed"


def home_joints(ctx: Ctx) -> str:
    ctx.run(IF, "home_joints.py", budget=30)
    return "every joint homed (exit 0)"


def set_interaction_options(ctx: Ctx) -> str:
    from intera_core_msgs.msg import InteractionControlState
    topic = "/robot/limb/right/interaction_control_state"
    kn = ["5.0", "10.0"] * 4
    s = ctx.start(EX, "set_interaction_options.py", "-kn", *kn[:ctx.info.n])
    seen = ctx.wait_until(lambda: _interaction_on(topic, InteractionControlState), 20.0)
    s.interrupt()
    if not seen:
        raise CaseFailed(f"interaction_control_state never said interaction control is on:\n{s.tail()}")
    ctx.run(EX, "set_interaction_options.py", "-st", "0", "-kn", *kn[:ctx.info.n], budget=20, status=None)
    return "interaction control on (interaction_control_state), then off"


def _interaction_on(topic: str, msg_type) -> bool:
    try:
        return bool(rospy.wait_for_message(topic, msg_type, 1.0).interaction_control_active)
    except rospy.ROSException:
        return False


def _py3_breaks(what: str) -> str:
    return f"the SDK script fails on Python 3 ({what}) before it commands anything"


def _operator_div(info: RobotInfo) -> str | None:
    import operator
    return None if hasattr(operator, "div") else _py3_breaks("operator.div")


def _uint16_float(info: RobotInfo) -> str | None:
    import io

    from std_msgs.msg import UInt16
    try:
        UInt16(500.0).serialize(io.BytesIO())
    except Exception:
        return _py3_breaks("500.0 published as std_msgs/UInt16")
    return None


def _needs_sawyer_joints(info: RobotInfo) -> str | None:
    names = [f"right_j{i}" for i in range(7)]
    return None if info.joints == names else f"the script names the Sawyer's 7 joints ({info.n} joints here)"


CASES = [
    Case("enable_robot", ("enable_robot.py",), "disable then enable: /robot/state follows", enable_robot,
         motion=False),
    Case("go_to_joint_angles", ("go_to_joint_angles.py",),
         "a joint move from neutral: result ok, final joint error < 0.01 rad", go_to_joint_angles),
    Case("go_to_cartesian_pose", ("go_to_cartesian_pose.py",),
         "a 50 mm relative Cartesian move up: result ok, the endpoint rose 50 ± 5 mm", go_to_cartesian_pose),
    Case("send_random_trajectory", ("send_random_trajectory.py",),
         "a seeded random JOINT trajectory (saved as YAML): result ok, at its last waypoint", send_random_trajectory),
    Case("send_traj_from_file", ("send_traj_from_file.py",),
         "the saved YAML trajectory sent again: result ok, at its last waypoint", send_traj_from_file),
    Case("stop_motion_trajectory", ("go_to_joint_angles.py", "stop_motion_trajectory.py"),
         "a slow move stopped midway: the stop succeeds, the move reports failure, the arm rests short",
         stop_motion_trajectory),
    Case("joint_trajectory_client", ("joint_trajectory_client.py",),
         "FollowJointTrajectory through 0.3–1.0 × neutral: SUCCEEDED, passed the lowest point, back at neutral",
         joint_trajectory_client),
    Case("joint_position_file_playback", ("joint_recorder.py", "joint_position_file_playback.py"),
         "record a move, play it back with position commands: reaches the recording's last point",
         joint_position_file_playback, needs=_streaming),
    Case("joint_trajectory_file_playback", ("joint_recorder.py", "joint_trajectory_file_playback.py"),
         "the recording played as a FollowJointTrajectory: SUCCEEDED, at its last point",
         joint_trajectory_file_playback, needs=_operator_div),
    Case("joint_position_keyboard", ("joint_position_keyboard.py",),
         "keys through a pty: '1' turns j0 +0.1 rad, 'q' back, '?' prints help, Esc ends it",
         joint_position_keyboard, needs=lambda i: _streaming(i)
         or (None if i.n >= 7 else f"the script maps keys to 7 joints (joints[6]; {i.n} joints here)")),
    Case("joint_position_joystick", ("joint_position_joystick.py",),
         "sensor_msgs/Joy on /joy (xbox): the left stick turns j0 up and back", joint_position_joystick,
         needs=_streaming),
    Case("joint_velocity_wobbler", ("joint_velocity_wobbler.py",),
         "velocity commands wobble the arm; Ctrl-C returns it to neutral", joint_velocity_wobbler,
         needs=lambda i: _uint16_float(i) or _streaming(i)
         or (None if i.velocity else "position-only arm: no joint velocity commands")),
    Case("joint_torque_springs", ("joint_torque_springs.py",),
         "torque-mode springs hold the arm for 3 s without a fault; Ctrl-C ends it", joint_torque_springs,
         needs=lambda i: None if i.torque else "no joint torque commands on this arm"),
    Case("go_to_joint_angles_in_contact", ("go_to_joint_angles_in_contact.py",),
         "a joint move under impedance control: result ok, within 0.05 rad", go_to_joint_angles_in_contact,
         needs=lambda i: None if i.interaction else "no interaction control (needs torque, or a wrist F/T)"),
    Case("set_interaction_options", ("set_interaction_options.py",),
         "interaction control switched on (interaction_control_state) and off", set_interaction_options,
         needs=lambda i: None if i.interaction else "no interaction control (needs torque, or a wrist F/T)"),
    Case("head_wobbler", ("head_wobbler.py",), "the head pans about for 10 s and the script ends", head_wobbler,
         needs=lambda i: None if i.head else "no head", motion=False),
    Case("head_display_image", ("head_display_image.py",), "an image reaches /robot/head_display",
         head_display_image, needs=lambda i: None if i.head_display else "no head display", motion=False),
    Case("lights_blink", ("lights_blink.py",), "head_green_light toggled: the IO node acknowledges each state",
         lights_blink, needs=lambda i: None if "head_green_light" in i.lights else "no light head_green_light",
         motion=False),
    Case("fk_service_client", ("fk_service_client.py",), "the FK service answers the script's request",
         fk_service_client, needs=_needs_sawyer_joints, motion=False),
    Case("ik_service_client", ("ik_service_client.py",), "the IK service solves the script's Sawyer poses",
         ik_service_client,
         needs=lambda i: None if i.arm == "sawyer" else f"the script's target poses are a Sawyer's (arm: {i.arm})",
         motion=False),
    Case("home_joints", ("home_joints.py",), "the joints report homed", home_joints, motion=False),
]


def select(names: str | None) -> list:
    """The cases named (comma-separated), in their order here; all without names."""
    if not names:
        return list(CASES)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {c.name: c for c in CASES}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ValueError(f"unknown case(s) {', '.join(unknown)}; --list shows them")
    return [c for c in CASES if c.name in wanted]
