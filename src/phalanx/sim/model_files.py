"""A user's model as data that travels with a run: the MJCF or URDF file flattened by MuJoCo into
one MJCF (its includes expanded, a URDF converted) and the mesh, texture, height-field and skin
files it names. Checkpoints carry it and run directories hold a copy, so a policy plays, resumes
and exports on another machine, or after the files moved or changed, with the model it learned
on. phalanx's own assets need none of this: configs name them by reference (`phalanx.assets`).
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import torch

from phalanx.assets import asset_file
from phalanx.core.errors import ConfigError
from phalanx.core.files import atomic_path

MODEL_XML = "model.xml"
"""The flattened model's name among the files; the files it names are "files/K-NAME"."""

_RESTORED: dict[str, tuple[str, dict[str, bytes]]] = {}


def is_xml(model: str | Path) -> bool:
    """`model` is an MJCF or URDF XML string, not a file's name."""
    return str(model).lstrip().startswith("<")


def is_user_file(model: str) -> bool:
    """`model` names a file that is not one of phalanx's assets (not an XML string)."""
    return not is_xml(model) and asset_file(model) is None


def pack_model(model: str) -> dict[str, bytes] | None:
    """The files of a user's model file as {name: content}; None for phalanx's assets and XML
    strings, which carry themselves. A model this process restored from a checkpoint packs as
    restored, wherever its path points now."""
    if not is_user_file(model):
        return None
    if model in _RESTORED:
        xml, assets = _RESTORED[model]
        return {MODEL_XML: xml.encode(), **assets}
    spec = mujoco.MjSpec.from_file(model)  # read before, when the env was built from it
    base = Path(model).resolve().parent
    files: dict[str, bytes] = {}

    def carry(name: str, directory: str) -> str:
        if not name:
            return name
        key = f"files/{len(files)}-{Path(name).name}"
        files[key] = (base / directory / name).read_bytes()  # an absolute name or directory wins
        return key

    for mesh in spec.meshes:
        mesh.file = carry(mesh.file, spec.meshdir)
    for skin in spec.skins:
        skin.file = carry(skin.file, spec.meshdir)
    for hfield in spec.hfields:
        hfield.file = carry(hfield.file, spec.meshdir)
    for texture in spec.textures:
        texture.file = carry(texture.file, spec.texturedir)
        texture.cubefiles = [carry(name, spec.texturedir) for name in texture.cubefiles]
    spec.meshdir = spec.texturedir = ""
    spec.assets = files
    return {MODEL_XML: spec.to_xml().encode(), **files}


def files_state(files: dict[str, bytes]) -> dict[str, torch.Tensor]:
    """The files as a checkpoint holds them: uint8 tensors (plain data to torch's weights-only
    loading, empty files too, which it refuses as bytes)."""
    return {name: torch.from_numpy(np.frombuffer(content, dtype=np.uint8).copy()) for name, content in files.items()}


def restore_model(model: str, state: object, source: str) -> None:
    """From now on this process loads `model` from a checkpoint's `files_state` (named by `source`
    in errors) instead of whatever is at that path."""
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) and v.dtype == torch.uint8 and v.dim() == 1
        for k, v in state.items()
    ):
        raise ConfigError(f"{source}: its model_files are not file names with their bytes")
    if MODEL_XML not in state:
        raise ConfigError(f"{source}: its model_files lack {MODEL_XML}")
    files = {name: content.numpy().tobytes() for name, content in state.items()}
    xml = files.pop(MODEL_XML).decode(errors="replace")
    _RESTORED[model] = (xml, files)


def restored_spec(model: str) -> mujoco.MjSpec | None:
    """The spec of a model restored from a checkpoint, or None."""
    found = _RESTORED.get(model)
    return None if found is None else mujoco.MjSpec.from_string(found[0], assets=found[1])


def write_model_dir(files: dict[str, bytes], directory: Path) -> None:
    """Writes the files (each through a temp file and a rename) under `directory`."""
    for name, content in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_bytes(content)
