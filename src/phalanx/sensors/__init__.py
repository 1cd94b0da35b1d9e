"""Sensors computed on the device from the simulator's state, batched over envs."""

from phalanx.sensors.contact import ContactTimer

__all__ = ["ContactTimer"]
