"""``rosrun intera_compat doctor``: what stands between an Intera SDK script and the robot, as a short pass/fail list
with the fix for each; exit code 1 when something fails.

The environment: the venv's Python, numpy and cv_bridge (Debian's is built for numpy 1.x), realtime scheduling and
CPU affinity (the loop asks for both; ``no_rt:=true`` runs without), ROS_MASTER_URI / ROS_HOSTNAME, the Intera SDK
found and built. The running robot: every parameter, topic, service and action the SDK needs (contract §1), each
topic and service with the type and md5 the SDK's messages have (a topic the robot publishes is listened to for one
message, whose connection header carries its md5; a service's md5 comes from its header).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
from urllib.parse import urlparse

OK, FAIL, WARN = "ok", "FAIL", "warn"
L = "/robot/limb/right"
# (name, kind, type): kind pub = the robot publishes it, sub = the robot subscribes, srv, act (its status topic)
INTERFACES = (
    ("/robot/state", "pub", "intera_core_msgs/RobotAssemblyState"),
    ("/robot/set_super_enable", "sub", "std_msgs/Bool"),
    ("/robot/set_super_reset", "sub", "std_msgs/Empty"),
    ("/robot/set_super_stop", "sub", "std_msgs/Empty"),
    ("/robot/joint_states", "pub", "sensor_msgs/JointState"),
    ("/robot/joint_limits", "pub", "intera_core_msgs/JointLimits"),
    (f"{L}/endpoint_state", "pub", "intera_core_msgs/EndpointState"),
    (f"{L}/tip_states", "pub", "intera_core_msgs/EndpointStates"),
    (f"{L}/gravity_compensation_torques", "pub", "intera_core_msgs/SEAJointState"),
    (f"{L}/joint_command", "sub", "intera_core_msgs/JointCommand"),
    (f"{L}/joint_command_timeout", "sub", "std_msgs/Float64"),
    (f"{L}/set_speed_ratio", "sub", "std_msgs/Float64"),
    (f"{L}/interaction_control_command", "sub", "intera_core_msgs/InteractionControlCommand"),
    ("/robot/homing_states", "pub", "intera_core_msgs/HomingState"),
    ("/io/robot/cuff/config", "pub", "intera_core_msgs/IODeviceConfiguration"),
    ("/io/robot/navigator/config", "pub", "intera_core_msgs/IODeviceConfiguration"),
    ("/io/robot/robot/config", "pub", "intera_core_msgs/IODeviceConfiguration"),
    ("/io/end_effector/state", "pub", "intera_core_msgs/IONodeStatus"),
    ("/ExternalTools/right/PositionKinematicsNode/FKService", "srv", "intera_core_msgs/SolvePositionFK"),
    ("/ExternalTools/right/PositionKinematicsNode/IKService", "srv", "intera_core_msgs/SolvePositionIK"),
    ("/motion/motion_command", "act", "intera_motion_msgs/MotionCommandAction"),
    (f"{L}/follow_joint_trajectory", "act", "control_msgs/FollowJointTrajectoryAction"),
)
OPTIONAL = (  # what only some robots have: reported, never a failure
    ("/robot/head/head_state", "pub", "intera_core_msgs/HeadState"),
    ("/io/internal_camera/config", "pub", "intera_core_msgs/IONodeConfiguration"),
    ("/calibration_command", "act", "intera_core_msgs/CalibrationCommandAction"),
)
PARAMS = ("/robot_config/assembly_names", "/robot_config/right_config/joint_names", "/manifest/robot_class",
          "/manifest/robot_software/version/HLR_VERSION_STRING", "/named_poses/right/poses/neutral",
          "/robot_description")
START = "start the robot: . ./env.sh && roslaunch intera_compat sawyer_sim.launch"
SDK_VERSIONS = ("5.3.0", "5.3.1", "5.3.2")  # what intera_interface's version check (SDK 5.3) accepts
REBUILD = "rebuild the message packages (./setup.sh) on both sides"
# Every problem doctor can report, as (check, what it says, the fix): the checks below give these fixes, and the
# table of docs/troubleshooting.md is printed from this list (doctor --troubleshooting), so both say the same.
TROUBLES = {
    "venv": ("Python venv", "not the repository's venv over /usr/bin/python3",
             "source the environment first: . ./env.sh (after ./setup.sh)"),
    "no_cv_bridge": ("numpy and cv_bridge", "no cv_bridge (the SDK's camera/display scripts need it)",
                     "./setup.sh (not --minimal: it installs what the SDK needs)"),
    "cv_bridge": ("numpy and cv_bridge", "importing cv_bridge prints an error (a build for another numpy)",
                  "./setup.sh, not --minimal (PyPI's cv-bridge shadows Debian's numpy-1.x build)"),
    "rt": ("realtime scheduling", "the loop's SCHED_FIFO / CPU pinning refused: it runs at normal priority (more "
           "late cycles)", "run as root, or give the user rtprio (limits.conf) / CAP_SYS_NICE; or launch with "
           "no_rt:=true (the loop then asks for nice -10 instead, granted to root or CAP_SYS_NICE)"),
    "host": ("ROS_HOSTNAME / ROS_IP", "does not resolve",
             "export ROS_HOSTNAME=127.0.0.1 (or a name other machines resolve)"),
    "no_host": ("ROS_HOSTNAME / ROS_IP", "unset: nodes advertise the machine's hostname",
                "export ROS_HOSTNAME=127.0.0.1 for a robot on this machine"),
    "loopback": ("ROS_HOSTNAME / ROS_IP", "localhost while the master is on another machine: its nodes cannot "
                 "connect back", "export ROS_HOSTNAME=(this machine's name or address, as the robot resolves it)"),
    "no_sdk": ("Intera SDK", "not found (intera_interface does not import)",
               "./setup.sh, not --minimal (it installs the SDK into src/intera_sdk)"),
    "sdk": ("Intera SDK", "intera_interface found, intera_examples / intera_motion_interface / PyKDL / xacro "
            "missing", "./setup.sh (not --minimal: it installs what the SDK needs)"),
    "no_uri": ("ROS master", "ROS_MASTER_URI is unset", ". ./env.sh (it sets ROS_MASTER_URI)"),
    "bad_uri": ("ROS master", "ROS_MASTER_URI is not http://host:port",
                "export ROS_MASTER_URI=http://localhost:11311 (. ./env.sh does)"),
    "master": ("ROS master", "does not answer", START),
    "param": ("param /robot_config/..., /manifest/..., /named_poses/..., /robot_description", "missing",
              START + " (it loads /robot_config, /manifest, /named_poses)"),
    "version": ("SDK version check", "HLR_VERSION_STRING is not one the SDK takes: its RobotEnable exits",
                "the robot's params must say " + " / ".join(SDK_VERSIONS) + " (config/sawyer_params.yaml)"),
    "interface": ("pub / sub / srv / act NAME", "nobody publishes / nobody subscribes / no such service", START),
    "no_answer": ("srv NAME", "the server did not answer", "the node serving it hangs or died: restart the robot"),
    "silent": ("pub NAME", "no message within the wait (a warning)", "the robot is still starting or a node "
               "stalled: run doctor again (--wait 10); read the launch's output"),
    "md5": ("pub / srv NAME", "an md5 other than the SDK's messages have", REBUILD),
    "type": ("pub / sub / act NAME", "a type other than the SDK expects", "a node of another robot stack?"),
    "state": ("robot state", "stopped or in error", "rosrun intera_interface enable_robot.py -r, then -e"),
}


def fix(key: str) -> str:
    return TROUBLES[key][2]


def troubleshooting() -> str:
    """The troubleshooting table of docs/troubleshooting.md (markdown)."""
    rows = ["| doctor's check | when it says | do this |", "|---|---|---|"]
    rows += [f"| {what} | {says} | {fx} |" for what, says, fx in TROUBLES.values()]
    return "\n".join(rows)


def _run(argv: list, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """A probe in a fresh interpreter (a numpy-1.x extension may crash the one that imports it); a hung one fails."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, -1, "", f"no answer within {timeout:g} s")


