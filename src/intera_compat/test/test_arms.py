"""Per-arm models (config ``arm``: UR5e, UR10e, a generic 7-axis cobot beside the Sawyer): the generated URDF
against an independent Denavit–Hartenberg product, the committed files against the generator, limits and named
poses, config inheritance, and the loop driving each arm in simulation."""
import os

import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.data.codes import POSITION_MODE
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model import RobotModel
from intera_compat.model.dh_urdf import dh_urdf
from intera_compat.model.mujoco_model import load_mujoco

import mujoco

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "..", "config")
ARMS = ["ur5e", "ur10e", "cobot7"]
# Universal Robots' published DH tables (d, a, alpha), written out here rather than read from our config
UR_DH = {
    "ur5e": ([0.1625, 0, 0, 0.1333, 0.0997, 0.0996], [0, -0.425, -0.3922, 0, 0, 0]),
    "ur10e": ([0.1807, 0, 0, 0.17415, 0.11985, 0.11655], [0, -0.6127, -0.57155, 0, 0, 0]),
}
UR_ALPHA = [np.pi / 2, 0, 0, np.pi / 2, -np.pi / 2, 0]


def arm_config(arm):
    return load_config(os.path.join(CONFIG_DIR, f"{arm}.yaml"))


@pytest.fixture(scope="module", params=ARMS)
def arm(request):
    cfg = arm_config(request.param)
    return request.param, cfg, RobotModel(cfg)


def dh_product(q, d, a, alpha):
    """Standard DH: Π Rz(θ) Tz(d) Tx(a) Rx(α)."""
    T = np.eye(4)
    for th, di, ai, al in zip(q, d, a, alpha):
        ct, st, ca, sa = np.cos(th), np.sin(th), np.cos(al), np.sin(al)
        T = T @ np.array([[ct, -st * ca, st * sa, ai * ct], [st, ct * ca, -ct * sa, ai * st],
                          [0, sa, ca, di], [0, 0, 0, 1]])
    return T


def test_the_hand_is_where_the_dh_table_puts_it(arm):
    name, cfg, rm = arm
    dh = cfg.raw["dh"]
    d, a, alpha = UR_DH[name] + (UR_ALPHA,) if name in UR_DH else (dh["d"], dh["a"], dh["alpha"])
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, cfg.n_arm)
        x = rm.fk(np.r_[q, np.zeros(len(cfg.all_joints) - cfg.n_arm)], "right_hand")
        T = dh_product(q, d, a, alpha)
        assert x.translation == pytest.approx(T[:3, 3], abs=1e-6)
        assert x.rotation == pytest.approx(T[:3, :3], abs=1e-6)


def test_the_committed_urdf_is_the_generators_output(arm):
    name, cfg, _ = arm
    with open(os.path.join(CONFIG_DIR, "..", "urdf", f"{name}.urdf")) as f:
        assert f.read().strip() == dh_urdf(cfg).strip(), \
            f"regenerate: python -m intera_compat.model.dh_urdf config/{name}.yaml"


def test_limits_names_and_named_poses(arm):
    name, cfg, rm = arm
    assert cfg.joint_names == [f"right_j{i}" for i in range(cfg.n_arm)]
    assert cfg.n_arm == (7 if name == "cobot7" else 6)
    lo, hi = rm.model.lowerPositionLimit[rm.perm[:cfg.n_arm]], rm.model.upperPositionLimit[rm.perm[:cfg.n_arm]]
    assert lo == pytest.approx(cfg.limits.lower[:cfg.n_arm]) and hi == pytest.approx(cfg.limits.upper[:cfg.n_arm])
    if name in UR_DH:  # the e-Series data sheets: ±360° (elbow ±180° in practice), 180°/s (UR10e base and shoulder
        # joints, size 4: 120°/s)
        assert hi == pytest.approx([6.2832, 6.2832, 3.1416, 6.2832, 6.2832, 6.2832])
        top = [2.0944] * 2 + [3.1416] * 4 if name == "ur10e" else [3.1416] * 6
        assert cfg.limits.velocity[:6] == pytest.approx(top)
        assert lo == pytest.approx([-6.2832, -6.2832, -3.1416, -6.2832, -6.2832, -6.2832])
        effort = [330, 330, 150, 56, 56, 56] if name == "ur10e" else [150, 150, 150, 28, 28, 28]
        assert cfg.limits.effort[:6] == pytest.approx(effort)
    for pose in ("neutral", "shipping"):
        q = cfg.full_pose(pose)
        assert (q[:cfg.n_arm] >= lo).all() and (q[:cfg.n_arm] <= hi).all()
        assert not rm.in_collision(q), pose


