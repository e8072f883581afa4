"""``python -m intera_compat.emulator [--config ur5e.yaml] [--host 127.0.0.1] [--version 5.26.0]``: a UR controller
on loopback (RTDE 30004, Dashboard 29999, script 30003) backed by the MuJoCo arm, until interrupted. In its own
process: ur_rtde's calls block holding the Python interpreter, so a client in the same process would starve the
servers."""
from __future__ import annotations

import argparse
import signal
import threading

from ..loop.scheduler import raise_priority
from .dashboard_server import DashboardServer
from .rtde_server import RTDEServer
from .script_server import ScriptServer
from .ur_controller import VERSION, URController


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", default=None, help="robot config of the arm (default: config/ur5e.yaml)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--dashboard-port", type=int, default=29999)
    ap.add_argument("--version", default="", help="the PolyScope version it reports, e.g. 5.26.0 (default 5.11.1: "
                    "no direct torque)")
    args = ap.parse_args(argv)
    raise_priority()  # (it stands in for a controller with a CPU of its own; its threads inherit it)
    version = tuple(int(x) for x in args.version.split(".")) if args.version else VERSION
    controller = URController(args.config, version=version)
    controller.start()
    rtde = RTDEServer(controller, args.host).start()
    servers = [rtde, DashboardServer(controller, args.host, args.dashboard_port, rtde).start(),
               ScriptServer(controller, args.host).start()]
    print(f"UR controller emulator on {args.host}: RTDE 30004, Dashboard {args.dashboard_port}, script 30003",
          flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    for s in servers:
        s.close()
    controller.stop()


if __name__ == "__main__":
    main()
