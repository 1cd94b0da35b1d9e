"""Actuators from config: `ActuatorCfg`s give a model's hinge and slide joints position, velocity
or torque actuators through `mujoco.MjSpec` before it compiles, so a URDF or third-party MJCF
robot (often with no actuators, or others than the task needs) trains without editing its XML.

`ActuatorCfg` is plain data; `apply_actuators` loads MuJoCo on first use, so configs import fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from phalanx.core.errors import ConfigError, check_positive, check_range

if TYPE_CHECKING:
    import mujoco

KINDS = ("position", "velocity", "torque")
_GAINS = {"position": ("kp", "kd"), "velocity": ("kd",), "torque": ()}  # the gains each kind uses
_MAIN_GAIN = {"position": "kp", "velocity": "kd"}  # the gain that must be > 0


@dataclass
class ActuatorCfg:
    """One actuator, named after its joint, for each hinge or slide joint `joints` matches."""

    joints: str
    """Regular expression that must match the whole joint name (e.g. "shoulder_.*"); only named
    hinge and slide joints are candidates (".*" passes over a free root)."""
    kind: str = "position"
    """"position" (ctrl is a target position, rad or m: force kp (ctrl - q) - kd qdot), "velocity"
    (ctrl is a target velocity: force kd (ctrl - qdot)) or "torque" (ctrl is the torque or force,
    N m or N, through gear 1)."""
    kp: float = 0.0
    """Position gain (N m/rad or N/m); position actuators only."""
    kd: float = 0.0
    """Damping of position actuators, gain of velocity actuators (N m s/rad or N s/m); unused by
    torque actuators."""
    effort_limit: float | None = None
    """Largest torque or force the actuator applies (N m or N); None: unlimited."""
    armature: float | None = None
    """Armature (rotor inertia, kg m^2 or kg) set on the matched joints; None keeps the model's."""
    ctrl_range: tuple[float, float] | None = None
    """Range ctrl is clamped to. None: the joint range for position actuators on limited joints,
    +-effort_limit for torque actuators that have one, else unlimited."""

    def check(self, field: str = "actuators[0]") -> None:
        """Raises ConfigError naming the first invalid field (`FIELD.NAME`), its value and what is allowed."""
        try:
            re.compile(self.joints)
        except (re.error, TypeError) as error:
            raise ConfigError(f"not a regular expression ({error}): {self.joints!r}", f"{field}.joints") from None
        if self.kind not in KINDS:
            raise ConfigError(f"must be one of {list(KINDS)}, got {self.kind!r}", f"{field}.kind")
        for name in ("kp", "kd"):
            value = getattr(self, name)
            check_range(f"{field}.{name}", value, low=0.0)
            if value != 0 and name not in _GAINS[self.kind]:
                raise ConfigError(f"{self.kind} actuators do not use it; got {value!r} (leave it 0)", f"{field}.{name}")
        if self.kind in _MAIN_GAIN:
            name = _MAIN_GAIN[self.kind]
            check_positive(f"{field}.{name}", getattr(self, name), f" for a {self.kind} actuator")
        if self.effort_limit is not None:
            check_positive(f"{field}.effort_limit", self.effort_limit, " (or None: unlimited)")
        if self.armature is not None:
            check_range(f"{field}.armature", self.armature, low=0.0)
        if self.ctrl_range is not None:
            low, high = self.ctrl_range
            check_range(f"{field}.ctrl_range", low)
            check_range(f"{field}.ctrl_range", high)
            if not low < high:
                raise ConfigError(f"must be (low, high) with low < high, got {(low, high)!r}", f"{field}.ctrl_range")


def apply_actuators(spec: mujoco.MjSpec, cfgs: list[ActuatorCfg], field: str = "actuators") -> None:
    """Gives each hinge or slide joint that `cfgs[i]` matches one actuator named after the joint,
    in place of the actuators the joint had, and sets its armature; edits `spec` in place.

    What the model's default classes would give a new actuator (gear, ctrl and force ranges) is
    set explicitly. After compiling, the model's untouched actuators come first, then those of
    `cfgs[0]`, `cfgs[1]`, ..., each in the model's joint order. Errors name `FIELD[i].NAME`: a
    pattern that matches no joint (with the model's joints), a joint matched twice; nothing is
    edited then.
    """
    import mujoco

    one_dof = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
    joints = [j for j in spec.joints if j.type in one_dof and j.name]
    matched, owner = [], {}
    for i, cfg in enumerate(cfgs):
        where = f"{field}[{i}]"
        cfg.check(where)
        found = [j for j in joints if re.fullmatch(cfg.joints, j.name)]
        if not found:
            names = [j.name for j in joints]
            message = f"{cfg.joints!r} matches no hinge or slide joint; the model has {names}"
            raise ConfigError(message, f"{where}.joints")
        for joint in found:
            if joint.name in owner:
                raise ConfigError(f"joint {joint.name!r} is already matched by {owner[joint.name]}", f"{where}.joints")
            owner[joint.name] = where
        matched.append(found)
    on_joint = (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT)
    for actuator in list(spec.actuators):
        if actuator.trntype in on_joint and actuator.target in owner:
            spec.delete(actuator)
    for cfg, found in zip(cfgs, matched, strict=True):
        for joint in found:
            _add_actuator(spec, joint, cfg)
            if cfg.armature is not None:
                joint.armature = cfg.armature


def _add_actuator(spec: mujoco.MjSpec, joint: mujoco.MjsJoint, cfg: ActuatorCfg) -> None:
    import mujoco

    limited = mujoco.mjtLimited
    actuator = spec.add_actuator(name=joint.name, target=joint.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
    inherit = cfg.kind == "position" and cfg.ctrl_range is None and _limited(joint)
    if cfg.kind == "position":
        actuator.set_to_position(kp=cfg.kp, kv=cfg.kd)
    elif cfg.kind == "velocity":
        actuator.set_to_velocity(kv=cfg.kd)
    else:
        actuator.set_to_motor()
    ctrl_range = cfg.ctrl_range
    if ctrl_range is None and cfg.kind == "torque" and cfg.effort_limit is not None:
        ctrl_range = (-cfg.effort_limit, cfg.effort_limit)
    actuator.gear = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    actuator.armature, actuator.damping = 0.0, (0.0, 0.0, 0.0)  # MuJoCo 4's own; the armature goes on the joint
    actuator.ctrlrange = ctrl_range if ctrl_range is not None else (0.0, 0.0)
    actuator.inheritrange = 1.0 if inherit else 0.0  # MuJoCo copies the joint's range, in radians
    actuator.ctrllimited = limited.mjLIMITED_TRUE if inherit or ctrl_range is not None else limited.mjLIMITED_FALSE
    effort = cfg.effort_limit
    actuator.forcerange = (-effort, effort) if effort is not None else (0.0, 0.0)
    actuator.forcelimited = limited.mjLIMITED_TRUE if effort is not None else limited.mjLIMITED_FALSE


def _limited(joint: mujoco.MjsJoint) -> bool:
    """Whether MuJoCo's compiler limits the joint: limited="true", or "auto" with a range given."""
    import mujoco

    auto = joint.limited == mujoco.mjtLimited.mjLIMITED_AUTO and tuple(joint.range) != (0.0, 0.0)
    return joint.limited == mujoco.mjtLimited.mjLIMITED_TRUE or auto
