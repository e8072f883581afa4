"""joint_limits alone on smooth references near a position limit: a source whose steps are within the velocity and
acceleration limits but that runs into a position limit is braked onto it (test_fuzz_regressions'
``test_a_trajectory_stream_into_a_position_limit_is_braked_onto_it`` on the loop), a shaped reference goes back to its
source without a step in acceleration, and references that can stop on the limit by themselves pass untouched."""
import numpy as np
import pytest

from intera_compat.data.setpoint import Setpoint
from intera_compat.data.state import HardwareState
from intera_compat.safety.joint_limits import JointLimits

N = 3
DT = 0.001
LO, HI = np.full(N, -1.0), np.full(N, 1.0)
VMAX, AMAX = np.full(N, 2.0), np.full(N, 10.0)
DSTEP = 10.0 * DT * DT * 1.05  # the acceleration limit per cycle (margin 1.05)
STEP = 2.0 * DT * 1.05


def run(jl, source, cycles, torque_only=None):
    """``source(k)`` → (q, v, a) each cycle, through the plugin as the chain runs it (never rebased): the
    references."""
    hw, out = HardwareState.zeros(N), []
    for k in range(cycles):
        q, v, a = source(k)
        sp = Setpoint.zeros(N)
        sp.q[:], sp.v[:], sp.a[:] = q, v, a
        if torque_only is not None:
            sp.torque_only[:] = torque_only
        np.copyto(sp.source_q, sp.q)
        assert jl.on_setpoint(hw, sp) == 0
        jl.commit(sp)
        out.append(sp.q.copy())
    return np.array(out)


def primed(q0, v=0.0, lower=LO, upper=HI):
    """A joint-limits plugin whose reference is at ``q0`` moving at ``v``."""
    jl = JointLimits(lower, upper, VMAX, AMAX, dt=DT)
    sp = Setpoint.zeros(N)
    sp.q[:], sp.v[:] = q0, v
    jl.reset(HardwareState.zeros(N), sp)
    return jl


def accel_steps(ref):
    return np.abs(np.diff(ref, 2, axis=0)).max(axis=0)


@pytest.mark.parametrize("speed", [0.37, 1.3, 1.9, 2.0])
def test_a_smooth_stream_into_a_limit_is_braked_onto_it_without_a_step(speed):
    """Joint 0 runs up, joint 1 down into their limits at ``speed`` (the source's reference runs on past them);
    joint 2 stays. Nothing is shaped until the reference must brake; then it stops exactly on each limit, never
    beyond, within the acceleration limit (exactly: no cut by the range clamp at the end either) — before, it was
    clamped at the limit from full speed."""
    q0 = np.array([0.2, -0.2, 0.0])
    v = np.array([speed, -speed, 0.0])
    jl = primed(q0, v)
    far = int((0.8 - speed * speed / 20.0) / speed / DT) - 20  # cycles until 20 before braking must begin
    ref = run(jl, lambda k: (q0 + v * k * DT, v, 0.0), far)
    assert jl.interventions == 0
    ref = np.vstack([ref, run(jl, lambda k: (q0 + v * (far + k) * DT, v, 0.0), 2500)])
    assert ref[:, 0].max() <= 1.0 and ref[:, 1].min() >= -1.0
    assert ref[-1] == pytest.approx([1.0, -1.0, 0.0], abs=1e-12)
    assert (accel_steps(ref) <= DSTEP * (1 + 1e-6)).all(), accel_steps(ref) / DT ** 2
    assert np.abs(np.diff(ref, axis=0)).max() <= STEP + 1e-12


def test_braking_is_onto_the_range_in_force():
    """set_range (the safety bypass's widened range, or one narrowing behind the arm) moves the limit it brakes
    onto."""
    q0 = np.zeros(N)
    v = np.array([1.5, -1.5, 0.0])
    jl = primed(q0)
    jl.set_range(np.full(N, -0.6), np.full(N, 0.7))
    ref = run(jl, lambda k: (q0 + v * k * DT, v, 0.0), 1500)
    assert ref[-1] == pytest.approx([0.7, -0.6, 0.0], abs=1e-12)
    assert ref[:, 0].max() <= 0.7 and ref[:, 1].min() >= -0.6
    assert (accel_steps(ref) <= DSTEP * (1 + 1e-6)).all()


@pytest.mark.parametrize("speed", [0.5, 1.3, 2.0])
def test_a_reference_braking_onto_the_limit_by_itself_passes_untouched(speed):
    """A trajectory that stops on the limit at the acceleration limit (sampled from its continuous profile) is not
    shaped: the reference is the source's, to the last bit."""
    a = 10.0
    tb = speed / a  # braking time, after 50 ms at full speed; it comes to rest on the upper limit

    def source(k):
        t = k * DT
        if t < 0.05:
            return 1.0 - speed * speed / (2 * a) - speed * (0.05 - t), speed, 0.0
        r = max(tb - (t - 0.05), 0.0)  # the braking time left
        return 1.0 - 0.5 * a * r * r, a * r, -a if r > 0.0 else 0.0

    jl = primed(source(0)[0], speed)  # (already moving at that speed)
    ref = run(jl, lambda k: (np.full(N, source(k)[0]), source(k)[1], source(k)[2]), int((0.05 + tb) / DT) + 50)
    assert jl.interventions == 0
    assert ref[:, 0] == pytest.approx([source(k)[0] for k in range(len(ref))], abs=0.0)


@pytest.mark.parametrize("speed", [0.6, 1.1, 1.7])
def test_a_stream_starting_at_full_speed_is_handed_back_without_a_step_in_acceleration(speed):
    """Far from the limits: a stream that starts at ``speed`` from rest is shaped (a velocity step), catches up
    with it, and is handed back to it — not as soon as the check passes within its seam tolerance (the last of the
    gap was a step up to dstep + tolerance: 14 rad/s² against 12 on the loop), but where the hand-back is within
    the acceleration limit. Then it is the source's own reference again."""
    q0 = np.array([-0.8, 0.8, 0.0])
    v = np.array([speed, -speed, 0.0])
    jl = primed(q0, lower=np.full(N, -5.0), upper=np.full(N, 5.0))  # (from rest)
    ref = run(jl, lambda k: (q0 + v * k * DT, v, 0.0), 1500)
    assert (accel_steps(ref) <= DSTEP * (1 + 1e-6)).all(), accel_steps(ref) / DT ** 2
    k = np.arange(1400, 1500)[:, None]
    assert ref[1400:] == pytest.approx(q0 + v * k * DT, abs=1e-12)  # on the source again
    n = jl.interventions
    run(jl, lambda k: (q0 + v * (1500 + k) * DT, v, 0.0), 10)
    assert jl.interventions == n


def test_torque_driven_joints_near_a_limit_are_left_alone():
    """Joints driven by torque are torque_guard's: their reference (the measured angle) is not braked."""
    q0 = np.array([0.9, -0.9, 0.0])
    v = np.array([2.0, -2.0, 0.0])
    jl = primed(q0, v)
    ref = run(jl, lambda k: (q0 + v * k * DT, v, 0.0), 40, torque_only=np.ones(N, bool))
    k = np.arange(40)[:, None]
    assert ref == pytest.approx(q0 + v * k * DT, abs=1e-12) and jl.interventions == 0
