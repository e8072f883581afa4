"""Robot description → pinocchio model, frames, limits, collision models and the MuJoCo plant."""
from .robot_model import RobotModel, inflate_urdf_collisions  # noqa: F401
