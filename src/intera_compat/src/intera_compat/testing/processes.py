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
    for pid, start in nodes.items():
        st = _stat(pid)
        if st is not None and st[1] == start:  # (the same process, not a new one with its number)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


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
        for pid, t in new.items():
            st = _stat(pid)
            if st is not None and st[1] == t:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        end = time.monotonic() + timeout
        while time.monotonic() < end and any((_stat(p) or (0, None))[1] == t for p, t in new.items()):
            time.sleep(0.05)
    return list(new)
