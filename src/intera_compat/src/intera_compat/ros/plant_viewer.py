"""``viewer:=true``: MuJoCo's interactive viewer on the simulated arm, in a process of its own.

The realtime loop's plant is never touched by a GUI (a viewer in the loop process would hold the plant for a frame
at a time and share its core): the viewer draws a *mirror* of it — the same model (the config's arm, the obstacle
scene, a floor) posed from /robot/joint_states and forward-computed, so the contacts show (the left panel's
Rendering tab: contact points and forces) — at ``~rate`` frames a second, off the loop's core.

Pushing with the mouse acts on the real plant: double-click a link to select it, then Ctrl + right-drag pulls it,
Ctrl + left-drag twists it. The force MuJoCo's spring to the mouse makes on the mirror
(``mjv_applyPerturbForce``, damped by the plant's velocities), capped at ``~max_force`` N and ``~max_torque`` Nm,
goes to /robot/sim/apply_wrench every frame, lasting a few frames of the robot's time, so letting go (or the viewer
dying) ends it. The arm feels it as it would a hand: on the torque-driven arm collision detection stops it, zero-G (a
cuff squeeze) lets it float, interaction control yields.

What the viewer made of the mouse shows on /diagnostics ("MuJoCo viewer", at each change and once a second): the
link selected, the grab (pull / twist), the pushes sent, refused and failed, the frames and the key presses the
viewer has handled. The key count is the viewer's own acknowledgement: its UI thread handles the window's events in
order and counts a key press after handling it, and the status reports that count with the selection the viewer made
of the events before it (the double-click's selection is resolved in the frame after the UI thread handled it).

Parameters: ``~config``, ``~scene`` (as the loop's), ``~rate`` (30 Hz), ``~max_force`` (150 N), ``~max_torque``
(30 Nm). Closing the window ends the node (nothing else depends on it).
"""
from __future__ import annotations

import threading
import time

import mujoco
import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Vector3, Wrench

from ..config import load_config
from ..loop.scheduler import keep_off_cpu, loop_cpu
from ..model.cameras import camera_mjcf
from ..model.robot_model import RobotModel
from .conversions import JointPositions
from .node_init import init_node

HOLD_FRAMES = 3  # a push lasts this many frames unless renewed: a stalled or closed viewer lets go by itself
STATUS_EVERY = 1.0  # s (wall): the viewer's status at least this often (and at each change of the user's gesture)
GRABS = {0: "", 1: "pull", 2: "twist", 3: "pull+twist"}  # MjvPerturb.active: mjPERT_TRANSLATE | mjPERT_ROTATE


class Mirror:
    """The plant's model and a pose of it; ``perturbation`` turns the viewer's mouse into a push on a link."""

    def __init__(self, rm: RobotModel, obstacles=(), max_force: float = 150.0, max_torque: float = 30.0):
        self.model = mujoco.MjModel.from_xml_string(camera_mjcf(rm, {}, obstacles))
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._qadr = np.array([m.joint(n).qposadr[0] for n in rm.joint_names])  # (tree order ≠ config's)
        self._dadr = np.array([m.joint(n).dofadr[0] for n in rm.joint_names])
        # each link's body and the site at its frame origin (bodies are named after their link)
        self._site = {b: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, m.body(b).name) for b in range(1, m.nbody)}
        self.max_force, self.max_torque = max_force, max_torque

    def pose(self, q: np.ndarray, v: np.ndarray | None = None) -> None:
        """The plant's joint angles (and velocities: the mouse spring's damping acts on them)."""
        self.data.qpos[self._qadr] = q
        self.data.qvel[self._dadr] = 0.0 if v is None else v
        mujoco.mj_forward(self.model, self.data)

    def perturbation(self, pert) -> tuple[str, np.ndarray] | None:
        """The push the viewer's perturbation ``pert`` (an ``MjvPerturb``) makes on the posed mirror: (link,
        wrench at the link frame's origin, base axes, capped), or None when nothing is being pushed."""
        b = int(pert.select)
        if b <= 0 or not (pert.active | pert.active2) or self._site.get(b, -1) < 0:
            return None
        m, d = self.model, self.data
        d.xfrc_applied[:] = 0.0
        mujoco.mjv_applyPerturbForce(m, d, pert)
        w = d.xfrc_applied[b].copy()  # at the body's centre of mass
        d.xfrc_applied[:] = 0.0  # (the mirror only shows: the plant moves it)
        w[3:] += np.cross(d.xipos[b] - d.site_xpos[self._site[b]], w[:3])  # the same push about the frame origin
        for part, cap in ((w[:3], self.max_force), (w[3:], self.max_torque)):
            norm = np.linalg.norm(part)
            if norm > cap:
                part *= cap / norm
        if not np.isfinite(w).all():
            return None
        return m.body(b).name, w


