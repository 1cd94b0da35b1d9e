"""Checkpoints: written atomically, read as data (never as code), checked against what the
reader needs with errors that speak to the user.

A checkpoint holds only tensors, numbers, strings, lists, tuples and dicts, so it loads with
`torch.load(weights_only=True)`: a file that needs anything else (pickled objects, which run code
while loading) is refused before any of it runs.
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from torch import nn

from phalanx.core.cfg_data import from_data, no_references
from phalanx.core.errors import ConfigError
from phalanx.core.files import atomic_path
from phalanx.training.deflated import DeflatedError, deflate_envs, inflate_envs
from phalanx.training.library_checkpoints import library_of, not_phalanxs

CHECKPOINT_FORMAT = 2
"""2: the config holds the env the policy was trained in (`config["env"]`)."""
PLAY_KEYS = ("task", "config", "policy", "obs_norm")
"""What playing a policy reads."""
RESUME_KEYS = (*PLAY_KEYS, "iteration", "frames", "elapsed_s", "last_episode", "critic_norm", "ppo", "ranks")
"""What resuming a PPO run reads: the job's learner and, per rank, its envs and random generators."""
OFF_POLICY_RESUME_KEYS = (*PLAY_KEYS, "iteration", "frames", "elapsed_s", "last_episode", "off_policy", "ranks")
"""What resuming an off-policy run (`--algo td3|sac`) reads (its replay buffers are files of their own)."""


def algorithm_of(algo: dict[str, Any]) -> str:
    """The `--algo` name of a run's stored settings (config.json's or a checkpoint's "algo")."""
    if "alpha_init" in algo:
        return "sac"
    return "td3" if "num_atoms" in algo else "ppo"


def resume_keys(algo: dict[str, Any]) -> tuple[str, ...]:
    """What resuming a run of these settings reads."""
    return RESUME_KEYS if algorithm_of(algo) == "ppo" else OFF_POLICY_RESUME_KEYS


class CheckpointError(ConfigError):
    """A checkpoint that is missing, unreadable, unsafe or belongs to another task."""


def save_checkpoint(path: Path, state: dict[str, Any], *copies: Path) -> None:
    """Writes `state` to `path` and to each of `copies`, each through a temp file and a rename: a
    crash never leaves half a checkpoint. Large env buffers are deflated (`deflated`), once for all."""
    state = deflate_envs(state)
    for target in (path, *copies):
        with atomic_path(target) as tmp:
            torch.save(state, tmp)


