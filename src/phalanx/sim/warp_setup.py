"""Process-wide Warp settings phalanx chooses."""

from __future__ import annotations


def configure_warp(verbose: bool) -> None:
    """Warp's start-up banner and per-module compile lines only when `verbose`."""
    import warp as wp

    wp.config.log_level = wp.LOG_INFO if verbose else wp.LOG_WARNING
