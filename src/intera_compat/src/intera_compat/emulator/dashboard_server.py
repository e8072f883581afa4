"""The Dashboard server (port 29999) of a UR controller, served from a ``URController``: a greeting line, then one
reply line per command line (bare "\\n" line ends, as the controller sends and ur_rtde's DashboardClient needs).
Replies are the controller's wording; what ur_rtde checks exactly: ``docs/ur_rtde_client_facts.md`` §4.

Fault injection (the emulator's own commands, which a real controller would not understand): ``emulator
protective stop``, ``emulator estop on|off`` (the robot's E-stop button), ``emulator rtde silent on|off`` (no
RTDE data packages: clients time out), ``emulator slider F`` (the teach pendant's speed slider, 0..1),
``emulator digital_in N on|off`` (0-7 standard, 8-15 configurable, 16-17 tool), ``emulator analog_in N V``,
``emulator push Fx Fy Fz Tx Ty Tz S`` (a wrench pushed onto the tool for S seconds: a hand guiding the arm).
``emulator mode`` answers with the arm's force mode and freedrive axes (``force 001000 freedrive off motion servo ignored 0
errors 0``: the compliant / free axes of the task / feature frame, what the arm follows — hold, servo, speed, move,
torque, stopping —, the motion commands ignored in freedrive, the runtime errors that stopped the program).
``emulator deadman`` answers with the RTDE watchdog and its last stop in the controller's own time (``watchdog_hz 10
trips 1 now 12.3460 fed 10.0020 last_input 10.0020 tripped 10.1040 speed 0.5012 rest 10.1700``: s since the
controller started — fed: the last write of the watchdog's register; the last stop's last input, trip, leading
joint speed (rad/s) and rest; -1: none yet)."""
from __future__ import annotations

import socketserver

from .tcp import ThreadedServer
from .ur_controller import PAUSED, PLAYING, ROBOT_MODE_NAMES, SAFETY_MODE_NAMES, SERIAL, URController

PORT = 29999
GREETING = "Connected: Universal Robots Dashboard Server"
# commands whose reply is always the same (the controller's wording), by the command in lower case
FIXED = {"get serial number": SERIAL, "get robot model": "UR5", "close safety popup": "closing safety popup",
         "close popup": "closing popup", "restart safety": "Restarting safety", "quit": "Disconnected",
         "shutdown": "Shutting down"}
# ... and by the first word
FIXED_VERB = {"popup": "showing popup", "addToLog": "Added log message"}


class _Session(socketserver.StreamRequestHandler):
    server: "DashboardServer"

    def handle(self) -> None:
        self._say(GREETING)
        for raw in self.rfile:
            line = raw.decode(errors="replace").strip()
            if not line:
                continue
            reply = self.server.answer(line)
            self._say(reply)
            if line == "quit":
                return

    def _say(self, text: str) -> None:
        self.wfile.write((text + "\n").encode())
        self.wfile.flush()


class DashboardServer(ThreadedServer):
    def __init__(self, controller: URController, host: str = "127.0.0.1", port: int = PORT, rtde=None):
        super().__init__((host, port), _Session)
        self.controller = controller
        self.rtde = rtde  # (the RTDE server, for its fault injection)
        self.remote_control = True

    def _inject(self, what: str) -> str:
        c = self.controller
        words = what.split()
        try:
            if what == "protective stop":
                c.protective_stop()
            elif what in ("estop on", "estop off"):
                c.emergency_stop(what.endswith("on"))
            elif what in ("rtde silent on", "rtde silent off") and self.rtde is not None:
                self.rtde.silent = what.endswith("on")
            elif words[0] in ("digital_in", "analog_in") and len(words) == 3:
                value = words[2]
                c.set_input(words[0].split("_")[0], int(words[1]),
                            1.0 if value == "on" else 0.0 if value == "off" else float(value))
            elif words[0] == "slider" and len(words) == 2:
                c.set_speed_slider(float(words[1]))
            elif words[0] == "push" and len(words) == 8:
                c.push([float(x) for x in words[1:7]], float(words[7]))
            elif what == "deadman":  # the RTDE watchdog and its last stop, in the controller's time (s)
                with c.lock:
                    t = c.trip or {}
                    return (f"emulator: watchdog_hz {c.watchdog_hz:g} trips {c.watchdog_trips} now {c.now:.4f} "
                            f"fed {c.fed:.4f} last_input {t.get('last_input', -1.0):.4f} tripped {t.get('tripped', -1.0):.4f} "
                            f"speed {t.get('speed', 0.0):.4f} rest {t.get('rest', -1.0):.4f}")
            elif what == "mode":
                with c.lock:
                    force = "off" if c.force_mode is None else "".join("1" if b else "0" for b in c.force_mode[0])
                    free = "off" if c.freedrive is None else "".join("1" if b else "0" for b in c.freedrive[0])
                    return (f"emulator: force {force} freedrive {free} motion {c.motion} ignored {c.ignored} "
                            f"errors {len(c.errors)}")
            else:
                raise ValueError(what)
        except (ValueError, IndexError):
            return f"could not understand: 'emulator {what}'"
        return f"emulator: {what}"

    def answer(self, line: str) -> str:
        c = self.controller
        cmd, _, arg = line.partition(" ")
        low = line.lower()
        version = ".".join(str(x) for x in c.version)
        if low == "power on":
            c.power_on()
            return "Powering on"
        if low == "power off":
            c.power_off()
            return "Powering off"
        if low == "brake release":
            return "Brake releasing" if c.brake_release() else "Failed to execute: brake release"
        if low == "play":
            return "Starting program" if c.play() else "Failed to execute: play"
        if low == "stop":
            c.stop_program()
            return "Stopped"
        if low == "pause":
            return "Pausing program" if c.pause_program() else "Failed to execute: pause"
        if low == "unlock protective stop":
            return "Protective stop releasing" if c.unlock_protective_stop() else \
                "Cannot unlock protective stop until 5s after occurrence. Always inspect cause of protective stop " \
                "before unlocking"
        if low == "robotmode":
            return f"Robotmode: {ROBOT_MODE_NAMES.get(c.robot_mode, 'NO_CONTROLLER')}"
        if low == "safetymode":
            return f"Safetymode: {SAFETY_MODE_NAMES.get(c.safety_mode, 'FAULT')}"
        if low == "safetystatus":
            return f"Safetystatus: {SAFETY_MODE_NAMES.get(c.safety_mode, 'FAULT')}"
        if low == "programstate":
            state = "PLAYING" if c.runtime_state == PLAYING else "PAUSED" if c.runtime_state == PAUSED else "STOPPED"
            return f"{state} {c.program}"
        if low == "running":
            return f"Program running: {'true' if c.runtime_state == PLAYING else 'false'}"
        if low in FIXED:
            return FIXED[low]
        if cmd in FIXED_VERB:
            return FIXED_VERB[cmd]
        if low == "polyscopeversion":
            return f"URSoftware {version} (emulated)"
        if low == "is in remote control":
            return "true" if self.remote_control else "false"
        if low == "get loaded program":
            return f"Loaded program: {c.program}"
        if low == "isprogramsaved":
            return f"True {c.program}"
        if cmd == "load":
            c.program = arg
            return f"Loading program: {arg}"
        if cmd == "setUserRole":
            return f"Setting user role: {arg}"
        if cmd == "emulator":
            return self._inject(arg.lower())
        return f"could not understand: '{line}'"
