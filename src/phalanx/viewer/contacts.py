"""The contact forces of the shown envs, for the page's arrows: each contact's point and the force
on its second geom, in the world frame, as MuJoCo Warp's `contact_force` decodes it from the
solver's constraint forces (the simulator's last physics step)."""

from __future__ import annotations

import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from phalanx.sim.simulator import Simulator

MIN_FORCE = 1e-3
"""Forces below this share of one env's weight are not drawn (contacts the solver left idle)."""


class ContactForces:
    """Reads the contacts of the first `k` envs of `sim` (see the module)."""

    def __init__(self, sim: Simulator, k: int, limit: int):
        self.sim, self.k, self.limit = sim, k, limit
        n = sim.data.naconmax
        with wp.ScopedDevice(sim.wp_device):
            self._ids = wp.array(np.arange(n, dtype=np.int32), dtype=wp.int32)
            self._force = wp.zeros(n, dtype=wp.spatial_vector)
        self.weight = float(sim.mjm.body_subtreemass[0] * np.linalg.norm(sim.mjm.opt.gravity)) or 1.0
        """One env's weight (N): the page draws a force of this size half the model's extent long."""

    def read(self, shown: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(M, 3) contact points, (M, 3) forces (N) and (M,) env indices of the first `shown` (at
        most `k`) envs' contacts with a force to draw, at most `limit` (the largest), on the host."""
        sim = self.sim

        def decode() -> None:
            self._force.zero_()
            mjw.contact_force(sim.model, sim.data, self._ids, True, self._force)

        sim.launch(decode)  # on the simulator's device, in order with its steps
        count = int(wp.to_torch(sim.data.nacon)[0])  # read on torch's stream, after the decode
        force = wp.to_torch(self._force)[:count, :3]
        env = wp.to_torch(sim.data.contact.worldid)[:count]
        point = wp.to_torch(sim.data.contact.pos)[:count]
        size = force.norm(dim=1)
        keep = torch.nonzero((env < min(shown, self.k)) & (size > MIN_FORCE * self.weight)).squeeze(1)
        keep = keep[size[keep].argsort(descending=True)[: self.limit]]
        return (
            point[keep].cpu().double().numpy(),
            force[keep].cpu().double().numpy(),
            env[keep].cpu().numpy(),
        )
