"""The output chain's last word: whatever the plugins before it did (a NaN added by collision avoidance's
repulsion, an effort over the limit, a fault that cut the chain short) and whatever the config's order, the
backend gets finite values and efforts within their limits; a non-finite command faults and holds."""
import numpy as np
import pytest

from intera_compat.data import faults
from intera_compat.data.setpoint import Setpoint
from intera_compat.data.state import HardwareCommand, HardwareState
from intera_compat.loop.offline import OfflineLoop
from intera_compat.safety.base import SafetyChain, SafetyContext, SafetyPlugin
from intera_compat.safety.collision_avoidance import CollisionAvoidance
from intera_compat.safety.finite_guard import FiniteGuard
from intera_compat.safety.torque_guard import TorqueGuard

N = 3
EMAX = np.array([80.0, 40.0, 9.0])


def torque_guard() -> TorqueGuard:
    return TorqueGuard(np.full(N, -3.0), np.full(N, 3.0), np.full(N, 2.0), EMAX)


class AddEffort(SafetyPlugin):
    """Stands for any output stage (collision avoidance's repulsion): adds ``extra`` to the effort."""
    name = "add_effort"

    def __init__(self, extra=0.0, code: int = 0):
        super().__init__()
        self.extra = np.full(N, extra) if np.isscalar(extra) else np.asarray(extra, float)
        self.code = code

    def on_output(self, hw, sp, cmd):
        with np.errstate(invalid="ignore"):  # (inf − inf: the NaN is the point)
            cmd.effort += self.extra
        return self.code


def cycle(chain: SafetyChain, effort, position=0.0):
    """One output pass of ``chain`` on a command whose effort the law made ``effort``; (code, command)."""
    hw, sp, cmd = HardwareState.zeros(N), Setpoint.zeros(N), HardwareCommand.zeros(N)
    cmd.effort[:] = effort
    cmd.position[:] = position
    return chain.on_output(hw, sp, cmd), cmd


def test_a_nan_added_after_finite_guard_faults_and_never_reaches_the_backend():
    chain = SafetyChain([FiniteGuard(N), AddEffort(), torque_guard()])  # the shipped order
    code, cmd = cycle(chain, [1.0, 2.0, 3.0])
    assert code == 0 and cmd.effort.tolist() == [1.0, 2.0, 3.0]
    chain.plugins[1].extra[1] = np.nan  # the repulsion goes bad: torque_guard's clip and > let NaN through
    code, cmd = cycle(chain, [1.0, 2.0, 3.0])
    assert code == faults.FAULT_NON_FINITE_OUTPUT and chain.fault_code == faults.FAULT_NON_FINITE_OUTPUT
    assert chain.fault_joint == 1
    assert np.isfinite(cmd.block).all()
    assert cmd.effort.tolist() == [1.0, 2.0, 3.0]  # the last command sent, one cycle old


def test_the_fallback_command_is_within_the_effort_limits():
    chain = SafetyChain([FiniteGuard(N), AddEffort(), torque_guard()])
    code, cmd = cycle(chain, [1000.0, -1000.0, 5.0])  # torque_guard clamps the law's output
    assert code == 0 and cmd.effort.tolist() == [80.0, -40.0, 5.0]
    code, cmd = cycle(chain, [np.nan, 0.0, 0.0])  # the law breaks: the fallback is what was sent, not the law's
    assert code == faults.FAULT_NON_FINITE_OUTPUT
    assert cmd.effort.tolist() == [80.0, -40.0, 5.0]


def test_an_infinite_effort_is_a_fault_not_a_full_effort():
    chain = SafetyChain([torque_guard(), FiniteGuard(N)])  # torque_guard before finite_guard: no laundering
    code, cmd = cycle(chain, [1.0, 2.0, 3.0])
    code, cmd = cycle(chain, [np.inf, 0.0, 0.0])
    assert code == faults.FAULT_NON_FINITE_OUTPUT and chain.fault_joint == 0
    assert cmd.effort.tolist() == [1.0, 2.0, 3.0]


def test_an_effort_added_after_torque_guard_is_clamped_by_the_final_stage():
    chain = SafetyChain([FiniteGuard(N), torque_guard(), AddEffort(500.0)])  # a config that puts a stage last
    code, cmd = cycle(chain, [0.0, 0.0, 0.0])
    assert code == 0 and cmd.effort.tolist() == EMAX.tolist()
    assert chain.get("finite_guard").clamped == 1


def test_a_fault_earlier_in_the_output_chain_still_gets_the_final_guarantee():
    """A stage faults (the chain stops there, torque_guard never runs): the final check still runs."""
    chain = SafetyChain([FiniteGuard(N), AddEffort(1e6, code=faults.FAULT_NON_FINITE_OUTPUT), torque_guard()])
    code, cmd = cycle(chain, [0.0, 0.0, 0.0])
    assert code == faults.FAULT_NON_FINITE_OUTPUT
    assert np.all(np.abs(cmd.effort) <= EMAX)


def test_finite_guard_takes_its_own_effort_limit_without_torque_guard():
    chain = SafetyChain([FiniteGuard(N, EMAX), AddEffort(1e4)])
    code, cmd = cycle(chain, [0.0, -1.0, 0.0])
    assert code == 0 and cmd.effort.tolist() == [80.0, 40.0, 9.0]


