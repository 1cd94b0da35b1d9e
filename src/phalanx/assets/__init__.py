"""MJCF robots written for phalanx (primitive geometry, no downloads).

A task names one by reference, "phalanx:assets/NAME" (`asset`), which every install resolves to
its own copy: configs and checkpoints hold no path of the install that wrote them."""

from pathlib import Path

_HERE = Path(__file__).parent
PREFIX = "phalanx:assets/"


def asset(name: str) -> str:
    """The reference a config stores for the asset `name` (checked to exist)."""
    asset_path(name)
    return PREFIX + name


def asset_path(name: str) -> str:
    """Absolute path of a file shipped in phalanx/assets."""
    path = _HERE / name
    if not path.is_file():
        raise FileNotFoundError(f"no asset {name!r} in {_HERE}; have {sorted(p.name for p in _HERE.glob('*.xml'))}")
    return str(path)


def asset_file(model: str) -> Path | None:
    """This install's file for a model naming one of phalanx's assets: by reference, or by the
    absolute path another install wrote (configs from before references) when nothing is there
    now; None for any other model."""
    if model.startswith(PREFIX):
        return _HERE / model.removeprefix(PREFIX)  # a missing one is reported by who opens it
    path = Path(model)
    if path.is_absolute() and not path.exists() and path.parent.parts[-2:] == ("phalanx", "assets"):
        mine = _HERE / path.name
        return mine if mine.is_file() else None
    return None