class Report:
    def __init__(self):
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, status: str, what: str, detail: str, fix: str = "") -> None:
        self.rows.append((status, what, detail, fix))

    def print(self, out=sys.stdout) -> None:
        print("intera_compat doctor", file=out)
        for status, what, detail, fix in self.rows:
            print(f"  {status:<5} {what:<44} {detail}", file=out)
            if fix and status != OK:
                print(f"        → {fix}", file=out)
        failed = sum(r[0] == FAIL for r in self.rows)
        print(f"{failed} problem{'s' * (failed != 1)} found" if failed else "all checks passed", file=out)

    @property
    def failed(self) -> bool:
        return any(r[0] == FAIL for r in self.rows)


def _md5(type_name: str) -> str:
    """The md5 an SDK client has for ``pkg/Type``: the original robot's (``wire_md5``) for Intera's and control_msgs'
    types, this Python's for the standard ones ('' if unknown)."""
    from ..wire_md5 import MD5
    if type_name in MD5:
        return MD5[type_name]
    pkg, name = type_name.split("/")
    try:
        mod = importlib.import_module(f"{pkg}.srv" if name.startswith("SolvePosition") else f"{pkg}.msg")
        return getattr(mod, name)._md5sum
    except (ImportError, AttributeError):
        return ""


# ---- the environment ------------------------------------------------------------------------------------
def check_environment(r: Report) -> str:
    """The environment's checks; returns ROS_MASTER_URI."""
    if sys.prefix != sys.base_prefix and sys.base_prefix == "/usr":
        r.add(OK, "Python venv", f"{sys.prefix} (over /usr/bin/python3)")
    else:
        r.add(FAIL, "Python venv", f"{sys.executable} is not the repository's venv over /usr/bin/python3",
              fix("venv"))
    probe = _run([sys.executable, "-c", "import numpy; print(numpy.__version__)\nimport cv_bridge"])
    numpy = probe.stdout.strip() or "?"
    if probe.returncode == 0 and not probe.stderr.strip():
        r.add(OK, "numpy and cv_bridge", f"numpy {numpy}, cv_bridge imports cleanly")
    elif "No module named 'cv_bridge'" in probe.stderr:
        r.add(WARN, "numpy and cv_bridge", f"numpy {numpy}, no cv_bridge (the SDK's camera/display scripts need it)",
              fix("no_cv_bridge"))
    else:  # (only the SDK's scripts use cv_bridge: without the SDK it is a warning)
        last = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else f"exit {probe.returncode}"
        r.add(FAIL if importlib.util.find_spec("intera_interface") else WARN, "numpy and cv_bridge",
              f"numpy {numpy}: importing cv_bridge printed: {last}", fix("cv_bridge"))
    rt = _run([sys.executable, "-c", "from intera_compat.loop.scheduler import loop_cpu, setup_realtime\n"
                                     "cpu = loop_cpu(); info = setup_realtime(cpu)\nprint(cpu, info['fifo'])"])
    words = rt.stdout.split()
    if rt.returncode == 0 and words[-1:] == ["True"]:
        r.add(OK, "realtime scheduling", f"SCHED_FIFO and the loop's CPU ({words[0]}) granted, as the loop asks")
    else:
        r.add(WARN, *TROUBLES["rt"])
    uri = os.environ.get("ROS_MASTER_URI", "")
    host = os.environ.get("ROS_HOSTNAME") or os.environ.get("ROS_IP") or ""
    if host:
        try:
            socket.getaddrinfo(host, None)
            r.add(OK, "ROS_HOSTNAME / ROS_IP", host)
        except OSError:
            r.add(FAIL, "ROS_HOSTNAME / ROS_IP", f"{host!r} does not resolve", fix("host"))
    else:
        r.add(WARN, *TROUBLES["no_host"])
    sdk = importlib.util.find_spec("intera_interface")
    if sdk is None:
        r.add(WARN, *TROUBLES["no_sdk"])
    else:
        missing = [m for m in ("intera_examples", "intera_motion_interface", "PyKDL", "xacro")
                   if importlib.util.find_spec(m) is None]
        if missing:
            r.add(FAIL, "Intera SDK", f"intera_interface found, missing {missing}", fix("sdk"))
        else:
            r.add(OK, "Intera SDK", os.path.dirname(sdk.origin))
    return uri