def load_checkpoint(path: str | Path, task: str | None, keys: tuple[str, ...] = PLAY_KEYS) -> dict[str, Any]:
    """Loads a phalanx checkpoint onto the CPU as data only, and checks it was made for `task`
    (None: any task) and holds `keys`.

    Raises:
        CheckpointError: no such file, not a checkpoint, needs unpickling of objects, another
            task's, lacks some of `keys`, or (reading "ranks") holds an env buffer that does not
            inflate to what it declares (all named in one line).
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint: no file {path}")
    trainer = library_of(path.resolve())
    if trainer is not None:  # rsl_rl's, rl_games', skrl's or Stable-Baselines3's own format
        raise CheckpointError(f"checkpoint: {not_phalanxs(path, trainer)}")
    _check_archive(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 (a torn or foreign file means the same to the user)
        if isinstance(error, pickle.UnpicklingError) and "global" in str(error).lower():  # a class or function
            raise CheckpointError(
                f"checkpoint: {path} holds Python objects, not only tensors, numbers, strings, lists and dicts; "
                "loading them could run code from the file, so it is refused"
            ) from None
        lines = [line for line in str(error).splitlines() if line.strip()] or [type(error).__name__]
        reason = lines[1] if "Weights only load failed" in lines[0] and len(lines) > 1 else lines[0]
        reason = reason.split(". ")[0].removesuffix(".")  # torch's first sentence; the rest is advice
        raise CheckpointError(f"checkpoint: {path} is damaged: torch cannot read it ({reason})") from None
    if not isinstance(state, dict) or not isinstance(state.get("task"), str):
        raise CheckpointError(f"checkpoint: {path} is not a phalanx checkpoint")
    version = state.get("format", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise CheckpointError(f"checkpoint: {path} has format {version!r}, not a phalanx checkpoint format")
    if version < CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"checkpoint: {path} was written by an older phalanx, without the env config it was trained in; "
            "train it again with this version"
        )
    if task is not None and state["task"] != task:
        raise CheckpointError(f"checkpoint: {path} was trained on task {state['task']!r}, not {task!r}")
    missing = [key for key in keys if key not in state]
    if missing:
        raise CheckpointError(
            f"checkpoint: {path} lacks {', '.join(map(repr, missing))} (not written by this version of phalanx train)"
        )
    _check_kinds(state, path, keys)
    if "ranks" not in keys:
        return state
    try:
        return inflate_envs(state)
    except DeflatedError as error:
        raise CheckpointError(f"checkpoint: {path}: {error}") from None


KINDS = {"config": dict, "policy": dict, "obs_norm": dict, "critic_norm": dict, "ppo": dict, "ranks": list}
COUNTS = ("iteration", "frames")


def _check_kinds(state: dict[str, Any], path: Path, keys: tuple[str, ...]) -> None:
    """Refuses a checkpoint whose parts (of `keys`) are not of the kind phalanx writes: a dict
    where a dict belongs, counts that are integers >= 0, an elapsed time that is a number >= 0."""
    for key in keys:
        value = state[key]
        kind = KINDS.get(key)
        if kind is not None and not isinstance(value, kind):
            raise CheckpointError(f"checkpoint: {path}: {key} is a {type(value).__name__}, not a {kind.__name__}")
        if key in COUNTS and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise CheckpointError(f"checkpoint: {path}: {key} is {value!r}, not an integer >= 0")
        if key == "elapsed_s" and (not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0):
            raise CheckpointError(f"checkpoint: {path}: elapsed_s is {value!r}, not a number of seconds >= 0")
    if "config" in keys and not isinstance(state["config"].get("env"), dict):
        raise CheckpointError(f"checkpoint: {path}: its config lacks the env it was trained in")


def _check_archive(path: Path) -> None:
    """Refuses, before torch reads it, a file that is not the zip archive torch.save writes (an
    empty or torn file, another format) or whose entries are compressed (torch.save stores them
    as they are: a compressed one inflates to any size in memory)."""
    if path.stat().st_size == 0:
        raise CheckpointError(f"checkpoint: {path} is empty (a write that never finished?)")
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError) as error:
        raise CheckpointError(
            f"checkpoint: {path} is not a checkpoint torch.save wrote, or it is torn ({error})"
        ) from None
    packed = [entry.filename for entry in entries if entry.compress_type != zipfile.ZIP_STORED]
    if packed:
        raise CheckpointError(
            f"checkpoint: {path} holds compressed entries ({packed[0]}, ...), which torch.save never writes: "
            "refused before inflating them"
        )


def newest_readable(
    directory: Path, task: str, keys: tuple[str, ...], console: Console
) -> tuple[Path | None, dict[str, Any] | None]:
    """`--resume last`: model_last.pt, or where it cannot be read (torn, corrupted), the newest
    model_N.pt that can, said in one line; (None, None) when the run has no checkpoint yet.
    Raises model_last.pt's CheckpointError when none can be read."""
    last = directory / "model_last.pt"
    numbered = sorted(directory.glob("model_*.pt"), key=_number, reverse=True)
    candidates = ([last] if last.is_file() else []) + [p for p in numbered if _number(p) >= 0]
    first_error = None
    for path in candidates:
        try:
            state = load_checkpoint(path, task, keys)
        except CheckpointError as error:
            first_error = first_error or error
            continue
        if first_error is not None:
            console.print(f"[yellow]warning:[/yellow] {first_error}; continuing from {path.name}, the newest readable")
        return path, state
    if first_error is not None:
        raise first_error
    return None, None


def _number(path: Path) -> int:
    """N of model_N.pt; -1 for model_last.pt and other names."""
    tail = path.stem.removeprefix("model_")
    return int(tail) if tail.isdigit() else -1


