"""``kinematics_server``: /ExternalTools/<limb>/PositionKinematicsNode/{FKService,IKService} (contract §2.4).

Every request entry gets an answer; malformed entries fail (IK_FAILED / isValid False) with a log
naming the field, never an exception out of the service.
"""
from __future__ import annotations

import math
import threading

import numpy as np
import pinocchio as pin
import rospy
from geometry_msgs.msg import PoseStamped
from intera_core_msgs.srv import (SolvePositionFK, SolvePositionFKResponse, SolvePositionIK,
                                  SolvePositionIKRequest, SolvePositionIKResponse)
from sensor_msgs.msg import JointState

from ..config import load_config
from ..kinematics import IKSolver
from ..model.robot_model import RobotModel
from ..kinematics.pose import in_base, se3
from .conversions import pose_msg
from .node_init import init_node
from .urdf_fragments import UrdfFragmentWatcher



class KinematicsNode:
    def __init__(self):
        self.cfg = cfg = load_config(rospy.get_param("~config", None) or None)
        self.rm = RobotModel(cfg)
        self.ik = IKSolver(self.rm, seed=int(rospy.get_param("~ik_seed", 0)))  # seed map draw: reproducible
        self.names = cfg.all_joints
        self.arm = cfg.joint_names
        self.index = {n: i for i, n in enumerate(self.names)}
        self.current = cfg.full_pose("neutral")  # until the first joint_states arrives
        self.lock = threading.Lock()  # pinocchio data is not shared between service threads
        rospy.Subscriber("/robot/joint_states", JointState, self._on_js, queue_size=1)
        UrdfFragmentWatcher(cfg, self._on_model)  # (the one that logs refusals)
        ns = f"/ExternalTools/{cfg.limb}/PositionKinematicsNode"
        rospy.Service(f"{ns}/FKService", SolvePositionFK, self.handle_fk)
        rospy.Service(f"{ns}/IKService", SolvePositionIK, self.handle_ik)

    def _on_model(self, rm, _links) -> None:
        """A URDF fragment came: its links are tips (the IK solver rebuilt on the new model)."""
        ik = IKSolver(rm, seed=int(rospy.get_param("~ik_seed", 0)))
        with self.lock:
            self.rm, self.ik = rm, ik

    def _on_js(self, msg: JointState) -> None:
        q = self.current.copy()
        for n, p in zip(msg.name, msg.position):
            i = self.index.get(n)
            if i is not None:
                q[i] = p
        self.current = q

    # ---- helpers
    def joints_from(self, js: JointState, what: str) -> np.ndarray:
        """Full config vector: the named joints from ``js``, the rest from the current angles."""
        if len(js.name) != len(js.position):
            raise ValueError(f"{what}: {len(js.name)} names but {len(js.position)} positions")
        q = self.current.copy()
        for k, (n, p) in enumerate(zip(js.name, js.position)):
            if n not in self.index:
                raise ValueError(f"{what}.name[{k}] '{n}' is not a joint")
            if not math.isfinite(p):
                raise ValueError(f"{what}.position[{k}] is {p}")
            q[self.index[n]] = p
        return q

    def goal_in_base(self, ps: PoseStamped, what: str) -> pin.SE3:
        p, o = ps.pose.position, ps.pose.orientation
        goal, _ = se3((p.x, p.y, p.z), (o.x, o.y, o.z, o.w), f"{what}.pose")
        return in_base(goal, ps.header.frame_id, self.rm.has_frame, lambda f: self.rm.fk(self.current, f), what)

    # ---- FK
    def handle_fk(self, req):
        res = SolvePositionFKResponse()
        with self.lock:
            for i, js in enumerate(req.configuration):
                tip = req.tip_names[i] if i < len(req.tip_names) and req.tip_names[i] else self.cfg.tips[0]
                ps = PoseStamped()
                ps.header.frame_id = self.cfg.base_frame
                ps.header.stamp = rospy.Time.now()
                valid, coll = False, False
                try:
                    if not self.rm.has_frame(tip):
                        raise ValueError(f"tip_names[{i}] '{tip}' is not a frame of the robot")
                    q = self.joints_from(js, f"configuration[{i}]")
                    ps.pose = pose_msg(self.rm.fk(q, tip))
                    coll = self.rm.in_collision(q)
                    valid = True
                except ValueError as e:
                    rospy.logerr(f"FK request entry {i} failed: {e}")
                res.pose_stamp.append(ps)
                res.isValid.append(valid)
                res.inCollision.append(coll)
        return res

    # ---- IK
    def handle_ik(self, req):
        res = SolvePositionIKResponse()
        with self.lock:
            for i in range(len(req.pose_stamp)):
                js = JointState(name=list(self.arm))
                try:
                    q, rtype = self._solve_one(req, i)
                    js.position = q[: self.cfg.n_arm].tolist()
                except ValueError as e:
                    rospy.logerr(f"IK request entry {i} failed: {e}")
                    rtype = SolvePositionIKResponse.IK_FAILED
                    js.position = self.current[: self.cfg.n_arm].tolist()
                except KeyError as e:
                    rospy.logerr(f"IK request entry {i}: {e.args[0]}")
                    rtype = SolvePositionIKResponse.IK_ENDPOINT_DOES_NOT_EXIST
                    js.position = self.current[: self.cfg.n_arm].tolist()
                res.joints.append(js)
                res.result_type.append(rtype)
        return res

    def _solve_one(self, req, i: int):
        tip = req.tip_names[i] if i < len(req.tip_names) and req.tip_names[i] else self.cfg.tips[0]
        if not self.rm.has_frame(tip):
            raise KeyError(f"tip_names[{i}] '{tip}' is not an endpoint of the robot")
        goal = self.goal_in_base(req.pose_stamp[i], f"pose_stamp[{i}]")
        user = None
        if i < len(req.seed_angles) and len(req.seed_angles[i].name) > 0:
            user = self.joints_from(req.seed_angles[i], f"seed_angles[{i}]")
        nullspace, gain = None, 0.4
        if i < len(req.use_nullspace_goal) and req.use_nullspace_goal[i]:
            if i >= len(req.nullspace_goal):
                raise ValueError(f"use_nullspace_goal[{i}] set but nullspace_goal[{i}] is missing")
            g = req.nullspace_goal[i]
            if len(g.name) != len(g.position):
                raise ValueError(f"nullspace_goal[{i}]: {len(g.name)} names but {len(g.position)} positions")
            nullspace = {}
            for k, (n, p) in enumerate(zip(g.name, g.position)):
                if n not in self.arm or not math.isfinite(p):
                    raise ValueError(f"nullspace_goal[{i}].name[{k}] '{n}' = {p} is not an arm joint angle")
                nullspace[self.arm.index(n)] = p
            if i < len(req.nullspace_gain):
                gain = req.nullspace_gain[i]
                if not (math.isfinite(gain) and 0.0 <= gain <= 1.0):
                    raise ValueError(f"nullspace_gain[{i}] = {gain} outside [0, 1]")
        n_arm = self.cfg.n_arm
        mode = req.seed_mode
        R = SolvePositionIKRequest
        plan = []  # (result_type, seeds, random restarts)
        if mode == R.SEED_USER:
            if user is None:
                raise ValueError(f"seed_mode SEED_USER but seed_angles[{i}] is empty")
            plan = [(R.SEED_USER, [user[:n_arm]], 0)]
        elif mode == R.SEED_CURRENT:
            plan = [(R.SEED_CURRENT, [self.current[:n_arm]], 0)]
        elif mode == R.SEED_NS_MAP:
            plan = [(R.SEED_NS_MAP, [], None)]
        elif mode == R.SEED_AUTO:
            if user is not None:
                plan.append((R.SEED_USER, [user[:n_arm]], 0))
            plan += [(R.SEED_CURRENT, [self.current[:n_arm]], 0), (R.SEED_NS_MAP, [], None)]
        else:
            raise ValueError(f"seed_mode {mode} is not one of SEED_AUTO/USER/CURRENT/NS_MAP")
        reference = user if user is not None else self.current
        colliding = None
        for rtype, seeds, restarts in plan:
            r = self.ik.solve(tip, goal, seeds, reference, nullspace, gain, random_restarts=restarts)
            if r is not None and r.success and not r.in_collision:
                return r.q, rtype
            if r is not None and r.success and colliding is None:
                colliding = r
        if colliding is not None:
            return colliding.q, SolvePositionIKResponse.IK_IN_COLLISION
        return reference, SolvePositionIKResponse.IK_FAILED


def main():
    init_node("kinematics_server")
    KinematicsNode()
    rospy.spin()