def test_effort_limits_must_be_positive_numbers():
    with pytest.raises(ValueError, match="effort limits"):
        SafetyChain([FiniteGuard(N, [1.0, np.nan, 1.0])])
    with pytest.raises(ValueError, match="effort limits"):
        SafetyChain([FiniteGuard(N), TorqueGuard(np.full(N, -3.0), np.full(N, 3.0), np.full(N, 2.0), [1.0, 0.0, 1.0])])


@pytest.mark.parametrize("seed", range(20))
def test_any_order_any_output_the_backend_gets_finite_efforts_within_limits(seed):
    """Property: random chain orders (finite_guard anywhere), random law outputs and stage additions with NaN,
    inf and huge values, random faults mid-chain: every command is finite and within the limits, and a
    non-finite one is a fault."""
    rng = np.random.default_rng(seed)
    stages = [AddEffort(), AddEffort(), torque_guard()]
    plugins = [FiniteGuard(N)] + stages
    rng.shuffle(plugins)
    chain = SafetyChain(plugins)
    specials = np.array([np.nan, np.inf, -np.inf, 1e300, -1e300, 0.0])

    def values():
        v = rng.normal(0.0, 100.0, N)
        bad = rng.random(N) < 0.15
        v[bad] = rng.choice(specials, int(bad.sum()))
        return v

    for _ in range(200):
        for s in stages[:2]:
            s.extra[:] = values() if rng.random() < 0.5 else 0.0
            s.code = faults.FAULT_NON_FINITE_OUTPUT if rng.random() < 0.05 else 0
        law = values()
        position = rng.choice(specials) if rng.random() < 0.05 else 0.0
        broken = not (np.isfinite(law).all() and np.isfinite(position) and np.isfinite(stages[0].extra).all()
                      and np.isfinite(stages[1].extra).all())
        code, cmd = cycle(chain, law, position)
        assert np.isfinite(cmd.block).all()
        assert np.all(np.abs(cmd.effort) <= EMAX)
        # a non-finite value anywhere is a fault (no stage turns it into a finite one: an inf is no full effort);
        # (a stage's own fault may come first and cut the rest short: then that one is told)
        assert bool(code) == (broken or stages[0].code != 0 or stages[1].code != 0)


def test_a_non_finite_repulsion_faults_instead_of_being_skipped_or_added():
    L = OfflineLoop()
    L.step()
    ca = L.cycle.avoidance
    assert isinstance(ca, CollisionAvoidance) and ca.avoid is not None

    class BrokenDistances:  # the avoidance model's query broke: a NaN distance for an overlapping pair
        d = np.array([np.nan])

        def update(self, q):
            return [0]

        def gradient(self, k, out):
            out[:] = 0.1
            return out

    ca.avoid = BrokenDistances()
    ca.engaged, ca.ctx = True, SafetyContext()
    hw, sp, cmd = HardwareState.zeros(L.cycle.n), Setpoint.zeros(L.cycle.n), HardwareCommand.zeros(L.cycle.n)
    cmd.effort[:] = 1.0
    assert ca.on_output(hw, sp, cmd) == faults.FAULT_NON_FINITE_OUTPUT  # (was: NaN > 0 is False, repulsion gone)
    assert cmd.effort.tolist() == [1.0] * L.cycle.n
    BrokenDistances.d = np.array([-0.01])
    BrokenDistances.gradient = lambda self, k, out: out.fill(np.nan) or out  # a broken gradient: no NaN added
    assert ca.on_output(hw, sp, cmd) == faults.FAULT_NON_FINITE_OUTPUT
    assert np.isfinite(cmd.effort).all()


class RecordingBackend:
    """Wraps the sim backend and checks every command it is sent."""

    def __init__(self, inner, emax):
        self.inner, self.emax = inner, emax
        self.sent_finite = self.sent_within = True
        self.writes = 0

    def __getattr__(self, k):
        return getattr(self.inner, k)

    def write(self, command):
        self.writes += 1
        self.sent_finite &= bool(np.isfinite(command.block).all())
        self.sent_within &= bool(np.all(np.abs(command.effort) <= self.emax))
        self.inner.write(command)


def test_a_nan_from_the_repulsion_stage_in_the_real_cycle_faults_and_holds():
    L = OfflineLoop()
    emax = np.asarray(L.cfg.limits.effort, float)
    b = L.backend = L.cycle.backend = L.cycle.adapter.backend = RecordingBackend(L.backend, emax)
    L.step()
    q0 = L.q
    ca = L.cycle.avoidance
    real = ca.on_output

    def poisoned(hw, sp, cmd):  # a stage after finite_guard in the shipped order adds a NaN
        code = real(hw, sp, cmd)
        cmd.effort[2] = np.nan
        return code

    ca.on_output = poisoned
    L.run(0.3)
    s = L.state.local
    assert s.error[0] == 1.0 and s.stopped[0] == 1.0 and s.fault_code[0] == faults.FAULT_NON_FINITE_OUTPUT
    assert b.writes > 0 and b.sent_finite and b.sent_within
    assert np.abs(L.q - q0).max() < 5e-3
