"""One SDK script as a process: what ``rosrun pkg script args`` runs, in a session of its own, its output in a log, a pty as its
stdin when it reads keys (``intera_external_devices.getch`` reads a terminal raw), SIGINT to stop it."""
from __future__ import annotations

import functools
import os
import pty
import random
import signal
import subprocess
import tempfile
import time

from ..testing.processes import kill_group


@functools.lru_cache(maxsize=None)
def executable(pkg: str, name: str) -> str:
    """Where ``rosrun pkg name`` finds the script: the package's libexec (devel/lib/pkg, catkin's relay) first, then
    the package's own folders (found once: rosrun's own lookup is a second interpreter per run)."""
    from catkin.find_in_workspaces import find_in_workspaces
    import rospkg
    dirs = find_in_workspaces(["libexec"], project=pkg, first_matching_workspace_only=True)
    try:
        dirs.append(rospkg.RosPack().get_path(pkg))
    except rospkg.ResourceNotFound:
        pass
    for d in dirs:
        for root, _, files in os.walk(d):
            if name in files and os.access(os.path.join(root, name), os.X_OK):
                return os.path.join(root, name)
    raise FileNotFoundError(f"no executable {name} in package {pkg} (is the Intera SDK built? ./setup.sh installs it unless --minimal)")


class Script:
    def __init__(self, pkg: str, name: str, *args: str, keys: bool = False, stdin: str | None = None,
                 logdir: str | None = None):
        self.argv = [executable(pkg, name), *map(str, args)]
        self.name = name
        fd, self.log_path = tempfile.mkstemp(prefix=f"{name}-", suffix=".log", dir=logdir)
        self._log = os.fdopen(fd, "w")
        self._master = None
        source = subprocess.DEVNULL if stdin is None else subprocess.PIPE
        if keys:
            self._master, slave = pty.openpty()
            source = slave
        # (unbuffered: what it printed is in the log when it printed it — ``press`` and ``printed`` read it)
        self.proc = subprocess.Popen(self.argv, stdin=source, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        if keys:
            os.close(slave)
        elif stdin is not None:  # (what the user would type: the script reads it when it asks)
            self.proc.stdin.write(stdin.encode())
            self.proc.stdin.close()

    def key(self, k: str) -> None:
        """Types ``k`` on the script's terminal."""
        os.write(self._master, k.encode())

    def press(self, k: str, took, wall: float = 60.0, again: float = 2.0) -> bool:
        """Types ``k`` until ``took()`` (its effect: a line printed, the script ended); True once it did, False after
        ``wall`` s (a failure guard). Typed again after ``again`` s without it: the SDK's ``getch`` sets the terminal
        raw for each read with ``TCSAFLUSH`` and restores it after, so a key typed between two reads is thrown away
        (a person presses it again, and so does this; a key that was read printed its effect, so no key is
        taken twice)."""
        end = time.monotonic() + wall
        while time.monotonic() < end:
            try:
                self.key(k)
            except OSError:  # (the script has gone: its terminal with it)
                break
            retry = min(end, time.monotonic() + again * random.uniform(1.0, 1.5))  # (not in step with its reads)
            while time.monotonic() < retry:
                if took():
                    return True
                time.sleep(0.02)
        return bool(took())

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, wall: float) -> int | None:
        """Its exit status, or None if it still runs after ``wall`` seconds (a failure guard, not a budget)."""
        try:
            return self.proc.wait(wall)
        except subprocess.TimeoutExpired:
            return None

    def interrupt(self, wall: float = 60.0) -> int | None:
        """Ctrl-C (SIGINT to its group: rosrun and the script); its exit status once it ended, or None."""
        if self.running():
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        return self.wait(wall)

    def output(self) -> str:
        self._log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def tail(self, lines: int = 12) -> str:
        return "\n".join(self.output().rstrip().splitlines()[-lines:])

    def printed(self, text: str) -> bool:
        return text in self.output()

    def close(self) -> None:
        """Ends it if it still runs (SIGINT, then SIGKILL to every process it started)."""
        if self.running():
            self.interrupt(20.0)
        kill_group(self.proc, 5.0)
        if self._master is not None:
            os.close(self._master)
            self._master = None
        self._log.close()

    def __enter__(self) -> "Script":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def wait_printed(script: Script, text: str, wall: float) -> bool:
    """Until the script printed ``text`` (True) or ended or ``wall`` s passed without it (a failure guard)."""
    end = time.monotonic() + wall
    while time.monotonic() < end:
        if script.printed(text):
            return True
        if not script.running():
            return script.printed(text)
        time.sleep(0.05)
    return False
