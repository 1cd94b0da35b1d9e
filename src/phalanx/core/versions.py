"""The versions of phalanx and of the libraries its results depend on."""

from __future__ import annotations

import platform
from importlib import metadata

import phalanx

PACKAGES = ("torch", "warp-lang", "mujoco", "mujoco-warp")
"""The libraries whose versions change what phalanx computes."""


def versions() -> dict[str, str]:
    """Python's, phalanx's (also from a source tree that is not installed) and `PACKAGES`' versions
    ("absent" for one not installed)."""
    return {"python": platform.python_version(), "phalanx": phalanx.__version__} | {
        name: _version(name) for name in PACKAGES
    }


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"
