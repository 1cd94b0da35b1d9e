"""Training throughput of one task at one env count, broken down by phase and start-up step."""

from __future__ import annotations

import copy
import gc
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import warp as wp
from rich.console import Console

from phalanx.bench.physics import physics_steps_per_s, seconds_per_call

if TYPE_CHECKING:
    from phalanx.training.cfg import TrainCfg
    from phalanx.training.trainer import Trainer


def _profile(trainer, device: torch.device, iterations: int, trace: Path) -> None:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    trainer.profiling = True
    with torch.profiler.profile(activities=activities) as profiler:
        for _ in range(iterations):
            trainer.iterate()
    trainer.profiling = False
    trace.parent.mkdir(parents=True, exist_ok=True)
    profiler.export_chrome_trace(str(trace))


def _encoders_per_step_s(trainer: Trainer, obs: dict[str, torch.Tensor], calls: int, device: torch.device) -> float:
    """Seconds per env step of the policy's image encoders during a rollout (0 without images),
    timed eagerly (after one untimed call) on the env's current images: the actor's (with its
    target head) and, where the critic has one, the critic's in acting and again for the values
    of the episodes that end (once when the actor and critic share it). Part of the rollout's
    policy inference."""
    policy, group = trainer.policy, trainer.ppo.image_group
    if group is None:
        return 0.0
    critic = policy.critic_encoder
    encoders = [policy.image_input()] + ([critic] if critic is not None and critic is not policy.actor_encoder else [])
    encoders += [critic] if critic is not None else []
    image = obs[group]

    def encode() -> None:
        for encoder in encoders:
            encoder(image)

    with torch.no_grad():
        encode()  # cuDNN picks its algorithms for this batch at the first call
        return seconds_per_call(encode, calls, device)


