"""Scripts run against a simulated robot (``/use_sim_time``) see the robot's time from their first line.

Stock rospy reports time 0 until the node's first /clock message arrives, a few milliseconds after ``init_node``.
intera_interface computes its timeouts from ``rospy.get_time()`` (``wait_for``: end = now + timeout), so a wait begun
in those milliseconds ends the moment the clock jumps to the robot's time, and RobotEnable, Limb or an IO client
fails at random. roscpp has ``ros::Time::waitForValid()`` for this; here ``rospy.init_node`` waits (at most 10 s of
wall time) for the first /clock when the node runs on simulated time and /clock is published already (so the
realtime loop, which publishes it, and nodes started beside it are not held up).

Put into the venv by ``./setup.sh`` (a ``.pth`` line imports this module at start-up; rospy itself is patched when
it is first imported, nothing else is imported early).
"""
import time

WAIT = 10.0  # s of wall time for the first /clock


def _wait_for_clock(rospy) -> None:
    if rospy.rostime.is_wallclock():
        return
    import rosgraph
    try:
        pubs, _, _ = rosgraph.Master(rospy.get_name()).getSystemState()
    except Exception:  # (the master's answer is not ours to insist on)
        return
    clocks = [set(nodes) for topic, nodes in pubs if topic == "/clock"]
    if not clocks or clocks[0] <= {rospy.get_name()}:  # (none, or this node's own stale registration)
        return
    end = time.monotonic() + WAIT
    while rospy.get_rostime().is_zero() and time.monotonic() < end and not rospy.is_shutdown():
        time.sleep(0.002)


def _patch(rospy) -> None:
    init_node = rospy.init_node
    if getattr(init_node, "_intera_compat_simtime", False):
        return

    def init_node_on_robot_time(*args, **kwargs):
        out = init_node(*args, **kwargs)
        if not kwargs.get("disable_rostime", False):
            _wait_for_clock(rospy)
        return out
    init_node_on_robot_time.__doc__ = init_node.__doc__
    init_node_on_robot_time._intera_compat_simtime = True
    rospy.init_node = init_node_on_robot_time


from _intera_compat_hooks import PatchOnImport  # noqa: E402 (./setup.sh installs it beside this module)

PatchOnImport.install("rospy", _patch)
