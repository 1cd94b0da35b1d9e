"""MJCF robots written for phalanx (primitive geometry, no downloads)."""

from pathlib import Path

_HERE = Path(__file__).parent


def asset_path(name: str) -> str:
    """Absolute path of a file shipped in phalanx/assets."""
    path = _HERE / name
    if not path.is_file():
        raise FileNotFoundError(f"no asset {name!r} in {_HERE}; have {sorted(p.name for p in _HERE.glob('*.xml'))}")
    return str(path)
