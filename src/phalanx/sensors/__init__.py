"""Sensors computed on the device from the simulator's state, batched over envs."""

from phalanx.sensors.contact import ContactTimer
from phalanx.sensors.height_scan import HeightScanner

__all__ = ["ContactTimer", "HeightScanner"]
