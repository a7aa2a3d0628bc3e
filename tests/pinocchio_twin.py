"""pinocchio's own model of the URDF text a model of ours was read from, and our states in
pinocchio's coordinates (continuous joints as (cos, sin); velocities in its joint order)."""

import numpy as np
import pinocchio as pin

from dyn_plugin import floating


class PinocchioTwin:
    """``pm``, ``pd``: pinocchio's model and data of ``xml`` (free-flyer root when ``model``
    has a floating base); ``pin_q``, ``pin_v`` map our q (nq) and v (nv) to pinocchio's."""

    def __init__(self, model, xml):
        self.model = model
        root = (pin.JointModelFreeFlyer(),) if model.floating_base else ()
        self.pm = pin.buildModelFromXML(xml, *root)
        self.pd = self.pm.createData()
        self.joints = [self.pm.joints[self.pm.getJointId(name)] for name in model.joint_names]
        base = floating.BASE_V if model.floating_base else 0
        self.iv = np.array(list(range(base)) + [j.idx_v for j in self.joints], dtype=int)

    def pin_q(self, q):
        base = floating.BASE_Q if self.model.floating_base else 0
        out = np.zeros(self.pm.nq)
        out[:base] = q[:base]
        for value, joint in zip(q[base:], self.joints):
            out[joint.idx_q:joint.idx_q + joint.nq] = (np.cos(value), np.sin(value)) if joint.nq == 2 else value
        return out

    def pin_v(self, v):
        out = np.zeros(self.pm.nv)
        out[self.iv] = v
        return out
