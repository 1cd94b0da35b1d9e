"""Leg kinematics for torque control, batched: the Jacobian of each foot's position with respect
to its own leg's hinge joints, and the joint torques that make a foot push with a force."""

from __future__ import annotations

import torch


def leg_jacobians(anchors: torch.Tensor, axes: torch.Tensor, feet: torch.Tensor) -> torch.Tensor:
    """(..., 3, joints) d(foot position)/d(joint angle) for each leg's hinge joints, in world
    axes: column j is axis_j x (foot - anchor_j). `anchors` and `axes` (..., joints, 3) are the
    joints' world positions and unit axes (MuJoCo's xanchor and xaxis), `feet` (..., 3) the
    feet's world positions. Only the leg's own joints: the base's motion is left out."""
    return torch.linalg.cross(axes, feet[..., None, :] - anchors, dim=-1).mT


def joint_torques(jacobians: torch.Tensor, force: torch.Tensor) -> torch.Tensor:
    """(..., joints) the torques J' F with which each leg's joints make its foot push with `force`
    (..., 3) (world, N) on what it touches. A stance foot that should receive the ground
    reaction force f pushes with -f."""
    return (jacobians.mT @ force[..., None]).squeeze(-1)
