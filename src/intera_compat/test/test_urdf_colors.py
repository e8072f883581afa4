"""Sawyer's colours: every link with a collision shape shows it in its material (red arm links, dark grey and black
joints, base and wrist, the head's screen), and the MuJoCo plant's geoms carry the same colours."""
import xml.etree.ElementTree as ET

from intera_compat.config import load_config
from intera_compat.model.mujoco_model import build_mjcf, link_colors
from intera_compat.model.robot_model import RobotModel

CFG = load_config()


def test_every_collision_shape_is_shown_in_its_links_colour():
    root = ET.fromstring(CFG.urdf_xml())
    for link in root.findall("link"):
        if link.get("name") == "screen":  # (a panel to look at; as a shape, a point inside the head)
            continue
        shapes = [ET.tostring(c.find("geometry")).strip() for c in link.findall("collision")]
        shown = [ET.tostring(v.find("geometry")).strip() for v in link.findall("visual")]
        assert shapes == shown, link.get("name")
        assert all(v.find("material") is not None for v in link.findall("visual")), link.get("name")
    colors = link_colors(CFG.urdf_xml())
    assert colors["right_l3"] == "0.78 0.06 0.09 1" and colors["right_l4_2"] != colors["right_l4"]
    assert colors["screen"] != colors["head"]


def test_the_plant_wears_the_urdf_colours():
    rm = RobotModel(CFG)
    colors = link_colors(CFG.urdf_xml())
    link_of = {o.name: rm.model.frames[o.parentFrame].name for o in rm.tight.geometryObjects}
    geoms = [g for g in ET.fromstring(build_mjcf(rm)).iter("geom") if g.get("name") in link_of]
    assert len(geoms) >= 15
    for g in geoms:
        assert g.get("rgba") == colors[link_of[g.get("name")]], g.get("name")
