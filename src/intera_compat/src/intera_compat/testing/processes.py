"""Processes for tests, without ROS: a free port, a log's tail, and stopping a launch with every node it started."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path, lines: int = 60) -> str:
    """The last lines of a process log (for a failure message: CI keeps no tmp files)."""
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})"


def _stat(pid) -> tuple | None:
    """(parent pid, start time) of a process from /proc, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid: int) -> dict:
    """Every process below ``pid``, with its start time (roslaunch starts each node in a session of its own, so
    killing roslaunch's group does not reach them)."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        st = _stat(entry) if entry.isdigit() else None
        if st is not None:
            children.setdefault(st[0], []).append((int(entry), st[1]))
    found, todo = {}, [pid]
    while todo:
        for c, start in children.get(todo.pop(), []):
            if c not in found:
                found[c] = start
                todo.append(c)
    return found


def _same(pid: int, start) -> bool:
    """``pid`` is still the process that started at ``start`` (not a new one given its number)."""
    st = _stat(pid)
    return st is not None and st[1] == start


def _signal(procs: dict, sig) -> None:
    """``sig`` to each of ``procs`` ({pid: start time}) that is still that process."""
    for pid, start in procs.items():
        if _same(pid, start):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def kill_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGINT to the process group (roslaunch shuts its nodes down), SIGKILL after ``timeout``; nodes that
    outlived it (one slow to exit, one respawned meanwhile) are SIGKILLed too: none is left behind."""
    if proc.poll() is not None:
        return
    nodes = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        nodes.update(descendants(proc.pid))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    except ProcessLookupError:
        pass
    _signal(nodes, signal.SIGKILL)


def talking_to(master_uri: str) -> dict:
    """The processes other than this one whose environment points them at ``master_uri``, with their start times."""
    needle = f"ROS_MASTER_URI={master_uri}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        st = _stat(entry)
        if st is not None:
            found[int(entry)] = st[1]
    return found


def kill_strays(master_uri: str, before: dict, timeout: float = 3.0) -> list:
    """Stop the processes talking to ``master_uri`` that were not there ``before`` (``talking_to`` then): what a test
    left behind (a node a launch respawned while it shut down, a script still running), which would otherwise
    register its name in the next test and shut that test's node of the same name down. SIGTERM (a node
    unregisters), SIGKILL after ``timeout``; returns their pids."""
    new = {pid: t for pid, t in talking_to(master_uri).items() if before.get(pid) != t}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        _signal(new, sig)
        end = time.monotonic() + timeout
        while time.monotonic() < end and any(_same(pid, t) for pid, t in new.items()):
            time.sleep(0.05)
    return list(new)


def _accepts(path: str) -> bool:
    """An X server listens on the socket ``path``."""
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(path)
            return True
        except OSError:
            return False


def start_xvfb(screen: str = "1280x1024x24", timeout: float = 10.0):
    """A private X server: (process, ":N"), or None when it did not come up. Its number is the first free one from
    99 up, well away from :0 (an X server that ``-displayfd`` had picked twice refused RViz in full runs although it
    answered on its socket)."""
    n = next(k for k in range(99, 300) if not os.path.exists(f"/tmp/.X{k}-lock")
             and not os.path.exists(f"/tmp/.X11-unix/X{k}"))
    proc = subprocess.Popen(["Xvfb", f":{n}", "-ac", "-screen", "0", screen, "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    end = time.monotonic() + timeout
    while not _accepts(f"/tmp/.X11-unix/X{n}"):
        if time.monotonic() > end or proc.poll() is not None:
            kill_group(proc)
            return None
        time.sleep(0.1)
    return proc, f":{n}"
