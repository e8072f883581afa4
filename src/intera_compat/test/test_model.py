"""The Sawyer model: URDF/SRDF in pinocchio + coal, the MuJoCo plant built from it, and the config."""
import mujoco
import numpy as np
import pinocchio as pin
import pytest

from intera_compat.config import load_config
from intera_compat.model import RobotModel, inflate_urdf_collisions
from intera_compat.model.mujoco_model import load_mujoco


@pytest.fixture(scope="module")
def cfg():
    return load_config()


@pytest.fixture(scope="module")
def rm(cfg):
    return RobotModel(cfg)


@pytest.fixture(scope="module")
def plant(rm):
    m = load_mujoco(rm)
    return m, mujoco.MjData(m)


def pose(cfg, name):
    return cfg.full_pose(name)


def set_plant(rm, plant, q):
    m, d = plant
    for i, n in enumerate(rm.joint_names):
        d.qpos[m.joint(n).qposadr[0]] = q[i]
    d.qvel[:] = 0
    mujoco.mj_forward(m, d)


def test_config_limits_match_urdf(cfg, rm):
    model = rm.model
    for i, name in enumerate(cfg.all_joints):
        idx = model.joints[model.getJointId(name)].idx_q
        assert model.lowerPositionLimit[idx] == pytest.approx(cfg.limits.lower[i])
        assert model.upperPositionLimit[idx] == pytest.approx(cfg.limits.upper[i])
        assert model.velocityLimit[idx] == pytest.approx(cfg.limits.velocity[i])
        assert model.effortLimit[idx] == pytest.approx(cfg.limits.effort[i])


def test_real_j6_limit_not_gazebo(cfg):
    j6 = cfg.all_joints.index("right_j6")
    assert cfg.limits.upper[j6] == pytest.approx(4.7124)
    assert cfg.limits.lower[j6] <= 3.3161 <= cfg.limits.upper[j6]  # neutral j6 reachable


@pytest.mark.parametrize("frame", ["right_hand", "right_hand_camera", "head", "head_camera", "right_l6",
                                   "right_wrist", "screen", "right_arm_base_link"])
def test_client_frames_exist(rm, frame):
    assert rm.has_frame(frame)


def test_neutral_right_hand_pose(cfg, rm):
    # the published Sawyer neutral puts right_hand ~0.45 m forward, 0.16 m left, 0.22 m up, pointing down
    M = rm.fk(pose(cfg, "neutral"), "right_hand")
    assert M.translation == pytest.approx([0.4496, 0.1603, 0.2158], abs=1e-3)
    assert M.rotation[:, 2] == pytest.approx([0, 0, -1], abs=1e-3)


@pytest.mark.parametrize("frame", ["right_hand", "right_l6", "head_camera", "right_hand_camera", "right_l3"])
@pytest.mark.parametrize("name", ["neutral", "shipping"])
def test_fk_pinocchio_equals_mujoco(cfg, rm, plant, frame, name):
    q = pose(cfg, name)
    set_plant(rm, plant, q)
    M = rm.fk(q, frame)
    site = plant[1].site(frame)
    assert np.abs(site.xpos - M.translation).max() < 1e-6
    assert np.abs(site.xmat.reshape(3, 3) - M.rotation).max() < 1e-6


def test_fk_random_configs_pinocchio_equals_mujoco(cfg, rm, plant):
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(cfg.limits.lower, cfg.limits.upper)
        set_plant(rm, plant, q)
        assert np.abs(plant[1].site("right_hand").xpos - rm.fk(q, "right_hand").translation).max() < 1e-6


@pytest.mark.parametrize("name", ["neutral", "shipping"])
def test_gravity_rnea_equals_mujoco_bias(cfg, rm, plant, name):
    q = pose(cfg, name)
    set_plant(rm, plant, q)
    m, d = plant
    bias = np.array([d.qfrc_bias[m.joint(n).dofadr[0]] for n in rm.joint_names])
    g = rm.rnea(q, np.zeros(8), np.zeros(8))
    assert np.abs(g - bias).max() < 1e-6
    assert np.abs(g).max() > 1.0  # gravity really acts (shoulder carries the arm)
    assert g == pytest.approx(rm.gravity(q), abs=1e-9)


