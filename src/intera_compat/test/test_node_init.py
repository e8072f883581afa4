"""``intera_compat.ros.node_init.init_node``: once rospy has shut down, the node's XML-RPC server thread ends.

rospy's own shutdown leaves that thread polling its closed socket for ever (ros/ros_comm#2238): shown here too, on a
node started with plain ``rospy.init_node``, so that the check is known to see the spin."""
from __future__ import annotations

import subprocess
import sys

# a node that starts, shuts rospy down, and says whether a thread still runs the XML-RPC server's loop once the loop
# has had its chance to end (it polls every 0.5 s at most; a closed socket answers at once)
NODE = r"""
import sys, time
import rospy
from intera_compat.ros.node_init import init_node

(init_node if sys.argv[1] == "init_node" else rospy.init_node)("xmlrpc_check", anonymous=True, disable_signals=True)

def serving():
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code.co_name == "serve_forever":
                return True
            frame = frame.f_back
    return False

assert serving(), "the XML-RPC server does not run"
rospy.signal_shutdown("checked")
end = time.monotonic() + float(sys.argv[2])
while serving() and time.monotonic() < end:
    time.sleep(0.05)
print("serving" if serving() else "ended")
"""


def _run(how: str, wait: float) -> str:
    out = subprocess.run([sys.executable, "-c", NODE, how, str(wait)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[-1]


def test_the_xml_rpc_thread_ends_at_shutdown(ros_master):
    assert _run("init_node", 60.0) == "ended"


def test_plain_rospy_leaves_it_spinning(ros_master):
    """The bug worked around, still there: the check above can fail."""
    assert _run("rospy", 2.0) == "serving", \
        "rospy's shutdown now ends its XML-RPC thread (ros/ros_comm#2238 fixed here): node_init's hook can go"


def test_every_node_of_the_package_starts_with_init_node():
    """No ``rospy.init_node`` in the package, its scripts, tools, benchmarks or test nodes (its examples for users
    excepted: they are written as a user's script would be)."""
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[1]
    places = [root / "src", root / "nodes", root / "scripts", root / "bench", root / "test" / "nodes"]
    files = [p for d in places for p in d.rglob("*") if p.is_file() and p.suffix in ("", ".py")
             and "__pycache__" not in p.parts and p.name != "node_init.py"]
    assert files
    plain = [str(p.relative_to(root)) for p in files if "rospy.init_node(" in p.read_text(errors="replace")]
    assert not plain, f"plain rospy.init_node (use intera_compat.ros.node_init.init_node): {plain}"