def load_weights(module: nn.Module, weights: dict[str, torch.Tensor], source: str) -> None:
    """`module.load_state_dict(weights)`, refusing with one line that names the first tensor
    that is missing, extra or of another shape (`source` says where the weights come from)."""
    own = module.state_dict()
    missing, extra = [k for k in own if k not in weights], [k for k in weights if k not in own]
    if missing or extra:
        raise CheckpointError(f"{source}: the network differs (missing {missing}, unexpected {extra})")
    for name, tensor in own.items():
        theirs = weights[name]
        if not isinstance(theirs, torch.Tensor) or theirs.shape != tensor.shape:
            shape = tuple(theirs.shape) if isinstance(theirs, torch.Tensor) else type(theirs).__name__
            raise CheckpointError(
                f"{source}: {name} is {shape} in the checkpoint but {tuple(tensor.shape)} here "
                "(the network sizes or the task's observations and actions differ)"
            )
    module.load_state_dict(weights)


def stored_cfg(cls: type, data: Any, path: str, source: str) -> Any:
    """The config `cls` a checkpoint stores at `path` (e.g. "config.policy"), rebuilt from its
    data; a field of another type or one that `cls` lacks is one line naming `source`."""
    try:
        return from_data(cls, data, path, no_references)
    except ConfigError as error:
        raise CheckpointError(f"{source}: {error}") from None


NETWORK_FIELDS = ("actor_hidden_dims", "critic_hidden_dims", "activation")
OFF_POLICY_NETWORK = ("actor_hidden_dims", "critic_hidden_dims", "num_atoms")
RUN_FIELDS = ("num_envs", "seed", "num_steps_per_env", "empirical_normalization")
"""What a resumed run must keep: its envs per rank, seed, rollout length and normalizer."""


def check_resumable(state: dict[str, Any], config: dict[str, Any], path: str | Path) -> None:
    """Refuses, before any env is built, to continue `state` in a run configured as `config`
    (a TrainCfg as a dict) on another kind of device, with other envs per rank or another
    network; names the flag."""
    saved = state["config"]
    if not isinstance(saved, dict) or not isinstance(saved.get("policy"), dict) or "num_envs" not in saved:
        raise CheckpointError(f"checkpoint: {path} lacks its training config (not written by this version of phalanx)")
    if bool(saved.get("teacher")) != bool(config.get("teacher")):
        trained = f"with --teacher {saved['teacher']}" if saved.get("teacher") else "without a teacher"
        raise CheckpointError(f"the checkpoint's policy was trained {trained}: resume it so", "teacher")
    theirs, ours = _device_kind(saved.get("device")), _device_kind(config.get("device"))
    if theirs and ours and theirs != ours:  # a CUDA generator's state is not a CPU generator's
        raise CheckpointError(
            f"the checkpoint was trained on {saved['device']}, this run is on {config['device']}: its random "
            f"generators continue only on a {theirs} device (resume with --device {theirs})",
            "device",
        )
    theirs, ours = algorithm_of(saved.get("algo", {})), algorithm_of(config["algo"])
    if theirs != ours:
        raise CheckpointError(f"the checkpoint was trained with --algo {theirs}, this run asks for {ours}", "algo")
    for name in RUN_FIELDS:
        if saved.get(name) != config[name]:
            raise CheckpointError(
                f"the checkpoint was trained with {name} {saved.get(name)!r}, this run has {config[name]!r} "
                "(resume with the checkpoint's)",
                name,
            )
    networks = [(f"policy.{name}", saved["policy"].get(name), config["policy"][name]) for name in NETWORK_FIELDS]
    if ours != "ppo":  # an off-policy learner's networks are in its own settings
        networks = [(f"algo.{name}", saved["algo"].get(name), config["algo"][name]) for name in OFF_POLICY_NETWORK]
    for flag, theirs, ours in networks:
        if _plain(theirs) != _plain(ours):
            raise CheckpointError(
                f"the checkpoint's network has {_plain(theirs)}, this run asks for {_plain(ours)} "
                "(resume with the checkpoint's)",
                flag,
            )


def _device_kind(device: Any) -> str | None:
    """ "cuda" for "cuda:1", "cpu" for "cpu"; None where no device is named."""
    return device.split(":")[0] if isinstance(device, str) and device else None


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list | tuple) else value