def test_plant_has_torque_motors_limited_to_effort(cfg, plant):
    m, _ = plant
    assert m.nu == 8
    for i, n in enumerate(cfg.all_joints):
        assert m.actuator(i).name == n
        assert m.actuator_ctrlrange[i] == pytest.approx([-cfg.limits.effort[i], cfg.limits.effort[i]])
    assert m.opt.timestep == pytest.approx(0.001)


@pytest.mark.parametrize("name", ["neutral", "shipping"])
def test_named_poses_collision_free(cfg, rm, name):
    q = pose(cfg, name)
    assert not rm.in_collision(q), rm.colliding_pairs(q)
    assert rm.distances(q).min() > 0


def test_folded_pose_collides_with_pedestal(rm):
    q = np.array([0.0, 2.0, 0.0, 2.5, 0.0, 0.0, 0.0, 0.0])  # shoulder down, elbow folded into the pedestal
    assert rm.in_collision(q)
    assert ("pedestal", "right_l2") in rm.colliding_pairs(q)
    assert rm.distances(q).min() < 0


def test_srdf_disables_adjacent_and_keeps_arm_pairs(rm):
    pairs = {tuple(sorted(p)) for p in rm.pair_names()}
    assert ("right_l5", "right_l6") not in pairs  # adjacent
    assert ("pedestal", "right_hand") in pairs  # hand can reach the pedestal
    assert ("right_hand", "right_l1") in pairs
    assert 30 < len(pairs) < 125


def test_avoidance_model_is_inflated(cfg, rm):
    q = pose(cfg, "neutral")
    tight, avoid = rm.distances(q), rm.distances(q, avoidance=True)
    assert len(tight) == len(avoid)
    # every surface moves out by the margin, so each pair's distance shrinks by ~2 margins
    assert np.all(avoid < tight - 1.5 * cfg.avoidance_margin)


def test_inflate_urdf_rejects_negative_margin(cfg):
    with pytest.raises(ValueError):
        inflate_urdf_collisions(cfg.urdf_xml(), -0.01)


def test_jacobian_matches_finite_difference(cfg, rm):
    q = pose(cfg, "neutral")
    J = rm.jacobian(q, "right_hand")
    eps = 1e-6
    for i in range(8):
        dq = np.zeros(8)
        dq[i] = eps
        dp = (rm.fk(q + dq, "right_hand").translation - rm.fk(q - dq, "right_hand").translation) / (2 * eps)
        assert J[:3, i] == pytest.approx(dp, abs=1e-6)


def test_config_rejects_missing_limits(tmp_path, cfg):
    import yaml

    raw = dict(cfg.raw)
    raw["joint_limits"] = {k: v for k, v in raw["joint_limits"].items() if k != "right_j3"}
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="right_j3"):
        load_config(str(p))


def test_pin_order_roundtrip(rm):
    x = np.arange(8.0)
    assert rm.from_pin(rm.to_pin(x)) == pytest.approx(x)
    q = rm.to_pin(x)
    assert q[rm.model.joints[rm.model.getJointId("head_pan")].idx_q] == 7.0
    assert isinstance(rm.fk(x * 0, "right_hand"), pin.SE3)


def test_the_start_pose_is_a_named_pose_or_the_arms_angles_and_anything_else_is_refused(cfg):
    head = cfg.named_pose("head", "neutral")
    assert cfg.start_pose("") == pytest.approx(cfg.full_pose(cfg.sim.get("initial_pose", "neutral")))
    assert cfg.start_pose("shipping") == pytest.approx(cfg.full_pose("shipping"))
    assert cfg.start_pose("0.3, -0.5 0 1.2 0 0.5 1.57") == pytest.approx([0.3, -0.5, 0, 1.2, 0, 0.5, 1.57, *head])
    assert cfg.start_pose([0.3, -0.5, 0, 1.2, 0, 0.5, 1.57]) == pytest.approx([0.3, -0.5, 0, 1.2, 0, 0.5, 1.57, *head])
    for bad, what in (("dance", "no such named pose"), ("0 1", "7 finite angles"),
                      ("nan 0 0 0 0 0 0", "7 finite angles"), ("inf 0 0 0 0 0 0", "7 finite angles"),
                      ("0 0 0 0 0 0 9", "right_j6 = 9 is outside"), ([0, None, 0], "7 finite angles"),
                      ([0, "a", 0], "not 7 numbers")):
        with pytest.raises(ValueError, match=what):
            cfg.start_pose(bad)
