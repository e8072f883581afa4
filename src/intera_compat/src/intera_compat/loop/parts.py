"""What one robot's cycle is made of, wired once: its state and setpoint, the sources, the arbiter and its override
holds, the interaction stage, the safety chain and the position range, the control law and the backend adapter.
``LoopCycle`` (cycle.py) runs them; the intake, the safety events and the records are its stages beside them."""
from __future__ import annotations

import numpy as np

from ..config import RobotConfig
from ..control.interaction_stage import AdmittanceStage, ImpedanceStage, interaction_limits
from ..control.interaction import CartesianAdmittance, CartesianImpedance
from ..data.codes import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from ..data.setpoint import Setpoint
from ..data.state import Capability, HardwareState
from ..hardware.base import Backend
from ..model.robot_model import RobotModel
from ..safety.base import SafetyContext
from ..safety.chain_config import build_safety_chain
from ..safety.position_range import PositionRange
from ..safety.robot_state import RobotStateMachine
from ..safety.suppression import Suppression
from ..sources.head import HeadSource, head_cancellation
from ..sources.hold import HoldSource, SafetyHold
from ..sources.position import PositionSource
from ..sources.stream import StreamSource
from ..sources.torque import TorqueSource
from ..sources.trajectory import TrajectorySource
from ..sources.velocity import VelocitySource
from ..sources.zero_g import ZeroGSource
from .adapter import make_adapter
from .arbiter import Arbiter
from .channel import Channel
from .commands import bypass_tolerance
from .forwarding import Forwarder
from .lag import LagCatchUp
from .layouts import SUPPRESS_KEYS


class CycleParts:
    def __init__(self, cfg: RobotConfig, rm: RobotModel, backend: Backend, channel: Channel, start_enabled: bool):
        self.cfg, self.rm, self.backend, self.ch = cfg, rm, backend, channel
        self.dt = dt = backend.period
        n = self.n = len(cfg.all_joints)
        na, lim, c = cfg.n_arm, cfg.limits, cfg.control
        vmax, amax = lim.velocity, lim.accel
        # the position range in force: the sources hold views of its arrays, the bypass widens them in place
        self.range = PositionRange(lim.lower, lim.upper, bypass_tolerance(cfg))
        self.lower, self.upper = lo, hi = self.range.lower, self.range.upper
        arm, everything = slice(0, na), slice(0, n)
        self.hw, self.sp = HardwareState.zeros(n), Setpoint.zeros(n)
        self.adapter = make_adapter(backend, cfg, rm, dt)
        self.law = self.adapter.law
        sup = self.adapter.supports
        self.ctx = SafetyContext()
        self.chain = build_safety_chain(cfg, dt, rm, self.ctx, sup(Capability.TORQUE), sup(Capability.EFFORT))
        self.range.limits = self.chain.get("joint_limits")
        self.following = self.chain.get("following_error")
        self.detection = self.chain.get("collision_detection")
        self.avoidance = self.chain.get("collision_avoidance")
        self.robot = RobotStateMachine(enabled=start_enabled)
        self.suppression = Suppression(len(SUPPRESS_KEYS), float(c.get("suppress_timeout", 0.2)))
        # an arm without joint torques brakes itself (Backend.brake): under the brakes the loop's setpoint follows
        # where it is, so whatever moved it meanwhile, nothing jumps when it is enabled again
        self.own_brakes = not sup(Capability.TORQUE) or backend.holds_itself
        # sources
        self.brake = HoldSource(everything, lo, hi, vmax, amax, dt, stop="dead" if self.own_brakes else "brakes")
        self.hold = HoldSource(arm, lo, hi, vmax, amax, dt)
        self.head = None
        if n > na:  # the head pan: its own source, HeadPanCommand targets
            self.head = HeadSource(slice(na, n), lo, hi, vmax, amax, dt, *head_cancellation(rm, cfg))
        self.position = PositionSource(arm, lo, hi, vmax, amax, dt)
        self.velocity = VelocitySource(arm, lo, hi, vmax, amax, dt)
        self.torque = TorqueSource(arm, lim.effort, HoldSource(arm, lo, hi, vmax, amax, dt))
        self.stream = StreamSource(arm, amax)
        self.trajectory = TrajectorySource(arm, vmax, amax, dt, int(c.get("max_trajectory_knots", 10000)),
                                           float(c.get("trajectory_start_tolerance", 0.05)))
        self.by_mode = {POSITION_MODE: self.position, VELOCITY_MODE: self.velocity, TORQUE_MODE: self.torque,
                        TRAJECTORY_MODE: self.stream}
        self.arbiter = Arbiter(self.brake, self.hold, self.head)
        # overrides, highest priority first: the safety E-stop latch, a detected collision, the cuff's zero-G
        self.estop_hold = SafetyHold(arm, lo, hi, vmax, amax, dt, "brakes")
        self.collision_hold = SafetyHold(arm, lo, hi, vmax, amax, dt, "dead")
        self.zero_g = ZeroGSource(arm, sup(Capability.TORQUE))
        self.arbiter.overrides = [self.estop_hold, self.collision_hold, self.zero_g]
        self.measured_handover = (self.brake, self.estop_hold, self.collision_hold, self.zero_g)
        self.brakes = (self.brake, self.estop_hold)  # the holds that brake from the measured state
        self.no_interaction = (*self.measured_handover, self.torque)  # sources interaction control leaves alone
        self.interaction = self._interaction_stage(cfg, rm, dt)
        self.impedance = self.admittance = None  # (the stage's law, by its kind)
        if isinstance(self.interaction, ImpedanceStage):
            self.impedance = self.interaction.law
        elif isinstance(self.interaction, AdmittanceStage):
            self.admittance = self.interaction.law
        self.lag = LagCatchUp(backend, self.trajectory, dt)  # (time a clock backend's cycles lost: loop/lag.py)
        # a trajectory-only arm is handed each whole trajectory the trajectory source starts (loop/forwarding.py)
        self.forwarder = self.adapter.forwarder = Forwarder(backend, self.trajectory, self.position) \
            if sup(Capability.TRAJECTORY_ONLY) else None
        self.source_ids = {id(s): k for k, s in enumerate((self.brake, self.hold, self.position, self.velocity,
                                                            self.torque, self.stream, self.trajectory,
                                                            self.estop_hold, self.collision_hold, self.zero_g))}
        self.mode_of = {id(s): m for m, s in self.by_mode.items()}
        self.counts = dict(commands=0, superseded=0, ignored=0, timeouts=0, faults=0)
        self._changed = np.zeros(n, dtype=bool)

    def _interaction_stage(self, cfg: RobotConfig, rm: RobotModel, dt: float):
        """Torque arms: impedance (joint torques); arms that take positions and measure the endpoint wrench:
        admittance; others: none (the listener refuses the command)."""
        sup, arm, ilim = self.adapter.supports, slice(0, cfg.n_arm), interaction_limits(cfg)
        if sup(Capability.TORQUE):
            return ImpedanceStage(CartesianImpedance(rm, cfg.tips[0], arm, ilim, dt), cfg.n_arm, ilim,
                                  sup(Capability.EFFORT))
        if sup(Capability.WRENCH) and (sup(Capability.POSITION) or sup(Capability.VELOCITY)):
            law = CartesianAdmittance(rm, cfg.tips[0], arm, ilim, dt, self.lower[arm], self.upper[arm])
            return AdmittanceStage(law, cfg.n_arm, sup(Capability.FORCE_MODE), sup(Capability.FREEDRIVE))
        return None
