"""The MuJoCo viewer's mouse push (``ros.plant_viewer.Mirror.perturbation``), without a window: MuJoCo's
perturbation spring on the mirrored plant becomes a push on the grabbed link, about its frame origin, capped."""
import mujoco
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.model.robot_model import RobotModel
from intera_compat.ros.plant_viewer import Mirror

CFG = load_config()


@pytest.fixture(scope="module")
def mirror():
    m = Mirror(RobotModel(CFG), CFG.scene_obstacles("table"), max_force=150.0, max_torque=30.0)
    m.pose(CFG.full_pose("neutral"))
    return m


def grab(mirror, link, local, pull):
    """What the viewer's UI makes of a double-click on ``link`` at ``local`` (body axes) and a drag by ``pull``."""
    m, d = mirror.model, mirror.data
    b = m.body(link).id
    pert = mujoco.MjvPerturb()
    mujoco.mjv_defaultPerturb(pert)
    pert.select, pert.localmass = b, m.body_subtreemass[b]
    pert.localpos[:] = local
    at = d.xpos[b] + d.xmat[b].reshape(3, 3) @ np.asarray(local)
    pert.refselpos[:] = at + np.asarray(pull)
    pert.active = int(mujoco.mjtPertBit.mjPERT_TRANSLATE)
    return pert, at


def test_a_drag_pulls_the_grabbed_link_towards_the_mouse_about_its_frame_origin(mirror):
    pert, at = grab(mirror, "right_l4", (0.02, 0.0, 0.05), (0.0, 0.05, 0.0))
    link, w = mirror.perturbation(pert)
    assert link == "right_l4"
    f = w[:3]
    assert f[1] > 5.0 and np.abs(f[[0, 2]]).max() < 1e-9  # towards the mouse
    origin = mirror.data.site_xpos[mirror.model.site("right_l4").id]
    assert w[3:] == pytest.approx(np.cross(at - origin, f), abs=1e-9)  # the force acts where the link was grabbed
    assert not mirror.data.xfrc_applied.any()  # the mirror itself is never pushed (the plant moves it)


def test_a_far_drag_is_capped_and_nothing_selected_is_no_push(mirror):
    pert, _ = grab(mirror, "right_l6", (0.0, 0.0, 0.1), (0.0, 0.0, 10.0))
    _, w = mirror.perturbation(pert)
    assert np.linalg.norm(w[:3]) == pytest.approx(150.0) and np.linalg.norm(w[3:]) <= 30.0 + 1e-9
    pert.active = 0
    assert mirror.perturbation(pert) is None  # selected, not dragged
    pert.active, pert.select = int(mujoco.mjtPertBit.mjPERT_TRANSLATE), 0
    assert mirror.perturbation(pert) is None  # the world (the floor, the table) is not ours to push


def test_a_push_lasts_a_few_frames_of_the_robots_time_however_fast_the_simulation_runs():
    from intera_compat.ros.plant_viewer import TimeRate
    r = TimeRate()
    assert r.update(10.0, 100.0) == 1.0  # (nothing measured yet: real time)
    assert r.update(16.0, 100.5) == pytest.approx(12.0)  # speedup:=0 on a fast machine
    assert r.update(16.25, 101.0) == pytest.approx(0.5)  # slower than real time
    assert r.update(0.5, 101.6) == pytest.approx(0.5)  # (the simulator restarted: measured anew)
    assert r.update(0.5, 102.2) == pytest.approx(0.02)  # paused: the floor, never zero


def test_the_viewers_status_reports_a_gesture_once_the_keys_sent_before_it_are_handled():
    """The "MuJoCo viewer" status a test (or a user) reads to know a gesture took effect: a frame reports the key count
    read before it, the link selected and the grab after it; only a change is news."""
    from intera_compat.ros.plant_viewer import Activity
    a = Activity()
    assert a.frame(0, "", "") is False  # (nothing happened yet)
    a.key(65)
    assert a.frame(1, "right_l4", "pull") is True
    assert a.frame(1, "right_l4", "pull") is False
    a.pushes["sent"] += 2
    st = a.status()
    values = {kv.key: kv.value for kv in st.values}
    assert values["viewer_keys_total"] == "1" and values["viewer_selected"] == "right_l4"
    assert values["viewer_grab"] == "pull" and values["viewer_frames_total"] == "3"
    assert values["viewer_pushes_sent_total"] == "2" and "right_l4 selected (pull)" in st.message
