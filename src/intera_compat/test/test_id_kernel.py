"""The inverse-dynamics law's compiled kernels (control/id_kernel.py) against the numpy code they replaced: the same
torques, integral and limit flags on random states — torque-driven joints, the brakes' freeze, gravity suppressed,
saturated joints, with and without friction and torque limits."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from intera_compat.config import load_config
from intera_compat.control.inverse_dynamics import STEADY_SPEED, InverseDynamicsLaw
from intera_compat.data.setpoint import Setpoint
from intera_compat.data.state import HardwareCommand, HardwareState
from intera_compat.model.robot_model import RobotModel


def reference_compute(self, hw, sp, cmd):
    """The law's numpy code before the kernels (inverse_dynamics.py at c3c4781), on ``self``'s state."""
    q, v, free = hw.position, hw.velocity, sp.torque_only
    e, a = self._e, self.a_cmd
    learn, dv = self._learn, self._dv
    any_free = np.count_nonzero(free) > 0
    driven_moving = False  # (the brakes' stop, a torque-driven joint's motion: no model error)
    if not self.freeze and any_free:
        np.abs(v, out=dv)
        np.greater(dv, STEADY_SPEED, out=learn)
        learn &= free
        driven_moving = bool(learn.any())
    if not (self.freeze or driven_moving):
        np.subtract(sp.q, q, out=e)
        np.abs(e, out=dv)
        np.less_equal(dv, self._band, out=learn)
        np.subtract(sp.v, v, out=dv)
        np.abs(dv, out=dv)
        np.less_equal(dv, STEADY_SPEED, out=self._steady)
        learn |= self._steady
        np.greater(learn, self._at_limit, out=learn)  # (and not at its limit)
        e *= self.ki_dt
        e *= learn
        self.integral += e
        np.minimum(self.integral, self.ilim, out=self.integral)  # ufuncs: no np.clip wrapper overhead
        np.maximum(self.integral, self._nilim, out=self.integral)
    np.subtract(sp.q, q, out=e)
    np.multiply(self.kp, e, out=a)
    np.subtract(sp.v, v, out=e)
    e *= self.kd
    a += e
    a += sp.a
    a += self.integral
    if any_free:
        a[free] = 0.0
        self.integral[free] = 0.0
    # what the law adds to the rigid body's torque: the friction feed-forward, less gravity where it is suppressed
    # (the torque limits hold for the sum: a saturated joint's limit leaves room for them)
    x = self._x
    x[:] = 0.0
    if self.friction:
        f = self._f
        np.multiply(sp.v, self._inv_vf, out=f)
        np.minimum(f, 1.0, out=f)
        np.maximum(f, -1.0, out=f)
        f *= self.coulomb
        np.multiply(sp.v, self.viscous, out=e)
        f += e
        x += f
    g = self.gravity
    if any_free or not sp.gravity:
        self.rm.gravity(q, out=g)
        if not sp.gravity:
            x -= g
    tau = cmd.effort
    self.rm.rnea(q, v, a, out=tau)
    tau += x
    lim = self.effort_limit
    if lim is not None and np.any(np.abs(tau) > lim):
        self._within(q, v, a, tau, lim, free, x)
        self._at_limit[:] = self._sat
    else:
        self._at_limit[:] = False
    if any_free:  # a torque-driven joint gets gravity compensation (unless suppressed) and the client's torque
        np.add(sp.tau, g, out=e) if sp.gravity else np.copyto(e, sp.tau)
        tau[free] = e[free]


_CFG = load_config()
_RM = RobotModel(_CFG)


def _laws(friction: bool, limited: bool):
    c = _CFG.control
    fr = c["friction"] if friction else {}
    lim = _CFG.limits.effort if limited else None
    return [InverseDynamicsLaw(_RM, c["kp"], c["kd"], c["ki"], c["integral_limit"], 0.001, fr.get("viscous"),
                               fr.get("coulomb"), float(fr.get("velocity", 0.02)), lim) for _ in range(2)]


def _agree(seed, friction, limited, gravity, freeze, driven, scale, seen):
    """Six cycles of the law and of the numpy code on the same random states: the same numbers; ``seen`` counts the
    branches taken."""
    rng = np.random.default_rng(seed)
    cfg = _CFG
    n = len(cfg.all_joints)
    lo, hi = np.asarray(cfg.limits.lower), np.asarray(cfg.limits.upper)
    law, ref = _laws(friction, limited)
    hw = HardwareState.zeros(n)
    sp = Setpoint.zeros(n)
    cmd, cmd_ref = HardwareCommand.zeros(n), HardwareCommand.zeros(n)
    law.integral[:] = ref.integral[:] = rng.uniform(-1.0, 1.0, n) * law.ilim  # (some at their clamp soon)
    for k in range(6):  # a few cycles: the integral and the limit flags carry over
        hw.position[:] = rng.uniform(lo, hi)
        hw.velocity[:] = rng.normal(0.0, scale, n)
        if k % 2:  # (some joints right at the steady speed's edge, or following exactly)
            hw.velocity[::3] = sp.v[::3] + STEADY_SPEED * rng.choice([-1.0, 1.0])
        sp.q[:] = hw.position + rng.normal(0.0, scale * 0.05, n)
        if k == 4:  # a large standing error: the integral runs into its clamp
            sp.q[:] = hw.position + np.sign(law.integral) * 0.2
            hw.velocity[:] = sp.v
        sp.v[:] = rng.normal(0.0, scale, n)
        sp.a[:] = rng.normal(0.0, scale * 10, n)
        sp.tau[:] = rng.normal(0.0, 5.0, n)
        sp.torque_only[:] = False
        sp.torque_only[rng.choice(n, driven, replace=False)] = True
        sp.gravity = gravity
        law.freeze = ref.freeze = freeze and k % 3 == 0
        law.compute(hw, sp, cmd)
        reference_compute(ref, hw, sp, cmd_ref)
        np.testing.assert_allclose(cmd.effort, cmd_ref.effort, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(law.a_cmd, ref.a_cmd, rtol=1e-12, atol=1e-12)
        assert np.array_equal(law.integral, ref.integral)
        assert np.array_equal(law._at_limit, ref._at_limit)
        assert law.scaled == ref.scaled
        seen["clamped"] += bool(np.any(np.abs(law.integral) == law.ilim))
    seen["saturated"] += law.scaled > 0
    seen["held"] += bool(np.any(law._at_limit))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), friction=st.booleans(), limited=st.booleans(), gravity=st.booleans(),
       freeze=st.booleans(), driven=st.integers(0, 3), scale=st.sampled_from([0.001, 0.02, 0.3, 3.0]))
def test_the_kernels_give_the_numpy_laws_numbers(seed, friction, limited, gravity, freeze, driven, scale):
    _agree(seed, friction, limited, gravity, freeze, driven, scale, {"saturated": 0, "clamped": 0, "held": 0})


def test_the_random_states_reach_every_branch():
    """The comparison above on fixed states that saturate joints, clamp integrals and hold them."""
    seen = {"saturated": 0, "clamped": 0, "held": 0}
    for seed in range(8):
        _agree(seed, True, True, seed % 2 == 0, False, seed % 3, 3.0 if seed % 2 else 0.02, seen)
    assert all(seen.values()), seen


def test_non_finite_inputs_give_the_same_non_finite_torques():
    law, ref = _laws(True, True)
    n = len(_CFG.all_joints)
    hw, sp = HardwareState.zeros(n), Setpoint.zeros(n)
    cmd, cmd_ref = HardwareCommand.zeros(n), HardwareCommand.zeros(n)
    hw.position[:] = _CFG.full_pose("neutral")
    sp.q[:] = hw.position
    sp.v[2], sp.a[4] = np.nan, np.inf
    with np.errstate(all="ignore"):
        law.compute(hw, sp, cmd)
        reference_compute(ref, hw, sp, cmd_ref)
    np.testing.assert_array_equal(np.isnan(cmd.effort), np.isnan(cmd_ref.effort))
    np.testing.assert_array_equal(law.integral, ref.integral)


def test_a_gain_set_in_place_reaches_the_kernel():
    """(test_loop_safety breaks a law by ``law.kp[3] = nan``: the gains are views of the kernel's matrix.)"""
    law, ref = _laws(False, False)
    n = len(_CFG.all_joints)
    hw, sp, cmd = HardwareState.zeros(n), Setpoint.zeros(n), HardwareCommand.zeros(n)
    hw.position[:] = _CFG.full_pose("neutral")
    sp.q[:] = hw.position + 0.01
    law.kp[3] = np.nan
    law.compute(hw, sp, cmd)
    assert np.isnan(cmd.effort).any()


def test_gains_one_per_joint_or_refused():
    """(the compiled kernel checks no bounds: a scalar or a short gain list would read and write past its buffers)"""
    c = _CFG.control
    n = len(_RM.joint_names)
    with pytest.raises(ValueError, match="control.kp"):
        InverseDynamicsLaw(_RM, 900.0, c["kd"], c["ki"], c["integral_limit"], 0.001)
    with pytest.raises(ValueError, match="control.viscous"):
        InverseDynamicsLaw(_RM, c["kp"], c["kd"], c["ki"], c["integral_limit"], 0.001, viscous=[0.1] * (n - 1))

