"""The PPO update compiled in a process of its own while the training process compiles its env step.

torch.compile keeps what it compiles in caches every process of the machine reads (inductor's FX
graph cache, AOTAutograd's, Triton's kernels), so the trainer starts this process as soon as it is
built, before the env's first reset traces the step. The process builds the same PPO for the same
shapes (over a rollout of one minibatch, `one_minibatch`) and compiles its minibatch losses
(`PPO.compile_losses`); the training process's first update then loads them from the cache. With
warm caches (`worth_waiting`) it does not wait: it loads them itself, sooner.

    python -m phalanx.rl.update_compile < SPEC.json     (an `UpdateSpec` as `to_data` writes it)
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from phalanx.core.cfg_data import from_data, no_references, to_data
from phalanx.rl.cfg import DistillCfg, PolicyCfg
from phalanx.rl.models import ActorCritic
from phalanx.rl.ppo import PPO, PPOCfg

if TYPE_CHECKING:
    from phalanx.dist import DistContext

WAIT_S = 30.0
"""How long the trainer's first update waits for the process before stopping it and compiling on
its own. The process starts before the env's first reset, which traces the env step for tens of
seconds on a fresh machine, and a cold compile of the update takes seconds."""


@dataclass
class UpdateSpec:
    """What the PPO update's compiled graphs depend on: the policy and PPO settings, the env's
    shapes, the rollout's size and the device. The trainer builds its PPO from it, and so does the
    compiling process: the same graphs, the same cache entries."""

    policy: PolicyCfg
    algo: PPOCfg
    observation_spec: dict[str, tuple[int, ...]]
    action_dim: int
    num_envs: int
    num_steps: int
    normalize: bool
    tf32: bool
    bf16_update: bool
    compile_update: bool
    image_dtype: str
    """The image group's dtype ("uint8" without images)."""
    device: str
    distill: DistillCfg | None = None
    """The student's distillation settings (with a teacher; its update stores the teacher's actions)."""

    def actor_critic(self) -> ActorCritic:
        """The untrained networks, on the device (seed the global generator first)."""
        return ActorCritic.for_env(self.observation_spec, self.action_dim, self.policy).to(self.device)

    def ppo(
        self,
        policy: ActorCritic,
        generator: torch.Generator,
        capture: bool,
        dist: DistContext | None,
        teacher: torch.nn.Module | None = None,
    ) -> PPO:
        """The PPO (`teacher`: the module whose actions a student learns, with `distill`)."""
        return PPO(
            policy, self.algo, self.observation_spec, self.num_envs, self.num_steps, self.normalize, generator,
            capture=capture, dist=dist, tf32=self.tf32, bf16_update=self.bf16_update,
            compile_update=self.compile_update, image_group=self.policy.image_group,
            image_dtype=getattr(torch, self.image_dtype), image_targets=self.policy.image_targets,
            image_target_coef=self.policy.image_target_coef, distill=self.distill, teacher=teacher,
        )  # fmt: skip


COMPILE_THREADS = 4
"""inductor's compile processes in the update's process (unless TORCHINDUCTOR_COMPILE_THREADS says)."""


def start(spec: UpdateSpec) -> subprocess.Popen | None:
    """Starts compiling `spec`'s update in a new process that imports this process's phalanx, and
    returns it; None if it could not start. Its output is discarded: if it fails, the training
    process compiles on its own."""
    package_root = str(Path(__file__).resolve().parents[2])
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, (package_root, environ.get("PYTHONPATH"))))
    # Its few kernels have the env step's whole trace to compile in: a few of inductor's compile
    # processes (its default is one per core, in every rank's process) leave the cores to the
    # env's. inductor's cache key ignores the count.
    environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(COMPILE_THREADS))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "phalanx.rl.update_compile"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=environ,
            text=True,
        )
        proc.stdin.write(json.dumps(to_data(spec)))
        proc.stdin.close()
    except OSError:
        return None
    return proc


def finish(proc: subprocess.Popen, timeout_s: float = WAIT_S) -> int | None:
    """Waits up to `timeout_s` for the process; stops it if still running. Returns its exit status
    (None: stopped)."""
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        stop(proc)
        return None


def worth_waiting() -> bool:
    """Whether the first update should wait for the process: not when every graph this process has
    compiled (the env step's) was loaded from inductor's cache. The update's graphs were then most
    likely compiled by the same earlier run and load here in about a second, while the process,
    launched with the trainer, needs many seconds to start Python, torch and CUDA and load them
    itself. Where only the update's settings changed since, the trainer compiles it on its
    own, as it did before this process existed."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:  # nothing compiled here: no evidence either way
        return True
    inductor = utils.counters["inductor"]
    return inductor["fxgraph_cache_miss"] > 0 or inductor["fxgraph_cache_hit"] == 0


def stop(proc: subprocess.Popen) -> None:
    """Stops the process if it still runs (e.g. its trainer is dropped before its first update)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def one_minibatch(spec: UpdateSpec) -> UpdateSpec:
    """The same update over a rollout of one minibatch: the same minibatch shapes, so the same
    compiled graphs, for a fraction of the rollout's memory (a pixel task's images included)."""
    batch = spec.num_envs * spec.num_steps // spec.algo.num_mini_batches
    algo = dataclasses.replace(spec.algo, num_mini_batches=1)
    return dataclasses.replace(spec, algo=algo, num_envs=batch, num_steps=1)


def main() -> None:
    spec = one_minibatch(from_data(UpdateSpec, json.loads(sys.stdin.read()), "spec", no_references))
    device = torch.device(spec.device)
    if device.type == "cuda":  # a rank's device: nothing of this process on another GPU
        torch.cuda.set_device(device)
    ppo = spec.ppo(spec.actor_critic(), torch.Generator(device=device), capture=False, dist=None)
    ppo.compile_losses()


if __name__ == "__main__":
    main()
