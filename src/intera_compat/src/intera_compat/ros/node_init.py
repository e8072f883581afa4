"""``rospy.init_node``, with the node's XML-RPC server thread ended when rospy shuts down.

rospy's shutdown closes the node's XML-RPC socket but never stops the ``socketserver`` loop that serves it
(ros/ros_comm#2238, not fixed in Noetic): from then on the loop's poll reports the closed descriptor at once, for ever,
and that thread keeps a core busy, holding the GIL against the process's own threads, until the process exits.
Measured: a test worker whose session had ended spun 73 % of a core for the 700 s the other worker still ran. Every
node of this package, its tools and the test fixture's client start with ``init_node`` from here
(``test_node_init`` holds them to it), so whatever lives on after a node's shutdown — a test worker's remaining
time, a thread that has not finished — does so without that spin. (The work a node does on its way out runs in
rospy's ``on_shutdown`` hooks, before the socket is closed.) The SDK's scripts and this package's examples for users
are plain rospy.
"""
from __future__ import annotations

import rosgraph.xmlrpc
import rospy

# socketserver.BaseServer's private stop flag, checked by serve_forever after every poll (the name-mangled attribute
# of Python 3's socketserver; its public shutdown() would block until the loop is back, which it never is here)
_STOP_FLAG = "_BaseServer__shutdown_request"


def init_node(name: str, **kwargs) -> None:
    """``rospy.init_node(name, **kwargs)``, and a shutdown hook that ends its XML-RPC server's loop."""
    rospy.init_node(name, **kwargs)
    servers = [h.__self__.server for h in list(rospy.core._shutdown_hooks)
               if isinstance(getattr(h, "__self__", None), rosgraph.xmlrpc.XmlRpcNode)]

    def stop_serving(reason: str) -> None:  # (after rospy's own hook, added at init, has closed the socket)
        for server in servers:
            if hasattr(server, _STOP_FLAG):
                setattr(server, _STOP_FLAG, True)

    rospy.core.add_shutdown_hook(stop_serving)
