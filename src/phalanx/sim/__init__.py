"""MuJoCo Warp simulation layer: batched models, torch views, captured stepping, masked reset."""

from phalanx.sim.model import constraint_capacity, contact_capacity, load_model
from phalanx.sim.simulator import SimCfg, Simulator

__all__ = ["SimCfg", "Simulator", "constraint_capacity", "contact_capacity", "load_model"]
