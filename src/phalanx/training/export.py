"""Exporting a trained policy for a robot: the deterministic actor, with the observation
normalization inside, as ONNX or TorchScript, and beside it a JSON sidecar that says how to feed
it and what its output drives (observation terms in order with scale/clip, action
scale/offset/clip, default joint positions, joint and actuator names, control dt).

A hierarchical task (anymal-nav) exports both levels: its policy, whose actions are the low-level
policy's command, and the low-level policy (`low_level.*`), each with its sidecar."""

from __future__ import annotations

import json
import logging
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from phalanx.core.errors import ConfigError
from phalanx.core.files import atomic_path, write_text_atomic
from phalanx.rl.cfg import PolicyCfg
from phalanx.rl.models import ActorCritic
from phalanx.rl.normalizer import EmpiricalNormalizer
from phalanx.rl.off_policy_actors import off_policy_actor
from phalanx.training.checkpoint import CheckpointError, load_weights, stored_cfg

if TYPE_CHECKING:
    from phalanx.envs.cfg import ObsTermCfg
    from phalanx.envs.task_env import TaskEnv

FORMATS = {"onnx": ".onnx", "torchscript": ".pt"}
"""Export format -> file suffix."""
SIDECAR_FORMAT = "phalanx-policy/2"


class DeployedPolicy(nn.Module):
    """obs (N, obs_dim) float32 -> (N, action_dim) mean actions; the observation normalizer
    (when the policy was trained with one) runs inside."""

    def __init__(self, actor: nn.Module, normalizer: EmpiricalNormalizer | None):
        super().__init__()
        self.actor, self.normalizer = actor, normalizer

    def normalized(self, obs: torch.Tensor) -> torch.Tensor:
        return obs if self.normalizer is None else self.normalizer(obs)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.normalized(obs))