def _device_memory_used(device: torch.device) -> int:
    """Bytes in use on the GPU (every allocator: torch and Warp), or the process's peak RSS on CPU.

    Both allocators keep freed blocks for reuse: torch's cache is emptied and Warp's memory pool
    is made to give its free blocks back (release threshold 0 across one sync, then restored), so
    the figure holds only what live envs, graphs and models occupy, plus the one-time loads.
    """
    if device.type == "cuda":
        gc.collect()  # the envs and graphs of an earlier env count
        torch.cuda.empty_cache()
        warp_device = wp.get_device(f"cuda:{device.index}")
        if wp.is_mempool_enabled(warp_device):
            threshold = wp.get_mempool_release_threshold(warp_device)
            wp.set_mempool_release_threshold(warp_device, 0)
            wp.synchronize_device(warp_device)
            wp.set_mempool_release_threshold(warp_device, threshold)
        free, total = torch.cuda.mem_get_info(device)
        return total - free
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(
    training: TrainCfg,
    num_envs: int,
    device: torch.device,
    iterations: int,
    warmup: int,
    num_steps_per_env: int | None = None,
    profile_trace: Path | None = None,
    profile_iterations: int = 0,
) -> dict[str, Any]:
    """Trains `training`'s task (its config as given, at `num_envs` envs on `device`) for
    `warmup` + `iterations` iterations and returns medians
    of the timed ones: fps (step, step + inference, total), the iteration time split into
    physics, rendering (camera observations, with each camera's frames per second), the rest of
    observation/reward/reset, policy inference and PPO update, the start-up split, memory,
    and the raw physics limit with the ratio fps_step / limit. With `profile_iterations`, that many
    more iterations run under the torch profiler and its trace goes to `profile_trace` (Chrome
    trace JSON; phases are named ranges, also NVTX ranges for Nsight Systems). An env count the trainer cannot run
    (minibatches that do not divide the batch, out of memory) comes back with `valid: False` and
    the reason."""
    if "torch._dynamo" in sys.modules:
        # Each env count compiles its own env step and update: forget the earlier ones, or a
        # sweep of many counts passes Dynamo's recompile limit and runs the rest eagerly.
        torch._dynamo.reset()
    start = time.perf_counter()
    from phalanx.training.registry import make
    from phalanx.training.trainer import Trainer

    import_s = time.perf_counter() - start
    cfg, task = copy.deepcopy(training), training.task
    cfg.num_envs, cfg.device = num_envs, str(device)
    cfg.num_steps_per_env = num_steps_per_env or cfg.num_steps_per_env
    steps = cfg.num_steps_per_env
    row: dict[str, Any] = {"task": task, "num_envs": num_envs, "num_steps_per_env": steps, "valid": True}
    if (num_envs * steps) % cfg.algo.num_mini_batches:
        reason = (
            f"num_envs x num_steps_per_env = {num_envs * steps} is not divisible into "
            f"{cfg.algo.num_mini_batches} minibatches"
        )
        return {**row, "valid": False, "reason": reason}
    memory_before = _device_memory_used(device)
    try:
        start = time.perf_counter()
        # As `phalanx train`: the trainer starts compiling its update before the env's first reset.
        env = make(cfg.env, num_envs=num_envs, device=device, seed=cfg.seed, reset=False)
        trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True))
        env.reset()
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        trainer.iterate()  # compiles kernels, captures the env step
        first_iteration_s = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(warmup):
            trainer.iterate()  # captures the rollout and update graphs on CUDA
        warmup_s = time.perf_counter() - start
        rows = [trainer.iterate() for _ in range(iterations)]
    except torch.cuda.OutOfMemoryError as error:
        return {**row, "valid": False, "reason": f"out of GPU memory ({str(error).splitlines()[0]})"}
    memory_after = _device_memory_used(device)
    if profile_iterations:
        _profile(trainer, device, profile_iterations, profile_trace)

    def median(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    frames = num_envs * steps
    iteration_s, collect_s, step_s = (frames / median(k) for k in ("fps_total", "fps_step_inference", "fps_step"))
    physics_s = steps * seconds_per_call(env.sim.step, steps, device)  # with the policy's last controls
    # Each env step computes its observations twice, the final ones of the episodes that end and
    # the next ones, so each camera term renders twice at the steps it renders (every `every`).
    cameras = [term for g in env.observations.values() for term in g.terms if hasattr(term, "camera")]
    render_call_s = [seconds_per_call(term.camera, steps, device) for term in cameras]
    renders_s = sum(2 * s / term.every for s, term in zip(render_call_s, cameras, strict=True))
    render_s = min(steps * renders_s, max(step_s - physics_s, 0.0))
    encoder_s = steps * _encoders_per_step_s(trainer, env.obs, steps, device)
    sim = env.sim
    limit_env_steps_per_s = physics_steps_per_s(sim, calls=steps, repeats=3, random_ctrl=False) / sim.cfg.decimation
    return {
        **row,
        "profile_trace": str(profile_trace) if profile_iterations else None,
        "fps_step": median("fps_step"),
        "fps_step_inference": median("fps_step_inference"),
        "fps_total": median("fps_total"),
        "iteration_s": iteration_s,
        "phases_s": {
            "physics": min(physics_s, step_s),
            "render": render_s,
            "obs_reward_reset": max(step_s - physics_s - render_s, 0.0),
            "policy_inference": collect_s - step_s,
            "ppo_update": iteration_s - collect_s,
        },
        "encoder_s": encoder_s,
        "startup_s": {
            "import": import_s,
            "model_build": build_s,  # the env, the trainer and the first reset (tracing the step)
            "first_iteration": first_iteration_s,
            "warmup_and_capture": warmup_s,
        },
        "render_frames_per_s": [num_envs / seconds for seconds in render_call_s],
        "observation_spec": {group: list(shape) for group, shape in env.observation_spec.items()},
        "memory_bytes": memory_after - memory_before if device.type == "cuda" else memory_after,
        "memory_per_env_bytes": (memory_after - memory_before) / num_envs,
        "physics_limit_env_steps_per_s": limit_env_steps_per_s,
        "ratio_step_to_limit": median("fps_step") / limit_env_steps_per_s,
        "iterations_timed": iterations,
    }