# ---- the running robot ----------------------------------------------------------------------------------
def _reachable(uri: str) -> bool:
    """A master answers at ``uri`` (its XML-RPC, not just a port)."""
    import rosgraph
    u = urlparse(uri)
    try:
        with socket.create_connection((u.hostname, u.port or 11311), timeout=2.0):
            pass
        return rosgraph.is_master_online(uri)
    except (OSError, ValueError):
        return False


def _listen_md5(topic: str, timeout: float) -> str | None:
    """The md5 in the connection header of one message on ``topic`` (None if none came)."""
    import rospy
    got = []
    sub = rospy.Subscriber(topic, rospy.AnyMsg, lambda m: got.append(m._connection_header.get("md5sum", "")),
                           queue_size=1)
    end = time.monotonic() + timeout
    while not got and time.monotonic() < end:
        time.sleep(0.02)
    sub.unregister()
    return got[0] if got else None


def check_robot(r: Report, uri: str, wait: float = 3.0) -> None:
    if not uri:
        r.add(FAIL, *TROUBLES["no_uri"])
        return
    u = urlparse(uri)
    try:
        well_formed = u.scheme == "http" and bool(u.hostname) and (u.port or 11311) > 0
    except ValueError:
        well_formed = False
    if not well_formed:
        r.add(FAIL, "ROS master", f"ROS_MASTER_URI {uri!r} is not http://host:port", fix("bad_uri"))
        return
    if not _reachable(uri):
        r.add(FAIL, "ROS master", f"{uri} does not answer", fix("master"))
        return
    host = os.environ.get("ROS_HOSTNAME") or os.environ.get("ROS_IP") or ""
    if host in ("localhost", "127.0.0.1") and u.hostname not in ("localhost", "127.0.0.1"):
        r.add(FAIL, "ROS_HOSTNAME / ROS_IP", f"{host!r} while the master is on {u.hostname}: its nodes cannot "
              f"connect back to this machine", fix("loopback"))
    r.add(OK, "ROS master", uri)
    import rosgraph
    import rospy
    from .node_init import init_node
    import rosservice
    init_node("intera_compat_doctor", anonymous=True, disable_signals=True)
    master = rosgraph.Master(rospy.get_name())
    for p in PARAMS:
        if master.hasParam(p):
            r.add(OK, f"param {p}", "set")
        else:
            r.add(FAIL, f"param {p}", "missing", fix("param"))
    version = str(master.getParam(PARAMS[3])) if master.hasParam(PARAMS[3]) else ""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", version)
    if version and (m is None or m.group(0) not in SDK_VERSIONS):
        r.add(FAIL, "SDK version check", f"HLR_VERSION_STRING {version!r}: the SDK's RobotEnable exits (it takes "
              f"{', '.join(SDK_VERSIONS)})", fix("version"))
    pubs, subs, _ = master.getSystemState()
    published = {t: n for t, n in pubs}
    subscribed = {t: n for t, n in subs}
    types = dict(master.getTopicTypes())
    for optional, table in ((False, INTERFACES), (True, OPTIONAL)):
        for name, kind, typ in table:
            topic = f"{name}/status" if kind == "act" else name
            what = f"{kind} {name}"
            missing = bad = FAIL if not optional else WARN  # (what only some robots have: never a failure)
            if kind == "srv":
                try:
                    svc_uri = rosservice.get_service_uri(name)
                except rosservice.ROSServiceIOException:
                    svc_uri = None
                if not svc_uri:
                    r.add(missing, what, "no such service", fix("interface"))
                    continue
                try:
                    md5 = rosservice.get_service_headers(name, svc_uri).get("md5sum", "")
                except Exception as e:  # (a server that does not answer its header)
                    r.add(bad, what, f"the server at {svc_uri} did not answer: {e!r}", fix("no_answer"))
                    continue
                want = _md5(typ)
                status = OK if md5 == want else bad
                r.add(status, what, f"{typ} md5 {md5}" + ("" if status == OK else f" (the SDK's: {want})"),
                      fix("md5"))
                continue
            robot_pubs = kind in ("pub", "act")
            nodes = (published if robot_pubs else subscribed).get(topic)
            if not nodes:
                r.add(missing, what, "nobody " + ("publishes" if robot_pubs else "subscribes"), fix("interface"))
                continue
            typ_topic = "actionlib_msgs/GoalStatusArray" if kind == "act" else typ
            have = types.get(topic, "")
            if have != typ_topic:
                r.add(bad, what, f"type {have}, the SDK expects {typ_topic}", fix("type"))
                continue
            if kind == "pub":
                md5 = _listen_md5(topic, wait)
                want = _md5(typ)
                if md5 is None:
                    r.add(WARN, what, f"{typ}: no message within {wait:g} s (published by {', '.join(nodes)})",
                          fix("silent"))
                elif md5 != want:
                    r.add(bad, what, f"{typ} md5 {md5}, the original robot's {want}", fix("md5"))
                else:
                    r.add(OK, what, f"{typ} md5 {md5}")
            else:
                r.add(OK, what, f"{typ_topic} ({', '.join(nodes)})")
    state = [row for row in r.rows if row[1] == "pub /robot/state" and row[0] == OK]
    if state:
        from intera_core_msgs.msg import RobotAssemblyState
        try:
            s = rospy.wait_for_message("/robot/state", RobotAssemblyState, wait)
            if s.stopped or s.error:
                r.add(WARN, "robot state", f"stopped={s.stopped} error={s.error}", fix("state"))
            else:
                r.add(OK, "robot state", "enabled" if s.enabled else "disabled (enable_robot.py -e enables it)")
        except rospy.ROSException:
            pass


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wait", type=float, default=3.0, help="seconds to wait for one message of each topic")
    ap.add_argument("--no-robot", action="store_true", help="check the environment only")
    ap.add_argument("--troubleshooting", action="store_true", help="print every problem it can report with its fix "
                    "(the table of docs/troubleshooting.md) and exit")
    args = ap.parse_args(argv)
    if args.troubleshooting:
        print(troubleshooting())
        return 0
    r = Report()
    uri = check_environment(r)
    if not args.no_robot:
        check_robot(r, uri, args.wait)
    r.print()
    return 1 if r.failed else 0