class DeployedImagePolicy(DeployedPolicy):
    """obs (N, obs_dim) float32 and image (N, H, W, C) as the camera gives it (uint8 RGB, float
    depth) -> (N, action_dim) mean actions; `encoder` maps the image to what the actor reads (the
    features, or the predicted image targets: `ActorCritic.image_input`)."""

    def __init__(self, actor: nn.Sequential, normalizer: EmpiricalNormalizer | None, encoder: nn.Module):
        super().__init__(actor, normalizer)
        self.encoder = encoder

    def forward(self, obs: torch.Tensor, image: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return self.actor(torch.cat([self.normalized(obs), self.encoder(image)], dim=-1))


def deployed_policy(state: dict[str, Any], observation_spec: dict[str, tuple[int, ...]], action_dim: int) -> nn.Module:
    """The checkpoint's deterministic actor for an env with these observation groups, on the CPU,
    in eval mode and without gradients."""
    config = state["config"]
    normalizer = None
    if config["empirical_normalization"]:
        normalizer = EmpiricalNormalizer(observation_spec["policy"][0])
        load_weights(normalizer, state["obs_norm"], "--checkpoint: the observation normalizer")
    try:
        actor = off_policy_actor(config.get("algo", {}), observation_spec["policy"][0], action_dim)
    except ConfigError as error:
        raise CheckpointError(f"--checkpoint: {error}") from None
    if actor is not None:  # FastTD3's or FastSAC's: its deterministic action
        load_weights(actor, state["policy"], "--checkpoint: the actor")
        return DeployedPolicy(actor, normalizer).eval().requires_grad_(False)
    policy_cfg = stored_cfg(PolicyCfg, config["policy"], "config.policy", "--checkpoint")
    policy = ActorCritic.for_env(observation_spec, action_dim, policy_cfg)
    load_weights(policy, state["policy"], "--checkpoint: the policy")
    if policy.actor_encoder is None:
        module = DeployedPolicy(policy.actor, normalizer)
    else:
        module = DeployedImagePolicy(policy.actor, normalizer, policy.image_input())
    return module.eval().requires_grad_(False)


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ConfigError(f"got {fmt!r}; allowed: {', '.join(FORMATS)}", "format")


def save_module(module: nn.Module, inputs: tuple[torch.Tensor, ...], fmt: str, path: Path) -> None:
    """Writes `module` (inputs named obs[, image], output actions) as ONNX, with the batch size
    free, or as TorchScript, through a temp file."""
    names = ["obs", "image"][: len(inputs)]
    with atomic_path(path) as tmp:
        if fmt == "onnx":
            _require_onnx()
            batch = torch.export.Dim("batch", min=1)
            quiet = logging.getLogger("torch.onnx")  # its notes on torchvision ops it skips
            level = quiet.level
            quiet.setLevel(logging.ERROR)
            try:
                with warnings.catch_warnings():
                    # torch's exporter pickles pytree specs through a deprecated isinstance check
                    warnings.filterwarnings("ignore", message=r".*treespec, LeafSpec", category=FutureWarning)
                    program = torch.onnx.export(
                        module,
                        inputs,
                        dynamo=True,
                        input_names=names,
                        output_names=["actions"],
                        dynamic_shapes=tuple({0: batch} for _ in inputs),
                        verbose=False,
                    )
            finally:
                quiet.setLevel(level)
            program.save(str(tmp))
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript: what libtorch (C++) loads
                traced = torch.jit.trace(module, inputs)
            traced.save(str(tmp))


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError:
        raise ConfigError("onnx needs the packages onnx and onnxscript: pip install -e '.[export]'", "format") from None


def term_layout(terms: dict[str, ObsTermCfg], widths: list[int], axis: str) -> list[dict[str, Any]]:
    """Each term of a group in the order the policy reads them: which entries of its input it
    fills along `axis` (the vector's, or an image's channels), how it is computed (function and
    params) and transformed (scale, clip, history: the last K values newest first; the noise
    is added in training only)."""
    layout, start = [], 0
    for (name, cfg), width in zip(terms.items(), widths, strict=True):
        layout.append(
            {
                "name": name,
                axis: [start, start + width],
                "function": getattr(cfg.func, "__name__", type(cfg.func).__name__),
                "params": _jsonable(cfg.params),
                "scale": cfg.scale,
                "clip": None if cfg.clip is None else list(cfg.clip),
                "history": cfg.history,
                "training_noise": cfg.noise,
            }
        )
        start += width
    return layout


def drive(env: TaskEnv, scale: float, clip: float | None) -> dict[str, Any]:
    """What an action drives: ctrl = offset + span * scale * clip(action) for the env's driven
    actuators (span 1, or each actuator's half-range with `ActionCfg.ctrl_range`), clamped to the
    actuator's ctrlrange where it has one, as the simulator does; with `ActionCfg.relative`, the
    joint's position when the action comes in (times the gear) takes the offset's place."""
    joints, sim = env.joints, env.sim
    ids = joints.joint_ids.tolist()
    relative = joints.relative_qposadr is not None
    base = "actuator_gear[i] * joint_pos[i]" if relative else "offset[i]"
    actuators = joints.actuator_ids.tolist()
    mjm = sim.mjm
    ranges = [[float(x) for x in mjm.actuator_ctrlrange[a]] if mjm.actuator_ctrllimited[a] else None for a in actuators]
    return {
        "formula": (
            f"ctrl[i] = clamp({base} + span[i] * scale * clamp(action[i], -clip, clip), ctrl_range[i]) "
            "(no outer clamp where ctrl_range[i] is null)"
        ),
        "ctrl_range": ranges,
        "scale": scale,
        "clip": clip,
        "relative": relative,
        "offset": None if relative else joints.offset.tolist(),
        "span": joints.span.tolist(),
        "actuators": [sim.actuator_names[i] for i in actuators],
        "joints": [sim.joint_names[j] if j >= 0 else None for j in ids],
        "default_joint_pos": [float(sim.default_qpos[sim.joint_qposadr[j]]) if j >= 0 else None for j in ids],
        "actuator_gear": joints.gear.tolist(),
    }


def _jsonable(value: Any) -> Any:
    """`value` as JSON data: containers, numbers and strings kept, anything else by its name."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return getattr(value, "__name__", type(value).__name__)


def _write(
    module: nn.Module, inputs: tuple[torch.Tensor, ...], fmt: str, out: Path, stem: str, meta: dict
) -> list[Path]:
    """STEM.onnx|.pt and STEM.json in `out`. The sidecar's `models` names the model file of each
    format: a sidecar already there for the same policy keeps the other format's entry."""
    model = out / f"{stem}{FORMATS[fmt]}"
    save_module(module, inputs, fmt, model)
    described = [{"name": "obs", "shape": ["batch", inputs[0].shape[1]], "dtype": "float32"}]
    if len(inputs) > 1:
        image = inputs[1]
        described.append({"name": "image", "shape": ["batch", *image.shape[1:]], "dtype": str(image.dtype)[6:]})
    sidecar: dict[str, Any] = {"format": SIDECAR_FORMAT, "models": {fmt: model.name}, "inputs": described}
    sidecar["output"] = {"name": "actions", "shape": ["batch", int(module(*inputs).shape[1])], "dtype": "float32"}
    sidecar = json.loads(json.dumps(sidecar | meta))  # as it reads back (tuples as lists)
    path = out / f"{stem}.json"
    before = _sidecar(path)
    if before is not None and {**before, "models": {}} == {**sidecar, "models": {}}:
        sidecar["models"] = {name: file for name, file in before["models"].items() if (out / file).is_file()}
        sidecar["models"][fmt] = model.name
    write_text_atomic(path, json.dumps(sidecar, indent=2) + "\n")
    return [model, path]


def _sidecar(path: Path) -> dict[str, Any] | None:
    """The phalanx sidecar at `path`, or None where there is none (or another file)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(data, dict) and data.get("format") == SIDECAR_FORMAT and isinstance(data.get("models"), dict)
    return data if ok else None


def export_policy(state: dict[str, Any], env: TaskEnv, fmt: str, out: Path, source: str) -> list[Path]:
    """Exports the checkpoint `state` (from `source`) trained on `env`'s task into `out`: its
    policy (policy.*), and for a hierarchical task also the low-level policy (low_level.*).
    Returns the files written."""
    check_format(fmt)
    module = deployed_policy(state, env.observation_spec, env.action_dim)
    obs_dim = env.observation_spec["policy"][0]
    inputs: tuple[torch.Tensor, ...] = (torch.zeros(2, obs_dim),)
    observations = {"obs": _group_layout(env, "policy", "slice")}
    image_group = state["config"]["policy"].get("image_group")
    if image_group is not None:
        image = env.obs[image_group]
        inputs += (torch.zeros(2, *image.shape[1:], dtype=image.dtype),)
        observations["image"] = _group_layout(env, image_group, "channels")
    meta: dict[str, Any] = {
        "task": env.cfg.name,
        "checkpoint": source,
        "iteration": state.get("iteration"),
        "observations": observations,
        "normalization": "inside the model" if state["config"]["empirical_normalization"] else "none",
        "control_dt": env.step_dt,
        "physics_dt": env.sim.dt,
    }
    low_level = env.low_level
    cfg = env.cfg.actions
    if low_level is None:
        meta["actions"] = drive(env, cfg.scale, cfg.clip)
        return _write(module, inputs, fmt, out, "policy", meta)
    stem = "low_level"
    meta["actions"] = {
        "formula": f"command = scale * clamp(action, -clip, clip): the {stem} policy's command",
        "scale": cfg.scale,
        "clip": cfg.clip,
        "command": cfg.low_level.command,
        "low_level_sidecar": f"{stem}.json",
        "low_level_steps_per_action": cfg.low_level.decimation,
    }
    files = _write(module, inputs, fmt, out, "policy", meta)
    low_meta = {
        "task": cfg.low_level.task,
        "checkpoint": cfg.low_level.checkpoint,
        "observations": {"obs": term_layout(low_level.term_cfgs, low_level.widths, "slice")},
        "normalization": "inside the model",
        "command": f"the {cfg.low_level.command} command term reads the high-level policy's command",
        "control_dt": env.step_dt / cfg.low_level.decimation,
        "physics_dt": env.sim.dt,
        "actions": drive(env, low_level.actions.scale, low_level.actions.clip),
    }
    low_inputs = (torch.zeros(2, sum(low_level.widths)),)
    actor = low_level.actor.to("cpu").eval()
    return files + _write(actor, low_inputs, fmt, out, stem, low_meta)


def _group_layout(env: TaskEnv, group: str, axis: str) -> list[dict[str, Any]]:
    terms = env.cfg.observations[group]
    widths = [env.obs_term_shapes[group][name][-1] for name in terms]
    return term_layout(terms, widths, axis)