class TimeRate:
    """Robot seconds per wall second, from the joint states' stamps (the simulator may run faster or slower than
    real time, and a push's duration is in robot time while the viewer's frames are in wall time)."""

    def __init__(self):
        self.rate, self._last = 1.0, None

    def update(self, stamp: float, wall: float) -> float:
        if self._last is None or stamp < self._last[1]:
            self._last = (wall, stamp)
        elif wall - self._last[0] >= 0.5:
            self.rate = min(max((stamp - self._last[1]) / (wall - self._last[0]), 0.02), 100.0)
            self._last = (wall, stamp)
        return self.rate


class Activity:
    """What the viewer's user did and what the node made of it (the status on /diagnostics).

    ``keys`` is counted on the viewer's UI thread (its key callback, after the UI handled the key); ``frame`` is
    given the count read *before* a ``viewer.sync()`` and the selection and grab read after it, so a reported
    count of n guarantees every mouse event sent before the n-th key press has been handled and resolved."""

    def __init__(self):
        self.keys = 0  # (written by the viewer's UI thread only)
        self.frames = 0
        self.gesture = (0, "", "")  # (keys handled, link selected, grab)
        self.pushes = {"sent": 0, "refused": 0, "failed": 0}

    def key(self, _keycode: int) -> None:
        self.keys += 1

    def frame(self, keys: int, selected: str, grab: str) -> bool:
        """One frame drawn; True when the gesture changed."""
        self.frames += 1
        changed = (keys, selected, grab) != self.gesture
        self.gesture = (keys, selected, grab)
        return changed

    def status(self) -> DiagnosticStatus:
        keys, selected, grab = self.gesture
        p = self.pushes
        what = f"{selected} selected" + (f" ({grab})" if grab else "") if selected else "nothing selected"
        st = DiagnosticStatus(level=DiagnosticStatus.OK, name="MuJoCo viewer", hardware_id="plant_viewer",
                              message=f"{what}; {p['sent']} pushes sent, {p['refused']} refused, {p['failed']} failed")
        st.values = [KeyValue("viewer_selected", selected), KeyValue("viewer_grab", grab),
                     KeyValue("viewer_keys_total", str(keys)), KeyValue("viewer_frames_total", str(self.frames))]
        st.values += [KeyValue(f"viewer_pushes_{k}_total", str(v)) for k, v in p.items()]
        return st


def _wrench(w) -> Wrench:
    return Wrench(force=Vector3(*w[:3]), torque=Vector3(*w[3:]))