def test_pinocchio_and_mujoco_agree_on_each_arm(arm):
    _, cfg, rm = arm
    m = load_mujoco(rm)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(5)
    adr = [m.joint(n).qposadr[0] for n in cfg.joint_names]
    for _ in range(5):
        q = np.zeros(len(cfg.all_joints))
        q[:cfg.n_arm] = rng.uniform(-2, 2, cfg.n_arm)
        d.qpos[adr] = q[:cfg.n_arm]
        mujoco.mj_forward(m, d)
        site = d.site("right_hand").xpos
        assert rm.fk(q, "right_hand").translation == pytest.approx(site, abs=1e-6)


def test_the_loop_moves_each_arm_to_a_position_target(arm):
    _, cfg, rm = arm
    L = OfflineLoop(cfg)
    L.run(0.2)
    target = cfg.full_pose("neutral")[:cfg.n_arm] + 0.2
    L.run(3.0, every=lambda: L.send(POSITION_MODE, cfg.joint_names, position=target))
    assert np.abs(L.q[:cfg.n_arm] - target).max() < 1e-3


def test_a_config_inherits_and_overrides(tmp_path):
    (tmp_path / "base.yaml").write_text(f"inherit: {os.path.abspath(os.path.join(CONFIG_DIR, 'ur5e.yaml'))}\n"
                                        "control: {kp: [1, 2, 3, 4, 5, 6]}\n")
    (tmp_path / "child.yaml").write_text("inherit: base.yaml\nros_control: {rate: 125}\n")
    cfg = load_config(str(tmp_path / "child.yaml"))
    assert cfg.joint_names == arm_config("ur5e").joint_names  # from the grandparent
    assert list(cfg.control["kp"]) == [1, 2, 3, 4, 5, 6]  # a list replaces
    assert cfg.control["kd"] == arm_config("ur5e").control["kd"]  # a dict merges
    assert cfg.raw["ros_control"]["rate"] == 125
    # the arm's own sections replace the parent's whole: no Sawyer joints, obstacle scenes or DH rows leak in
    ur5e = arm_config("ur5e")
    assert sorted(ur5e.raw["joint_limits"]) == ur5e.joint_names and ur5e.sim["scenes"] == {}
    (tmp_path / "extra.yaml").write_text(f"inherit: {os.path.abspath(os.path.join(CONFIG_DIR, 'ur5e.yaml'))}\n"
                                         "joint_limits: {right_j9: {lower: -1, upper: 1, velocity: 1, effort: 1, "
                                         "accel: 1}}\n")
    with pytest.raises(ValueError, match="joint_limits has no entry"):
        load_config(str(tmp_path / "extra.yaml"))
    (tmp_path / "loop.yaml").write_text("inherit: loop.yaml\n")
    with pytest.raises(ValueError, match="loop"):
        load_config(str(tmp_path / "loop.yaml"))


def test_no_link_pair_is_blind_because_its_shapes_always_touch(arm):
    """A spherical wrist or shoulder puts several joints at one point: the DH shells stop short of the spheres
    there, so no pair of non-adjacent links touches in every pose and the SRDF disables none as 'Default':
    the cobot's upper arm is checked against its base column, its forearm against its upper arm."""
    name, cfg, rm = arm
    with open(cfg.srdf_path) as f:
        assert 'reason="Default"' not in f.read()
    if name == "cobot7":
        checked = {tuple(sorted(p)) for p in rm.pair_names()}
        assert {("right_l0", "right_l2"), ("right_l2", "right_l4"), ("right_l4", "right_l6")} <= checked