def main() -> None:
    init_node("plant_viewer")
    keep_off_cpu(loop_cpu())  # (the loop has its core; rendering may be on the CPU)
    import mujoco.viewer
    from intera_compat.srv import ApplyWrench

    cfg = load_config(rospy.get_param("~config", None) or None)
    rm = RobotModel(cfg)
    mirror = Mirror(rm, cfg.scene_obstacles(rospy.get_param("~scene", "")),
                    float(rospy.get_param("~max_force", 150.0)), float(rospy.get_param("~max_torque", 30.0)))
    period = 1.0 / float(rospy.get_param("~rate", 30.0))
    joints = JointPositions(cfg.all_joints, cfg.full_pose("neutral"))
    push = rospy.ServiceProxy("/robot/sim/apply_wrench", ApplyWrench, persistent=True)
    activity = Activity()
    pub_diag = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=10)

    def publish_status():
        arr = DiagnosticArray(status=[activity.status()])
        arr.header.stamp = rospy.Time.now()
        pub_diag.publish(arr)

    def send(link: str, w: np.ndarray, seconds: float):
        nonlocal push
        try:
            r = push(link, _wrench(w), seconds)
            activity.pushes["sent" if r.success else "refused"] += 1
            if not r.success:
                rospy.logwarn_throttle(2.0, f"plant_viewer: push refused: {r.message}")
        except (rospy.ServiceException, OSError) as e:  # (the loop is not up yet, or restarted)
            activity.pushes["failed"] += 1
            rospy.logwarn_throttle(5.0, f"plant_viewer: /robot/sim/apply_wrench unavailable ({e}); no push")
            push.close()
            push = rospy.ServiceProxy("/robot/sim/apply_wrench", ApplyWrench, persistent=True)

    mirror.pose(joints.q)
    before = set(threading.enumerate())
    with mujoco.viewer.launch_passive(mirror.model, mirror.data, show_right_ui=False,  # (Shift+Tab)
                                      key_callback=activity.key) as viewer:
        viewer.cam.lookat[:] = (0.35, 0.0, 0.1)
        viewer.cam.distance, viewer.cam.azimuth, viewer.cam.elevation = 2.6, 150.0, -22.0
        rospy.loginfo("plant_viewer: up (double-click a link, then Ctrl + right-drag to push it)")
        pushing = None
        due = time.monotonic()
        robot_time = TimeRate()
        reported = 0.0
        while viewer.is_running() and not rospy.is_shutdown():
            q, v, stamp = joints.state
            keys = activity.keys  # (before the sync: the events handled before these keys are resolved by it)
            with viewer.lock():
                mirror.pose(q, v)
                p = mirror.perturbation(viewer.perturb)
            viewer.sync()  # (resolves a double-click's selection and a Ctrl + drag's start)
            with viewer.lock():
                sel, grab = int(viewer.perturb.select), GRABS.get(int(viewer.perturb.active), "")
            selected = mirror.model.body(sel).name if sel > 0 else ""
            last = activity.gesture
            if activity.frame(keys, selected, grab):
                if selected != last[1]:
                    rospy.loginfo(f"plant_viewer: {selected or 'nothing'} selected")
                if grab != last[2]:
                    rospy.loginfo(f"plant_viewer: {grab + ' ' + selected if grab else 'let go of ' + last[1]}")
            if activity.gesture != last or time.monotonic() - reported >= STATUS_EVERY:
                publish_status()
                reported = time.monotonic()
            if p is not None:  # (lasting HOLD_FRAMES frames of the robot's time unless renewed)
                send(p[0], p[1], HOLD_FRAMES * period * robot_time.update(stamp, time.monotonic()))
            elif pushing is not None:
                send(pushing, np.zeros(6), 0.0)  # let go
            pushing = p[0] if p is not None else None
            due = max(due + period, time.monotonic())
            time.sleep(max(due - time.monotonic(), 0.0))
        if pushing is not None:
            send(pushing, np.zeros(6), 0.0)
    ui = [t for t in set(threading.enumerate()) - before if "launch_internal" in t.name]
    for t in ui:  # the viewer's UI thread: exiting under it crashes (GLFW)
        t.join(5.0)
    if not ui:  # (not found by its name: give it the time it takes)
        time.sleep(1.0)
    rospy.loginfo("plant_viewer: window closed")
